"""Warp gangs' memory checks: the lanes' addresses against the launch's allocations, one
range per warp and base register (with a per-site cache), faults with the first bad lane,
and prefetches of the ranges ahead.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import (
    I1,
    I8,
    I32,
    I64,
    PTR,
    const_int,
    expect,
)
from ptxport.codegen.targets.cpu.abi import CTX, FAULTED
from ptxport.codegen.targets.cpu.gang.lanes import (
    BLOCK_COPY,
    FULL,
    VERDICT,
    GangUnsupported,
    W,
    declare,
)
from ptxport.codegen.targets.cpu.gang.scalar_lanes import recomputed
from ptxport.codegen.targets.cpu.gang.state import GangLowering
from ptxport.codegen.targets.cpu.target import check_function, source_line
from ptxport.ir import nodes as ir

# --- memory -----------------------------------------------------------------------------------

_NAMES = {"half": "f16", "bfloat": "bf16", "float": "f32", "double": "f64"}


def type_name(t: ll.Type) -> str:
    return f"i{t.width}" if isinstance(t, ll.IntType) else _NAMES[str(t)]


def lane_addresses(fl: GangLowering, operand, space: str | None, lanes: bool = True):
    """(host addresses i64, offsets into the shared window or None), or (None, 32-bit shared
    offsets): vectors of the lanes' values, or (lanes False) scalars where every lane's
    address is the same (a uniform base register, a variable, an absolute address)."""
    b = fl.b
    if not isinstance(operand, ir.Address):
        raise GangUnsupported("a memory operand that is not [address]")
    base, offset = operand.base, operand.offset
    window = fl.target.space_base(fl, space) if space == "shared" else None
    if isinstance(base, ir.Variable):
        pointer = fl.target.variable_pointer(fl, base)
        address = ll.IRBuilder.ptrtoint(b, pointer, I64)
        if window is not None:
            address = b.sub(address, ll.IRBuilder.ptrtoint(b, window, I64))
    elif base is None:
        address = I64(0)
    else:
        address = fl.read(base, "u64" if base.type.bits == 64 else "u32")
        if base.type.bits != 64:
            if window is not None:      # a 32-bit shared address: stays 32-bit (cheaper)
                if offset:
                    address = b.add(address, const_int(I32, offset))
                return None, b.splat(address) if lanes else address
            address = b.zext(address, I64)
    if offset:
        address = b.add(address, const_int(I64, offset))
    host = address if window is None else b.add(address, ll.IRBuilder.ptrtoint(b, window, I64))
    offsets = None if window is None else address
    if not lanes:
        return host, offsets
    return b.splat(host), None if offsets is None else b.splat(offsets)


def fault(fl: GangLowering, lane, address, size: int, write: bool) -> None:
    b = fl.b
    ctx = fl.llfn.args[0]
    line = source_line(fl.module, fl.inst.pos)
    b.store(address, b.gep(ctx, [I64(CTX.fields["fault_address"])], source_etype=I8))
    b.store(I64((line << 16) | (size << 1) | int(write)),
            b.gep(ctx, [I64(CTX.fields["fault_info"])], source_etype=I8))
    b.store(lane, fl.scratch_lane)
    b.ret(I32(FAULTED))


def pattern(fl: GangLowering, addrs, size: int):
    """(consecutive i1, start): whether the mask's lanes' addresses (host i64 or 32-bit shared
    offsets) are `size` apart in lane order, and the address lane 0 would then have."""
    b = fl.b
    element = addrs.type.element
    start = b.sub(addrs, ll.Constant(addrs.type, [size * i for i in range(W)]))
    s = ll.IRBuilder.extract_element(b, start, fl.cttz(fl.bits(fl.mask)))
    differ = ll.IRBuilder.select(b, fl.mask, ll.IRBuilder.icmp_unsigned(
        b, "!=", start, b.splat(s)), b.splat(I1(0)))
    assert s.type == element
    return ll.IRBuilder.icmp_unsigned(b, "==", fl.bits(differ), I32(0)), s


def offset_addrs(fl: GangLowering, addrs, offset: int):
    """The lanes' addresses `addrs` plus a constant `offset` (bytes; none added for 0)."""
    return fl.b.add(addrs, fl.b.splat(ll.Constant(addrs.type.element, offset))) if offset \
        else addrs


