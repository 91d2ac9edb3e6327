"""Builds the whole-program corpus (tests/programs/) with the nvcc of NVIDIA's PyPI wheels.

The corpus is issue 14's test of `ptxport run ./app`: self-checking CUDA programs whose
stdout must equal tests/programs/expected/<name>.txt (or one of the alternatives that the
manifest lists for a program asking for something a portable runtime may refuse) and whose
exit status must be 0. tests/programs/manifest.json names each program's sources and nvcc
flags; everything else about a build is decided here:

- The toolkit is the nvidia-cuda-nvcc wheel with the -runtime, -crt, -nvvm and -cccl wheels
  (headers, cudart, cicc, cooperative groups) and the system gcc. A system CUDA (/usr/local/cuda,
  an nvcc on PATH) is never used: nvcc runs from the wheel with a PATH and environment cleared
  of other CUDA installations.
- Every binary carries PTX for compute_80 (what ptxport reads, on any device) and SASS for
  sm_80 and sm_90, so that NVIDIA's H100 runs it natively as the oracle even with a driver
  older than the PTX ISA this nvcc emits (13.5 emits ISA 9.5; driver 580 JITs <= 9.0).
- Binaries are cached on disk under $PTXPORT_CACHE_DIR/programs (else
  ~/.cache/ptxport/programs), keyed by the sources, the corpus's headers, the flags and nvcc's
  version, and built in parallel.
- Programs built with `-cudart shared` need libcudart.so.13 at run time: the wheel's, or
  ptxport's drop-in (`ptxport run` puts its own first on LD_LIBRARY_PATH).
- Programs whose flags link cuBLAS (`-lcublas`, `-lcublasLt`) are built with ptxport's own
  cublas_v2.h / cublasLt.h and linked against its drop-in libcublas.so.13 / libcublasLt.so.13
  (same sonames and symbols as NVIDIA's), so NVIDIA's cuBLAS is never needed to build them;
  natively they run with NVIDIA's libraries of those sonames.

    python tests/programs_harness.py --out DIR [NAME ...]

builds the corpus (or the programs named) into DIR with manifest.json, expected/ and lib/
(the wheel's libcudart.so.13) for benchmarks/programs_gpu.py on a machine without nvcc.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import importlib.util
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "ARCH_FLAGS",
    "FATBIN_SECTIONS",
    "PROGRAM_DIR",
    "FatbinEntry",
    "Program",
    "ToolkitMissingError",
    "build",
    "build_all",
    "cuobjdump_path",
    "export",
    "fatbin_entries",
    "load_manifest",
    "stop_builds",
    "toolkit_root",
]

PROGRAM_DIR = Path(__file__).resolve().parent / "programs"
MANIFEST = PROGRAM_DIR / "manifest.json"
CUBLAS_INCLUDE = Path(__file__).resolve().parents[1] / "ptxport" / "compat" / "native" / "include"
# (sm_90's SASS from the same compute_80 PTX: a second compute_90 front end, cicc, took about
# a third of each build, 45 s of thrust_cub's)
ARCH_FLAGS = ("-gencode", "arch=compute_80,code=[compute_80,sm_80,sm_90]")
# Environment variables through which another CUDA installation could reach nvcc or gcc.
_FOREIGN_CUDA_VARIABLES = (
    "CUDA_HOME", "CUDA_PATH", "CUDA_ROOT", "CUDA_TOOLKIT_ROOT_DIR", "NVCC_PREPEND_FLAGS",
    "NVCC_APPEND_FLAGS", "NVCC_CCBIN", "CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH",
    "LIBRARY_PATH", "LD_LIBRARY_PATH",
)
_WHEEL_HINT = (
    "install the test extra (pip install -e '.[test]': nvidia-cuda-nvcc, -runtime, -crt, "
    "-nvvm, -cccl)"
)


class ToolkitMissingError(RuntimeError):
    """The nvcc wheel (or one it needs) is not installed: the corpus cannot be built here."""


@dataclass(frozen=True)
class Program:
    """One program of the corpus, as the manifest describes it."""

    name: str
    sources: tuple[str, ...]
    flags: tuple[str, ...] = ()
    expected: tuple[str, ...] = ()
    note: str = field(default="", compare=False)

    @property
    def relocatable(self) -> bool:
        """Built with -rdc=true: its PTX is only in __nv_relfatbin (see FATBIN_SECTIONS)."""
        return "-rdc=true" in self.flags

    @property
    def links_cublas(self) -> bool:
        """Linked with -lcublas / -lcublasLt: built against ptxport's cuBLAS (see above)."""
        return any(flag.startswith("-lcublas") for flag in self.flags)

    @property
    def shared_cudart(self) -> bool:
        """Built with `-cudart shared`: it needs libcudart.so.13 at run time."""
        pairs = zip(self.flags, self.flags[1:], strict=False)  # each flag and the next
        return "-cudart=shared" in self.flags or ("-cudart", "shared") in pairs

    def expected_outputs(self) -> dict[str, str]:
        """Each accepted stdout by its file name (the first is what NVIDIA's runtime prints)."""
        return {name: (PROGRAM_DIR / "expected" / name).read_text() for name in self.expected}

    def matching_output(self, stdout: str) -> str | None:
        """The expected file that `stdout` equals (a run passes when one does and the exit
        status is 0), or None."""
        return next((n for n, text in self.expected_outputs().items() if text == stdout), None)


