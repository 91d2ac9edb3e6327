"""Warp gangs' atomics (atom, red): the mask's lanes in lane order, each a real atomic
instruction on global memory (a plain read-modify-write on shared memory, which only the
block's host thread touches), checked like any access.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import I32, I64, PTR, value_type
from ptxport.codegen.ops.data import instruction_type, state_space
from ptxport.codegen.targets.cpu.gang.checks import check_access, check_shared32, lane_addresses
from ptxport.codegen.targets.cpu.gang.lane_loop import lane_loop
from ptxport.codegen.targets.cpu.gang.lanes import GangUnsupported, W, is_vec, vec
from ptxport.codegen.targets.cpu.gang.state import GangLowering
from ptxport.ir import nodes as ir
from ptxport.ir.types import Type


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
