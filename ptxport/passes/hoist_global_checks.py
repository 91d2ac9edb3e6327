"""Global-memory range checks of a loop made once, before it, for the CPU's warp gangs: a
tiled GEMM's tile loop (barriers inside, its bound K a register) loads A's and B's tiles
from global memory, each load's lanes checked against the launch's allocations at every
iteration (the lanes' lowest and highest address, then the site's cached allocation: ~20
instructions a load). Here the range each load will touch over all the loop's iterations
is computed at the loop's entry, and the gang lowering checks it there, once; in the loop a
load skips its own check where every lane running it passed that test. Where the test
fails (a range that leaves its allocation, a value that may wrap), every access checks
itself as before, so an out-of-bounds access still faults at its turn, with its own error.

The loop: blocks H..T in layout order, T ending in `@p bra H` (its one back edge), entered
only at H, from the block E just before it (E's test goes before its closing branch, if
any), no block of it leaving but T (falling through); no ret, exit, trap, call or brx in
it (barriers and warp operations may be there: nothing is copied, so every warp runs the
same code). Its counter c is
written once in the loop, `add.s32 c, c, s` in T (s > 0 a constant), last set in E to a
constant x0 (`mov c, x0`); p is written once in the loop, `setp.lt.s32 p, c, B` after it in
T, with B a constant or a register the loop does not write. The loop then runs for k = 0 ..
last, last = max(0, ceil((B - x0) / s) - 1), where B + s - 1 does not wrap (tested at run
time with the rest). Constants fold when compiling (a constant bound's last, a constant
step's product); a test that fails whatever the run leaves the access (or loop) alone.

An access qualifies when its address is a 64-bit register whose value at iteration k is
v0 + d k, v0 and d computed at E: a register the loop does not write (d = 0), one it steps
once an iteration (`add r, r, step` in T, after the access, step a constant or a register
the loop does not write), or what an instruction earlier in the access's own block makes of
such values by add, sub, mov, shl, mul.lo and mad.lo by loop-invariant values, and widening
(cvt.{s,u}64.{s,u}32, mul.wide.{s,u}32). These are ring operations, so the value is v0 + d k
mod 2^bits (each ring operation's value at k = last is what the kernel computes there); a
widening is exact where the 32-bit value at k = last, computed in 64 bits
(v0 + d last), stays in its type's range (then, linear in k, so does every value between),
and the address does not wrap where |d| <= 2^32 and last < 2^24 (tested at run time) and
both ends lie in one allocation. Over the loop the lane's accesses lie in [min(v0, v0 + d
last) + offset, max(...) + offset + size): E gets, after its own instructions, each
qualifying access's two ends and the tests, and one `and.pred ok, tests` that the gang
lowering lowers as the whole test (`tests` below: the warp's active lanes' conditions all
hold and each access's range, from the lowest lane's end to the highest's, lies in one
allocation); `ok` is then true in each lane that entered the loop with such a test. T
gets `and.pred ok, ok, ok` before its branch, which the lowering makes no code of: it reads
ok there, so that ok is live through the loop (a warp's frame keeps it across barriers).

    E:  ...; lo = ..; hi = ..; conditions; ok = the test
    H:  ... the loop; T: ...; (ok = ok); @p bra H

The gang lowering (gang/memory.py's _twice) lowers each covered access twice, with no
check of its own where every lane of the mask has ok, and as before where one does not.
A per-lane ok, not a warp's, because the lanes of a warp may enter the loop apart (each
lane's ok says its own range, with the others of its entry, passed).

The rewritten kernel is a new function (the module's is not changed); the gang lowering
applies the pass after hoist-checks (gang/build.py); `ptxport inspect --dump-after
hoist-global-checks` shows it.
"""

from __future__ import annotations

import dataclasses

from ptxport.ir import nodes as ir
from ptxport.ir.analysis import may_write, state_space
from ptxport.ir.from_ptx import link_blocks
from ptxport.ir.types import TYPES
from ptxport.passes import PassResult
from ptxport.passes.hoist_checks import copy_blocks
from ptxport.passes.snippets import snippet_instructions
from ptxport.ptx.ast import IntImm

__all__ = ["GlobalChecks", "hoist_global_checks", "run"]

_LEAVES = frozenset(("ret", "exit", "trap", "call", "brx"))
_INT32 = ("s32", "u32", "b32")
_INT64 = ("s64", "u64", "b64")
# how many iterations past the first the run-time test accepts, and how far an address may
# move an iteration: |d| last < 2^56, so no end of a range wraps
_MOST_LAST = 1 << 24
_MOST_STEP = 1 << 32