def load_manifest() -> dict[str, Program]:
    """The corpus's programs by name, in the manifest's order."""
    entries = json.loads(MANIFEST.read_text())["programs"]
    return {
        name: Program(
            name=name,
            sources=tuple(entry["sources"]),
            flags=tuple(entry.get("flags", ())),
            expected=tuple(entry.get("expected", (f"{name}.txt",))),
            note=entry.get("note", ""),
        )
        for name, entry in entries.items()
    }


def toolkit_root() -> Path:
    """The wheels' CUDA tree (nvidia/cu13: bin/nvcc, include/, lib/, nvvm/).

    Raises ToolkitMissingError saying what to install when a part is missing."""
    spec = importlib.util.find_spec("nvidia")
    locations = list(spec.submodule_search_locations or ()) if spec else []
    trees = (tree for location in locations for tree in Path(location).glob("cu*"))
    roots = sorted((tree for tree in trees if (tree / "bin" / "nvcc").is_file()), reverse=True)
    if not roots:
        raise ToolkitMissingError(f"no nvcc from the nvidia-cuda-nvcc wheel: {_WHEEL_HINT}")
    root = roots[0]
    needed = {
        "include/cuda_runtime.h": "nvidia-cuda-runtime",
        "lib/libcudart_static.a": "nvidia-cuda-runtime",
        "include/crt/host_defines.h": "nvidia-cuda-crt",
        "nvvm/bin/cicc": "nvidia-nvvm",
        "include/cccl/cuda/std/version": "nvidia-cuda-cccl",
    }
    missing = sorted({wheel for path, wheel in needed.items() if not (root / path).exists()})
    if missing:
        raise ToolkitMissingError(f"{root} lacks the {', '.join(missing)} wheel(s): {_WHEEL_HINT}")
    return root


def cuobjdump_path() -> Path | None:
    """cuobjdump from the nvidia-cuda-cuobjdump wheel, when installed."""
    try:
        path = toolkit_root() / "bin" / "cuobjdump"
    except ToolkitMissingError:
        return None
    return path if path.is_file() else None


def _is_foreign_cuda_dir(directory: str, root: Path) -> bool:
    """True for a PATH entry that holds another CUDA installation's tools (or is one)."""
    path = Path(directory)
    if path.resolve() == (root / "bin").resolve():
        return False
    return "cuda" in directory.lower() or any((path / t).exists() for t in ("nvcc", "ptxas"))


def build_env(root: Path) -> dict[str, str]:
    """The environment nvcc runs in: the wheel's bin first, no other CUDA reachable."""
    env = {k: v for k, v in os.environ.items() if k not in _FOREIGN_CUDA_VARIABLES}
    path = [d for d in os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep)
            if d and not _is_foreign_cuda_dir(d, root)]
    env["PATH"] = os.pathsep.join([str(root / "bin"), str(root / "nvvm" / "bin"), *path])
    return env


@functools.cache
def nvcc_version(root: Path) -> str:
    """nvcc's own account of its release (part of every cache key; asked once a process)."""
    return subprocess.run([str(root / "bin" / "nvcc"), "--version"], env=build_env(root),
                          capture_output=True, text=True, check=True).stdout


def cache_root() -> Path:
    """Where built programs are kept: $PTXPORT_CACHE_DIR/programs, else ~/.cache/ptxport/..."""
    base = os.environ.get("PTXPORT_CACHE_DIR")
    return (Path(base) if base else Path.home() / ".cache" / "ptxport") / "programs"


def _headers() -> list[Path]:
    return sorted(PROGRAM_DIR.glob("*.h"))


