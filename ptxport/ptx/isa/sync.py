"""PTX ISA chapter "Parallel Synchronization and Communication Instructions" (through 9.4).

One `Op` per opcode. `bar.warp.sync` is opcode `bar` with the `warp` flag and op `sync`;
`barrier.cluster.arrive` is opcode `barrier` with scope `cluster` and op `arrive`;
`red.async` is `red` with the `async` flag; `vote.sync`, `match.sync`, `redux.sync` and
`elect.sync` carry the `sync` flag. mbarrier's `op` is a multi group because the manual
combines sub-operations: `mbarrier.arrive.expect_tx` has op ("arrive", "expect_tx").
`cp.async.mbarrier.arrive` (opcode `cp`), `tensormap.cp_fenceproxy` (opcode `tensormap`)
and `multimem.red.async` (opcode `multimem`) are documented in this chapter but live with
their opcodes in data_movement.py.
"""

from __future__ import annotations

from ptxport.ptx.isa._base import SCOPES, Op, many, one

FAMILY = "parallel synchronization and communication"
_S = "parallel-synchronization-and-communication-instructions-"

ATOMIC_SPACES = ("global", "shared", "shared::cta", "shared::cluster")
ATOMIC_TYPES = (
    "b16", "b32", "b64", "b128", "u32", "u64", "s32", "s64",
    "f16", "f16x2", "bf16", "bf16x2", "f32", "f64",
)
ATOMIC_OPS = ("and", "or", "xor", "add", "inc", "dec", "min", "max")

