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
from ptxport.codegen.targets.cpu.gang.streams import held, kernel_facts
from ptxport.codegen.targets.cpu.waits import shuffle_sources
from ptxport.ir import nodes as ir
from ptxport.ir.analysis import may_write
from ptxport.ptx.ast import IntImm


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
        half = _half_of(fl, inst)
        if half is None:
            result = ll.IRBuilder.shuffle_vector(b, a, ll.Constant(a.type, None), indices)
        else:   # the 64-bit lanes moved whole: LLVM joins the two halves' shuffles in one
            wide = fl.read_lanes(half[0], "b64")
            moved = ll.IRBuilder.shuffle_vector(b, wide, ll.Constant(wide.type, None), indices)
            if half[1]:
                moved = ll.IRBuilder.lshr(b, moved, ll.Constant(moved.type, [I64(32)] * W))
            result = ll.IRBuilder.trunc(b, moved, vec(I32))
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


# cvt's integer narrowings of a 64-bit register to 32 bits (no .sat: the low half's bits)
_NARROWINGS = frozenset({"cvt.u32.u64", "cvt.u32.s64", "cvt.s32.u64", "cvt.s32.s64"})
_HIGH_SHIFTS = frozenset({"shr.u64", "shr.s64", "shr.b64"})


def _half_of(fl: GangLowering, inst: ir.Instruction) -> tuple[ir.Register, bool] | None:
    """(x, high) where the 32-bit value `inst` (a shfl) moves is, in each lane, the low (high
    False) or high half of the 64-bit register x as x is at the shfl; else None. A double's
    shuffle (`__shfl_down_sync(m, v, o)` of a double) is two shfl.b32 of its halves, split
    before them in their block: `mov.b64 {lo, hi}, x` (NVRTC 13.0), or `cvt.u32.u64 lo, x;
    shr.u64 t, x, 32; cvt.u32.u64 hi, t` (13.5), joined again after them. Moving x's 64-bit
    lanes and narrowing them is then the same shuffle, and LLVM sees the join undo the split
    (without it, it split, moved and joined each double: 23 instructions a step of a warp's
    f64 butterfly, 4 once moved whole). Each write in the chain is the last one of its
    register before its reader in the block, unguarded, and x is not written after the
    split: each lane that runs the shfl ran the split in this block (a block's instructions
    run in order, each under the mask of the lanes there), so its half is x's; and x is
    held at the shfl (streams.held: a warp resuming at a segment between has it)."""
    source = inst.operands[1]
    if not isinstance(source, ir.Register) or source.vector is not None:
        return None
    place = _position(fl, inst)
    if place is None:
        return None
    code, at = place
    found = _last_write(code, at, source)
    if found is None:
        return None
    split, write = found
    if write.opcode == "mov" and isinstance(write.operands[0], ir.VectorValue):
        halves, x = write.operands[0].elements, write.operands[1]
        if len(halves) != 2 or (source is halves[0]) == (source is halves[1]):
            return None
        high = source is halves[1]
    elif write.spec.text in _NARROWINGS:
        x, high = write.operands[1], False
        shift = _last_write(code, split, x) if isinstance(x, ir.Register) else None
        if shift is not None and shift[1].spec.text in _HIGH_SHIFTS \
                and isinstance(shift[1].operands[2], IntImm) and shift[1].operands[2].value == 32:
            (split, _), x, high = shift, shift[1].operands[1], True
    else:
        return None
    if not isinstance(x, ir.Register) or x.vector is not None or x.type.bits != 64 \
            or any(x in may_write(i) for i in code[split + 1:at]) \
            or not held(fl, x, code[split], inst):
        return None
    return x, high


def _last_write(code: list, at: int, register: ir.Register):
    """(index, instruction) of the last write of `register` before code[at], where that
    write is unguarded; else None."""
    for i in range(at - 1, -1, -1):
        if register in may_write(code[i]):
            return (i, code[i]) if code[i].guard is None else None
    return None


def _position(fl: GangLowering, inst: ir.Instruction) -> tuple[list, int] | None:
    """The instructions of `inst`'s block and its index there (None: not in the kernel)."""
    where = kernel_facts(fl).position.get(id(inst))
    return None if where is None else (where[0].instructions, where[1])
