"""Warp gangs' global accesses through widened addresses whose lanes lie consecutive: CUDA's
`x[i]` with an int index (`mul.wide.s32 %rd, %r, 4`, then an add to the base) in a
segment that all 32 lanes run. The lane-forms pass knows such lanes consecutive only while
no lane's 32-bit index wraps (LaneForm.widened); instead of the warp's flag for that
(classify.py's _if_exact: a select of the kind, so that each access carried a gather of its
lanes, their 64-bit address vectors and a test of the flag in the hot code), the range is
taken from the true addresses of the mask's first and last lanes: the lanes' offsets grow
from lane to lane, so where an index wraps, the last lane's does, and its address then lies
below the first lane's, which no range check passes. Where the check fails (a wrap, a fault,
lanes over two allocations), the lanes are checked one by one (a fault names the first bad
lane, as before) and the access is a gather or scatter of their true addresses, off the hot
path.

In a 16-wide block (passes/lane_forms.py's forms per half warp: `y * width + x`) each half
warp's lanes are consecutive, the halves a row apart: the range is then taken from lanes 0,
15, 16 and 31 as scalars, a half whose last lane's address is not its first's plus 15
elements has wrapped (wraps.py: the address holds one widening, monotone across each
half), and the fast path is two half-vector accesses. No flag of the warp either way.

An access the block's range test covers (passes/block_checks.py) goes to its fast path
where the block passed; under a guard it tests the block's verdict before the mask (a
masked access of no lane touches nothing), the mask and its own check only where the
verdict failed (_unproven).
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import I32, PTR
from ptxport.codegen.targets.cpu.gang import checks
from ptxport.codegen.targets.cpu.gang.access_kinds import (
    consecutive,
    consecutive_halves,
    interleaved,
    joined,
    lane_by_lane,
)
from ptxport.codegen.targets.cpu.gang.checks import (
    SCATTERED,
    Place,
    check_access,
    check_place,
    group_check,
    inside_one_allocation,
    offset_addrs,
)
from ptxport.codegen.targets.cpu.gang.lanes import W
from ptxport.codegen.targets.cpu.gang.scalar_lanes import lane, recomputed
from ptxport.codegen.targets.cpu.gang.state import GangLowering
from ptxport.codegen.targets.cpu.gang.streams import prefetch_site
from ptxport.codegen.targets.cpu.gang.wraps import wrap_jump
from ptxport.ir.types import Type
from ptxport.passes.lane_forms import HALF


def applies(fl: GangLowering, place: Place, size: int, count: int = 1) -> bool:
    """Whether the access of `size` bytes a lane (`count` elements) at `place` is one of
    this module's: global,
    its base's lanes consecutive by a widened form (in the warp, or in each half warp), all
    32 lanes running the segment (every lane holds its address; the guard aside), and the
    first and last lanes' addresses telling a wrap (wraps.py)."""
    form = place.lanes
    if place.shared or form is None or not form.widened or form.scaled \
            or not isinstance(fl.unguarded_mask, ll.Constant):
        return False
    wrap = (1 << place.addrs.type.element.width) - 1
    offsets = [(c - form.offsets[0]) & wrap for c in form.offsets]
    if form.halves:     # (any direction: the halves' ends are compared exactly)
        return count == 1 and offsets == [size * (i % HALF) for i in range(W)] \
            and wrap_jump(fl, place.key, True) is not None
    # (the range check alone finds a wrap, where it moves the last lane down)
    return offsets == [size * i for i in range(W)] and wrap_jump(fl, place.key, False) == -1


def _range(fl: GangLowering, place: Place, size: int):
    """(lane 0's address as the first active lane's implies, low, high): the range from the
    first active lane's true address to the end of the last's (place.offset included)."""
    b = fl.b
    et = place.addrs.type.element
    if isinstance(fl.mask, ll.Constant):
        first, last, before = I32(0), I32(W - 1), ll.Constant(et, 0)
    else:
        bits = fl.bits(fl.mask)
        # (an empty mask's lanes 32 and -1 read as 0 and 31: its range is never used)
        first = b.and_(fl.cttz(bits), I32(W - 1))
        last = b.and_(b.sub(I32(W - 1), fl.ctlz(bits)), I32(W - 1))
        before = b.mul(b.zext(first, et), ll.Constant(et, size))
    offset = ll.Constant(et, place.offset)
    if isinstance(fl.mask, ll.Constant):    # (scalars: the address vector stays cold)
        first = lane(b, place.addrs, 0, fl.written)
        last = lane(b, place.addrs, W - 1, fl.written)
    else:
        first = ll.IRBuilder.extract_element(b, place.addrs, first)
        last = ll.IRBuilder.extract_element(b, place.addrs, last)
    low = b.add(first, offset)
    high = b.add(last, ll.Constant(et, place.offset + size))
    return b.sub(low, before), low, high


