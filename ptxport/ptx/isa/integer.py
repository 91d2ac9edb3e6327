"""PTX instruction table: integer and extended-precision integer arithmetic (PTX ISA 9.7.1, 9.7.2).

`add sub mul mad div min max abs neg` are also floating-point (9.7.3), half-precision (9.7.4)
and mixed-precision (9.7.5) instructions. The table holds one Op per opcode, so their entries live
here and carry the union of every chapter's forms; floating.py holds the opcodes that are only
floating point. Likewise `add.cc`, `sub.cc` and `mad.cc` (9.7.2) are `add`/`sub`/`mad` with the
`cc` modifier, while `addc`, `subc` and `madc` are opcodes of their own.

Group names are shared with the other chapters: `rnd` rounding, `ftz` flush subnormals to zero,
`sat` saturation, `cc` write the carry flag, `mode` which part of a product (.hi/.lo/.wide) or how
a bit position is treated (.clamp/.wrap, .shiftamt), `precision` (.approx/.full), `relu`, `nan`
(.NaN), `xorsign`, `abs`.
"""

from __future__ import annotations

from ptxport.ptx.isa._base import ROUND_FLOAT, Op, one

INT = "integer arithmetic"
EXT = "extended-precision integer arithmetic"

# Integer types of the arithmetic instructions: 16, 32 and 64 bits, signed and unsigned.
INT16_64 = ("u16", "u32", "u64", "s16", "s32", "s64")
CARRY_TYPES = ("u32", "s32", "u64", "s64")
PACKED16 = ("u16x2", "s16x2")
# Four bytes in a .b32: ptxas 13.5 accepts them for add/sub/min/max/neg from PTX ISA 9.2 on
# sm_120a and sm_107a ("requires PTX ISA .version 9.2"), with .sat on packed add/sub and .relu on
# min/max.s8x4. The PTX ISA 9.1 manual does not describe them yet; see arith_integer_sm120.ptx.
PACKED8 = ("u8x4", "s8x4")
# Floating types of add/sub/mul/fma (f32x2 from PTX ISA 8.6, sm_100).
FLOAT_TYPES = ("f32", "f32x2", "f64", "f16", "f16x2", "bf16", "bf16x2")

RND = one(*ROUND_FLOAT)
FTZ = one("ftz")
SAT = one("sat")
CC = one("cc")

