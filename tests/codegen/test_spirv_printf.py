"""CUDA's printf on the SPIR-V target (spirv_printf.py) and the opencl backend: the corpus's
printf kernels print what they print on Device("cpu"); format edge cases print what the C
library prints (CUDA formats on the host with it) and return what vprintf returns; what
OpenCL's printf cannot take at compile time is refused with the call's line.

CUDA leaves the order of different threads' lines unspecified (the CPU device and OpenCL
print in different orders), so whole kernels are compared as multisets of lines; the one
thread of the edge-case kernel prints in program order.
"""

from __future__ import annotations

import ctypes
import struct
from collections import Counter

import numpy as np
import pytest
from test_corpus_cpu import cpu_launcher
from test_corpus_opencl import opencl_launcher

from cpu_harness import kernel_ptx
from kernel_cases import CASES, run_case
from ptxport import Device, LaunchConfig, Program, ProgramOptions, launch
from ptxport.codegen.targets import spirv
from ptxport.errors import UnsupportedFeatureError
from ptxport.ir.from_ptx import build
from ptxport.ptx.parser import parse
from ptxport.runtime.backends import availability, get

_AVAILABLE, _WHY = availability("opencl")
needs_opencl = pytest.mark.skipif(not _AVAILABLE,
                                  reason=f"no OpenCL device for SPIR-V: {_WHY}")

_VPRINTF = (".extern .func (.param .b32 func_retval0) vprintf "
            "(.param .b64 vprintf_param_0, .param .b64 vprintf_param_1);")


def _bytes(name: str, text: bytes, space: str = "global") -> str:
    data = ", ".join(str(b) for b in text + b"\0")
    return f".{space} .align 1 .b8 {name}[{len(text) + 1}] = {{{data}}};"


def _call(fmt: str, args: str, result: str) -> str:
    """A call sequence as NVRTC writes it, on one line: result = vprintf(fmt, args)."""
    return (f"{{ .param .b64 param0; st.param.b64 [param0], {fmt}; .param .b64 param1; "
            f"st.param.b64 [param1], {args}; .param .b32 retval0; "
            f"call.uni (retval0), vprintf, (param0, param1); "
            f"ld.param.b32 {result}, [retval0]; }}")


# --- the corpus ---------------------------------------------------------------------------------

PRINTF_CASES = [c for c in CASES if c.file == "printf_kernel.cu"]


@needs_opencl
@pytest.mark.parametrize("case", PRINTF_CASES, ids=lambda c: c.name)
def test_corpus_printf_prints_what_the_cpu_prints(case, capfd):
    run_case(case, cpu_launcher)
    on_cpu = capfd.readouterr().out
    run_case(case, opencl_launcher)
    on_opencl = capfd.readouterr().out
    assert on_cpu.strip()
    assert Counter(on_opencl.splitlines()) == Counter(on_cpu.splitlines())


@needs_opencl
def test_printing_doubles_needs_fp64(monkeypatch):
    case = next(c for c in PRINTF_CASES if c.kernel == "printf_once")
    monkeypatch.setattr(get("opencl"), "fp64_capable", lambda ordinal: False)
    with pytest.raises(UnsupportedFeatureError, match="cl_khr_fp64"):
        run_case(case, opencl_launcher)


def test_layout_says_whether_the_kernel_prints_doubles():
    ints = _printf_kernel([(b"%d\n", [("s32", 1)])])
    doubles = _printf_kernel([(b"%g\n", [("f64", 1.0)])])
    assert spirv.build_llvm(build(parse(ints)))[1]["k"].prints_doubles is False
    layout = spirv.build_llvm(build(parse(doubles)))[1]["k"]
    assert layout.prints and layout.prints_doubles
    saxpy_like = kernel_ptx("ret;", "")
    assert not spirv.build_llvm(build(parse(saxpy_like)))[1]["k"].prints


# --- format edge cases --------------------------------------------------------------------------

