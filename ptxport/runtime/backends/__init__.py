"""Backends: the few hooks through which the runtime reaches a kind of processor.

Every backend is one module here (cpu/, cuda.py, opencl.py, hip.py) defining a class
`Backend` that subclasses `BackendBase` below and fills in the same hooks: whether it can run
here and why not, its devices' properties, allocate/free, copy, fill, compile (IR module ->
one binary per kernel) and launch. Adding a backend means reading one neighbour; the runtime
(device.py, memory.py, stream.py, launch.py) never looks inside one.

Backends are found by name: `get("cpu")` imports ptxport.runtime.backends.cpu on first use.
A name in KNOWN whose file does not exist yet gives a BackendUnavailableError saying so.

Every hook that touches memory or runs a kernel is called on a stream's worker thread, in
stream order; the others are called on the user's thread.
"""

from __future__ import annotations

import importlib
import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Protocol

from ptxport.errors import BackendUnavailableError, InvalidValueError
from ptxport.ir.nodes import Module

__all__ = [
    "KNOWN",
    "Allocation",
    "BackendBase",
    "DeviceProperties",
    "KernelBinary",
    "availability",
    "get",
]

# In order of preference: Device() picks the first one present.
KNOWN = ("cuda", "hip", "opencl", "cpu")


@dataclass(frozen=True)
class DeviceProperties:
    """What a device can do, under cuda.core's names (cudaDeviceProp's, in snake case).

    Launches are checked against these limits before anything runs, so a configuration CUDA
    refuses is refused on every device.
    """

    name: str
    multiprocessor_count: int
    warp_size: int
    max_threads_per_block: int
    max_block_dim_x: int
    max_block_dim_y: int
    max_block_dim_z: int
    max_grid_dim_x: int
    max_grid_dim_y: int
    max_grid_dim_z: int
    max_shared_memory_per_block: int        # without opting in (CUDA: 48 KiB)
    max_shared_memory_per_block_optin: int  # the most a launch may use, static + dynamic
    max_shared_memory_per_multiprocessor: int
    max_threads_per_multiprocessor: int
    total_constant_memory: int
    total_global_memory: int
    clock_rate: int                         # kHz
    compute_capability_major: int
    compute_capability_minor: int
    integrated: bool                        # shares memory with the host
    unified_addressing: bool
    # cooperative launches (grid-wide synchronisation; BackendBase.cooperative_blocks)
    cooperative_launch: bool = False
    # the most blocks a multiprocessor holds at once (CUDA's maxBlocksPerMultiProcessor)
    max_blocks_per_multiprocessor: int = 32

    @property
    def max_block_dims(self) -> tuple[int, int, int]:
        return self.max_block_dim_x, self.max_block_dim_y, self.max_block_dim_z

    @property
    def max_grid_dims(self) -> tuple[int, int, int]:
        return self.max_grid_dim_x, self.max_grid_dim_y, self.max_grid_dim_z


@dataclass(frozen=True, eq=False)
class Allocation:
    """Memory a backend allocated: its device address, its size, and whatever object keeps
    it alive (`owner`). Queued work holds the Allocation, so memory outlives the work that
    uses it even when its Buffer is closed or collected first."""

    address: int
    size: int
    owner: object = None


class KernelBinary(Protocol):
    """One kernel compiled for one device (e.g. the CPU target's CpuKernelBinary)."""

    name: str

    def launch(self, grid: tuple[int, int, int], block: tuple[int, int, int],
               dynamic_shared: int, params: bytes,
               allocations: list[tuple[int, int]] | None = None,
               timeout: float | None = None) -> None: ...