OPS: list[Op] = [
    # bar{.cta}.sync a{, b};          bar{.cta}.arrive a, b;
    # bar{.cta}.red.popc.u32 d, a{, b}, {!}c;      bar{.cta}.red.op.pred p, a{, b}, {!}c;
    # bar.warp.sync membermask;
    # .op = { .and, .or }
    Op("bar", FAMILY, _S + "bar",
       types=("u32", "pred"),
       groups={
           "op": one("sync", "arrive", "red"),
           "scope": one("cta"),
           "warp": one("warp"),
           "redop": one("popc", "and", "or"),
       },
       operands=(1, 4)),

    # barrier{.cta}.sync{.aligned} a{, b};      barrier{.cta}.arrive{.aligned} a, b;
    # barrier{.cta}.red.popc{.aligned}.u32 d, a{, b}, {!}c;
    # barrier{.cta}.red.op{.aligned}.pred p, a{, b}, {!}c;
    # barrier.cluster.arrive{.sem}{.aligned};   .sem = { .release, .relaxed }
    # barrier.cluster.wait{.acquire}{.aligned};
    Op("barrier", FAMILY, _S + "bar",
       types=("u32", "pred"),
       groups={
           "op": one("sync", "arrive", "red", "wait"),
           "scope": one("cta", "cluster"),
           "aligned": one("aligned"),
           "sem": one("release", "relaxed", "acquire"),
           "redop": one("popc", "and", "or"),
       },
       operands=(0, 4), since=(6, 0)),

    # membar.level;          .level = { .cta, .gl, .sys }
    # membar.proxy.proxykind;      .proxykind = { .alias, .async, .async.global,
    #                                             .async.shared::{cta, cluster} }
    Op("membar", FAMILY, _S + "membar",
       groups={
           "scope": one("cta", "gl", "sys"),
           "kind": one("proxy"),
           "proxy": one("alias", "async"),
           "space": one("global", "shared::cta", "shared::cluster"),
       },
       operands=(0, 0), since=(1, 4)),

    # fence{.sem}.scope;     .sem = { .sc, .acq_rel, .acquire, .release }
    # fence.acquire.sync_restrict::shared::cluster.cluster;
    # fence.release.sync_restrict::shared::cta.cluster;
    # fence.op_restrict.release.cluster;          .op_restrict = { .mbarrier_init }
    # fence.proxy.proxykind;       (bi-directional; .alias, .async{.global, .shared::{cta,cluster}})
    # fence.proxy.tensormap::generic.release.scope;
    # fence.proxy.tensormap::generic.acquire.scope [addr], size;
    # fence.proxy.async::generic.acquire.sync_restrict::shared::cluster.cluster;
    # fence.proxy.async::generic.release.sync_restrict::shared::cta.cluster;
    # fence.proxy.{generic::fabric, fabric::generic, fabric::fabric}.alias.{acquire, release}.sys;
    # The to::from proxy pair is group `proxy_dir`; `proxy` holds the proxy kind.
    Op("fence", FAMILY, _S + "membar",
       groups={
           "sem": one("sc", "acq_rel", "acquire", "release"),
           "scope": one(*SCOPES),
           "kind": one("proxy"),
           "op_restrict": one("mbarrier_init"),
           "proxy": one("alias", "async"),
           "proxy_dir": one("async::generic", "tensormap::generic", "generic::fabric",
                            "fabric::generic", "fabric::fabric"),
           "space": one("global", "shared::cta", "shared::cluster"),
           "sync_restrict": one("sync_restrict::shared::cta", "sync_restrict::shared::cluster"),
       },
       operands=(0, 2), since=(6, 0)),

    # atom{.sem}{.scope}{.space}.op{.level::cache_hint}.type d, [a], b{, cache-policy};
    # atom{.sem}{.scope}{.space}.cas.type d, [a], b, c;       (.b16 .b32 .b64 .b128)
    # atom{.sem}{.scope}{.space}.exch{.level::cache_hint}.type d, [a], b{, cache-policy};
    # atom{.sem}{.scope}{.space}.add.noftz{.level::cache_hint}.type d, [a], b{, cache-policy};
    #     (.f16 .f16x2 .bf16 .bf16x2 .f32)
    # atom{.sem}{.scope}{.global}.add{.noftz}{.level::cache_hint}.{v2, v4}.f32 d, [a], b{, cp};
    # atom{.sem}{.scope}{.global}.op.noftz{.level::cache_hint}.{v2, v4, v8}.{f16, bf16} ...;
    # atom{.sem}{.scope}{.global}.op.noftz{.level::cache_hint}.{v2, v4}.{f16x2, bf16x2} ...;
    # .sem = { .relaxed, .acquire, .release, .acq_rel }
    # .space = { .global, .shared{::cta, ::cluster} }
    # .op = { .and, .or, .xor, .add, .inc, .dec, .min, .max } (plus .cas, .exch)
    Op("atom", FAMILY, _S + "atom",
       types=ATOMIC_TYPES,
       groups={
           "sem": one("relaxed", "acquire", "release", "acq_rel"),
           "scope": one(*SCOPES),
           "space": one(*ATOMIC_SPACES),
           "op": one(*ATOMIC_OPS, "cas", "exch"),
           "noftz": one("noftz"),
           "l2hint": one("L2::cache_hint"),
           "vec": one("v2", "v4", "v8"),
       },
       operands=(3, 4), since=(1, 1)),

    # red{.sem}{.scope}{.space}.op{.level::cache_hint}.type [a], b{, cache-policy};
    # red{.sem}{.scope}{.space}.add.noftz{.level::cache_hint}.{f16, f16x2, bf16, bf16x2, f32} ...;
    # red{.sem}{.scope}{.global}.add{.noftz}{.level::cache_hint}.{v2, v4}.f32 [a], b{, cp};
    # red{.sem}{.scope}{.global}.op.noftz{.level::cache_hint}.vec.{f16, bf16, f16x2, bf16x2} ...;
    # red.async.relaxed.cluster{.shared::cluster}.mbarrier::complete_tx::bytes.op.type
    #     [a], b, [mbar];        (.inc/.dec .u32; .min/.max .u32/.s32; .and/.or/.xor .b32;
    #                              .add .u32/.s32/.u64)
    # red.async{.mmio}.release.scope{.global}.add.{u32, s32, u64, s64} [a], b;
    #     (ptxas 13.5 takes .scope = { .gpu, .sys }; .mmio requires .sys)
    # .sem = { .relaxed, .release }
    Op("red", FAMILY, _S + "red",
       types=ATOMIC_TYPES,
       groups={
           "async": one("async"),
           "sem": one("relaxed", "release"),
           "mmio": one("mmio"),
           "scope": one(*SCOPES),
           "space": one(*ATOMIC_SPACES),
           "op": one(*ATOMIC_OPS),
           "noftz": one("noftz"),
           "l2hint": one("L2::cache_hint"),
           "vec": one("v2", "v4", "v8"),
           "completion": one("mbarrier::complete_tx::bytes"),
       },
       operands=(2, 3), since=(1, 2)),

    # vote.mode.pred d, {!}a;          vote.ballot.b32 d, {!}a;          (deprecated)
    # vote.sync.mode.pred d, {!}a, membermask;
    # vote.sync.ballot.b32 d, {!}a, membermask;
    # .mode = { .all, .any, .uni }
    Op("vote", FAMILY, _S + "vote-sync",
       types=("pred", "b32"),
       groups={"mode": one("all", "any", "uni", "ballot"), "sync": one("sync")},
       operands=(2, 3), since=(1, 2)),

    # match.any.sync.type d, a, membermask;
    # match.all.sync.type d{|p}, a, membermask;       .type = { .b32, .b64 }
    Op("match", FAMILY, _S + "match-sync",
       types=("b32", "b64"),
       groups={"mode": one("any", "all"), "sync": one("sync")},
       operands=(3, 3), since=(6, 0)),

    # activemask.b32 d;
    Op("activemask", FAMILY, _S + "activemask",
       types=("b32",),
       operands=(1, 1), since=(6, 2)),

    # redux.sync.op.type dst, src, membermask;  .op = { .add, .min, .max }  .type = { .u32, .s32 }
    # redux.sync.op.b32 dst, src, membermask;      .op = { .and, .or, .xor }
    # redux.sync.op{.abs}{.NaN}.f32 dst, src, membermask;   .op = { .min, .max }
    Op("redux", FAMILY, _S + "redux-sync",
       types=("u32", "s32", "b32", "f32"),
       groups={
           "sync": one("sync"),
           "op": one("add", "min", "max", "and", "or", "xor"),
           "abs": one("abs"),
           "nan": one("NaN"),
       },
       operands=(3, 3), since=(7, 0)),

    # griddepcontrol.action;      .action = { .launch_dependents, .wait }
    Op("griddepcontrol", FAMILY, _S + "griddepcontrol",
       groups={"op": one("launch_dependents", "wait")},
       operands=(0, 0), since=(7, 8)),

    # elect.sync d|p, membermask;
    Op("elect", FAMILY, _S + "elect-sync",
       groups={"sync": one("sync")},
       operands=(2, 2), since=(8, 0)),

    # mbarrier.init{.layout}{.shared{::cta}}.b64 [addr], count;
    #     .layout = { .layout::v0, .layout::v1 }
    # mbarrier.inval{.shared{::cta}}.b64 [addr];
    # mbarrier.expect_tx{.sem.scope}{.space}{.multicast::cluster::32b}.b64
    #     [addr], txCount{, ctaMask};
    # mbarrier.complete_tx{.sem.scope}{.space}{.multicast::cluster::32b}.b64
    #     [addr], txCount{, ctaMask};
    # mbarrier.arrive{.sem.scope}{.shared{::cta}}.b64 state, [addr]{, count};
    # mbarrier.arrive{.sem.scope}{.shared::cluster}{.multicast}.b64 _, [addr]{, count}{, ctaMask};
    # mbarrier.arrive.expect_tx{.sem.scope}{.space}{.multicast}.b64
    #     state, [addr], txCount{, ctaMask};
    # mbarrier.arrive.noComplete{.release.cta}{.shared{::cta}}.b64 state, [addr], count;
    # mbarrier.arrive_drop{.expect_tx | .noComplete}... (as arrive)
    # mbarrier.test_wait{.parity}{.phase_type}{.sem.scope}{.shared{::cta}}.b64
    #     waitComplete{|reportPredicate}{, reportValue}, [addr], state | phaseParity;
    # mbarrier.try_wait{.parity}{.phase_type}{.sem.scope}{.shared{::cta}}.b64
    #     waitComplete{|reportPredicate}{, reportValue}, [addr], state | phaseParity{, timeHint};
    # mbarrier.pending_count.b64 count, state;
    # mbarrier.check_layout.layout{.shared::cta}.b64 p, [addr];
    # .sem = { .release, .relaxed } for arrive, { .acquire, .relaxed } for waits
    # .scope = { .cta, .cluster }   .phase_type = { .phase_type::primary, .phase_type::conditional }
    Op("mbarrier", FAMILY, _S + "mbarrier",
       types=("b64",),
       groups={
           "op": many("init", "inval", "arrive", "arrive_drop", "expect_tx", "complete_tx",
                      "test_wait", "try_wait", "pending_count", "check_layout"),
           "noComplete": one("noComplete"),
           "parity": one("parity"),
           "sem": one("release", "relaxed", "acquire"),
           "scope": one("cta", "cluster"),
           "space": one("shared", "shared::cta", "shared::cluster"),
           "multicast": one("multicast::cluster::32b"),
           "phase_type": one("phase_type::primary", "phase_type::conditional"),
           "mbar_layout": one("layout::v0", "layout::v1"),
       },
       operands=(1, 5), since=(7, 0)),

    # clusterlaunchcontrol.try_cancel.async{.space}.completion_mechanism
    #     {.multicast::cluster::all}.b128 [addr], [mbar];
    # clusterlaunchcontrol.query_cancel.is_canceled.pred.b128 pred, try_cancel_response;
    # clusterlaunchcontrol.query_cancel.get_first_ctaid.v4.b32.b128 {x, y, z, _}, response;
    # clusterlaunchcontrol.query_cancel.get_first_ctaid::{x, y, z}.b32.b128 reg, response;
    # .completion_mechanism = { .mbarrier::complete_tx::bytes }   .space = { .shared::cta }
    Op("clusterlaunchcontrol", FAMILY, _S + "clusterlaunchcontrol-try-cancel",
       types=("pred", "b32", "b128"),
       groups={
           "op": one("try_cancel", "query_cancel"),
           "async": one("async"),
           "space": one("shared::cta"),
           "completion": one("mbarrier::complete_tx::bytes"),
           "multicast": one("multicast::cluster::all"),
           "query": one("is_canceled", "get_first_ctaid", "get_first_ctaid::x",
                        "get_first_ctaid::y", "get_first_ctaid::z"),
           "vec": one("v4"),
       },
       operands=(2, 2), since=(8, 6)),
]
