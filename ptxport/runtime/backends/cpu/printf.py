"""Device-side printf on the CPU: CUDA's `vprintf`, logged while a grid runs and printed after.

CUDA C++ compiles printf(format, ...) to `call.uni (ret), vprintf, (format, args)`, vprintf
being an `.extern .func` the CUDA driver provides. `format` is the generic address of the
format string (in .global); `args` that of a buffer in which the compiler packs every argument
at its natural alignment after C's default argument promotions: char and short as 4-byte
ints, float as an 8-byte double, long, long long, size_t and pointers as 8 bytes (LP64); it
is a null pointer when there are no arguments.

On the CPU the call becomes a native call of `ptxport_vprintf(ctx, format, args)`, a ctypes
callback (it takes the GIL, which printf can afford). Like the device's vprintf it reads the
format to find where each argument lies, and records the format, the argument bytes and a
copy of every %s string (the thread's local memory is reused after it exits) in the log of
the launch whose block context `ctx` is. When the launch ends, the executor formats the
records with C's printf rules, here in Python, and writes them to sys.stdout in the order
they were recorded: blocks in the order the host threads ran them, a block's threads in the
order of their rounds. A GPU leaves this order unspecified as well.

What CUDA documents and this follows: conversions %c %d %i %o %u %x %X %p %e %E %f %F %g %G
%a %A %s and %%, with flags (- + space # 0), width (digits or *), precision (digits or *) and
sizes hh h l ll (also z j t, 8 bytes); at most 32 arguments, conversions beyond them printed
as written; the return value is the number of arguments parsed, 0 with none, -1 when the
format is a null pointer. When the launch checks accesses (it has an allocation table), a
format, argument buffer or %s string outside every allocation makes the call return -2 (the
CUDA driver's "internal error") and the launch raise KernelExecutionError once it ends,
rather than crash the process.

CUDA's device-side assert is the driver's `__assertfail(message, file, line, function,
charSize)`, which the CUDA headers' assert() calls when its expression is false. On the CPU
it is `ptxport_assertfail(ctx, frame, message, file, line, function)`, a callback like
vprintf's: it records CUDA's text for the failing thread, `file:line: function: block:
[x,y,z], thread: [x,y,z] Assertion `message` failed.`, in the launch's log, and the thread
then traps (codegen/targets/cpu/target.py). When the launch ends, the text goes to
sys.stderr, where CUDA prints it, and the executor raises KernelAssertError with it.
"""

from __future__ import annotations

import ctypes
import math
import re
import struct
import sys
import threading
from dataclasses import dataclass, field, replace

import llvmlite.binding as llvm

from ptxport.codegen.targets.cpu.abi import CTX, FRAME
from ptxport.codegen.targets.cpu.calls import ASSERT_SYMBOL, PRINTF_SYMBOL
from ptxport.errors import KernelExecutionError

__all__ = ["Assertion", "Log", "Record", "assertion_of", "close_log", "format_record",
           "open_log", "parse_format"]

MAX_ARGUMENTS = 32
_MAX_FORMAT = 1 << 16

# %[flags][width][.precision][size]conversion
_SPEC = re.compile(rb"%(?P<flags>[-+ #0]*)(?P<width>\*|\d+)?(?:\.(?P<precision>\*|\d*))?"
                   rb"(?P<size>hh|h|ll|l|L|z|j|t)?(?P<conversion>[cdiouxXpeEfFgGaAs%])")


@dataclass(frozen=True)
class Spec:
    """One conversion of a format, and where its arguments lie in the buffer: a `*` width's,
    a `*` precision's, then the value's (none past the 32nd argument)."""

    start: int
    end: int
    flags: str
    width: int | None
    precision: int | None
    width_star: bool
    precision_star: bool
    size: str
    conversion: str
    offsets: tuple[int, ...]

    @property
    def value_size(self) -> int:
        if self.conversion in "eEfFgGaAsp":
            return 8
        return 8 if self.size in ("l", "ll", "z", "j", "t") else 4


def parse_format(fmt: bytes) -> tuple[list[Spec], int]:
    """The conversions of a format and the size of the argument buffer they read."""
    specs, offset, count = [], 0, 0
    for m in _SPEC.finditer(fmt):
        width, precision = m["width"], m["precision"]
        spec = Spec(m.start(), m.end(), m["flags"].decode(),
                    None if width in (None, b"*") else int(width),
                    None if precision in (None, b"*") else int(precision or b"0"),
                    width == b"*", precision == b"*", (m["size"] or b"").decode(),
                    m["conversion"].decode(), ())
        sizes = [] if spec.conversion == "%" else \
            [4] * (spec.width_star + spec.precision_star) + [spec.value_size]
        offsets = []
        if count + len(sizes) <= MAX_ARGUMENTS:
            for size in sizes:
                offset = (offset + size - 1) // size * size
                offsets.append(offset)
                offset += size
            count += len(sizes)
        specs.append(replace(spec, offsets=tuple(offsets)))
    return specs, offset


