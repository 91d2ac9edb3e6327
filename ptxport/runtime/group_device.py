"""A device group as one device with addresses: what `ptxport run --device group:cpu,opencl:0`
shows a CUDA program (one CUDA device whose launches the group splits).

A DeviceGroup's buffers have no addresses, and a CUDA program holds nothing else. GroupDevice
is a Device whose memory is group buffers, each known by the address of its host copy (kept at
one place for the buffer's life, group.py). Its backend, GroupMemory, copies and fills at
those addresses and keeps the coherence table right: the host copy is brought up to date
before the host reads or partly overwrites it, and the members' copies are marked stale after
it changed. A launch (launch_packed, what ptxport.compat calls) reads the packed parameters
back into arguments: an address inside a buffer becomes that buffer (with its offset), other
scalars numpy values; then DeviceGroup.launch splits it (or runs it whole) in stream order.

Managed memory is a group buffer that the host also reads and writes in place, between
launches (the device reports no concurrent managed access, so a program synchronises first):
a launch given one sends it to the members again and brings its host copy up to date when it
has run. Pinned host memory (cudaMallocHost) is the host's own, for copies: a kernel given its
address, or any address that is not a buffer of the group, is refused by name. Module
variables and registered host memory are refused too: the group keeps memory coherent only
through its own calls.
"""

from __future__ import annotations

import bisect
import ctypes
import dataclasses
import threading
import weakref

import numpy as np

from ptxport.errors import ArgumentError, OutOfMemoryError, UnsupportedFeatureError
from ptxport.runtime.backends import Allocation, DeviceProperties
from ptxport.runtime.device import Device
from ptxport.runtime.group import DeviceGroup, GroupBuffer, GroupPointer, GroupStruct

__all__ = ["GroupDevice", "GroupMemory", "group_device"]

# PTX parameter types whose values launch as numpy integers or floats (the group evaluates
# store addresses with the integer ones); anything else is passed as its bytes
_SCALARS = {"u": "uint", "b": "uint", "s": "int", "f": "float"}


def _min_properties(group: DeviceGroup) -> DeviceProperties:
    """What the group offers a launch: every member's limits at once (the smallest), the
    members' cores together, unified addressing (its addresses are the host's)."""
    members = [m.device.properties for m in group.members]
    smallest = {f.name: min(getattr(p, f.name) for p in members)
                for f in dataclasses.fields(DeviceProperties)
                if f.type in ("int", int)}
    smallest["multiprocessor_count"] = sum(p.multiprocessor_count for p in members)
    for field in ("compute_capability_major", "compute_capability_minor"):
        smallest[field] = getattr(members[0], field)
    return dataclasses.replace(members[0], **smallest, name=str(group), integrated=False,
                               unified_addressing=True)


class GroupMemory:
    """The backend hooks of a GroupDevice: memory as group buffers at their host copies'
    addresses, and host memory for pinned allocations."""

    name = "group"
    stops_launches = False

    def __init__(self, group: DeviceGroup):
        self.group = group
        self._lock = threading.Lock()
        self._buffers: dict[int, GroupBuffer] = {}   # address -> buffer
        self._starts: list[int] = []
        self.managed: set[int] = set()               # keys of managed buffers

    # -- memory --------------------------------------------------------------------------------

    def allocate(self, ordinal: int, nbytes: int) -> Allocation:
        buffer = self.group.allocate(max(nbytes, 1))
        address = buffer._host.ctypes.data
        with self._lock:
            self._buffers[address] = buffer
            bisect.insort(self._starts, address)
        return Allocation(address, nbytes, buffer)

    def allocate_host(self, ordinal: int, nbytes: int, flags: int = 0) -> Allocation:
        try:
            memory = np.zeros(max(nbytes, 1), np.uint8)
        except MemoryError:
            raise OutOfMemoryError(f"the host could not allocate {nbytes} bytes of pinned "
                                   "memory") from None
        return Allocation(memory.ctypes.data, nbytes, memory)

    def allocate_managed(self, ordinal: int, nbytes: int) -> Allocation:
        allocation = self.allocate(ordinal, nbytes)
        self.managed.add(allocation.owner.key)
        return allocation

    def register_host_memory(self, ordinal: int, memory) -> Allocation:
        raise UnsupportedFeatureError(
            "registered host memory", str(self.group), reason="the group's kernels reach only "
            "its own buffers: copy the memory into a cudaMalloc allocation")

    def module_global(self, ordinal: int, module, name: str) -> tuple[int, int]:
        raise UnsupportedFeatureError(
            f"the module variable {name!r}", str(self.group), reason="each member of a device "
            "group has its own copy of a module's variables, which the host cannot address")

    def free(self, allocation: Allocation) -> None:
        if isinstance(allocation.owner, GroupBuffer):
            self.managed.discard(allocation.owner.key)
            with self._lock:
                self._buffers.pop(allocation.address, None)
                del self._starts[bisect.bisect_left(self._starts, allocation.address)]
            allocation.owner.close()

    def compile(self, module, kernels: list[str]):
        """Kernels run on the members (DeviceGroup.launch, through GroupDevice.launch_packed);
        this device has no code of its own to compile, e.g. for ptxport's cuBLAS kernels."""
        raise UnsupportedFeatureError(
            f"compiling {', '.join(kernels)} for the group itself", str(self.group),
            reason="a device group runs the kernels a program launches, split over its "
                   "members; ptxport's own library kernels (cuBLAS) do not run on groups yet")

    def host_view(self, allocation: Allocation):
        return None   # a buffer's host copy may be stale: it is read through copy()

    def buffer_at(self, address: int) -> tuple[GroupBuffer, int] | None:
        """The group buffer holding `address`, and the offset into it, or None."""
        with self._lock:
            i = bisect.bisect_right(self._starts, address) - 1
            if i < 0:
                return None
            start = self._starts[i]
            buffer = self._buffers[start]
        return (buffer, address - start) if address - start < max(buffer.size, 1) else None

    def _prepared(self, address: int) -> GroupBuffer | None:
        found = self.buffer_at(address)
        if found is None:
            return None   # host memory (pinned allocations, the program's own)
        found[0].host_current()
        return found[0]

    def copy(self, dst: int, src: int, nbytes: int, kind: str) -> None:
        """Copy at host addresses, the group buffers' host copies up to date first."""
        if not nbytes:
            return
        self._prepared(src)
        written = self._prepared(dst)
        ctypes.memmove(dst, src, nbytes)
        if written is not None:
            written.host_changed()

    def fill(self, address: int, nbytes: int, value: int, width: int) -> None:
        if not nbytes:
            return
        written = self._prepared(address)
        words = (ctypes.c_uint8 * nbytes).from_address(address)
        np.frombuffer(words, f"u{width}")[:] = value
        if written is not None:
            written.host_changed()


