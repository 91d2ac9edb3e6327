"""CUDA C++ -> PTX through NVRTC, from NVIDIA's PyPI wheels only.

This is the C++ front end: it hands a CUDA C++ source to NVRTC (through `cuda.bindings.nvrtc`)
and returns the PTX text, which the rest of ptxport reads like any other PTX (ptx/ parses it).
No system CUDA is needed: libnvrtc comes from the nvidia-cuda-nvrtc wheel and CUDA's headers
(cuda_fp16.h, cuda_bf16.h, ...) from the nvidia-cuda-runtime wheel, whose include directory is
always passed to NVRTC with -I.

Three more include directories follow the user's, in this order: ptxport's own C++ standard
headers (ptxport/frontends/include: <cstdint>, <cfloat>, <climits>, <cmath>, <limits>,
<type_traits>, <utility>, ..., each libcu++'s <cuda/std/...> with its names made std's, since
NVRTC has no standard library), CUDA's, and CCCL's from the nvidia-cuda-cccl wheel (cub,
thrust, libcu++'s <cuda/std/...> and <nv/target>, which <cooperative_groups.h> needs).

Compiled PTX is cached on disk, one file per compilation, under $PTXPORT_CACHE_DIR/nvrtc or
else ~/.cache/ptxport/nvrtc. The key is the sha256 of the source, its name, the complete list
of NVRTC flags (lineinfo and debug included), NVRTC's and CCCL's releases and the contents
of ptxport's standard headers. The contents of the user's included files are NOT part of the
key: editing a header that a cached source includes does not invalidate the entry; pass
cache=False or clear the directory when headers change. A cache hit does not load NVRTC at all
(NVRTC's release comes from its wheel's metadata), so cached compilations work where NVRTC is
absent.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from types import ModuleType

from ptxport.errors import BackendUnavailableError, CompileError

__all__ = [
    "NvrtcOptions",
    "available",
    "cache_dir",
    "cccl_include_dir",
    "compile_to_ptx",
    "NvrtcOutput",
    "compile_program",
    "cuda_include_dir",
    "std_include_dir",
    "nvrtc_version",
]

_INSTALL_HINT = "pip install 'ptxport[cuda]'"

# Distributions that ship libnvrtc and CCCL's headers: CUDA 13 wheels dropped the -cuXX suffix.
_NVRTC_DISTRIBUTIONS = ("nvidia-cuda-nvrtc", "nvidia-cuda-nvrtc-cu12")
_CCCL_DISTRIBUTIONS = ("nvidia-cuda-cccl", "nvidia-cuda-cccl-cu12")

_STD_INCLUDE = Path(__file__).with_name("include")


@dataclass
class NvrtcOptions:
    """How NVRTC compiles a source; only these flags differ from NVRTC's defaults.

    Parameters
    ----------
    arch : str
        The virtual or real architecture to compile for, as NVRTC's -arch takes it:
        "sm_80", "sm_90", "compute_90", ...
    std : str or None
        The C++ dialect ("c++17", "c++20"); None keeps NVRTC's default.
    defines : dict of str to (str or None)
        Preprocessor macros; a value of None defines the macro without a value (-DNAME).
    include_paths : list of str
        Directories searched for #include files, before CUDA's own include directory.
    fast_math : bool
        Pass --use_fast_math (approximate division, square root and transcendentals, flush
        denormals to zero).
    lineinfo : bool
        Pass -lineinfo: the PTX carries `.file` and `.loc` directives that tie each
        instruction to its line of the source, so that errors can name the .cu line. It does
        not change the code NVRTC generates.
    debug : bool
        Pass -G: full debug information (`.section .debug_*`) and no optimisation, as nvcc -G.
        The PTX is several times longer and slower to run; line information comes with it.
    extra : list of str
        Raw NVRTC flags appended as given, for anything the fields above do not cover.
    """

    arch: str = "sm_80"
    std: str | None = None
    defines: dict[str, str | None] = field(default_factory=dict)
    include_paths: list[str] = field(default_factory=list)
    fast_math: bool = False
    lineinfo: bool = True
    debug: bool = False
    extra: list[str] = field(default_factory=list)


def cuda_include_dir() -> Path | None:
    """The include directory of the nvidia-cuda-runtime wheel, or None if it is absent.

    CUDA 13 wheels put every component's headers in nvidia/cu13/include; CUDA 12 wheels put
    the runtime's in nvidia/cuda_runtime/include. The newest release present wins.
    """
    try:
        import nvidia
    except ImportError:
        return None
    candidates: list[tuple[int, Path]] = []
    for root in map(Path, nvidia.__path__):
        for include in root.glob("cu[0-9]*/include"):
            release = include.parent.name[2:]
            if release.isdigit():
                candidates.append((int(release), include))
        candidates.append((12, root / "cuda_runtime" / "include"))
    for _, include in sorted(candidates, key=lambda c: -c[0]):
        if (include / "cuda_fp16.h").is_file():
            return include
    return None


def cccl_include_dir() -> Path | None:
    """The include directory of the nvidia-cuda-cccl wheel (cub/, thrust/, cuda/std/, nv/),
    or None if it is absent.

    CUDA 13 wheels put it in nvidia/cu13/include/cccl, CUDA 12 wheels in
    nvidia/cuda_cccl/include; the one beside CUDA's own headers wins.
    """
    include = cuda_include_dir()
    candidates = [include / "cccl"] if include is not None else []
    try:
        import nvidia
    except ImportError:
        return None
    candidates += [Path(root) / "cuda_cccl" / "include" for root in nvidia.__path__]
    for candidate in candidates:
        if (candidate / "cuda" / "std" / "version").is_file():
            return candidate
    return None


def std_include_dir() -> Path:
    """ptxport's C++ standard headers for NVRTC (see the module docstring)."""
    return _STD_INCLUDE


