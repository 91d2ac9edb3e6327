"""Logic, shift, bit-field and byte-permute instructions (PTX ISA 9.7.8, the bit instructions
of 9.7.1, and prmt of 9.7.9).

and or xor not cnot lop3 shf shl shr; popc clz bfind fns brev bfe bfi szext bmsk; prmt.

Shift amounts and bit positions are unsigned and may be anything: where LLVM would make a
poison value (a shift by the width or more), the amount is clamped or the result selected
by PTX's rule first.

Checked against an H100 (driver 580), which agrees everywhere but in one corner the manual
defines: bfe.b64/bfi.b64 with a position or length of 256 or more, where the H100 does not
take them mod 256 as the manual's pseudo-code (and the H100 for .b32) does; ptxport keeps the
manual's meaning.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import I1, I32, FunctionLowering, const_int, lowering
from ptxport.codegen.ops.integer import intrinsic
from ptxport.ir import nodes as ir
from ptxport.ir.types import TYPES, Type
from ptxport.ptx.ast import IntImm


def _type(inst: ir.Instruction) -> Type:
    return TYPES[inst.spec.types[0]]


def _umin(fl: FunctionLowering, v, limit: int):
    bound = const_int(v.type, limit)
    return fl.b.select(fl.b.icmp_unsigned("<", v, bound), v, bound)


def _low_mask(fl: FunctionLowering, n, width: int):
    """A mask of the low n bits of a `width`-bit value, for 0 <= n <= width."""
    ones = const_int(ll.IntType(width), -1)
    shifted = fl.b.lshr(ones, fl.b.sub(const_int(n.type, width), _umin(fl, n, width)))
    return fl.b.select(fl.b.icmp_unsigned("==", n, const_int(n.type, 0)),
                       const_int(ll.IntType(width), 0), shifted)


def _as_width(fl: FunctionLowering, v, width: int):
    """An unsigned amount or count as an integer of `width` bits."""
    if v.type.width < width:
        return fl.b.zext(v, ll.IntType(width))
    return fl.b.trunc(v, ll.IntType(width)) if v.type.width > width else v


def _immediate(fl: FunctionLowering, inst: ir.Instruction, operand, what: str) -> int:
    if not isinstance(operand, IntImm):
        raise fl.unsupported(inst, f"{what} must be an immediate")
    return operand.value


# --- and or xor not cnot lop3 ---------------------------------------------------------------------

@lowering("and", "or", "xor")
def bitwise(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """and.type d, a, b;  or, xor likewise;  .type = .pred/.b16/.b32/.b64"""
    t = _type(inst)
    a, b = (fl.read(o, t) for o in inst.operands[1:3])
    combine = {"and": fl.b.and_, "or": fl.b.or_, "xor": fl.b.xor}[inst.opcode]
    fl.write(inst.operands[0], combine(a, b), t)


@lowering("not")
def not_(fl: FunctionLowering, inst: ir.Instruction) -> None:
    t = _type(inst)
    fl.write(inst.operands[0], fl.b.not_(fl.read(inst.operands[1], t)), t)


@lowering("cnot")
def cnot(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """cnot.type d, a: d = (a == 0) ? 1 : 0"""
    t = _type(inst)
    a = fl.read(inst.operands[1], t)
    is_zero = fl.b.icmp_unsigned("==", a, const_int(a.type, 0))
    fl.write(inst.operands[0], fl.b.zext(is_zero, a.type), t)


def lut3(fl: FunctionLowering, a, b, c, lut: int):
    """The bitwise function of three inputs whose truth table is the byte `lut`: result bit i
    is lut's bit (a_i << 2 | b_i << 1 | c_i), as a sum of the table's minterms (LLVM folds
    it to a few operations)."""
    lut &= 0xFF
    ones = const_int(a.type, -1)
    if lut in (0, 0xFF):
        return const_int(a.type, 0) if lut == 0 else ones
    result = None
    for index in range(8):
        if lut >> index & 1:
            term = None
            for bit, v in ((4, a), (2, b), (1, c)):
                factor = v if index & bit else fl.b.xor(v, ones)
                term = factor if term is None else fl.b.and_(term, factor)
            result = term if result is None else fl.b.or_(result, term)
    return result


@lowering("lop3")
def lop3(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """lop3.b32 d, a, b, c, immLut;  lop3.BoolOp.b32 d|p, a, b, c, immLut, q with
    p = (d != 0) BoolOp q."""
    a, b, c = (fl.read(o, "b32") for o in inst.operands[1:4])
    lut = _immediate(fl, inst, inst.operands[4], "lop3's truth table")
    d = lut3(fl, a, b, c, lut)
    dest = inst.operands[0]
    boolop = inst.spec.get("boolop")
    if isinstance(dest, ir.PairValue):
        if boolop is None or len(inst.operands) != 6:
            raise fl.unsupported(inst, "a predicate result needs .and/.or and a predicate q")
        fl.write(dest.first, d, "b32")
        nonzero = fl.b.icmp_unsigned("!=", d, I32(0))
        q = fl.read(inst.operands[5], "pred")
        p = fl.b.and_(nonzero, q) if boolop == "and" else fl.b.or_(nonzero, q)
        fl.write(dest.second, p, "pred")
        return
    if boolop is not None or len(inst.operands) != 5:
        raise fl.unsupported(inst, ".and/.or need the form d|p, a, b, c, immLut, q")
    fl.write(dest, d, "b32")


# --- shifts ---------------------------------------------------------------------------------------

@lowering("shl", "shr")
def shift(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """shl.type d, a, b;  shr.type d, a, b (arithmetic for signed types). b is an unsigned
    32-bit amount: from the width on, shl and unsigned shr give 0 and signed shr the sign."""
    t = _type(inst)
    a = fl.read(inst.operands[1], t)
    amount = fl.read(inst.operands[2], "u32")
    inside = fl.b.icmp_unsigned("<", amount, I32(t.bits))
    amount = _as_width(fl, fl.b.select(inside, amount, I32(t.bits - 1)), t.bits)
    zero = const_int(a.type, 0)
    if inst.opcode == "shl":
        result = fl.b.select(inside, fl.b.shl(a, amount), zero)
    elif t.kind == "signed":
        result = fl.b.ashr(a, amount)  # by width-1 when beyond: all sign bits
    else:
        result = fl.b.select(inside, fl.b.lshr(a, amount), zero)
    fl.write(inst.operands[0], result, t)


@lowering("shf")
def shf(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """shf.l.mode.b32 d, a, b, c: the high word of {b, a} << n;  shf.r: the low word of
    {b, a} >> n;  n = min(c, 32) (.clamp) or c & 31 (.wrap)."""
    a, b, c = (fl.read(o, "b32") for o in inst.operands[1:4])
    left = inst.spec.get("dir") == "l"
    if inst.spec.get("mode", "clamp") == "wrap":
        n = fl.b.and_(c, I32(31))
    else:
        n = _umin(fl, c, 32)
    pair = fl.b.or_(fl.b.shl(fl.b.zext(b, ll.IntType(64)), ll.IntType(64)(32)),
                    fl.b.zext(a, ll.IntType(64)))
    n64 = fl.b.zext(n, ll.IntType(64))
    if left:
        result = fl.b.trunc(fl.b.lshr(fl.b.shl(pair, n64), ll.IntType(64)(32)), I32)
    else:
        result = fl.b.trunc(fl.b.lshr(pair, n64), I32)
    fl.write(inst.operands[0], result, "b32")


# --- popc clz bfind fns brev ----------------------------------------------------------------------

@lowering("popc", "clz")
def count_bits(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """popc.type d, a;  clz.type d, a (32 or 64 for a = 0);  d is .u32."""
    t = _type(inst)
    a = fl.read(inst.operands[1], t)
    if inst.opcode == "popc":
        count = intrinsic(fl, "llvm.ctpop", [a])
    else:
        count = intrinsic(fl, "llvm.ctlz", [a, ll.Constant(I1, 0)])
    fl.write(inst.operands[0], _as_width(fl, count, 32), "u32")


@lowering("bfind")
def bfind(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """bfind{.shiftamt}.type d, a: the position of the most significant bit that is not a
    sign bit (the highest 1, or the highest 0 of a negative signed value), 0xFFFFFFFF when
    there is none; .shiftamt gives the left shift that moves it to the top instead."""
    t = _type(inst)
    a = fl.read(inst.operands[1], t)
    if t.kind == "signed":  # the highest 0 of a negative value is the highest 1 of ~a
        a = fl.b.xor(a, fl.b.ashr(a, const_int(a.type, t.bits - 1)))
    leading = intrinsic(fl, "llvm.ctlz", [a, ll.Constant(I1, 0)])
    leading = _as_width(fl, leading, 32)
    if inst.spec.get("mode") != "shiftamt":
        leading = fl.b.sub(I32(t.bits - 1), leading)
    none = fl.b.icmp_unsigned("==", a, const_int(a.type, 0))
    fl.write(inst.operands[0], fl.b.select(none, I32(-1), leading), "u32")


def _nth_set_bit(fl: FunctionLowering, mask, n):
    """The position of the n-th (1-based, unsigned n) set bit of the 32-bit mask counting
    from bit 0, or 0xFFFFFFFF when mask has fewer than n set bits: a binary search on
    population counts."""
    position, remaining = I32(0), n
    for width in (16, 8, 4, 2, 1):
        window = fl.b.and_(fl.b.lshr(mask, position), I32((1 << width) - 1))
        count = intrinsic(fl, "llvm.ctpop", [window])
        below = fl.b.icmp_unsigned("<", count, remaining)
        remaining = fl.b.select(below, fl.b.sub(remaining, count), remaining)
        position = fl.b.select(below, fl.b.add(position, I32(width)), position)
    enough = fl.b.icmp_unsigned("<=", n, intrinsic(fl, "llvm.ctpop", [mask]))
    return fl.b.select(enough, position, I32(-1))


@lowering("fns")
def fns(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """fns.b32 d, mask, base, offset: the position of the offset-th set bit of mask counted
    from bit base upwards (offset > 0) or downwards (offset < 0); offset 0 asks whether bit
    base itself is set. 0xFFFFFFFF when not found. The manual leaves base > 31 undefined:
    here no bit is found from there."""
    mask, base, offset = (fl.read(o, t) for o, t in zip(inst.operands[1:4],
                                                        ("b32", "u32", "s32"), strict=True))
    in_range = fl.b.icmp_unsigned("<", base, I32(32))
    base = fl.b.and_(base, I32(31))
    upward = fl.b.and_(mask, fl.b.shl(I32(-1), base))
    up = _nth_set_bit(fl, upward, offset)
    downward = fl.b.and_(mask, fl.b.lshr(I32(-1), fl.b.sub(I32(31), base)))
    reversed_position = _nth_set_bit(fl, intrinsic(fl, "llvm.bitreverse", [downward]),
                                     fl.b.sub(I32(0), offset))
    down = fl.b.select(fl.b.icmp_unsigned("==", reversed_position, I32(-1)), I32(-1),
                       fl.b.sub(I32(31), reversed_position))
    bit_set = fl.b.icmp_unsigned("!=", fl.b.and_(fl.b.lshr(mask, base), I32(1)), I32(0))
    here = fl.b.select(bit_set, base, I32(-1))
    result = fl.b.select(fl.b.icmp_signed(">", offset, I32(0)), up,
                         fl.b.select(fl.b.icmp_signed("<", offset, I32(0)), down, here))
    fl.write(inst.operands[0], fl.b.select(in_range, result, I32(-1)), "b32")


@lowering("brev")
def brev(fl: FunctionLowering, inst: ir.Instruction) -> None:
    t = _type(inst)
    a = fl.read(inst.operands[1], t)
    fl.write(inst.operands[0], intrinsic(fl, "llvm.bitreverse", [a]), t)


# --- bfe bfi szext bmsk ---------------------------------------------------------------------------

@lowering("bfe")
def bfe(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """bfe.type d, a, b, c: the len = c & 0xFF bits of a from pos = b & 0xFF, zero-extended
    (.u) or sign-extended from the field's top bit, or from a's top bit where the field
    runs past it (.s); bits beyond a's top are the fill bit."""
    t = _type(inst)
    width, msb = t.bits, t.bits - 1
    a = fl.read(inst.operands[1], t)
    pos = fl.b.and_(fl.read(inst.operands[2], "u32"), I32(0xFF))
    length = fl.b.and_(fl.read(inst.operands[3], "u32"), I32(0xFF))
    available = fl.b.select(fl.b.icmp_unsigned(">", pos, I32(msb)), I32(0),
                            fl.b.sub(I32(width), pos))
    taken = fl.b.select(fl.b.icmp_unsigned("<", length, available), length, available)
    field = fl.b.lshr(a, _as_width(fl, _umin(fl, pos, msb), width))
    keep = _low_mask(fl, _as_width(fl, taken, width), width)
    result = fl.b.and_(field, keep)
    if t.kind == "signed":
        top = _umin(fl, fl.b.sub(fl.b.add(pos, length), I32(1)), msb)
        sign = fl.b.trunc(fl.b.lshr(a, _as_width(fl, top, width)), I1)
        sign = fl.b.and_(sign, fl.b.icmp_unsigned("!=", length, I32(0)))
        result = fl.b.select(sign, fl.b.or_(result, fl.b.not_(keep)), result)
    fl.write(inst.operands[0], result, t)


