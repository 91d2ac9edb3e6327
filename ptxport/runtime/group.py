"""Device groups: one launch over several devices (and, through group_ray.py, machines).

A DeviceGroup holds members (a Device each; one device may be a member twice) and group
buffers. A launch on the group is planned by group_plan.py: split into boxes of whole blocks,
one per member, each member running the kernel made by ptxport.passes.block_range (which
sees the whole grid's block index) on its box, and the members' writes merged on the host;
or, where the kernel's blocks are tied together, run whole on one member.

Group buffers keep a coherence table: which members (and the host) hold the buffer's current
contents. A member gets a buffer before a launch that passes it only if it does not hold it
yet, so inputs are sent once and kept until they are written; where the plan knows which
bytes a member's blocks load and store (Plan.needs), only those of them it lacks. Group
operations are synchronous: they are done when the call returns (a group stream's sync()
has nothing to wait for).
"""

from __future__ import annotations

import itertools
import threading
import time
import weakref
from concurrent.futures import ThreadPoolExecutor, wait

import numpy as np

from ptxport.errors import (
    ArgumentError,
    InvalidValueError,
    OutOfMemoryError,
    SplitRefusedError,
    UnsupportedFeatureError,
)
from ptxport.passes.block_writes import field_token
from ptxport.runtime.group_plan import (
    Plan,
    changed_ranges,
    identity,
    merge_buffer,
    merge_ranges_into,
    plan_launch,
    subtract_ranges,
    union_ranges,
)

__all__ = ["DeviceGroup", "GroupBuffer", "GroupPointer", "GroupStream", "GroupStruct",
           "LocalMember", "argument_keys"]

HOST = -1                      # the coherence table's name for the host's copy
_ALIGNMENT = 256
_keys = itertools.count(1)


