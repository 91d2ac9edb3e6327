"""cvt and cvt.pack on the CPU target against exact references (PTX ISA 9.7.9.21-22).

Each test compiles a kernel that applies many conversions to every input (thread i converts
input i by each case k and stores the result register's bits in out[i, k]), so that a few
compilations cover every type pair and modifier. Sources of 16 bits are swept exhaustively.

The references compute in exact arithmetic: float inputs are exact in float64, where scaling
by powers of two, floor and subtraction are exact; integers use Python integers. NaN and
other results the manual leaves open follow the H100 (see ptxport/codegen/ops/convert.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from cpu_harness import kernel_ptx, run_ptx
from ptxport.errors import PtxSemanticError, UnsupportedFeatureError

REG = {8: "b16", 16: "b16", 32: "b32", 64: "b64"}
PREFIX = {"b16": "%h", "b32": "%r", "b64": "%rd"}
# Binary formats: exponent bits, fraction bits, kind (as in convert.py's Format).
FORMATS = {"f64": (11, 52, "ieee"), "f32": (8, 23, "ieee"), "f16": (5, 10, "ieee"),
           "bf16": (8, 7, "ieee"), "tf32": (8, 10, "ieee"), "e4m3": (4, 3, "fn"),
           "e5m2": (5, 2, "ieee"), "e2m3": (2, 3, "finite"), "e3m2": (3, 2, "finite"),
           "e2m1": (2, 1, "finite")}
INT_TYPES = ("s8", "u8", "s16", "u16", "s32", "u32", "s64", "u64")
IRND = ("rni", "rzi", "rmi", "rpi")
FRND = ("rn", "rz", "rm", "rp")
RNG = np.random.default_rng(2026)


# --- the kernel -------------------------------------------------------------------------------

def conversion_kernel(source_width: int, cases: list[tuple[str, str]], target="sm_80",
                      version="8.0", sources: int = 1) -> str:
    """A kernel k(in, out, n): `sources` inputs per thread (u64 slots, loaded as
    b{source_width} into %s0..), each case an instruction text with {d} and {a} {b} {c} whose
    destination register class is given, stored into out[i, k] (u64 slots)."""
    src = REG[source_width]
    load = "".join(f"ld.global.{src} %s{j}, [%pin+{8 * j}];\n" for j in range(sources))
    body = [f".reg .{src} %s<{sources}>;", ".reg .b16 %h<4>; .reg .b32 %r<4>; .reg .b64 %rd<2>;",
            ".reg .b32 %i, %n, %t0, %t1; .reg .b64 %pin, %pout, %off; .reg .pred %done;",
            "mov.u32 %i, %tid.x; mov.u32 %t0, %ctaid.x; mov.u32 %t1, %ntid.x;",
            "mad.lo.u32 %i, %t0, %t1, %i; ld.param.u32 %n, [n];",
            "setp.ge.u32 %done, %i, %n; @%done bra END;",
            "ld.param.u64 %pin, [pin]; ld.param.u64 %pout, [pout];",
            f"mul.wide.u32 %off, %i, {8 * sources}; add.u64 %pin, %pin, %off;",
            f"mul.wide.u32 %off, %i, {8 * len(cases)}; add.u64 %pout, %pout, %off;", load]
    operands = {"a": "%s0", "b": "%s1", "c": "%s2"}
    for k, (text, dest) in enumerate(cases):
        d = PREFIX[dest] + "1"
        body.append(text.format(d=d, **operands))
        body.append(f"st.global.{dest} [%pout+{8 * k}], {d};")
    body.append("END:\nret;")
    return kernel_ptx("\n".join(body), ".param .u64 pin, .param .u64 pout, .param .u32 n",
                      target=target, version=version)


def run_cases(source_width: int, inputs: np.ndarray, cases, per_kernel: int = 0,
              **kw) -> np.ndarray:
    """out[i, k]: the bits case k leaves in its destination register for input row i; one
    kernel, or one for each `per_kernel` cases (for cases whose single kernel LLVM takes
    much longer to compile than the parts: test_int_to_int)."""
    inputs = np.ascontiguousarray(inputs, dtype=np.uint64)
    if inputs.ndim == 1:
        inputs = inputs[:, None]
    n = inputs.shape[0]
    step = per_kernel or max(len(cases), 1)
    parts = []
    for first in range(0, len(cases), step):
        some = cases[first:first + step]
        out = np.zeros((n, len(some)), np.uint64)
        ptx = conversion_kernel(source_width, some, sources=inputs.shape[1], **kw)
        run_ptx(ptx, "k", (n + 255) // 256, 256, [inputs, out, np.uint32(n)])
        parts.append(out)
    return np.concatenate(parts, axis=1) if parts else np.zeros((n, 0), np.uint64)


def check(out: np.ndarray, k: int, expected, inputs, name: str) -> None:
    if isinstance(expected, list):  # Python integers, some past int64
        expected = np.array(expected, dtype=np.uint64)
    expected = np.asarray(expected).astype(np.uint64)
    bad = np.nonzero(out[:, k] != expected)[0]
    if bad.size:
        i = bad[0]
        raise AssertionError(f"{name}: {bad.size} wrong, e.g. input {int(inputs[i]):#x} gave "
                             f"{int(out[i, k]):#x}, expected {int(expected[i]):#x}")


# --- references -------------------------------------------------------------------------------

def decode(bits, fmt: str) -> np.ndarray:
    """The values (float64, exact) of bit patterns of a format; NaN for its NaNs."""
    ebits, mbits, kind = FORMATS[fmt]
    bits = np.asarray(bits, np.int64)
    sign = np.where((bits >> (ebits + mbits)) & 1, -1.0, 1.0)
    field = (bits >> mbits) & ((1 << ebits) - 1)
    frac = bits & ((1 << mbits) - 1)
    bias = (1 << (ebits - 1)) - 1
    mant = np.where(field > 0, frac + (1 << mbits), frac).astype(np.float64)
    with np.errstate(over="ignore"):  # the all-ones exponent, replaced below
        value = sign * np.ldexp(mant, np.maximum(field, 1) - bias - mbits)
    all_ones = field == (1 << ebits) - 1
    if kind == "ieee":
        value = np.where(all_ones & (frac == 0), sign * np.inf, value)
        value = np.where(all_ones & (frac != 0), np.nan, value)
    elif kind == "fn":
        value = np.where(all_ones & (frac == (1 << mbits) - 1), np.nan, value)
    return value


def round_float(x, fmt: str, mode: str, satfinite: bool = False) -> np.ndarray:
    """Bits of x (float64, exact) rounded into `fmt`; NaN -> -1 (callers put their NaN)."""
    ebits, mbits, kind = FORMATS[fmt]
    x = np.asarray(x, np.float64)
    finite = np.isfinite(x)
    sign = np.signbit(x)
    a = np.where(finite, np.abs(x), 1.0)
    bias = (1 << (ebits - 1)) - 1
    emin = 1 - bias
    _, e = np.frexp(a)
    scale = np.maximum(e - 1, emin)
    q = np.ldexp(a, -(scale - mbits))
    k = np.floor(q)
    rest = q - k
    up = {"rn": (rest > 0.5) | ((rest == 0.5) & (k % 2 == 1)), "rna": rest >= 0.5,
          "rz": np.zeros_like(sign), "rm": sign & (rest > 0), "rp": ~sign & (rest > 0)}[mode]
    bits = ((scale - emin).astype(np.int64) << mbits) + (k + up).astype(np.int64)
    ones = (1 << (ebits + mbits)) - 1
    largest = {"ieee": ones - (1 << mbits), "fn": ones - 1, "finite": ones}[kind]
    infinity = ((1 << ebits) - 1) << mbits
    if satfinite or kind == "finite":
        big = largest
    elif kind == "fn":
        big = ones
    else:
        toward_zero = {"rz": np.ones_like(sign), "rm": ~sign, "rp": sign}.get(
            mode, np.zeros_like(sign))
        big = np.where(toward_zero, largest, infinity)
    bits = np.where(bits > largest, big, bits)
    bits = np.where(np.abs(x) == 0, 0, bits)
    bits = np.where(np.isinf(x), largest if (satfinite or kind != "ieee") else infinity, bits)
    bits = bits | (sign.astype(np.int64) << (ebits + mbits))
    return np.where(np.isnan(x), -1, bits)


def round_int(v: int, fmt: str, mode: str) -> int:
    """An integer rounded into a float format (Python integers: exact for 64-bit values)."""
    ebits, mbits, _ = FORMATS[fmt]
    sign, a = v < 0, abs(v)
    if a == 0:
        return 0
    bias = (1 << (ebits - 1)) - 1
    top = a.bit_length() - 1
    drop = top - mbits
    if drop <= 0:
        bits = ((top + bias) << mbits) | ((a << -drop) & ((1 << mbits) - 1))
    else:
        k, rest, half = a >> drop, a & ((1 << drop) - 1), 1 << (drop - 1)
        up = {"rn": rest > half or (rest == half and k & 1), "rz": False,
              "rm": sign and rest > 0, "rp": not sign and rest > 0}[mode]
        bits = ((top + bias - 1) << mbits) + k + up
    largest = ((1 << ebits) - 2 << mbits) | ((1 << mbits) - 1)
    if bits > largest:
        toward_zero = mode == "rz" or (mode == "rm" and not sign) or (mode == "rp" and sign)
        bits = largest if toward_zero else ((1 << ebits) - 1) << mbits
    return bits | (int(sign) << (ebits + mbits))


def float_to_int(x, t: str, rnd: str, source: str, register_bits: int) -> np.ndarray:
    """cvt.rnd.t.source: round, clamp to t's range; NaN -> 0, or 1 << (width - 1) from .f64
    or into 64 bits; the result as the register holds it (sign-extended for signed t)."""
    width, signed = int(t[1:]), t[0] == "s"
    lo, hi = (-(1 << (width - 1)), (1 << (width - 1)) - 1) if signed else (0, (1 << width) - 1)
    x = np.asarray(x, np.float64)
    r = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}[rnd](x)
    nan_value = 1 << (width - 1) if source == "f64" or width == 64 else 0
    # Clamp in float64 where the limits are exact, then take the exact integer.
    inside = np.clip(np.nan_to_num(r), max(lo, -(2.0 ** 63)), min(hi, 2.0 ** 64 - 2048))
    negative = np.minimum(inside, 0).astype(np.int64).astype(np.uint64)
    result = np.where(inside < 0, negative, np.maximum(inside, 0).astype(np.uint64))
    result = np.where(r >= hi, np.uint64(hi), result)
    result = np.where(r <= lo, np.uint64(lo & ((1 << 64) - 1)), result)
    nan_bits = (-nan_value if signed and nan_value else nan_value) & ((1 << 64) - 1)
    result = np.where(np.isnan(r), np.uint64(nan_bits), result)
    return result & np.uint64((1 << register_bits) - 1)


def f32_bits(values) -> np.ndarray:
    return np.asarray(values, np.float32).view(np.uint32).astype(np.uint64)


def f64_bits(values) -> np.ndarray:
    return np.asarray(values, np.float64).view(np.uint64)


# --- 16-bit sources, every value --------------------------------------------------------------

def int_cases(source: str, types=INT_TYPES):
    return [(f"cvt.{r}.{t}.{source} {{d}}, {{a}};", REG[int(t[1:])]) for t in types for r in IRND]


def check_int_cases(out, start, values, inputs, source, types=INT_TYPES):
    k = start
    for t in types:
        for r in IRND:
            width = int(REG[int(t[1:])][1:])
            check(out, k, float_to_int(values, t, r, source, width), inputs, f"{r}.{t}.{source}")
            k += 1
    return k


def test_f16_source_every_value():
    inputs = np.arange(1 << 16, dtype=np.uint64)
    x = decode(inputs, "f16")
    cases = [("cvt.f32.f16 {d}, {a};", "b32"), ("cvt.f64.f16 {d}, {a};", "b64"),
             ("cvt.ftz.sat.f32.f16 {d}, {a};", "b32")]
    cases += [(f"cvt.{r}.bf16.f16 {{d}}, {{a}};", "b16") for r in FRND]
    cases += [(f"cvt.{r}.f16.f16 {{d}}, {{a}};", "b16") for r in IRND]
    cases += int_cases("f16")
    out = run_cases(16, inputs, cases, target="sm_90", version="7.8")
    nan = np.isnan(x)
    check(out, 0, np.where(nan, 0x7FFFFFFF, f32_bits(x)), inputs, "f32.f16")
    payload = (inputs & 0x3FF) << 42 | (inputs & 0x8000) << 48 | 0x7FF8000000000000
    check(out, 1, np.where(nan, payload, f64_bits(x)), inputs, "f64.f16")
    check(out, 2, f32_bits(np.where(nan, 0, np.clip(x, 0, 1)) + 0.0), inputs, "sat.f32.f16")
    for k, r in enumerate(FRND, 3):
        check(out, k, np.where(nan, 0x7FFF, round_float(x, "bf16", r)), inputs, f"{r}.bf16.f16")
    for k, r in enumerate(IRND, 7):
        integral = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}[r](x)
        check(out, k, np.where(nan, 0x7FFF, round_float(integral, "f16", "rn")), inputs,
              f"{r}.f16.f16")
    check_int_cases(out, 11, x, inputs, "f16")


def test_bf16_source_every_value():
    inputs = np.arange(1 << 16, dtype=np.uint64)
    x = decode(inputs, "bf16")
    types = ("s16", "u16", "s32", "u32", "s64", "u64")  # ptxas has no bf16 <-> 8-bit integer
    cases = [("cvt.f32.bf16 {d}, {a};", "b32"), ("cvt.f64.bf16 {d}, {a};", "b64"),
             ("cvt.ftz.f32.bf16 {d}, {a};", "b32")]
    cases += [(f"cvt.{r}.f16.bf16 {{d}}, {{a}};", "b16") for r in FRND]
    cases += [(f"cvt.{r}.bf16.bf16 {{d}}, {{a}};", "b16") for r in IRND]
    cases += int_cases("bf16", types)
    out = run_cases(16, inputs, cases, target="sm_90", version="7.8")
    nan = np.isnan(x)
    check(out, 0, inputs << 16, inputs, "f32.bf16")
    payload = (inputs & 0x7F) << 45 | (inputs & 0x8000) << 48 | 0x7FF8000000000000
    check(out, 1, np.where(nan, payload, f64_bits(x)), inputs, "f64.bf16")
    subnormal = (inputs & 0x7F80) == 0
    check(out, 2, np.where(nan, 0x7FFFFFFF, np.where(subnormal, (inputs & 0x8000) << 16,
                                                     inputs << 16)), inputs, "ftz.f32.bf16")
    for k, r in enumerate(FRND, 3):
        check(out, k, np.where(nan, 0x7FFF, round_float(x, "f16", r)), inputs, f"{r}.f16.bf16")
    for k, r in enumerate(IRND, 7):
        integral = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}[r](x)
        check(out, k, np.where(nan, 0x7FFF, round_float(integral, "bf16", "rn")), inputs,
              f"{r}.bf16.bf16")
    check_int_cases(out, 11, x, inputs, "bf16", types)


# --- f32 and f64 sources: edges and random bit patterns -----------------------------------------

def edge_values(fmt: str) -> np.ndarray:
    """Bit patterns worth testing for a format, plus random ones."""
    width = 32 if fmt == "f32" else 64
    dtype, itype = (np.float32, np.uint32) if width == 32 else (np.float64, np.uint64)
    info = np.finfo(dtype)
    values = [0.0, -0.0, 1.0, -1.0, 0.5, 1.5, 2.5, -2.5, 3.5, 0.49999997, 127.5, 128.5, 255.5,
              256.0, -128.5, -129.0, 32767.5, 32768.0, -32768.5, 65535.5, 65536.0, 65504.0,
              65519.99, 65520.0, 2.0 ** 31, -(2.0 ** 31), 2.0 ** 31 - 128, 2.0 ** 32,
              2.0 ** 63, -(2.0 ** 63), 2.0 ** 64, 1e30, -1e30, 6e-8, 3e-8, 5.9604645e-08,
              2.0 ** -24 * 1.5, 2.0 ** -25, 2.0 ** -14, 2.0 ** -126, 1e-40, -1e-40,
              float(info.max), -float(info.max), float(info.tiny), np.inf, -np.inf]
    bits = [int(v) for v in np.array(values, dtype).view(itype)]
    bits += [0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FC01234, 0x7FA00000, 0x7F802000,
             0xFFA01234, 1, 0x80000001, 0x007FFFFF] \
        if width == 32 else [0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001,
                             0x7FF8123400000000, 0xFFF0000100000000, 0x7FF4000000000000, 1,
                             0x8000000000000001, 0x000FFFFFFFFFFFFF]
    random_bits = RNG.integers(0, 1 << width, 6000, dtype=np.uint64)
    # Values of moderate size, where the integer conversions do not just saturate.
    moderate = RNG.uniform(-70000, 70000, 3000).astype(dtype)
    halves = (RNG.integers(-5000, 5000, 1000) + 0.5).astype(dtype)
    return np.concatenate([np.array(bits, np.uint64), random_bits,
                           moderate.view(itype).astype(np.uint64),
                           halves.view(itype).astype(np.uint64)])


def test_f32_source():
    inputs = edge_values("f32")
    x = decode(inputs, "f32")
    nan = np.isnan(x)
    cases = [(f"cvt.{r}.f16.f32 {{d}}, {{a}};", "b16") for r in FRND]
    cases += [(f"cvt.{r}.bf16.f32 {{d}}, {{a}};", "b16") for r in FRND]
    cases += [("cvt.f64.f32 {d}, {a};", "b64"), ("cvt.ftz.f64.f32 {d}, {a};", "b64"),
              ("cvt.ftz.f32.f32 {d}, {a};", "b32"), ("cvt.sat.f32.f32 {d}, {a};", "b32"),
              ("cvt.rn.ftz.f16.f32 {d}, {a};", "b16"), ("cvt.rn.sat.f16.f32 {d}, {a};", "b16"),
              ("cvt.rn.relu.f16.f32 {d}, {a};", "b16"), ("cvt.rz.relu.bf16.f32 {d}, {a};", "b16"),
              ("cvt.rn.satfinite.f16.f32 {d}, {a};", "b16"),
              ("cvt.rz.satfinite.bf16.f32 {d}, {a};", "b16"),
              ("cvt.rna.tf32.f32 {d}, {a};", "b32"), ("cvt.rn.tf32.f32 {d}, {a};", "b32"),
              ("cvt.rz.tf32.f32 {d}, {a};", "b32"), ("cvt.rna.satfinite.tf32.f32 {d}, {a};", "b32"),
              ("cvt.rn.relu.tf32.f32 {d}, {a};", "b32"),
              ("cvt.rpi.ftz.s32.f32 {d}, {a};", "b32")]
    cases += [(f"cvt.{r}.f32.f32 {{d}}, {{a}};", "b32") for r in IRND]
    cases += int_cases("f32")
    out = run_cases(32, inputs, cases, target="sm_90", version="8.6")
    for k, r in enumerate(FRND):
        check(out, k, np.where(nan, 0x7FFF, round_float(x, "f16", r)), inputs, f"{r}.f16.f32")
        check(out, 4 + k, np.where(nan, 0x7FFF, round_float(x, "bf16", r)), inputs,
              f"{r}.bf16.f32")
    quiet = ((inputs & 0x80000000) << 32) | ((inputs & 0x7FFFFF) << 29) | 0x7FF8000000000000
    check(out, 8, np.where(nan, quiet, f64_bits(x)), inputs, "f64.f32")
    subnormal = np.abs(x) < 2.0 ** -126
    flushed = np.where(subnormal, np.copysign(0.0, x), x)
    # .ftz on an f32 source makes a NaN canonical (0x7FFFFFFF) before it widens.
    check(out, 9, np.where(nan, 0x7FFFFFFFE0000000, f64_bits(flushed)), inputs, "ftz.f64.f32")
    check(out, 10, np.where(nan, 0x7FFFFFFF, f32_bits(flushed)), inputs, "ftz.f32.f32")
    check(out, 11, f32_bits(np.where(nan, 0, np.clip(x, 0, 1)) + 0.0), inputs, "sat.f32.f32")
    check(out, 12, np.where(nan, 0x7FFF, round_float(flushed, "f16", "rn")), inputs,
          "rn.ftz.f16.f32")
    sat = np.where(nan, 0, np.clip(x, 0, 1)) + 0.0
    check(out, 13, round_float(sat, "f16", "rn"), inputs, "rn.sat.f16.f32")
    relu = np.where(np.signbit(x), 0.0, x)
    check(out, 14, np.where(nan, 0x7FFF, round_float(relu, "f16", "rn")), inputs, "relu f16")
    check(out, 15, np.where(nan, 0x7FFF, round_float(relu, "bf16", "rz")), inputs, "relu bf16")
    check(out, 16, np.where(nan, 0x7FFF, round_float(x, "f16", "rn", True)), inputs,
          "satfinite f16")
    check(out, 17, np.where(nan, 0x7FFF, round_float(x, "bf16", "rz", True)), inputs,
          "satfinite bf16")
    tf = {m: tf32_reference(inputs, m) for m in ("rna", "rn", "rz")}
    check(out, 18, tf["rna"], inputs, "rna.tf32")
    check(out, 19, tf["rn"], inputs, "rn.tf32")
    check(out, 20, tf["rz"], inputs, "rz.tf32")
    big = (tf["rna"] & 0x7FFFFFFF) >= 0x7F800000
    satfinite = np.where(nan, tf["rna"] - 0x2000, (tf["rna"] & 0x80000000) | 0x7F7FE000)
    check(out, 21, np.where(big, satfinite, tf["rna"]), inputs, "rna.satfinite.tf32")
    check(out, 22, np.where(np.signbit(x) & ~nan, 0, tf["rn"]), inputs, "rn.relu.tf32")
    check(out, 23, float_to_int(np.where(subnormal, 0.0, x), "s32", "rpi", "f32", 32), inputs,
          "rpi.ftz.s32.f32")
    for k, r in enumerate(IRND, 24):
        integral = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}[r](x)
        check(out, k, np.where(nan, 0x7FFFFFFF, f32_bits(integral)), inputs, f"{r}.f32.f32")
    check_int_cases(out, 28, x, inputs, "f32")


def test_f32_saturation_every_form():
    # cvt.sat.f32.f32 (nvcc's expf clamps with it) is two ordered compares; with .ftz, positive
    # subnormals give +0 too; NaN and -0 give +0; rounding to an integral value first (.rni)
    # takes the bit-pattern path: all as the manual's clamp to [0, 1]
    inputs = edge_values("f32")
    x = decode(inputs, "f32")
    nan = np.isnan(x)
    cases = [("cvt.sat.f32.f32 {d}, {a};", "b32"), ("cvt.ftz.sat.f32.f32 {d}, {a};", "b32"),
             ("cvt.rni.sat.f32.f32 {d}, {a};", "b32"), ("cvt.rmi.ftz.sat.f32.f32 {d}, {a};", "b32")]
    out = run_cases(32, inputs, cases, target="sm_90", version="8.6")
    flushed = np.where(np.abs(x) < 2.0 ** -126, 0.0, x)

    def saturated(v):
        return f32_bits(np.where(nan, 0.0, np.clip(v, 0.0, 1.0)) + 0.0)
    check(out, 0, saturated(x), inputs, "sat.f32.f32")
    check(out, 1, saturated(flushed), inputs, "ftz.sat.f32.f32")
    check(out, 2, saturated(np.rint(x)), inputs, "rni.sat.f32.f32")
    check(out, 3, saturated(np.floor(flushed)), inputs, "rmi.ftz.sat.f32.f32")
    assert (out[:, 0] != out[:, 1]).any()       # (the operands hold positive subnormals)


def tf32_reference(inputs: np.ndarray, mode: str) -> np.ndarray:
    """cvt.mode.tf32.f32: an f32 whose low 13 fraction bits are zero. .rna works on the bit
    pattern as the H100 does (a NaN keeps its truncated bits); .rn/.rz give 0x7FFFE000."""
    x = inputs.astype(np.int64)
    nan = ((x & 0x7F800000) == 0x7F800000) & ((x & 0x7FFFFF) != 0)
    if mode == "rna":
        return np.where(nan, x & 0xFFFFE000, (x + 0x1000) & 0xFFFFE000).astype(np.uint64)
    bits = round_float(decode(inputs, "f32"), "tf32", mode)
    return np.where(nan, 0x7FFFE000, (bits & 0x7FFFF) << 13).astype(np.uint64)


def test_f64_source():
    inputs = edge_values("f64")
    x = decode(inputs, "f64")
    nan = np.isnan(x)
    cases = [(f"cvt.{r}.f32.f64 {{d}}, {{a}};", "b32") for r in FRND]
    cases += [(f"cvt.{r}.f16.f64 {{d}}, {{a}};", "b16") for r in FRND]
    cases += [(f"cvt.{r}.bf16.f64 {{d}}, {{a}};", "b16") for r in FRND]
    cases += [("cvt.rn.ftz.f32.f64 {d}, {a};", "b32"), ("cvt.rp.ftz.f32.f64 {d}, {a};", "b32"),
              ("cvt.sat.f64.f64 {d}, {a};", "b64"), ("cvt.rn.sat.f32.f64 {d}, {a};", "b32")]
    cases += [(f"cvt.{r}.f64.f64 {{d}}, {{a}};", "b64") for r in IRND]
    cases += int_cases("f64")
    out = run_cases(64, inputs, cases, target="sm_90", version="7.8")
    def quiet(fmt):  # NaN from f64: sign kept, made quiet, the payload's leading bits kept
        ebits, mbits, _ = FORMATS[fmt]
        fraction = (inputs >> np.uint64(52 - mbits)) & np.uint64((1 << mbits) - 1)
        top = ((1 << (ebits + 1)) - 1) << (mbits - 1)
        return (inputs >> np.uint64(63)) << np.uint64(ebits + mbits) | fraction | top

    for k, r in enumerate(FRND):
        check(out, k, np.where(nan, quiet("f32"), round_float(x, "f32", r)), inputs,
              f"{r}.f32.f64")
        check(out, 4 + k, np.where(nan, quiet("f16"), round_float(x, "f16", r)), inputs,
              f"{r}.f16.f64")
        check(out, 8 + k, np.where(nan, quiet("bf16"), round_float(x, "bf16", r)), inputs,
              f"{r}.bf16.f64")
    for k, r in ((12, "rn"), (13, "rp")):
        bits = round_float(x, "f32", r)
        subnormal = (bits & 0x7F800000) == 0
        check(out, k, np.where(nan, quiet("f32"), np.where(subnormal, bits & 0x80000000,
                                                           bits)), inputs, f"{r}.ftz.f32.f64")
    sat = np.where(nan, 0, np.clip(x, 0, 1)) + 0.0
    check(out, 14, f64_bits(sat), inputs, "sat.f64.f64")
    check(out, 15, round_float(sat, "f32", "rn"), inputs, "rn.sat.f32.f64")
    for k, r in enumerate(IRND, 16):
        integral = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}[r](x)
        check(out, k, np.where(nan, inputs | np.uint64(1 << 51), f64_bits(integral)), inputs,
              f"{r}.f64.f64")
    check_int_cases(out, 20, x, inputs, "f64")


def tiny_values(source: str, fmt: str) -> np.ndarray:
    """Bit patterns of `source` (f32 or f64) around and far below the smallest subnormal of
    `fmt`, where rounding drops from none to all of the source's mantissa bits: the guard
    bit, the sticky bits and ties in every position, both signs."""
    dtype, itype = (np.float32, np.uint32) if source == "f32" else (np.float64, np.uint64)
    ebits, mbits, _ = FORMATS[fmt]
    smallest = 2.0 - (1 << (ebits - 1)) - mbits          # log2 of fmt's smallest subnormal
    info = np.finfo(dtype)
    ulp = float(info.eps)
    shapes = [1.0, 1.0 + ulp, 1.5, 1.5 - ulp, 1.5 + ulp, 2.0 - ulp, 1.25, 1.75, 1.0 + 0.5 ** 20]
    lowest = max(int(smallest) - 70, int(np.log2(float(info.smallest_subnormal))))
    values = [m * 2.0 ** k for k in range(lowest, int(smallest) + 3) for m in shapes]
    values += [float(info.smallest_subnormal), float(info.tiny) * (1 - ulp)]
    values = np.array(values + [-v for v in values], dtype)
    random = RNG.uniform(1.0, 2.0, 2000) * 2.0 ** RNG.integers(lowest, int(smallest) + 3, 2000)
    return np.concatenate([values, random.astype(dtype)]).view(itype).astype(np.uint64)


@pytest.mark.parametrize("source", ["f32", "f64"])
def test_directed_rounding_of_tiny_values(source):
    """Every rounding mode where the result is a subnormal or zero of the destination."""
    dests = ["f16", "bf16"] + (["f32"] if source == "f64" else [])
    inputs = np.concatenate([tiny_values(source, d) for d in dests])
    x = decode(inputs, source)
    cases = [(f"cvt.{r}.{d}.{source} {{d}}, {{a}};", REG[16 if d != "f32" else 32])
             for d in dests for r in FRND]
    out = run_cases(int(source[1:]), inputs, cases, target="sm_90", version="7.8")
    for k, (d, r) in enumerate((d, r) for d in dests for r in FRND):
        check(out, k, round_float(x, d, r), inputs, f"{r}.{d}.{source}")


# --- integer sources ----------------------------------------------------------------------------

def int_inputs() -> np.ndarray:
    edges = []
    for w in (8, 16, 24, 25, 32, 53, 54, 63, 64):
        for v in (1 << w, (1 << w) - 1, (1 << w) + 1, 1 << (w - 1), (1 << (w - 1)) - 1,
                  (1 << (w - 1)) + 1, (1 << w) - 3, (1 << w) + (1 << max(w - 24, 0)) + 1):
            edges += [v, -v]
    edges += [0, 1, 2, 3, 65504, 65519, 65520, 65535, 2 ** 60 + 2 ** 52 + 1]
    values = np.array([e & ((1 << 64) - 1) for e in edges], np.uint64)
    random = RNG.integers(0, 1 << 64, 600, dtype=np.uint64)
    shifted = random >> RNG.integers(0, 64, 600).astype(np.uint64)
    return np.concatenate([values, random, shifted])


def as_int(bits: int, t: str) -> int:
    width = int(t[1:])
    v = bits & ((1 << width) - 1)
    return v - (1 << width) if t[0] == "s" and v >> (width - 1) else v


def test_int_to_float():
    inputs = int_inputs()
    dests = [("f32", FRND), ("f64", FRND), ("f16", FRND), ("bf16", FRND)]
    cases, expect = [], []
    for t in INT_TYPES:
        for d, modes in dests:
            for r in modes:
                if d == "bf16" and t in ("s8", "u8"):
                    continue
                # ptxas wants the source register's own width where the result is bf16.
                width = int(t[1:])
                source = {64: "{a}", 32: "%r0"}.get(width, "%h0")
                narrow = "" if width == 64 else \
                    f"cvt.u{max(width, 16)}.u64 {source}, {{a}};\n"
                dest = REG[FORMATS[d][0] + FORMATS[d][1] + 1]
                cases.append((f"{narrow}cvt.{r}.{d}.{t} {{d}}, {source};", dest))
                expect.append((t, d, r))
    cases.append(("cvt.rn.sat.f32.s32 {d}, {a};", "b32"))
    out = run_cases(64, inputs, cases, target="sm_90", version="7.8")
    for k, (t, d, r) in enumerate(expect):
        ref = [round_int(as_int(int(v), t), d, r) for v in inputs]
        check(out, k, ref, inputs, f"{r}.{d}.{t}")
    sat = [0x3F800000 if as_int(int(v), "s32") > 0 else 0 for v in inputs]
    check(out, len(expect), sat, inputs, "rn.sat.f32.s32")


def test_int_to_int():
    inputs = int_inputs()
    cases, expect = [], []
    for d in INT_TYPES:
        for a in INT_TYPES:
            cases.append((f"cvt.{d}.{a} {{d}}, {{a}};", REG[int(d[1:])]))
            expect.append((d, a, False))
            da, aa = int(d[1:]), int(a[1:])
            unsigned_src, signed_src = a[0] == "u", a[0] == "s"
            can_saturate = (da < aa) or (d[0] == "u" and signed_src) or \
                (d[0] == "s" and unsigned_src and da <= aa)
            if can_saturate:
                cases.append((f"cvt.sat.{d}.{a} {{d}}, {{a}};", REG[da]))
                expect.append((d, a, True))
    # 16 cases a kernel: LLVM took 28 s of CPU for the 100 cases in one kernel, 12 s in seven
    out = run_cases(64, inputs, cases, per_kernel=16)
    for k, (d, a, sat) in enumerate(expect):
        width, register = int(d[1:]), int(REG[int(d[1:])][1:])
        ref = []
        for v in inputs:
            x = as_int(int(v), a)
            if sat:
                lo, hi = ((-(1 << (width - 1)), (1 << (width - 1)) - 1) if d[0] == "s"
                          else (0, (1 << width) - 1))
                x = min(max(x, lo), hi)
            ref.append(as_int(x, d) & ((1 << register) - 1) if d[0] == "s"
                       else x & ((1 << width) - 1))
        check(out, k, ref, inputs, f"cvt{'.sat' if sat else ''}.{d}.{a}")


# --- packing ------------------------------------------------------------------------------------

def test_pack():
    values = np.concatenate([RNG.integers(-300, 300, 600), RNG.integers(-(2 ** 31), 2 ** 31, 600),
                             np.array([127, 128, -128, -129, 7, 8, -8, -9, 1, 2, -2, -3])])
    n = values.size - values.size % 3
    rows = (values[:n].reshape(-1, 3) & 0xFFFFFFFF).astype(np.uint64)
    kinds = ("u16", "s16", "u8", "s8", "u4", "s4", "u2", "s2")
    cases = [(f"cvt.pack.sat.{t}.s32 {{d}}, {{a}}, {{b}};" if t[1:] == "16" else
              f"cvt.pack.sat.{t}.s32.b32 {{d}}, {{a}}, {{b}}, {{c}};", "b32") for t in kinds]
    out = run_cases(32, rows, cases, target="sm_90", version="8.1")
    for k, t in enumerate(kinds):
        size = int(t[1:])
        lo, hi = ((-(1 << (size - 1)), (1 << (size - 1)) - 1) if t[0] == "s"
                  else (0, (1 << size) - 1))
        ref = []
        for a, b, c in rows:
            ta = min(max(as_int(int(a), "s32"), lo), hi) & ((1 << size) - 1)
            tb = min(max(as_int(int(b), "s32"), lo), hi) & ((1 << size) - 1)
            d = (ta << size) | tb
            if size < 16:
                d |= int(c) << (2 * size)
            ref.append(d & 0xFFFFFFFF)
        check(out, k, ref, rows[:, 0], f"cvt.pack.sat.{t}")


def test_half_pairs():
    """cvt.{rn,rz}{.relu}{.satfinite}.{f16x2,bf16x2}.f32 d, a, b: a in the upper half."""
    bits = edge_values("f32")[:4000]
    rows = np.stack([bits, bits[::-1]], axis=1)
    cases = [(f"cvt.{r}{m}.{t}.f32 {{d}}, {{a}}, {{b}};", "b32")
             for t in ("f16x2", "bf16x2") for r in ("rn", "rz") for m in ("", ".relu.satfinite")]
    out = run_cases(32, rows, cases, target="sm_90", version="8.1")
    k = 0
    for t in ("f16", "bf16"):
        for r in ("rn", "rz"):
            for relu in (False, True):
                halves = []
                for column in (0, 1):
                    x = decode(rows[:, column], "f32")
                    if relu:
                        x = np.where(np.signbit(x) & ~np.isnan(x), 0.0, x)
                    halves.append(np.where(np.isnan(x), 0x7FFF, round_float(x, t, r, relu)))
                check(out, k, halves[0] << 16 | halves[1], rows[:, 0], cases[k][0])
                k += 1


def test_fp8():
    """e4m3x2/e5m2x2 from f32 pairs and f16x2 (every f16 value), and back to f16x2 (every
    pair of 8-bit values); NaN gives 0x7F, and 0x7FFF going back."""
    f16 = np.arange(1 << 16, dtype=np.uint64)
    f32 = edge_values("f32")[:8000]
    rows = np.zeros((1 << 16, 3), np.uint64)
    rows[:, 0] = f16 << 16 | f16[::-1]
    rows[:, 1] = np.resize(f32, 1 << 16)
    rows[:, 2] = np.resize(f32[::-1], 1 << 16)
    cases = []
    for t in ("e4m3x2", "e5m2x2"):
        cases += [(f"cvt.u32.u64 %r0, {{a}};\ncvt.rn.satfinite{m}.{t}.f16x2 {{d}}, %r0;", "b16")
                  for m in ("", ".relu")]
        cases += [("cvt.u32.u64 %r2, {b};\ncvt.u32.u64 %r3, {c};\n"
                   f"cvt.rn.satfinite{m}.{t}.f32 {{d}}, %r2, %r3;", "b16") for m in ("", ".relu")]
        cases += [(f"cvt.rn{m}.f16x2.{t} {{d}}, %h0;", "b32") for m in ("", ".relu")]
    body_cases = [(("cvt.u16.u32 %h0, {a};\n" + text) if "%h0" in text else text, dest)
                  for text, dest in cases]
    ptx = conversion_kernel(64, body_cases, target="sm_90", version="7.8", sources=3)
    n = rows.shape[0]
    out = np.zeros((n, len(cases)), np.uint64)
    run_ptx(ptx, "k", n // 256, 256, [rows, out, np.uint32(n)])
    k = 0
    for fmt in ("e4m3", "e5m2"):
        nan_bits = 0x7F
        for relu in (False, True):
            hi, lo = decode(rows[:, 0] >> 16, "f16"), decode(rows[:, 0] & 0xFFFF, "f16")
            check(out, k, fp8_pair(hi, lo, fmt, relu, nan_bits), rows[:, 0], cases[k][0])
            k += 1
        for relu in (False, True):
            a, b = decode(rows[:, 1], "f32"), decode(rows[:, 2], "f32")
            check(out, k, fp8_pair(a, b, fmt, relu, nan_bits), rows[:, 1], cases[k][0])
            k += 1
        for relu in (False, True):
            source = rows[:, 0] & 0xFFFF
            halves = []
            for part in (source >> 8, source & 0xFF):
                x = decode(part, fmt)
                if relu:
                    x = np.where(np.signbit(x) & ~np.isnan(x), 0.0, x)
                halves.append(np.where(np.isnan(x), 0x7FFF, round_float(x, "f16", "rn")))
            check(out, k, halves[0] << 16 | halves[1], source, cases[k][0])
            k += 1


def fp8_pair(a, b, fmt, relu, nan_bits):
    parts = []
    for x in (a, b):
        if relu:
            x = np.where(np.signbit(x) & ~np.isnan(x), 0.0, x)
        parts.append(np.where(np.isnan(x), nan_bits, round_float(x, fmt, "rn", True)))
    return parts[0] << 8 | parts[1]


def test_sm100_formats():
    """e2m3x2/e3m2x2 (6 bits in each byte) and e2m1x2 from f32 pairs (no NaN in these formats:
    NaN becomes +MAX_NORM), and tf32 with .rn.satfinite: sm_100a and later, not the H100."""
    f32 = edge_values("f32")[:6000]
    rows = np.stack([f32, f32[::-1]], axis=1)
    cases = [(f"cvt.rn.satfinite{m}.{t}.f32 {{d}}, {{a}}, {{b}};", "b16")
             for t in ("e2m3x2", "e3m2x2") for m in ("", ".relu")]
    cases += [("cvt.rn.satfinite.e2m1x2.f32 %c1, {a}, {b};\ncvt.u16.u8 {d}, %c1;", "b16"),
              ("cvt.rn.f16x2.e2m1x2 {d}, %c1;", "b32"),
              ("cvt.rn.satfinite.e3m2x2.f32 %h1, {a}, {b};\ncvt.rn.f16x2.e3m2x2 {d}, %h1;",
               "b32"), ("cvt.rn.relu.satfinite.tf32.f32 {d}, {a};", "b32")]
    ptx = conversion_kernel(32, cases, target="sm_100a", version="8.6", sources=2)
    ptx = ptx.replace(".reg .b16 %h<4>;", ".reg .b16 %h<4>; .reg .b8 %c<2>;")
    n = rows.shape[0]
    out = np.zeros((n, len(cases)), np.uint64)
    run_ptx(ptx, "k", (n + 255) // 256, 256, [rows, out, np.uint32(n)])
    a, b = decode(rows[:, 0], "f32"), decode(rows[:, 1], "f32")
    k = 0
    for fmt in ("e2m3", "e3m2"):
        largest = (1 << 5) - 1
        for relu in (False, True):
            parts = []
            for x in (a, b):
                if relu:
                    x = np.where(np.signbit(x), 0.0, x)
                parts.append(np.where(np.isnan(x), largest, round_float(x, fmt, "rn", True)))
            check(out, k, parts[0] << 8 | parts[1], rows[:, 0], cases[k][0])
            k += 1
    parts = [np.where(np.isnan(x), 7, round_float(x, "e2m1", "rn", True)) for x in (a, b)]
    e2m1 = parts[0] << 4 | parts[1]
    check(out, k, e2m1, rows[:, 0], "e2m1x2")
    halves = [round_float(decode(e2m1 >> 4, "e2m1"), "f16", "rn"),
              round_float(decode(e2m1 & 0xF, "e2m1"), "f16", "rn")]
    check(out, k + 1, halves[0] << 16 | halves[1], rows[:, 0], "f16x2.e2m1x2")
    e3m2 = out[:, 2]
    halves = [round_float(decode(e3m2 >> 8, "e3m2"), "f16", "rn"),
              round_float(decode(e3m2 & 0xFF, "e3m2"), "f16", "rn")]
    check(out, k + 2, halves[0] << 16 | halves[1], rows[:, 0], "f16x2.e3m2x2")
    rn = tf32_reference(rows[:, 0], "rn")
    saturated = np.where(np.isinf(decode(rn, "f32")), (rn & 0x80000000) | 0x7F7FE000, rn)
    check(out, k + 3, np.where(np.signbit(a) & ~np.isnan(a), 0, saturated), rows[:, 0],
          "rn.relu.satfinite.tf32")


# --- what PTX refuses, and what is not implemented ------------------------------------------------

@pytest.mark.parametrize("text", ["cvt.s32.f32 %r1, %r2;", "cvt.f32.s32 %r1, %r2;",
                                  "cvt.f32.f64 %r1, %rd1;", "cvt.rn.s32.f32 %r1, %r2;",
                                  "cvt.rn.f64.f32 %rd1, %r2;", "cvt.rzi.s32.s16 %r1, %r2;"])
def test_invalid_rounding_is_refused(text):
    ptx = kernel_ptx(f".reg .b32 %r<3>; .reg .b64 %rd<2>;\n{text}\nret;", "")
    with pytest.raises(PtxSemanticError, match="rounding modifier"):
        run_ptx(ptx, "k", 1, 1, [])


@pytest.mark.parametrize("text", ["cvt.rz.satfinite.ue8m0x2.f32 %h1, %r1, %r2;",
                                  "cvt.rn.satfinite.s2f6x2.f32 %h1, %r1, %r2;"])
def test_exotic_formats_are_unsupported(text):
    ptx = kernel_ptx(f".reg .b32 %r<3>; .reg .b16 %h<2>;\n{text}\nret;", "", target="sm_100a",
                     version="9.0")
    with pytest.raises(UnsupportedFeatureError, match="not implemented"):
        run_ptx(ptx, "k", 1, 1, [])


def test_stochastic_rounding_is_unsupported():
    ptx = kernel_ptx(".reg .b32 %r<4>;\ncvt.rs.f16x2.f32 %r1, %r2, %r3, %r0;\nret;", "",
                     target="sm_100a", version="8.7")
    with pytest.raises(UnsupportedFeatureError, match="stochastic"):
        run_ptx(ptx, "k", 1, 1, [])