def cold_addrs(fl: GangLowering, place: Place, offset: int = 0):
    """place.addrs (+ offset), for a check's failure path: where the lanes' constant offsets
    are known (place.lanes) and all 32 lanes run the segment (lane 0, lane 16 with `halves`,
    then hold their own), recomputed there from lane 0's value, so that the vector of the
    lanes' addresses is not kept live through the hot code for the rare path (LLVM spilled
    it in the lanes GEMM's k loop); a widened form's (which may have wrapped) made again
    there from the same values (scalar_lanes.recomputed); else place.addrs itself."""
    b, form, addrs = fl.b, place.lanes, place.addrs
    et = addrs.type.element
    whole = fl.unguarded_mask
    if form is not None and form.widened:
        addrs = recomputed(b, addrs, fl.written)
    if form is None or form.widened or form.scaled or not (
            isinstance(whole, ll.Constant) and isinstance(whole.constant, list)
            and all(getattr(lane, "constant", 0) == 1 for lane in whole.constant)):
        return offset_addrs(fl, addrs, offset)
    wrap = (1 << et.width) - 1
    if form.halves:     # each half from its first lane
        starts = ll.IRBuilder.shuffle_vector(b, addrs, ll.Constant(addrs.type, None),
                                             ll.Constant(ll.VectorType(I32, W),
                                                         [0] * (W // 2) + [W // 2] * (W // 2)))
        d = list(form.offsets)
    else:
        starts = b.splat(ll.IRBuilder.extract_element(b, addrs, I32(0)))
        d = [c - form.offsets[0] for c in form.offsets]
    return b.add(starts, ll.Constant(addrs.type, [(c + offset) & wrap for c in d]))


def prechecked(fl: GangLowering) -> bool:
    """Whether the current instruction is a shared access whose whole range over its loop
    was checked before the loop (passes/hoist_checks.py): it needs no check of its own."""
    return id(fl.inst) in fl.prechecked


def smem_limit(fl: GangLowering, width: int):
    """The block's shared-memory size in bytes (the context's total_smem, an i32) as an
    integer of `width` bits (32 or 64), to compare with offsets into the shared window."""
    limit = fl.target.ctx_field(fl, "total_smem")
    return fl.b.zext(limit, I64) if width == 64 else limit


def proven_or(fl: GangLowering, proven, make):
    """i1: true where `proven` (likely; nothing else runs), else what make() (called
    here) makes, in a branch of its own."""
    b = fl.b
    rest, out = fl.llfn.append_basic_block("proven_not"), fl.llfn.append_basic_block(
        "proven_done")
    start = b.block
    expect(fl, ll.IRBuilder.cbranch(b, proven, out, rest))
    b.position_at_end(rest)
    ok = make()
    end = b.block
    b.branch(out)
    b.position_at_end(out)
    phi = ll.IRBuilder.phi(b, I1)
    phi.add_incoming(I1(1), start)
    phi.add_incoming(ok, end)
    return phi


def lower_range_test(fl: GangLowering, inst: ir.Instruction) -> None:
    """passes/hoist_global_checks.py's test at a loop's entry, `and.pred ok, c, c`: ok is
    true (in the mask's lanes) where c holds in every lane of the mask and each of the
    loop's accesses' ranges, from the lowest lane's lo to the highest lane's hi, lies in
    one allocation (an empty mask's test holds)."""
    b = fl.b
    conditions = b.splat(fl.read(inst.operands[1], "pred"))
    good = ll.IRBuilder.icmp_unsigned(b, "==", fl.bits(b.and_(fl.mask, b.not_(conditions))),
                                      I32(0))
    idle = ll.IRBuilder.icmp_unsigned(b, "==", fl.bits(fl.mask), I32(0))
    for lo, hi in fl.range_tests[id(inst)]:
        low = fl.reduce("umin", ll.IRBuilder.select(b, fl.mask, b.splat(fl.read(lo, "u64")),
                                                    b.splat(I64(-1))))
        high = fl.reduce("umax", ll.IRBuilder.select(b, fl.mask, b.splat(fl.read(hi, "u64")),
                                                     b.splat(I64(0))))
        good = b.and_(good, inside_one_allocation(fl, low, high, skip=idle))
    dest = inst.operands[0]
    fl.write(dest, good if dest in fl.uniform else b.splat(good), "pred")


# The block's verdict (gang/block_tests.py), a byte of run_blocks' block copy that rounds.py
# zeroes where each block starts: 0 while unknown, then one of these
PASSED, FAILED = 1, 2


def verdict_field(fl: GangLowering):
    """The verdict byte's address (block_tests.py)."""
    return ll.IRBuilder.gep(fl.b, fl.llfn.args[BLOCK_COPY], [I64(VERDICT)], source_etype=I8)


def verdict_passed(fl: GangLowering):
    """i1: the block's test passed (its marker, at the kernel's start, made the verdict known
    in every warp before any access it covers)."""
    told = ll.IRBuilder.load(fl.b, verdict_field(fl), typ=I8)
    return ll.IRBuilder.icmp_unsigned(fl.b, "==", told, I8(PASSED))


def loop_checked(fl: GangLowering):
    """i1: whether every lane of the mask passed the range test at the entry of the loop
    that holds the current access (passes/hoist_global_checks.py), so that it needs no
    check of its own; None for an access no such test covers, or in memory.py's way for
    lanes that did not (fl.loop_check_state False); true in its way for lanes that did."""
    ok = fl.loop_checked.get(id(fl.inst))
    if ok is None or fl.loop_check_state is False:
        return None
    if fl.loop_check_state:     # (memory.py's way for lanes that passed it)
        return I1(1)
    b = fl.b
    if id(fl.inst) in fl.block_checked:     # (a block test's: the block's verdict)
        return verdict_passed(fl)
    lanes = b.splat(fl.read(ok, "pred"))
    return ll.IRBuilder.icmp_unsigned(b, "==", fl.bits(b.and_(fl.mask, b.not_(lanes))),
                                      I32(0))


def check_access(fl: GangLowering, host, offsets, size: int, write: bool, span=None):
    """Check the mask's lanes' accesses of `size` bytes at `host` (`span`: the (low, high)
    the lanes touch, when known; else the lowest and highest address; with a span, `host`
    may be a function that makes the vector, called only where the range test failed). A
    bad lane stops the kernel there."""
    b = fl.b
    if offsets is not None and prechecked(fl):
        return
    llfn = fl.llfn
    ok_block = llfn.append_basic_block("access_ok")
    if offsets is not None:
        limit = smem_limit(fl, 64)
        fits = ll.IRBuilder.icmp_unsigned(b, "<=", b.add(offsets, b.splat(I64(size))),
                                          b.splat(limit))
        inside = ll.IRBuilder.icmp_unsigned(b, "<", offsets, b.splat(limit))
        good = fl.bits(ll.IRBuilder.select(b, fl.mask, b.and_(fits, inside), b.splat(I1(1))))
        bad_block = llfn.append_basic_block("shared_fault")
        expect(fl, ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "==", good, I32(FULL)),
                                        ok_block, bad_block))
        b.position_at_end(bad_block)
        lane = fl.cttz(b.not_(good))
        fault(fl, lane, ll.IRBuilder.extract_element(b, host, lane), size, write)
        b.position_at_end(ok_block)
        return
    checked = loop_checked(fl)
    if checked is not None:     # (tested at the loop's entry: nothing more where it held)
        own = llfn.append_basic_block("access_own_check")
        expect(fl, ll.IRBuilder.cbranch(b, checked, ok_block, own))
        b.position_at_end(own)
    # the range the active lanes touch, as one access, against the site's cached allocation
    if span is not None:
        lo, hi = span
    else:
        lo = fl.reduce("umin", ll.IRBuilder.select(b, fl.mask, host, b.splat(I64(-1))))
        hi = b.add(fl.reduce("umax", ll.IRBuilder.select(b, fl.mask, host, b.splat(I64(0)))),
                   I64(size))
    site = fl.plan.check_sites
    fl.plan.check_sites += 1
    cache = fl.target.ctx_field(fl, "site_cache", typ=PTR)
    slot = b.gep(cache, [I64(16 * site)], source_etype=I8)
    c_lo = b.load(slot, typ=I64)
    c_hi = b.load(b.gep(slot, [I64(8)], source_etype=I8), typ=I64)
    hit = b.and_(ll.IRBuilder.icmp_unsigned(b, ">=", lo, c_lo),
                 b.and_(ll.IRBuilder.icmp_unsigned(b, "<=", hi, c_hi),
                        ll.IRBuilder.icmp_unsigned(b, ">=", hi, lo)))
    search = llfn.append_basic_block("access_search")
    expect(fl, ll.IRBuilder.cbranch(b, hit, ok_block, search))
    b.position_at_end(search)
    check = check_function(fl.llfn.module)
    ctx = llfn.args[0]
    found = ll.IRBuilder.call(b, check, [ctx, lo, b.sub(hi, lo), slot])
    lanes = llfn.append_basic_block("access_lanes")
    expect(fl, ll.IRBuilder.cbranch(b, found, ok_block, lanes))
    # the range spans more than one allocation: each lane on its own
    b.position_at_end(lanes)
    if callable(host):
        host = host()
    head, body, test, nxt, bad = (llfn.append_basic_block(n) for n in (
        "lane_head", "lane_body", "lane_test", "lane_next", "lane_fault"))
    b.branch(head)
    b.position_at_end(head)
    i = ll.IRBuilder.phi(b, I32)
    i.add_incoming(I32(0), lanes)
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "<", i, I32(W)), body, ok_block)
    b.position_at_end(body)
    active = ll.IRBuilder.extract_element(b, fl.mask, i)
    ll.IRBuilder.cbranch(b, active, test, nxt)
    b.position_at_end(test)
    address = ll.IRBuilder.extract_element(b, host, i)
    lane_ok = ll.IRBuilder.call(b, check, [ctx, address, I64(size), slot])
    ll.IRBuilder.cbranch(b, lane_ok, nxt, bad)
    b.position_at_end(nxt)
    i.add_incoming(b.add(i, I32(1)), nxt)
    b.branch(head)
    b.position_at_end(bad)
    fault(fl, i, address, size, write)
    b.position_at_end(ok_block)


