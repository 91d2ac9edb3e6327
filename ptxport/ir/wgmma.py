"""wgmma.mma_async's operands by meaning (PTX ISA 9.7.15.5.2, "wgmma.mma_async"), for the
verifier and the targets that lower it.

A warpgroup (4 consecutive warps whose first is a multiple of 4 in the CTA) computes
D (64 x N) = A (64 x K) * B (K x N) + D, where scale-d (a predicate) is false gives D = A * B.
A comes from shared memory through a 64-bit matrix descriptor, or from registers (4 per thread,
the warp's 16 rows); B always through a descriptor. The dense forms:

    .f16/.bf16 inputs, .f32 (or with .f16 inputs .f16) d, K = 16:
        d, a-desc, b-desc, scale-d, imm-scale-a, imm-scale-b, imm-trans-a, imm-trans-b
        d, a,      b-desc, scale-d, imm-scale-a, imm-scale-b, imm-trans-b
    .tf32 inputs, .f32 d, K = 8; .e4m3/.e5m2 inputs, .f16/.f32 d, K = 32:
        d, a-desc | a, b-desc, scale-d, imm-scale-a, imm-scale-b
    .s8/.u8 inputs, .s32 d, K = 32; .b1 inputs (.and.popc), .s32 d, K = 256:
        d, a-desc | a, b-desc, scale-d

imm-scale-* is 1 or -1 (the operand negated), imm-trans-* 0 (K-major) or 1 (M/N-major, the
transpose; only 16-bit inputs may be transposed). d has N/2 registers (f32, s32) or N/4
(f16, two halves each); a in registers has 4.
"""

from __future__ import annotations

from dataclasses import dataclass

from ptxport.ir import nodes as ir
from ptxport.ptx.ast import IntImm

__all__ = ["WgmmaForm", "wgmma_form", "wgmma_problem"]

_K = {"f16": 16, "bf16": 16, "tf32": 8, "e4m3": 32, "e5m2": 32, "s8": 32, "u8": 32, "b1": 256}
_D_TYPES = {"f16": ("f32", "f16"), "bf16": ("f32",), "tf32": ("f32",), "e4m3": ("f32", "f16"),
            "e5m2": ("f32", "f16"), "s8": ("s32",), "u8": ("s32",), "b1": ("s32",)}
_FLOATS = ("f16", "bf16", "tf32", "e4m3", "e5m2")


@dataclass(frozen=True)
class WgmmaForm:
    """One dense wgmma.mma_async, its operands named."""

    n: int
    k: int
    d_type: str
    a_type: str
    b_type: str
    d: object                # VectorValue of d's registers
    a: object                # the descriptor (a 64-bit value) or a VectorValue of registers
    a_in_registers: bool
    b: object                # the descriptor
    scale_d: object          # a predicate (register or immediate)
    scale_a: int = 1
    scale_b: int = 1
    trans_a: int = 0
    trans_b: int = 0

    @property
    def d_registers(self) -> int:
        return self.n // 4 if self.d_type == "f16" else self.n // 2


def wgmma_form(inst: ir.Instruction) -> WgmmaForm:
    """The named operands of a dense wgmma.mma_async; ValueError saying what is wrong with
    a malformed one (sparse forms, .sp, are not decoded here: ValueError too)."""
    spec = inst.spec
    if spec.get("op") != "mma_async":
        raise ValueError("not a wgmma.mma_async")
    if spec.get("sp"):
        raise ValueError("sparse wgmma (.sp) is not decoded")
    shape, types = spec.get("shape"), tuple(spec.types)
    if shape is None or len(types) != 3:
        raise ValueError("needs a shape .m64nNkK and three types (d, a, b)")
    d_type, a_type, b_type = types
    m, rest = shape[1:].split("n")
    n, k = (int(x) for x in rest.split("k"))
    mixed = {a_type, b_type} <= {"e4m3", "e5m2"} or {a_type, b_type} <= {"s8", "u8"}
    if a_type not in _K or (a_type != b_type and not mixed):
        raise ValueError(f"input types .{a_type}.{b_type}")
    if d_type not in _D_TYPES[a_type]:
        raise ValueError(f"a .{d_type} accumulator with .{a_type} inputs")
    if int(m) != 64 or k != _K[a_type]:
        raise ValueError(f"shape {shape} with .{a_type} inputs (K must be {_K[a_type]})")
    operands = list(inst.operands)
    if len(operands) < 4:
        raise ValueError("needs d, a, b and scale-d")
    d, a, b, scale_d, *imms = operands
    in_registers = isinstance(a, ir.VectorValue)
    want = (3 if in_registers else 4) if a_type in ("f16", "bf16") else \
        2 if a_type in _FLOATS else 0
    if len(imms) != want:
        raise ValueError(f"{4 + want} operands for .{a_type} inputs with A "
                         f"{'in registers' if in_registers else 'in shared memory'}, "
                         f"not {len(operands)}")
    values = []
    for imm in imms:
        if not isinstance(imm, IntImm):
            raise ValueError("imm-scale and imm-trans operands must be integer immediates")
        values.append(imm.value)
    if any(v not in (1, -1) for v in values[:2]) or any(v not in (0, 1) for v in values[2:]):
        raise ValueError("imm-scale-a/b must be 1 or -1, imm-trans-a/b 0 or 1")
    if a_type in ("s8", "u8", "b1") and spec.get("bitop") != ("and" if a_type == "b1" else None):
        raise ValueError(".b1 inputs need .and.popc (and only they)")
    form = WgmmaForm(n, k, d_type, a_type, b_type, d, a, in_registers, b, scale_d,
                     *values[:2])
    if len(values) > 2:
        trans = values[2:] if not in_registers else [0] + values[2:]
        form = WgmmaForm(n, k, d_type, a_type, b_type, d, a, in_registers, b, scale_d,
                         values[0], values[1], trans[0], trans[1])
    _check_registers(form)
    return form


def _check_registers(form: WgmmaForm) -> None:
    count = len(form.d.elements) if isinstance(form.d, ir.VectorValue) else 1
    if count != form.d_registers:
        raise ValueError(f"d needs {form.d_registers} registers for N = {form.n} with a "
                         f".{form.d_type} accumulator, not {count}")
    if form.a_in_registers and len(form.a.elements) != 4:
        raise ValueError(f"a in registers needs 4 registers, not {len(form.a.elements)}")


def wgmma_problem(inst: ir.Instruction) -> str | None:
    """What is wrong with a wgmma instruction's form (None: nothing the verifier checks)."""
    op = inst.spec.get("op")
    if op is None:
        return "needs .fence, .commit_group, .wait_group or .mma_async"
    if op == "wait_group":
        if len(inst.operands) != 1 or not isinstance(inst.operands[0], IntImm):
            return "wgmma.wait_group takes one integer immediate N"
        return None
    if op != "mma_async":
        return "takes no operands" if inst.operands else None
    if inst.spec.get("sp"):
        return None
    try:
        wgmma_form(inst)
    except ValueError as e:
        return str(e)
    return None
