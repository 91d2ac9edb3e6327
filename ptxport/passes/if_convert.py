"""If-conversion for the CPU's warp gangs: a guarded copy of each short divergent `if` (or
`if`/`else`), which a warp whose lanes split at the branch runs instead of splitting its mask
and meeting again at the join (codegen/targets/cpu/gang/control.py: a segment per side, the
dispatcher, and each memory access of a side classified under a mask known only at run
time). A warp whose lanes all go one way still takes the branch (a bounds test that every
lane passes keeps its unguarded code, with the constant full mask).

A region qualifies when the branch that ends block B is divergent (its predicate is not
uniform, passes/uniformity.py), none of its sides only returns (those lanes exit: nothing
to join), and the blocks between B and its immediate post-dominator J in program order are
exactly the blocks reachable from B before J, entered only from B or from each other, with
forward edges only (no loop), holding no barrier, warp operation, call, return or trap, and
together at most LIMIT instructions. The copy, a block L between the region and J, gives
each block r of the region a predicate (the lanes that would run it: the OR of its incoming
edges' predicates, each the AND of its source's predicate and the branch's condition, taken
where the branch is) and guards every instruction of r by it (ANDed with its own guard),
without the region's branches. An instruction that cannot fault or touch memory and whose
registers have one write in the kernel and are not live where B ends runs unguarded (it
computes a value only the lanes that ran it read), which keeps its lane form
(passes/lane_forms.py) for the accesses that use it. L is a successor of B for the analyses
(a third way out of the branch), and B's branch goes there when its lanes split.

Where the guarded code replaces the region, each of its blocks' instructions is also a
*skippable run*: the gang lowering jumps over the run when no lane of the warp has the block's
predicate (a 16x16 stencil's `if (threadIdx.y == 0)` halo: in six of a block's eight warps
no lane does, and its address arithmetic, which runs unguarded, costs them nothing then).
A register the run writes unguarded is not live where B ends, so not where the region
joins either: no lane reads what a skipped run would have written. (One run for a whole
`if` region, around its blocks' runs, made the stencil's blocks longer: LLVM computed the
inner runs' predicates before the outer test; leaving out runs of one instruction, whose
access skips itself where no lane is active, made scan_warp's longer.)

The rewritten kernel is a new function; the module's is not changed. The gang lowering
applies the pass for its block shape (gang/build.py); `ptxport inspect --dump-after
if-convert` shows it.
"""

from __future__ import annotations

import dataclasses

from ptxport.ir import nodes as ir
from ptxport.ir.analysis import live_before, may_write, predecessors
from ptxport.ir.blocks import relink
from ptxport.ir.types import TYPES
from ptxport.passes import PassResult
from ptxport.passes.lane_forms import lane_forms
from ptxport.passes.snippets import snippet_instructions
from ptxport.passes.uniformity import (
    immediate_post_dominator,
    only_returns,
    post_dominators,
    uniform_registers,
)
from ptxport.ptx.ast import IntImm

__all__ = ["LIMIT", "if_convert", "run"]

_PRED = TYPES["pred"]

# the most instructions a converted region holds: both sides always run, so a long side
# that most warps skip would cost more than the split it saves
LIMIT = 40


# opcodes a region may not hold: lanes wait or leave there, or control leaves the region
_BARRED = frozenset(("bar", "barrier", "shfl", "vote", "activemask", "mma", "ldmatrix",
                     "wgmma", "match", "redux", "elect", "mbarrier", "call", "ret", "exit",
                     "trap", "brx", "cp", "cp.async", "nanosleep", "setmaxnreg"))

# opcodes that compute a value from registers only: never a fault, no memory
_PURE = frozenset(("add", "sub", "mul", "mad", "mul24", "mad24", "sad", "abs", "neg", "min",
                   "max", "and", "or", "xor", "not", "cnot", "shl", "shr", "setp", "set",
                   "selp", "slct", "mov", "cvt", "cvta", "fma", "bfe", "bfi", "prmt", "lop3",
                   "shf", "popc", "clz", "brev", "bfind", "copysign"))

_SNIPPET = """
    and.pred %p0, %p1, %p2;
    or.pred %p0, %p1, %p2;
    mov.pred %p0, %p1;
    not.pred %p0, %p1;
    bra $L__end;
$L__end:
"""