def check_shared32(fl: GangLowering, offsets, size: int, write: bool):
    """check_access for 32-bit offsets into the shared window, computed in 32 bits."""
    b = fl.b
    if prechecked(fl):
        return
    llfn = fl.llfn
    limit = smem_limit(fl, 32)
    room = b.sub(limit, I32(size))
    fits = b.and_(ll.IRBuilder.icmp_unsigned(b, "<=", offsets, b.splat(room)),
                  b.splat(ll.IRBuilder.icmp_unsigned(b, ">=", limit, I32(size))))
    good = fl.bits(ll.IRBuilder.select(b, fl.mask, fits, b.splat(I1(1))))
    window = ll.IRBuilder.ptrtoint(b, fl.target.space_base(fl, "shared"), I64)
    ok_block, bad_block = llfn.append_basic_block("shared_ok"), llfn.append_basic_block(
        "shared_fault")
    expect(fl, ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "==", good, I32(FULL)),
                                    ok_block, bad_block))
    b.position_at_end(bad_block)
    lane = fl.cttz(b.not_(good))
    fault(fl, lane, b.add(window, b.zext(ll.IRBuilder.extract_element(b, offsets, lane), I64)),
           size, write)
    b.position_at_end(ok_block)


def check_place(fl: GangLowering, place: Place, size: int, write: bool, kind, low, high):
    """Check the mask's lanes' accesses, which lie in [low, high) (shared: offsets into the
    window): shared memory by one range test, with the exact per-lane test when that fails
    or the lanes are scattered; the rest by check_access (the per-site cache, then the
    allocation table)."""
    b = fl.b
    et = place.addrs.type.element
    if place.shared and prechecked(fl):
        return
    if not place.shared:
        check_access(fl, lambda: cold_addrs(fl, place, place.offset), None, size, write,
                     span=(low, high))
        return
    limit = smem_limit(fl, et.width)
    inside = b.and_(ll.IRBuilder.icmp_unsigned(b, "<=", high, limit),
                    ll.IRBuilder.icmp_unsigned(b, "<=", low, high))
    inside = b.and_(inside, ll.IRBuilder.icmp_unsigned(b, "!=", kind, I32(SCATTERED)))
    exact, ok = fl.llfn.append_basic_block("shared_exact"), fl.llfn.append_basic_block(
        "shared_inside")
    branch = ll.IRBuilder.cbranch(b, inside, ok, exact)
    if isinstance(kind, ll.Constant):   # (lanes scattered at run time take `exact` often)
        expect(fl, branch)
    b.position_at_end(exact)
    addrs = cold_addrs(fl, place, place.offset)
    if et.width == 32:
        check_shared32(fl, addrs, size, write)
    else:
        window = ll.IRBuilder.ptrtoint(b, fl.target.space_base(fl, "shared"), I64)
        check_access(fl, b.add(addrs, b.splat(window)), addrs, size, write)
    b.branch(ok)
    b.position_at_end(ok)


