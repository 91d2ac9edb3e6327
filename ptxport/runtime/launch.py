"""Launching kernels: LaunchConfig, launch(), and the checks made before anything runs.

A launch is checked on the caller's thread against the device's limits (the ones CUDA
refuses too) and the kernel's parameters, its arguments are packed into the parameter buffer
(layout from ptxport.ir.abi.param_layout), the kernel is compiled for the device if it is not
yet, and only then is it queued on the stream (or, for a small grid of a kernel that cannot
wait for anything, run at once when the stream is idle: see _queue). So a bad launch raises
at once, and the values of scalar arguments are taken at the call, as in CUDA.

Arguments: a Buffer (its device address) for a pointer; a numpy scalar of the parameter's
size for a value (np.float32(2), np.int32(n)); a numpy structured scalar (np.void) of the
parameter's size for a struct passed by value. Plain Python numbers are refused, because
their size is not known: the message says which numpy type to use.
"""

from __future__ import annotations

import operator
import weakref
from collections.abc import Callable
from functools import partial
from math import prod
from threading import get_ident

import numpy as np

from ptxport.errors import (
    ArgumentError,
    CooperativeLaunchTooLargeError,
    InvalidValueError,
    KernelExecutionError,
    LaunchError,
    PtxportError,
    UnsupportedFeatureError,
)
from ptxport.ir.abi import param_layout
from ptxport.runtime.backends import Allocation, DeviceProperties
from ptxport.runtime.device import Device
from ptxport.runtime.memory import Buffer
from ptxport.runtime.program import Kernel, ParamInfo
from ptxport.runtime.stream import Stream

__all__ = ["LaunchConfig", "launch", "launch_now", "launch_packed", "check_config",
           "pack_arguments"]


def _dims(value, what: str) -> tuple[int, int, int]:
    if value is None:
        raise LaunchError(f"LaunchConfig needs {what}= (an int or a tuple of up to 3 ints)")
    items = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    try:
        dims = tuple(operator.index(d) for d in items)
    except TypeError:
        raise LaunchError(f"{what} must be an int or a tuple of up to 3 ints, not {value!r}") \
            from None
    if not 1 <= len(dims) <= 3:
        raise LaunchError(f"{what} has {len(dims)} dimensions; it may have 1 to 3: {value!r}")
    if any(d < 1 for d in dims):
        raise LaunchError(f"{what} dimensions must be at least 1, not {value!r}")
    return (*dims, 1, 1)[:3]


class LaunchConfig:
    """The shape of a launch.

    Parameters
    ----------
    grid : int or tuple of up to 3 ints
        Blocks in the grid (x, y, z).
    block : int or tuple of up to 3 ints
        Threads in a block (x, y, z).
    shmem_size : int, optional
        Dynamic shared memory per block, in bytes (`extern __shared__` arrays); 0 if None.
    cluster : int or tuple of up to 3 ints, optional
        Blocks per thread block cluster; with it, `grid` counts clusters, as in cuda.core.
        Accepted here and refused by launch(): no backend launches clusters yet.
    is_cooperative : bool
        A cooperative launch: its blocks may synchronise grid-wide (cooperative groups'
        grid.sync()), so all must be resident at once. The cpu device (one block per worker)
        and cuda devices make them; the grid may have at most as many blocks as the device
        runs at once (CooperativeLaunchTooLargeError); other devices refuse them.
    programmatic_stream_serialization : bool
        Lets the kernel overlap the previous one in its stream (programmatic dependent
        launch). Accepted: it only permits overlap, and ptxport runs a stream's kernels one
        after the other, which PDL kernels must handle anyway.
    timeout : float, optional
        A watchdog, in seconds: a launch still running after that long is stopped, and
        its stream's next sync() raises KernelTimeoutError naming the kernel; the device
        stays usable. Only devices that can stop a running kernel take it (the cpu device);
        elsewhere the launch is refused. None (the default): no limit.

    `grid`, `block` and `cluster` (when given) are kept as 3-tuples.
    """

    def __init__(self, grid=None, cluster=None, block=None, shmem_size: int | None = None,
                 is_cooperative: bool = False, programmatic_stream_serialization: bool = False,
                 timeout: float | None = None):
        self.grid = _dims(grid, "grid")
        self.cluster = None if cluster is None else _dims(cluster, "cluster")
        self.block = _dims(block, "block")
        self.is_cooperative = bool(is_cooperative)
        self.programmatic_stream_serialization = bool(programmatic_stream_serialization)
        try:
            self.shmem_size = operator.index(shmem_size or 0)
        except TypeError:
            raise LaunchError(f"shmem_size must be an int (bytes), not {shmem_size!r}") \
                from None
        if self.shmem_size < 0:
            raise LaunchError(f"shmem_size must not be negative, not {self.shmem_size}")
        self.timeout = _timeout(timeout)

    def __repr__(self) -> str:
        cluster = "" if self.cluster is None else f", cluster={self.cluster}"
        timeout = "" if self.timeout is None else f", timeout={self.timeout:g}"
        return (f"LaunchConfig(grid={self.grid}{cluster}, block={self.block}, "
                f"shmem_size={self.shmem_size}{timeout})")


