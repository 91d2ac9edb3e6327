"""Warp gangs: how the mask's lanes' addresses lie, for memory.py's accesses. Known when
compiling where passes/lane_offsets.py knows the base's lane offsets and all 32 lanes run;
else found at run time (consecutive, consecutive per half warp, one address per half warp,
or scattered), once per base, size and mask in a segment; and for a base that several
segments read, kept in slots of the gang function and reused by a later segment whose lanes
are among those classified, until the base register is written (a stencil's halo loads
under partial masks, from the row pointer its main load classified).
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import I1, I32, I64
from ptxport.codegen.targets.cpu.gang.checks import (
    CONSECUTIVE,
    HALF_UNIFORM,
    HALVES,
    SCATTERED,
    Place,
    group_check,
    pattern,
)
from ptxport.codegen.targets.cpu.gang.lanes import W
from ptxport.codegen.targets.cpu.gang.scalar_lanes import lane as scalar_lane
from ptxport.codegen.targets.cpu.gang.state import GangLowering
from ptxport.ir import nodes as ir
from ptxport.ir.analysis import may_write
from ptxport.passes.lane_forms import (
    LaneForm,
    operand_form,
    widening,
    widening_guard,
    written_form,
)
from ptxport.passes.shared_bounds import inside

__all__ = ["HALF", "LOW_HALF", "alone_guarded_out", "check_widening", "checked_group", "classify",
           "forget_classes", "forget_forms", "form_of", "make_class_slots", "track_forms"]

HALF = 16      # a half warp: a 16-wide block dimension makes each half a row


def _halves(fl: GangLowering, addrs, size: int):
    """(each half consecutive i1, (start0, start1)): whether within each half warp the
    mask's lanes' addresses are `size` apart (size 0: all the same), and each half's lane-0
    address. A half without active lanes counts as consecutive (its start is unused)."""
    b = fl.b
    bits = fl.bits(fl.mask)
    step = ll.Constant(addrs.type, [size * (i % HALF) for i in range(W)])
    start = b.sub(addrs, step) if size else addrs
    starts = []
    for half in range(2):
        lanes = b.lshr(bits, I32(HALF * half)) if half else bits
        at = fl.cttz(b.or_(lanes, I32(1 << (HALF - 1))))
        starts.append(ll.IRBuilder.extract_element(
            b, start, b.add(at, I32(HALF * half)) if half else at))
    expected = ll.IRBuilder.select(b, LOW_HALF, b.splat(starts[0]), b.splat(starts[1]))
    differ = ll.IRBuilder.select(b, fl.mask, ll.IRBuilder.icmp_unsigned(
        b, "!=", start, expected), b.splat(I1(0)))
    return ll.IRBuilder.icmp_unsigned(b, "==", fl.bits(differ), I32(0)), starts


LOW_HALF = ll.Constant(ll.VectorType(I1, W), [I1(i < HALF) for i in range(W)])


def _known_pattern(fl: GangLowering, place: Place, size: int):
    """_classify's answer for all 32 lanes (the mask the constant full one) where the
    lanes' offsets are known when compiling (CONSECUTIVE, HALVES or HALF_UNIFORM), else
    None: the starts are lane 0's and lane 16's addresses, no test at run time (for a
    widened form, classify tests the warp's flag first). Global accesses of consecutive
    lanes are known under a guard too (Triton predicates each access by its bounds), their
    range that of the mask's first and last lanes, where all 32 lanes run the segment: lane
    0 then holds its address (a lane that exited before the base register was written
    would not)."""
    form = place.lanes
    if form is None:
        return _one_address(fl, place, size)
    b = fl.b
    addrs = place.addrs
    et = addrs.type.element
    wrap = (1 << et.width) - 1
    d = [(c - form.offsets[0]) & wrap for c in form.offsets]
    consecutive = d == [size * i for i in range(W)] and not form.halves
    if not isinstance(fl.mask, ll.Constant):
        if not isinstance(fl.unguarded_mask, ll.Constant):
            return None
        if consecutive:
            return _known_consecutive(fl, place, size)
    if consecutive:
        s0 = ll.IRBuilder.extract_element(b, addrs, I32(0))
        return (I32(CONSECUTIVE), s0, b.add(s0, ll.Constant(et, size * HALF)), s0,
                b.add(s0, ll.Constant(et, size * W)))
    # per half: each half from its own start, lane 16's; both as scalars (the tiled GEMM's
    # B addresses, 64-bit lanes from a per-half index: the vector is the cold paths')
    gap = d[HALF]
    s0 = scalar_lane(b, addrs, 0, fl.written)
    for kind, step, span in ((HALVES, size, size * HALF), (HALF_UNIFORM, 0, size)):
        if d == [step * (i % HALF) + gap * (i // HALF) for i in range(W)]:
            s1 = scalar_lane(b, addrs, HALF, fl.written)
            if kind == HALF_UNIFORM and not isinstance(fl.mask, ll.Constant):
                s0, s1 = _idle_halves(fl, s0, s1)
            less = ll.IRBuilder.icmp_unsigned(b, "<", s0, s1)
            low = ll.IRBuilder.select(b, less, s0, s1)
            high = b.add(ll.IRBuilder.select(b, less, s1, s0), ll.Constant(et, span))
            return I32(kind), s0, s1, low, high
    return None


def _one_address(fl: GangLowering, place: Place, size: int):
    """_known_pattern's answer for a base register alike in every lane of the warp
    (passes/uniformity.py): one address, under any mask (HALF_UNIFORM with both halves'
    the same: a load of one element, a store of the highest active lane's value, as a
    scatter in lane order leaves it; scan_warp's `if (lane == 31) totals[warp] = v` and the
    `totals[warp]` that every lane reads after the barrier were classified lane by lane at
    run time), else None."""
    if place.key[0] not in fl.uniform_ids:
        return None
    s0 = ll.IRBuilder.extract_element(fl.b, place.addrs, I32(0))
    return (I32(HALF_UNIFORM), s0, s0, s0,
            fl.b.add(s0, ll.Constant(place.addrs.type.element, size)))


def _idle_halves(fl: GangLowering, s0, s1):
    """The two halves' one addresses where a guard leaves a half without active lanes: its
    address is not read (one scalar load per half), so it takes the other half's, whose
    lanes are checked (the range check of the larger span may have failed, and the lanes
    then checked one by one)."""
    b = fl.b
    bits = fl.bits(fl.mask)
    low_idle = ll.IRBuilder.icmp_unsigned(b, "==", b.and_(bits, I32(0xFFFF)), I32(0))
    high_idle = ll.IRBuilder.icmp_unsigned(b, "==", b.lshr(bits, I32(HALF)), I32(0))
    return (ll.IRBuilder.select(b, low_idle, s1, s0), ll.IRBuilder.select(b, high_idle, s0, s1))


def _known_consecutive(fl: GangLowering, place: Place, size: int):
    """_known_pattern of consecutive lanes under a mask known only at run time."""
    b = fl.b
    et = place.addrs.type.element
    bits = fl.bits(fl.mask)
    s0 = ll.IRBuilder.extract_element(b, place.addrs, I32(0))
    # (no lane active: the access is skipped, its range unused)
    first = b.zext(fl.cttz(bits), et)
    after = b.zext(b.sub(I32(W), fl.ctlz(bits)), et)
    return (I32(CONSECUTIVE), s0, b.add(s0, ll.Constant(et, size * HALF)),
            b.add(s0, b.mul(first, ll.Constant(et, size))),
            b.add(s0, b.mul(after, ll.Constant(et, size))))


def classify(fl: GangLowering, place: Place, size: int):
    """(kind, start0, start1, low, high) of the mask's lanes' accesses of `size` bytes at
    place.addrs (before place.offset): the kind (CONSECUTIVE...), the lane-0 address of
    each half warp (kind HALF_UNIFORM: each half's one address), and a range that holds
    every active lane's access. Computed once per base, size and mask in a segment (a tile
    loop reads As[ty][k] for 16 values of k: one classification), and, for a base read in
    several segments, reused by a later segment whose lanes are among those classified
    (_remembered)."""
    memo = (place.key, size, id(fl.mask))
    if memo not in fl.patterns:
        known = _known_pattern(fl, place, size)
        if known is not None and place.lanes is not None and place.lanes.widened:
            known = _if_exact(fl, place, size, known)
        if known is None:
            known = _at_run_time(fl, place, size)
        else:       # (for later segments' partial masks: the halo loads of a stencil)
            _keep(fl, place, fl.class_slots.get((place.key, size)), known)
        fl.patterns[memo] = known
    return fl.patterns[memo]


def checked_group(fl: GangLowering, place: Place, t, count: int, low, high, kind):
    """checks.group_check for the current access of `count` elements of type t (its lanes'
    range [low, high), the kind classify found). A guarded access (a group's member in the
    full-mask copy: places.access_groups) has its group checked for every lane of the
    mask without its guard, whose range classify finds then (known when compiling where
    the lanes' offsets are): the check holds for each member whatever its guard, as it
    holds for the unguarded ones. A shared-memory access that passes/shared_bounds.py finds
    inside one variable for every thread of the block is checked when compiling (a
    stencil's tile loads and stores, -10% of its instructions)."""
    if place.shared and inside(fl.shared_bounds.get(fl.inst), t.size * count):
        return I1(1), None
    if fl.guard is None:
        return group_check(fl, place, t.size, low, high, isinstance(kind, ll.Constant))
    group = fl.group_of.get(id(fl.inst))
    if group is None:
        return None
    here, fl.mask = fl.mask, fl.unguarded_mask
    try:
        checked = fl.group_ok.get((group, id(fl.mask)))     # (group_check's memo)
        if checked is not None:
            return checked, None
        if _known_pattern(fl, place, t.size * count) is None:
            # every lane classified at run time would cost more than this access's own
            # check (scan_blelloch's scaled tree offsets: +3% CPU time)
            return None
        kind, _, _, low, high = classify(fl, place, t.size * count)
        if count > 1:
            high = fl.b.sub(high, ll.Constant(high.type, t.size * (count - 1)))
        return group_check(fl, place, t.size, low, high, isinstance(kind, ll.Constant))
    finally:
        fl.mask = here


def alone_guarded_out(instructions, group_of: dict) -> dict:
    """group_of without the guarded accesses that are alone in their group: a group of one
    checks nothing for another access, and for every lane it would check a wider range
    than the guard's lanes touch (a tail's bounds-guarded load: past the allocation's end,
    then checked twice)."""
    members: dict = {}
    for group in group_of.values():
        members[group] = members.get(group, 0) + 1
    return {k: g for k, g in group_of.items() if members[g] > 1} | {
        id(i): group_of[id(i)] for i in instructions
        if i.guard is None and id(i) in group_of}


def _keep(fl: GangLowering, place: Place, slots, found) -> None:
    """Keep `found`, the mask's lanes' classification, in the base's slots (if it has
    any), unless this instruction writes the base (whose slots it emptied)."""
    if slots is None or place.key[0] in {id(r) for r in may_write(fl.inst)}:
        return
    for value, slot in zip(found, slots.values, strict=True):
        ll.IRBuilder.store(fl.b, value, slot)
    ll.IRBuilder.store(fl.b, fl.bits(fl.mask), slots.bits)


def _at_run_time(fl: GangLowering, place: Place, size: int):
    slots = fl.class_slots.get((place.key, size))
    if slots is not None:
        return _remembered(fl, place, size, slots)
    return _classify_lanes(fl, place, size)


def _if_exact(fl: GangLowering, place: Place, size: int, known):
    """`known` where no widening of the warp has wrapped (its flag in the warp frame), else
    a gather or scatter with the whole address space as its range, which no allocation
    holds, so that each lane is checked on its own (rare: an index that wraps inside a
    warp). Selects, not a branch to the run-time classification: that branch (and LLVM's
    copies of the loops around it) cost a grid-stride saxpy 20% of its CPU time."""
    b = fl.b
    exact = fl.no_widening_wrapped()
    kind, s0, s1, low, high = known
    et = low.type
    return (ll.IRBuilder.select(b, exact, kind, I32(SCATTERED)), s0, s1,
            ll.IRBuilder.select(b, exact, low, ll.Constant(et, 0)),
            ll.IRBuilder.select(b, exact, high, ll.Constant(et, (1 << et.width) - 1)))


def _classify_lanes(fl: GangLowering, place: Place, size: int):
    """_classify's answer found at run time from the mask's lanes' addresses."""
    b = fl.b
    llfn = fl.llfn
    addrs = place.addrs
    et = addrs.type.element
    bits = fl.bits(fl.mask)
    entry = b.block
    run, halves_test, uniform_test, scattered, done = (llfn.append_basic_block(n) for n in (
        "classify", "classify_halves", "classify_uniform", "classify_scattered",
        "classified"))
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "!=", bits, I32(0)), run, done)
    incoming = [(I32(SCATTERED), ll.Constant(et, 0), ll.Constant(et, 0), ll.Constant(et, 0),
                 ll.Constant(et, 0), entry)]
    b.position_at_end(run)
    contiguous, s = pattern(fl, addrs, size)
    first = b.zext(fl.cttz(bits), et)
    after = b.zext(b.sub(I32(W), fl.ctlz(bits)), et)
    incoming.append((I32(CONSECUTIVE), s, b.add(s, ll.Constant(et, size * HALF)),
                     b.add(s, b.mul(first, ll.Constant(et, size))),
                     b.add(s, b.mul(after, ll.Constant(et, size))), b.block))
    low_idle = ll.IRBuilder.icmp_unsigned(b, "==", b.and_(bits, I32(0xFFFF)), I32(0))
    high_idle = ll.IRBuilder.icmp_unsigned(b, "==", b.lshr(bits, I32(HALF)), I32(0))
    ll.IRBuilder.cbranch(b, contiguous, done, halves_test)

    def both(starts):
        # an idle half's start is not an address: it takes the other half's
        h0, h1 = starts
        h0, h1 = (ll.IRBuilder.select(b, low_idle, h1, h0),
                  ll.IRBuilder.select(b, high_idle, h0, h1))
        less = ll.IRBuilder.icmp_unsigned(b, "<", h0, h1)
        return h0, h1, ll.IRBuilder.select(b, less, h0, h1), ll.IRBuilder.select(b, less, h1, h0)
    b.position_at_end(halves_test)
    halves, starts = _halves(fl, addrs, size)
    h0, h1, low, high = both(starts)
    incoming.append((I32(HALVES), h0, h1, low, b.add(high, ll.Constant(et, size * HALF)),
                     b.block))
    ll.IRBuilder.cbranch(b, halves, done, uniform_test)
    b.position_at_end(uniform_test)
    same, starts = _halves(fl, addrs, 0)
    u0, u1, low, high = both(starts)
    incoming.append((I32(HALF_UNIFORM), u0, u1, low, b.add(high, ll.Constant(et, size)),
                     b.block))
    ll.IRBuilder.cbranch(b, same, done, scattered)
    b.position_at_end(scattered)
    if place.shared:        # (check_place tests scattered shared lanes one by one)
        low = high = ll.Constant(et, 0)
    else:
        ones = ll.Constant(et, (1 << et.width) - 1)
        low = fl.reduce("umin", ll.IRBuilder.select(b, fl.mask, addrs, b.splat(ones)))
        high = b.add(fl.reduce("umax", ll.IRBuilder.select(
            b, fl.mask, addrs, b.splat(ll.Constant(et, 0)))), ll.Constant(et, size))
    incoming.append((I32(SCATTERED), low, low, low, high, b.block))
    b.branch(done)
    b.position_at_end(done)
    result = []
    for i, typ in enumerate((I32, et, et, et, et)):
        phi = ll.IRBuilder.phi(b, typ)
        for values in incoming:
            phi.add_incoming(values[i], values[5])
        result.append(phi)
    return tuple(result)



class _Slots:
    """Where a base's last run-time classification is kept: the mask's lanes it holds for
    (`bits`, 0: none) and _classify's five values."""

    __slots__ = ("bits", "values", "types")

    def __init__(self, bits, values, types):
        self.bits, self.values, self.types = bits, values, types


def make_class_slots(fl: GangLowering, bases) -> None:
    """Slots (fl.class_slots) for each (place key, size) of `bases` (key -> the register and
    the numbers of the segments that access it so), where more than one segment does; all
    emptied where a warp starts (lowering.py's fresh entry: the frame held another block's
    warp) and wherever the kernel writes the register (forget_classes), so that what they
    hold stays true while the warp waits at barriers and resumes. They
    lie in the warp's frame, past fl.frame_bytes (which grows by them): as values of the
    function, LLVM kept them in registers across its whole code (its dispatcher joins every
    segment), which cost the loops spills (scan_blelloch +7% CPU time)."""
    fl.class_slots, fl.slots_of = {}, {}
    for (key, size), (register, segments) in bases.items():
        if len(segments) < 2:
            continue
        et = I32 if key[1] == "shared" and register.type.bits != 64 else I64
        types = (I32, et, et, et, et)
        at = (fl.frame_bytes + 7) // 8 * 8
        made = [fl.frame_field(at, I32), fl.frame_field(at + 4, I32)]
        made += [fl.frame_field(at + 8 + 8 * i, et) for i in range(4)]
        fl.frame_bytes = at + 40
        slots = _Slots(made[0], made[1:], types)
        fl.class_slots[(key, size)] = slots
        fl.slots_of.setdefault(id(register), []).append(slots)
    fl.frame_bytes = (fl.frame_bytes + 127) // 128 * 128


def forget_classes(fl: GangLowering, inst: ir.Instruction) -> None:
    """Before `inst`: empty the slots of the registers it writes."""
    for register in may_write(inst):
        for slots in fl.slots_of.get(id(register), ()):
            ll.IRBuilder.store(fl.b, I32(0), slots.bits)


def _remembered(fl: GangLowering, place: Place, size: int, slots: _Slots):
    """classify's answer from the slots where the mask's lanes are among those they hold
    (for fewer lanes the same kind and starts hold, and the range holds theirs), else found
    now and kept (unless this instruction writes the base, whose slots it emptied)."""
    b = fl.b
    bits = fl.bits(fl.mask)
    held = ll.IRBuilder.load(b, slots.bits, typ=I32)
    reuse = b.and_(ll.IRBuilder.icmp_unsigned(b, "!=", held, I32(0)),
                   ll.IRBuilder.icmp_unsigned(b, "==", b.and_(bits, b.not_(held)), I32(0)))
    again, kept, done = (fl.llfn.append_basic_block(n) for n in (
        "classify_again", "classified_before", "classify_done"))
    ll.IRBuilder.cbranch(b, reuse, kept, again)
    b.position_at_end(kept)
    before = [ll.IRBuilder.load(b, slot, typ=typ)
              for slot, typ in zip(slots.values, slots.types, strict=True)]
    b.branch(done)
    b.position_at_end(again)
    found = _classify_lanes(fl, place, size)
    _keep(fl, place, slots, found)
    again = b.block
    b.branch(done)
    b.position_at_end(done)
    result = []
    for x, y, typ in zip(before, found, slots.types, strict=True):
        phi = ll.IRBuilder.phi(b, typ)
        phi.add_incoming(x, kept)
        phi.add_incoming(y, again)
        result.append(phi)
    return tuple(result)


# --- lane forms within a segment, and the widenings' run-time check --------------------------

_BROKEN = "broken"      # written in this segment with no known form


def form_of(fl: GangLowering, register: ir.Register) -> LaneForm | None:
    """The register's LaneForm where the segment's code is: its form written in this
    segment under the full mask, else the kernel's (passes/lane_offsets.py), else None."""
    local = fl.local_forms.get(id(register))
    if local is not None:
        return None if local is _BROKEN else local
    return fl.lane_forms.get(register)


def track_forms(fl: GangLowering, inst: ir.Instruction) -> None:
    """After `inst`: the forms of the registers it wrote. An unguarded write under the
    constant full mask is made by all 32 lanes at once, so its form follows from its
    operands' forms here (in a block that is not converged too); any other write leaves no
    known form for the rest of the segment."""
    written = may_write(inst)
    if not written:
        return
    value = None
    if len(written) == 1 and inst.guard is None and isinstance(fl.mask, ll.Constant):
        register = next(iter(written))
        if register not in fl.uniform and not register.vector:
            value = written_form(inst, lambda r: form_of(fl, r), fl.uniform, fl.block,
                                 bases=fl.shared_bases)
    for register in written:
        kernel = fl.lane_forms.get(register)
        if kernel is not None and (not kernel.widened or not isinstance(value, LaneForm)):
            # every write of it has the kernel's form, which an exact one (lane_offsets.py:
            # Triton's `and` and `or` of aligned indices, their widening) is best
            fl.local_forms.pop(id(register), None)
        else:
            fl.local_forms[id(register)] = value if isinstance(value, LaneForm) else _BROKEN


def forget_forms(fl: GangLowering, registers) -> None:
    """After code that may or may not have run (a skipped guarded run): the registers it
    writes keep their kernel-wide forms (every write has those), else none is known."""
    for register in registers:
        fl.forget(register)
        if fl.lane_forms.get(register) is not None:
            fl.local_forms.pop(id(register), None)
        else:
            fl.local_forms[id(register)] = _BROKEN


def check_widening(fl: GangLowering, inst: ir.Instruction) -> None:
    """Before a widening conversion (lane_offsets.widening) of a register with a known form:
    clear the warp's flag (fl.exact_offset in its frame) when a lane's sum may wrap, so that
    forms widened from it are no longer trusted (classify then looks at the lanes)."""
    if widening(inst) is None:
        return
    exact = fl.lane_forms.get(inst.operands[0])
    if exact is not None and not exact.widened:     # (lane_offsets': aligned, cannot wrap)
        return
    source = inst.operands[1]
    form = operand_form(source, lambda r: form_of(fl, r), fl.uniform, fl.block)
    if not isinstance(form, LaneForm):
        return
    checks = widening_guard(inst, form)
    if not checks:
        return
    b = fl.b
    signed = inst.spec.types[-1] == "s32"
    lanes = fl.read_lanes(source, "s32" if signed else "u32")
    compare = ll.IRBuilder.icmp_signed if signed else ll.IRBuilder.icmp_unsigned
    ok = I1(1)
    def i32(v):     # (as LLVM prints an i32 constant: signed)
        v &= 0xFFFFFFFF
        return ll.Constant(I32, v - (1 << 32) if v >> 31 else v)
    for lane, low, high in checks:
        value = ll.IRBuilder.extract_element(b, lanes, I32(lane))
        inside = I1(0) if low > high else b.and_(
            compare(b, ">=", value, i32(low)), compare(b, "<=", value, i32(high)))
        ok = b.and_(ok, inside)
    flag = fl.frame_field(fl.exact_offset)
    fl.exact_stores.append(ll.IRBuilder.store(
        b, b.and_(ll.IRBuilder.load(b, flag, typ=I32), b.zext(ok, I32)), flag))
