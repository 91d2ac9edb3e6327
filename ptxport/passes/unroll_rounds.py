"""Barrier loops unrolled, for the CPU's warp gangs: a loop that holds a block barrier and
whose trip count is known when compiling for the launch's block shape (its counters start
from immediates and `%ntid` and are stepped by constants: a tree reduction's or a Blelloch
scan's `for (d = blockDim.x; d > 0; d >>= 1) { __syncthreads(); if (t < d) ... }`) becomes
one copy of its body per iteration, and every register whose value is then known at a point
(the counters, in each copy) is replaced there by its value.

Why: in the loop as written the counters are registers that live across the barrier, so
every warp saves and reloads them in its frame at each level, and every address built from
them (`temp[offset * (2 * t + 1) - 1]`) is a vector whose stride the gang lowering finds at
run time (a jump over the strides, range checks of each access). Unrolled, each level is a
barrier of its own (a uniform round of its own in run_blocks), the stride of each access is
a constant (gang/strided.py's spans, known when compiling), `t < d` is a compare with an
immediate (gang/warp_bounds.py), and a warp that a level leaves idle stores nothing.

A loop qualifies when it is blocks i..j of the kernel in program order, entered only at
block i (its header) from outside, left only where block j's guarded `bra` back to i falls
through, its other edges forward (no inner loop), with a `bar` (not `bar.warp`) and no
`ret`, `exit`, `trap` or `brx` inside, and the guard of that back branch is a constant at
the end of each iteration, evaluated from the values known where the loop is entered
(constant propagation over the kernel: immediates, `%ntid` of the block shape, and mov,
add, sub, mul.lo, shl, shr, and, or, xor, not, min, max and setp of integers on known
values; a value known along one way into a block and not the other is not known there).
At most TRIPS iterations and BUDGET instructions in the copies. Each copy's blocks are the
loop's with `_uK` appended to their labels; the back branch is dropped (copy k falls into
copy k + 1, the last one out of the loop). Then, over the whole kernel, a register operand
of an arithmetic instruction whose value is known there becomes that immediate, an
instruction whose result is known becomes a mov of it, a guarded `bra` whose guard is known
is taken or dropped, and such movs whose registers nothing reads any more are removed (and
blocks nothing reaches). Semantics are unchanged: a value replaced is the value the
register holds there for every thread of every block of that shape.

The rewritten kernel is a new function (the module's is not changed); gang/build.py applies
the pass first (before if-convert) where CpuOptions(unroll_rounds=True) asks: off by
default, since scan_blelloch, 30% fewer instructions unrolled, ran 18% more CPU time on the
GPU host's Xeon (docs/cpu-target.md).
"""

from __future__ import annotations

import dataclasses

from ptxport.ir import nodes as ir
from ptxport.ir.analysis import live_before, may_write, uses_and_defs
from ptxport.ir.from_ptx import link_blocks
from ptxport.ir.types import TYPES
from ptxport.ptx.ast import IntImm

__all__ = ["BUDGET", "TRIPS", "unroll_rounds"]

TRIPS = 16          # the most iterations a loop unrolls to
BUDGET = 256        # the most instructions its copies hold together (compile time)

_SINKS = frozenset(("ret", "exit", "trap", "brx"))
_ARITH = frozenset(("add", "sub", "mul", "shl", "shr", "and", "or", "xor", "min", "max"))
_COMMUTATIVE = frozenset(("add", "mul", "and", "or", "xor", "min", "max"))
_EVALUATED = _ARITH | {"mov", "not", "setp"}
_INTEGER = frozenset(("signed", "unsigned", "bits"))
_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
        "lo": "<", "ls": "<=", "hi": ">", "hs": ">="}


def unroll_rounds(kernel: ir.Function, block: tuple[int, int, int] | None
                  ) -> tuple[ir.Function, list[str]]:
    """`kernel` with its qualifying barrier loops unrolled and known values folded (a new
    function), or `kernel` itself where none qualifies; one note per loop unrolled."""
    if block is None:
        return kernel, []
    notes: list[str] = []
    f = kernel
    for _ in range(8):              # (one loop at a time: the blocks' places change)
        done = _unroll_one(f, block)
        if done is None:
            break
        f, note = done
        notes.append(note)
    if f is kernel:
        return kernel, []
    _fold(f, block)
    return f, notes


