"""Global-memory range checks made once a block, for the CPU's warp gangs: a 2D stencil's
warps each test their in[] loads' and out[] store's lanes against the launch's allocations
(the lanes' lowest and highest address, a test that no 32-bit index wrapped, then the
site's cached allocation: ~20 instructions an access a warp, 8 warps a block), although
every thread's address is `base + 4 * (y * width + x)` with x and y affine in the thread
index and everything else the same in the whole block. Here the range each such access can
reach over all the block's threads, whatever the masks, is computed once for the block,
and the warps of a block that passed it skip their own checks.

An access qualifies (a global ld or st whose address is a 64-bit register) when its
address's value, in every thread, is c + dx tid.x + dy tid.y + dz tid.z with c, d block
constants and dx the access's size (_consecutive), which this pass proves from the
instructions: each register of the address's making has one write in the kernel,
unguarded, made on every path before it is read (a forward must-analysis), by mov, add,
sub, mul.lo, mad.lo, shl by a constant (the ring operations: the value is the form's mod
2^bits), cvta.to.global (the identity here) and at most one widening (cvt.{s,u}64.{s,u}32,
mul.wide.{s,u}32 of one block constant), from %tid (a variable), %ntid (the block shape's
constant), %ctaid, %nctaid and kernel parameters (ld.param of a kernel with no st.param:
block constants). A widening is exact where its 32-bit form, with c and d widened, stays
in the type's range at the box's corners (then, affine, everywhere in the block): each
thread's widened value is then its form's exact value. Its spread over the block (the
form's highest less lowest value) must also stay under 2^30: then two lanes' indices,
which differ by lane_forms' constant offset modulo 2^32 (under 2^30 too, tested by the
lowering), differ by exactly that, so the lanes the widened fast path takes as consecutive
are (widened.py's no-wrap test proves the same for one warp). The 64-bit form's
coefficients must lie within 2^40, so the box's range, from C + sum(min(0, d (n - 1))) to
C + sum(max(0, d (n - 1))), spans under 2^52: where it crosses 2^64 its low end lies above
its high end, which no allocation's test passes.

The test (one for the kernel) goes at the kernel's start as a marker, `setp.eq.s64 ok, 0,
0`, with the instructions that compute the ranges and their conditions kept aside (not in
the kernel): the gang lowering (gang/block_tests.py) runs them only where the block's
verdict is not known yet (a byte of run_blocks' block copy, zeroed as each block starts),
so the first warp of a block pays it and the others read the byte. Accesses of one pointer
parameter share one range (their union); each range has its own conditions, and the
verdict says that every range passed. A covered access reads the verdict again (no
register is kept in warps' frames across barriers: the marker, first in the kernel, made
it known in every warp). A covered access whose lanes are consecutive by a widened form
(gang/widened.py) branches on it straight to its unchecked fast path, and to its own checks
(its group's, and the no-wrap test) where it failed; others are lowered twice (gang/
memory.py's _twice, as for hoist_global_checks.py's loops). Where the test fails (a block
at the grid's edge, a bad launch) each access checks itself as before, so a bad access
faults at its first bad lane, in program order, as before.

With the block test, a call test (_call_test): the same ranges over the threads of every
block of a box of %ctaid that holds a run_blocks call's blocks, %ctaid an axis of the forms
like %tid, its box's corner and extents registers that the lowering writes. Where it
passes, every block of the call would pass its own test: the call's first block runs it,
and the others run none (gang/block_tests.py).

CpuOptions.block_checks (on by default; docs/cpu-target-measurements.md, "Session 15:
stencil18", "Session 16: stencil19" and "Session 17: blockpro21", on what it saves and
costs). The rewritten kernel is a new function (the module's is not changed); the gang
lowering applies the pass after hoist-global-checks (gang/build.py).
"""

from __future__ import annotations

import dataclasses