@dataclass
class Record:
    """One printf call: its format, its argument bytes, and copies of its %s strings."""

    fmt: bytes
    args: bytes
    strings: dict[int, bytes | None] = field(default_factory=dict)   # value offset -> text

    @property
    def argument_count(self) -> int:
        return sum(len(s.offsets) for s in parse_format(self.fmt)[0])


_libc = ctypes.CDLL(None)
_libc.strnlen.restype = ctypes.c_size_t
_libc.strnlen.argtypes = (ctypes.c_void_p, ctypes.c_size_t)


class _Memory:
    """Reads out of the kernel's memory. With the launch's access checks on (the allocation
    table in the block context), an address outside every allocation is an error rather
    than a crash, and a read stops at the end of its allocation."""

    def __init__(self, ctx: int):
        self.ranges = None
        fields = CTX.fields
        if ctx and ctypes.c_uint32.from_address(ctx + fields["checks"]).value:
            count = ctypes.c_uint32.from_address(ctx + fields["alloc_count"]).value
            table = ctypes.c_uint64.from_address(ctx + fields["alloc_table"]).value
            self.ranges = list((ctypes.c_uint64 * (2 * count)).from_address(table))

    def readable(self, address: int, what: str) -> int:
        """How many bytes may be read at `address` (unbounded: 1 << 62)."""
        if self.ranges is None:
            return 1 << 62
        for start, end in zip(self.ranges[::2], self.ranges[1::2], strict=True):
            if start <= address < end:
                return end - address
        raise ValueError(f"{what} at {address:#x} is outside every allocation")

    def string(self, address: int, limit: int, what: str) -> bytes:
        limit = min(limit, self.readable(address, what))
        return ctypes.string_at(address, _libc.strnlen(address, limit))

    def bytes(self, address: int, size: int, what: str) -> bytes:
        if self.readable(address, what) < size:
            raise ValueError(f"{what} at {address:#x} runs past the end of its allocation")
        return ctypes.string_at(address, size)


def capture(fmt_address: int, args_address: int, memory: _Memory) -> Record:
    """Copy what a vprintf call needs out of the kernel's memory."""
    fmt = memory.string(fmt_address, _MAX_FORMAT, "the format")
    specs, size = parse_format(fmt)
    args = memory.bytes(args_address, size, "the argument buffer") \
        if size and args_address else b""
    record = Record(fmt, args)
    for spec in specs:
        if spec.conversion == "s" and spec.offsets and spec.offsets[-1] + 8 <= len(args):
            precision = _precision(args, spec)
            pointer = struct.unpack_from("<Q", args, spec.offsets[-1])[0]
            record.strings[spec.offsets[-1]] = memory.string(
                pointer, _MAX_FORMAT if precision is None else precision,
                "a %s string") if pointer else None
    return record


# --- formatting, with C's printf rules ---------------------------------------------------------

def _width(args: bytes, spec: Spec) -> tuple[int | None, str]:
    """The width and flags, a negative `*` width meaning '-' and its magnitude."""
    if not spec.width_star:
        return spec.width, spec.flags
    width = struct.unpack_from("<i", args, spec.offsets[0])[0]
    return (-width, spec.flags + "-") if width < 0 else (width, spec.flags)


def _precision(args: bytes, spec: Spec) -> int | None:
    """The precision; a negative `*` precision counts as none."""
    if not spec.precision_star:
        return spec.precision
    precision = struct.unpack_from("<i", args, spec.offsets[-2])[0]
    return None if precision < 0 else precision


def format_record(record: Record) -> bytes:
    """The text one printf call writes."""
    out, position = [], 0
    for spec in parse_format(record.fmt)[0]:
        out.append(record.fmt[position:spec.start])
        position = spec.end
        if spec.conversion == "%":
            out.append(b"%")
        elif spec.offsets and spec.offsets[-1] + spec.value_size <= len(record.args):
            out.append(_convert(record, spec))
        else:       # past the 32nd argument, or no argument buffer: printed as written
            out.append(record.fmt[spec.start:spec.end])
    out.append(record.fmt[position:])
    return b"".join(out)


