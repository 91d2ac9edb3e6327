"""Barriers and warp operations on the CPU: both halves of each operation.

`lower_wait` (compile time) ends a thread's run at the operation: it writes the operation's
inputs into the thread's exchange slots (in0..in3 of its frame), spills its registers and
returns the operation's point number; on resume it reads the results (out0, out1) into the
destination registers.

`resolve` (run time, numpy, once per round of a block) completes the operations that threads
wait at, when every thread they need has arrived, by PTX's rules (PTX ISA 9.7.13, and 9.7.9
for shfl), and marks those threads runnable again. It works on all the threads of one
operation at once, across every warp of the block. Warps are groups of 32 consecutive
threads in the block's linear order (x fastest), as on NVIDIA GPUs; the lanes past the end
of a block whose size is not a multiple of 32 count as exited. The exchange protocol:

    bar{.cta}.sync / barrier{.cta}.sync{.aligned} a{, b}
    bar{.cta}.arrive / barrier{.cta}.arrive{.aligned} a, b
    bar{.cta}.red.popc.u32 d, a{, b}, {!}c        in0 = a (barrier 0..15), in1 = b,
    bar{.cta}.red.{and,or}.pred p, a{, b}, {!}c   in2 = 1 if b is given, in3 = c; out0 = d/p
    barrier.cluster.arrive / .wait                (no slots)
    bar.warp.sync membermask                      in3 = membermask
    shfl{.sync}.mode.b32 d{|p}, a, b, c{, m}      in0 = a, in1 = b, in2 = c, in3 = m;
                                                  out0 = d, out1 = p
    vote{.sync}.{all,any,uni}.pred d, {!}a{, m}   in0 = a, in3 = m; out0 = d
    vote{.sync}.ballot.b32 d, {!}a{, m}           in0 = a, in3 = m; out0 = d
    match.{any,all}.sync.{b32,b64} d{|p}, a, m    in0 = a, in3 = m; out0 = d, out1 = p
    redux.sync.op.type d, a, m                    in0 = a (its bits), in3 = m; out0 = d
    elect.sync d|p, m                             in3 = m; out0 = d (leader's lane), out1 = p
    ldmatrix.sync.aligned.m8n8.num r, [p]         in0 = the row's host address (lanes below
                                                  8*num); r's words in out0, out1
    mma.sync.aligned.shape.row.col d, a, b, c     the 32-bit words of a, b, c in order, two
                                                  per slot in0..in5 (low word first);
                                                  d's words in out0, out1
    activemask.b32 d                              out0 = d

Who takes part, and when an operation completes:

- A `.sync` warp operation completes for a thread once every lane of its member mask has
  arrived or exited. "Arrived" means waiting at an operation with the same qualifiers, not
  necessarily the same instruction: sm_70 and later let lanes of a warp meet at different
  instructions (PTX says "executed vote.sync with the same qualifiers and same membermask").
  The lanes that take part are the mask's lanes that arrived; each thread's result is
  computed over its own mask, so disjoint masks in divergent code resolve independently.
  A thread outside its own mask is undefined in PTX and raises KernelExecutionError.
- Operations with no member mask (vote and shfl without .sync, activemask) take as the
  active lanes those of the warp waiting at the same instruction. They are completed only
  when nothing else in the block can progress, so that lanes still on their way (released by
  a barrier or another warp operation this round) join them, as a GPU reconverges a warp
  before such an instruction; lanes that have exited or wait elsewhere are inactive.
  activemask therefore gives the lanes at this same activemask instruction.
- CTA barriers count warps, as PTX describes them ("causes executing thread to wait for all
  non-exited threads from its warp and marks warps' arrival at barrier"): a warp arrives at
  barrier a once all its non-exited lanes are at a barrier instruction naming a (sync, red or
  arrive, possibly different instructions). Without b the barrier completes when every warp
  with a live thread has arrived, so threads that exited do not hold it up (as on sm_70+);
  with b it completes after b/32 warp arrivals (rounded up), bar.arrive's included, a warp
  with exited lanes counting as a whole warp. Then it resets for its next use: arrivals
  beyond b start the next phase (those of one round taken in warp order; PTX leaves the
  order open). bar.red's result is reduced over the threads of the warps that wait in that
  phase. A barrier that some thread can never complete leaves no progress, and the executor
  reports the deadlock.
- barrier.cluster: a cluster is one CTA here; .wait completes once every non-exited thread
  of the CTA has done its .arrive for the phase.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir as ll

from ptxport.codegen.lower import I1, I32, I64, FunctionLowering
from ptxport.codegen.ops.data import state_space
from ptxport.ir import nodes as ir
from ptxport.ptx.ast import Sink

__all__ = ["lower_wait", "shuffle_sources", "wait_kind", "FULL_MASK", "MMA_FORMS", "mma_form"]

FULL_MASK = 0xFFFFFFFF
CANONICAL_NAN_F32 = 0x7FFFFFFF
BARRIERS = 16

# What a thread waits at; one code per kind of operation.
CTA_BARRIER, CLUSTER_ARRIVE, CLUSTER_WAIT, WARP_OPERATION, YIELD = 1, 2, 3, 4, 5


def wait_kind(inst: ir.Instruction) -> str:
    """The name of the operation an instruction performs, for both halves."""
    op, spec = inst.opcode, inst.spec
    if op in ("bar", "barrier"):
        if spec.has("warp"):
            return "bar.warp"
        if spec.get("scope") == "cluster":
            return "cluster.wait" if spec.get("op") == "wait" else "cluster.arrive"
        return "cta"
    return op


# --- compile time -----------------------------------------------------------------------------

def _store_slot(target, fl: FunctionLowering, slot: str, value: ll.Value) -> None:
    value = fl.as_int(value)
    if value.type.width < 64:
        value = fl.b.zext(value, I64)
    fl.b.store(value, target.frame_slot(fl, slot))


def _load_slot(target, fl: FunctionLowering, slot: str, typ: ll.IntType) -> ll.Value:
    value = fl.b.load(target.frame_slot(fl, slot), typ=I64)
    return value if typ.width == 64 else fl.b.trunc(value, typ)


def _mask_operand(fl: FunctionLowering, inst: ir.Instruction, index: int) -> ll.Value:
    if len(inst.operands) > index and not isinstance(inst.operands[index], Sink):
        return fl.read(inst.operands[index], "b32")
    return I32(FULL_MASK)


def _destinations(operand) -> tuple:
    """`d|p` as (d, p); a lone `d` as (d, None)."""
    if isinstance(operand, ir.PairValue):
        return operand.first, operand.second
    return operand, None


def _write_results(target, fl, d, p=None, d_type: str = "b32") -> None:
    if d is not None:
        if d_type == "pred":
            fl.write(d, fl.b.trunc(_load_slot(target, fl, "out0", I32), I1), "pred")
        else:
            width = 64 if d_type.endswith("64") else 32
            fl.write(d, _load_slot(target, fl, "out0", ll.IntType(width)), d_type)
    if p is not None:
        fl.write(p, fl.b.trunc(_load_slot(target, fl, "out1", I32), I1), "pred")


def _lower_cta_barrier(target, fl, inst, number) -> None:
    operands = list(inst.operands)
    red = inst.spec.get("op") == "red"
    dest = operands.pop(0) if red else None
    predicate = operands.pop() if red else None
    _store_slot(target, fl, "in0", fl.read(operands[0], "b32"))
    has_count = len(operands) > 1
    _store_slot(target, fl, "in1", fl.read(operands[1], "b32") if has_count else I32(0))
    _store_slot(target, fl, "in2", I32(int(has_count)))
    if red:
        _store_slot(target, fl, "in3", fl.read(predicate, "pred"))
    target.spill_and_return(fl, number)
    if red:
        _write_results(target, fl, dest, d_type="u32" if inst.spec.get("redop") == "popc"
                       else "pred")


def _lower_no_operands(target, fl, inst, number) -> None:
    target.spill_and_return(fl, number)


def _lower_warp_barrier(target, fl, inst, number) -> None:
    _store_slot(target, fl, "in3", _mask_operand(fl, inst, 0))
    target.spill_and_return(fl, number)


def _lower_shfl(target, fl, inst, number) -> None:
    dest, pred = _destinations(inst.operands[0])
    for slot, operand in zip(("in0", "in1", "in2"), inst.operands[1:4], strict=True):
        _store_slot(target, fl, slot, fl.read(operand, "b32"))
    _store_slot(target, fl, "in3", _mask_operand(fl, inst, 4))
    target.spill_and_return(fl, number)
    _write_results(target, fl, dest, pred)


def _lower_lane_value(target, fl, inst, number, a_type: str, d_type: str = "b32") -> None:
    """`op d{|p}, a, m`: a (read as `a_type`) in in0, the member mask m in in3."""
    dest, pred = _destinations(inst.operands[0])
    _store_slot(target, fl, "in0", fl.read(inst.operands[1], a_type))
    _store_slot(target, fl, "in3", _mask_operand(fl, inst, 2))
    target.spill_and_return(fl, number)
    _write_results(target, fl, dest, pred, d_type)


def _lower_vote(target, fl, inst, number) -> None:
    ballot = inst.spec.get("mode") == "ballot"
    _lower_lane_value(target, fl, inst, number, "pred", "b32" if ballot else "pred")


def _lower_match(target, fl, inst, number) -> None:
    _lower_lane_value(target, fl, inst, number, inst.spec.types[0])


def _lower_redux(target, fl, inst, number) -> None:
    _lower_lane_value(target, fl, inst, number, "b32")


def _lower_elect(target, fl, inst, number) -> None:
    dest, pred = _destinations(inst.operands[0])
    _store_slot(target, fl, "in3", _mask_operand(fl, inst, 1))
    target.spill_and_return(fl, number)
    _write_results(target, fl, dest, pred)


def _lower_activemask(target, fl, inst, number) -> None:
    target.spill_and_return(fl, number)
    _write_results(target, fl, inst.operands[0])


def _lower_mma(target, fl, inst, number) -> None:
    d, a, b, c = inst.operands
    shape = _mma_shape(fl, inst)
    words = []
    for operand, kind in ((a, "a"), (b, "b"), (c, "c")):
        values = operand.elements if isinstance(operand, ir.VectorValue) else (operand,)
        if len(values) != shape[kind]:
            raise fl.unsupported(inst, f"mma operand {kind} needs {shape[kind]} registers")
        words += [fl.as_int(fl.read(v, "b32")) for v in values]
    for k in range(0, len(words), 2):
        low = fl.b.zext(words[k], I64)
        high = fl.b.shl(fl.b.zext(words[k + 1], I64), I64(32)) if k + 1 < len(words) else I64(0)
        _store_slot(target, fl, f"in{k // 2}", fl.b.or_(low, high))
    outputs = d.elements if isinstance(d, ir.VectorValue) else (d,)
    if len(outputs) != shape["d"]:
        raise fl.unsupported(inst, f"mma operand d needs {shape['d']} registers")
    target.spill_and_return(fl, number)
    _write_words(target, fl, outputs)


def _write_words(target, fl, registers) -> None:
    """The 32-bit registers a warp matrix operation gives, two per slot from out0 (low word
    first)."""
    for k, register in enumerate(registers):
        word = _load_slot(target, fl, f"out{k // 2}", I64)
        if k % 2:
            word = fl.b.lshr(word, I64(32))
        fl.write(register, fl.b.trunc(word, I32), "b32")


def _lower_ldmatrix(target, fl, inst, number) -> None:
    """ldmatrix.sync.aligned.m8n8.num{.trans}{.shared}.b16 r, [p]: the first 8*num lanes give
    the addresses of the matrices' rows (16 bytes each), checked here; the others' are
    ignored, as PTX ignores them."""
    spec = inst.spec
    if spec.get("shape") != "m8n8" or spec.types != ("b16",):
        raise fl.unsupported(inst, "this ldmatrix form on the CPU (it loads .m8n8 .b16)")
    count = int(spec.get("num")[1])
    dest, address = inst.operands
    outputs = dest.elements if isinstance(dest, ir.VectorValue) else (dest,)
    if len(outputs) != count:
        raise fl.unsupported(inst, f"ldmatrix .x{count} needs {count} destination registers")
    b = fl.b
    gives = b.icmp_unsigned("<", target.lane_id(fl), I32(8 * count))
    before = b.block
    load, joined = (fl.llfn.append_basic_block(x) for x in ("ldmatrix_row", "ldmatrix_rows"))
    b.cbranch(gives, load, joined)
    b.position_at_end(load)
    row = b.ptrtoint(fl.pointer(address, state_space(inst), 16), I64)
    loaded = b.block
    b.branch(joined)
    b.position_at_end(joined)
    value = b.phi(I64)
    value.add_incoming(I64(0), before)
    value.add_incoming(row, loaded)
    _store_slot(target, fl, "in0", value)
    target.spill_and_return(fl, number)
    _write_words(target, fl, outputs)


# mma shapes and types the CPU computes: (shape, d type, a type, b type, c type) -> the
# number of 32-bit registers of each operand (PTX ISA 9.7.14.5.x, the fragment layouts).
MMA_FORMS = {
    ("m16n8k16", "f32", "f16", "f16", "f32"): {"a": 4, "b": 2, "c": 4, "d": 4},
    ("m16n8k16", "f32", "bf16", "bf16", "f32"): {"a": 4, "b": 2, "c": 4, "d": 4},
    ("m16n8k16", "f16", "f16", "f16", "f16"): {"a": 4, "b": 2, "c": 2, "d": 2},
    ("m16n8k8", "f32", "f16", "f16", "f32"): {"a": 2, "b": 1, "c": 4, "d": 4},
    ("m16n8k8", "f32", "bf16", "bf16", "f32"): {"a": 2, "b": 1, "c": 4, "d": 4},
    ("m16n8k8", "f16", "f16", "f16", "f16"): {"a": 2, "b": 1, "c": 2, "d": 2},
}


def mma_form(inst) -> tuple:
    spec = inst.spec
    return (spec.get("shape"),) + tuple(spec.types)


def _mma_shape(fl, inst) -> dict:
    spec = inst.spec
    form = mma_form(inst)
    layouts = spec.get("layout") or ()
    layouts = (layouts,) if isinstance(layouts, str) else tuple(layouts)
    if form not in MMA_FORMS or tuple(layouts) != ("row", "col") or any(
            spec.get(g) for g in ("sp", "kind", "block_scale", "satfinite", "bitop")):
        raise fl.unsupported(inst, "this mma form on the CPU (it computes m16n8k16 and "
                                   "m16n8k8 .row.col with f16 or bf16 inputs)")
    return MMA_FORMS[form]


_LOWER = {
    "cta": _lower_cta_barrier, "cluster.arrive": _lower_no_operands,
    "cluster.wait": _lower_no_operands, "bar.warp": _lower_warp_barrier, "shfl": _lower_shfl,
    "vote": _lower_vote, "match": _lower_match, "redux": _lower_redux, "elect": _lower_elect,
    "activemask": _lower_activemask, "mma": _lower_mma, "ldmatrix": _lower_ldmatrix,
}


def lower_wait(target, fl: FunctionLowering, inst: ir.Instruction, number: int) -> None:
    lower = _LOWER.get(wait_kind(inst))
    if lower is None:
        raise fl.unsupported(inst, "this barrier or warp operation is not implemented on the "
                                   "CPU")
    if inst.opcode == "redux" and inst.spec.types[0] == "f32" and \
            inst.spec.get("op") not in ("min", "max"):
        raise fl.unsupported(inst, "redux.sync on .f32 has only .min and .max")
    lower(target, fl, inst, number)


def shuffle_sources(mode: str, lane, b, c):
    """shfl.sync.mode's source lane for each `lane` (numpy integers) with lane operand `b`
    (0..31) and clamp/segment operand `c`: (the source, or the lane itself where the source
    is out of range; whether it is in range) (PTX ISA 9.7.9.6)."""
    clamp, segmask = c & 0x1F, (c >> 8) & 0x1F
    max_lane = (lane & segmask) | (clamp & ~segmask)
    if mode == "up":
        j = lane - b
        valid = j >= max_lane
    elif mode == "down":
        j = lane + b
        valid = j <= max_lane
    elif mode == "bfly":
        j = lane ^ b
        valid = j <= max_lane
    else:
        j = (lane & segmask) | (b & ~segmask)
        valid = j <= max_lane
    return np.where(valid, j, lane), valid
