"""Conversions (PTX ISA 9.7.9.21 cvt, 9.7.9.22 cvt.pack) between integer and floating-point
types of every width, with PTX's rounding modes, .sat, .ftz, .relu and .satfinite, and the
packed narrow floating-point formats (e4m3x2, e5m2x2, e2m3x2, e3m2x2, e2m1x2, tf32).

Where LLVM's own conversion rounds exactly as PTX asks on every host (round to nearest even
into f32 and f64, f32 -> f16), it is used, and f32 -> bf16 rounds on the bit pattern. Every
other rounding — directed modes, f64 -> f16/bf16, into an 8/6/4-bit format, integers into
16-bit floats — goes through `_round`, which rounds an exact value `mantissa * 2**exponent`
into any binary format with integer arithmetic alone: exact by construction, whatever the
host's floating-point unit does.

Where the manual leaves a result open, the hardware decides (measured on an H100):
- NaN -> integer: 0, except from .f64 or into a 64-bit type: 1 << (width - 1) (as the manual
  says since PTX ISA 9.0).
- NaN from f32, f16 or bf16 into a narrower float, and f16 -> f32: the canonical NaN (all ones
  but the sign); .ftz on an f32 source makes a NaN canonical too. From f64, and widening to
  f64, the IEEE result: the sign and the payload's leading bits kept, made quiet. bf16 -> f32
  keeps the bits.
- Rounding to an integral float: the canonical NaN for f32/f16/bf16, the quiet NaN for f64.
- .relu and .sat give +0 for -0; .sat gives +0 for NaN.
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir as ll

from ptxport.codegen.lower import (
    I1,
    I16,
    I32,
    I64,
    FunctionLowering,
    declare,
    lowering,
    one_lane,
    value_type,
)
from ptxport.errors import Diagnostic, PtxSemanticError
from ptxport.ir import nodes as ir
from ptxport.ir.types import TYPES, Type

INT_ROUNDING = ("rni", "rzi", "rmi", "rpi")
FLOAT_ROUNDING = ("rn", "rz", "rm", "rp", "rna")
# The float (PTX) rounding each integer rounding corresponds to.
TO_FLOAT_ROUNDING = {"rni": "rn", "rzi": "rz", "rmi": "rm", "rpi": "rp"}


@dataclass(frozen=True)
class Format:
    """A binary floating-point format: a sign bit, `ebits` exponent bits and `mbits` fraction
    bits. kind: 'ieee' (infinities and NaNs at the all-ones exponent), 'fn' (no infinities,
    all ones is NaN: e4m3), 'finite' (neither: e2m3, e3m2, e2m1)."""

    ebits: int
    mbits: int
    kind: str = "ieee"

    @property
    def width(self) -> int:
        return 1 + self.ebits + self.mbits

    @property
    def bias(self) -> int:
        return (1 << (self.ebits - 1)) - 1

    @property
    def magnitude_mask(self) -> int:
        return (1 << (self.ebits + self.mbits)) - 1

    @property
    def max_bits(self) -> int:
        """The largest finite magnitude."""
        ones = self.magnitude_mask
        return {"ieee": ones - (1 << self.mbits), "fn": ones - 1, "finite": ones}[self.kind]

    @property
    def inf_bits(self) -> int:
        return ((1 << self.ebits) - 1) << self.mbits


FORMATS = {
    "f64": Format(11, 52), "f32": Format(8, 23), "f16": Format(5, 10), "bf16": Format(8, 7),
    "tf32": Format(8, 10), "e5m2": Format(5, 2), "e4m3": Format(4, 3, "fn"),
    "e3m2": Format(3, 2, "finite"), "e2m3": Format(2, 3, "finite"), "e2m1": Format(2, 1, "finite"),
}
# The packed narrow formats: element format, and the bits one element takes in the register
# (6-bit formats sit in the low bits of a byte whose two top bits are zero).
NARROW = {"e4m3x2": ("e4m3", 8), "e5m2x2": ("e5m2", 8), "e2m3x2": ("e2m3", 8),
          "e3m2x2": ("e3m2", 8), "e2m1x2": ("e2m1", 4)}
CANONICAL_NAN = {"f16": 0x7FFF, "bf16": 0x7FFF, "f32": 0x7FFFFFFF, "f64": 0x7FFFFFFFFFFFFFFF}


# --- the rounding core --------------------------------------------------------------------------

def _i64(v: int) -> ll.Constant:
    return ll.Constant(I64, v & ((1 << 64) - 1))


def _round(fl: FunctionLowering, sign, mant, exp, fmt: Format, mode: str,
           satfinite: bool) -> ll.Value:
    """The bits (an i64, sign included) of the nonzero finite value (-1)**sign * mant * 2**exp
    (mant an unsigned i64, exp a signed i64) rounded into `fmt` by `mode`. Overflow gives an
    infinity or the largest finite value, as the mode and .satfinite say."""
    b = fl.b
    ctlz = declare(fl.llfn.module, "llvm.ctlz.i64", I64, [I64, I1])
    length = b.sub(_i64(64), b.call(ctlz, [mant, I1(0)]))
    top = b.add(exp, b.sub(length, _i64(1)))            # the exponent of the leading bit
    emin = 1 - fmt.bias
    scale = b.select(b.icmp_signed(">", top, _i64(emin)), top, _i64(emin))
    drop = b.sub(b.sub(scale, _i64(fmt.mbits)), exp)   # low bits of mant that do not fit
    dropping = b.icmp_signed(">", drop, _i64(0))
    exact = b.shl(mant, b.select(dropping, _i64(0), b.neg(drop)))
    kept, guard, sticky = _split(fl, mant, b.select(dropping, drop, _i64(1)))
    # The dropped part against half a unit: above it with guard and sticky, a tie with the
    # guard alone, below it without the guard.
    inexact = b.or_(guard, sticky)
    if mode == "rn":
        up = b.and_(guard, b.or_(sticky, b.trunc(kept, I1)))
    elif mode == "rna":
        up = guard
    elif mode == "rz":
        up = I1(0)
    elif mode == "rm":
        up = b.and_(sign, inexact)
    else:
        up = b.and_(b.not_(sign), inexact)
    rounded = b.add(kept, b.zext(up, I64))
    fraction = b.select(dropping, rounded, exact)
    # The exponent field comes out of the addition: a rounding carry into the next binade,
    # or from the subnormals into the normals, carries into it.
    bits = b.add(b.shl(b.sub(scale, _i64(emin)), _i64(fmt.mbits)), fraction)
    over = b.icmp_unsigned(">", bits, _i64(fmt.max_bits))
    bits = b.select(over, _overflow(fl, sign, fmt, mode, satfinite), bits)
    return b.or_(bits, b.shl(b.zext(sign, I64), _i64(fmt.width - 1)))


def _split(fl: FunctionLowering, mant, drop) -> tuple[ll.Value, ll.Value, ll.Value]:
    """mant (an unsigned i64) cut below its `drop` lowest bits (drop >= 1, any size): the
    bits kept (mant >> drop), the guard bit (the highest bit dropped) and the sticky bit (any
    bit below the guard set). Every shift stays within 0..63, as LLVM requires (a larger
    amount is poison), and nothing wider than 64 bits: LLVM's SPIR-V backend cannot select i128."""
    b = fl.b
    far = b.icmp_signed(">", drop, _i64(64))           # even the guard lies above mant
    below = b.sub(b.select(far, _i64(64), drop), _i64(1))   # the guard's position, 0..63
    from_guard = b.lshr(mant, below)
    kept = b.lshr(from_guard, _i64(1))
    guard = b.and_(b.trunc(from_guard, I1), b.not_(far))
    under = b.and_(mant, b.sub(b.shl(_i64(1), below), _i64(1)))
    sticky = b.icmp_unsigned("!=", b.select(far, mant, under), _i64(0))
    return kept, guard, sticky


