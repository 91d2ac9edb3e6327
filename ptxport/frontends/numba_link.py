"""`jit(link=[...])`: the files numba-cuda links into a kernel, linked at the PTX level.

numba-cuda hands `link=` files to NVIDIA's linker when it loads a kernel; its PTX declares
their functions (`cuda.declare_device`) as `.extern .func`. Here each file becomes PTX and is
linked with the kernel's by ptxport.ptx.link, as nvlink would: a `.ptx` file as it is, a
`.cu` file compiled by NVRTC as relocatable device code (-rdc, so that its `__device__`
functions stay visible) for the kernel's compute capability, with the file's directory on
the include path. Cubins, fat binaries, objects, archives and LTO-IR hold no PTX to link
(or only NVIDIA's machine code) and are refused by name.

numba-cuda's own bindings of CUDA's half-precision, bfloat16 and fp8 types (its Numbast
modules, numba.cuda._internal.cuda_fp16, cuda_bf16 and cuda_fp8: `cuda.fp16.hfma`, float16
arithmetic, ...) lower each operation to a call of a small CUDA C++ shim function (named
`..._nbst`), whose source the module accumulates in its `shim_obj` (a CUSource) and numba
links when it loads a kernel. compile_ptx returns only the kernel's PTX, so `shims_ptx` finds
the shims a kernel's PTX declares and compiles the sources that define them, as numba's
linker would (a narrow dependency on numba-cuda 0.30's `_internal` modules).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path

from ptxport.errors import InvalidValueError, UnsupportedFeatureError
from ptxport.frontends.nvrtc import NvrtcOptions, compile_to_ptx
from ptxport.ptx.link import link_text

__all__ = ["linked_ptx", "shims_ptx"]

# numba-cuda's Numbast binding modules, whose shim_obj holds the CUDA C++ of their shims
_SHIM_MODULES = ("numba.cuda._internal.cuda_fp16", "numba.cuda._internal.cuda_bf16",
                 "numba.cuda._internal.cuda_fp8")
_SHIM_DECLARATION = re.compile(r"\.extern\s+\.func\s*(?:\([^)]*\)\s*)?(\w+_nbst)\s*\(")


def shims_ptx(ptx: str, kernel: str, cc: tuple[int, int]) -> list[tuple[str, str]]:
    """(name, PTX) of each shim source of numba's Numbast modules that defines a shim that
    `ptx` declares; the source holds every shim the process lowered so far, a superset."""
    needed = set(_SHIM_DECLARATION.findall(ptx))
    units = []
    for name in _SHIM_MODULES:
        module = sys.modules.get(name)
        source = module.shim_obj.data if module is not None else ""
        found = {shim for shim in needed if f" {shim}(" in source}
        if found:
            needed -= found
            options = NvrtcOptions(arch=f"sm_{cc[0]}{cc[1]}", extra=["-rdc=true"])
            units.append((f"{name}.cu", compile_to_ptx(source, f"{name}.cu", options)))
    if needed:
        raise UnsupportedFeatureError(
            f"kernel {kernel} calls numba's shim {sorted(needed)[0]}", "ptxport", reason=(
                "no numba-cuda binding module ptxport knows (its fp16, bf16 and fp8 ones) "
                "holds its source"))
    return units


def linked_ptx(ptx: str, kernel: str, files: Sequence, cc: tuple[int, int]) -> str:
    """The kernel's PTX linked with the PTX of each file in `files`."""
    texts, names = [ptx], [f"{kernel}.ptx"]
    for file in files:
        path = Path(file)
        texts.append(_unit_ptx(path, kernel, cc))
        names.append(str(path))
    return link_text(texts, names)


def _unit_ptx(path: Path, kernel: str, cc: tuple[int, int]) -> str:
    suffix = path.suffix.lower()
    if suffix not in (".ptx", ".cu"):
        raise UnsupportedFeatureError(
            f"linking {path} into kernel {kernel}", "ptxport", reason=(
                "ptxport links .ptx and .cu files (compiled with NVRTC); cubins, fat "
                "binaries, objects, archives and LTO-IR carry no PTX to link"))
    try:
        source = path.read_text()
    except OSError as e:
        raise InvalidValueError(f"kernel {kernel}: cannot read link file {path}: "
                                f"{e.strerror}") from None
    if suffix == ".ptx":
        return source
    options = NvrtcOptions(arch=f"sm_{cc[0]}{cc[1]}", include_paths=[str(path.parent)],
                           extra=["-rdc=true"])
    return compile_to_ptx(source, path.name, options)