def _check_unsupported(config: LaunchConfig, kernel: Kernel, device: Device) -> None:
    """Refuse the kinds of launch no backend implements, rather than run them otherwise."""
    if config.cluster is not None:
        raise UnsupportedFeatureError(
            f"LaunchConfig(cluster={config.cluster})", str(device), reason=(
                f"no backend launches thread block clusters yet (kernel {kernel.name}); "
                "launch without cluster= and grid= counting blocks: a kernel then sees "
                "clusters of one block (%cluster_nctarank is 1)"))
    if config.is_cooperative:
        _check_cooperative(config, kernel, device)


def _check_cooperative(config: LaunchConfig, kernel: Kernel, device: Device) -> None:
    most = device._backend.cooperative_blocks(device.device_id, kernel, config.block,
                                              config.shmem_size)
    if most is None:
        raise UnsupportedFeatureError(
            "LaunchConfig(is_cooperative=True)", str(device), reason=(
                f"{device} makes no cooperative launches (kernel {kernel.name}): its blocks "
                "could not wait for each other; split the kernel at its grid-wide "
                "synchronisations into several launches, or use the cpu or a cuda device"))
    blocks = prod(config.grid)
    if blocks > most:
        raise CooperativeLaunchTooLargeError(
            f"cannot launch {kernel.name} on {device} cooperatively with grid={config.grid} "
            f"({blocks} blocks) and block={config.block}: at most {most} blocks of it run at "
            "once there, and a cooperative launch needs all of them resident")


def _timeout(value) -> float | None:
    if value is None:
        return None
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise LaunchError(f"timeout must be a number of seconds, not {value!r}") from None
    if not seconds > 0:     # (NaN too)
        raise LaunchError(f"timeout must be a positive number of seconds, not {value!r}")
    return seconds


def check_config(config: LaunchConfig, kernel: Kernel, device: Device) -> None:
    """Raise LaunchError if `device` (as CUDA would) refuses to launch `kernel` so, and
    UnsupportedFeatureError for a cluster or cooperative launch."""
    _check_unsupported(config, kernel, device)
    if config.timeout is not None and not device._backend.stops_launches:
        raise LaunchError(
            f"cannot launch {kernel.name} on {device} with timeout={config.timeout:g}: "
            f"{device} cannot stop a running kernel (its API has no way short of ending the "
            "process); launch without timeout= and use stream.sync(timeout=...) to find out "
            "that a kernel hangs")
    p: DeviceProperties = device.properties
    block, threads = config.block, prod(config.block)
    # (the checks pass on every launch but a wrong one: messages are made only on failure)
    if threads > p.max_threads_per_block or any(
            n > limit for n, limit in zip(block, p.max_block_dims, strict=True)):
        _refuse_block_limits(config, kernel, device, p)
    required = kernel.directives.get("reqntid")
    if required and block != (*required, 1, 1)[:3]:
        raise LaunchError(f"{_where(config, kernel, device)}: the kernel requires "
                          f"block={(*required, 1, 1)[:3]} (.reqntid)")
    most = kernel.directives.get("maxntid")
    if most and threads > prod(most):
        raise LaunchError(f"{_where(config, kernel, device)}: the kernel allows at most "
                          f"{prod(most)} threads per block (.maxntid "
                          f"{', '.join(map(str, most))})")
    for axis, n, limit in zip("xyz", config.grid, p.max_grid_dims, strict=True):
        if n > limit:
            raise LaunchError(f"cannot launch {kernel.name} on {device} with grid="
                              f"{config.grid}: grid.{axis} may be at most {limit}")
    static = kernel.static_shared_bytes
    limit = p.max_shared_memory_per_block_optin
    if static + config.shmem_size > limit:
        raise LaunchError(
            f"cannot launch {kernel.name} on {device} with shmem_size={config.shmem_size}: "
            f"with its {static} bytes of static shared memory that is "
            f"{static + config.shmem_size} bytes per block; at most {limit} are available")