from ptxport.ir import nodes as ir
from ptxport.ir.analysis import may_write, predecessors, state_space
from ptxport.ir.from_ptx import link_blocks
from ptxport.ir.types import TYPES
from ptxport.passes.hoist_checks import copy_blocks
from ptxport.passes.snippets import snippet_instructions
from ptxport.ptx.ast import IntImm

__all__ = ["BlockChecks", "block_checks"]

_INT32 = ("s32", "u32", "b32")
_INT64 = ("s64", "u64", "b64")
_MOST_D = 1 << 40           # the 64-bit form's coefficients, each way
_MOST_SPREAD = 1 << 30      # a widened 32-bit form's spread over the block
_MOST_RANGES = 24           # ranges a block test (each one allocation test in its first warp)
_MOST_SPAN = 1 << 20        # the call test's %ctaid box, each axis: its extent
# a form's axes: %tid.x, .y, .z, then (the call test's) %ctaid.x, .y, .z
_AXES = 6
_NONE = (None,) * _AXES

_SNIPPET = """
    cvt.s64.s32 %rd0, %r0;
    cvt.u64.u32 %rd0, %r0;
    add.s64 %rd0, %rd1, %rd2;
    sub.s64 %rd0, %rd1, %rd2;
    mul.lo.s64 %rd0, %rd1, %rd2;
    shl.b64 %rd0, %rd1, 2;
    min.s64 %rd0, %rd1, %rd2;
    max.s64 %rd0, %rd1, %rd2;
    setp.ge.s64 %p0, %rd0, %rd1;
    setp.le.s64 %p0, %rd0, %rd1;
    and.pred %p0, %p1, %p2;
    setp.eq.s64 %p0, %rd0, %rd1;
    min.u64 %rd0, %rd1, %rd2;
    max.u64 %rd0, %rd1, %rd2;
    setp.le.u64 %p0, %rd0, %rd1;
    and.b32 %r0, %r1, %r2;
    setp.ne.u32 %p0, %r0, %r1;
    add.s32 %r0, %r1, %r2;
    sub.s32 %r0, %r1, %r2;
    mul.lo.s32 %r0, %r1, %r2;
    shl.b32 %r0, %r1, 2;
"""

_NAMES = ("sext", "zext", "add", "sub", "mul", "shl", "smin", "smax", "ge", "le", "and_",
          "same", "umin", "umax", "ule", "bit", "nonzero", "add32", "sub32", "mul32", "shl32")


def _s64(v: int) -> int:
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >> 63 else v


def _s32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >> 31 else v


_FOLD = {"add": lambda a, b: _s64(a + b), "sub": lambda a, b: _s64(a - b),
         "mul": lambda a, b: _s64(a * b), "shl": lambda a, n: _s64(a << n),
         "smin": lambda a, b: min(_s64(a), _s64(b)), "smax": lambda a, b: max(_s64(a), _s64(b)),
         "sext": _s32, "zext": lambda a: a & 0xFFFFFFFF,
         "add32": lambda a, b: (a + b) & 0xFFFFFFFF, "sub32": lambda a, b: (a - b) & 0xFFFFFFFF,
         "mul32": lambda a, b: (a * b) & 0xFFFFFFFF, "shl32": lambda a, n: (a << n) & 0xFFFFFFFF}
_COMMUTE = frozenset(("add", "mul", "smin", "smax", "umin", "umax", "add32", "mul32",
                      "and_"))


_IDENTITY = frozenset(("add", "sub", "shl", "mul", "add32", "sub32", "shl32", "mul32"))


class _Never(Exception):
    """A condition that fails whatever the run: the access is left as it is."""


@dataclasses.dataclass
class BlockChecks:
    """What the pass found, for the gang lowering: `tests`, id(the marker) -> (the
    instructions kept aside that compute the test, its condition register or None, the
    (lo, hi) registers of each range); `checked`, id(access) -> the ok register."""

    tests: dict = dataclasses.field(default_factory=dict)
    checked: dict = dataclasses.field(default_factory=dict)