# register types a region's loads may write whose lanes outside the guard start at zero
_ZEROED = {"u16": "0", "s16": "0", "b16": "0", "u32": "0", "s32": "0", "b32": "0", "u64": "0",
           "s64": "0", "b64": "0", "f32": "0f00000000", "f64": "0d0000000000000000"}


@dataclasses.dataclass
class _Specs:
    and_: object
    or_: object
    mov: object
    not_: object
    bra: object
    zero: dict      # register type -> (the spec of its mov, the immediate 0)


def _specs() -> _Specs:
    """The specs of `and.pred`, `or.pred`, `mov.pred`, `not.pred`, `bra` and of a mov of 0
    per register type, as the front end makes them."""
    moves = "".join(f".reg .{t} %z_{t}; mov.{t} %z_{t}, {zero};\n"
                    for t, zero in _ZEROED.items())
    insts = snippet_instructions(_SNIPPET + moves, "<if_convert>")
    zero = {t: (i.spec, i.operands[1]) for t, i in zip(_ZEROED, insts[5:], strict=False)}
    return _Specs(*(i.spec for i in insts[:5]), zero)


def if_convert(kernel: ir.Function, block: tuple[int, int, int] | None = None
               ) -> tuple[ir.Function, list[str], dict[int, ir.BasicBlock], dict]:
    """`kernel` with each short divergent region (for blocks of shape `block`) guarded in
    place or given a guarded copy beside it (`kernel` itself when none qualifies), one note
    per region, id(branch) -> its region's guarded copy, which the warp runs where the
    branch splits its lanes, and the skippable runs: id(first instruction) -> (predicate,
    length), a run of guarded code that no lane needs to run where none has the
    predicate."""
    bounds = _tid_bounds(kernel, block)
    varying = set(kernel.registers.values()) - uniform_registers(kernel, block) \
        - {r for r, split in bounds.items() if not split}
    by_lane = _thread_index_values(kernel)
    forms = lane_forms(kernel, block, set(kernel.registers.values()) - varying)
    notes: list[str] = []
    linear: dict[int, ir.BasicBlock] = {}
    skips: dict[int, tuple[ir.Register, int]] = {}
    f = None
    specs = None
    while True:
        current = f or kernel
        found = _first_region(current, varying)
        if found is None:
            return current, notes, linear, skips
        if f is None:
            f, specs = _copy(kernel), _specs()
            continue        # (find it again in the copy)
        start, end = found
        head = f.blocks[start]
        branch = head.instructions[-1]
        replace = _in_place(head, f.blocks[start + 1:end], by_lane - set(bounds), forms)
        size = sum(len(b.instructions) for b in f.blocks[start + 1:end])
        label, join, before = head.label, f.blocks[end].label, len(skips)
        copy = _linearize(f, start, end, specs, replace, skips)
        runs = f", {len(skips) - before} skippable run(s)" if replace else ""
        notes.append(f"{'guarded' if replace else 'guarded copy of'} the region after "
                     f"{label} ({size} instructions, up to {join}{runs})")
        if copy is not None:
            linear[id(branch)] = copy


def _in_place(head: ir.BasicBlock, region: list[ir.BasicBlock], by_lane: set,
              forms: dict) -> bool:
    """Whether a region's guarded code replaces it (else it is a copy beside it): on a
    thread-index predicate (the lanes split at every launch), an `if`/`else` (a warp whose
    lanes split runs both sides anyway), or a region that is one load
    whose lanes' addresses lie one after another, or so in each half warp (`forms`:
    passes/lane_forms.py's; a stencil's `if (inside) v = in[y * width + x]`: guarded, one
    or two masked vector loads in the segment around it, which spares the warp a segment
    per side). Other regions keep their branch for warps whose lanes all go one way: a
    bounds test that every lane passes (transpose's, guarded in place: +30%), a tree level
    that whole warps skip (scan_blelloch's `if (tid < d)`: +40%), strided loads
    (scan_blelloch's `x[base + 2 * t]`: +11%)."""
    if head.instructions[-1].guard in by_lane or all(s in region for s in head.successors):
        return True
    instructions = [i for b in region for i in b.instructions]
    if len(instructions) != 1 or instructions[0].opcode != "ld":
        return False
    load = instructions[0]
    address = load.operands[1]
    if not isinstance(address, ir.Address) or not isinstance(address.base, ir.Register):
        return False
    form = forms.get(address.base)
    size = TYPES[load.spec.types[-1]].size
    if form is None or load.spec.text.count(".v"):
        return False
    first = form.offsets[0]
    steps = [(c - first) % (1 << 64) for c in form.offsets]
    if form.halves:
        return steps[:16] == [size * i for i in range(16)]
    return steps == [size * i for i in range(32)]


