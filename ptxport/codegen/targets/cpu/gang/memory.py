"""Warp gangs' loads and stores: the lanes' range checked (with their group's check where
there is one, places.py) and prefetched, then one access by how the active lanes' addresses
lie (classify.py; access_kinds.py: consecutive, one masked vector access; per half warp, two;
one address per half warp, two scalars; else a gather or scatter); runs of scalar loads
together (coalesce.py); loads every lane makes alike once. Atomics: atomics.py.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import (
    I8,
    I32,
    I64,
    PTR,
    FunctionLowering,
    value_type,
)
from ptxport.codegen.ops.data import instruction_type, state_space, vector_count
from ptxport.codegen.targets.cpu.gang import checks, indexed, params, reloads, strided, widened
from ptxport.codegen.targets.cpu.gang.access_kinds import (
    consecutive,
    consecutive_halves,
    gather_or_scatter,
    interleaved,
    joined,
    lane_by_lane,
    one_per_half,
    pointer_maker,
)
from ptxport.codegen.targets.cpu.gang.checks import (
    CONSECUTIVE,
    HALF_UNIFORM,
    HALVES,
    Place,
    check_access,
    check_place,
    check_shared32,
    inside_one_allocation,
    lane_addresses,
    prefetch,
)
from ptxport.codegen.targets.cpu.gang.classify import checked_group, classify
from ptxport.codegen.targets.cpu.gang.coalesce import interleaved_access
from ptxport.codegen.targets.cpu.gang.lanes import W, is_vec, vec
from ptxport.codegen.targets.cpu.gang.places import place_of, vector_access
from ptxport.codegen.targets.cpu.gang.state import GangLowering
from ptxport.codegen.targets.cpu.gang.streams import prefetch_site
from ptxport.ir import nodes as ir
from ptxport.ir.types import Type


def _access(fl: GangLowering, place: Place, t: Type, value=None):
    """Load (value None) or store `value` of type t for the mask's lanes at `place`: lanes
    known to lie one stride apart by strided.py, else by how classify.py finds them."""
    if strided.applies(fl, place, t.size):
        if value is None:
            return reloads.load(fl, place, t, lambda: strided.strided_access(
                fl, place, t, None, _classified_access))
        strided.strided_access(fl, place, t, value, _classified_access)
        reloads.stored(fl, place, t, value)
        return None
    return _classified_access(fl, place, t, value)


def _classified_access(fl: GangLowering, place: Place, t: Type, value=None):
    """_access by classify.py's kind: one masked vector access when the lanes' addresses
    are consecutive, two half-warp ones when each half's are (a 16-wide block), two scalar
    loads when each half reads one address, else a gather or scatter."""
    b = fl.b
    vt = vec(value_type(t))
    load = value is None
    kind, s0, s1, low, high = classify(fl, place, t.size)
    if _known_consecutive(kind):
        return _checked_then(fl, place, t, 1, value is None, (kind, low, high), s0,
                             lambda pointer: consecutive(fl, t, value, lambda _: pointer,
                                                          s0, s1))
    offset = ll.Constant(place.addrs.type.element, place.offset)
    vector_block, halves_block, uniform_block, lanes_block, done = (
        fl.llfn.append_basic_block(n) for n in (
            "access_vector", "access_halves", "access_uniform", "access_gather",
            "access_done"))
    skipped = _check_access_place(fl, place, t, load, kind, low, high, done,
                                  halves=(s0, s1) if _halves_apart(place) else None)
    pointer = pointer_maker(fl, place, offset)
    switch = ll.IRBuilder.switch(b, kind, lanes_block)
    switch.add_case(I32(CONSECUTIVE), vector_block)
    switch.add_case(I32(HALVES), halves_block)
    switch.add_case(I32(HALF_UNIFORM), uniform_block)
    incoming = []
    for block, part in ((vector_block, consecutive), (halves_block, consecutive_halves),
                        (uniform_block, one_per_half)):
        b.position_at_end(block)
        loaded = part(fl, t, value, pointer, s0, s1)
        if loaded is not None:
            incoming.append((loaded, b.block))
        if not b.block.is_terminated:
            b.branch(done)
    b.position_at_end(lanes_block)
    loaded = gather_or_scatter(fl, place, t, value, offset)
    if loaded is not None:
        incoming.append((loaded, b.block))
    b.branch(done)
    b.position_at_end(done)
    if load:
        result = ll.IRBuilder.phi(b, vt)
        for v, block in incoming:
            result.add_incoming(v, block)
        result.add_incoming(ll.Constant(vt, None), skipped)
        return result
    return None


def lane_vectors(fl: GangLowering, place: Place, t: Type, count: int, values=None,
                 old=None):
    """Load (values None: the `count` vectors of the lanes' elements) or store `values` for
    the mask's lanes, each lane's `count` elements of type t at `place`. `old` (a load's,
    or None): vectors the loaded ones then hold in the lanes outside the mask (the values a
    guarded load's registers keep there), the masked load's pass-through where the lanes
    are known consecutive, so that no select follows it (LLVM then sees through the
    shuffles that take a .v4 access apart to whole-vector arithmetic)."""
    wide = widened.applies(fl, place, t.size * count, count)
    if fl.loop_check_state is None and id(fl.inst) in fl.loop_checked \
            and not (wide and id(fl.inst) in fl.block_checked):  # (widened.py's _proven)
        return _twice(fl, lambda: lane_vectors(fl, place, t, count, values, old))
    if wide:
        return widened.access(fl, place, t, count, values, old)
    found = indexed.applies(fl, place, t.size) if count == 1 and old is None else None
    if found is not None:
        return indexed.access(fl, place, t, found, None if values is None else values[0],
                              lambda: _general(fl, place, t, count, values, old))
    return _general(fl, place, t, count, values, old)


def _twice(fl: GangLowering, lower):
    """An access that the range test at its loop's entry covers (passes/
    hoist_global_checks.py), lowered twice: with no check of its own where every lane of
    the mask passed that test, and as any other where one did not (the two ways' loaded
    vectors joined). One way with the test's branch inside left the lanes' lowest and
    highest address (compares and selects: classify's) made before it, in the hot path."""
    b = fl.b
    ok = checks.loop_checked(fl)
    fast, slow, done = (fl.llfn.append_basic_block(n) for n in (
        "loop_checked", "own_checks", "loop_checked_done"))
    checks.expect(fl, ll.IRBuilder.cbranch(b, ok, fast, slow))
    memos = (dict(fl.patterns), dict(fl.group_ok))
    ways = []
    for block, state in ((fast, True), (slow, False)):
        b.position_at_end(block)
        fl.patterns, fl.group_ok = dict(memos[0]), dict(memos[1])
        fl.loop_check_state = state
        try:
            loaded = lower()
        finally:
            fl.loop_check_state = None
        ways.append((loaded, b.block))
        b.branch(done)
    b.position_at_end(done)
    fl.patterns, fl.group_ok = memos
    fl.reloads.clear()      # (what one way noted is not there on the other)
    if ways[0][0] is None:
        return None
    joined = []
    for x, y in zip(ways[0][0], ways[1][0], strict=True):
        phi = ll.IRBuilder.phi(b, x.type)
        phi.add_incoming(x, ways[0][1])
        phi.add_incoming(y, ways[1][1])
        joined.append(phi)
    return joined


def _general(fl: GangLowering, place: Place, t: Type, count: int, values, old):
    """lane_vectors where the lanes' addresses are not known to lie consecutive."""
    if values is None and old is not None:
        return _merged_load(fl, place, t, count, old)
    if count > 1:
        return _vector_elements(fl, place, t, count, values)
    if values is None:
        return [_access(fl, place, t)]
    _access(fl, place, t, values[0])
    return None


def _merged_load(fl: GangLowering, place: Place, t: Type, count: int, old) -> list:
    if count == 1 and strided.applies(fl, place, t.size):    # (no classification needed)
        return [fl.b.select(fl.mask, _access(fl, place, t), old[0])]
    kind, s0, s1, low, high = classify(fl, place, t.size * count)
    if not _known_consecutive(kind):
        loaded = _vector_elements(fl, place, t, count) if count > 1 else [_access(fl, place, t)]
        return [fl.b.select(fl.mask, v, o) for v, o in zip(loaded, old, strict=True)]
    if count > 1:
        return _checked_then(fl, place, t, count, True, (kind, low, high), s0,
                             lambda pointer: interleaved(fl, t, count, pointer, None, old))
    return [_checked_then(fl, place, t, 1, True, (kind, low, high), s0,
                          lambda pointer: consecutive(fl, t, None, lambda _: pointer, s0, s1,
                                                       old[0]))]


def _halves_apart(place: Place) -> bool:
    """Whether each half warp's lanes lie apart from the other's (passes/lane_forms.py's
    halves: a 16-wide block's rows, a run-time distance apart) in global memory. Only
    where to prefetch follows from it: classify's kind may still be found at run time (a
    widened form's)."""
    return not place.shared and place.lanes is not None and place.lanes.halves


def _known_consecutive(kind) -> bool:
    """Whether classify found the lanes consecutive when compiling."""
    return isinstance(kind, ll.Constant) and kind.constant == CONSECUTIVE


def _checked_then(fl: GangLowering, place: Place, t: Type, count: int, load: bool, where,
                  s0, access):
    """A known-consecutive access (`where`: classify's kind, low and high) of `count`
    elements of type t a lane: the lanes' range checked (skipped with no lane active), then
    `access(lane 0's pointer)` after the check rather than in a branch of its own (a masked
    access of no lane touches no memory): with no phi after a load, LLVM keeps its vector
    whole through the instructions that use it."""
    b = fl.b
    kind, low, high = where
    checked = fl.llfn.append_basic_block("access_checked")
    _check_access_place(fl, place, t, load, kind, low, high, checked, count)
    b.branch(checked)
    b.position_at_end(checked)
    return access(pointer_maker(fl, place, ll.Constant(place.addrs.type.element,
                                                         place.offset))(s0))


def _vector_elements(fl: GangLowering, place: Place, t: Type, count: int, values=None):
    """Load (values None) or store the `count` elements of a .v2/.v4 access for the mask's
    lanes, each lane's elements `t.size` apart from its address: one check of the range
    they all touch, then, when the lanes' vectors lie one after another (a lane's elements
    followed by the next lane's: what Triton's and CUDA's float4 accesses are), one masked
    access of the warp's W * count elements, else a gather or scatter per element."""
    b = fl.b
    load = values is None
    kind, s0, _s1, low, high = classify(fl, place, t.size * count)
    if _known_consecutive(kind):
        return _checked_then(fl, place, t, count, load, (kind, low, high), s0,
                             lambda pointer: interleaved(fl, t, count, pointer, values))
    offset = ll.Constant(place.addrs.type.element, place.offset)
    whole, lanes_block, done = (fl.llfn.append_basic_block(n) for n in (
        "access_vectors", "access_elements", "access_vectors_done"))
    skipped = _check_access_place(fl, place, t, load, kind, low, high, done, count)
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "==", kind, I32(CONSECUTIVE)),
                         whole, lanes_block)
    b.position_at_end(whole)
    pointer = pointer_maker(fl, place, offset)(s0)
    loaded = interleaved(fl, t, count, pointer, values)
    whole = b.block
    b.branch(done)
    b.position_at_end(lanes_block)
    one_by_one = lane_by_lane(fl, place, t, count, values)
    lanes_block = b.block
    b.branch(done)
    b.position_at_end(done)
    if not load:
        return None
    return joined(fl, t, [(loaded, whole), (one_by_one, lanes_block), (None, skipped)])