def _where(config: LaunchConfig, kernel: Kernel, device: Device) -> str:
    return f"cannot launch {kernel.name} on {device} with block={config.block}"


def _refuse_block_limits(config: LaunchConfig, kernel: Kernel, device: Device,
                         p: DeviceProperties) -> None:
    """Raise the LaunchError for a block over the device's limits."""
    where, threads = _where(config, kernel, device), prod(config.block)
    if threads > p.max_threads_per_block:
        raise LaunchError(f"{where}: that is {threads} threads; a block may have at most "
                          f"{p.max_threads_per_block}")
    for axis, n, limit in zip("xyz", config.block, p.max_block_dims, strict=True):
        if n > limit:
            raise LaunchError(f"{where}: block.{axis} may be at most {limit} "
                              f"(limits {p.max_block_dims})")


def _suggestion(info: ParamInfo, variable) -> str:
    """What to pass for a parameter, in words."""
    if info.pointer:
        return "a Buffer"
    if variable.dims:
        return (f"a numpy structured scalar (np.void) of {info.size} bytes, or another numpy "
                f"scalar of {info.size} bytes")
    if variable.type.is_float:
        return {2: "np.float16(...)", 4: "np.float32(...)", 8: "np.float64(...)"}.get(
            info.size, f"a {info.size}-byte numpy float")
    bits = 8 * info.size
    both = f"np.int{bits}(...) or np.uint{bits}(...)"
    return f"{both} (np.bool_ for a bool)" if info.size == 1 else both


def _argument_bytes(kernel: Kernel, index: int, info: ParamInfo, variable, arg,
                    device: Device) -> tuple[bytes, Allocation | None]:
    """The bytes of one argument, and the allocation the launch must keep alive."""
    # (messages are made only for an argument that does not fit: this runs on every launch)
    def where() -> str:
        return (f"kernel {kernel.name}, argument {index} ({info.name}: .{info.type}, "
                f"{info.size} bytes)")

    def suggestion() -> str:
        return _suggestion(info, variable)

    if isinstance(arg, Buffer):
        if info.pointer is False:
            raise ArgumentError(f"{where()} is a value, not a pointer: pass {suggestion()}")
        if arg.device is not device:
            raise ArgumentError(f"{where()}: the buffer is on {arg.device} but the launch is on "
                                f"{device}; copy it to a buffer on {device}")
        if arg.is_closed:
            raise ArgumentError(f"{where()}: the buffer is closed")
        allocation = arg._live()
        return allocation.address.to_bytes(info.size, "little"), allocation
    if isinstance(arg, np.ndarray):
        if arg.ndim != 0:
            raise ArgumentError(
                f"{where()}: a numpy array of shape {arg.shape} cannot be passed: copy it into a "
                "Buffer (Device.allocate, Buffer.copy_from) and pass the Buffer")
        arg = arg[()]
    if isinstance(arg, np.generic):
        if info.pointer:
            if arg.dtype == np.uint64:  # a raw device address, passed on unchecked
                return arg.tobytes(), None
            raise ArgumentError(f"{where()} is a pointer: pass a Buffer, not {arg.dtype.name}")
        if arg.dtype.itemsize != info.size:
            got = "a structured scalar" if isinstance(arg, np.void) else arg.dtype.name
            raise ArgumentError(f"{where()}: got {got} of {arg.dtype.itemsize} bytes; "
                                f"pass {suggestion()}")
        if not variable.dims and not isinstance(arg, np.void):
            kind = variable.type.kind
            if kind == "float" and arg.dtype.kind != "f":
                raise ArgumentError(f"{where()} is floating-point: got {arg.dtype.name}; "
                                    f"pass {suggestion()}")
            if kind in ("signed", "unsigned") and arg.dtype.kind not in "iub":
                raise ArgumentError(f"{where()} is an integer: got {arg.dtype.name}; "
                                    f"pass {suggestion()}")
        return arg.tobytes(), None
    if isinstance(arg, (bool, int, float, complex)):
        raise ArgumentError(f"{where()}: got a Python {type(arg).__name__}, whose size is not "
                            f"known; pass {suggestion()}")
    raise ArgumentError(f"{where()}: cannot pass a {type(arg).__name__}; pass {suggestion()}")


