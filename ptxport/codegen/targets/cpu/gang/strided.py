"""Warp gangs' strided accesses: where all 32 lanes run the segment and a base register's
lanes lie one stride apart in lane order (lane i at a0 + i * S), memory.py's gathers and
scatters become span accesses. The lane forms (passes/lane_forms.py) say so when compiling:
a plain form c[i] = i * c[1] gives S = c[1] (a pair per thread's `2 * tid`), a scaled form
u + s * c[i] gives S = s * c[1], alike in the warp and read off lanes 0 and 1 at run time (a
tree's `temp[offset * (2 * tid + 1) - 1]`, whose offset doubles per level).

Where |S| is one, two or four elements, the lanes touch every k-th element of a span of
k * W elements: one masked access of the span, the mask on the lanes' own elements only (the
elements between them are neither read nor written: another thread's, maybe), taken apart or
put together by one shuffle (on the GPU host's Xeon, 4-element spans beat lane by lane by
10% on scan_blelloch). The span starts at a multiple of k elements, so that consecutive
warps' spans do not overlap; global ones prefetch ahead as memory.py's accesses do. Other
strides are 32 scalar accesses under the full mask (else a gather or scatter), without
classification. The span is checked in scalars (lane 0's and lane 31's addresses, computed
in 64 bits so that lanes whose 32-bit sums wrap fail it); where it fails, the access takes
memory.py's general path, whose per-lane checks fault exactly as before.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import I1, I8, I32, I64, PTR, value_type
from ptxport.codegen.targets.cpu.gang.access_kinds import masked_lanes
from ptxport.codegen.targets.cpu.gang.checks import (
    Place,
    inside_one_allocation,
    prefetch,
    type_name,
)
from ptxport.codegen.targets.cpu.gang.lane_loop import lane_loop
from ptxport.codegen.targets.cpu.gang.lanes import W, declare, vec
from ptxport.codegen.targets.cpu.gang.scalar_lanes import lane as scalar_lane
from ptxport.codegen.targets.cpu.gang.scalar_lanes import (
    lane_step,
    recomputed,
    scaled_extension,
)
from ptxport.codegen.targets.cpu.gang.state import GangLowering
from ptxport.ir.types import Type
from ptxport.passes.lane_forms import WINDOW, LaneForm

__all__ = ["SPANS", "strided_form", "applies", "span_key", "strided_access"]

# The element strides (|S| / size) accessed as one span; others are gathers and scatters.
SPANS = (1, 2, 4)


def strided_form(form: LaneForm | None, bits: int) -> LaneForm | None:
    """`form` where its lanes lie one (non-zero) stride apart in lane order, else None."""
    if form is None or form.halves:
        return None
    wrap = (1 << bits) - 1
    step = form.offsets[1]
    if step == 0 or any(c != (i * step) & wrap for i, c in enumerate(form.offsets)):
        return None
    return form


def applies(fl: GangLowering, place: Place, size: int) -> bool:
    """Whether the access of `size` bytes at `place` is lowered here: its lanes one stride
    apart, and all 32 lanes running the segment (so that every lane holds its address, the
    guard aside); not consecutive lanes known when compiling, which classify.py knows
    (with one range check for a group of accesses)."""
    form = place.stride
    return form is not None and isinstance(fl.unguarded_mask, ll.Constant) and (
        form.scaled or form.offsets[1] != size)


def _signed(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def _stride(fl: GangLowering, place: Place):
    """(S: the lanes' stride in bytes as a value of the addresses' type, its constant when
    known when compiling, whether |S| is below 2^55 by construction)."""
    et = place.addrs.type.element
    form = place.stride
    if not form.scaled:
        step = _signed(form.offsets[1], et.width)
        return ll.Constant(et, step), step, False
    if _windowed(place):
        found = scaled_extension(place.addrs, fl.written)
        if found is not None and abs(found[1]) < 1 << 24:   # (K * sext(v[1] - v[0]))
            b = fl.b
            v, k = found
            return b.mul(b.sext(lane_step(b, v, fl.written), I64), I64(k)), None, True
    lane0, lane1 = (scalar_lane(fl.b, place.addrs, i, fl.written) for i in (0, 1))
    return fl.b.sub(lane1, lane0), None, False


def _active_lanes(fl: GangLowering):
    """(lowest, highest) lane of the mask as i64 (0 and 31 under the full mask; lowest 32
    and highest -1 where the mask is empty)."""
    if isinstance(fl.mask, ll.Constant):
        return I64(0), I64(W - 1)
    b = fl.b
    bits = fl.bits(fl.mask)
    return b.zext(fl.cttz(bits), I64), b.sext(b.sub(I32(W - 1), fl.ctlz(bits)), I64)


def _span(fl: GangLowering, place: Place, start, stride, size: int, bounded: bool = False):
    """(ok i1, low i64): whether the access of `size` bytes of every lane of the mask, lane i
    at start + i * stride (the addresses' type, modulo its width), lies in the memory the
    kernel may touch without wrapping, and the lower of lane 0's and lane 31's addresses as
    i64 (a window offset for shared memory, else a host address: where a span access
    starts). Lanes outside the mask are not checked: a tree's `if (t < d)` levels with d
    below 32 leave the lanes whose addresses lie past the tree's end out, and their
    accesses so stay strided instead of going lane by lane through memory.py's checks.
    `bounded`: S is a windowed form's K * sext(32-bit difference) with |K| < 2^24 and the
    start its lane 0's (|start| < 2^56: a shared variable's address, K * sext(v[0]) and an
    offset below 2^30), so no sum of up to 32 strides wraps 64 bits: no `near` test."""
    b = fl.b
    et = start.type
    wide = et.width == 64
    origin = start if wide else b.zext(start, I64)
    if place.shared and isinstance(stride, ll.Constant) and isinstance(fl.mask, ll.Constant):
        return _known_span(fl, origin, _signed(stride.constant, et.width), size)
    step = stride if wide else b.sext(stride, I64)
    lowest, highest = _active_lanes(fl)
    first, last = (b.add(origin, b.mul(step, lane)) for lane in (lowest, highest))
    less = ll.IRBuilder.icmp_signed(b, "<", last, first)
    low = ll.IRBuilder.select(b, less, last, first)
    high = b.add(ll.IRBuilder.select(b, less, first, last), I64(size))
    end = b.add(origin, b.mul(step, I64(W - 1)))
    start_low = ll.IRBuilder.select(b, ll.IRBuilder.icmp_signed(b, "<", end, origin), end,
                                    origin)
    # (|S| below 2^32: no 64-bit sum above wraps)
    near = I1(1) if bounded else ll.IRBuilder.icmp_unsigned(
        b, "<", b.add(step, I64(1 << 32)), I64(1 << 33))
    if place.shared:
        limit = b.zext(fl.target.ctx_field(fl, "total_smem"), I64)
        ok = b.and_(ll.IRBuilder.icmp_signed(b, ">=", low, I64(0)),
                    ll.IRBuilder.icmp_signed(b, "<=", high, limit))
        return b.and_(near, ok), start_low
    return b.and_(near, inside_one_allocation(fl, low, high)), start_low


def _known_span(fl: GangLowering, origin, step: int, size: int):
    """_span's (ok, low) for shared memory under the full mask with the stride a constant
    (|step| below 2^32, its sign known): the span [low, high) runs from lane 0's or lane
    31's offset; compared unsigned, low <= high says no 64-bit sum wrapped (a wrap puts high
    below low) and high <= the block's shared size puts every lane in the window (a
    negative offset is a large unsigned one): three instructions and two branches where the
    signed order of lanes 0 and 31 took two selects (13.0's `temp + 4 * sext(2t)`)."""
    b = fl.b
    end = b.add(origin, I64(step * (W - 1)))
    low, top = (origin, end) if step >= 0 else (end, origin)
    high = b.add(top, I64(size))
    limit = b.zext(fl.target.ctx_field(fl, "total_smem"), I64)
    return b.and_(ll.IRBuilder.icmp_unsigned(b, "<=", low, high),
                  ll.IRBuilder.icmp_unsigned(b, "<=", high, limit)), low


def strided_access(fl: GangLowering, place: Place, t: Type, value, general):
    """Load (value None: the vector of the lanes' values) or store `value` for the mask's
    lanes at `place` (applies() holds): where the span is checked, a span access for the
    strides of SPANS, else lane by lane (all 32 under the full mask, the mask's set bits
    under another); where it is not, `general(fl, place, t, value)`, memory.py's path."""
    b = fl.b
    et = place.addrs.type.element
    start, stride, known, ok, low = found = _checked_span(fl, place, t)
    fast, slow, done = (fl.llfn.append_basic_block(n) for n in (
        "strided", "strided_checked_apart", "strided_done"))
    ll.IRBuilder.cbranch(b, ok, fast, slow)
    memos = dict(fl.patterns), dict(fl.group_ok)
    incoming = []
    b.position_at_end(fast)
    if not place.shared and not _prefetched_before(fl, place, known):
        prefetch(fl, [low], abs(known) * W if known is not None else 4 * t.size * W)
    pointer = _pointer(fl, place, low)
    cases = [known] if known is not None else [
        sign * k * t.size for k in SPANS for sign in (1, -1)]
    for step in cases:
        if known is None:
            here, later = (fl.llfn.append_basic_block(n) for n in ("strided_span",
                                                                   "strided_next"))
            ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(
                b, "==", stride, ll.Constant(et, step)), here, later)
            b.position_at_end(here)
        k = step // t.size if step % t.size == 0 else 0
        if abs(k) == 1:
            incoming.append((_span_access(fl, t, value, pointer, k), b.block))
            b.branch(done)
        elif abs(k) in SPANS:
            incoming.extend(_aligned_spans(fl, t, value, pointer, low, k, done))
        if known is None:
            b.position_at_end(later)
    if not b.block.is_terminated:       # (another stride)
        if _gathers(fl, place):
            incoming.append((_gathered(fl, t, value, start, stride), b.block))
        else:
            lane0 = _pointer(fl, place, start if et.width == 64 else b.zext(start, I64))
            by_lane = _lane_by_lane if isinstance(fl.mask, ll.Constant) else _mask_lanes
            incoming.append((by_lane(fl, t, value, lane0, stride), b.block))
        b.branch(done)
    b.position_at_end(slow)
    incoming.append((general(fl, _cold(fl, place), t, value), b.block))
    b.branch(done)
    fl.patterns, fl.group_ok = memos
    fl.patterns[span_key(fl, place, t)] = found
    b.position_at_end(done)
    if value is not None:
        return None
    result = ll.IRBuilder.phi(b, vec(value_type(t)))
    for loaded, block in incoming:
        result.add_incoming(loaded, block)
    return result


