"""Barriers and warp operations on the CPU: both halves of each operation.

`lower_wait` (compile time) ends a thread's run at the operation: it writes the operation's
inputs into the thread's exchange slots (in0..in3 of its frame), spills its registers and
returns the operation's point number; on resume it reads the results (out0, out1) into the
destination registers.

`resolve` (run time, numpy, once per round of a block) completes the operations that threads
wait at, when every thread they need has arrived, by PTX's rules (PTX ISA 9.7.13), and marks
those threads runnable again. Warps are groups of 32 consecutive threads in the block's
linear order (x fastest), as on NVIDIA GPUs. The exchange protocol per operation:

    bar.sync/barrier.sync a{, b}   in0 = barrier a, in1 = thread count b (0: all)
    bar.warp.sync mask             in3 = mask
    shfl.sync.mode d|p, a, b, c, m in0 = a, in1 = b, in2 = c, in3 = m; out0 = d, out1 = p
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir as ll

from ptxport.codegen.lower import I1, I32, I64, FunctionLowering
from ptxport.errors import KernelExecutionError
from ptxport.ir import nodes as ir
from ptxport.ptx.ast import Sink

FULL_MASK = 0xFFFFFFFF


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


def lower_wait(target, fl: FunctionLowering, inst: ir.Instruction, number: int) -> None:
    op = inst.opcode
    spec = inst.spec
    if op in ("bar", "barrier") and (spec.has("warp")):
        _store_slot(target, fl, "in3", _mask_operand(fl, inst, 0))
        target.spill_and_return(fl, number)
        return
    if op in ("bar", "barrier") and not (spec.has("red") or spec.has("arrive")):
        _store_slot(target, fl, "in0", fl.read(inst.operands[0], "b32"))
        count = fl.read(inst.operands[1], "b32") if len(inst.operands) > 1 else I32(0)
        _store_slot(target, fl, "in1", count)
        target.spill_and_return(fl, number)
        return
    if op == "shfl":
        dest = inst.operands[0]
        pred = None
        if isinstance(dest, ir.PairValue):
            dest, pred = dest.first, dest.second
        for slot, operand in zip(("in0", "in1", "in2"), inst.operands[1:4], strict=True):
            _store_slot(target, fl, slot, fl.read(operand, "b32"))
        _store_slot(target, fl, "in3", _mask_operand(fl, inst, 4))
        target.spill_and_return(fl, number)
        fl.write(dest, _load_slot(target, fl, "out0", I32), "b32")
        if pred is not None:
            fl.write(pred, fl.b.trunc(_load_slot(target, fl, "out1", I32), I1), "pred")
        return
    raise fl.unsupported(inst, "this barrier or warp operation is not implemented on the CPU")


# --- run time ---------------------------------------------------------------------------------

class Slots:
    """numpy views of one exchange slot of every thread's frame."""

    def __init__(self, frames: np.ndarray, frame_size: int, count: int, offsets: dict):
        self._views = {
            name: np.ndarray((count,), np.uint64, frames, offsets[name], (frame_size,))
            for name in ("in0", "in1", "in2", "in3", "out0", "out1")}

    def __getitem__(self, name: str) -> np.ndarray:
        return self._views[name]


def resolve(plan, points: np.ndarray, statuses: np.ndarray, slots: Slots,
            blocked_status: int, runnable_status: int, exited_status: int) -> bool:
    """Complete every operation that can complete; True if any thread can run again."""
    blocked = statuses == blocked_status
    if not blocked.any():
        return False
    progress = False
    waiting_points = np.unique(points[blocked])
    barrier_points = []
    for number in waiting_points:
        point = plan.sync_points[int(number)]
        threads = np.nonzero(blocked & (points == number))[0]
        op = point.inst.opcode
        if op in ("bar", "barrier") and not point.inst.spec.has("warp"):
            barrier_points.append((point, threads))
            continue
        handler = _WARP_OPERATIONS.get(op if not point.inst.spec.has("warp") else "bar.warp")
        if handler is None:
            raise KernelExecutionError(f"line {point.line}: '{point.inst.spec.text}' is not "
                                       "implemented on the CPU")
        ready = _ready_lanes(threads, slots["in3"], statuses, exited_status, blocked,
                             points, number)
        if ready.size:
            handler(point, ready, slots)
            statuses[ready] = runnable_status
            progress = True
    if not progress and barrier_points:
        progress = _resolve_barriers(barrier_points, statuses, exited_status, slots,
                                     runnable_status)
    return progress


def _ready_lanes(threads, masks, statuses, exited_status, blocked, points, number):
    """The threads at a warp operation whose member mask is complete: every lane named in
    it has arrived at this operation or has exited."""
    warp = threads // 32
    ready = []
    for w in np.unique(warp):
        lanes_here = threads[warp == w]
        arrived = 0
        for t in lanes_here:
            arrived |= 1 << int(t % 32)
        base = int(w) * 32
        exited = 0
        for i in range(32):
            t = base + i
            if t < statuses.size and statuses[t] == exited_status:
                exited |= 1 << i
            elif t >= statuses.size:
                exited |= 1 << i      # lanes past the end of the block do not exist
        for t in lanes_here:
            mask = int(masks[t]) & FULL_MASK
            if mask & ~(arrived | exited) == 0:
                ready.append(t)
    return np.array(ready, dtype=np.int64)


def _resolve_barriers(barrier_points, statuses, exited_status, slots, runnable_status) -> bool:
    live = int(np.count_nonzero(statuses != exited_status))
    by_barrier: dict[int, list] = {}
    for _point, threads in barrier_points:
        for t in threads:
            by_barrier.setdefault(int(slots["in0"][t]) & 0xF, []).append(int(t))
    progress = False
    for _barrier, threads in by_barrier.items():
        count = int(slots["in1"][threads[0]])
        needed = count if count else live
        if len(threads) >= needed:
            release = np.array(sorted(threads)[:needed] if count else threads)
            statuses[release] = runnable_status
            progress = True
    return progress


def _shfl(point, lanes: np.ndarray, slots: Slots) -> None:
    """shfl.sync.{up,down,bfly,idx}.b32 (PTX ISA 9.7.9.6)."""
    mode = point.inst.spec.get("mode")
    lane = lanes % 32
    base = lanes - lane
    b = slots["in1"][lanes].astype(np.int64) & 0xFFFFFFFF
    c = slots["in2"][lanes].astype(np.int64) & 0xFFFFFFFF
    clamp = c & 0x1F
    segmask = (c >> 8) & 0x1F
    max_lane = (lane & segmask) | (clamp & ~segmask)
    min_lane = lane & segmask
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
        j = min_lane | (b & ~segmask)
        valid = j <= max_lane
    j = np.where(valid, j, lane)
    values = slots["in0"]
    source = np.minimum(base + j, values.size - 1)  # lanes past the block's end: undefined
    slots["out0"][lanes] = values[source] & 0xFFFFFFFF
    slots["out1"][lanes] = valid.astype(np.uint64)


def _warp_sync(point, lanes: np.ndarray, slots: Slots) -> None:
    """bar.warp.sync: the lanes named in the mask have all arrived; nothing to compute."""


_WARP_OPERATIONS = {"shfl": _shfl, "bar.warp": _warp_sync}