class _Form:
    """c + sum(d[a] * tid[a]) (d[a] None: 0), in `bits` bits, with `widened` widenings in
    its making; `root`: the kernel parameter it adds to (a pointer's), else None;
    `conds`: the conditions (pred registers) under which it holds."""

    __slots__ = ("c", "d", "bits", "widened", "root", "conds")

    def __init__(self, c, d, bits: int, widened: int = 0, root=None, conds=()):
        self.c, self.d, self.bits, self.widened = c, tuple(d), bits, widened
        self.root, self.conds = root, tuple(conds)

    def key(self):
        return (_key(self.c), *(_key(x) for x in self.d))


def _key(value):
    return None if value is None else ("imm", value.value) if isinstance(value, IntImm) \
        else id(value)


class _Emitter:
    """The test's instructions (kept aside) and conditions."""

    def __init__(self, f: ir.Function, specs: dict, pos: int):
        self.f, self.specs, self.pos, self.out = f, specs, pos, []

    def register(self, kind: str) -> ir.Register:
        name = f"%bchecked{len(self.f.registers)}"
        reg = self.f.registers[name] = ir.Register(name, TYPES[kind])
        return reg

    def emit(self, name: str, kind: str, *operands):
        if name in _FOLD and all(isinstance(o, IntImm) for o in operands):
            return IntImm(_FOLD[name](*(o.value for o in operands)))
        if name in _COMMUTE and isinstance(operands[0], IntImm):
            operands = operands[::-1]
        if len(operands) == 2 and isinstance(operands[1], IntImm) and operands[1].value == (
                1 if name in ("mul", "mul32") else 0) and name in _IDENTITY:
            return operands[0]      # (x + 0, x - 0, x << 0, x * 1)
        reg = self.register(kind)
        self.out.append(ir.Instruction(self.specs[name], (reg, *operands), pos=self.pos))
        return reg

    def copy(self, inst: ir.Instruction) -> ir.Register:
        """A block constant's instruction (ld.param, mov of %ctaid), again into a new
        register."""
        reg = self.register(inst.operands[0].type.name)
        self.out.append(ir.Instruction(inst.spec, (reg, *inst.operands[1:]), pos=self.pos))
        return reg

    def at_most(self, value, high: int) -> tuple:
        """The conditions that value <= high (s64): none for a constant (_Never where it
        fails)."""
        if isinstance(value, IntImm):
            if _s64(value.value) > high:
                raise _Never
            return ()
        return (self.emit("le", "pred", value, IntImm(high)),)

    def within(self, value, low: int, high: int) -> tuple:
        """The conditions that low <= value <= high (s64)."""
        if isinstance(value, IntImm):
            if not low <= _s64(value.value) <= high:
                raise _Never
            return ()
        return (self.emit("ge", "pred", value, IntImm(low)),
                self.emit("le", "pred", value, IntImm(high)))


def _must_defined(kernel: ir.Function, defs: dict) -> dict:
    """id(block) -> the registers of `defs` written on every path to the block's start."""
    universe = frozenset(defs)
    own = {id(b): frozenset(r for r in defs if defs[r][0] == i)
           for i, b in enumerate(kernel.blocks)}
    preds = predecessors(kernel)
    start = {id(b): universe for b in kernel.blocks}
    start[id(kernel.blocks[0])] = frozenset()
    changed = True
    while changed:
        changed = False
        for block in kernel.blocks[1:]:
            ins = [start[id(p)] | own[id(p)] for p in preds[id(block)]]
            new = frozenset.intersection(*ins) if ins else universe
            if new != start[id(block)]:
                start[id(block)], changed = new, True
    return start


