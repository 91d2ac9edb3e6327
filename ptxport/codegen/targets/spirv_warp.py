"""Barriers and warp operations for the SPIR-V target (spirv.py): a CUDA warp is an OpenCL
sub-group of 32 work-items (the kernel asks for that size with intel_reqd_sub_group_size).

Everything lane-crossing is built from two operations, `sub_group_shuffle` (uint, uint) of
cl_khr_subgroup_shuffle and the non-uniform `sub_group_ballot` (int) of cl_khr_subgroup_ballot,
so that the exact PTX rules are written here once: shfl's source lane arithmetic (PTX ISA
9.7.9.6), member masks of vote/redux/match (a lane outside the mask contributes the
operation's identity), and elect's lowest member. A ballot (vote.ballot, and the active lanes
of activemask, elect and vote without .sync) is `sub_group_ballot`, in which only the
work-items that reach it take part, as in PTX, ANDed with the member mask. Block barriers
are barrier(), bar.red uses OpenCL 2.0's work-group collectives.

OpenCL requires sub-group operations to be reached by every work-item of the sub-group (PTX
lets a subset named by the member mask take part). Lanes therefore only ever read the other
lanes' own values, never partial results, so that member masks naming the lanes of a
divergent branch work where the device runs shuffles there (Intel's CPU runtime does); still,
such kernels are outside what OpenCL defines, and their results depend on the device.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import I1, I32, I64, FunctionLowering, declare
from ptxport.codegen.ops.data import instruction_type
from ptxport.codegen.ops.sync import lower_shuffle, write_match
from ptxport.ir import nodes as ir

_SHUFFLE = "_Z17sub_group_shufflejj"
_BALLOT = "_Z16sub_group_balloti"   # cl_khr_subgroup_ballot: uint4 sub_group_ballot(int)
_FENCES = 3  # CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE
_FULL = I32(0xFFFFFFFF)


def synchronize(target, fl: FunctionLowering, inst: ir.Instruction) -> None:
    lower = _LOWERINGS.get(inst.opcode)
    if lower is None:
        raise fl.unsupported(inst, f"{inst.opcode} has no OpenCL equivalent")
    lower(target, fl, inst)


def shuffle(target, fl: FunctionLowering, value: ll.Value, lane: ll.Value) -> ll.Value:
    """`value` of work-item `lane` of the sub-group (an i32 or i64)."""
    if value.type == I64:
        low = shuffle(target, fl, fl.b.trunc(value, I32), lane)
        high = shuffle(target, fl, fl.b.trunc(fl.b.lshr(value, I64(32)), I32), lane)
        return fl.b.or_(fl.b.zext(low, I64), fl.b.shl(fl.b.zext(high, I64), I64(32)))
    target.uses_warp = True
    return target.call_builtin(fl, _SHUFFLE, I32, [value, lane], convergent=True)


def _reduce(target, fl: FunctionLowering, value: ll.Value, mask: ll.Value, identity: int,
            combine) -> ll.Value:
    """`combine` over the values of the lanes in `mask` (the others count as `identity`).
    Each lane reads every lane's own value (no butterfly, whose partial results would come
    from lanes that may not be running when the operation sits in a divergent branch)."""
    b = fl.b
    result = None
    for lane in range(32):
        other = shuffle(target, fl, value, I32(lane))
        member = b.icmp_unsigned("!=", b.and_(mask, I32(1 << lane)), I32(0))
        other = b.select(member, other, ll.Constant(value.type, identity))
        result = other if result is None else combine(result, other)
    return result


def _ballot(target, fl: FunctionLowering, predicate: ll.Value,
            mask: ll.Value = _FULL) -> ll.Value:
    """The lanes of `mask` that execute this and whose predicate is true: the non-uniform
    `sub_group_ballot` (cl_khr_subgroup_ballot), one operation where a ballot of shuffles
    took 32 (cub's radix sort has 170 ballots in one kernel)."""
    target.uses_warp = target.uses_ballot = True
    words = target.call_builtin(fl, _BALLOT, ll.VectorType(I32, 4),
                                [fl.b.zext(predicate, I32)], convergent=True)
    return fl.b.and_(fl.b.extract_element(words, I32(0)), mask)


def active_lanes(target, fl: FunctionLowering) -> ll.Value:
    """The lanes of the warp that execute this instruction (PTX's activemask): OpenCL's
    non-uniform `sub_group_ballot` of true (cl_khr_subgroup_ballot), which counts only the
    work-items that reach it. (A ballot of true built from shuffles would read the inactive
    lanes' copies of the constant: all 32 lanes.)"""
    return _ballot(target, fl, I1(1))


def _member_mask(target, fl: FunctionLowering, inst: ir.Instruction, operand) -> ll.Value:
    """The member mask; the forms without .sync take the active lanes."""
    if operand is not None and inst.spec.has("sync"):
        return fl.read(operand, "b32")
    return active_lanes(target, fl)


# --- barriers -----------------------------------------------------------------------------------

def _bar(target, fl: FunctionLowering, inst: ir.Instruction) -> None:
    """bar.sync / barrier.sync a: barrier(); bar.warp.sync m: sub_group_barrier(); bar.red:
    a barrier and a work-group reduction."""
    b = fl.b
    if inst.spec.has("warp"):
        target.uses_warp = True
        target.call_builtin(fl, "_Z17sub_group_barrierj", ll.VoidType(), [I32(_FENCES)],
                            convergent=True)
        return
    op = inst.spec.get("op")
    if inst.spec.get("scope") == "cluster":
        raise fl.unsupported(inst, "cluster barriers: OpenCL has no clusters of work-groups")
    if op == "arrive":
        raise fl.unsupported(inst, "bar.arrive: OpenCL barriers cannot arrive without waiting")
    operands = list(inst.operands)
    dest = operands.pop(0) if op == "red" else None
    predicate = operands.pop() if op == "red" else None
    if len(operands) > 1:
        raise fl.unsupported(inst, "a barrier for a thread count: OpenCL barriers always "
                                   "wait for the whole work-group")
    target.call_builtin(fl, "_Z7barrierj", ll.VoidType(), [I32(_FENCES)], convergent=True)
    if op != "red":
        return
    value = b.zext(fl.read(predicate, "pred"), I32)
    redop = inst.spec.get("redop")
    if redop == "popc":
        total = target.call_builtin(fl, "_Z21work_group_reduce_addj", I32, [value],
                                    convergent=True)
        fl.write(dest, total, "u32")
        return
    name = "_Z14work_group_alli" if redop == "and" else "_Z14work_group_anyi"
    result = target.call_builtin(fl, name, I32, [value], convergent=True)
    fl.write(dest, b.icmp_unsigned("!=", result, I32(0)), "pred")


# --- warp operations ----------------------------------------------------------------------------

def _shfl(target, fl: FunctionLowering, inst: ir.Instruction) -> None:
    """shfl{.sync}.mode.b32 d{|p}, a, b, c{, membermask} with PTX's lane rules."""
    lower_shuffle(fl, inst, target.lane(fl),
                  lambda value, source: shuffle(target, fl, value, source))


def _vote(target, fl: FunctionLowering, inst: ir.Instruction) -> None:
    """vote{.sync}.{all,any,uni}.pred d, {!}a{, m}; vote{.sync}.ballot.b32 d, {!}a{, m}."""
    b = fl.b
    dest, a = inst.operands[:2]
    mask = _member_mask(target, fl, inst, inst.operands[2] if len(inst.operands) > 2 else None)
    ballot = _ballot(target, fl, fl.read(a, "pred"), mask)
    mode = inst.spec.get("mode")
    if mode == "ballot":
        fl.write(dest, ballot, "b32")
        return
    # (the member mask's lanes that exited, or are past the end of the block, count as
    # agreeing: "all non-exited threads in membermask")
    members = b.and_(mask, active_lanes(target, fl)) if inst.spec.has("sync") else mask
    all_ = b.icmp_unsigned("==", ballot, members)
    any_ = b.icmp_unsigned("!=", ballot, I32(0))
    result = {"all": all_, "any": any_, "uni": b.or_(all_, b.not_(any_))}[mode]
    fl.write(dest, result, "pred")


def _activemask(target, fl: FunctionLowering, inst: ir.Instruction) -> None:
    fl.write(inst.operands[0], active_lanes(target, fl), "b32")


def _redux(target, fl: FunctionLowering, inst: ir.Instruction) -> None:
    """redux.sync.op.{b32,u32,s32} d, a, m: lanes outside m contribute the identity."""
    b = fl.b
    t = instruction_type(inst)
    if t.is_float:
        raise fl.unsupported(inst, "redux.sync on .f32 is not lowered for SPIR-V yet")
    op = inst.spec.get("op")
    dest, a, m = inst.operands
    signed = t.kind == "signed"
    identity = {"add": 0, "or": 0, "xor": 0, "and": 0xFFFFFFFF,
                "min": 0x7FFFFFFF if signed else 0xFFFFFFFF,
                "max": 0x80000000 if signed else 0}[op]
    def combine(x, y):
        if op in ("min", "max"):
            compare = b.icmp_signed if signed else b.icmp_unsigned
            return b.select(compare("<" if op == "min" else ">", x, y), x, y)
        return {"add": b.add, "and": b.and_, "or": b.or_, "xor": b.xor}[op](x, y)

    result = _reduce(target, fl, fl.read(a, "b32"), fl.read(m, "b32"), identity, combine)
    fl.write(dest, result, t)


def _match(target, fl: FunctionLowering, inst: ir.Instruction) -> None:
    """match.any.sync.b{32,64} d, a, m; match.all.sync.b{32,64} d{|p}, a, m."""
    b = fl.b
    t = instruction_type(inst)
    _, a, m = inst.operands
    value = fl.read(a, f"b{t.bits}")
    # (only lanes that run take part: a shuffle from an exited lane, or one past the end of
    # the block, reads an undefined value)
    members = b.and_(fl.read(m, "b32"), active_lanes(target, fl))
    same = I32(0)
    for lane in range(32):
        other = shuffle(target, fl, value, I32(lane))
        bit = b.select(b.icmp_unsigned("==", other, value), I32(1 << lane), I32(0))
        same = b.or_(same, bit)
    write_match(fl, inst, b.and_(same, members), members)


def _elect(target, fl: FunctionLowering, inst: ir.Instruction) -> None:
    """elect.sync d|p, membermask: the lowest active member is the leader."""
    b = fl.b
    dest, m = inst.operands
    members = b.and_(fl.read(m, "b32"), active_lanes(target, fl))
    cttz = declare(fl.llfn.module, "llvm.cttz.i32", I32, [I32, I1])
    leader = b.call(cttz, [members, I1(0)])
    first, second = (dest.first, dest.second) if isinstance(dest, ir.PairValue) \
        else (dest, None)
    fl.write(first, leader, "b32")
    if second is not None:
        fl.write(second, b.icmp_unsigned("==", target.lane(fl), leader), "pred")


_LOWERINGS = {"bar": _bar, "barrier": _bar, "shfl": _shfl, "vote": _vote, "redux": _redux,
              "match": _match, "activemask": _activemask, "elect": _elect}