def _prefetched_before(fl: GangLowering, place: Place, known) -> bool:
    """Whether an access lowered earlier in the kernel from the same base register and the
    same known stride S prefetches the lines of this one's span: its offset less than |S|
    away (a pair per thread's `x[2t]` and `x[2t + 1]`: one span of 2W elements, whose
    second access fetched the first's lines again, 17 instructions a warp on
    scan_blelloch). Notes this access's offset where it prefetches; the same offset again
    is the same access lowered in another copy of its segment (a full-mask copy and one
    entered after a branch), which keeps its prefetch. A prefetch left out
    changes no result (a prefetch never faults): only where the earlier access runs, as
    the pair's first does wherever its second does (a guard `base + 2t + 1 < n` implies
    `base + 2t < n`), are the lines fetched ahead."""
    if known is None:
        return False
    offsets = fl.span_prefetches.setdefault((place.key, known), [])
    if any(o != place.offset and abs(place.offset - o) < abs(known) for o in offsets):
        return True
    offsets.append(place.offset)
    return False


def _cold(fl: GangLowering, place: Place) -> Place:
    """`place` for the failed span check's path: its 64-bit address vector made again there
    (scalar_lanes.recomputed), so that the span path, which takes lane 0's address (and
    lane 1's) as scalars, does not compute the 32 lanes' sign extensions, shifts and adds
    (scan_blelloch's copy in and out: about 15 vector instructions an access)."""
    addrs = recomputed(fl.b, place.addrs, fl.written, 16, widths=(32, 64))
    if addrs is place.addrs:
        return place
    return Place(addrs, place.shared, place.offset, place.key, place.lanes, place.stride)


