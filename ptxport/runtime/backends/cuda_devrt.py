"""Dynamic parallelism on NVIDIA GPUs: a module whose kernels launch grids from the device
calls CUDA's device runtime (cudadevrt: `__cudaCDP2GetParameterBufferV2`,
`__cudaCDP2LaunchDeviceV2`, ... as `.extern .func`s, codegen/device_runtime.py), which
NVIDIA ships as the static library libcudadevrt.a. Such a module cannot be loaded as it is
(cuModuleLoadData leaves the extern functions unresolved): the cuda backend links it with the
library through the driver's own linker, as `nvcc -rdc=true -lcudadevrt` does with nvlink:

    cuLinkCreate -> cuLinkAddData(PTX) -> cuLinkAddFile(LIBRARY, libcudadevrt.a)
                 -> cuLinkComplete -> the cubin, for cuModuleLoadData

Modules that call none of it load as before. Where the driver cannot JIT the PTX (newer than
the driver), the wheel's ptxas assembles it as relocatable code (`ptxas -c`) and the linker
takes that object instead.

libcudadevrt.a is looked for, in order: by cuda-pathfinder (`find_static_lib`, which knows
the wheels, conda and CUDA_HOME/CUDA_PATH), in the nvidia-cuda-runtime wheel
(site-packages/nvidia/cu13/lib), then in $CUDA_HOME/lib64 (or $CUDA_PATH) of a CUDA toolkit;
the link takes the first the driver accepts (a library newer than the driver is refused:
seen on an H100 with driver 580, CUDA 13.0, and the 13.5 wheel's libcudadevrt.a).
"""

from __future__ import annotations

import ctypes
import os
import re
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from ptxport.codegen.device_runtime import CDP1_ONLY, canonical_name
from ptxport.errors import BackendUnavailableError, CompileError

__all__ = ["INSTALL_HINT", "calls_device_runtime", "device_runtime_libraries",
           "device_runtime_library", "link_device_runtime"]

INSTALL_HINT = ("pip install nvidia-cuda-runtime (the wheel with libcudadevrt.a; "
                "pip install 'ptxport[cuda]' includes it), or set CUDA_HOME to a CUDA toolkit")

_EXTERN_FUNC = re.compile(r"^\s*\.extern\s+\.func\s*(?:\([^)]*\)\s*)?([\w$.]+)", re.MULTILINE)
_LIBRARY = "libcudadevrt.a"


def calls_device_runtime(ptx: str) -> bool:
    """Whether `ptx` declares one of cudadevrt's functions (those of CDP2) as `.extern
    .func`: a module that launches grids from the device."""
    for name in _EXTERN_FUNC.findall(ptx):
        canonical = canonical_name(name)
        if canonical is not None and canonical not in CDP1_ONLY:
            return True
    return False


def _from_pathfinder() -> Path | None:
    try:
        from cuda.pathfinder import find_static_lib
    except ImportError:     # no cuda-pathfinder, or one older than its static libraries
        return None
    try:
        return Path(find_static_lib("cudadevrt"))
    except Exception:       # StaticLibNotFoundError (a RuntimeError), or a name it lacks
        return None


def _from_wheel() -> Path | None:
    try:
        import nvidia
    except ImportError:
        return None
    found = sorted((path for root in map(Path, nvidia.__path__)
                    for path in root.glob(f"cu[0-9]*/lib/{_LIBRARY}")),
                   key=lambda path: -int(path.parent.parent.name[2:] or 0))
    return found[0] if found else None


def _from_toolkit() -> Path | None:
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        home = os.environ.get(variable)
        if not home:
            continue
        for lib in ("lib64", "lib", "lib/x64"):
            path = Path(home) / lib / _LIBRARY
            if path.is_file():
                return path
    return None


def device_runtime_libraries() -> list[Path]:
    """Every libcudadevrt.a found, in the order of the module's docstring (the link takes
    the first that the driver accepts: a wheel newer than the driver is not). Raises
    BackendUnavailableError naming the wheel to install when there is none."""
    found: list[Path] = []
    for find in (_from_pathfinder, _from_wheel, _from_toolkit):
        path = find()
        if path is not None and path.is_file() and path.resolve() not in \
                [p.resolve() for p in found]:
            found.append(path)
    if not found:
        raise BackendUnavailableError(
            f"dynamic parallelism on a cuda device needs CUDA's device runtime library "
            f"({_LIBRARY}), which was not found: {INSTALL_HINT}")
    return found


def device_runtime_library() -> Path:
    """The first libcudadevrt.a found (device_runtime_libraries)."""
    return device_runtime_libraries()[0]


