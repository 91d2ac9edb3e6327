"""Barriers and warp-level operations on the CPU target, against references written from the
PTX ISA manual (9.7.13 and shfl in 9.7.9): vote, match, redux, elect, shfl, activemask,
bar.warp.sync, bar/barrier (sync, arrive, red, named barriers with thread counts),
barrier.cluster, and the deadlocks and undefined cases that must raise instead of hanging.

Each kernel holds many operations or scenarios (one LLVM compile per kernel); the inputs
choose the lanes, masks and paths.
"""

from __future__ import annotations

import numpy as np
import pytest

from cpu_harness import compile_ptx, kernel_ptx, run_ptx
from ptxport.errors import KernelExecutionError

FULL = 0xFFFFFFFF

# --- warp operations with member masks --------------------------------------------------------

# Thread t loads a = a[t] and its member mask m = m[t]; m == 0 exits at once. Every
# operation runs with mask m; results go to out[t * 32 + k].
_WARP_OPS = """
.reg .b32 %r<60>; .reg .b64 %rd<12>; .reg .pred %p<12>;
ld.param.u64 %rd1, [pa]; ld.param.u64 %rd2, [pm]; ld.param.u64 %rd3, [pout];
mov.u32 %r1, %tid.x;
mul.wide.u32 %rd4, %r1, 4;
add.s64 %rd5, %rd1, %rd4; ld.global.u32 %r2, [%rd5];
add.s64 %rd6, %rd2, %rd4; ld.global.u32 %r3, [%rd6];
setp.eq.u32 %p1, %r3, 0;
@%p1 exit;
mul.wide.u32 %rd7, %r1, 128;
add.s64 %rd8, %rd3, %rd7;
rem.u32 %r4, %r2, 2;
setp.ne.u32 %p2, %r4, 0;
vote.sync.ballot.b32 %r5, %p2, %r3;          st.global.u32 [%rd8+0], %r5;
vote.sync.all.pred %p3, %p2, %r3;            selp.u32 %r6, 1, 0, %p3; st.global.u32 [%rd8+4], %r6;
vote.sync.any.pred %p3, %p2, %r3;            selp.u32 %r6, 1, 0, %p3; st.global.u32 [%rd8+8], %r6;
vote.sync.uni.pred %p3, %p2, %r3;            selp.u32 %r6, 1, 0, %p3; st.global.u32 [%rd8+12], %r6;
vote.sync.ballot.b32 %r7, !%p2, %r3;         st.global.u32 [%rd8+16], %r7;
match.any.sync.b32 %r8, %r2, %r3;            st.global.u32 [%rd8+20], %r8;
match.all.sync.b32 %r9|%p4, %r2, %r3;        st.global.u32 [%rd8+24], %r9;
selp.u32 %r10, 1, 0, %p4;                    st.global.u32 [%rd8+28], %r10;
redux.sync.add.u32 %r11, %r2, %r3;           st.global.u32 [%rd8+32], %r11;
redux.sync.min.s32 %r12, %r2, %r3;           st.global.u32 [%rd8+36], %r12;
redux.sync.max.u32 %r13, %r2, %r3;           st.global.u32 [%rd8+40], %r13;
redux.sync.and.b32 %r14, %r2, %r3;           st.global.u32 [%rd8+44], %r14;
redux.sync.or.b32 %r15, %r2, %r3;            st.global.u32 [%rd8+48], %r15;
redux.sync.xor.b32 %r16, %r2, %r3;           st.global.u32 [%rd8+52], %r16;
elect.sync %r17|%p5, %r3;                    st.global.u32 [%rd8+56], %r17;
selp.u32 %r18, 1, 0, %p5;                    st.global.u32 [%rd8+60], %r18;
redux.sync.min.u32 %r19, %r2, %r3;           st.global.u32 [%rd8+64], %r19;
redux.sync.max.s32 %r20, %r2, %r3;           st.global.u32 [%rd8+68], %r20;
mov.u32 %r21, 0;
mov.b64 %rd9, {%r21, %r2};
match.any.sync.b64 %r22, %rd9, %r3;          st.global.u32 [%rd8+72], %r22;
match.all.sync.b64 _|%p6, %rd9, %r3;
selp.u32 %r23, 1, 0, %p6;                    st.global.u32 [%rd8+76], %r23;
bar.warp.sync %r3;
shfl.sync.up.b32 %r24|%p7, %r2, 1, 0, %r3;   st.global.u32 [%rd8+80], %r24;
selp.u32 %r25, 1, 0, %p7;                    st.global.u32 [%rd8+84], %r25;
shfl.sync.down.b32 %r26|%p7, %r2, 3, 31, %r3; st.global.u32 [%rd8+88], %r26;
selp.u32 %r27, 1, 0, %p7;                    st.global.u32 [%rd8+92], %r27;
shfl.sync.bfly.b32 %r28, %r2, 5, 31, %r3;    st.global.u32 [%rd8+96], %r28;
rem.u32 %r29, %r2, 32;
shfl.sync.idx.b32 %r30, %r1, %r29, 31, %r3;  st.global.u32 [%rd8+100], %r30;
shfl.sync.idx.b32 %r31|%p7, %r1, %r29, 0x1807, %r3; st.global.u32 [%rd8+104], %r31;
selp.u32 %r32, 1, 0, %p7;                    st.global.u32 [%rd8+108], %r32;
shfl.sync.down.b32 %r33|%p7, %r1, 33, 0x181F, %r3; st.global.u32 [%rd8+112], %r33;
selp.u32 %r34, 1, 0, %p7;                    st.global.u32 [%rd8+116], %r34;
shfl.sync.up.b32 %r35|%p7, %r1, 2, 0x1800, %r3; st.global.u32 [%rd8+120], %r35;
selp.u32 %r36, 1, 0, %p7;                    st.global.u32 [%rd8+124], %r36;
"""
WARP_OPS = kernel_ptx(_WARP_OPS, ".param .u64 pa, .param .u64 pm, .param .u64 pout",
                      target="sm_90")


