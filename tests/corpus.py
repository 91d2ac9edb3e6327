"""The CUDA C++ kernel corpus (tests/kernels/*.cu) and the tools that turn it into checked PTX.

Each .cu file is a small self-contained source of `extern "C" __global__` kernels (a few also
hold explicitly instantiated template kernels, whose names are mangled). Its opening comment
says what every kernel computes, with which launch shape (grid, block, dynamic shared bytes)
and parameters, so that whole-kernel tests can build numpy references from it.

Conventions the comments rely on:
- NVRTC contracts a*b + c into one fma (its default --fmad=true): float results are compared
  with a tolerance of a few ulps unless a comment says the result is exact.
- Kernels are deterministic given their inputs. Where atomics make the order of operations
  vary, the result does not depend on it (integer sums, min/max, bit operations) or the
  comment says which inputs make it so (e.g. integer-valued floats).
- Approximate intrinsics (__expf, rsqrtf, ...) say so, with the tolerance to use.

PTX comes from NVRTC through ptxport.frontends.nvrtc and is cached on disk by it; ptxas comes
from the nvidia-cuda-nvcc wheel, the release that matches the wheel's NVRTC (the system ptxas
may be older than the PTX ISA version NVRTC emits).
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import tempfile
from pathlib import Path

from ptxport.frontends.nvrtc import NvrtcOptions, cache_dir, compile_to_ptx

__all__ = [
    "ARCHS",
    "KERNEL_DIR",
    "corpus_ptx",
    "corpus_sources",
    "entry_names",
    "ptxas_errors",
    "ptxas_path",
]

KERNEL_DIR = Path(__file__).resolve().parent / "kernels"
ARCHS = ("sm_80", "sm_90")

# `.entry name(` at the start of a line, after `.visible` (extern "C" and ordinary kernels) or
# `.weak` (explicit template instantiations).
_ENTRY = re.compile(r"^(?:\.visible\s+|\.weak\s+)?\.entry\s+([\w$]+)", re.MULTILINE)


def corpus_sources() -> list[Path]:
    """Every kernel source of the corpus, sorted by name."""
    return sorted(KERNEL_DIR.glob("*.cu"))


def corpus_ptx(path: Path, arch: str) -> str:
    """The PTX NVRTC makes of one corpus file for `arch` ("sm_80", ...), cached on disk."""
    return compile_to_ptx(path.read_text(), path.name, NvrtcOptions(arch=arch))


def entry_names(ptx: str) -> list[str]:
    """The names of the kernels (.entry directives) of a PTX module, in order."""
    return _ENTRY.findall(ptx)


def ptxas_path() -> Path | None:
    """The ptxas of the nvidia-cuda-nvcc wheel (the newest CUDA release present), or None:
    the one the cuda backend assembles with."""
    from ptxport.runtime.backends.cuda import wheel_ptxas

    return wheel_ptxas()


def ptxas_errors(ptx: str, arch: str, ptxas: Path | None = None, *, cache: bool = True) -> str:
    """What ptxas says against `ptx` assembled for `arch`: "" when it accepts the module.

    With `cache`, acceptance is remembered on disk (beside NVRTC's PTX cache, keyed by the PTX,
    the architecture and the ptxas binary's path, size and time stamp), so that re-running the
    corpus tests does not re-assemble unchanged PTX. Rejections are never cached.
    Raises FileNotFoundError when no ptxas wheel is installed and none is given.
    """
    ptxas = ptxas or ptxas_path()
    if ptxas is None:
        raise FileNotFoundError("no ptxas: pip install nvidia-cuda-nvcc")
    stat = ptxas.stat()
    key = "\0".join([ptx, arch, str(ptxas), str(stat.st_size), str(stat.st_mtime_ns)])
    accepted = cache_dir().parent / "ptxas-accepted" / hashlib.sha256(key.encode()).hexdigest()
    if cache and accepted.exists():
        return ""
    with tempfile.TemporaryDirectory(prefix="ptxport-ptxas-") as tmp:
        source = Path(tmp) / "module.ptx"
        source.write_text(ptx)
        result = subprocess.run([str(ptxas), f"-arch={arch}", str(source), "-o", os.devnull],
                                capture_output=True, text=True, check=False)
    if result.returncode != 0:
        return result.stderr or result.stdout or f"ptxas exited with status {result.returncode}"
    if cache:
        accepted.parent.mkdir(parents=True, exist_ok=True)
        accepted.touch()  # an empty marker: creating it twice at once is harmless
    return ""