def _convert(record: Record, spec: Spec) -> bytes:
    args, c, offset = record.args, spec.conversion, spec.offsets[-1]
    (width, flags), precision = _width(args, spec), _precision(args, spec)
    if c in "sp":
        pointer = struct.unpack_from("<Q", args, offset)[0]
        if c == "p":
            return _pad(b"(nil)" if pointer == 0 else b"0x%x" % pointer, width, flags)
        text = record.strings.get(offset)
        text = b"(null)" if text is None else text
        return _pad(text if precision is None else text[:precision], width, flags)
    if c in "eEfFgGaA":
        value = struct.unpack_from("<d", args, offset)[0]
        return _float(value, c, flags, width, precision)
    raw = int.from_bytes(args[offset:offset + spec.value_size], "little")
    if c == "c":
        return _pad(bytes([raw & 0xFF]), width, flags)
    bits = {"hh": 8, "h": 16}.get(spec.size, 8 * spec.value_size)
    raw &= (1 << bits) - 1
    if c in "di" and raw >> (bits - 1):
        raw -= 1 << bits
    return _integer(raw, c, flags, width, precision)


def _pad(body: bytes, width: int | None, flags: str, zero_at: int | None = None) -> bytes:
    """Pad to `width`: on the right with '-', with zeros after `zero_at` characters (the sign
    and 0x prefix) when the '0' flag applies, else with spaces on the left."""
    if width is None or len(body) >= width:
        return body
    fill = width - len(body)
    if "-" in flags:
        return body + b" " * fill
    if zero_at is not None and "0" in flags:
        return body[:zero_at] + b"0" * fill + body[zero_at:]
    return b" " * fill + body


def _integer(value: int, c: str, flags: str, width, precision) -> bytes:
    base = {"o": 8, "x": 16, "X": 16}.get(c, 10)
    magnitude = abs(value)
    digits = b"" if precision == 0 and magnitude == 0 else \
        {8: b"%o", 16: b"%x", 10: b"%d"}[base] % magnitude
    if c == "X":
        digits = digits.upper()
    if precision is not None and len(digits) < precision:
        digits = b"0" * (precision - len(digits)) + digits
    prefix = b""
    if c in "di":
        prefix = b"-" if value < 0 else b"+" if "+" in flags else b" " if " " in flags else b""
    elif "#" in flags:
        if c == "o" and not digits.startswith(b"0"):
            digits = b"0" + digits
        elif c in "xX" and magnitude:
            prefix = b"0X" if c == "X" else b"0x"
    return _pad(prefix + digits, width, flags, None if precision is not None else len(prefix))


def _float(value: float, c: str, flags: str, width, precision) -> bytes:
    negative = math.copysign(1.0, value) < 0
    sign = b"-" if negative else b"+" if "+" in flags else b" " if " " in flags else b""
    if not math.isfinite(value):
        body = b"nan" if math.isnan(value) else b"inf"
        return _pad(sign + (body.upper() if c.isupper() else body), width, flags)
    magnitude = abs(value)
    if c in "aA":
        body = _hex_float(magnitude, precision, "#" in flags)
        prefix = 2
        if c == "A":
            body = body.upper()
    else:
        spec = "%" + ("#" if "#" in flags else "") + ("" if precision is None else
                                                       f".{precision}") + c
        body = (spec % magnitude).encode()
        prefix = 0
    return _pad(sign + body, width, flags, len(sign) + prefix)


def _hex_float(magnitude: float, precision: int | None, alternate: bool) -> bytes:
    """C's %a of a non-negative finite double: 0x1.8p+0, as glibc writes it."""
    if magnitude == 0:
        lead, fraction, exponent = 0, 0, 0
    else:
        bits = struct.unpack("<Q", struct.pack("<d", magnitude))[0]
        biased, fraction = bits >> 52, bits & ((1 << 52) - 1)
        lead, exponent = (1, biased - 1023) if biased else (0, -1022)
    digits = 13
    if precision is not None and precision < digits:
        shift = 4 * (digits - precision)
        mantissa = (lead << 52) | fraction
        kept, rest = mantissa >> shift, mantissa & ((1 << shift) - 1)
        half = 1 << (shift - 1)
        if rest > half or (rest == half and kept & 1):
            kept += 1                                    # to nearest, ties to even
        lead, fraction, digits = kept >> (4 * precision), kept & ((1 << 4 * precision) - 1), \
            precision
    text = f"{fraction:0{digits}x}" if digits else ""
    if precision is None:
        text = text.rstrip("0")
    elif precision > digits:
        text += "0" * (precision - digits)
    point = "." if text or alternate else ""
    return f"0x{lead}{point}{text}p{exponent:+d}".encode()


# --- the native side --------------------------------------------------------------------------

