"""Triton kernels on ptxport devices: ptxport as Triton's active driver.

    import ptxport.frontends.triton as pt
    pt.activate(Device("cpu"))          # triton.runtime.driver.set_active(pt.Driver(...))
    add_kernel[grid](x, y, out, n, BLOCK=1024)

Triton's own NVIDIA compiler makes the PTX (for GPUTarget("cuda", 80, 32) by default: no GPU
is needed to compile), Triton's cache keeps it, and this driver loads it into a ptxport
Program and launches it with Triton's metadata: num_warps * 32 threads per block, the
kernel's shared memory as dynamic shared memory (Triton's `global_smem` is an extern
array), and the trailing global- and profile-scratch pointers Triton appends to every
kernel. Nothing of Triton is patched: DriverBase's hooks are the whole interface.

Arguments: DeviceArrays (ptxport.frontends.arrays.device_array, which wraps numpy arrays and
Buffers), torch CPU tensors, and other objects with data_ptr() on the cpu device; numpy
arrays have no data_ptr(), which Triton's specializer needs, so wrap them with
device_array(). A launch returns once the kernel ran (as a CPU library call does), so
results can be read at once and a kernel's fault is raised at its launch.
"""

from __future__ import annotations

import struct
import time
import weakref

import numpy as np
import triton
from triton.backends.compiler import GPUTarget
from triton.backends.driver import DriverBase
from triton.runtime.cache import get_cache_manager

from ptxport.errors import InvalidValueError, UnsupportedFeatureError
from ptxport.frontends.arrays import DeviceArray, copy_back, device_array, staged
from ptxport.runtime import Buffer, Device, LaunchConfig, Program
from ptxport.runtime.launch import launch_now, launch_packed

__all__ = ["Driver", "activate", "deactivate", "device_array", "DeviceArray"]

# Scalar parameters by Triton's type name; pointers are u64 device addresses.
_SCALARS = {
    "i1": np.int8, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
    "u1": np.uint8, "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
    "fp16": np.float16, "fp32": np.float32, "f32": np.float32, "fp64": np.float64,
}


# struct's codes for the scalar types the common launch packs itself (_Packing)
_CODES = {"i1": "b", "i8": "b", "i16": "h", "i32": "i", "i64": "q", "u1": "B", "u8": "B",
          "u16": "H", "u32": "I", "u64": "Q", "fp16": "e", "fp32": "f", "f32": "f", "fp64": "d"}


def _bf16_bits(value: float) -> np.uint16:
    """A float as bfloat16's bits, rounded to nearest even, as Triton's launcher does."""
    if np.isnan(value):
        return np.uint16(0x7FC0)
    bits = int(np.float32(value).view(np.uint32))
    bits += 0x7FFF + ((bits >> 16) & 1)
    return np.uint16((bits >> 16) & 0xFFFF)


class _Utils:
    """What Triton asks of `driver.active.utils`: loading binaries and device properties."""

    def load_binary(self, name, kernel, shared, device):
        """(module, function, n_regs, n_spills, n_max_threads). The binary Triton passes is
        its cubin; ptxport reads the PTX, which the launcher finds in Triton's cache. The
        module handle is the kernel's name: Triton takes a None module for one not loaded
        yet, and would make its launcher again at every launch."""
        limit = device.properties.max_threads_per_block
        return name, name, 0, 0, limit

    def unload_module(self, module) -> None:
        pass

    def get_device_properties(self, device) -> dict:
        """Triton reads max_shared_mem (to refuse a kernel that needs more); the others feed
        only triton.testing's performance models, and have no meaning off a GPU."""
        p = device.properties
        return {"max_shared_mem": p.max_shared_memory_per_block_optin,
                "multiprocessor_count": p.multiprocessor_count,
                "sm_clock_rate": p.clock_rate, "mem_clock_rate": p.clock_rate,
                "mem_bus_width": 64, "max_num_regs": 65536, "warpSize": p.warp_size}


