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
values of u.

Some registers are also known *aligned* to a power of two A: u is a multiple of A and every
c[i] lies in [0, A), so u + c[i] is u | c[i] and never carries out of the low bits. %tid.x in
rows of whole warps (u = 32 * warp) and %laneid are aligned to 32, and Triton's index
arithmetic keeps it: `shl` by k multiplies A by 2**k, `and`/`or`/`xor` with an immediate act on
u and c apart, `or`/`add` with a uniform value whose low log2(A) bits are known zero (its
trailing zeros: `ctaid << 10`) leave c alone, and `shr` by k acts on u and c apart (offsets
c >> k, aligned to A >> k: Triton's `(tid >> 3) & 12`, a warp's slot in shared memory, is
alike in its lanes). Only aligned registers are followed through a
widening (cvt to a wider integer, mul.wide, mad.wide): a sign or zero extension of u + c[i]
is the extension of u plus c[i] where the sum cannot wrap, which alignment guarantees (A at
most 2**(bits-1)); a sum that may wrap is not extended.
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

__all__ = ["aligned_offsets", "lane_offsets", "tid_offsets", "run"]

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


_ZERO = (0,) * W


def _operand(value, offsets: dict, uniform: set, block):
    """(offsets, alignment) of an operand (offsets None: not known yet, _VARIES: none;
    alignment 0: none known)."""
    if isinstance(value, IntImm | ir.Variable):
        return _ZERO, 0
    if isinstance(value, ir.Register):
        if value in uniform:
            return _ZERO, 0
        known = offsets.get(value, (None, 0))
        return (_VARIES, 0) if known == _VARIES else known
    if isinstance(value, ir.SpecialRegister) and value.name == "%tid":
        c = tid_offsets(block, value.component or "x") or _VARIES
        return c, (W if c == tuple(range(W)) else 0)
    if isinstance(value, ir.SpecialRegister) and value.name == "%laneid":
        return tuple(range(W)), W
    return _VARIES, 0


def _trailing_zeros(value, zeros: dict, bits: int) -> int:
    """How many low bits of a uniform operand are known zero."""
    if isinstance(value, IntImm):
        v = value.value & ((1 << bits) - 1)
        return bits if v == 0 else (v & -v).bit_length() - 1
    return zeros.get(value, 0) if isinstance(value, ir.Register) else 0


def uniform_zeros(kernel: ir.Function, uniform: set) -> dict[ir.Register, int]:
    """Uniform registers -> how many of their low bits are known zero in every write (from
    immediates through mov, shl, mul, mad, add, sub, and, or and integer conversions)."""
    zeros = {r: 64 for r in uniform}
    changed = True
    while changed:
        changed = False
        for inst in kernel.instructions():
            written = may_write(inst)
            # (an unpacking mov writes several registers: not its operand's low bits each)
            value = _zeros_written(inst, zeros) if len(written) == 1 else 0
            for reg in written & uniform:
                z = min(zeros[reg], value)
                if z != zeros[reg]:
                    zeros[reg], changed = z, True
    return zeros


def _zeros_written(inst: ir.Instruction, zeros: dict) -> int:
    t = inst.spec.types[-1] if inst.spec.types else ""
    if not t or t[0] not in "usb" or inst.spec.get("mode", "lo") not in ("lo", "wide"):
        return 0
    bits = int(t[1:])
    z = [_trailing_zeros(o, zeros, bits) for o in inst.operands[1:]]
    op = inst.opcode
    if op in ("mov", "cvt", "cvta") and len(z) == 1:
        return z[0]
    if op in ("add", "sub", "or", "xor") and len(z) == 2:
        return min(z)
    if op == "and" and len(z) == 2:
        return max(z)
    if op == "shl" and len(z) == 2 and isinstance(inst.operands[2], IntImm):
        return z[0] + inst.operands[2].value
    if op == "mul" and len(z) == 2:
        return z[0] + z[1]
    if op == "mad" and len(z) == 3:
        return min(z[0] + z[1], z[2])
    return 0