class _Packer:
    """A kernel's argument packing, made at its first launch: its parameters' places, and
    for each the numpy dtypes already accepted there (the same dtype passes the same checks,
    so a repeated launch copies its bytes without them); and the last launch's arguments
    with what they packed to, for a launch that passes the very same objects again."""

    def __init__(self, kernel: Kernel):
        slots, self.total = param_layout(kernel._function)
        self.slots = tuple((slot.offset, slot.offset + slot.size, info, slot.variable)
                           for slot, info in zip(slots, kernel.arguments_info, strict=True))
        self.accepted: tuple[set, ...] = tuple(set() for _ in slots)
        # (device, the arguments' ids, params, the numpy scalars among them, weak references
        # to the Buffers among them): set only where every other argument is an immutable
        # numpy scalar and every Buffer packed to its own allocation, so the same objects
        # pack to the same bytes while each Buffer is still open (a program launching a
        # kernel over and over with the same arguments: 4-5 us a launch of 4 arguments,
        # several times that with the caches cold). The Buffers are held weakly: one the
        # program dropped is freed, as without the memo (an id comes again only for another
        # object once the first is gone, which its dead reference tells).
        self.last: tuple | None = None

    def pack(self, kernel: Kernel, args: tuple, device: Device) \
            -> tuple[bytes, list[Allocation]]:
        last = self.last
        if last is not None and last[0] is device and tuple(map(id, args)) == last[1]:
            keep = []
            for ref in last[4]:
                buffer = ref()
                if buffer is None or buffer._allocation is None:    # (closed: raise below)
                    break
                keep.append(buffer._allocation)
            else:
                return last[2], keep
        params, keep = self._pack(kernel, args, device)
        buffers = tuple(arg for arg in args if isinstance(arg, Buffer))
        scalars = tuple(arg for arg in args
                        if isinstance(arg, np.generic) and not isinstance(arg, np.void))
        if len(buffers) + len(scalars) == len(args) and len(keep) == len(buffers) \
                and all(b._allocation is k for b, k in zip(buffers, keep, strict=True)):
            self.last = (device, tuple(map(id, args)), params, scalars,
                         tuple(map(weakref.ref, buffers)))
        return params, keep

    def _pack(self, kernel: Kernel, args: tuple, device: Device) \
            -> tuple[bytes, list[Allocation]]:
        slots = self.slots
        if len(args) != len(slots):
            params = ", ".join(f".{a.type} {a.name}" for a in kernel.arguments_info)
            raise ArgumentError(f"kernel {kernel.name} takes {len(slots)} argument(s) "
                                f"({params}) but was given {len(args)}")
        if not slots:
            return b"", []
        buffer, keep = bytearray(self.total), []
        for index, arg in enumerate(args):
            start, end, info, variable = slots[index]
            if isinstance(arg, Buffer) and info.pointer is not False \
                    and arg.device is device and not arg.is_closed:
                allocation = arg._live()
                buffer[start:end] = allocation.address.to_bytes(end - start, "little")
                keep.append(allocation)
                continue
            accepted = self.accepted[index]
            if isinstance(arg, np.generic) and arg.dtype in accepted:
                buffer[start:end] = arg.tobytes()
                continue
            raw, allocation = _argument_bytes(kernel, index, info, variable, arg, device)
            buffer[start:end] = raw
            if allocation is not None:
                keep.append(allocation)
            elif isinstance(arg, np.generic):
                accepted.add(arg.dtype)
        return bytes(buffer), keep


