"""Barriers and warp-level operations (PTX ISA 9.7.13): how a thread waits for others is the
target's business (on the CPU: a resume point; on GPUs: the hardware instruction)."""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir as ll

from ptxport.codegen.lower import I32, FunctionLowering, lowering
from ptxport.ir import nodes as ir


def shuffle_source(b, mode: str, lane, offset, c):
    """(source lane, in range) of shfl.sync.mode for `lane` with lane operand `offset` (only
    its bits 4:0 count) and clamp/segment operand `c`, as i32 values built with `b` (PTX ISA
    9.7.9.6: maxLane = (lane & segmask) | (c & ~segmask), minLane = lane & segmask); a lane
    whose source is out of range reads its own. Works on vectors of lanes too (the CPU's warp gangs'
    builder); waits.shuffle_sources is the same rule on numpy arrays."""
    offset = b.and_(offset, I32(0x1F))
    clamp, segmask = b.and_(c, I32(0x1F)), b.and_(b.lshr(c, I32(8)), I32(0x1F))
    min_lane = b.and_(lane, segmask)
    max_lane = b.or_(min_lane, b.and_(clamp, b.not_(segmask)))
    if mode == "up":
        j = b.sub(lane, offset)
        valid = b.icmp_signed(">=", j, max_lane)
    else:
        j = {"down": lambda: b.add(lane, offset), "bfly": lambda: b.xor(lane, offset),
             "idx": lambda: b.or_(min_lane, b.and_(offset, b.not_(segmask)))}[mode]()
        valid = b.icmp_signed("<=", j, max_lane)
    return b.select(valid, j, lane), valid


def lower_shuffle(fl: FunctionLowering, inst: ir.Instruction, lane: ll.Value,
                  read_lane: Callable[[ll.Value, ll.Value], ll.Value]) -> None:
    """shfl{.sync}.mode.b32 d{|p}, a, b, c{, m} for the GPU targets that read another lane's
    value themselves: `lane` is this thread's lane (i32) and `read_lane(value, source)` gives
    `value` as lane `source` holds it; the source lane and p as shuffle_source says."""
    dest, a, offset, c = inst.operands[:4]
    source, valid = shuffle_source(fl.b, inst.spec.get("mode"), lane, fl.read(offset, "b32"),
                                   fl.read(c, "b32"))
    value = read_lane(fl.read(a, "b32"), source)
    if isinstance(dest, ir.PairValue):
        fl.write(dest.first, value, "b32")
        fl.write(dest.second, valid, "pred")
    else:
        fl.write(dest, value, "b32")


def write_match(fl: FunctionLowering, inst: ir.Instruction, matching: ll.Value,
                members: ll.Value) -> None:
    """Write match.sync's results (PTX ISA 9.7.13.10) from `matching`, the member lanes that
    hold this lane's value, and `members`, the member mask (i32 values): match.any gives
    `matching`; match.all gives the members where all of them match, else 0, and in p
    whether they all match. For the targets that compute `matching` lane by lane."""
    b = fl.b
    dest = inst.operands[0]
    if inst.spec.get("mode") == "any":
        fl.write(dest, matching, "b32")
        return
    all_same = b.icmp_unsigned("==", matching, members)
    first = dest.first if isinstance(dest, ir.PairValue) else dest
    fl.write(first, b.select(all_same, members, I32(0)), "b32")
    if isinstance(dest, ir.PairValue):
        fl.write(dest.second, all_same, "pred")


@lowering("bar", "barrier", "shfl", "vote", "match", "redux", "activemask", "elect")
def synchronize(fl: FunctionLowering, inst: ir.Instruction) -> None:
    fl.target.synchronize(fl, inst)


@lowering("mma", "ldmatrix")
def warp_matrix(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """mma.sync.aligned: the warp's 32 lanes together compute D = A * B + C, each holding
    fragments of the matrices; ldmatrix: they load matrices from shared memory into such
    fragments (a target with tensor cores keeps the instructions)."""
    fl.target.warp_matrix(fl, inst)


@lowering("wgmma")
def warpgroup_matrix(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """wgmma: the 4 warps of a warpgroup together compute D = A * B + D (the CPU's warp gangs
    and NVPTX lower it themselves)."""
    fl.target.warpgroup_matrix(fl, inst)


@lowering("membar", "fence")
def fence(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """membar/fence order this thread's memory accesses as seen by others: a sequentially
    consistent fence (the strongest PTX asks for) keeps every ordering PTX promises.
    fence.proxy.async{.space} only orders the generic proxy's accesses against the async
    proxy's (wgmma's and TMA's reads of shared memory) within the thread: where the target
    has one memory proxy (every target that lowers it here) there is nothing to order."""
    spec = inst.spec
    if spec.get("kind") == "proxy" and spec.get("proxy") == "async" \
            and not spec.get("proxy_dir") and not inst.operands:
        return
    fl.b.fence("seq_cst")