class _LibraryRefused(CompileError):
    """The driver's linker refused the library itself (one newer than the driver)."""


def _relocatable(ptx: str, arch: str, name: str) -> bytes:
    """`ptxas -c`: the PTX as a relocatable cubin, for a driver that cannot JIT it."""
    from ptxport.runtime.backends.cuda import wheel_ptxas

    ptxas = wheel_ptxas()
    if ptxas is None:
        raise BackendUnavailableError("no ptxas to assemble the PTX with: pip install "
                                      "nvidia-cuda-nvcc (the release of the PTX, or newer)")
    with tempfile.TemporaryDirectory(prefix="ptxport-ptxas-") as tmp:
        source, target = Path(tmp) / f"{name}.ptx", Path(tmp) / f"{name}.o"
        source.write_text(ptx)
        result = subprocess.run([str(ptxas), f"-arch={arch}", "-c", str(source), "-o",
                                 str(target)], capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise CompileError(f"ptxas ({ptxas}) refused the PTX of {name} for {arch}",
                               result.stderr or result.stdout)
        return target.read_bytes()


def link_device_runtime(driver, ptx: str, arch: str, where: str, check: Callable,
                        not_jittable: tuple[str, ...]) -> bytes:
    """The cubin of `ptx` (which calls cudadevrt) linked with libcudadevrt.a by the driver's
    linker, for the device of the current context (`arch`, e.g. "sm_90", where ptxas must
    assemble). `check` is the backend's check of a cuda-bindings result (raising its error,
    saying what was being done); `not_jittable`, the CUresult names for which ptxas
    assembles the PTX instead of the driver. A refusal of the linker is a CompileError
    with the linker's log; a library the driver refuses (CUDA_ERROR_NO_BINARY_FOR_GPU for a
    libcudadevrt.a newer than the driver) gives way to the next one found."""
    refused = []
    for library in device_runtime_libraries():
        try:
            return _link_with(library, driver, ptx, arch, where, check, not_jittable)
        except _LibraryRefused as e:
            refused.append(str(e))
    raise CompileError(
        "no libcudadevrt.a found here links on this driver (it takes the library of its "
        "CUDA release or older): install the nvidia-cuda-runtime wheel of the driver's "
        "release, or set CUDA_HOME to a CUDA toolkit of that release", "\n".join(refused))


def _link_with(library: Path, driver, ptx: str, arch: str, where: str, check: Callable,
               not_jittable: tuple[str, ...]) -> bytes:
    """link_device_runtime with the library at `library`."""
    jit, option = driver.CUjitInputType, driver.CUjit_option
    log = bytearray(16384)
    try:
        created = driver.cuLinkCreate(
            2, [option.CU_JIT_ERROR_LOG_BUFFER, option.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES],
            [log, len(log)])
    except TypeError:   # bindings that take no buffer for the log: the CUresult will do
        created = driver.cuLinkCreate(0, [], [])
    state = check(created, f"cannot start linking {where} with {library}")
    name = Path(where.split(" ", 1)[0]).stem or "module"
    try:
        data = ptx.encode() + b"\0"
        code, = driver.cuLinkAddData(state, jit.CU_JIT_INPUT_PTX, data, len(data),
                                     f"{name}.ptx".encode(), 0, [], [])
        if code != 0 and getattr(code, "name", "") in not_jittable:
            data = _relocatable(ptx, arch, name)
            code, = driver.cuLinkAddData(state, jit.CU_JIT_INPUT_CUBIN, data, len(data),
                                         f"{name}.o".encode(), 0, [], [])
        _refused(code, f"cannot compile {where} for linking with {library}", log)
        code, = driver.cuLinkAddFile(state, jit.CU_JIT_INPUT_LIBRARY, str(library).encode(),
                                     0, [], [])
        _refused(code, f"cannot add {library} to the link of {where}", log, _LibraryRefused)
        code, cubin, size = driver.cuLinkComplete(state)
        _refused(code, f"cannot link {where} with {library}", log)
        return ctypes.string_at(int(cubin), int(size))
    finally:
        driver.cuLinkDestroy(state)


def _refused(code, doing: str, log: bytearray, error: type = CompileError) -> None:
    """Raise `error` (saying `doing`, the CUresult's name and the linker's log) unless
    `code` is CUDA_SUCCESS."""
    if code != 0:
        text = bytes(log).split(b"\0", 1)[0].decode(errors="replace").strip()
        raise error(f"{doing}: {getattr(code, 'name', f'CUresult {int(code)}')}",
                           text)
