"""Warp gangs' loads, stores and atomics: by how the active lanes' addresses lie
(classify.py: consecutive: one masked vector access; per half warp: two; one address per
half warp: two scalars; else a gather or scatter).
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import (
    I1,
    I8,
    I32,
    I64,
    PTR,
    FunctionLowering,
    value_type,
)
from ptxport.codegen.ops.data import instruction_type, state_space, vector_count
from ptxport.codegen.targets.cpu.gang import checks, strided
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
    type_name,
)
from ptxport.codegen.targets.cpu.gang.classify import (
    HALF,
    LOW_HALF,
    alone_guarded_out,
    checked_group,
    classify,
    form_of,
    make_class_slots,
)
from ptxport.codegen.targets.cpu.gang.coalesce import find_runs, interleaved_access
from ptxport.codegen.targets.cpu.gang.lane_loop import lane_loop
from ptxport.codegen.targets.cpu.gang.lanes import GangUnsupported, W, declare, is_vec, vec
from ptxport.codegen.targets.cpu.gang.state import GangLowering
from ptxport.ir import nodes as ir
from ptxport.ir.analysis import may_write, uses_and_defs
from ptxport.ir.types import Type
from ptxport.passes.segment import is_barrier


def _half_mask(fl: GangLowering, half: int):
    b = fl.b
    lanes = ll.Constant(ll.VectorType(I32, HALF), list(range(HALF * half, HALF * half + HALF)))
    return ll.IRBuilder.shuffle_vector(b, fl.mask, ll.Constant(fl.mask.type, None), lanes)


def _vector_access(fl: GangLowering, inst: ir.Instruction):
    """(address operand, space, element type, count) of a ld or st that _access lowers lane
    by lane (not a parameter, not a load every lane makes alike), else None."""
    if inst.opcode not in ("ld", "st"):
        return None
    space = state_space(inst)
    if inst.opcode == "ld":
        defs = uses_and_defs(inst)[1]
        if space == "param" or (defs and defs <= fl.uniform):
            return None
    operand = inst.operands[1] if inst.opcode == "ld" else inst.operands[0]
    if not isinstance(operand, ir.Address):
        return None
    return operand, space, instruction_type(inst), vector_count(inst)


def access_groups(fl: GangLowering, instructions) -> tuple[dict, dict]:
    """The accesses of a segment that read the same base (before it is written again) with
    elements of one size: id(instruction) -> group, and group -> (lowest, highest) offset.
    Their lanes' addresses differ by constants only, so one range check covers the group
    (group_check). Guarded ones too in the full-mask copy, where another access shares
    their group (classify.checked_group checks it for every lane: a stencil's halo loads
    beside its main load)."""
    fl.runs, fl.pending = find_runs(fl, instructions), {}
    full = isinstance(fl.mask, ll.Constant)
    written: dict = {}
    group_of, span = {}, {}
    for inst in instructions:
        found = _vector_access(fl, inst) if inst.guard is None or full else None
        if found is not None:
            operand, space, t, count = found
            base = id(operand.base)
            group = ((base, space), t.size, written.get(base, 0))
            group_of[id(inst)] = group
            low, high = span.get(group, (operand.offset, operand.offset))
            span[group] = (min(low, operand.offset),
                           max(high, operand.offset + (count - 1) * t.size))
        for reg in may_write(inst):
            written[id(reg)] = written.get(id(reg), 0) + 1
    return alone_guarded_out(instructions, group_of), span


def class_slots(fl: GangLowering, segments) -> None:
    """classify.py's slots for the bases of the lane-by-lane accesses that more than one of
    `segments` makes (with one access size) between the same two block barriers (in
    program order: a warp resuming after a barrier has emptied them), of registers written
    once (_written_once)."""
    bases: dict = {}
    region = 0
    for i, s in enumerate(segments):
        before = segments[i - 1] if i else None
        if before is not None and before.end > before.start \
                and is_barrier(before.block.instructions[before.end - 1]):
            region += 1
        for inst in s.block.instructions[s.start:s.end]:
            found = _vector_access(fl, inst)
            if found is None or not isinstance(found[0].base, ir.Register):
                continue
            operand, space, t, count = found
            key = ((id(operand.base), space), t.size * count)
            bases.setdefault(key, (operand.base, {}))[1].setdefault(region, set()).add(
                s.number)
    once = _written_once(fl.function)
    make_class_slots(fl, {key: (register, max(regions.values(), key=len))
                          for key, (register, regions) in bases.items() if register in once})


def _written_once(kernel: ir.Function) -> set:
    """Registers with one write, outside every loop: a base computed once (a stencil's row
    pointer), whose classification later segments can reuse; one rewritten in a loop (a
    grid-stride index) is classified anew each pass, and keeping each answer cost a
    reduction's loop 4%."""
    writes: dict = {}
    for block in kernel.blocks:
        for inst in block.instructions:
            for register in may_write(inst):
                writes.setdefault(register, []).append(block)
    looping = set()
    for block in kernel.blocks:
        seen, todo = set(), list(block.successors)
        while todo:
            b = todo.pop()
            if b is block:
                looping.add(id(block))
                break
            if id(b) not in seen:
                seen.add(id(b))
                todo.extend(b.successors)
    return {r for r, blocks in writes.items()
            if len(blocks) == 1 and id(blocks[0]) not in looping}


