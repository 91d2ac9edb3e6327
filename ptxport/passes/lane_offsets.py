"""Registers whose lanes differ by offsets known when compiling: in every warp, lane i of the
register holds u + c[i] (modulo 2**bits) for one value u per warp and write and a constant
vector c (the CPU's warp gangs, codegen/targets/cpu/gang/, then know how a warp's addresses
lie without looking at them: `As[ty][k]` of a 16x16 GEMM tile is one address per half warp,
`Bs[k][tx]` consecutive in each half).

For a block shape, %tid.x is u + i in rows of a multiple of 32 threads and i mod x in rows
that divide 32; %tid.y (z) is u + i // x (i // (x * y)) where a warp's lanes fill whole rows
(planes) of one plane (block). Uniform registers (uniformity.py) have c = 0. `add`, `sub`,
`mov`, and `mul.lo`, `mad.lo`, `shl` by immediates keep the form (they are exact modulo
2**bits). A register has such offsets when every write of it does, with the same c, and is
made by all the warp's live lanes together (an unguarded or uniformly guarded write in a
converged block, as uniformity.py defines them): a write by some lanes only would mix two
values of u. Widening conversions (cvt, mul.wide) are not followed: a sign or zero
extension of u + c[i] is not the extension of u plus c[i] where the sum wraps.
"""

from __future__ import annotations

from ptxport.ir import nodes as ir
from ptxport.ir.analysis import may_write
from ptxport.passes import PassResult
from ptxport.passes.uniformity import (
    converged_writers,
    thread_x_copies,
    uniform_registers,
    warp_uniform_indices,
)
from ptxport.ptx.ast import IntImm

__all__ = ["lane_offsets", "tid_offsets", "run"]

W = 32
_VARIES = "varies"      # the analysis' bottom: no constant offsets


def tid_offsets(block: tuple[int, int, int] | None, component: str) -> tuple[int, ...] | None:
    """Lane offsets of %tid.<component> for blocks of shape `block`, or None."""
    if block is None:
        return None
    x, y, _ = block
    alike = warp_uniform_indices(block)
    if component in alike:
        return (0,) * W
    if component == "x":
        if x % W == 0:
            return tuple(range(W))
        return tuple(i % x for i in range(W)) if W % x == 0 else None
    row = x if component == "y" else x * y
    if W % row == 0 and (row * block["xyz".index(component)]) % W == 0:
        return tuple(i // row for i in range(W))
    return None


def _operand(value, offsets: dict, uniform: set, block) -> tuple[int, ...] | str | None:
    """The offsets an operand has (None: not known yet, _VARIES: none)."""
    if isinstance(value, IntImm):
        return (0,) * W
    if isinstance(value, ir.Register):
        if value in uniform:
            return (0,) * W
        return offsets.get(value)
    if isinstance(value, ir.SpecialRegister) and value.name == "%tid":
        return tid_offsets(block, value.component or "x") or _VARIES
    if isinstance(value, ir.SpecialRegister) and value.name == "%laneid":
        return tuple(range(W))
    if isinstance(value, ir.Variable):
        return (0,) * W
    return _VARIES


def _scale(inst: ir.Instruction) -> int | None:
    """The immediate factor of mul.lo / mad.lo (2**n for shl by n), else None."""
    operand = inst.operands[2]
    if not isinstance(operand, IntImm):
        return None
    if inst.opcode == "shl":
        return 1 << operand.value if 0 <= operand.value < 64 else None
    return operand.value


def _written(inst: ir.Instruction, offsets: dict, uniform: set, block):
    """The offsets `inst` writes into its destination (None: not known yet)."""
    op = inst.opcode
    t = inst.spec.types[-1] if inst.spec.types else ""
    if not t or t[0] not in "usb" or inst.spec.get("cc") \
            or inst.spec.get("sat") or inst.spec.get("mode", "lo") != "lo":
        return _VARIES
    bits = int(t[1:])
    args = [_operand(o, offsets, uniform, block) for o in inst.operands[1:]]
    if _VARIES in args:
        return _VARIES
    if None in args:
        return None
    wrap = (1 << bits) - 1
    if op in ("mov", "cvta") and len(args) == 1:
        return tuple(a & wrap for a in args[0])
    if op in ("add", "sub") and len(args) == 2:
        sign = 1 if op == "add" else -1
        return tuple((a + sign * b) & wrap for a, b in zip(*args, strict=True))
    if op in ("mul", "shl", "mad") and len(args) >= 2:
        scale = _scale(inst)
        if scale is None:
            return _VARIES
        addend = args[2] if op == "mad" else (0,) * W
        return tuple((a * scale + c) & wrap for a, c in zip(args[0], addend, strict=True))
    return _VARIES


def lane_offsets(kernel: ir.Function, block: tuple[int, int, int] | None,
                 uniform: set | None = None) -> dict[ir.Register, tuple[int, ...]]:
    """Non-uniform registers of `kernel` -> their lanes' constant offsets c (c[0] = 0 is not
    required), for blocks of shape `block` (None: any, where %tid's offsets are unknown)."""
    if uniform is None:
        uniform = uniform_registers(kernel, block, thread_x_copies(kernel) if block else None)
    together = converged_writers(kernel, uniform)
    offsets: dict = {}
    changed = True
    while changed:
        changed = False
        for inst in kernel.instructions():
            written = may_write(inst) - uniform
            if not written:
                continue
            value = _VARIES
            if len(written) == 1 and id(inst) in together:
                value = _written(inst, offsets, uniform, block)
            for reg in written:
                old = offsets.get(reg)
                new = value if old is None or old == value or value is None else _VARIES
                if reg.vector:
                    new = _VARIES
                if new != old and new is not None:
                    offsets[reg] = new
                    changed = True
    return {r: c for r, c in offsets.items() if c != _VARIES}


def run(module: ir.Module, kernel: ir.Function, block=None) -> PassResult:
    """The kernel unchanged; a note per register whose lanes differ by known offsets (for
    blocks of shape `block`: with none, only offsets that do not depend on it)."""
    shape = "any block shape" if block is None else f"blocks of {tuple(block)}"
    found = lane_offsets(kernel, block)
    notes = [f"lane offsets, for {shape}: {len(found)} register(s)"]
    for reg in sorted(found, key=lambda r: r.name):
        c = found[reg]
        notes.append(f"{reg.name}: " + " ".join(str(v - c[0]) for v in c))
    return PassResult(kernel, notes)