def _check_access_place(fl: GangLowering, place: Place, t: Type, load: bool, kind, low,
                        high, done: ll.Block, count: int = 1, halves=None) -> ll.Block:
    """Branch to `done` when no lane is active, else check the lanes' range [low, high) of
    `count` elements of type t each (with the group's check where there is one) and
    prefetch ahead; returns the block that skips. `halves`: (lane 0's, lane 16's address)
    where each half warp's lanes lie apart from the other's (known when compiling): an
    access in no group then prefetches each half's own lines, not the lines after the
    lowest (a 16x16 tile's two rows lie a row apart: the lines after the first row's are
    other blocks' columns, and the second row's were never fetched)."""
    b = fl.b
    offset = ll.Constant(place.addrs.type.element, place.offset)
    size = t.size * count
    # the group's span counts the offsets of a vector's further elements itself
    group_high = b.sub(high, ll.Constant(high.type, size - t.size)) if count > 1 else high
    # (an access in no group, or cp.async's, checks itself)
    checked, group_low = checked_group(fl, place, t, count, low, group_high, kind) \
        or (None, None)
    active = fl.llfn.append_basic_block("access_active")
    skipped = b.block          # no lane active (a guard false everywhere): no access at all
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "!=", fl.bits(fl.mask), I32(0)),
                         active, done)
    b.position_at_end(active)
    if checked is None:
        check_place(fl, place, size, not load, kind, b.add(low, offset),
                    b.add(high, offset))
        if not place.shared and halves is None:
            prefetch_site(fl, place, [b.add(low, offset)], size * W, size, not load)
        elif not place.shared:
            prefetch_site(fl, place, [b.add(s, offset) for s in halves], size * W // 2, size,
                          not load)
    else:       # the group's check failed: this access on its own
        if group_low is not None and halves is None:       # the group's first global access
            prefetch_site(fl, place, [group_low], 256, size, not load)
        elif group_low is not None:     # each half's lines, from the group's lowest offset
            # to its highest's 16 lanes (one line for a tile row of 16 floats, not two: the
            # second was another block's columns, which cost gemm's 16 workers)
            first, last = fl.group_span[fl.group_of[id(fl.inst)]]
            at = ll.Constant(place.addrs.type.element, first)
            prefetch_site(fl, place, [b.add(s, at) for s in halves],
                          last - first + size * W // 2, size, not load)
        exact, ok = fl.llfn.append_basic_block("access_exact"), fl.llfn.append_basic_block(
            "access_checked")
        checks.expect(fl, ll.IRBuilder.cbranch(b, checked, ok, exact))
        b.position_at_end(exact)
        check_place(fl, place, size, not load, kind, b.add(low, offset),
                    b.add(high, offset))
        b.branch(ok)
        b.position_at_end(ok)
    return skipped


def _uniform_load(fl: GangLowering, operand, space, t: Type, count: int) -> list:
    """The `count` elements of type t that every lane reads at one address (the destination
    is uniform, so passes/uniformity.py found the address uniform): checked once, loaded once."""
    b = fl.b
    element = value_type(t)
    host, offsets = lane_addresses(fl, operand, space, lanes=False)
    size = t.size * count
    skipped = b.block
    active, done = fl.llfn.append_basic_block("load_once"), fl.llfn.append_basic_block(
        "loaded_once")
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "!=", fl.bits(fl.mask), I32(0)),
                         active, done)
    b.position_at_end(active)
    if host is None:
        check_shared32(fl, b.splat(offsets), size, False)
        pointer = ll.IRBuilder.gep(b, fl.target.space_base(fl, "shared"),
                                   [b.sext(offsets, I64)], source_etype=I8)
    else:
        check_access(fl, b.splat(host), None if offsets is None else b.splat(offsets), size,
                      False, span=(host, b.add(host, I64(size))))
        pointer = ll.IRBuilder.inttoptr(b, host, PTR)
    values = [ll.IRBuilder.load(b, b.gep(pointer, [I64(i * t.size)], source_etype=I8),
                                typ=element, align=t.size) for i in range(count)]
    loaded = b.block
    b.branch(done)
    b.position_at_end(done)
    out = []
    for v in values:
        phi = ll.IRBuilder.phi(b, element)
        phi.add_incoming(v, loaded)
        phi.add_incoming(ll.Constant(element, None), skipped)
        out.append(phi)
    return out