class Launcher:
    """Triton's launcher_cls: made once per compiled kernel, called for every launch."""

    def __init__(self, src, metadata):
        if getattr(metadata, "num_ctas", 1) != 1:
            raise UnsupportedFeatureError(
                f"num_ctas={metadata.num_ctas}", "ptxport", reason=(
                    f"Triton kernel {metadata.name} asks for thread block clusters, which no "
                    "ptxport backend launches yet; use num_ctas=1"))
        if getattr(metadata, "tensordesc_meta", None):
            raise UnsupportedFeatureError(
                "tensor descriptors (TMA)", "ptxport", reason=(
                    f"Triton kernel {metadata.name} takes host tensor descriptors"))
        self.name = metadata.name
        self.block = metadata.num_warps * metadata.warp_size
        self.shared = metadata.shared
        # launch_cooperative_grid: a cooperative launch (the cpu device makes them, with at
        # most one block per worker; other devices refuse them with the reason);
        # launch_pdl: programmatic dependent launch, which ptxport allows
        # (metadata of older Tritons lacks some: 3.6 is run on the GPU machine's host)
        self.kinds = {"is_cooperative": bool(getattr(metadata, "launch_cooperative_grid", 0)),
                      "programmatic_stream_serialization": bool(getattr(metadata, "launch_pdl",
                                                                        0))}
        # the trailing scratch pointers, as many as this Triton appends to every kernel
        self.scratch = [(getattr(metadata, f"{kind}_scratch_size"),
                         getattr(metadata, f"{kind}_scratch_align"))
                        for kind in ("global", "profile")
                        if hasattr(metadata, f"{kind}_scratch_size")]
        names = src.fn.arg_names if hasattr(src, "fn") else list(src.signature)
        self.params = list(zip(names, src.signature.values(), strict=True))
        self.kernel = _load_ptx(metadata)
        self.configs: dict[tuple[int, int, int], LaunchConfig] = {}    # by grid
        self.packing = _Packing.of(self.params, self.scratch, self.kernel)

    def __call__(self, grid_x, grid_y, grid_z, stream, function, kernel_metadata,
                 launch_metadata, enter_hook, exit_hook, *args):
        blocks = grid_x * grid_y * grid_z
        if blocks == 0:
            return
        device = stream.device
        packed = None if self.packing is None else self.packing.pack(args, device, blocks)
        if packed is not None:      # (the common launch: arrays, tensors and numbers)
            if enter_hook is not None:
                enter_hook(launch_metadata)
            launch_packed(stream, self._config(grid_x, grid_y, grid_z), self.kernel, *packed,
                          now=True)
            stream.sync()
            if exit_hook is not None:
                exit_hook(launch_metadata)
            return
        self._launch(grid_x, grid_y, grid_z, stream, launch_metadata, enter_hook, exit_hook,
                     args)

    def _config(self, grid_x: int, grid_y: int, grid_z: int) -> LaunchConfig:
        grid = (grid_x, grid_y, grid_z)
        config = self.configs.get(grid)
        if config is None:      # (a kernel is launched with the same few grids over and over)
            if len(self.configs) >= 64:
                self.configs.clear()
            config = self.configs[grid] = LaunchConfig(grid=grid, block=self.block,
                                                       shmem_size=self.shared, **self.kinds)
        return config

    def _launch(self, grid_x, grid_y, grid_z, stream, launch_metadata, enter_hook, exit_hook,
                args) -> None:
        """Any launch: every argument converted (host arrays staged, tensors' storage
        registered), with Triton's hooks around it."""
        device = stream.device
        values, temporaries, registered = [], [], []
        for (name, ty), arg in zip(self.params, args, strict=True):
            self._convert(name, ty, arg, device, values, (temporaries, registered))
        blocks = grid_x * grid_y * grid_z
        for size, _align in self.scratch:
            values.append(_scratch(device, blocks * size) if size else np.uint64(0))
        if enter_hook is not None:
            enter_hook(launch_metadata)
        launch_now(stream, self._config(grid_x, grid_y, grid_z), self.kernel, *values)
        stream.sync()
        copy_back(temporaries)
        for buffer in registered:
            buffer.close()
        if exit_hook is not None:
            exit_hook(launch_metadata)

    def _convert(self, name, ty, arg, device, values, held) -> None:
        """Append the launch values of one Triton argument (tuples flattened, constexprs
        dropped); `held`: the staged arrays and registered buffers of the launch."""
        if isinstance(ty, tuple):
            for index, (sub_ty, sub_arg) in enumerate(zip(ty, arg, strict=True)):
                self._convert(f"{name}[{index}]", sub_ty, sub_arg, device, values, held)
            return
        if ty == "constexpr":
            return
        what = f"Triton kernel {self.name}, argument {name}"
        if ty.startswith("*"):
            values.append(_pointer(arg, device, what, *held))
        elif ty == "bf16":
            values.append(_bf16_bits(arg))
        elif ty in _SCALARS:
            values.append(_SCALARS[ty](arg))
        else:
            raise UnsupportedFeatureError(f"Triton argument type {ty}", str(device),
                                          reason=f"{what} has a type ptxport cannot pass")


