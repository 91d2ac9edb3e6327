"""Warp gangs' atomics (atom, red): the mask's lanes in lane order, each a real atomic
instruction on global memory (a plain read-modify-write on shared memory, which only the
block's host thread touches), checked like any access. An integer add of a value alike in
every lane, where all the mask's lanes hit one address (a counter, a histogram's
most common bin), is one atomic add of n times the value: the lanes' atomics, one right
after the other in lane order, each lane's old value the first's plus its rank times the
value (as CUDA programmers aggregate a warp's atomics, and nvcc does for them).
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import I32, I64, PTR, value_type
from ptxport.codegen.ops.data import instruction_type, state_space
from ptxport.codegen.targets.cpu.gang.checks import check_access, check_shared32, lane_addresses
from ptxport.codegen.targets.cpu.gang.lane_loop import lane_loop
from ptxport.codegen.targets.cpu.gang.lanes import FULL, GangUnsupported, W, declare, is_vec, vec
from ptxport.codegen.targets.cpu.gang.scalar_lanes import narrow_scaled, narrowed
from ptxport.codegen.targets.cpu.gang.state import GangLowering
from ptxport.ir import nodes as ir
from ptxport.ir.types import Type
from ptxport.passes.shared_bounds import inside


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
    proven = inside(fl.shared_bounds.get(fl.inst), t.size)
    if host is not None and offsets is not None:
        # 64-bit shared addresses (NVRTC 13.0 widens `bins[data[i]]`'s index into one):
        # checked in 64 bits unless proven, then every lane of the mask lies below the
        # block's shared size and its offset is exact in 32 bits, as 13.5's PTX has it
        if not proven:
            check_access(fl, host, offsets, t.size, True)
        host, offsets, proven = None, narrowed(b, offsets, fl.written), True
    results = fl.shuffle_array(value_type(t)) if dest is not None else None
    if host is None:        # 32-bit shared offsets: checked and kept in 32 bits
        # (none where passes/shared_bounds.py proves every thread's address inside its
        # variable: a histogram's `bins[data[i]]` of bytes)
        if not proven:
            check_shared32(fl, offsets, t.size, True)
        window = ll.IRBuilder.ptrtoint(b, fl.target.space_base(fl, "shared"), I64)
        _shared_lanes(fl, inst, offsets, window, operands, results)
    else:
        check_access(fl, host, offsets, t.size, True)
        _visit(fl, inst, host, _AtomLanes(fl, host, None, operands, value_type(t)), results)
    b.branch(done)
    b.position_at_end(done)
    if dest is not None:
        fl.write(dest, b.load(results, typ=vec(value_type(t))), t)


def _shared_lanes(fl: GangLowering, inst: ir.Instruction, offsets, window, operands,
                  results) -> None:
    """The lanes of a shared atomic at 32-bit `offsets` into the shared window. Offsets that
    are a scalar u plus narrow lanes n shifted (scalar_lanes.narrow_scaled: `bins[data[i]]`
    of bytes) keep n alone (two 16-byte stores instead of eight) and, where u is so low that
    no lane's 32-bit sum can wrap (one scalar test), add u and n << shift to the window in
    64 bits, which x86 folds into the read-modify-write's address as C's
    `local[data[i]]++`; else (u near 2^32) each lane's 32-bit offset as it is."""
    b, element = fl.b, value_type(instruction_type(inst))
    scaled = narrow_scaled(offsets, fl.written)
    if scaled is None:
        _visit(fl, inst, offsets, _AtomLanes(fl, offsets, window, operands, element), results)
        return
    top = ((1 << scaled.narrow.type.element.width) - 1) << scaled.shift
    fast, wraps, joined = (fl.llfn.append_basic_block(f"atom_{n}")
                           for n in ("narrow", "wraps", "narrow_done"))
    ll.IRBuilder.cbranch(b, ll.IRBuilder.icmp_unsigned(b, "<=", scaled.base,
                                                       I32(0xFFFFFFFF - top)), fast, wraps)
    b.position_at_end(fast)     # (lanes alike in n are alike in u + (n << shift) here)
    _visit(fl, inst, scaled.narrow,
           _AtomLanes(fl, offsets, window, operands, element, scaled), results)
    b.branch(joined)
    b.position_at_end(wraps)
    _visit(fl, inst, offsets, _AtomLanes(fl, offsets, window, operands, element,
                                         unrolled=False), results)
    b.branch(joined)
    b.position_at_end(joined)


