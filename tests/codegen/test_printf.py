"""Device-side printf on the CPU target: CUDA's vprintf call, its argument buffer, its return
value, the order of the output, and C's printf formatting (checked against the C library's
own snprintf)."""

from __future__ import annotations

import ctypes
import math
import struct

import pytest

from ptxport.codegen.targets.cpu_printf import Record, format_record, parse_format

# --- formatting -------------------------------------------------------------------------------

_libc = ctypes.CDLL(None)


def _pack(fmt: bytes, values: list) -> tuple[Record, list]:
    """The argument buffer CUDA's compiler would build, and the same values for snprintf."""
    specs, size = parse_format(fmt)
    buffer, c_args, strings = bytearray(size), [], {}
    values = iter(values)
    for spec in specs:
        offsets = list(spec.offsets)
        for star in (spec.width_star, spec.precision_star):
            if star:
                value = next(values)
                struct.pack_into("<i", buffer, offsets.pop(0), value)
                c_args.append(ctypes.c_int(value))
        if not offsets:             # "%%", or past the 32nd argument
            continue
        value, offset = next(values), offsets[0]
        if spec.conversion in "eEfFgGaA":
            struct.pack_into("<d", buffer, offset, value)
            c_args.append(ctypes.c_double(value))
        elif spec.conversion == "s":
            strings[offset] = value
            c_args.append(ctypes.c_char_p(value))
        elif spec.value_size == 8:
            struct.pack_into("<Q", buffer, offset, value % 2**64)
            c_args.append(ctypes.c_uint64(value % 2**64))
        else:
            struct.pack_into("<I", buffer, offset, value % 2**32)
            c_args.append(ctypes.c_uint32(value % 2**32))
    return Record(fmt, bytes(buffer), strings), c_args


def _c_printf(fmt: bytes, c_args: list) -> bytes:
    out = ctypes.create_string_buffer(4096)
    _libc.snprintf(out, len(out), fmt, *c_args)
    return out.value


@pytest.mark.parametrize("fmt,values", [
    (b"%d %i %u %x %X %o", [-5, 42, 2**32 - 1, 255, 255, 8]),
    (b"[%5d|%-5d|%05d|%+d|% d|%.3d|%05.3d|%.0d|%+.0d]", [42, 42, 42, 42, 42, 7, 7, 0, 0]),
    (b"[%#o|%#o|%#x|%#X|%#x|%#.0o|%#5x|%#-8X|%#08x]", [8, 0, 255, 255, 0, 0, 15, 255, 255]),
    (b"%ld %lld %llu %lx %lo %hd %hhd %hu %hhx", [-2**40, -2**63, 2**64 - 1, 2**50, 2**40,
                                                  70000, 300, 70000, 0x1FF]),
    (b"%lu %zu %zd %jd %td", [2**63, 2**40, -3, -4, -5]),
    (b"%c%c%5c%-3c|", [65, 0x161, 66, 67]),
    (b"%f %.2f %10.3f %-10.1f| %+f % f %010.2f %.0f %#.0f %F",
     [3.14159, -2.5, 1e3, 0.05, 1.0, 1.0, -3.5, 2.5, 2.5, 1e300]),
    (b"%e %.2E %12.4e %g %G %.3g %#g %g %g %g %#.3g %.0e",
     [12345.678, 1e-10, -0.0, 100000.0, 1e-5, 1234.5678, 1.0, 1e20, 0.0001, 123456789.0, 1.0,
      5e-324]),
    (b"%f %e %g %F %E %G %5f %-6f| %05f %+f",
     [math.inf, -math.inf, math.nan, math.inf, math.nan, -math.nan, math.inf, math.nan,
      math.inf, math.nan]),
    (b"%a %A %.0a %.1a %.3a %a %a %a %#a %.0a %20a %-20a| %020a %+a %.15a",
     [1.5, -1.5, 1.9, 1.96875, 1.0 / 3, 0.0, 5e-324, 2.2250738585072014e-308, 1.0, 1.5, 0.1,
      0.1, 0.1, 3.0, 0.1]),
    (b"%s|%10s|%-10s|%.2s|%5.1s|%.0s|", [b"hello", b"hi", b"hi", b"hello", b"xyz", b"abc"]),
    (b"%p %p %20p %-20p|", [0, 255, 0x7FFF1234, 16]),
    (b"%*d|%-*d|%*d|%.*f|%*.*f|%.*s|%.*d", [6, 42, 6, 42, -6, 42, 2, 3.14159, 10, 3, 2.71828,
                                           3, b"abcdef", -1, 5]),
    (b"100%% %d%%", [7]),
])
def test_formatting_follows_the_c_library(fmt, values):
    record, c_args = _pack(fmt, values)
    assert format_record(record) == _c_printf(fmt, c_args)


def test_arguments_are_packed_at_their_natural_alignment():
    specs, size = parse_format(b"%c %f %d %s %lld %hd %p %*.*e")
    assert [s.offsets for s in specs] == [(0,), (8,), (16,), (24,), (32,), (40,), (48,),
                                          (56, 60, 64)]
    assert size == 72


def test_conversions_past_32_arguments_are_printed_as_written():
    fmt = b"%d " * 33 + b"%%"
    record, _ = _pack(fmt, list(range(33)))
    assert format_record(record) == b" ".join(b"%d" % i for i in range(32)) + b" %d %"
    assert record.argument_count == 32


def test_a_missing_string_prints_null():
    record, _ = _pack(b"[%s]", [b"x"])
    record.strings.clear()
    assert format_record(record) == b"[(null)]"