_SIZES = {"s32": 4, "u32": 4, "s64": 8, "u64": 8, "f64": 8, "str": 8, "ptr": 8}


def _printf_kernel(calls: list[tuple[bytes | None, list | None]]) -> str:
    """A kernel k(out) that makes one vprintf call per entry, as NVRTC packs arguments (in
    a .local buffer, each at its natural alignment) and stores each result in out[i].
    A None format is a null one; None arguments pass a null buffer."""
    globals_, body = [_VPRINTF], [
        ".local .align 8 .b8 depot[512];",
        ".reg .b32 %r<4>; .reg .b64 %rd<12>; .reg .f64 %fd<2>;",
        "ld.param.u64 %rd11, [out]; cvta.to.global.u64 %rd11, %rd11;",
        "mov.u64 %rd9, depot; cvta.local.u64 %rd10, %rd9; mov.u64 %rd3, 0;"]
    for i, (fmt, args) in enumerate(calls):
        offset = 0
        for kind, value in args or ():
            size = _SIZES[kind]
            offset = (offset + size - 1) // size * size
            if kind == "str":
                name = f"str{i}_{offset}"
                globals_.append(_bytes(name, value))
                body.append(f"mov.u64 %rd1, {name}; cvta.global.u64 %rd1, %rd1; "
                            f"st.local.u64 [%rd9+{offset}], %rd1;")
            elif kind == "f64":
                bits = struct.unpack("<Q", struct.pack("<d", value))[0]
                body.append(f"mov.b64 %fd1, 0d{bits:016X}; st.local.f64 [%rd9+{offset}], %fd1;")
            elif size == 4:
                body.append(f"mov.b32 %r1, {value & 0xFFFFFFFF}; "
                            f"st.local.b32 [%rd9+{offset}], %r1;")
            else:
                body.append(f"mov.b64 %rd1, {value & (2**64 - 1)}; "
                            f"st.local.b64 [%rd9+{offset}], %rd1;")
            offset += size
        if fmt is None:
            body.append("mov.u64 %rd2, 0;")
        else:
            globals_.append(_bytes(f"fmt{i}", fmt))
            body.append(f"mov.u64 %rd2, fmt{i}; cvta.global.u64 %rd2, %rd2;")
        body.append(_call("%rd2", "%rd3" if args is None else "%rd10", "%r2"))
        body.append(f"st.global.u32 [%rd11+{4 * i}], %r2;")
    body.append("ret;")
    return kernel_ptx("\n".join(body), ".param .u64 out", "\n".join(globals_))


_libc = ctypes.CDLL(None)


def _c_printf(fmt: bytes, args: list) -> bytes:
    """What the C library prints: what CUDA's printf prints, formatted on the host."""
    c_types = {"s32": ctypes.c_int, "u32": ctypes.c_uint, "s64": ctypes.c_longlong,
               "u64": ctypes.c_ulonglong, "f64": ctypes.c_double, "ptr": ctypes.c_void_p,
               "str": ctypes.c_char_p}
    values = [c_types[kind](value) for kind, value in args]
    out = ctypes.create_string_buffer(4096)
    _libc.snprintf(out, 4096, fmt, *values)
    return out.value


