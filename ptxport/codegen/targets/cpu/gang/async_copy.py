"""Warp gangs' cp.async (PTX ISA 9.7.9.25): a copy of 4, 8 or 16 bytes per lane from global to
shared memory, done at once as the shared lowering does it (ops/memory.py: a copy that
completes early is one the program may see), so commit_group, wait_group and wait_all have
nothing left to wait for. Triton's pipelined loads (sm_80) are these, with a src-size of 0
(masked-off lanes, whose source is only an address: never read nor checked) or the whole
size: then each lane's bytes are one load and store, and where every lane copies (or every
lane zero-fills), runs of lanes whose sources and destinations follow each other are one
copy a run (a row of Triton's f32 tile: 8 lanes' 16 bytes). Lanes with a src-size in
between (a partial copy, zero-filled) are copied lane by lane.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import I1, I8, I32, I64, PTR
from ptxport.codegen.targets.cpu.gang.checks import (
    check_access,
    check_shared32,
    fault,
    prefetch_line,
    smem_limit,
    strides_ahead,
)
from ptxport.codegen.targets.cpu.gang.lane_loop import lane_loop
from ptxport.codegen.targets.cpu.gang.lanes import FULL, GangUnsupported, W, declare
from ptxport.codegen.targets.cpu.gang.places import place_of
from ptxport.codegen.targets.cpu.gang.state import GangLowering
from ptxport.codegen.targets.cpu.target import check_function
from ptxport.ir import nodes as ir
from ptxport.ir.types import TYPES

_WAITS = (("async", "commit_group"), ("async", "wait_group"), ("async", "wait_all"))


def lower_cp(fl: GangLowering, inst: ir.Instruction) -> None:
    kind = inst.spec.get("kind") or ()
    if kind in _WAITS or (kind == ("async", "mbarrier", "arrive")
                          and not inst.spec.get("noinc")):
        return      # (the copies are done: the mbarrier's count stays as it was)
    if kind != ("async",):
        raise GangUnsupported(f"{inst.spec.text}: bulk and tensor copies")
    b = fl.b
    size = inst.operands[2].value
    count = _source_bytes(fl, inst, size)
    src = place_of(fl, inst.operands[1], "global")
    dst = place_of(fl, inst.operands[0], "shared")
    whole = ll.IRBuilder.icmp_unsigned(b, "==", count, b.splat(I32(size)))
    nothing = ll.IRBuilder.icmp_unsigned(b, "==", count, b.splat(I32(0)))
    partial = fl.bits(b.and_(fl.mask, b.not_(b.or_(whole, nothing))))
    vectors, lanes, done = (fl.llfn.append_basic_block(n) for n in (
        "cp_async_vectors", "cp_async_lanes", "cp_async_done"))
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "==", partial, I32(0)), vectors,
                         lanes)
    # what the two branches learn of the addresses (memory.py's memos) holds in neither's
    # successors: forget it at the join
    memos = dict(fl.patterns), dict(fl.group_ok)
    b.position_at_end(vectors)
    _copy_vectors(fl, src, dst, whole, size)
    b.branch(done)
    fl.patterns, fl.group_ok = dict(memos[0]), dict(memos[1])
    b.position_at_end(lanes)
    _copy_lanes(fl, src, dst, count, size)
    b.branch(done)
    fl.patterns, fl.group_ok = memos
    b.position_at_end(done)


def _source_bytes(fl: GangLowering, inst: ir.Instruction, size: int):
    """Each lane's src-size, at most `size` (ignore-src, a predicate: 0 where it holds)."""
    b = fl.b
    extra = list(inst.operands[3:])
    if inst.spec.get("l2hint") and extra:
        extra.pop()                         # the cache policy: a hint
    if not extra:
        return b.splat(I32(size))
    operand = extra[0]
    if isinstance(operand, ir.NotValue) or getattr(operand, "type", None) is TYPES["pred"]:
        return b.splat(b.select(fl.read(operand, "pred"), I32(0), I32(size)))
    given = fl.read_lanes(operand, "u32")
    return ll.IRBuilder.select(b, ll.IRBuilder.icmp_unsigned(b, "<", given, b.splat(I32(size))),
                               given, b.splat(I32(size)))


