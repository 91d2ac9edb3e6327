"""PTX ISA chapters "Texture Instructions" and "Surface Instructions".

One `Op` per opcode. Texture and surface references are operands: `[tex, {x, y}]`,
`[tex, sampler, {x, y}]` and `[surf, {x}]` are each one bracketed operand. The texture
geometry is group `geom`; the surface's out-of-bounds handling (.trap/.clamp/.zero) is
group `clamp`; `.b`/`.p` (byte or sample addressing of a surface) is group `addressing`.
"""

from __future__ import annotations

from ptxport.ptx.isa._base import Op, one

TEXTURE = "texture"
SURFACE = "surface"

TEX_GEOMETRIES = ("1d", "2d", "3d", "a1d", "a2d", "cube", "acube", "2dms", "a2dms")
SURFACE_TYPES = ("b8", "b16", "b32", "b64")
CLAMP = ("trap", "clamp", "zero")

OPS: list[Op] = [
    # tex.geom.v4.dtype.ctype d{|p}, [a, c]{, e}{, f};
    # tex.geom.v4.dtype.ctype d{|p}, [a, b, c]{, e}{, f};                   (explicit sampler)
    # tex.geom.v2.f16x2.ctype d{|p}, [a, {b,} c]{, e}{, f};
    # tex.base.geom.v4.dtype.ctype d{|p}, [a, {b,} c]{, e}{, f};             (mipmaps)
    # tex.level.geom.v4.dtype.ctype d{|p}, [a, {b,} c], lod{, e}{, f};
    # tex.grad.geom.v4.dtype.ctype d{|p}, [a, {b,} c], dPdx, dPdy{, e}{, f};
    # .geom = { .1d, .2d, .3d, .a1d, .a2d, .cube, .acube, .2dms, .a2dms }
    # .dtype = { .u32, .s32, .f16, .f32 }   .ctype = { .s32, .f32 }
    Op("tex", TEXTURE, "texture-instructions-tex",
       types=("u32", "s32", "f16", "f32", "f16x2"),
       groups={
           "mip": one("base", "level", "grad"),
           "geom": one(*TEX_GEOMETRIES),
           "vec": one("v2", "v4"),
       },
       operands=(2, 6)),

    # tld4.comp.2d.v4.dtype.f32 d{|p}, [a, c]{, e}{, f};
    # tld4.comp.geom.v4.dtype.f32 d{|p}, [a, b, c]{, e}{, f};               (explicit sampler)
    # .comp = { .r, .g, .b, .a }   .geom = { .2d, .a2d, .cube, .acube }
    # .dtype = { .u32, .s32, .f32 }
    Op("tld4", TEXTURE, "texture-instructions-tld4",
       types=("u32", "s32", "f32"),
       groups={
           "comp": one("r", "g", "b", "a"),
           "geom": one("2d", "a2d", "cube", "acube"),
           "vec": one("v4"),
       },
       operands=(2, 4), since=(2, 2)),

    # txq.tquery.b32 d, [a];          txq.level.tlquery.b32 d, [a], lod;
    # txq.squery.b32 d, [a];
    # .tquery = { .width, .height, .depth, .channel_data_type, .channel_order,
    #             .normalized_coords, .array_size, .num_mipmap_levels, .num_samples }
    # .tlquery = { .width, .height, .depth }
    # .squery = { .force_unnormalized_coords, .filter_mode, .addr_mode_0, .addr_mode_1,
    #             .addr_mode_2 }
    Op("txq", TEXTURE, "texture-instructions-txq",
       types=("b32",),
       groups={
           "mip": one("level"),
           "query": one("width", "height", "depth", "channel_data_type", "channel_order",
                        "normalized_coords", "array_size", "num_mipmap_levels", "num_samples",
                        "force_unnormalized_coords", "filter_mode", "addr_mode_0",
                        "addr_mode_1", "addr_mode_2"),
       },
       operands=(2, 3), since=(1, 5)),

    # istypep.type p, a;       .type = { .texref, .samplerref, .surfref }
    Op("istypep", TEXTURE, "texture-instructions-istypep",
       types=("texref", "samplerref", "surfref"),
       operands=(2, 2), since=(4, 0)),

    # suld.b.geom{.cop}.vec.dtype.clamp d, [a, b];
    # .geom = { .1d, .2d, .3d, .a1d, .a2d }   .cop = { .ca, .cg, .cs, .cv }
    # .vec = { none, .v2, .v4 }   .dtype = { .b8, .b16, .b32, .b64 }
    # .clamp = { .trap, .clamp, .zero }
    Op("suld", SURFACE, "surface-instructions-suld",
       types=SURFACE_TYPES,
       groups={
           "addressing": one("b"),
           "geom": one("1d", "2d", "3d", "a1d", "a2d"),
           "cache": one("ca", "cg", "cs", "cv"),
           "vec": one("v2", "v4"),
           "clamp": one(*CLAMP),
       },
       operands=(2, 2), since=(1, 5)),

    # sust.b.{1d, 2d, 3d}{.cop}.vec.ctype.clamp [a, b], c;        (unformatted)
    # sust.p.{1d, 2d, 3d}.vec.b32.clamp [a, b], c;                 (formatted)
    # sust.b.{a1d, a2d}{.cop}.vec.ctype.clamp [a, b], c;
    # .cop = { .wb, .cg, .cs, .wt }   .vec = { none, .v2, .v4 }   .ctype = { .b8 .. .b64 }
    Op("sust", SURFACE, "surface-instructions-sust",
       types=SURFACE_TYPES,
       groups={
           "addressing": one("b", "p"),
           "geom": one("1d", "2d", "3d", "a1d", "a2d"),
           "cache": one("wb", "cg", "cs", "wt"),
           "vec": one("v2", "v4"),
           "clamp": one(*CLAMP),
       },
       operands=(2, 2), since=(1, 5)),

    # sured.b.op.geom.ctype.clamp [a, b], c;       (byte addressing)
    # sured.p.op.geom.ctype.clamp [a, b], c;       (sample addressing)
    # .op = { .add, .min, .max, .and, .or }   .geom = { .1d, .2d, .3d }
    # .ctype = { .u32, .u64, .s32, .b32, .s64 } for .b;  { .b32, .b64 } for .p
    Op("sured", SURFACE, "surface-instructions-sured",
       types=("u32", "u64", "s32", "s64", "b32", "b64"),
       groups={
           "addressing": one("b", "p"),
           "op": one("add", "min", "max", "and", "or"),
           "geom": one("1d", "2d", "3d"),
           "clamp": one(*CLAMP),
       },
       operands=(2, 2), since=(1, 5)),

    # suq.query.b32 d, [a];
    # .query = { .width, .height, .depth, .channel_data_type, .channel_order, .array_size,
    #            .memory_layout }
    Op("suq", SURFACE, "surface-instructions-suq",
       types=("b32",),
       groups={"query": one("width", "height", "depth", "channel_data_type", "channel_order",
                            "array_size", "memory_layout")},
       operands=(2, 2), since=(1, 5)),
]
