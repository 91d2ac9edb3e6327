"""The CPU target's warp-gang code: the 32 lanes of a warp run together in vector registers.

DESIGN.md's second design for executing a block ("a warp-gang vectoriser"). A PTX register
becomes a vector of 32 lanes (`<32 x T>`), or one scalar where every lane holds the same value
(passes/uniformity.py finds those); an instruction computes all lanes at once. A lane that is not
executing keeps its old value where another lane may read it later (the write is a `select`
on the *execution mask*). Memory accesses find out at run time how the active lanes'
addresses lie (consecutive, a CUDA warp's coalesced access: one masked vector load or store;
consecutive per half warp, a 16-wide block: two; one address per half warp: two scalar
loads; else a gather or scatter), once per base register in a segment. The accesses from one
base in a segment are checked as one range per warp against the launch's allocations (the
per-site cache of target.py); an access outside them stops the kernel with the first bad lane's
address, as on the scalar path. The code is made for one block shape (thread indices are
constants), and each segment twice: for a full mask (a constant) and for any other.

Control flow is general (any CFG, divergent or not) by *min-PC scheduling*: every lane has a
program counter (the number of the code segment it runs next); the warp runs the segment with
the lowest counter among its waiting lanes, with the lanes at that segment as the mask. Blocks
are numbered in program order, so lanes that leave a loop wait at a higher number until the
others have finished it, and lanes that took different sides of an `if` meet again where they
join. While every live lane is in the mask and a branch goes one way for all, the warp jumps
straight to the target without looking at counters.

Waits: `bar.sync` (a whole-block barrier) parks the lanes that reach it; when no lane of the
warp can go on, the warp returns to the block loop (`run_blocks`), which runs the other warps
and resumes it once all have arrived or exited; registers live across the barrier are saved in
the warp's frame. Warp operations (shfl.sync, vote.sync, activemask, bar.warp.sync) are
vector operations of the mask's lanes; lanes that arrive before the other members of their
member mask park until those come.

Kernels that use anything this path does not lower yet (a device-function call, .local memory,
counted or reducing barriers, atomics other than the common read-modify-writes, ...) run on
the thread-by-thread path, per kernel: refusals.py says why (build.py's check_gang).
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import (
    I1,
    I8,
    I32,
    I64,
    PTR,
    loop_headers,
)
from ptxport.codegen.targets.cpu.abi import CTX
from ptxport.codegen.targets.cpu.gang import (
    idle_warps,
    nan_shadows,
    params,
    reloads,
    streams,
    windows,
)
from ptxport.codegen.targets.cpu.gang.async_copy import lower_cp
from ptxport.codegen.targets.cpu.gang.atomics import lower_atom
from ptxport.codegen.targets.cpu.gang.block_tests import lower_block_test
from ptxport.codegen.targets.cpu.gang.chains import balance_chains, interleave_chains
from ptxport.codegen.targets.cpu.gang.checks import lower_range_test
from ptxport.codegen.targets.cpu.gang.classify import (
    check_widening,
    forget_classes,
    forget_forms,
    track_forms,
)
from ptxport.codegen.targets.cpu.gang.control import (
    block_barrier,
    goto_segment,
    lower_bra,
    lower_exit,
    set_pc,
)
from ptxport.codegen.targets.cpu.gang.full_entries import enter_copies
from ptxport.codegen.targets.cpu.gang.interleave import start_count, yield_edges
from ptxport.codegen.targets.cpu.gang.lanes import (
    AT_BARRIER,
    BARRIER,
    CONTINUE,
    DEADLOCK,
    EXIT_PC,
    FULL,
    PARKED,
    PC,
    REGISTERS,
    RESUME,
    RESUME_LANES,
    SCRATCH_LANE,
    STATUS,
    WHOLE_AT,
    YIELDED,
    W,
    is_vec,
    vec,
)
from ptxport.codegen.targets.cpu.gang.memory import lower_st
from ptxport.codegen.targets.cpu.gang.mma import lower_ldmatrix, lower_mma
from ptxport.codegen.targets.cpu.gang.places import access_groups, class_slots, proven_groups
from ptxport.codegen.targets.cpu.gang.state import GangLowering
from ptxport.codegen.targets.cpu.gang.warp import (
    lower_activemask,
    lower_shfl,
    lower_vote,
    lower_warp_barrier,
)
from ptxport.codegen.targets.cpu.gang.warp_bounds import lower_logic, lower_setp, run_bounds
from ptxport.codegen.targets.cpu.gang.wgmma import lower_wgmma
from ptxport.codegen.targets.cpu.gang.windows import lower_ld
from ptxport.codegen.targets.cpu.gang.wraps import rebuilt_widening
from ptxport.codegen.targets.cpu.options import CpuOptions
from ptxport.ir import nodes as ir
from ptxport.ir.analysis import live_after, live_before, may_write, uses_and_defs
from ptxport.passes.lane_forms import lane_forms, shared_bases, widening
from ptxport.passes.segment import Segment, inline_warp_ops, is_barrier, is_warp_op, segments_of
from ptxport.passes.uniformity import (
    warp_uniform_indices,
)

__all__ = ["lower_gang"]


def lower_bar(fl: GangLowering, inst: ir.Instruction) -> None:
    if inst.spec.has("warp"):
        lower_warp_barrier(fl, inst)
    else:
        block_barrier(fl, inst)


_GANG_LOWERINGS = {"ld": lower_ld, "ldu": lower_ld, "st": lower_st, "atom": lower_atom,
                   "red": lower_atom, "bra": lower_bra, "ret": lower_exit, "exit": lower_exit,
                   "shfl": lower_shfl, "vote": lower_vote, "activemask": lower_activemask,
                   "mma": lower_mma, "ldmatrix": lower_ldmatrix, "cp": lower_cp,
                   "wgmma": lower_wgmma, "setp": lower_setp, "and": lower_logic,
                   "or": lower_logic, "not": lower_logic, "mov": lower_logic}


_GANG_LOWERINGS["bar"] = _GANG_LOWERINGS["barrier"] = lower_bar
# passes/hoist_global_checks.py's test at a loop's entry (an and.pred it made)
_GANG_LOWERINGS["range-test"] = lambda fl, inst: (
    lower_block_test if id(inst) in fl.block_tests else lower_range_test)(fl, inst)
_GANG_LOWERINGS["range-kept"] = lambda fl, inst: None      # (its `and.pred ok, ok, ok`)


# --- the gang function and its block loop ------------------------------------------------------

def _saved_registers(kernel: ir.Function, inline: frozenset[int],
                     yields=()) -> list[ir.Register]:
    """Registers live where a warp may resume after returning: after barriers and `yields`
    (interleave.py's back edges), and at warp operations where lanes park (not those in
    `inline`, where none do)."""
    points = {id(i) for i in kernel.instructions()
              if is_barrier(i) or (is_warp_op(i) and id(i) not in inline)} | set(yields)
    if not points:
        return []
    live = live_after(kernel, points)
    saved: set = set()
    for inst in kernel.instructions():
        if id(inst) in points:
            saved |= live[id(inst)]
            if is_warp_op(inst):
                saved |= uses_and_defs(inst)[0]
    return sorted(saved, key=lambda r: r.name)


def _frame_layout(fl: GangLowering, registers, scalars=frozenset()) -> dict[str, int]:
    """Each register's offset in the warp frame (uniform ones and `scalars`, rebuilt ones
    -> (c, per half), in 8 bytes, 16 per half; predicates in 4, vectors 128-aligned); "":
    the frame's size so far. Small frames matter: a block's warps' frames and its shared
    memory share the L1 cache."""
    offsets, at = {}, REGISTERS
    for reg in registers:
        typ = fl.storage_type(reg)
        element = typ.element if isinstance(typ, ll.ArrayType) else typ
        if reg in fl.uniform or reg in scalars:       # one scalar (8 bytes hold any)
            offsets[reg.name] = at
            at += 8 * (reg.vector or (2 if reg in scalars and scalars[reg][1] else 1))
            continue
        width = element.element.width if isinstance(element.element, ll.IntType) else \
            {"half": 16, "bfloat": 16, "float": 32, "double": 64}[str(element.element)]
        if width == 1:      # a predicate's lanes: 4 bytes (LLVM's <32 x i1>), 4-aligned
            at = (at + 3) // 4 * 4
            offsets[reg.name] = at
            at += 4 * (reg.vector or 1)
            continue
        at = (at + 127) // 128 * 128
        offsets[reg.name] = at
        at += max(width // 8, 1) * W * (reg.vector or 1)
    offsets[""] = (at + 127) // 128 * 128
    return offsets


def _rebuilt_registers(fl: GangLowering, registers) -> dict:
    """The saved registers whose lanes hold u + c[i] (passes/lane_offsets.py: every write
    by all live lanes, with the same constants c) -> (c as a constant vector, False): their
    frame keeps u alone (8 bytes, not a vector of 128 or 256), and each read rebuilds the
    lanes from it (in a segment that wrote it, LLVM forwards the stored u). A Blelloch
    scan's `threadIdx.x`, `2 * t + 1` and `&temp[2 * t]`, read after each of its 22
    barriers by each of 16 warps, so cost no loads of vectors, and its 16 warps' frames
    take 1.3 KB less of the L1 cache each. Registers whose lanes hold u[i // 16] + c[i]
    (passes/lane_forms.py's forms per half warp, not widened: those hold only while no
    widening wrapped) -> (c, True): the frame keeps u of each half (the tiled GEMM's
    index of B, `(k0 + ty) * N + col`, stepped by 16 * N a tile); lane_forms' other exact
    forms -> (c, False) (NVRTC 13.0's stencil tile address, `tile + wide(ty) * 72 +
    wide(tx) * 4`: widenings that cannot wrap, which lane_offsets follows only from
    aligned registers)."""
    rebuilt = {}
    for reg in registers:
        offsets, halves = fl.lane_offsets.get(reg), False
        form = fl.lane_forms.get(reg)
        if offsets is None and form is not None and not form.widened and not form.scaled:
            offsets, halves = form.offsets, form.halves
        typ = fl.storage_type(reg)
        if offsets is None or reg.vector or reg in fl.uniform or not isinstance(
                typ.element, ll.IntType) or typ.element.width < 8:
            wide = None if reg.vector or reg in fl.uniform else rebuilt_widening(fl, reg)
            if wide is not None:        # (kept as the 32-bit u it widens: wraps.py)
                rebuilt[reg] = wide[:2]
                fl.rebuilt_wide[id(reg)] = wide[2:]
            continue
        element = typ.element
        rebuilt[reg] = (ll.Constant(typ, [ll.Constant(element, c) for c in offsets]), halves)
    return rebuilt


def lower_gang(module: ir.Module, kernel: ir.Function, gang: ll.Function, target, plan,
               block: tuple[int, int, int], options: CpuOptions,
               linear: dict | None = None, skips: dict | None = None,
               prechecked: frozenset = frozenset(), global_checks=None,
               block_checks=None) -> GangLowering:
    """Lower `kernel` into the gang function `gang` (ctx, frame, warp, nthreads, start) for
    blocks of shape `block`: its entry and resumption, the min-PC dispatcher, and every code
    segment. `linear`: id(branch) -> the block a warp whose lanes split there runs
    (passes/if_convert.py's guarded copy of the region); `skips`: if_convert's skippable
    runs of guarded code; `prechecked`: ids of the shared accesses whose range
    passes/hoist_checks.py checked before their loop; `global_checks`:
    passes/hoist_global_checks.py's tests at loops' entries and the accesses they cover;
    `block_checks`: passes/block_checks.py's block test."""
    fl = GangLowering(module, kernel, gang, target, plan, block, options, _GANG_LOWERINGS,
                      access_groups)
    fl.linear = linear or {}
    fl.skips = skips or {}
    fl.prechecked = prechecked
    if global_checks is not None:
        fl.range_tests, fl.loop_checked = global_checks.tests, global_checks.checked
        fl.range_kept = global_checks.kept
    if block_checks is not None and block_checks.tests:
        fl.range_tests = {**fl.range_tests, **block_checks.tests}
        fl.loop_checked = {**fl.loop_checked, **block_checks.checked}
        fl.block_tests, fl.block_checked = block_checks.tests, set(block_checks.checked)
    # loops' back edges where a warp returns to the round loop (interleave.py)
    fl.yield_edges = yield_edges(kernel) if options.interleave_passes else {}
    fl.yield_points = set()
    ctx, frame, warp, _nthreads, start, fl.resume_point, _block_copy = gang.args
    fl.declare_registers()
    _declare_slots(fl)
    fl.scratch_lane = fl.b.gep(ctx, [I64(SCRATCH_LANE)], source_etype=I8)
    stop_word = target.ctx_field(fl, "stop", typ=PTR)
    assert CTX.fields["scratch"] == SCRATCH_LANE
    live = _thread_indices(fl, frame, warp, block)
    segments, exit_segment = _lay_out_segments(fl, kernel, gang)
    fl.lane_forms, fl.local_forms = lane_forms(kernel, block, fl.uniform), {}
    fl.shared_bases = shared_bases(kernel)
    _frame_registers(fl, kernel, segments, frame)
    nan_shadows.prepare(fl, kernel)
    class_slots(fl, segments)
    dispatch = _entry(fl, gang, start, live, segments[0])
    _dispatcher(fl, gang, segments, dispatch)
    fl.b.position_at_end(exit_segment.llblock)
    fl.mask = fl.b.load(fl.mask_slot)
    set_pc(fl, fl.mask, I32(EXIT_PC))
    fl.b.branch(dispatch)
    _lower_segments(fl, kernel, gang, segments, exit_segment, stop_word)
    if not fl.exact_read:       # (no access trusts a widened form through the flag)
        for store in fl.exact_stores:
            store.parent.instructions.remove(store)
    return fl


def _declare_slots(fl: GangLowering) -> None:
    """The gang function's own variables: the lanes' counters, the mask, the parked and
    waiting lanes, and arrays for exchanging values between lanes."""
    vi32 = vec(I32)
    fl.pc_slot = fl.entry_alloca(vi32, "pc")
    fl.mask_slot = fl.entry_alloca(vec(I1), "mask")
    fl.parked_slot = fl.entry_alloca(I32, "parked")
    fl.barrier_slot = fl.entry_alloca(I32, "at_barrier")
    fl.retry_slot = fl.entry_alloca(I32, "alive_at_retry")
    fl.others_slot = fl.entry_alloca(I32, "others")
    fl.others_min_slot = fl.entry_alloca(I32, "others_from")
    fl.shuffle_slot = fl.entry_alloca(ll.ArrayType(I32, W), "shuffle", 64)
    arrays: dict[str, ll.Value] = {}

    def shuffle_array(element):
        key = str(element)
        if key not in arrays:
            arrays[key] = fl.entry_alloca(ll.ArrayType(element, W), f"lanes_{key}", 64)
        return arrays[key]

    fl.shuffle_array = shuffle_array
    fl.exit_pcs = ll.Constant(vi32, [I32(EXIT_PC)] * W)


def _thread_indices(fl: GangLowering, frame, warp, block: tuple[int, int, int]) -> ll.Value:
    """Lane numbers and thread indices (fl.lane, fl.thread_index), the warp frame's fields
    (fl.frame_field); returns which lanes are threads of the block."""
    b = fl.b
    fl.lane = ll.Constant(vec(I32), [I32(i) for i in range(W)])
    fl.warp_number = warp
    linear = b.add(b.splat(b.mul(warp, I32(W))), fl.lane)
    # thread indices: divisions by constants (shifts for powers of two), a scalar where the
    # warp's lanes hold one value (computed where read: cheaper than keeping them)
    nthreads = I32(block[0] * block[1] * block[2])
    first = b.mul(warp, I32(W))
    alike = warp_uniform_indices(block)
    tid = []
    for axis, (below, size) in enumerate(((1, block[0]), (block[0], block[1]),
                                           (block[0] * block[1], block[2]))):
        of = first if "xyz"[axis] in alike else linear
        index = ll.IRBuilder.udiv(b, of, b.splat(I32(below)) if is_vec(of) else I32(below))
        if axis < 2:
            index = ll.IRBuilder.urem(b, index, b.splat(I32(size)) if is_vec(index)
                                      else I32(size))
        tid.append(index)

    def frame_field(offset, typ=I32):
        pointer = ll.IRBuilder.gep(b, frame, [I64(offset)], source_etype=I8)
        pointer.type = ll.PointerType(typ)
        return pointer

    fl.frame_field, fl.thread_index = frame_field, tid.__getitem__
    return ll.IRBuilder.icmp_unsigned(b, "<", linear, b.splat(nthreads))


def _lay_out_segments(fl: GangLowering, kernel: ir.Function,
                      gang: ll.Function) -> tuple[list[Segment], Segment]:
    """The kernel's segments, each with its LLVM block, and the segment past the end."""
    fl.inline_ops = inline_warp_ops(kernel, fl.uniform)
    segments = segments_of(kernel, fl.inline_ops)
    for s in segments:
        s.llblock = gang.append_basic_block(f"seg{s.number}")
    fl.first_segment = {}
    fl.segment_at = {}
    after: dict[int, Segment] = {}
    for i, s in enumerate(segments):
        fl.first_segment.setdefault(id(s.block), s)
        if s.start < s.end:
            fl.segment_at[id(s.block.instructions[s.start])] = s
            after[id(s.block.instructions[s.end - 1])] = segments[i + 1] if i + 1 < len(
                segments) else None
    exit_segment = Segment(len(segments), None, 0, 0)
    exit_segment.llblock = gang.append_basic_block("fall_off")

    def next_segment(inst):
        found = after.get(id(inst))
        if found is None or found.block is None:
            return exit_segment
        return found

    fl.next_segment = next_segment
    return segments, exit_segment


def _frame_registers(fl: GangLowering, kernel: ir.Function, segments: list[Segment],
                     frame) -> None:
    """Registers live where a warp resumes after returning (after barriers, at warp
    operations) live in its frame (128-byte aligned, as the vector loads LLVM makes of them
    assume): a warp leaving at a barrier copies nothing. The others live where a segment
    starts have a place there too, where a warp that leaves a uniform round (rounds.py)
    leaves them and its resumption takes them back (fl.kept: (register's slot, place))."""
    b = fl.b
    starts = live_before(kernel, {(id(s.block), s.start) for s in segments})
    fl.crossing = set().union(*starts.values())
    # (registers that read the kernel's parameters from run_blocks' copy: none; params.py)
    registers = [r for r in _saved_registers(kernel, fl.inline_ops, fl.yield_edges)
                 if id(r) not in fl.param_registers]
    rounds = bool(fl.yield_edges) or any(is_barrier(inst) for inst in kernel.instructions())
    kept = sorted((r for r in fl.crossing - set(registers)
                   if id(r) not in fl.param_registers), key=lambda r: r.name) if rounds else []
    rebuilt = _rebuilt_registers(fl, registers)
    offsets = _frame_layout(fl, registers + kept, rebuilt)
    fl.frame_bytes = offsets[""]
    idle_warps.plan(fl, kernel, segments, offsets, set(registers) - set(rebuilt))
    # then, where the kernel widens, the flag of classify.check_widening: no widening of
    # the warp has wrapped
    fl.exact_offset = None
    if any(widening(inst) for inst in kernel.instructions()):
        fl.exact_offset, fl.frame_bytes = offsets[""], offsets[""] + 128
    fl.kept = []
    fl.has_rounds = rounds      # (else no place for `kept`: a warp never leaves a round)
    with b.goto_entry_block():
        b.position_at_start(fl.entry)
        for key, (at, typ) in fl.param_registers.items():
            fl.registers[key] = params.slot(fl, at, typ)
        for reg in registers + kept:
            slot = ll.IRBuilder.gep(b, frame, [I64(offsets[reg.name])], source_etype=I8)
            if reg in rebuilt:      # (read and written through u: GangLowering)
                lanes, halves = rebuilt[reg]
                slot.type = ll.PointerType(lanes.type.element)
                fl.rebuilt[id(reg)] = (slot, lanes, halves)
                alike = None if halves or id(reg) in fl.rebuilt_wide or lanes.type.element != I32 \
                    else streams.alike_in_every_warp(fl, reg)
                if alike is not None:
                    fl.remade[id(reg)] = alike
                continue
            slot.type = ll.PointerType(fl.storage_type(reg))
            if reg in kept:
                fl.kept.append((fl.registers[id(reg)], slot))
            else:
                fl.registers[id(reg)] = slot


def _entry(fl: GangLowering, gang: ll.Function, start, live, first: Segment) -> ll.Block:
    """A fresh warp's start (straight into the first segment with its live lanes, as the
    dispatcher would choose) and a waiting warp's resumption; returns the dispatcher's block
    (empty yet), where resumptions go on."""
    b, vi32, frame_field = fl.b, vec(I32), fl.frame_field
    fresh, resume, dispatch = (gang.append_basic_block(n) for n in ("fresh", "resume",
                                                                    "dispatch"))
    fl.dispatch = dispatch
    fl.fresh_block = fresh
    b.store(I32(0), fl.barrier_slot)
    b.store(I32(-1), fl.retry_slot)     # all 32 alive: none has exited, a retry cannot help
    b.cbranch(start, fresh, resume)
    b.position_at_end(fresh)
    # (the frame's RESUME is not set: every return the block loop resumes from with a
    # status below WHOLE_AT sets it first, at a barrier, a yield or leaving a round)
    start_count(fl)
    for slots in fl.class_slots.values():       # (classify.make_class_slots)
        b.store(I32(0), slots.bits)
    if fl.exact_offset is not None:
        fl.exact_stores.append(b.store(I32(1), fl.frame_field(fl.exact_offset)))
    b.store(ll.IRBuilder.select(b, live, b.splat(I32(first.number)), fl.exit_pcs), fl.pc_slot)
    b.store(I32(0), fl.parked_slot)
    # (a warp has a live lane, all of them at the first segment: no lane elsewhere)
    b.store(live, fl.mask_slot)
    b.store(I32(0), fl.others_slot)
    b.store(I32(EXIT_PC), fl.others_min_slot)
    b.branch(first.llblock)
    b.position_at_end(resume)
    # all live lanes left together at one barrier (block_barrier): straight back there. With
    # all 32 lanes, the block loop names that barrier's segment when it knows that every warp
    # waits there (a uniform round: the point is a constant there), else the warp's status
    # does (WHOLE_AT + it); with fewer, the frame's RESUME and RESUME_LANES
    point = fl.resume_point
    status = b.load(fl.frame_field(STATUS))
    if fl.yield_edges:      # (a yield's status is a wait's with the YIELDED bit)
        status = b.and_(status, I32(YIELDED - 1))
    known = ll.IRBuilder.icmp_signed(b, ">=", point, I32(0))
    whole = b.or_(known, ll.IRBuilder.icmp_signed(b, ">=", status, I32(WHOLE_AT)))
    at = ll.IRBuilder.select(b, whole, ll.IRBuilder.select(
        b, known, point, b.sub(status, I32(WHOLE_AT))), b.load(fl.frame_field(RESUME)))
    fast, slow = gang.append_basic_block("resume_fast"), gang.append_basic_block(
        "resume_slow")
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_signed(b, ">=", at, I32(0)), fast, slow)
    b.position_at_end(slow)
    b.store(b.load(frame_field(PC, vi32), align=16), fl.pc_slot)
    b.store(b.load(frame_field(PARKED)), fl.parked_slot)
    b.store(b.load(frame_field(AT_BARRIER)), fl.barrier_slot)
    for register, place in fl.kept:     # (dead unless the warp left a uniform round)
        b.store(b.load(place), register)
    b.branch(dispatch)
    b.position_at_end(fast)
    lanes = fl.lanes(ll.IRBuilder.select(b, whole, I32(FULL),
                                         b.load(fl.frame_field(RESUME_LANES))))
    b.store(ll.IRBuilder.select(b, lanes, b.splat(at), fl.exit_pcs), fl.pc_slot)
    b.store(I32(0), fl.parked_slot)
    b.store(lanes, fl.mask_slot)
    b.store(I32(0), fl.others_slot)
    b.store(I32(EXIT_PC), fl.others_min_slot)
    fl.resume_switch = ll.IRBuilder.switch(b, at, dispatch)
    fl.resumed_at = set()
    return dispatch


def _dispatcher(fl: GangLowering, gang: ll.Function, segments: list[Segment],
                dispatch: ll.Block) -> None:
    """The dispatcher: the segment of the lowest counter among the lanes that may run, with
    the lanes at that segment as the mask."""
    b = fl.b
    b.position_at_end(dispatch)
    pc = b.load(fl.pc_slot)
    parked = b.load(fl.parked_slot)
    waiting = b.load(fl.barrier_slot)
    # in a uniform round or a block's first round (rounds.py: a point other than -1; the
    # first only where the kernel has rounds), the warp leaves it here, its state in its frame
    leave, general = gang.append_basic_block("leave_round"), gang.append_basic_block("general")
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_signed(
        b, "!=" if fl.has_rounds else ">=", fl.resume_point, I32(-1 if fl.has_rounds else 0)),
        leave, general)
    b.position_at_end(leave)
    _save_counters(fl, pc, parked, waiting, resume=True)
    for register, place in fl.kept:
        b.store(b.load(register), place)
    b.ret(I32(CONTINUE))
    b.position_at_end(general)
    alive = fl.bits(ll.IRBuilder.icmp_unsigned(b, "!=", pc, fl.exit_pcs))
    candidates = b.and_(alive, b.not_(b.or_(parked, waiting)))
    pick, stop = gang.append_basic_block("pick"), gang.append_basic_block("stop")
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "==", candidates, I32(0)), stop, pick)
    b.position_at_end(pick)
    lowest = fl.reduce("umin", ll.IRBuilder.select(b, fl.lanes(candidates), pc, fl.exit_pcs))
    mask = b.and_(ll.IRBuilder.icmp_unsigned(b, "==", pc, b.splat(lowest)),
                  fl.lanes(b.not_(waiting)))
    b.store(mask, fl.mask_slot)
    b.store(b.and_(parked, b.not_(fl.bits(mask))), fl.parked_slot)
    others = b.and_(candidates, b.not_(fl.bits(mask)))
    b.store(others, fl.others_slot)
    b.store(fl.reduce("umin", ll.IRBuilder.select(b, fl.lanes(others), pc, fl.exit_pcs)),
            fl.others_min_slot)
    unreachable = gang.append_basic_block("bad_pc")
    switch = ll.IRBuilder.switch(b, lowest, unreachable)
    for s in segments[0 if _dispatched_first(fl, segments) else 1:]:
        switch.add_case(I32(s.number), s.llblock)
    b.position_at_end(unreachable)
    b.unreachable()
    b.position_at_end(stop)
    _no_lane_goes_on(fl, gang, dispatch, pc, parked, waiting, alive)


def _dispatched_first(fl: GangLowering, segments: list[Segment]) -> bool:
    """Whether a lane may wait for the dispatcher at the first segment: where a branch goes
    there (a loop around the kernel's start) or a warp operation starts it (lanes park
    there). Else only a fresh warp runs it, straight from its entry with all its lanes
    there (a running lane's counter is set before any return to the dispatcher), and
    the dispatcher's case for it would join the fresh path in it."""
    first = segments[0]
    if first.start < first.end and is_warp_op(first.block.instructions[first.start]):
        return True
    return any(i.opcode == "bra" and i.operands[0] is first.block
               for i in fl.function.instructions())


def _no_lane_goes_on(fl: GangLowering, gang: ll.Function, dispatch: ll.Block, pc, parked,
                     waiting, alive) -> None:
    """No lane can go on: all exited, or waiting at a barrier (save and return), or stuck."""
    b = fl.b
    at_barrier, not_barrier = gang.append_basic_block("at_barrier"), gang.append_basic_block(
        "not_barrier")
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "!=", waiting, I32(0)), at_barrier,
                         not_barrier)
    b.position_at_end(at_barrier)
    _save_counters(fl, pc, parked, I32(0), resume=True)    # (the barrier completes first)
    b.ret(I32(BARRIER))
    b.position_at_end(not_barrier)
    some_parked, done = gang.append_basic_block("some_parked"), gang.append_basic_block(
        "all_exited")
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "!=", parked, I32(0)), some_parked,
                         done)
    # Lanes parked at a warp operation for members that have exited since (a member that
    # returns before a shfl.sync does not take part): when lanes exited since the last such
    # retry, every parked lane tries its warp operation again; else they wait forever.
    b.position_at_end(some_parked)
    retry, stuck = gang.append_basic_block("retry"), gang.append_basic_block("stuck")
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "!=", alive, b.load(fl.retry_slot)),
                         retry, stuck)
    b.position_at_end(retry)
    b.store(alive, fl.retry_slot)
    b.store(I32(0), fl.parked_slot)
    b.branch(dispatch)
    b.position_at_end(stuck)
    b.store(fl.cttz(parked), fl.scratch_lane)
    b.ret(I32(DEADLOCK))
    b.position_at_end(done)
    b.ret(I32(-1))


def _save_counters(fl: GangLowering, pc, parked, waiting, resume: bool = False) -> None:
    """Leave the lanes' counters, parked lanes and lanes at a barrier in the warp's frame,
    where the entry's resumption (resume_slow) finds them (`resume`: and RESUME -1, so that
    it goes there: a resumed warp leaves RESUME as it was)."""
    b = fl.b
    if resume:
        b.store(I32(-1), fl.frame_field(RESUME))
    b.store(pc, fl.frame_field(PC, vec(I32)), align=16)
    b.store(parked, fl.frame_field(PARKED))
    b.store(waiting, fl.frame_field(AT_BARRIER))


def _lower_segments(fl: GangLowering, kernel: ir.Function, gang: ll.Function,
                    segments: list[Segment], exit_segment: Segment, stop_word) -> None:
    """The segments: each twice, for all 32 lanes (the mask a constant: no selects, plain
    vector loads and stores, lane 0 first) and for any other mask."""
    b = fl.b
    # every loop passes the first segment of a loop header: a launch asked to stop ends there
    # (but for a header with a block barrier: the warp returns to run_blocks on every pass,
    # and run_blocks looks at the stop word every round)
    waits = {id(block) for block in kernel.blocks
             if any(is_barrier(i) and i.guard is None for i in block.instructions)}
    looped = {fl.first_segment[h].number for h in loop_headers(kernel) - waits
              if h in fl.first_segment}
    fl.full_entries = {}
    for i, s in enumerate(segments):
        copies = enter_copies(fl, s, s.number in looped, stop_word)
        for lanes, block in copies:
            b.position_at_end(block)
            fl.mask = lanes
            idle_warps.enter(fl, s)
            fl.forget_segment(s.block.instructions[s.start:s.end])
            fl.local_forms = {}
            _lower_code(fl, s.block.instructions[s.start:s.end])
            if not b.block.is_terminated:
                following = segments[i + 1] if i + 1 < len(segments) else exit_segment
                if following.block is None:
                    set_pc(fl, fl.mask, I32(EXIT_PC))
                    b.branch(fl.dispatch)
                else:       # lanes may wait there already: meet them
                    goto_segment(fl, following)


def _lower_code(fl: GangLowering, code: list) -> None:
    """A segment's instructions, each skippable run (fl.skips) behind a test of its
    predicate."""
    code = balance_chains(interleave_chains(code, fl.skips), fl)
    i = 0
    while i < len(code):
        skip = fl.skips.get(id(code[i]))
        run = code[i:i + skip[1]] if skip is not None else []
        if skip is not None and len(run) == skip[1] and _whole_runs(fl, run, code):
            _lower_skippable(fl, skip[0], run)
            i += len(run)
            continue
        _lower_one(fl, code[i])
        i += 1
    windows.flush(fl)


def _lower_one(fl: GangLowering, inst: ir.Instruction) -> None:
    if not windows.defers(inst):
        windows.flush(fl)
    forget_classes(fl, inst)
    reloads.before(fl, inst)
    check_widening(fl, inst)
    shadow = nan_shadows.before(fl, inst)
    if inst.opcode == "bra":
        idle_warps.before_branch(fl, inst)
    fl.lower_instruction(inst)
    nan_shadows.after(fl, inst, shadow)
    track_forms(fl, inst)


def _whole_runs(fl: GangLowering, run: list, code: list) -> bool:
    """Whether each of coalesce.py's runs of accesses, and each group of accesses checked
    together (places.access_groups) but for those checked when compiling
    (places.proven_groups), lies wholly inside `run` or wholly outside: a run's loads are
    made at its first access, a group's range checked at its first, for the others (a
    stencil's halo loads, each in an if of its own, share its main load's check: that is
    worth more than skipping them)."""
    inside = {id(inst) for inst in run}
    for members in fl.runs.values():
        ids = {id(m) for m in members or ()}
        if ids & inside and not ids <= inside:
            return False
    groups = {fl.group_of[i] for i in inside if i in fl.group_of} - proven_groups(fl, code)
    return not any(group in groups and i not in inside for i, group in fl.group_of.items())


def _lower_skippable(fl: GangLowering, predicate: ir.Register, run: list) -> None:
    """`run`, jumped over where no lane of the mask has `predicate` (if_convert.py's
    region block that no lane enters): nothing it does is needed then. What the lowering
    learnt inside (addresses, classifications, lane forms) does not hold after it, where
    the warp may not have run it; what it knew before holds, but for the registers the
    run writes."""
    b = fl.b
    windows.flush(fl)
    p = fl.read(predicate, "pred")
    known = (dict(fl.places), dict(fl.patterns), dict(fl.group_ok), dict(fl.local_forms),
             dict(fl.warp_bounds))
    after = fl.llfn.append_basic_block("after_run")
    bounds = run_bounds(fl, predicate) if is_vec(p) else None
    if bounds is not None and not _false(bounds[0]):    # (scalars say every lane has it)
        _lower_whole_run(fl, predicate, run, bounds[0], after, known)
    if bounds is not None and not _false(bounds[1]):    # (scalars say no lane has it)
        lanes_decide = fl.llfn.append_basic_block("run_lanes_decide")
        ll.IRBuilder.cbranch(b, bounds[1], after, lanes_decide)
        b.position_at_end(lanes_decide)
    mask_bits = fl.bits(fl.mask)
    if is_vec(p):
        entered = ll.IRBuilder.icmp_unsigned(b, "!=", b.and_(mask_bits, fl.bits(p)), I32(0))
    else:
        entered = b.and_(p, ll.IRBuilder.icmp_unsigned(b, "!=", mask_bits, I32(0)))
    body = fl.llfn.append_basic_block("guarded_run")
    ll.IRBuilder.cbranch(b, entered, body, after)
    b.position_at_end(body)
    _lower_run(fl, run, after)
    b.position_at_end(after)
    _restore(fl, known)
    # (values found inside are not there where the warp skipped it; what was known before
    # holds, but for the registers the run writes)
    fl.reloads.clear()
    forget_forms(fl, set().union(*(may_write(inst) for inst in run)))


def _lower_run(fl: GangLowering, run: list, after: ll.Block) -> None:
    """A skippable run's instructions from the builder's block on, then on to `after`."""
    for inst in run:
        _lower_one(fl, inst)
    windows.flush(fl)
    if not fl.b.block.is_terminated:
        fl.b.branch(after)


def _false(value) -> bool:
    return isinstance(value, ll.Constant) and value.type == I1 and value.constant == 0


def _restore(fl: GangLowering, known: tuple) -> None:
    for memo, before in zip((fl.places, fl.patterns, fl.group_ok, fl.local_forms,
                             fl.warp_bounds), known, strict=True):
        memo.clear()
        memo.update(before)


def _lower_whole_run(fl: GangLowering, predicate: ir.Register, run: list, every,
                     after: ll.Block, known: tuple) -> None:
    """A skippable run's way for a warp in which `every` (warp_bounds.py's scalar) says
    each lane of the mask has `predicate`: its instructions guarded by the predicate
    itself lowered as unguarded, under the mask alone (a tiled GEMM's guarded tile load,
    `row < M && ka < K` in every lane: the full mask's access, no blend); the builder is
    left where the others go on."""
    b = fl.b
    whole, lanes = (fl.llfn.append_basic_block(n) for n in ("whole_run", "run_lanes"))
    ll.IRBuilder.cbranch(b, every, whole, lanes)
    b.position_at_end(whole)
    fl.guard_held = predicate
    try:
        _lower_run(fl, run, after)
    finally:
        fl.guard_held = None
    _restore(fl, known)
    fl.reloads.clear()
    b.position_at_end(lanes)