OPS: list[Op] = [
    # add.type d, a, b;  add{.sat}.s32 d, a, b;
    #   .type = {.u16, .u32, .u64, .s16, .s32, .s64, .u16x2, .s16x2}
    # add.cc.type d, a, b;  .type = {.u32,.s32,.u64,.s64}                       (9.7.2.1)
    # add{.rnd}{.ftz}{.sat}.f32 d, a, b;  add{.rnd}{.ftz}.f32x2 d, a, b;  add{.rnd}.f64 d, a, b;
    # add{.rnd}{.ftz}{.sat}.f16|.f16x2 d, a, b;  add{.rnd}.bf16|.bf16x2 d, a, b;  (9.7.4.1, .rn)
    # add{.rnd}{.sat}.f32.atype d, a, c;  .atype = {.f16, .bf16}                (9.7.5.1)
    # add{.sat}.type d, a, b;  .type = {.u16x2, .s16x2, .u8x4, .s8x4}  (ptxas, PTX ISA 9.2)
    Op("add", INT, "integer-arithmetic-instructions-add",
       types=INT16_64 + PACKED16 + PACKED8 + FLOAT_TYPES,
       groups={"rnd": RND, "ftz": FTZ, "sat": SAT, "cc": CC},
       operands=(3, 3), since=(1, 0)),
    # sub.type d, a, b;  sub{.sat}.s32 d, a, b;  .type = {.u16,.u32,.u64,.s16,.s32,.s64}
    # sub.cc.type d, a, b;  .type = {.u32,.s32,.u64,.s64}                       (9.7.2.3)
    # sub{.rnd}{.ftz}{.sat}.f32 d, a, b;  sub{.rnd}{.ftz}.f32x2 d, a, b;  sub{.rnd}.f64 d, a, b;
    # sub{.rnd}{.ftz}{.sat}.f16|.f16x2 d, a, b;  sub{.rnd}.bf16|.bf16x2 d, a, b;  (9.7.4.2)
    # sub{.rnd}{.sat}.f32.atype d, a, c;  .atype = {.f16, .bf16}                (9.7.5.2)
    # sub{.sat}.type d, a, b;  .type = {.u8x4, .s8x4}                  (ptxas, PTX ISA 9.2)
    Op("sub", INT, "integer-arithmetic-instructions-sub",
       types=INT16_64 + PACKED8 + FLOAT_TYPES,
       groups={"rnd": RND, "ftz": FTZ, "sat": SAT, "cc": CC},
       operands=(3, 3), since=(1, 0)),
    # mul.mode.type d, a, b;  .mode = {.hi, .lo, .wide};  .type = {.u16,...,.s64}
    # mul{.rnd}{.ftz}{.sat}.f32 d, a, b;  mul{.rnd}{.ftz}.f32x2 d, a, b;  mul{.rnd}.f64 d, a, b;
    # mul{.rnd}{.ftz}{.sat}.f16|.f16x2 d, a, b;  mul{.rnd}.bf16|.bf16x2 d, a, b;  (9.7.4.3)
    Op("mul", INT, "integer-arithmetic-instructions-mul",
       types=INT16_64 + FLOAT_TYPES,
       groups={"mode": one("hi", "lo", "wide"), "rnd": RND, "ftz": FTZ, "sat": SAT},
       operands=(3, 3), since=(1, 0)),
    # mad.mode.type d, a, b, c;  mad.hi.sat.s32 d, a, b, c;  .mode = {.hi, .lo, .wide}
    # mad.hilo.cc.type d, a, b, c;  .type = {.u32,.s32,.u64,.s64}                (9.7.2.5)
    # mad{.ftz}{.sat}.f32 d, a, b, c (sm_1x);  mad.rnd{.ftz}{.sat}.f32 d, a, b, c;
    # mad.rnd.f64 d, a, b, c;                                                   (9.7.3.5)
    Op("mad", INT, "integer-arithmetic-instructions-mad",
       types=INT16_64 + ("f32", "f64"),
       groups={"mode": one("hi", "lo", "wide"), "rnd": RND, "ftz": FTZ, "sat": SAT, "cc": CC},
       operands=(4, 4), since=(1, 0)),
    # mul24.mode.type d, a, b;  .mode = {.hi, .lo};  .type = {.u32, .s32}
    Op("mul24", INT, "integer-arithmetic-instructions-mul24",
       types=("u32", "s32"), groups={"mode": one("hi", "lo")},
       operands=(3, 3), since=(1, 0)),
    # mad24.mode.type d, a, b, c;  mad24.hi.sat.s32 d, a, b, c;  .mode = {.hi, .lo}
    Op("mad24", INT, "integer-arithmetic-instructions-mad24",
       types=("u32", "s32"), groups={"mode": one("hi", "lo"), "sat": SAT},
       operands=(4, 4), since=(1, 0)),
    # sad.type d, a, b, c;  .type = {.u16,.u32,.u64,.s16,.s32,.s64}
    Op("sad", INT, "integer-arithmetic-instructions-sad",
       types=INT16_64, operands=(4, 4), since=(1, 0)),
    # div.type d, a, b;  .type = {.u16,...,.s64}
    # div.approx{.ftz}.f32 d, a, b;  div.full{.ftz}.f32 d, a, b;
    # div.rnd{.ftz}.f32 d, a, b;  div.rnd.f64 d, a, b;                          (9.7.3.6)
    Op("div", INT, "integer-arithmetic-instructions-div",
       types=INT16_64 + ("f32", "f64"),
       groups={"precision": one("approx", "full"), "rnd": RND, "ftz": FTZ},
       operands=(3, 3), since=(1, 0)),
    # rem.type d, a, b;  .type = {.u16,...,.s64}
    Op("rem", INT, "integer-arithmetic-instructions-rem",
       types=INT16_64, operands=(3, 3), since=(1, 0)),
    # abs.type d, a;  .type = {.s16, .s32, .s64}
    # abs{.ftz}.f32 d, a;  abs.f64 d, a;                                        (9.7.3.7)
    # abs{.ftz}.f16|.f16x2 d, a;  abs.bf16|.bf16x2 d, a;                        (9.7.4.6)
    Op("abs", INT, "integer-arithmetic-instructions-abs",
       types=("s16", "s32", "s64", "f32", "f64", "f16", "f16x2", "bf16", "bf16x2"),
       groups={"ftz": FTZ}, operands=(2, 2), since=(1, 0)),
    # neg.type d, a;  .type = {.s16, .s32, .s64}
    # neg{.ftz}.f32 d, a;  neg.f64 d, a;                                        (9.7.3.8)
    # neg{.ftz}.f16|.f16x2 d, a;  neg.bf16|.bf16x2 d, a;                        (9.7.4.5)
    # neg.s8x4 d, a;                                                   (ptxas, PTX ISA 9.2)
    Op("neg", INT, "integer-arithmetic-instructions-neg",
       types=("s16", "s32", "s64", "s8x4", "f32", "f64", "f16", "f16x2", "bf16", "bf16x2"),
       groups={"ftz": FTZ}, operands=(2, 2), since=(1, 0)),
    # min.atype d, a, b;  min{.relu}.btype d, a, b;
    #   .atype = {.u16,.u32,.u64,.u16x2,.s16,.s64};  .btype = {.s16x2, .s32}
    # min{.ftz}{.NaN}{.xorsign.abs}.f32 d, a, b;  min{.ftz}{.NaN}{.abs}.f32 d, a, b, c;
    # min.f64 d, a, b;                                                          (9.7.3.9)
    # min{.ftz}{.NaN}{.xorsign.abs}.f16|.f16x2 d, a, b;
    # min{.NaN}{.xorsign.abs}.bf16|.bf16x2 d, a, b;                             (9.7.4.7)
    # min{.relu}.s8x4 d, a, b;  min.u8x4 d, a, b;                    (ptxas, PTX ISA 9.2)
    Op("min", INT, "integer-arithmetic-instructions-min",
       types=INT16_64 + PACKED16 + PACKED8 + ("f32", "f64", "f16", "f16x2", "bf16", "bf16x2"),
       groups={"relu": one("relu"), "ftz": FTZ, "nan": one("NaN"),
               "xorsign": one("xorsign"), "abs": one("abs")},
       operands=(3, 4), since=(1, 0)),
    # max.atype d, a, b;  max{.relu}.btype d, a, b;  (types as min)
    # max{.ftz}{.NaN}{.xorsign.abs}.f32 d, a, b;  max{.ftz}{.NaN}{.abs}.f32 d, a, b, c;
    # max.f64 d, a, b;                                                          (9.7.3.10)
    # max{.ftz}{.NaN}{.xorsign.abs}.f16|.f16x2 d, a, b;
    # max{.NaN}{.xorsign.abs}.bf16|.bf16x2 d, a, b;                             (9.7.4.8)
    # max{.relu}.s8x4 d, a, b;  max.u8x4 d, a, b;                    (ptxas, PTX ISA 9.2)
    Op("max", INT, "integer-arithmetic-instructions-max",
       types=INT16_64 + PACKED16 + PACKED8 + ("f32", "f64", "f16", "f16x2", "bf16", "bf16x2"),
       groups={"relu": one("relu"), "ftz": FTZ, "nan": one("NaN"),
               "xorsign": one("xorsign"), "abs": one("abs")},
       operands=(3, 4), since=(1, 0)),
    # popc.type d, a;  .type = {.b32, .b64}
    Op("popc", INT, "integer-arithmetic-instructions-popc",
       types=("b32", "b64"), operands=(2, 2), since=(2, 0)),
    # clz.type d, a;  .type = {.b32, .b64}
    Op("clz", INT, "integer-arithmetic-instructions-clz",
       types=("b32", "b64"), operands=(2, 2), since=(2, 0)),
    # bfind.type d, a;  bfind.shiftamt.type d, a;  .type = {.u32, .u64, .s32, .s64}
    Op("bfind", INT, "integer-arithmetic-instructions-bfind",
       types=("u32", "u64", "s32", "s64"), groups={"mode": one("shiftamt")},
       operands=(2, 2), since=(2, 0)),
    # fns.b32 d, mask, base, offset;
    Op("fns", INT, "integer-arithmetic-instructions-fns",
       types=("b32",), operands=(4, 4), since=(6, 0)),
    # brev.type d, a;  .type = {.b32, .b64}
    Op("brev", INT, "integer-arithmetic-instructions-brev",
       types=("b32", "b64"), operands=(2, 2), since=(2, 0)),
    # bfe.type d, a, b, c;  .type = {.u32, .u64, .s32, .s64}
    Op("bfe", INT, "integer-arithmetic-instructions-bfe",
       types=("u32", "u64", "s32", "s64"), operands=(4, 4), since=(2, 0)),
    # bfi.type f, a, b, c, d;  .type = {.b32, .b64}
    Op("bfi", INT, "integer-arithmetic-instructions-bfi",
       types=("b32", "b64"), operands=(5, 5), since=(2, 0)),
    # szext.mode.type d, a, b;  .mode = {.clamp, .wrap};  .type = {.u32, .s32}
    Op("szext", INT, "integer-arithmetic-instructions-szext",
       types=("u32", "s32"), groups={"mode": one("clamp", "wrap")},
       operands=(3, 3), since=(7, 6)),
    # bmsk.mode.b32 d, a, b;  .mode = {.clamp, .wrap}
    Op("bmsk", INT, "integer-arithmetic-instructions-bmsk",
       types=("b32",), groups={"mode": one("clamp", "wrap")},
       operands=(3, 3), since=(7, 6)),
    # dp4a.atype.btype d, a, b, c;  .atype = .btype = {.u32, .s32}
    Op("dp4a", INT, "integer-arithmetic-instructions-dp4a",
       types=("u32", "s32"), operands=(4, 4), since=(5, 0)),
    # dp2a.mode.atype.btype d, a, b, c;  .atype = .btype = {.u32, .s32};  .mode = {.lo, .hi}
    Op("dp2a", INT, "integer-arithmetic-instructions-dp2a",
       types=("u32", "s32"), groups={"mode": one("lo", "hi")},
       operands=(4, 4), since=(5, 0)),
    # addc{.cc}.type d, a, b;  .type = {.u32, .s32, .u64, .s64}
    Op("addc", EXT, "extended-precision-arithmetic-instructions-addc",
       types=CARRY_TYPES, groups={"cc": CC}, operands=(3, 3), since=(1, 2)),
    # subc{.cc}.type d, a, b;  .type = {.u32, .s32, .u64, .s64}
    Op("subc", EXT, "extended-precision-arithmetic-instructions-subc",
       types=CARRY_TYPES, groups={"cc": CC}, operands=(3, 3), since=(1, 2)),
    # madc.hilo{.cc}.type d, a, b, c;  .hilo = {.hi, .lo};  .type = {.u32, .s32, .u64, .s64}
    Op("madc", EXT, "extended-precision-arithmetic-instructions-madc",
       types=CARRY_TYPES, groups={"mode": one("hi", "lo"), "cc": CC},
       operands=(4, 4), since=(3, 0)),
]