class _Packing:
    """A kernel's parameter bytes in one struct.pack, for launches whose pointer arguments
    are all DeviceArrays on the launch's device, None, or on the cpu device torch tensors
    (their storage registered while they live: _tensor_memory), and whose scalars are plain
    numbers: what programs launch over and over. Anything else (a host array to stage, a
    closed buffer, a number out of its type's range) makes `pack` give None, and the
    launcher takes the general path, which converts (or refuses, saying why) every
    argument."""

    def __init__(self, arguments: int, slots: list[tuple[int, bool]], scratch: list[int],
                 layout: str):
        self.arguments = arguments  # how many Triton passes (constexprs included)
        self.slots = slots          # (index in Triton's arguments, whether a pointer)
        self.scratch = scratch      # the trailing scratch pointers' bytes per block
        self.struct = struct.Struct(layout)

    @classmethod
    def of(cls, params, scratch, kernel) -> _Packing | None:
        """The packing of a kernel with Triton parameters `params` ((name, type), constexprs
        included) and `scratch` pointers, or None when a parameter is not one this packs
        as the general path would (a tuple, bf16, a type the kernel's parameter refuses)."""
        slots, codes = [], []
        for index, (_, ty) in enumerate(params):
            if ty == "constexpr":
                continue
            if not isinstance(ty, str) or not (ty.startswith("*") or ty in _CODES):
                return None
            slots.append((index, ty.startswith("*")))
            codes.append("Q" if ty.startswith("*") else _CODES[ty])
        codes += ["Q"] * len(scratch)
        infos = kernel.arguments_info
        if len(infos) != len(codes):
            return None
        layout, place = "<", 0
        pointers = [pointer for _, pointer in slots] + [True] * len(scratch)
        for code, info, pointer in zip(codes, infos, pointers, strict=True):
            # (what the general path's packer would refuse or convert, it takes)
            refused = info.pointer is False if pointer else info.pointer is True
            kind = info.type[:1]        # f, s, u or b (bits: any value of its size)
            if refused or info.size != struct.calcsize(code) or info.offset < place \
                    or kind in "su" and code in "efd" or kind == "f" and code not in "efd":
                return None
            layout += "x" * (info.offset - place) + code
            place = info.offset + info.size
        layout += "x" * (kernel.param_buffer_size - place)
        return cls(len(params), slots, [size for size, _ in scratch], layout)

    def pack(self, args, device: Device, blocks: int) -> tuple[bytes, list] | None:
        """(parameter bytes, the buffers the launch uses) for Triton's `args`, or None."""
        if len(args) != self.arguments:
            return None
        values, buffers = [], []
        for index, pointer in self.slots:
            arg = args[index]
            if not pointer:
                values.append(arg)
            elif arg.__class__ is DeviceArray:
                buffer = arg.buffer
                if buffer.device is not device or buffer.is_closed:
                    return None
                values.append(buffer.handle)
                buffers.append(buffer)
            elif arg is None:
                values.append(0)
            elif device.backend == "cpu":       # (a torch tensor: its storage registered)
                buffer, kept = _tensor_memory(arg, device)
                if not kept:
                    if buffer is not None:
                        buffer.close()
                    return None
                values.append(arg.data_ptr())
                buffers.append(buffer)
            else:
                return None
        for size in self.scratch:
            if size:
                buffer = _scratch(device, blocks * size)
                values.append(buffer.handle)
                buffers.append(buffer)
            else:
                values.append(0)
        try:
            return self.struct.pack(*values), buffers
        except (struct.error, OverflowError, TypeError):   # (the general path says why)
            return None


