"""Floating-point formats and the bit-level operations every floating-point lowering shares:
f16, bf16, f32 and f64 (PTX ISA 5.2.1) and the packed f16x2, bf16x2 (9.7.4) and f32x2 (9.7.3)
operands read and written lane by lane, sign and magnitude bits, .ftz's flushing of subnormal
operands, the NaN results NVIDIA's hardware gives, and exact conversions between the formats.

Its neighbours: float_rounding.py rounds exact results to these formats, float_arith.py and
float_special.py lower the instructions with both, and compare.py reads and widens the lanes
it compares with this module.

Where the manual leaves a NaN result open, NVIDIA's hardware decides (measured on an H100): an
f32, f16 or bf16 NaN result is the canonical NaN, all ones but the sign (`canonical`); an f64
NaN result keeps the payload of a NaN operand, quietened, and an invalid operation on numbers
gives 0xFFF8000000000000 (`f64_nan`).
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir as ll

from ptxport.codegen.lower import (
    I16,
    I32,
    I64,
    FunctionLowering,
    declare,
    expect,
    one_lane,
    value_type,
)
from ptxport.ir import nodes as ir
from ptxport.ir.types import TYPES, Type

__all__ = [
    "BF16", "F16", "F32", "F32_LL", "F64", "F64_LL", "FTZ_TYPES", "FloatFormat",
    "absolute", "canonical", "const_bits", "constant", "element", "f64_nan", "fconst",
    "float_call", "flush", "from_bits", "from_f32", "is_nan", "is_negative", "magnitude_bits",
    "quiet", "read_lanes", "select", "to_bits", "to_f32", "to_f64", "widen", "with_sign",
    "write_lanes", "zero_like",
]

F32_LL, F64_LL = ll.FloatType(), ll.DoubleType()


@dataclass(frozen=True)
class FloatFormat:
    """An IEEE binary format: `precision` significand bits (the hidden one included), `emin`
    the exponent of the smallest normal, `nan` the NaN NVIDIA's hardware produces."""

    name: str
    bits: int
    precision: int
    emin: int
    nan: int

    @property
    def ll(self) -> ll.Type:
        return value_type(TYPES[self.name])

    @property
    def int(self) -> ll.IntType:
        return ll.IntType(self.bits)

    @property
    def sign(self) -> int:
        return 1 << (self.bits - 1)

    @property
    def infinity(self) -> int:
        return ((1 << (self.bits - self.precision)) - 1) << (self.precision - 1)

    @property
    def smallest_normal(self) -> float:
        return 2.0 ** self.emin


F16 = FloatFormat("f16", 16, 11, -14, 0x7FFF)
BF16 = FloatFormat("bf16", 16, 8, -126, 0x7FFF)
F32 = FloatFormat("f32", 32, 24, -126, 0x7FFF_FFFF)
F64 = FloatFormat("f64", 64, 53, -1022, 0xFFF8_0000_0000_0000)
_ELEMENTS = {"f16": (F16, 1), "f16x2": (F16, 2), "bf16": (BF16, 1), "bf16x2": (BF16, 2),
             "f32": (F32, 1), "f32x2": (F32, 2), "f64": (F64, 1)}
FTZ_TYPES = ("f32", "f32x2", "f16", "f16x2")


# --- operands: scalars and packed lanes ---------------------------------------------------------

def element(fl: FunctionLowering, inst: ir.Instruction, t: Type) -> tuple[FloatFormat, int]:
    if t.name not in _ELEMENTS:
        raise fl.unsupported(inst, f"floating-point .{t.name} operands")
    return _ELEMENTS[t.name]


def read_lanes(fl: FunctionLowering, operand, t: Type, fmt: FloatFormat, count: int) -> list:
    """The lanes of a (packed) operand; lane 0 is the low half of the register."""
    if count == 1:
        return [fl.read(operand, t)]
    bits = fl.read(operand, TYPES[f"b{t.bits}"])
    lanes = []
    for i in range(count):
        part = fl.b.lshr(bits, ll.Constant(bits.type, i * fmt.bits)) if i else bits
        lanes.append(fl.b.bitcast(fl.b.trunc(part, fmt.int), fmt.ll))
    return lanes


def write_lanes(fl: FunctionLowering, dest, lanes: list, t: Type, fmt: FloatFormat) -> None:
    if len(lanes) == 1:
        fl.write(dest, lanes[0], t)
        return
    wide = ll.IntType(t.bits)
    packed = None
    for i, lane in enumerate(lanes):
        part = fl.b.zext(fl.b.bitcast(lane, fmt.int), wide)
        if i:
            part = fl.b.shl(part, ll.Constant(wide, i * fmt.bits))
        packed = part if packed is None else fl.b.or_(packed, part)
    fl.write(dest, packed, TYPES[f"b{t.bits}"])


# --- bits, conversions and the small operations everything uses --------------------------------

