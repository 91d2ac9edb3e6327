"""Warp operations on a gang's lanes: bar.warp.sync, activemask, vote and shfl as vector
operations of the mask's lanes.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir as ll

from ptxport.codegen.lower import (
    I1,
    I32,
    I64,
    PTR,
)
from ptxport.codegen.ops.sync import shuffle_source
from ptxport.codegen.targets.cpu.gang.control import converge, member_mask
from ptxport.codegen.targets.cpu.gang.lanes import W, declare, vec
from ptxport.codegen.targets.cpu.gang.state import GangLowering
from ptxport.codegen.targets.cpu.waits import shuffle_sources
from ptxport.ir import nodes as ir


def lower_warp_barrier(fl: GangLowering, inst: ir.Instruction) -> None:
    converge(fl, inst, member_mask(fl, inst, 0))


def lower_activemask(fl: GangLowering, inst: ir.Instruction) -> None:
    fl.write(inst.operands[0], fl.bits(fl.mask), "b32")


def lower_vote(fl: GangLowering, inst: ir.Instruction) -> None:
    b = fl.b
    members = member_mask(fl, inst, 2)
    converge(fl, inst, members)
    # each lane's own members (a vector where the lanes' masks differ)
    part = b.and_(members, fl.bits(fl.mask))
    true = fl.bits(b.and_(fl.read(inst.operands[1], "pred"), fl.mask))
    mode = inst.spec.get("mode")
    if mode == "ballot":
        fl.write(inst.operands[0], b.and_(part, true), "b32")
        return
    zero = I32(0)
    if mode == "all":
        result = b.icmp_unsigned("==", b.and_(part, b.not_(true)), zero)
    elif mode == "any":
        result = b.icmp_unsigned("!=", b.and_(part, true), zero)
    else:
        result = b.or_(b.icmp_unsigned("==", b.and_(part, true), zero),
                       b.icmp_unsigned("==", b.and_(part, b.not_(true)), zero))
    fl.write(inst.operands[0], result, "pred")


def _shuffle_sources(mode: str, bval: int, c: int) -> tuple[list[int], list[bool]]:
    """For shfl.sync.mode with lane operand b and clamp/segment operand c, both known: each
    lane's source lane (its own when the source is out of range) and whether it is in
    range (waits.shuffle_sources, the thread-by-thread path's)."""
    sources, valid = shuffle_sources(mode, np.arange(W, dtype=np.int64), bval & 0x1F, c)
    return [int(j) for j in sources], [bool(v) for v in valid]


def lower_shfl(fl: GangLowering, inst: ir.Instruction) -> None:
    """shfl.sync.{up,down,bfly,idx}.b32 d{|p}, a, b, c, membermask (PTX ISA 9.7.9.6); a
    source lane outside the mask gives whatever its register holds (unpredictable in PTX).
    A shfl of the whole warp in a converged block (segment.inline_warp_ops) has every live
    lane in the mask already: no lane waits."""
    b = fl.b
    if id(inst) not in fl.inline_ops:
        converge(fl, inst, member_mask(fl, inst, 4))
    dest = inst.operands[0]
    dest, pred = (dest.first, dest.second) if isinstance(dest, ir.PairValue) else (dest, None)
    a = fl.read_lanes(inst.operands[1], "b32")
    known = [fl.constant_of(o) for o in inst.operands[2:4]]
    if None not in known:
        # lane offset and clamp known when compiling (the common case): one shuffle of
        # the lanes by constant indices
        sources, valid = _shuffle_sources(inst.spec.get("mode"), *known)
        indices = ll.Constant(ll.VectorType(I32, W), sources)
        result = ll.IRBuilder.shuffle_vector(b, a, ll.Constant(a.type, None), indices)
        result.type = a.type
        if dest is not None:
            fl.write(dest, result, "b32")
        if pred is not None:
            fl.write(pred, ll.Constant(vec(I1), [I1(v) for v in valid]), "pred")
        return
    j, valid = shuffle_source(b, inst.spec.get("mode"), fl.lane,
                              fl.read(inst.operands[2], "b32"), fl.read(inst.operands[3], "b32"))
    b.store(a, fl.shuffle_slot)
    start = b.splat(ll.IRBuilder.ptrtoint(b, fl.shuffle_slot, I64))
    pointers = b.inttoptr(b.add(start, b.shl(b.zext(j, vec(I64)), b.splat(I64(2)))),
                          vec(PTR))
    gather = declare(fl.llfn.module, f"llvm.masked.gather.v{W}i32.v{W}p0", vec(I32),
                      [vec(PTR), I32, vec(I1), vec(I32)])
    result = ll.IRBuilder.call(b, gather, [pointers, I32(4), b.splat(I1(1)),
                                           ll.Constant(vec(I32), None)])
    if dest is not None:
        fl.write(dest, result, "b32")
    if pred is not None:
        fl.write(pred, valid, "pred")
