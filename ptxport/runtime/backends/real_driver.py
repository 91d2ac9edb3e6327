"""NVIDIA's libcuda.so.1 for ptxport's cuda backend when it runs inside the shim.

Under `ptxport run --device cuda:N`, the program's process holds ptxport's libcuda.so.1 (first
on LD_LIBRARY_PATH, and loaded under that soname), and ptxport's runtime, running inside it,
drives the real GPU through cuda-bindings. cuda-bindings asks cuda-pathfinder for "libcuda.so.1"
(`cuda.bindings._internal.driver.load_library` calls `load_nvidia_dynamic_lib("cuda")`), which
would find ptxport's own library: the one already loaded, or the first on the search path.
`redirect_cuda_bindings` makes that call load NVIDIA's driver by absolute path instead, found
the way the dynamic loader would find it with ptxport's directory left out:
PTXPORT_CUDA_DRIVER (an explicit path) first, then LD_LIBRARY_PATH, the ld.so cache
(`ldconfig -p`), and the default directories.

`ptxport run` and `ptxport env` name ptxport's directory in PTXPORT_SHIM_DIRECTORY; a process
without it is not inside the shim, and cuda-bindings is left alone.

hip:N needs nothing of the kind: hip-python loads libamdhip64.so, which ptxport does not
replace.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
from collections.abc import Iterable
from pathlib import Path

from ptxport.errors import BackendUnavailableError

__all__ = ["SHIM_DIRECTORY_VARIABLE", "bindings_loader", "find_real_libcuda",
           "redirect_cuda_bindings"]

SHIM_DIRECTORY_VARIABLE = "PTXPORT_SHIM_DIRECTORY"
DRIVER_VARIABLE = "PTXPORT_CUDA_DRIVER"
SONAME = "libcuda.so.1"
# The loader's default directories (after LD_LIBRARY_PATH and the ld.so cache), and where
# WSL keeps the driver.
DEFAULT_DIRECTORIES = ("/lib64", "/usr/lib64", "/lib/x86_64-linux-gnu",
                       "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
                       "/usr/lib/aarch64-linux-gnu", "/lib", "/usr/lib", "/usr/lib/wsl/lib")


def ld_cache_paths(listing: str, soname: str = SONAME) -> list[str]:
    """The paths `ldconfig -p` lists for `soname`, in its order (lines such as
    '\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1')."""
    paths = []
    for line in listing.splitlines():
        name, _, rest = line.strip().partition(" ")
        if name == soname and "=>" in rest:
            paths.append(rest.split("=>", 1)[1].strip())
    return paths


def _ld_cache_listing() -> str:
    for ldconfig in ("/sbin/ldconfig", "/usr/sbin/ldconfig", "ldconfig"):
        try:
            return subprocess.run([ldconfig, "-p"], capture_output=True, text=True,
                                  timeout=10).stdout
        except (OSError, subprocess.SubprocessError):
            continue
    return ""


def _candidates(library_path: str, listing: str,
                defaults: Iterable[str]) -> Iterable[Path]:
    for directory in library_path.split(":"):
        if directory:
            yield Path(directory) / SONAME
    yield from map(Path, ld_cache_paths(listing))
    for directory in defaults:
        yield Path(directory) / SONAME


def find_real_libcuda(shim_directory: str, library_path: str | None = None,
                      listing: str | None = None,
                      defaults: Iterable[str] = DEFAULT_DIRECTORIES) -> str:
    """The absolute path of NVIDIA's libcuda.so.1: the first the loader would find, leaving
    out ptxport's (any file whose real path is in `shim_directory`). `library_path` and
    `listing` (the ld.so cache, as `ldconfig -p` prints it) default to this process's."""
    explicit = os.environ.get(DRIVER_VARIABLE)
    if explicit:
        if not Path(explicit).is_file():
            raise BackendUnavailableError(f"{DRIVER_VARIABLE}={explicit} is not a file")
        return str(Path(explicit).resolve())
    shim = Path(shim_directory).resolve()
    if library_path is None:
        library_path = os.environ.get("LD_LIBRARY_PATH", "")
    if listing is None:
        listing = _ld_cache_listing()
    for candidate in _candidates(library_path, listing, defaults):
        if candidate.is_file() and candidate.resolve().parent != shim:
            return str(candidate.resolve())
    raise BackendUnavailableError(
        f"the cuda device inside `ptxport run` needs NVIDIA's {SONAME}, and none was found "
        f"on LD_LIBRARY_PATH, in the ld.so cache or in {', '.join(defaults)} (besides "
        f"ptxport's own in {shim}): install NVIDIA's driver, or name the library in "
        f"{DRIVER_VARIABLE}")


MINIMUM_BINDINGS = "13.4.1"


def bindings_loader():
    """cuda.bindings._internal.driver, whose load_library asks cuda-pathfinder for the
    driver; cuda-bindings before 13.4.1 has none (it dlopens "libcuda.so.1" by name, which
    inside the shim is ptxport's library), and cannot be redirected."""
    try:
        from cuda.bindings._internal import driver as module
    except ImportError:
        module = None
    if module is None or not hasattr(module, "load_nvidia_dynamic_lib"):
        raise BackendUnavailableError(outdated_bindings_message())
    return module


def outdated_bindings_message() -> str:
    try:
        from cuda.bindings import __version__ as version
    except ImportError:
        version = "of unknown version"
    return (f"the cuda device inside `ptxport run` needs cuda-bindings >= {MINIMUM_BINDINGS}, "
            f"which loads NVIDIA's driver through cuda-pathfinder; this one ({version}) "
            f"dlopens {SONAME} by name, which inside `ptxport run` is ptxport's own library: "
            f"pip install 'cuda-bindings>={MINIMUM_BINDINGS}' (or 'ptxport[cuda]')")


class _Loaded:
    """cuda-pathfinder's LoadedDL, as much of it as cuda-bindings reads."""

    def __init__(self, path: str, handle: int):
        self.abs_path = path
        self.was_already_loaded_from_elsewhere = False
        self._handle_uint = handle
        self.found_via = DRIVER_VARIABLE


_loaded: list[ctypes.CDLL] = []   # NVIDIA's driver, kept loaded for the process


def redirect_cuda_bindings(module=None) -> str | None:
    """Inside the shim, make cuda-bindings load NVIDIA's driver by absolute path (before its
    first driver call); return that path, or None outside the shim. `module` is
    cuda.bindings._internal.driver (the one whose load_library asks cuda-pathfinder)."""
    shim_directory = os.environ.get(SHIM_DIRECTORY_VARIABLE)
    if not shim_directory:
        return None
    if module is None:
        module = bindings_loader()
    path = find_real_libcuda(shim_directory)
    original = module.load_nvidia_dynamic_lib
    if getattr(original, "ptxport_real_driver", None) == path:
        return path

    def load_nvidia_dynamic_lib(libname: str):
        if libname != "cuda":
            return original(libname)
        if not _loaded:
            # By path: a second library of soname libcuda.so.1 beside ptxport's, whose
            # symbols cuda-bindings reads from its handle alone (dlsym(handle, ...)).
            _loaded.append(ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_LOCAL))
        return _Loaded(path, _loaded[0]._handle)

    load_nvidia_dynamic_lib.ptxport_real_driver = path
    module.load_nvidia_dynamic_lib = load_nvidia_dynamic_lib
    return path