def _s32(x: int) -> int:
    return x - (1 << 32) if x & 0x80000000 else x


def _shfl(mode: str, lane: int, b: int, c: int, values: list) -> tuple:
    """shfl's pseudocode from PTX ISA 9.7.9.6 for one lane: (value, valid); `values` holds
    None for lanes that do not take part, whose value PTX leaves unpredictable."""
    b, clamp, segmask = b & 0x1F, c & 0x1F, (c >> 8) & 0x1F
    max_lane = (lane & segmask) | (clamp & ~segmask)
    min_lane = lane & segmask
    j, valid = {"up": (lane - b, lane - b >= max_lane),
                "down": (lane + b, lane + b <= max_lane),
                "bfly": (lane ^ b, (lane ^ b) <= max_lane),
                "idx": (min_lane | (b & ~segmask), (min_lane | (b & ~segmask)) <= max_lane),
                }[mode]
    return (values[j] if valid else values[lane]), int(valid)


def _warp_ops_reference(a: np.ndarray, m: np.ndarray) -> np.ndarray:
    n = a.size
    out = np.zeros((n, 32), object)
    for t in range(n):
        if m[t] == 0:
            continue
        base, lane = t - t % 32, t % 32
        alive = [u for u in range(32) if base + u < n and m[base + u] != 0]
        part = [u for u in alive if int(m[t]) >> u & 1]
        va = {u: int(a[base + u]) for u in part}
        bits = sum(1 << u for u in part)
        odd = sum(1 << u for u in part if va[u] % 2)
        same = sum(1 << u for u in part if va[u] == va[lane])
        uniform = same == bits
        xor = 0
        for u in part:
            xor ^= va[u]
        and_ = FULL
        for u in part:
            and_ &= va[u]
        signed = [_s32(va[u]) for u in part]
        row = [odd, int(odd == bits), int(odd != 0), int(odd in (0, bits)), bits & ~odd,
               same, bits if uniform else 0, int(uniform), sum(va.values()) & FULL,
               min(signed) & FULL, max(va.values()), and_, np.bitwise_or.reduce(list(va.values())),
               xor, min(part), int(lane == min(part)), min(va.values()), max(signed) & FULL,
               same, int(uniform)]
        lanes = [va.get(u) for u in range(32)]
        tids = [base + u if u in va else None for u in range(32)]
        for mode, values, b, c in (("up", lanes, 1, 0), ("down", lanes, 3, 31),
                                   ("bfly", lanes, 5, 31)):
            value, valid = _shfl(mode, lane, b, c, values)
            row += [value, valid] if mode != "bfly" else [value]
        row.append(_shfl("idx", lane, va[lane] % 32, 31, tids)[0])
        row += _shfl("idx", lane, va[lane] % 32, 0x1807, tids)
        row += _shfl("down", lane, 33, 0x181F, tids)
        row += _shfl("up", lane, 2, 0x1800, tids)
        out[t] = row
    return out