# setp comparisons -> how the immediate k is turned into the first index on the other side
# (t < k and t >= k change sides at k, t <= k and t > k at k + 1)
_SIDES = {"lt": 0, "ge": 0, "lo": 0, "hs": 0, "le": 1, "gt": 1, "ls": 1, "hi": 1}


def _tid_bounds(kernel: ir.Function, block) -> dict:
    """Predicates that split at most one warp for blocks of shape `block` -> whether they
    split one: written once, as an ordering of `%tid.x` (through one mov, written once)
    against an immediate, in blocks whose x extent is a multiple of 32. One whose side
    changes at a multiple of 32 (a level of NVRTC's unrolled tree reduction, `if (t <
    128)`) splits none: a branch on it is no
    split (each warp goes one way; gang/warp_bounds.py decides it with a scalar compare),
    so its region is not converted (guarded in place, every warp ran a level's strided
    accesses lane by lane under a mask not known when compiling). One that splits a warp
    (`if (t < 16)`) gets a guarded copy beside its region rather than in place, so that
    the other warps keep the branch."""
    if block is None or block[0] % 32:
        return {}
    writes: dict = {}
    for inst in kernel.instructions():
        for register in may_write(inst):
            writes.setdefault(register, []).append(inst)
    tids = {r for r, insts in writes.items() if len(insts) == 1 and insts[0].opcode == "mov"
            and insts[0].guard is None and isinstance(insts[0].operands[1], ir.SpecialRegister)
            and insts[0].operands[1].text == "%tid.x"}
    found = {}
    for r, insts in writes.items():
        inst = insts[0]
        if len(insts) != 1 or inst.opcode != "setp" or inst.guard is not None \
                or inst.spec.get("boolop") or len(inst.operands) != 3 \
                or inst.spec.get("cmp") not in _SIDES or inst.operands[1] not in tids \
                or not isinstance(inst.operands[2], IntImm):
            continue
        found[r] = (inst.operands[2].value + _SIDES[inst.spec.get("cmp")]) % 32 != 0
    return found


def _thread_index_values(kernel: ir.Function) -> set:
    """Registers computed from the thread's index and constants alone (each write an
    unguarded pure instruction of those): a branch on one splits the same lanes of a warp
    at every launch (`if (threadIdx.x == 0)` in a 16-wide block: lanes 0 and 16, always),
    so its region is better guarded in place than kept beside its copy."""
    writes: dict = {}
    for inst in kernel.instructions():
        for register in may_write(inst):
            writes.setdefault(register, []).append(inst)
    found: set = set()

    def known(value) -> bool:
        if isinstance(value, ir.Register):
            return value in found
        if isinstance(value, ir.SpecialRegister):
            return value.name in ("%tid", "%ntid", "%laneid")
        if isinstance(value, ir.NotValue):
            return known(value.value)
        return isinstance(value, IntImm)

    changed = True
    while changed:
        changed = False
        for register, insts in writes.items():
            if register not in found and all(
                    i.guard is None and i.opcode in _PURE and all(known(o) for o in i.operands[1:])
                    for i in insts):
                found.add(register)
                changed = True
    return found


def _copy(kernel: ir.Function) -> ir.Function:
    """A copy of `kernel` with blocks of its own (the instructions are shared, as passes
    never change one)."""
    f = dataclasses.replace(kernel, registers=dict(kernel.registers), blocks=[])
    twins = {}
    for block in kernel.blocks:
        twin = ir.BasicBlock(block.label, block.pos)
        twin.instructions = list(block.instructions)
        twins[id(block)] = twin
        f.blocks.append(twin)
    relink(zip(kernel.blocks, f.blocks, strict=True), twins)
    return f


