"""Shared-memory range checks hoisted out of loops, for the CPU's warp gangs: a loop that is
one block, with no barrier, warp operation or call, whose trip count is known when
compiling, gets a copy whose shared-memory accesses are checked once, before it, instead of
at every iteration (a tiled GEMM's k loop: each k-step's loads were a compare and a branch
apiece, which split the loop's FMAs into small blocks).

The trip count is known where the back edge tests a register that the loop steps by a
constant (`add r, r, c`, or NVRTC's `add t, r, c` ... `mov r, t`) from a constant, against a
constant bound (setp ne, lt or le). An access qualifies when its address is an affine
function (mod 2^32, through mov, add, sub, shl, mul.lo and mad.lo by constants) of the
iteration's number k, the thread index, registers alike in every lane of a warp that the
loop does not write (a register the loop steps is its value before the loop plus c k) and
shared variables' addresses (`mov.u32 r, tile`, in the loop or before it: NVRTC puts them
in packing loops). A 64-bit address (older NVRTCs, 13.0 among them, address shared memory
through 64-bit registers: `mov.u64 rd, tile`, `mul.wide.s32`, `cvt.s64.s32`, `add.s64`,
`shl.b64`) qualifies likewise, exactly in 64 bits, where each 32-bit value it widens
depends on the iteration's number, the thread index and constants alone and lies in its
type's range, so that widening it changes no value; its uniform registers are 64-bit ones
the loop does not write. Over
the iterations and the block's thread indices, such an address lies in [R + low, R + high),
where R is the part from the uniform registers: before the loop, R is computed once per
distinct part and the whole range tested against the shared window (0 <= R + low, R + high
<= %total_smem_size, in 64 bits: no wrap; a 64-bit R is also tested to lie within 2^41 of
zero, so that neither sum wraps). Where every test holds, the warp runs the copy,
whose accesses (`prechecked`) the gang lowering does not check: none of them can fault.
Where one fails, it runs the loop as written, every access checked at its turn, so an
out-of-bounds access still faults there, with its own error, after the iterations before it.

    H:  R.. = ..; ok = tests          (in place of the loop; its predecessors enter here)
        @!ok bra L
    F:  the loop's copy, its accesses prechecked; @p bra F
    J:  bra <after the loop>
    L:  the loop as written

The rewritten kernel is a new function (the module's is not changed); the gang lowering
applies the pass after if-convert (gang/build.py); `ptxport inspect --dump-after
hoist-checks` shows it.
"""

from __future__ import annotations

import dataclasses

from ptxport.ir import nodes as ir
from ptxport.ir.analysis import constant_registers, may_write, state_space
from ptxport.ir.from_ptx import link_blocks
from ptxport.ir.types import TYPES
from ptxport.passes import PassResult
from ptxport.passes.snippets import snippet_instructions
from ptxport.passes.uniformity import uniform_registers
from ptxport.ptx.ast import IntImm

__all__ = ["copy_blocks", "hoist_checks", "run"]

# the largest range of the counter's values taken (a bound past this: the loop is left as
# it is; also keeps every constant below well inside 64 bits)
_MOST = 1 << 24
_INT32 = ("s32", "u32", "b32")
_INT64 = ("s64", "u64", "b64")
# how far from zero a 64-bit address's uniform part may lie (spans' ends are within 2^40)
_WIDE_PART = 1 << 41
# a loop holding one of these is left as it is: warps wait there for each other (warps of a
# block may take different copies), or control leaves the loop
_WAITS = frozenset(("bar", "barrier", "shfl", "vote", "activemask", "match", "redux",
                    "mma", "ldmatrix", "wgmma", "mbarrier", "call", "ret", "exit", "trap",
                    "brx"))
_TID = "%tid"

_SNIPPET = """
    mul.lo.u32 %r0, %r1, %r2;
    add.u32 %r0, %r1, %r2;
    cvt.u64.u32 %rd0, %r0;
    add.s64 %rd0, %rd1, %rd2;
    setp.ge.s64 %p0, %rd0, %rd1;
    setp.le.s64 %p0, %rd0, %rd1;
    and.pred %p0, %p1, %p2;
    mul.lo.s64 %rd0, %rd1, %rd2;
    mov.u32 %r0, %total_smem_size;
    bra $L__end;
$L__end:
"""


