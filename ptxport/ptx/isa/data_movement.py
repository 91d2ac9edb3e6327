"""PTX ISA chapter "Data Movement and Conversion Instructions" (through PTX ISA 9.4).

One `Op` per opcode. A sub-instruction written with dots is a modifier of its opcode:
`cp.async.bulk.tensor`, `cp.reduce.async.bulk`, `cp.async.mbarrier.arrive` and
`cp.async.wait_group` are all opcode `cp` (group `kind`); `st.async` and `st.bulk` are `st`;
`multimem.cp.async.bulk` is `multimem`; `cvt.pack` is `cvt`; `shfl.sync` is `shfl` with the
`sync` flag. Where an instruction names two state spaces (a copy's destination, then its
source) the `space` group is multi and keeps them in source order.

The comment above each entry gives the manual's syntax in its own notation, abridged to the
forms that differ in their modifiers. ldmatrix, stmatrix and movmatrix live in matrix.py.
"""

from __future__ import annotations

from ptxport.ptx.isa._base import (
    INT,
    ROUND_CVT,
    SCOPES,
    STATE_SPACES,
    Op,
    many,
    one,
)

FAMILY = "data movement and conversion"
_S = "data-movement-and-conversion-instructions-"

# Types of ld, ldu and st (PTX ISA 9.7.10.8): the scalar and b128 storage types.
LDST_TYPES = (
    "b8", "b16", "b32", "b64", "b128",
    "u8", "u16", "u32", "u64",
    "s8", "s16", "s32", "s64",
    "f32", "f64",
)
L1_EVICT = (
    "L1::evict_normal", "L1::evict_unchanged", "L1::evict_first", "L1::evict_last",
    "L1::no_allocate",
)
L2_EVICT = ("L2::evict_normal", "L2::evict_first", "L2::evict_last", "L2::evict_unchanged")
PREFETCH_SIZES = ("L2::64B", "L2::128B", "L2::256B")
# The packed narrow floating-point formats of cvt, mma and multimem (PTX ISA 5.2.5).
FP8X2 = ("e4m3x2", "e5m2x2")
FP8X4 = ("e4m3x4", "e5m2x4")
FP6X2 = ("e2m3x2", "e3m2x2")
FP6X4 = ("e2m3x4", "e3m2x4")
FP4 = ("e2m1x2", "e2m1x4")
# Completion mechanisms of the asynchronous copies (9.7.10.28.1).
COMPLETION = ("mbarrier::complete_tx::bytes", "bulk_group")
# Data-validity report mechanisms of bulk copies into shared memory (9.7.10.28.1.3, PTX 9.4).
REPORT = (
    "mbarrier::report::disabled",
    "mbarrier::report::validity::per_16bytes::80000000",
    "mbarrier::report::validity::per_16bytes::8000",
    "mbarrier::report::validity::per_16bytes::80",
    "mbarrier::report::validity::per_16bytes::8",
    "mbarrier::report::validity::per_element::ff",
)
TENSOR_DIMS = ("1d", "2d", "3d", "4d", "5d")
LOAD_MODES = (
    "tile", "tile::gather4", "tile::scatter4", "im2col", "im2col::w", "im2col::w::128",
    "im2col_no_offs", "im2col_no_offs::w",
)
MULTICAST = ("multicast::cluster", "multicast::cluster::16b", "multicast::cluster::32b")
REDUCTIONS = ("and", "or", "xor", "add", "inc", "dec", "min", "max")

