"""Barriers and warp-level operations (PTX ISA 9.7.13): how a thread waits for others is the
target's business (on the CPU: a resume point; on GPUs: the hardware instruction)."""

from __future__ import annotations

from ptxport.codegen.lower import FunctionLowering, lowering
from ptxport.ir import nodes as ir


@lowering("bar", "barrier", "shfl", "vote", "match", "redux", "activemask", "elect")
def synchronize(fl: FunctionLowering, inst: ir.Instruction) -> None:
    fl.target.synchronize(fl, inst)


@lowering("mma", "ldmatrix")
def warp_matrix(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """mma.sync.aligned: the warp's 32 lanes together compute D = A * B + C, each holding
    fragments of the matrices; ldmatrix: they load matrices from shared memory into such
    fragments (a target with tensor cores keeps the instructions)."""
    fl.target.warp_matrix(fl, inst)


@lowering("membar", "fence")
def fence(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """membar/fence order this thread's memory accesses as seen by others: a sequentially
    consistent fence (the strongest PTX asks for) keeps every ordering PTX promises."""
    fl.b.fence("seq_cst")
