"""Cases for the files built on atomics and cross-block reductions: atomic_cas, atomics_float,
atomics_int, histogram, radix_sort_step, fence_last_block, reduce_shared and reduce_warp.

Atomics run in an unspecified order, so every input is chosen to make the result independent
of it: integer operations, min/max, bit operations, the same function applied n times
(atomicInc/Dec), and float sums of small integers or multiples of 0.25 whose partial sums are
all exactly representable. Accumulators start from non-trivial values where the kernel's
contract allows, so that "+=" is checked and not just "=".
"""

from __future__ import annotations

import numpy as np

from ._core import KernelCase, inout, inp, out, scalar
from ._numerics import f32, poison

__all__ = ["CASES"]

I32_MIN, I32_MAX = -(2**31), 2**31 - 1


def grid1(n: int, block: int) -> tuple[int, int, int]:
    return ((n + block - 1) // block, 1, 1)


def _i32(rng, n, low=I32_MIN, high=I32_MAX):
    return rng.integers(low, high, n, endpoint=True).astype(np.int32)


def _u32(rng, n):
    return rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)


# atomic_cas.cu ----------------------------------------------------------------------------------

N_CAS, GRID_CAS, BLOCK_CAS = 3000, (4, 1, 1), (128, 1, 1)  # 512 threads: 6 rounds each


def _cas_max_args(rng):
    x = f32(rng.standard_normal(N_CAS) * 100)
    x[rng.choice(N_CAS, 20, replace=False)] = np.nan
    return [inp(x), inout(np.array([-np.inf], dtype=np.float32)), scalar(np.int32(N_CAS))]


def _cas_u16_ref(args):
    x = args[0].value.astype(np.int64)
    start = args[1].value.astype(np.int64)
    return {1: ((start + [x[0::2].sum(), x[1::2].sum()]) % 65536).astype(np.uint16)}


ATOMIC_CAS = [
    KernelCase("atomic_cas.cu", "atomic_max_f32_cas", GRID_CAS, BLOCK_CAS, 0, _cas_max_args,
               lambda a: {1: np.array([np.nanmax(a[0].value)], dtype=np.float32)},
               notes="exact; NaNs skipped"),
    KernelCase("atomic_cas.cu", "atomic_add_f64_cas", GRID_CAS, BLOCK_CAS, 0,
               lambda rng: [inp(rng.integers(-1000, 1000, N_CAS).astype(np.float64)),
                            inout(np.array([0.0])), scalar(np.int32(N_CAS))],
               lambda a: {1: np.array([a[0].value.sum()])},
               notes="exact: integer-valued doubles"),
    KernelCase("atomic_cas.cu", "atomic_add_u16_cas", GRID_CAS, BLOCK_CAS, 0,
               lambda rng: [inp(rng.integers(0, 65536, N_CAS).astype(np.uint16)),
                            inout(np.array([17, 65000], dtype=np.uint16)),
                            scalar(np.int32(N_CAS))],
               _cas_u16_ref, notes="exact, modulo 2**16; two counters in one 32-bit word"),
]

# atomics_float.cu -------------------------------------------------------------------------------

N_AF = 1000


def _atomic_float_ref(args):
    x = args[0].value.astype(np.float64)
    bins = args[2].value + np.bincount(np.arange(N_AF) % 16, weights=x, minlength=16)
    return {1: f32([args[1].value[0] + x.sum()]), 2: f32(bins)}


def _sparse_units(rng, n, count):
    """n values in {-1, 0, 1} with `count` nonzero: every partial sum is a small integer."""
    x = np.zeros(n)
    x[rng.choice(n, count, replace=False)] = rng.choice([-1.0, 1.0], count)
    return x


N_HALF2 = N_AF // 3


def _half2_args(rng):
    x = rng.integers(-3, 4, 2 * N_HALF2).astype(np.float16)
    return [inp(x), inout(np.array([5.0, -2.0], dtype=np.float16)), scalar(np.int32(N_HALF2))]


def _half2_ref(args):
    x = args[0].value.astype(np.float64).reshape(-1, 2)
    return {1: (args[1].value.astype(np.float64) + x.sum(axis=0)).astype(np.float16)}


