"""The run-time half of the thread-by-thread path's waits: the executor's general resolver.
Threads that stopped at a wait (codegen/targets/cpu/waits.py left each one's inputs in its
frame's exchange slots) are completed here with PTX's exact semantics: block and cluster
barriers, and the warp operations (shfl, vote, match, redux, elect, activemask, mma,
ldmatrix) of partial masks and divergent warps that the native rounds (native.py) leave.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

import numpy as np

from ptxport.codegen.targets.cpu.waits import (
    BARRIERS,
    CANONICAL_NAN_F32,
    CLUSTER_ARRIVE,
    CLUSTER_WAIT,
    CTA_BARRIER,
    FULL_MASK,
    MMA_FORMS,
    WARP_OPERATION,
    YIELD,
    mma_form,
    shuffle_sources,
    wait_kind,
)
from ptxport.errors import KernelExecutionError
from ptxport.ir import nodes as ir
from ptxport.ir.lines import where

# Rounds in a row in which only yielding threads (spinning on an mbarrier) could go on, after
# which the block is taken as hung: nothing else moves, and a GPU would spin forever.
YIELD_ROUNDS = 10_000


# --- run time: the operations' tables ---------------------------------------------------------

@dataclass(frozen=True)
class _Group:
    """Warp operations that meet each other: the same qualifiers (a `.sync` operation), or
    one instruction (operations with no member mask)."""

    kind: str
    inst: ir.Instruction
    masked: bool


class _Table:
    """Per-point lookup arrays (index = point number) built once per kernel."""

    def __init__(self, plan):
        size = max(plan.sync_points, default=0) + 1
        self.kind = np.zeros(size, np.int8)
        self.group = np.full(size, -1, np.int32)
        self.waits = np.zeros(size, bool)           # CTA barrier that waits (sync, red)
        self.redop = np.zeros(size, np.int8)        # 1 popc, 2 and, 3 or
        self.groups: list[_Group] = []
        keys: dict = {}
        for number, point in plan.sync_points.items():
            inst = point.inst
            kind = wait_kind(inst)
            if kind == "mbarrier":
                self.kind[number] = YIELD
                continue
            if kind == "cta":
                self.kind[number] = CTA_BARRIER
                self.waits[number] = inst.spec.get("op") != "arrive"
                self.redop[number] = {"popc": 1, "and": 2, "or": 3}.get(
                    inst.spec.get("redop"), 0)
                continue
            if kind in ("cluster.arrive", "cluster.wait"):
                self.kind[number] = CLUSTER_ARRIVE if kind == "cluster.arrive" else \
                    CLUSTER_WAIT
                continue
            self.kind[number] = WARP_OPERATION
            # (mma.sync.aligned has no member mask: the whole warp takes part)
            masked = (inst.spec.has("sync") or kind == "bar.warp") and kind not in (
                "mma", "ldmatrix")
            key = (kind, frozenset(inst.spec.modifiers)) if masked else number
            if key not in keys:
                keys[key] = len(self.groups)
                self.groups.append(_Group(kind, inst, masked))
            self.group[number] = keys[key]
        self.has = {kind: bool((self.kind == kind).any()) for kind in
                    (CTA_BARRIER, CLUSTER_ARRIVE, CLUSTER_WAIT, YIELD)}


class Slots:
    """numpy views of the exchange slots of every thread's frame, and the block's
    synchronization state that outlives one round (barrier phases)."""

    def __init__(self, frames: np.ndarray, frame_size: int, count: int, offsets: dict):
        self._views = {
            name: np.ndarray((count,), np.uint64, frames, offsets[name], (frame_size,))
            for name in ("in0", "in1", "in2", "in3", "in4", "in5", "out0", "out1")}
        self.count = count
        self.warps = (count + 31) // 32
        self._plan = self._table = None
        self.pending = np.zeros(BARRIERS, np.int64)       # warps that arrived and went on
        self.expected = np.zeros(BARRIERS, np.int64)      # warps the current phase needs
        self.cluster_arrived = np.zeros(count, bool)
        self.cluster_arrival_phase = np.full(count, -1, np.int64)
        self.start_block()

    def __getitem__(self, name: str) -> np.ndarray:
        return self._views[name]

    def start_block(self) -> None:
        """Forget the previous block's barrier state (the executor calls this before each
        block it hands to `resolve`)."""
        self.cluster_phase = 0
        self.yield_rounds = 0
        self.pending.fill(0)
        self.expected.fill(0)
        self.cluster_arrived.fill(False)
        self.cluster_arrival_phase.fill(-1)

    def table(self, plan) -> _Table:
        if self._plan is not plan:
            self._plan, self._table = plan, _Table(plan)
        return self._table


# --- run time: one resolution -----------------------------------------------------------------

_LANES = np.arange(32, dtype=np.uint64)


def _pack(flags: np.ndarray) -> np.ndarray:
    """Rows of 32 booleans (lane order) as uint64 bit masks."""
    packed = np.packbits(flags, axis=-1, bitorder="little")
    return packed.view("<u4")[..., 0].astype(np.uint64)


def _unpack(masks: np.ndarray) -> np.ndarray:
    """uint64 bit masks as rows of 32 booleans."""
    return ((masks[:, None] >> _LANES) & np.uint64(1)).astype(bool)


class _Round:
    """What one call of `resolve` knows about the block: who waits where, who has exited."""

    def __init__(self, plan, table: _Table, points, statuses, slots: Slots, blocked,
                 exited_status):
        self.plan, self.table, self.slots = plan, table, slots
        self.count = slots.count
        self.point = np.where(blocked, points, 0)
        self.point[self.point >= table.kind.size] = 0
        self.kind = table.kind[self.point]
        exited = np.ones(slots.warps * 32, bool)
        exited[:self.count] = statuses == exited_status
        self.exited = exited[:self.count]
        self.gone = _pack(exited.reshape(slots.warps, 32))     # exited or nonexistent lanes
        self.release = np.zeros(self.count, bool)

    def warp_bits(self, flags: np.ndarray) -> np.ndarray:
        """Per warp, the lanes whose thread has `flags` set."""
        padded = np.zeros(self.slots.warps * 32, bool)
        padded[:self.count] = flags
        return _pack(padded.reshape(-1, 32))

    def lanes(self, values: np.ndarray, fill=0) -> np.ndarray:
        """Per-thread values as a (warps, 32) matrix."""
        padded = np.full(self.slots.warps * 32, fill, values.dtype)
        padded[:self.count] = values
        return padded.reshape(-1, 32)

    def error(self, thread: int, message: str) -> KernelExecutionError:
        point = self.plan.sync_points[int(self.point[thread])]
        place = where(self.plan.source_lines.source_line(point.line), point.line)
        return KernelExecutionError(
            f"kernel '{self.plan.name}', at {place} ('{point.inst.spec.text}'), "
            f"thread {thread}: {message}")


def resolve(plan, points: np.ndarray, statuses: np.ndarray, slots: Slots,
            blocked_status: int, runnable_status: int, exited_status: int) -> bool:
    """Complete every operation that can complete; True if any thread can run again."""
    blocked = statuses == blocked_status
    if not blocked.any():
        return False
    state = _Round(plan, slots.table(plan), points, statuses, slots, blocked, exited_status)
    _resolve_warp_operations(state, masked=True)
    if state.table.has[CTA_BARRIER]:
        _resolve_cta_barriers(state)
    if state.table.has[CLUSTER_ARRIVE] or state.table.has[CLUSTER_WAIT]:
        _resolve_cluster_barrier(state)
    if not state.release.any():
        _resolve_warp_operations(state, masked=False)
    slots.yield_rounds = 0 if state.release.any() else slots.yield_rounds + 1
    if not state.release.any() and state.table.has[YIELD]:
        # threads spinning on an mbarrier go on when nothing else can: the others have
        # done what they could before them
        state.release |= state.kind == YIELD
        if state.release.any() and slots.yield_rounds > YIELD_ROUNDS:
            t = int(np.flatnonzero(state.release)[0])
            raise state.error(t, f"threads wait on an mbarrier whose phase never completes "
                                 f"({YIELD_ROUNDS} rounds in which no other thread of the "
                                 "block moved; a GPU would hang)")
    if not state.release.any():
        return False
    statuses[state.release] = runnable_status
    return True


def _resolve_warp_operations(state: _Round, masked: bool) -> None:
    slots = state.slots
    group_of = state.table.group[state.point]
    present = np.zeros(len(state.table.groups) + 1, bool)
    present[group_of] = True                        # (-1, no group, marks the last)
    for g in np.flatnonzero(present[:-1]):
        group = state.table.groups[int(g)]
        if group.masked != masked:
            continue
        at = group_of == g
        threads = np.flatnonzero(at)
        warp = threads >> 5
        here = state.warp_bits(at)[warp]
        if masked:
            mask = slots["in3"][threads] & np.uint64(FULL_MASK)
            lane_bit = np.uint64(1) << (threads & 31).astype(np.uint64)
            outside = np.flatnonzero((mask & lane_bit) == 0)
            if outside.size:
                t = int(threads[outside[0]])
                raise state.error(t, f"lane {t % 32} is not in its member mask "
                                     f"{int(mask[outside[0]]):#010x} (undefined in PTX)")
            missing = mask & ~(here | state.gone[warp]) & np.uint64(FULL_MASK)
            ready = missing == 0
            threads, part = threads[ready], (mask & here)[ready]
        else:
            part = here
        if threads.size:
            _OPERATIONS[group.kind](state, group.inst, at, threads, part)
            state.release[threads] = True


def _resolve_cta_barriers(state: _Round) -> None:
    slots = state.slots
    at_barrier = state.kind == CTA_BARRIER
    if not at_barrier.any():
        return
    names = (slots["in0"] & np.uint64(FULL_MASK)).astype(np.int64)
    bad = np.flatnonzero(at_barrier & (names >= BARRIERS))
    if bad.size:
        t = int(bad[0])
        raise state.error(t, f"barrier {names[t]} does not exist (a CTA has barriers 0..15)")
    live_warps = int(np.count_nonzero(state.gone != FULL_MASK))
    for name in np.unique(names[at_barrier]):
        _resolve_cta_barrier(state, int(name), at_barrier & (names == name), live_warps)


def _resolve_cta_barrier(state: _Round, name: int, at: np.ndarray, live_warps: int) -> None:
    slots, table = state.slots, state.table
    here = state.warp_bits(at)
    arrived = np.flatnonzero((here != 0) & ((here | state.gone) == FULL_MASK))
    if arrived.size == 0:
        return
    warps = arrived          # arrivals of one round: in warp order (PTX leaves it open)
    waits = (state.warp_bits(at & table.waits[state.point]) != 0)[warps]
    pending = int(slots.pending[name])
    needed = int(slots.expected[name]) if pending else \
        _warps_needed(state, warps[0], here, live_warps)
    position = pending + np.arange(1, warps.size + 1)
    phases = (pending + warps.size) // needed
    completed = position <= phases * needed
    left_pending = ~waits & ~completed
    slots.pending[name] = (pending if phases == 0 else 0) + int(np.count_nonzero(left_pending))
    slots.expected[name] = needed if slots.pending[name] else 0
    go = np.zeros(slots.warps, bool)
    go[warps[~waits | completed]] = True
    threads = np.flatnonzero(at & np.repeat(go, 32)[:state.count])
    phase_of_warp = np.full(slots.warps, -1, np.int64)
    phase_of_warp[warps[completed]] = (position[completed] - 1) // needed
    _reduce_barrier(state, threads, phase_of_warp[threads >> 5], max(phases, 1))
    state.release[threads] = True


def _warps_needed(state: _Round, first_warp: int, here: np.ndarray, live_warps: int) -> int:
    """How many warp arrivals complete a barrier phase, from its first arrival's operands."""
    slots = state.slots
    lowest = int(here[first_warp]) & -int(here[first_warp])
    t = int(first_warp) * 32 + lowest.bit_length() - 1
    if not int(slots["in2"][t]) & 1:
        return live_warps
    count = int(slots["in1"][t]) & FULL_MASK
    if count == 0:
        raise state.error(t, "a barrier's thread count must not be 0")
    return (count + 31) // 32


