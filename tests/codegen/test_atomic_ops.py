"""atom and red on the CPU target (PTX ISA 9.7.13.5-6).

The race tests launch 64 CTAs of 256 threads, which the CPU executor runs on several host
threads at once, so that lost updates would show; their results do not depend on the order
in which the threads get there (integer operations, float sums of small integers). The edge
tests run one operation per thread on its own word, against exact references: flushing of
subnormals by add.f32 on global but not shared memory, NaN results, min/max of -0 and NaN.
"""

from __future__ import annotations

import numpy as np
import pytest

from cpu_harness import kernel_ptx, run_ptx
from ptxport.errors import UnsupportedFeatureError

BLOCKS, THREADS = 64, 256
N = BLOCKS * THREADS
INDEX = """mov.u32 %r1, %tid.x; mov.u32 %r2, %ctaid.x; mov.u32 %r3, %ntid.x;
mad.lo.u32 %r4, %r2, %r3, %r1;
setp.eq.u32 %first, %r1, 0;"""

INTEGER_BODY = INDEX + """
ld.param.u64 %rd1, [g]; ld.param.u64 %rd2, [g64]; ld.param.u64 %rd3, [olds];
mul.wide.u32 %rd4, %r4, 16; add.u64 %rd5, %rd3, %rd4;
atom.global.add.u32 %r5, [%rd1], 1;          st.global.u32 [%rd5], %r5;
atom.global.exch.b32 %r6, [%rd1+4], %r4;     st.global.u32 [%rd5+4], %r6;
atom.global.inc.u32 %r7, [%rd1+8], 99;       st.global.u32 [%rd5+8], %r7;
atom.global.dec.u32 %r8, [%rd1+12], 49;      st.global.u32 [%rd5+12], %r8;
red.global.add.u32 [%rd1+16], 3;
mul.lo.u32 %r9, %r4, -1640531535;
atom.global.min.u32 %r10, [%rd1+20], %r9;
atom.global.max.u32 %r10, [%rd1+24], %r9;
atom.global.min.s32 %r10, [%rd1+28], %r9;
red.global.max.s32 [%rd1+32], %r9;
and.b32 %r11, %r4, 31; shl.b32 %r12, 1, %r11; not.b32 %r13, %r12;
atom.global.and.b32 %r10, [%rd1+36], %r13;
red.global.or.b32 [%rd1+40], %r12;
atom.global.xor.b32 %r10, [%rd1+44], %r9;
RETRY:
ld.volatile.global.u32 %r14, [%rd1+48];
add.u32 %r15, %r14, %r4;
atom.global.cas.b32 %r16, [%rd1+48], %r14, %r15;
setp.ne.u32 %p1, %r16, %r14;
@%p1 bra RETRY;
atom.acq_rel.gpu.global.add.u32 %r10, [%rd1+52], 2;
red.release.sys.global.add.u32 [%rd1+56], 5;
atom.add.u32 %r10, [%rd1+60], 1;
cvt.u64.u32 %rd6, %r4; mul.lo.u64 %rd7, %rd6, -7046029254386353131;
atom.global.add.u64 %rd8, [%rd2], %rd7;
atom.global.min.s64 %rd8, [%rd2+8], %rd7;
atom.global.max.u64 %rd8, [%rd2+16], %rd7;
atom.acquire.cta.global.add.u64 %rd8, [%rd2+24], 7;
red.global.xor.b64 [%rd2+32], %rd7;
atom.global.exch.b64 %rd8, [%rd2+40], %rd6;
@%first st.shared.u32 [s], 0; @%first st.shared.u32 [s+4], 0;
@%first st.shared.u32 [s+8], 0; @%first st.shared.u32 [s+12], 0;
bar.sync 0;
atom.shared.add.u32 %r10, [s], %r1;
atom.shared.inc.u32 %r10, [s+4], 9;
cvta.shared.u64 %rd9, s;
atom.add.u32 %r10, [%rd9+8], 1;
red.relaxed.cta.shared::cta.max.u32 [s+12], %r9;
bar.sync 0;
@%first ld.shared.u32 %r17, [s];   @%first red.global.add.u32 [%rd1+64], %r17;
@%first ld.shared.u32 %r17, [s+4]; @%first red.global.add.u32 [%rd1+68], %r17;
@%first ld.shared.u32 %r17, [s+8]; @%first red.global.add.u32 [%rd1+72], %r17;
@%first ld.shared.u32 %r17, [s+12]; @%first red.global.max.u32 [%rd1+76], %r17;
ret;"""