def pack_arguments(kernel: Kernel, args: tuple, device: Device) \
        -> tuple[bytes, list[Allocation]]:
    """The parameter buffer for `args`, and the allocations the launch must keep alive;
    raises ArgumentError naming the first argument that does not fit."""
    packer = kernel._packer
    if packer is None:
        packer = kernel._packer = _Packer(kernel)
    return packer.pack(kernel, args, device)


def launch(stream: Stream, config: LaunchConfig, kernel: Kernel, *args) -> None:
    """Queue `kernel` on `stream` with `config` and `args`, after checking them all.

    Raises
    ------
    LaunchError
        The configuration exceeds the device's limits.
    ArgumentError
        An argument does not fit its parameter (the message names it).
    CompileError, UnsupportedFeatureError
        The kernel could not be compiled for the stream's device (first launch there).

    A failure while the kernel runs is raised by the stream's next sync(). On a stream of a
    device group (Device("group:...")), the launch runs over the group and is done on return
    (runtime/group.py).
    """
    if not isinstance(stream, Stream):
        group = getattr(stream, "_group", None)     # a device group's stream (group.py)
        if group is not None and isinstance(config, LaunchConfig):
            group.launch(config, kernel, *args)
            return
        raise InvalidValueError(
            f"launch(stream, config, kernel, *args): stream must be a Stream, not "
            f"{type(stream).__name__}")
    if not isinstance(config, LaunchConfig):
        raise InvalidValueError(f"launch(): config must be a LaunchConfig, not "
                                f"{type(config).__name__}")
    if not isinstance(kernel, Kernel):
        raise InvalidValueError(f"launch(): kernel must be a Kernel (ObjectCode.get_kernel), "
                                f"not {type(kernel).__name__}")
    like = kernel._like
    if like is not None and _again(stream, config, args, like):
        return
    device = stream.device
    _expect(device, config)
    _check_once(config, kernel, device)
    packer = kernel._packer     # (pack_arguments, without its call)
    if packer is None:
        packer = kernel._packer = _Packer(kernel)
    params, keep = packer.pack(kernel, args, device)
    _queue(stream, config, kernel, params, keep)
    kernel._like = _remember(device, config, kernel, _arg_checks(args), params)


def launch_now(stream: Stream, config: LaunchConfig, kernel: Kernel, *args) -> None:
    """launch(), for a caller that syncs the stream right after (the Triton front end,
    whose launches return once the kernel ran): a grid of any size runs on the calling
    thread when the stream is idle. launch() queues a large grid for the caller's work to
    overlap it; a caller that only waits for it gains nothing from that and pays two
    hand-overs between threads (tens of microseconds of a vector add's few hundred on 16
    cores)."""
    if not isinstance(stream, Stream) or not isinstance(config, LaunchConfig) \
            or not isinstance(kernel, Kernel):
        launch(stream, config, kernel, *args)       # (a device group's, or refused there)
        return
    device = stream.device
    _expect(device, config)
    _check_once(config, kernel, device)
    params, keep = pack_arguments(kernel, args, device)
    _queue(stream, config, kernel, params, keep, now=True)


def _expect(device: Device, config: LaunchConfig) -> None:
    """Tell the device's backend that a launch of config's grid (of more than one block) is
    coming, before its arguments are checked and packed (the CPU device wakes the parked
    worker threads it will run on then: waking one takes longer than the packing)."""
    # (a stream's device: a Stream's or a graph Capture's; a device group has no one
    # backend. A grid of one block needs no other thread: nothing to tell.)
    if not isinstance(config, LaunchConfig):
        return
    x, y, z = config.grid
    blocks = x * y * z
    if blocks > 1:
        expect = getattr(getattr(device, "_backend", None), "expect_launch", None)
        if expect is not None:
            expect(blocks)


def _check_once(config: LaunchConfig, kernel: Kernel, device: Device) -> None:
    """check_config, for a configuration not yet accepted for this kernel and device (a
    program launches a kernel with the same few configurations over and over)."""
    key = (device, config.grid, config.block, config.shmem_size, config.timeout,
           config.cluster, config.is_cooperative)
    accepted = kernel._accepted
    if key not in accepted:
        check_config(config, kernel, device)
        if len(accepted) >= 64:     # (a program sweeping over shapes: keep the newest)
            accepted.clear()
        accepted.add(key)


