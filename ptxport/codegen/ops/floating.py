"""Floating-point arithmetic (PTX ISA 9.7.3): fma (round to nearest even)."""

from __future__ import annotations

from ptxport.codegen.lower import FunctionLowering, lowering
from ptxport.ir import nodes as ir
from ptxport.ir.types import TYPES


@lowering("fma")
def fma(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """fma.rn{.ftz}{.sat}.type d, a, b, c: a*b+c with one rounding."""
    t = TYPES[inst.spec.types[0]]
    if inst.spec.get("rnd", "rn") != "rn" or inst.spec.get("ftz") or inst.spec.get("sat"):
        raise fl.unsupported(inst, "this rounding mode of fma is not lowered yet")
    a, b, c = (fl.read(o, t) for o in inst.operands[1:4])
    fl.write(inst.operands[0], fl.b.fma(a, b, c), t)