class _Affine:
    """Registers' forms over the block's threads (module docstring); where `call` (the
    call test's: (corners, extents), registers the lowering writes), over the threads of
    every block of a box of %ctaid, %ctaid.x corners[0] + (0 .. extents[0]), ...: %ctaid
    then an axis of the forms, not a block constant."""

    def __init__(self, kernel: ir.Function, block: tuple, em: _Emitter, call=None):
        self.kernel, self.block, self.em, self.call = kernel, block, em, call
        writes: dict = {}
        params_written = False
        for bi, bb in enumerate(kernel.blocks):
            for ii, inst in enumerate(bb.instructions):
                for reg in may_write(inst):
                    writes.setdefault(reg, []).append((bi, ii, inst))
                if inst.opcode == "st" and state_space(inst) == "param":
                    params_written = True
        self.params_ok = not params_written
        self.defs = {r: w[0] for r, w in writes.items()
                     if len(w) == 1 and w[0][2].guard is None}
        self.start = _must_defined(kernel, self.defs)
        self.memo: dict = {}

    def before(self, reg, at: tuple) -> bool:
        bi, ii, _ = self.defs[reg]
        if bi == at[0] and ii < at[1]:
            return True
        return reg in self.start[id(self.kernel.blocks[at[0]])]

    def of(self, value, at: tuple, bits: int, depth: int = 0):
        if isinstance(value, IntImm):
            return _Form(value, _NONE, bits)
        if depth > 24 or not isinstance(value, ir.Register) or value not in self.defs \
                or value.type.name not in (_INT64 if bits == 64 else _INT32) \
                or not self.before(value, at):
            return None
        if value not in self.memo:
            bi, ii, inst = self.defs[value]
            self.memo[value] = self._define(inst, (bi, ii), bits, depth)
        return self.memo[value]

    def _define(self, inst: ir.Instruction, at: tuple, bits: int, depth: int):
        op, ops, types = inst.opcode, inst.operands[1:], inst.spec.types
        if op == "mov" and len(ops) == 1:
            if isinstance(ops[0], ir.SpecialRegister):
                return self._special(inst, ops[0], bits)
            return self.of(ops[0], at, bits, depth + 1)
        if op == "ld":
            return self._param(inst, bits)
        if op == "cvta" and bits == 64 and state_space(inst) == "global" \
                and "to" in inst.spec.modifiers and len(ops) == 1:
            return self.of(ops[0], at, 64, depth + 1)
        if op == "cvt" or op == "mul" and inst.spec.has("wide"):
            return self._widened(inst, at, depth) if bits == 64 else None
        if not types or types[0] not in (_INT64 if bits == 64 else _INT32) \
                or inst.spec.get("sat") or inst.spec.has("cc"):
            return None
        forms = [self.of(o, at, bits, depth + 1) for o in ops]
        if any(f is None for f in forms):
            return None
        return self._ring(op, inst, forms, bits)

    def _special(self, inst: ir.Instruction, sreg: ir.SpecialRegister, bits: int):
        if bits != 32 or sreg.component not in ("x", "y", "z"):
            return None
        axis = "xyz".index(sreg.component)
        if sreg.name == "%tid":
            d = [None] * _AXES
            d[axis] = IntImm(1)
            return _Form(IntImm(0), d, 32)
        if sreg.name == "%ntid":
            return _Form(IntImm(self.block[axis]), _NONE, 32)
        if sreg.name == "%ctaid" and self.call is not None:
            d = [None] * _AXES
            d[3 + axis] = IntImm(1)
            return _Form(self.call[0][axis], d, 32)
        if sreg.name in ("%ctaid", "%nctaid"):
            return _Form(self.em.copy(inst), _NONE, 32)
        return None

    def _param(self, inst: ir.Instruction, bits: int):
        address = inst.operands[1]
        if not self.params_ok or state_space(inst) != "param" or inst.spec.get("vec") \
                or not isinstance(address, ir.Address) \
                or not isinstance(address.base, ir.Variable) \
                or all(address.base is not p for p in self.kernel.params) \
                or inst.spec.types[-1] not in (_INT64 if bits == 64 else _INT32):
            return None
        return _Form(self.em.copy(inst), _NONE, bits,
                     root=id(address.base) if bits == 64 else None)

    def _ring(self, op: str, inst: ir.Instruction, forms: list, bits: int):
        em, suffix = self.em, "" if bits == 64 else "32"
        kind = "b64" if bits == 64 else "b32"
        widened = sum(f.widened for f in forms)
        conds = _joined(f.conds for f in forms)
        if op == "mov" and len(forms) == 1:
            return forms[0]
        if op in ("add", "sub") and len(forms) == 2:
            a, b = forms
            c = em.emit(op + suffix, kind, a.c, b.c)
            d = [x if y is None else y if x is None and op == "add" else
                 em.emit(op + suffix, kind, IntImm(0) if x is None else x, y)
                 for x, y in zip(a.d, b.d, strict=True)]
            roots = {f.root for f in forms} - {None}
            return _Form(c, d, bits, widened, roots.pop() if len(roots) == 1 and (
                op == "add" or forms[0].root is not None) else None, conds)
        if op == "shl" and len(forms) == 2 and isinstance(forms[1].c, IntImm) \
                and forms[1].d == _NONE:
            a, n = forms[0], forms[1].c
            return _Form(em.emit("shl" + suffix, kind, a.c, n),
                         [None if x is None else em.emit("shl" + suffix, kind, x, n)
                          for x in a.d], bits, widened, conds=conds)
        if op in ("mul", "mad") and inst.spec.has("lo") and len(forms) == (
                2 if op == "mul" else 3):
            product = self._product(forms[0], forms[1], "mul" + suffix, kind, bits)
            if product is None or op == "mul":
                return product
            c = forms[2]
            return _Form(em.emit("add" + suffix, kind, product.c, c.c),
                         [x if y is None else y if x is None else
                          em.emit("add" + suffix, kind, x, y)
                          for x, y in zip(product.d, c.d, strict=True)], bits, widened,
                         conds=_joined((product.conds, c.conds)))
        return None

    def _product(self, a: _Form, b: _Form, name: str, kind: str, bits: int):
        if a.d != _NONE and b.d != _NONE:
            return None         # (not affine)
        if a.d == _NONE:
            a, b = b, a
        em = self.em
        return _Form(em.emit(name, kind, a.c, b.c),
                     [None if x is None else em.emit(name, kind, x, b.c) for x in a.d],
                     bits, a.widened + b.widened, conds=_joined((a.conds, b.conds)))

    def _widened(self, inst: ir.Instruction, at: tuple, depth: int):
        types, ops = inst.spec.types, inst.operands[1:]
        if inst.opcode == "cvt":
            if len(types) != 2 or types[0] not in _INT64 or types[1] not in _INT32 \
                    or len(ops) != 1 or inst.spec.get("sat") or inst.guard is not None:
                return None
            return self._exact(self.of(ops[0], at, 32, depth + 1), types[1][0] == "s")
        if types[0] not in _INT32 or len(ops) != 2:
            return None
        signed = types[0][0] == "s"
        a, b = (self._exact(self.of(o, at, 32, depth + 1), signed) for o in ops)
        if a is None or b is None:
            return None
        return self._product(a, b, "mul", "b64", 64)

    def _exact(self, form, signed: bool):
        """The 64-bit form of a 32-bit form widened, with the conditions that its value
        at the block's corners lies in the type's range and its spread under 2^30."""
        if form is None or form.widened:
            return None
        em = self.em
        c = em.emit("sext" if signed else "zext", "s64", form.c)
        d = [None if x is None else em.emit("sext", "s64", x) for x in form.d]
        lo, hi = self._box(c, d)
        if lo is c:
            return _Form(c, d, 64, 0, conds=form.conds)
        low, high = (-(1 << 31), (1 << 31) - 1) if signed else (0, (1 << 32) - 1)
        # (hi - lo is at least 0: the sums of min(0, p) and max(0, p); the spread that
        # matters is over one block's threads, the same in every block of a call's box)
        if self.call is not None:
            low_t, high_t = self._box(IntImm(0), d[:3] + [None] * 3)
            spread = em.emit("sub", "s64", high_t, low_t)
        else:
            spread = em.emit("sub", "s64", hi, lo)
        own = em.within(lo, low, high) + em.within(hi, low, high) + em.at_most(
            spread, _MOST_SPREAD)
        return _Form(c, d, 64, 1, conds=form.conds + own)

    def _box(self, c, d):
        """(lo, hi): the form's lowest and highest value over the block (s64), or over the
        call's box of blocks."""
        em = self.em
        lo = hi = c
        for axis, x in enumerate(d):
            if x is None or axis < 3 and self.block[axis] == 1:
                continue
            extent = IntImm(self.block[axis] - 1) if axis < 3 else self.call[1][axis - 3]
            p = em.emit("mul", "s64", x, extent)
            lo = em.emit("add", "s64", lo, em.emit("smin", "s64", p, IntImm(0)))
            hi = em.emit("add", "s64", hi, em.emit("smax", "s64", p, IntImm(0)))
        return lo, hi