def _half_range(fl: GangLowering, place: Place, size: int, lazy: bool = False):
    """((each half's first address), low, high, exact) of a per-half access, from lanes 0,
    15, 16 and 31 as scalars under any mask (all 32 lanes hold their addresses): [low,
    high) holds both halves' lanes, `exact` (i1) that neither half wrapped (`lazy`: low,
    high and exact as functions that make them where called: only a block test's failed
    path needs them)."""
    b = fl.b
    et = place.addrs.type.element
    ends = [lane(b, place.addrs, k, fl.written) for k in (0, HALF - 1, HALF, W - 1)]
    span = ll.Constant(et, size * (HALF - 1))

    def exact():
        return b.and_(_exact(b, ends[0], ends[1], span), _exact(b, ends[2], ends[3], span))

    offset = ll.Constant(et, place.offset)
    made = None if lazy else exact()     # (made first, as ever: the same code)
    s0, s1 = b.add(ends[0], offset), b.add(ends[2], offset)

    def bounds():
        less = ll.IRBuilder.icmp_unsigned(b, "<", s0, s1)
        return (ll.IRBuilder.select(b, less, s0, s1),
                b.add(ll.IRBuilder.select(b, less, s1, s0), ll.Constant(et, size * HALF)))

    if lazy:        # (low and high from one compare where the failed path makes them)
        memo = []

        def low():
            memo.append(bounds())
            return memo[-1][0]

        def high():
            return memo[-1][1] if memo else bounds()[1]

        return (s0, s1), low, high, exact
    return (s0, s1), *bounds(), made


def _exact(b: ll.IRBuilder, first, last, span):
    """i1: last - first == span (64-bit scalars from scalar_lanes.lane). Where both are the
    same sum but for one widening (sext or zext of i32 x and y) shifted left by s bits
    (span = q << s, 0 < q < 2**31), that is y - x == q in 32 bits with y above x (signed
    or unsigned as the widening): the difference of the widened values lies strictly
    between 0 and 2**32 and is q modulo 2**32. LLVM folds the first test (y is x + q as
    built) and keeps one compare a half, where the 64-bit form took four instructions."""
    narrow = _narrowed(first, last, 0)
    if narrow is not None:
        x, y, shift, signed = narrow
        q = span.constant >> shift
        if span.constant == q << shift and 0 < q < 2**31:
            above = ll.IRBuilder.icmp_signed if signed else ll.IRBuilder.icmp_unsigned
            return b.and_(ll.IRBuilder.icmp_unsigned(b, "==", b.sub(y, x), ll.Constant(x.type, q)),
                          above(b, ">", y, x))
    return ll.IRBuilder.icmp_unsigned(b, "==", b.sub(last, first), span)


def _same(u, v) -> bool:
    """Whether two of lane()'s scalars are one value: the same object or equal constants."""
    if u is v:
        return True
    return isinstance(u, ll.Constant) and isinstance(v, ll.Constant) and u.type == v.type \
        and u.constant == v.constant


def _narrowed(u, v, shift: int):
    """(x, y, total left shift, signed) where 64-bit u and v are the same sum of terms but
    for one term (sext or zext of i32 x and y) under shifts by constants and multiplies by
    powers of two (`shift` so far: the product stays below 2**63 in magnitude); None
    otherwise."""
    if not (isinstance(u, ll.Instruction) and isinstance(v, ll.Instruction)) \
            or u.opname != v.opname or shift > 31:
        return None
    op, a, c = u.opname, u.operands, v.operands
    if op in ("sext", "zext"):
        if a[0].type != ll.IntType(32) or c[0].type != a[0].type \
                or u.type != ll.IntType(64) or v.type != u.type:
            return None
        return a[0], c[0], shift, op == "sext"
    if op == "add":
        if _same(a[0], c[0]):
            return _narrowed(a[1], c[1], shift)
        if _same(a[1], c[1]):
            return _narrowed(a[0], c[0], shift)
        return None
    if op == "sub" and _same(a[1], c[1]):
        return _narrowed(a[0], c[0], shift)
    if op == "shl" and _same(a[1], c[1]):
        k = _constant(a[1])
        return None if k is None or not 0 <= k < 32 else _narrowed(a[0], c[0], shift + k)
    if op == "mul":
        for i in (0, 1):
            k = _constant(a[1 - i]) if _same(a[1 - i], c[1 - i]) else None
            if k is not None and 0 < k < 2**32 and k & (k - 1) == 0:
                return _narrowed(a[i], c[i], shift + k.bit_length() - 1)
    return None