class GroupDevice(Device):
    """A DeviceGroup shown as one Device (runtime/device.py's streams, events and buffers),
    whose memory is GroupMemory's and whose launches the group runs (launch_packed)."""

    def __new__(cls, group: DeviceGroup) -> GroupDevice:
        if not all(hasattr(m, "device") for m in group.members):
            raise UnsupportedFeatureError(
                "a group of Ray workers as one device", str(group),
                reason="name local devices: group:cpu,opencl:0")
        device = object.__new__(cls)
        device._backend_name, device._ordinal = "group", 0
        device._backend = GroupMemory(group)
        device._properties = _min_properties(group)
        device._workers = weakref.WeakSet()
        device._workers_lock = threading.RLock()
        device._default_stream = None
        device.group = group
        return device

    def __str__(self) -> str:
        return str(self.group)

    def launch_packed(self, stream, config, kernel, params: bytes) -> None:
        """Queue a launch of `kernel` with CUDA's packed parameters on `stream`: the
        arguments are read back now (their buffers must be this group's), and the group runs
        it when the stream gets there."""
        args = self.arguments(kernel, params)
        group = self.group
        buffers = {a.buffer if isinstance(a, GroupPointer) else a for a in _targets(args)}
        managed = [b for b in buffers if b.key in self._backend.managed]

        def run() -> None:
            for buffer in managed:    # the host may have written it in place
                buffer.host_changed()
            group.launch(config, kernel, *args)
            for buffer in managed:    # the host reads it in place after synchronising
                buffer.host_current()

        stream._submit(run, what=f"kernel {kernel.name} on {self}")

    def arguments(self, kernel, params: bytes) -> list:
        """The group launch's arguments of a packed parameter buffer."""
        from ptxport.runtime.group_plan import address_fields

        fields = address_fields(kernel)
        args = []
        for index, info in enumerate(kernel.arguments_info):
            raw = params[info.offset:info.offset + info.size]
            if info.size == 8 and info.pointer:
                args.append(self._pointer(kernel, index, info, int.from_bytes(raw, "little")))
                continue
            used = [int(t.rpartition("+")[2]) for t in fields
                    if t.rpartition("+")[0] == info.name]
            args.append(self._struct(kernel, index, info, raw, used) if used
                        else _scalar(raw, info.type))
        return args

    def _struct(self, kernel, index: int, info, raw: bytes, used: list[int]):
        """A structure argument whose fields at `used` offsets the kernel uses as
        addresses: those holding addresses in the group's buffers are translated (a field
        that holds another address leaves the launch to be refused by the plan)."""
        pointers = {}
        for field in used:
            if field + 8 <= len(raw):
                address = int.from_bytes(raw[field:field + 8], "little")
                found = self._backend.buffer_at(address) if address else None
                if found is not None:
                    buffer, offset = found
                    pointers[field] = buffer if offset == 0 else GroupPointer(buffer, offset)
        return GroupStruct(raw, pointers)

    def _pointer(self, kernel, index: int, info, address: int):
        if address == 0:
            return np.uint64(0)
        found = self._backend.buffer_at(address)
        if found is None:
            raise ArgumentError(
                f"kernel {kernel.name}, argument {index} ({info.name}): {address:#x} is not "
                f"memory of {self} (a device group's kernels reach only its own cudaMalloc "
                "allocations, not pinned host memory or another device's)")
        buffer, offset = found
        return buffer if offset == 0 else GroupPointer(buffer, offset)


def _targets(args) -> list:
    """The GroupBuffers and GroupPointers of launch arguments, a GroupStruct's too."""
    found = []
    for arg in args:
        if isinstance(arg, GroupStruct):
            found += arg.pointers.values()
        elif isinstance(arg, GroupBuffer | GroupPointer):
            found.append(arg)
    return found


def _scalar(raw: bytes, ptx_type: str):
    kind = _SCALARS.get(ptx_type[:1])
    bits = ptx_type[1:]
    if kind is not None and bits.isdigit() and int(bits) == 8 * len(raw) and \
            (kind != "float" or bits in ("32", "64")):
        return np.frombuffer(raw, f"{kind}{bits}")[0]
    return np.frombuffer(raw, np.dtype((np.void, len(raw))))[0]


_GROUPS: dict[str, GroupDevice] = {}
_GROUPS_LOCK = threading.Lock()


def group_device(name: str) -> GroupDevice:
    """The GroupDevice of "group:cpu,opencl:0" (one per name)."""
    with _GROUPS_LOCK:
        device = _GROUPS.get(name)
        if device is None:
            device = _GROUPS[name] = GroupDevice(Device(name))
        return device