def cache_dir() -> Path:
    """Where compiled PTX is cached: $PTXPORT_CACHE_DIR/nvrtc, else ~/.cache/ptxport/nvrtc."""
    root = os.environ.get("PTXPORT_CACHE_DIR")
    base = Path(root) if root else Path.home() / ".cache" / "ptxport"
    return base / "nvrtc"


def _load_nvrtc() -> ModuleType:
    """Import cuda.bindings.nvrtc and make sure libnvrtc itself loads."""
    try:
        from cuda.bindings import nvrtc
    except ImportError as e:
        raise BackendUnavailableError(
            f"the cuda-bindings package is not installed ({e}): {_INSTALL_HINT}") from e
    try:
        # The first call loads libnvrtc; cuda.pathfinder raises a RuntimeError when it is absent.
        result, *_ = nvrtc.nvrtcVersion()
    except (OSError, RuntimeError) as e:
        raise BackendUnavailableError(
            f"the nvidia-cuda-nvrtc wheel is not installed ({e}): {_INSTALL_HINT}") from e
    if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise BackendUnavailableError(f"NVRTC does not work here ({result.name}): {_INSTALL_HINT}")
    return nvrtc


def nvrtc_version() -> tuple[int, int]:
    """NVRTC's (major, minor) release; raises BackendUnavailableError when NVRTC is absent."""
    _, major, minor = _load_nvrtc().nvrtcVersion()
    return major, minor


def available() -> tuple[bool, str]:
    """Whether NVRTC and CUDA's headers can be used: (True, "") or (False, why)."""
    try:
        _load_nvrtc()
    except BackendUnavailableError as e:
        return False, str(e)
    if cuda_include_dir() is None:
        return False, ("the nvidia-cuda-runtime wheel (CUDA's headers) is not installed: "
                       f"{_INSTALL_HINT}")
    return True, ""


@lru_cache(maxsize=1)
def _nvrtc_release() -> str:
    """NVRTC's release for the cache key, read from the wheel's metadata so as not to load
    libnvrtc; NVRTC itself is asked only when no wheel says (a system or conda NVRTC)."""
    for distribution in _NVRTC_DISTRIBUTIONS:
        try:
            return f"{distribution}=={metadata.version(distribution)}"
        except metadata.PackageNotFoundError:
            continue
    major, minor = nvrtc_version()
    return f"libnvrtc {major}.{minor}"