_SNIPPET = """
    cvt.s64.s32 %rd0, %r0;
    cvt.u64.u32 %rd0, %r0;
    add.s64 %rd0, %rd1, %rd2;
    sub.s64 %rd0, %rd1, %rd2;
    mul.lo.s64 %rd0, %rd1, %rd2;
    shl.b64 %rd0, %rd1, 2;
    max.s64 %rd0, %rd1, %rd2;
    min.u64 %rd0, %rd1, %rd2;
    max.u64 %rd0, %rd1, %rd2;
    shr.s64 %rd0, %rd1, 2;
    div.s64 %rd0, %rd1, %rd2;
    setp.ge.s64 %p0, %rd0, %rd1;
    setp.le.s64 %p0, %rd0, %rd1;
    and.pred %p0, %p1, %p2;
    setp.eq.s64 %p0, %rd0, %rd1;
    add.s32 %r0, %r1, %r2;
    sub.s32 %r0, %r1, %r2;
    mul.lo.s32 %r0, %r1, %r2;
    shl.b32 %r0, %r1, 2;
"""

_NAMES = ("sext", "zext", "add", "sub", "mul", "shl", "smax", "umin", "umax", "sshr", "sdiv",
          "ge", "le", "and_", "same", "add32", "sub32", "mul32", "shl32")


def _s64(v: int) -> int:
    return _signed64(v)


# the emitted instructions a constant's operands fold to a constant (two's complement, 64
# bits; the 32-bit ones' values are only ever widened after: cvt.s64.s32 of them folds as
# sext or zext of the low 32 bits; sdiv's dividend is never negative)
_FOLD = {"add": lambda a, b: _s64(a + b), "sub": lambda a, b: _s64(a - b),
         "mul": lambda a, b: _s64(a * b), "shl": lambda a, n: _s64(a << n),
         "smax": lambda a, b: max(_s64(a), _s64(b)), "sshr": lambda a, n: _s64(a) >> n,
         "sdiv": lambda a, b: _s64(a) // b, "sext": lambda a: _signed32(a),
         "zext": lambda a: a & 0xFFFFFFFF,
         "add32": lambda a, b: (a + b) & 0xFFFFFFFF, "sub32": lambda a, b: (a - b) & 0xFFFFFFFF,
         "mul32": lambda a, b: (a * b) & 0xFFFFFFFF, "shl32": lambda a, n: (a << n) & 0xFFFFFFFF}


_COMMUTE = frozenset(("add", "mul", "umin", "umax", "smax", "add32", "mul32", "and_"))


class _Never(Exception):
    """A condition of the test that fails whatever the run: the access (or loop) is left
    as it is."""


def _specs() -> dict:
    insts = snippet_instructions(_SNIPPET, "<hoist_global_checks>")
    return dict(zip(_NAMES, (i.spec for i in insts[:len(_NAMES)]), strict=True))


@dataclasses.dataclass
class GlobalChecks:
    """What the pass found, for the gang lowering: `tests`, id(the `and.pred` test in E) ->
    the (lo, hi) registers of each access's range; `checked`, id(access) -> the predicate
    register that says (per lane) its range was found inside; `kept`, the ids of the
    `and.pred ok, ok, ok` at the end of each loop (before T's branch), which read ok there
    so that every analysis of liveness keeps it through the loop (a warp's frame holds it
    across the barriers): the lowering makes no code of them."""

    tests: dict = dataclasses.field(default_factory=dict)
    checked: dict = dataclasses.field(default_factory=dict)
    kept: set = dataclasses.field(default_factory=set)


@dataclasses.dataclass
class _Loop:
    h: int              # index of the header block H
    t: int              # index of the latch T
    counter: ir.Register
    x0: int
    step: int
    bound: object       # IntImm or a register
    steps: dict         # register -> (index in T of its add, step operand)