def place_of(fl: GangLowering, operand, space) -> Place:
    """The Place of a memory operand; the base's lanes are read once per segment while the
    base register is not written."""
    if not isinstance(operand, ir.Address):
        raise GangUnsupported("a memory operand that is not [address]")
    key = (id(operand.base), space)
    addrs = fl.places.get(key)
    if addrs is None:
        host, offsets = lane_addresses(fl, ir.Address(operand.base, 0), space)
        addrs = host if offsets is None else offsets
        fl.places[key] = addrs
    lanes = form_of(fl, operand.base) if isinstance(operand.base, ir.Register) else None
    if lanes is not None and addrs.type.element.width != operand.base.type.bits:
        lanes = None        # (a 32-bit global address, widened: the offsets need not hold)
    stride = strided.strided_form(lanes, addrs.type.element.width)
    if lanes is not None and lanes.scaled:
        lanes = None        # (classify.py knows constant offsets only)
    return Place(addrs, space == "shared", operand.offset, key, lanes, stride)


def _access(fl: GangLowering, place: Place, t: Type, value=None):
    """Load (value None) or store `value` of type t for the mask's lanes at `place`: lanes
    known to lie one stride apart by strided.py, else by how classify.py finds them."""
    if strided.applies(fl, place, t.size):
        return strided.strided_access(fl, place, t, value, _classified_access)
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
                             lambda pointer: _consecutive(fl, t, value, lambda _: pointer,
                                                          s0, s1))
    offset = ll.Constant(place.addrs.type.element, place.offset)
    vector_block, halves_block, uniform_block, lanes_block, done = (
        fl.llfn.append_basic_block(n) for n in (
            "access_vector", "access_halves", "access_uniform", "access_gather",
            "access_done"))
    skipped = _check_access_place(fl, place, t, load, kind, low, high, done)
    pointer = _pointer_maker(fl, place, offset)
    switch = ll.IRBuilder.switch(b, kind, lanes_block)
    switch.add_case(I32(CONSECUTIVE), vector_block)
    switch.add_case(I32(HALVES), halves_block)
    switch.add_case(I32(HALF_UNIFORM), uniform_block)
    incoming = []
    for block, part in ((vector_block, _consecutive), (halves_block, _consecutive_halves),
                        (uniform_block, _one_per_half)):
        b.position_at_end(block)
        loaded = part(fl, t, value, pointer, s0, s1)
        if loaded is not None:
            incoming.append((loaded, b.block))
        if not b.block.is_terminated:
            b.branch(done)
    b.position_at_end(lanes_block)
    loaded = _gather_or_scatter(fl, place, t, value, offset)
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
                             lambda pointer: _interleaved(fl, t, count, pointer, None, old))
    return [_checked_then(fl, place, t, 1, True, (kind, low, high), s0,
                          lambda pointer: _consecutive(fl, t, None, lambda _: pointer, s0, s1,
                                                       old[0]))]


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
    return access(_pointer_maker(fl, place, ll.Constant(place.addrs.type.element,
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
                             lambda pointer: _interleaved(fl, t, count, pointer, values))
    offset = ll.Constant(place.addrs.type.element, place.offset)
    whole, lanes_block, done = (fl.llfn.append_basic_block(n) for n in (
        "access_vectors", "access_elements", "access_vectors_done"))
    skipped = _check_access_place(fl, place, t, load, kind, low, high, done, count)
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "==", kind, I32(CONSECUTIVE)),
                         whole, lanes_block)
    b.position_at_end(whole)
    pointer = _pointer_maker(fl, place, offset)(s0)
    loaded = _interleaved(fl, t, count, pointer, values)
    whole = b.block
    b.branch(done)
    b.position_at_end(lanes_block)
    one_by_one = [_gather_or_scatter(fl, place.moved(i * t.size), t,
                                     None if load else values[i],
                                     ll.Constant(offset.type, place.offset + i * t.size))
                  for i in range(count)]
    lanes_block = b.block
    b.branch(done)
    b.position_at_end(done)
    if not load:
        return None
    vt = vec(value_type(t))
    out = []
    for i in range(count):
        phi = ll.IRBuilder.phi(b, vt)
        phi.add_incoming(loaded[i], whole)
        phi.add_incoming(one_by_one[i], lanes_block)
        phi.add_incoming(ll.Constant(vt, None), skipped)
        out.append(phi)
    return out