def _constant(value):
    """The int a constant is, or an extension of a constant (the builder folds none), else
    None."""
    if isinstance(value, ll.Instruction) and value.opname in ("sext", "zext"):
        inner = _constant(value.operands[0])
        if inner is None:
            return None
        bits = value.operands[0].type.width
        inner &= (1 << bits) - 1
        return inner - (1 << bits) if value.opname == "sext" and inner >> (bits - 1) else inner
    if isinstance(value, ll.Constant) and isinstance(value.constant, int):
        return value.constant
    return None


def access(fl: GangLowering, place: Place, t: Type, count: int, values=None, old=None):
    """Load (values None: `count` vectors of the lanes' elements; `old`: the values the
    lanes outside the mask keep, else zeros) or store `values`: one masked access of the
    warp's elements (two of each half's, per half) where the lanes' range passes its check
    (the group's, where the access shares one), else each lane checked and a gather or
    scatter per element."""
    b = fl.b
    size = t.size * count
    load = values is None
    halves = place.lanes.halves
    exact = None
    proven = fl.loop_check_state is None and id(fl.inst) in fl.block_checked \
        and _near(place.lanes)
    if halves:
        starts, low, high, exact = _half_range(fl, place, size, lazy=proven)
        lows = list(starts)
    else:
        start, low, high = _range(fl, place, size)
        lows = [low]
    ahead = _ahead(fl, place, size, lows)       # (before _check makes the group's check)
    early = isinstance(fl.mask, ll.Constant)
    first = proven and not early    # (the verdict first: no test of the mask where it held)
    if (early or first) and ahead is not None:  # (LLVM then branches from a hit to `fast`)
        prefetch_site(fl, place, *ahead, size, not load)
    fast, slow, done = (fl.llfn.append_basic_block(n) for n in (
        "widened_fast", "widened_lanes", "widened_done"))
    skipped = None
    if first:
        ok, skipped, memo = _unproven(fl, place, t, count, (low, high, exact), fast, done)
    else:
        # (before the branch on the mask: later accesses of the group reuse the check)
        ok = _check(fl, place, t, count, low, high, exact)
        if not early:
            skipped = _active(fl, done)
        if ahead is not None and not early:
            prefetch_site(fl, place, *ahead, size, not load)
        if proven:      # (straight to the fast path where the block passed: ok not tested)
            checking = fl.llfn.append_basic_block("widened_checking")
            checks.expect(fl, ll.IRBuilder.cbranch(b, checks.loop_checked(fl), fast, checking))
            b.position_at_end(checking)
    checks.expect(fl, ll.IRBuilder.cbranch(b, ok, fast, slow))
    b.position_at_end(fast)
    quick = _fast(fl, t, count, starts if halves else start, values, old)
    fast = b.block
    b.branch(done)
    b.position_at_end(slow)
    each = _slow(fl, place, t, count, values, old, (low, high))
    slow = b.block
    b.branch(done)
    b.position_at_end(done)
    if first and memo is not None:      # (the group's answer: true where the fast path ran)
        answer = ll.IRBuilder.phi(b, ll.IntType(1))
        for value, block in ((1, fast), (0, slow)):
            answer.add_incoming(ll.Constant(ll.IntType(1), value), block)
        answer.add_incoming(ok, skipped)
        fl.group_ok[memo] = answer
    if not load:
        return None
    paths = [(quick, fast), (each, slow)]
    return joined(fl, t, paths if skipped is None else [*paths, (old, skipped)])


def _active(fl: GangLowering, done):
    """Branch to `done` where no lane of the mask is active, else on (the builder then in
    `widened_active`); the block that branches."""
    b = fl.b
    skipped, active = b.block, fl.llfn.append_basic_block("widened_active")
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "!=", fl.bits(fl.mask), I32(0)),
                         active, done)
    b.position_at_end(active)
    return skipped