def _overflow(fl: FunctionLowering, sign, fmt: Format, mode: str, satfinite: bool) -> ll.Value:
    """The magnitude a value too large for `fmt` rounds to."""
    largest = _i64(fmt.max_bits)
    if satfinite or fmt.kind == "finite":
        return largest
    if fmt.kind == "fn":
        return _i64(fmt.magnitude_mask)                 # NaN: e4m3 has no infinity
    toward_zero = {"rz": I1(1), "rm": fl.b.not_(sign), "rp": sign}.get(mode, I1(0))
    return fl.b.select(toward_zero, largest, _i64(fmt.inf_bits))


@dataclass
class _Parts:
    """A floating-point value taken apart: value = (-1)**sign * mant * 2**exp."""

    sign: ll.Value
    mant: ll.Value
    exp: ll.Value
    is_nan: ll.Value
    is_inf: ll.Value
    is_zero: ll.Value


def _unpack(fl: FunctionLowering, bits: ll.Value, fmt: Format) -> _Parts:
    b = fl.b
    bits = b.zext(bits, I64) if bits.type.width < 64 else bits
    sign = b.trunc(b.lshr(bits, _i64(fmt.width - 1)), I1)
    field = b.and_(b.lshr(bits, _i64(fmt.mbits)), _i64((1 << fmt.ebits) - 1))
    fraction = b.and_(bits, _i64((1 << fmt.mbits) - 1))
    normal = b.icmp_unsigned("!=", field, _i64(0))
    mant = b.select(normal, b.or_(fraction, _i64(1 << fmt.mbits)), fraction)
    exp = b.sub(b.select(normal, field, _i64(1)), _i64(fmt.bias + fmt.mbits))
    magnitude = b.and_(bits, _i64(fmt.magnitude_mask))
    if fmt.kind == "ieee":
        special = b.icmp_unsigned("==", field, _i64((1 << fmt.ebits) - 1))
        has_fraction = b.icmp_unsigned("!=", fraction, _i64(0))
        is_nan, is_inf = b.and_(special, has_fraction), b.and_(special, b.not_(has_fraction))
    elif fmt.kind == "fn":
        is_nan, is_inf = b.icmp_unsigned("==", magnitude, _i64(fmt.magnitude_mask)), I1(0)
    else:
        is_nan, is_inf = I1(0), I1(0)
    return _Parts(sign, mant, exp, is_nan, is_inf, b.icmp_unsigned("==", mant, _i64(0)))