# ----------------------------------------------------------------- values known


def _type(inst: ir.Instruction):
    return TYPES.get(inst.spec.types[0]) if inst.spec.types else None


def _operand(value, state: dict, bits: int, block):
    """The value of a source operand as an unsigned integer of `bits`, or None."""
    if isinstance(value, IntImm):
        return value.value & ((1 << bits) - 1)
    if isinstance(value, ir.Register):
        if value.vector is not None or value.type.bits != bits and value.type.kind != "pred":
            return None
        return state.get(value)
    if isinstance(value, ir.SpecialRegister) and value.name == "%ntid":
        axis = "xyz".find(value.component or "x")
        return block[axis] if axis >= 0 else None
    return None


def _signed(v: int, bits: int) -> int:
    return v - (1 << bits) if v >> (bits - 1) else v


def _evaluate(inst: ir.Instruction, state: dict, block):
    """The value an unguarded, evaluated instruction writes, where its sources are known
    (an unsigned integer of the type's width; predicates 0 or 1); None otherwise."""
    t = _type(inst)
    op = inst.opcode
    if op not in _EVALUATED or inst.guard is not None or t is None \
            or len(inst.spec.types) != 1 or not isinstance(inst.operands[0], ir.Register):
        return None
    if t.kind not in _INTEGER and not (t.kind == "pred" and op in ("mov", "not", "and",
                                                                  "or", "xor")):
        return None
    if op == "setp" and (inst.spec.get("boolop") or len(inst.operands) != 3) \
            or inst.spec.has("relu"):
        return None
    if op == "mul" and not inst.spec.has("lo") or op in ("add", "sub") and (
            inst.spec.has("sat") or inst.spec.has("cc")):
        return None
    bits = 1 if t.kind == "pred" else t.bits
    args = [_operand(v, state, bits, block) for v in inst.operands[1:]]
    if any(a is None for a in args) or not args:
        return None
    mask = (1 << bits) - 1
    signed = t.kind == "signed"
    if op == "setp":
        cmp = _CMP.get(inst.spec.get("cmp"))
        if cmp is None:
            return None
        a, b = (_signed(x, bits) if signed else x for x in args)
        return int({"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b,
                    ">=": a >= b}[cmp])
    return _arith(op, args, bits, signed, mask)


def _arith(op: str, args: list, bits: int, signed: bool, mask: int):
    if op == "mov":
        return args[0] if len(args) == 1 else None
    if op == "not":
        return ~args[0] & mask if len(args) == 1 else None
    if len(args) != 2:
        return None
    a, b = args
    if op == "shl":
        return (a << b) & mask if b < bits else 0
    if op == "shr":
        if signed:
            return (_signed(a, bits) >> min(b, bits - 1)) & mask
        return a >> b if b < bits else 0
    if op in ("min", "max"):
        x, y = (_signed(v, bits) for v in args) if signed else args
        return (min(x, y) if op == "min" else max(x, y)) & mask
    return {"add": a + b, "sub": a - b, "mul": a * b, "and": a & b, "or": a | b,
            "xor": a ^ b}[op] & mask


def _transfer(inst: ir.Instruction, state: dict, block) -> None:
    """The state after `inst` (in place): its result where known, else its registers
    forgotten."""
    value = _evaluate(inst, state, block)
    for reg in may_write(inst):
        state.pop(reg, None)
    if value is not None:
        state[inst.operands[0]] = value


def _meet(states: list) -> dict:
    if not states:
        return {}
    first, *rest = states
    return {r: v for r, v in first.items() if all(s.get(r) == v for s in rest)}


def _predecessors(f: ir.Function) -> dict[int, list]:
    preds: dict[int, list] = {id(b): [] for b in f.blocks}
    for b in f.blocks:
        for s in b.successors:
            preds[id(s)].append(b)
    return preds