NAN, INF = float("nan"), float("inf")
EDGE_CASES = [
    (b"ints %d %i %u %+d % d %5d|%-5d|%05d|%.3d|%x %X %#x %o %#o\n",
     [("s32", -42), ("s32", -7), ("u32", 4000000000), ("s32", 5), ("s32", 5), ("s32", -3),
      ("s32", 12), ("s32", -12), ("s32", 7), ("u32", 0xBEEF), ("u32", 0xBEEF),
      ("u32", 255), ("u32", 8), ("u32", 8)]),
    (b"64-bit %lld %llu %llx %lld %ld %lu %zu %jd %td %20lld|\n",
     [("s64", -1234567890123), ("u64", 2**64 - 1), ("u64", 0xDEADBEEFCAFE),
      ("s64", -2**63), ("s64", 2**62), ("u64", 2**63), ("u64", 5), ("s64", -6),
      ("s64", -7), ("s64", -99)]),
    (b"narrow %hd %hu %hhd %hhx %d\n",
     [("s32", 70000), ("s32", -1), ("s32", 200), ("s32", 0x1FF), ("s32", -2**31)]),
    (b"chars %c%c%c [%3c] [%-3c]\n",
     [("s32", ord("H")), ("s32", ord("i")), ("s32", 0x121), ("s32", ord("x")),
      ("s32", ord("y"))]),
    (b"percent 100%% of %d%%\n", [("s32", 3)]),
    (b"floats %f %.2f %10.3f|%-10.1e|%e %E %g %G %a %A %F %#.0f %+08.2f\n",
     [("f64", 3.14159), ("f64", -2.5), ("f64", 1234.5678), ("f64", 0.000123),
      ("f64", 1e300), ("f64", -1e-300), ("f64", 1e-5), ("f64", 123456789.0), ("f64", 1.0),
      ("f64", -0.5), ("f64", 2.0), ("f64", 3.0), ("f64", -1.5)]),
    (b"specials %f %f %e %+.1f % f %g\n",
     [("f64", INF), ("f64", -INF), ("f64", NAN), ("f64", 0.0), ("f64", -0.0),
      ("f64", 5e-324)]),
    (b"strings [%s] [%8s] [%-8s] [%.3s] [%s] [%s] [%c] [%*.*s]\n",
     [("str", b"hello"), ("str", b"right"), ("str", b"left"), ("str", b"truncate"),
      ("str", b""), ("str", b"50%d%%"), ("s32", ord("z")), ("s32", -7), ("s32", 4),
      ("str", b"starred")]),
    (b"constant stars [%*d] [%-*d] [%*d] [%.*f] [%*.*f] [%.*d] [%*x]\n",
     [("s32", 6), ("s32", 42), ("s32", 6), ("s32", 42), ("s32", -6), ("s32", 42),
      ("s32", 2), ("f64", 3.14159), ("s32", 10), ("s32", 3), ("f64", 2.71828),
      ("s32", -1), ("s32", 0), ("s32", 0), ("u32", 255)]),
    (b"pointers %p %p|%18p|\n", [("ptr", 0xABC0), ("ptr", 0), ("ptr", 0x1234)]),
    (b"no arguments\n", None),
]


@needs_opencl
def test_format_edge_cases(capfd):
    ptx = _printf_kernel(EDGE_CASES)
    want = b"".join(_c_printf(fmt, args or []) for fmt, args in EDGE_CASES).decode()
    counts = [len(args or ()) for _, args in EDGE_CASES]
    for device in ("cpu", "opencl:0"):
        results = _run(ptx, device, len(EDGE_CASES))
        assert capfd.readouterr().out == want, device
        assert results.tolist() == counts, device


def test_edge_case_expectations_are_what_cuda_prints():
    """A few of the lines above, written out (the C library is the oracle of the rest)."""
    assert _c_printf(*EDGE_CASES[2]) == b"narrow 4464 65535 -56 ff -2147483648\n"
    assert _c_printf(*EDGE_CASES[9]) == b"pointers 0xabc0 (nil)|            0x1234|\n"


@needs_opencl
def test_vprintf_results_and_what_cuda_prints_as_written(capfd):
    """A null format prints nothing and returns -1; a null argument buffer prints the
    conversions as written; past the 32nd argument conversions are printed as written."""
    many = b"%d," * 33 + b"\n"
    calls = [(None, []), (b"null buffer %d %s %%\n", None),
             (many, [("s32", i) for i in range(33)])]
    want = ("null buffer %d %s %\n" + "".join(f"{i}," for i in range(32)) + "%d,\n")
    for device in ("cpu", "opencl:0"):
        results = _run(_printf_kernel(calls), device, len(calls))
        assert capfd.readouterr().out == want, device
        assert results.tolist() == [-1, 2, 32], device