def group_check(fl: GangLowering, place: Place, size: int, low, high, known: bool = False,
                condition=None):
    """i1: whether every access of the current instruction's group (access_groups) by the
    mask's lanes lies inside memory the kernel may touch, checked once where the group's
    first access classifies its lanes (so it holds for the rest of the segment); None for
    an access in no group. A false check makes each access check itself (the exact fault,
    in program order). Global accesses also prefetch here, for the whole group. `known`:
    the lanes lie as _classify found when compiling, so [low, high) holds every lane's
    access (shared memory is then one scalar test). `condition`: the fast path's own, part
    of a global group's check where it is made here (inside_one_allocation's `first`)."""
    group = fl.group_of.get(id(fl.inst))
    if group is None or place.shared and prechecked(fl):
        return None
    memo = (group, id(fl.mask))
    if memo in fl.group_ok:
        return fl.group_ok[memo], None
    b = fl.b
    first, last = fl.group_span[group]
    et = place.addrs.type.element
    if place.shared and known:      # the group's span, from the lowest lane to the highest
        limit = smem_limit(fl, et.width)
        start, end = b.add(low, ll.Constant(et, first)), b.add(high, ll.Constant(et, last))
        ok = b.and_(ll.IRBuilder.icmp_unsigned(b, "<=", start, end),
                    ll.IRBuilder.icmp_unsigned(b, "<=", end, limit))
        fl.group_ok[memo] = ok
        return ok, None
    if place.shared:       # lane by lane in one vector test: exact however they lie
        limit = smem_limit(fl, et.width)
        start = b.add(place.addrs, b.splat(ll.Constant(et, first))) if first else place.addrs
        end = b.add(place.addrs, b.splat(ll.Constant(et, last + size)))
        good = b.and_(ll.IRBuilder.icmp_unsigned(b, "<=", start, end),
                      ll.IRBuilder.icmp_unsigned(b, "<=", end, b.splat(limit)))
        bad = fl.bits(b.and_(fl.mask, b.not_(good)))
        ok = ll.IRBuilder.icmp_unsigned(b, "==", bad, I32(0))
        fl.group_ok[memo] = ok
        return ok, None
    low = b.add(low, ll.Constant(et, first))
    high = b.add(high, ll.Constant(et, last))
    idle = ll.IRBuilder.icmp_unsigned(b, "==", fl.bits(fl.mask), I32(0))
    # (the group's first access: where the loop's test covers it, nothing more)
    ok = inside_one_allocation(fl, low, high, skip=idle, checked=loop_checked(fl),
                               first=condition)
    fl.group_ok[memo] = ok
    return ok, low


