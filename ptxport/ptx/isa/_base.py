"""The shape of ptxport's instruction table: one `Op` per PTX instruction (opcode).

An instruction in PTX text is `opcode{.modifier}* operands;`. The table tells, for each opcode,
which modifiers it accepts and what each one means, so that the parser can turn
`ld.global.nc.v4.f32` into opcode `ld`, space `global`, flag `nc`, vec `v4`, types `(f32,)`,
whatever the order the modifiers were written in (ptxas accepts them in any order).

Each modifier group is named by what it means (`rnd`, `ftz`, `space`, `sem`, `scope`, ...). A
group is *single* (at most one of its values may appear) or *multi* (any subset; kept in source
order). Types are always collected in source order into `types`: `cvt.rn.f32.s32` has types
(f32, s32), destination first, as in the manual.

The files beside this one hold the table by chapter of the PTX ISA manual, each entry next to
the link of its section. `ptxport.ptx.isa.OPS` maps opcode -> Op.
"""

from __future__ import annotations

from dataclasses import dataclass, field

ISA = "https://docs.nvidia.com/cuda/parallel-thread-execution/index.html"

# --- Value sets shared by many instructions (PTX ISA 5.2, "Types") ---------------------------
SINT = ("s8", "s16", "s32", "s64")
UINT = ("u8", "u16", "u32", "u64")
BITS = ("b8", "b16", "b32", "b64", "b128")
INT = SINT + UINT
HALF = ("f16", "f16x2", "bf16", "bf16x2")
FLOAT = ("f32", "f64") + HALF + ("f32x2",)
FP8 = ("e4m3", "e5m2", "e4m3x2", "e5m2x2")
FP6_FP4 = ("e2m3", "e3m2", "e2m3x2", "e3m2x2", "e2m1", "e2m1x2", "ue8m0x2")
ALL_TYPES = INT + BITS + FLOAT + FP8 + FP6_FP4 + (
    "pred", "tf32", "s4", "u4", "b1", "s16x2", "u16x2", "s8x4", "u8x4", "u32x2", "s32x2"
)

# Rounding: floating (.rn...) and to-integer (.rni...) modes; .rna and .rs for cvt.
ROUND_FLOAT = ("rn", "rz", "rm", "rp")
ROUND_INT = ("rni", "rzi", "rmi", "rpi")
ROUND_CVT = ROUND_FLOAT + ROUND_INT + ("rna", "rs")

STATE_SPACES = (
    "global", "shared", "shared::cta", "shared::cluster", "local", "const", "param",
    "param::entry", "param::func",
)
SEMANTICS = ("relaxed", "acquire", "release", "acq_rel", "sc", "weak", "volatile", "mmio")
SCOPES = ("cta", "cluster", "gpu", "sys")
VECTORS = ("v2", "v4", "v8")
CMP_OPS = (
    "eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs",
    "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan",
)
BOOL_OPS = ("and", "or", "xor")


@dataclass(frozen=True)
class Group:
    """A set of modifiers with one meaning; `multi` groups allow several of their values."""

    values: tuple[str, ...]
    multi: bool = False


def one(*values: str) -> Group:
    """A group of which at most one value may be given."""
    return Group(tuple(values))


def many(*values: str) -> Group:
    """A group of which any subset may be given (kept in source order)."""
    return Group(tuple(values), multi=True)


@dataclass(frozen=True)
class Op:
    """One PTX instruction.

    name      the opcode as written (`add`, `cp`, `mbarrier`, `tcgen05`)
    family    the manual's family, for the census (`integer arithmetic`, `data movement`, ...)
    section   the manual's anchor for this instruction (appended to ISA)
    types     the type modifiers it accepts (collected in order into `types`)
    groups    the other modifiers, by meaning
    operands  allowed operand counts (inclusive range), None = any
    since     the PTX ISA version that introduced it, e.g. (1, 0)
    """

    name: str
    family: str
    section: str
    types: tuple[str, ...] = ()
    groups: dict[str, Group] = field(default_factory=dict)
    operands: tuple[int, int] | None = None
    since: tuple[int, int] = (1, 0)

    @property
    def url(self) -> str:
        return f"{ISA}#{self.section}"