def _convert_bits(fl: FunctionLowering, bits: ll.Value, source: Format, dest: Format, mode: str,
                  satfinite: bool, nan: ll.Value) -> ll.Value:
    """`bits` of format `source` rounded into `dest` (an i64); NaN becomes `nan`."""
    b = fl.b
    parts = _unpack(fl, bits, source)
    signed_zero = b.shl(b.zext(parts.sign, I64), _i64(dest.width - 1))
    result = _round(fl, parts.sign, parts.mant, parts.exp, dest, mode, satfinite)
    result = b.select(parts.is_zero, signed_zero, result)
    infinity = dest.inf_bits if dest.kind == "ieee" and not satfinite else dest.max_bits
    result = b.select(parts.is_inf, b.or_(signed_zero, _i64(infinity)), result)
    return b.select(parts.is_nan, nan, result)


def round_bits(fl: FunctionLowering, bits: ll.Value, source: str, dest: str,
               mode: str = "rn") -> ll.Value:
    """The bits of a value of float type `source` rounded into type `dest` (an i64); NaN
    gives the destination's canonical NaN. For other instructions' results (atomics)."""
    wide = fl.b.zext(bits, I64) if bits.type.width < 64 else bits
    return _convert_bits(fl, wide, FORMATS[source], FORMATS[dest], mode, False,
                         _i64(CANONICAL_NAN[dest]))


# --- helpers ------------------------------------------------------------------------------------

def _invalid(fl: FunctionLowering, inst: ir.Instruction, message: str) -> Exception:
    """PTX that ptxas refuses (as the manual says it must)."""
    location = fl.module.location(inst.pos)
    if location is None:
        return fl.unsupported(inst, message)
    return PtxSemanticError([Diagnostic(location, message, inst.spec.text)])


def _bits(fl: FunctionLowering, operand, t: str) -> ll.Value:
    """A float operand as its bits (read as its own type, so that immediates are right)."""
    return fl.as_int(fl.read(operand, t))


def _narrow(fl: FunctionLowering, v: ll.Value, width: int) -> ll.Value:
    return fl.b.trunc(v, ll.IntType(width)) if v.type.width > width else v


def _is_nan(fl: FunctionLowering, bits: ll.Value, fmt: Format) -> ll.Value:
    magnitude = fl.b.and_(bits, ll.Constant(bits.type, fmt.magnitude_mask))
    if fmt.kind == "fn":
        return fl.b.icmp_unsigned("==", magnitude, ll.Constant(bits.type, fmt.magnitude_mask))
    if fmt.kind == "finite":
        return I1(0)
    return fl.b.icmp_unsigned(">", magnitude, ll.Constant(bits.type, fmt.inf_bits))


def _sign_bit(fl: FunctionLowering, bits: ll.Value) -> ll.Value:
    return fl.b.icmp_signed("<", bits, ll.Constant(bits.type, 0))


def _flush(fl: FunctionLowering, bits: ll.Value, fmt: Format) -> ll.Value:
    """.ftz: a subnormal becomes a zero of its sign."""
    b = fl.b
    exponent = b.and_(bits, ll.Constant(bits.type, fmt.inf_bits))
    sign_only = b.and_(bits, ll.Constant(bits.type, 1 << (fmt.width - 1)))
    return b.select(b.icmp_unsigned("==", exponent, ll.Constant(bits.type, 0)), sign_only, bits)