def _reduce_barrier(state: _Round, threads, phase, phases: int) -> None:
    """bar.red's results: popc, and, or of c over the waiting threads of each phase."""
    slots, table = state.slots, state.table
    redop = table.redop[state.point[threads]]
    reducing = (redop > 0) & (phase >= 0)
    if not reducing.any():
        return
    threads, phase, redop = threads[reducing], phase[reducing], redop[reducing]
    c = (slots["in3"][threads] & np.uint64(1)).astype(np.int64)
    true = np.bincount(phase, weights=c, minlength=phases).astype(np.int64)
    total = np.bincount(phase, minlength=phases)
    result = np.select([redop == 1, redop == 2],
                       [true[phase], true[phase] == total[phase]], true[phase] > 0)
    slots["out0"][threads] = result.astype(np.uint64)


def _resolve_cluster_barrier(state: _Round) -> None:
    """barrier.cluster.arrive/wait with a cluster of one CTA."""
    slots = state.slots
    arriving = np.flatnonzero(state.kind == CLUSTER_ARRIVE)
    slots.cluster_arrived[arriving] = True
    slots.cluster_arrival_phase[arriving] = slots.cluster_phase
    state.release[arriving] = True
    if slots.cluster_arrived.any() and (slots.cluster_arrived | state.exited).all():
        slots.cluster_phase += 1
        slots.cluster_arrived[:] = False
    waiting = np.flatnonzero(state.kind == CLUSTER_WAIT)
    state.release[waiting[slots.cluster_arrival_phase[waiting] < slots.cluster_phase]] = True