def nvcc_command(program: Program, root: Path, link_dir: Path, output: str) -> list[str]:
    """The nvcc command line that builds `program` from sources in the current directory.

    Sources are named relative to the build directory, so that __FILE__ (in assert messages
    and the programs' own failure lines) is the bare file name wherever the corpus lives."""
    cublas = []
    if program.links_cublas:
        from ptxport.compat.build import shim_directory

        cublas = [f"-I{CUBLAS_INCLUDE}", f"-L{shim_directory()}"]
    return [str(root / "bin" / "nvcc"), *ARCH_FLAGS, *program.flags, *cublas, f"-L{link_dir}",
            "-o", output, *program.sources]


def build_key(program: Program, root: Path, version: str) -> str:
    """A digest of everything the binary depends on: sources, headers, flags, nvcc."""
    digest = hashlib.sha256()
    for part in (version, " ".join(ARCH_FLAGS), " ".join(program.flags)):
        digest.update(part.encode() + b"\0")
    cublas_headers = sorted(CUBLAS_INCLUDE.glob("*.h")) if program.links_cublas else []
    for path in [*(PROGRAM_DIR / s for s in program.sources), *_headers(), *cublas_headers]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:20]


def _shared_cudart_link_dir(root: Path) -> Path:
    """A directory with libcudart.so -> the wheel's libcudart.so.13: the wheel ships only the
    versioned name, and `-cudart shared` links -lcudart."""
    link_dir = cache_root() / "_link" / hashlib.sha256(str(root).encode()).hexdigest()[:12]
    link = link_dir / "libcudart.so"
    if not link.exists():
        link_dir.mkdir(parents=True, exist_ok=True)
        # (unique per thread too: builds run in parallel threads of one process, and two of
        # them making the link at once renamed each other's)
        tmp = link_dir / f".libcudart.so.{os.getpid()}.{threading.get_ident()}"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(root / "lib" / "libcudart.so.13")
        os.replace(tmp, link)
    return link_dir


# the nvcc processes under way in this process's threads (stop_builds)
_NVCC_RUNNING: set[subprocess.Popen] = set()


def _compile(program: Program, root: Path, target: Path) -> None:
    """Builds `program` into `target` (atomically: a failed build leaves nothing behind)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"build-{program.name}-", dir=target.parent) as tmp:
        for source in {*program.sources, *(h.name for h in _headers())}:
            shutil.copy2(PROGRAM_DIR / source, tmp)
        command = nvcc_command(program, root, _shared_cudart_link_dir(root), program.name)
        # (a process group of its own: stop_builds ends nvcc with the compilers it started)
        with subprocess.Popen(command, cwd=tmp, env=build_env(root), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True,
                              start_new_session=True) as nvcc:
            _NVCC_RUNNING.add(nvcc)
            try:
                output, _ = nvcc.communicate()
            finally:
                _NVCC_RUNNING.discard(nvcc)
        if nvcc.returncode != 0:
            raise RuntimeError(f"nvcc failed to build {program.name} ({' '.join(command)}):\n"
                               f"{output}")
        os.replace(Path(tmp) / program.name, target)


def stop_builds() -> None:
    """Ends the builds under way in this process (they fail): the test session that wanted
    them is over."""
    for nvcc in list(_NVCC_RUNNING):
        try:
            os.killpg(nvcc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


# one lock per binary: threads of one process that want the same program (the corpus's runs
# started early in the background, a test's own fixture) build it once
_BUILD_LOCKS: dict[Path, threading.Lock] = {}
_BUILD_LOCKS_LOCK = threading.Lock()


def _cached_build(program: Program, root: Path, version: str) -> Path:
    target = cache_root() / f"{program.name}-{build_key(program, root, version)}" / program.name
    with _BUILD_LOCKS_LOCK:
        lock = _BUILD_LOCKS.setdefault(target, threading.Lock())
    with lock:
        if not target.is_file():
            _compile(program, root, target)
    return target


def build(name: str) -> Path:
    """The binary of program `name`, built now or taken from the cache.

    Raises ToolkitMissingError when the nvcc wheels are not installed, KeyError for a name
    the manifest lacks, RuntimeError with nvcc's messages when a build fails."""
    root = toolkit_root()
    return _cached_build(load_manifest()[name], root, nvcc_version(root))


def build_all(names: list[str] | None = None, jobs: int | None = None) -> dict[str, Path]:
    """Every program (or those named), built in parallel: one nvcc per core, since each nvcc
    runs its stages one after another on one core."""
    manifest = load_manifest()
    root = toolkit_root()
    version = nvcc_version(root)
    wanted = names or list(manifest)
    with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 1) as pool:
        paths = pool.map(lambda n: _cached_build(manifest[n], root, version), wanted)
        return dict(zip(wanted, paths, strict=True))


