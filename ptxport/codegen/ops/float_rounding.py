"""Exact results rounded to f64, f32, f16 and bf16 in every rounding mode: the .rn .rz .rm .rp
modifiers and the .ftz tininess rule of the floating-point instructions (PTX ISA 9.7.3 floating
point, 9.7.4 half precision, 9.7.5 mixed precision), bit for bit as the manual defines them.

LLVM rounds to nearest even only. So an exact result is held as an unevaluated sum hi + lo of
two f64, built by error-free transformations (TwoSum here as `two_sum`, fma residuals in
float_arith.py), and then rounded: to the narrow formats through round-to-odd
(`round_narrow`), to f64 by stepping to the neighbour the sign of lo points at, with exponents
split off first (`split`) so that no residual underflows (`round_f64`).

.ftz flushes a result to a zero of its sign when it is tiny after rounding (`is_tiny`), as
NVIDIA's hardware does (measured on an H100): below the smallest normal once rounded to the
format's precision with an unbounded exponent (so 0x1.fffffep-127 flushes even where it rounds
to the smallest normal, 0x1.ffffffp-127 does not).
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import I32, I64, FunctionLowering
from ptxport.codegen.ops.float_format import (
    F32,
    F32_LL,
    F64,
    F64_LL,
    FloatFormat,
    const_bits,
    fconst,
    float_call,
    from_bits,
    from_f32,
    is_negative,
    to_bits,
    to_f64,
)

__all__ = ["is_tiny", "ldexp", "round_f64", "round_narrow", "split", "two_sum"]


def two_sum(fl: FunctionLowering, x: ll.Value, y: ll.Value) -> tuple[ll.Value, ll.Value]:
    """s + e == x + y exactly, s = x + y rounded (Knuth)."""
    b = fl.b
    s = b.fadd(x, y)
    y_part = b.fsub(s, x)
    x_part = b.fsub(s, y_part)
    return s, b.fadd(b.fsub(x, x_part), b.fsub(y, y_part))


def _round_to_odd(fl: FunctionLowering, hi: ll.Value, lo: ll.Value) -> ll.Value:
    """hi + lo rounded to 53 bits, to odd: rounding that again to 51 bits or fewer, in any
    mode, rounds the exact value correctly."""
    b = fl.b
    bits = to_bits(fl, hi, F64)
    inexact = b.fcmp_ordered("!=", lo, fconst(F64_LL, 0.0))
    toward_zero = b.and_(inexact, b.xor(is_negative(fl, hi, F64), is_negative(fl, lo, F64)))
    bits = b.sub(bits, b.zext(toward_zero, I64))
    return from_bits(fl, b.or_(bits, b.zext(inexact, I64)), F64)


def _round_to_odd_f32(fl: FunctionLowering, z: ll.Value) -> ll.Value:
    """An f64 value rounded to f32, to odd."""
    b = fl.b
    r = b.fptrunc(z, F32_LL)
    back = b.fpext(r, F64_LL)
    inexact = b.fcmp_ordered("!=", back, z)
    toward_zero = b.and_(inexact, b.fcmp_ordered(">", float_call(fl, "fabs", back),
                                                 float_call(fl, "fabs", z)))
    bits = b.sub(b.bitcast(r, I32), b.zext(toward_zero, I32))
    return b.bitcast(b.or_(bits, b.zext(inexact, I32)), F32_LL)


def _step(fl: FunctionLowering, r: ll.Value, fmt: FloatFormat, rnd: str, below: ll.Value,
          above: ll.Value) -> ll.Value:
    """The result in mode `rnd`, from `r` (the exact value rounded to nearest) and whether the
    exact value lies below or above r: at most one step to r's neighbour."""
    b = fl.b
    if rnd == "rn":
        return r
    negative = is_negative(fl, r, fmt)
    one, minus_one, zero = (const_bits(fmt, v) for v in (1, -1, 0))
    if rnd == "rz":
        move = b.select(negative, above, below)
        delta = b.select(move, minus_one, zero)
    elif rnd == "rm":
        delta = b.select(below, b.select(negative, one, minus_one), zero)
    else:
        delta = b.select(above, b.select(negative, minus_one, one), zero)
    return from_bits(fl, b.add(to_bits(fl, r, fmt), delta), fmt)