def _pointer(arg, device: Device, what: str, temporaries: list, registered: list):
    """A pointer argument's launch value: a Buffer, or an address (np.uint64)."""
    if arg is None:
        return np.uint64(0)
    if isinstance(arg, DeviceArray):
        return staged(arg, device, what).buffer
    if device.backend == "cpu":
        return _host_address(arg, device, registered)
    array = staged(arg, device, what)
    temporaries.append(array)
    return array.buffer


def _host_address(arg, device: Device, registered: list) -> np.uint64:
    """The address of a host tensor on the cpu device, whose memory (the whole storage, so
    that strided views work) is registered with the device (_tensor_memory; `registered`
    gets a registration made for this launch only). An object with data_ptr() but no
    storage (memory from C code) is passed as its address, unchecked."""
    buffer, kept = _tensor_memory(arg, device)
    if buffer is not None and not kept:
        registered.append(buffer)
    return np.uint64(arg.data_ptr())


# The registrations of host tensors' storage with the cpu device that stay while the tensor
# lives, by id(tensor): (address, size, Buffer). A tensor passed launch after launch keeps
# one registration, so the device's allocations stay the same and its workers keep their
# allocation tables (a registration made and freed at every launch had every worker make
# a new table at the next).
_TENSORS: dict[int, tuple[int, int, Buffer]] = {}


def _tensor_memory(arg, device: Device) -> tuple[Buffer | None, bool]:
    """(the registration of `arg`'s storage, whether it stays while `arg` lives) for an
    object with untyped_storage() (a torch tensor); (None, False) for one without. The
    registration holds the storage, not the tensor, and ends when the tensor goes; one of
    an object that has no weak references is for one launch (False)."""
    storage = getattr(arg, "untyped_storage", None)
    if storage is None:
        return None, False
    memory = storage()
    address, size, key = memory.data_ptr(), memory.nbytes(), id(arg)
    held = _TENSORS.get(key)
    if held is not None:
        if held[:2] == (address, size) and held[2].device is device \
                and not held[2].is_closed:
            return held[2], True
        held[2].close()     # (the tensor has other storage now, e.g. after set_())
    buffer = Buffer.from_handle(address, size, device, owner=memory)
    if held is None:
        try:
            weakref.finalize(arg, _forget_tensor, key)
        except TypeError:
            return buffer, False
    _TENSORS[key] = (address, size, buffer)
    return buffer, True


def _forget_tensor(key: int) -> None:
    """A tensor's finalizer: its registration ends. It never waits for a lock: the garbage
    collector runs it in whatever thread allocates, maybe inside that thread's section of a
    stream's lock (runtime/stream.py's docstring), so the free is queued only where the lock
    is free at once, else at the next submit or sync. The entry goes at once (a tensor made
    later may have the same id)."""
    held = _TENSORS.pop(key, None)
    if held is not None:
        held[2]._close_in_finalizer()


_SCRATCH: dict[tuple[Device, int], object] = {}


