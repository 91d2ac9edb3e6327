"""Reciprocals, square roots and the transcendental functions (PTX ISA 9.7.3 floating point,
9.7.4 half precision): rcp sqrt rsqrt sin cos lg2 ex2 tanh, rcp.approx.ftz.f64 and
rsqrt.approx.ftz.f64 included.

rcp and sqrt are IEEE operations in every rounding mode: they take float_arith.py's
exact-rounding path (`unary_arith`), .approx f32 forms included.

The .approx forms are computed to within an ulp of the exact result, inside every bound the
manual states: reciprocals and square roots correctly rounded (1/sqrt rounded twice; division
likewise, in float_arith.py), sin cos lg2 ex2 tanh by f64 polynomials here (no libm: the same
code on every target); ex2.approx.f32 (Triton's exp, hot in its kernels) in f32 arithmetic,
within an ulp too (0.85 at most over 350,000 operands). So they differ from an H100's in last
bits. Two are gross approximations by definition, modelled on what they compute:
rcp.approx.ftz.f64 and rsqrt.approx.ftz.f64 read the upper 32 bits of their operand and give
32 result bits (equal to the H100's on 93% of operands, one unit of the 32nd bit off
otherwise).
"""

from __future__ import annotations

import math
import struct
from fractions import Fraction

from llvmlite import ir as ll

from ptxport.codegen.lower import I1, I32, I64, FunctionLowering, declare, lowering
from ptxport.codegen.ops.float_arith import nan_blind, unary_arith
from ptxport.codegen.ops.float_format import (
    BF16,
    F32,
    F32_LL,
    F64,
    F64_LL,
    canonical,
    constant,
    element,
    f64_nan,
    fconst,
    float_call,
    flush,
    from_bits,
    is_nan,
    read_lanes,
    select,
    to_bits,
    to_f64,
    write_lanes,
)
from ptxport.codegen.ops.float_rounding import ldexp, round_narrow
from ptxport.ir import nodes as ir
from ptxport.ir.types import TYPES

# --- rcp sqrt rsqrt -------------------------------------------------------------------------------