class BackendBase(ABC):
    """The hooks every backend fills in. `ordinal` numbers a backend's devices from 0."""

    name: str = ""
    # DLPack's device type (DLDeviceType): 1 kDLCPU, 2 kDLCUDA, 10 kDLROCM, 14 kDLOneAPI.
    dlpack_device_type: int = 0
    # Whether a running launch can be stopped (launch's `timeout`): GPU APIs have no way to
    # end a running kernel short of ending the process.
    stops_launches: bool = False
    # CUDA arrays, texture and surface objects of the device's own API (cuda_textures.py's
    # hooks), for a backend whose kernels keep the texture instructions; None where
    # runtime/textures.py makes them itself (descriptors the linked sampler reads).
    textures = None

    def cooperative_blocks(self, ordinal: int, kernel, block: tuple[int, int, int],
                           dynamic_shared: int) -> int | None:
        """The most blocks a cooperative launch of `kernel` (a runtime Kernel) with this
        block shape may have on device `ordinal` (all must be resident at once), or None
        when the backend makes no cooperative launches."""
        return None

    def runs_at_once(self, binary: KernelBinary) -> bool:
        """Whether a launch of `binary` may run on the launching thread when its stream is
        idle: only kernels that end by themselves, soon (no loop, no call; see
        ptxport.ir.analysis.runs_to_completion), on a backend whose launch() runs them."""
        return False

    @abstractmethod
    def availability(self) -> tuple[bool, str]:
        """(True, "") when this backend can run here, else (False, why and what to do)."""

    @abstractmethod
    def device_count(self) -> int:
        """How many devices this backend has here."""

    @abstractmethod
    def properties(self, ordinal: int) -> DeviceProperties:
        """The limits and attributes of device `ordinal`."""

    @abstractmethod
    def allocate(self, ordinal: int, nbytes: int) -> Allocation:
        """Device memory of `nbytes`, aligned to 256 bytes like cudaMalloc; may raise
        OutOfMemoryError."""

    @abstractmethod
    def free(self, allocation: Allocation) -> None:
        """Give the memory back; called in stream order, after the work queued before it."""

    @abstractmethod
    def copy(self, dst: int, src: int, nbytes: int, kind: str) -> None:
        """Copy bytes between addresses; `kind` says which side is on the device, as
        cudaMemcpyKind does: "htod", "dtoh" or "dtod" (host addresses are numpy arrays')."""

    @abstractmethod
    def fill(self, address: int, nbytes: int, value: int, width: int) -> None:
        """Set `nbytes` at `address` to `value`, repeated as `width`-byte (1, 2, 4) words."""

    def host_view(self, allocation: Allocation):
        """A zero-copy numpy uint8 array over the allocation, or None when the host cannot
        address device memory."""
        return None

    def allocate_host(self, ordinal: int, nbytes: int, flags: int = 0) -> Allocation:
        """Page-locked host memory of `nbytes` that the host reads and writes at its
        address and the device's kernels address too (cuMemHostAlloc; `flags` are its
        CU_MEMHOSTALLOC_ bits). By default device memory, which is what it promises where
        the device shares the host's address space (the cpu device)."""
        return self.allocate(ordinal, nbytes)

    def allocate_managed(self, ordinal: int, nbytes: int) -> Allocation:
        """Managed memory of `nbytes` (cuMemAllocManaged): one address that the host and
        the device's kernels both use. By default device memory, as allocate_host."""
        return self.allocate(ordinal, nbytes)

    def register_host_memory(self, ordinal: int, memory) -> Allocation:
        """Host memory (`memory`: a 1-D uint8 numpy array over it, which keeps it alive)
        made addressable by the device's kernels in place, as an Allocation whose free()
        forgets it. Only devices whose kernels address the host's memory can."""
        raise InvalidValueError(
            f"{self.name}:{ordinal} cannot address host memory in place (its kernels see "
            "device memory only): allocate a buffer and copy the array into it, "
            "buf = dev.allocate(a.nbytes, stream=s); buf.copy_from(a, stream=s)")

    def module_global(self, ordinal: int, module: Module, name: str) -> tuple[int, int]:
        """(device address, size) of the module's .global or .const variable `name`, shared
        by every kernel of `module` on this device. Raises UnsupportedFeatureError where
        the backend keeps no module variables apart from its kernels' code."""
        from ptxport.errors import UnsupportedFeatureError

        raise UnsupportedFeatureError(
            f"the module variable {name!r}", self.name, None,
            "this device's kernels keep module variables in their own code, where the host "
            "cannot find them yet")

    @abstractmethod
    def compile(self, module: Module, kernels: list[str]) -> dict[str, KernelBinary]:
        """A binary for each named kernel of a verified IR module. The runtime calls this
        once per (device, kernel) and caches the result; raises CompileError or
        UnsupportedFeatureError."""

    def prepare(self, binary: KernelBinary, block: tuple[int, int, int]) -> bool:
        """Ready `binary` for blocks of shape `block`, on the launching thread before the
        launch is queued (code made per block shape is compiled or loaded here, so that a
        kernel that cannot compile fails in launch()). True if this launch is the first of
        the binary (for that shape), which compiled or loaded it: Events timing it say so.
        Nothing to do, and False, by default."""
        return False

    @abstractmethod
    def launch(self, ordinal: int, binary: KernelBinary, grid: tuple[int, int, int],
               block: tuple[int, int, int], dynamic_shared: int, params: bytes) -> None:
        """Run the whole grid and return when it is done; `params` is the packed parameter
        buffer (layout from ptxport.ir.abi.param_layout) with device addresses inside.
        Backends whose `stops_launches` is True also take `timeout=` (seconds): a launch
        still running then is stopped and raises KernelTimeoutError."""


_lock = threading.Lock()
_backends: dict[str, BackendBase] = {}


def _load(name: str) -> BackendBase:
    if name not in KNOWN:
        raise BackendUnavailableError(
            f"there is no backend named '{name}': the backends are {', '.join(KNOWN)}")
    module_name = f"{__name__}.{name}"
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name != module_name:
            raise
        raise BackendUnavailableError(
            f"the {name} backend is not written yet (ptxport has no {module_name}); "
            "use Device('cpu') meanwhile") from None
    return module.Backend()


def _instance(name: str) -> BackendBase:
    with _lock:
        if name not in _backends:
            _backends[name] = _load(name)
        return _backends[name]


def availability(name: str) -> tuple[bool, str]:
    """Whether the backend `name` can run here: (True, "") or (False, why)."""
    try:
        return _instance(name).availability()
    except BackendUnavailableError as e:
        return False, str(e)


def get(name: str) -> BackendBase:
    """The backend called `name`, ready to use; raises BackendUnavailableError saying why
    it cannot run here."""
    backend = _instance(name)
    ok, why = backend.availability()
    if not ok:
        raise BackendUnavailableError(f"the {name} backend cannot run here: {why}")
    return backend
