"""Warp gangs' control flow by min-PC scheduling: branches, exits, block barriers, and the
meeting of a warp operation's member lanes.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import (
    I1,
    I32,
)
from ptxport.codegen.targets.cpu.gang import idle_warps
from ptxport.codegen.targets.cpu.gang.full_entries import entry, is_full
from ptxport.codegen.targets.cpu.gang.interleave import lower_yield
from ptxport.codegen.targets.cpu.gang.lanes import (
    BARRIER,
    EXIT_PC,
    FULL,
    NOT_MEMBER,
    RESUME,
    RESUME_LANES,
    W,
    is_vec,
    vec,
)
from ptxport.codegen.targets.cpu.gang.state import GangLowering
from ptxport.codegen.targets.cpu.gang.warp_bounds import branch_bounds
from ptxport.ir import nodes as ir
from ptxport.passes.segment import Segment
from ptxport.ptx.ast import Sink

# --- control ----------------------------------------------------------------------------------

def _others_before(fl: GangLowering, number: int) -> ll.Value:
    """i1: a live lane outside the mask that is not parked waits at segment `number` or
    before it (so going straight there is not what the dispatcher would do). The dispatcher
    notes those lanes and the lowest segment they wait at when it picks the mask; until the
    warp goes back to it, no lane outside the mask moves, so the note holds."""
    b = fl.b
    return ll.IRBuilder.icmp_unsigned(b, "<=", b.load(fl.others_min_slot), I32(number))


def set_pc(fl: GangLowering, lanes, value) -> None:
    b = fl.b
    pc = b.load(fl.pc_slot)
    b.store(ll.IRBuilder.select(b, lanes, b.splat(value), pc), fl.pc_slot)


def goto_segment(fl: GangLowering, segment: Segment) -> None:
    """All lanes of the mask go to `segment`."""
    b = fl.b
    if is_full(fl.mask):    # (all 32 lanes: none waits elsewhere)
        b.store(fl.mask, fl.mask_slot)
        b.branch(entry(fl, segment))
        return
    direct = fl.llfn.append_basic_block("direct")
    via = fl.llfn.append_basic_block("via_dispatch")
    ll.IRBuilder.cbranch(b, _others_before(fl, segment.number), via, direct)
    b.position_at_end(direct)
    b.store(fl.mask, fl.mask_slot)
    b.branch(segment.llblock)
    b.position_at_end(via)
    # the others all wait at `segment` (the other side of an if, at its join): they join
    # the mask there, as the dispatcher would have it
    others = b.load(fl.others_slot)
    there = fl.bits(ll.IRBuilder.icmp_unsigned(b, "==", b.load(fl.pc_slot),
                                               b.splat(I32(segment.number))))
    join, elsewhere = (fl.llfn.append_basic_block(n) for n in ("join", "elsewhere"))
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "==", b.and_(others, b.not_(there)),
                                                       I32(0)), join, elsewhere)
    b.position_at_end(join)
    b.store(b.or_(fl.mask, fl.lanes(others)), fl.mask_slot)
    b.store(I32(0), fl.others_slot)
    b.store(I32(EXIT_PC), fl.others_min_slot)
    b.branch(segment.llblock)
    b.position_at_end(elsewhere)
    set_pc(fl, fl.mask, I32(segment.number))
    b.branch(fl.dispatch)


def _yield_first(fl: GangLowering, inst: ir.Instruction, target: Segment) -> None:
    """Where `inst` is a loop's back edge that yields (interleave.py), the mask's lanes all
    going round again: the yield, and the builder left where the warp goes on instead."""
    if id(inst) in fl.yield_edges:
        go_on = fl.llfn.append_basic_block("no_yield")
        lower_yield(fl, target, go_on, fl.yield_edges[id(inst)][1])
        fl.b.position_at_end(go_on)


def lower_bra(fl: GangLowering, inst: ir.Instruction) -> None:
    b = fl.b
    target = fl.first_segment[id(inst.operands[0])]
    if inst.guard is None:
        _yield_first(fl, inst, target)
        goto_segment(fl, target)
        b.position_at_end(fl.llfn.append_basic_block("after_bra"))
        return
    following = fl.next_segment(inst)
    guard = fl.guard_value(inst)
    taken = fl.bits(b.and_(fl.mask, guard))
    mask_bits = fl.bits(fl.mask)
    diverged = fl.llfn.append_basic_block("diverged")
    all_taken, none_taken = (fl.llfn.append_basic_block(n) for n in ("taken", "not_taken"))
    uniform = fl.llfn.append_basic_block("uniform")
    # (others that wait further on do not matter: the mask's lanes run first either way;
    # under the full mask no lane waits elsewhere)
    ll.IRBuilder.cbranch(b, I1(0) if is_full(fl.mask) else
                         _others_before(fl, max(target.number, following.number)),
                         diverged, uniform)
    b.position_at_end(uniform)
    check_none = fl.llfn.append_basic_block("check_none")
    bounds = branch_bounds(fl, inst) if is_vec(guard) else None
    if bounds is not None:      # two scalars decide for most warps (warp_bounds.py)
        bound_none, lanes_decide = (fl.llfn.append_basic_block(n) for n in (
            "bound_none", "lanes_decide"))
        ll.IRBuilder.cbranch(b, bounds[0], all_taken, bound_none)
        b.position_at_end(bound_none)
        ll.IRBuilder.cbranch(b, bounds[1], none_taken, lanes_decide)
        b.position_at_end(lanes_decide)
    if not is_vec(guard):      # a uniform predicate: every lane of the mask goes one way
        ll.IRBuilder.cbranch(b, guard, all_taken, none_taken)
    else:
        ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "==", taken, mask_bits),
                             all_taken, check_none)
    b.position_at_end(check_none)
    split = fl.llfn.append_basic_block("split")
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "==", taken, I32(0)), none_taken,
                         split)
    for block, segment in ((all_taken, target), (none_taken, following)):
        b.position_at_end(block)
        if segment is target:
            _yield_first(fl, inst, target)
        b.store(fl.mask, fl.mask_slot)
        b.branch(entry(fl, segment))

    def note_counters():
        pcs = ll.IRBuilder.select(b, guard, b.splat(I32(target.number)),
                                  b.splat(I32(following.number)))
        b.store(ll.IRBuilder.select(b, fl.mask, pcs, b.load(fl.pc_slot)), fl.pc_slot)
    # the mask splits and no lane elsewhere waits before either side: the side with the
    # lower counter goes first, as the dispatcher would choose, and the other side's lanes
    # wait (before any other lane)
    b.position_at_end(split)
    linear = fl.linear.get(id(inst))
    if linear is not None:      # the region's guarded copy, for all the mask's lanes
        b.store(fl.mask, fl.mask_slot)
        b.branch(fl.first_segment[id(linear)].llblock)
        b.position_at_end(fl.llfn.append_basic_block("split_copy"))
    note_counters()
    first_taken = target.number < following.number
    first = b.and_(fl.mask, guard if first_taken else b.not_(guard))
    b.store(first, fl.mask_slot)
    b.store(b.or_(b.load(fl.others_slot), b.and_(mask_bits, b.not_(fl.bits(first)))),
            fl.others_slot)
    b.store(I32(max(target.number, following.number)), fl.others_min_slot)
    b.branch((target if first_taken else following).llblock)
    b.position_at_end(diverged)
    note_counters()
    b.branch(fl.dispatch)
    b.position_at_end(fl.llfn.append_basic_block("after_bra"))


def lower_exit(fl: GangLowering, inst: ir.Instruction) -> None:
    b = fl.b
    set_pc(fl, fl.mask, I32(EXIT_PC))
    if inst.guard is None:
        # no live lane elsewhere (none waiting to run, parked or at a barrier): the warp has
        # exited, without asking the dispatcher
        elsewhere = b.or_(b.load(fl.others_slot),
                          b.or_(b.load(fl.parked_slot), b.load(fl.barrier_slot)))
        done = fl.llfn.append_basic_block("warp_exited")
        ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "==", elsewhere, I32(0)), done,
                             fl.dispatch)
        b.position_at_end(done)
        b.ret(I32(-1))
        b.position_at_end(fl.llfn.append_basic_block("after_ret"))


def block_barrier(fl: GangLowering, inst: ir.Instruction) -> None:
    """bar.sync / barrier.sync a (every thread of the block): the lanes wait at the segment
    after it; the warp returns to the block loop once none of its lanes can go on."""
    b = fl.b
    following = fl.next_segment(inst)
    set_pc(fl, fl.mask, I32(following.number))
    if following.block is not None:
        # Every live lane of the warp is here (none elsewhere, parked or at a barrier):
        # return at once, and resume straight at the segment after the barrier.
        others = b.or_(b.load(fl.others_slot),
                       b.or_(b.load(fl.parked_slot), b.load(fl.barrier_slot)))
        alone, with_others = (fl.llfn.append_basic_block(n) for n in (
            "barrier_alone", "barrier_with_others"))
        ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "==", others, I32(0)), alone,
                             with_others)
        b.position_at_end(alone)
        # (the lanes' counters are not saved: on resuming they are these lanes' at the
        # segment after the barrier, the others' exited). All 32 lanes here: the status
        # names the segment (the block loop may resume the warp with it a constant); else
        # the frame's RESUME and RESUME_LANES do.
        whole, part = (fl.llfn.append_basic_block(n) for n in ("barrier_whole",
                                                               "barrier_part"))
        ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "==", fl.bits(fl.mask),
                                                           I32(FULL)), whole, part)
        b.position_at_end(whole)
        b.ret(idle_warps.whole_wait(fl, following.number))
        b.position_at_end(part)
        b.store(I32(following.number), fl.frame_field(RESUME))
        b.store(fl.bits(fl.mask), fl.frame_field(RESUME_LANES))
        b.ret(I32(BARRIER))
        if following.number not in fl.resumed_at:
            fl.resumed_at.add(following.number)
            fl.resume_switch.add_case(I32(following.number), following.llblock)
        b.position_at_end(with_others)
    b.store(b.or_(b.load(fl.barrier_slot), fl.bits(fl.mask)), fl.barrier_slot)
    b.branch(fl.dispatch)
    b.position_at_end(fl.llfn.append_basic_block("after_barrier"))


def member_mask(fl: GangLowering, inst: ir.Instruction, index: int) -> ll.Value:
    """The member mask: one i32 where every lane holds the same, else a vector of each lane's
    (cooperative groups' tiles: lane l of a 4-lane tile names 0xF << (l & ~3))."""
    if len(inst.operands) <= index or isinstance(inst.operands[index], Sink):
        return I32(FULL)
    return fl.read(inst.operands[index], "b32")


_LANE_BITS = ll.Constant(vec(I32), [1 << lane for lane in range(W)])


def converge(fl: GangLowering, inst: ir.Instruction, members) -> None:
    """Before a warp operation: each lane of the mask waits for the live lanes its own
    member mask names (PTX ISA 9.7.9.6, 9.7.13: "until all non-exited threads corresponding
    to membermask have executed" it). Lanes whose members are still elsewhere park here
    until those come (the segment starts at this instruction); the others go on. A lane
    whose mask does not name it is an error (undefined in PTX)."""
    b = fl.b
    segment = fl.segment_at[id(inst)]
    alone_mask = fl.mask
    # no lane elsewhere that could still come (the warp is converged): straight on
    elsewhere = b.or_(b.load(fl.others_slot),
                      b.or_(b.load(fl.parked_slot), b.load(fl.barrier_slot)))
    alone, gather = fl.llfn.append_basic_block("alone"), fl.llfn.append_basic_block(
        "gather_members")
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "==", elsewhere, I32(0)), alone,
                         gather)
    alone_block = alone
    b.position_at_end(gather)
    pc = b.load(fl.pc_slot)
    # lanes parked here before join the mask
    parked = b.load(fl.parked_slot)
    here = b.and_(parked, fl.bits(ll.IRBuilder.icmp_unsigned(
        b, "==", pc, b.splat(I32(segment.number)))))
    b.store(b.and_(parked, b.not_(here)), fl.parked_slot)
    gathered = b.or_(fl.mask, fl.lanes(here))
    b.store(gathered, fl.mask_slot)
    alive = fl.bits(ll.IRBuilder.icmp_unsigned(b, "!=", pc, fl.exit_pcs))
    ready = _members_here(fl, gathered, members, alive)
    park = fl.llfn.append_basic_block("park")
    check = fl.llfn.append_basic_block("members_here")
    gathered_block = b.block
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "==", fl.bits(ready), I32(0)), park,
                         check)
    b.position_at_end(park)
    set_pc(fl, gathered, I32(segment.number))
    b.store(b.or_(b.load(fl.parked_slot), fl.bits(gathered)), fl.parked_slot)
    b.branch(fl.dispatch)
    b.position_at_end(alone)
    b.branch(check)
    b.position_at_end(check)
    fl.mask = ll.IRBuilder.phi(b, alone_mask.type)
    fl.mask.add_incoming(alone_mask, alone_block)
    fl.mask.add_incoming(ready, gathered_block)
    if is_vec(members):        # each lane must be in its own mask
        outside = fl.bits(b.and_(fl.mask, ll.IRBuilder.icmp_unsigned(
            b, "==", b.and_(members, _LANE_BITS), ll.Constant(vec(I32), [0] * W))))
    else:
        outside = b.and_(fl.bits(fl.mask), b.not_(members))
    bad = fl.llfn.append_basic_block("not_member")
    go_on = fl.llfn.append_basic_block("warp_op")
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "!=", outside, I32(0)), bad, go_on)
    b.position_at_end(bad)
    b.store(fl.cttz(outside), fl.scratch_lane)
    b.ret(I32(NOT_MEMBER))
    b.position_at_end(go_on)


def _members_here(fl: GangLowering, gathered, members, alive) -> ll.Value:
    """The lanes of `gathered` whose live members are all in it. Those go on; the others of
    `gathered` park at the current segment (their pc is set to it), until their members come."""
    b = fl.b
    absent = b.and_(alive, b.not_(fl.bits(gathered)))
    if not is_vec(members):
        waits = ll.IRBuilder.icmp_unsigned(b, "!=", b.and_(members, absent), I32(0))
        return ll.IRBuilder.select(b, waits, ll.Constant(gathered.type, [I1(0)] * W),
                                   gathered)
    ready = b.and_(gathered, ll.IRBuilder.icmp_unsigned(
        b, "==", b.and_(members, absent), ll.Constant(vec(I32), [0] * W)))
    waiting = b.and_(gathered, b.not_(ready))
    segment = fl.segment_at[id(fl.inst)]
    set_pc(fl, waiting, I32(segment.number))
    b.store(b.or_(b.load(fl.parked_slot), fl.bits(waiting)), fl.parked_slot)
    b.store(ready, fl.mask_slot)
    return ready