def _unproven(fl: GangLowering, place: Place, t: Type, count: int, span, fast, done):
    """For an access the block's test covers, under a mask not known when compiling: to
    `fast` where the block passed (its mask not tested: a masked access of no lane does
    nothing), else the access's own check (or its group's), then the mask's test, as
    _check and access do otherwise. (ok, the block that branches to `done` where no lane
    is active, the group's memo key where this access makes the group's check, else
    None): the stencil's in[] loads tested the mask, then the verdict (two branches an
    access, an interior warp's three loads)."""
    b = fl.b
    low, high, exact = span
    unproven = fl.llfn.append_basic_block("widened_unproven")
    checks.expect(fl, ll.IRBuilder.cbranch(b, checks.loop_checked(fl), fast, unproven))
    b.position_at_end(unproven)
    memo = _group_memo(fl, exact)
    if memo is not None and memo in fl.group_ok:
        return fl.group_ok[memo], _active(fl, done), None
    ok = _own_check(fl, place, t, count, low, high, exact)
    return ok, _active(fl, done), memo


def _fast(fl: GangLowering, t: Type, count: int, start, values, old):
    """The fast path's access from lane 0's address (`start`), or per half from each
    half's first address (a pair): the loaded vectors, or None for a store."""
    b = fl.b
    if isinstance(start, tuple):
        # (a load's lanes outside the mask keep `old` through the masked loads' pass-through)
        loaded = consecutive_halves(fl, t, None if values is None else values[0],
                                    lambda h: ll.IRBuilder.inttoptr(b, h, PTR), *start,
                                    old=None if old is None else old[0])
        return None if loaded is None else [loaded]
    pointer = ll.IRBuilder.inttoptr(b, start, PTR)
    if count > 1:
        return interleaved(fl, t, count, pointer, values, old)
    if values is None:
        return [consecutive(fl, t, None, lambda _: pointer, None, None,
                            None if old is None else old[0])]
    consecutive(fl, t, values[0], lambda _: pointer, None, None)
    return None


def _slow(fl: GangLowering, place: Place, t: Type, count: int, values, old, span):
    """The slow path: each lane's address made again here from the values the hot path
    took its scalars from (scalar_lanes.recomputed), the lanes checked (a fault names the
    first bad one) and a gather or scatter. Per half the hot path's range may be any
    two numbers where a half wrapped: the check then takes the lanes' own, and the
    32-bit indices are made here too, from frozen scalars (else LLVM computed them once
    on the hot path for all the cold paths that use them: the stencil's in[] loads, 6
    instructions an interior warp); 16 deep, so that a halo row's `(y - 1) * w + x`
    reaches its scalars (a 32-bit vector left frozen made LLVM freeze the hot `y` too,
    whose multiply then took all 32 lanes)."""
    b = fl.b
    size = t.size * count
    if isinstance(fl.mask, ll.Constant) or place.lanes.halves:
        widths = (32, 64) if place.lanes.halves else (64,)
        place = Place(recomputed(b, place.addrs, fl.written, widths=widths, depth=16),
                      place.shared, place.offset, place.key, place.lanes, place.stride)
    if place.lanes.halves:
        check_access(fl, offset_addrs(fl, place.addrs, place.offset), None, size,
                     values is not None)
    if not place.lanes.halves:
        check_place(fl, place, size, values is not None, I32(SCATTERED), *span)
    each = lane_by_lane(fl, place, t, count, values)
    if values is None and old is not None:
        each = [b.select(fl.mask, v, o) for v, o in zip(each, old, strict=True)]
    return each


def _check(fl: GangLowering, place: Place, t: Type, count: int, low, high, exact):
    """i1: whether [low, high) lies in one allocation, by the access's group check, made
    once for the group, or its own, and, per half, `exact`. Per half the range is all 32
    lanes' under any guard, so a guarded access (a stencil's halo loads) shares its
    group's check for the mask without the guard. Where no other access relies on the
    answer (no group, or a group of one: a stencil's out[] store), `exact` is a branch of
    its own before the range check (inside_one_allocation's `first`): LLVM then branches
    on its two compares, where `and`ing it with the check's phi kept it in a register
    across the check and tested it again (3 instructions an access a warp)."""
    if fl.loop_check_state is None and id(fl.inst) in fl.block_checked \
            and _near(place.lanes):
        return _proven(fl, place, t, count, low, high, exact)
    return _own_check(fl, place, t, count, low, high, exact)


