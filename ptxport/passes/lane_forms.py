"""Wider lane forms than passes/lane_offsets.py's, for the CPU's warp gangs (classify.py):
lane_offsets' registers hold u + c[i] for one unknown u per warp; here also

- *per half warp*: lane i holds u[i // 16] + c[i], one unknown per half (a row index times
  a width known only at run time: `y * width + x` in a 16-wide block makes rows of 16
  consecutive values, the rows any distance apart); a product with a uniform register keeps
  it where c is the same across each half (then c becomes 0), and a product of two values
  alike in the warp is alike;
- *scaled*: lane i holds u + s * c[i] for a second unknown s alike in the warp (a product
  with a uniform register: a tree's `offset * (2 * tid + 1)`, offset halving per level);
  where c[i] = i * c[1], the lanes lie one stride s * c[1] apart, which the gangs read off
  lanes 0 and 1 (gang/strided.py);
- *widened*: a widening conversion (cvt.{s,u}64.{s,u}32, mul.wide.{s,u}32 by an immediate)
  of u + c[i] is the extension of u plus c[i] unless a lane's sum wraps (lane_offsets
  follows widenings only of aligned registers, where no sum can wrap); the warp gangs check
  each such widening at run time (widening_guard: the reference lanes' values against
  bounds), and a register derived from one holds its offsets only while no widening of the
  warp has wrapped.

A register's form is lane_offsets' where that has one, else the one every write of it gives
(made by all the warp's live lanes together, as there).
"""

from __future__ import annotations

from typing import NamedTuple

from ptxport.ir import nodes as ir
from ptxport.ir.analysis import may_write
from ptxport.passes import PassResult
from ptxport.passes.lane_offsets import lane_offsets, tid_offsets
from ptxport.passes.shared_bounds import exact_widenings
from ptxport.passes.uniformity import converged_writers, thread_x_copies, uniform_registers
from ptxport.ptx.ast import IntImm

__all__ = ["SEXT", "WINDOW", "LaneForm", "lane_forms", "operand_form", "shared_bases",
           "widening", "widening_guard", "written_form", "run"]

W = 32
HALF = 16
_VARIES = "varies"      # the analysis' bottom: no known form


class LaneForm(NamedTuple):
    """Lane i of a register holds u + offsets[i] (modulo 2**bits), or with `halves`
    u[i // 16] + offsets[i] (offsets then taken from each half's first lane), or with
    `scaled` u + s * offsets[i] (s unknown, alike in the warp); `widened`: only while no
    widening conversion of the warp wrapped (checked at run time). `window` (scaled and
    widened forms only): SEXT where each lane holds K * sext(v[i]) for its own value v[i]
    of a scaled 32-bit form and a constant K (one signed widening, no earlier one), WINDOW
    where a shared variable's address was added to that (gang/strided.py: see there)."""

    offsets: tuple[int, ...]
    halves: bool = False
    widened: bool = False
    scaled: bool = False
    window: int = 0


SEXT, WINDOW = 1, 2


_ZERO = LaneForm((0,) * W)