def launch_packed(stream: Stream, config: LaunchConfig, kernel: Kernel, params: bytes,
                  keep: list | tuple = (), checked: bool = False, now: bool = False) -> None:
    """Queue `kernel` on `stream` with an already packed parameter buffer (layout from
    ptxport.ir.abi.param_layout, device addresses inside, as CUDA's cuLaunchKernel takes
    it), after checking `config` against the device (`checked`: the caller did, with
    check_config, for this kernel and device); `keep` is memory the kernel uses (its
    Allocations or Buffers), kept alive until it ran; `now`: the caller syncs the stream
    right after, as launch_now's. For callers that hold raw arguments (ptxport.compat, the
    Triton front end's common launches); others call launch(), which checks every argument
    first.
    """
    like = kernel._like_packed
    if like is not None and _again_packed(stream, config, params, keep, now, like):
        return
    device = stream.device
    _expect(device, config)
    if not checked:
        _check_once(config, kernel, device)
    if len(params) != kernel.param_buffer_size:
        raise ArgumentError(f"kernel {kernel.name} takes {kernel.param_buffer_size} bytes of "
                            f"parameters, not {len(params)}")
    # a device group as one device (runtime/group_device.py); (a plain Device has no
    # launch_packed: a getattr that misses costs more than the class check)
    if device.__class__ is not Device:
        group_launch = getattr(device, "launch_packed", None)
        if group_launch is not None:
            group_launch(stream, config, kernel, params)
            return
    _queue(stream, config, kernel, params, keep, now)
    if isinstance(stream, Stream):     # (not ptxport.compat's stand-ins)
        kernel._like_packed = _remember(device, config, kernel, bool(now), params, now)


# the most threads a grid run at once on the launching thread may have (a loop-free kernel
# of that many runs in tens of microseconds; a larger grid is queued, for the caller's work
# to overlap it)
_AT_ONCE_THREADS = 1 << 15


def _queue(stream: Stream, config: LaunchConfig, kernel: Kernel, params: bytes, keep,
           now: bool = False) -> None:
    device = stream.device
    grid, block, shmem_size, timeout = config.grid, config.block, config.shmem_size, \
        config.timeout
    ready = kernel._ready.get((device, block))
    if ready is None:
        backend = device._backend
        binary = kernel._binary(device)
        # Compiles (or loads) code for this block shape now; Events around this launch
        # then say that their time includes it.
        compiled = backend.prepare(binary, block)
        # (kept for the next launches: what each asks of the device and kernel, once)
        starter = getattr(backend, "starter", None)
        kernel._ready[(device, block)] = ready = (
            binary, backend.runs_at_once(binary), backend, device.device_id, kernel.name,
            prod(block), None if starter is None else starter(device.device_id, binary, block))
    else:
        compiled = False
    binary, at_once, backend, ordinal, name, threads, starter = ready

    # (only the backends that take them are given a timeout or a cooperative launch)
    options = None if timeout is None else {"timeout": timeout}
    if config.is_cooperative:
        options = {**(options or {}), "cooperative": True}
    # (words for a timeout's message, made only when one needs them; `run`, what runs the
    # launch whole, is made only where it is queued or run at once: a closure made here
    # had every variable it uses a cell, made anew at each launch before its blocks begin)
    what = partial(_what, name, grid, block, timeout)

    # A small grid of a kernel that cannot wait for anything (backend.runs_at_once) runs on
    # this thread now when its stream is idle, sparing two hand-overs between threads; a
    # failure is still raised by the next sync. Its first launch is queued, for Events to
    # say it compiled; a larger grid too, so that the caller's work overlaps it (unless
    # `now`: launch_now's caller waits for it).
    if at_once and not compiled and (now or grid[0] * grid[1] * grid[2] * threads
                                     <= _AT_ONCE_THREADS) \
            and stream._run_now(_runner(ready, device, grid, block, shmem_size, params,
                                        options, keep), what=what, kernel=name):
        return
    # Otherwise its blocks begin at once where the device can (the CPU device's worker
    # threads, backends/cpu/early.py) when the stream is idle, and what finishes it is
    # queued (a sync, or the stream's thread, joins it). (Not on the stand-ins of
    # ptxport.compat: a graph's capture keeps work, never runs it.)
    start_now = getattr(stream, "_start_now", None)
    if compiled or now or options is not None or start_now is None or starter is None or \
            not start_now(_start, (starter, grid, block, shmem_size, params, keep, what),
                          what=what, kernel=name):
        stream._submit(_runner(ready, device, grid, block, shmem_size, params, options, keep),
                       what=what, kernel=name, compiled=bool(compiled), defer=True)