def _proven(fl: GangLowering, place: Place, t: Type, count: int, low, high, exact):
    """_check for an access passes/block_checks.py's test covers: true where the block
    passed it (nothing more tested: no range, no no-wrap test), else _own_check; the
    answer is the group's (a phi after both), which the group's later accesses reuse."""
    memo = _group_memo(fl, exact)
    if memo is not None and memo in fl.group_ok:
        return fl.group_ok[memo]
    ok = checks.proven_or(fl, checks.loop_checked(fl), lambda: _own_check(
        fl, place, t, count, low, high, exact))
    if memo is not None:
        fl.group_ok[memo] = ok
    return ok


def _group_memo(fl: GangLowering, exact):
    """The key under which a covered access's group keeps its answer (fl.group_ok): the
    group and the mask it was made under (per half: the mask without the guard); None for
    an access of no group."""
    group = _group(fl, exact is not None)
    return None if group is None else (
        group, id(fl.unguarded_mask if exact is not None else fl.mask))


def _own_check(fl: GangLowering, place: Place, t: Type, count: int, low, high, exact):
    """_check by the access's own range (or its group's) and no-wrap test."""
    b = fl.b
    low, high, exact = (x() if callable(x) else x for x in (low, high, exact))
    size = t.size * count
    group = _group(fl, exact is not None)
    if group is None:
        idle = None if isinstance(fl.mask, ll.Constant) else ll.IRBuilder.icmp_unsigned(
            b, "==", fl.bits(fl.mask), I32(0))
        return inside_one_allocation(fl, low, high, skip=idle, first=exact)
    et = low.type
    here = fl.mask
    if exact is not None:
        fl.mask = fl.unguarded_mask
    try:
        memo = (group, id(fl.mask))
        made = memo in fl.group_ok
        # (group_check adds the group's offsets to the lanes' range without place.offset;
        # the group's other accesses rely on `exact` in group_ok)
        alone = sum(g == group for g in fl.group_of.values()) == 1
        ok, _ = group_check(
            fl, place, t.size, b.sub(low, ll.Constant(et, place.offset)),
            b.sub(high, ll.Constant(et, place.offset + size - t.size)), known=True,
            condition=exact if alone else None)
        if exact is not None and not made and not alone:
            ok = fl.group_ok[memo] = b.and_(ok, exact)
    finally:
        fl.mask = here
    return ok if exact is None or alone and not made else b.and_(ok, exact)


def _near(form) -> bool:
    """Whether the lanes' offsets (signed, 64 bits) all lie within 2^30: then, where
    passes/block_checks.py's test held (every widened index exact, their spread over the
    block under 2^30), the lanes lie as the form says: no own no-wrap test is needed."""
    return all(-(1 << 30) < (o - (1 << 64) if o >> 63 else o) < 1 << 30
               for o in form.offsets)


def _group(fl: GangLowering, halves: bool):
    """The current access's group (places.access_groups), or None: an access under a
    guard checks itself, unless per half (_check)."""
    return fl.group_of.get(id(fl.inst)) if fl.guard is None or halves else None


def _spans(place: Place, size: int, lows: list):
    """The prefetch of an access in no group: each half's lines, or the warp's."""
    return lows, size * (HALF if place.lanes.halves else W)


def _group_spans(fl: GangLowering, place: Place, size: int, lows: list, group):
    """The prefetch of a group's first access: from the group's lowest offset, each
    half's lines to its highest's 16 lanes, or the warp's first 256 bytes."""
    first, last = fl.group_span[group]
    if not place.lanes.halves:
        return [fl.b.add(lows[0], ll.Constant(lows[0].type, first - place.offset))], 256
    at = ll.Constant(lows[0].type, first - place.offset)
    return [fl.b.add(s, at) for s in lows], last - first + size * HALF


def _ahead(fl: GangLowering, place: Place, size: int, lows: list):
    """The arguments of the access's prefetch, found before _check: None where its group's
    check was made before (its first access prefetched for the group), from the group's
    lowest offset where this access makes it, else this access's own lines."""
    halves = place.lanes.halves
    group = _group(fl, halves)
    if group is None:
        return _spans(place, size, lows)
    if (group, id(fl.unguarded_mask if halves else fl.mask)) in fl.group_ok:
        return None
    return _group_spans(fl, place, size, lows, group)