class _Emitter:
    """New registers and instructions (at the end of E) of one loop's test."""

    def __init__(self, f: ir.Function, specs: dict, pos: int):
        self.f, self.specs, self.pos, self.out = f, specs, pos, []
        self.conditions: list = []

    def emit(self, name: str, kind: str, *operands):
        """The register `name`'s instruction writes (a constant where its operands are)."""
        if name in _FOLD and all(isinstance(o, IntImm) for o in operands):
            return IntImm(_FOLD[name](*(o.value for o in operands)))
        if name in _COMMUTE and isinstance(operands[0], IntImm):     # (the register first)
            operands = operands[::-1]
        reg_name = f"%gchecked{len(self.f.registers)}"
        reg = self.f.registers[reg_name] = ir.Register(reg_name, TYPES[kind])
        self.out.append(ir.Instruction(self.specs[name], (reg, *operands), pos=self.pos))
        return reg

    def within(self, value, low: int, high: int) -> None:
        """A condition: low <= value <= high (s64); a constant's is decided here (_Never
        where it fails)."""
        if isinstance(value, IntImm):
            if not low <= _signed64(value.value) <= high:
                raise _Never
            return
        self.conditions.append(self.emit("ge", "pred", value, IntImm(low)))
        self.conditions.append(self.emit("le", "pred", value, IntImm(high)))


def _loop_at(kernel: ir.Function, t: int) -> _Loop | None:
    """The loop whose latch is blocks[t] (module docstring), or None."""
    blocks = kernel.blocks
    latch = blocks[t]
    insts = latch.instructions
    if not insts or insts[-1].opcode != "bra" or insts[-1].guard is None \
            or insts[-1].guard_negated or not isinstance(insts[-1].operands[0], ir.BasicBlock):
        return None
    head = insts[-1].operands[0]
    h = next((i for i, b in enumerate(blocks) if b is head), None)
    if h is None or h == 0 or h > t:
        return None
    inside = {id(b) for b in blocks[h:t + 1]}
    for i, block in enumerate(blocks):
        if h <= i < t and any(id(s) not in inside for s in block.successors):
            return None             # (left elsewhere than at T)
        if not h <= i <= t and any(id(s) in inside and (s is not head or i != h - 1)
                                   for s in block.successors):
            return None             # (entered elsewhere than from E into H)
    if head not in blocks[h - 1].successors:
        return None
    if any(inst.opcode in _LEAVES for b in blocks[h:t + 1] for inst in b.instructions):
        return None
    return _counter(kernel, h, t)


def _writes_in(blocks: list) -> dict:
    out: dict = {}
    for bi, block in enumerate(blocks):
        for ii, inst in enumerate(block.instructions):
            for reg in may_write(inst):
                out.setdefault(reg, []).append((bi, ii))
    return out


def _counter(kernel: ir.Function, h: int, t: int) -> _Loop | None:
    """The loop's counter and trip form (module docstring), or None."""
    blocks = kernel.blocks[h:t + 1]
    writes = _writes_in(blocks)
    latch = blocks[-1].instructions
    p = latch[-1].guard
    if len(writes.get(p, ())) != 1:
        return None
    bi, si = writes[p][0]
    setp = blocks[bi].instructions[si]
    if bi != len(blocks) - 1 or setp.opcode != "setp" or setp.guard is not None \
            or setp.spec.get("cmp") != "lt" or setp.spec.get("boolop") \
            or setp.spec.types[:1] != ("s32",) or len(setp.operands) != 3:
        return None
    c, bound = setp.operands[1], setp.operands[2]
    if not isinstance(c, ir.Register) or isinstance(bound, ir.Register) and bound in writes \
            or not isinstance(bound, ir.Register | IntImm):
        return None
    if isinstance(bound, IntImm) and not -(1 << 31) <= _signed32(bound.value) <= (1 << 30):
        return None
    steps = _steps(blocks, writes)
    if c not in steps or steps[c][0] > si or not isinstance(steps[c][1], IntImm) \
            or not 0 < steps[c][1].value < 1 << 16 or c.type.name not in _INT32:
        return None
    x0 = None
    for inst in reversed(kernel.blocks[h - 1].instructions):
        if c in may_write(inst):
            if inst.opcode == "mov" and inst.guard is None and isinstance(inst.operands[1],
                                                                           IntImm):
                x0 = inst.operands[1].value
            break
    if x0 is None or not -(1 << 30) <= x0 <= 1 << 30:
        return None
    return _Loop(h, t, c, x0, steps[c][1].value, bound, steps)


def _steps(blocks: list, writes: dict) -> dict:
    """Registers the loop steps once an iteration: written once in it, by an unguarded
    `add r, r, step` in T (step a constant or a register the loop does not write)."""
    out = {}
    last = len(blocks) - 1
    for reg, where in writes.items():
        if len(where) != 1 or where[0][0] != last:
            continue
        inst = blocks[last].instructions[where[0][1]]
        if inst.opcode != "add" or inst.guard is not None or len(inst.operands) != 3 \
                or inst.operands[1] is not reg or not inst.spec.types \
                or inst.spec.types[0] not in _INT32 + _INT64:
            continue
        step = inst.operands[2]
        if isinstance(step, IntImm) or isinstance(step, ir.Register) and step not in writes:
            out[reg] = (where[0][1], step)
    return out