_AHEAD = 3      # how many strides ahead prefetch fetches
_NEAR = 1 << 26


def prefetch(fl: GangLowering, lows: list, span: int, write: bool = False) -> None:
    """A software stride prefetcher for one access site: the warp's accesses there move by
    a stride (a grid-stride loop moves by gridDim * blockDim elements, too far for the
    hardware's prefetchers; and from one warp or block to the next); fetch the lines of the
    `span` bytes (up to 512: a warp's .v4 access) from each of `lows` (the first the
    site's address: the warp's lowest, or each half warp's where they lie apart) _AHEAD
    strides on. The stride
    is the last move at this site: by this warp of this block when it has been here before
    (a loop, across barriers too), else by the warps this worker ran before in this launch
    (the site's last address is also kept in a slot of the worker's site cache, zero at
    each launch). A wrong guess
    costs a prefetch, never a fault. Only where all 32 lanes run (the segment's full-mask
    copy; under a guard too: Triton predicates every access by its bounds, and its vector
    add ran 25% faster per CPU-second with these prefetches): partial masks are a grid's
    edges, halos and tails, whose lines full warps nearby fetch anyway (a stencil's halo
    loads prefetching cost it 5% here). `write`: for a store (prefetch_line)."""
    if not isinstance(fl.unguarded_mask, ll.Constant):
        return
    b = fl.b
    distance, done = strides_ahead(fl, lows[0])
    for low in lows:
        ahead = b.add(low, distance)
        for line in range(0, min(span, 512), 64):
            prefetch_line(fl, b.add(ahead, I64(line)), write)
    b.branch(done)
    b.position_at_end(done)