def _bf162_args(rng):
    x = _sparse_units(rng, 2 * N_AF, 200).astype(np.float32)
    bits = (x.view(np.uint32) >> 16).astype(np.uint16)  # -1, 0 and 1 are exact in bfloat16
    return [inp(bits, bfloat16=True), inout(np.array([0x4040, 0xC000], dtype=np.uint16),
                                            bfloat16=True), scalar(np.int32(N_AF))]


def _bf162_ref(args):
    x = (args[0].value.astype(np.uint32) << 16).view(np.float32).reshape(-1, 2)
    start = (args[1].value.astype(np.uint32) << 16).view(np.float32)  # 3.0 and -2.0
    total = f32(start + x.sum(axis=0))
    return {1: (total.view(np.uint32) >> 16).astype(np.uint16)}


ATOMICS_FLOAT = [
    KernelCase("atomics_float.cu", "atomic_add_float", grid1(N_AF, 256), (256, 1, 1), 0,
               lambda rng: [inp(f32(rng.integers(-8, 9, N_AF))), inout(f32([0.0])),
                            inout(f32(np.zeros(16))), scalar(np.int32(N_AF))],
               _atomic_float_ref, notes="exact: small integers; global and shared atomics"),
    KernelCase("atomics_float.cu", "atomic_add_double_scoped", grid1(N_AF, 256), (256, 1, 1), 0,
               lambda rng: [inp(rng.integers(-400, 400, N_AF) * 0.25), inout(np.array([0.0])),
                            inout(np.array([0.0])), scalar(np.int32(N_AF))],
               lambda a: {1: np.array([a[0].value.sum()]), 2: np.array([a[0].value.sum()])},
               notes="exact: multiples of 0.25"),
    KernelCase("atomics_float.cu", "atomic_add_half2", grid1(N_HALF2, 256), (256, 1, 1), 0,
               _half2_args, _half2_ref,
               notes="exact: integers in [-3, 3], 333 pairs, so every partial sum of either "
                     "half stays below 2**11"),
    KernelCase("atomics_float.cu", "atomic_add_bf162", grid1(N_AF, 256), (256, 1, 1), 0,
               _bf162_args, _bf162_ref,
               notes="exact: 200 nonzero units among 2000 halves, partial sums below 2**8"),
]

# atomics_int.cu ---------------------------------------------------------------------------------

N_AI = 1000
GRID_AI = grid1(N_AI, 256)


def _atomics_i32_args(rng):
    x = _i32(rng, N_AI) | np.int32(0x01010000)  # keep a few bits set in every value
    acc = np.array([11, -5, I32_MAX, I32_MIN, -1, 0, 0x1234], dtype=np.int32)
    return [inp(x), inout(acc), inout(_i32(rng, N_AI)), out(poison(N_AI, np.int32)),
            scalar(np.int32(N_AI))]


def _atomics_i32_ref(args):
    x, acc, slots = args[0].value, args[1].value, args[2].value
    total = int(x.astype(np.int64).sum())
    final = np.array([int(v) for v in (
        int(acc[0]) + total, int(acc[1]) - total, min(acc[2], x.min()), max(acc[3], x.max()),
        np.bitwise_and.reduce(x, initial=acc[4]), np.bitwise_or.reduce(x, initial=acc[5]),
        np.bitwise_xor.reduce(x, initial=acc[6]))], dtype=np.int64)
    return {1: (((final & 0xFFFFFFFF) ^ 0x80000000) - 0x80000000).astype(np.int32),
            2: x, 3: slots}


def _inc(old: int, limit: int) -> int:
    return 0 if old >= limit else old + 1


def _dec(old: int, limit: int) -> int:
    return limit if old == 0 or old > limit else old - 1


LIMIT = 100


def _atomics_u32_args(rng):
    x = _u32(rng, N_AI) | np.uint32(0x00800100)
    acc = np.array([7, 0xFFFFFFFF, 0, 0xFFFFFFFF, 0, 0x55, 5, 7], dtype=np.uint32)
    return [inp(x), inout(acc), scalar(np.uint32(LIMIT)), scalar(np.int32(N_AI))]