def _known(f: ir.Function, block) -> dict[int, dict]:
    """id(block) -> the values known where it starts, over the edges that may be taken (a
    guarded `bra` whose guard is known takes one), optimistic (a predecessor not yet
    reached adds nothing) and iterated to a fixed point."""
    preds = _predecessors(f)
    ins: dict[int, dict] = {}
    outs: dict[int, tuple] = {}         # id(block) -> (state at its end, ids it may go to)
    changed = True
    while changed:
        changed = False
        for i, b in enumerate(f.blocks):
            reached = [outs[id(p)][0] for p in preds[id(b)]
                       if id(p) in outs and id(b) in outs[id(p)][1]]
            if i and not reached:
                continue
            state = _meet(reached) if i else {}
            if ins.get(id(b)) == state and id(b) in outs:
                continue
            ins[id(b)] = dict(state)
            for inst in b.instructions:
                _transfer(inst, state, block)
            outs[id(b)] = (state, _taken(b, state))
            changed = True
    return ins


def _taken(b: ir.BasicBlock, state: dict) -> set[int]:
    """ids of the successors of `b` that control may go to, given the values at its end."""
    last = b.instructions[-1] if b.instructions else None
    if last is not None and last.opcode == "bra" and last.guard is not None \
            and last.guard in state and len(b.successors) == 2:
        target, through = b.successors
        return {id(target) if bool(state[last.guard]) != last.guard_negated else id(through)}
    return {id(s) for s in b.successors}


# ----------------------------------------------------------------- unrolling


def _loop_at(f: ir.Function, j: int, preds: dict):
    """(i, guard of the back branch) where blocks i..j are a qualifying loop's shape with
    block j's last instruction its guarded back branch; None otherwise."""
    blocks = f.blocks
    last = blocks[j].instructions[-1] if blocks[j].instructions else None
    if last is None or last.opcode != "bra" or last.guard is None:
        return None
    target = next((o for o in last.operands if isinstance(o, ir.BasicBlock)), None)
    where = {id(b): k for k, b in enumerate(blocks)}
    i = where.get(id(target), j + 1)
    if i > j:
        return None
    inside = {id(b) for b in blocks[i:j + 1]}
    after = blocks[j + 1] if j + 1 < len(blocks) else None
    barrier = False
    for k in range(i, j + 1):
        b = blocks[k]
        if k > i and any(id(p) not in inside for p in preds[id(b)]):
            return None
        for s in b.successors:
            if not (where[id(s)] > k and id(s) in inside
                    or k == j and (s is blocks[i] or s is after)):
                return None
        for inst in b.instructions:
            if inst.opcode in _SINKS:
                return None
            barrier = barrier or inst.opcode in ("bar", "barrier") \
                and not inst.spec.has("warp")
    return (i, last) if barrier and after is not None else None


def _trips(f: ir.Function, i: int, j: int, back: ir.Instruction, entry: dict, preds,
           block) -> int | None:
    """How many times the loop's body runs from the values known on entry, if the back
    branch's guard is known at the end of each iteration and TRIPS at most."""
    loop = f.blocks[i:j + 1]
    state = entry
    for trip in range(1, TRIPS + 1):
        outs: dict[int, dict] = {}
        for k, b in enumerate(loop):
            s = dict(state) if k == 0 else _meet(
                [outs[id(p)] for p in preds[id(b)] if id(p) in outs])
            for inst in b.instructions:
                _transfer(inst, s, block)
            outs[id(b)] = s
        end = outs[id(loop[-1])]
        taken = end.get(back.guard)
        if taken is None:
            return None
        if bool(taken) == back.guard_negated:
            return trip
        state = end
    return None


def _unroll_one(f: ir.Function, block):
    """(a new function with the first qualifying loop unrolled, its note), or None."""
    preds = _predecessors(f)
    known = None
    for j in range(len(f.blocks)):
        shape = _loop_at(f, j, preds)
        if shape is None:
            continue
        i, back = shape
        size = sum(len(b.instructions) for b in f.blocks[i:j + 1])
        if known is None:
            known = _known_out(f, block)
        entry = _meet([known[id(p)] for p in preds[id(f.blocks[i])]
                       if p is not f.blocks[j] and id(p) in known])
        trips = _trips(f, i, j, back, entry, preds, block)
        if trips is None or trips * size > BUDGET:
            continue
        return _copied(f, i, j, trips), (
            f"loop {f.blocks[i].label}..{f.blocks[j].label}: {trips} iterations unrolled")
    return None