def prefetch_line(fl: GangLowering, address, write: bool = False) -> None:
    """Fetch the cache line at `address` (i64) into every level: for reading, or with
    `write` for writing (x86's prefetchw, where the CPU has it: the line comes owned, so
    the store does not ask the other cores for it again after a read prefetch; after a
    copy on the worker pool a grid's output lines sit in other cores' caches)."""
    fn = declare(fl.llfn.module, "llvm.prefetch.p0", ll.VoidType(), [PTR, I32, I32, I32])
    ll.IRBuilder.call(fl.b, fn, [ll.IRBuilder.inttoptr(fl.b, address, PTR),
                                 I32(1 if write else 0), I32(3), I32(1)])


def strides_ahead(fl: GangLowering, low) -> tuple:
    """(distance, done) for prefetch: _AHEAD times the site's last stride (i64), computed
    in a new block (where the builder is left) that runs only after a first access here and
    for strides under 64 MiB; `done`: the block to branch to after prefetching."""
    b = fl.b
    # this warp's last address here, in its frame: kept when the warp returns to the block
    # loop at a barrier (a softmax's next row at this site is this warp's next access)
    offset = fl.frame_bytes
    fl.frame_bytes += 8
    with b.goto_block(fl.entry):
        b.position_at_start(fl.entry)
        mine = fl.frame_field(offset, I64)
    with b.goto_block(fl.fresh_block):
        b.position_at_start(fl.fresh_block)
        ll.IRBuilder.store(b, I64(0), mine)
    site = fl.plan.check_sites
    fl.plan.check_sites += 1
    shared = b.gep(fl.target.ctx_field(fl, "site_cache", typ=PTR), [I64(16 * site)],
                   source_etype=I8)
    own = b.load(mine)
    before = ll.IRBuilder.select(b, ll.IRBuilder.icmp_unsigned(b, "!=", own, I64(0)), own,
                                 b.load(shared, typ=I64))
    step = b.sub(low, before)
    b.store(low, mine)
    b.store(low, shared)
    # only after a first access here in this launch, and for strides under 64 MiB
    near = ll.IRBuilder.icmp_unsigned(b, "<", b.add(step, I64(_NEAR)), I64(2 * _NEAR))
    fetch, done = fl.llfn.append_basic_block("prefetch"), fl.llfn.append_basic_block(
        "prefetched")
    ll.IRBuilder.cbranch(b, b.and_(near, ll.IRBuilder.icmp_unsigned(b, "!=", before, I64(0))),
                         fetch, done)
    b.position_at_end(fetch)
    return b.mul(step, I64(_AHEAD)), done