class _Linear:
    """Values of a loop as (v0, d): registers (or constants) of E such that the value at
    iteration k is v0 + d k (d None: 0), in the value's own width."""

    def __init__(self, loop: _Loop, blocks: list, em: _Emitter, last: ir.Register):
        self.loop, self.blocks, self.em, self.last = loop, blocks, em, last
        self.writes = _writes_in(blocks)
        self.memo: dict = {}
        self.defined: dict = {}

    def of(self, value, at: tuple, wide: bool, depth: int = 0):
        """(v0, d) of `value` read by the instruction at (block, index) of the loop, in 64
        bits where `wide`, else 32; None where it has no such form."""
        if depth > 16:
            return None
        if isinstance(value, IntImm):
            return (value, None)
        if not isinstance(value, ir.Register) or value.type.name not in (
                _INT64 if wide else _INT32):
            return None
        if value not in self.writes:
            return (value, None)
        key = (value, at)
        if key not in self.memo:
            self.memo[key] = self._written(value, at, wide, depth)
        return self.memo[key]

    def _written(self, reg, at: tuple, wide: bool, depth: int):
        bi, ii = at
        before = [w for w in self.writes[reg] if w[0] == bi and w[1] < ii]
        if before:
            where = max(before)
            return self._defined(self.blocks[bi].instructions[where[1]], where, wide, depth)
        step = self.loop.steps.get(reg)
        last = len(self.blocks) - 1
        if step is not None and (bi < last or ii < step[0]):
            return (reg, step[1])
        return None

    def _defined(self, inst: ir.Instruction, at: tuple, wide: bool, depth: int):
        """(v0, d) of what `inst` (at `at`) writes; alike instructions of alike operands'
        forms (an if-converted region's two copies) give the same registers."""
        narrow = inst.opcode == "cvt" or inst.opcode == "mul" and inst.spec.has("wide")
        key = [inst.spec.text, wide, inst.guard is None]
        for o in inst.operands[1:]:
            if isinstance(o, ir.Register):
                form = self.of(o, at, wide and not narrow, depth + 1)
                key.append((id(o), None if form is None else tuple(id(x) for x in form)))
            else:
                key.append(("imm", o.value) if isinstance(o, IntImm) else id(o))
        key = tuple(key)
        if key not in self.defined:
            self.defined[key] = self._define(inst, at, wide, depth)
        return self.defined[key]

    def _define(self, inst: ir.Instruction, at: tuple, wide: bool, depth: int):
        types = inst.spec.types
        if inst.guard is not None or not types or len(inst.operands) < 2:
            return None
        op, ops = inst.opcode, inst.operands[1:]
        if op == "cvt" or op == "mul" and inst.spec.has("wide"):
            return self._widened(inst, at, depth) if wide else None
        if types[0] not in (_INT64 if wide else _INT32):
            return None
        forms = [self.of(o, at, wide, depth + 1) for o in ops]
        if any(f is None for f in forms):
            return None
        em, suffix = self.em, "" if wide else "32"
        if op == "mov" and len(forms) == 1:
            return forms[0]
        if op in ("add", "sub") and len(forms) == 2 and not inst.spec.get("sat") \
                and not inst.spec.has("cc"):
            kind, name = ("b64" if wide else "b32"), op + suffix
            (a0, ad), (b0, bd) = forms
            if bd is None:
                d = ad
            elif ad is None and op == "add":
                d = bd
            else:
                d = em.emit(name, kind, IntImm(0) if ad is None else ad, bd)
            return (em.emit(name, kind, a0, b0), d)
        if op == "shl" and len(forms) == 2 and forms[1][1] is None \
                and isinstance(forms[1][0], IntImm):
            (a0, ad), (n, _) = forms
            kind = "b64" if wide else "b32"
            return (em.emit("shl" + suffix, kind, a0, n),
                    None if ad is None else em.emit("shl" + suffix, kind, ad, n))
        if op in ("mul", "mad") and inst.spec.has("lo") and len(forms) == (2 if op == "mul"
                                                                             else 3):
            (a0, ad), (b0, bd) = forms[:2]
            if ad is not None and bd is not None:
                return None
            kind, name = ("b64" if wide else "b32"), "mul" + suffix
            product = (em.emit(name, kind, a0, b0), None if ad is None and bd is None else
                       em.emit(name, kind, ad, b0) if bd is None else em.emit(name, kind,
                                                                             a0, bd))
            if op == "mul":
                return product
            (c0, cd), (p0, pd) = forms[2], product
            d = pd if cd is None else cd if pd is None else em.emit("add" + suffix, kind,
                                                                    pd, cd)
            return (em.emit("add" + suffix, kind, p0, c0), d)
        return None

    def _widened(self, inst: ir.Instruction, at: tuple, depth: int):
        """A 32-bit value widened (cvt) or a product widened (mul.wide) in 64 bits."""
        types, ops = inst.spec.types, inst.operands[1:]
        if inst.opcode == "cvt":
            if len(types) != 2 or types[0] not in _INT64 or types[1] not in _INT32 \
                    or len(ops) != 1 or inst.spec.get("sat"):
                return None
            return self._exact(self.of(ops[0], at, False, depth + 1), types[1][0] == "s")
        if types[0] not in _INT32 or len(ops) != 2:
            return None
        signed = types[0][0] == "s"
        a, b = (self._exact(self.of(o, at, False, depth + 1), signed) for o in ops)
        if a is None or b is None or a[1] is not None and b[1] is not None:
            return None
        em = self.em
        d = None if a[1] is None and b[1] is None else \
            em.emit("mul", "b64", a[1], b[0]) if b[1] is None else em.emit("mul", "b64", a[0],
                                                                          b[1])
        return (em.emit("mul", "b64", a[0], b[0]), d)

    def _exact(self, form, signed: bool):
        """The 64-bit (v0, d) of a 32-bit linear value widened, with the condition that
        v0 + d last stays in the type's range (so no value between wraps)."""
        if form is None:
            return None
        em = self.em
        widen = "sext" if signed else "zext"
        v0 = form[0]
        if isinstance(v0, IntImm):
            v0 = IntImm(_signed32(v0.value) if signed else v0.value & 0xFFFFFFFF)
        else:
            v0 = em.emit(widen, "s64", v0)
        if form[1] is None:
            return (v0, None)
        d = form[1]
        d = IntImm(_signed32(d.value)) if isinstance(d, IntImm) else em.emit("sext", "s64", d)
        end = em.emit("add", "s64", v0, em.emit("mul", "s64", d, self.last))
        em.within(end, -(1 << 31) if signed else 0, (1 << 31) - 1 if signed else (1 << 32) - 1)
        return (v0, d)