def span_key(fl: GangLowering, place: Place, t: Type) -> tuple:
    """The key of an access's span and its check among fl.patterns (memory.py's memo of a
    base's lanes, which a write of the base register forgets)."""
    return (place.key, "span", place.offset, t.size, id(fl.mask))


def _checked_span(fl: GangLowering, place: Place, t: Type) -> tuple:
    """(start, S, S's constant or None, ok, low) of the access of `t` at `place`: lane 0's
    address, the stride, whether the span is checked and where it starts (_span). An
    access from the same base, offset and size under the same mask earlier in the segment
    (a tree level's load and store of `temp[bi]`) made them already: its values serve."""
    found = fl.patterns.get(span_key(fl, place, t))
    if found is not None:
        return found
    b = fl.b
    et = place.addrs.type.element
    start = b.add(scalar_lane(b, place.addrs, 0, fl.written), ll.Constant(et, place.offset))
    stride, known, bounded = _stride(fl, place)
    ok, low = _span(fl, place, start, stride, t.size, bounded)
    if _windowed(place):
        return start, stride, known, ok, low
    if place.stride.widened:        # (only while no widening of the warp wrapped)
        ok = b.and_(ok, fl.no_widening_wrapped())
    if place.stride.widened and place.stride.scaled:
        ok = b.and_(ok, _in_lane_order(fl, place, stride))
    return start, stride, known, ok, low