def _copy_vectors(fl: GangLowering, src, dst, whole, size: int) -> None:
    """Every active lane copies all `size` bytes or none (zeros then): the source checked
    over the range the copying lanes read, the destination over the active lanes' offsets,
    then lane after lane one `size`-byte load (masked off, so zeros, where the lane does
    not copy: nothing is read there) and one store. The lanes' addresses lie as the
    program makes them (Triton swizzles its tiles in shared memory 16 bytes at a time),
    so no gather or scatter of `size / 4` words a lane is made of them."""
    b = fl.b
    outer = fl.mask
    sources = b.add(src.addrs, b.splat(I64(src.offset))) if src.offset else src.addrs
    copying = b.and_(outer, whole)
    checking, checked = (fl.llfn.append_basic_block(n) for n in (
        "cp_async_check", "cp_async_checked"))
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "==", fl.bits(copying), I32(0)),
                         checked, checking)
    b.position_at_end(checking)
    fl.mask = copying
    check_access(fl, sources, None, size, False)
    fl.mask = outer
    b.branch(checked)
    b.position_at_end(checked)
    targets = _shared_pointers(fl, dst, size)
    chunk = ll.VectorType(I8, size)
    load = declare(fl.llfn.module, f"llvm.masked.load.v{size}i8.p0", chunk,
                   [PTR, I32, ll.VectorType(I1, size), chunk])
    store = declare(fl.llfn.module, f"llvm.masked.store.v{size}i8.p0", ll.VoidType(),
                    [chunk, PTR, I32, ll.VectorType(I1, size)])
    reading, writing = fl.bits(copying), fl.bits(outer)
    every, some, done = (fl.llfn.append_basic_block(n) for n in (
        "cp_async_every_lane", "cp_async_some_lanes", "cp_async_copied"))
    full = ll.IRBuilder.icmp_unsigned(b, "==", b.and_(reading, writing), I32(FULL))
    zeros = fl.llfn.append_basic_block("cp_async_zeros")
    switch = ll.IRBuilder.switch(b, b.or_(b.zext(full, I32), b.shl(b.zext(
        b.and_(ll.IRBuilder.icmp_unsigned(b, "==", reading, I32(0)),
               ll.IRBuilder.icmp_unsigned(b, "==", writing, I32(FULL))), I32), I32(1))), some)
    switch.add_case(I32(1), every)
    switch.add_case(I32(2), zeros)
    b.position_at_end(every)      # (Triton's tiles inside the matrices: the common case)
    _copy_every_lane(fl, sources, dst, targets, size, done)
    # every lane zero-fills (Triton's copies of the tiles past the last, in the pipeline's
    # last steps)
    b.position_at_end(zeros)
    _copy_every_lane(fl, None, dst, targets, size, done)
    b.position_at_end(some)
    for lane in range(W):
        reads = _lane_mask(b, reading, lane, size)
        writes = _lane_mask(b, writing, lane, size)
        source = ll.IRBuilder.inttoptr(b, ll.IRBuilder.extract_element(b, sources, I32(lane)),
                                       PTR)
        value = ll.IRBuilder.call(b, load, [source, I32(1), reads, ll.Constant(chunk, None)])
        ll.IRBuilder.call(b, store, [value, targets[lane], I32(1), writes])
    b.branch(done)
    b.position_at_end(done)


# Runs of lanes tried, longest first: a run of lanes whose sources lie one after another,
# and whose destinations too, is one copy (Triton's f32 tiles of 32 columns are rows of 8
# lanes' 16 bytes; of 64 columns, 16 lanes')
_RUNS = (W, 16, 8, 4)


