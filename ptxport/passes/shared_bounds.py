"""Shared-memory accesses whose addresses stay inside one `.shared` variable, for a block
shape: the CPU's warp gangs (codegen/targets/cpu/gang/) then check none of them at run time.

A stencil's `tile[ty][tx]`, a GEMM's `As[ty][k]` or a reduction's `sdata[tid + s]` index a
static shared array with %tid and constants: for a block of shape (x, y, z), %tid.x lies in
[0, x), so `tile + 72 * (tid.y + 1) + 4 * (tid.x + 1)` lies in [tile + 76, tile + 1220] for
16x16 blocks, inside the 1296 bytes of the tile whatever the warp. The analysis is an
interval per register: a register's value is an offset into one shared variable (`mov.u32
%r, tile`) plus an integer in [lo, hi], or a plain integer in [lo, hi]. %tid, %ntid, %laneid
and immediates start it; `mov`, `add`, `sub`, `mul.lo`, `mad.lo`, `shl`, `shr`, `and`,
`div` and `rem` (by immediates for the last four) carry it, with exact integers: an
interval that would leave [-2**31, 2**31) (where a 32-bit register could wrap) is not kept.
Where an instruction reads a register, its interval is the union over the writes of it
that may reach there (reaching definitions, `_reaching`; a guarded write reaches together
with the earlier ones its guard may keep), each from its own operands where it reads them:
known only when every such write is one of those instructions (a loop's counter, written
from itself, is not; NVRTC's `tx` before a loop that steps it by 16 is). A register that
may be read before any write holds whatever its slot held: no interval.

Without a block shape, %tid lies within CUDA's limits (1024, 1024, 64). An access counts
when its address is a register (32 bits, or 64 as NVRTC 13.0 makes them: `mul.wide.u32` of
%tid added to `mov.u64 %rd, tile`, exact in 64 bits within the kept intervals) or a shared
variable plus an offset; the gang checks its size against the variable's bytes (`inside`).
"""

from __future__ import annotations

from ptxport.ir import nodes as ir
from ptxport.ir.analysis import may_write, predecessors, state_space, uses_and_defs
from ptxport.passes import PassResult
from ptxport.ptx.ast import IntImm

__all__ = ["exact_widenings", "shared_bounds", "inside", "run"]

# CUDA's largest block: what %tid may be when the block's shape is not known.
_LIMITS = (1024, 1024, 64)
_LOW, _HIGH = -(1 << 31), (1 << 31) - 1
_ACCESSES = ("ld", "st", "atom", "red")
_CARRIED = {"mov", "add", "sub", "mul", "mad", "shl", "shr", "and", "div", "rem", "ld", "cvt"}


class _Range:
    """An offset into `variable` (None: a plain integer) plus an integer in [lo, hi]."""

    __slots__ = ("variable", "lo", "hi")

    def __init__(self, variable, lo: int, hi: int):
        self.variable, self.lo, self.hi = variable, lo, hi

    def __eq__(self, other) -> bool:
        return isinstance(other, _Range) and (self.variable, self.lo, self.hi) == (
            other.variable, other.lo, other.hi)

    def __repr__(self) -> str:
        where = "" if self.variable is None else f"{self.variable.name} + "
        return f"{where}[{self.lo}, {self.hi}]"


def _kept(variable, lo: int, hi: int) -> _Range | None:
    return _Range(variable, lo, hi) if _LOW <= lo <= hi <= _HIGH else None


def _union(a: _Range | None, b: _Range | None) -> _Range | None:
    if a is None or b is None or a.variable is not b.variable:
        return None
    return _Range(a.variable, min(a.lo, b.lo), max(a.hi, b.hi))


def _special(value: ir.SpecialRegister, block) -> _Range | None:
    axis = "xyz".find(value.component or "x")
    if axis < 0:
        return None
    extent = (block or _LIMITS)[axis]
    if value.name == "%tid":
        return _Range(None, 0, extent - 1)
    if value.name == "%ntid":
        return _Range(None, extent, extent) if block else _Range(None, 1, extent)
    if value.name == "%laneid":
        return _Range(None, 0, 31)
    return None


