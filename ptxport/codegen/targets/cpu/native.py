"""Native completion of the common waits, so that most rounds of a block never reach Python.

`run_block(ctx, frames, frame_size, points, statuses, n)` runs a block's threads (through
`run_threads`) and completes the common waits itself:
  - shfl.sync, warp by warp: a whole warp whose 32 lanes wait at one shuffle with full
    member masks, whatever the other warps are doing;
  - then a barrier every live thread waits at (bar.sync / barrier.sync naming one barrier,
    without a thread count or with a count equal to the live threads).
It returns 0 when every thread has exited, 1 when the waits need the general resolver
(runtime/backends/cpu/warps.py's resolve, in Python: partial masks, divergent warps, named
barriers, and every other operation), 2 when a thread trapped or faulted. Both paths follow the
same PTX rules; tests run kernels both ways and compare.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import I8, I32, I64, PTR
from ptxport.codegen.ops.sync import shuffle_source
from ptxport.codegen.targets.cpu.abi import BLOCKED, CTX, EXITED, FRAME, RUNNABLE, TRAPPED
from ptxport.codegen.targets.cpu.entry import store_block_coordinates
from ptxport.ptx.ast import IntImm

__all__ = ["build_run_block", "build_run_waiting_blocks", "NATIVE_KINDS"]

FULL = 0xFFFFFFFF


def _kind(inst) -> str | None:
    """Which native resolver, if any, completes this operation."""
    spec = inst.spec
    if inst.opcode in ("bar", "barrier") and not (spec.has("warp") or spec.has("red")
                                                    or spec.has("arrive")):
        return "barrier"
    if inst.opcode == "shfl" and spec.has("sync"):
        return "shfl"
    return None


NATIVE_KINDS = ("barrier", "shfl")


class _RunBlockFrom:
    """run_block_from while it is built: its arguments, its blocks, and the `point` phi of
    the uniform round (each native wait that completes for every thread adds itself)."""

    def __init__(self, llmod: ll.Module, plan):
        self.llmod, self.plan = llmod, plan
        self.fn = fn = ll.Function(
            llmod, ll.FunctionType(I32, [PTR, PTR, I64, PTR, PTR, I32, I32]),
            name="run_block_from")
        fn.linkage = "internal"
        (self.ctx, self.frames, self.frame_size, self.points, self.statuses, self.n,
         self.start) = fn.args
        self.b = ll.IRBuilder(fn.append_basic_block("entry"))
        self.progress = self.b.alloca(ll.IntType(1), name="progress")
        self.loop, self.fast, self.done, self.general, self.failed, self.waits = (
            fn.append_basic_block(x) for x in ("loop", "fast", "done", "general", "failed",
                                               "waits"))
        self.point = None

    def native_points(self, kind: str | None = None):
        """(number, sync point) of the plan's waits completed natively (of one kind)."""
        for number, sync_point in self.plan.sync_points.items():
            found = _kind(sync_point.inst)
            if found is not None and (kind is None or found == kind):
                yield number, sync_point


def build_run_block(llmod: ll.Module, run_threads: ll.Function, plan) -> None:
    """run_block, and run_block_from(..., start): the same from a fresh block whose threads
    all start at point `start` (a uniform round from the first instruction), or from any
    state (start < 0)."""
    r = _RunBlockFrom(llmod, plan)
    fn, b = r.fn, r.b
    entry = b.block
    b.cbranch(b.icmp_signed("<", r.start, I32(0)), r.loop, r.fast)
    for block, value in ((r.done, 0), (r.general, 1), (r.failed, 2)):
        b.position_at_end(block)
        b.ret(I32(value))
    # The general round: every runnable thread from its own resume point.
    b.position_at_end(r.loop)
    b.call(run_threads, [r.ctx, r.frames, r.frame_size, r.points, r.statuses, r.n])
    common, live, trapped = _scan(fn, b, r.points, r.statuses, r.n)
    b.cbranch(trapped, r.failed, fn.append_basic_block("not_trapped"))
    b.position_at_end(fn.blocks[-1])
    b.cbranch(b.icmp_signed("==", live, I32(0)), r.done, r.waits)
    # The uniform round (after a barrier or shuffle completed for every live thread): all
    # of them resume at one point, so the bookkeeping is done as they return.
    b.position_at_end(r.fast)
    r.point = b.phi(I32, "point")
    r.point.add_incoming(r.start, entry)
    _uniform_round_at_each_point(r)
    _general_waits(r, common, live)
    _wrapper(llmod, fn)