def _accesses(kernel: ir.Function, skip: dict) -> list:
    """(block, index, instruction, address) of the global loads and stores with a 64-bit
    register base, but those in `skip`."""
    out = []
    for bi, block in enumerate(kernel.blocks):
        for ii, inst in enumerate(block.instructions):
            if inst.opcode not in ("ld", "st") or state_space(inst) != "global" \
                    or id(inst) in skip:
                continue
            address = inst.operands[1 if inst.opcode == "ld" else 0]
            if isinstance(address, ir.Address) and isinstance(address.base, ir.Register) \
                    and address.base.type.name in _INT64:
                out.append((bi, ii, inst, address))
    return out


def _size(inst: ir.Instruction) -> int:
    vec = inst.spec.get("vec")
    return TYPES[inst.spec.types[-1]].bits // 8 * (int(vec[1:]) if vec else 1)


def _consecutive(form, inst: ir.Instruction) -> bool:
    """Whether threads next to each other in x access elements next to each other (the
    form's x coefficient is the access's size): such accesses take gang/widened.py's fast
    path, which the verdict sends straight to; others (a Blelloch scan's pairs, a
    transpose's column) would be lowered twice for a test that cost more than it saved
    (docs/cpu-target-measurements.md, "Session 16: stencil19")."""
    dx = form.d[0]
    return isinstance(dx, IntImm) and _s64(dx.value) == _size(inst)