@lru_cache(maxsize=1)
def _headers_release() -> str:
    """What the headers ptxport adds depend on, for the cache key: CCCL's release and the
    contents of ptxport's standard headers (the user's own headers are not covered)."""
    digest = hashlib.sha256()
    for path in sorted(_STD_INCLUDE.iterdir()):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    cccl = "no cccl"
    for distribution in _CCCL_DISTRIBUTIONS:
        try:
            cccl = f"{distribution}=={metadata.version(distribution)}"
            break
        except metadata.PackageNotFoundError:
            continue
    return f"{cccl}; std headers {digest.hexdigest()[:16]}"


def _flags(options: NvrtcOptions) -> list[str]:
    flags = [f"-arch={options.arch}"]
    if options.std:
        flags.append(f"-std={options.std}")
    for name, value in options.defines.items():
        flags.append(f"-D{name}" if value is None else f"-D{name}={value}")
    flags += [f"-I{path}" for path in options.include_paths]
    flags.append(f"-I{_STD_INCLUDE}")
    flags += [f"-I{path}" for path in (cuda_include_dir(), cccl_include_dir()) if path]
    if options.fast_math:
        flags.append("--use_fast_math")
    if options.debug:
        flags.append("-G")
    elif options.lineinfo:
        # -G already emits .file and .loc directives.
        flags.append("-lineinfo")
    return flags + list(options.extra)


def _cache_path(source: str, name: str, flags: list[str],
                name_expressions: tuple[str, ...]) -> Path:
    key = json.dumps({"source": source, "name": name, "flags": flags, "nvrtc": _nvrtc_release(),
                      "headers": _headers_release(), "names": list(name_expressions)})
    digest = hashlib.sha256(key.encode()).hexdigest()
    return cache_dir() / f"{Path(name).stem}-{digest}.ptx"


def _write_atomically(path: Path, text: str) -> None:
    # Concurrent test processes may compile the same source: each writes its own temporary
    # file and renames it into place, so a reader sees either nothing or a whole file.
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _program_log(nvrtc: ModuleType, program: object) -> str:
    _, size = nvrtc.nvrtcGetProgramLogSize(program)
    # NVRTC writes into the buffer: a bytearray, never bytes (b" " * 1 is Python's shared
    # one-byte b" ", which an empty log's terminating NUL turned into b"\0" for the whole
    # process)
    log = bytearray(size)
    nvrtc.nvrtcGetProgramLog(program, log)
    return log.rstrip(b"\0").decode(errors="replace")


@dataclass(frozen=True)
class NvrtcOutput:
    """What one NVRTC compilation gives back.

    Attributes
    ----------
    ptx : str
        The PTX module.
    lowered_names : dict of str to str
        Each name expression asked for ("saxpy<float>") and the symbol NVRTC gave it in the
        PTX (its mangled name, "_Z5saxpyIfEvT_PKS0_PS0_m"), from nvrtcGetLoweredName.
    log : str
        NVRTC's program log (warnings); empty when the PTX came from the cache.
    """

    ptx: str
    lowered_names: dict[str, str] = field(default_factory=dict)
    log: str = ""


def _run_nvrtc(source: str, name: str, flags: list[str],
               name_expressions: tuple[str, ...] = ()) -> NvrtcOutput:
    nvrtc = _load_nvrtc()
    ok = nvrtc.nvrtcResult.NVRTC_SUCCESS
    result, program = nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], [])
    if result != ok:
        raise CompileError(f"{name}: NVRTC could not create a program ({result.name})")
    try:
        for expression in name_expressions:
            # Name expressions make NVRTC instantiate templates and report their symbols.
            (result,) = nvrtc.nvrtcAddNameExpression(program, expression.encode())
            if result != ok:
                raise CompileError(f"{name}: NVRTC refused the name expression "
                                   f"{expression!r} ({result.name})")
        encoded = [flag.encode() for flag in flags]
        (result,) = nvrtc.nvrtcCompileProgram(program, len(encoded), encoded)
        if result != ok:
            log = _program_log(nvrtc, program)
            raise CompileError(
                f"{name}: NVRTC refused the source ({result.name}; flags: {' '.join(flags)})"
                f"{_missing_header_hint(log)}", log)
        _, size = nvrtc.nvrtcGetPTXSize(program)
        ptx = bytearray(size)
        (result,) = nvrtc.nvrtcGetPTX(program, ptx)
        if result != ok:
            raise CompileError(f"{name}: NVRTC compiled the source but gave no PTX ({result.name})")
        return NvrtcOutput(ptx.rstrip(b"\0").decode(),
                           _lowered_names(nvrtc, program, name, name_expressions),
                           _program_log(nvrtc, program))
    finally:
        nvrtc.nvrtcDestroyProgram(program)


