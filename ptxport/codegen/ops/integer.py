"""Integer arithmetic (PTX ISA 9.7.1): add sub mul mad with .lo/.hi/.wide."""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import FunctionLowering, lowering, value_type
from ptxport.ir import nodes as ir
from ptxport.ir.types import TYPES, Type


def _int_type(inst: ir.Instruction) -> Type:
    return TYPES[inst.spec.types[0]]


def _wide(t: Type) -> Type:
    return TYPES[f"{'s' if t.kind == 'signed' else 'u'}{t.bits * 2}"]


def _product(fl: FunctionLowering, inst: ir.Instruction, t: Type, a, b):
    """mul's product by mode: .lo (low half), .hi (high half), .wide (full, twice as wide)."""
    mode = inst.spec.get("mode", "lo")
    if mode == "lo":
        return fl.b.mul(a, b), t
    wide = _wide(t)
    extend = fl.b.sext if t.kind == "signed" else fl.b.zext
    product = fl.b.mul(extend(a, value_type(wide)), extend(b, value_type(wide)))
    if mode == "wide":
        return product, wide
    high = fl.b.lshr(product, ll.Constant(product.type, t.bits))
    return fl.b.trunc(high, value_type(t)), t


@lowering("add", "sub")
def add_sub(fl: FunctionLowering, inst: ir.Instruction) -> None:
    t = _int_type(inst)
    a, b = (fl.read(o, t) for o in inst.operands[1:3])
    if t.is_float:
        raise fl.unsupported(inst, "floating-point add/sub are not lowered yet")
    result = fl.b.add(a, b) if inst.opcode == "add" else fl.b.sub(a, b)
    fl.write(inst.operands[0], result, t)


@lowering("mul")
def mul(fl: FunctionLowering, inst: ir.Instruction) -> None:
    t = _int_type(inst)
    if t.is_float:
        raise fl.unsupported(inst, "floating-point mul is not lowered yet")
    a, b = (fl.read(o, t) for o in inst.operands[1:3])
    result, rt = _product(fl, inst, t, a, b)
    fl.write(inst.operands[0], result, rt)


@lowering("mad")
def mad(fl: FunctionLowering, inst: ir.Instruction) -> None:
    t = _int_type(inst)
    if t.is_float:
        raise fl.unsupported(inst, "floating-point mad is not lowered yet")
    a, b = (fl.read(o, t) for o in inst.operands[1:3])
    product, rt = _product(fl, inst, t, a, b)
    c = fl.read(inst.operands[3], rt)
    fl.write(inst.operands[0], fl.b.add(product, c), rt)