class LocalMember:
    """A member that is a device of this process: buffers by key, one stream."""

    def __init__(self, device):
        from ptxport.runtime.device import Device

        self.device = device if isinstance(device, Device) else Device(device)
        self.name = str(self.device)
        self._stream = self.device.create_stream()
        self._buffers: dict[int, object] = {}

    def upload(self, key: int, data: np.ndarray, version=None) -> None:
        """Set the member's copy of buffer `key` (`version`: the group buffer's, unused
        here; a RayMember sends one version's bytes once)."""
        buffer = self._buffers.get(key)
        if buffer is None:
            buffer = self._buffers[key] = self.device.allocate(max(data.size, 1),
                                                               stream=self._stream)
        if data.size:
            buffer.copy_from(data, stream=self._stream)
        self._stream.sync()

    def _view(self, key: int) -> np.ndarray | None:
        """The member's copy as host memory, where its device has it (a cpu device)."""
        view = self._buffers[key]._host_view()
        return None if view is None else view[:self._buffers[key].size]

    def download(self, key: int, ranges=None):
        view = self._view(key) if ranges is not None else None
        if view is not None:                 # (only the ranges' bytes are copied)
            self._stream.sync()
            return [view[lo:hi].copy() for lo, hi in ranges]
        buffer = self._buffers[key]
        host = np.empty(buffer.size, np.uint8)
        buffer.copy_to(host, stream=self._stream)
        self._stream.sync()
        return host if ranges is None else [host[lo:hi] for lo, hi in ranges]

    def changes(self, key: int, before: np.ndarray) -> tuple[list, list]:
        """(ranges, pieces): the member's copy where it may differ from `before` (its
        contents before the launch), in whole group_plan.CHUNKs."""
        view = self._view(key)
        if view is None:
            view = self.download(key)
        self._stream.sync()
        ranges = changed_ranges(before, view)
        return ranges, [view[lo:hi].copy() for lo, hi in ranges]

    def upload_ranges(self, key: int, ranges, data: np.ndarray, version=None) -> None:
        """Write `data`'s bytes of `ranges` into the member's copy (a new one if it has
        none: its other bytes are not needed)."""
        self.write_pieces(key, ranges, [data[lo:hi] for lo, hi in ranges], data.size)

    def write_pieces(self, key: int, ranges, pieces, size: int) -> None:
        """Write each piece at its range of the member's copy of buffer `key` (of `size`
        bytes: a new copy if the member has none)."""
        if key not in self._buffers:
            self._buffers[key] = self.device.allocate(max(size, 1), stream=self._stream)
        view = self._view(key)
        host = self.download(key) if view is None else view
        self._stream.sync()
        for (lo, hi), piece in zip(ranges, pieces, strict=True):
            host[lo:hi] = piece
        if view is None:
            self.upload(key, host)

    def discard(self, key: int) -> None:
        buffer = self._buffers.pop(key, None)
        if buffer is not None:
            buffer.close()

    def run(self, kernel, config, first, grid, args) -> float:
        """Run the blocks first + (0..grid) of `config`'s launch; the seconds it took."""
        from ptxport.runtime.launch import LaunchConfig, launch

        if getattr(self.device._backend, "ptx_source", None) == "native":
            raise UnsupportedFeatureError(
                "a device group member running the program's own PTX", str(self.device),
                reason="the member needs the block_range pass's kernel, which only ptxport's "
                       "code generation makes: set the backend's ptx_source to 'ptxport'")
        ranged = _ranged_kernel(kernel)
        values = [self._argument(a) for a in args]
        hidden = [np.uint32(v) for v in (*first, *config.grid)]
        sub = LaunchConfig(grid=grid, block=config.block, shmem_size=config.shmem_size)
        start = time.perf_counter()
        launch(self._stream, sub, ranged, *values, *hidden)
        self._stream.sync()
        return time.perf_counter() - start

    def _argument(self, arg):
        """A launch argument: ("buffer", key) is this member's copy of a group buffer,
        ("buffer", key, offset) the address `offset` bytes into it, ("struct", bytes,
        fields) a structure whose (field offset, key, offset) fields get such addresses."""
        if not isinstance(arg, tuple):
            return arg
        if arg[0] == "struct":
            data = bytearray(arg[1])
            for field, key, offset in arg[2]:
                data[field:field + 8] = (self._buffers[key].handle + offset).to_bytes(8, "little")
            return np.frombuffer(bytes(data), np.dtype((np.void, len(data))))[0]
        buffer = self._buffers[arg[1]]
        return buffer if len(arg) == 2 else np.uint64(buffer.handle + arg[2])


_RANGED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_RANGED_LOCK = threading.Lock()


def _ranged_kernel(kernel):
    """`kernel` made by the block_range pass (cached per kernel)."""
    from ptxport.passes import block_range
    from ptxport.runtime.program import ObjectCode

    with _RANGED_LOCK:
        found = _RANGED.get(kernel._function)
        if found is None:
            code = kernel.object_code
            module = block_range.run(code.module, kernel.name)
            found = ObjectCode(code.ptx, module, f"{code.name} (block range)").get_kernel(
                kernel.name)
            _RANGED[kernel._function] = found
        return found