def _scale(inst: ir.Instruction) -> int | None:
    """The immediate factor of mul.lo / mad.lo (2**n for shl by n), else None."""
    operand = inst.operands[2]
    if not isinstance(operand, IntImm):
        return None
    if inst.opcode == "shl":
        return 1 << operand.value if 0 <= operand.value < 64 else None
    return operand.value


def _aligned_after(align: int, other, zeros: dict, bits: int) -> int:
    """The alignment of u + c combined with a uniform `other` (added, or'ed) that leaves c
    alone: kept where other's low log2(align) bits are known zero."""
    if align > 1 and _trailing_zeros(other, zeros, bits) >= align.bit_length() - 1:
        return align
    return 0


def _bitwise(inst: ir.Instruction, found: list, zeros: dict, bits: int):
    """and/or/xor of an aligned register with an immediate (acting on u and c apart) or
    with a uniform value whose low bits are zero (or/xor: c unchanged)."""
    if len(found) != 2:
        return _VARIES
    lanes = 1 if found[0][0] == _ZERO else 0
    (c, align), other = found[lanes], inst.operands[2 - lanes]
    if align <= 1:
        return _VARIES
    if isinstance(other, IntImm):
        low = other.value & (align - 1)
        op = inst.opcode
        if op == "and":
            return tuple(a & other.value for a in c), align
        return tuple((a | low) if op == "or" else (a ^ low) for a in c), align
    if inst.opcode != "and" and _aligned_after(align, other, zeros, bits):
        return c, align
    return _VARIES


def _shifted_right(inst: ir.Instruction, found: list, bits: int):
    """shr of an aligned register by an immediate k: u + c[i] is u | c[i] with c[i] below
    u's lowest bit, so the shift acts on u and c apart (an arithmetic shift's sign comes
    from u where every c[i] is below 2**(bits-1)): offsets c >> k, aligned to A >> k; where
    k reaches log2(A) every lane holds u >> k (Triton's warp index `(tid >> 3) & 12`, a
    shared-memory slot per warp)."""
    (c, align), amount = found[0], inst.operands[2]
    if len(found) != 2 or found[1][0] != _ZERO or align <= 1 \
            or not isinstance(amount, IntImm) or not 0 <= amount.value < bits:
        return _VARIES
    if inst.spec.types[-1][0] == "s" and any(a >> (bits - 1) for a in c):
        return _VARIES
    return tuple(a >> amount.value for a in c), max(align >> amount.value, 1)


def _widened(inst: ir.Instruction, found: list):
    """cvt of an aligned register to a wider integer: the offsets unchanged; cvt to a
    narrower one of 16 or 32 bits (no .sat: PTX truncates): the offsets truncated, as
    u + c[i] modulo 2**bits is (u modulo 2**bits) + c[i] (NVRTC 13.0's `cvt.u32.u64` of
    a `cvt.u64.u32 %rd, %tid.x` it kept in 64 bits, transpose's)."""
    dest, source = inst.spec.types[0], inst.spec.types[-1]
    c, align = found[0]
    if len(found) != 1 or dest[0] not in "usb" or source[0] not in "usb" \
            or inst.spec.get("rnd") or inst.spec.get("sat"):
        return _VARIES
    bits = int(dest[1:])
    if bits < int(source[1:]):
        if bits not in (16, 32):
            return _VARIES
        return tuple(a & ((1 << bits) - 1) for a in c), (
            align if align <= 1 << (bits - 1) else 0)
    if bits == int(source[1:]) or not _extends(source, align):
        return _VARIES
    return c, align


def _extends(source: str, align: int) -> bool:
    """Whether extending u + c from type `source` is extending u, plus c."""
    bits = int(source[1:])
    return 1 < align <= 1 << (bits - 1 if source[0] == "s" else bits)