def _warp_barrier(state, inst, at, threads, part) -> None:
    """bar.warp.sync: the lanes named in the mask have all arrived; nothing to compute."""


def _shfl(state, inst, at, threads, part) -> None:
    """shfl{.sync}.{up,down,bfly,idx}.b32 (PTX ISA 9.7.9.6). A source lane that does not
    take part gives an unpredictable value in PTX: here, whatever its slot holds."""
    slots = state.slots
    mode = inst.spec.get("mode")
    lane = (threads & 31).astype(np.int64)
    b = (slots["in1"][threads] & np.uint64(0x1F)).astype(np.int64)
    c = slots["in2"][threads].astype(np.int64)
    j, valid = shuffle_sources(mode, lane, b, c)
    source = np.minimum(threads - lane + j, state.count - 1)
    slots["out0"][threads] = slots["in0"][source] & np.uint64(FULL_MASK)
    slots["out1"][threads] = valid.astype(np.uint64)


def _vote(state, inst, at, threads, part) -> None:
    """vote{.sync}: .all .any .uni over the lanes taking part; .ballot: their predicates."""
    slots = state.slots
    true = state.warp_bits(at & ((slots["in0"] & np.uint64(1)) != 0))[threads >> 5]
    mode = inst.spec.get("mode")
    if mode == "ballot":
        result = true & part
    elif mode == "all":
        result = (part & ~true) == 0
    elif mode == "any":
        result = (part & true) != 0
    else:
        result = ((part & true) == 0) | ((part & ~true) == 0)
    slots["out0"][threads] = result.astype(np.uint64)


