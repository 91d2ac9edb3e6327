"""Device-side printf on the CPU target: CUDA's vprintf call, its argument buffer, its return
value, the order of the output, and C's printf formatting (checked against the C library's
own snprintf)."""

from __future__ import annotations

import ctypes
import math
import struct

import numpy as np
import pytest

from corpus import KERNEL_DIR, corpus_ptx
from cpu_harness import kernel_ptx, run_ptx
from ptxport.errors import KernelExecutionError
from ptxport.runtime.backends.cpu.printf import Record, format_record, parse_format

# --- whole kernels ------------------------------------------------------------------------------

PRINTF_KERNEL = KERNEL_DIR / "printf_kernel.cu"


def test_printf_values_from_nvrtc(capsys):
    ptx = corpus_ptx(PRINTF_KERNEL, "sm_80")
    x = np.array([0.5, -1.25, 3.0, 1e3, 2.0, 7.125, -0.0], np.float32)
    run_ptx(ptx, "printf_values", 2, 4, [x, np.int32(7)])
    lines = capsys.readouterr().out.splitlines()
    want = [f"block {i // 4} thread {i % 4}: x={x[i]:.3f} i64={i * 10**10} "
            f"u={0xFFFFFFFF - i} c={chr(97 + i)} s=ok" for i in range(7)]
    assert sorted(lines) == sorted(want)


def test_printf_once_from_nvrtc(capsys):
    ptx = corpus_ptx(PRINTF_KERNEL, "sm_80")
    run_ptx(ptx, "printf_once", 1, 32, [np.int32(-42), np.float64(6.02e23)])
    assert capsys.readouterr().out == f"value=-42 hex={-42 & 0xFFFFFFFF:#x} d=6.02e+23\n"


def _bytes(name: str, text: bytes) -> str:
    data = ", ".join(str(b) for b in text + b"\0")
    return f".global .align 1 .b8 {name}[{len(text) + 1}] = {{{data}}};"


_VPRINTF = (".extern .func (.param .b32 func_retval0) vprintf "
            "(.param .b64 vprintf_param_0, .param .b64 vprintf_param_1);")


def _call(fmt: str, args: str, result: str) -> str:
    """A call sequence as NVRTC writes it: vprintf(fmt, args); result = its return value."""
    return (f"{{ .param .b64 param0; st.param.b64 [param0], {fmt}; .param .b64 param1; "
            f"st.param.b64 [param1], {args}; .param .b32 retval0; "
            f"call.uni (retval0), vprintf, (param0, param1); "
            f"ld.param.b32 {result}, [retval0]; }}")


# Thread t prints: a line with no arguments (a null buffer), one with a %s string built in
# its local memory, %c, %p, %% and a * width; then, after a barrier, a second line; and
# stores vprintf's return values (arguments parsed; -1 for a null format).
_KERNEL = (_VPRINTF + _bytes("hello", b"hello\n")
           + _bytes("fmt_local", b"[%s] %c %p %% %*d|%-6.2f|\n")
           + _bytes("fmt_after", b"after %u\n")) + kernel_ptx("""
.local .align 8 .b8 depot[48];
.reg .b64 %rd<12>; .reg .b32 %r<12>; .reg .f64 %fd<2>; .reg .pred %p<2>;
ld.param.u64 %rd10, [pout];
mov.u32 %r1, %tid.x;
mov.u64 %rd1, depot; cvta.local.u64 %rd2, %rd1;
mov.u64 %rd3, hello; cvta.global.u64 %rd3, %rd3;
mov.u64 %rd4, 0;
""" + _call("%rd3", "%rd4", "%r2") + """
add.u32 %r3, %r1, 48;                                      // "t<digit>" in local memory
mov.u32 %r4, 116;
st.local.u8 [%rd1+40], %r4; st.local.u8 [%rd1+41], %r3;
mov.u32 %r5, 0; st.local.u8 [%rd1+42], %r5;
add.u64 %rd5, %rd2, 40;
ld.param.u32 %r11, [pbad];                                 // or a bad address for %s
setp.ne.u32 %p1, %r11, 0;
@%p1 mov.u64 %rd5, 4096;
st.local.u64 [%rd1], %rd5;                                 // %s
add.u32 %r6, %r1, 65; st.local.u32 [%rd1+8], %r6;          // %c
mov.u64 %rd6, 0xabc0; st.local.u64 [%rd1+16], %rd6;      // %p
mov.u32 %r7, 5; st.local.u32 [%rd1+24], %r7;              // * width
st.local.u32 [%rd1+28], %r1;                               // %*d
mov.f64 %fd1, 0d400921FB54442D18; st.local.f64 [%rd1+32], %fd1;   // pi
mov.u64 %rd7, fmt_local; cvta.global.u64 %rd7, %rd7;
""" + _call("%rd7", "%rd2", "%r8") + """
bar.sync 0;
st.local.u32 [%rd1], %r1;
mov.u64 %rd8, fmt_after; cvta.global.u64 %rd8, %rd8;
""" + _call("%rd8", "%rd2", "%r9") + """
mov.u64 %rd9, 0;
""" + _call("%rd9", "%rd2", "%r10") + """
mul.wide.u32 %rd11, %r1, 16; add.u64 %rd11, %rd10, %rd11;
st.global.v4.u32 [%rd11], {%r2, %r8, %r9, %r10};
""", ".param .u64 pout, .param .u32 pbad")


def test_printf_arguments_return_values_and_order(capsys):
    """Output comes in the order the calls were made: a block's threads in the order of
    their rounds (here all first lines before the barrier, then all second lines)."""
    out = np.zeros(4 * 4, np.int32)
    run_ptx(_KERNEL, "k", 1, 4, [out, np.uint32(0)])
    text = capsys.readouterr().out
    first = [f"hello\n[t{t}] {chr(65 + t)} 0xabc0 % {t:5d}|3.14  |\n" for t in range(4)]
    assert text == "".join(first) + "".join(f"after {t}\n" for t in range(4))
    assert out.reshape(4, 4).tolist() == [[0, 6, 1, -1]] * 4


def test_a_string_outside_every_allocation_raises_after_the_output(capsys):
    """With access checks on, a bad %s pointer is an error, not a crash; that call returns
    -2 and prints nothing, the others print."""
    out = np.zeros(4 * 4, np.int32)
    with pytest.raises(KernelExecutionError, match=r"a %s string at 0x1000 is outside"):
        run_ptx(_KERNEL, "k", 1, 4, [out, np.uint32(1)])
    assert capsys.readouterr().out == "hello\n" * 4 + "".join(f"after {t}\n" for t in range(4))
    assert out.reshape(4, 4).tolist() == [[0, -2, 1, -1]] * 4


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