def _written(inst: ir.Instruction, offsets: dict, uniform: set, zeros: dict, block):
    """The (offsets, alignment) `inst` writes into its destination (None: not known yet)."""
    op = inst.opcode
    t = inst.spec.types[-1] if inst.spec.types else ""
    mode = inst.spec.get("mode", "lo")
    if not t or t[0] not in "usb" or inst.spec.get("cc") or inst.spec.get("sat") \
            or mode not in ("lo", "wide"):
        return _VARIES
    found = [_operand(o, offsets, uniform, block) for o in inst.operands[1:]]
    args = [c for c, _ in found]
    if not found or _VARIES in args:
        return _VARIES
    if None in args:
        return None
    if op == "cvt":
        return _widened(inst, found)
    bits = int(t[1:])
    if mode == "wide":      # the first operand extended, then as .lo in twice the width
        if op not in ("mul", "mad") or not _extends(t, found[0][1]):
            return _VARIES
        bits *= 2
    wrap = (1 << bits) - 1
    align = found[0][1]
    if op in ("mov", "cvta") and len(args) == 1:
        return tuple(a & wrap for a in args[0]), align
    if op in ("add", "sub") and len(args) == 2:
        sign = 1 if op == "add" else -1
        c = tuple((a + sign * b) & wrap for a, b in zip(*args, strict=True))
        if args[1] == _ZERO:
            return c, _aligned_after(align, inst.operands[2], zeros, bits)
        return c, (_aligned_after(found[1][1], inst.operands[1], zeros, bits)
                   if args[0] == _ZERO and op == "add" else 0)
    if op in ("mul", "shl", "mad") and len(args) >= 2:
        scale = _scale(inst)
        if scale is None:
            return _VARIES
        addend = args[2] if op == "mad" else _ZERO
        c = tuple((a * scale + b) & wrap for a, b in zip(args[0], addend, strict=True))
        scaled = align * scale if scale > 0 and scale & (scale - 1) == 0 else 0
        if scaled > 1 << bits or (op == "mad" and (addend != _ZERO or not _aligned_after(
                scaled, inst.operands[3], zeros, bits))):
            scaled = 0
        return c, scaled
    if op in ("and", "or", "xor") and mode == "lo":
        return _bitwise(inst, found, zeros, bits)
    if op == "shr":
        return _shifted_right(inst, found, bits)
    return _VARIES


def lane_offsets(kernel: ir.Function, block: tuple[int, int, int] | None,
                 uniform: set | None = None) -> dict[ir.Register, tuple[int, ...]]:
    """Non-uniform registers of `kernel` -> their lanes' constant offsets c (c[0] = 0 is not
    required), for blocks of shape `block` (None: any, where %tid's offsets are unknown)."""
    return {r: c for r, (c, _) in aligned_offsets(kernel, block, uniform).items()}


def aligned_offsets(kernel: ir.Function, block: tuple[int, int, int] | None,
                    uniform: set | None = None) -> dict[ir.Register, tuple[tuple, int]]:
    """lane_offsets' registers -> (c, A): A is the alignment the module's docstring
    defines (u a multiple of A, every c[i] in [0, A): the lanes' values u + c[i] never wrap),
    or 0 (or 1) where none is known."""
    if uniform is None:
        uniform = uniform_registers(kernel, block, thread_x_copies(kernel) if block else None)
    together = converged_writers(kernel, uniform)
    zeros = uniform_zeros(kernel, uniform)
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
                value = _written(inst, offsets, uniform, zeros, block)
            for reg in written:
                old = offsets.get(reg)
                new = _VARIES if reg.vector else _merged(old, value)
                if new != old and new is not None:
                    offsets[reg] = new
                    changed = True
    return {r: v for r, v in offsets.items() if v != _VARIES}


def _merged(old, value):
    """A register's (offsets, alignment) after one more write's (None: not known yet):
    the same offsets, aligned to the smaller alignment, else none."""
    if old is None or value is None:
        return value if old is None else old
    if old == _VARIES or value == _VARIES or old[0] != value[0]:
        return _VARIES
    return old[0], min(old[1], value[1])


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