class GroupBuffer:
    """Memory of a device group: one logical buffer, copies on the members that need it."""

    def __init__(self, group: DeviceGroup, size: int):
        self._group, self._size, self.key = group, size, next(_keys)
        # the host's copy, updated in place: its address stays the same (GroupDevice gives
        # it to programs as the buffer's address), aligned as cudaMalloc's
        raw = np.zeros(size + _ALIGNMENT, np.uint8)
        start = -raw.ctypes.data % _ALIGNMENT
        self._host = raw[start:start + size]
        self._valid = {HOST}
        self._version = 0      # counts the host copy's contents (a RayMember puts each once)
        # member -> byte ranges its copy lacks (it holds the rest), after a "ranges" merge
        self._patch: dict[int, list[tuple[int, int]]] = {}
        self._closed = False
        self._held: set[int] = set()      # members that have a copy, current or not
        # a buffer dropped without close() frees its members' copies all the same
        self._free = weakref.finalize(self, group._dropped.append, (self.key, self._held))

    @property
    def size(self) -> int:
        return self._size

    @property
    def device(self) -> DeviceGroup:
        return self._group

    @property
    def valid_on(self) -> frozenset[str]:
        """Where the current contents are: member names, and "host"."""
        return frozenset("host" if m == HOST else self._group.members[m].name
                         for m in self._valid)

    def __repr__(self) -> str:
        return f"<GroupBuffer of {self._size} bytes on {self._group}>"

    def _array(self, obj, method: str, writeable: bool) -> np.ndarray:
        if self._closed:
            raise InvalidValueError(f"this group buffer of {self._size} bytes is closed")
        if not isinstance(obj, np.ndarray) or not obj.flags.c_contiguous or \
                (writeable and not obj.flags.writeable):
            raise InvalidValueError(f"GroupBuffer.{method} takes a C-contiguous"
                                    f"{' writeable' if writeable else ''} numpy array")
        if obj.nbytes != self._size:
            raise InvalidValueError(f"the array has {obj.nbytes} bytes but the group buffer "
                                    f"has {self._size}")
        return obj.reshape(-1).view(np.uint8)

    def copy_from(self, src, *, stream=None) -> None:
        """Set the contents from a host array (or another group buffer of the group)."""
        if isinstance(src, GroupBuffer):
            src = src.copy_to(np.empty(src.size, np.uint8))
        with self._group._lock:
            self._host[:] = self._array(src, "copy_from", False)
            self._valid, self._patch = {HOST}, {}
            self._version += 1

    def copy_to(self, dst=None, *, stream=None) -> np.ndarray:
        """Copy the contents into `dst` (a host array of the buffer's size; a new uint8
        array if None) and return it."""
        if dst is None:
            dst = np.empty(self._size, np.uint8)
        view = self._array(dst, "copy_to", True)
        with self._group._lock:
            view[:] = self._group._host_copy(self)
        return dst

    def fill(self, value: int, width: int, *, stream=None) -> None:
        """Set every `width`-byte word (1, 2, 4) to `value`, as Buffer.fill."""
        if width not in (1, 2, 4) or self._size % width:
            raise InvalidValueError(f"cannot fill {self._size} bytes with {width}-byte words")
        words = np.full(self._size // width, value, f"u{width}")
        self.copy_from(words.view(np.uint8))

    def close(self, stream=None) -> None:
        if not self._closed:
            self._closed = True
            self._free()
            self._group._free_dropped()

    def host_current(self) -> np.ndarray:
        """The host's copy, brought up to date (fetched from a member that holds the
        current contents): read or change it in place, then call host_changed()."""
        with self._group._lock:
            return self._group._host_copy(self)

    def host_changed(self) -> None:
        """The host's copy was changed in place: the members' copies are stale."""
        with self._group._lock:
            self._valid, self._patch = {HOST}, {}
            self._version += 1


class GroupPointer:
    """A kernel argument `offset` bytes into a group buffer (a CUDA program's `p + n`): the
    members get the address of that byte of their copies."""

    def __init__(self, buffer: GroupBuffer, offset: int):
        if not 0 <= offset <= buffer.size:
            raise InvalidValueError(f"offset {offset} is outside {buffer!r}")
        self.buffer, self.offset = buffer, offset


class GroupStruct:
    """A structure argument (its bytes) whose 64-bit fields at `pointers`' offsets hold
    addresses of group buffers (a GroupBuffer or GroupPointer each): each member gets the
    structure with its own copies' addresses there. Only fields the kernel uses as
    addresses are translated (block_writes.KernelWrites.fields)."""

    def __init__(self, data: bytes, pointers: dict[int, GroupBuffer | GroupPointer]):
        self.data, self.pointers = bytes(data), dict(pointers)


def argument_keys(values) -> tuple[int, ...]:
    """The group buffer keys a member's launch arguments name."""
    keys = []
    for value in values:
        if isinstance(value, tuple):
            keys += [key for _, key, _ in value[2]] if value[0] == "struct" else [value[1]]
    return tuple(keys)


class GroupStream:
    """A stream of a device group: group operations finish before they return, so this
    only gives launch() and the copies the group to work on."""

    def __init__(self, group: DeviceGroup):
        self._group = group

    @property
    def device(self) -> DeviceGroup:
        return self._group

    def sync(self, timeout: float | None = None) -> None:
        """Nothing to wait for: the group's work is done when its calls return."""


class DeviceGroup:
    """Devices that run one launch together, split by whole blocks.

    Parameters
    ----------
    devices : sequence of Device, device names or members
        The members, in order (the order partial results of float atomics combine in). A
        device may appear more than once: each appearance is a member with its own memory.
    strict : bool
        Raise SplitRefusedError for a launch that cannot be split, instead of running it
        whole on one member.

    Buffers come from allocate(); launches from launch(config, kernel, *args) (or
    ptxport.launch on a group stream). `last_plan` tells how the last launch ran, `stats`
    how many bytes moved between the host and the members.
    """

    def __init__(self, devices, *, strict: bool = False):
        self.members = [m if hasattr(m, "run") and hasattr(m, "upload") else LocalMember(m)
                        for m in devices]
        if not self.members:
            raise InvalidValueError("a DeviceGroup needs at least one device")
        for index, member in enumerate(self.members):
            if hasattr(member, "on_lost"):
                member.on_lost = lambda keys, m=index: self._member_lost(m, keys)
        self.strict = strict
        self._lock = threading.RLock()
        self._buffers: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
        self._dropped: list[tuple[int, set[int]]] = []
        self._speeds: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._runs: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._pool = ThreadPoolExecutor(len(self.members), thread_name_prefix="ptxport-group")
        self._stats_lock = threading.Lock()
        self.stats = {"bytes_sent": 0, "bytes_received": 0, "launches": 0, "split": 0}
        self.last_plan: Plan | None = None
        self._default_stream = GroupStream(self)

    @classmethod
    def ray(cls, num_workers: int = 2, device: str = "cpu", **options) -> DeviceGroup:
        """A group of `num_workers` Ray actors, each running kernels on its own `device`
        (ptxport.runtime.group_ray). `options`: strict (as for DeviceGroup), and
        group_ray.ray_members' pin_cores, max_restarts and object_store_mb."""
        from ptxport.runtime.group_ray import ray_members

        strict = options.pop("strict", False)
        return cls(ray_members(num_workers, device, **options), strict=strict)

    def __str__(self) -> str:
        return "group:" + ",".join(m.name for m in self.members)

    def __repr__(self) -> str:
        return f"<DeviceGroup {self}>"

    # -- the Device-like surface ------------------------------------------------------------

    def allocate(self, size: int, stream=None) -> GroupBuffer:
        if not isinstance(size, int | np.integer) or size < 0:
            raise InvalidValueError(f"allocate() takes a size in bytes, not {size!r}")
        try:
            buffer = GroupBuffer(self, int(size))
        except MemoryError:
            raise OutOfMemoryError(f"{self} could not allocate {size} bytes (its host copy "
                                   "does not fit in the host's memory)") from None
        self._buffers[buffer.key] = buffer
        return buffer

    def create_stream(self) -> GroupStream:
        return GroupStream(self)

    @property
    def default_stream(self) -> GroupStream:
        return self._default_stream

    def sync(self, timeout: float | None = None) -> None:
        """Nothing to wait for: group operations finish before they return."""

    def close(self) -> None:
        """Free every member's copies and stop the members (Ray actors end)."""
        with self._lock:
            for buffer in list(self._buffers.values()):
                buffer.close()
            for member in self.members:
                getattr(member, "close", lambda: None)()
        self._pool.shutdown(wait=False)

    # -- coherence ---------------------------------------------------------------------------

    def _host_copy(self, buffer: GroupBuffer) -> np.ndarray:
        if HOST not in buffer._valid:
            member = min(buffer._valid)
            buffer._host[:] = self.members[member].download(buffer.key)
            buffer._version += 1
            self._count("bytes_received", buffer.size)
            buffer._valid.add(HOST)
        return buffer._host

    def _send(self, buffer: GroupBuffer, member: int, data: np.ndarray | None = None) -> None:
        if data is None and member in buffer._valid:
            return
        content = self._host_copy(buffer) if data is None else data
        patch = buffer._patch.pop(member, None)
        if patch is not None and data is None:
            self.members[member].upload_ranges(buffer.key, patch, content,
                                               version=buffer._version)
            self._count("bytes_sent", sum(hi - lo for lo, hi in patch))
        else:
            version = buffer._version if data is None else None
            self.members[member].upload(buffer.key, content, version=version)
            self._count("bytes_sent", buffer.size)
        buffer._held.add(member)
        if data is None:
            buffer._valid.add(member)
        else:
            buffer._valid.discard(member)

    def _send_ranges(self, buffer: GroupBuffer, member: int, ranges) -> list:
        """Make `ranges` of `member`'s copy current (Plan.needs: the only bytes its blocks
        read or may write); the ranges its copy lacks afterwards, as the coherence table
        keeps them."""
        lacks = [] if member in buffer._valid else \
            buffer._patch.get(member, [(0, buffer.size)])
        need = subtract_ranges(lacks, subtract_ranges([(0, buffer.size)], ranges))
        if need:
            self.members[member].upload_ranges(buffer.key, need, buffer._host,
                                               version=buffer._version)
            self._count("bytes_sent", sum(hi - lo for lo, hi in need))
            buffer._held.add(member)
        left = subtract_ranges(lacks, ranges)
        if left:
            buffer._valid.discard(member)
            buffer._patch[member] = left
        else:
            buffer._valid.add(member)
            buffer._patch.pop(member, None)
        return left

    def _count(self, what: str, n: int) -> None:
        with self._stats_lock:
            self.stats[what] += n

    def _member_lost(self, member: int, keys) -> None:
        """A replaced member no longer holds what it wrote into `keys` (called from the
        member's thread while a launch holds the lock: the tables are only marked)."""
        for key in keys:
            buffer = self._buffers.get(key)
            if buffer is not None:
                buffer._valid.discard(member)
                buffer._patch.pop(member, None)

    def _free_dropped(self) -> None:
        """Free the members' copies of buffers closed or dropped (a dropped buffer's
        finalizer only lists it, as it may run on any thread, at any time)."""
        with self._lock:
            while self._dropped:
                key, held = self._dropped.pop()
                for member in held:
                    self.members[member].discard(key)
                self._buffers.pop(key, None)

    # -- launches ----------------------------------------------------------------------------

    def _own(self, kernel, index: int, info, arg) -> tuple[GroupBuffer, int]:
        """The buffer and offset of a GroupBuffer or GroupPointer argument of this group."""
        buffer, offset = (arg.buffer, arg.offset) if isinstance(arg, GroupPointer) else (arg, 0)
        if buffer._group is not self or buffer._closed:
            raise ArgumentError(f"kernel {kernel.name}, argument {index} ({info.name}): the "
                                "buffer is closed or of another group")
        return buffer, offset

    def _struct(self, kernel, index: int, info, arg: GroupStruct, fields: dict) -> tuple:
        entries = []
        for field, target in sorted(arg.pointers.items()):
            buffer, offset = self._own(kernel, index, info, target)
            fields[field_token(info.name, field)] = (index, buffer.key, offset)
            entries.append((field, buffer.key, offset))
        return ("struct", arg.data, tuple(entries))

    def _arguments(self, kernel, args) -> tuple[dict[int, int], list, dict[int, int], dict]:
        """The group buffer key of each buffer argument (by index), the values the members
        are given, the byte offset of each GroupPointer argument (by index), and
        plan_launch's `fields` of GroupStruct arguments."""
        infos = kernel.arguments_info
        if len(args) != len(infos):
            raise ArgumentError(f"kernel {kernel.name} takes {len(infos)} argument(s) but was "
                                f"given {len(args)}")
        keys, values, offsets, fields = {}, [], {}, {}
        for index, (arg, info) in enumerate(zip(args, infos, strict=True)):
            offset = 0
            if isinstance(arg, GroupStruct):
                values.append(self._struct(kernel, index, info, arg, fields))
                continue
            if isinstance(arg, GroupBuffer | GroupPointer):
                arg, offset = self._own(kernel, index, info, arg)
                keys[index] = arg.key
                values.append(("buffer", arg.key, offset) if offset else ("buffer", arg.key))
                if offset:
                    offsets[index] = offset
            elif info.pointer and not isinstance(arg, np.void) and not _null(arg):
                raise ArgumentError(
                    f"kernel {kernel.name}, argument {index} ({info.name}) is a pointer: "
                    f"pass a GroupBuffer of {self} (group.allocate), not "
                    f"{type(arg).__name__}")
            else:
                values.append(arg)
        return keys, values, offsets, fields

    def launch(self, config, kernel, *args) -> None:
        """Run `kernel` over the group: split by whole blocks where its IR allows, else
        whole on one member (SplitRefusedError instead when strict). Done on return."""
        self._free_dropped()
        with self._lock:
            keys, values, offsets, fields = self._arguments(kernel, args)
            passed = {**keys, **{token: key for token, (_, key, _) in fields.items()}}
            sizes = {key: self._buffers[key].size for key in passed.values()}
            speeds = self._speeds.setdefault(kernel._function, [None] * len(self.members))
            known = [s for s in speeds if s is not None]
            guess = sum(known) / len(known) if known else 1.0
            speeds = [guess if s is None else s for s in speeds]
            plan = plan_launch(kernel, config, list(args), keys, sizes, speeds, offsets,
                               fields)
            self.last_plan = plan
            self.stats["launches"] += 1
            if plan.split:
                self.stats["split"] += 1
                self._run_split(plan, kernel, config, values, passed)
            elif self.strict:
                raise SplitRefusedError(f"cannot split this launch: {plan.reason}")
            else:
                self._run_whole(plan, kernel, config, values, passed, speeds)

    def _run_whole(self, plan: Plan, kernel, config, values, keys, speeds) -> None:
        member = max(range(len(self.members)), key=lambda m: speeds[m])
        for key in set(keys.values()):
            self._send(self._buffers[key], member)
        written = [self._buffers[key] for key in plan.written or ()]
        try:
            self.members[member].run(kernel, config, (0, 0, 0), config.grid, values)
        except BaseException:
            for buffer in written:     # the member's copy may be partly written
                if buffer._valid != {member}:
                    buffer._valid.discard(member)
                    buffer._patch.pop(member, None)
            raise
        for buffer in written:
            buffer._valid, buffer._patch = {member}, {}
        if not getattr(self.members[member], "keeps_results", True):
            for buffer in written:     # (so that a lost member loses nothing)
                self._host_copy(buffer)

    def _each(self, plan: Plan, work) -> dict:
        """work(member, first, grid) for every box, on the members' threads at once; each
        result by member. All finish before the first failure is raised."""
        futures = {member: self._pool.submit(work, member, first, grid)
                   for member, first, grid in plan.boxes}
        wait(list(futures.values()))
        return {member: future.result() for member, future in futures.items()}

    def _run_split(self, plan: Plan, kernel, config, values, keys) -> None:
        befores = {key: self._host_copy(self._buffers[key]) for key in plan.merges}
        for key in set(keys.values()):      # (once here, not by every member's thread)
            if any(m not in self._buffers[key]._valid for m, _, _ in plan.boxes):
                self._host_copy(self._buffers[key])

        lacking = {member: {} for member, _, _ in plan.boxes}   # key -> ranges after send

        def send(member, first, grid) -> None:
            for key in set(keys.values()):
                merge = plan.merges.get(key)
                if merge is not None and merge.mode == "atomic":
                    self._send(self._buffers[key], member,
                               identity(merge.op, merge.dtype, sizes_of(self, key)))
                elif key in plan.needs:
                    lacking[member][key] = self._send_ranges(self._buffers[key], member,
                                                             plan.needs[key][member])
                else:
                    self._send(self._buffers[key], member)

        def run(member, first, grid) -> float:    # a member's speed, as the group sees it
            start = time.perf_counter()
            self.members[member].run(kernel, config, first, grid, values)
            return time.perf_counter() - start

        def fetch(member, first, grid) -> dict:
            parts = {}
            for key, merge in plan.merges.items():
                parts[key], ranges = self._fetch(member, key, merge, befores[key])
                self._count("bytes_received", self._buffers[key].size if ranges is None
                            else sum(hi - lo for lo, hi in ranges))
            return parts

        masks = [key for key, merge in plan.merges.items() if merge.mode == "mask"]

        def launch_on(member, first, grid) -> tuple[float, dict]:
            # (each member on its own: one waits for no other between its steps)
            send(member, first, grid)
            getattr(self.members[member], "watch", lambda keys: None)(masks)
            return run(member, first, grid), fetch(member, first, grid)

        try:
            done = self._each(plan, launch_on)
        finally:     # only the host holds what the written buffers held before
            for key in plan.merges:
                self._buffers[key]._valid, self._buffers[key]._patch = {HOST}, {}
        seconds = {member: result[0] for member, result in done.items()}
        fetched = {member: result[1] for member, result in done.items()}
        for key, merge in plan.merges.items():
            parts = {member: fetched[member][key] for member in fetched}
            if merge.mode == "ranges":       # (in place: no copy of the whole buffer)
                merge_ranges_into(self._buffers[key]._host, merge, parts)
            else:
                self._buffers[key]._host[:] = merge_buffer(merge, befores[key], parts,
                                                           kernel.name)
            self._buffers[key]._version += 1
            if merge.mode == "ranges":     # each member's copy lacks the others' ranges
                for member, _, _ in plan.boxes:   # (and what it was not sent)
                    self._buffers[key]._patch[member] = union_ranges(
                        [r for other, ranges in merge.ranges.items() if other != member
                         for r in ranges] + lacking[member].get(key, []))
        self._calibrate(kernel, plan, seconds)

    def _fetch(self, member: int, key: int, merge, before: np.ndarray) -> tuple:
        """A member's part of buffer `key` for merge_buffer, and the byte ranges it is
        (None: the whole buffer). Of a "mask" buffer, only the chunks that changed."""
        source = self.members[member]
        if merge.mode == "ranges":
            return source.download(key, merge.ranges[member]), merge.ranges[member]
        if merge.mode == "mask" and hasattr(source, "changes"):
            part = source.changes(key, before)
            return part, part[0]
        return source.download(key), None

    def _calibrate(self, kernel, plan: Plan, seconds: dict[int, float]) -> None:
        """Blocks per second of each member on this kernel, averaged over launches."""
        speeds = self._speeds[kernel._function]
        runs = self._runs.setdefault(kernel._function, [0] * len(self.members))
        for member, _, grid in plan.boxes:
            runs[member] += 1
            if runs[member] == 1:
                continue     # (a member's first run of a kernel includes compiling it)
            measured = grid[0] * grid[1] * grid[2] / max(seconds[member], 1e-6)
            old = speeds[member]
            speeds[member] = measured if old is None else 0.5 * old + 0.5 * measured


def _null(arg) -> bool:
    """A NULL pointer argument (np.uint64(0)), passed to the members as it is."""
    return isinstance(arg, np.uint64) and arg == 0


def sizes_of(group: DeviceGroup, key: int) -> int:
    return group._buffers[key].size


def group_from_name(names: str) -> DeviceGroup:
    """The group Device("group:cpu,opencl:0") names (one group per name, kept)."""
    with _NAMED_LOCK:
        group = _NAMED.get(names)
        if group is None:
            parts = [p.strip() for p in names.split(",") if p.strip()]
            if not parts:
                raise InvalidValueError("write 'group:<device>,<device>,...', e.g. "
                                        "'group:cpu,opencl:0'")
            group = _NAMED[names] = DeviceGroup(parts)
        return group


_NAMED: dict[str, DeviceGroup] = {}
_NAMED_LOCK = threading.Lock()