def _windowed(place: Place) -> bool:
    """Whether the span check alone puts the lanes of a scaled form's widening in lane
    order: a shared access at U + K * sext(v[i]) + offset (lane_forms.WINDOW: U a shared
    variable's address, in [0, 2^31); v[i] = v[0] + i * d modulo 2^32, one widening), with
    |offset| < 2^30. The check takes lane i at P[i] = lane 0's + i * S, S = lane 1's less
    lane 0's = K * D (D = sext(v[1]) - sext(v[0])), that is U + K * z[i] + offset with
    z[i] = sext(v[0]) + i * D, congruent to v[i] modulo 2^32. Where it passes, P of the
    mask's lowest and highest lanes lie in the window, below 2^30, so K * z there lies
    within 2^31 of 0, and so does z (K is not 0), and every z[i] between them: then z[i]
    is sext(v[i]) and P[i] lane i's address, with no run-time test of lane 31 nor of the
    warp's widening flag (its only widening is this one). An unsigned widening (zext)
    does not qualify: a z below 0 passes the check where the lane's address is 2^32 up.
    NVRTC 13.0's tree levels (`mul.wide.s32 %rd, ai, 4; add.s64 %rd, temp, %rd`).
    Any D congruent to d modulo 2^32 serves as well (z[i] is then congruent to v[i]):
    _stride takes K * sext(v[1] - v[0]) (the difference in 32 bits, scalar_lanes.lane_step,
    where scalar_lanes.scaled_extension finds v and K), the same instructions for a level's
    `temp[ai]` and `temp[ai + offset]` (v + c), which LLVM then computes once; lane 1's
    less lane 0's address (sext differences) it could not share."""
    form = place.stride
    return place.shared and form.scaled and form.window == WINDOW and \
        abs(place.offset) < 1 << 30


def _in_lane_order(fl: GangLowering, place: Place, stride):
    """i1: lane 31's address is lane 0's plus 31 strides (lane 1's less lane 0's), for a
    scaled form's widening (passes/lane_forms.py), which has no guard of its own. Lane i
    holds B + K * ext(v + i * d) with v + i * d taken modulo 2^32: where the exact sums
    z_i = ext(v) + i * D (D = ext(lane 1's) - ext(lane 0's)) of lanes 0 and 31 lie in the
    extension's range, so do all between them, and every lane's extension is its z_i:
    then every lane lies in lane order, else this fails and the access takes the general
    path with the lanes' true addresses."""
    b = fl.b
    et = place.addrs.type.element
    lane0, lane31 = (scalar_lane(b, place.addrs, i, fl.written) for i in (0, W - 1))
    return ll.IRBuilder.icmp_unsigned(
        b, "==", lane31, b.add(lane0, b.mul(stride, ll.Constant(et, W - 1))))