def _run(ptx: str, device_name: str, count: int) -> np.ndarray:
    """Run k(out) with one thread on a device; vprintf's results."""
    device = Device(device_name)
    stream = device.create_stream()
    kernel = Program(ptx, code_type="ptx").compile("native").get_kernel("k")
    out = device.allocate(4 * count, stream=stream)
    launch(stream, LaunchConfig(grid=1, block=1), kernel, out)
    results = np.empty(count, np.int32)
    out.copy_to(results, stream=stream)
    stream.sync()
    out.close()
    return results


# --- following the format and %s strings back ----------------------------------------------------

# The format is a .const string at an offset (mov of fmt+6 and cvta.const), its register set
# before a branch whose two paths join at the call (its only definition); the arguments are
# stored through the buffer's generic address, after the join.
_FOLLOWED = kernel_ptx("""
.local .align 8 .b8 depot[32];
.reg .b32 %r<4>; .reg .b64 %rd<12>; .reg .pred %p<2>;
mov.u64 %rd9, depot; cvta.local.u64 %rd10, %rd9;
mov.u64 %rd2, cfmt+6; cvta.const.u64 %rd2, %rd2;
mov.u32 %r1, %tid.x;
setp.eq.u32 %p1, %r1, 0;
@%p1 bra JOIN;
add.u32 %r1, %r1, 100;
JOIN:
st.u32 [%rd10], %r1;
mov.u64 %rd4, word; add.u64 %rd4, %rd4, 2; cvta.global.u64 %rd5, %rd4;
st.u64 [%rd10+8], %rd5;
""" + _call("%rd2", "%rd10", "%r2") + "\nret;", "", _VPRINTF + _bytes("cfmt", b"skip: %d %s\n",
                                                                      "const")
    + _bytes("word", b"--word"))


@needs_opencl
def test_format_and_strings_followed_through_branches_and_offsets(capfd):
    for device_name in ("cpu", "opencl:0"):
        device = Device(device_name)
        stream = device.create_stream()
        kernel = Program(_FOLLOWED, code_type="ptx").compile("native").get_kernel("k")
        launch(stream, LaunchConfig(grid=1, block=2), kernel)
        stream.sync()
        assert sorted(capfd.readouterr().out.splitlines()) == ["0 word", "101 word"], \
            device_name


# A device function gets the argument buffer as a parameter: its address is known only at
# run time, where a null one prints the conversions as written.
_SHOW = _VPRINTF + _bytes("fmt", b"value %d %%\n") + """
.func (.param .b32 result) show(.param .b64 buf)
{
.reg .b32 %r<2>; .reg .b64 %rd<3>;
ld.param.u64 %rd1, [buf];
mov.u64 %rd2, fmt; cvta.global.u64 %rd2, %rd2;
""" + _call("%rd2", "%rd1", "%r1") + """
st.param.b32 [result], %r1;
ret;
}"""
_BUFFER_FROM_A_PARAMETER = kernel_ptx("""
.local .align 8 .b8 depot[8];
.reg .b32 %r<4>; .reg .b64 %rd<12>;
ld.param.u64 %rd11, [out]; cvta.to.global.u64 %rd11, %rd11;
mov.u64 %rd9, depot; cvta.local.u64 %rd10, %rd9;
mov.u32 %r1, 7; st.local.u32 [%rd9], %r1;
{ .param .b64 p0; st.param.b64 [p0], %rd10; .param .b32 r0; call.uni (r0), show, (p0);
ld.param.b32 %r2, [r0]; }
mov.u64 %rd1, 0;
{ .param .b64 p0; st.param.b64 [p0], %rd1; .param .b32 r0; call.uni (r0), show, (p0);
ld.param.b32 %r3, [r0]; }
st.global.v2.u32 [%rd11], {%r2, %r3};
ret;""", ".param .u64 out", _SHOW)