def u32(values) -> np.ndarray:
    return (np.asarray(values, dtype=np.int64) & 0xFFFFFFFF).astype(np.uint32)


def test_integer_atomics_race():
    ptx = kernel_ptx(".reg .b32 %r<20>; .reg .b64 %rd<12>; .reg .pred %p<2>, %first;\n"
                     ".shared .align 4 .b32 s[4];\n" + INTEGER_BODY,
                     ".param .u64 g, .param .u64 g64, .param .u64 olds")
    g = np.zeros(32, np.uint32)
    g[1], g[5], g[7], g[8], g[9] = 0xABCDEF, 0xFFFFFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF
    g64 = np.zeros(8, np.uint64)
    g64[1] = 0x7FFFFFFFFFFFFFFF
    olds = np.zeros((N, 4), np.uint32)
    run_ptx(ptx, "k", BLOCKS, THREADS, [g, g64, olds])
    gi = np.arange(N, dtype=np.int64)
    hashed = u32(gi * -1640531535)
    assert g[0] == N and sorted(olds[:, 0]) == list(range(N))
    exchanged = np.sort(np.append(olds[:, 1], g[1]))
    assert (exchanged == np.sort(np.append(gi, 0xABCDEF))).all()
    assert g[2] == N % 100 and np.bincount(olds[:, 2]).tolist() == [N // 100 + (i < N % 100)
                                                                  for i in range(100)]
    assert g[3] == (-N) % 50 and sorted(set(olds[:, 3].tolist())) == list(range(50))
    assert g[4] == 3 * N
    assert g[5] == hashed.min() and g[6] == hashed.max()
    assert g[7] == u32(hashed.view(np.int32).min()) and g[8] == u32(hashed.view(np.int32).max())
    assert g[9] == 0 and g[10] == 0xFFFFFFFF
    assert g[11] == np.bitwise_xor.reduce(hashed)
    assert g[12] == (N * (N - 1) // 2) & 0xFFFFFFFF
    assert g[13] == 2 * N and g[14] == 5 * N and g[15] == N
    hashed64 = (gi.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15))
    assert g64[0] == np.sum(hashed64, dtype=np.uint64)
    assert g64.view(np.int64)[1] == min(hashed64.view(np.int64).min(), 2 ** 63 - 1)
    assert g64[2] == hashed64.max() and g64[3] == 7 * N
    assert g64[4] == np.bitwise_xor.reduce(hashed64) and g64[5] in set(range(N))
    assert g[16] == BLOCKS * (THREADS * (THREADS - 1) // 2)
    assert g[17] == BLOCKS * (THREADS % 10) and g[18] == BLOCKS * THREADS
    per_block = hashed.reshape(BLOCKS, THREADS).max(axis=1)
    assert g[19] == per_block.max()


FLOAT_BODY = INDEX + """
ld.param.u64 %rd1, [g]; ld.param.u64 %rd2, [g64];
and.b32 %r5, %r4, 7; cvt.rn.f32.u32 %f1, %r5;
atom.global.add.f32 %f2, [%rd1], %f1;
red.global.add.f32 [%rd1+4], 0f3F000000;
atom.add.f32 %f2, [%rd1+8], %f1;
cvt.rn.f64.u32 %fd1, %r4;
red.global.add.f64 [%rd2], %fd1;
atom.global.v4.f32.add {%f3, %f4, %f5, %f6}, [%rd1+16], {%f1, %f1, 0f3F800000, 0f40000000};
red.global.v2.f32.add [%rd1+32], {0f3F800000, %f1};
and.b32 %r6, %r4, 7; setp.eq.u32 %p1, %r6, 0;
mov.b32 %r7, 0x38003C00;
@%p1 atom.global.add.noftz.f16x2 %r8, [%rd1+40], %r7;
and.b32 %r6, %r4, 63; setp.eq.u32 %p2, %r6, 0;
mov.b16 %h1, 0x3F80;
@%p2 red.global.add.noftz.bf16 [%rd1+44], %h1;
mov.b16 %h2, 0x3C00;
@%p1 atom.global.add.noftz.f16 %h3, [%rd1+46], %h2;
mov.b32 %r10, 0x3F804000;
@%p2 red.global.add.noftz.bf16x2 [%rd1+48], %r10;
cvt.rn.f16.u32 %h4, %r5;
cvt.rn.f16.u32 %h5, %r4;
atom.global.v2.f16.max.noftz {%h6, %h7}, [%rd1+52], {%h4, %h5};
xor.b16 %h5, %h5, 0x8000;
atom.global.v2.f16.min.noftz {%h6, %h7}, [%rd1+56], {%h4, %h5};
cvt.rn.bf16.u32 %h4, %r5;
mov.b32 %r9, {%h4, %h4};
red.global.v2.bf16x2.max.noftz [%rd1+64], {%r9, %r9};
@%first st.shared.f32 [s], 0f00000000;
bar.sync 0;
atom.shared.add.f32 %f2, [s], %f1;
bar.sync 0;
@%first ld.shared.f32 %f7, [s];
@%first red.global.add.f32 [%rd1+72], %f7;
ret;"""


def test_float_atomics_race():
    ptx = kernel_ptx(".reg .b32 %r<12>; .reg .b64 %rd<4>; .reg .f32 %f<8>; .reg .f64 %fd<2>;\n"
                     ".reg .b16 %h<8>; .reg .pred %p<3>, %first;\n"
                     ".shared .align 4 .f32 s[1];\n" + FLOAT_BODY,
                     ".param .u64 g, .param .u64 g64", target="sm_90", version="8.1")
    g = np.zeros(20, np.uint32)
    g[14] = 0x7C007C00                               # the minima start from +inf
    g64 = np.zeros(1, np.float64)
    run_ptx(ptx, "k", BLOCKS, THREADS, [g, g64])
    gi = np.arange(N)
    eighths = (gi % 8).sum()
    f = g.view(np.float32)
    assert list(f[[0, 1, 2, 18]]) == [eighths, N / 2, eighths, eighths]
    assert g64[0] == gi.sum()
    assert list(f[4:10]) == [eighths, eighths, N, 2 * N, N, eighths]
    assert list(g[10:12].view(np.float16)[[0, 1, 3]]) == [N // 8, N // 16, N // 8]
    assert (g[11] & 0xFFFF) == 0x4380                # bf16 256.0
    assert g[12] == 0x43804400                       # bf16x2 {256.0, 512.0}
    assert list(g[13:15].view(np.float16)) == [7, np.float16(N - 1), 0, -np.float16(N - 1)]
    assert g[16] == g[17] == 0x40E040E0              # bf16x2 {7.0, 7.0}


EDGE_BODY = """mov.u32 %r1, %tid.x; mul.wide.u32 %rd1, %r1, 4;
ld.param.u64 %rd2, [b]; add.u64 %rd2, %rd2, %rd1; ld.global.b32 %r2, [%rd2];
ld.param.u64 %rd2, [bh]; add.u64 %rd2, %rd2, %rd1; ld.global.b32 %r7, [%rd2];
ld.param.u64 %rd3, [words]; mul.wide.u32 %rd4, %r1, 32; add.u64 %rd3, %rd3, %rd4;
atom.global.add.f32 %r3, [%rd3], %r2;
shl.b32 %r5, %r1, 2; mov.u32 %r6, s; add.u32 %r6, %r6, %r5;
ld.global.b32 %r4, [%rd3+4]; st.shared.b32 [%r6], %r4;
atom.shared.add.f32 %r3, [%r6], %r2;
ld.shared.b32 %r4, [%r6]; st.global.b32 [%rd3+4], %r4;
add.u64 %rd5, %rd3, 8; atom.add.f32 %r3, [%rd5], %r2;
mov.u32 %r6, t; add.u32 %r6, %r6, %r5;
ld.global.b32 %r4, [%rd3+12]; st.shared.b32 [%r6], %r4;
cvta.shared.u64 %rd6, t; cvt.u64.u32 %rd7, %r5; add.u64 %rd6, %rd6, %rd7;
atom.add.f32 %r3, [%rd6], %r2;
ld.shared.b32 %r4, [%r6]; st.global.b32 [%rd3+12], %r4;
atom.global.add.noftz.f16x2 %r3, [%rd3+16], %r7;
mov.b32 {%h1, %h2}, %r7;
atom.global.v2.f16.min.noftz {%h3, %h4}, [%rd3+20], {%h1, %h2};
atom.global.v2.f16.max.noftz {%h3, %h4}, [%rd3+24], {%h1, %h2};
atom.global.v2.bf16.min.noftz {%h3, %h4}, [%rd3+28], {%h1, %h2};
ret;"""


def flush32(bits: np.ndarray) -> np.ndarray:
    return np.where((bits & 0x7F800000) == 0, bits & 0x80000000, bits).astype(np.uint32)


def add32(x: np.ndarray, y: np.ndarray, ftz: bool) -> np.ndarray:
    if ftz:
        x, y = flush32(x), flush32(y)
    with np.errstate(over="ignore", invalid="ignore"):
        total = (x.view(np.float32) + y.view(np.float32)).view(np.uint32)
    if ftz:
        total = flush32(total)
    return np.where(np.isnan(total.view(np.float32)), 0x7FFFFFFF, total).astype(np.uint32)


def lanes(words: np.ndarray, dtype) -> np.ndarray:
    return words.astype(np.uint32).view(np.uint16).reshape(-1, 2)


def half_op(x: np.ndarray, y: np.ndarray, op: str, decode) -> np.ndarray:
    """f16/bf16 add/min/max on 16-bit patterns, as PTX atom defines them."""
    out = []
    for a, b in zip(x.tolist(), y.tolist(), strict=True):
        fa, fb = decode(a), decode(b)
        if op == "add":
            with np.errstate(over="ignore", invalid="ignore"):
                s = np.float16(np.float32(fa) + np.float32(fb))
            out.append(0x7FFF if np.isnan(s) else int(s.view(np.uint16)))
        elif np.isnan(fa) and np.isnan(fb):
            out.append(0x7FFF)
        elif np.isnan(fa) or np.isnan(fb):
            out.append(b if np.isnan(fa) else a)
        else:
            key_a, key_b = (fa, -(a >> 15)), (fb, -(b >> 15))   # -0 below +0
            pick_a = key_a < key_b if op == "min" else key_a > key_b
            out.append(a if pick_a or key_a == key_b else b)
    return np.array(out, np.uint32)


def test_float_atomic_edges():
    """Subnormals: flushed by add.f32 on global memory (also through a generic address),
    kept on shared memory (also through a generic one); NaN results canonical; f16 min/max
    with NaN and signed zeros."""
    f32 = np.array([0, 0x80000000, 1, 0x80000001, 0x00400000, 0x007FFFFF, 0x00800000,
                    0x3F800000, 0xBF800000, 0x7F7FFFFF, 0x7F800000, 0xFF800000, 0x7FC01234,
                    0xFFC00000, 0x34000000, 0xB4000000], np.uint32)
    mem, b = (a.ravel() for a in np.meshgrid(f32, f32))
    f16 = np.array([0, 0x8000, 1, 0x8001, 0x3C00, 0xBC00, 0x7BFF, 0x7C00, 0xFC00, 0x7E55,
                    0xFE00, 0x0400], np.uint32)
    hm, hb = (a.ravel() for a in np.meshgrid(f16, f16))
    n = mem.size
    halves = np.resize(hm | hm[::-1] << 16, n)
    operand_halves = np.resize(hb | hb[::-1] << 16, n)
    words = np.zeros((n, 8), np.uint32)
    words[:, 0:4] = mem[:, None]
    words[:, 4:8] = halves[:, None]
    before = words.copy()
    b = b.astype(np.uint32)
    ptx = kernel_ptx(".reg .b32 %r<8>; .reg .b64 %rd<8>; .reg .b16 %h<6>;\n"
                     ".shared .align 4 .b32 s[256]; .shared .align 4 .b32 t[256];\n" + EDGE_BODY,
                     ".param .u64 b, .param .u64 bh, .param .u64 words", target="sm_90",
                     version="8.1")
    run_ptx(ptx, "k", 1, n, [b, operand_halves.astype(np.uint32), words])
    for column, ftz in ((0, True), (1, False), (2, True), (3, False)):
        expected = add32(before[:, column], b, ftz)
        bad = np.nonzero(words[:, column] != expected)[0]
        assert not bad.size, (column, hex(before[bad[0], column]), hex(b[bad[0]]),
                              hex(words[bad[0], column]), hex(expected[bad[0]]))

    def f16(v):
        return float(np.uint16(v).view(np.float16))

    def bf16(v):
        return float(np.uint32(v << 16).view(np.float32))

    x, y = lanes(before[:, 4], np.uint16), lanes(operand_halves, np.uint16)
    for column, op, decode in ((4, "add", f16), (5, "min", f16), (6, "max", f16),
                               (7, "min", bf16)):
        got = lanes(words[:, column], np.uint16)
        for lane in (0, 1):
            expected = half_op(x[:, lane], y[:, lane], op, decode)
            bad = np.nonzero(got[:, lane] != expected)[0]
            assert not bad.size, (column, lane, hex(x[bad[0], lane]), hex(y[bad[0], lane]),
                                  hex(got[bad[0], lane]), hex(expected[bad[0]]))


WIDE_BODY = INDEX + """
ld.param.u64 %rd1, [g]; ld.param.u64 %rd9, [olds];
RETRY16:
ld.volatile.global.u16 %h1, [%rd1];
add.u16 %h2, %h1, 1;
atom.global.cas.b16 %h3, [%rd1], %h1, %h2;
setp.ne.u16 %p1, %h3, %h1;
@%p1 bra RETRY16;
cvt.u64.u32 %rd8, %r4;
RETRY128:
ld.volatile.global.v2.u64 {%rd2, %rd3}, [%rd1+16];
mov.b128 %q1, {%rd2, %rd3};
add.u64 %rd4, %rd2, 1; add.u64 %rd5, %rd3, %rd8;
mov.b128 %q2, {%rd4, %rd5};
atom.global.cas.b128 %q3, [%rd1+16], %q1, %q2;
mov.b128 {%rd6, %rd7}, %q3;
xor.b64 %rd6, %rd6, %rd2; xor.b64 %rd7, %rd7, %rd3; or.b64 %rd6, %rd6, %rd7;
setp.ne.u64 %p1, %rd6, 0;
@%p1 bra RETRY128;
mul.lo.u64 %rd4, %rd8, 3;
mov.b128 %q2, {%rd8, %rd4};
atom.global.exch.b128 %q3, [%rd1+32], %q2;
mov.b128 {%rd6, %rd7}, %q3;
mul.wide.u32 %rd5, %r4, 16; add.u64 %rd5, %rd9, %rd5;
st.global.v2.u64 [%rd5], {%rd6, %rd7};
ret;"""


def test_16_and_128_bit_atomics_race():
    ptx = kernel_ptx(".reg .b32 %r<6>; .reg .b64 %rd<10>; .reg .b16 %h<4>; .reg .b128 %q<4>;\n"
                     ".reg .pred %p<2>, %first;\n" + WIDE_BODY,
                     ".param .u64 g, .param .u64 olds", target="sm_90", version="8.3")
    g = np.zeros(6, np.uint64)
    g[4], g[5] = 11, 33
    olds = np.zeros((N, 2), np.uint64)
    run_ptx(ptx, "k", BLOCKS, THREADS, [g, olds])
    assert g[0] & 0xFFFF == N & 0xFFFF and g[0] >> 16 == 0
    assert g[2] == N and g[3] == N * (N - 1) // 2
    pairs = np.concatenate([olds, g[4:6][None, :]])
    assert sorted(map(tuple, pairs.tolist())) == sorted(
        [(11, 33)] + [(i, 3 * i) for i in range(N)])


def test_asynchronous_reduction_is_unsupported():
    ptx = kernel_ptx(".reg .b32 %r<2>; .shared .align 8 .b64 bar; .shared .align 4 .b32 x;\n"
                     "red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes"
                     ".add.u32 [x], 1, [bar];\nret;", "", target="sm_90", version="8.1")
    with pytest.raises(UnsupportedFeatureError, match="mbarrier"):
        run_ptx(ptx, "k", 1, 1, [])


F64_BODY = """mov.u32 %r1, %tid.x; mul.wide.u32 %rd1, %r1, 8;
ld.param.u64 %rd2, [b]; add.u64 %rd2, %rd2, %rd1; ld.global.b64 %rd3, [%rd2];
ld.param.u64 %rd4, [words]; mul.wide.u32 %rd5, %r1, 16; add.u64 %rd4, %rd4, %rd5;
atom.global.add.f64 %rd6, [%rd4], %rd3;
shl.b32 %r2, %r1, 3; mov.u32 %r3, s; add.u32 %r3, %r3, %r2;
ld.global.b64 %rd6, [%rd4+8]; st.shared.b64 [%r3], %rd6;
red.shared.add.f64 [%r3], %rd3;
ld.shared.b64 %rd6, [%r3]; st.global.b64 [%rd4+8], %rd6;
ret;"""


def test_f64_atomic_add_edges():
    """add.f64 keeps subnormals on global and shared memory; a NaN operand's payload carries
    over (the old value's first), an invalid sum is 0xFFF8000000000000 (as on the H100)."""
    values = np.array([0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308 / 3, 1.0, -1.0,
                       1.7976931348623157e308, np.inf, -np.inf, np.nan, 1e-300], np.float64)
    bits = values.view(np.uint64).copy()
    bits[10] = 0x7FF8000012345678
    mem, b = (a.ravel() for a in np.meshgrid(bits, bits))
    words = np.stack([mem, mem], axis=1).astype(np.uint64)
    ptx = kernel_ptx(".reg .b32 %r<4>; .reg .b64 %rd<8>;\n.shared .align 8 .b64 s[256];\n" +
                     F64_BODY, ".param .u64 b, .param .u64 words", target="sm_90", version="8.0")
    run_ptx(ptx, "k", 1, mem.size, [b.astype(np.uint64), words])
    with np.errstate(over="ignore", invalid="ignore"):
        total = mem.view(np.float64) + b.view(np.float64)
    quiet = np.uint64(1 << 51)
    expected = np.where(np.isnan(total), np.uint64(0xFFF8000000000000), total.view(np.uint64))
    expected = np.where(np.isnan(b.view(np.float64)), b | quiet, expected)
    expected = np.where(np.isnan(mem.view(np.float64)), mem | quiet, expected)
    for column in (0, 1):
        bad = np.nonzero(words[:, column] != expected)[0]
        assert not bad.size, [(column, hex(mem[i]), hex(b[i]), hex(words[i, column]),
                               hex(expected[i])) for i in bad[:6]]