def _joined(lists) -> tuple:
    """The conditions of several lists, each once, in order."""
    out: dict = {}
    for conds in lists:
        out.update((id(c), c) for c in conds)
    return tuple(out.values())


def _ranges(f: ir.Function, block: tuple, em: _Emitter, skip: dict, call=None):
    """(covered accesses with their range's index, [(conditions, lo, hi)]): each
    qualifying access's form over the block (or the call's box of blocks: _Affine),
    accesses of one pointer parameter in one range."""
    affine = _Affine(f, block, em, call)
    spans: dict = {}
    covered = []
    for bi, ii, inst, address in _accesses(f, skip):
        mark = len(em.out)
        try:
            form = affine.of(address.base, (bi, ii), 64)
            if form is not None and form.widened <= 1 and form.key() not in spans:
                bounds = _joined(em.within(x, -_MOST_D, _MOST_D) for x in form.d
                                 if x is not None)
                form.conds = _joined((form.conds, bounds))
        except _Never:
            form = None
        if form is None or form.widened > 1 or not _consecutive(form, inst):
            del em.out[mark:]
            affine.memo.clear()
            continue
        start, end = address.offset, address.offset + _size(inst)
        key = form.key()
        if key in spans:
            _, low, high, members = spans[key]
            spans[key] = (form, min(low, start), max(high, end), members)
        else:
            spans[key] = (form, start, end, [])
        spans[key][3].append(inst)
    # (the ranges from one pointer parameter as one: the in[] loads of a stencil's rows)
    joined: dict = {}
    for form, start, end, members in spans.values():
        lo, hi = affine._box(form.c, form.d)
        lo, hi = em.emit("add", "u64", lo, IntImm(start)), em.emit("add", "u64", hi, IntImm(end))
        key = id(form) if form.root is None else form.root
        # (a range that wraps past 2^64 has lo above hi: that fails here, not hidden in
        # the union)
        conds = _joined((form.conds, (em.emit("ule", "pred", lo, hi),)))
        if key in joined:
            before = joined[key]
            conds = _joined((before[0], conds))
            lo = em.emit("umin", "u64", before[1], lo)
            hi = em.emit("umax", "u64", before[2], hi)
            members = before[3] + members
        joined[key] = (conds, lo, hi, members)
    ranges = []
    for index, (conds, lo, hi, members) in enumerate(list(joined.values())[:_MOST_RANGES]):
        condition = None
        for c in conds:
            condition = c if condition is None else em.emit("and_", "pred", condition, c)
        ranges.append((condition, lo, hi))
        covered.extend((inst, index) for inst in members)
    return covered, ranges


