"""Comparison and selection (PTX ISA 9.7.4): setp, selp."""

from __future__ import annotations

from ptxport.codegen.lower import FunctionLowering, lowering
from ptxport.ir import nodes as ir
from ptxport.ir.types import TYPES

_SIGNED = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_UNSIGNED = {"eq": "==", "ne": "!=", "lo": "<", "ls": "<=", "hi": ">", "hs": ">=",
             "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


@lowering("setp")
def setp(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """setp.CmpOp{.BoolOp}.type p{|q}, a, b{, {!}c};  (integer comparisons here)"""
    t = TYPES[inst.spec.types[0]]
    cmp = inst.spec.get("cmp")
    if t.is_float or inst.spec.get("boolop") or isinstance(inst.operands[0], ir.PairValue):
        raise fl.unsupported(inst, "this form of setp is not lowered yet")
    a, b = (fl.read(o, t) for o in inst.operands[1:3])
    if t.kind == "signed":
        result = fl.b.icmp_signed(_SIGNED[cmp], a, b)
    else:
        result = fl.b.icmp_unsigned(_UNSIGNED[cmp], a, b)
    fl.write(inst.operands[0], result, "pred")


@lowering("selp")
def selp(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """selp.type d, a, b, c;  d = c ? a : b"""
    t = TYPES[inst.spec.types[0]]
    a, b = (fl.read(o, t) for o in inst.operands[1:3])
    c = fl.read(inst.operands[3], "pred")
    fl.write(inst.operands[0], fl.b.select(c, a, b), t)