def _saturate(fl: FunctionLowering, bits: ll.Value, fmt: Format) -> ll.Value:
    """.sat on a float result: clamp to [0, 1]; NaN and -0 give +0."""
    b = fl.b
    one = ll.Constant(bits.type, fmt.bias << fmt.mbits)
    zero = ll.Constant(bits.type, 0)
    positive = b.and_(b.icmp_signed(">", bits, zero), b.not_(_is_nan(fl, bits, fmt)))
    return b.select(positive, b.select(b.icmp_unsigned("<", bits, one), bits, one), zero)


def _saturate_f32(fl: FunctionLowering, x: ll.Value, ftz: bool) -> ll.Value:
    """cvt.sat{.ftz}.f32.f32 on the value (nvcc's expf clamps with it): x clamped to [0, 1],
    NaN and -0 (with .ftz also subnormals, flushed first) give +0. Two ordered compares and
    selects, which x86 does in a max and a min, where the bit tests of `_saturate` take
    about eight instructions."""
    b = fl.b
    zero = ll.Constant(ll.FloatType(), 0.0)
    # (with .ftz: below the smallest normal, positive subnormals included, gives +0)
    least = ll.Constant(ll.FloatType(), 2.0 ** -126) if ftz else zero
    above = b.select(b.fcmp_ordered(">=" if ftz else ">", x, least), x, zero)
    one = ll.Constant(ll.FloatType(), 1.0)
    return b.select(b.fcmp_ordered("<", above, one), above, one)


def _relu(fl: FunctionLowering, bits: ll.Value, fmt: Format, nan: int) -> ll.Value:
    """.relu: negative results (and -0) become +0; NaN becomes `nan` (the canonical NaN)."""
    b = fl.b
    zero = ll.Constant(bits.type, 0)
    sign = b.and_(bits, ll.Constant(bits.type, 1 << (fmt.width - 1)))
    result = b.select(b.icmp_unsigned("!=", sign, zero), zero, bits)
    if fmt.kind == "finite":
        return result
    return b.select(_is_nan(fl, bits, fmt), ll.Constant(bits.type, nan), result)


def _round_integral(fl: FunctionLowering, x: ll.Value, rnd: str) -> ll.Value:
    """x (f32 or f64) rounded to an integral value by an integer rounding mode."""
    name = {"rni": "roundeven", "rzi": "trunc", "rmi": "floor", "rpi": "ceil"}[rnd]
    t = one_lane(x.type)
    suffix = "f32" if t == ll.FloatType() else "f64"
    fn = declare(fl.llfn.module, f"llvm.{name}.{suffix}", t, [t])
    return fl.b.call(fn, [x])


# --- the instruction ----------------------------------------------------------------------------

@lowering("cvt")
def cvt(fl: FunctionLowering, inst: ir.Instruction) -> None:
    spec = inst.spec
    if spec.get("pack"):
        return _cvt_pack(fl, inst)
    if spec.get("scaled") or spec.get("rnd") == "rs" or spec.has("pzo"):
        raise fl.unsupported(inst, "scaled conversions, stochastic rounding (.rs) and .pzo are "
                                   "not implemented (sm_100 and later)")
    dname, aname = spec.types[0], spec.types[1]
    if dname in NARROW or aname in NARROW:
        return _cvt_narrow_pair(fl, inst, dname, aname)
    if dname in ("f16x2", "bf16x2") and aname == "f32":
        return _cvt_half_pair(fl, inst, dname)
    if dname == "tf32" and aname == "f32":
        return _cvt_tf32(fl, inst)
    d, a = TYPES.get(dname), TYPES.get(aname)
    if not all(t is not None and (t.name in FORMATS or t.is_integer) for t in (d, a)):
        raise fl.unsupported(inst, f"conversion from .{aname} to .{dname} (ue8m0x2, s2f6x2 "
                                   "and ue5m3x2 are not implemented)")
    if d.is_integer and a.is_integer:
        _int_to_int(fl, inst, d, a)
    elif d.is_integer:
        _float_to_int(fl, inst, d, a)
    elif a.is_integer:
        _int_to_float(fl, inst, d, a)
    else:
        _float_to_float(fl, inst, d, a)


def _check_rounding(fl: FunctionLowering, inst: ir.Instruction, allowed: tuple[str, ...],
                    required: bool) -> str | None:
    rnd = inst.spec.get("rnd")
    if rnd is None and required:
        raise _invalid(fl, inst, "this conversion needs a rounding modifier (" +
                       ", ".join("." + r for r in allowed) + "): PTX ISA 9.7.9.21")
    if rnd is not None and rnd not in allowed:
        raise _invalid(fl, inst, f"rounding modifier .{rnd} is illegal for this conversion")
    return rnd


