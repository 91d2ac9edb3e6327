"""Which registers of a warp-gang kernel hold one value for the whole warp (the CPU's warp
gangs, codegen/targets/cpu/gang/, keep those as scalars instead of 32-lane vectors).

A register is *uniform* when every lane that reads it reads the same value. the gang lowering stores
such a register once per warp, so every write of it must be made by all the warp's running
lanes together, with a value that is the same in each. Here a register is uniform when all
its writes

- compute a value that is the same in every lane: an arithmetic, logic, comparison or
  conversion instruction (or a load from one address) whose register operands are uniform
  and which reads no per-lane special register (%tid, %laneid, %lanemask_*);
- are unguarded or guarded by a uniform predicate; and
- lie in *converged* blocks: blocks that the warp's live lanes only ever run all together.

A block is not converged when it lies in the region of a *divergent* branch (one whose
predicate is not uniform). The min-PC scheduler (codegen/targets/cpu/gang/) runs the lanes with
the lowest segment number first, so lanes that split at a branch in block B meet again, all of
them, at its immediate post-dominator P when every block of the region between them (the blocks
reachable from B without passing P) lies after B and before P in program order, the region is
entered only from B, and no lane can stop in it at a barrier or a warp operation: then the
region's blocks are not converged and P is. The same holds for a loop's branch (B in its own
region: a backward branch, or a loop's exit test) when the loop lies before P and is entered
from elsewhere only at its first block, from blocks before it: lanes that left wait at P
while any lane is still in the loop (a grid-stride loop before a warp reduction). A branch
whose other side only returns (`@p bra RET` to a block holding just `ret`) splits nothing:
those lanes exit. For any other divergent branch, everything reachable from it is not
converged. Uniformity of registers and of branches depend on each other; the analysis
starts from "every register uniform" and marks registers varying until nothing changes.

A *block constant* is uniform wherever it is written: a register with one write, unguarded,
computing from immediates, kernel parameters, the launch's shape and the block's index
(%ntid, %nctaid, %ctaid) and other block constants. Each lane that runs the write gets the
same value, each time, and a lane that did not run it has never written the register (its
value there is undefined, so reading the warp's one value is a valid outcome): a grid-stride
loop's `blockDim.x * gridDim.x` and its array's global address, computed after the branch
that leaves out the threads past the end where the loop comes before a barrier or a warp
operation (a block reduction).
"""

from __future__ import annotations

from ptxport.ir import nodes as ir
from ptxport.ir.analysis import may_write, predecessors, state_space, uses_and_defs
from ptxport.passes import PassResult
from ptxport.ptx.ast import FloatImm, IntImm

__all__ = ["block_constants", "converged_writers", "immediate_post_dominator", "only_returns",
           "post_dominators", "run", "thread_x_copies", "uniform_registers", "warp_index_of",
           "warp_uniform_indices"]

# Instructions whose result is the same in every lane when their operands are.
_VALUE_OPS = {"add", "sub", "mul", "mad", "mul24", "mad24", "sad", "div", "rem", "abs", "neg",
              "min", "max", "and", "or", "xor", "not", "cnot", "shl", "shr", "setp", "set",
              "selp", "slct", "mov", "cvt", "cvta", "fma", "rcp", "sqrt", "rsqrt", "ex2", "lg2",
              "sin", "cos", "tanh", "copysign", "testp", "bfe", "bfi", "prmt", "lop3", "shf",
              "popc", "clz", "brev", "bfind", "szext", "bmsk", "ld", "ldu"}
_PER_LANE = ("%tid", "%laneid", "%lanemask_")


def warp_uniform_indices(block: tuple[int, int, int] | None) -> set[str]:
    """The components of %tid that every lane of a warp holds alike in blocks of this shape
    (a warp is 32 consecutive threads in x-major order): y when the rows are whole multiples
    of 32 threads (or there is one row), z likewise for planes, x for a one-thread row."""
    if block is None:
        return set()
    x, y, z = block
    alike = set()
    if x == 1:
        alike.add("x")
    if x % 32 == 0 or y == 1:
        alike.add("y")
    if (x * y) % 32 == 0 or z == 1:
        alike.add("z")
    return alike


def _per_lane(value, alike: set[str]) -> bool:
    """Whether an operand reads a special register that differs between lanes (`alike`:
    the components of %tid that do not, for the block shape)."""
    if isinstance(value, ir.SpecialRegister):
        if value.name == "%tid" and (value.component or "x") in alike:
            return False
        return value.name.startswith(_PER_LANE)
    if isinstance(value, ir.VectorValue | ir.ListValue):
        return any(_per_lane(e, alike) for e in value.elements)
    if isinstance(value, ir.PairValue):
        return _per_lane(value.first, alike) or _per_lane(value.second, alike)
    if isinstance(value, ir.NotValue | ir.NegValue):
        return _per_lane(value.value, alike)
    return False


def _thread_x(value, lane_x: set) -> bool:
    """%tid.x, or a register holding only copies of it."""
    if isinstance(value, ir.SpecialRegister):
        return value.name == "%tid" and (value.component or "x") == "x"
    return isinstance(value, ir.Register) and value in lane_x


