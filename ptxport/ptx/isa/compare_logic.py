"""PTX instruction table: comparison and selection, half-precision comparison, logic and shift
(PTX ISA 9.7.6, 9.7.7, 9.7.8).

The half-precision comparisons (9.7.7) are `set`/`setp` with half types, so they are part of
those two entries. Groups: `cmp` the comparison, `boolop` how a comparison (or lop3's result) is
combined with a predicate operand, `ftz`, `dir` (shf's funnel direction) and `mode` (shf's
.clamp/.wrap treatment of the shift amount).
"""

from __future__ import annotations

from ptxport.ptx.isa._base import BOOL_OPS, CMP_OPS, Op, one

CMP = "comparison and selection"
LOGIC = "logic and shift"

# Source types of set/setp/selp/slct (PTX ISA 9.7.6): bits, integers, f32 and f64.
SCALAR = ("b16", "b32", "b64", "u16", "u32", "u64", "s16", "s32", "s64", "f32", "f64")
HALF = ("f16", "f16x2", "bf16", "bf16x2")
FTZ = one("ftz")

OPS: list[Op] = [
    # set.CmpOp{.ftz}.dtype.stype d, a, b;  set.CmpOp.BoolOp{.ftz}.dtype.stype d, a, b, {!}c;
    #   .dtype = {.u32, .s32, .f32};  .stype = {.b16,.b32,.b64,.u16,...,.s64,.f32,.f64}
    # set.CmpOp{.BoolOp}{.ftz}.f16.stype ...;  set.CmpOp{.BoolOp}.bf16.stype ...;
    # set.CmpOp{.BoolOp}{.ftz}.dtype.f16 ...;  set.CmpOp{.BoolOp}.dtype.bf16 ...;
    #   .dtype = {.u16, .s16, .u32, .s32}
    # set.CmpOp{.BoolOp}{.ftz}.dtype.f16x2 ...;  .dtype = {.f16x2, .u32, .s32}
    # set.CmpOp{.BoolOp}.dtype.bf16x2 ...;  .dtype = {.bf16x2, .u32, .s32}             (9.7.7.1)
    Op("set", CMP, "comparison-and-selection-instructions-set",
       types=SCALAR + HALF,
       groups={"cmp": one(*CMP_OPS), "boolop": one(*BOOL_OPS), "ftz": FTZ},
       operands=(3, 4), since=(1, 0)),
    # setp.CmpOp{.ftz}.type p{|q}, a, b;  setp.CmpOp.BoolOp{.ftz}.type p{|q}, a, b, {!}c;
    #   .type = {.b16,.b32,.b64,.u16,.u32,.u64,.s16,.s32,.s64,.f32,.f64}
    # setp.CmpOp{.BoolOp}{.ftz}.f16 p, a, b{, {!}c};  ....f16x2 p|q, a, b{, {!}c};
    # setp.CmpOp{.BoolOp}.bf16 p, a, b{, {!}c};  setp.CmpOp{.BoolOp}.bf16x2 p|q, ...;  (9.7.7.2)
    Op("setp", CMP, "comparison-and-selection-instructions-setp",
       types=SCALAR + HALF,
       groups={"cmp": one(*CMP_OPS), "boolop": one(*BOOL_OPS), "ftz": FTZ},
       operands=(3, 4), since=(1, 0)),
    # selp.type d, a, b, c;  .type = {.b16,.b32,.b64,.u16,.u32,.u64,.s16,.s32,.s64,.f32,.f64}
    Op("selp", CMP, "comparison-and-selection-instructions-selp",
       types=SCALAR, operands=(4, 4), since=(1, 0)),
    # slct.dtype.s32 d, a, b, c;  slct{.ftz}.dtype.f32 d, a, b, c;
    #   .dtype = {.b16,.b32,.b64,.u16,.u32,.u64,.s16,.s32,.s64,.f32,.f64}
    Op("slct", CMP, "comparison-and-selection-instructions-slct",
       types=SCALAR, groups={"ftz": FTZ}, operands=(4, 4), since=(1, 0)),
    # and.type d, a, b;  .type = {.pred, .b16, .b32, .b64}
    Op("and", LOGIC, "logic-and-shift-instructions-and",
       types=("pred", "b16", "b32", "b64"), operands=(3, 3), since=(1, 0)),
    # or.type d, a, b;  .type = {.pred, .b16, .b32, .b64}
    Op("or", LOGIC, "logic-and-shift-instructions-or",
       types=("pred", "b16", "b32", "b64"), operands=(3, 3), since=(1, 0)),
    # xor.type d, a, b;  .type = {.pred, .b16, .b32, .b64}
    Op("xor", LOGIC, "logic-and-shift-instructions-xor",
       types=("pred", "b16", "b32", "b64"), operands=(3, 3), since=(1, 0)),
    # not.type d, a;  .type = {.pred, .b16, .b32, .b64}
    Op("not", LOGIC, "logic-and-shift-instructions-not",
       types=("pred", "b16", "b32", "b64"), operands=(2, 2), since=(1, 0)),
    # cnot.type d, a;  .type = {.b16, .b32, .b64}
    Op("cnot", LOGIC, "logic-and-shift-instructions-cnot",
       types=("b16", "b32", "b64"), operands=(2, 2), since=(1, 0)),
    # lop3.b32 d, a, b, c, immLut;  lop3.BoolOp.b32 d|p, a, b, c, immLut, q;
    #   .BoolOp = {.or, .and}
    Op("lop3", LOGIC, "logic-and-shift-instructions-lop3",
       types=("b32",), groups={"boolop": one("or", "and")},
       operands=(5, 6), since=(4, 3)),
    # shf.l.mode.b32 d, a, b, c;  shf.r.mode.b32 d, a, b, c;  .mode = {.clamp, .wrap}
    Op("shf", LOGIC, "logic-and-shift-instructions-shf",
       types=("b32",), groups={"dir": one("l", "r"), "mode": one("clamp", "wrap")},
       operands=(4, 4), since=(3, 1)),
    # shl.type d, a, b;  .type = {.b16, .b32, .b64}
    Op("shl", LOGIC, "logic-and-shift-instructions-shl",
       types=("b16", "b32", "b64"), operands=(3, 3), since=(1, 0)),
    # shr.type d, a, b;  .type = {.b16,.b32,.b64,.u16,.u32,.u64,.s16,.s32,.s64}
    Op("shr", LOGIC, "logic-and-shift-instructions-shr",
       types=("b16", "b32", "b64", "u16", "u32", "u64", "s16", "s32", "s64"),
       operands=(3, 3), since=(1, 0)),
]