def _known_out(f: ir.Function, block) -> dict[int, dict]:
    """id(block) -> the values known where it ends."""
    outs = {}
    ins = _known(f, block)
    for b in f.blocks:
        if id(b) not in ins:
            continue
        state = dict(ins[id(b)])
        for inst in b.instructions:
            _transfer(inst, state, block)
        outs[id(b)] = state
    return outs


def _copy(inst: ir.Instruction, new: dict, names: dict | None = None) -> ir.Instruction:
    """A copy of `inst`, its branch targets mapped through `new` (id(block) -> block) and
    its registers through `names` (register -> register)."""
    operands = tuple(new.get(id(o), o) if isinstance(o, ir.BasicBlock) else o
                     for o in inst.operands)
    guard = inst.guard
    if names:
        operands = tuple(_renamed(o, names) for o in operands)
        guard = names.get(guard, guard)
    return ir.Instruction(inst.spec, operands, guard, inst.guard_negated, inst.pos)


def _renamed(value, names: dict):
    if isinstance(value, ir.Register):
        return names.get(value, value)
    if isinstance(value, ir.RegisterElement):
        return ir.RegisterElement(names.get(value.register, value.register), value.component)
    if isinstance(value, ir.Address) and isinstance(value.base, ir.Register):
        return dataclasses.replace(value, base=names.get(value.base, value.base))
    if isinstance(value, ir.VectorValue):
        return ir.VectorValue(tuple(_renamed(e, names) for e in value.elements))
    if isinstance(value, ir.NotValue):
        return ir.NotValue(_renamed(value.value, names))
    if isinstance(value, ir.PairValue):
        return ir.PairValue(_renamed(value.first, names), _renamed(value.second, names))
    return value


def _local_registers(f: ir.Function, i: int, j: int) -> set:
    """The registers the loop writes that are live neither where it starts nor where it
    ends: each copy may have its own (then each is written once a copy, as the lane-form
    analyses want)."""
    head, after = f.blocks[i], f.blocks[j + 1]
    live = live_before(f, {(id(head), 0), (id(after), 0)})
    written: set = set()
    for b in f.blocks[i:j + 1]:
        for inst in b.instructions:
            written |= may_write(inst)
    return {r for r in written - live[(id(head), 0)] - live[(id(after), 0)]
            if isinstance(r, ir.Register)}


def _copied(f: ir.Function, i: int, j: int, trips: int) -> ir.Function:
    """A new function: f's blocks (new ones, with new instructions), blocks i..j as
    `trips` copies one after another."""
    labels = {b.label for b in f.blocks}
    loop = f.blocks[i:j + 1]
    news = []
    for k in range(trips):
        new = {}
        for b in loop:
            label = f"{b.label}_u{k}"
            while label in labels:
                label += "_"
            labels.add(label)
            new[id(b)] = ir.BasicBlock(label, b.pos)
        news.append(new)
    outside = {id(b): ir.BasicBlock(b.label, b.pos) for b in f.blocks[:i] + f.blocks[j + 1:]}
    outside[id(loop[0])] = news[0][id(loop[0])]         # (the loop is entered there)
    for b in f.blocks[:i] + f.blocks[j + 1:]:
        outside[id(b)].instructions = [_copy(inst, outside) for inst in b.instructions]
    copies: list[ir.BasicBlock] = []
    registers = dict(f.registers)
    local = sorted(_local_registers(f, i, j), key=lambda r: r.name)
    for k, new in enumerate(news):
        into = {**outside, **new}
        names = {}
        for r in local:
            name = f"{r.name}_u{k}"
            while name in registers:
                name += "_"
            names[r] = registers[name] = ir.Register(name, r.type, r.vector)
        for b in loop:
            copy = new[id(b)]
            copy.instructions = [_copy(inst, into, names) for inst in b.instructions]
            copies.append(copy)
        copies[-1].instructions.pop()        # the back branch: fall into the next copy
    g = _function_like(f, [outside[id(b)] for b in f.blocks[:i]] + copies
                       + [outside[id(b)] for b in f.blocks[j + 1:]], registers)
    link_blocks(g)
    return g