def _int_to_int(fl: FunctionLowering, inst: ir.Instruction, d: Type, a: Type) -> None:
    """Truncation or extension by the source's signedness; .sat clamps to the destination's
    range (the source value read by its own signedness)."""
    _check_rounding(fl, inst, (), False)
    x = fl.read(inst.operands[1], a)
    b = fl.b
    width = max(a.bits, d.bits) + 1
    extend = b.sext if a.kind == "signed" else b.zext
    if inst.spec.get("sat"):
        wide = extend(x, ll.IntType(width))
        low, high = ((-(1 << (d.bits - 1)), (1 << (d.bits - 1)) - 1) if d.kind == "signed"
                     else (0, (1 << d.bits) - 1))
        low_c, high_c = ll.Constant(wide.type, low), ll.Constant(wide.type, high)
        wide = b.select(b.icmp_signed("<", wide, low_c), low_c, wide)
        wide = b.select(b.icmp_signed(">", wide, high_c), high_c, wide)
        result = b.trunc(wide, ll.IntType(d.bits))
    elif d.bits < a.bits:
        result = b.trunc(x, ll.IntType(d.bits))
    elif d.bits > a.bits:
        result = extend(x, ll.IntType(d.bits))
    else:
        result = x
    fl.write(inst.operands[0], result, d)


def _float_to_int(fl: FunctionLowering, inst: ir.Instruction, d: Type, a: Type) -> None:
    """Round by .rni/.rzi/.rmi/.rpi, then clamp to the destination's range (cvt always
    saturates float -> int); NaN gives 0, or 1 << (width - 1) from .f64 or into 64 bits."""
    rnd = _check_rounding(fl, inst, INT_ROUNDING, True)
    b = fl.b
    fmt = FORMATS[a.name]
    bits = _bits(fl, inst.operands[1], a.name)
    if inst.spec.get("ftz") and a.name == "f32":
        bits = _flush(fl, bits, fmt)
    nan = _is_nan(fl, bits, fmt)
    if a.bits == 64:
        x = b.bitcast(bits, ll.DoubleType())
    elif a.bits == 32:
        x = b.bitcast(bits, ll.FloatType())
    else:  # f16 and bf16 widen to f32 exactly
        x = b.bitcast(b.shl(b.zext(bits, I32), I32(16)), ll.FloatType()) if a.name == "bf16" \
            else b.fpext(b.bitcast(bits, ll.HalfType()), ll.FloatType())
    x = _round_integral(fl, x, rnd)
    name = "fptosi" if d.kind == "signed" else "fptoui"
    target = ll.IntType(d.bits)
    suffix = f"i{d.bits}.{'f64' if one_lane(x.type) == ll.DoubleType() else 'f32'}"
    convert = declare(fl.llfn.module, f"llvm.{name}.sat.{suffix}", target, [one_lane(x.type)])
    result = b.call(convert, [x])
    nan_value = 1 << (d.bits - 1) if a.name == "f64" or d.bits == 64 else 0
    result = b.select(nan, ll.Constant(target, nan_value), result)
    fl.write(inst.operands[0], result, d)


def _int_to_float(fl: FunctionLowering, inst: ir.Instruction, d: Type, a: Type) -> None:
    rnd = _check_rounding(fl, inst, FLOAT_ROUNDING[:4], True)
    b = fl.b
    x = fl.read(inst.operands[1], a)
    fmt = FORMATS[d.name]
    if rnd == "rn" and d.name in ("f32", "f64"):
        convert = b.sitofp if a.kind == "signed" else b.uitofp
        bits = fl.as_int(convert(x, value_type(d)))
    else:
        if a.kind == "signed":
            wide = b.sext(x, I64) if a.bits < 64 else x
            sign = b.icmp_signed("<", wide, _i64(0))
            mant = b.select(sign, b.neg(wide), wide)
        else:
            sign, mant = I1(0), b.zext(x, I64) if a.bits < 64 else x
        rounded = _round(fl, sign, mant, _i64(0), fmt, rnd, False)
        zero = b.icmp_unsigned("==", mant, _i64(0))
        bits = _narrow(fl, b.select(zero, _i64(0), rounded), d.bits)
    fl.write(inst.operands[0], _finish_float(fl, inst, bits, fmt), d)


def _finish_float(fl: FunctionLowering, inst: ir.Instruction, bits: ll.Value,
                  fmt: Format) -> ll.Value:
    """The result modifiers of a float destination: .ftz (f32), .sat."""
    if inst.spec.get("ftz") and fmt is FORMATS["f32"]:
        bits = _flush(fl, bits, fmt)
    if inst.spec.get("sat"):
        bits = _saturate(fl, bits, fmt)
    return bits