def _uniform_round_at_each_point(r: _RunBlockFrom) -> None:
    """One loop per resume point, each calling the thread function with that constant point:
    LLVM then inlines only the code reachable from it, without the resume switch. A uniform
    round starts at the first instruction or after a native wait, nowhere else; after it,
    the wait every live thread reached is completed here when it can be."""
    fn, b = r.fn, r.b
    joined = fn.append_basic_block("uniform_joined")
    nowhere = fn.append_basic_block("uniform_nowhere")
    dispatch = b.switch(r.point, nowhere)
    b.position_at_end(nowhere)
    b.unreachable()
    rounds = []
    for number in [0] + [number for number, _ in r.native_points()]:
        case = fn.append_basic_block(f"uniform_at_{number}")
        dispatch.add_case(I32(number), case)
        b.position_at_end(case)
        results = _uniform_round(fn, b, r.llmod.globals["thread"], r.ctx, r.frames,
                                 r.frame_size, r.points, r.statuses, r.n, I32(number))
        rounds.append((b.block, results))
        b.branch(joined)
    b.position_at_end(joined)
    fcommon, flive, ftrapped = (b.phi(I32, "common"), b.phi(I32, "live"),
                                b.phi(ll.IntType(1), "trapped"))
    for block, results in rounds:
        for phi, value in zip((fcommon, flive, ftrapped), results, strict=True):
            phi.add_incoming(value, block)
    b.cbranch(ftrapped, r.failed, fn.append_basic_block("fast_not_trapped"))
    b.position_at_end(fn.blocks[-1])
    fast_waits = fn.append_basic_block("fast_waits")
    b.cbranch(b.icmp_signed("==", flive, I32(0)), r.done, fast_waits)
    b.position_at_end(fast_waits)
    switch = b.switch(fcommon, r.loop)
    for number, sync_point in r.native_points():
        case = fn.append_basic_block(f"uniform_{number}")
        switch.add_case(I32(number), case)
        b.position_at_end(case)
        if _kind(sync_point.inst) == "barrier" and _static_barrier(sync_point.inst):
            # one barrier named by a constant, no thread count: every live thread is here
            r.point.add_incoming(I32(number), case)
            b.branch(r.fast)
        elif _kind(sync_point.inst) == "barrier":
            resolved = fn.append_basic_block(f"uniform_resolved_{number}")
            _barrier(fn, b, r.frames, r.frame_size, r.statuses, r.n, flive, resolved,
                     r.general)
            b.position_at_end(resolved)
            r.point.add_incoming(I32(number), resolved)
            b.branch(r.fast)
        else:
            _uniform_shuffle(r, number, sync_point, flive)


def _uniform_shuffle(r: _RunBlockFrom, number: int, sync_point, flive) -> None:
    """Every thread of the block waits at this shuffle: complete it for all warps when they
    are whole and give full masks, else warp by warp (the general waits)."""
    fn, b, n = r.fn, r.b, r.n
    whole = fn.append_basic_block(f"uniform_whole_{number}")
    b.cbranch(b.and_(b.icmp_signed("==", flive, n),
                     b.icmp_signed("==", b.and_(n, I32(31)), I32(0))), whole, r.loop)
    b.position_at_end(whole)
    full = fn.append_basic_block(f"uniform_full_{number}")
    t, head, after = _loop(fn, b, n, f"uniform_mask_{number}")
    ok = fn.append_basic_block(f"uniform_mask_ok_{number}")
    mask = b.trunc(b.load(_slot(b, r.frames, r.frame_size, t, "in3"), typ=I64), I32)
    b.cbranch(b.icmp_unsigned("==", mask, I32(FULL)), ok, r.loop)
    b.position_at_end(ok)
    t.add_incoming(b.add(t, I32(1)), ok)
    b.branch(head)
    b.position_at_end(after)
    b.branch(full)
    b.position_at_end(full)
    w, whead, wafter = _loop(fn, b, b.lshr(n, I32(5)), f"uniform_warp_{number}")
    _shfl_warp(fn, b, sync_point.inst, r.frames, r.frame_size, r.statuses, b.shl(w, I32(5)))
    w.add_incoming(b.add(w, I32(1)), b.block)
    b.branch(whead)
    b.position_at_end(wafter)
    r.point.add_incoming(I32(number), b.block)
    b.branch(r.fast)