def round_narrow(fl: FunctionLowering, hi: ll.Value, lo: ll.Value, fmt: FloatFormat,
                 rnd: str) -> ll.Value:
    """The exact value hi + lo (f64) rounded to f32, f16 or bf16 in mode `rnd`."""
    b = fl.b
    z = _round_to_odd(fl, hi, lo)
    if fmt is F32:
        r = b.fptrunc(z, F32_LL)
    else:
        r = from_f32(fl, _round_to_odd_f32(fl, z), fmt)
    if rnd == "rn":
        return r
    back = to_f64(fl, r, fmt)
    return _step(fl, r, fmt, rnd, b.fcmp_ordered(">", back, z), b.fcmp_ordered("<", back, z))


def _pow2(fl: FunctionLowering, k: ll.Value) -> ll.Value:
    """2**k as an f64, for -1022 <= k <= 1023."""
    biased = fl.b.zext(fl.b.add(k, ll.Constant(I32, 1023)), I64)
    return from_bits(fl, fl.b.shl(biased, ll.Constant(I64, 52)), F64)


def _clamp(fl: FunctionLowering, k: ll.Value, low: int, high: int) -> ll.Value:
    b = fl.b
    k = b.select(b.icmp_signed("<", k, ll.Constant(I32, low)), ll.Constant(I32, low), k)
    return b.select(b.icmp_signed(">", k, ll.Constant(I32, high)), ll.Constant(I32, high), k)


def ldexp(fl: FunctionLowering, x: ll.Value, k: ll.Value) -> ll.Value:
    """x * 2**k in two exact steps (k is clamped to [-2044, 2046])."""
    b = fl.b
    k = _clamp(fl, k, -2044, 2046)
    half = b.ashr(k, ll.Constant(I32, 1))
    return b.fmul(b.fmul(x, _pow2(fl, half)), _pow2(fl, b.sub(k, half)))


def split(fl: FunctionLowering, x: ll.Value) -> tuple[ll.Value, ll.Value]:
    """(m, e) with x == m * 2**e and 1 <= |m| < 2, for finite nonzero f64 x."""
    b = fl.b
    exponent_of = lambda v: b.trunc(b.lshr(to_bits(fl, v, F64), ll.Constant(I64, 52)), I32)  # noqa: E731
    raw = b.and_(exponent_of(x), ll.Constant(I32, 0x7FF))
    subnormal = b.icmp_unsigned("==", raw, ll.Constant(I32, 0))
    x = b.select(subnormal, b.fmul(x, fconst(F64_LL, 2.0 ** 64)), x)
    e = b.sub(b.and_(exponent_of(x), ll.Constant(I32, 0x7FF)),
              b.select(subnormal, ll.Constant(I32, 1023 + 64), ll.Constant(I32, 1023)))
    fraction = b.and_(to_bits(fl, x, F64), ll.Constant(I64, (1 << 63) | ((1 << 52) - 1)))
    m = b.or_(fraction, ll.Constant(I64, 1023 << 52))
    return from_bits(fl, m, F64), e