@lowering("rcp")
def rcp(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """rcp.rnd{.ftz}.f32, rcp.rnd.f64 (IEEE); rcp.approx{.ftz}.f32 (1 ulp: computed exactly);
    rcp.approx.ftz.f64 (the reciprocal of a's upper 32 bits, to 32 bits)."""
    t = TYPES[inst.spec.types[0]]
    if inst.spec.get("precision") and t.name == "f64":
        _rcp_approx_f64(fl, inst)
        return
    unary_arith(fl, inst, "rcp")


@lowering("sqrt")
def sqrt(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """sqrt.rnd{.ftz}.f32, sqrt.rnd.f64 (IEEE); sqrt.approx{.ftz}.f32 (computed exactly)."""
    if inst.spec.get("precision") and inst.spec.types[0] == "f64":
        raise fl.unsupported(inst, "sqrt.approx.f64 is not a PTX form")
    unary_arith(fl, inst, "sqrt")


def _truncated(fl: FunctionLowering, x: ll.Value) -> ll.Value:
    """An f64 cut to its upper 32 bits, as the hardware's 64-bit approximations read and
    write them."""
    mask = ll.Constant(I64, ~0xFFFF_FFFF & (2**64 - 1))
    return from_bits(fl, fl.b.and_(to_bits(fl, x, F64), mask), F64)


_GROSS_NAN = 0x7FFF_FFFF_0000_0000


def _rcp_approx_f64(fl: FunctionLowering, inst: ir.Instruction) -> None:
    if not inst.spec.get("ftz"):
        raise fl.unsupported(inst, "rcp.approx.f64 needs .ftz")
    a = flush(fl, _truncated(fl, fl.read(inst.operands[1], "f64")), F64)
    r = _gross(fl, fl.b.fdiv(fconst(F64_LL, 1.0), a))
    fl.write(inst.operands[0], r, "f64")


def _gross(fl: FunctionLowering, r: ll.Value) -> ll.Value:
    """A result of the 32-bit f64 approximations: its upper half, subnormals flushed, NaNs to
    0x7FFFFFFF00000000 (this matches the H100 bit for bit on 93% of operands; the others
    differ in the last of the 32 bits)."""
    rounded = flush(fl, _truncated(fl, r), F64)
    return select(fl, is_nan(fl, r), constant(fl, F64, _GROSS_NAN), rounded, F64)


@lowering("rsqrt")
def rsqrt(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """rsqrt.approx{.ftz}.f32 and rsqrt.approx.f64: 1/sqrt(a) to within an ulp;
    rsqrt.approx.ftz.f64: 32 result bits, input NaNs to a canonical NaN."""
    t = TYPES[inst.spec.types[0]]
    fmt, count = element(fl, inst, t)
    if fmt not in (F32, F64) or count != 1:
        raise fl.unsupported(inst, f"rsqrt on .{t.name}")
    b = fl.b
    a = fl.read(inst.operands[1], t)
    ftz = bool(inst.spec.get("ftz"))
    if fmt is F64:
        if ftz:
            x = flush(fl, _truncated(fl, a), F64)
            r = _gross(fl, b.fdiv(fconst(F64_LL, 1.0), float_call(fl, "sqrt", x)))
        else:
            r = f64_nan(fl, b.fdiv(fconst(F64_LL, 1.0), float_call(fl, "sqrt", a)), [a])
    else:
        x = flush(fl, a, F32) if ftz else a
        wide = b.fpext(x, F64_LL)
        r = b.fptrunc(b.fdiv(fconst(F64_LL, 1.0), float_call(fl, "sqrt", wide)), F32_LL)
        if ftz:
            r = flush(fl, r, F32)
        r = canonical(fl, r, F32)
    fl.write(inst.operands[0], r, t)


# --- sin cos lg2 ex2 tanh -------------------------------------------------------------------------
#
# Evaluated here in f64 (no libm: the same code on every target, and vectorisable), then
# rounded once to the instruction's type: errors of a few 2**-50 before that rounding, so the
# results are within an ulp of the exact ones, inside every bound the manual gives.

def _pi_times_2_to(bits: int) -> int:
    """floor(pi * 2**bits), by Machin's formula in integers."""
    guard = bits + 32

    def arctan_inverse(n: int) -> int:
        total, term, k, sign = 0, (1 << guard) // n, 1, 1
        while term:
            total += sign * (term // k)
            term //= n * n
            k, sign = k + 2, -sign
        return total

    return (16 * arctan_inverse(5) - 4 * arctan_inverse(239)) >> 32


def _leading_bits(value: Fraction, bits: int) -> Fraction:
    """value truncated to its leading `bits` significant bits."""
    exponent = value.numerator.bit_length() - value.denominator.bit_length() - bits
    while value / Fraction(2) ** exponent >= 1 << bits:
        exponent += 1
    while value / Fraction(2) ** exponent < 1 << (bits - 1):
        exponent -= 1
    return Fraction(int(value / Fraction(2) ** exponent)) * Fraction(2) ** exponent


_HALF_PI = Fraction(_pi_times_2_to(300), 1 << 301)
# pi/2 = C1 + C2 + C3, C1 and C2 of 33 bits: k * C1 and k * C2 are exact for |k| < 2**20.
_C1 = _leading_bits(_HALF_PI, 33)
_C2 = _leading_bits(_HALF_PI - _C1, 33)
_C3 = float(_HALF_PI - _C1 - _C2)
_C1, _C2 = float(_C1), float(_C2)
_TWO_OVER_PI = float(1 / _HALF_PI)
_TWO_PI = float(4 * _HALF_PI)
_INVERSE_TWO_PI_F32 = struct.unpack("<f", struct.pack("<f", 1 / _TWO_PI))[0]
_SIN = [(-1) ** k / math.factorial(2 * k + 1) for k in range(9)]     # of r**2, times r
_COS = [(-1) ** k / math.factorial(2 * k) for k in range(10)]        # of r**2
_EXP2 = [math.log(2) ** k / math.factorial(k) for k in range(14)]    # of f in [-1/2, 1/2]
_EXPM1 = [1 / math.factorial(k + 1) for k in range(18)]             # of y, times y
_LOG = [2 / (2 * k + 1) for k in range(9)]                          # of s**2, times s
_LOG2E = 1 / math.log(2)


def _horner(fl: FunctionLowering, x: ll.Value, coefficients: list[float]) -> ll.Value:
    acc = fconst(F64_LL, coefficients[-1])
    for c in reversed(coefficients[:-1]):
        acc = fl.b.fadd(fl.b.fmul(acc, x), fconst(F64_LL, c))
    return acc


def _f64_to_i32(fl: FunctionLowering, x: ll.Value) -> ll.Value:
    """An integral f64 of modest size as i32 (NaN as 0: fptosi of NaN is poison)."""
    safe = fl.b.select(is_nan(fl, x), fconst(F64_LL, 0.0), x)
    return fl.b.fptosi(safe, I32)


def _exp2_f64(fl: FunctionLowering, x: ll.Value) -> ll.Value:
    """2**x: 2**k * 2**f with k = round(x), |f| <= 1/2."""
    b = fl.b
    limit = fconst(F64_LL, 1100.0)
    x_clamped = b.select(b.fcmp_ordered(">", x, limit), limit, x)
    x_clamped = b.select(b.fcmp_ordered("<", x_clamped, b.fneg(limit)), b.fneg(limit), x_clamped)
    k = float_call(fl, "roundeven", x_clamped)
    power = _horner(fl, b.fsub(x_clamped, k), _EXP2)
    return b.select(is_nan(fl, x), x, ldexp(fl, power, _f64_to_i32(fl, k)))


def _sin_cos_f64(fl: FunctionLowering, x: ll.Value, cosine: bool) -> ll.Value:
    """sin or cos: x reduced by k * pi/2 (Cody and Waite) for |x| < 2**20. Beyond, where the
    manual states no bound, as the hardware reduces: the angle is 2 pi times the fraction
    of x * (1/2pi) rounded toward zero in f32."""
    b = fl.b
    size = float_call(fl, "fabs", x)
    small = b.fcmp_ordered("<", size, fconst(F64_LL, 2.0 ** 20))
    turns = b.fmul(size, fconst(F64_LL, _INVERSE_TWO_PI_F32))
    turns = b.fpext(round_narrow(fl, turns, fconst(F64_LL, 0.0), F32, "rz"), F64_LL)
    fraction = b.fsub(turns, float_call(fl, "floor", turns))
    angle = float_call(fl, "copysign", b.fmul(fraction, fconst(F64_LL, _TWO_PI)), x)
    y = b.select(small, x, angle)
    k = float_call(fl, "roundeven", b.fmul(y, fconst(F64_LL, _TWO_OVER_PI)))
    r = y
    for part in (_C1, _C2, _C3):
        r = b.fsub(r, b.fmul(k, fconst(F64_LL, part)))
    r2 = b.fmul(r, r)
    sine, cos_r = b.fmul(r, _horner(fl, r2, _SIN)), _horner(fl, r2, _COS)
    quadrant = _f64_to_i32(fl, k)
    if cosine:
        quadrant = b.add(quadrant, ll.Constant(I32, 1))
    odd = b.trunc(quadrant, I1)
    negate = b.trunc(b.lshr(quadrant, ll.Constant(I32, 1)), I1)
    value = b.select(odd, cos_r, sine)
    value = b.select(negate, b.fneg(value), value)
    zero = b.fcmp_ordered("==", y, fconst(F64_LL, 0.0))
    value = b.select(zero, fconst(F64_LL, 1.0) if cosine else y, value)
    finite = b.fcmp_ordered("<", size, fconst(F64_LL, float("inf")))
    return b.select(finite, value, fconst(F64_LL, float("nan")))


def _log2_f64(fl: FunctionLowering, x: ll.Value) -> ll.Value:
    """log2 of an f64 image of a narrower value (so normal unless zero): e + ln(m)/ln 2 with
    m in [sqrt(1/2), sqrt(2)], ln m = 2 atanh((m - 1)/(m + 1))."""
    b = fl.b
    bits = to_bits(fl, x, F64)
    e = b.sub(b.and_(b.trunc(b.lshr(bits, ll.Constant(I64, 52)), I32), ll.Constant(I32, 0x7FF)),
              ll.Constant(I32, 1023))
    m = from_bits(fl, b.or_(b.and_(bits, ll.Constant(I64, (1 << 52) - 1)),
                            ll.Constant(I64, 1023 << 52)), F64)
    big = b.fcmp_ordered(">", m, fconst(F64_LL, math.sqrt(2.0)))
    m = b.select(big, b.fmul(m, fconst(F64_LL, 0.5)), m)
    e = b.add(e, b.zext(big, I32))
    s = b.fdiv(b.fsub(m, fconst(F64_LL, 1.0)), b.fadd(m, fconst(F64_LL, 1.0)))
    ln = b.fmul(s, _horner(fl, b.fmul(s, s), _LOG))
    value = b.fadd(b.sitofp(e, F64_LL), b.fmul(ln, fconst(F64_LL, _LOG2E)))
    zero = fconst(F64_LL, 0.0)
    value = b.select(b.fcmp_ordered("==", x, fconst(F64_LL, float("inf"))), x, value)
    value = b.select(b.fcmp_ordered("==", x, zero), fconst(F64_LL, float("-inf")), value)
    return b.select(b.fcmp_unordered("<", x, zero), fconst(F64_LL, float("nan")), value)


def _tanh_f64(fl: FunctionLowering, x: ll.Value) -> ll.Value:
    """tanh |x| = e / (e + 2) with e = expm1(2|x|) by its series below 0.55 (no
    cancellation), 1 - 2 / (exp(2|x|) + 1) above; the sign of x restored."""
    b = fl.b
    size = float_call(fl, "fabs", x)
    y = b.fadd(size, size)
    em1 = b.fmul(y, _horner(fl, y, _EXPM1))
    near = b.fdiv(em1, b.fadd(em1, fconst(F64_LL, 2.0)))
    e = _exp2_f64(fl, b.fmul(y, fconst(F64_LL, _LOG2E)))
    far = b.fsub(fconst(F64_LL, 1.0),
                 b.fdiv(fconst(F64_LL, 2.0), b.fadd(e, fconst(F64_LL, 1.0))))
    value = b.select(b.fcmp_ordered("<", size, fconst(F64_LL, 0.55)), near, far)
    return float_call(fl, "copysign", value, x)


# 2**f = e**(f ln 2) for |f| <= 1/2: the degree-7 Taylor polynomial, truncated below 2**-27
_EXP2_F32 = [math.log(2) ** k / math.factorial(k) for k in range(8)]


def _exp2_f32(fl: FunctionLowering, x: ll.Value) -> ll.Value:
    """ex2.approx.f32 in f32 arithmetic, within an ulp (Triton's exp is this instruction;
    the f64 route costs several times as much): 2**x = p(f) * 2**k, k = round(x), f = x - k
    exactly, p by fused Horner steps (within an ulp); the product by 2**k rounds once,
    overflow and subnormal results included: by the target's own instruction where it has
    one (x86 with AVX-512: vscalefps, on a float k: a NaN stays a NaN throughout), else
    LLVM's ldexp where the target has it as an instruction, else two products by powers of
    two, the first exact. x is clamped to +-200 first, which changes no result (a NaN stays
    a NaN; on the integer paths it becomes k = 0, as fptosi of NaN is poison, and the
    result is chosen at the end)."""
    b = fl.b
    limit = fconst(F32_LL, 200.0)
    # (ordered compares, a NaN failing both: x86's max and min)
    xc = b.select(b.fcmp_ordered("<", x, b.fneg(limit)), b.fneg(limit), x)
    xc = b.select(b.fcmp_ordered(">", xc, limit), limit, xc)
    k = float_call(fl, "roundeven", xc)
    f = b.fsub(xc, k)
    p = fconst(F32_LL, _EXP2_F32[-1])
    for c in reversed(_EXP2_F32[:-1]):
        p = float_call(fl, "fma", p, f, fconst(F32_LL, c))
    scaled = fl.target.scaled_f32(fl, p, k)
    if scaled is not None:
        return scaled
    nan = is_nan(fl, x)
    whole = b.fptosi(b.select(nan, fconst(F32_LL, 0.0), k), I32)
    if fl.target.native_ldexp:
        scale = declare(fl.llfn.module, "llvm.ldexp.f32.i32", F32_LL, [F32_LL, I32])
        return b.select(nan, x, b.call(scale, [p, whole]))
    half = b.ashr(whole, ll.Constant(I32, 1))

    def power(e):       # 2**e for -126 <= e <= 127
        return from_bits(fl, b.shl(b.add(e, ll.Constant(I32, 127)), ll.Constant(I32, 23)), F32)
    # the product by 2**half is exact, the one by 2**(k - half) rounds once
    return b.select(nan, x, b.fmul(b.fmul(p, power(half)), power(b.sub(whole, half))))


_FUNCTIONS = {
    "sin": lambda fl, x: _sin_cos_f64(fl, x, cosine=False),
    "cos": lambda fl, x: _sin_cos_f64(fl, x, cosine=True),
    "lg2": _log2_f64,
    "ex2": _exp2_f64,
    "tanh": _tanh_f64,
}


def _special(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """sin cos lg2 ex2 tanh (.approx): .ftz flushes subnormal operands and results."""
    t = TYPES[inst.spec.types[0]]
    fmt, count = element(fl, inst, t)
    if fmt is F64 or t.name == "f32x2":
        raise fl.unsupported(inst, f"{inst.opcode} on .{t.name}")
    ftz = bool(inst.spec.get("ftz"))
    if ftz and t.name != "f32" and fmt is not BF16:
        raise fl.unsupported(inst, f".ftz is not defined for {inst.opcode}.{t.name}")
    function = _FUNCTIONS[inst.opcode]
    results = []
    for x in read_lanes(fl, inst.operands[1], t, fmt, count):
        if fmt is F32 and inst.opcode == "ex2":
            # (.ftz: a subnormal x gives 1 flushed or not; the result, never negative, is
            # flushed below the smallest normal by one compare)
            r = _exp2_f32(fl, x)
            if ftz:
                tiny = fl.b.fcmp_ordered("<", r, fconst(F32_LL, F32.smallest_normal))
                r = fl.b.select(tiny, fconst(F32_LL, 0.0), r)
        else:
            if ftz:
                x = flush(fl, x, fmt)
            value = function(fl, to_f64(fl, x, fmt))
            r = round_narrow(fl, value, fconst(F64_LL, 0.0), fmt, "rn")
            if ftz:
                r = flush(fl, r, fmt)
        # (an ex2 whose result only NaN-blind instructions read keeps its operand's NaN)
        blind = fmt is F32 and inst.opcode == "ex2" and count == 1 and \
            nan_blind(fl, inst.operands[0])
        results.append(r if blind else canonical(fl, r, fmt))
    write_lanes(fl, inst.operands[0], results, t, fmt)


@lowering("sin", "cos", "lg2", "ex2", "tanh")
def special_function(fl: FunctionLowering, inst: ir.Instruction) -> None:
    _special(fl, inst)
