"""Guarded runs: straight-line code whose every lasting effect is guarded by one predicate,
jumped over by a warp in which no lane has it.

Triton 3.6's cross-warp reductions (tl.max, tl.sum over a row with 4 warps) have a middle
stage, between two barriers, that only lanes 0-3 of warp 0 need:

    @%p6 ld.shared.b32      %r30, [%r34];          // %p6: tid < 4, the warps' slots
    shfl.sync.bfly.b32      %r60, %r30, 2, 31, -1;
    max.f32                 %r61, %r30, %r60;
    shfl.sync.bfly.b32      %r62, %r61, 1, 31, -1;
    max.f32                 %r31, %r61, %r62;
    @%p7 st.shared.b32      [%r34], %r31;          // %p7 = %p6 and tid % 4 == 0

Every warp ran it: two shuffles and two maxima of 32 lanes (PTX's max with its NaN and
signed-zero rules), the shared accesses' checks and the round's bookkeeping; one worker,
in cache, the 4-warp softmax took 12% less time without it. Such a run becomes one of the
gang lowering's skippable runs (lowering._lower_skippable, as for if_convert.py's guarded
regions): a warp whose mask has no lane with the predicate jumps over it.

A run qualifies when, inside one basic block:
- each instruction is either guarded (not negated) by a predicate that implies the run's
  predicate q (q itself, or an `and.pred` with q among its operands, each written once in
  the kernel, so that the implication holds wherever they are read), or unguarded and
  pure (arithmetic, moves, conversions, shfl.sync): no unguarded memory access (it could
  fault), and no branch, barrier, call or return, guarded or not;
- the registers its unguarded instructions write are not live after it: no lane reads
  what a skipped run would have written (a guarded write does nothing where no lane has
  q, so skipping it changes nothing);
- it has at least two instructions and a guarded memory access (a single guarded
  access already does nothing where no lane is active).
Skipping then changes nothing a thread can see: the guarded instructions would run in no
lane, and what the unguarded ones computed is never read. A shuffle skipped by the whole
warp waits for no lane.
"""

from __future__ import annotations

from collections import Counter

from ptxport.codegen.targets.cpu.gang.chains import PURE
from ptxport.ir import nodes as ir
from ptxport.ir.analysis import live_before, may_write, uses_and_defs

__all__ = ["guarded_runs"]

# unguarded instructions a run may hold (what they compute stays in registers)
_UNGUARDED = PURE | {"shfl", "min", "max", "ex2", "rcp", "div", "neg", "abs"}
# guarded instructions a run may hold: the pure ones, and memory accesses
_ACCESSES = frozenset({"ld", "st", "atom", "red"})
_MIN_LENGTH = 2


def guarded_runs(kernel: ir.Function, skips: dict) -> dict[int, tuple[ir.Register, int]]:
    """id(first instruction) -> (predicate, length) of each guarded run of `kernel` that
    lies outside the runs already in `skips` (same keys and values: if_convert.py's)."""
    implied = _Implications(kernel)
    counts = Counter(id(inst) for inst in kernel.instructions())
    candidates = []         # (block, start, [ends: indices of its guarded instructions])
    for block in kernel.blocks:
        code = block.instructions
        taken = _taken(code, skips)
        i = 0
        while i < len(code):
            ends, q = _grow(code, i, taken, implied)
            if ends and counts[id(code[i])] == 1:
                candidates.append((block, i, ends, q))
                i = ends[-1] + 1
            else:
                i += 1
    if not candidates:
        return {}
    live = live_before(kernel, {(id(block), end + 1) for block, _, ends, _ in candidates
                                for end in ends})
    found = {}
    for block, start, ends, q in candidates:
        code = block.instructions
        for end in reversed(ends):
            run = code[start:end + 1]
            if len(run) < _MIN_LENGTH or not any(
                    inst.guard is not None and inst.opcode in _ACCESSES for inst in run):
                break
            written = set().union(*(may_write(inst) for inst in run if inst.guard is None))
            if not written & live[(id(block), end + 1)]:
                found[id(code[start])] = (q, len(run))
                break
    return found


def _taken(code: list, skips: dict) -> set[int]:
    """Indices of `code` inside the runs of `skips`."""
    taken: set[int] = set()
    for i, inst in enumerate(code):
        if id(inst) in skips:
            taken.update(range(i, i + skips[id(inst)][1]))
    return taken


def _grow(code: list, start: int, taken: set[int], implied: _Implications
          ) -> tuple[list[int], ir.Register | None]:
    """From code[start] (a guarded instruction), the longest run whose guards all imply one
    predicate: (the indices of its guarded instructions, that predicate); ([], None)."""
    first = code[start]
    if start in taken or not _guarded_ok(first):
        return [], None
    common = set(implied(first.guard))
    ends = [start]
    for j in range(start + 1, len(code)):
        inst = code[j]
        if j in taken:
            break
        if inst.guard is None:
            if inst.opcode not in _UNGUARDED:
                break
            continue
        if not _guarded_ok(inst) or not common & implied(inst.guard):
            break
        common &= implied(inst.guard)
        ends.append(j)
    # the strongest common predicate: the one that implies the others (lanes without it
    # are the most), else any, by name for a stable choice
    strongest = [q for q in common if common <= implied(q)]
    q = min(strongest or common, key=lambda r: r.name)
    return ends, q


def _guarded_ok(inst: ir.Instruction) -> bool:
    return inst.guard is not None and not inst.guard_negated and (
        inst.opcode in _ACCESSES or inst.opcode in _UNGUARDED)


class _Implications:
    """predicate register -> the predicates it implies (itself, and through `and.pred` of
    registers written once, their operands' implications)."""

    def __init__(self, kernel: ir.Function):
        writes: Counter = Counter()
        self.definition: dict = {}
        for inst in kernel.instructions():
            for register in may_write(inst):
                writes[register] += 1
                self.definition[register] = inst
        self.once = {r for r, n in writes.items() if n == 1}
        self.known: dict = {}

    def __call__(self, p: ir.Register) -> frozenset:
        found = self.known.get(p)
        if found is None:
            self.known[p] = frozenset({p})      # (a cycle: nothing more)
            found = {p}
            inst = self.definition.get(p)
            if p in self.once and inst is not None and inst.opcode == "and" \
                    and inst.guard is None and inst.spec.types[0] == "pred":
                for source in uses_and_defs(inst)[0]:
                    if source in self.once:
                        found |= self(source)
            found = self.known[p] = frozenset(found)
        return found