def _copy_every_lane(fl: GangLowering, sources, dst, targets, size: int, done) -> None:
    """Every lane copies its `size` bytes (sources None: writes zeros): in runs of lanes
    whose sources and destinations are consecutive (the longest of _RUNS that holds at run
    time: one copy of run * size bytes a run), else lane after lane; each with the tile a
    few steps on fetched meanwhile (each run's lines, or each lane's: Triton's rows of a
    tile lie a matrix row apart, as many streams as the tile has rows)."""
    b = fl.b
    et = dst.addrs.type.element
    offsets = b.add(dst.addrs, b.splat(ll.Constant(et, dst.offset))) if dst.offset \
        else dst.addrs
    follows = _follows(fl, offsets, size)
    if sources is not None:
        follows = b.and_(follows, _follows(fl, sources, size))
    lanes_block = fl.llfn.append_basic_block("cp_async_each_lane")
    run_length = I32(1)
    for run in reversed(_RUNS):
        starts = sum(1 << lane for lane in range(0, W, run))
        whole = ll.IRBuilder.icmp_unsigned(b, "==", b.or_(follows, I32(starts)), I32(FULL))
        run_length = ll.IRBuilder.select(b, whole, I32(run), run_length)
    switch = ll.IRBuilder.switch(b, run_length, lanes_block)
    for run in _RUNS:
        block = fl.llfn.append_basic_block(f"cp_async_runs_{run}")
        switch.add_case(I32(run), block)
        b.position_at_end(block)
        _copy_runs(fl, sources, targets, size, run, done)
    b.position_at_end(lanes_block)
    _copy_runs(fl, sources, targets, size, 1, done)


def _follows(fl: GangLowering, addresses, size: int):
    """i32: bit l set where lane l's address is `size` bytes past lane l - 1's."""
    b = fl.b
    before = ll.IRBuilder.shuffle_vector(b, addresses, ll.Constant(addresses.type, None),
                                         ll.Constant(ll.VectorType(I32, W),
                                                     [0] + list(range(W - 1))))
    step = b.splat(ll.Constant(addresses.type.element, size))
    return fl.bits(ll.IRBuilder.icmp_unsigned(b, "==", b.sub(addresses, before), step))


def _copy_runs(fl: GangLowering, sources, targets, size: int, run: int, done) -> None:
    """Copy each run of `run` lanes' `size` bytes at once from its first lane's source
    (None: zeros) to its first lane's destination, then prefetch the runs' lines a few
    strides on."""
    b = fl.b
    chunk = ll.VectorType(I8, size * run)
    if sources is None:
        for lane in range(0, W, run):
            b.store(ll.Constant(chunk, None), targets[lane], align=1)
        b.branch(done)
        return
    addresses = [ll.IRBuilder.extract_element(b, sources, I32(lane))
                 for lane in range(0, W, run)]
    for address, lane in zip(addresses, range(0, W, run), strict=True):
        source = ll.IRBuilder.inttoptr(b, address, PTR)
        b.store(b.load(source, typ=chunk, align=1), targets[lane], align=1)
    distance, prefetched = strides_ahead(fl, addresses[0])
    for address in addresses:
        ahead = b.add(address, distance)
        for line in range(0, max(64, size * run), 64):
            prefetch_line(fl, b.add(ahead, I64(line)) if line else ahead)
    b.branch(prefetched)
    b.position_at_end(prefetched)
    b.branch(done)


def _lane_mask(b, bits, lane: int, size: int):
    """<size x i1>, every element the lane's bit of the mask `bits` (an i32): made in a
    general register (one mask-register move), not from the lanes' i1 vector."""
    bit = ll.IRBuilder.trunc(b, ll.IRBuilder.lshr(b, bits, I32(lane)), I1)
    whole = ll.IntType(size)
    return ll.IRBuilder.bitcast(b, ll.IRBuilder.select(b, bit, whole(-1), whole(0)),
                                ll.VectorType(I1, size))


