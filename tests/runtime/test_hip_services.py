"""The hip backend's side of device-side malloc and printf (runtime/backends/hip.py,
hip_printf.py), with HIP replaced by device memory kept in Python: no AMD GPU here. A loaded
code object's globals get the heap's and the printf buffer's addresses; the heap starts with
spirv_heap's header; a launch's printf records are printed and the buffer emptied."""

from __future__ import annotations

import ctypes
import struct

from ptxport.codegen.targets import amdgpu_printf, spirv_heap
from ptxport.runtime.backends import Allocation
from ptxport.runtime.backends.hip import Backend


class _FakeHip:
    """Device memory at made-up addresses, and one loaded code object's two globals."""

    def __init__(self):
        self.memory: dict[int, bytearray] = {}
        self.next = 0x100000
        self.symbols = {name: self.allocate(8) for name in (spirv_heap.HEAP_SYMBOL,
                                                           amdgpu_printf.PRINTF_SYMBOL)}

    def allocate(self, nbytes: int) -> int:
        address, self.next = self.next, self.next + (nbytes + 0xFFFF) // 0x10000 * 0x10000
        self.memory[address] = bytearray(nbytes)
        return address

    def _block(self, address: int, nbytes: int) -> tuple[bytearray, int]:
        for start, block in self.memory.items():
            if start <= address and address + nbytes <= start + len(block):
                return block, address - start
        raise AssertionError(f"no device memory at {address:#x}")

    def word(self, address: int) -> int:
        block, at = self._block(address, 8)
        return struct.unpack_from("<Q", block, at)[0]

    def hipModuleGetGlobal(self, loaded, name: bytes):
        return 0, self.symbols[name.decode()], 8


def _backend(fake: _FakeHip) -> Backend:
    backend = Backend()

    def copy(dst, src, nbytes, kind):
        if kind == "htod":
            block, at = fake._block(dst, nbytes)
            block[at:at + nbytes] = ctypes.string_at(src, nbytes)
        else:
            block, at = fake._block(src, nbytes)
            ctypes.memmove(dst, bytes(block[at:at + nbytes]), nbytes)

    def fill(address, nbytes, value, width):
        block, at = fake._block(address, nbytes)
        block[at:at + nbytes] = bytes([value]) * nbytes

    backend.allocate = lambda ordinal, nbytes: Allocation(fake.allocate(nbytes), nbytes, None)
    backend.copy, backend.fill = copy, fill
    backend._use = lambda ordinal: fake
    return backend


def test_a_loaded_code_object_gets_the_devices_heap():
    fake = _FakeHip()
    backend = _backend(fake)
    backend.set_heap_size(1 << 16)
    backend._give_heap(0, "module")
    heap = fake.word(fake.symbols[spirv_heap.HEAP_SYMBOL])
    assert heap != 0
    assert [fake.word(heap), fake.word(heap + 8)] == spirv_heap.initial_header(1 << 16)
    backend._give_heap(0, "another module")          # one heap per device
    assert fake.word(fake.symbols[spirv_heap.HEAP_SYMBOL]) == heap


def test_launch_records_are_printed_and_the_buffer_emptied(capfd):
    fake = _FakeHip()
    backend = _backend(fake)
    backend._give_printf_buffer(0, "module")
    base = fake.word(fake.symbols[amdgpu_printf.PRINTF_SYMBOL])
    assert [fake.word(base), fake.word(base + 8)] == [0, amdgpu_printf.CAPACITY]
    fmt = fake.allocate(64)
    fake._block(fmt, 16)[0][:16] = b"x=%d y=%lld\n\0\0\0\0"
    # what the kernel writes: the fill level, then one record (size, format, arguments)
    record = struct.pack("<QQiiq", 32, fmt, 7, 0, -5)
    block, at = fake._block(base, 16 + len(record))
    block[at:at + 8] = struct.pack("<Q", len(record))
    block[at + 16:at + 16 + len(record)] = record
    backend._drain_printf(0)
    assert capfd.readouterr().out == "x=7 y=-5\n"
    assert fake.word(base) == 0 and fake.word(base + 16) == 0
    backend._drain_printf(0)                          # nothing new: nothing printed
    assert capfd.readouterr().out == ""