def _gathers(fl: GangLowering, place: Place) -> bool:
    """Whether the other strides' accesses at `place` are one gather or scatter: shared
    memory under the full mask on a host with AVX-512 (`vpgatherdd`/`vpscatterdd`, 16
    lanes each, from the window with the lanes' 32-bit offsets), where the option asks for
    it. Under another mask (a tree's last levels: one warp, its first d < 32 lanes, each
    level's loads waiting for the last one's stores) the loop over the mask's set bits
    stays: its scalar stores forward to the next level's scalar loads, where a gather
    waits for a scatter's stores to leave the store buffer (scan_blelloch one worker,
    development machine: gathers under every mask 1.014x the lane by lane code, under the
    full mask alone 0.936x)."""
    return (place.shared and isinstance(fl.mask, ll.Constant) and fl.target.avx512_lanes
            and fl.options.strided_gathers)


def _gathered(fl: GangLowering, t: Type, value, start, stride):
    """The lanes' elements at the shared window offsets start + i * stride (lane i's,
    modulo the addresses' width), in one gather or scatter under fl.mask. The offsets are
    taken in 32 bits and sign-extended: the span check put every lane of the mask in the
    window, below 2^31, where that is each lane's own offset (x86 gathers them as dwords).
    A scatter stores its lanes in lane order, as the lane-by-lane stores did."""
    b = fl.b
    first, step = ((v if v.type.width == 32 else b.trunc(v, I32)) for v in (start, stride))
    lanes = b.add(b.splat(first), b.mul(ll.Constant(vec(I32), list(range(W))),
                                        b.splat(step)))
    pointers = ll.IRBuilder.gep(b, fl.target.space_base(fl, "shared"),
                                [b.sext(lanes, vec(I64))], source_etype=I8)
    pointers.type = vec(PTR)
    return masked_lanes(fl, t, value, pointers)


def _lane_by_lane(fl: GangLowering, t: Type, value, pointer, stride):
    """All 32 lanes' elements `stride` bytes apart from `pointer` (lane 0's), lane by lane:
    unrolled scalar accesses, which beat gathers and scatters on scan_blelloch's longer
    strides both on an AMD EPYC (-3% CPU time) and on the GPU host's Xeon (-7%)."""
    b, element = fl.b, value_type(t)
    step = stride if stride.type.width == 64 else b.sext(stride, I64)
    out = ll.Constant(vec(element), None)
    for lane in range(W):
        p = ll.IRBuilder.gep(b, pointer, [b.mul(step, I64(lane))], source_etype=I8)
        if value is None:
            x = ll.IRBuilder.load(b, p, typ=element, align=t.size)
            out = ll.IRBuilder.insert_element(b, out, x, I32(lane))
        else:
            ll.IRBuilder.store(b, ll.IRBuilder.extract_element(b, value, I32(lane)), p,
                               align=t.size)
    return out if value is None else None


def _mask_lanes(fl: GangLowering, t: Type, value, pointer, stride):
    """The mask's lanes' elements `stride` bytes apart from `pointer` (lane 0's), lane by
    lane over the mask's set bits: a tree's last levels (`if (t < d)` with d below 32: one
    warp, its first d lanes, strides of 64 elements and more), which as gathers and scatters
    cost each level about 70 ns on an AMD EPYC (its scatters are slow). A load's lanes go
    to a stack array, the vector is read back from it (the mask's other lanes undefined,
    as a gather leaves them); a store's lanes are read from one."""
    b, element = fl.b, value_type(t)
    step = stride if stride.type.width == 64 else b.sext(stride, I64)
    array = fl.shuffle_array(element)
    if value is not None:
        ll.IRBuilder.store(b, value, array, align=64)

    def lane(i, _next) -> None:
        p = ll.IRBuilder.gep(b, pointer, [b.mul(step, b.zext(i, I64))], source_etype=I8)
        slot = ll.IRBuilder.gep(b, array, [b.zext(i, I64)], source_etype=element)
        if value is None:
            ll.IRBuilder.store(b, ll.IRBuilder.load(b, p, typ=element, align=t.size), slot)
        else:
            ll.IRBuilder.store(b, ll.IRBuilder.load(b, slot, typ=element), p, align=t.size)

    lane_loop(fl, fl.bits(fl.mask), lane, "strided_lane")
    if value is None:
        return ll.IRBuilder.load(b, array, typ=vec(element), align=64)
    return None