def _only(value):
    """The one element of `{%r}`, or the value itself."""
    return value.elements[0] if isinstance(value, ir.VectorValue) else value


def _lower_run(fl: GangLowering, members: list) -> None:
    """A run of scalar accesses (coalesce.py) together: loads at the first (fl.pending gets
    each load's vector of the lanes), stores at the last."""
    b = fl.b
    first = members[0]
    t = instruction_type(first)
    load = first.opcode == "ld"
    outer = fl.unguarded_mask        # (fl.mask has the current access's predicate)
    masks = [outer if m.guard is None else b.and_(outer, fl.guard_value(m)) for m in members]
    values = None if load else [fl.read_lanes(_only(m.operands[1]), t) for m in members]
    union = masks[0]
    for m in masks[1:]:
        union = union if m is union else b.or_(union, m)
    place = place_of(fl, first.operands[1 if load else 0], "global")
    here, fl.mask = fl.mask, union
    kind, s0, _s1, low, high = classify(fl, place, t.size * len(members))
    offset = ll.Constant(place.addrs.type.element, place.offset)
    inside = inside_one_allocation(fl, b.add(low, offset), b.add(high, offset))
    whole, apart, done = (fl.llfn.append_basic_block(n) for n in (
        "run_whole", "run_apart", "run_done"))
    ll.IRBuilder.cbranch(b, b.and_(inside, ll.IRBuilder.icmp_unsigned(
        b, "==", kind, I32(CONSECUTIVE))), whole, apart)
    memos, inst = (dict(fl.patterns), dict(fl.group_ok)), fl.inst
    b.position_at_end(whole)
    prefetch(fl, [b.add(low, offset)], t.size * len(members) * W, not load)
    together = interleaved_access(fl, t, masks, ll.IRBuilder.inttoptr(b, b.add(s0, offset), PTR),
                                  values)
    whole = b.block
    b.branch(done)
    b.position_at_end(apart)
    alone = []
    for k, member in enumerate(members):        # (each checked on its own: exact faults)
        fl.mask, fl.inst = masks[k], member
        alone.append(_access(fl, place.moved(k * t.size), t, None if load else values[k]))
        fl.patterns, fl.group_ok = dict(memos[0]), dict(memos[1])
    fl.mask, fl.inst = here, inst
    apart = b.block
    b.branch(done)
    b.position_at_end(done)
    fl.patterns, fl.group_ok = memos
    fl.reloads.clear()      # (what the members noted apart is not there on the other way)
    for member, x, y in zip(members, together, alone, strict=True) if load else ():
        phi = ll.IRBuilder.phi(b, x.type)
        phi.add_incoming(x, whole)
        phi.add_incoming(y, apart)
        fl.pending[id(member)] = phi