def _general_waits(r: _RunBlockFrom, common, live) -> None:
    """After a general round: shuffles first, warp by warp (a warp whose 32 lanes wait at one
    full-mask shuffle goes on, whatever the other warps wait at: `if (warp == 0) {
    ...shuffles... }` is common), then a barrier every live thread waits at."""
    fn, b = r.fn, r.b
    b.position_at_end(r.waits)
    shuffles = dict(r.native_points("shfl"))
    if shuffles:
        b.store(ll.Constant(ll.IntType(1), 0), r.progress)
        _warp_shuffles(fn, b, shuffles, r.frames, r.frame_size, r.points, r.statuses, r.n,
                       r.progress)
        barriers = fn.append_basic_block("barriers")
        b.cbranch(b.load(r.progress), r.loop, barriers)
        b.position_at_end(barriers)
    switch = b.switch(common, r.general)
    for number, _ in r.native_points("barrier"):
        case = fn.append_basic_block(f"point_{number}")
        switch.add_case(I32(number), case)
        b.position_at_end(case)
        resolved = fn.append_basic_block(f"resolved_{number}")
        _barrier(fn, b, r.frames, r.frame_size, r.statuses, r.n, live, resolved, r.general)
        b.position_at_end(resolved)
        r.point.add_incoming(I32(number), resolved)
        b.branch(r.fast)


def _wrapper(llmod: ll.Module, run_block_from: ll.Function) -> None:
    fn = ll.Function(llmod, ll.FunctionType(I32, [PTR, PTR, I64, PTR, PTR, I32]),
                     name="run_block")
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    b.ret(b.call(run_block_from, [*fn.args, I32(-1)]))


def _static_barrier(inst) -> bool:
    """A CTA barrier that names its barrier with a constant and gives no thread count: it
    completes when every live thread of the block waits at this instruction."""
    operands = inst.operands
    return (inst.opcode in ("bar", "barrier") and len(operands) == 1
            and isinstance(operands[0], IntImm))


def _uniform_round(fn, b, thread, ctx, frames, frame_size, points, statuses, n, point):
    """Runs every thread that has not exited from `point` until it waits or exits, and
    returns (the point every waiting thread reached or -1, how many wait, whether any
    trapped), as _scan would after run_threads."""
    head, body, run, step, after = (fn.append_basic_block(f"uniform_{x}") for x in
                                    ("head", "body", "run", "step", "after"))
    t, common, live, trapped = _tally(b, head)
    b.cbranch(b.icmp_signed("<", t, n), body, after)
    b.position_at_end(body)
    status_ptr = b.gep(statuses, [t], source_etype=I32)
    b.cbranch(b.icmp_signed("==", b.load(status_ptr, typ=I32), I32(EXITED)), step, run)
    b.position_at_end(run)
    frame = b.gep(frames, [b.mul(b.zext(t, I64), frame_size)], source_etype=I8)
    result = b.call(thread, [ctx, frame, point])
    blocked = b.icmp_signed(">", result, I32(0))
    b.store(b.select(blocked, I32(BLOCKED),
                     b.select(b.icmp_signed("==", result, I32(-1)), I32(EXITED),
                              I32(TRAPPED))), status_ptr)
    b.store(result, b.gep(points, [t], source_etype=I32))
    same = b.or_(b.icmp_signed("==", live, I32(0)), b.icmp_signed("==", common, result))
    run_common = b.select(blocked, b.select(same, result, I32(-1)), common)
    run_live = b.add(live, b.zext(blocked, I32))
    run_trapped = b.or_(trapped, b.icmp_signed("<", result, I32(-1)))
    b.branch(step)
    b.position_at_end(step)
    new_common, new_live, new_trapped = b.phi(I32), b.phi(I32), b.phi(ll.IntType(1))
    for phi, skipped, ran in ((new_common, common, run_common), (new_live, live, run_live),
                              (new_trapped, trapped, run_trapped)):
        phi.add_incoming(skipped, body)
        phi.add_incoming(ran, run)
    t.add_incoming(b.add(t, I32(1)), step)
    common.add_incoming(new_common, step)
    live.add_incoming(new_live, step)
    trapped.add_incoming(new_trapped, step)
    b.branch(head)
    b.position_at_end(after)
    return common, live, trapped


