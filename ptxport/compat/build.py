"""Building the native shims: native/shim.c plus typed entry points generated from a table of
signatures, compiled with the system C compiler into one drop-in library per NativeLibrary
(libcuda.so.1 from signatures.py, libcublas.so.13 and libcublasLt.so.13 from
cublas_signatures.py) in one directory under ptxport's cache.

The library embeds this Python (its libpython, its home), so it is built per Python
installation, at first use, and kept under a key made of the sources, the generated code and
the interpreter; a second `ptxport run` finds it at once. docs/compat.md says why it is built
this way.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ptxport.cache import cache_path
from ptxport.compat import cublas_signatures, cudart_signatures
from ptxport.compat.driver_names import NAMES
from ptxport.compat.signatures import ENTRY_POINTS, STRUCTS, Param, Signature, c_type
from ptxport.errors import BackendUnavailableError, CompileError

__all__ = ["LIBRARIES", "NativeLibrary", "entry_points_source", "shim_directory",
           "unsupported_names"]

_SOURCE = Path(__file__).parent / "native" / "shim.c"


@dataclass(frozen=True)
class NativeLibrary:
    """One drop-in library: shim.c compiled with these entry points.

    Attributes
    ----------
    names : tuple of str
        The soname first, then the names linked to it (`-lcuda` looks for libcuda.so).
    dispatch : str
        The Python module whose start(library_path) gives the handlers.
    entry_points : tuple of Signature
        The implemented functions, in the order of the handlers.
    stub_names : tuple of str
        Further exported names, each returning the library's "not supported" status.
    not_initialized, failed : int
        The status a call returns when Python cannot start, and when a handler raises.
    stub_pool : bool
        Whether the library carries the anonymous stubs cuGetProcAddress hands out.
    version : str
        The symbol version its exported names carry (NVIDIA's libcudart.so.13 defines one,
        and programs linked against it ask for it), or "" for none.
    native : str
        C source of functions written in C (added to the generated entry points).
    """

    names: tuple[str, ...]
    dispatch: str
    entry_points: tuple[Signature, ...]
    stub_names: tuple[str, ...]
    not_initialized: int
    failed: int
    stub_pool: bool = False
    version: str = ""
    native: str = ""


_MAX_ARGS = 32   # PTXPORT_MAX_ARGS in shim.c


def _entry_point(index: int, sig: Signature) -> str:
    """One exported C function passing its arguments to handler `index`."""
    params = ", ".join(f"{p.c_type} a{i}" for i, p in enumerate(sig.params)) or "void"
    # A struct passed by value reaches the handler as its fields, each one argument.
    fields = [(p if p.c_type not in STRUCTS else Param(t, ""), f"a{i}" + (f".{n}" if n else ""))
              for i, p in enumerate(sig.params)
              for t, n in STRUCTS.get(p.c_type, ((p.type, ""),))]
    if len(fields) > _MAX_ARGS:
        raise CompileError(f"ptxport.compat.signatures: {sig.name} has {len(fields)} "
                           f"arguments with its structs' fields; the shim passes at most "
                           f"{_MAX_ARGS}")
    args = []
    signed = floats = doubles = 0
    for i, (p, value) in enumerate(fields):
        if p.c_type == "float":
            floats |= 1 << i
            args.append(f"ptxport_float_bits({value})")
        elif p.c_type == "double":
            doubles |= 1 << i
            args.append(f"ptxport_double_bits({value})")
        else:
            signed |= int(p.is_signed) << i
            cast = "(uint64_t)(uintptr_t)" if p.is_pointer else \
                "(uint64_t)(int64_t)" if p.is_signed else "(uint64_t)"
            args.append(f"{cast}{value}")
    array = f"uint64_t args[] = {{{', '.join(args)}}};" if args else "uint64_t *args = NULL;"
    call = f"ptxport_call({index}, {len(args)}, args, {signed:#x}u, {floats:#x}u, {doubles:#x}u)"
    c_ret = sig.ret if "*" in sig.ret else c_type(sig.ret)
    body = f"{call};" if c_ret == "void" else f"return ({c_ret}){call};"
    return f"EXPORT {c_ret} {sig.name}({params}) {{\n    {array}\n    {body}\n}}\n"


def unsupported_names() -> tuple[str, ...]:
    """The driver API names the shim exports as stubs (driver_names.NAMES less those ptxport
    implements), in the order of the stubs' numbers after the anonymous pool."""
    implemented = {sig.name for sig in ENTRY_POINTS}
    return tuple(name for name in NAMES if name not in implemented)


