"""Device-side printf on the hip backend: each device's printf buffer (the AMDGPU target's
amdgpu_printf.py writes records into it), drained after every launch of a kernel whose module
calls printf, the records formatted with C's printf rules by the CPU backend's formatter
(cpu/printf.py) and written to sys.stdout in the order the threads claimed their room.

`read(address, size)` is the backend's device-to-host copy; the format and %s strings are
read from device memory by address (string constants live in the loaded code object).
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Callable

from ptxport.codegen.targets.amdgpu_printf import CAPACITY, HEADER, RECORD_HEADER
from ptxport.errors import PtxportError
from ptxport.runtime.backends.cpu.printf import Record, format_record, parse_format

__all__ = ["drain", "initial_header", "records"]

_MAX_STRING = 1 << 16
_CHUNK = 64

Reader = Callable[[int, int], bytes]


def initial_header(capacity: int = CAPACITY) -> bytes:
    return struct.pack("<QQ", 0, capacity)


def _string(read: Reader, address: int) -> bytes | None:
    """The NUL-terminated string at a device address; None where it cannot be read (a
    thread's private memory)."""
    out = b""
    try:
        while len(out) < _MAX_STRING:
            chunk = read(address + len(out), _CHUNK)
            end = chunk.find(b"\0")
            if end >= 0:
                return out + chunk[:end]
            out += chunk
    except PtxportError:
        return None
    return out


def records(buffer: bytes, read: Reader) -> list[Record]:
    """The records of a drained buffer (its bytes after the header, as far as they were
    written), with their formats and %s strings read from device memory."""
    out, at = [], 0
    while at + RECORD_HEADER <= len(buffer):
        size, fmt_address = struct.unpack_from("<QQ", buffer, at)
        if size < RECORD_HEADER or at + size > len(buffer):
            break
        fmt = _string(read, fmt_address) or b""
        args = buffer[at + RECORD_HEADER:at + size]
        record = Record(fmt, args)
        for spec in parse_format(fmt)[0]:
            if spec.conversion == "s" and spec.offsets and spec.offsets[-1] + 8 <= len(args):
                pointer = struct.unpack_from("<Q", args, spec.offsets[-1])[0]
                text = _string(read, pointer) if pointer else None
                record.strings[spec.offsets[-1]] = b"(private)" if pointer and text is None \
                    else text
        out.append(record)
        at += size
    return out


def drain(base: int, read: Reader, write: Callable[[int, bytes], None]) -> None:
    """Print the records in the buffer at device address `base` and empty it; a note on
    stderr says how much did not fit."""
    used, capacity = struct.unpack("<QQ", read(base, HEADER))
    if not used:
        return
    body = read(base + HEADER, min(used, capacity))
    text = b"".join(format_record(r) for r in records(body, read))
    sys.stdout.flush()
    sys.stdout.buffer.write(text)
    sys.stdout.flush()
    if used > capacity:
        sys.stderr.write(f"ptxport: printf output past the buffer's {capacity} bytes was "
                         "dropped in this launch\n")
    # zeros where records were, so that a claim that did not fit reads as the end next time
    write(base + HEADER, bytes(min(used, capacity)))
    write(base, initial_header(capacity))
