"""Warp gangs' accesses by how the mask's lanes' addresses lie (classify.py's kinds): one
masked vector access of consecutive lanes (or of the warp's W * count elements of a .v2/.v4
access, interleaved), two half-warp accesses, two scalars for one address per half warp,
else a gather or scatter. Unchecked: memory.py checks the range first.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import I1, I8, I32, I64, PTR, value_type
from ptxport.codegen.targets.cpu.gang.checks import Place, type_name
from ptxport.codegen.targets.cpu.gang.classify import HALF, LOW_HALF
from ptxport.codegen.targets.cpu.gang.lanes import W, declare, vec
from ptxport.codegen.targets.cpu.gang.quads import join_quads, quads, split_quads
from ptxport.codegen.targets.cpu.gang.scalar_lanes import recomputed
from ptxport.codegen.targets.cpu.gang.state import GangLowering
from ptxport.ir.types import Type
from ptxport.passes.shared_bounds import inside


def _half_mask(fl: GangLowering, half: int):
    b = fl.b
    lanes = ll.Constant(ll.VectorType(I32, HALF), list(range(HALF * half, HALF * half + HALF)))
    return ll.IRBuilder.shuffle_vector(b, fl.mask, ll.Constant(fl.mask.type, None), lanes)


def pointer_maker(fl: GangLowering, place: Place, offset):
    """A function from a lane's address (place's register) to its pointer."""
    b = fl.b
    if place.shared:
        window = fl.target.space_base(fl, "shared")
        wide = place.addrs.type.element.width != 32
        if not wide and inside(fl.shared_bounds.get(fl.inst), 1):
            # (passes/shared_bounds.py proves the access inside its variable: the 32-bit
            # sum does not wrap, so the offset is added in 64 bits, after the extension,
            # where it folds into the access's address: one extension per base, not one
            # lea and movslq per access)
            def proven(at):
                lane = ll.IRBuilder.gep(b, window, [b.sext(at, I64)], source_etype=I8)
                return ll.IRBuilder.gep(b, lane, [I64(offset.constant)], source_etype=I8)
            return proven

        def pointer(at):
            at = b.add(at, offset)
            return ll.IRBuilder.gep(b, window, [at if wide else b.sext(at, I64)],
                                    source_etype=I8)
        return pointer

    def pointer(at):
        return ll.IRBuilder.inttoptr(b, b.add(at, offset), PTR)
    return pointer


def consecutive(fl: GangLowering, t: Type, value, pointer, s0, s1, old=None):
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


def consecutive_halves(fl: GangLowering, t: Type, value, pointer, s0, s1, old=None):
    """Each half warp consecutive: two masked half-vector accesses; a load's lanes outside
    the mask hold `old`'s (a vector of the warp's lanes), else zeros."""
    b, element = fl.b, value_type(t)
    vt, ht, name = vec(element), ll.VectorType(element, HALF), type_name(element)
    masks = [_half_mask(fl, 0), _half_mask(fl, 1)]
    if value is None:
        fn = declare(fl.llfn.module, f"llvm.masked.load.v{HALF}{name}.p0", ht,
                     [PTR, I32, ll.VectorType(I1, HALF), ht])
        kept = [ll.Constant(ht, None)] * 2 if old is None else [ll.IRBuilder.shuffle_vector(
            b, old, ll.Constant(vt, None), ll.Constant(ll.VectorType(I32, HALF), list(
                range(HALF * half, HALF * half + HALF)))) for half in (0, 1)]
        parts = [ll.IRBuilder.call(b, fn, [pointer(h), I32(t.size), m, k])
                 for h, m, k in ((s0, masks[0], kept[0]), (s1, masks[1], kept[1]))]
        return ll.IRBuilder.shuffle_vector(
            b, parts[0], parts[1], ll.Constant(ll.VectorType(I32, W), list(range(W))))
    fn = declare(fl.llfn.module, f"llvm.masked.store.v{HALF}{name}.p0", ll.VoidType(),
                 [ht, PTR, I32, ll.VectorType(I1, HALF)])
    for half, (h, m) in enumerate(((s0, masks[0]), (s1, masks[1]))):
        part = ll.IRBuilder.shuffle_vector(b, value, ll.Constant(vt, None), ll.Constant(
            ll.VectorType(I32, HALF), list(range(HALF * half, HALF * half + HALF))))
        ll.IRBuilder.call(b, fn, [part, pointer(h), I32(t.size), m])
    return None


def one_per_half(fl: GangLowering, t: Type, value, pointer, s0, s1):
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


def gather_or_scatter(fl: GangLowering, place: Place, t: Type, value, offset):
    """Anything else: lane by lane in one gather or scatter (a widened form's addresses
    made again here, scalar_lanes.recomputed: the hot paths take lanes 0 and 16 alone)."""
    b = fl.b
    addrs = place.addrs
    if place.lanes is not None and place.lanes.widened:
        addrs = recomputed(b, addrs, fl.written)
    lanes = b.add(addrs, b.splat(offset)) if place.offset else addrs
    if place.shared:
        window = fl.target.space_base(fl, "shared")
        # (checked offsets are below 2^31: sign-extended, x86 gathers them as dwords)
        pointers = ll.IRBuilder.gep(b, window, [
            lanes if place.addrs.type.element.width == 64 else b.sext(lanes, vec(I64))],
            source_etype=I8)
        pointers.type = vec(PTR)
    else:
        pointers = b.inttoptr(lanes, vec(PTR))
    return masked_lanes(fl, t, value, pointers)


def masked_lanes(fl: GangLowering, t: Type, value, pointers):
    """value None: the active lanes' elements at `pointers` (a vector of pointers) in one
    masked gather, 0 in the others; else `value`'s active lanes stored there in one masked
    scatter (in lane order), and None."""
    b, element = fl.b, value_type(t)
    vt, name = vec(element), type_name(element)
    if value is None:
        fn = declare(fl.llfn.module, f"llvm.masked.gather.v{W}{name}.v{W}p0", vt,
                     [vec(PTR), I32, vec(I1), vt])
        return ll.IRBuilder.call(b, fn, [pointers, I32(t.size), fl.mask,
                                         ll.Constant(vt, None)])
    fn = declare(fl.llfn.module, f"llvm.masked.scatter.v{W}{name}.v{W}p0", ll.VoidType(),
                 [vt, vec(PTR), I32, vec(I1)])
    ll.IRBuilder.call(b, fn, [value, pointers, I32(t.size), fl.mask])
    return None


def interleaved(fl: GangLowering, t: Type, count: int, pointer, values=None, old=None,
                mask=None):
    """One masked access of W * count elements at `pointer`, lane l's element i at l * count
    + i: loaded, the count vectors of the lanes' elements (taken apart by shuffles; `old`:
    count vectors the lanes outside the mask keep, else zeros); stored, `values` (count
    vectors of the lanes) interleaved likewise. `mask`: the W * count elements' (lane l's
    element i at l * count + i), by default lane l's bit of fl.mask for all its elements."""
    b, element = fl.b, value_type(t)
    n = W * count
    wide = ll.VectorType(element, n)
    name = type_name(element)
    if mask is None:
        mask = ll.IRBuilder.shuffle_vector(b, fl.mask, ll.Constant(fl.mask.type, None),
                                           ll.Constant(ll.VectorType(I32, n),
                                                       [i // count for i in range(n)]))
    if values is None:
        fn = declare(fl.llfn.module, f"llvm.masked.load.v{n}{name}.p0", wide,
                     [PTR, I32, mask.type, wide])
        through = ll.Constant(wide, None) if old is None else interleave_lanes(fl, old)
        v = ll.IRBuilder.call(b, fn, [pointer, I32(t.size), mask, through])
        if quads(element, count):
            return split_quads(b, v)
        return [ll.IRBuilder.shuffle_vector(b, v, ll.Constant(wide, None), ll.Constant(
            ll.VectorType(I32, W), [lane * count + i for lane in range(W)]))
            for i in range(count)]
    fn = declare(fl.llfn.module, f"llvm.masked.store.v{n}{name}.p0", ll.VoidType(),
                 [wide, PTR, I32, mask.type])
    ll.IRBuilder.call(b, fn, [interleave_lanes(fl, values), pointer, I32(t.size), mask])
    return None


def interleave_lanes(fl: GangLowering, values: list):
    """2 or 4 vectors of the lanes (values, or a mask's bits) as one, lane l's element i at
    l * count + i."""
    b, count = fl.b, len(values)
    values = [b.splat(v) for v in values]
    if quads(values[0].type.element, count):
        return join_quads(b, values)
    while len(values) > 2:      # pairs joined: [v0 v1], [v2 v3] (count is 2 or 4)
        values = [ll.IRBuilder.shuffle_vector(b, values[i], values[i + 1], ll.Constant(
            ll.VectorType(I32, 2 * W), list(range(2 * W)))) for i in range(0, len(values), 2)]
    # element i of lane l sits at i * W + l of the two halves side by side
    return ll.IRBuilder.shuffle_vector(b, values[0], values[1], ll.Constant(
        ll.VectorType(I32, W * count), [(i % count) * W + i // count for i in range(W * count)]))


def lane_by_lane(fl: GangLowering, place: Place, t: Type, count: int, values):
    """Each of an access's `count` elements as one gather (values None) or scatter, at
    `place` plus the element's offset: the slow side of a vector access whose check or
    classification failed."""
    return [gather_or_scatter(fl, place.moved(i * t.size), t, None if values is None
                              else values[i],
                              ll.Constant(place.addrs.type.element, place.offset + i * t.size))
            for i in range(count)]


def joined(fl: GangLowering, t: Type, paths) -> list:
    """The loaded elements where the paths of an access meet (the builder at the block they
    branch to): `paths` is [(values, block)], values None for a path that loaded nothing
    (no lane active: undefined)."""
    vt = vec(value_type(t))
    count = len(next(v for v, _ in paths if v is not None))
    out = []
    for i in range(count):
        phi = ll.IRBuilder.phi(fl.b, vt)
        for values, block in paths:
            phi.add_incoming(ll.Constant(vt, None) if values is None else values[i], block)
        out.append(phi)
    return out