# A launch like the last one of its kernel. A program (llm.c, a training loop) launches the
# same kernels with the same configurations and arguments over and over; launch() keeps
# what its last full launch of a kernel proved (kernel._like, _remember) and a launch that
# passes the same again (_again) skips the configuration's checks, the arguments' checks
# and packing and the look-ups of _queue: it goes from the comparisons to the stream
# worker's run_now or start_now, as _queue would.

def _arg_checks(args: tuple) -> tuple | None:
    """_remember's checks of launch()'s arguments: (their ids, weak references to the
    Buffers among them, a check of each). An argument's check is a weak reference to a
    Buffer (its allocation: the same address while it is open), or a numpy scalar's (class,
    bytes, the scalar), which a value of the same class and bytes passes (a scalar made
    anew at each launch, np.int32(n)); None where an argument is of another kind (0-d
    arrays, structured scalars: their bytes may change under the same object). The same
    ids are the same objects while each Buffer's reference is alive (the scalars are held)."""
    checks = []
    for arg in args:
        if isinstance(arg, Buffer):
            checks.append(weakref.ref(arg))
        elif isinstance(arg, np.generic) and not isinstance(arg, np.void):
            checks.append((arg.__class__, arg.tobytes(), arg))
        else:
            return None
    return (tuple(map(id, args)), tuple(c for c in checks if c.__class__ is not tuple),
            tuple(checks))


def _remember(device: Device, config: LaunchConfig, kernel: Kernel, checks, params: bytes,
              now: bool = False) -> tuple | None:
    """What a launch of `kernel` just checked, packed and queued proves for a launch like
    it (kernel._like, or kernel._like_packed for launch_packed), or None where _again could
    not tell one: (device, thread, a copy of the configuration's attributes, `checks`
    (_arg_checks', or launch_packed's `now`), params, the kernel's `ready` tuple, the
    launch's words, its prewake, its blocks, whether it may run at once, the starter, the
    kernel's name, the starter's first four arguments: grid, block, shmem_size, params).
    Only launches that begin early or run at once on a backend whose `starter` runs them
    (it reads the live allocations itself at each launch), without a timeout or
    cooperation."""
    if checks is None or config.timeout is not None or config.is_cooperative \
            or config.cluster is not None:
        return None
    grid, block = config.grid, config.block
    ready = kernel._ready.get((device, block))
    if ready is None or ready[6] is None:
        return None
    blocks = grid[0] * grid[1] * grid[2]
    # (the starter's prewake, which skips the backend's look-ups)
    expect = getattr(ready[6], "expect", getattr(device._backend, "expect_launch", None)) \
        if blocks > 1 else None
    # (read by index, fields 0-12, in _again, _again_packed and _go_again)
    return (device, get_ident(), dict(config.__dict__), checks, params, ready,
            partial(_what, ready[4], grid, block, None), expect, blocks,
            ready[1] and (now or blocks * ready[5] <= _AT_ONCE_THREADS), ready[6], ready[4],
            (grid, block, config.shmem_size, params))


def _again(stream: Stream, config: LaunchConfig, args: tuple, like: tuple) -> bool:
    """Launch on `stream` as the last full launch of the kernel did (`like`, _remember's),
    if this launch is like it: the same device, thread and configuration, each argument the
    same open Buffer or a numpy scalar of the same class and bytes, and the stream idle with
    no error kept. False, having done nothing, otherwise (launch() then takes the full
    path). Allocations made or freed since do not matter: the arguments' own are checked
    open here, and the backend's starter reads the live ones at each launch for the
    access checks (a new allocation sent every launch down the full path, which then
    remembered it again: 9 us more than before _again for an alloc + launch + sync on the
    GPU host)."""
    worker = stream._worker
    # (the configuration's attributes compared whole: equal ones pass the same checks; like's
    # fields read where used, each once: device, state, thread, prewake and blocks)
    if stream._device is not like[0] or config.__class__ is not LaunchConfig \
            or config.__dict__ != like[2] or get_ident() != like[1] or worker._items \
            or worker._running or worker._error is not None or worker._stopped:
        return False
    if like[7] is not None:
        like[7](like[8])
    ids, buffers, checks = like[3]
    if tuple(map(id, args)) == ids:     # (the same objects, where each Buffer is alive)
        try:
            keep = [buffer()._allocation for buffer in buffers]
        except AttributeError:      # (a Buffer collected: another object at its id)
            return False
    else:
        if len(args) != len(checks):
            return False
        keep = []
        for arg, check in zip(args, checks, strict=True):
            if check.__class__ is tuple:
                if arg is not check[2] and (arg.__class__ is not check[0]
                                            or arg.tobytes() != check[1]):
                    return False
            elif check() is not arg:
                return False
            else:
                keep.append(arg._allocation)
    if None in keep:    # (a Buffer closed: the full path refuses it)
        return False
    return _go_again(stream, like, keep, False)