@needs_opencl
def test_a_buffer_known_only_at_run_time(capfd):
    for device in ("cpu", "opencl:0"):
        results = _run(_BUFFER_FROM_A_PARAMETER, device, 2)
        assert capfd.readouterr().out == "value 7 %\nvalue %d %\n", device
        assert results.tolist() == [1, 1], device


# --- refusals ----------------------------------------------------------------------------------

def _refusal(body: str, params: str, extra: str) -> UnsupportedFeatureError:
    """Compile k for SPIR-V; the error, checked to name the line of the vprintf call."""
    ptx = kernel_ptx(body, params, _VPRINTF + extra)
    with pytest.raises(UnsupportedFeatureError) as caught:
        Program(ptx, code_type="ptx", options=ProgramOptions(name="refused.ptx")) \
            .compile("spirv")
    line = next(i for i, text in enumerate(ptx.splitlines(), 1) if "vprintf, (" in text)
    error = caught.value
    assert (error.location.file, error.location.line) == ("refused.ptx", line)
    assert error.target == "spirv" and error.feature == "call.uni"
    return error


_BUFFER = (".local .align 8 .b8 depot[16]; .reg .b32 %r<4>; .reg .b64 %rd<12>; "
           ".reg .pred %p<2>;\nmov.u64 %rd9, depot; cvta.local.u64 %rd10, %rd9;\n")


def test_a_format_from_a_parameter_is_refused():
    error = _refusal(_BUFFER + "ld.param.u64 %rd1, [pfmt];\n" + _call("%rd1", "%rd10", "%r1"),
                     ".param .u64 pfmt", "")
    assert "format" in error.reason and "compile time" in error.reason


def test_a_format_chosen_at_run_time_is_refused():
    body = _BUFFER + """mov.u32 %r2, %tid.x; setp.eq.u32 %p1, %r2, 0;
mov.u64 %rd1, fa; mov.u64 %rd2, fb; selp.b64 %rd3, %rd1, %rd2, %p1;
cvta.global.u64 %rd3, %rd3;
""" + _call("%rd3", "%rd10", "%r1")
    error = _refusal(body, "", _bytes("fa", b"a\n") + _bytes("fb", b"b\n"))
    assert "format" in error.reason


def test_a_string_from_a_parameter_is_refused():
    body = _BUFFER + """ld.param.u64 %rd1, [pstr]; st.local.u64 [%rd9], %rd1;
mov.u64 %rd2, fmt; cvta.global.u64 %rd2, %rd2;
""" + _call("%rd2", "%rd10", "%r1")
    error = _refusal(body, ".param .u64 pstr", _bytes("fmt", b"[%s]\n"))
    assert "%s" in error.reason and "string literals" in error.reason


def test_a_string_overwritten_through_an_unknown_pointer_is_refused():
    """A store through an address the compiler cannot follow may change the buffer."""
    body = _BUFFER + """mov.u64 %rd1, word; cvta.global.u64 %rd1, %rd1;
st.local.u64 [%rd9], %rd1;
ld.param.u64 %rd4, [p]; st.u64 [%rd4], %rd4;
mov.u64 %rd2, fmt; cvta.global.u64 %rd2, %rd2;
""" + _call("%rd2", "%rd10", "%r1")
    error = _refusal(body, ".param .u64 p", _bytes("fmt", b"[%s]\n") + _bytes("word", b"w"))
    assert "%s" in error.reason and "st.u64" in error.reason


def test_a_star_width_known_only_at_run_time_is_refused():
    """OpenCL C's printf has no '*': a width or precision must be a constant."""
    body = _BUFFER + """ld.param.u32 %r2, [width]; st.local.u32 [%rd9], %r2;
mov.u32 %r3, 7; st.local.u32 [%rd9+4], %r3;
mov.u64 %rd2, fmt; cvta.global.u64 %rd2, %rd2;
""" + _call("%rd2", "%rd10", "%r1")
    error = _refusal(body, ".param .u32 width", _bytes("fmt", b"[%*d]\n"))
    assert "'*'" in error.reason and "digits" in error.reason