def _widens(d: Type, a: Type) -> bool:
    """Whether every value of `a` is a value of `d` (no rounding)."""
    return (a.name, d.name) in (("f16", "f32"), ("f16", "f64"), ("bf16", "f32"),
                                ("bf16", "f64"), ("f32", "f64"))


def _float_to_float(fl: FunctionLowering, inst: ir.Instruction, d: Type, a: Type) -> None:
    b = fl.b
    if d is a and a.name == "f32" and inst.spec.get("sat") and not inst.spec.get("relu") \
            and _check_rounding(fl, inst, INT_ROUNDING, False) is None:
        x = fl.read(inst.operands[1], a)
        fl.write(inst.operands[0], _saturate_f32(fl, x, bool(inst.spec.get("ftz"))), d)
        return
    src, dst = FORMATS[a.name], FORMATS[d.name]
    bits = _bits(fl, inst.operands[1], a.name)
    if inst.spec.get("ftz") and a.name == "f32":  # on the H100 this also makes NaN canonical
        bits = _flush(fl, bits, src)
        bits = b.select(_is_nan(fl, bits, src), I32(CANONICAL_NAN["f32"]), bits)
    if d is a:
        rnd = _check_rounding(fl, inst, INT_ROUNDING, False)
        result = _round_same(fl, bits, a, rnd)
    elif _widens(d, a):
        _check_rounding(fl, inst, (), False)
        result = _widen(fl, bits, d, a)
    else:
        rnd = _check_rounding(fl, inst, FLOAT_ROUNDING[:4], True)
        result = _narrow_float(fl, bits, d, a, rnd, bool(inst.spec.get("satfinite")))
    if inst.spec.get("relu"):
        result = _relu(fl, result, dst, CANONICAL_NAN[d.name])
    if inst.spec.get("ftz") and a.name == "bf16" and d.name == "f32":  # as on the H100
        result = b.select(_is_nan(fl, result, dst), I32(CANONICAL_NAN["f32"]), result)
    fl.write(inst.operands[0], _finish_float(fl, inst, result, dst), d)


def _round_same(fl: FunctionLowering, bits: ll.Value, t: Type, rnd: str | None) -> ll.Value:
    """cvt.f32.f32 (with .ftz/.sat) and cvt.rni.f32.f32 (round to an integral value); NaN
    gives the canonical NaN (f64: the NaN made quiet), as on the H100."""
    b = fl.b
    fmt = FORMATS[t.name]
    nan = _is_nan(fl, bits, fmt)
    if rnd is not None and t.bits == 16:
        # Widen to f32 exactly; an integral f16/bf16 value narrows back exactly.
        wide = b.bitcast(_widen(fl, bits, TYPES["f32"], t), ll.FloatType())
        integral = b.zext(fl.as_int(_round_integral(fl, wide, rnd)), I64)
        bits = _narrow(fl, _convert_bits(fl, integral, FORMATS["f32"], fmt, "rn", False,
                                         _i64(0)), 16)
    elif rnd is not None:
        float_type = ll.FloatType() if t.bits == 32 else ll.DoubleType()
        bits = fl.as_int(_round_integral(fl, b.bitcast(bits, float_type), rnd))
    if t.name == "f64":  # the H100 keeps an f64 NaN's payload (made quiet)
        return b.select(nan, b.or_(bits, ll.Constant(bits.type, 1 << 51)), bits)
    return b.select(nan, ll.Constant(bits.type, CANONICAL_NAN[t.name]), bits)


def _widen(fl: FunctionLowering, bits: ll.Value, d: Type, a: Type) -> ll.Value:
    """An exact conversion to a wider format. NaN: f16 -> f32 gives the canonical NaN, bf16 ->
    f32 keeps the bits, into f64 the payload is kept and made quiet (as on the H100)."""
    b = fl.b
    if a.name == "bf16":
        wide = b.shl(b.zext(bits, I32), I32(16))
        if d.name == "f32":
            return wide
        return fl.as_int(b.fpext(b.bitcast(wide, ll.FloatType()), ll.DoubleType()))
    source = b.bitcast(bits, ll.HalfType() if a.name == "f16" else ll.FloatType())
    result = fl.as_int(b.fpext(source, value_type(d)))
    if (a.name, d.name) == ("f16", "f32"):
        nan = _is_nan(fl, bits, FORMATS["f16"])
        result = b.select(nan, ll.Constant(I32, CANONICAL_NAN["f32"]), result)
    return result


