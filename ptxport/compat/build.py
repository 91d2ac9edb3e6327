"""Building the native shim: native/shim.c plus typed entry points generated from
signatures.py, compiled with the system C compiler into libcuda.so.1 under ptxport's cache.

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
from pathlib import Path

from ptxport.cache import cache_path
from ptxport.compat.driver_names import NAMES
from ptxport.compat.signatures import ENTRY_POINTS, Signature
from ptxport.errors import BackendUnavailableError, CompileError

__all__ = ["entry_points_source", "shim_directory", "unsupported_names"]

_SOURCE = Path(__file__).parent / "native" / "shim.c"
LIBRARY_NAMES = ("libcuda.so.1", "libcuda.so")


_MAX_ARGS = 16   # PTXPORT_MAX_ARGS in shim.c


def _entry_point(index: int, sig: Signature) -> str:
    """One exported C function passing its arguments to handler `index`."""
    if len(sig.params) > _MAX_ARGS:
        raise CompileError(f"ptxport.compat.signatures: {sig.name} has {len(sig.params)} "
                           f"parameters; the shim passes at most {_MAX_ARGS}")
    params = ", ".join(f"{p.c_type} a{i}" for i, p in enumerate(sig.params)) or "void"
    args = []
    signed = floats = doubles = 0
    for i, p in enumerate(sig.params):
        if p.c_type == "float":
            floats |= 1 << i
            args.append(f"ptxport_float_bits(a{i})")
        elif p.c_type == "double":
            doubles |= 1 << i
            args.append(f"ptxport_double_bits(a{i})")
        else:
            signed |= int(p.is_signed) << i
            cast = "(uint64_t)(uintptr_t)" if p.is_pointer else \
                "(uint64_t)(int64_t)" if p.is_signed else "(uint64_t)"
            args.append(f"{cast}a{i}")
    array = f"uint64_t args[] = {{{', '.join(args)}}};" if args else "uint64_t *args = NULL;"
    call = f"ptxport_call({index}, {len(args)}, args, {signed:#x}u, {floats:#x}u, {doubles:#x}u)"
    c_ret = "int" if sig.ret == "CUresult" else sig.ret
    body = f"{call};" if c_ret == "void" else f"return ({c_ret}){call};"
    return f"EXPORT {c_ret} {sig.name}({params}) {{\n    {array}\n    {body}\n}}\n"


def unsupported_names() -> tuple[str, ...]:
    """The driver API names the shim exports as stubs (driver_names.NAMES less those ptxport
    implements), in the order of the stubs' numbers after the anonymous pool."""
    implemented = {sig.name for sig in ENTRY_POINTS}
    return tuple(name for name in NAMES if name not in implemented)


def _named_stubs() -> str:
    """An exported stub per unsupported name: stub number STUB_COUNT + i names itself."""
    return "".join(f"EXPORT int {name}(void) {{ return ptxport_unsupported("
                   f"PTXPORT_STUB_COUNT + {i}); }}\n"
                   for i, name in enumerate(unsupported_names()))


def entry_points_source() -> str:
    """The C source of every entry point of signatures.ENTRY_POINTS, in order, and of the
    stubs of the driver API names ptxport does not implement."""
    helpers = (
        "static inline uint64_t ptxport_float_bits(float f) {\n"
        "    uint32_t b; memcpy(&b, &f, sizeof b); return b;\n}\n"
        "static inline uint64_t ptxport_double_bits(double d) {\n"
        "    uint64_t b; memcpy(&b, &d, sizeof b); return b;\n}\n")
    return (helpers + "\n".join(_entry_point(i, sig) for i, sig in enumerate(ENTRY_POINTS))
            + _named_stubs())


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
    digest = hashlib.sha256()
    for part in (_SOURCE.read_bytes(), generated.encode(), libpython.encode(), home.encode(),
                 sysconfig.get_paths()["include"].encode()):
        digest.update(part)
        digest.update(b"\0")
    return digest.hexdigest()[:24]


def shim_directory() -> Path:
    """The directory holding libcuda.so.1 for this Python, built first if need be; raises
    BackendUnavailableError (no compiler, no shared libpython) or CompileError."""
    generated = entry_points_source()
    libpython, home = _libpython()
    directory = cache_path("compat", _key(generated, libpython, home))
    if (directory / LIBRARY_NAMES[0]).exists():
        return directory
    directory.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=directory.parent) as work:
        work_dir = Path(work)
        (work_dir / "entry_points.h").write_text(generated)
        shutil.copy(_SOURCE, work_dir / "shim.c")
        _compile(work_dir, libpython, home)
        for alias in LIBRARY_NAMES[1:]:
            (work_dir / alias).symlink_to(LIBRARY_NAMES[0])
        try:
            os.rename(work_dir, directory)
        except OSError:
            if not (directory / LIBRARY_NAMES[0]).exists():  # not a concurrent build's
                raise
        work_dir.mkdir(exist_ok=True)  # TemporaryDirectory removes what is left there
    return directory


def _compile(work: Path, libpython: str, home: str) -> None:
    include = sysconfig.get_paths()["include"]
    if not (Path(include) / "Python.h").exists():
        raise BackendUnavailableError(
            f"`ptxport run` compiles a small C library against Python's headers, and "
            f"{include}/Python.h is missing: install them (Debian: apt install python3-dev)")
    command = [
        *_compiler(), "-shared", "-fPIC", "-O2", "-fvisibility=hidden",
        f"-I{include}", f"-I{work}",
        f"-DPTXPORT_ENTRY_COUNT={len(ENTRY_POINTS)}",
        f'-DPTXPORT_LIBPYTHON="{libpython}"', f'-DPTXPORT_PYTHONHOME="{home}"',
        "-Wl,-soname,libcuda.so.1", "-o", str(work / LIBRARY_NAMES[0]), str(work / "shim.c"),
        libpython, f"-Wl,-rpath,{Path(libpython).parent}", "-ldl", "-lpthread",
    ]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise CompileError(
            f"compiling ptxport's CUDA driver shim failed ({' '.join(command)})",
            log=result.stderr)