def float_call(fl: FunctionLowering, name: str, *args: ll.Value) -> ll.Value:
    """llvm.<name> on one floating type (float or double)."""
    t = one_lane(args[0].type)
    suffix = "f64" if t == F64_LL else "f32"
    fn = declare(fl.llfn.module, f"llvm.{name}.{suffix}", t, [t] * len(args))
    return fl.b.call(fn, list(args))


def fconst(t: ll.Type, value: float) -> ll.Constant:
    return ll.Constant(t, value)


def to_bits(fl: FunctionLowering, v: ll.Value, fmt: FloatFormat) -> ll.Value:
    return fl.b.bitcast(v, fmt.int)


def from_bits(fl: FunctionLowering, bits: ll.Value, fmt: FloatFormat) -> ll.Value:
    return fl.b.bitcast(bits, fmt.ll)


def const_bits(fmt: FloatFormat, bits: int) -> ll.Constant:
    return ll.Constant(fmt.int, bits & ((1 << fmt.bits) - 1))


def constant(fl: FunctionLowering, fmt: FloatFormat, bits: int) -> ll.Value:
    return from_bits(fl, const_bits(fmt, bits), fmt)


def is_nan(fl: FunctionLowering, v: ll.Value) -> ll.Value:
    return fl.b.fcmp_unordered("uno", v, v)


def is_negative(fl: FunctionLowering, v: ll.Value, fmt: FloatFormat) -> ll.Value:
    """The sign bit (of NaNs and zeros too)."""
    return fl.b.icmp_signed("<", to_bits(fl, v, fmt), const_bits(fmt, 0))


def magnitude_bits(fl: FunctionLowering, v: ll.Value, fmt: FloatFormat) -> ll.Value:
    return fl.b.and_(to_bits(fl, v, fmt), const_bits(fmt, fmt.sign - 1))


def absolute(fl: FunctionLowering, v: ll.Value, fmt: FloatFormat) -> ll.Value:
    return from_bits(fl, magnitude_bits(fl, v, fmt), fmt)


def with_sign(fl: FunctionLowering, v: ll.Value, negative: ll.Value, fmt: FloatFormat) -> ll.Value:
    sign = fl.b.select(negative, const_bits(fmt, fmt.sign), const_bits(fmt, 0))
    return from_bits(fl, fl.b.or_(magnitude_bits(fl, v, fmt), sign), fmt)


def zero_like(fl: FunctionLowering, v: ll.Value, fmt: FloatFormat) -> ll.Value:
    """A zero with v's sign."""
    return from_bits(fl, fl.b.and_(to_bits(fl, v, fmt), const_bits(fmt, fmt.sign)), fmt)


def _is_subnormal(fl: FunctionLowering, v: ll.Value, fmt: FloatFormat) -> ll.Value:
    magnitude = magnitude_bits(fl, v, fmt)
    return fl.b.and_(fl.b.icmp_unsigned("!=", magnitude, const_bits(fmt, 0)),
                     fl.b.icmp_unsigned("<", magnitude, const_bits(fmt, 1 << (fmt.precision - 1))))


def flush(fl: FunctionLowering, v: ll.Value, fmt: FloatFormat) -> ll.Value:
    """.ftz on an operand: a subnormal becomes a zero of its sign."""
    return fl.b.select(_is_subnormal(fl, v, fmt), zero_like(fl, v, fmt), v)


def _is_nan_bits(fl: FunctionLowering, v: ll.Value, fmt: FloatFormat) -> ll.Value:
    return fl.b.icmp_unsigned(">", magnitude_bits(fl, v, fmt), const_bits(fmt, fmt.infinity))


def select(fl: FunctionLowering, condition: ll.Value, x: ll.Value, y: ll.Value,
           fmt: FloatFormat) -> ll.Value:
    """condition ? x : y on the bits. Where NaNs are chosen between: LLVM takes NaNs to be
    interchangeable and may fold away a float select between two of them."""
    return from_bits(fl, fl.b.select(condition, to_bits(fl, x, fmt), to_bits(fl, y, fmt)), fmt)


def canonical(fl: FunctionLowering, v: ll.Value, fmt: FloatFormat) -> ll.Value:
    """A NaN replaced by fmt's NaN."""
    # a float compares unordered with itself in one instruction; 16-bit formats test bits
    nan = is_nan(fl, v) if isinstance(one_lane(v.type), (ll.FloatType, ll.DoubleType)) \
        else _is_nan_bits(fl, v, fmt)
    return select(fl, nan, constant(fl, fmt, fmt.nan), v, fmt)


def quiet(fl: FunctionLowering, v: ll.Value) -> ll.Value:
    """An f64 NaN with its quiet bit set."""
    return from_bits(fl, fl.b.or_(to_bits(fl, v, F64), ll.Constant(I64, 1 << 51)), F64)


