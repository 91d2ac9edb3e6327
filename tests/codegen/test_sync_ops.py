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

from cpu_harness import kernel_ptx, run_ptx
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