def _activemask(state, inst, at, threads, part) -> None:
    """activemask: the lanes of the warp at this instruction (see the module's notes)."""
    state.slots["out0"][threads] = part


def _match(state, inst, at, threads, part) -> None:
    """match.{any,all}.sync: lanes taking part whose value equals this lane's."""
    slots = state.slots
    width = np.uint64(FULL_MASK if inst.spec.types[0] == "b32" else 0xFFFFFFFFFFFFFFFF)
    values = slots["in0"] & width
    same = _pack(state.lanes(values)[threads >> 5] == values[threads][:, None]) & part
    if inst.spec.get("mode") == "any":
        slots["out0"][threads] = same
        return
    uniform = same == part
    slots["out0"][threads] = np.where(uniform, part, np.uint64(0))
    slots["out1"][threads] = uniform.astype(np.uint64)


def _redux(state, inst, at, threads, part) -> None:
    """redux.sync over the lanes taking part (PTX ISA 9.7.13.12)."""
    slots = state.slots
    # Lanes that take part together get one result: reduce once per run of threads with
    # the same warp and lanes (usually a warp, or the part of it one mask names).
    keys = (threads >> 5).astype(np.uint64) << np.uint64(32) | part
    starts = np.ones(keys.size, bool)
    np.not_equal(keys[1:], keys[:-1], out=starts[1:])
    groups, which = keys[starts], np.cumsum(starts) - 1
    values = state.lanes(slots["in0"] & np.uint64(FULL_MASK))[groups >> np.uint64(32)]
    taking_part = _unpack(groups & np.uint64(FULL_MASK))
    op, typ = inst.spec.get("op"), inst.spec.types[0]
    if typ == "f32":
        result = _redux_float(values, taking_part, op, inst.spec.has("abs"),
                              inst.spec.has("NaN"))
    elif op in ("min", "max") and typ == "s32":
        signed = values.astype(np.uint32).view(np.int32).astype(np.int64)
        limit = np.iinfo(np.int32).max if op == "min" else np.iinfo(np.int32).min
        chosen = np.where(taking_part, signed, limit)
        result = (chosen.min(axis=1) if op == "min" else chosen.max(axis=1)) & FULL_MASK
    else:
        identity = {"add": 0, "or": 0, "xor": 0, "max": 0, "and": FULL_MASK, "min": FULL_MASK}
        chosen = np.where(taking_part, values, np.uint64(identity[op]))
        reduce = {"add": np.add, "and": np.bitwise_and, "or": np.bitwise_or,
                  "xor": np.bitwise_xor, "min": np.minimum, "max": np.maximum}[op]
        result = reduce.reduce(chosen, axis=1) & np.uint64(FULL_MASK)
    slots["out0"][threads] = np.asarray(result).astype(np.uint64)[which]