OPS: list[Op] = [
    # mov.type d, a;   mov.type d, sreg;   mov.type d, avar{+imm};   mov.u64 d, fname;
    # mov.b32 d, {a, b};   mov.b64 {lo, hi}, a;   (pack/unpack: "mov-2")
    # .type = { .pred, .b16, .b32, .b64, .b128, .u16, .u32, .u64, .s16, .s32, .s64, .f32, .f64 }
    Op("mov", FAMILY, _S + "mov",
       types=("pred", "b16", "b32", "b64", "b128", "u16", "u32", "u64", "s16", "s32", "s64",
              "f32", "f64"),
       operands=(2, 2)),

    # shfl.mode.b32 d{|p}, a, b, c;                       (deprecated; sm_6x and older)
    # shfl.sync.mode.b32 d{|p}, a, b, c, membermask;
    # .mode = { .up, .down, .bfly, .idx }
    Op("shfl", FAMILY, _S + "shfl-sync",
       types=("b32",),
       groups={"mode": one("up", "down", "bfly", "idx"), "sync": one("sync")},
       operands=(4, 5), since=(3, 0)),

    # prmt.b32{.mode} d, a, b, c;
    # .mode = { .f4e, .b4e, .rc8, .ecl, .ecr, .rc16 }
    Op("prmt", FAMILY, _S + "prmt",
       types=("b32",),
       groups={"mode": one("f4e", "b4e", "rc8", "ecl", "ecr", "rc16")},
       operands=(4, 4), since=(2, 0)),

    # ld{.weak}{.ss}{.cop}{.level::cache_hint}{.level::prefetch_size}{.vec}.type
    #     d, [a]{.unified}{, cache-policy};
    # ld{.weak}{.ss}{.L1::evict_*}{.L2::evict_*}{.level::cache_hint}{.level::prefetch_size}
    #     {.vec}.type d, [a]{.unified}{, cache-policy};
    # ld.volatile{.ss}{.level::prefetch_size}{.vec}.type d, [a];
    # ld.relaxed.scope{.ss}{...}{.vec}.type d, [a]{, cache-policy};   (also .acquire.scope)
    # ld.mmio.sem.sys{.global}.type d, [a];      .sem = { .acquire, .relaxed }
    # ld.proxy::readonly{.ss}.type d, [a];
    # ld.global{.cop}.nc{.level::cache_hint}{.level::prefetch_size}{.vec}.type
    #     d, [a]{, cache-policy};
    # ld.global.nc{.L1::evict_*}{.L2::evict_*}{.level::cache_hint}{.level::prefetch_size}
    #     {.vec}.type d, [a]{, cache-policy};
    # .cop = { .ca, .cg, .cs, .lu, .cv }   .vec = { .v2, .v4, .v8 }
    Op("ld", FAMILY, _S + "ld",
       types=LDST_TYPES,
       groups={
           "sem": one("weak", "volatile", "relaxed", "acquire"),
           "mmio": one("mmio"),
           "scope": one(*SCOPES),
           "space": one(*STATE_SPACES),
           "cache": one("ca", "cg", "cs", "lu", "cv"),
           "evict": many(*L1_EVICT, *L2_EVICT[:3]),
           "l2hint": one("L2::cache_hint"),
           "prefetch_size": one(*PREFETCH_SIZES),
           "vec": one("v2", "v4", "v8"),
           "nc": one("nc"),
           "proxy": one("proxy::readonly"),
       },
       operands=(2, 3)),

    # ldu{.ss}{.vec}.type d, [a];    .ss = { .global }   .vec = { .v2, .v4 }
    Op("ldu", FAMILY, _S + "ldu",
       types=LDST_TYPES,
       groups={"space": one("global"), "vec": one("v2", "v4")},
       operands=(2, 2), since=(2, 0)),

    # st{.weak}{.ss}{.cop}{.level::cache_hint}{.vec}.type [a], b{, cache-policy};
    # st{.weak}{.ss}{.L1::evict_*}{.L2::evict_*}{.level::cache_hint}{.vec}.type
    #     [a], b{, cache-policy};
    # st.volatile{.ss}{.vec}.type [a], b;
    # st.relaxed.scope{.ss}{...}{.vec}.type [a], b{, cache-policy};   (also .release.scope)
    # st.mmio.relaxed.sys{.global}.type [a], b;
    # st.async{.weak}{.shared::cluster}.mbarrier::complete_tx::bytes{.vec}.type [a], b, [mbar];
    # st.async{.mmio}.release.scope{.global}.type [a], b;       .scope = { .gpu, .sys }
    # st.bulk{.weak}{.shared::cta} [a], size, initval;          (initval must be 0)
    # .cop = { .wb, .cg, .cs, .wt }   .vec = { .v2, .v4, .v8 }
    Op("st", FAMILY, _S + "st",
       types=LDST_TYPES,
       groups={
           "kind": one("async", "bulk"),
           "sem": one("weak", "volatile", "relaxed", "release"),
           "mmio": one("mmio"),
           "scope": one(*SCOPES),
           "space": one("global", "local", "param", "param::func", "shared", "shared::cta",
                        "shared::cluster"),
           "cache": one("wb", "cg", "cs", "wt"),
           "evict": many(*L1_EVICT, *L2_EVICT[:3]),
           "l2hint": one("L2::cache_hint"),
           "vec": one("v2", "v4", "v8"),
           "completion": one("mbarrier::complete_tx::bytes"),
       },
       operands=(2, 3)),

    # multimem.ld_reduce{.ldsem}{.scope}{.ss}.op{.acc_prec}{.vec}.type d, [a];
    # multimem.st{.stsem}{.scope}{.ss}{.vec}.type [a], b;
    # multimem.red{.redsem}{.scope}{.ss}.op{.vec}.type [a], b;
    # multimem.st.async.release.scope{.global}.type [a], b;             (PTX 9.3)
    # multimem.red.async.release.scope{.global}.op.type [a], b;         (PTX 9.3, sync chapter)
    # multimem.cp.async.bulk{.sem.scope}.global.shared::cta.bulk_group{.cp_mask}{.b128}
    #     [dst], [src], size{, byteMask};
    # multimem.cp.reduce.async.bulk{.sem.scope}.global.shared::cta.bulk_group.redOp{.noftz}.type
    #     [dst], [src], size;
    # .acc_prec = { .acc::f32, .acc::f16 }   .op = { .min, .max, .add, .and, .or, .xor }
    Op("multimem", FAMILY, _S + "multimem",
       types=("b8", "b16", "b32", "b64", "b128", "u8", "u16", "u32", "u64",
              "s8", "s16", "s32", "s64", "f16", "f16x2", "bf16", "bf16x2", "f32", "f64",
              "e5m2", "e4m3") + FP8X2 + FP8X4,
       groups={
           "kind": many("ld_reduce", "st", "red", "cp", "reduce", "async", "bulk"),
           "sem": one("weak", "relaxed", "acquire", "release"),
           "scope": one(*SCOPES),
           "space": many("global", "shared::cta"),
           "op": one(*REDUCTIONS),
           "noftz": one("noftz"),
           "acc": one("acc::f32", "acc::f16"),
           "vec": one("v2", "v4", "v8"),
           "completion": one("bulk_group"),
           "cp_mask": one("cp_mask"),
       },
       operands=(2, 4), since=(8, 1)),

    # prefetch{.space}.level [a];            .space = { .global, .local }   .level = { .L1, .L2 }
    # prefetch.global.level::eviction_priority [a];   = { .L2::evict_last, .L2::evict_normal }
    # prefetch{.const, .param}.tensormap [a];
    # prefetch{.global}{.L2}.L1::32B.valid_addr [a];                    (PTX 9.4)
    Op("prefetch", FAMILY, _S + "prefetch-prefetchu",
       groups={
           "space": one("global", "local", "const", "param"),
           "level": many("L1", "L2", "L1::32B"),
           "evict": one("L2::evict_last", "L2::evict_normal"),
           "tensormap": one("tensormap"),
           "valid_addr": one("valid_addr"),
       },
       operands=(1, 1), since=(2, 0)),

    # prefetchu.L1 [a];
    Op("prefetchu", FAMILY, _S + "prefetch-prefetchu",
       groups={"level": one("L1")},
       operands=(1, 1), since=(2, 0)),

    # applypriority{.global}.level::eviction_priority [a], size;    = { .L2::evict_normal }
    # applypriority.async.bulk{.global}.bulk_group.L2::evict_normal [a], size;      (PTX 9.4)
    # applypriority.async.bulk.tensor.dim{.global}.bulk_group{.load_mode}.L2::evict_normal
    #     {.override::global_address}{.override_attribute}
    #     [tensorMap, ..., tensorCoords]{, im2colInfo};
    Op("applypriority", FAMILY, _S + "applypriority",
       groups={
           "kind": many("async", "bulk", "tensor"),
           "space": one("global"),
           "evict": one("L2::evict_normal"),
           "completion": one("bulk_group"),
           "dim": one(*TENSOR_DIMS),
           "load_mode": one("tile", "tile::gather4", "im2col", "im2col::w", "im2col::w::128"),
           "override": one("override::global_address"),
           "override_attribute": one("override::global_dim", "override::global_dim_stride"),
       },
       operands=(1, 2), since=(7, 4)),

    # discard{.global}.level [a], size;      .level = { .L2 }
    Op("discard", FAMILY, _S + "discard",
       groups={"space": one("global"), "level": one("L2")},
       operands=(2, 2), since=(7, 4)),

    # createpolicy.range{.global}.level::primary_priority{.level::secondary_priority}.b64
    #     cache-policy, [a], primary-size, total-size;
    # createpolicy.fractional.level::primary_priority{.level::secondary_priority}.b64
    #     cache-policy{, fraction};
    # createpolicy.cvt.L2.b64 cache-policy, access-property;
    # primary = { .L2::evict_last, .L2::evict_normal, .L2::evict_first, .L2::evict_unchanged }
    # secondary = { .L2::evict_first, .L2::evict_unchanged }   (`evict` keeps both, in order)
    Op("createpolicy", FAMILY, _S + "createpolicy",
       types=("b64",),
       groups={
           "kind": one("range", "fractional", "cvt"),
           "space": one("global"),
           "evict": many(*L2_EVICT[:3], "L2::evict_unchanged"),
           "level": one("L2"),
       },
       operands=(1, 4), since=(7, 4)),

    # isspacep.space p, a;
    # .space = { .const, .global, .local, .shared{::cta, ::cluster}, .param{::entry} }
    Op("isspacep", FAMILY, _S + "isspacep",
       groups={"space": one("const", "global", "local", "shared", "shared::cta",
                            "shared::cluster", "param", "param::entry")},
       operands=(2, 2), since=(2, 0)),

    # cvta.space.size p, a;      cvta.space.size p, var{+imm};
    # cvta.to.space.size p, a;
    # .space = { .const, .global, .local, .shared{::cta, ::cluster}, .param{::entry} }
    # .size = { .u32, .u64 }
    Op("cvta", FAMILY, _S + "cvta",
       types=("u32", "u64"),
       groups={
           "to": one("to"),
           "space": one("const", "global", "local", "shared", "shared::cta",
                        "shared::cluster", "param", "param::entry"),
       },
       operands=(2, 2), since=(2, 0)),

    # cvt{.irnd}{.ftz}{.sat}.dtype.atype d, a;          cvt{.frnd}{.ftz}{.sat}.dtype.atype d, a;
    # cvt.frnd2{.relu}{.satfinite}{.pzo}.{f16, bf16}.f32 d, a;
    # cvt.frnd2{.relu}{.satfinite}{.pzo}.{f16x2, bf16x2}.f32 d, a, b;
    # cvt.rs{.relu}{.satfinite}{.pzo}.{f16x2, bf16x2}.f32 d, a, b, rbits;
    # cvt.rna{.satfinite}.tf32.f32 d, a;     cvt.frnd2{.satfinite}{.relu}{.pzo}.tf32.f32 d, a;
    # cvt.frnd2.satfinite{.relu}{.pzo}{.scaled::n1::ue8m0}.{f8x2, f6x2, f4x2}type.f32
    #     d, a, b{, scale};
    # cvt.frnd2.satfinite{.relu}{.pzo}{.scaled::n1::ue8m0}.{f8x2, f6x2, f4x2}type.{f16x2, bf16x2}
    #     d, a{, scale};
    # cvt.rn{.relu}.f16x2.{f8x2, f6x2, f4x2}type d, a;
    # cvt.rn{.relu}{.satfinite}{.scaled::n2::ue8m0}.bf16x2.{f8x2, f6x2, f4x2}type d, a{, scale};
    # cvt.rs{.relu}.satfinite{.pzo}.{f8x4, f6x4, f4x4}type.f32 d, {a, b, e, f}, rbits;
    # cvt.frnd3{.satfinite}.ue8m0x2.{f32, bf16x2} d, a{, b};    cvt.rn.bf16x2.ue8m0x2 d, a;
    # cvt.frnd2.satfinite{.relu}{.scaled::n2::ue8m0}.s2f6x2.{f32, bf16x2} d, a{, b}{, scale};
    # cvt.frnd4{.satfinite}{.scaled::n1::ue8m0}.ue5m3x2.{f32, f16x2, bf16x2} d, a{, b}{, scale};
    # cvt.rn{.satfinite}{.scaled::n2::ue8m0}.{f16x2, bf16x2}.ue5m3x2 d, a{, scale};
    # cvt.pack.sat.convertType.s32{.b32} d, a, b{, c};
    #     convertType = { .u16, .s16, .u8, .s8, .u4, .s4, .u2, .s2 }
    # .irnd = { .rni, .rzi, .rmi, .rpi }   .frnd = { .rn, .rz, .rm, .rp }   (.rna, .rs as above)
    Op("cvt", FAMILY, _S + "cvt",
       types=INT + ("bf16", "f16", "f32", "f64", "f16x2", "bf16x2", "tf32", "ue8m0x2",
                    "s2f6x2", "ue5m3x2", "u4", "s4", "u2", "s2", "b32")
       + FP8X2 + FP8X4 + FP6X2 + FP6X4 + FP4,
       groups={
           "rnd": one(*ROUND_CVT),
           "ftz": one("ftz"),
           "sat": one("sat"),
           "relu": one("relu"),
           "satfinite": one("satfinite"),
           "pzo": one("pzo"),
           "scaled": one("scaled::n1::ue8m0", "scaled::n2::ue8m0"),
           "pack": one("pack"),
       },
       operands=(2, 4)),

    # mapa{.space}.type d, a, b;        .space = { .shared::cluster }   .type = { .u32, .u64 }
    Op("mapa", FAMILY, _S + "mapa",
       types=("u32", "u64"),
       groups={"space": one("shared::cluster")},
       operands=(3, 3), since=(7, 8)),

    # getctarank{.space}.type d, a;     .space = { .shared::cluster }   .type = { .u32, .u64 }
    Op("getctarank", FAMILY, _S + "getctarank",
       types=("u32", "u64"),
       groups={"space": one("shared::cluster")},
       operands=(2, 2), since=(7, 8)),

    # cp.async.{ca, cg}.shared{::cta}.global{.level::cache_hint}{.level::prefetch_size}
    #     [dst], [src], cp-size{, src-size | ignore-src}{, cache-policy};
    # cp.async.commit_group;   cp.async.wait_group N;   cp.async.wait_all;
    # cp.async.mbarrier.arrive{.noinc}{.shared{::cta}}.b64 [addr];
    # cp.async.bulk{.sem.scope}.dst.src.completion_mechanism{.report_mechanism}{.multicast}
    #     {.level::cache_hint}{.ignore_oob}{.cp_mask}{.b128} [dstMem], [srcMem], size
    #     {, ignoreBytesLeft, ignoreBytesRight}{, [mbar]}{, ctaMask}{, cache-policy}{, byteMask};
    # cp.reduce.async.bulk{.sem.scope}.dst.src.completion_mechanism{.level::cache_hint}
    #     .redOp{.noftz}.type [dstMem], [srcMem], size{, [mbar]}{, cache-policy};
    # cp.async.bulk.prefetch.L2.global{.L2::cache_hint | .L2::evict_last}
    #     [srcMem], size{, cache-policy};
    # cp.async.bulk.tensor.dim.dst.src{.load_mode}.completion_mechanism{.report_mechanism}
    #     {.multicast}{.cta_group}{.level::cache_hint}{.override::global_address}
    #     {.override_attribute} [dstMem], [tensorMap{, gAddr}{, overrideInfo}, tensorCoords],
    #     [mbar]{, im2colInfo}{, ctaMask}{, cache-policy};
    # cp.async.bulk.tensor.dim.global.shared::cta{.load_mode}.bulk_group{...}
    #     [tensorMap, tensorCoords], [srcMem]{, cache-policy};
    # cp.reduce.async.bulk.tensor.dim.global.shared::cta.redOp{.load_mode}.bulk_group{...}
    #     [tensorMap, tensorCoords], [srcMem]{, cache-policy};
    # cp.async.bulk.prefetch.tensor.dim.L2.global{.load_mode}{.L2::cache_hint | .L2::evict_last}
    #     {...} [tensorMap, tensorCoords]{, im2colInfo}{, cache-policy};
    # cp.async.bulk.commit_group;   cp.async.bulk.wait_group{.read} N;
    # .dst, .src = { .global, .shared::cta, .shared::cluster }   .dim = { .1d .. .5d }
    Op("cp", FAMILY, _S + "asynchronous-copy",
       types=("b32", "u32", "s32", "b64", "u64", "s64", "f16", "bf16", "f32", "f64", "b128"),
       groups={
           "kind": many("reduce", "async", "bulk", "tensor", "prefetch", "commit_group",
                        "wait_group", "wait_all", "mbarrier", "arrive"),
           "cache": one("ca", "cg"),
           "sem": one("weak", "relaxed"),
           "scope": one(*SCOPES),
           "space": many("global", "shared", "shared::cta", "shared::cluster"),
           "level": one("L2"),
           "dim": one(*TENSOR_DIMS),
           "load_mode": one(*LOAD_MODES),
           "completion": one(*COMPLETION),
           "report": one(*REPORT),
           "multicast": one(*MULTICAST),
           "cta_group": one("cta_group::1", "cta_group::2"),
           "l2hint": one("L2::cache_hint"),
           "prefetch_size": one(*PREFETCH_SIZES),
           "evict": one("L2::evict_last"),
           "op": one(*REDUCTIONS),
           "noftz": one("noftz"),
           "ignore_oob": one("ignore_oob"),
           "cp_mask": one("cp_mask"),
           "override": one("override::global_address"),
           "override_attribute": one("override::global_dim", "override::global_dim_stride"),
           "noinc": one("noinc"),
           "read": one("read"),
       },
       operands=(0, 7), since=(7, 0)),

    # tensormap.replace.mode.field1{.ss}.b1024.type [addr], new_val;
    # tensormap.replace.mode.field2{.ss}.b1024.type [addr], ord, new_val;
    # tensormap.replace.mode.field3{.ss}.b1024.type [addr], new_val;
    # tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.scope.sync.aligned
    #     [dst], [src], size;
    # .mode = { .tile }   .ss = { .global, .shared::cta }   .type = { .b32, .b64 }
    # .field1 = { .global_address, .rank }
    # .field2 = { .box_dim, .global_dim, .global_stride, .element_stride }
    # .field3 = { .elemtype, .interleave_layout, .swizzle_mode, .swizzle_atomicity, .fill_mode }
    Op("tensormap", FAMILY, _S + "tensormap-replace",
       types=("b1024", "b32", "b64"),
       groups={
           "op": one("replace", "cp_fenceproxy"),
           "mode": one("tile"),
           "field": one("global_address", "rank", "box_dim", "global_dim", "global_stride",
                        "element_stride", "elemtype", "interleave_layout", "swizzle_mode",
                        "swizzle_atomicity", "fill_mode"),
           "space": many("global", "shared::cta"),
           "proxy": one("tensormap::generic"),
           "sem": one("release"),
           "scope": one(*SCOPES),
           "sync": one("sync"),
           "aligned": one("aligned"),
       },
       operands=(2, 3), since=(8, 3)),

    # spcompress.elemsize.idxsize.spfactor.num mdata, cdata, data, spdesc;
    # .elemsize = { .b8, .b16 }   .idxsize = { .b2, .b4 }   .spfactor = { .sp::2:4 }
    # .num = { .x1, .x2, .x4, .x8, .x16, .x32, .x64 }
    Op("spcompress", FAMILY, _S + "spcompress",
       types=("b8", "b16"),
       groups={
           "idxsize": one("b2", "b4"),
           "spfactor": one("sp::2:4"),
           "num": one("x1", "x2", "x4", "x8", "x16", "x32", "x64"),
       },
       operands=(4, 4), since=(9, 4)),

    # spdecompress.elemsize.idxsize.spfactor.num data, mdata, cdata;
    # .spfactor = { .sp::1:2, .sp::1:4, .sp::1:8, .sp::1:16, .sp::2:4, .sp::2:8, .sp::2:16,
    #               .sp::4:8, .sp::4:16 }
    Op("spdecompress", FAMILY, _S + "spdecompress",
       types=("b8", "b16"),
       groups={
           "idxsize": one("b2", "b4"),
           "spfactor": one("sp::1:2", "sp::1:4", "sp::1:8", "sp::1:16", "sp::2:4", "sp::2:8",
                           "sp::2:16", "sp::4:8", "sp::4:16"),
           "num": one("x1", "x2", "x4", "x8", "x16", "x32", "x64"),
       },
       operands=(3, 3), since=(9, 4)),
]