def _signed32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >> 31 else v


def _iterations(loop: _Loop, em: _Emitter) -> ir.Register:
    """last (s64): the iterations after the first; with the condition that the counter
    does not wrap (B <= 2^31 - s)."""
    bound = loop.bound
    if isinstance(bound, IntImm):
        wide = IntImm(_signed32(bound.value))
    else:
        wide = em.emit("sext", "s64", bound)
        em.within(wide, -(1 << 31), (1 << 31) - loop.step)
    span = em.emit("smax", "s64", em.emit("sub", "s64", wide, IntImm(loop.x0 + 1)), IntImm(0))
    s = loop.step
    if s & (s - 1) == 0:
        last = em.emit("sshr", "s64", span, IntImm(s.bit_length() - 1))
    else:
        last = em.emit("sdiv", "s64", span, IntImm(s))
    em.within(last, 0, _MOST_LAST)
    return last


def _accesses(blocks: list) -> list:
    """(block, index, instruction, address) of the loop's global loads and stores with a
    64-bit register base."""
    out = []
    for bi, block in enumerate(blocks):
        for ii, inst in enumerate(block.instructions):
            if inst.opcode not in ("ld", "st") or state_space(inst) != "global":
                continue
            address = inst.operands[1 if inst.opcode == "ld" else 0]
            if isinstance(address, ir.Address) and isinstance(address.base, ir.Register) \
                    and address.base.type.name in _INT64:
                out.append((bi, ii, inst, address))
    return out