@dataclass(frozen=True)
class FatbinEntry:
    """One entry of a fat binary: PTX text or an ELF (SASS) for an architecture."""

    kind: str     # "ptx" or "elf"
    arch: int     # 80 for compute_80 / sm_80
    compressed: bool
    section: str  # FATBIN_SECTIONS: the program's own code, or -rdc's per-unit objects


# .nv_fatbin holds what cudart registers: each translation unit's fat binary, or with -rdc the
# device-linked one, which nvlink makes of SASS alone. With -rdc each unit's PTX stays only in
# __nv_relfatbin (the relocatable objects nvcc linked from), so a runtime that wants PTX must
# read and link those itself.
FATBIN_SECTIONS = (".nv_fatbin", "__nv_relfatbin")


_FATBIN_MAGIC = 0xBA55ED50
_ENTRY_KINDS = {1: "ptx", 2: "elf"}
_COMPRESSED = 0x2000 | 0x8000  # LZ4 (older nvcc), zstd (CUDA 13's default)


def _elf_section(data: bytes, wanted: str) -> bytes:
    """The contents of a section of a 64-bit little-endian ELF file ("" when absent)."""
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)

    def header(i: int) -> tuple[int, int, int]:
        name, = struct.unpack_from("<I", data, shoff + i * shentsize)
        offset, size = struct.unpack_from("<QQ", data, shoff + i * shentsize + 0x18)
        return name, offset, size

    _, names_offset, _ = header(shstrndx)
    for i in range(shnum):
        name, offset, size = header(i)
        end = data.index(b"\0", names_offset + name)
        if data[names_offset + name:end].decode() == wanted:
            return data[offset:offset + size]
    return b""


def fatbin_entries(binary: Path) -> list[FatbinEntry]:
    """The entries of every fat binary in `binary`'s FATBIN_SECTIONS (static cudart adds its
    own fat binaries to nvcc's).

    Layout (as cuobjdump lists it, and as ZLUDA's fat binary reader documents it): a 16-byte
    header (magic 0xBA55ED50, version, header size, size of the entries), then entries, each
    a header (kind 1 = PTX, 2 = ELF at 0; its size at 4; payload size at 8; architecture at
    28; flags at 40: 0x2000 LZ4-, 0x8000 zstd-compressed) followed by its payload."""
    elf = Path(binary).read_bytes()
    return [entry for section in FATBIN_SECTIONS
            for entry in _section_entries(_elf_section(elf, section), section)]


def _section_entries(data: bytes, section: str) -> list[FatbinEntry]:
    entries, offset = [], 0
    while offset + 16 <= len(data):
        magic, _, header_size, fat_size = struct.unpack_from("<IHHQ", data, offset)
        if magic != _FATBIN_MAGIC:
            offset += 8  # fat binaries are 8-byte aligned; padding between them is zeros
            continue
        entry, end = offset + header_size, offset + header_size + fat_size
        while entry < end:
            kind, _, size, payload = struct.unpack_from("<HHIQ", data, entry)
            arch, = struct.unpack_from("<I", data, entry + 28)
            flags, = struct.unpack_from("<Q", data, entry + 40)
            entries.append(FatbinEntry(_ENTRY_KINDS.get(kind, str(kind)), arch,
                                       bool(flags & _COMPRESSED), section))
            entry += size + payload
        offset = end
    return entries


def export(out: Path, names: list[str] | None = None, jobs: int | None = None) -> None:
    """Builds the corpus into `out` for running elsewhere: the binaries, manifest.json (with
    each program's expected outputs inline), and lib/libcudart.so.13 for the programs built
    with `-cudart shared` (a native run puts lib/ on LD_LIBRARY_PATH)."""
    manifest = load_manifest()
    paths = build_all(names, jobs)
    out.mkdir(parents=True, exist_ok=True)
    (out / "lib").mkdir(exist_ok=True)
    shutil.copy2(toolkit_root() / "lib" / "libcudart.so.13", out / "lib" / "libcudart.so.13")
    described = {}
    for name, path in paths.items():
        shutil.copy2(path, out / name)
        program = manifest[name]
        described[name] = {"flags": list(program.flags), "note": program.note,
                           "expected": program.expected_outputs()}
    (out / "manifest.json").write_text(json.dumps({"programs": described}, indent=1) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="programs to build (default: all)")
    parser.add_argument("--out", type=Path, help="also copy them, ready to run, into OUT")
    parser.add_argument("--jobs", "-j", type=int, help="parallel nvcc runs (default: cores)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        if args.out:
            export(args.out, args.names or None, args.jobs)
        else:
            for name, path in build_all(args.names or None, args.jobs).items():
                print(f"{name}: {path}")
    except (ToolkitMissingError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"built in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