def _warp_shuffles(fn, b, shuffles, frames, frame_size, points, statuses, n, progress):
    """For each whole warp of the block whose 32 lanes all wait at the same shfl.sync, with
    full member masks: complete it for that warp and set `progress`."""
    nwarps = b.lshr(n, I32(5))      # whole warps only; a partial last warp is the resolver's
    w, head, after = _loop(fn, b, nwarps, "warp")
    base = b.shl(w, I32(5))
    point = b.load(b.gep(points, [base], source_etype=I32), typ=I32)
    # all 32 lanes blocked at `point` with full masks
    lane, lhead, lafter = _loop(fn, b, I32(32), "lane")
    t = b.add(base, lane)
    same = b.and_(
        b.icmp_signed("==", b.load(b.gep(statuses, [t], source_etype=I32), typ=I32),
                      I32(BLOCKED)),
        b.and_(b.icmp_signed("==", b.load(b.gep(points, [t], source_etype=I32), typ=I32),
                             point),
               b.icmp_unsigned("==", b.trunc(b.load(_slot(b, frames, frame_size, t, "in3"),
                                                    typ=I64), I32), I32(FULL))))
    lane_ok = fn.append_basic_block("lane_ok")
    next_warp = fn.append_basic_block("next_warp")
    b.cbranch(same, lane_ok, next_warp)
    b.position_at_end(lane_ok)
    lane.add_incoming(b.add(lane, I32(1)), lane_ok)
    b.branch(lhead)
    b.position_at_end(lafter)
    switch = b.switch(point, next_warp)
    for number, sync_point in shuffles.items():
        case = fn.append_basic_block(f"warp_shfl_{number}")
        switch.add_case(I32(number), case)
        b.position_at_end(case)
        _shfl_warp(fn, b, sync_point.inst, frames, frame_size, statuses, base)
        b.store(ll.Constant(ll.IntType(1), 1), progress)
        b.branch(next_warp)
    b.position_at_end(next_warp)
    w.add_incoming(b.add(w, I32(1)), next_warp)
    b.branch(head)
    b.position_at_end(after)


def _tally(b, head):
    """Enter the loop `head` over a block's threads, with its phis: the thread, the point
    the waiting threads share so far, how many wait, whether any trapped (all start at 0)."""
    entry = b.block
    b.branch(head)
    b.position_at_end(head)
    t = b.phi(I32, "t")
    common = b.phi(I32, "common")
    live = b.phi(I32, "live")
    trapped = b.phi(ll.IntType(1), "trapped")
    for phi, value in ((t, I32(0)), (common, I32(0)), (live, I32(0)),
                       (trapped, ll.Constant(ll.IntType(1), 0))):
        phi.add_incoming(value, entry)
    return t, common, live, trapped