def _interleaved(fl: GangLowering, t: Type, count: int, pointer, values=None, old=None):
    """One masked access of W * count elements at `pointer`, lane l's element i at l * count
    + i: loaded, the count vectors of the lanes' elements (taken apart by shuffles; `old`:
    count vectors the lanes outside the mask keep, else zeros); stored, `values` (count
    vectors of the lanes) interleaved likewise."""
    b, element = fl.b, value_type(t)
    n = W * count
    wide = ll.VectorType(element, n)
    name = type_name(element)
    mask = ll.IRBuilder.shuffle_vector(b, fl.mask, ll.Constant(fl.mask.type, None), ll.Constant(
        ll.VectorType(I32, n), [i // count for i in range(n)]))
    if values is None:
        fn = declare(fl.llfn.module, f"llvm.masked.load.v{n}{name}.p0", wide,
                     [PTR, I32, mask.type, wide])
        through = ll.Constant(wide, None) if old is None else _interleave_lanes(fl, old)
        v = ll.IRBuilder.call(b, fn, [pointer, I32(t.size), mask, through])
        return [ll.IRBuilder.shuffle_vector(b, v, ll.Constant(wide, None), ll.Constant(
            ll.VectorType(I32, W), [lane * count + i for lane in range(W)]))
            for i in range(count)]
    fn = declare(fl.llfn.module, f"llvm.masked.store.v{n}{name}.p0", ll.VoidType(),
                 [wide, PTR, I32, mask.type])
    ll.IRBuilder.call(b, fn, [_interleave_lanes(fl, values), pointer, I32(t.size), mask])
    return None


def _interleave_lanes(fl: GangLowering, values: list):
    """2 or 4 vectors of the lanes as one, lane l's element i at l * count + i."""
    b, count = fl.b, len(values)
    values = [b.splat(v) for v in values]
    while len(values) > 2:      # pairs joined: [v0 v1], [v2 v3] (count is 2 or 4)
        values = [ll.IRBuilder.shuffle_vector(b, values[i], values[i + 1], ll.Constant(
            ll.VectorType(I32, 2 * W), list(range(2 * W)))) for i in range(0, len(values), 2)]
    # element i of lane l sits at i * W + l of the two halves side by side
    return ll.IRBuilder.shuffle_vector(b, values[0], values[1], ll.Constant(
        ll.VectorType(I32, W * count), [(i % count) * W + i // count for i in range(W * count)]))


def _check_access_place(fl: GangLowering, place: Place, t: Type, load: bool, kind, low,
                        high, done: ll.Block, count: int = 1) -> ll.Block:
    """Branch to `done` when no lane is active, else check the lanes' range [low, high) of
    `count` elements of type t each (with the group's check where there is one) and
    prefetch ahead; returns the block that skips."""
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
        if not place.shared:
            prefetch(fl, b.add(low, offset), size * W)
    else:       # the group's check failed: this access on its own
        if group_low is not None:       # the group's first global access
            prefetch(fl, group_low, 256)
        exact, ok = fl.llfn.append_basic_block("access_exact"), fl.llfn.append_basic_block(
            "access_checked")
        checks.expect(fl, ll.IRBuilder.cbranch(b, checked, ok, exact))
        b.position_at_end(exact)
        check_place(fl, place, size, not load, kind, b.add(low, offset),
                    b.add(high, offset))
        b.branch(ok)
        b.position_at_end(ok)
    return skipped


def _pointer_maker(fl: GangLowering, place: Place, offset):
    """A function from a lane's address (place's register) to its pointer."""
    b = fl.b
    if place.shared:
        window = fl.target.space_base(fl, "shared")
        wide = place.addrs.type.element.width != 32

        def pointer(at):
            at = b.add(at, offset)
            return ll.IRBuilder.gep(b, window, [at if wide else b.sext(at, I64)],
                                    source_etype=I8)
        return pointer

    def pointer(at):
        return ll.IRBuilder.inttoptr(b, b.add(at, offset), PTR)
    return pointer


def _consecutive(fl: GangLowering, t: Type, value, pointer, s0, s1, old=None):
    """Consecutive addresses: one masked vector access (a load's lanes outside the mask:
    `old`, else zeros)."""
    b, element = fl.b, value_type(t)
    vt, name = vec(element), type_name(element)
    if value is None:
        fn = declare(fl.llfn.module, f"llvm.masked.load.v{W}{name}.p0", vt,
                     [PTR, I32, vec(I1), vt])
        return ll.IRBuilder.call(b, fn, [pointer(s0), I32(t.size), fl.mask,
                                         ll.Constant(vt, None) if old is None else old])
    fn = declare(fl.llfn.module, f"llvm.masked.store.v{W}{name}.p0", ll.VoidType(),
                 [vt, PTR, I32, vec(I1)])
    ll.IRBuilder.call(b, fn, [value, pointer(s0), I32(t.size), fl.mask])
    return None


def _consecutive_halves(fl: GangLowering, t: Type, value, pointer, s0, s1):
    """Each half warp consecutive: two masked half-vector accesses."""
    b, element = fl.b, value_type(t)
    vt, ht, name = vec(element), ll.VectorType(element, HALF), type_name(element)
    masks = [_half_mask(fl, 0), _half_mask(fl, 1)]
    if value is None:
        fn = declare(fl.llfn.module, f"llvm.masked.load.v{HALF}{name}.p0", ht,
                     [PTR, I32, ll.VectorType(I1, HALF), ht])
        parts = [ll.IRBuilder.call(b, fn, [pointer(h), I32(t.size), m, ll.Constant(ht, None)])
                 for h, m in ((s0, masks[0]), (s1, masks[1]))]
        return ll.IRBuilder.shuffle_vector(
            b, parts[0], parts[1], ll.Constant(ll.VectorType(I32, W), list(range(W))))
    fn = declare(fl.llfn.module, f"llvm.masked.store.v{HALF}{name}.p0", ll.VoidType(),
                 [ht, PTR, I32, ll.VectorType(I1, HALF)])
    for half, (h, m) in enumerate(((s0, masks[0]), (s1, masks[1]))):
        part = ll.IRBuilder.shuffle_vector(b, value, ll.Constant(vt, None), ll.Constant(
            ll.VectorType(I32, HALF), list(range(HALF * half, HALF * half + HALF))))
        ll.IRBuilder.call(b, fn, [part, pointer(h), I32(t.size), m])
    return None


def _one_per_half(fl: GangLowering, t: Type, value, pointer, s0, s1):
    """Each half warp accesses one address (a row's element in a 16-wide block): two
    scalar loads, or per half with an active lane one scalar store of its highest active
    lane's value (as a scatter of the lanes in order leaves it: a stencil's halo column)."""
    b = fl.b
    if value is not None:
        _store_per_half(fl, value, pointer, (s0, s1))
        return None
    x0, x1 = (ll.IRBuilder.load(b, pointer(a), typ=value_type(t), align=t.size)
              for a in (s0, s1))
    return ll.IRBuilder.select(b, LOW_HALF, b.splat(x0), b.splat(x1))


def _store_per_half(fl: GangLowering, value, pointer, starts) -> None:
    b = fl.b
    bits = fl.bits(fl.mask)
    for half, start in enumerate(starts):
        lanes = b.and_(bits, I32(0xFFFF << (HALF * half)))
        store, after = (fl.llfn.append_basic_block(n) for n in ("store_half", "stored_half"))
        ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "!=", lanes, I32(0)), store,
                             after)
        b.position_at_end(store)
        last = b.sub(I32(W - 1), fl.ctlz(lanes))
        ll.IRBuilder.store(b, ll.IRBuilder.extract_element(b, value, last), pointer(start))
        b.branch(after)
        b.position_at_end(after)


def _gather_or_scatter(fl: GangLowering, place: Place, t: Type, value, offset):
    """Anything else: lane by lane in one gather or scatter."""
    b, element = fl.b, value_type(t)
    vt, name = vec(element), type_name(element)
    lanes = b.add(place.addrs, b.splat(offset)) if place.offset else place.addrs
    if place.shared:
        window = fl.target.space_base(fl, "shared")
        # (checked offsets are below 2^31: sign-extended, x86 gathers them as dwords)
        pointers = ll.IRBuilder.gep(b, window, [
            lanes if place.addrs.type.element.width == 64 else b.sext(lanes, vec(I64))],
            source_etype=I8)
        pointers.type = vec(PTR)
    else:
        pointers = b.inttoptr(lanes, vec(PTR))
    if value is None:
        fn = declare(fl.llfn.module, f"llvm.masked.gather.v{W}{name}.v{W}p0", vt,
                     [vec(PTR), I32, vec(I1), vt])
        return ll.IRBuilder.call(b, fn, [pointers, I32(t.size), fl.mask,
                                         ll.Constant(vt, None)])
    fn = declare(fl.llfn.module, f"llvm.masked.scatter.v{W}{name}.v{W}p0", ll.VoidType(),
                 [vt, vec(PTR), I32, vec(I1)])
    ll.IRBuilder.call(b, fn, [value, pointers, I32(t.size), fl.mask])
    return None


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
    prefetch(fl, b.add(low, offset), t.size * len(members) * W)
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
    elif _vector_access(fl, inst) is not None:
        old = _kept_lanes(fl, inst.operands[0], t, count)
        values = lane_vectors(fl, place_of(fl, operand, space), t, count, old=old)
    elif space == "param":      # a kernel parameter: the same for every lane
        pointer = FunctionLowering.pointer(fl, operand, "param", t.size * count)
        values = [ll.IRBuilder.load(
            fl.b, fl.b.gep(pointer, [I64(i * t.size)], source_etype=I8), typ=value_type(t),
            align=t.size) for i in range(count)]
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


def lower_atom(fl: GangLowering, inst: ir.Instruction) -> None:
    """atom/red{.space}.op.type: lane after lane (in lane order), each a real atomic
    instruction on its own address (shared memory: a plain read-modify-write), checked
    like any access."""
    b = fl.b
    t = instruction_type(inst)
    op = inst.spec.get("op")
    space = state_space(inst)
    operands = list(inst.operands)
    dest = None if inst.opcode == "red" else operands.pop(0)
    if not isinstance(dest, ir.Register) or dest not in fl.read_somewhere:
        dest = None         # the old values are never read: an atom is a red
    if t.kind == "float" and op not in ("add", "exch", "min", "max"):
        raise GangUnsupported(f"{inst.spec.text}: float atomics other than add/exch/min/max")
    if t.kind == "float" and op in ("min", "max"):
        raise GangUnsupported(f"{inst.spec.text}: float atomic min/max")
    host, offsets = lane_addresses(fl, operands[0], space)
    # (uniform operands stay scalars: the lanes' loop reads them from no memory)
    operands = [fl.read(operands[1], t)] + ([fl.read(operands[2], t)] if op == "cas" else [])
    done = fl.llfn.append_basic_block("atom_done")
    start = fl.llfn.append_basic_block("atom_start")
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "!=", fl.bits(fl.mask), I32(0)),
                         start, done)
    b.position_at_end(start)
    if host is None:        # 32-bit shared offsets: checked and kept in 32 bits
        check_shared32(fl, offsets, t.size, True)
        window = ll.IRBuilder.ptrtoint(b, fl.target.space_base(fl, "shared"), I64)
        lanes = _AtomLanes(fl, offsets, window, operands, value_type(t))
    else:
        check_access(fl, host, offsets, t.size, True)
        lanes = _AtomLanes(fl, host, None, operands, value_type(t))
    results = fl.shuffle_array(value_type(t)) if dest is not None else None
    def each(i) -> None:
        old = _lane_atomic(b, op, t, space, lanes.pointer(i), *lanes.operands(i))
        if results is not None:
            b.store(old, b.gep(results, [b.zext(i, I64)], source_etype=value_type(t)))

    lanes.visit(each)
    b.branch(done)
    b.position_at_end(done)
    if dest is not None:
        fl.write(dest, b.load(results, typ=vec(value_type(t))), t)


class _AtomLanes:
    """lower_atom's walk over the mask's lanes in lane order: the lanes' addresses (and
    operands that differ per lane) go to stack arrays once, and each lane reads its own back.
    Over a constant full mask (a segment's full-mask copy) the walk is 32 straight-line
    read-modify-writes, else a loop over the mask's bits."""

    def __init__(self, fl: GangLowering, addresses, window, operands, element):
        self.fl, self.window, self.element = fl, window, element
        b = fl.b
        self.arrays = []
        for lanes in (addresses, *operands):
            if not is_vec(lanes):
                self.arrays.append(lanes)
                continue
            typ = lanes.type.element
            array = fl.entry_alloca(ll.ArrayType(typ, W), "atom_lanes", 64)
            b.store(lanes, array, align=64)
            # (read back through a pointer LLVM cannot follow: it would otherwise take each
            # lane out of the vector register, several instructions a lane)
            self.arrays.append((_opaque(b, array), typ))

    def visit(self, each) -> None:
        """each(lane) for every lane of the mask, lowest first (an i32 constant over a
        constant full mask, else lane_loop's index)."""
        fl = self.fl
        if _all_lanes(fl.mask):
            for lane in range(W):
                each(I32(lane))
            return
        lane_loop(fl, fl.bits(fl.mask), lambda i, _next: each(i), "atom")

    def _lane(self, i, array):
        if not isinstance(array, tuple):
            return array
        pointer, typ = array
        b = self.fl.b
        return b.load(b.gep(pointer, [b.zext(i, I64)], source_etype=typ), typ=typ)

    def pointer(self, i):
        b = self.fl.b
        address = self._lane(i, self.arrays[0])
        if self.window is not None:
            address = b.add(self.window, b.zext(address, I64))
        return ll.IRBuilder.inttoptr(b, address, PTR)

    def operands(self, i):
        x = self._lane(i, self.arrays[1])
        y = self._lane(i, self.arrays[2]) if len(self.arrays) > 2 else None
        return x, y


def _all_lanes(mask) -> bool:
    """Whether `mask` is a constant with every lane set."""
    return isinstance(mask, ll.Constant) and isinstance(mask.constant, list) \
        and all(getattr(lane, "constant", 0) == 1 for lane in mask.constant)


def _lane_atomic(b: ll.IRBuilder, op: str, t: Type, space: str, pointer, x, y):
    """One lane's atomic `op` at `pointer`; the old value."""
    element = value_type(t)
    if space == "shared":
        # A block's shared memory is only ever touched by the host thread running the block
        # (its warps take turns), so a plain read-modify-write is atomic here.
        old = ll.IRBuilder.load(b, pointer, typ=element, align=t.size)
        ll.IRBuilder.store(b, _combine(b, op, t, old, x, y), pointer, align=t.size)
        return old
    if op == "cas":
        pair = ll.IRBuilder.cmpxchg(b, pointer, x, y, "monotonic", "monotonic")
        return ll.IRBuilder.extract_value(b, pair, 0)
    rmw = {"add": "fadd" if t.kind == "float" else "add", "exch": "xchg", "and": "and",
           "or": "or", "xor": "xor", "min": "min" if t.kind == "signed" else "umin",
           "max": "max" if t.kind == "signed" else "umax"}[op]
    return ll.IRBuilder.atomic_rmw(b, rmw, pointer, x, "monotonic")


def _opaque(b: ll.IRBuilder, value):
    """`value`, through an empty asm statement that LLVM cannot see through. Over a
    constant mask's lanes LLVM unrolled lower_atom's loop into 32 read-modify-writes, each
    lane's address taken out of its vector by constant index, which took 3.5x as long as
    the loop over the lanes' addresses in memory (histogram_shared: 67 -> 19 ms on one
    worker here)."""
    asm = ll.InlineAsm(ll.FunctionType(value.type, [value.type]), "", "=r,0")
    return ll.IRBuilder.call(b, asm, [value])


def _combine(b: ll.IRBuilder, op: str, t: Type, old, x, y):
    """The value an atomic `op` leaves where `old` was (cas: y where old equals x)."""
    if op == "exch":
        return x
    if op == "cas":
        return ll.IRBuilder.select(b, ll.IRBuilder.icmp_unsigned(b, "==", old, x), y, old)
    if op == "add":
        return ll.IRBuilder.fadd(b, old, x) if t.kind == "float" else ll.IRBuilder.add(b, old, x)
    if op in ("and", "or", "xor"):
        return getattr(ll.IRBuilder, {"and": "and_", "or": "or_", "xor": "xor"}[op])(b, old, x)
    compare = ll.IRBuilder.icmp_signed if t.kind == "signed" else ll.IRBuilder.icmp_unsigned
    return ll.IRBuilder.select(b, compare(b, "<" if op == "min" else ">", x, old), x, old)