def _first_region(f: ir.Function, varying: set) -> tuple[int, int] | None:
    """(index of B, index of J) of the first region in program order that qualifies."""
    post = post_dominators(f.blocks)
    index = {id(b): i for i, b in enumerate(f.blocks)}
    preds = predecessors(f)
    for i, block in enumerate(f.blocks):
        last = block.instructions[-1] if block.instructions else None
        if last is None or last.opcode != "bra" or last.guard is None \
                or last.guard not in varying or len(block.successors) != 2 \
                or any(only_returns(s) for s in block.successors):
            continue
        join = immediate_post_dominator(block, post)
        if join is None or index[join] <= i + 1:
            continue
        end = index[join]
        if _qualifies(f.blocks[i + 1:end], block, f.blocks[end], index, preds):
            return i, end
    return None


def _qualifies(region: list[ir.BasicBlock], head: ir.BasicBlock, join: ir.BasicBlock,
               index: dict, predecessors: dict) -> bool:
    inside = {id(b) for b in region}
    if sum(len(b.instructions) for b in region) > LIMIT:
        return False
    for b in region:
        if not all(id(p) in inside or p is head for p in predecessors[id(b)]):
            return False
        if not all((id(s) in inside and index[id(s)] > index[id(b)]) or s is join
                   for s in b.successors):
            return False
        if any(i.opcode in _BARRED for i in b.instructions):
            return False
    # every block of the region is reachable from the head (no dead block to drop)
    seen, todo = set(), list(head.successors)
    while todo:
        b = todo.pop()
        if b is join or id(b) in seen:
            continue
        seen.add(id(b))
        todo.extend(b.successors)
    return seen == inside


class _Linearizer:
    """The guarded instructions of one region, appended to its head block's."""

    def __init__(self, f: ir.Function, specs: _Specs, out: list, pos: int):
        self.f, self.specs, self.out, self.pos = f, specs, out, pos

    def predicate(self) -> ir.Register:
        register = ir.Register(f"%__ifc{len(self.f.registers)}", _PRED)
        while register.name in self.f.registers:
            register = ir.Register(register.name + "_", _PRED)
        self.f.registers[register.name] = register
        return register

    def emit(self, spec, *operands) -> ir.Register:
        register = self.predicate()
        self.out.append(ir.Instruction(spec, (register, *operands), pos=self.pos))
        return register

    def both(self, p: ir.Register | None, guard: ir.Register, negated: bool) -> ir.Register:
        """A new predicate: p (None: every lane) and the guard (negated)."""
        value = ir.NotValue(guard) if negated else guard
        if p is None:
            return self.emit(self.specs.not_ if negated else self.specs.mov, guard)
        return self.emit(self.specs.and_, p, value)


def _linearize(f: ir.Function, start: int, end: int, specs: _Specs,
               replace: bool, skips: dict) -> ir.BasicBlock | None:
    """The region's guarded copy, a block placed before the join (which it falls into)
    and added to the head's successors; the region's last block jumps over it. With
    `replace`, the guarded instructions take the place of the head's branch and the region
    instead (None), each block's a skippable run (in `skips`)."""
    head, join = f.blocks[start], f.blocks[end]
    region = f.blocks[start + 1:end]
    free, live = _speculable_registers(f, head)
    branch = head.instructions[-1]
    linear = ir.BasicBlock(f"%__ifc_{head.label.lstrip('%$')}", branch.pos)
    out = linear.instructions
    lin = _Linearizer(f, specs, out, branch.pos)
    _zero_guarded_writes(lin, region, free, live)
    incoming: dict[int, list] = {id(b): [] for b in region}

    def edge(target: ir.BasicBlock, p: ir.Register) -> None:
        if target is not join:
            incoming[id(target)].append(p)

    _branch_edges(lin, branch, None, f.blocks[start + 1], join, edge)
    for k, block in enumerate(region):
        if not incoming[id(block)]:     # (another region's guarded copy: not on a path)
            continue
        lin.pos = block.instructions[0].pos if block.instructions else lin.pos
        ps = incoming[id(block)]
        p = ps[0]
        for other in ps[1:]:
            p = lin.emit(specs.or_, p, other)
        following = f.blocks[start + 2 + k]
        body = len(out)
        for inst in block.instructions:
            lin.pos = inst.pos
            if inst.opcode == "bra":
                break
            if inst.guard is None and _speculable(inst, free):
                out.append(inst)
            elif inst.guard is None:
                out.append(ir.Instruction(inst.spec, inst.operands, p, False, inst.pos))
            else:
                guard = lin.both(p, inst.guard, inst.guard_negated)
                out.append(ir.Instruction(inst.spec, inst.operands, guard, False, inst.pos))
        if replace and len(out) > body:
            _skippable(out, body, p, skips)
        last = block.instructions[-1] if block.instructions else None
        if last is not None and last.opcode == "bra":
            lin.pos = last.pos
            _branch_edges(lin, last, p, following, join, edge)
        else:
            edge(following, p)
    if replace:
        _replace_region(f, head, out, region, join)
        return None
    last = region[-1]
    if not (last.instructions and last.instructions[-1].is_terminator):
        last.instructions.append(ir.Instruction(specs.bra, (join,), pos=branch.pos))
    f.blocks.insert(end, linear)
    linear.successors = [join]
    head.successors = [*head.successors, linear]
    return linear