def _narrow_nan(fl: FunctionLowering, bits: ll.Value, d: Type, a: Type) -> ll.Value:
    """The NaN a narrowing conversion gives (as on the H100): from f64 the IEEE result (sign
    kept, made quiet, the payload's leading bits kept); otherwise the canonical NaN."""
    if a.name != "f64":
        return _i64(CANONICAL_NAN[d.name])
    b = fl.b
    fmt = FORMATS[d.name]
    sign = b.shl(b.zext(_sign_bit(fl, bits), I64), _i64(fmt.width - 1))
    payload = b.and_(b.lshr(bits, _i64(52 - fmt.mbits)), _i64((1 << fmt.mbits) - 1))
    quiet = fmt.inf_bits | (1 << (fmt.mbits - 1))
    return b.or_(b.or_(sign, payload), _i64(quiet))


def _narrow_float(fl: FunctionLowering, bits: ll.Value, d: Type, a: Type, rnd: str,
                  satfinite: bool) -> ll.Value:
    b = fl.b
    nan = _narrow_nan(fl, bits, d, a)
    native = rnd == "rn" and not satfinite and (a.name, d.name) in (("f64", "f32"),
                                                                  ("f32", "f16"))
    if native:
        source = b.bitcast(bits, value_type(a))
        result = fl.as_int(b.fptrunc(source, value_type(d)))
        return b.select(_is_nan(fl, bits, FORMATS[a.name]), _narrow(fl, nan, d.bits), result)
    if rnd == "rn" and not satfinite and (a.name, d.name) == ("f32", "bf16"):
        # Round half to even on the bit pattern: a carry out of the fraction moves into the
        # exponent (up to infinity) as it should.
        odd = b.and_(b.lshr(bits, I32(16)), I32(1))
        result = b.trunc(b.lshr(b.add(bits, b.add(I32(0x7FFF), odd)), I32(16)), I16)
        return b.select(_is_nan(fl, bits, FORMATS["f32"]), I16(CANONICAL_NAN["bf16"]), result)
    wide = b.zext(bits, I64) if bits.type.width < 64 else bits
    converted = _convert_bits(fl, wide, FORMATS[a.name], FORMATS[d.name], rnd, satfinite, nan)
    return _narrow(fl, converted, d.bits)


# --- packed results -----------------------------------------------------------------------------

def _cvt_half_pair(fl: FunctionLowering, inst: ir.Instruction, dname: str) -> None:
    """cvt.frnd2{.relu}{.satfinite}.{f16x2,bf16x2}.f32 d, a, b: a goes to the upper half."""
    half = TYPES[dname[:-2]]
    f32 = TYPES["f32"]
    rnd = _check_rounding(fl, inst, ("rn", "rz"), True)
    satfinite = bool(inst.spec.get("satfinite"))
    halves = []
    for operand in inst.operands[1:3]:
        bits = _bits(fl, operand, "f32")
        result = _narrow_float(fl, bits, half, f32, rnd, satfinite)
        if inst.spec.get("relu"):
            result = _relu(fl, result, FORMATS[half.name], CANONICAL_NAN[half.name])
        halves.append(fl.b.zext(result, I32))
    packed = fl.b.or_(fl.b.shl(halves[0], I32(16)), halves[1])
    fl.write(inst.operands[0], packed, "b32")


