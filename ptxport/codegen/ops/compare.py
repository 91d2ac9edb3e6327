"""Comparison and selection (PTX ISA 9.7.6; 9.7.7 for f16, bf16 and their packed pairs):
setp, set, selp, slct.

A comparison `a CmpOp b` is ordered for eq ne lt le gt ge (false when either operand is NaN;
`ne` too) and unordered for equ neu ltu leu gtu geu (true when either is NaN); num and nan
test for NaNs. Integers compare by their type's signedness (lo ls hi hs are the unsigned
names); bit-size types compare only for equality. .ftz flushes subnormal f32 and f16 operands
to zero first. With .BoolOp, p = (a CmpOp b) BoolOp c and q = !(a CmpOp b) BoolOp c; packed
pairs compare lane by lane and give p (low half) and q (high half).

Where the manual leaves a result open, NVIDIA's hardware decides (measured on an H100):
slct with a NaN selector picks b.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import FunctionLowering, lowering
from ptxport.codegen.ops.float_format import F32, element, flush, read_lanes, widen
from ptxport.ir import nodes as ir
from ptxport.ir.types import TYPES, Type

_SIGNED = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_UNSIGNED = {**_SIGNED, "lo": "<", "ls": "<=", "hi": ">", "hs": ">="}
# PTX comparison -> (ordered?, LLVM predicate)
_FLOAT = {"eq": (True, "=="), "ne": (True, "!="), "lt": (True, "<"), "le": (True, "<="),
          "gt": (True, ">"), "ge": (True, ">="), "equ": (False, "=="), "neu": (False, "!="),
          "ltu": (False, "<"), "leu": (False, "<="), "gtu": (False, ">"), "geu": (False, ">="),
          "num": (True, "ord"), "nan": (False, "uno")}
# The value `set` writes for true, per destination lane type.
_ONE = {"f32": 0x3F80_0000, "f16": 0x3C00, "bf16": 0x3F80, "f16x2": 0x3C00, "bf16x2": 0x3F80}


def _compare(fl: FunctionLowering, inst: ir.Instruction, t: Type) -> list[ll.Value]:
    """a CmpOp b, one i1 per lane of t."""
    cmp = inst.spec.get("cmp")
    a_operand, b_operand = inst.operands[1:3]
    b = fl.b
    if not t.is_float:
        if inst.spec.get("ftz"):
            raise fl.unsupported(inst, ".ftz on an integer comparison")
        table = _SIGNED if t.kind == "signed" else _UNSIGNED
        if cmp not in table or (t.kind == "bits" and cmp not in ("eq", "ne")):
            raise fl.unsupported(inst, f"the comparison .{cmp} on .{t.name}")
        x, y = fl.read(a_operand, t), fl.read(b_operand, t)
        compare = b.icmp_signed if t.kind == "signed" else b.icmp_unsigned
        return [compare(table[cmp], x, y)]
    fmt, count = element(fl, inst, t)
    if cmp not in _FLOAT:
        raise fl.unsupported(inst, f"the comparison .{cmp} on .{t.name}")
    if inst.spec.get("ftz") and t.name not in ("f32", "f16", "f16x2"):
        raise fl.unsupported(inst, f".ftz is not defined for .{t.name}")
    ordered, predicate = _FLOAT[cmp]
    results = []
    for x, y in zip(read_lanes(fl, a_operand, t, fmt, count),
                    read_lanes(fl, b_operand, t, fmt, count), strict=True):
        if inst.spec.get("ftz"):
            x, y = flush(fl, x, fmt), flush(fl, y, fmt)
        x, y = widen(fl, x, fmt), widen(fl, y, fmt)
        compare = b.fcmp_ordered if ordered else b.fcmp_unordered
        results.append(compare(predicate, x, y))
    return results


def _combine(fl: FunctionLowering, inst: ir.Instruction, value: ll.Value) -> ll.Value:
    """value BoolOp c, for the .and/.or/.xor forms."""
    boolop = inst.spec.get("boolop")
    if not boolop:
        return value
    if len(inst.operands) != 4:
        raise fl.unsupported(inst, f".{boolop} needs a fourth, predicate operand")
    c = fl.read(inst.operands[3], "pred")
    return {"and": fl.b.and_, "or": fl.b.or_, "xor": fl.b.xor}[boolop](value, c)


@lowering("setp")
def setp(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """setp.CmpOp{.BoolOp}{.ftz}.type p{|q}, a, b{, {!}c}."""
    t = TYPES[inst.spec.types[0]]
    results = _compare(fl, inst, t)
    dest = inst.operands[0]
    if len(results) == 2:
        if not isinstance(dest, ir.PairValue):
            raise fl.unsupported(inst, f"setp on .{t.name} writes two predicates, p|q")
        p, q = (_combine(fl, inst, r) for r in results)
    else:
        p = _combine(fl, inst, results[0])
        q = _combine(fl, inst, fl.b.not_(results[0]))
    if isinstance(dest, ir.PairValue):
        fl.write(dest.first, p, "pred")
        fl.write(dest.second, q, "pred")
    else:
        fl.write(dest, p, "pred")


@lowering("set")
def set_(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """set.CmpOp{.BoolOp}{.ftz}.dtype.stype d, a, b{, {!}c}: all ones (integers) or 1.0
    (floats) where true, per lane for packed sources."""
    types = inst.spec.types
    if len(types) != 2:
        raise fl.unsupported(inst, "set needs a destination and a source type")
    d_type, s_type = TYPES[types[0]], TYPES[types[1]]
    results = [_combine(fl, inst, r) for r in _compare(fl, inst, s_type)]
    if d_type.name not in _ONE and d_type.is_float:
        raise fl.unsupported(inst, f"set into .{d_type.name}")
    lane_bits = d_type.bits // len(results)
    if d_type.lanes != 1 and d_type.lanes != len(results):
        raise fl.unsupported(inst, f"set.{d_type.name}.{s_type.name}")
    one = _ONE.get(d_type.name, (1 << lane_bits) - 1)
    lane_type = ll.IntType(lane_bits)
    wide = ll.IntType(d_type.bits)
    value = None
    for i, r in enumerate(results):
        lane = fl.b.zext(fl.b.select(r, ll.Constant(lane_type, one), ll.Constant(lane_type, 0)),
                         wide)
        if i:
            lane = fl.b.shl(lane, ll.Constant(wide, i * lane_bits))
        value = lane if value is None else fl.b.or_(value, lane)
    fl.write(inst.operands[0], value, TYPES[f"b{d_type.bits}"])


def _bits_type(t: Type) -> Type:
    return TYPES[f"b{t.bits}"]


@lowering("selp")
def selp(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """selp.type d, a, b, c;  d = c ? a : b (bit for bit, NaN payloads included)."""
    t = TYPES[inst.spec.types[0]]
    a, b = (fl.read(o, _bits_type(t) if t.is_float else t) for o in inst.operands[1:3])
    c = fl.read(inst.operands[3], "pred")
    fl.write(inst.operands[0], fl.b.select(c, a, b), _bits_type(t) if t.is_float else t)


@lowering("slct")
def slct(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """slct.dtype.s32 d, a, b, c;  slct{.ftz}.dtype.f32 d, a, b, c;  d = (c >= 0) ? a : b,
    with -0.0 >= 0 and a NaN c picking b."""
    types = inst.spec.types
    if len(types) != 2 or types[1] not in ("s32", "f32"):
        raise fl.unsupported(inst, "slct needs a destination type and .s32 or .f32")
    d_type, c_type = TYPES[types[0]], TYPES[types[1]]
    value_type = _bits_type(d_type) if d_type.is_float else d_type
    a, b = (fl.read(o, value_type) for o in inst.operands[1:3])
    c = fl.read(inst.operands[3], c_type)
    if c_type.is_float:
        if inst.spec.get("ftz"):
            c = flush(fl, c, F32)
        take_a = fl.b.fcmp_ordered(">=", c, ll.Constant(c.type, 0.0))
    else:
        if inst.spec.get("ftz"):
            raise fl.unsupported(inst, ".ftz needs an .f32 selector")
        take_a = fl.b.icmp_signed(">=", c, ll.Constant(c.type, 0))
    fl.write(inst.operands[0], fl.b.select(take_a, a, b), value_type)