def _atomics_u32_ref(args):
    x, acc = args[0].value, args[1].value
    inc, dec = int(acc[6]), int(acc[7])
    for _ in range(N_AI):
        inc, dec = _inc(inc, LIMIT), _dec(dec, LIMIT)
    final = [(int(acc[0]) + int(x.astype(np.uint64).sum())) & 0xFFFFFFFF,
             min(acc[1], x.min()), max(acc[2], x.max()),
             np.bitwise_and.reduce(x, initial=acc[3]), np.bitwise_or.reduce(x, initial=acc[4]),
             np.bitwise_xor.reduce(x, initial=acc[5]), inc, dec]
    return {1: np.array([int(v) for v in final], dtype=np.uint32)}


def _atomics_u64_args(rng):
    x = rng.integers(0, 2**64, N_AI, dtype=np.uint64, endpoint=False) | np.uint64(1 << 40)
    acc = np.array([3, 2**64 - 1, 0, 2**64 - 1, 0, 9], dtype=np.uint64)
    slots = np.arange(N_AI, dtype=np.uint64)
    moved = rng.random(N_AI) < 0.4
    slots[moved] = rng.integers(N_AI, 2**63, moved.sum(), dtype=np.uint64)
    return [inp(x), inout(acc), inout(slots), out(poison(N_AI, np.uint64)),
            scalar(np.int32(N_AI))]


def _atomics_u64_ref(args):
    x, acc, slots = args[0].value, args[1].value, args[2].value
    total = (int(acc[0]) + sum(int(v) for v in x)) % 2**64
    final = np.array([total, min(acc[1], x.min()), max(acc[2], x.max()),
                      np.bitwise_and.reduce(x, initial=acc[3]),
                      np.bitwise_or.reduce(x, initial=acc[4]),
                      np.bitwise_xor.reduce(x, initial=acc[5])], dtype=np.uint64)
    swapped = slots == np.arange(N_AI, dtype=np.uint64)
    return {1: final, 2: np.where(swapped, x, slots), 3: slots}


def _i64_minmax_args(rng):
    x = rng.integers(-(2**63), 2**63 - 1, N_AI, dtype=np.int64)
    return [inp(x), inout(np.array([2**63 - 1, -(2**63)], dtype=np.int64)),
            scalar(np.int32(N_AI))]


def _scoped_ref(args):
    x = args[0].value
    padded = np.zeros(GRID_AI[0] * 256, dtype=np.int64)
    padded[:N_AI] = x
    sums = padded.reshape(-1, 256).sum(axis=1)
    return {1: sums.astype(np.int32), 2: (args[2].value + sums.sum()).astype(np.int32)}


ATOMICS_INT = [
    KernelCase("atomics_int.cu", "atomics_i32", GRID_AI, (256, 1, 1), 0, _atomics_i32_args,
               _atomics_i32_ref, notes="exact; add/sub wrap; Exch into one slot per thread"),
    KernelCase("atomics_int.cu", "atomics_u32", GRID_AI, (256, 1, 1), 0, _atomics_u32_args,
               _atomics_u32_ref, notes="exact; atomicInc/Dec wrap around limit 100 repeatedly"),
    KernelCase("atomics_int.cu", "atomics_u64", GRID_AI, (256, 1, 1), 0, _atomics_u64_args,
               _atomics_u64_ref, notes="exact; CAS succeeds in 60% of the slots"),
    KernelCase("atomics_int.cu", "atomics_i64_minmax", GRID_AI, (256, 1, 1), 0,
               _i64_minmax_args,
               lambda a: {1: np.array([a[0].value.min(), a[0].value.max()], dtype=np.int64)},
               notes="exact, signed 64-bit"),
    KernelCase("atomics_int.cu", "atomics_scoped", GRID_AI, (256, 1, 1), 0,
               lambda rng: [inp(rng.integers(-10**6, 10**6, N_AI).astype(np.int32)),
                            out(poison(GRID_AI[0], np.int32)), inout(np.array([3], np.int32)),
                            scalar(np.int32(N_AI))],
               _scoped_ref, notes="exact"),
]

# histogram.cu -----------------------------------------------------------------------------------

N_HIST = 6000


def _skewed_bytes(rng, n):
    return np.minimum(rng.exponential(40, n), 255).astype(np.uint8)


def _byte_hist_ref(args):
    return {1: args[1].value + np.bincount(args[0].value, minlength=256).astype(np.uint32)}


N_FBINS, LO, HI, NBINS = 3000, -2.0, 3.0, 37


