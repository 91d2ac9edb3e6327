"""PTX instruction table: scalar and SIMD video instructions (PTX ISA 9.7.18).

The byte and half-word selectors of these instructions (`a.b0`, `b.h1`, the destination merge
selector `d.h0`, the SIMD mask `d.h10` / `d.b3210` and source selectors `a.h32` / `a.b7654`) are
written on the operands, not on the opcode: the parser reads them as operand selectors, so they
are not modifiers here. What is left on the opcode: the type triple `.dtype.atype.btype` (in
that order, into `types`), `sat`, the secondary operation `op2` (.add/.min/.max; .add alone for
the SIMD forms), `mode` (.clamp/.wrap shift amount of vshl/vshr), vmad's `scale` (.shr7/.shr15)
and `po` (plus one), and the `cmp` of vset/vset2/vset4.
"""

from __future__ import annotations

from ptxport.ptx.isa._base import Op, one

VIDEO = "video"

TYPES = ("u32", "s32")
SAT = one("sat")
OP2 = one("add", "min", "max")
SIMD_OP2 = one("add")
VCMP = one("eq", "ne", "lt", "le", "gt", "ge")

_SCALAR = "scalar-video-instructions-vadd-vsub-vabsdiff-vmin-vmax"
_SHIFT = "scalar-video-instructions-vshl-vshr"
_SIMD2 = "simd-video-instructions-vadd2-vsub2-vavrg2-vabsdiff2-vmin2-vmax2"
_SIMD4 = "simd-video-instructions-vadd4-vsub4-vavrg4-vabsdiff4-vmin4-vmax4"


def _scalar(name: str) -> Op:
    return Op(name, VIDEO, _SCALAR, types=TYPES, groups={"sat": SAT, "op2": OP2},
              operands=(3, 4), since=(2, 0))


def _shift(name: str) -> Op:
    return Op(name, VIDEO, _SHIFT, types=TYPES,
              groups={"sat": SAT, "mode": one("clamp", "wrap"), "op2": OP2},
              operands=(3, 4), since=(2, 0))


def _simd(name: str, section: str) -> Op:
    return Op(name, VIDEO, section, types=TYPES, groups={"sat": SAT, "op2": SIMD_OP2},
              operands=(4, 4), since=(3, 0))


OPS: list[Op] = [
    # vop.dtype.atype.btype{.sat} d, a{.asel}, b{.bsel};
    # vop.dtype.atype.btype{.sat}.op2 d, a{.asel}, b{.bsel}, c;
    # vop.dtype.atype.btype{.sat} d.dsel, a{.asel}, b{.bsel}, c;
    #   vop = {vadd, vsub, vabsdiff, vmin, vmax};  .dtype = .atype = .btype = {.u32, .s32}
    #   .dsel = .asel = .bsel = {.b0, .b1, .b2, .b3, .h0, .h1};  .op2 = {.add, .min, .max}
    _scalar("vadd"),
    _scalar("vsub"),
    _scalar("vabsdiff"),
    _scalar("vmin"),
    _scalar("vmax"),
    # vop.dtype.atype.u32{.sat}.mode d, a{.asel}, b{.bsel};
    # vop.dtype.atype.u32{.sat}.mode.op2 d, a{.asel}, b{.bsel}, c;
    # vop.dtype.atype.u32{.sat}.mode d.dsel, a{.asel}, b{.bsel}, c;
    #   vop = {vshl, vshr};  .mode = {.clamp, .wrap};  .op2 = {.add, .min, .max}
    _shift("vshl"),
    _shift("vshr"),
    # vmad.dtype.atype.btype{.sat}{.scale} d, {-}a{.asel}, {-}b{.bsel}, {-}c;
    # vmad.dtype.atype.btype.po{.sat}{.scale} d, a{.asel}, b{.bsel}, c;
    #   .scale = {.shr7, .shr15}
    Op("vmad", VIDEO, "scalar-video-instructions-vmad", types=TYPES,
       groups={"sat": SAT, "scale": one("shr7", "shr15"), "po": one("po")},
       operands=(4, 4), since=(2, 0)),
    # vset.atype.btype.cmp d, a{.asel}, b{.bsel};
    # vset.atype.btype.cmp.op2 d, a{.asel}, b{.bsel}, c;
    # vset.atype.btype.cmp d.dsel, a{.asel}, b{.bsel}, c;
    #   .cmp = {.eq, .ne, .lt, .le, .gt, .ge};  .op2 = {.add, .min, .max}
    Op("vset", VIDEO, "scalar-video-instructions-vset", types=TYPES,
       groups={"cmp": VCMP, "op2": OP2}, operands=(3, 4), since=(2, 0)),
    # vop2.dtype.atype.btype{.sat} d{.mask}, a{.asel}, b{.bsel}, c;
    # vop2.dtype.atype.btype.add d{.mask}, a{.asel}, b{.bsel}, c;
    #   vop2 = {vadd2, vsub2, vavrg2, vabsdiff2, vmin2, vmax2};  .mask = {.h0, .h1, .h10}
    #   .asel = .bsel = {.hxy, where x,y are from {0, 1, 2, 3}}
    _simd("vadd2", _SIMD2),
    _simd("vsub2", _SIMD2),
    _simd("vavrg2", _SIMD2),
    _simd("vabsdiff2", _SIMD2),
    _simd("vmin2", _SIMD2),
    _simd("vmax2", _SIMD2),
    # vset2.atype.btype.cmp d{.mask}, a{.asel}, b{.bsel}, c;
    # vset2.atype.btype.cmp.add d{.mask}, a{.asel}, b{.bsel}, c;
    Op("vset2", VIDEO, "simd-video-instructions-vset2", types=TYPES,
       groups={"cmp": VCMP, "op2": SIMD_OP2}, operands=(4, 4), since=(3, 0)),
    # vop4.dtype.atype.btype{.sat} d{.mask}, a{.asel}, b{.bsel}, c;
    # vop4.dtype.atype.btype.add d{.mask}, a{.asel}, b{.bsel}, c;
    #   vop4 = {vadd4, vsub4, vavrg4, vabsdiff4, vmin4, vmax4}
    #   .mask = {.b0, .b1, .b10, .b2, .b20, .b21, .b210, .b3, ..., .b3210}
    #   .asel = .bsel = .bxyzw, where x,y,z,w are from {0, ..., 7}
    _simd("vadd4", _SIMD4),
    _simd("vsub4", _SIMD4),
    _simd("vavrg4", _SIMD4),
    _simd("vabsdiff4", _SIMD4),
    _simd("vmin4", _SIMD4),
    _simd("vmax4", _SIMD4),
    # vset4.atype.btype.cmp d{.mask}, a{.asel}, b{.bsel}, c;
    # vset4.atype.btype.cmp.add d{.mask}, a{.asel}, b{.bsel}, c;
    Op("vset4", VIDEO, "simd-video-instructions-vset4", types=TYPES,
       groups={"cmp": VCMP, "op2": SIMD_OP2}, operands=(4, 4), since=(3, 0)),
]