def _scan(fn, b, points, statuses, n):
    """(the point every live thread waits at or -1 if they differ, live count, any trapped)."""
    head, body, blocked, after = (fn.append_basic_block(x) for x in
                                  ("scan", "scan_body", "scan_blocked", "scan_done"))
    t, common, live, trapped = _tally(b, head)
    step = fn.append_basic_block("scan_step")
    b.cbranch(b.icmp_signed("<", t, n), body, after)
    b.position_at_end(body)
    status = b.load(b.gep(statuses, [t], source_etype=I32), typ=I32)
    b.cbranch(b.icmp_signed("==", status, I32(BLOCKED)), blocked, step)
    b.position_at_end(blocked)
    point = b.load(b.gep(points, [t], source_etype=I32), typ=I32)
    same = b.or_(b.icmp_signed("==", live, I32(0)), b.icmp_signed("==", common, point))
    common_blocked = b.select(same, point, I32(-1))
    common_blocked = b.select(b.icmp_signed("==", common, I32(-1)), I32(-1), common_blocked)
    b.branch(step)
    b.position_at_end(step)
    new_common = b.phi(I32)
    new_common.add_incoming(common, body)
    new_common.add_incoming(common_blocked, blocked)
    is_blocked = b.phi(I32)
    is_blocked.add_incoming(I32(0), body)
    is_blocked.add_incoming(I32(1), blocked)
    t.add_incoming(b.add(t, I32(1)), step)
    common.add_incoming(new_common, step)
    live.add_incoming(b.add(live, is_blocked), step)
    trapped.add_incoming(b.or_(trapped, b.icmp_signed("==", status, I32(TRAPPED))), step)
    b.branch(head)
    b.position_at_end(after)
    # Threads neither blocked nor trapped have exited: run_threads ran every runnable one.
    return common, live, trapped


def _slot(b, frames, frame_size, t, name: str, typ=I64):
    frame = b.gep(frames, [b.mul(b.zext(t, I64), frame_size)], source_etype=I8)
    return b.gep(frame, [I64(FRAME.fields[name])], source_etype=I8)


def _barrier(fn, b, frames, frame_size, statuses, n, live, resolved, general):
    """Every live thread waits at this barrier instruction: it completes here when they all
    name the same barrier and give no thread count, or a count equal to the live threads.
    Anything else (different barriers per warp, counts that release a subset or can never be
    reached) is the general resolver's to complete or to report as a deadlock."""
    # the first waiting thread's barrier and count
    t, head, after = _loop(fn, b, n, "first")
    waiting = b.icmp_signed("==", b.load(b.gep(statuses, [t], source_etype=I32), typ=I32),
                            I32(BLOCKED))
    step = fn.append_basic_block("first_step")
    b.cbranch(waiting, after, step)
    b.position_at_end(step)
    t.add_incoming(b.add(t, I32(1)), step)
    b.branch(head)
    b.position_at_end(after)
    first = t  # (live > 0, so a waiting thread exists and the loop stopped at it)
    name = b.load(_slot(b, frames, frame_size, first, "in0"), typ=I64)
    count = b.load(_slot(b, frames, frame_size, first, "in1"), typ=I64)
    # every waiting thread names the same barrier and count
    u, uhead, uafter = _loop(fn, b, n, "same")
    waiting = b.icmp_signed("==", b.load(b.gep(statuses, [u], source_etype=I32), typ=I32),
                            I32(BLOCKED))
    same = b.and_(b.icmp_unsigned("==", b.load(_slot(b, frames, frame_size, u, "in0"),
                                               typ=I64), name),
                  b.icmp_unsigned("==", b.load(_slot(b, frames, frame_size, u, "in1"),
                                               typ=I64), count))
    ok = fn.append_basic_block("same_ok")
    b.cbranch(b.or_(b.not_(waiting), same), ok, general)
    b.position_at_end(ok)
    u.add_incoming(b.add(u, I32(1)), ok)
    b.branch(uhead)
    b.position_at_end(uafter)
    count32 = b.trunc(count, I32)
    b.cbranch(b.or_(b.icmp_signed("==", count32, I32(0)), b.icmp_signed("==", count32, live)),
              resolved, general)


