"""PTX ISA chapters on matrix instructions: warp-level (wmma, mma, ldmatrix, stmatrix,
movmatrix), warpgroup-level (wgmma) and the fifth-generation TensorCore (tcgen05).

One `Op` per opcode. `mma.sp` and `mma.sp::ordered_metadata` are opcode `mma` with group
`sp`; `wgmma.mma_async.sp` is `wgmma` with op `mma_async` and the `sp` flag; every
`tcgen05.*` sub-instruction is a value of tcgen05's `op` group, written as the lexer keeps
it (`wait::ld`, `fence::before_thread_sync`). Matrix layouts (`.row.col`) are a multi group
kept in source order: A's layout, then B's. Element types are collected in order into
`types` (d, a, b, c for mma).
"""

from __future__ import annotations

from ptxport.ptx.isa._base import Op, many, one

WARP = "warp matrix"
WARPGROUP = "warpgroup matrix"
TCGEN05 = "tensorcore gen5"

MMA_TYPES = (
    "f16", "f32", "f64", "bf16", "tf32", "e4m3", "e5m2", "e3m2", "e2m3", "e2m1",
    "s8", "u8", "s4", "u4", "b1", "s32", "ue8m0", "ue4m3",
)
MMA_SHAPES = (
    "m8n8k4", "m8n8k16", "m8n8k32", "m8n8k128",
    "m16n8k4", "m16n8k8", "m16n8k16", "m16n8k32", "m16n8k64", "m16n8k128", "m16n8k256",
)
WMMA_SHAPES = ("m16n16k16", "m8n32k16", "m32n8k16", "m16n16k8", "m8n8k4", "m8n8k32", "m8n8k128")


def _wgmma_shapes() -> tuple[str, ...]:
    """m64nNkK for every N (8..256 by 8) and K the manual allows (8, 16, 32, 64, 256)."""
    return tuple(f"m64n{n}k{k}" for k in (8, 16, 32, 64, 256) for n in range(8, 257, 8))


TCGEN05_SHAPES = (
    "16x64b", "16x128b", "16x256b", "32x32b", "16x32bx2",           # tcgen05.ld / st
    "128x256b", "4x256b", "128x128b", "64x128b", "32x128b",          # tcgen05.cp
)
TCGEN05_NUMS = ("x1", "x2", "x4", "x8", "x16", "x32", "x64", "x128")
COLLECTOR = tuple(
    f"collector::{buf}::{use}"
    for buf in ("a", "b", "b0", "b1", "b2", "b3")
    for use in ("fill", "use", "lastuse", "discard")
)