def _plan(f: ir.Function, loop: _Loop, specs: dict, found: GlobalChecks) -> list | None:
    """The instructions for E's end (the test), noting in `found`; None where no access
    qualifies."""
    blocks = f.blocks[loop.h:loop.t + 1]
    em = _Emitter(f, specs, blocks[0].pos)
    try:
        last = _iterations(loop, em)
    except _Never:
        return None
    linear = _Linear(loop, blocks, em, last)
    ranges, checked, seen = [], [], {}
    for bi, ii, inst, address in _accesses(blocks):
        mark = (len(em.out), len(em.conditions))
        try:
            found_range = _range(em, linear, inst, address, (bi, ii), last)
        except _Never:
            found_range = None
        if found_range is None:
            del em.out[mark[0]:], em.conditions[mark[1]:]
            linear.memo.clear()
            linear.defined.clear()
            continue
        lo, hi, key = found_range
        checked.append(inst)
        if seen.setdefault(key, lo) is lo:
            ranges.append((lo, hi))
        else:       # (the same range as an access before: its instructions dropped)
            del em.out[mark[0]:], em.conditions[mark[1]:]
            linear.memo.clear()
            linear.defined.clear()
    if not ranges:
        return None
    if not em.conditions:       # (all decided when compiling: the allocations' test alone)
        em.conditions.append(em.emit("same", "pred", ranges[0][0], ranges[0][0]))
    ok = em.conditions[0]
    for c in em.conditions[1:]:
        ok = em.emit("and_", "pred", ok, c)
    test = em.emit("and_", "pred", ok, ok)
    marker = em.out[-1]
    found.tests[id(marker)] = ranges
    found.checked.update((id(inst), test) for inst in checked)
    keep = ir.Instruction(specs["and_"], (test, test, test), pos=marker.pos)
    found.kept.add(id(keep))
    latch = blocks[-1].instructions
    latch.insert(len(latch) - 1, keep)
    return em.out


def _range(em: _Emitter, linear: _Linear, inst: ir.Instruction, address: ir.Address,
           at: tuple, last) -> tuple | None:
    """(lo, hi, key) of an access's range over the loop (its lanes' own), or None where its
    address has no linear form; key: alike for accesses of the same range."""
    form = linear.of(address.base, at, True)
    if form is None:
        return None
    vec = inst.spec.get("vec")
    size = TYPES[inst.spec.types[-1]].bits // 8 * (int(vec[1:]) if vec else 1)
    v0, d = form
    if isinstance(v0, IntImm):
        return None
    first = em.emit("add", "u64", v0, IntImm(address.offset))
    if d is None:
        return first, em.emit("add", "u64", first, IntImm(size)), (id(v0), None,
                                                                     address.offset, size)
    em.within(d, -_MOST_STEP, _MOST_STEP)
    end = em.emit("add", "u64", first, em.emit("mul", "s64", last, d))
    lo = em.emit("umin", "u64", first, end)
    hi = em.emit("add", "u64", em.emit("umax", "u64", first, end), IntImm(size))
    key = (id(v0), ("imm", d.value) if isinstance(d, IntImm) else id(d), address.offset, size)
    return lo, hi, key


def _signed64(v: int) -> int:
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >> 63 else v


def hoist_global_checks(kernel: ir.Function, block: tuple[int, int, int]
                        ) -> tuple[ir.Function, list[str], GlobalChecks, dict]:
    """`kernel` with each qualifying loop's test at its entry (module docstring; `kernel`
    itself where none qualifies), one note per loop, what the gang lowering needs
    (GlobalChecks) and id(block or branch of `kernel`) -> what replaces it in the result."""
    del block       # (the ranges are the lanes' own: no block shape is needed)
    loops = [loop for t in range(len(kernel.blocks))
             if (loop := _loop_at(kernel, t)) is not None]
    found = GlobalChecks()
    if not loops:
        return kernel, [], found, {}
    moved: dict = {}
    f, specs, notes = copy_blocks(kernel, moved), _specs(), []
    for loop in loops:
        code = _plan(f, loop, specs, found)
        if code is None:
            continue
        entry = f.blocks[loop.h - 1]
        insts = entry.instructions
        at = len(insts) - 1 if insts and insts[-1].opcode in ("bra", "brx") else len(insts)
        insts[at:at] = code
        test = code[-1].operands[0]
        notes.append(f"the loop {f.blocks[loop.h].label}..{f.blocks[loop.t].label}: "
                     f"{sum(ok is test for ok in found.checked.values())} global "
                     f"access(es) in {len(found.tests[id(code[-1])])} range(s) tested once "
                     f"at its entry")
    if not notes:
        return kernel, [], GlobalChecks(), {}
    link_blocks(f)
    return f, notes, found, moved


def run(module: ir.Module, kernel: ir.Function, block=None) -> PassResult:
    """The pass for `ptxport inspect --dump-after hoist-global-checks`."""
    f, notes, *_ = hoist_global_checks(kernel, tuple(block) if block else (32, 1, 1))
    return PassResult(f, notes)