def lower_ld(fl: GangLowering, inst: ir.Instruction) -> None:
    t = instruction_type(inst)
    count = vector_count(inst)
    space = state_space(inst)
    operand = inst.operands[1]
    if id(inst) in fl.runs:         # a run of loads, loaded together here (coalesce.py)
        _lower_run(fl, fl.runs[id(inst)])
    old = None
    if id(inst) in fl.pending:
        values = [fl.pending.pop(id(inst))]
    elif vector_access(fl, inst) is not None:
        old = _kept_lanes(fl, inst.operands[0], t, count)
        values = lane_vectors(fl, place_of(fl, operand, space), t, count, old=old)
    elif space == "param":      # a kernel parameter: the same for every lane
        values = params.load(fl, inst)      # (from run_blocks' copy, where it may)
        if id(inst.operands[0]) in fl.param_registers:
            return      # (the register reads the copy wherever it is read)
        if values is None:
            pointer = FunctionLowering.pointer(fl, operand, "param", t.size * count)
            values = [ll.IRBuilder.load(
                fl.b, fl.b.gep(pointer, [I64(i * t.size)], source_etype=I8),
                typ=value_type(t), align=t.size) for i in range(count)]
    else:       # every lane loads alike (or not an [address]: refused there)
        values = _uniform_load(fl, operand, space, t, count)
    if old is not None:         # (the lanes outside the mask hold the registers' values)
        for dest, v in zip(_destinations(inst.operands[0]), values, strict=True):
            fl.write(dest, v, t, merged=True)
    elif count == 1 and not isinstance(inst.operands[0], ir.VectorValue):
        fl.write(inst.operands[0], values[0], t)
    else:
        fl.write_vector(inst.operands[0], values, t)


