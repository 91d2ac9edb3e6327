"""CUDA's device runtime (cudadevrt) as PTX names it: the functions a kernel calls to launch
grids from the device (dynamic parallelism) and to ask about their errors.

nvcc compiles `kernel<<<grid, block, shared, stream>>>(args)` in device code (with -rdc=true,
CDP2, the only dynamic parallelism of CUDA 12+) to

    buffer = __cudaCDP2GetParameterBufferV2(&kernel, grid, block, shared);
    if (buffer) { store each argument at its offset; __cudaCDP2LaunchDeviceV2(buffer, stream); }

where both are `.extern .func`s that libcudadevrt.a defines on top of the driver's system
calls. The CUDA C++ names (cudaGetParameterBuffer, cudaLaunchDevice, ...) are the ones a PTX
writer calls directly (CUDA Programming Guide, "Device-side Launch from PTX"); `_ptsz`
variants are those of --default-stream per-thread. ptxport provides these functions itself
(codegen/targets/cpu/device_runtime.py on the CPU) rather than link cudadevrt's PTX, whose
system calls only NVIDIA's driver answers; nvptx calls NVIDIA's own (the cuda backend links
libcudadevrt.a: runtime/backends/cuda_devrt.py); the other targets refuse them by name.
"""

from __future__ import annotations

import re

__all__ = ["CDP1_ONLY", "FUNCTIONS", "HEAP_FUNCTIONS", "canonical_name",
           "is_device_runtime_library", "refusal"]

# canonical name -> (number the CPU's callback takes, .param sizes of its results and
# arguments in order: what the PTX declaration must have)
FUNCTIONS: dict[str, tuple[int, tuple[int, ...]]] = {
    "cudaGetParameterBuffer": (1, (8, 8, 8)),
    "cudaGetParameterBufferV2": (2, (8, 8, 12, 12, 4)),
    "cudaLaunchDevice": (3, (4, 8, 8, 12, 12, 4, 8)),
    "cudaLaunchDeviceV2": (4, (4, 8, 8)),
    "cudaGetLastError": (5, (4,)),
    "cudaPeekAtLastError": (6, (4,)),
    "cudaStreamCreateWithFlags": (7, (4, 8, 4)),
    "cudaStreamDestroy": (8, (4, 8)),
    "cudaGetDevice": (9, (4, 8)),
    "cudaMalloc": (10, (4, 8, 8)),
    "cudaFree": (11, (4, 8)),
    "cudaEventCreateWithFlags": (12, (4, 8, 4)),
    "cudaEventRecord": (13, (4, 8, 8)),
    "cudaStreamWaitEvent": (14, (4, 8, 8, 4)),
    "cudaEventDestroy": (15, (4, 8)),
}
# the functions that allocate from the device heap (the one of device malloc and free)
HEAP_FUNCTIONS = ("cudaMalloc", "cudaFree")
# Device-side waiting for child grids: CDP1, which CUDA 12 removed for compute_90 and later.
CDP1_ONLY = ("cudaDeviceSynchronize", "__cudaDeviceSynchronizeDeprecationAvoidance")


def canonical_name(name: str) -> str | None:
    """The CUDA C++ name of a device runtime function PTX calls by `name` (its
    `__cudaCDP2` prefix and `_ptsz` suffix taken off), or None for any other function."""
    if name.startswith("__cudaCDP2"):
        name = "cuda" + name[len("__cudaCDP2"):]
    if name.endswith("_ptsz"):
        name = name[:-len("_ptsz")]
    if name in FUNCTIONS or name in CDP1_ONLY:
        return name
    return None


def refusal(name: str) -> str | None:
    """Why a target refuses a call of the device runtime function `name` (None when `name`
    is none of them)."""
    canonical = canonical_name(name)
    if canonical is None:
        return None
    if canonical in CDP1_ONLY:
        return (f"a device-side '{name}': waiting for child grids in a kernel is CUDA's "
                "legacy dynamic parallelism (CDP1), removed in CUDA 12 for compute_90; "
                "ptxport runs CDP2, where child grids complete before their parent grid")
    return (f"dynamic parallelism ('{name}', a grid launched from the device): ptxport "
            "launches grids from the device on the cpu and nvptx targets only")


# cudadevrt's own definition of its launch function, as libcudadevrt.a's PTX has it
_LIBRARY_DEFINITION = re.compile(
    r"^\.visible\s+\.func\s*\([^)]*\)\s*__cudaCDP2LaunchDeviceV2\s*\(", re.MULTILINE)


def is_device_runtime_library(ptx: str) -> bool:
    """Whether `ptx` is CUDA's device runtime library itself (the PTX of libcudadevrt.a,
    which nvcc -rdc=true -lcudadevrt puts among a program's relocatable units): ptxport
    provides its functions and leaves this unit out when it links a program's units."""
    return _LIBRARY_DEFINITION.search(ptx) is not None