def _visit(fl: GangLowering, inst: ir.Instruction, addresses, lanes: _AtomLanes,
           results) -> None:
    """Each of the mask's lanes' atomics in lane order (an integer add of a value alike in
    every lane: one add where all the lanes hit one address), old values to `results`."""
    b, t, op = fl.b, instruction_type(inst), inst.spec.get("op")
    space = state_space(inst)

    def each(i) -> None:
        old = _lane_atomic(b, op, t, space, lanes.pointer(i), *lanes.operands(i))
        if results is not None:
            b.store(old, b.gep(results, [b.zext(i, I64)], source_etype=value_type(t)))

    if op == "add" and t.kind != "float" and not isinstance(lanes.arrays[1], tuple):
        _one_or_each(fl, addresses, lanes, each,
                     lambda pointer, n: _lane_atomic(b, op, t, space, pointer, n, None),
                     results)
    else:
        lanes.visit(each)


def _one_or_each(fl: GangLowering, addresses, lanes: _AtomLanes, each, add, results) -> None:
    """lanes.visit(each), or where every lane of the mask has the lowest one's address, one
    add(pointer, n * x) of the value x alike in all lanes, lane i's old value the old one
    plus x times the number of the mask's lanes below i."""
    b = fl.b
    bits = fl.bits(fl.mask)
    first = b.and_(fl.cttz(bits), I32(W - 1))
    last = b.sub(I32(W - 1), b.and_(fl.ctlz(bits), I32(W - 1)))
    one, several, compare, joined = (fl.llfn.append_basic_block(f"atom_{n}")
                                     for n in ("one", "several", "compare", "joined"))
    # the lowest and highest lanes first (from memory: two loads), then every lane
    ends = ll.IRBuilder.icmp_unsigned(b, "==", lanes.address(first), lanes.address(last))
    ll.IRBuilder.cbranch(b, ends, compare, several)
    b.position_at_end(compare)
    alike = ll.IRBuilder.icmp_unsigned(
        b, "==", addresses, b.splat(ll.IRBuilder.extract_element(b, addresses, first)))
    alike = ll.IRBuilder.icmp_unsigned(b, "==", fl.bits(b.or_(alike, b.not_(fl.mask))),
                                       I32(FULL))
    ll.IRBuilder.cbranch(b, alike, one, several)
    b.position_at_end(one)
    x = lanes.operands(first)[0]
    count = fl.b.zext(_popcount(fl, bits), x.type) if x.type.width > 32 else \
        _popcount(fl, bits)
    old = add(lanes.pointer(first), b.mul(x, count))
    if results is not None:
        below = ll.Constant(vec(I32), [I32((1 << i) - 1) for i in range(W)])
        rank = _popcount(fl, b.and_(b.splat(bits), below))
        if x.type.width > 32:
            rank = b.zext(rank, vec(x.type))
        b.store(b.add(b.splat(old), b.mul(rank, b.splat(x))), results, align=64)
    b.branch(joined)
    b.position_at_end(several)
    lanes.visit(each)
    b.branch(joined)
    b.position_at_end(joined)


def _popcount(fl: GangLowering, v):
    """The number of set bits of an i32, or of each lane of an <W x i32>."""
    name = f"llvm.ctpop.v{W}i32" if is_vec(v) else "llvm.ctpop.i32"
    return ll.IRBuilder.call(fl.b, declare(fl.llfn.module, name, v.type, [v.type]), [v])