def _missing_header_hint(log: str) -> str:
    """What to do when NVRTC found no header that CCCL's wheel would have provided."""
    if "cannot open source file" not in log or cccl_include_dir() is not None:
        return ""
    return ("; cub, thrust, libcu++ (<cuda/std/...>) and <nv/target> (which cooperative "
            "groups need) come from nvidia-cuda-cccl, and ptxport's C++ standard headers "
            f"forward to libcu++: {_INSTALL_HINT} installs it")


def _lowered_names(nvrtc: ModuleType, program: object, name: str,
                   name_expressions: tuple[str, ...]) -> dict[str, str]:
    lowered = {}
    for expression in name_expressions:
        result, symbol = nvrtc.nvrtcGetLoweredName(program, expression.encode())
        if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise CompileError(f"{name}: NVRTC has no symbol for the name expression "
                               f"{expression!r} ({result.name})")
        lowered[expression] = symbol.decode()
    return lowered


def _read_cached(path: Path, name_expressions: tuple[str, ...]) -> NvrtcOutput | None:
    """The cached output, or None; the lowered names live beside the PTX in a .json file."""
    try:
        names = {}
        if name_expressions:
            names = json.loads(path.with_suffix(".json").read_text())
        return NvrtcOutput(path.read_text(), names)
    except (OSError, ValueError):
        return None


def compile_program(source: str, name: str = "input.cu", options: NvrtcOptions | None = None,
                    name_expressions: tuple[str, ...] | list[str] = (), *,
                    cache: bool = True) -> NvrtcOutput:
    """Compile CUDA C++ with NVRTC: the PTX, the symbols of name expressions, NVRTC's log.

    Parameters are those of compile_to_ptx, and:

    name_expressions : sequence of str
        C++ names of kernels to instantiate and look up, as nvrtcAddNameExpression takes
        them: "saxpy<float>", "ns::kernel", "&f<int, 4>". Their symbols are in
        `lowered_names` of the result.
    """
    name_expressions = tuple(name_expressions)
    flags = _flags(options or NvrtcOptions())
    if not cache:
        return _run_nvrtc(source, name, flags, name_expressions)
    path = _cache_path(source, name, flags, name_expressions)
    cached = _read_cached(path, name_expressions)
    if cached is not None:
        return cached
    output = _run_nvrtc(source, name, flags, name_expressions)
    if name_expressions:
        # Names first: a reader that finds the PTX also finds them.
        _write_atomically(path.with_suffix(".json"), json.dumps(output.lowered_names))
    _write_atomically(path, output.ptx)
    return output


def compile_to_ptx(source: str, name: str = "input.cu", options: NvrtcOptions | None = None,
                   *, cache: bool = True) -> str:
    """Compile CUDA C++ to PTX text with NVRTC.

    Parameters
    ----------
    source : str
        The CUDA C++ source. Kernels meant to be found by name should be `extern "C"`.
    name : str
        The source's file name, used in NVRTC's diagnostics ("name(line): error: ...") and in
        the cache file's name.
    options : NvrtcOptions, optional
        Architecture, dialect, macros, include paths and extra flags; NvrtcOptions() if None.
    cache : bool
        Look the PTX up in, and store it into, the on-disk cache (see the module docstring;
        included headers are not part of the key).

    Returns
    -------
    str
        The PTX module.

    Raises
    ------
    CompileError
        NVRTC refused the source or a flag; `log` holds NVRTC's program log.
    BackendUnavailableError
        NVRTC is not installed (and the PTX was not in the cache).
    """
    return compile_program(source, name, options, cache=cache).ptx
