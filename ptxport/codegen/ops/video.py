"""Video instructions (PTX ISA 9.7.18): scalar vadd vsub vabsdiff vmin vmax vshl vshr vmad vset,
and the SIMD vadd2/4 vsub2/4 vavrg2/4 vabsdiff2/4 vmin2/4 vmax2/4 vset2/4.

Operands carry their selectors as RegisterElements (`%r1.b0`, `%r2.h1`, `%r3.b7654`; on the
destination the merge selector `.h1` or the SIMD mask `.b3210`); vmad's operands may be
negated (NegValue).

Scalar forms follow the manual's pseudo-code: sources are selected and extended by their
types, the operation is exact (the manual's "33 bits or more"), .sat clamps to the range of
the destination type, or of the merged field when there is a merge selector, then the
secondary operation (.add .min .max, comparing as the destination type; vset's as the first
source type) or the merge into c (fields and lanes not written come from c, not from d's
old value, as on an H100). The SIMD forms agree with an H100 on every selector, mask, .sat
and .add tried (400 random forms). On scalar forms the H100 departs from the manual's
pseudo-code in places: a .h1 merge takes bits 31..16 of the result, saturation into a merged
field only clamps from above (unsigned), vshl.sat and .min/.max of an intermediate beyond 32
bits compare wrapped values, and some vmad forms with unsigned or negated operands differ;
ptxport keeps the manual's meaning there.

The exact intermediates of vmad (up to 66 bits) and vshl (65) are computed with integers of
at most 64 bits, because LLVM's SPIR-V backend cannot select wider ones: see _narrow.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import I32, I64, FunctionLowering, const_int, lowering
from ptxport.ir import nodes as ir
from ptxport.ptx.ast import IntImm

_COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def _types(inst: ir.Instruction) -> tuple[bool, ...]:
    """Signedness of each type modifier, in order (.dtype.atype.btype, or vset's two)."""
    return tuple(t == "s32" for t in inst.spec.types)


def _source(fl: FunctionLowering, inst: ir.Instruction, operand):
    """(the whole 32-bit register value, its selector or None, negated?)."""
    negated = isinstance(operand, ir.NegValue)
    if negated:
        operand = operand.value
    if isinstance(operand, ir.RegisterElement):
        return fl.read(operand.register, "b32"), operand.component, negated
    if isinstance(operand, ir.Register | IntImm):
        return fl.read(operand, "b32"), None, negated
    raise fl.unsupported(inst, f"operand {operand!r} of a video instruction")


def _destination(dest):
    if isinstance(dest, ir.RegisterElement):
        return dest.register, dest.component
    return dest, None


def _field_bits(selector: str) -> int:
    return 8 if selector[0] == "b" else 16


def _part(fl: FunctionLowering, value, selector: str | None, signed: bool, width: int):
    """partSelectSignExtend: the selected byte, half-word or word, extended to `width`."""
    if selector is None:
        field = value
    else:
        bits = _field_bits(selector)
        shift = int(selector[1:]) * bits
        field = fl.b.trunc(fl.b.lshr(value, I32(shift)), ll.IntType(bits))
    return (fl.b.sext if signed else fl.b.zext)(field, ll.IntType(width))


def _clamp(fl: FunctionLowering, v, bits: int, signed: bool):
    """Clamp the exact value v to the range of a `bits`-wide signed or unsigned integer."""
    low, high = ((-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1))
    v = fl.b.select(fl.b.icmp_signed("<", v, const_int(v.type, low)), const_int(v.type, low), v)
    return fl.b.select(fl.b.icmp_signed(">", v, const_int(v.type, high)),
                       const_int(v.type, high), v)


def _merge(fl: FunctionLowering, value32, c, selector: str):
    """optMerge: the low bits of value into the field `selector` of c."""
    bits = _field_bits(selector)
    shift = int(selector[1:]) * bits
    mask = ((1 << bits) - 1) << shift
    field = fl.b.and_(fl.b.shl(value32, I32(shift)), I32(mask))
    return fl.b.or_(field, fl.b.and_(c, I32(~mask & 0xFFFFFFFF)))


# --- intermediates wider than 64 bits ------------------------------------------------------------
# An exact value of up to 128 bits is held as two 64-bit halves, (high, low): high signed, low
# unsigned, value = high * 2**64 + low.

def _add_wide(fl: FunctionLowering, high, low, addend):
    """(high, low) + addend, a signed 64-bit value."""
    total = fl.b.add(low, addend)
    carry = fl.b.zext(fl.b.icmp_unsigned("<", total, low), I64)
    return fl.b.add(fl.b.add(high, fl.b.ashr(addend, I64(63))), carry), total


def _shift_right_wide(fl: FunctionLowering, high, low, count: int):
    """(high, low) >> count, arithmetic, for 0 < count < 64."""
    low = fl.b.or_(fl.b.lshr(low, I64(count)), fl.b.shl(high, I64(64 - count)))
    return fl.b.ashr(high, I64(count)), low


def _narrow(fl: FunctionLowering, high, low):
    """A 64-bit stand-in for the exact (high, low): what follows an intermediate (.sat, .add,
    .min, .max, the 32-bit result) reads only its low 32 bits and how it compares with values
    of 33 bits, so one beyond 64 bits becomes ±2**62 with the same low 32 bits."""
    fits = fl.b.icmp_signed("==", high, fl.b.ashr(low, I64(63)))
    beyond = fl.b.select(fl.b.icmp_signed("<", high, I64(0)), I64(-(1 << 62)), I64(1 << 62))
    return fl.b.select(fits, low, fl.b.or_(beyond, fl.b.and_(low, I64(0xFFFFFFFF))))


# --- scalar ---------------------------------------------------------------------------------------

def _finish(fl: FunctionLowering, inst: ir.Instruction, tmp, result_signed: bool,
            c_signed: bool) -> None:
    """optSaturate, then the secondary operation or the merge, and the write."""
    dest, dsel = _destination(inst.operands[0])
    if inst.spec.get("sat"):
        tmp = _clamp(fl, tmp, _field_bits(dsel) if dsel else 32, result_signed)
    op2 = inst.spec.get("op2")
    if (op2 or dsel) and len(inst.operands) != 4:
        raise fl.unsupported(inst, "a secondary operation or merge needs the operand c")
    if op2 and dsel:
        raise fl.unsupported(inst, "a secondary operation and a merge selector together")
    if op2 or dsel:
        c = fl.read(inst.operands[3], "b32")
    if op2:
        wide_c = (fl.b.sext if c_signed else fl.b.zext)(c, tmp.type)
        if op2 == "add":
            tmp = fl.b.add(tmp, wide_c)
        else:
            less = fl.b.icmp_signed("<", tmp, wide_c)
            tmp = fl.b.select(less, tmp, wide_c) if op2 == "min" else \
                fl.b.select(less, wide_c, tmp)
    result = fl.b.trunc(tmp, I32)
    if dsel:
        result = _merge(fl, result, c, dsel)
    fl.write(dest, result, "b32")


@lowering("vadd", "vsub", "vabsdiff", "vmin", "vmax", "vset")
def scalar_video(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """vop.dtype.atype.btype{.sat}{.op2} d{.dsel}, a{.asel}, b{.bsel}{, c};
    vset.atype.btype.cmp{.op2} d{.dsel}, a{.asel}, b{.bsel}{, c}."""
    signs = _types(inst)
    if inst.opcode == "vset":
        (a_signed, b_signed), d_signed = signs, False
    else:
        d_signed, a_signed, b_signed = signs
    a, asel, _ = _source(fl, inst, inst.operands[1])
    b, bsel, _ = _source(fl, inst, inst.operands[2])
    i64 = ll.IntType(64)
    ta, tb = _part(fl, a, asel, a_signed, 64), _part(fl, b, bsel, b_signed, 64)
    op = inst.opcode
    if op == "vadd":
        tmp = fl.b.add(ta, tb)
    elif op == "vsub":
        tmp = fl.b.sub(ta, tb)
    elif op == "vabsdiff":
        difference = fl.b.sub(ta, tb)
        tmp = fl.b.select(fl.b.icmp_signed("<", difference, i64(0)),
                          fl.b.sub(i64(0), difference), difference)
    elif op == "vmin":
        tmp = fl.b.select(fl.b.icmp_signed("<", ta, tb), ta, tb)
    elif op == "vmax":
        tmp = fl.b.select(fl.b.icmp_signed(">", ta, tb), ta, tb)
    else:
        tmp = fl.b.zext(fl.b.icmp_signed(_COMPARE[inst.spec.get("cmp")], ta, tb), i64)
    _finish(fl, inst, tmp, d_signed, a_signed if op == "vset" else d_signed)


@lowering("vshl", "vshr")
def video_shift(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """vshl/vshr.dtype.atype.u32{.sat}.mode{.op2} d{.dsel}, a{.asel}, b{.bsel}{, c}: the
    amount is b, unsigned, clamped to 32 (.clamp) or taken mod 32 (.wrap)."""
    d_signed, a_signed, _ = _types(inst)
    a, asel, _ = _source(fl, inst, inst.operands[1])
    b, bsel, _ = _source(fl, inst, inst.operands[2])
    ta, n = _part(fl, a, asel, a_signed, 64), _part(fl, b, bsel, False, 64)
    if inst.spec.get("mode", "clamp") == "wrap":
        n = fl.b.and_(n, I64(31))
    else:
        n = fl.b.select(fl.b.icmp_unsigned("<", n, I64(32)), n, I64(32))
    if inst.opcode == "vshr":
        tmp = fl.b.ashr(ta, n)
    else:
        tmp = fl.b.shl(ta, n)
        if not a_signed:  # an unsigned word shifted by 32 needs all 64 bits, unsigned
            tmp = _narrow(fl, I64(0), tmp)
    _finish(fl, inst, tmp, d_signed, d_signed)


@lowering("vmad")
def vmad(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """vmad.dtype.atype.btype{.po}{.sat}{.scale} d, {-}a{.asel}, {-}b{.bsel}, {-}c:
    (±a·b ± c, or a·b + c + 1 with .po) computed exactly, shifted right by 7 or 15 (.shr7,
    .shr15), clamped to 32 bits (.sat, signed when any source is signed or negated)."""
    _, a_signed, b_signed = _types(inst)
    a, asel, a_neg = _source(fl, inst, inst.operands[1])
    b, bsel, b_neg = _source(fl, inst, inst.operands[2])
    c, csel, c_neg = _source(fl, inst, inst.operands[3])
    if csel is not None:
        raise fl.unsupported(inst, "vmad's c takes no selector")
    po = bool(inst.spec.get("po"))
    if po and (a_neg or b_neg or c_neg):
        raise fl.unsupported(inst, ".po with negated operands")
    product_neg = a_neg != b_neg
    if product_neg and c_neg:
        raise fl.unsupported(inst, "negating both the product and c")
    signed_final = a_signed or b_signed or product_neg or c_neg
    low = fl.b.mul(_part(fl, a, asel, a_signed, 64), _part(fl, b, bsel, b_signed, 64))
    # The product of two unsigned words needs all 64 bits, unsigned; any other fits signed.
    high = fl.b.ashr(low, I64(63)) if a_signed or b_signed else I64(0)
    lsb = 1 if (po or product_neg or c_neg) else 0
    if product_neg:
        high, low = fl.b.not_(high), fl.b.not_(low)
    if c_neg:
        c = fl.b.not_(c)
    addend = (fl.b.sext if signed_final else fl.b.zext)(c, I64)
    if lsb:
        addend = fl.b.add(addend, I64(1))
    high, low = _add_wide(fl, high, low, addend)
    scale = inst.spec.get("scale")
    if scale:
        high, low = _shift_right_wide(fl, high, low, 7 if scale == "shr7" else 15)
    if inst.spec.get("sat"):
        low = _clamp(fl, _narrow(fl, high, low), 32, signed_final)
    fl.write(inst.operands[0], fl.b.trunc(low, I32), "b32")


# --- SIMD -----------------------------------------------------------------------------------------

def _lanes(fl: FunctionLowering, a, b, selector: str | None, default: str, count: int,
           signed: bool) -> list:
    """extractAndSignExt: lane i is the field named by the selector's digit for lane i
    (digits are written from the top lane down) of the 64-bit {b, a}, extended to 32 bits."""
    digits = (selector or default)[1:]
    if (selector and selector[0] != default[0]) or len(digits) != count:
        raise ValueError(selector)
    bits = 32 // count
    i64 = ll.IntType(64)
    pair = fl.b.or_(fl.b.shl(fl.b.zext(b, i64), i64(32)), fl.b.zext(a, i64))
    lanes = []
    for i in range(count):
        index = int(digits[count - 1 - i])
        field = fl.b.trunc(fl.b.lshr(pair, i64(index * bits)), ll.IntType(bits))
        lanes.append((fl.b.sext if signed else fl.b.zext)(field, I32))
    return lanes


@lowering("vadd2", "vsub2", "vavrg2", "vabsdiff2", "vmin2", "vmax2", "vset2",
          "vadd4", "vsub4", "vavrg4", "vabsdiff4", "vmin4", "vmax4", "vset4")
def simd_video(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """vop2/vop4.dtype.atype.btype{.sat | .add} d{.mask}, a{.asel}, b{.bsel}, c;
    vset2/vset4.atype.btype.cmp{.add} likewise. Lanes (half-words or bytes) are picked from
    {b, a} by the selectors (defaults .h10/.h32 and .b3210/.b7654), operated on in parallel
    (vavrg rounds a non-negative sum up, a negative one down), saturated to the lane (.sat);
    then .add sums the lanes the mask names into c, or else those lanes replace c's."""
    count = int(inst.opcode[-1])
    bits = 32 // count
    op = inst.opcode[:-1]
    signs = _types(inst)
    if op == "vset":
        (a_signed, b_signed), d_signed = signs, False
    else:
        d_signed, a_signed, b_signed = signs
    accumulate = inst.spec.get("op2") == "add"
    if accumulate and inst.spec.get("sat"):
        raise fl.unsupported(inst, ".sat with the secondary .add")
    a, asel, _ = _source(fl, inst, inst.operands[1])
    b, bsel, _ = _source(fl, inst, inst.operands[2])
    defaults = ("h10", "h32") if count == 2 else ("b3210", "b7654")
    try:
        # Both selectors index the half-words (bytes) of {b, a}.
        va = _lanes(fl, a, b, asel, defaults[0], count, a_signed)
        vb = _lanes(fl, a, b, bsel, defaults[1], count, b_signed)
    except ValueError:
        raise fl.unsupported(inst, "a selector of the wrong shape") from None
    c = fl.read(inst.operands[3], "b32")
    dest, mask = _destination(inst.operands[0])
    mask_digits = (mask or defaults[0])[1:]
    if mask and (mask[0] != defaults[0][0] or any(int(d) >= count for d in mask_digits)):
        raise fl.unsupported(inst, f"the mask .{mask}")
    zero = I32(0)
    results = []
    for x, y in zip(va, vb, strict=True):
        if op == "vadd":
            r = fl.b.add(x, y)
        elif op == "vsub":
            r = fl.b.sub(x, y)
        elif op == "vavrg":
            total = fl.b.add(x, y)
            up = fl.b.ashr(fl.b.add(total, I32(1)), I32(1))
            r = fl.b.select(fl.b.icmp_signed(">=", total, zero), up, fl.b.ashr(total, I32(1)))
        elif op == "vabsdiff":
            difference = fl.b.sub(x, y)
            r = fl.b.select(fl.b.icmp_signed("<", difference, zero),
                            fl.b.sub(zero, difference), difference)
        elif op == "vmin":
            r = fl.b.select(fl.b.icmp_signed("<", x, y), x, y)
        elif op == "vmax":
            r = fl.b.select(fl.b.icmp_signed(">", x, y), x, y)
        else:
            r = fl.b.zext(fl.b.icmp_signed(_COMPARE[inst.spec.get("cmp")], x, y), I32)
        if inst.spec.get("sat"):
            r = _clamp(fl, r, bits, d_signed)
        results.append(r)
    lane_mask = (1 << bits) - 1
    if accumulate:
        result = c
        for i, r in enumerate(results):
            if str(i) in mask_digits:
                result = fl.b.add(result, r)
    else:
        kept = sum(lane_mask << (i * bits) for i in range(count) if str(i) not in mask_digits)
        result = fl.b.and_(c, I32(kept))
        for i, r in enumerate(results):
            if str(i) in mask_digits:
                field = fl.b.shl(fl.b.and_(r, I32(lane_mask)), I32(i * bits))
                result = fl.b.or_(result, field)
    fl.write(dest, result, "b32")