# How the mask's lanes' addresses lie (_classify): consecutive; consecutive within each half
# warp; one address per half warp; anything else.
CONSECUTIVE, HALVES, HALF_UNIFORM, SCATTERED = range(4)


class Place:
    """Where the mask's lanes access memory: `addrs` (a vector of host addresses, or of
    offsets into the shared window when `shared`) plus `offset` bytes; `key` names the
    base (register or variable) it was read from, for _classify's memo; `lanes` the
    constant offsets between the lanes' addrs where known when compiling
    (passes/lane_offsets.py), else None; `stride` the lane form of addrs where the lanes
    lie one stride apart (strided.py), else None."""

    __slots__ = ("addrs", "shared", "offset", "key", "lanes", "stride")

    def __init__(self, addrs, shared: bool, offset: int, key, lanes=None, stride=None):
        self.addrs, self.shared, self.offset, self.key = addrs, shared, offset, key
        self.lanes, self.stride = lanes, stride

    def moved(self, step: int) -> Place:
        return Place(self.addrs, self.shared, self.offset + step, self.key, self.lanes,
                     self.stride)


def inside_one_allocation(fl: GangLowering, low, high, skip=None, checked=None,
                          first=None):
    """i1: whether [low, high) lies in one allocation (the site's cache, else the table's
    search); an empty mask's range counts as inside, and so does any range where `skip`
    or `checked` (loop_checked's test, made first: likely, where it is there). `first`
    (i1): a condition of the caller's fast path (widened.py's no-wrap test), tested
    before anything, where false the answer (likely true): a branch of its own, so that
    LLVM branches on its compares where an `and` with the answer kept it in a register
    across the check and tested it again after."""
    b = fl.b
    slot = b.gep(fl.target.ctx_field(fl, "site_cache", typ=PTR), [I64(16 * fl.plan.check_sites)],
                 source_etype=I8)
    fl.plan.check_sites += 1
    search, done = fl.llfn.append_basic_block("range_search"), fl.llfn.append_basic_block(
        "range_checked")
    refused = None
    if first is not None:
        refused, test = b.block, fl.llfn.append_basic_block("range_first")
        expect(fl, ll.IRBuilder.cbranch(b, first, test, done))
        b.position_at_end(test)
    skipped = None
    if checked is not None:     # (tested first: nothing loaded where it holds)
        skipped, test = b.block, fl.llfn.append_basic_block("range_test")
        expect(fl, ll.IRBuilder.cbranch(b, checked, done, test))
        b.position_at_end(test)
    hit = b.and_(ll.IRBuilder.icmp_unsigned(b, "<=", low, high), b.and_(
        ll.IRBuilder.icmp_unsigned(b, ">=", low, b.load(slot, typ=I64)),
        ll.IRBuilder.icmp_unsigned(b, "<=", high, b.load(
            b.gep(slot, [I64(8)], source_etype=I8), typ=I64))))
    before = b.block
    expect(fl, ll.IRBuilder.cbranch(b, hit if skip is None else b.or_(hit, skip), done,
                                    search))
    b.position_at_end(search)
    found = ll.IRBuilder.call(b, check_function(fl.llfn.module),
                              [fl.llfn.args[0], low, b.sub(high, low), slot])
    searched = b.block
    b.branch(done)
    b.position_at_end(done)
    ok = ll.IRBuilder.phi(b, I1)
    ok.add_incoming(I1(1), before)
    ok.add_incoming(found, searched)
    if skipped is not None:
        ok.add_incoming(I1(1), skipped)
    if refused is not None:
        ok.add_incoming(I1(0), refused)
    return ok