def f64_nan(fl: FunctionLowering, result: ll.Value, operands: list) -> ll.Value:
    """PTX's f64 NaN result: the first NaN of `operands` (in priority order) quietened, else
    the default NaN. `result` is LLVM's, a NaN exactly where PTX's is (its payload is open):
    where the target says so (Target.f64_nan_branch), the payload is chosen in a block of its
    own, entered only where a lane of `result` (a vector of a warp's lanes) is a NaN; a
    number is PTX's result as it is, so the common path pays a test and a branch (a warp's
    32 f64 lanes: 3 adds, a compare and a mask test, not 28 instructions of selects)."""
    if not fl.target.f64_nan_branch or not isinstance(result.type, ll.VectorType):
        # (a scalar's selects are a few instructions: a block of its own cost more in
        # compile time, +20% for libm_double's kernels thread by thread, than it saved)
        return _nan_payload(fl, is_nan(fl, result), result, operands)
    b = fl.b
    before = b.block
    chosen, done = (fl.llfn.append_basic_block(n) for n in ("f64_nan", "f64_nan_done"))
    expect(fl, ll.IRBuilder.cbranch(b, _some_nan(fl, result), chosen, done), likely=False)
    b.position_at_end(chosen)
    fixed = _nan_payload(fl, is_nan(fl, result), result, operands)
    chosen = b.block
    ll.IRBuilder.branch(b, done)
    b.position_at_end(done)
    merged = ll.IRBuilder.phi(b, result.type)
    merged.add_incoming(result, before)
    merged.add_incoming(fixed, chosen)
    return merged


def _some_nan(fl: FunctionLowering, v: ll.Value) -> ll.Value:
    """i1: whether a lane of the f64 vector `v` is a NaN. A vector of more than 8 lanes (a
    power of two) is first folded to 8 by adding its halves: a sum is a NaN where a lane
    added is (and where infinities of both signs meet, which only sends such a vector to
    the exact path), one add a 512-bit register where a compare each would take a mask
    merge too."""
    b = fl.b
    count = v.type.count
    while count > 8 and count & (count - 1) == 0:
        count //= 2
        halves = [ll.IRBuilder.shuffle_vector(b, v, ll.Constant(v.type, None), ll.Constant(
            ll.VectorType(I32, count), list(range(k * count, (k + 1) * count))))
            for k in (0, 1)]
        v = ll.IRBuilder.fadd(b, *halves)
    lanes = ll.IRBuilder.bitcast(b, ll.IRBuilder.fcmp_unordered(b, "uno", v, v),
                                 ll.IntType(count))
    return ll.IRBuilder.icmp_unsigned(b, "!=", lanes, ll.Constant(lanes.type, 0))


def _nan_payload(fl: FunctionLowering, nan: ll.Value, result: ll.Value,
                 operands: list) -> ll.Value:
    """`result`, its NaN lanes (`nan`) replaced by f64_nan's choice."""
    chosen = constant(fl, F64, F64.nan)
    for operand in reversed(operands):
        chosen = select(fl, is_nan(fl, operand), quiet(fl, operand), chosen, F64)
    return select(fl, nan, chosen, result, F64)


def to_f32(fl: FunctionLowering, v: ll.Value, fmt: FloatFormat) -> ll.Value:
    """Exact widening of an f16, bf16 or f32 value."""
    if fmt is F32:
        return v
    if fmt is F16:
        return fl.b.fpext(v, F32_LL)
    bits = fl.b.shl(fl.b.zext(to_bits(fl, v, BF16), I32), ll.Constant(I32, 16))
    return fl.b.bitcast(bits, F32_LL)


def widen(fl: FunctionLowering, v: ll.Value, fmt: FloatFormat) -> ll.Value:
    """A lane as f32 (f16, bf16, f32) or f64, exactly: what comparisons work on."""
    return v if fmt is F64 else to_f32(fl, v, fmt)


def to_f64(fl: FunctionLowering, v: ll.Value, fmt: FloatFormat) -> ll.Value:
    return v if fmt is F64 else fl.b.fpext(to_f32(fl, v, fmt), F64_LL)


def from_f32(fl: FunctionLowering, x: ll.Value, fmt: FloatFormat) -> ll.Value:
    """f32 -> fmt rounded to nearest even (NaNs become some NaN)."""
    if fmt is F32:
        return x
    if fmt is F16:
        return fl.b.fptrunc(x, fmt.ll)
    # bf16 by hand: LLVM lowers this to a libgcc call that older hosts lack.
    bits = fl.b.bitcast(x, I32)
    odd = fl.b.and_(fl.b.lshr(bits, ll.Constant(I32, 16)), ll.Constant(I32, 1))
    rounded = fl.b.add(bits, fl.b.add(odd, ll.Constant(I32, 0x7FFF)))
    upper = fl.b.trunc(fl.b.lshr(rounded, ll.Constant(I32, 16)), I16)
    upper = fl.b.select(is_nan(fl, x), const_bits(BF16, BF16.nan), upper)
    return from_bits(fl, upper, BF16)