def _product(a: _Range, b: _Range) -> _Range | None:
    if a.variable is not None or b.variable is not None:
        return None
    corners = [x * y for x in (a.lo, a.hi) for y in (b.lo, b.hi)]
    return _kept(None, min(corners), max(corners))


def _sum(a: _Range, b: _Range, sign: int = 1) -> _Range | None:
    if b.variable is not None and (sign < 0 or a.variable is not None):
        return None
    lo, hi = (a.lo + b.lo, a.hi + b.hi) if sign > 0 else (a.lo - b.hi, a.hi - b.lo)
    return _kept(a.variable or b.variable, lo, hi)


def _by_immediate(op: str, a: _Range, k: int) -> _Range | None:
    """shl, shr, and, div, rem of a plain non-negative interval by an immediate k."""
    if a.variable is not None or a.lo < 0 or k < 0:
        return None
    if op == "shl":
        return _kept(None, a.lo << k, a.hi << k) if k < 32 else None
    if op == "shr":
        return _Range(None, a.lo >> k, a.hi >> k)
    if op == "and":
        return _Range(None, 0, min(a.hi, k))
    if k == 0:
        return None
    return _Range(None, a.lo // k, a.hi // k) if op == "div" else _Range(None, 0, k - 1)


def _natural(t: str) -> _Range | None:
    """Every value of an integer type of 8 or 16 bits (what ld of one leaves in a register:
    zero- or sign-extended), else None."""
    if len(t) < 2 or t[0] not in "usb" or t[1:] not in ("8", "16"):
        return None
    bits = int(t[1:])
    return _Range(None, -(1 << bits - 1), (1 << bits - 1) - 1) if t[0] == "s" else \
        _Range(None, 0, (1 << bits) - 1)


def _within(a: _Range, t: str) -> bool:
    """Whether a plain range holds only values of type t (so extending it is exact)."""
    bits = int(t[1:])
    low, high = (-(1 << bits - 1), (1 << bits - 1) - 1) if t[0] == "s" else (0, (1 << bits) - 1)
    return a.variable is None and low <= a.lo and a.hi <= high


def _widened(inst: ir.Instruction, operands: list) -> _Range | None:
    """ld of a byte or halfword, cvt from one (whatever its value: its low bits, extended)
    and mul.wide of values within their type (the product exact in twice the width)."""
    spec = inst.spec
    if spec.get("sat") or not spec.types:
        return None
    if inst.opcode == "ld":
        return None if spec.text.count(".v") else _natural(spec.types[-1])
    if inst.opcode == "cvt" and len(spec.types) == 2 and spec.types[0][1:] in ("32", "64") \
            and spec.types[0][0] in "usb":
        natural = _natural(spec.types[1])
        if natural is not None or spec.text != f"cvt.{spec.types[0]}.{spec.types[1]}":
            return natural
        # an integer of either type (NVRTC 13.0's `cvt.u64.u32 %rd, tx` and its
        # `cvt.u32.u64` back): the same value, extended or truncated
        a = operands[0] if operands else None
        return a if a is not None and spec.types[1][0] in "usb" \
            and _within(a, spec.types[1]) and _within(a, spec.types[0]) else None
    if inst.opcode == "mul" and len(operands) == 2 and None not in operands \
            and all(_within(a, spec.types[-1]) for a in operands):
        return _product(*operands)
    return None


def _written(inst: ir.Instruction, operands: list) -> _Range | None:
    """What `inst` writes, from its source operands' ranges (None where one is unknown)."""
    op, spec = inst.opcode, inst.spec
    t = spec.types[-1] if spec.types else ""
    if op in ("ld", "cvt") or spec.get("mode") == "wide":
        return _widened(inst, operands)
    if not t or t[0] not in "usb" or t[1:] not in ("32", "64") or spec.get("cc") \
            or spec.get("sat") or spec.get("mode", "lo") != "lo":
        return None
    immediate = inst.operands[2] if len(inst.operands) == 3 else None
    if isinstance(immediate, IntImm) and 0 < immediate.value <= _HIGH and (
            op == "and" or op == "rem" and t[0] != "s"):    # whatever the other operand is
        return _Range(None, 0, immediate.value - (op == "rem"))
    if None in operands:
        return None
    if op == "mov" and len(operands) == 1:
        return operands[0]
    if op in ("add", "sub") and len(operands) == 2:
        return _sum(operands[0], operands[1], 1 if op == "add" else -1)
    if op == "mul" and len(operands) == 2:
        return _product(*operands)
    if op == "mad" and len(operands) == 3:
        product = _product(operands[0], operands[1])
        return None if product is None else _sum(product, operands[2])
    if op in ("shl", "shr", "and", "div", "rem") and isinstance(immediate, IntImm):
        if op in ("shr", "div", "rem") and t[0] == "s" and operands[0].lo < 0:
            return None
        return _by_immediate(op, operands[0], immediate.value)
    return None


_UNDEFINED = None       # a register's "write" at the kernel's start: whatever its slot held


def _reaching(kernel: ir.Function, wanted: set) -> dict[int, dict]:
    """id(instruction) -> {register of `wanted` it reads: the writes of it that may reach
    it} (forward may-analysis over the CFG; a write is an instruction, or _UNDEFINED on a
    path from the kernel's start on which nothing wrote the register). A guarded write adds
    itself and keeps the earlier ones: where its guard is false the register keeps their
    value."""
    preds = predecessors(kernel)
    entry = kernel.blocks[0] if kernel.blocks else None
    start = {r: frozenset([_UNDEFINED]) for r in wanted}

    def through(block, state: dict, found: dict | None) -> dict:
        state = dict(state)
        for inst in block.instructions:
            if found is not None:
                found[id(inst)] = {r: state.get(r, frozenset())
                                   for r in uses_and_defs(inst)[0] & wanted}
            for reg in may_write(inst) & wanted:
                kept = state.get(reg, frozenset()) if inst.guard is not None else frozenset()
                state[reg] = kept | {inst}
        return state

    at_end: dict[int, dict] = {id(b): {} for b in kernel.blocks}
    changed = True
    while changed:
        changed = False
        for block in kernel.blocks:
            state = _joined([at_end[id(p)] for p in preds[id(block)]]
                            + ([start] if block is entry else []))
            out = through(block, state, None)
            if out != at_end[id(block)]:
                at_end[id(block)], changed = out, True
    found: dict = {}
    for block in kernel.blocks:
        through(block, _joined([at_end[id(p)] for p in preds[id(block)]]
                               + ([start] if block is entry else [])), found)
    return found


def _joined(states: list[dict]) -> dict:
    out: dict = {}
    for state in states:
        for reg, writes in state.items():
            out[reg] = out.get(reg, frozenset()) | writes
    return out


def _feeding(kernel: ir.Function, bases: set) -> set:
    """The registers that the accesses' base registers are computed from, through the
    instructions whose ranges the analysis follows (the only ones it looks up)."""
    writes: dict = {}
    for inst in kernel.instructions():
        if inst.opcode in _CARRIED:
            for reg in may_write(inst):
                writes.setdefault(reg, []).append(inst)
    found, todo = set(), list(bases)
    while todo:
        reg = todo.pop()
        if reg in found:
            continue
        found.add(reg)
        for inst in writes.get(reg, []):
            todo.extend(o for o in inst.operands[1:] if isinstance(o, ir.Register))
    return found


class _Intervals:
    """Operands' ranges where an instruction reads them: the union over the writes that
    may reach it, each write's range found from its own operands (memoized)."""

    def __init__(self, kernel: ir.Function, block, bases: set):
        self.block = block
        self.reaching = _reaching(kernel, _feeding(kernel, bases))
        self.known: dict = {}
        self.visiting: set = set()

    def operand(self, value, at: ir.Instruction) -> _Range | None:
        if isinstance(value, IntImm):
            return _kept(None, value.value, value.value)
        if isinstance(value, ir.SymbolAddress) and not value.generic:
            value, offset = value.target, value.offset
        else:
            offset = 0
        if isinstance(value, ir.Variable):
            return _Range(value, offset, offset) if value.space == "shared" and not \
                value.unsized else None
        if isinstance(value, ir.SpecialRegister):
            return _special(value, self.block)
        if not isinstance(value, ir.Register) or value.vector:
            return None
        writes = self.reaching[id(at)].get(value)
        if not writes or _UNDEFINED in writes:
            return None
        found = None
        for n, write in enumerate(writes):
            value_written = self.written(write, value)
            found = value_written if n == 0 else _union(found, value_written)
            if found is None:
                return None
        return found

    def written(self, inst: ir.Instruction, reg: ir.Register) -> _Range | None:
        """The range of what `inst` writes into `reg`."""
        if id(inst) in self.known:
            return self.known[id(inst)]
        if id(inst) in self.visiting or inst.opcode not in _CARRIED \
                or inst.operands[0] is not reg:     # (a loop's counter: from itself)
            return None
        self.visiting.add(id(inst))
        found = _written(inst, [self.operand(o, inst) for o in inst.operands[1:]])
        self.visiting.discard(id(inst))
        self.known[id(inst)] = found
        return found


def _address(inst: ir.Instruction) -> ir.Address | None:
    return next((o for o in inst.operands if isinstance(o, ir.Address)), None)


def shared_bounds(kernel: ir.Function, block: tuple[int, int, int] | None
                  ) -> dict[ir.Instruction, tuple[int, int, int]]:
    """access -> (lo, hi, size): every lane's address of that shared-memory ld, st, atom
    or red lies at lo..hi bytes from the start of a shared variable of `size` bytes, for
    blocks of shape `block` (None: any)."""
    accesses = [inst for inst in kernel.instructions()
                if inst.opcode in _ACCESSES and state_space(inst) == "shared"]
    if not accesses:
        return {}
    bases = {a.base for a in map(_address, accesses)
             if a is not None and isinstance(a.base, ir.Register)}
    intervals = _Intervals(kernel, block, bases)
    found = {}
    for inst in accesses:
        address = _address(inst)
        if address is None:
            continue
        where = intervals.operand(address.base, inst)
        if where is None or where.variable is None:
            continue
        variable = where.variable
        size = variable.elements * variable.element_size
        found[inst] = (where.lo + address.offset, where.hi + address.offset, size)
    return found


def exact_widenings(kernel: ir.Function, block: tuple[int, int, int] | None,
                    widenings: list[ir.Instruction]) -> set[int]:
    """id() of the widenings (cvt.{s,u}64.{s,u}32 or mul.wide.{s,u}32 of `widenings`) whose
    32-bit source lies, in every thread of a block of shape `block`, in a range of its type
    less than 2**31 wide: two lanes' values then differ by less than 2**31, so each lane's
    extension is lane 0's plus the lanes' 32-bit difference taken signed (lane_forms.py: the
    widening of `%tid.x` that NVRTC 13.0 makes into a 64-bit shared address cannot wrap)."""
    sources = [w.operands[1] for w in widenings]
    intervals = _Intervals(kernel, block, {r for r in sources if isinstance(r, ir.Register)})
    found = set()
    for inst, source in zip(widenings, sources, strict=True):
        where = intervals.operand(source, inst)
        if where is not None and _within(where, inst.spec.types[-1]) \
                and where.hi - where.lo < 1 << 31:
            found.add(id(inst))
    return found


def inside(bounds: tuple[int, int, int] | None, size: int) -> bool:
    """Whether an access of `size` bytes at `bounds` (shared_bounds') stays in its variable."""
    return bounds is not None and bounds[0] >= 0 and bounds[1] + size <= bounds[2]


def run(module: ir.Module, kernel: ir.Function, block=None) -> PassResult:
    """The kernel unchanged; a note per shared-memory access whose addresses are bounded
    inside one variable (for blocks of shape `block`: with none, within CUDA's limits)."""
    shape = "any block shape" if block is None else f"blocks of {tuple(block)}"
    found = shared_bounds(kernel, block)
    notes = [f"shared accesses bounded, for {shape}: {len(found)}"]
    for inst in kernel.instructions():
        if inst in found:
            lo, hi, size = found[inst]
            notes.append(f"{inst.spec.text} at +{lo}..+{hi} of {size} bytes")
    return PassResult(kernel, notes)