def _agree(got, want) -> bool:
    return all(w is None or int(g) == int(w) for g, w in zip(got, want, strict=True))


def _run_warp_ops(a, m, block) -> np.ndarray:
    out = np.zeros(a.size * 32, np.uint32)
    run_ptx(WARP_OPS, "k", 1, block, [np.asarray(a, np.uint32), np.asarray(m, np.uint32), out])
    return out.reshape(-1, 32)


def _masks_for(n: int, pattern: str, rng) -> np.ndarray:
    lanes = np.arange(n) % 32
    if pattern == "full":
        return np.full(n, FULL, np.uint32)
    if pattern == "halves":       # two groups per warp, each with its own mask
        return np.where(lanes < 16, 0x0000FFFF, 0xFFFF0000).astype(np.uint32)
    if pattern == "quads":        # eight groups of four lanes
        return (0xF << (lanes // 4 * 4)).astype(np.uint32)
    if pattern == "exited":       # some lanes exit first; the others' masks still name them
        m = np.full(n, FULL, np.uint32)
        m[rng.random(n) < 0.3] = 0
        return m
    raise AssertionError(pattern)


@pytest.mark.parametrize("pattern,block", [("full", 64), ("halves", 64), ("quads", 32),
                                           ("exited", 96), ("full", 48)])
def test_warp_operations_match_ptx_semantics(pattern, block):
    rng = np.random.default_rng(block + len(pattern))
    a = rng.integers(0, 6, block).astype(np.uint32)     # few values: matches and ties
    a[::7] = rng.integers(0, 2**32, a[::7].size, dtype=np.uint64).astype(np.uint32)
    m = _masks_for(block, pattern, rng)
    got = _run_warp_ops(a, m, block)
    want = _warp_ops_reference(a, m)
    for t in np.flatnonzero(m):
        assert _agree(got[t], want[t]), f"thread {t}: {list(got[t])} != {list(want[t])}"


def test_thread_outside_its_member_mask_raises():
    a = np.zeros(32, np.uint32)
    m = np.full(32, 0xFFFFFFFE, np.uint32)      # lane 0 is not in its own mask
    with pytest.raises(KernelExecutionError, match=r"kernel 'k'.*lane 0 is not in its member"):
        _run_warp_ops(a, m, 32)


# --- divergent warps: lanes meet at different instructions --------------------------------------

# Odd a[t] takes one path, even the other; both paths run the same operations (same qualifiers,
# different instructions), with member mask m[t]. out[t] = ballot, match.any, redux.add, shfl.idx.
_DIVERGENT = """
.reg .b32 %r<20>; .reg .b64 %rd<12>; .reg .pred %p<6>;
ld.param.u64 %rd1, [pa]; ld.param.u64 %rd2, [pm]; ld.param.u64 %rd3, [pout];
mov.u32 %r1, %tid.x;
mul.wide.u32 %rd4, %r1, 4;
add.s64 %rd5, %rd1, %rd4; ld.global.u32 %r2, [%rd5];
add.s64 %rd6, %rd2, %rd4; ld.global.u32 %r3, [%rd6];
setp.eq.u32 %p1, %r3, 0;
@%p1 exit;
mul.wide.u32 %rd7, %r1, 16;
add.s64 %rd8, %rd3, %rd7;
rem.u32 %r4, %r2, 2;
setp.ne.u32 %p2, %r4, 0;
rem.u32 %r9, %r2, 32;
@%p2 bra ODD;
bar.warp.sync %r3;
vote.sync.ballot.b32 %r5, %p2, %r3;
match.any.sync.b32 %r6, %r2, %r3;
redux.sync.add.u32 %r7, %r2, %r3;
shfl.sync.idx.b32 %r8, %r1, %r9, 31, %r3;
bra JOIN;
ODD:
bar.warp.sync %r3;
vote.sync.ballot.b32 %r5, %p2, %r3;
match.any.sync.b32 %r6, %r2, %r3;
redux.sync.add.u32 %r7, %r2, %r3;
shfl.sync.idx.b32 %r8, %r1, %r9, 31, %r3;
JOIN:
st.global.v4.u32 [%rd8], {%r5, %r6, %r7, %r8};
"""
DIVERGENT = kernel_ptx(_DIVERGENT, ".param .u64 pa, .param .u64 pm, .param .u64 pout")


@pytest.mark.parametrize("masks", ["full", "parity", "exited"])
def test_divergent_lanes_meet_at_operations_with_the_same_qualifiers(masks):
    """sm_70+: lanes at different instructions with the same qualifiers and mask meet
    (PTX: "executed vote.sync with the same qualifiers and same membermask"); with a mask per
    path, each path's group completes on its own."""
    rng = np.random.default_rng(len(masks))
    block = 64
    a = rng.integers(0, 40, block).astype(np.uint32)
    if masks == "parity":
        odd = np.array([sum(1 << u for u in range(32) if a[t - t % 32 + u] % 2)
                        for t in range(block)])
        m = np.where(a % 2 == 1, odd, ~odd & FULL).astype(np.uint32)
    else:
        m = np.full(block, FULL, np.uint32)
        if masks == "exited":
            m[rng.random(block) < 0.25] = 0
    out = np.zeros(block * 4, np.uint32)
    run_ptx(DIVERGENT, "k", 1, block, [a, m, out])
    want = _warp_ops_reference(a, m)
    for t in np.flatnonzero(m):
        assert _agree(out[4 * t:4 * t + 4], want[t][[0, 5, 8, 25]]), f"thread {t}"


# --- operations without member masks: the active lanes ------------------------------------------

# Lanes with m[t] == 0 exit; lanes with a[t] >= 100 first meet at a shfl.sync of their own
# (mask m[t]) and reach the rest later, as a diverged warp does; then odd and even a[t] take
# different paths, each with activemask, vote.ballot, vote.all/any/uni, and shfl.idx from
# lane src[t]. out[t] = activemask at the top, then the path's results.
_ACTIVE = """
.reg .b32 %r<24>; .reg .b64 %rd<12>; .reg .pred %p<8>;
ld.param.u64 %rd1, [pa]; ld.param.u64 %rd2, [pm]; ld.param.u64 %rd3, [pout];
ld.param.u64 %rd9, [psrc];
mov.u32 %r1, %tid.x;
mul.wide.u32 %rd4, %r1, 4;
add.s64 %rd5, %rd1, %rd4; ld.global.u32 %r2, [%rd5];
add.s64 %rd6, %rd2, %rd4; ld.global.u32 %r3, [%rd6];
add.s64 %rd10, %rd9, %rd4; ld.global.u32 %r4, [%rd10];
setp.eq.u32 %p1, %r3, 0;
@%p1 exit;
mul.wide.u32 %rd7, %r1, 32;
add.s64 %rd8, %rd3, %rd7;
setp.ge.u32 %p3, %r2, 100;
@%p3 shfl.sync.bfly.b32 %r5, %r2, 1, 31, %r3;
activemask.b32 %r6;
st.global.u32 [%rd8], %r6;
rem.u32 %r7, %r2, 2;
setp.ne.u32 %p2, %r7, 0;
rem.u32 %r8, %r2, 3;
setp.eq.u32 %p4, %r8, 0;
@%p2 bra ODD;
activemask.b32 %r9;
vote.ballot.b32 %r10, %p4;
vote.all.pred %p5, %p4;
vote.any.pred %p6, !%p4;
vote.uni.pred %p7, %p4;
shfl.idx.b32 %r11, %r1, %r4, 31;
bra JOIN;
ODD:
activemask.b32 %r9;
vote.ballot.b32 %r10, %p4;
vote.all.pred %p5, %p4;
vote.any.pred %p6, !%p4;
vote.uni.pred %p7, %p4;
shfl.idx.b32 %r11, %r1, %r4, 31;
JOIN:
selp.u32 %r12, 1, 0, %p5;
selp.u32 %r13, 1, 0, %p6;
selp.u32 %r14, 1, 0, %p7;
st.global.v4.u32 [%rd8+4], {%r9, %r10, %r12, %r13};
st.global.v2.u32 [%rd8+20], {%r14, %r11};
"""
ACTIVE = kernel_ptx(_ACTIVE, ".param .u64 pa, .param .u64 pm, .param .u64 pout, "
                    ".param .u64 psrc", target="sm_60", version="6.2")


def test_operations_without_masks_take_the_lanes_at_the_instruction():
    """activemask, vote and shfl without .sync: the active lanes are those of the warp at the
    same instruction; lanes that exited or took the other path are inactive, and lanes that
    were held up elsewhere (here at a shfl.sync) join before the warp goes on."""
    rng = np.random.default_rng(7)
    block = 64
    a = rng.integers(0, 12, block).astype(np.uint32)
    a[rng.random(block) < 0.3] += 100
    alive = rng.random(block) >= 0.2
    base = np.arange(block) - np.arange(block) % 32
    late = [sum(1 << u for u in range(32) if alive[b + u] and a[b + u] >= 100) for b in base]
    m = np.where(alive, np.where(a >= 100, late, FULL), 0).astype(np.uint32)
    src = np.zeros(block, np.uint32)
    for t in range(block):      # a lane of the same warp on the same path: a defined source
        mates = [u for u in range(32) if alive[base[t] + u] and a[base[t] + u] % 2 == a[t] % 2]
        src[t] = rng.choice(mates) if alive[t] else 0
    out = np.zeros(block * 8, np.uint32)
    run_ptx(ACTIVE, "k", 1, block, [a, m, out, src])
    for t in np.flatnonzero(alive):
        lanes = [u for u in range(32) if alive[base[t] + u]]
        path = [u for u in lanes if a[base[t] + u] % 2 == a[t] % 2]
        p = {u: a[base[t] + u] % 3 == 0 for u in path}
        bits = sum(1 << u for u in path)
        ballot = sum(1 << u for u in path if p[u])
        want = [sum(1 << u for u in lanes), bits, ballot, int(ballot == bits),
                int(ballot != bits), int(ballot in (0, bits)), base[t] + src[t]]
        assert list(out[8 * t:8 * t + 7]) == want, f"thread {t}"


# --- CTA barriers -----------------------------------------------------------------------------

# One scenario per value of `case`; threads with tid >= n exit first where the scenario says.
# s is shared; out[t] is a row of four words.
_BARRIERS = """
.reg .b32 %r<40>; .reg .b64 %rd<20>; .reg .pred %p<10>;
.shared .align 4 .b32 s[128];
ld.param.u64 %rd1, [pa]; ld.param.u64 %rd2, [pout];
ld.param.u32 %r1, [pcase]; ld.param.u32 %r2, [pn];
mov.u32 %r3, %tid.x;
mul.wide.u32 %rd3, %r3, 4;
add.s64 %rd4, %rd1, %rd3; ld.global.u32 %r4, [%rd4];
mov.u64 %rd5, s; add.s64 %rd6, %rd5, %rd3;
mul.wide.u32 %rd7, %r3, 16; add.s64 %rd8, %rd2, %rd7;
add.u32 %r5, %r3, 1; rem.u32 %r5, %r5, %r2;
mul.wide.u32 %rd9, %r5, 4; add.s64 %rd10, %rd5, %rd9;
div.u32 %r20, %r3, 32;
rem.u32 %r21, %r20, 2;
setp.eq.u32 %p1, %r1, 0; @%p1 bra ROTATE;
setp.eq.u32 %p1, %r1, 1; @%p1 bra RED;
setp.eq.u32 %p1, %r1, 2; @%p1 bra PRODUCE;
setp.eq.u32 %p1, %r1, 3; @%p1 bra SUBSETS;
setp.eq.u32 %p1, %r1, 4; @%p1 bra CLUSTER;
setp.eq.u32 %p1, %r1, 5; @%p1 bra TWO_BARRIERS;
setp.eq.u32 %p1, %r1, 6; @%p1 bra TOO_MANY;
setp.eq.u32 %p1, %r1, 7; @%p1 bra SPLIT_WARP;
setp.eq.u32 %p1, %r1, 8; @%p1 bra BAD_NAME;
setp.eq.u32 %p1, %r1, 9; @%p1 bra ONE_INSTRUCTION_TWO_BARRIERS;
setp.eq.u32 %p1, %r1, 10; @%p1 bra ONE_INSTRUCTION_TOO_MANY;
ret;

ROTATE:                          // out[t] = a[(t + 3) % n]: a barrier in a loop
setp.ge.u32 %p2, %r3, %r2; @%p2 exit;
st.shared.u32 [%rd6], %r4;
mov.u32 %r6, 0;
ROTATE_LOOP:
bar.sync 0;
ld.shared.u32 %r7, [%rd10];
barrier.sync.aligned 0;
st.shared.u32 [%rd6], %r7;
add.u32 %r6, %r6, 1;
setp.lt.u32 %p3, %r6, 3; @%p3 bra ROTATE_LOOP;
bar.cta.sync 0;
ld.shared.u32 %r8, [%rd6];
st.global.u32 [%rd8], %r8;
ret;

RED:                             // popc(p), and(p), or(!p), popc(!p) over threads < n
setp.ge.u32 %p2, %r3, %r2; @%p2 exit;
setp.ne.u32 %p4, %r4, 0;
bar.red.popc.u32 %r9, 0, %p4;
bar.red.and.pred %p5, 0, %p4;
selp.u32 %r10, 1, 0, %p5;
bar.cta.red.or.pred %p5, 1, !%p4;
selp.u32 %r11, 1, 0, %p5;
barrier.cta.red.popc.aligned.u32 %r12, 2, !%p4;
st.global.v4.u32 [%rd8], {%r9, %r10, %r11, %r12};
ret;

PRODUCE:                         // warps 0-1 produce four rounds, warps 2-3 consume them
mov.u32 %r6, 0;
setp.ge.u32 %p6, %r3, 64; @%p6 bra CONSUME;
PRODUCE_LOOP:
mad.lo.u32 %r13, %r6, 1000, %r4;
st.shared.u32 [%rd6], %r13;
bar.arrive 1, 128;
bar.sync 2, 128;
add.u32 %r6, %r6, 1;
setp.lt.u32 %p3, %r6, 4; @%p3 bra PRODUCE_LOOP;
ret;
CONSUME:
sub.u32 %r14, %r3, 64; mul.wide.u32 %rd11, %r14, 4; add.s64 %rd12, %rd5, %rd11;
CONSUME_LOOP:
barrier.sync 1, 128;
ld.shared.u32 %r15, [%rd12];
mul.wide.u32 %rd13, %r6, 4; add.s64 %rd14, %rd8, %rd13;
st.global.u32 [%rd14], %r15;
barrier.cta.arrive.aligned 2, 128;
add.u32 %r6, %r6, 1;
setp.lt.u32 %p3, %r6, 4; @%p3 bra CONSUME_LOOP;
ret;

SUBSETS:                         // warps 0-1 and 2-3 rotate by one within their half,
div.u32 %r16, %r3, 64;           // each half with its own named barrier of 64 threads;
mul.lo.u32 %r16, %r16, 64;       // then all four warps pass a 64-thread barrier (2 phases)
sub.u32 %r17, %r3, %r16; add.u32 %r17, %r17, 1; rem.u32 %r17, %r17, 64;
add.u32 %r17, %r17, %r16;
mul.wide.u32 %rd15, %r17, 4; add.s64 %rd16, %rd5, %rd15;
st.shared.u32 [%rd6], %r4;
setp.ge.u32 %p6, %r3, 64; @%p6 bra SUBSETS_HIGH;
bar.sync 3, 64;
bra SUBSETS_READ;
SUBSETS_HIGH:
barrier.sync 4, 64;
SUBSETS_READ:
ld.shared.u32 %r18, [%rd16];
bar.sync 5, 64;
st.global.u32 [%rd8], %r18;
ret;

CLUSTER:                         // barrier.cluster with one CTA per cluster, twice
setp.ge.u32 %p2, %r3, %r2; @%p2 exit;
st.shared.u32 [%rd6], %r4;
barrier.cluster.arrive;
barrier.cluster.wait;
ld.shared.u32 %r19, [%rd10];
barrier.cluster.arrive.release.aligned;
barrier.cluster.wait.acquire.aligned;
st.shared.u32 [%rd6], %r19;
barrier.cluster.arrive.relaxed;
barrier.cluster.wait;
ld.shared.u32 %r19, [%rd10];
st.global.u32 [%rd8], %r19;
ret;

TWO_BARRIERS:                    // even warps wait at barrier 0, odd warps at barrier 1
setp.eq.u32 %p7, %r21, 0; @%p7 bra TWO_EVEN;
bar.sync 1;
ret;
TWO_EVEN:
bar.sync 0;
ret;

TOO_MANY:                        // 256 threads expected of a block of 128
setp.eq.u32 %p7, %r21, 0; @%p7 bra TOO_MANY_EVEN;
bar.sync 1, 256;
ret;
TOO_MANY_EVEN:
bar.sync 1, 256;
ret;

SPLIT_WARP:                      // lanes 0-15 wait at a shfl for lanes 16-31, at a barrier
rem.u32 %r22, %r3, 32;
setp.lt.u32 %p8, %r22, 16; @%p8 bra SPLIT_LOW;
bar.sync 0;
ret;
SPLIT_LOW:
shfl.sync.idx.b32 %r23, %r4, 0, 31, -1;
ret;

BAD_NAME:
bar.sync %r2;
ret;

ONE_INSTRUCTION_TWO_BARRIERS:
bar.sync %r21;
ret;

ONE_INSTRUCTION_TOO_MANY:
bar.sync 1, 256;
ret;
"""
BARRIERS = kernel_ptx(_BARRIERS, ".param .u64 pa, .param .u64 pout, .param .u32 pcase, "
                      ".param .u32 pn", target="sm_90")
NATIVE = pytest.mark.parametrize("native", [True, False], ids=["native", "resolver"])


def _run_barriers(case: int, n: int = 128, block: int = 128, native: bool = True,
                  a: np.ndarray | None = None) -> np.ndarray:
    _, binary = compile_ptx(BARRIERS, "k")
    a = np.arange(block, dtype=np.uint32) * 7 + 1 if a is None else a
    out = np.zeros(block * 4, np.uint32)
    binary.native_waits, saved = native, binary.native_waits
    try:
        run_ptx(BARRIERS, "k", 2, block, [a, out, np.uint32(case), np.uint32(n)])
    finally:
        binary.native_waits = saved
    return out.reshape(-1, 4)


@NATIVE
@pytest.mark.parametrize("n", [128, 40])
def test_barrier_in_a_loop_with_threads_that_exited(n, native):
    a = np.arange(128, dtype=np.uint32) * 7 + 1
    out = _run_barriers(0, n, native=native, a=a)
    assert list(out[:n, 0]) == [a[(t + 3) % n] for t in range(n)]


@NATIVE
def test_barrier_reductions(native):
    a = (np.arange(128) % 5 != 0).astype(np.uint32)
    n = 100
    out = _run_barriers(1, n, native=native, a=a)
    p = a[:n] != 0
    assert (out[:n] == [p.sum(), int(p.all()), int((~p).any()), (~p).sum()]).all()


@NATIVE
def test_producer_consumer_with_arrive_and_named_barriers(native):
    a = np.arange(128, dtype=np.uint32) + 5
    out = _run_barriers(2, native=native, a=a)
    for t in range(64, 128):
        assert list(out[t]) == [a[t - 64] + 1000 * i for i in range(4)]


@NATIVE
def test_named_barriers_for_subsets_of_warps(native):
    a = np.arange(128, dtype=np.uint32) * 3
    out = _run_barriers(3, native=native, a=a)
    assert list(out[:, 0]) == [a[t // 64 * 64 + (t % 64 + 1) % 64] for t in range(128)]


@pytest.mark.parametrize("n", [128, 100])
def test_cluster_barrier_of_one_cta(n):
    a = np.arange(128, dtype=np.uint32) + 11
    out = _run_barriers(4, n, a=a)
    assert list(out[:n, 0]) == [a[(t + 2) % n] for t in range(n)]


@NATIVE
@pytest.mark.parametrize("case,lines", [
    (5, r"thread\(s\) at line \d+ \('bar.sync'\).*thread\(s\) at line \d+ \('bar.sync'\)"),
    (6, r"64 thread\(s\) at line \d+ \('bar.sync'\).*64 thread\(s\) at line \d+"),
    (7, r"16 thread\(s\) at line \d+ \('bar.sync'\).*16 thread\(s\) at line \d+ "
        r"\('shfl.sync.idx.b32'\)")])
def test_deadlocks_raise_with_kernel_lines_and_thread_counts(case, lines, native):
    block = 32 if case == 7 else 128
    with pytest.raises(KernelExecutionError, match=r"kernel 'k', block \(\d, 0, 0\).*" + lines):
        _run_barriers(case, block=block, native=native)


@NATIVE
@pytest.mark.parametrize("case", [9, 10])
def test_deadlocks_at_one_instruction(case, native):
    """bar.sync %r with a name that differs between warps, or a count beyond the block."""
    with pytest.raises(KernelExecutionError, match="wait for each other forever"):
        _run_barriers(case, native=native)


def test_barrier_name_out_of_range_raises():
    with pytest.raises(KernelExecutionError, match="barrier 16 does not exist"):
        _run_barriers(8, n=16, native=False)


# --- redux.sync on .f32 -------------------------------------------------------------------------

_REDUX_F32 = """
.reg .b32 %r<4>; .reg .f32 %f<12>; .reg .b64 %rd<8>; .reg .pred %p<2>;
ld.param.u64 %rd1, [pa]; ld.param.u64 %rd2, [pout];
mov.u32 %r1, %tid.x;
mul.wide.u32 %rd3, %r1, 4; add.s64 %rd4, %rd1, %rd3;
ld.global.f32 %f1, [%rd4];
redux.sync.min.f32 %f2, %f1, -1;
redux.sync.max.f32 %f3, %f1, -1;
redux.sync.min.abs.f32 %f4, %f1, -1;
redux.sync.max.abs.f32 %f5, %f1, -1;
redux.sync.min.NaN.f32 %f6, %f1, -1;
redux.sync.max.abs.NaN.f32 %f7, %f1, -1;
setp.lt.u32 %p1, %r1, 8;
mov.f32 %f8, 0f00000000;
@%p1 redux.sync.min.f32 %f8, %f1, 0xFF;
mul.wide.u32 %rd5, %r1, 28; add.s64 %rd6, %rd2, %rd5;
st.global.v4.f32 [%rd6], {%f2, %f3, %f4, %f5};
st.global.v2.f32 [%rd6+16], {%f6, %f7};
st.global.f32 [%rd6+24], %f8;
"""
REDUX_F32 = kernel_ptx(_REDUX_F32, ".param .u64 pa, .param .u64 pout", target="sm_100a",
                       version="8.6")


def _f32_min_max(values, op: str, nan: bool) -> int:
    """PTX ISA redux.sync .f32: -0.0 < +0.0; NaNs skipped unless .NaN; canonical NaN."""
    bits = np.asarray(values, np.float32).view(np.uint32)
    if any(np.isnan(values)) and (nan or all(np.isnan(values))):
        return 0x7FFFFFFF
    key = [(float(v), int(b) >> 31 == 0) for v, b in zip(values, bits, strict=True)
           if not np.isnan(v)]
    pick = min(key) if op == "min" else max(key)     # (value, is +): -0.0 sorts before +0.0
    return int(bits[[i for i, v in enumerate(values) if not np.isnan(v) and
                     (float(v), int(bits[i]) >> 31 == 0) == pick][0]])


@pytest.mark.parametrize("case", ["mixed", "zeros", "nan", "all_nan"])
def test_redux_f32_min_max(case):
    rng = np.random.default_rng(len(case))
    a = (rng.standard_normal(32) * 100).astype(np.float32)
    if case == "zeros":
        a[:] = np.where(np.arange(32) % 2, np.float32(0.0), np.float32(-0.0))
    if case == "nan":
        a[[3, 17]] = np.nan
        a[5] = -1000.0
    if case == "all_nan":
        a[:] = np.nan
    out = np.zeros(32 * 7, np.float32)
    run_ptx(REDUX_F32, "k", 1, 32, [a, out])
    got = out.view(np.uint32).reshape(32, 7)
    absolute = np.abs(a)
    want = [_f32_min_max(a, "min", False), _f32_min_max(a, "max", False),
            _f32_min_max(absolute, "min", False), _f32_min_max(absolute, "max", False),
            _f32_min_max(a, "min", True), _f32_min_max(absolute, "max", True)]
    for t in range(32):
        assert list(got[t, :6]) == want, f"thread {t}"
    assert (got[:8, 6] == _f32_min_max(a[:8], "min", False)).all()
