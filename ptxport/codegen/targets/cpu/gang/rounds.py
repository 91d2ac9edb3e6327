"""Warp gangs' block loop, run_blocks: a block's warps run in rounds, each warp until it waits
at a barrier or exits, until every warp has exited.

A round after which every warp waits at the same barrier with all 32 lanes (the gang function
returns WHOLE_AT + the segment after that barrier: a loop's `__syncthreads()` in every warp)
is a *uniform round*: it has a loop of its own for that barrier, which calls the gang function
with the segment as a constant. LLVM then resumes each warp straight in that segment with its
lanes, counters and mask known, and, since the gang function leaves a uniform round
(CONTINUE) wherever it would consult its dispatcher, keeps only the code a warp runs from
there to the next barrier: what a warp costs in a round where it has nothing to do (most
warps, in most rounds of a tree reduction or a Blelloch scan) is that code alone. A warp
that left the round (its lanes took different ways) goes on in the general round's loop,
which resumes it from its frame, and so do the warps after it.

Warps that yielded at a loop's back edge (interleave.py: their status has the YIELDED bit)
go first: a round after one where some warp yielded resumes only those (the others wait at a
barrier or have exited); a barrier's warps resume in a round after one where none yielded,
when every live warp has reached it. Where every warp yielded at one loop's header with all
32 lanes, that round is a uniform round of the header's segment.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import I1, I8, I32, I64, PTR
from ptxport.codegen.targets.cpu.abi import CTX
from ptxport.codegen.targets.cpu.entry import open_block_loop
from ptxport.codegen.targets.cpu.gang.checks import FAILED, PASSED
from ptxport.codegen.targets.cpu.gang.lanes import (
    CALL_BLOCKS,
    CALL_VERDICT,
    CONTINUE,
    FIRST_ROUND,
    SCRATCH_LANE,
    SKIP_REST,
    STATUS,
    VERDICT,
    WHOLE_AT,
    YIELDED,
    W,
)
from ptxport.codegen.targets.cpu.gang.params import PARAMS_AT, alignment
from ptxport.codegen.targets.cpu.stop import branch_on_stop

__all__ = ["build_run_blocks"]

# A round is uniform where every warp's result is the same WHOLE_AT + point: the bitwise OR
# and AND of the results (`any`, `all`, from 0 and -1) are then equal, and differ in some bit
# wherever two results differ (an exited warp counts -1, as no whole wait); two instructions
# a warp, where the comparisons with the first warp's result took eight.
_ANY, _ALL = 0, -1


class _Rounds:
    """run_blocks while it is built: its arguments, the warp loops, and the failing calls."""

    def __init__(self, llmod: ll.Module, gang: ll.Function, warp_frame: int, warps: int,
                 nthreads: int):
        self.fn = fn = ll.Function(
            llmod, ll.FunctionType(I64, [PTR, PTR, I64, I32, I64, I64, PTR]), name="run_blocks")
        self.ctx, self.frames = fn.args[0], fn.args[1]
        self.gang, self.warp_frame = gang, warp_frame
        self.block_copy = None      # the block's copy of the context's fields
        self.warps, self.nthreads = I32(warps), I32(nthreads)
        self.b = ll.IRBuilder(fn.append_basic_block("entry"))
        self.stop = self.b.load(self.b.gep(self.ctx, [I64(CTX.fields["stop"])],
                                           source_etype=I8), typ=PTR)
        self.failed = fn.append_basic_block("failed")
        self.failures: list = []        # (result, warp, block) of each failing call
        self.ends: list = []    # (block, waiting, any, all, yielded) where a round ends
        self.yields = False     # whether the gang function may yield (interleave.py)
        self.skip_slots = None      # (offset, bytes) a skipped warp takes (idle_warps.py)
        self.first_head = self.first_phis = None    # the first round's loop (_first_round)
        # whether rounds that run every warp tell from `all` whether one waits (_waiting)
        self.from_and = False

    def frame(self, w):
        b = self.b
        frame = b.gep(self.frames, [b.mul(b.zext(w, I64), I64(self.warp_frame))],
                      source_etype=I8)
        return frame, b.gep(frame, [I64(STATUS)], source_etype=I8)

    def ran(self, w, result, any_, all_, yielded, step: ll.Block, waiting=None):
        """After a warp's call: note a failure (to `failed`), else go to `step`; returns
        (waiting, any, all, yielded) after this warp, without waiting where it is not
        given."""
        b = self.b
        at_barrier = b.icmp_signed(">", result, I32(0))
        ok = b.or_(b.icmp_signed("==", result, I32(-1)), at_barrier)
        after = () if waiting is None else (b.or_(waiting, at_barrier),)
        after += (b.or_(any_, result), b.and_(all_, result),
                  b.or_(yielded, _yields(self, result)))
        self.failures.append((result, w, b.block))
        b.cbranch(ok, step, self.failed)
        return after


def _yields(r: _Rounds, status) -> ll.Value:
    """i1: a warp's status says it yielded (exited and failed warps' are negative); false
    where the gang function never yields."""
    if not r.yields:
        return I1(0)
    return r.b.icmp_signed(">", r.b.and_(status, I32(-YIELDED)), I32(0))


def _waiting(r: _Rounds, all_) -> ll.Value:
    """i1: some warp waits, in a round that ran every warp so far (the first round, a
    uniform round) and none failed: each result is then -1 (an exit) or positive (a wait,
    yielded or not), so their AND is not negative where one waited."""
    return r.b.icmp_signed(">=", all_, I32(0))


def _loop_head(r: _Rounds, name: str, phis: tuple) -> tuple:
    """A warp loop's head block with phis of the given (name, type)s; the builder is left in
    it."""
    head = r.fn.append_basic_block(name)
    r.b.position_at_end(head)
    return head, tuple(r.b.phi(typ, n) for n, typ in phis)


def _general_round(r: _Rounds, head: ll.Block, w, waiting, any_, all_, fresh_from,
                   yielding, yielded) -> None:
    """The round every warp that has not exited runs in from wherever it waits; where
    `yielding` (a warp yielded in the round before), only the warps that yielded. The warps
    from `fresh_from` on have not started: where the block's first round has a loop of its
    own (r.first_head), those after a warp that left it, which go back there (every fresh
    start is there: this round's copy of the gang function has no fresh path); else this
    round is also the block's first, and `fresh_from` (i1) says whether it is."""
    b, fn = r.b, r.fn
    body, run, step, done = (fn.append_basic_block(n) for n in (
        "warp_body", "warp_run", "warp_next", "round_done"))
    b.cbranch(b.icmp_unsigned("<", w, r.warps), body, done)
    b.position_at_end(body)
    fresh = fresh_from
    if r.first_head is not None:        # (fresh warps go back to the first round's loop)
        look = fn.append_basic_block("warp_look")
        b.cbranch(b.icmp_unsigned(">=", w, fresh_from), r.first_head, look)
        for phi, value in zip(r.first_phis, (w, any_, all_, yielded), strict=True):
            phi.add_incoming(value, body)
        b.position_at_end(look)
        fresh = I1(0)
    frame, status = r.frame(w)
    old = b.load(status, typ=I32)
    waits = b.icmp_signed(">", old, I32(0))
    still = b.or_(waiting, waits) if r.yields else waiting
    go = b.and_(waits, b.or_(b.not_(yielding), _yields(r, old)))
    b.cbranch(go if r.first_head is not None else b.or_(fresh, go), run, step)
    looked = b.block
    b.position_at_end(run)
    result = b.call(r.gang, [r.ctx, frame, w, r.nthreads, fresh, I32(-1), r.block_copy])
    b.store(result, status)
    after = r.ran(w, result, any_, all_, yielded, step, waiting)
    ran = b.block
    b.position_at_end(step)
    nexts = (b.phi(I1), b.phi(I32), b.phi(I32), b.phi(I1))
    # (a warp not run counts as a result of -1: no uniform round; one that waits at a
    # barrier while others yield still waits)
    for phi, skipped, value in zip(nexts, (still, I32(-1), all_, yielded),
                                   after, strict=True):
        phi.add_incoming(skipped, looked)
        phi.add_incoming(value, ran)
    for phi, value in zip((w, waiting, any_, all_, fresh_from, yielding, yielded),
                          (b.add(w, I32(1)), nexts[0], nexts[1], nexts[2], fresh_from,
                           yielding, nexts[3]), strict=True):
        phi.add_incoming(value, step)
    b.branch(head)
    r.ends.append((done, waiting, any_, all_, yielded))


def _first_round(r: _Rounds, general: ll.Block, general_phis) -> ll.Block:
    """A block's first round: every warp fresh, from the kernel's start, one after another,
    without a look at its status. The gang function leaves it where it would consult its
    dispatcher (FIRST_ROUND: CONTINUE, as in a uniform round), so that LLVM keeps only its
    straight path from the start here; that warp resumes in the general round's loop, which
    comes back here for the warps after it (r.first_head, r.first_phis). Every warp so far
    has either exited or waits: _waiting tells from `all` whether one waits. Returns its
    entry block."""
    b, fn = r.b, r.fn
    entry = fn.append_basic_block("first_round")
    b.position_at_end(entry)
    head, (w, any_, all_, yielded) = _loop_head(r, "first_warp", (
        ("w", I32), ("any", I32), ("all", I32), ("yielded", I1)))
    r.first_head, r.first_phis = head, (w, any_, all_, yielded)
    for phi, value in zip((w, any_, all_, yielded), (I32(0), I32(_ANY), I32(_ALL), I1(0)),
                          strict=True):
        phi.add_incoming(value, entry)
    with b.goto_block(entry):
        b.branch(head)
    body, step, done = (fn.append_basic_block(n) for n in (
        "first_body", "first_next", "first_done"))
    b.cbranch(b.icmp_unsigned("<", w, r.warps), body, done)
    b.position_at_end(body)
    frame, status = r.frame(w)
    result = b.call(r.gang, [r.ctx, frame, w, r.nthreads, I1(1), I32(FIRST_ROUND),
                             r.block_copy])
    b.store(result, status)
    # (the warps before this one; those after it start here again: fresh_from)
    waited, later = _waiting(r, all_), b.add(w, I32(1))
    left = fn.append_basic_block("first_stay")
    b.cbranch(b.icmp_signed("==", result, I32(CONTINUE)), general, left)
    for phi, value in zip(general_phis, (w, waited, any_, all_, later, I1(0), yielded),
                          strict=True):
        phi.add_incoming(value, body)
    b.position_at_end(left)
    after = r.ran(w, result, any_, all_, yielded, step)
    b.position_at_end(step)
    for phi, value in zip((w, any_, all_, yielded), (b.add(w, I32(1)), *after),
                          strict=True):
        phi.add_incoming(value, step)
    b.branch(head)
    b.position_at_end(done)
    r.ends.append((done, _waiting(r, all_), any_, all_, yielded))
    return entry


def _uniform_round(r: _Rounds, point: int, general: ll.Block, general_phis) -> ll.Block:
    """The round of warps that all wait at the barrier before segment `point` with all
    lanes; a warp that leaves it (CONTINUE) goes on in the general round's loop. Returns
    its entry block."""
    b, fn = r.b, r.fn
    entry = fn.append_basic_block(f"uniform_round_{point}")
    b.position_at_end(entry)
    start = b.block
    names = (("w", I32), ("waiting", I1), ("any", I32), ("all", I32), ("yielded", I1))
    starts = (I32(0), I1(0), I32(_ANY), I32(_ALL), I1(0))
    if r.from_and:      # (no `waiting`: _waiting tells it)
        names, starts = names[:1] + names[2:], starts[:1] + starts[2:]
    head, phis = _loop_head(r, f"uniform_warp_{point}", names)
    w, (any_, all_, yielded) = phis[0], phis[-3:]
    waiting = None if r.from_and else phis[1]
    with b.goto_block(start):
        b.branch(head)
    for phi, value in zip(phis, starts, strict=True):
        phi.add_incoming(value, start)
    body, stay, step, done = (fn.append_basic_block(f"{n}_{point}") for n in (
        "uniform_body", "uniform_stay", "uniform_next", "uniform_done"))
    b.cbranch(b.icmp_unsigned("<", w, r.warps), body, done)
    b.position_at_end(body)
    frame, status = r.frame(w)
    result = b.call(r.gang, [r.ctx, frame, w, r.nthreads, I1(0), I32(point), r.block_copy])
    b.store(result, status)
    waited = _waiting(r, all_) if waiting is None else waiting   # (the warps before it)
    b.cbranch(b.icmp_signed("==", result, I32(CONTINUE)), general, stay)
    # (the warps after this one all wait as it did: the general round runs them all)
    for phi, value in zip(general_phis, (w, waited, any_, all_, r.none_fresh, I1(0),
                                         yielded), strict=True):
        phi.add_incoming(value, body)
    b.position_at_end(stay)
    if r.skip_slots is not None:
        _skip_rest(r, frame, w, result, point, head, phis)
    after = r.ran(w, result, any_, all_, yielded, step, waiting)
    b.position_at_end(step)
    for phi, value in zip(phis, (b.add(w, I32(1)), *after), strict=True):
        phi.add_incoming(value, step)
    b.branch(head)
    b.position_at_end(done)
    r.ends.append((done, _waiting(r, all_) if waiting is None else waiting, any_, all_,
                   yielded))
    return entry


def _copy_params(r: _Rounds, fields: dict) -> None:
    """run_blocks' block copy (r.block_copy), with the kernel's parameters the gang
    function reads from it (params.py; `fields`: (offset, type name) -> type) copied from
    the launch's parameter buffer as run_blocks starts: they hold for every block."""
    b = r.b
    end = max((PARAMS_AT + offset + 16 for offset, _ in fields), default=CTX.size)
    r.block_copy = b.alloca(ll.ArrayType(I8, end), name="block_fields")
    r.block_copy.align = 16
    if not fields:
        return
    buffer = b.load(b.gep(r.ctx, [I64(CTX.fields["params"])], source_etype=I8), typ=PTR)
    for (offset, _), typ in sorted(fields.items(), key=lambda item: item[0]):
        source = b.gep(buffer, [I64(offset)], source_etype=I8)
        copy = b.gep(r.block_copy, [I64(PARAMS_AT + offset)], source_etype=I8)
        copy.type = source.type = ll.PointerType(typ)
        b.store(b.load(source, typ=typ, align=alignment(offset, typ)), copy,
                align=alignment(PARAMS_AT + offset, typ))


def _skip_rest(r: _Rounds, frame, w, result, point: int, head, phis) -> None:
    """A warp's result with SKIP_REST (idle_warps.py): it waits as its result says, every
    later warp takes the frame slots r.skip_slots from it and waits there too (its status
    is written where that is not this round's `point`, which it names already), and the
    round ends (the loop's head `head`, its `phis` (w, [waiting,] any, all, yielded), with w
    = the warp count). The builder goes on where the result has no such bit."""
    b, fn = r.b, r.fn
    any_, all_, yielded = phis[-3:]
    # (a slot is 8 bytes where its offset is a multiple of 4: after the 4-byte predicates)
    rest, copy, copied, moved, step, plain = (fn.append_basic_block(n) for n in (
        "skip_rest", "skip_copy", "skip_copied", "skip_moved", "skip_step", "skip_plain"))
    # (the bit of a wait: failures and an exit, -1, are negative and have it too)
    b.cbranch(b.icmp_signed(">", b.and_(result, I32(SKIP_REST | -(1 << 31))), I32(0)), rest,
              plain)
    b.position_at_end(rest)
    waits = b.xor(result, I32(SKIP_REST))
    values = []
    for offset, size in r.skip_slots:
        for k in range(0, size, 8):
            slot = b.gep(frame, [I64(offset + k)], source_etype=I8)
            values.append((offset + k, b.load(slot, typ=I64, align=4)))
    b.store(waits, b.gep(frame, [I64(STATUS)], source_etype=I8))
    ends = (r.warps, *(() if r.from_and else (I1(1),)), b.or_(any_, waits),
            b.and_(all_, waits), yielded)
    first, start = b.add(w, I32(1)), b.block
    b.branch(copy)
    b.position_at_end(copy)
    other = b.phi(I32, "skipped")
    other.add_incoming(first, start)
    b.cbranch(b.icmp_unsigned("<", other, r.warps), copied, head)
    b.position_at_end(copied)
    later, status = r.frame(other)
    for offset, value in values:
        b.store(value, b.gep(later, [I64(offset)], source_etype=I8), align=4)
    b.cbranch(b.icmp_unsigned("!=", waits, I32(WHOLE_AT + point)), moved, step)
    b.position_at_end(moved)
    b.store(waits, status)
    b.branch(step)
    b.position_at_end(step)
    other.add_incoming(b.add(other, I32(1)), step)
    b.branch(copy)
    for phi, value in zip(phis, ends, strict=True):
        phi.add_incoming(value, copy)
    b.position_at_end(plain)


def _start_call(r: _Rounds, fields: dict, call_test: bool) -> None:
    """Where run_blocks starts, where `call_test`: the call test's words written, and the
    fields that hold for all its blocks copied (_copy_fields). Only there: in the blocks
    of a call whose test passed, what LLVM made of them for the covered accesses' checks
    (the site cache's slot addresses: ~25 instructions of the stencil's 60 a block) is
    cold; elsewhere copying them once a call only moved LLVM's register allocation
    (reduce_shared, 4 blocks a call: +0.6% instructions; docs/cpu-target-measurements.md,
    "Session 17: blockpro21")."""
    if call_test:
        _copy_fields(r, fields, lambda offset: not _per_block(offset))
        _call_blocks(r)


def _call_blocks(r: _Rounds) -> None:
    """Where run_blocks starts, the call test's byte zeroed (unknown) and the call's first
    block number and count, and the grid's %nctaid.x and .y, written beside it
    (block_tests.py's box of blocks). A call of one block has its byte FAILED: that
    block's own test costs less."""
    b = r.b
    first, count = r.fn.args[4], r.fn.args[5]
    grid = [b.load(b.gep(r.ctx, [I64(CTX.fields["nctaid"] + 4 * axis)], source_etype=I8),
                   typ=I32) for axis in (0, 1)]
    for at, value in ((CALL_BLOCKS, first), (CALL_BLOCKS + 8, count), (CALL_BLOCKS + 16,
                      grid[0]), (CALL_BLOCKS + 20, grid[1]), (CALL_VERDICT, b.select(
            b.icmp_unsigned(">", count, I64(1)), I8(0), I8(FAILED)))):
        field = b.gep(r.block_copy, [I64(at)], source_etype=I8)
        field.type = ll.PointerType(value.type)
        b.store(value, field)


def _copy_block_fields(r: _Rounds, fields: dict, verdict: bool, call: bool) -> None:
    """The block's copy of the context's `fields` ((offset, type name) -> type: those the
    gang function reads), made where a block starts: on run_blocks' stack and read by the
    inlined gang functions alone, it becomes values that every warp's call shares. Where
    `verdict`, the block test's verdict byte there (block_tests.py) is zeroed: unknown;
    where `call` too, PASSED where the call test passed."""
    b = r.b
    if verdict:
        byte = b.gep(r.block_copy, [I64(VERDICT)], source_etype=I8)
        byte.type = ll.PointerType(I8)
        told = I8(0)
        if call:
            whole = b.gep(r.block_copy, [I64(CALL_VERDICT)], source_etype=I8)
            whole.type = byte.type
            whole = b.load(whole, typ=I8)
            told = b.select(b.icmp_unsigned("==", whole, I8(PASSED)), I8(PASSED), I8(0))
        b.store(told, byte)
    _copy_fields(r, fields, _per_block if call else lambda offset: True)


def _per_block(offset: int) -> bool:
    """Whether the context's field at `offset` may change from block to block of a call:
    %ctaid, and the local stack's words (device functions' frames); the others hold for
    the whole launch on a worker."""
    ctaid, local = CTX.fields["ctaid"], CTX.fields["local_stack"]
    return ctaid <= offset < ctaid + 12 or offset >= local


def _copy_fields(r: _Rounds, fields: dict, pick) -> None:
    """The context's `fields` whose offset `pick` takes, into run_blocks' block copy: where
    each block starts, those that change from block to block, or all; where run_blocks
    starts, the others (LLVM then computes what it makes of them, the site cache's slot
    addresses, the shared memory's, once a call, where it did so in every block)."""
    b = r.b
    for (offset, _), typ in sorted(fields.items(), key=lambda item: item[0]):
        if not pick(offset):
            continue
        source, copy = (b.gep(p, [I64(offset)], source_etype=I8) for p in (
            r.ctx, r.block_copy))
        copy.type = ll.PointerType(typ)
        b.store(b.load(source, typ=typ), copy)


def build_run_blocks(llmod: ll.Module, gang: ll.Function, warp_frame: int,
                     block: tuple[int, int, int], points: list[int],
                     fields: dict, yield_points=frozenset(), params=None,
                     skip_slots=None, first_round: bool = True,
                     verdict: bool = False, call_test: bool = False) -> None:
    """i64 run_blocks(ctx, frames, frame_size, nthreads, first, count, status*): blocks
    first..first+count-1, each warp by warp in rounds until every warp has exited; -1, or
    (block << 32 | thread) of the lane that faulted or waits forever, its status in *status.
    `points`: the segments after barriers where warps may wait with all lanes (each gets a
    uniform round); `fields`: the context's fields the gang function reads ((offset, type
    name) -> type), copied as each block starts; `yield_points`: those of `points` where
    warps may also yield (interleave.py); `params`: the parameters' bytes it reads from the
    copy (params.py), copied as run_blocks starts; `skip_slots`: where the gang function
    may end a uniform round for the later warps (idle_warps.py), the frame slots (offset,
    bytes) they take from the warp that ended it (None: it never does); `first_round`:
    whether the block's first round has a loop of its own (_first_round; else it is the
    general round's); `verdict`, `call_test`: whether the gang function reads the block
    test's verdict (block_tests.py), zeroed as each block starts, and the call test's."""
    nthreads = block[0] * block[1] * block[2]      # (the executor passes the same)
    r = _Rounds(llmod, gang, warp_frame, (nthreads + W - 1) // W, nthreads)
    r.yields = bool(yield_points)
    # (the general round's `fresh_from` where no warp starts fresh: the warp count, or,
    # where the block's first round is the general round's, an i1 saying whether it is)
    r.none_fresh = r.warps if first_round else I1(0)
    r.from_and = first_round
    r.skip_slots = skip_slots
    b, fn = r.b, r.fn
    _copy_params(r, params or {})
    _start_call(r, fields, call_test)
    n, block_body, block_next = open_block_loop(b, r.ctx, fn.args[4], fn.args[5])
    _copy_block_fields(r, fields, verdict, call_test)
    start = b.block
    general, phis = _loop_head(r, "warp_head", (
        ("w", I32), ("waiting", I1), ("any", I32), ("all", I32),
        ("fresh_from", I32 if first_round else I1),
        ("yielding", I1), ("yielded", I1)))
    if first_round:
        first = _first_round(r, general, phis)
        with b.goto_block(start):
            b.branch(first)
    else:
        with b.goto_block(start):
            b.branch(general)
        for phi, value in zip(phis, (I32(0), I1(0), I32(_ANY), I32(_ALL), I1(1), I1(0),
                                     I1(0)), strict=True):
            phi.add_incoming(value, start)
    b.position_at_end(general)
    _general_round(r, general, *phis)
    uniform_rounds = [(point, _uniform_round(r, point, general, phis)) for point in points]
    round_end = fn.append_basic_block("round_end")
    b.position_at_end(round_end)
    waiting, any_, all_ = b.phi(I1, "waiting"), b.phi(I32, "any"), b.phi(I32, "all")
    yielded = b.phi(I1, "yielded")
    for end, *values in r.ends:
        for phi, value in zip((waiting, any_, all_, yielded), values, strict=True):
            phi.add_incoming(value, end)
        with b.goto_block(end):
            b.branch(round_end)
    again, stopped, next_round = (fn.append_basic_block(n) for n in (
        "again", "stopped", "next_round"))
    b.cbranch(waiting, again, block_next)
    # (loops whose header waits at a block barrier return here on every pass, without
    # looking at the stop word themselves: lowering.py; a stopped launch's caller finds the
    # word set)
    b.position_at_end(stopped)
    b.ret(I64(-1))
    b.position_at_end(again)
    branch_on_stop(b, r.stop, stopped, next_round)
    b.position_at_end(next_round)
    for phi, value in zip(phis, (I32(0), I1(0), I32(_ANY), I32(_ALL), r.none_fresh, yielded,
                                 I1(0)), strict=True):
        phi.add_incoming(value, b.block)
    # every warp's result the same (WHOLE_AT + a point of a uniform round: the switch's
    # cases; any other result, or -1 where they differ, goes to the general round)
    switch = b.switch(b.select(b.icmp_signed("==", any_, all_), any_, I32(-1)), general)
    for point, entry in uniform_rounds:
        switch.add_case(I32(WHOLE_AT + point), entry)
        if point in yield_points:
            switch.add_case(I32(YIELDED | (WHOLE_AT + point)), entry)
    _failed(r, n)


def _failed(r: _Rounds, n) -> None:
    b = r.b
    b.position_at_end(r.failed)
    result, w = b.phi(I32, "failed_result"), b.phi(I32, "failed_warp")
    for value, warp, source in r.failures:
        result.add_incoming(value, source)
        w.add_incoming(warp, source)
    b.store(result, r.fn.args[6])
    lane = b.load(b.gep(r.ctx, [I64(SCRATCH_LANE)], source_etype=I8), typ=I32)
    thread = b.add(b.mul(w, I32(W)), lane)
    b.ret(b.or_(b.shl(n, I64(32)), b.zext(thread, I64)))
