"""Warp gangs: the FMA chains of a dot product's inner loop put side by side before lowering,
and chains of f32 max or min made balanced trees (balance_chains, below).

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

__all__ = ["PURE", "balance_chains", "interleave_chains"]

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


def balance_chains(code: list, fl) -> list:
    """`code` with each chain of f32 max (or min) instructions, d1 = max(a, b), d2 = max(d1,
    c), ..., whose links d1, d2... are each written once and read once in the kernel (by the
    next max) and live in this segment alone, as a balanced tree over the same leaves: the
    same result, bit for bit (PTX's max and min pick one of their operands by a total order
    in which -0 lies below +0 and a NaN operand counts as absent, two NaNs giving the
    canonical NaN: associative and commutative), with the dependent steps log2(n) instead
    of n (a softmax's row maximum: 31 steps a lane with one warp a row, 7 with four). The
    links hold the tree's inner nodes; a segment with skippable runs stays as it is."""
    if any(id(inst) in fl.skips for inst in code):
        return code
    counts = _counts(fl)
    out: list = []
    i = 0
    while i < len(code):
        chain = _chain(code, i, counts, fl)
        if len(chain) < 3:
            out.append(code[i])
            i += 1
            continue
        out += _tree(chain)
        i += len(chain)
    return out


def _plain_min_max(inst: ir.Instruction) -> bool:
    return inst.opcode in ("min", "max") and inst.spec.modifiers == ("f32",) \
        and inst.guard is None and len(inst.operands) == 3 \
        and all(isinstance(v, ir.Register) and v.vector is None for v in inst.operands)


def _chain(code: list, i: int, counts: dict, fl) -> list:
    """The chain that starts at code[i] (its instructions; fewer than 3: none)."""
    first = code[i]
    if not _plain_min_max(first):
        return []
    chain = [first]
    for inst in code[i + 1:]:
        link = chain[-1].operands[0]
        if not _plain_min_max(inst) or inst.opcode != first.opcode \
                or counts.get(id(link)) != (1, 1) or link in fl.uniform \
                or link in fl.crossing or list(inst.operands[1:]).count(link) != 1:
            break
        chain.append(inst)
    return chain


def _tree(chain: list) -> list:
    """The chain's leaves combined pairwise, level by level, into its last destination; its
    other destinations hold the inner nodes (its first instruction, the first pair's, stays
    as it is)."""
    leaves = list(chain[0].operands[1:])
    for inst, before in zip(chain[1:], chain, strict=False):
        leaves.append(next(v for v in inst.operands[1:] if v is not before.operands[0]))
    nodes = [inst.operands[0] for inst in chain[:-1]]
    final, spec = chain[-1].operands[0], chain[0].spec
    out: list = []
    level = leaves
    while len(level) > 1:
        following = []
        for k in range(0, len(level) - 1, 2):
            dest = final if len(level) == 2 else nodes.pop(0)
            out.append(chain[0] if not out else ir.Instruction(
                spec, (dest, level[k], level[k + 1]), pos=chain[-1].pos))
            following.append(dest)
        level = following + level[len(level) - len(level) % 2:]
    return out


def _counts(fl) -> dict:
    """id(register) -> (writes, reads) in the kernel, once per kernel."""
    counts = fl.chain_counts
    if counts is None:
        counts = {}
        for inst in fl.function.instructions():
            reads, _ = uses_and_defs(inst)
            for reg in may_write(inst):
                w, r = counts.get(id(reg), (0, 0))
                counts[id(reg)] = (w + 1, r)
            for reg in reads:
                w, r = counts.get(id(reg), (0, 0))
                counts[id(reg)] = (w, r + 1)
        fl.chain_counts = counts
    return counts