@dataclasses.dataclass
class _Specs:
    mul: object
    add: object
    widen: object
    add64: object
    at_least: object
    at_most: object
    and_: object
    mul64: object
    total: tuple        # (mov's spec, the %total_smem_size operand)
    bra: object


def _specs() -> _Specs:
    insts = snippet_instructions(_SNIPPET, "<hoist_checks>")
    return _Specs(*(i.spec for i in insts[:8]), (insts[8].spec, insts[8].operands[1]),
                  insts[9].spec)


# -- affine forms: {symbol: coefficient} with the constant under None; symbols are the
# iteration's number ("k"), thread indices (("%tid", "x")) and uniform registers (their
# Register)

def _sum(a: dict, b: dict, scale: int = 1) -> dict:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + scale * v
    return {k: v for k, v in out.items() if v or k is None}


def _scaled(a: dict, c: int) -> dict:
    return {k: v * c for k, v in a.items()}


@dataclasses.dataclass
class _Loop:
    """A one-block loop L (blocks[index]) entered from the block `entering` alone, which
    runs `trips` iterations (k = 0 .. trips - 1)."""

    index: int
    block: ir.BasicBlock
    entering: ir.BasicBlock
    trips: int = 0


class _Forms:
    """Affine forms of registers read in a loop, where they have one. A register that the
    loop steps by a constant once an iteration (`add r, r, c`, or NVRTC's `add t, r, c` ...
    `mov r, t`) is its value entering the loop plus c k."""

    def __init__(self, block: tuple, loop: _Loop, uniform: set, constants: dict,
                 writes: dict):
        self.shape, self.loop = block, loop
        self.uniform, self.constants, self.writes = uniform, constants, writes
        self.inside: dict = {}
        for i, inst in enumerate(loop.block.instructions):
            for reg in may_write(inst):
                self.inside.setdefault(reg, []).append(i)
        self.stepped: dict = {}
        for reg, where in self.inside.items():
            found = self._step(reg, where)
            if found is not None:
                self.stepped[reg] = found

    def _step(self, reg, where: list[int]):
        """(c, index of the write, form entering the loop) of a register the loop steps."""
        insts = self.loop.block.instructions
        if len(where) != 1 or insts[where[0]].guard is not None:
            return None
        inst, w = insts[where[0]], where[0]
        if inst.opcode == "mov" and isinstance(inst.operands[1], ir.Register):
            sums = self.inside.get(inst.operands[1], [])
            if len(sums) != 1 or sums[0] > w:
                return None
            inst = insts[sums[0]]
        c = _value(inst.operands[2], self.constants) if len(inst.operands) == 3 else None
        if inst.opcode != "add" or inst.guard is not None or inst.operands[1] is not reg \
                or c is None or not inst.spec.types or inst.spec.types[0] not in _INT32:
            return None
        for before in reversed(self.loop.entering.instructions):
            if reg in may_write(before):
                entry = self._defined(before, None, 0)
                return None if entry is None else (c, w, entry)
        return None

    def of(self, value, at: int | None, depth: int = 0) -> dict | None:
        """The form of `value` read by instruction `at` of the loop (None: outside it,
        where every register must have one write in the kernel), or None."""
        if depth > 24:
            return None
        if isinstance(value, IntImm):
            return {None: value.value}
        if _shared_variable(value):     # (its address: alike in every thread of the block)
            return {value: 1, None: 0}
        if isinstance(value, ir.SpecialRegister):
            return {(_TID, value.component): 1} if value.name == _TID and \
                value.component in "xyz" else None
        if not isinstance(value, ir.Register) or value.type.name not in _INT32 + _INT64:
            return None
        if value in self.constants:
            return {None: self.constants[value]}
        loop = self.loop
        if at is not None and value in self.stepped:
            c, w, entry = self.stepped[value]
            return _sum(entry, {"k": c, None: c if at > w else 0})
        if at is not None and value in self.inside:
            before = [i for i in self.inside[value] if i < at]
            if self.inside[value] != before or len(before) != 1:
                return None       # (written after this read too: a value from before)
            return self._defined(loop.block.instructions[before[0]], before[0], depth)
        # (a uniform register the loop does not write: its value before the loop; read
        # by a write outside the loop, only where that is its one write)
        if at is None and value in self.inside:
            return None
        single = len(self.writes.get(value, ())) == 1
        if value in self.uniform and (at is not None or single):
            return {value: 1, None: 0}
        if not single:
            return None
        return self._defined(self.writes[value][0], None, depth)

    def _defined(self, inst: ir.Instruction, at: int | None, depth: int) -> dict | None:
        """The form of what `inst` (instruction `at` of the loop, or outside it) writes."""
        types = inst.spec.types
        if inst.guard is not None or not types or types[0] not in _INT32 + _INT64:
            return None
        ops = [self.of(o, at, depth + 1) for o in inst.operands[1:]]
        if any(f is None for f in ops):
            return None
        op = inst.opcode
        if op == "cvt" or op == "mul" and inst.spec.has("wide"):
            return self._widened(op, types, ops)
        if types[0] in _INT64 and op not in ("mov", "add", "sub", "shl", "mul", "mad"):
            return None
        if op == "mov" and len(ops) == 1:
            return ops[0]
        if op == "add" and len(ops) == 2:
            return _sum(ops[0], ops[1])
        if op == "sub" and len(ops) == 2:
            return _sum(ops[0], ops[1], -1)
        constant = [_constant(f) for f in ops]
        bits = 64 if types[0] in _INT64 else 32
        if op == "shl" and len(ops) == 2 and constant[1] is not None and \
                0 <= constant[1] < bits:
            return _scaled(ops[0], 1 << constant[1])
        if op in ("mul", "mad") and inst.spec.has("lo") and len(ops) == (2 if op == "mul" else 3):
            if constant[1] is not None:
                product = _scaled(ops[0], constant[1])
            elif constant[0] is not None:
                product = _scaled(ops[1], constant[0])
            else:
                return None
            return product if op == "mul" else _sum(product, ops[2])
        return None


    def _widened(self, op: str, types: tuple, ops: list) -> dict | None:
        """The form of a 32-bit value widened to 64 bits (cvt.{s,u}64.{s,u}32, or the
        product of mul.wide by a constant), where it is exact: the 32-bit form depends on
        the iteration's number, the thread index and constants alone (bounded: their
        ranges are known) and lies in the range of its type, so that widening it keeps its
        value."""
        if op == "cvt":
            if len(types) != 2 or types[0] not in _INT64 or types[1] not in _INT32 \
                    or len(ops) != 1:
                return None
            return self._exact(ops[0], types[1])
        if len(ops) != 2 or types[0] not in _INT32:
            return None
        constant = [_constant(f) for f in ops]
        if constant[1] is None and constant[0] is None:
            return None
        c, other = (constant[1], ops[0]) if constant[1] is not None else (constant[0], ops[1])
        if types[0][0] == "s" and c >= 1 << 31:
            c -= 1 << 32
        form = self._exact(other, types[0])
        return None if form is None else _scaled(form, c)

    def _exact(self, form: dict, type_name: str) -> dict | None:
        """`form` (of a 32-bit value of type `type_name`) where its every value lies in
        that type's range (signed for s32, unsigned else), else None."""
        if not self.loop.trips:
            return None     # (k's range not known yet)
        ranges = _ranges(self.loop, self.shape)
        low = high = form.get(None, 0)
        for symbol, c in form.items():
            if symbol is None:
                continue
            if symbol not in ranges:
                return None
            a, b = ranges[symbol][0] * c, ranges[symbol][1] * c
            low, high = low + min(a, b), high + max(a, b)
        first = -(1 << 31) if type_name[0] == "s" else 0
        return form if first <= low and high < first + (1 << 32) else None