def _again_packed(stream: Stream, config: LaunchConfig, params: bytes, keep, now: bool,
                  like: tuple) -> bool:
    """launch_packed's _again: the same device, thread, configuration, `now` and parameter
    bytes as its last full launch of the kernel (`like`), and `stream` a Stream, idle with
    no error kept (the bytes' addresses are checked against the live allocations as the
    kernel runs, as on the full path)."""
    if stream.__class__ is not Stream or stream._device is not like[0] \
            or config.__class__ is not LaunchConfig or config.__dict__ != like[2] \
            or bool(now) is not like[3] or params != like[4] or get_ident() != like[1]:
        return False
    worker = stream._worker
    if worker._items or worker._running or worker._error is not None or worker._stopped:
        return False
    if like[7] is not None:
        like[7](like[8])
    return _go_again(stream, like, keep, now)


def _go_again(stream: Stream, like: tuple, keep, now) -> bool:
    """The end of _again and _again_packed: _queue's end for a Stream, a launch with no
    options that compiled nothing: straight to its worker's run_now or start_now."""
    worker, what, name = stream._worker, like[6], like[11]
    if like[9] and worker.run_now(_runner(like[5], like[0], *like[12], None, keep), what,
                                   name):
        return True
    # (the starter itself begins it: _start's guard is Starter.__call__'s own, which gives
    # None for any failure of its setup)
    if now or not worker.start_now(like[10], like[12] + (keep, what), what, name):
        stream._submit(_runner(like[5], like[0], *like[12], None, keep), what=what,
                       kernel=name, defer=True)
    return True


def _what(name: str, grid: tuple, block: tuple, timeout: float | None) -> str:
    """_queue: words for a launch in a timeout's message."""
    limit = "" if timeout is None else f", stopped after {timeout:g} s"
    return f"kernel {name} (grid {grid}, block {block}{limit})"


def _runner(ready: tuple, device: Device, grid: tuple, block: tuple, shmem_size: int,
            params: bytes, options: dict | None, keep) -> Callable[[], None]:
    """_queue: the function that runs a launch whole (the kernel's `ready` tuple there);
    it keeps `keep`, the buffers' memory, alive until the kernel ran."""
    binary, _, backend, ordinal, name, _, starter = ready

    def run(keep=keep) -> None:
        try:
            # (the backend's starter runs it whole reusing the last launch's setup)
            if options is None and starter is not None:
                starter.run(grid, block, shmem_size, params)
            elif options is None:
                backend.launch(ordinal, binary, grid, block, shmem_size, params)
            else:
                backend.launch(ordinal, binary, grid, block, shmem_size, params, **options)
        except PtxportError:
            raise
        except Exception as e:
            raise KernelExecutionError(
                f"kernel {name} failed on {device}: {type(e).__name__}: {e}") from e

    return run


def _start(starter, grid, block, shmem_size: int, params: bytes, keep,
           what: Callable[[], str]):
    """_queue: begin the launch's blocks now (the backend's `starter` for the kernel and
    block shape); the function that finishes it (it keeps `keep`, the buffers' memory, alive
    until it ran, and raises a failure as a ptxport error, `what` naming the launch), or
    None, having done nothing, where the backend does not begin this launch early (it is
    queued then, and its run raises any failure at the sync)."""
    try:
        return starter(grid, block, shmem_size, params, keep, what)
    except Exception:
        return None