def _shared_pointers(fl: GangLowering, dst, size: int) -> list:
    """The active lanes' destinations in the shared window, checked (`size` bytes each), as
    one pointer a lane."""
    b = fl.b
    et = dst.addrs.type.element
    offsets = b.add(dst.addrs, b.splat(ll.Constant(et, dst.offset))) if dst.offset \
        else dst.addrs
    window = fl.target.space_base(fl, "shared")
    if et.width == 32:
        check_shared32(fl, offsets, size, True)
    else:
        check_access(fl, b.add(offsets, b.splat(ll.IRBuilder.ptrtoint(b, window, I64))),
                     offsets, size, True)
    return [ll.IRBuilder.gep(b, window, [b.zext(ll.IRBuilder.extract_element(
        b, offsets, I32(lane)), I64) if et.width == 32 else ll.IRBuilder.extract_element(
        b, offsets, I32(lane))], source_etype=I8) for lane in range(W)]


def _copy_lanes(fl: GangLowering, src, dst, count, size: int) -> None:
    """Lane after lane: the destination's `size` bytes zeroed, then `count` bytes copied
    (the source checked for those bytes only, the destination for all)."""
    b = fl.b
    llfn = fl.llfn
    window = fl.target.space_base(fl, "shared")
    limit = smem_limit(fl, 64)
    et = dst.addrs.type.element
    sources = b.add(src.addrs, b.splat(I64(src.offset))) if src.offset else src.addrs
    targets = b.add(dst.addrs, b.splat(ll.Constant(et, dst.offset))) if dst.offset \
        else dst.addrs
    slot = b.gep(fl.target.ctx_field(fl, "site_cache", typ=PTR), [I64(16 * fl.plan.check_sites)],
                 source_etype=I8)
    fl.plan.check_sites += 1

    def copy(lane, next_lane):
        n = b.zext(ll.IRBuilder.extract_element(b, count, lane), I64)
        source = ll.IRBuilder.extract_element(b, sources, lane)
        target = ll.IRBuilder.extract_element(b, targets, lane)
        target = target if et.width == 64 else b.zext(target, I64)
        pointer = ll.IRBuilder.gep(b, window, [target], source_etype=I8)
        inside = b.icmp_unsigned("<=", b.add(target, I64(size)), limit)
        _or_fault(fl, lane, b.add(ll.IRBuilder.ptrtoint(b, window, I64), target), inside,
                  size, True)
        found = ll.IRBuilder.call(b, check_function(llfn.module),
                                  [llfn.args[0], source, n, slot])
        _or_fault(fl, lane, source, b.or_(found, b.icmp_unsigned("==", n, I64(0))), size,
                  False)
        b.store(ll.Constant(ll.VectorType(I8, size), None), pointer, align=1)
        # byte after byte while below the count, unrolled: a loop with a variable count
        # becomes a call of the C library's memcpy, which compiled CPU kernels do not link
        reading = ll.IRBuilder.inttoptr(b, source, PTR)
        for j in range(size):
            more = llfn.append_basic_block("cp_lane_byte")
            b.cbranch(b.icmp_unsigned("<", I64(j), n), more, next_lane)
            b.position_at_end(more)
            b.store(b.load(b.gep(reading, [I64(j)], source_etype=I8), typ=I8),
                    b.gep(pointer, [I64(j)], source_etype=I8))
    lane_loop(fl, fl.bits(fl.mask), copy, "cp_lane")


def _or_fault(fl: GangLowering, lane, address, ok, size: int, write: bool) -> None:
    """Go on where `ok`; else the kernel stops with a fault of `lane` at `address`."""
    b = fl.b
    good, bad = fl.llfn.append_basic_block("cp_lane_ok"), fl.llfn.append_basic_block(
        "cp_lane_fault")
    ll.IRBuilder.cbranch(b, ok, good, bad)
    b.position_at_end(bad)
    fault(fl, lane, address, size, write)
    b.position_at_end(good)