def _call_test(f: ir.Function, block: tuple, specs: dict, skip: dict, covered: list):
    """The test of a run_blocks call's blocks together (gang/block_tests.py): (its
    instructions, its ranges as the block test's, the registers of its %ctaid box's
    corner and extents, which the lowering writes), or None where it would not cover the
    block test's accesses in the same ranges. Each form is taken over the box (%ctaid
    one of its axes, _Affine), so that its ranges hold every block's, and its conditions
    every block's: the 32-bit forms exact at the box's corners are exact in each block,
    and their spread is taken over one block's threads. The extents, each at most 2^20,
    keep the products within 2^60 (the coefficients are within 2^40): the box's range
    still spans under 2^63, and where it crosses 2^64 its low end lies above its high
    end."""
    em = _Emitter(f, specs, f.blocks[0].pos)
    corners = tuple(em.register("u32") for _ in range(3))
    extents = tuple(em.register("s64") for _ in range(3))
    also, ranges = _ranges(f, block, em, skip, (corners, extents))
    if [(id(i), k) for i, k in also] != [(id(i), k) for i, k in covered]:
        return None
    condition, lo, hi = ranges[0]
    for c in _joined(em.at_most(e, _MOST_SPAN) for e in extents):
        condition = c if condition is None else em.emit("and_", "pred", condition, c)
    ranges[0] = (condition, lo, hi)
    return em.out, ranges, corners, extents


def block_checks(kernel: ir.Function, block: tuple[int, int, int], skip: dict
                 ) -> tuple[ir.Function, list[str], BlockChecks, dict]:
    """`kernel` with its block test (module docstring; `kernel` itself where no access
    qualifies or the block has one warp), notes, what the gang lowering needs and
    id(block or branch of `kernel`) -> what replaces it. `skip`: ids of accesses checked
    otherwise (hoist_global_checks.py's loops)."""
    found = BlockChecks()
    if block[0] * block[1] * block[2] <= 32 or not kernel.blocks:
        return kernel, [], found, {}
    moved: dict = {}
    f = copy_blocks(kernel, moved)
    specs = dict(zip(_NAMES, (i.spec for i in snippet_instructions(
        _SNIPPET, "<block_checks>")[:len(_NAMES)]), strict=True))
    em = _Emitter(f, specs, f.blocks[0].pos)
    covered, ranges = _ranges(f, block, em, skip)
    if not covered:
        return kernel, [], BlockChecks(), {}
    # the marker writes ok: every range passed (gang/block_tests.py)
    ok = em.register("pred")
    pos = f.blocks[0].pos
    marker = ir.Instruction(specs["same"], (ok, IntImm(0), IntImm(0)), pos=pos)
    found.tests[id(marker)] = (em.out, ranges, _call_test(f, block, specs, skip, covered))
    oks = [ok] * len(ranges)
    found.checked.update((id(inst), oks[index]) for inst, index in covered)
    f.blocks[0].instructions.insert(0, marker)
    link_blocks(f)
    note = (f"{len(covered)} global access(es) in {len(ranges)} range(s) tested once a "
            f"block")
    return f, [note], found, moved