def _float_bins_args(rng):
    x = f32(rng.uniform(-3, 4, N_FBINS))
    x[:6] = [np.nan, LO, HI, np.nextafter(f32(HI), f32(-np.inf)), -np.inf, np.inf]
    return [inp(x), inout(rng.integers(0, 10, NBINS).astype(np.int32)), scalar(np.int32(NBINS)),
            scalar(np.float32(LO)), scalar(np.float32(HI)), scalar(np.int32(N_FBINS))]


def _float_bins_ref(args):
    x = args[0].value
    lo, hi = np.float32(LO), np.float32(HI)
    scale = np.float32(NBINS) / (hi - lo)
    inside = (x >= lo) & (x < hi)
    k = np.minimum(((x[inside] - lo) * scale).astype(np.int32), NBINS - 1)
    return {1: args[1].value + np.bincount(k, minlength=NBINS).astype(np.int32)}


HISTOGRAM = [
    KernelCase("histogram.cu", "histogram_shared", (5, 1, 1), (256, 1, 1), 0,
               lambda rng: [inp(_skewed_bytes(rng, N_HIST)),
                            inout(rng.integers(0, 5, 256).astype(np.uint32)),
                            scalar(np.int32(N_HIST))],
               _byte_hist_ref, notes="exact; grid-stride (1280 threads for 6000 bytes)"),
    KernelCase("histogram.cu", "histogram_global", (3, 1, 1), (128, 1, 1), 0,
               lambda rng: [inp(_skewed_bytes(rng, 2000)),
                            inout(rng.integers(0, 5, 256).astype(np.uint32)),
                            scalar(np.int32(2000))],
               _byte_hist_ref, notes="exact"),
    KernelCase("histogram.cu", "histogram_float_bins", (4, 1, 1), (128, 1, 1), NBINS * 4,
               _float_bins_args, _float_bins_ref,
               notes="exact: the bin is computed in float32 as the kernel does; NaN, +-inf "
                     "and the range ends included"),
]

# radix_sort_step.cu -----------------------------------------------------------------------------

N_RADIX_HIST, N_RADIX = 3000, 1000


def _radix_hist_ref(args):
    digits = (args[0].value >> 4) & 15
    return {1: args[1].value + np.bincount(digits, minlength=16).astype(np.uint32)}


def _radix_scatter_args(rng):
    keys = _u32(rng, N_RADIX)
    digits = (keys >> 8) & 15
    offsets = np.concatenate([[0], np.cumsum(np.bincount(digits, minlength=16))[:-1]])
    return [inp(keys), out(poison(N_RADIX, np.uint32)), inp(offsets.astype(np.uint32)),
            scalar(np.int32(N_RADIX)), scalar(np.int32(8))]


def _radix_scatter_ref(args):
    keys = args[0].value
    return {1: keys[np.argsort((keys >> 8) & 15, kind="stable")]}


RADIX = [
    KernelCase("radix_sort_step.cu", "radix_histogram", (3, 1, 1), (256, 1, 1), 0,
               lambda rng: [inp(_u32(rng, N_RADIX_HIST)), inout(np.zeros(16, np.uint32)),
                            scalar(np.int32(N_RADIX_HIST)), scalar(np.int32(4))],
               _radix_hist_ref, notes="exact; digit (key >> 4) & 15"),
    KernelCase("radix_sort_step.cu", "radix_scatter", grid1(N_RADIX, 256), (256, 1, 1), 0,
               _radix_scatter_args, _radix_scatter_ref, notes="exact: a stable scatter"),
]

# fence_last_block.cu ----------------------------------------------------------------------------

N_FENCE, G_FENCE = 4000, 6