def _named_stubs(names: tuple[str, ...]) -> str:
    """An exported stub per unsupported name: stub number STUB_COUNT + i names itself."""
    return "".join(f"EXPORT int {name}(void) {{ return ptxport_unsupported("
                   f"PTXPORT_STUB_COUNT + {i}); }}\n"
                   for i, name in enumerate(names))


def entry_points_source(library: NativeLibrary | None = None) -> str:
    """The C source of every entry point of `library` (the driver's by default), in order,
    and of the stubs of the names of its API that ptxport does not implement."""
    library = library or LIBRARIES[0]
    structs = "".join(
        f"typedef struct {{ {' '.join(f'{t} {n};' for t, n in fields)} }} {name};\n"
        for name, fields in STRUCTS.items())
    helpers = (
        structs +
        "static inline uint64_t ptxport_float_bits(float f) {\n"
        "    uint32_t b; memcpy(&b, &f, sizeof b); return b;\n}\n"
        "static inline uint64_t ptxport_double_bits(double d) {\n"
        "    uint64_t b; memcpy(&b, &d, sizeof b); return b;\n}\n")
    return (helpers + "\n".join(_entry_point(i, sig)
                                for i, sig in enumerate(library.entry_points))
            + _named_stubs(library.stub_names) + library.native)


# CUDA_ERROR_NOT_INITIALIZED and CUDA_ERROR_UNKNOWN (cudaErrorInitializationError and
# cudaErrorUnknown for the runtime); CUBLAS_STATUS_NOT_INITIALIZED and
# CUBLAS_STATUS_INTERNAL_ERROR.
LIBRARIES = (
    NativeLibrary(("libcuda.so.1", "libcuda.so"), "ptxport.compat.dispatch", ENTRY_POINTS,
                  unsupported_names(), 3, 999, stub_pool=True),
    NativeLibrary(("libcublas.so.13", "libcublas.so"), "ptxport.compat.cublas_dispatch",
                  cublas_signatures.ENTRY_POINTS, cublas_signatures.unsupported_names(),
                  1, 14),
    NativeLibrary(("libcudart.so.13", "libcudart.so"), "ptxport.compat.cudart_dispatch",
                  cudart_signatures.ENTRY_POINTS, cudart_signatures.unsupported_names(),
                  3, 999, version="libcudart.so.13", native=cudart_signatures.NATIVE_SOURCE),
    NativeLibrary(("libcublasLt.so.13", "libcublasLt.so"), "ptxport.compat.cublaslt_dispatch",
                  cublas_signatures.LT_ENTRY_POINTS, cublas_signatures.lt_unsupported_names(),
                  1, 14),
)


def _libpython() -> tuple[str, str]:
    """(path of this interpreter's shared libpython, its home)."""
    libdir = sysconfig.get_config_var("LIBDIR") or ""
    name = sysconfig.get_config_var("INSTSONAME") or sysconfig.get_config_var("LDLIBRARY") or ""
    path = Path(libdir) / name
    if not name.endswith((".so", ".so.1.0")) and ".so" not in name or not path.exists():
        raise BackendUnavailableError(
            f"`ptxport run` needs a Python built with a shared libpython (--enable-shared); "
            f"this one ({sys.executable}) has {name or 'none'} in {libdir or '?'}: use a "
            "Python with libpython3.x.so (Debian's, pyenv with PYTHON_CONFIGURE_OPTS="
            "--enable-shared, or the python.org build)")
    return str(path), sys.base_prefix