def _scratch(device: Device, nbytes: int):
    """Scratch memory for one launch at a time (launches through this driver are
    synchronous, so one buffer per device and size is enough)."""
    key = (device, nbytes)
    if key not in _SCRATCH:
        _SCRATCH[key] = device.allocate(nbytes, stream=device.default_stream)
    return _SCRATCH[key]


_PROGRAMS: dict[str, object] = {}


def _load_ptx(metadata):
    """The ptxport Kernel for a compiled Triton kernel, from the PTX in Triton's cache."""
    key = f"{metadata.hash}/{metadata.name}"
    if key not in _PROGRAMS:
        path = get_cache_manager(metadata.hash).get_file(f"{metadata.name}.ptx")
        if path is None:
            raise InvalidValueError(
                f"Triton's cache has no PTX for kernel {metadata.name} (hash "
                f"{metadata.hash}): ptxport launches Triton's PTX, so unset "
                "TRITON_STORE_BINARY_ONLY")
        with open(path) as f:
            ptx = f.read()
        code = Program(ptx, code_type="ptx").compile("native")
        _PROGRAMS[key] = code.get_kernel(metadata.name)
    return _PROGRAMS[key]


def _benchmark(kernel_call, *, quantiles=None, warmup: int = 1, rep: int = 5, **_):
    """Triton's Benchmarker: milliseconds per call (each launch ends when the kernel ran)."""
    kernel_call()
    for _ in range(warmup - 1):
        kernel_call()
    times = []
    for _ in range(rep):
        start = time.perf_counter()
        kernel_call()
        times.append((time.perf_counter() - start) * 1e3)
    if quantiles is None:
        return float(np.mean(times))
    return [float(q) for q in np.quantile(times, quantiles)]


class Driver(DriverBase):
    """A Triton driver whose current device is one ptxport Device.

    target : the GPUTarget Triton compiles for (sm_80 by default; ptxport reads its PTX).
    """

    def __init__(self, device: Device | None = None, target: GPUTarget | None = None):
        super().__init__()
        self.device = Device("cpu") if device is None else device
        self.target = GPUTarget("cuda", 80, 32) if target is None else target
        self.utils = _Utils()
        self.launcher_cls = Launcher

    @classmethod
    def is_active(cls) -> bool:
        return False     # made active by activate(), never picked by Triton on its own

    def map_python_to_cpp_type(self, ty: str) -> str:
        return "CUdeviceptr" if ty.startswith("*") else ty

    def get_current_target(self) -> GPUTarget:
        return self.target

    def get_current_device(self) -> Device:
        return self.device

    def set_current_device(self, device: Device) -> None:
        if device is not self.device:
            raise InvalidValueError(f"this Triton driver runs on {self.device}; call "
                                    f"ptxport.frontends.triton.activate({device!r})")

    def get_current_stream(self, device=None):
        return self.device.default_stream

    def get_device_capability(self, device=None) -> tuple[int, int]:
        return divmod(self.target.arch, 10)

    def get_active_torch_device(self):
        import torch

        return torch.device("cpu")

    def get_benchmarker(self):
        return _benchmark

    def get_empty_cache_for_benchmark(self):
        return device_array(1 << 20, self.device, dtype=np.int8)

    def clear_cache(self, cache) -> None:
        pass

    def allocate_default_profile_scratch(self, size: int, alignment: int, stream):
        return _scratch(self.device, size)


def activate(device: Device | None = None, target: GPUTarget | None = None) -> Driver:
    """Make ptxport on `device` (the cpu device if None) Triton's active driver."""
    if isinstance(device, str):
        device = Device(device)
    driver = Driver(device, target)
    triton.runtime.driver.set_active(driver)
    return driver


def deactivate() -> None:
    """Give Triton back its default driver (a GPU's, where one is present), chosen when
    Triton next asks for one."""
    triton.runtime.driver.set_active(None)