def warp_index_of(inst: ir.Instruction, block: tuple[int, int, int] | None,
                  lane_x: set) -> bool:
    """Whether `inst` divides threadIdx.x by a multiple of 32 (`shr` by 5 or more, `div` by
    a multiple of 32): in rows of a multiple of 32 threads, threadIdx.x is 32 * (the warp's
    place in the row) + its lane, so the quotient is the same in every lane of a warp
    (threadIdx.x / 32, the warp index). `lane_x`: registers holding copies of %tid.x."""
    if block is None or block[0] % 32 or inst.guard is not None or len(inst.operands) != 3:
        return False
    if inst.opcode not in ("shr", "div") or not _thread_x(inst.operands[1], lane_x):
        return False
    amount = inst.operands[2]
    if not isinstance(amount, IntImm) or amount.value <= 0:
        return False
    return amount.value >= 5 if inst.opcode == "shr" else amount.value % 32 == 0


def thread_x_copies(kernel: ir.Function) -> set[ir.Register]:
    """Registers whose every write is an unguarded `mov` of %tid.x (or of such a register)."""
    writes: dict = {}
    for inst in kernel.instructions():
        for reg in may_write(inst):
            writes.setdefault(reg, []).append(inst)
    copies: set = set()
    changed = True
    while changed:
        changed = False
        for reg, insts in writes.items():
            if reg not in copies and all(
                    i.opcode == "mov" and i.guard is None and len(i.operands) == 2
                    and i.operands[0] is reg and _thread_x(i.operands[1], copies)
                    for i in insts):
                copies.add(reg)
                changed = True
    return copies


# special registers that hold one value for the whole launch or block, at any time
_BLOCK_CONSTANTS = ("%ntid", "%nctaid", "%ctaid", "%nclusterid", "%clusterid",
                    "%cluster_ctaid", "%cluster_nctaid", "%cluster_nctarank",
                    "%cluster_ctarank", "%total_smem_size", "%dynamic_smem_size")


def block_constants(kernel: ir.Function) -> set[ir.Register]:
    """The registers that hold one value in every thread of a block wherever they are
    defined (the module's docstring): one unguarded write of an arithmetic, logic or
    conversion instruction, or a `ld.param`, from immediates, kernel parameters, the
    _BLOCK_CONSTANTS special registers and other such registers."""
    if not kernel.is_kernel:        # (a device function's parameters vary by call)
        return set()
    writes: dict = {}
    for inst in kernel.instructions():
        for reg in may_write(inst):
            writes.setdefault(reg, []).append(inst)
    candidates = {reg: insts[0] for reg, insts in writes.items()
                  if len(insts) == 1 and insts[0].guard is None and not reg.vector
                  and may_write(insts[0]) == {reg} and _constant_op(insts[0])}
    found: set = set()
    changed = True
    while changed:
        changed = False
        for reg, inst in candidates.items():
            if reg not in found and all(_constant_operand(o, found)
                                        for o in inst.operands[1:]):
                found.add(reg)
                changed = True
    return found


def _constant_op(inst: ir.Instruction) -> bool:
    if inst.opcode in ("ld", "ldu"):
        return state_space(inst) == "param"
    return inst.opcode in _VALUE_OPS and len(inst.operands) >= 2


def _constant_operand(value, found: set) -> bool:
    if isinstance(value, ir.Register):
        return value in found
    if isinstance(value, ir.SpecialRegister):
        return value.name in _BLOCK_CONSTANTS
    if isinstance(value, ir.Address):
        return not isinstance(value.base, ir.Register) or value.base in found
    return isinstance(value, IntImm | FloatImm | ir.SymbolAddress | ir.Variable)


def _same_in_every_lane(inst: ir.Instruction, varying: set, alike: set[str],
                        block=None, lane_x: set = frozenset()) -> bool:
    if warp_index_of(inst, block, lane_x):
        return True
    if inst.opcode not in _VALUE_OPS:
        return False
    if inst.opcode in ("ld", "ldu") and state_space(inst) == "local":
        return False
    uses, _ = uses_and_defs(inst)
    if uses & varying:
        return False
    return not any(_per_lane(o, alike) for o in inst.operands)


def _stops_lanes(inst: ir.Instruction) -> bool:
    """A barrier or warp operation: lanes may stop there while others go on."""
    return inst.opcode in ("bar", "barrier", "shfl", "vote", "activemask", "mma", "ldmatrix",
                           "wgmma")


def only_returns(block: ir.BasicBlock) -> bool:
    return (not block.successors and len(block.instructions) == 1
            and block.instructions[0].opcode in ("ret", "exit")
            and block.instructions[0].guard is None)


def post_dominators(blocks: list[ir.BasicBlock]) -> dict[int, set[int]]:
    """id(block) -> ids of the blocks on every path from it to the end (itself included);
    None stands for the end. Blocks that cannot reach the end keep every block."""
    everything = {id(b) for b in blocks} | {None}
    post = {id(b): set(everything) for b in blocks}
    changed = True
    while changed:
        changed = False
        for block in reversed(blocks):
            if block.successors:
                common = set.intersection(*(post[id(s)] for s in block.successors))
            else:
                common = {None}
            new = common | {id(block)}
            if new != post[id(block)]:
                post[id(block)] = new
                changed = True
    return post