def _pointer(fl: GangLowering, place: Place, low):
    """The pointer to the span's lowest address `low` (i64)."""
    b = fl.b
    if place.shared:
        return ll.IRBuilder.gep(b, fl.target.space_base(fl, "shared"), [low], source_etype=I8)
    return ll.IRBuilder.inttoptr(b, low, PTR)


def _aligned_spans(fl: GangLowering, t: Type, value, pointer, low, k: int, done) -> list:
    """The span access of the lanes' elements k apart from `pointer` (the lowest lane's,
    `low` its address or window offset), the span started at the multiple of |k| elements
    at or below it: a branch per place of the lowest lane's element in its group of |k|
    (`temp[2 * t + 1]`: the second). A tree's warps so each access their own |k| * W
    elements; a span from the lane's own element reached into the next warp's, whose loads
    then waited for this warp's masked store to leave the store buffer (scan_blelloch -6%
    CPU time on an AMD EPYC). Returns the (loaded, block) pairs, each block branching to
    `done`."""
    b = fl.b
    within = b.and_(low, I64(abs(k) * t.size - 1))
    out = []
    for r in range(abs(k)):
        here, later = (fl.llfn.append_basic_block(name) for name in (
            f"strided_at_{r}", "strided_not_at"))
        ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "==", within, I64(r * t.size)),
                             here, later)
        b.position_at_end(here)
        start = ll.IRBuilder.gep(b, pointer, [I64(-r * t.size)], source_etype=I8)
        out.append((_span_access(fl, t, value, start, k, r), b.block))
        b.branch(done)
        b.position_at_end(later)
    out.append((_span_access(fl, t, value, pointer, k), b.block))  # (a misaligned element)
    b.branch(done)
    return out


def _span_access(fl: GangLowering, t: Type, value, pointer, k: int, r: int = 0):
    """The lanes' elements k apart from r elements past `pointer` (the lowest lane's element
    there: lane 0's for k > 0, lane 31's for k < 0): one masked access of the |k| * W
    elements from `pointer`, masked to the lanes' own elements (r < |k|: the last lane's
    is inside)."""
    b, element = fl.b, value_type(t)
    n = abs(k) * W
    wide = ll.VectorType(element, n)
    # span element j holds lane place[j] (W: no lane's)
    place = [W] * n
    for lane in range(W):
        place[r + (lane * k if k > 0 else (W - 1 - lane) * -k)] = lane
    mask = ll.IRBuilder.shuffle_vector(b, fl.mask, ll.Constant(fl.mask.type, [I1(0)] * W),
                                       ll.Constant(ll.VectorType(I32, n), place))
    name = type_name(element)
    if value is None:
        fn = declare(fl.llfn.module, f"llvm.masked.load.v{n}{name}.p0", wide,
                     [PTR, I32, ll.VectorType(I1, n), wide])
        span = ll.IRBuilder.call(b, fn, [pointer, I32(t.size), mask, ll.Constant(wide, None)])
        return ll.IRBuilder.shuffle_vector(b, span, ll.Constant(wide, None), ll.Constant(
            ll.VectorType(I32, W), [place.index(lane) for lane in range(W)]))
    fn = declare(fl.llfn.module, f"llvm.masked.store.v{n}{name}.p0", ll.VoidType(),
                 [wide, PTR, I32, ll.VectorType(I1, n)])
    span = ll.IRBuilder.shuffle_vector(b, value, ll.Constant(value.type, None),
                                       ll.Constant(ll.VectorType(I32, n), place))
    ll.IRBuilder.call(b, fn, [span, pointer, I32(t.size), mask])
    return None