def _function_like(f: ir.Function, blocks: list, registers: dict) -> ir.Function:
    return ir.Function(f.name, f.kind, f.params, f.returns, f.linkage, f.directives,
                       registers, f.variables, blocks, f.is_declaration, f.pos)


# ----------------------------------------------------------------- folding


def _fold(f: ir.Function, block) -> None:
    """Known values folded into `f` in place (see the module's docstring)."""
    ins = _known(f, block)
    folded: set[int] = set()
    movs = _mov_specs()
    for b in f.blocks:
        state = dict(ins.get(id(b), {}))
        out = []
        for inst in b.instructions:
            new = _folded(inst, state, block, movs)
            if new is not None and new is not inst:
                folded.add(id(new))
            if new is not None:
                out.append(new)
            _transfer(inst, state, block)
        b.instructions = out
    _drop_dead(f, folded)
    link_blocks(f)
    _drop_unreached(f)
    link_blocks(f)


def _folded(inst: ir.Instruction, state: dict, block, movs: dict):
    """`inst` with known values folded in; None where it goes (a branch never taken)."""
    if inst.opcode == "bra" and inst.guard is not None:
        taken = state.get(inst.guard)
        if taken is None:
            return inst
        if bool(taken) == inst.guard_negated:
            return None
        return ir.Instruction(inst.spec, inst.operands, None, False, inst.pos)
    if inst.guard is not None or inst.opcode not in _EVALUATED:
        return inst
    t = _type(inst)
    value = _evaluate(inst, state, block)
    if value is not None and inst.opcode != "setp" and t is not None and t.name in movs:
        return ir.Instruction(movs[t.name], (inst.operands[0], IntImm(value)), None, False,
                              inst.pos)
    if t is None or t.kind not in _INTEGER or inst.opcode in ("mov", "not"):
        return inst
    operands = list(inst.operands)
    for k in range(1, len(operands)):
        v = operands[k]
        if isinstance(v, ir.Register) and v in state and v.type.bits == t.bits:
            operands[k] = IntImm(state[v])
    if inst.opcode in _COMMUTATIVE and len(operands) == 3 \
            and isinstance(operands[1], IntImm) and not isinstance(operands[2], IntImm):
        operands[1], operands[2] = operands[2], operands[1]
    if operands == list(inst.operands):
        return inst
    return ir.Instruction(inst.spec, tuple(operands), None, False, inst.pos)


def _drop_dead(f: ir.Function, folded: set[int]) -> None:
    """The folded movs whose registers nothing reads, removed (again until none is)."""
    while True:
        read: set = set()
        for inst in f.instructions():
            read |= uses_and_defs(inst)[0]
        dead = False
        for b in f.blocks:
            kept = [inst for inst in b.instructions
                    if id(inst) not in folded or inst.operands[0] in read]
            dead = dead or len(kept) != len(b.instructions)
            b.instructions = kept
        if not dead:
            return


def _drop_unreached(f: ir.Function) -> None:
    seen = {id(f.blocks[0])}
    stack = [f.blocks[0]]
    while stack:
        for s in stack.pop().successors:
            if id(s) not in seen:
                seen.add(id(s))
                stack.append(s)
    f.blocks = [b for b in f.blocks if id(b) in seen]


_MOVS: dict = {}


def _mov_specs() -> dict:
    """Type name -> the spec of `mov.<type>`, as the front end makes them."""
    if not _MOVS:
        from ptxport.ir.from_ptx import build
        from ptxport.ptx.parser import parse

        names = [f"{k}{bits}" for k in "sub" for bits in (16, 32, 64)]
        body = "".join(f".reg .{t} %m_{t}; mov.{t} %m_{t}, 0;\n" for t in names)
        text = (".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry m()\n{\n"
                + body + "ret;\n}\n")
        insts = list(build(parse(text, "<unroll_rounds>")).functions["m"].instructions())
        _MOVS.update((t, inst.spec) for t, inst in zip(names, insts, strict=False))
    return _MOVS