def _destinations(dest) -> list:
    return list(dest.elements) if isinstance(dest, ir.VectorValue) else [dest]


def _kept_lanes(fl: GangLowering, dest, t: Type, count: int):
    """The lanes' values of a load's destination registers, where the load must keep them
    outside its mask (fl.keeps_old: a guarded load, Triton's `@%p ld` after `mov %r, 0`)
    and they are plain registers of the load's width; else None."""
    dests = _destinations(dest)
    if len(dests) != count or not all(
            isinstance(d, ir.Register) and not d.vector and d not in fl.uniform
            and d.type.bits == t.size * 8 for d in dests):
        return None
    if not any(fl.keeps_old(d) for d in dests):
        return None
    return [fl.read_lanes(d, t) for d in dests]


def lower_st(fl: GangLowering, inst: ir.Instruction) -> None:
    reloads.hold(fl)
    try:
        _lower_st(fl, inst)
    finally:
        fl.reloads_held = None


def _lower_st(fl: GangLowering, inst: ir.Instruction) -> None:
    if id(inst) in fl.runs:         # a run of stores, stored together at its last
        if fl.runs[id(inst)] is not None:
            _lower_run(fl, fl.runs[id(inst)])
        return
    t = instruction_type(inst)
    count = vector_count(inst)
    space = state_space(inst)
    place = place_of(fl, inst.operands[0], space)
    if count == 1 and not isinstance(inst.operands[1], ir.VectorValue):
        values = [fl.read(inst.operands[1], t)]
    else:
        values = fl.read_vector(inst.operands[1], t, count)
    values = [fl.convert(v, t, t) if is_vec(v) else fl.b.splat(v) for v in values]
    lane_vectors(fl, place, t, count, values)