class _AtomLanes:
    """lower_atom's walk over the mask's lanes in lane order: the lanes' addresses (and
    operands that differ per lane) go to stack arrays once, and each lane reads its own back.
    Over a constant full mask (a segment's full-mask copy) the walk is 32 straight-line
    read-modify-writes, else a loop over the mask's bits."""

    def __init__(self, fl: GangLowering, addresses, window, operands, element, scaled=None,
                 unrolled: bool = True):
        self.fl, self.window, self.element, self.scaled = fl, window, element, scaled
        self.unrolled = unrolled
        b = fl.b
        self.arrays = []
        for lanes in (addresses if scaled is None else scaled.narrow, *operands):
            if not is_vec(lanes):
                self.arrays.append(lanes)
                continue
            typ = lanes.type.element
            array = fl.entry_alloca(ll.ArrayType(typ, W), "atom_lanes", 64)
            # (read back through a pointer LLVM cannot follow: it would otherwise take each
            # lane out of the vector register, several instructions a lane)
            pointer = _opaque(b, array)
            _store_pieces(b, lanes, pointer, typ)
            self.arrays.append((pointer, typ))

    def visit(self, each) -> None:
        """each(lane) for every lane of the mask, lowest first (an i32 constant over a
        constant full mask, else lane_loop's index)."""
        fl = self.fl
        if self.unrolled and _all_lanes(fl.mask):
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

    def address(self, i):
        """Lane i's address (or offset in the shared window): with `scaled`
        (scalar_lanes.NarrowScaled: the offsets a splat plus shifted 8- or 16-bit lanes, a
        byte's bin) made from the narrow lane, whose array takes a quarter of the stores
        and whose load x86 folds into the add's address as C's `bins[data[i]]++`."""
        lane = self._lane(i, self.arrays[0])
        if self.scaled is None:
            return lane
        b, base = self.fl.b, self.scaled.base
        return b.add(base, b.shl(b.zext(lane, I32), I32(self.scaled.shift)))

    def pointer(self, i):
        b = self.fl.b
        if self.scaled is not None:     # (no lane's 32-bit offset wraps: _shared_lanes)
            base = b.add(self.window, b.zext(self.scaled.base, I64))
            lane = b.zext(self._lane(i, self.arrays[0]), I64)
            return ll.IRBuilder.inttoptr(b, b.add(base, b.shl(lane, I64(self.scaled.shift))),
                                         PTR)
        address = self.address(i)
        if self.window is not None:
            address = b.add(self.window, b.zext(address, I64))
        return ll.IRBuilder.inttoptr(b, address, PTR)

    def operands(self, i):
        x = self._lane(i, self.arrays[1])
        y = self._lane(i, self.arrays[2]) if len(self.arrays) > 2 else None
        return x, y


_PIECE = 16     # bytes: the lanes go to the stack array in stores of this size


def _store_pieces(b: ll.IRBuilder, lanes, pointer, typ) -> None:
    """Store the vector `lanes` at `pointer` in 16-byte pieces, each through a pointer LLVM
    cannot follow (so that it does not join them again). The lanes' loads right after
    read each its part of one such store: a 4-byte load out of a 64-byte store is not
    forwarded from the store on the Xeons, and waits until the store has left the core
    (the whole pass then waits: a C loop that counts through such an array took 13.2 ms
    against 8.4 with 16-byte stores and 8.4 for the plain loop, 16M bytes, one core)."""
    per = max(1, _PIECE * 8 // _bits(typ))
    for first in range(0, W, per):
        piece = ll.IRBuilder.shuffle_vector(
            b, lanes, ll.Constant(lanes.type, None),
            ll.Constant(ll.VectorType(I32, per), list(range(first, first + per))))
        at = pointer if first == 0 else _opaque(b, b.gep(pointer, [I64(first)],
                                                         source_etype=typ))
        b.store(piece, at, align=_PIECE)


def _bits(typ) -> int:
    """The width in bits of a lane's LLVM type (an integer or a float)."""
    if isinstance(typ, ll.IntType):
        return typ.width
    return {ll.HalfType: 16, ll.FloatType: 32, ll.DoubleType: 64}[type(typ)]


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