def _fence_ref(args):
    x = args[0].value.astype(np.int64)
    padded = np.zeros(-(-N_FENCE // (256 * G_FENCE)) * 256 * G_FENCE, dtype=np.int64)
    padded[:N_FENCE] = x
    partials = padded.reshape(-1, G_FENCE, 256).sum(axis=(0, 2))
    return {1: partials.astype(np.int32), 2: np.zeros(1, np.uint32),
            3: np.array([x.sum()], dtype=np.int32)}


FENCE = [
    KernelCase("fence_last_block.cu", "sum_last_block", (G_FENCE, 1, 1), (256, 1, 1), 0,
               lambda rng: [inp(rng.integers(-1000, 1000, N_FENCE).astype(np.int32)),
                            out(poison(G_FENCE, np.int32)), inout(np.zeros(1, np.uint32)),
                            out(poison(1, np.int32)), scalar(np.int32(N_FENCE))],
               _fence_ref, notes="exact; the ticket returns to 0"),
    KernelCase("fence_last_block.cu", "spin_flag_handoff", (2, 1, 1), (32, 1, 1), 0,
               lambda rng: [out(poison(32, np.int32)), inout(np.zeros(1, np.int32)),
                            out(poison(32, np.int32))],
               lambda a: {0: np.arange(32, dtype=np.int32) ** 2,
                          1: np.ones(1, np.int32),
                          2: np.arange(32, dtype=np.int32) ** 2 + 1},
               notes="block 1 spins until block 0 has run: a CPU runtime must run blocks "
                     "concurrently or in order"),
]

# reduce_shared.cu and reduce_warp.cu ------------------------------------------------------------

N_RED = 20000


def _strided_sums_f32(x: np.ndarray, grid: int, block: int) -> np.ndarray:
    """Per-thread float32 sums of a grid-stride loop, each in its own sequential order."""
    threads = grid * block
    padded = np.zeros(-(-len(x) // threads) * threads, dtype=np.float32)
    padded[: len(x)] = x
    acc = np.zeros(threads, dtype=np.float32)
    for row in padded.reshape(-1, threads):
        acc = acc + row
    return acc.reshape(grid, block)


def _reduce_f32_ref(args):
    x = args[0].value
    s = _strided_sums_f32(x, 6, 128)
    h = 64
    while h:
        s[:, :h] = s[:, :h] + s[:, h:2 * h]
        h //= 2
    return {1: s[:, 0].copy()}


REDUCE_SHARED = [
    KernelCase("reduce_shared.cu", "reduce_sum_i32", (8, 1, 1), (256, 1, 1), 0,
               lambda rng: [inp(rng.integers(-1000, 1000, N_RED).astype(np.int32)),
                            inout(np.array([5], np.int32)), scalar(np.int32(N_RED))],
               lambda a: {1: np.array([5 + a[0].value.sum()], dtype=np.int32)},
               notes="exact; 8 blocks of 512-element strides over 20000: the loop runs 5 times "
                     "and the last pair is partial"),
    KernelCase("reduce_shared.cu", "reduce_sum_f32_dynamic", (6, 1, 1), (128, 1, 1), 128 * 4,
               lambda rng: [inp(f32(rng.standard_normal(5000))), out(poison(6, np.float32)),
                            scalar(np.int32(5000))],
               _reduce_f32_ref, notes="exact: the kernel's summation order is fixed"),
]


def _minmax_u32_args(rng):
    return [inp(_u32(rng, 2000) >> 1 | np.uint32(1 << 20)),
            inout(np.array([0xFFFFFFFF], np.uint32)), inout(np.array([0], np.uint32)),
            scalar(np.int32(2000))]


REDUCE_WARP = [
    KernelCase("reduce_warp.cu", "reduce_sum_warp_f64", (4, 1, 1), (96, 1, 1), 0,
               lambda rng: [inp(rng.integers(-10**6, 10**6, 3000).astype(np.float64)),
                            inout(np.array([0.5])), scalar(np.int32(3000))],
               lambda a: {1: np.array([0.5 + a[0].value.sum()])},
               notes="exact: integer-valued inputs; 3 warps per block (nwarps < 32)"),
    KernelCase("reduce_warp.cu", "reduce_max_warp_i32", (4, 1, 1), (128, 1, 1), 0,
               lambda rng: [inp(_i32(rng, 3000, -(10**9), 10**9)),
                            inout(np.array([I32_MIN], np.int32)), scalar(np.int32(3000))],
               lambda a: {1: np.array([a[0].value.max()], dtype=np.int32)}, notes="exact"),
    KernelCase("reduce_warp.cu", "reduce_minmax_u32", (3, 1, 1), (64, 1, 1), 0,
               _minmax_u32_args,
               lambda a: {1: np.array([a[0].value.min()], np.uint32),
                          2: np.array([a[0].value.max()], np.uint32)}, notes="exact"),
]

CASES = (ATOMIC_CAS + ATOMICS_FLOAT + ATOMICS_INT + HISTOGRAM + RADIX + FENCE + REDUCE_SHARED
         + REDUCE_WARP)
