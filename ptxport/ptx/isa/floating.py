"""PTX instruction table: floating-point, half-precision and mixed-precision instructions that
are only floating point (PTX ISA 9.7.3, 9.7.4, 9.7.5).

The opcodes these chapters share with integer arithmetic (`add sub mul mad div min max abs neg`)
are one Op each, in integer.py, holding the floating forms too; the mixed-precision forms
(`add.f32.f16`, `fma.rn.f32.bf16`) are type pairs, so they need no entry of their own.
`rcp.approx.ftz.f64` and `rsqrt.approx.ftz.f64` have sections of their own in the manual but are
forms of `rcp` and `rsqrt`.

Groups: `rnd` rounding, `ftz` flush subnormals to zero, `sat` clamp to [0, 1], `precision`
(.approx/.full, the accuracy class of a non-IEEE operation), `relu`, `oob` (out-of-bounds
operands read as zero), `test` (the class tested by testp).
"""

from __future__ import annotations

from ptxport.ptx.isa._base import ROUND_FLOAT, Op, one

FP = "floating point"

RND = one(*ROUND_FLOAT)
FTZ = one("ftz")
APPROX = one("approx")

OPS: list[Op] = [
    # testp.op.type p, a;  .op = {.finite, .infinite, .number, .notanumber, .normal, .subnormal}
    #   .type = {.f32, .f64}
    Op("testp", FP, "floating-point-instructions-testp",
       types=("f32", "f64"),
       groups={"test": one("finite", "infinite", "number", "notanumber", "normal",
                           "subnormal")},
       operands=(2, 2), since=(2, 0)),
    # copysign.type d, a, b;  .type = {.f32, .f64}
    Op("copysign", FP, "floating-point-instructions-copysign",
       types=("f32", "f64"), operands=(3, 3), since=(2, 0)),
    # fma.rnd{.ftz}{.sat}.f32 d, a, b, c;  fma.rnd{.ftz}.f32x2 d, a, b, c;  fma.rnd.f64 d, a, b, c;
    # fma.rnd{.ftz}{.sat}.f16|.f16x2 d, a, b, c;  fma.rnd{.ftz}.relu.f16|.f16x2 d, a, b, c;
    # fma.rnd{.relu}.bf16|.bf16x2 d, a, b, c;  fma.rnd.oob{.relu}.type d, a, b, c;  (9.7.4.4, .rn)
    # fma.rnd{.sat}.f32.abtype d, a, b, c;  .abtype = {.f16, .bf16}               (9.7.5.3)
    Op("fma", FP, "floating-point-instructions-fma",
       types=("f32", "f32x2", "f64", "f16", "f16x2", "bf16", "bf16x2"),
       groups={"rnd": RND, "ftz": FTZ, "sat": one("sat"), "relu": one("relu"),
               "oob": one("oob")},
       operands=(4, 4), since=(1, 4)),
    # rcp.approx{.ftz}.f32 d, a;  rcp.rnd{.ftz}.f32 d, a;  rcp.rnd.f64 d, a;
    # rcp.approx.ftz.f64 d, a;          (section floating-point-instructions-rcp-approx-ftz-f64)
    Op("rcp", FP, "floating-point-instructions-rcp",
       types=("f32", "f64"), groups={"precision": APPROX, "rnd": RND, "ftz": FTZ},
       operands=(2, 2), since=(1, 0)),
    # sqrt.approx{.ftz}.f32 d, a;  sqrt.rnd{.ftz}.f32 d, a;  sqrt.rnd.f64 d, a;
    Op("sqrt", FP, "floating-point-instructions-sqrt",
       types=("f32", "f64"), groups={"precision": APPROX, "rnd": RND, "ftz": FTZ},
       operands=(2, 2), since=(1, 0)),
    # rsqrt.approx{.ftz}.f32 d, a;  rsqrt.approx.f64 d, a;
    # rsqrt.approx.ftz.f64 d, a;      (section floating-point-instructions-rsqrt-approx-ftz-f64)
    Op("rsqrt", FP, "floating-point-instructions-rsqrt",
       types=("f32", "f64"), groups={"precision": APPROX, "ftz": FTZ},
       operands=(2, 2), since=(1, 0)),
    # sin.approx{.ftz}.f32 d, a;
    Op("sin", FP, "floating-point-instructions-sin",
       types=("f32",), groups={"precision": APPROX, "ftz": FTZ},
       operands=(2, 2), since=(1, 0)),
    # cos.approx{.ftz}.f32 d, a;
    Op("cos", FP, "floating-point-instructions-cos",
       types=("f32",), groups={"precision": APPROX, "ftz": FTZ},
       operands=(2, 2), since=(1, 0)),
    # lg2.approx{.ftz}.f32 d, a;
    Op("lg2", FP, "floating-point-instructions-lg2",
       types=("f32",), groups={"precision": APPROX, "ftz": FTZ},
       operands=(2, 2), since=(1, 0)),
    # ex2.approx{.ftz}.f32 d, a;
    # ex2.approx.atype d, a;  ex2.approx.ftz.btype d, a;
    #   .atype = {.f16, .f16x2};  .btype = {.bf16, .bf16x2}                         (9.7.4.10)
    Op("ex2", FP, "floating-point-instructions-ex2",
       types=("f32", "f16", "f16x2", "bf16", "bf16x2"),
       groups={"precision": APPROX, "ftz": FTZ},
       operands=(2, 2), since=(1, 0)),
    # tanh.approx.type d, a;  .type = {.f32}                                        (9.7.3.20)
    # tanh.approx.type d, a;  .type = {.f16, .f16x2, .bf16, .bf16x2}                (9.7.4.9)
    Op("tanh", FP, "floating-point-instructions-tanh",
       types=("f32", "f16", "f16x2", "bf16", "bf16x2"),
       groups={"precision": APPROX},
       operands=(2, 2), since=(7, 0)),
]
