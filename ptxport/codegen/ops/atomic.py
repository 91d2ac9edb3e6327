"""Atomic operations (PTX ISA 9.7.13.5 atom, 9.7.13.6 red) on global, shared and generic
addresses, as real atomic instructions of the host (CTAs run on several host threads).

Integer operations are LLVM atomicrmw (inc and dec are its uinc_wrap and udec_wrap, which
are PTX's definitions exactly) and cmpxchg (cas, also of 16 and 128 bits). Floating-point
operations are compare-and-swap loops around the exact PTX arithmetic:
- add.f32 rounds to nearest even; on global memory it flushes subnormal inputs and results
  to zero (the manual's "current implementation", and the H100's), on shared memory it does
  not; a generic address decides at run time. A NaN result is the canonical NaN; add.f64
  keeps a NaN operand's payload (as the H100 does).
- add.noftz.{f16,bf16,f16x2,bf16x2} keeps subnormals; min/max (vector forms) return the
  non-NaN operand, the canonical NaN for two NaNs, and order -0 below +0 (as the H100 does).
.sem maps to LLVM orderings (no .sem: relaxed, i.e. monotonic); .scope changes nothing on
one host; red is atom without the result; vector forms are atomic per element.
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir as ll

from ptxport.codegen.lower import I1, I8, I16, I32, I64, FunctionLowering, lowering
from ptxport.codegen.ops.convert import round_bits
from ptxport.codegen.ops.data import state_space, vector_count
from ptxport.codegen.ops.memory import in_shared
from ptxport.ir import nodes as ir
from ptxport.ir.types import TYPES, Type

ORDERING = {None: "monotonic", "relaxed": "monotonic", "acquire": "acquire",
            "release": "release", "acq_rel": "acq_rel"}
# A failed compare-and-swap only reads: it can acquire, never release.
FAILURE_ORDERING = {"monotonic": "monotonic", "acquire": "acquire", "release": "monotonic",
                    "acq_rel": "acquire"}
INTEGER_RMW = {"add": "add", "and": "and", "or": "or", "xor": "xor", "exch": "xchg",
               "inc": "uinc_wrap", "dec": "udec_wrap"}
CANONICAL_NAN = {16: 0x7FFF, 32: 0x7FFFFFFF, 64: 0x7FFFFFFFFFFFFFFF}


@lowering("atom", "red")
def atom(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """atom{.sem}{.scope}{.space}.op{.vec}.type d, [a], b{, c};   red: the same without d."""
    spec = inst.spec
    if spec.get("completion"):
        raise fl.unsupported(inst, "red.async with mbarrier completion is not implemented")
    op = spec.get("op")
    t = TYPES[spec.types[-1]]
    ordering = ORDERING[spec.get("sem")]
    operands = list(inst.operands)
    dest = operands.pop(0) if inst.opcode == "atom" else None
    address = operands.pop(0)
    if spec.get("l2hint"):
        operands.pop()                                   # the cache policy: a hint
    space = state_space(inst)
    pointer = fl.pointer(address, space)
    count = vector_count(inst)
    if count == 1:
        elements = [[_bits(fl, o, t) for o in operands]]
    else:  # .v2/.v4/.v8: each element atomic on its own
        element = TYPES[f"b{t.bits}"] if t.lanes > 1 else t
        columns = [[fl.as_int(v) for v in fl.read_vector(o, element, count)] for o in operands]
        elements = [list(values) for values in zip(*columns, strict=True)]
    flush = _flushes(fl, op, t, space, pointer)
    olds = []
    for i, values in enumerate(elements):
        p = pointer if i == 0 else fl.b.gep(pointer, [I64(i * t.size)], source_etype=I8)
        olds.append(_atomic(fl, inst, op, t, p, values, ordering, flush))
    if dest is None:
        return
    if len(elements) == 1:
        fl.write(dest, olds[0], t)
    else:
        fl.write_vector(dest, olds, t)


def _bits(fl: FunctionLowering, operand, t: Type) -> ll.Value:
    """An operand as bits: read as its own type, so that a float immediate is converted, but
    packed types as bits (their immediates are bit patterns)."""
    if t.lanes > 1:
        return fl.read(operand, f"b{t.bits}")
    return fl.as_int(fl.read(operand, t))


def _flushes(fl: FunctionLowering, op: str, t: Type, space: str | None,
             pointer: ll.Value) -> ll.Value:
    """Whether add.f32 flushes subnormals: on global memory, not on shared memory."""
    if not (op == "add" and t.name == "f32") or space == "shared":
        return I1(0)
    if space == "global":
        return I1(1)
    return fl.b.not_(in_shared(fl, fl.b.ptrtoint(pointer, I64)))


def _atomic(fl: FunctionLowering, inst: ir.Instruction, op: str, t: Type, pointer,
            values: list, ordering: str, flush: ll.Value) -> ll.Value:
    """One atomic operation on one element; returns the old value's bits."""
    b = fl.b
    if op == "cas":
        pair = b.cmpxchg(pointer, values[0], values[1], ordering, FAILURE_ORDERING[ordering])
        return b.extract_value(pair, 0)
    if t.is_float:
        compute = _float_operation(fl, inst, op, t, values[0], flush)
        return cas_loop(fl, pointer, ll.IntType(t.bits), compute, ordering)
    if op in ("min", "max"):
        rmw = op if t.kind == "signed" else "u" + op
    elif op in INTEGER_RMW:
        rmw = INTEGER_RMW[op]
    else:
        raise fl.unsupported(inst, f"atomic .{op} on .{t.name}")
    return b.atomic_rmw(rmw, pointer, values[0], ordering)