OPS: list[Op] = [
    # wmma.load.{a, b, c}.sync.aligned.layout.shape{.ss}.type r, [p]{, stride};
    # wmma.store.d.sync.aligned.layout.shape{.ss}.type [p], r{, stride};
    # wmma.mma.sync.aligned.alayout.blayout.shape.dtype.ctype d, a, b, c;            (f16)
    # wmma.mma.sync.aligned.alayout.blayout.shape.s32.atype.btype.s32{.satfinite} d, a, b, c;
    # wmma.mma.sync.aligned.alayout.blayout.shape.f32.{bf16, tf32}.{bf16, tf32}.f32 d, a, b, c;
    # wmma.mma.sync.aligned.alayout.blayout.m8n8k4{.rnd}.f64.f64.f64.f64 d, a, b, c;
    # wmma.mma.sync.aligned.row.col.m8n8k32.s32.{s4, u4}.{s4, u4}.s32{.satfinite} d, a, b, c;
    # wmma.mma.{xor, and}.popc.sync.aligned.row.col.m8n8k128.s32.b1.b1.s32 d, a, b, c;
    # .layout = { .row, .col }   .ss = { .global, .shared{::cta} }   .rnd = { .rn, .rz, .rm, .rp }
    # .shape = { .m16n16k16, .m8n32k16, .m32n8k16, .m16n16k8, .m8n8k4, .m8n8k32, .m8n8k128 }
    Op("wmma", WARP, "warp-level-matrix-instructions-wmma",
       types=("f16", "f32", "f64", "bf16", "tf32", "s8", "u8", "s4", "u4", "b1", "s32"),
       groups={
           "op": one("load", "store", "mma"),
           "frag": one("a", "b", "c", "d"),
           "sync": one("sync"),
           "aligned": one("aligned"),
           "layout": many("row", "col"),
           "shape": one(*WMMA_SHAPES),
           "space": one("global", "shared", "shared::cta"),
           "rnd": one("rn", "rz", "rm", "rp"),
           "satfinite": one("satfinite"),
           "bitop": one("xor", "and"),
           "popc": one("popc"),
       },
       operands=(2, 4), since=(6, 0)),

    # mma.sync.aligned.m8n8k4.alayout.blayout.dtype.f16.f16.ctype d, a, b, c;
    # mma.sync.aligned.{m16n8k8, m16n8k16}.row.col.dtype.f16.f16.ctype d, a, b, c;
    # mma.sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32 d, a, b, c;
    # mma.sync.aligned.m16n8k8.row.col.f32.{bf16, tf32}.{bf16, tf32}.f32 d, a, b, c;
    # mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 d, a, b, c;
    # mma.sync.aligned.{m16n8k16, m16n8k32}.row.col.dtype.{e4m3, e5m2}.{e4m3, e5m2}.ctype ...;
    # mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.dtype.f8f6f4type.f8f6f4type.ctype ...;
    # mma.sync.aligned.m16n8k64.row.col.kind::{mxf4, mxf4nvf4}.block_scale{.scale_vec::2X/4X}
    #     .f32.e2m1.e2m1.f32.{ue8m0, ue4m3} d, a, b, c, scale-a, {byte-a, thread-a}, scale-b,
    #     {byte-b, thread-b};
    # mma.sync.aligned.m16n8k32.row.col.kind::mxf8f6f4.block_scale{.scale_vec::1X}
    #     .f32.f8f6f4type.f8f6f4type.f32.ue8m0 d, a, b, c, scale-a, {..}, scale-b, {..};
    # mma.sync.aligned.{m8n8k4, m16n8k4, m16n8k8, m16n8k16}.row.col.f64.f64.f64.f64 d, a, b, c;
    # mma.sync.aligned.{m8n8k16, m16n8k16, m16n8k32}.row.col{.satfinite}.s32.{u8, s8}.{u8, s8}.s32;
    # mma.sync.aligned.{m8n8k32, m16n8k32, m16n8k64}.row.col{.satfinite}.s32.{u4, s4}.{u4, s4}.s32;
    # mma.sync.aligned.{m8n8k128, m16n8k128, m16n8k256}.row.col.s32.b1.b1.s32.{xor, and}.popc;
    # mma.{sp, sp::ordered_metadata}.sync.aligned.shape.row.col... d, a, b, c, e, f{, scales};
    #     (sparse A: metadata e and selector f; shapes m16n8k8 .. m16n8k128)
    Op("mma", WARP, "warp-level-matrix-instructions-mma",
       types=MMA_TYPES,
       groups={
           "sp": one("sp", "sp::ordered_metadata"),
           "sync": one("sync"),
           "aligned": one("aligned"),
           "shape": one(*MMA_SHAPES),
           "layout": many("row", "col"),
           "kind": one("kind::f8f6f4", "kind::mxf4", "kind::mxf4nvf4", "kind::mxf8f6f4"),
           "block_scale": one("block_scale"),
           "scale_vec": one("scale_vec::1X", "scale_vec::2X", "scale_vec::4X"),
           "satfinite": one("satfinite"),
           "bitop": one("xor", "and"),
           "popc": one("popc"),
       },
       operands=(4, 10), since=(6, 4)),

    # ldmatrix.sync.aligned.shape.num{.trans}{.ss}.type r, [p];
    # ldmatrix.sync.aligned.m8n16.num{.ss}.dst_fmt.src_fmt r, [p];
    # ldmatrix.sync.aligned.m16n16.num.trans{.ss}.dst_fmt.src_fmt r, [p];
    # ldmatrix.sync.aligned.m8n16.num{.ss}.s8.s4 r, [p];                     (PTX 9.4)
    # .shape = { .m8n8, .m16n16 }   .num = { .x1, .x2, .x4 }   .ss = { .shared{::cta} }
    # .type = { .b16, .b8 }   .dst_fmt = { .b8x16 }   .src_fmt = { .b6x16_p32, .b4x16_p64 }
    Op("ldmatrix", WARP, "warp-level-matrix-instructions-ldmatrix",
       types=("b16", "b8", "b8x16", "b6x16_p32", "b4x16_p64", "s8", "s4"),
       groups={
           "sync": one("sync"),
           "aligned": one("aligned"),
           "shape": one("m8n8", "m16n16", "m8n16"),
           "num": one("x1", "x2", "x4"),
           "trans": one("trans"),
           "space": one("shared", "shared::cta"),
       },
       operands=(2, 2), since=(6, 5)),

    # stmatrix.sync.aligned.shape.num{.trans}{.ss}.type [p], r;
    # .shape = { .m8n8, .m16n8 }   .num = { .x1, .x2, .x4 }   .type = { .b16, .b8 }
    Op("stmatrix", WARP, "warp-level-matrix-instructions-stmatrix",
       types=("b16", "b8"),
       groups={
           "sync": one("sync"),
           "aligned": one("aligned"),
           "shape": one("m8n8", "m16n8"),
           "num": one("x1", "x2", "x4"),
           "trans": one("trans"),
           "space": one("shared", "shared::cta"),
       },
       operands=(2, 2), since=(7, 8)),

    # movmatrix.sync.aligned.shape.trans.type d, a;      .shape = { .m8n8 }   .type = { .b16 }
    Op("movmatrix", WARP, "warp-level-matrix-instructions-movmatrix",
       types=("b16",),
       groups={
           "sync": one("sync"),
           "aligned": one("aligned"),
           "shape": one("m8n8"),
           "trans": one("trans"),
       },
       operands=(2, 2), since=(7, 8)),

    # wgmma.fence.sync.aligned;   wgmma.commit_group.sync.aligned;
    # wgmma.wait_group.sync.aligned N;
    # wgmma.mma_async.sync.aligned.shape.dtype.{f16, bf16}.{f16, bf16}
    #     d, a-desc | a, b-desc, scale-d, imm-scale-a, imm-scale-b{, imm-trans-a}, imm-trans-b;
    # wgmma.mma_async.sync.aligned.shape.dtype.tf32.tf32 d, a-desc | a, b-desc, scale-d, isa, isb;
    # wgmma.mma_async.sync.aligned.shape.dtype.{e4m3, e5m2}.{e4m3, e5m2} ... (as tf32)
    # wgmma.mma_async.sync.aligned.shape{.satfinite}.s32.{s8, u8}.{s8, u8}
    #     d, a-desc | a, b-desc, scale-d;
    # wgmma.mma_async.sync.aligned.shape.s32.b1.b1.and.popc d, a-desc | a, b-desc, scale-d;
    # wgmma.mma_async.sp.sync.aligned.shape... d, a-desc | a, b-desc, sp-meta, sp-sel, scale-d, ...;
    # .shape = { .m64nNk8 (tf32), .m64nNk16 (f16/bf16), .m64nNk32 (fp8, int8, sparse f16),
    #            .m64nNk64 (sparse fp8/int8), .m64nNk256 (b1) },  N = 8 .. 256
    Op("wgmma", WARPGROUP, "asynchronous-warpgroup-level-matrix-instructions",
       types=("f16", "f32", "bf16", "tf32", "e4m3", "e5m2", "s8", "u8", "s32", "b1"),
       groups={
           "op": one("fence", "commit_group", "wait_group", "mma_async"),
           "sp": one("sp"),
           "sync": one("sync"),
           "aligned": one("aligned"),
           "shape": one(*_wgmma_shapes()),
           "satfinite": one("satfinite"),
           "bitop": one("and"),
           "popc": one("popc"),
       },
       operands=(0, 11), since=(8, 0)),

    # tcgen05.alloc.cta_group.sync.aligned{.shared::cta}{.exclusive}.b32 [dst], nCols;
    # tcgen05.dealloc.cta_group.sync.aligned{.exclusive}.b32 taddr, nCols;
    # tcgen05.relinquish_alloc_permit.cta_group.sync.aligned;
    # tcgen05.ld.sync.aligned.shape.num{.pack::16b}.b32 r, [taddr]{, immHalfSplitoff};
    # tcgen05.ld.red.sync.aligned.shape.num.redOp{.abs}{.NaN}.{f32, u32, s32}
    #     r, redval, [taddr]{, immHalfSplitoff};
    # tcgen05.ld{.red}.spcompress.sync.aligned.32x32b.num.redOp.sp::2:4{.abs}{.NaN}.f32.b2
    #     mdata, r{, redval}, [taddr];                                        (PTX 9.4)
    # tcgen05.st.sync.aligned.shape.num{.unpack::16b}.b32 [taddr]{, immHalfSplitoff}, r;
    # tcgen05.wait::{ld, st}.sync.aligned;
    # tcgen05.cp.cta_group.shape{.multicast}{.dst_fmt.src_fmt} [taddr], s-desc;
    #     .multicast = { .warpx2::02_13, .warpx2::01_23, .warpx4 }
    # tcgen05.shift.cta_group.down [taddr];
    # tcgen05.mma{.sp}.cta_group.kind{.ashift}{.collector_usage}
    #     [d-tmem], a-desc | [a-tmem], b-desc{, [sp-meta]}, idesc{, disable-output-lane},
    #     enable-input-d{, scale-input-d};
    # tcgen05.mma{.sp}.cta_group.kind.block_scale{.scale_vectorsize}{.collector_usage}
    #     [d-tmem], a-desc | [a-tmem], b-desc{, [sp-meta]}, idesc, [scale-A], [scale-B],
    #     enable-input-d;
    # tcgen05.mma.cta_group.kind{.block_scale}.decompress::lut::b{...}
    #     [d-tmem], a-desc, b-desc, [lut-tmem], idesc, ..., enable-input-d;          (PTX 9.4)
    # tcgen05.mma.ws{.sp}.cta_group::1.kind{.collector_usage}
    #     [d-tmem], a-desc | [a-tmem], b-desc{, [sp-meta]}, idesc, enable-input-d{, zero-col-mask};
    # tcgen05.commit.cta_group.mbarrier::arrive::one{.shared::cluster}
    #     {.multicast::cluster{::16b, ::32b}}{.sync_restrict::shared::read::mma::a}.b64
    #     [mbar]{, ctaMask};
    # tcgen05.fence::before_thread_sync;   tcgen05.fence::after_thread_sync;
    # .kind = { .kind::f16, .kind::tf32, .kind::f8f6f4, .kind::i8, .kind::mxf8f6f4, .kind::mxf4,
    #           .kind::mxf4nvf4, .kind::ti16 }
    # .scale_vectorsize = { .scale_vec::1X, .scale_vec::2X, .scale_vec::4X, .block16, .block32 }
    # .collector_usage = { .collector::{a, b, b0, b1, b2, b3}::{fill, use, lastuse, discard} }
    Op("tcgen05", TCGEN05, "tensorcore-5th-generation-instructions",
       types=("b32", "b64", "u32", "s32", "f32"),
       groups={
           "op": one("alloc", "dealloc", "relinquish_alloc_permit", "ld", "st", "wait::ld",
                     "wait::st", "cp", "shift", "mma", "commit", "fence::before_thread_sync",
                     "fence::after_thread_sync"),
           "cta_group": one("cta_group::1", "cta_group::2"),
           "sync": one("sync"),
           "aligned": one("aligned"),
           "space": one("shared::cta", "shared::cluster"),
           "exclusive": one("exclusive"),
           "shape": one(*TCGEN05_SHAPES),
           "num": one(*TCGEN05_NUMS),
           "pack": one("pack::16b", "unpack::16b"),
           "red": one("red"),
           "spcompress": one("spcompress"),
           "spfactor": one("sp::2:4"),
           "idxsize": one("b2"),
           "redop": one("min", "max"),
           "abs": one("abs"),
           "nan": one("NaN"),
           "ws": one("ws"),
           "sp": one("sp"),
           "kind": one("kind::f16", "kind::tf32", "kind::f8f6f4", "kind::i8", "kind::mxf8f6f4",
                       "kind::mxf4", "kind::mxf4nvf4", "kind::ti16"),
           "block_scale": one("block_scale"),
           "scale_vec": one("scale_vec::1X", "scale_vec::2X", "scale_vec::4X", "block16",
                            "block32"),
           "decompress": one("decompress::lut::b"),
           "collector": many(*COLLECTOR),
           "ashift": one("ashift"),
           "multicast": one("warpx2::02_13", "warpx2::01_23", "warpx4", "multicast::cluster",
                            "multicast::cluster::16b", "multicast::cluster::32b"),
           "fmt": many("b8x16", "b6x16_p32", "b4x16_p64"),
           "dir": one("down"),
           "completion": one("mbarrier::arrive::one"),
           "sync_restrict": one("sync_restrict::shared::read::mma::a"),
       },
       operands=(0, 8), since=(8, 6)),
]