def _skippable(out: list, body: int, p: ir.Register, skips: dict) -> None:
    """out[body:] as a run that a warp skips where no lane has p; its first instruction a
    new one (the run is named by it: a speculated instruction is the kernel's own)."""
    first = out[body]
    out[body] = ir.Instruction(first.spec, first.operands, first.guard, first.guard_negated,
                               first.pos)
    skips[id(out[body])] = (p, len(out) - body)


def _replace_region(f: ir.Function, head: ir.BasicBlock, guarded: list, region: list,
                    join: ir.BasicBlock) -> None:
    """The head runs the guarded instructions instead of its branch and the region; a
    join that only the head reaches becomes part of it (one warp-gang segment)."""
    head.instructions = head.instructions[:-1] + guarded
    for block in region:
        f.blocks.remove(block)
    head.successors = [join]
    if not any(join in b.successors for b in f.blocks if b is not head):
        head.instructions += join.instructions
        head.successors = join.successors
        f.blocks.remove(join)


def _branch_edges(lin: _Linearizer, branch: ir.Instruction, p, following, join,
                  edge) -> None:
    """The predicates of a branch's edges (in a block of predicate p; None: every lane),
    made where the branch is (its guard may be written later)."""
    target = branch.operands[0]
    if branch.guard is None:        # (inside the region: p is a block's predicate)
        if target is not join:
            edge(target, p)
        return
    for to, negated in ((target, branch.guard_negated), (following, not branch.guard_negated)):
        if to is not join:
            edge(to, lin.both(p, branch.guard, negated))


def _speculable_registers(f: ir.Function, head: ir.BasicBlock) -> tuple[set, set]:
    """(registers written once in the kernel that are not live where `head` ends, the
    registers live there): a region's instruction writing only the first may run in every
    lane (lanes that skip it never read what it wrote before writing it again)."""
    writes: dict = {}
    for inst in f.instructions():
        for register in may_write(inst):
            writes[register] = writes.get(register, 0) + 1
    live = live_before(f, {(id(head), len(head.instructions))})[
        (id(head), len(head.instructions))]
    return {r for r, n in writes.items() if n == 1 and r not in live}, live


def _zero_guarded_writes(lin: _Linearizer, region, free: set, live: set) -> None:
    """A mov of 0 before the region into each register that its guarded instructions
    write and that is not live where it starts: no lane reads what the register held
    before, and a write by all lanes ends its liveness there (a guarded write alone would
    leave it live back to the kernel's entry, and so kept in the warp's frame across
    every barrier; the mov makes the load's other lanes zero, which a masked load gives
    anyway)."""
    zeroed: dict = {}
    for block in region:
        for inst in block.instructions:
            if inst.opcode == "bra" or (inst.guard is None and _speculable(inst, free)):
                continue
            for register in may_write(inst):
                if register not in live and not register.vector \
                        and register.type.name in lin.specs.zero:
                    zeroed.setdefault(register.name, register)
    for register in zeroed.values():
        spec, zero = lin.specs.zero[register.type.name]
        lin.out.append(ir.Instruction(spec, (register, zero), pos=lin.pos))


def _speculable(inst: ir.Instruction, free: set) -> bool:
    written = may_write(inst)
    return inst.opcode in _PURE and bool(written) and written <= free


def run(module: ir.Module, kernel: ir.Function, block=None) -> PassResult:
    """The kernel with its short divergent regions guarded (for blocks of shape `block`)."""
    converted, notes, _, _ = if_convert(kernel, block)
    shape = "any block shape" if block is None else f"blocks of {tuple(block)}"
    return PassResult(converted, notes or [f"no region converted, for {shape}"])