def round_f64(fl: FunctionLowering, hi: ll.Value, lo: ll.Value, scale: ll.Value,
              rnd: str) -> ll.Value:
    """(hi + lo) * 2**scale rounded to f64 in a directed mode; hi is finite and nonzero and
    only the sign of lo counts."""
    b = fl.b
    zero = fconst(F64_LL, 0.0)
    hi, exponent = split(fl, hi)
    scale = _clamp(fl, b.add(scale, exponent), -1200, 2100)
    t = ldexp(fl, hi, scale)
    overflow = b.fcmp_ordered("==", float_call(fl, "fabs", t), fconst(F64_LL, float("inf")))
    below = b.select(overflow, b.fcmp_ordered(">", t, zero), b.fcmp_ordered("<", lo, zero))
    above = b.select(overflow, b.fcmp_ordered("<", t, zero), b.fcmp_ordered(">", lo, zero))
    normal = _step(fl, t, F64, rnd, below, above)
    # Below the normal range the grid is 2**-1074 wide: round hi * 2**(scale + 1074) to an
    # integer, the residual deciding where it is an integer already.
    w = ldexp(fl, hi, b.add(scale, ll.Constant(I32, 1074)))
    if rnd == "rz":
        whole = float_call(fl, "trunc", w)
        beyond = b.select(b.fcmp_ordered(">", w, zero), b.fcmp_ordered("<", lo, zero),
                          b.fcmp_ordered(">", lo, zero))
        adjust = b.select(b.fcmp_ordered(">", w, zero), fconst(F64_LL, -1.0),
                          fconst(F64_LL, 1.0))
    elif rnd == "rm":
        whole, beyond = float_call(fl, "floor", w), b.fcmp_ordered("<", lo, zero)
        adjust = fconst(F64_LL, -1.0)
    else:
        whole, beyond = float_call(fl, "ceil", w), b.fcmp_ordered(">", lo, zero)
        adjust = fconst(F64_LL, 1.0)
    beyond = b.and_(beyond, b.fcmp_ordered("==", whole, w))
    whole = b.select(beyond, b.fadd(whole, adjust), whole)
    tiny = float_call(fl, "copysign", ldexp(fl, whole, ll.Constant(I32, -1074)), hi)
    # By the exponent: hi * 2**scale itself would round where it is subnormal.
    is_normal = b.icmp_signed(">=", scale, ll.Constant(I32, -1022))
    return b.select(is_normal, normal, tiny)


def is_tiny(fl: FunctionLowering, hi: ll.Value, lo: ll.Value, fmt: FloatFormat,
            rnd: str) -> ll.Value:
    """Whether the exact value hi + lo is tiny for .ftz: below the smallest normal once rounded
    to fmt's precision in mode `rnd` with an unbounded exponent (IEEE 754's tininess after
    rounding, as the hardware detects it)."""
    b = fl.b
    smallest = fmt.smallest_normal
    size = float_call(fl, "fabs", hi)
    zero = fconst(F64_LL, 0.0)
    # The sign of the residual relative to hi's magnitude: above (+) or below (-) |hi|.
    lo_above = b.and_(b.fcmp_ordered("!=", lo, zero),
                      b.not_(b.xor(is_negative(fl, hi, F64), is_negative(fl, lo, F64))))
    lo_below = b.and_(b.fcmp_ordered("!=", lo, zero), b.not_(lo_above))

    def below(threshold: float) -> ll.Value:   # |exact| < threshold
        t = fconst(F64_LL, threshold)
        return b.or_(b.fcmp_ordered("<", size, t),
                     b.and_(b.fcmp_ordered("==", size, t), lo_below))

    def at_most(threshold: float) -> ll.Value:   # |exact| <= threshold
        t = fconst(F64_LL, threshold)
        return b.or_(b.fcmp_ordered("<", size, t),
                     b.and_(b.fcmp_ordered("==", size, t), b.not_(lo_above)))

    if rnd == "rn":
        return below(smallest * (1 - 2.0 ** -(fmt.precision + 1)))
    if rnd == "rz":
        return below(smallest)
    # Rounding away from zero reaches the smallest normal from above the largest value of
    # fmt's precision below it; rounding toward zero never does.
    away = at_most(smallest * (1 - 2.0 ** -fmt.precision))
    negative = is_negative(fl, hi, F64)
    toward = below(smallest)
    if rnd == "rm":
        return b.select(negative, away, toward)
    return b.select(negative, toward, away)