def cas_loop(fl: FunctionLowering, pointer, int_type: ll.IntType,
              compute: Callable[[ll.Value], ll.Value], ordering: str) -> ll.Value:
    """Read, compute, compare-and-swap until no other thread wrote in between."""
    b = fl.b
    initial = b.load_atomic(pointer, "monotonic", int_type.width // 8, typ=int_type)
    before = b.block
    loop = fl.llfn.append_basic_block("atomic_retry")
    done = fl.llfn.append_basic_block("atomic_done")
    b.branch(loop)
    b.position_at_end(loop)
    old = b.phi(int_type)
    old.add_incoming(initial, before)
    pair = b.cmpxchg(pointer, old, compute(old), ordering, FAILURE_ORDERING[ordering])
    seen = b.extract_value(pair, 0)
    old.add_incoming(seen, b.block)
    b.cbranch(b.extract_value(pair, 1), done, loop)
    b.position_at_end(done)
    return seen


def _float_operation(fl: FunctionLowering, inst: ir.Instruction, op: str, t: Type,
                     operand: ll.Value, flush: ll.Value) -> Callable[[ll.Value], ll.Value]:
    """The new value's bits from the old value's bits, for float add/min/max."""
    if op not in ("add", "min", "max"):
        raise fl.unsupported(inst, f"atomic .{op} on .{t.name}")
    if t.name in ("f16x2", "bf16x2"):
        element = t.name[:-2]

        def packed(old: ll.Value) -> ll.Value:
            b = fl.b
            lanes = []
            for shift in (0, 16):
                x = b.trunc(b.lshr(old, I32(shift)), I16)
                y = b.trunc(b.lshr(operand, I32(shift)), I16)
                lanes.append(b.zext(_scalar(fl, op, element, x, y, flush), I32))
            return b.or_(lanes[0], b.shl(lanes[1], I32(16)))
        return packed
    if t.name not in ("f16", "bf16", "f32", "f64"):
        raise fl.unsupported(inst, f"atomic .{op} on .{t.name}")
    return lambda old: _scalar(fl, op, t.name, old, operand, flush)


def _scalar(fl: FunctionLowering, op: str, name: str, x: ll.Value, y: ll.Value,
            flush: ll.Value) -> ll.Value:
    if op == "add":
        return _add(fl, name, x, y, flush)
    return _min_max(fl, op, name, x, y)


def _as_float(fl: FunctionLowering, bits: ll.Value, name: str) -> ll.Value:
    """f16/bf16/f32 bits as an f32 value (exact); f64 bits as an f64 value."""
    b = fl.b
    if name == "f64":
        return b.bitcast(bits, ll.DoubleType())
    if name == "f32":
        return b.bitcast(bits, ll.FloatType())
    if name == "bf16":
        return b.bitcast(b.shl(b.zext(bits, I32), I32(16)), ll.FloatType())
    return b.fpext(b.bitcast(bits, ll.HalfType()), ll.FloatType())


def _is_nan(fl: FunctionLowering, value: ll.Value) -> ll.Value:
    return fl.b.fcmp_unordered("uno", value, value)


def _add(fl: FunctionLowering, name: str, x: ll.Value, y: ll.Value, flush: ll.Value):
    """x + y rounded to nearest even. 16-bit values add exactly enough in f32: where their
    sum needs more than 24 bits, the smaller is below a quarter unit of the result, so both
    roundings land where the one exact rounding would."""
    b = fl.b
    if name == "f32":
        x, y = (b.select(flush, _flush_f32(fl, v), v) for v in (x, y))
    total = b.fadd(_as_float(fl, x, name), _as_float(fl, y, name))
    bits = fl.as_int(total)
    if name == "f32":
        bits = b.select(flush, _flush_f32(fl, bits), bits)
    elif name in ("f16", "bf16"):
        bits = b.trunc(round_bits(fl, bits, "f32", name), I16)
    if name == "f64":
        return _ieee_nan(fl, x, y, total, bits)
    canonical = ll.Constant(bits.type, CANONICAL_NAN[bits.type.width])
    return b.select(_is_nan(fl, total), canonical, bits)


def _ieee_nan(fl: FunctionLowering, x: ll.Value, y: ll.Value, total: ll.Value,
              bits: ll.Value) -> ll.Value:
    """f64 NaN results as the H100 gives them: a NaN operand made quiet (x's first), else
    for an invalid operation the default NaN 0xFFF8000000000000."""
    b = fl.b
    quiet = ll.Constant(bits.type, 1 << 51)
    result = b.select(_is_nan(fl, total), ll.Constant(bits.type, 0xFFF8000000000000), bits)
    result = b.select(_is_nan(fl, _as_float(fl, y, "f64")), b.or_(y, quiet), result)
    return b.select(_is_nan(fl, _as_float(fl, x, "f64")), b.or_(x, quiet), result)


def _flush_f32(fl: FunctionLowering, bits: ll.Value) -> ll.Value:
    b = fl.b
    subnormal = b.icmp_unsigned("==", b.and_(bits, I32(0x7F800000)), I32(0))
    return b.select(subnormal, b.and_(bits, I32(0x80000000)), bits)


def _min_max(fl: FunctionLowering, op: str, name: str, x: ll.Value, y: ll.Value) -> ll.Value:
    """min/max: a NaN loses to a number, two NaNs give the canonical NaN, -0 < +0."""
    b = fl.b
    fx, fy = _as_float(fl, x, name), _as_float(fl, y, name)
    x_negative = b.icmp_signed("<", x, ll.Constant(x.type, 0))
    if op == "min":
        pick_x = b.or_(b.fcmp_ordered("<", fx, fy),
                       b.and_(b.fcmp_ordered("==", fx, fy), x_negative))
    else:
        pick_x = b.or_(b.fcmp_ordered(">", fx, fy),
                       b.and_(b.fcmp_ordered("==", fx, fy), b.not_(x_negative)))
    result = b.select(pick_x, x, y)
    x_nan, y_nan = _is_nan(fl, fx), _is_nan(fl, fy)
    result = b.select(x_nan, y, b.select(y_nan, x, result))
    canonical = ll.Constant(x.type, CANONICAL_NAN[x.type.width])
    return b.select(b.and_(x_nan, y_nan), canonical, result)