def _cvt_tf32(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """cvt.{rna,rn,rz}{.satfinite}{.relu}.tf32.f32 d, a: an f32 bit pattern whose low 13
    fraction bits are zero. NaN: .rna keeps the truncated bits (as the H100 does: a signalling
    NaN whose payload lies in the low bits becomes infinity), .rn/.rz give 0x7FFFE000."""
    rnd = _check_rounding(fl, inst, ("rna", "rn", "rz"), True)
    b = fl.b
    x = _bits(fl, inst.operands[1], "f32")
    fmt = FORMATS["f32"]
    mask = I32(0xFFFFE000)
    if rnd == "rna":
        increment = I32(0x1000)
    elif rnd == "rn":
        increment = b.add(I32(0xFFF), b.and_(b.lshr(x, I32(13)), I32(1)))
    else:
        increment = I32(0)
    nan = _is_nan(fl, x, fmt)
    result = b.and_(b.add(x, b.select(nan, I32(0), increment)), mask)
    if rnd != "rna":
        result = b.select(nan, I32(0x7FFFE000), result)
    if inst.spec.get("satfinite"):
        # Too large gives the largest finite tf32 of the sign; with .rna the H100 also takes
        # one unit off a NaN (which stays a NaN).
        limit = b.icmp_unsigned(">=", b.and_(result, I32(0x7FFFFFFF)), I32(0x7F800000))
        fixed = b.or_(b.and_(result, I32(0x80000000)), I32(0x7F7FE000))
        if rnd == "rna":
            fixed = b.select(nan, b.sub(result, I32(0x2000)), fixed)
        else:
            fixed = b.select(nan, result, fixed)
        result = b.select(limit, fixed, result)
    if inst.spec.get("relu"):
        result = _relu(fl, result, fmt, 0x7FFFE000)
    fl.write(inst.operands[0], result, "b32")


def _cvt_narrow_pair(fl: FunctionLowering, inst: ir.Instruction, dname: str,
                     aname: str) -> None:
    """The 8/6/4-bit formats, two to a register, the first source (or the upper half of a
    packed source) in the upper element:
      cvt.rn.satfinite{.relu}.f8x2type.f32 d, a, b;   cvt.rn.satfinite{.relu}.f8x2type.f16x2 d, a;
      cvt.rn{.relu}.{f16x2,bf16x2}.f8x2type d, a;     (and the same for the f6x2 and f4x2 types)
    NaN becomes the format's NaN (0x7F for e4m3 and e5m2) or, where it has none, +MAX_NORM."""
    _check_rounding(fl, inst, ("rn",), True)
    relu = bool(inst.spec.get("relu"))
    b = fl.b
    if dname in NARROW:
        if not inst.spec.get("satfinite"):
            raise _invalid(fl, inst, f"conversion to .{dname} needs .satfinite")
        element, size = NARROW[dname]
        fmt = FORMATS[element]
        if aname == "f32":
            sources = [(_bits(fl, o, "f32"), FORMATS["f32"]) for o in inst.operands[1:3]]
        elif aname in ("f16x2", "bf16x2"):
            packed = _bits(fl, inst.operands[1], "b32")
            half = FORMATS[aname[:-2]]
            sources = [(b.lshr(packed, I32(16)), half), (b.and_(packed, I32(0xFFFF)), half)]
        else:
            raise fl.unsupported(inst, f"conversion from .{aname} to .{dname}")
        nan = fmt.magnitude_mask if fmt.kind != "finite" else fmt.max_bits
        results = []
        for bits, source in sources:
            result = _convert_bits(fl, b.zext(bits, I64), source, fmt, "rn", True, _i64(nan))
            if relu:
                result = _relu(fl, result, fmt, nan)
            results.append(result)
        packed_result = b.or_(b.shl(results[0], _i64(size)), results[1])
        fl.write(inst.operands[0], _narrow(fl, packed_result, 2 * size), f"b{max(2 * size, 8)}")
        return
    if dname not in ("f16x2", "bf16x2"):
        raise fl.unsupported(inst, f"conversion from .{aname} to .{dname}")
    element, size = NARROW[aname]
    fmt, half = FORMATS[element], FORMATS[dname[:-2]]
    source = b.zext(_bits(fl, inst.operands[1], f"b{max(2 * size, 8)}"), I64)
    results = []
    for shift in (size, 0):
        bits = b.and_(b.lshr(source, _i64(shift)), _i64((1 << size) - 1))
        result = _convert_bits(fl, bits, fmt, half, "rn", False, _i64(CANONICAL_NAN["f16"]))
        if relu:
            result = _relu(fl, result, half, CANONICAL_NAN["f16"])
        results.append(result)
    packed_result = b.or_(b.shl(results[0], _i64(16)), results[1])
    fl.write(inst.operands[0], b.trunc(packed_result, I32), "b32")


def _cvt_pack(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """cvt.pack.sat.convertType.s32{.b32} d, a, b{, c}: a and b clamped to convertType, a in
    the upper element; for 8/4/2-bit types c's low bits fill the rest of d above them."""
    b = fl.b
    name = inst.spec.types[0]
    size = int(name[1:])
    signed = name[0] == "s"
    low, high = ((-(1 << (size - 1)), (1 << (size - 1)) - 1) if signed else (0, (1 << size) - 1))
    elements = []
    for operand in inst.operands[1:3]:
        x = fl.read(operand, "s32")
        x = b.select(b.icmp_signed("<", x, I32(low)), I32(low), x)
        x = b.select(b.icmp_signed(">", x, I32(high)), I32(high), x)
        elements.append(b.and_(x, I32((1 << size) - 1)))
    result = b.or_(b.shl(elements[0], I32(size)), elements[1])
    if size < 16:
        if len(inst.operands) < 4:
            raise _invalid(fl, inst, f"cvt.pack to .{name} needs the operand c")
        rest = fl.read(inst.operands[3], "b32")
        result = b.or_(result, b.shl(rest, I32(2 * size)))
    fl.write(inst.operands[0], result, "b32")
