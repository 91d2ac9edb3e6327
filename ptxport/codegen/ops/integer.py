"""Integer and extended-precision arithmetic (PTX ISA 9.7.1, 9.7.2).

add sub (.sat, .cc, packed .u16x2/.s16x2/.u8x4/.s8x4), addc subc, mul mad (.lo/.hi/.wide, .cc)
madc, mul24 mad24, sad, div rem, abs neg, min max (.relu), dp4a dp2a.

`add sub mul mad div abs neg min max` are also floating-point instructions: their float forms
are lowered by ops/float_arith.py (`FLOAT_FORMS`), to which these lowerings hand them.

What the manual leaves undefined, chosen as NVIDIA's hardware does (measured on an H100,
driver 580), and never a host trap: div and rem by zero give all ones, for every type, signed
or not; div.s MIN / -1 gives MIN and rem.s MIN / -1 gives 0.

The carry flag CC.CF is `FunctionLowering.carry_flag()`. NVIDIA's hardware subtracts by adding
the complement, so after sub.cc/subc the flag is the carry of a + ~b + 1 (1 when nothing was
borrowed) and subc computes a + ~b + CC.CF: the manual's `d = a - (b + borrow)` for chains of
subtractions, and what the hardware gives when additions and subtractions are mixed.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import I1, I32, FunctionLowering, const_int, lowering
from ptxport.codegen.ops.float_arith import FLOAT_FORMS
from ptxport.ir import nodes as ir
from ptxport.ir.types import TYPES, Type

__all__ = ["intrinsic", "lanes_of", "join_lanes"]


# --- helpers shared with logic.py and video.py --------------------------------------------------

def intrinsic(fl: FunctionLowering, name: str, args: list, ret: ll.Type | None = None,
              overload: ll.Type | None = None) -> ll.Value:
    """Call the LLVM intrinsic `name`, overloaded on the type of the first argument (or on
    `overload`), declaring it in the module on first use."""
    base = overload or args[0].type
    suffix = (f"v{base.count}i{base.element.width}" if isinstance(base, ll.VectorType)
              else f"i{base.width}")
    full = f"{name}.{suffix}"
    module = fl.llfn.module
    fn = module.globals.get(full)
    if fn is None:
        fn = ll.Function(module, ll.FunctionType(ret or args[0].type, [a.type for a in args]),
                         name=full)
    return fl.b.call(fn, args)


def lanes_of(fl: FunctionLowering, v: ll.Value, t: Type) -> ll.Value:
    """A packed integer (.u16x2, .s8x4, ...) as an LLVM vector of its lanes."""
    return fl.b.bitcast(v, ll.VectorType(ll.IntType(t.lane_bits), t.lanes))


def join_lanes(fl: FunctionLowering, v: ll.Value, t: Type) -> ll.Value:
    return fl.b.bitcast(v, ll.IntType(t.bits))


def _type(inst: ir.Instruction, index: int = 0) -> Type:
    return TYPES[inst.spec.types[index]]


def _splat(type_: ll.Type, value: int) -> ll.Constant:
    if isinstance(type_, ll.VectorType):
        return ll.Constant(type_, [const_int(type_.element, value)] * type_.count)
    return const_int(type_, value)


def _float_form(fl: FunctionLowering, inst: ir.Instruction) -> None:
    lower = FLOAT_FORMS.get(inst.opcode)
    if lower is None:
        raise fl.unsupported(inst, f"floating-point {inst.opcode} is not lowered yet")
    lower(fl, inst)


def _operands(fl: FunctionLowering, inst: ir.Instruction, t: Type, count: int) -> list:
    return [fl.read(o, t) for o in inst.operands[1:1 + count]]


def _extend(fl: FunctionLowering, v: ll.Value, signed: bool, bits: int) -> ll.Value:
    return (fl.b.sext if signed else fl.b.zext)(v, ll.IntType(bits))


def _saturate(fl: FunctionLowering, v: ll.Value, bits: int, signed: bool) -> ll.Value:
    """Clamp the wider signed value `v` to the range of a `bits`-wide integer and narrow it."""
    low, high = ((-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1))
    v = fl.b.select(fl.b.icmp_signed("<", v, const_int(v.type, low)), const_int(v.type, low), v)
    v = fl.b.select(fl.b.icmp_signed(">", v, const_int(v.type, high)), const_int(v.type, high), v)
    return fl.b.trunc(v, ll.IntType(bits))


# --- the carry flag -------------------------------------------------------------------------------

def _add3(fl: FunctionLowering, a, b, carry_in):
    """a + b + carry_in (an i1): the sum and its carry-out."""
    pair = fl.b.uadd_with_overflow(a, b)
    total, carry = fl.b.extract_value(pair, 0), fl.b.extract_value(pair, 1)
    pair = fl.b.uadd_with_overflow(total, fl.b.zext(carry_in, a.type))
    return fl.b.extract_value(pair, 0), fl.b.or_(carry, fl.b.extract_value(pair, 1))


def _carry_in(fl: FunctionLowering, use_flag: bool):
    return fl.b.load(fl.carry_flag()) if use_flag else ll.Constant(I1, 0)


def _carry_types(fl: FunctionLowering, inst: ir.Instruction, t: Type) -> None:
    if t.name not in ("u32", "s32", "u64", "s64"):
        raise fl.unsupported(inst, "the carry flag is defined for .u32/.s32/.u64/.s64 only")


# --- add sub addc subc ----------------------------------------------------------------------------

@lowering("add", "sub")
def add_sub(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """add{.sat}{.cc}.type d, a, b;  sub likewise (packed types lane by lane)."""
    t = _type(inst)
    if t.is_float:
        return _float_form(fl, inst)
    a, b = _operands(fl, inst, t, 2)
    add = inst.opcode == "add"
    if inst.spec.get("cc"):
        _carry_types(fl, inst, t)
        if inst.spec.get("sat"):
            raise fl.unsupported(inst, ".sat with .cc")
        if not add:
            b = fl.b.not_(b)
        result, carry = _add3(fl, a, b, ll.Constant(I1, 0 if add else 1))
        fl.b.store(carry, fl.carry_flag())
    elif t.lanes > 1:
        va, vb = lanes_of(fl, a, t), lanes_of(fl, b, t)
        if inst.spec.get("sat"):
            sign = "s" if t.kind == "signed" else "u"
            vr = intrinsic(fl, f"llvm.{sign}{'add' if add else 'sub'}.sat", [va, vb])
        else:
            vr = fl.b.add(va, vb) if add else fl.b.sub(va, vb)
        result = join_lanes(fl, vr, t)
    elif inst.spec.get("sat"):
        if t.name != "s32":
            raise fl.unsupported(inst, ".sat is defined for .s32 (and packed types) only")
        result = intrinsic(fl, "llvm.sadd.sat" if add else "llvm.ssub.sat", [a, b])
    else:
        result = fl.b.add(a, b) if add else fl.b.sub(a, b)
    fl.write(inst.operands[0], result, t)


@lowering("addc", "subc")
def addc_subc(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """addc{.cc}.type d, a, b: d = a + b + CC.CF;  subc{.cc}: d = a + ~b + CC.CF (see the
    module notes)."""
    t = _type(inst)
    _carry_types(fl, inst, t)
    a, b = _operands(fl, inst, t, 2)
    if inst.opcode == "subc":
        b = fl.b.not_(b)
    result, carry = _add3(fl, a, b, _carry_in(fl, True))
    if inst.spec.get("cc"):
        fl.b.store(carry, fl.carry_flag())
    fl.write(inst.operands[0], result, t)


# --- mul mad madc ---------------------------------------------------------------------------------

def _wide_type(fl: FunctionLowering, inst: ir.Instruction, t: Type) -> Type:
    if t.bits > 32:
        raise fl.unsupported(inst, ".wide is defined for 16- and 32-bit types only")
    return TYPES[f"{'s' if t.kind == 'signed' else 'u'}{t.bits * 2}"]


def _product(fl: FunctionLowering, inst: ir.Instruction, t: Type, a, b):
    """mul's product by mode: .lo (low half), .hi (high half), .wide (full, twice as wide).
    Returns the value and its PTX type."""
    mode = inst.spec.get("mode", "lo")
    if mode == "lo":
        return fl.b.mul(a, b), t
    signed = t.kind == "signed"
    if mode == "wide":
        wide = _wide_type(fl, inst, t)
        return fl.b.mul(_extend(fl, a, signed, wide.bits), _extend(fl, b, signed, wide.bits)), wide
    if 2 * t.bits > fl.target.widest_integer:
        return _high_half(fl, a, b, signed), t
    product = fl.b.mul(_extend(fl, a, signed, 2 * t.bits), _extend(fl, b, signed, 2 * t.bits))
    high = fl.b.lshr(product, const_int(product.type, t.bits))
    return fl.b.trunc(high, ll.IntType(t.bits)), t


def _high_half(fl: FunctionLowering, a: ll.Value, b: ll.Value, signed: bool) -> ll.Value:
    """The high half of the full product of two integers, from products of their halves (no
    integer twice as wide): unsigned, then corrected for negative operands when `signed`
    (a's sign subtracts b, b's sign subtracts a, modulo 2**bits)."""
    bld = fl.b
    typ = a.type
    half = typ.width // 2
    mask, shift = const_int(typ, (1 << half) - 1), const_int(typ, half)
    a_lo, a_hi = bld.and_(a, mask), bld.lshr(a, shift)
    b_lo, b_hi = bld.and_(b, mask), bld.lshr(b, shift)
    low, cross_a, cross_b = bld.mul(a_lo, b_lo), bld.mul(a_lo, b_hi), bld.mul(a_hi, b_lo)
    middle = bld.add(bld.add(bld.lshr(low, shift), bld.and_(cross_a, mask)),
                     bld.and_(cross_b, mask))
    high = bld.add(bld.add(bld.mul(a_hi, b_hi), bld.lshr(cross_a, shift)),
                   bld.add(bld.lshr(cross_b, shift), bld.lshr(middle, shift)))
    if not signed:
        return high
    zero = ll.Constant(typ, 0)
    high = bld.sub(high, bld.select(bld.icmp_signed("<", a, zero), b, zero))
    return bld.sub(high, bld.select(bld.icmp_signed("<", b, zero), a, zero))


@lowering("mul")
def mul(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """mul.mode.type d, a, b;  .mode = .lo/.hi/.wide"""
    t = _type(inst)
    if t.is_float:
        return _float_form(fl, inst)
    a, b = _operands(fl, inst, t, 2)
    result, rt = _product(fl, inst, t, a, b)
    fl.write(inst.operands[0], result, rt)


@lowering("mad", "madc")
def mad(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """mad.mode{.cc}.type d, a, b, c: d = product(a, b) + c;  mad.hi.sat.s32 saturates the
    sum;  madc.mode{.cc}.type adds CC.CF as well."""
    t = _type(inst)
    if t.is_float:
        return _float_form(fl, inst)
    carry_in, carry_out = inst.opcode == "madc", bool(inst.spec.get("cc"))
    if carry_in or carry_out:
        _carry_types(fl, inst, t)
        if inst.spec.get("mode") == "wide" or inst.spec.get("sat"):
            raise fl.unsupported(inst, "the carry flag with .wide or .sat")
    a, b = _operands(fl, inst, t, 2)
    product, rt = _product(fl, inst, t, a, b)
    c = fl.read(inst.operands[3], rt)
    if inst.spec.get("sat"):
        if t.name != "s32" or inst.spec.get("mode") != "hi":
            raise fl.unsupported(inst, ".sat is defined for mad.hi.s32 only")
        total = fl.b.add(fl.b.sext(product, ll.IntType(64)), fl.b.sext(c, ll.IntType(64)))
        result = _saturate(fl, total, 32, True)
    elif carry_in or carry_out:
        result, carry = _add3(fl, product, c, _carry_in(fl, carry_in))
        if carry_out:
            fl.b.store(carry, fl.carry_flag())
    else:
        result = fl.b.add(product, c)
    fl.write(inst.operands[0], result, rt)


# --- mul24 mad24 sad ------------------------------------------------------------------------------

def _product24(fl: FunctionLowering, inst: ir.Instruction, a, b) -> ll.Value:
    """The 48-bit product of the low 24 bits of a and b, as .lo (bits 31..0) or .hi (47..16)."""
    signed = _type(inst).kind == "signed"
    i64 = ll.IntType(64)

    def low24(v):
        v = fl.b.and_(v, I32(0xFFFFFF))
        v = _extend(fl, v, False, 64)
        if signed:  # sign-extend from bit 23
            v = fl.b.ashr(fl.b.shl(v, i64(40)), i64(40))
        return v

    product = fl.b.mul(low24(a), low24(b))
    if inst.spec.get("mode", "lo") == "hi":
        product = fl.b.lshr(product, i64(16))
    return fl.b.trunc(product, I32)


@lowering("mul24")
def mul24(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """mul24.mode.type d, a, b;  .mode = .hi/.lo;  .type = .u32/.s32"""
    t = _type(inst)
    a, b = _operands(fl, inst, t, 2)
    fl.write(inst.operands[0], _product24(fl, inst, a, b), t)


@lowering("mad24")
def mad24(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """mad24.mode.type d, a, b, c;  mad24.hi.sat.s32 saturates the sum."""
    t = _type(inst)
    a, b, c = _operands(fl, inst, t, 3)
    product = _product24(fl, inst, a, b)
    if inst.spec.get("sat"):
        if t.name != "s32" or inst.spec.get("mode") != "hi":
            raise fl.unsupported(inst, ".sat is defined for mad24.hi.s32 only")
        total = fl.b.add(fl.b.sext(product, ll.IntType(64)), fl.b.sext(c, ll.IntType(64)))
        result = _saturate(fl, total, 32, True)
    else:
        result = fl.b.add(product, c)
    fl.write(inst.operands[0], result, t)


@lowering("sad")
def sad(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """sad.type d, a, b, c: d = c + |a - b| (the difference taken without overflow)."""
    t = _type(inst)
    a, b, c = _operands(fl, inst, t, 3)
    less = (fl.b.icmp_signed if t.kind == "signed" else fl.b.icmp_unsigned)("<", a, b)
    difference = fl.b.select(less, fl.b.sub(b, a), fl.b.sub(a, b))
    fl.write(inst.operands[0], fl.b.add(c, difference), t)


# --- div rem --------------------------------------------------------------------------------------

@lowering("div", "rem")
def div_rem(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """div.type d, a, b;  rem.type d, a, b (integer; see the module notes for b = 0)."""
    t = _type(inst)
    if t.is_float:
        return _float_form(fl, inst)
    a, b = _operands(fl, inst, t, 2)
    zero, one, ones = (const_int(a.type, v) for v in (0, 1, -1))
    by_zero = fl.b.icmp_unsigned("==", b, zero)
    unsafe = by_zero
    if t.kind == "signed":
        # MIN / -1 would trap on the host; divided by 1 instead, it gives MIN and 0, the
        # two's complement results.
        minimum = const_int(a.type, 1 << (t.bits - 1))
        overflow = fl.b.and_(fl.b.icmp_unsigned("==", a, minimum),
                             fl.b.icmp_unsigned("==", b, ones))
        unsafe = fl.b.or_(by_zero, overflow)
    safe = fl.b.select(unsafe, one, b)
    signed = t.kind == "signed"
    if inst.opcode == "div":
        result = (fl.b.sdiv if signed else fl.b.udiv)(a, safe)
    else:
        result = (fl.b.srem if signed else fl.b.urem)(a, safe)
    fl.write(inst.operands[0], fl.b.select(by_zero, ones, result), t)


# --- abs neg min max ------------------------------------------------------------------------------

@lowering("abs", "neg")
def abs_neg(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """abs.type d, a;  neg.type d, a  (the most negative value maps to itself)."""
    t = _type(inst)
    if t.is_float:
        return _float_form(fl, inst)
    a = fl.read(inst.operands[1], t)
    v = lanes_of(fl, a, t) if t.lanes > 1 else a
    negated = fl.b.sub(_splat(v.type, 0), v)
    if inst.opcode == "abs":
        negated = fl.b.select(fl.b.icmp_signed("<", v, _splat(v.type, 0)), negated, v)
    fl.write(inst.operands[0], join_lanes(fl, negated, t) if t.lanes > 1 else negated, t)


@lowering("min", "max")
def min_max(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """min{.relu}.type d, a, b;  max likewise (packed types lane by lane; .relu clamps
    negative results to 0)."""
    t = _type(inst)
    if t.is_float:
        return _float_form(fl, inst)
    if len(inst.operands) != 3:
        raise fl.unsupported(inst, "three-input min/max is floating point only")
    a, b = _operands(fl, inst, t, 2)
    if t.lanes > 1:
        a, b = lanes_of(fl, a, t), lanes_of(fl, b, t)
    compare = fl.b.icmp_signed if t.kind == "signed" else fl.b.icmp_unsigned
    result = fl.b.select(compare("<" if inst.opcode == "min" else ">", a, b), a, b)
    if inst.spec.get("relu"):
        if t.kind != "signed":
            raise fl.unsupported(inst, ".relu is defined for signed types only")
        zero = _splat(result.type, 0)
        result = fl.b.select(fl.b.icmp_signed("<", result, zero), zero, result)
    fl.write(inst.operands[0], join_lanes(fl, result, t) if t.lanes > 1 else result, t)


# --- dp4a dp2a ------------------------------------------------------------------------------------

def _part(fl: FunctionLowering, v, index: int, bits: int, signed: bool) -> ll.Value:
    """Field `index` of `bits` bits of the 32-bit v, extended to 32 bits."""
    field = fl.b.trunc(fl.b.lshr(v, I32(index * bits)), ll.IntType(bits))
    return _extend(fl, field, signed, 32)


@lowering("dp4a", "dp2a")
def dot_product(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """dp4a.atype.btype d, a, b, c: d = c + sum of a.byte[i] * b.byte[i];
    dp2a.mode.atype.btype: d = c + a.h0 * b.byte[k] + a.h1 * b.byte[k+1], k = 0 (.lo) or
    2 (.hi). Bytes and half-words are extended by their operand's type; arithmetic wraps."""
    types = inst.spec.types
    atype, btype = TYPES[types[0]], TYPES[types[-1]]
    a = fl.read(inst.operands[1], "b32")
    b = fl.read(inst.operands[2], "b32")
    c = fl.read(inst.operands[3], "b32")
    a_signed, b_signed = atype.kind == "signed", btype.kind == "signed"
    total = c
    if inst.opcode == "dp4a":
        pairs = [(_part(fl, a, i, 8, a_signed), _part(fl, b, i, 8, b_signed)) for i in range(4)]
    else:
        first = 2 if inst.spec.get("mode", "lo") == "hi" else 0
        pairs = [(_part(fl, a, i, 16, a_signed), _part(fl, b, first + i, 8, b_signed))
                 for i in range(2)]
    for x, y in pairs:
        total = fl.b.add(total, fl.b.mul(x, y))
    result = "s32" if a_signed or b_signed else "u32"
    fl.write(inst.operands[0], total, result)