def _shared_variable(value) -> bool:
    return isinstance(value, ir.Variable) and value.space == "shared"


def _uniform_symbol(symbol) -> bool:
    """A symbol of a form that stands for a value alike in the warp: a uniform register,
    or a shared variable's address (the pass's own reading of it: `mov.u32 r, var`)."""
    return isinstance(symbol, ir.Register) or _shared_variable(symbol)


def _constant(form: dict) -> int | None:
    return form[None] if set(form) == {None} else None


def _one_block_loop(kernel: ir.Function, index: int) -> _Loop | None:
    """blocks[index] as a _Loop (its trip count not yet known), where it is a loop of one
    block ending in its conditional back edge, entered from one other block."""
    block = kernel.blocks[index]
    insts = block.instructions
    if block not in block.successors or not insts or insts[-1].opcode != "bra" \
            or insts[-1].guard is None or insts[-1].guard_negated:
        return None
    entering = [b for b in kernel.blocks if block in b.successors and b is not block]
    if len(entering) != 1 or not entering[0].instructions \
            or any(inst.opcode in _WAITS for inst in insts):
        return None
    return _Loop(index, block, entering[0])


def _trips(loop: _Loop, forms: _Forms) -> int | None:
    """How many iterations the loop runs: its back edge's test `setp.{ne,lt,le} x, N`
    with N a constant and x = x0 + s k (s > 0, x0 a constant: a counter stepped from a
    constant), where it takes a whole number of steps to fail."""
    insts = loop.block.instructions
    test = [i for i, inst in enumerate(insts) if insts[-1].guard in may_write(inst)]
    if len(test) != 1 or insts[test[0]].opcode != "setp" or insts[test[0]].guard is not None:
        return None
    setp = insts[test[0]]
    compare = setp.spec.get("cmp")
    bound = _value(setp.operands[2], forms.constants)
    unsigned = setp.spec.types and setp.spec.types[0][0] in "ub"
    form = forms.of(setp.operands[1], test[0])
    if compare not in ("ne", "lt", "le") or bound is None or form is None \
            or set(form) != {"k", None} or form["k"] <= 0:
        return None
    s, x0 = form["k"], form[None]
    if unsigned and (x0 < 0 or bound < 0):
        return None
    if compare == "ne":     # (fails at k with x0 + s k == N)
        if (bound - x0) % s or bound < x0:
            return None
        last = (bound - x0) // s
    else:                   # (fails at the first k with x0 + s k >= N, or > N)
        last = max(0, -(-(bound + (compare == "le") - x0) // s))
    return last + 1 if s * last <= _MOST and abs(x0) <= _MOST else None


def _value(operand, constants: dict) -> int | None:
    if isinstance(operand, IntImm):
        return operand.value
    return constants.get(operand) if isinstance(operand, ir.Register) else None


def _ranges(loop: _Loop, block: tuple) -> dict:
    """Each symbol's (lowest, highest) value in the loop."""
    return {"k": (0, loop.trips - 1),
            **{(_TID, d): (0, n - 1) for d, n in zip("xyz", block, strict=True)}}


def _spans(loop: _Loop, forms: _Forms, ranges: dict) -> tuple[dict, list[int]]:
    """The loop's qualifying shared accesses: the uniform part of their addresses (a tuple
    of (register, coefficient)) -> (lowest, highest) byte past it, and their indices."""
    spans: dict = {}
    found = []
    for i, inst in enumerate(loop.block.instructions):
        if inst.opcode not in ("ld", "st") or state_space(inst) != "shared":
            continue
        address = inst.operands[1 if inst.opcode == "ld" else 0]
        if not isinstance(address, ir.Address) or not (
                isinstance(address.base, ir.Register) or _shared_variable(address.base)):
            continue
        form = forms.of(address.base, i)
        if form is None:
            continue
        low = high = form.get(None, 0) + address.offset
        for symbol, c in form.items():
            if symbol in ranges:
                a, b = ranges[symbol][0] * c, ranges[symbol][1] * c
                low, high = low + min(a, b), high + max(a, b)
        vec = inst.spec.get("vec")
        size = TYPES[inst.spec.types[-1]].bits // 8 * (int(vec[1:]) if vec else 1)
        wide = isinstance(address.base, ir.Register) and address.base.type.name in _INT64
        part = (wide, tuple(sorted(((r, c) for r, c in form.items() if _uniform_symbol(r)),
                                   key=lambda rc: rc[0].name)))
        if abs(low) > 1 << 40 or abs(high) > 1 << 40:
            continue
        old = spans.get(part, (low, high + size))
        spans[part] = (min(old[0], low), max(old[1], high + size))
        found.append(i)
    return spans, found


class _Emitter:
    """New registers and instructions of the test block, in one function."""

    def __init__(self, f: ir.Function, specs: _Specs, pos: int):
        self.f, self.specs, self.pos, self.out = f, specs, pos, []

    def register(self, type_name: str) -> ir.Register:
        name = f"%hoisted{len(self.f.registers)}"
        reg = self.f.registers[name] = ir.Register(name, TYPES[type_name])
        return reg

    def emit(self, spec, kind: str, *operands) -> ir.Register:
        reg = self.register(kind)
        self.out.append(ir.Instruction(spec, (reg, *operands), pos=self.pos))
        return reg

    def uniform_part(self, part: tuple) -> ir.Register:
        """R as a 64-bit register: the sum of the part's registers times their
        coefficients, mod 2^32 (as the kernel computes it), or of 64-bit registers mod 2^64
        where the part is `wide` (a 64-bit address)."""
        s = self.specs
        wide, terms = part
        total = None
        for reg, c in terms:
            if _shared_variable(reg):       # (its address, as the kernel's mov.u32 reads it)
                reg = self.emit(s.total[0], "u32", reg)
                if wide:
                    reg = self.emit(s.widen, "u64", reg)
            if wide:
                term = reg if c == 1 else self.emit(s.mul64, "u64", reg, IntImm(c))
                total = term if total is None else self.emit(s.add64, "u64", total, term)
                continue
            term = reg if c == 1 else self.emit(s.mul, "u32", reg, IntImm(c & 0xFFFFFFFF))
            total = term if total is None else self.emit(s.add, "u32", total, term)
        if wide and total is not None:
            return total
        return self.emit(s.widen, "u64", total if total is not None else IntImm(0))

    def test(self, spans: dict) -> ir.Register:
        """The predicate: every span inside the shared window."""
        s = self.specs
        window = self.emit(s.widen, "u64", self.emit(s.total[0], "u32", s.total[1]))
        ok = None
        for part, (low, high) in spans.items():
            r = self.uniform_part(part)
            tests = [self.emit(s.at_most, "pred", self.emit(s.add64, "u64", r, IntImm(high)),
                               window)]
            if part[0]:     # (a 64-bit R: any value, so both ends, and no wrap of R + high)
                tests += [self.emit(s.at_least, "pred", r, IntImm(-low)),
                          self.emit(s.at_most, "pred", r, IntImm(_WIDE_PART)),
                          self.emit(s.at_least, "pred", r, IntImm(-_WIDE_PART))]
            elif low < 0:
                tests.append(self.emit(s.at_least, "pred", r, IntImm(-low)))
            for t in tests:
                ok = t if ok is None else self.emit(s.and_, "pred", ok, t)
        return ok


def copy_blocks(kernel: ir.Function, moved: dict) -> ir.Function:
    """A copy of `kernel` with blocks of its own (the instructions are shared, but for the
    branches, retargeted); `moved` gets id(block or branch of kernel) -> its replacement."""
    f = dataclasses.replace(kernel, registers=dict(kernel.registers), blocks=[])
    twins = {}
    for block in kernel.blocks:
        twin = ir.BasicBlock(block.label, block.pos)
        twin.instructions = list(block.instructions)
        twins[id(block)] = moved[id(block)] = twin
        f.blocks.append(twin)
    for block in f.blocks:
        _retarget_last(block, twins, moved)
    link_blocks(f)
    return f


def _retarget_last(block: ir.BasicBlock, twins: dict, moved: dict) -> None:
    """Retarget the block's closing branch (if any) by `twins`, noting it in `moved`, whose
    keys are the ids of the objects of the kernel as given."""
    last = block.instructions[-1] if block.instructions else None
    if last is None or last.opcode not in ("bra", "brx"):
        return
    new = _retargeted(last, twins)
    if all(a is b for a, b in zip(new.operands, last.operands, strict=True)):
        return
    block.instructions[-1] = new
    origin = next((k for k, v in moved.items() if v is last), id(last))
    moved[origin] = new


def _retargeted(inst: ir.Instruction, twins: dict) -> ir.Instruction:
    def target(o):
        if isinstance(o, ir.BasicBlock):
            return twins.get(id(o), o)
        if isinstance(o, ir.ListValue):
            return ir.ListValue(tuple(target(e) for e in o.elements), o.bracketed)
        return o
    return ir.Instruction(inst.spec, tuple(target(o) for o in inst.operands), inst.guard,
                          inst.guard_negated, inst.pos)


def _version(f: ir.Function, loop: _Loop, spans: dict, found: list[int], specs: _Specs,
             copies: dict, moved: dict) -> set[int]:
    """Put H, F and J in front of the loop (module docstring); returns the ids of F's
    prechecked accesses, and adds id(instruction of L) -> id(its copy in F) to `copies`
    (and the retargeted branches to `moved`)."""
    body = loop.block
    pos = body.pos
    after = f.blocks[loop.index + 1] if loop.index + 1 < len(f.blocks) else None
    head = ir.BasicBlock(f"{body.label}_hoisted_checks", pos)
    fast = ir.BasicBlock(f"{body.label}_prechecked", pos)
    emitter = _Emitter(f, specs, pos)
    ok = emitter.test(spans)
    head.instructions = emitter.out + [ir.Instruction(specs.bra, (body,), ok, True, pos)]
    fast.instructions = [ir.Instruction(i.spec, i.operands, i.guard, i.guard_negated, i.pos)
                         for i in body.instructions]
    back = fast.instructions[-1]
    fast.instructions[-1] = ir.Instruction(back.spec, (fast,), back.guard, back.guard_negated,
                                           back.pos)
    blocks = [head, fast]
    if after is not None:
        leave = ir.BasicBlock(f"{body.label}_prechecked_done", pos)
        leave.instructions = [ir.Instruction(specs.bra, (after,), pos=pos)]
        blocks.append(leave)
    for block in f.blocks:      # (the loop's entrances now enter the test)
        if block is not body:
            _retarget_last(block, {id(body): head}, moved)
    f.blocks[loop.index:loop.index] = blocks
    link_blocks(f)
    copies.update((id(a), id(b)) for a, b in zip(body.instructions, fast.instructions,
                                                 strict=True))
    return {id(fast.instructions[i]) for i in found}


def hoist_checks(kernel: ir.Function, block: tuple[int, int, int]
                 ) -> tuple[ir.Function, list[str], frozenset[int], dict[int, int], dict]:
    """`kernel` with each qualifying loop (module docstring) versioned (`kernel` itself
    where none qualifies), one note per loop, the ids of the accesses the gang lowering
    need not check, id(instruction of a loop) -> id(its copy), and id(block or branch of
    `kernel`) -> what replaces it in the result (for what if_convert.py said of them)."""
    constants = constant_registers(kernel)
    uniform = uniform_registers(kernel, block)
    writes: dict = {}
    for inst in kernel.instructions():
        for reg in may_write(inst):
            writes.setdefault(reg, []).append(inst)
    plans = []
    for index in range(len(kernel.blocks)):
        loop = _one_block_loop(kernel, index)
        if loop is None:
            continue
        forms = _Forms(block, loop, uniform, constants, writes)
        loop.trips = _trips(loop, forms) or 0
        if not loop.trips:
            continue
        spans, found = _spans(loop, forms, _ranges(loop, block))
        if found:
            plans.append((loop, spans, found))
    if not plans:
        return kernel, [], frozenset(), {}, {}
    moved: dict = {}
    f, specs, prechecked, notes, copies = copy_blocks(kernel, moved), _specs(), set(), [], {}
    for loop, spans, found in reversed(plans):     # (later loops first: indices hold)
        loop = dataclasses.replace(loop, block=f.blocks[loop.index])
        prechecked |= _version(f, loop, spans, found, specs, copies, moved)
        notes.append(f"the loop {loop.block.label}: {len(found)} shared access(es) checked "
                     f"once before it ({len(spans)} range(s), {loop.trips} iterations)")
    return f, notes[::-1], frozenset(prechecked), copies, moved


def run(module: ir.Module, kernel: ir.Function, block=None) -> PassResult:
    """The pass for `ptxport inspect --dump-after hoist-checks` (a block shape is needed:
    the thread indices' ranges; without one, a warp's row, (32, 1, 1))."""
    f, notes, *_ = hoist_checks(kernel, tuple(block) if block else (32, 1, 1))
    return PassResult(f, notes)