def _redux_float(bits, taking_part, op: str, absolute: bool, nan: bool) -> np.ndarray:
    """min/max of f32 bit patterns with -0.0 < +0.0; NaNs are skipped (or, with .NaN,
    make the result NaN); no value left gives the canonical NaN."""
    bits = bits.astype(np.uint32)
    if absolute:
        bits = bits & np.uint32(0x7FFFFFFF)
    is_nan = (bits & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
    negative = (bits >> np.uint32(31)) == 1
    key = np.where(negative, ~bits, bits | np.uint32(0x80000000))   # order as unsigned ints
    usable = taking_part & ~is_nan
    if op == "min":
        best = np.where(usable, key, np.uint32(FULL_MASK)).min(axis=1)
    else:
        best = np.where(usable, key, np.uint32(0)).max(axis=1)
    result = np.where(best >= np.uint32(0x80000000), best & np.uint32(0x7FFFFFFF), ~best)
    no_value = ~usable.any(axis=1)
    if nan:
        no_value |= (taking_part & is_nan).any(axis=1)
    return np.where(no_value, np.uint32(CANONICAL_NAN_F32), result)


def _elect(state, inst, at, threads, part) -> None:
    """elect.sync: the lowest lane taking part is the leader (deterministic, as PTX asks)."""
    lowest = part & (~part + np.uint64(1))
    leader = np.log2(lowest.astype(np.float64)).astype(np.uint64)
    state.slots["out0"][threads] = leader
    state.slots["out1"][threads] = (leader == (threads & 31).astype(np.uint64)).astype(
        np.uint64)


def _mma(state, inst, at, threads, part) -> None:
    """mma.sync.aligned m16n8k16 / m16n8k8 .row.col with f16 or bf16 inputs (PTX ISA
    9.7.14.5.8, "Matrix Fragments for mma.m16n8k16 with floating point type", and m16n8k8):
    D = A * B + C for each warp whose 32 lanes are all here. The products of 16-bit inputs are
    exact in f64, and so is their sum with C (f32 or f16) up to 2^-50 relative: D is that
    sum rounded once to D's type (to nearest even); PTX does not fix the order or the
    intermediate precision of the accumulation, and an H100's differs from this in the last
    bit for some inputs."""
    slots = state.slots
    form = mma_form(inst)
    shape, d_type, a_type, _, c_type = form
    k_size = 16 if shape == "m16n8k16" else 8
    counts = MMA_FORMS[form]
    warps = np.unique(threads >> 5)
    for w in warps:
        lanes = np.arange(32) + 32 * int(w)
        if lanes[-1] >= state.count or not at[lanes].all():
            t = int(threads[(threads >> 5) == w][0])
            raise state.error(t, "mma.sync.aligned needs all 32 lanes of the warp at the same "
                                 "mma (undefined in PTX otherwise)")
        words = np.stack([(slots[f"in{k // 2}"][lanes] >> np.uint64(32 * (k % 2)))
                          & np.uint64(FULL_MASK) for k in range(sum(
                              counts[x] for x in "abc"))], axis=1).astype(np.uint32)
        a_words = words[:, :counts["a"]]
        b_words = words[:, counts["a"]:counts["a"] + counts["b"]]
        c_words = words[:, counts["a"] + counts["b"]:]
        a = _halves(a_words, a_type)            # (32, 2*counts["a"]) elements a0, a1, ...
        b = _halves(b_words, a_type)
        group, quad = np.arange(32) >> 2, np.arange(32) & 3
        A = np.zeros((16, k_size))
        B = np.zeros((k_size, 8))
        for i in range(a.shape[1]):
            row = group + (8 if (i // 2) % 2 else 0)
            col = quad * 2 + (i & 1) + (8 if i >= 4 else 0)
            A[row, col] = a[:, i]
        for i in range(b.shape[1]):
            B[quad * 2 + (i & 1) + (8 if i >= 2 else 0), group] = b[:, i]
        c = c_words.view(np.float32).astype(np.float64) if c_type == "f32" else \
            _halves(c_words, "f16")
        C = np.zeros((16, 8))
        for i in range(4):
            C[group + (8 if i >= 2 else 0), quad * 2 + (i & 1)] = c[:, i]
        D = A @ B + C
        d = np.stack([D[group + (8 if i >= 2 else 0), quad * 2 + (i & 1)] for i in range(4)],
                     axis=1)
        if d_type == "f32":
            out = d.astype(np.float32).view(np.uint32).astype(np.uint64)
            slots["out0"][lanes] = out[:, 0] | (out[:, 1] << np.uint64(32))
            slots["out1"][lanes] = out[:, 2] | (out[:, 3] << np.uint64(32))
        else:
            out = d.astype(np.float16).view(np.uint16).astype(np.uint64)
            pair0 = out[:, 0] | (out[:, 1] << np.uint64(16))
            pair1 = out[:, 2] | (out[:, 3] << np.uint64(16))
            slots["out0"][lanes] = pair0 | (pair1 << np.uint64(32))


def _ldmatrix(state, inst, at, threads, part) -> None:
    """ldmatrix.sync.aligned.m8n8.num{.trans}.b16 (PTX ISA 9.7.14.5.15): lane 8j + r gives
    the address of row r of matrix j; each lane l receives, in its register j, the elements
    (l / 4, 2 (l % 4)) and (l / 4, 2 (l % 4) + 1) of matrix j (of its transpose with
    .trans), the lower column in the lower half."""
    slots = state.slots
    count = int(inst.spec.get("num")[1])
    transposed = inst.spec.has("trans")
    lane = np.arange(32)
    for w in np.unique(threads >> 5):
        lanes = lane + 32 * int(w)
        if lanes[-1] >= state.count or not at[lanes].all():
            t = int(threads[(threads >> 5) == w][0])
            raise state.error(t, "ldmatrix.sync.aligned needs all 32 lanes of the warp at the "
                                 "same ldmatrix (undefined in PTX otherwise)")
        words = []
        for j in range(count):
            rows = [np.frombuffer(ctypes.string_at(int(slots["in0"][lanes[8 * j + r]]), 16),
                                  np.uint16) for r in range(8)]
            matrix = np.stack(rows)
            if transposed:
                matrix = matrix.T
            low = matrix[lane // 4, (lane % 4) * 2].astype(np.uint64)
            high = matrix[lane // 4, (lane % 4) * 2 + 1].astype(np.uint64)
            words.append(low | (high << np.uint64(16)))
        for k in range(0, count, 2):
            high = words[k + 1] << np.uint64(32) if k + 1 < count else np.uint64(0)
            slots[f"out{k // 2}"][lanes] = words[k] | high


def _halves(words: np.ndarray, kind: str) -> np.ndarray:
    """Registers holding two 16-bit floats each (low half first) as (lanes, 2*registers)
    float64 values."""
    halves = np.stack([words & 0xFFFF, words >> 16], axis=2).reshape(words.shape[0], -1)
    halves = halves.astype(np.uint16)
    if kind == "bf16":
        return (halves.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return halves.view(np.float16).astype(np.float64)


_OPERATIONS = {"bar.warp": _warp_barrier, "shfl": _shfl, "vote": _vote, "match": _match,
               "redux": _redux, "elect": _elect, "activemask": _activemask, "mma": _mma,
               "ldmatrix": _ldmatrix}