def _compiler() -> list[str]:
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return [name]
    try:
        import ziglang  # noqa: F401
    except ModuleNotFoundError:
        raise BackendUnavailableError(
            "`ptxport run` compiles a small C library at first use and found no C compiler: "
            "install one (apt install gcc) or the ziglang wheel (pip install ziglang)") \
            from None
    return [sys.executable, "-m", "ziglang", "cc"]


def _key(generated: str, libpython: str, home: str) -> str:
    """The cache key of the libraries built from `generated` (all their entry points) for
    this interpreter."""
    digest = hashlib.sha256()
    for part in (_SOURCE.read_bytes(), generated.encode(), libpython.encode(), home.encode(),
                 sysconfig.get_paths()["include"].encode()):
        digest.update(part)
        digest.update(b"\0")
    return digest.hexdigest()[:24]


def shim_directory() -> Path:
    """The directory holding the drop-in libraries (libcuda.so.1, libcublas.so.13) for this
    Python, built first if need be; raises BackendUnavailableError (no compiler, no shared
    libpython) or CompileError."""
    sources = {library.names[0]: entry_points_source(library) for library in LIBRARIES}
    libpython, home = _libpython()
    directory = cache_path("compat", _key("\0".join(sources.values()), libpython, home))
    if all((directory / library.names[0]).exists() for library in LIBRARIES):
        return directory
    directory.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=directory.parent) as work:
        work_dir = Path(work)
        shutil.copy(_SOURCE, work_dir / "shim.c")
        for library in LIBRARIES:
            generated = work_dir / f"{library.names[0]}.d"   # its own entry_points.h
            generated.mkdir()
            (generated / "entry_points.h").write_text(sources[library.names[0]])
            _compile(work_dir, generated, library, libpython, home)
            for alias in library.names[1:]:
                (work_dir / alias).symlink_to(library.names[0])
        try:
            os.rename(work_dir, directory)
        except OSError:
            if not (directory / LIBRARIES[0].names[0]).exists():  # not a concurrent build's
                raise
        work_dir.mkdir(exist_ok=True)  # TemporaryDirectory removes what is left there
    return directory


def _compile(work: Path, generated: Path, library: NativeLibrary, libpython: str,
             home: str) -> None:
    """Compile work/shim.c with the entry points in `generated` into `library`'s soname."""
    include = sysconfig.get_paths()["include"]
    if not (Path(include) / "Python.h").exists():
        raise BackendUnavailableError(
            f"`ptxport run` compiles a small C library against Python's headers, and "
            f"{include}/Python.h is missing: install them (Debian: apt install python3-dev)")
    soname = library.names[0]
    command = [
        *_compiler(), "-shared", "-fPIC", "-O2", "-fvisibility=hidden",
        f"-I{include}", f"-I{generated}",
        f"-DPTXPORT_ENTRY_COUNT={len(library.entry_points)}",
        f'-DPTXPORT_LIBPYTHON="{libpython}"', f'-DPTXPORT_PYTHONHOME="{home}"',
        f'-DPTXPORT_DISPATCH="{library.dispatch}"',
        f"-DPTXPORT_STATUS_NOT_INITIALIZED={library.not_initialized}",
        f"-DPTXPORT_STATUS_FAILED={library.failed}",
        f"-DPTXPORT_STUB_POOL={int(library.stub_pool)}",
        f"-Wl,-soname,{soname}", "-o", str(work / soname), str(work / "shim.c"),
        libpython, f"-Wl,-rpath,{Path(libpython).parent}", "-ldl", "-lpthread",
    ]
    if library.version:
        script = work / f"{soname}.map"
        script.write_text(f"{library.version} {{ global: *; }};\n")
        command.append(f"-Wl,--version-script,{script}")
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise CompileError(
            f"compiling ptxport's {soname} failed ({' '.join(command)})",
            log=result.stderr)