@dataclass(frozen=True)
class Assertion:
    """One failed device-side assert: the thread, and the text CUDA prints for it."""

    block: tuple[int, int, int]
    thread: tuple[int, int, int]
    text: str


@dataclass
class Log:
    """The printf calls and failed assertions of one launch."""

    records: list[Record] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)
    assertions: list[Assertion] = field(default_factory=list)


_LOGS: dict[int, Log] = {}        # by the address of the launch's parameter block
_LOGS_LOCK = threading.Lock()


def _vprintf(ctx: int | None, fmt: int | None, args: int | None) -> int:
    params = ctypes.c_uint64.from_address(ctx + CTX.fields["params"]).value if ctx else 0
    log = _LOGS.get(params)
    if not fmt:
        return -1
    try:
        record = capture(fmt, args or 0, _Memory(ctx or 0))
    except ValueError as e:         # reported after the launch; the kernel goes on
        if log is not None:
            log.errors.append(e)
        return -2
    if log is None:                 # a launch the executor did not open a log for
        _write([format_record(record)])
    else:
        log.records.append(record)
    return record.argument_count


_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p,
                             ctypes.c_void_p)(_vprintf)
llvm.add_symbol(PRINTF_SYMBOL, ctypes.cast(_CALLBACK, ctypes.c_void_p).value)


def _assertfail(ctx: int | None, frame: int | None, message: int | None, file: int | None,
                line: int, function: int | None) -> None:
    ctaid = tuple((ctypes.c_uint32 * 3).from_address(ctx + CTX.fields["ctaid"])) if ctx \
        else (0, 0, 0)
    tid = tuple((ctypes.c_uint32 * 3).from_address(frame + FRAME.fields["tid"])) if frame \
        else (0, 0, 0)
    memory = _Memory(ctx or 0)
    log = _LOGS.get(ctypes.c_uint64.from_address(ctx + CTX.fields["params"]).value
                    if ctx else 0)
    try:
        message, file, function = (
            memory.string(address, _MAX_FORMAT, what).decode("utf-8", "replace")
            if address else "" for address, what in ((message, "the assertion's message"),
                                                     (file, "the assertion's file name"),
                                                     (function, "the assertion's function")))
    except ValueError as e:         # reported after the launch, with the assertion itself
        message, file, function = "?", "?", "?"
        if log is not None:
            log.errors.append(e)
    assertion = Assertion(
        ctaid, tid, f"{file}:{line}: {function}: block: [{ctaid[0]},{ctaid[1]},{ctaid[2]}], "
                    f"thread: [{tid[0]},{tid[1]},{tid[2]}] Assertion `{message}` failed.")
    if log is None:                 # a launch the executor did not open a log for
        _write([assertion.text.encode() + b"\n"], sys.stderr)
    else:
        log.assertions.append(assertion)


_ASSERT_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                    ctypes.c_void_p, ctypes.c_int32,
                                    ctypes.c_void_p)(_assertfail)
llvm.add_symbol(ASSERT_SYMBOL, ctypes.cast(_ASSERT_CALLBACK, ctypes.c_void_p).value)


def _write(chunks: list[bytes], stream=None) -> None:
    text = b"".join(chunks)
    if not text:
        return
    stream = stream or sys.stdout
    buffer = getattr(stream, "buffer", None)
    if buffer is not None:          # bytes as the kernel wrote them, like a C stdout
        stream.flush()
        buffer.write(text)
        buffer.flush()
    else:
        stream.write(text.decode("utf-8", "replace"))


def open_log(params_address: int) -> Log:
    """Start collecting the printf calls of the launch whose parameter block is at
    `params_address` (the executor calls this before the launch runs)."""
    log = Log()
    with _LOGS_LOCK:
        _LOGS[params_address] = log
    return log


def assertion_of(params_address: int, block: tuple[int, int, int],
                 thread: tuple[int, int, int]) -> Assertion | None:
    """The failed assertion the thread recorded in the launch whose parameter block is at
    `params_address`, if it did."""
    log = _LOGS.get(params_address)
    if log is None:
        return None
    return next((a for a in list(log.assertions) if a.block == block and a.thread == thread),
                None)


def close_log(params_address: int, log: Log) -> list[KernelExecutionError]:
    """Print the launch's printf output and, on stderr, its failed assertions (also after a
    failed launch); returns the error to raise when a printf or assert call pointed outside
    the launch's memory."""
    with _LOGS_LOCK:
        _LOGS.pop(params_address, None)
    _write([format_record(r) for r in log.records])
    _write([a.text.encode() + b"\n" for a in log.assertions], sys.stderr)
    return [KernelExecutionError(f"printf or assert could not read its arguments: {e}")
            for e in log.errors[:1]]