def immediate_post_dominator(block, post) -> int | None:
    """The nearest strict post-dominator of `block` (None: the end)."""
    strict = post[id(block)] - {id(block)}
    for candidate in strict:
        if candidate is not None and post[candidate] == strict:
            return candidate
    return None


def _reach(starts, stop: int | None) -> list[ir.BasicBlock]:
    seen: dict[int, ir.BasicBlock] = {}
    work = [s for s in starts if id(s) != stop]
    while work:
        block = work.pop()
        if id(block) in seen:
            continue
        seen[id(block)] = block
        work.extend(s for s in block.successors if id(s) != stop and id(s) not in seen)
    return list(seen.values())


def _not_converged(kernel: ir.Function, varying: set, post, predecessors) -> set[int]:
    """ids of the blocks some lanes may run while others of the warp are elsewhere."""
    blocks = kernel.blocks
    index = {id(b): i for i, b in enumerate(blocks)}
    out: set[int] = set()
    for block in blocks:
        if not block.instructions:
            continue
        last = block.instructions[-1]
        if last.opcode != "bra" or last.guard is None or last.guard not in varying:
            continue
        going_on = [s for s in block.successors if not only_returns(s)]
        if len(going_on) <= 1:
            continue
        join = immediate_post_dominator(block, post)
        region = _reach(going_on, join)
        ids = {id(b) for b in region}
        if join is not None and _rejoin(block, region, ids, index, index[join], predecessors):
            out |= ids
        else:
            out |= {id(b) for b in _reach(going_on, None)}
    return out


def _rejoin(block, region, ids: set, index: dict, join: int, predecessors) -> bool:
    """Whether min-PC scheduling brings the lanes that `block`'s branch splits back together
    at the block at index `join` (its immediate post-dominator): the branch's `region` holds
    no barrier or warp operation and lies before the join in program order, so that lanes
    at the join wait there until none is left in it; and it is entered only through the
    branch (a forward branch: the region lies after `block`) or, for a loop's backward
    branch (`block` in its own region), only at the loop's first block from before it."""
    if any(_stops_lanes(i) for b in region for i in b.instructions):
        return False
    if id(block) not in ids:
        return all(index[id(block)] < index[id(b)] < join
                   and all(id(p) in ids or p is block for p in predecessors[id(b)])
                   for b in region)
    first = min(region, key=lambda b: index[id(b)])
    return all(index[id(b)] < join
               and all(id(p) in ids or (b is first and index[id(p)] < index[id(first)])
                       for p in predecessors[id(b)])
               for b in region)


def uniform_registers(kernel: ir.Function, block: tuple[int, int, int] | None = None,
                      lane_x: set | None = None) -> set[ir.Register]:
    """The registers of `kernel` that are the same in every lane wherever they are read
    (`block`: the block shape the code is for, when known; `lane_x`: thread_x_copies of
    the kernel, when the caller has them)."""
    alike = warp_uniform_indices(block)
    if lane_x is None:
        lane_x = thread_x_copies(kernel) if block is not None else set()
    registers = set(kernel.registers.values())
    varying = {r for r in registers if r.vector}
    constants = block_constants(kernel)
    writes: list[tuple[ir.BasicBlock, ir.Instruction, set]] = []
    for bb in kernel.blocks:
        for inst in bb.instructions:
            written = may_write(inst)
            if written:
                writes.append((bb, inst, written))
    post = post_dominators(kernel.blocks)
    preds = predecessors(kernel)
    while True:
        split = _not_converged(kernel, varying, post, preds)
        grown = set(varying)
        for bb, inst, written in writes:
            if not written - grown:
                continue
            if written <= constants:
                continue
            if id(bb) in split or not _same_in_every_lane(inst, grown, alike, block,
                                                                lane_x):
                grown |= written
        if grown == varying:
            return registers - varying
        varying = grown


def converged_writers(kernel: ir.Function, uniform: set) -> set[int]:
    """ids of the instructions that the warp's live lanes all run together (in converged
    blocks, unguarded or guarded by a uniform predicate), given the kernel's `uniform`
    registers: their writes leave no lane with an older value."""
    varying = set(kernel.registers.values()) - uniform
    post = post_dominators(kernel.blocks)
    preds = predecessors(kernel)
    split = _not_converged(kernel, varying, post, preds)
    return {id(inst) for bb in kernel.blocks if id(bb) not in split
            for inst in bb.instructions if inst.guard is None or inst.guard in uniform}


def run(module: ir.Module, kernel: ir.Function, block=None) -> PassResult:
    """The kernel unchanged; a note naming the registers every lane of a warp holds alike
    (for blocks of shape `block`, or of any shape)."""
    uniform = sorted(r.name for r in uniform_registers(kernel, block))
    shape = "any block shape" if block is None else f"blocks of {tuple(block)}"
    return PassResult(kernel, [f"uniform in a warp, for {shape}: {', '.join(uniform) or 'none'}"])