@lowering("bfi")
def bfi(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """bfi.type f, a, b, c, d: b with its bits from pos = c & 0xFF on replaced by the low
    len = d & 0xFF bits of a (those that fit below the top)."""
    t = _type(inst)
    width, msb = t.bits, t.bits - 1
    a, b = (fl.read(o, t) for o in inst.operands[1:3])
    pos = fl.b.and_(fl.read(inst.operands[3], "u32"), I32(0xFF))
    length = fl.b.and_(fl.read(inst.operands[4], "u32"), I32(0xFF))
    available = fl.b.select(fl.b.icmp_unsigned(">", pos, I32(msb)), I32(0),
                            fl.b.sub(I32(width), pos))
    taken = fl.b.select(fl.b.icmp_unsigned("<", length, available), length, available)
    shift = _as_width(fl, _umin(fl, pos, msb), width)
    field = fl.b.shl(_low_mask(fl, _as_width(fl, taken, width), width), shift)
    result = fl.b.or_(fl.b.and_(b, fl.b.not_(field)), fl.b.and_(fl.b.shl(a, shift), field))
    fl.write(inst.operands[0], result, t)


@lowering("szext")
def szext(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """szext.mode.type d, a, b: the low N = b bits of a, sign- (.s32) or zero-extended (.u32);
    N = 0 gives 0; N >= 32 gives a (.clamp) or uses N & 31 (.wrap)."""
    t = _type(inst)
    a, b = fl.read(inst.operands[1], "b32"), fl.read(inst.operands[2], "u32")
    n = fl.b.and_(b, I32(31))
    too_large = fl.b.icmp_unsigned(">=", b, I32(32)) if inst.spec.get("mode") == "clamp" \
        else ll.Constant(I1, 0)
    upper = fl.b.select(too_large, I32(0), fl.b.shl(I32(-1), n))
    result = fl.b.and_(a, fl.b.not_(upper))
    if t.kind == "signed":
        sign_position = fl.b.and_(fl.b.sub(n, I32(1)), I32(31))
        sign = fl.b.trunc(fl.b.lshr(a, sign_position), I1)
        sign = fl.b.and_(sign, fl.b.icmp_unsigned("!=", n, I32(0)))
        sign = fl.b.and_(sign, fl.b.not_(too_large))
        result = fl.b.select(sign, fl.b.or_(result, upper), result)
    fl.write(inst.operands[0], result, t)


@lowering("bmsk")
def bmsk(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """bmsk.mode.b32 d, a, b: a mask of b bits starting at bit a (the manual's rules for
    positions and widths of 32 or more, by .clamp or .wrap)."""
    a, b = fl.read(inst.operands[1], "u32"), fl.read(inst.operands[2], "u32")
    a1, b1 = fl.b.and_(a, I32(31)), fl.b.and_(b, I32(31))
    low = fl.b.shl(I32(-1), a1)
    total = fl.b.add(a1, b1)
    overflow = fl.b.icmp_unsigned(">=", total, I32(32))
    if inst.spec.get("mode") == "clamp":
        low = fl.b.select(fl.b.icmp_unsigned(">=", a, I32(32)), I32(0), low)
        overflow = fl.b.or_(overflow, fl.b.or_(fl.b.icmp_unsigned(">=", a, I32(32)),
                                               fl.b.icmp_unsigned(">=", b, I32(32))))
    high = fl.b.shl(I32(-1), fl.b.and_(total, I32(31)))
    high = fl.b.select(fl.b.icmp_unsigned("==", b1, I32(0)), I32(-1), high)
    high = fl.b.select(overflow, I32(0), high)
    fl.write(inst.operands[0], fl.b.and_(low, fl.b.not_(high)), "b32")


# --- prmt -----------------------------------------------------------------------------------------

# Byte selectors of the prmt modes, indexed by c & 3: the source byte for d.b0..d.b3.
_PRMT_MODES = {
    "f4e": ((0, 1, 2, 3), (1, 2, 3, 4), (2, 3, 4, 5), (3, 4, 5, 6)),
    "b4e": ((0, 7, 6, 5), (1, 0, 7, 6), (2, 1, 0, 7), (3, 2, 1, 0)),
    "rc8": ((0, 0, 0, 0), (1, 1, 1, 1), (2, 2, 2, 2), (3, 3, 3, 3)),
    "ecl": ((0, 1, 2, 3), (1, 1, 2, 3), (2, 2, 2, 3), (3, 3, 3, 3)),
    "ecr": ((0, 0, 0, 0), (0, 1, 1, 1), (0, 1, 2, 2), (0, 1, 2, 3)),
    "rc16": ((0, 1, 0, 1), (2, 3, 2, 3), (0, 1, 0, 1), (2, 3, 2, 3)),
}


def _byte_of(fl: FunctionLowering, source, index):
    """Byte `index` (an i64 in 0..7) of the 8-byte {b, a}."""
    return fl.b.trunc(fl.b.lshr(source, fl.b.mul(index, ll.IntType(64)(8))), ll.IntType(8))


@lowering("prmt")
def prmt(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """prmt.b32{.mode} d, a, b, c: four bytes picked from {b, a} (bytes 0-3 of a, 4-7 of b).
    Generic form: nibble i of c selects d's byte i, its bit 3 replicating the byte's sign;
    the modes pick by the pattern that c & 3 names."""
    a, b, c = (fl.read(o, "b32") for o in inst.operands[1:4])
    i64, i8 = ll.IntType(64), ll.IntType(8)
    source = fl.b.or_(fl.b.shl(fl.b.zext(b, i64), i64(32)), fl.b.zext(a, i64))
    mode = inst.spec.get("mode")
    result = I32(0)
    selector = fl.b.zext(fl.b.and_(c, I32(3)), i64)
    for i in range(4):
        if mode is None:
            nibble = fl.b.zext(fl.b.and_(fl.b.lshr(c, I32(4 * i)), I32(0xF)), i64)
            value = _byte_of(fl, source, fl.b.and_(nibble, i64(7)))
            replicate = fl.b.icmp_unsigned("!=", fl.b.and_(nibble, i64(8)), i64(0))
            sign = fl.b.ashr(value, i8(7))
            value = fl.b.select(replicate, sign, value)
        else:
            table = _PRMT_MODES[mode]
            # index = table[selector][i]: a 4-entry lookup folded into shifts of a constant
            packed = sum(row[i] << (8 * k) for k, row in enumerate(table))
            index = fl.b.and_(fl.b.lshr(i64(packed), fl.b.mul(selector, i64(8))), i64(7))
            value = _byte_of(fl, source, index)
        result = fl.b.or_(result, fl.b.shl(fl.b.zext(value, I32), I32(8 * i)))
    fl.write(inst.operands[0], result, "b32")
