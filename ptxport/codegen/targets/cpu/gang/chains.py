"""Warp gangs: the FMA chains of a dot product's inner loop put side by side before lowering.

Triton 3.9 emits its IEEE f32 `tl.dot` accumulator by accumulator: the 32 FMAs of one
accumulator's k loop, then the next accumulator's. Each FMA waits for the one before (4
cycles), and a warp's 8 accumulators are 16 vector registers: lowered in that order, LLVM
keeps the order in so long a block, and the core, whose window holds about two chains at a
time, waits on their latency (Triton 3.6 emits the same FMAs k by k). Here a run of a
segment's pure instructions (no memory, no control, no warp operation) made mostly of FMAs is
reordered by depth: each instruction after those it depends on through registers (read after
write, write after read, write after write), at the position of its longest chain of them,
in program order among equals, so the k-th FMA of every accumulator comes before any
(k+1)-th. The result is the same: only independent instructions change places.
"""

from __future__ import annotations

from ptxport.ir import nodes as ir
from ptxport.ir.analysis import may_write, uses_and_defs

__all__ = ["PURE", "interleave_chains"]

PURE = frozenset({"add", "sub", "mul", "mad", "fma", "neg", "abs", "min", "max", "mov",
                   "setp", "selp", "cvt", "and", "or", "xor", "not", "shl", "shr", "bfe"})
# a run is reordered when it is at least this long and this share of it is FMAs: a dot
# product's loop, not the address arithmetic of other kernels, whose order is left as written
_LONGEST = 64
_FMA_SHARE = 0.75


def interleave_chains(code: list, skips: dict) -> list:
    """`code` (a segment's instructions) with each long run of pure instructions that is
    mostly FMAs in depth order; a segment with if_convert's skippable runs (`skips`, keyed
    by their first instruction's id) stays as it is."""
    if any(id(inst) in skips for inst in code):
        return code
    out: list = []
    run: list = []
    for inst in code:
        if inst.opcode in PURE and id(inst) not in skips and not _special(inst):
            run.append(inst)
            continue
        out += _by_depth(run)
        run = []
        out.append(inst)
    return out + _by_depth(run)


def _special(inst: ir.Instruction) -> bool:
    """Whether a mov reads a special register (%tid, %clock...: some change as the warp
    runs)."""
    return inst.opcode == "mov" and any(isinstance(v, ir.SpecialRegister)
                                        for v in inst.operands[1:])


def _by_depth(run: list) -> list:
    if len(run) < _LONGEST or sum(i.opcode in ("fma", "mad") for i in run) \
            < _FMA_SHARE * len(run):
        return run
    depth: list[int] = []
    last_write: dict = {}       # register -> index of its last writer
    reads_since: dict = {}      # register -> indices that read it since that write
    for n, inst in enumerate(run):
        reads, _ = uses_and_defs(inst)
        if inst.guard is not None:
            reads = reads | {inst.guard}
        writes = may_write(inst)
        before = [last_write[r] for r in reads | writes if r in last_write]
        before += [i for r in writes for i in reads_since.get(r, ())]
        depth.append(1 + max((depth[i] for i in before), default=-1))
        for r in reads:
            reads_since.setdefault(r, []).append(n)
        for r in writes:
            last_write[r] = n
            reads_since[r] = []
    order = sorted(range(len(run)), key=lambda n: (depth[n], n))
    return [run[n] for n in order]