def _loop(fn, b, n, name):
    """A counted loop over threads; returns (index, body block, exit block)."""
    head, body, after = (fn.append_basic_block(f"{name}_{x}") for x in ("head", "body",
                                                                          "after"))
    entry = b.block
    b.branch(head)
    b.position_at_end(head)
    t = b.phi(I32, f"{name}_t")
    t.add_incoming(I32(0), entry)
    b.cbranch(b.icmp_signed("<", t, n), body, after)
    b.position_at_end(body)
    return t, head, after


def _shfl_warp(fn, b, inst, frames, frame_size, statuses, base):
    """shfl.sync.mode (PTX ISA 9.7.9.6) for the 32 lanes of the warp starting at thread
    `base`, all waiting with full masks; they may run on afterwards."""
    mode = inst.spec.get("mode")
    lane, head, after = _loop(fn, b, I32(32), "shfl")
    t = b.add(base, lane)
    j, valid = shuffle_source(
        b, mode, lane, b.trunc(b.load(_slot(b, frames, frame_size, t, "in1"), typ=I64), I32),
        b.trunc(b.load(_slot(b, frames, frame_size, t, "in2"), typ=I64), I32))
    source = b.add(base, j)
    value = b.load(_slot(b, frames, frame_size, source, "in0"), typ=I64)
    b.store(b.and_(value, I64(FULL)), _slot(b, frames, frame_size, t, "out0"))
    b.store(b.zext(valid, I64), _slot(b, frames, frame_size, t, "out1"))
    b.store(I32(RUNNABLE), b.gep(statuses, [t], source_etype=I32))
    lane.add_incoming(b.add(lane, I32(1)), b.block)
    b.branch(head)
    b.position_at_end(after)


def build_run_waiting_blocks(llmod: ll.Module, run_block: ll.Function) -> None:
    """i64 run_waiting_blocks(ctx, frames, frame_size, points, statuses, n, first, count):
    runs blocks first..first+count-1 with run_block; returns -1 when all finished, else the
    number of the first block that needs the general resolver (its ctaid is in the ctx and
    its threads' state in points/statuses, ready for Python to go on with it)."""
    fn = ll.Function(llmod, ll.FunctionType(I64, [PTR, PTR, I64, PTR, PTR, I32, I64, I64]),
                     name="run_waiting_blocks")
    ctx, frames, frame_size, points, statuses, n, first, count = fn.args
    b = ll.IRBuilder(fn.append_basic_block("entry"))

    def field(name: str, index: int = 0):
        return b.gep(ctx, [I64(CTX.fields[name] + 4 * index)], source_etype=I8)

    gx = b.zext(b.load(field("nctaid", 0), typ=I32), I64)
    gy = b.zext(b.load(field("nctaid", 1), typ=I32), I64)
    end = b.add(first, count)
    head, body, stop, done = (fn.append_basic_block(x) for x in ("head", "body", "stop",
                                                                 "done"))
    entry = b.block
    b.branch(head)
    b.position_at_end(head)
    block = b.phi(I64, "block")
    block.add_incoming(first, entry)
    b.cbranch(b.icmp_unsigned("<", block, end), body, done)
    b.position_at_end(body)
    store_block_coordinates(b, ctx, block, gx, gy)
    t, thead, tafter = _loop(fn, b, n, "reset")
    b.store(I32(0), b.gep(points, [t], source_etype=I32))
    b.store(I32(RUNNABLE), b.gep(statuses, [t], source_etype=I32))
    t.add_incoming(b.add(t, I32(1)), b.block)
    b.branch(thead)
    b.position_at_end(tafter)
    result = b.call(run_block, [ctx, frames, frame_size, points, statuses, n, I32(0)])
    following = fn.append_basic_block("following")
    b.cbranch(b.icmp_signed("==", result, I32(0)), following, stop)
    b.position_at_end(following)
    block.add_incoming(b.add(block, I64(1)), following)
    b.branch(head)
    b.position_at_end(stop)
    b.ret(block)
    b.position_at_end(done)
    b.ret(I64(-1))