def _form(offsets, halves=False, widened=False, bits=64, scaled=False) -> LaneForm:
    wrap = (1 << bits) - 1
    if halves:      # each half from its first lane, so equal forms compare equal
        offsets = [o - offsets[HALF * (i // HALF)] for i, o in enumerate(offsets)]
    if scaled and not any(o & wrap for o in offsets):
        return _ZERO        # (s * 0 in every lane: alike)
    return LaneForm(tuple(o & wrap for o in offsets), halves, widened, scaled)


def operand_form(value, forms, uniform: set, block):
    """The form an operand has (None: not known yet, _VARIES: none); `forms` maps a
    register to its form (a dict, or a function)."""
    if isinstance(value, IntImm):
        return _ZERO
    if isinstance(value, ir.Register):
        if value in uniform:
            return _ZERO
        return forms(value) if callable(forms) else forms.get(value)
    if isinstance(value, ir.SpecialRegister) and value.name == "%tid":
        found = tid_offsets(block, value.component or "x")
        return _VARIES if found is None else LaneForm(found)
    if isinstance(value, ir.SpecialRegister) and value.name == "%laneid":
        return LaneForm(tuple(range(W)))
    if isinstance(value, ir.Variable):
        return _ZERO
    return _VARIES


def _signed(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def widening(inst: ir.Instruction) -> tuple[bool, int] | None:
    """(signed, scale) of a widening this analysis follows: cvt.{s,u}64.{s,u}32 (scale 1)
    or mul.wide.{s,u}32 by an immediate; else None."""
    types = inst.spec.types
    if inst.opcode == "cvt" and len(types) == 2 and inst.spec.text == f"cvt.{types[0]}.{types[1]}" \
            and types[0] in ("u64", "s64") and types[1] in ("u32", "s32"):
        return types[1] == "s32", 1
    if inst.opcode == "mul" and inst.spec.text in ("mul.wide.s32", "mul.wide.u32") \
            and isinstance(inst.operands[2], IntImm):
        signed = types[0] == "s32"
        factor = inst.operands[2].value
        return signed, _signed(factor, 32) if signed else factor & 0xFFFFFFFF
    return None


def widening_guard(inst: ir.Instruction, source: LaneForm) -> list[tuple[int, int, int]]:
    """For a widening (`widening`) of a register of form `source`: (lane, low, high) per
    reference lane (0, and 16 for a per-half form) whose 32-bit value must lie in
    [low, high] (signed or unsigned as the widening reads it) for no lane's sum to wrap;
    none where every lane of a group holds the reference's value (nothing can wrap)."""
    if source.scaled:       # (its widening has no form: nothing derived to guard)
        return []
    signed, _ = widening(inst)
    low, high = (-(1 << 31), (1 << 31) - 1) if signed else (0, (1 << 32) - 1)
    out = []
    for ref in (0, HALF) if source.halves else (0,):
        lanes = range(ref, ref + HALF) if source.halves else range(W)
        d = [_signed(source.offsets[i] - source.offsets[ref], 32) for i in lanes]
        if any(d):
            out.append((ref, low - min(d), high - max(d)))
    return out


def _widened(inst: ir.Instruction, source: LaneForm, exact: bool = False) -> LaneForm:
    """The form a widening writes: the exact offsets from each reference lane, scaled;
    marked widened unless `exact` (shared_bounds.exact_widenings: no lane's sum can wrap,
    its source bounded in every thread) or every lane of a group holds its reference's. A
    scaled form's widening (NVRTC 13.0's tree levels: `mul.wide.s32` of `offset * (2t + 1)
    - 1`) stays scaled and is marked widened, with no guard (its s is not known when
    compiling): gang/strided.py, its only user, tests lane 31 against lanes 0 and 1 at run
    time, which holds for lanes in lane order only where no lane's sum wrapped."""
    _, scale = widening(inst)
    if source.scaled:
        if source.halves:
            return _VARIES
        out = [_signed(c - source.offsets[0], 32) * scale for c in source.offsets]
        form = _form(out, widened=True, scaled=True)
        signed = widening(inst)[0]
        return form._replace(window=SEXT) if signed and not source.widened and \
            form.scaled else form
    out = []
    for i, c in enumerate(source.offsets):
        ref = HALF * (i // HALF) if source.halves else 0
        out.append(_signed(c - source.offsets[ref], 32) * scale)
    constant = not any(out)
    return _form(out, source.halves, source.widened or not (constant or exact))


def _narrowing(inst: ir.Instruction) -> int:
    """The width of a truncating cvt (cvt.{u,s,b}{16,32}.{u,s,b}{32,64}, no modifier) to a
    narrower integer, else 0: u + c[i] modulo 2**bits is (u modulo 2**bits) + c[i], so the
    form's offsets are kept, truncated (a scaled form's s * c[i] too, but its widened
    flag's run-time test reads 64-bit lanes: not followed)."""
    types = inst.spec.types
    if inst.opcode != "cvt" or len(types) != 2 or inst.spec.text != f"cvt.{types[0]}.{types[1]}" \
            or types[0][0] not in "usb" or types[1][0] not in "usb":
        return 0
    bits = int(types[0][1:])
    return bits if bits in (16, 32) and bits < int(types[1][1:]) else 0


def _half_constant(form: LaneForm) -> bool:
    """Whether the form's offsets are the same across each half warp."""
    return all(form.offsets[i] == form.offsets[HALF * (i // HALF)] for i in range(W))


def _product(inst: ir.Instruction, args: list, bits: int):
    """The form of mul.lo/mad.lo/shl's product, before mad's addend."""
    op = inst.opcode
    factor = inst.operands[2]
    if isinstance(factor, IntImm):
        if op == "shl":
            if not 0 <= factor.value < 64:
                return _VARIES
            scale = 1 << factor.value
        else:
            scale = factor.value
        a = args[0]
        return _form([c * scale for c in a.offsets], a.halves, a.widened, bits, a.scaled)
    if op == "shl":
        return _VARIES
    # a product with a uniform register: a value per half where the other is one per half,
    # else the other's offsets scaled by the uniform value
    x, y = args[0], args[1]
    if x == y == _ZERO:         # (two values alike in every lane)
        return _ZERO
    varying = x if y.offsets == _ZERO.offsets and not y.halves else (
        y if x.offsets == _ZERO.offsets and not x.halves else None)
    if varying is None:
        return _VARIES
    if _half_constant(varying) or varying.halves and not any(varying.offsets):
        return LaneForm((0,) * W, True, varying.widened)
    if varying.halves or varying.widened:
        return _VARIES
    return _form(varying.offsets, bits=bits, scaled=True)


def _sum(x: LaneForm, y: LaneForm, sign: int, bits: int):
    """The form of x + sign * y. A scaled form keeps its scale only beside a value alike
    in the warp (two scales may differ, and s * c + d[i] is neither form)."""
    if x.scaled or y.scaled:
        other = y if x.scaled else x
        if other.scaled or other.halves or any(other.offsets):
            return _VARIES
    return _form([a + sign * b for a, b in zip(x.offsets, y.offsets, strict=True)],
                 x.halves or y.halves, x.widened or y.widened, bits, x.scaled or y.scaled)


def written_form(inst: ir.Instruction, forms, uniform: set, block, exact: set = frozenset(),
                 bases: set = frozenset()):
    """The form `inst` writes into its destination (None: not known yet, _VARIES: none),
    given the forms of registers (`forms`: a dict or a function); `exact`: id() of the
    widenings that cannot wrap (shared_bounds.exact_widenings); `bases`: the registers
    that hold a shared variable's address (shared_bases)."""
    op = inst.opcode
    wide = widening(inst)
    if wide is not None:
        source = operand_form(inst.operands[1], forms, uniform, block)
        return source if source in (None, _VARIES) else \
            _widened(inst, source, id(inst) in exact)
    narrow = _narrowing(inst)
    if narrow:
        source = operand_form(inst.operands[1], forms, uniform, block)
        if source in (None, _VARIES) or source.scaled:
            return source if source in (None, _VARIES) else _VARIES
        return _form(source.offsets, source.halves, source.widened, narrow)
    t = inst.spec.types[-1] if inst.spec.types else ""
    if not t or t[0] not in "usb" or inst.spec.get("cc") \
            or inst.spec.get("sat") or inst.spec.get("mode", "lo") != "lo":
        return _VARIES
    bits = int(t[1:])
    args = [operand_form(o, forms, uniform, block) for o in inst.operands[1:]]
    if _VARIES in args:
        return _VARIES
    if None in args:
        return None
    halves, widened = any(a.halves for a in args), any(a.widened for a in args)
    if op in ("mov", "cvta") and len(args) == 1:
        form = _form(args[0].offsets, halves, widened, bits, args[0].scaled)
        return form._replace(window=args[0].window) if op == "mov" and bits == 64 else form
    if op in ("add", "sub") and len(args) == 2:
        form = _sum(args[0], args[1], 1 if op == "add" else -1, bits)
        if op == "add" and bits == 64 and form != _VARIES and any(
                a.window == SEXT and _shared_base(b, bases) for a, b in (
                    (args[0], inst.operands[2]), (args[1], inst.operands[1]))):
            return form._replace(window=WINDOW)
        return form
    if op in ("mul", "shl", "mad") and len(args) >= 2:
        product = _product(inst, args, bits)
        if product == _VARIES or op != "mad":
            return product
        return _sum(product, args[2], 1, bits)
    return _VARIES


def _shared_base(value, bases: set) -> bool:
    """Whether the operand is a shared variable's address (its offset in the window)."""
    if isinstance(value, ir.SymbolAddress) and not value.generic and not value.offset:
        value = value.target
    if isinstance(value, ir.Variable):
        return value.space == "shared"
    return isinstance(value, ir.Register) and value in bases


def shared_bases(kernel: ir.Function) -> set:
    """The registers every write of which is an unguarded `mov` of a shared variable's
    address (`mov.u64 %rd, temp`)."""
    writes: dict = {}
    for inst in kernel.instructions():
        for reg in may_write(inst):
            ok = inst.opcode == "mov" and inst.guard is None and len(inst.operands) == 2 \
                and _shared_base(inst.operands[1], frozenset())
            writes[reg] = writes.get(reg, True) and ok
    return {r for r, ok in writes.items() if ok}


def _merge(old, new):
    if old is None or new is None:
        return new if old is None else old
    if old == _VARIES or new == _VARIES or (old.offsets, old.halves, old.scaled) != (
            new.offsets, new.halves, new.scaled):
        return _VARIES
    return LaneForm(old.offsets, old.halves, old.widened or new.widened, old.scaled,
                    old.window if old.window == new.window else 0)


def lane_forms(kernel: ir.Function, block: tuple[int, int, int] | None,
               uniform: set | None = None) -> dict[ir.Register, LaneForm]:
    """Non-uniform registers of `kernel` -> their LaneForm, for blocks of shape `block`
    (None: any, where %tid's offsets are unknown): lane_offsets' plain ones, and the wider
    forms of the other registers."""
    if uniform is None:
        uniform = uniform_registers(kernel, block, thread_x_copies(kernel) if block else None)
    together = converged_writers(kernel, uniform)
    plain = {r: LaneForm(c) for r, c in lane_offsets(kernel, block, uniform).items()}
    forms: dict = dict(plain)
    exact = exact_widenings(kernel, block,
                            [i for i in kernel.instructions() if widening(i) is not None])
    bases = shared_bases(kernel)
    changed = True
    while changed:
        changed = False
        for inst in kernel.instructions():
            written = may_write(inst) - uniform
            if not written or written <= plain.keys():
                continue
            value = _VARIES
            if len(written) == 1 and id(inst) in together:
                value = written_form(inst, forms, uniform, block, exact, bases)
            for reg in written - plain.keys():
                old = forms.get(reg)
                new = _VARIES if reg.vector else _merge(old, value)
                if new != old and new is not None:
                    forms[reg] = new
                    changed = True
    return {r: f for r, f in forms.items() if f != _VARIES}


def run(module: ir.Module, kernel: ir.Function, block=None) -> PassResult:
    """The kernel unchanged; a note per register with a known form (for blocks of shape
    `block`: with none, only forms that do not depend on it)."""
    shape = "any block shape" if block is None else f"blocks of {tuple(block)}"
    found = lane_forms(kernel, block)
    notes = [f"lane forms, for {shape}: {len(found)} register(s)"]
    for reg in sorted(found, key=lambda r: r.name):
        form = found[reg]
        c = form.offsets
        kind = "".join((" (per half)" if form.halves else "",
                        " (widened)" if form.widened else "",
                        " (scaled)" if form.scaled else ""))
        notes.append(f"{reg.name}{kind}: " + " ".join(str(v - c[0]) for v in c))
    return PassResult(kernel, notes)
