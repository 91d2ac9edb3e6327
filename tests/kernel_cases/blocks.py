"""Cases for the files about cooperation inside a block or a warp: barrier_loop, bitonic_sort,
mbarrier_sync, odd_even_sort, scan_blelloch, scan_hillis_steele, scan_warp, stream_compaction,
syncthreads_count, warp_shuffle and warp_vote.

The float scans and smoothing are modelled operation by operation in float32 in the kernel's
own order, so they are exact; everything else is integer or data movement.
"""

from __future__ import annotations

import numpy as np

from ._core import KernelCase, inout, inp, out, scalar
from ._numerics import f32, poison

__all__ = ["CASES"]


def grid1(n: int, block: int) -> tuple[int, int, int]:
    return ((n + block - 1) // block, 1, 1)


def _tiles(x: np.ndarray, size: int, fill=0) -> np.ndarray:
    """x padded with `fill` to whole tiles of `size`, one tile per row."""
    padded = np.full(-(-len(x) // size) * size, fill, dtype=x.dtype)
    padded[: len(x)] = x
    return padded.reshape(-1, size)


# barrier_loop.cu --------------------------------------------------------------------------------

G_SMOOTH, ITERATIONS = 3, 10


def _smooth_ref(args):
    v = args[0].value.reshape(G_SMOOTH, 256).copy()
    quarter, half = np.float32(0.25), np.float32(0.5)
    for _ in range(ITERATIONS):
        left, right = np.roll(v, 1, axis=1), np.roll(v, -1, axis=1)
        v = (quarter * left + half * v) + quarter * right
    return {0: v.ravel()}


G_ROT = 5


def _rotate_args(rng):
    trips = rng.integers(0, 300, G_ROT).astype(np.int32)
    trips[:2] = [0, 129]
    return [inp(trips), inp(rng.integers(-1000, 1000, G_ROT * 128).astype(np.int32)),
            out(poison(G_ROT * 128, np.int32))]


def _rotate_ref(args):
    trips, data = args[0].value, args[1].value.reshape(G_ROT, 128)
    rows = [np.roll(row, -int(r)) + int(r) * (int(r) - 1) // 2 for row, r in zip(data, trips,
                                                                                    strict=True)]
    return {2: np.concatenate(rows).astype(np.int32)}


N_EXIT = 1000


def _early_exit_args(rng):
    x = f32(rng.uniform(-10, 1000, N_EXIT))
    return [inp(x), out(poison(N_EXIT, np.float32)), out(poison(N_EXIT, np.int32)),
            scalar(np.int32(N_EXIT))]


def _early_exit_ref(args):
    s = _tiles(args[0].value, 128)
    neighbour = np.roll(s, -1, axis=1)
    v = (s + neighbour).ravel()[:N_EXIT]
    negative = s.ravel()[:N_EXIT] < 0
    halvings = np.zeros(N_EXIT, dtype=np.int32)
    w = v.copy()
    while (w > 1).any():
        more = w > 1
        w = np.where(more, w * np.float32(0.5), w)
        halvings += more
    y = np.where(negative, args[1].value, v)
    flags = np.where(negative, -1, halvings).astype(np.int32)
    return {1: y, 2: flags}


BARRIER_LOOP = [
    KernelCase("barrier_loop.cu", "smooth_iterations", (G_SMOOTH, 1, 1), (256, 1, 1), 0,
               lambda rng: [inout(f32(rng.uniform(0, 1, G_SMOOTH * 256))),
                            scalar(np.int32(ITERATIONS))],
               _smooth_ref, ulp=2,
               notes="exact model (products by 0.25 and 0.5 are exact, so contraction changes "
                     "nothing); 2 ulp allow another association"),
    KernelCase("barrier_loop.cu", "block_dependent_loop", (G_ROT, 1, 1), (128, 1, 1), 0,
               _rotate_args, _rotate_ref, notes="exact; per-block trip counts, one of them 0"),
    KernelCase("barrier_loop.cu", "early_exit_tail", grid1(N_EXIT, 128), (128, 1, 1), 0,
               _early_exit_args, _early_exit_ref,
               notes="exact; threads that return early leave y untouched"),
]

# bitonic_sort.cu and odd_even_sort.cu -----------------------------------------------------------

N_SORT, B_BITONIC = 1000, 128


def _bitonic_args(rng):
    keys = rng.choice(2**32 - 1, N_SORT, replace=False).astype(np.uint32)  # distinct
    return [inout(keys), inout(np.arange(N_SORT, dtype=np.int32) * 3 - 7),
            scalar(np.int32(N_SORT))]


def _bitonic_ref(args):
    keys, values = args[0].value, args[1].value
    order = np.concatenate([np.argsort(keys[k:k + B_BITONIC]) + k
                            for k in range(0, N_SORT, B_BITONIC)])
    return {0: keys[order], 1: values[order]}


def _odd_even_args(rng):
    x = f32(rng.standard_normal(N_SORT) * 50)
    x[:10] = [3.0, 3.0, -1.0, -1.0, np.inf, -np.inf, 3.0, 1e-30, -1e-30, 7.0]  # duplicates
    return [inout(x), scalar(np.int32(N_SORT))]


def _odd_even_ref(args):
    x = args[0].value
    return {0: np.concatenate([np.sort(x[k:k + 256]) for k in range(0, N_SORT, 256)])}


SORTS = [
    KernelCase("bitonic_sort.cu", "bitonic_sort_block", grid1(N_SORT, B_BITONIC),
               (B_BITONIC, 1, 1), B_BITONIC * 8, _bitonic_args, _bitonic_ref,
               notes="exact; distinct keys; a partial last tile"),
    KernelCase("odd_even_sort.cu", "odd_even_sort_block", grid1(N_SORT, 256), (128, 1, 1), 0,
               _odd_even_args, _odd_even_ref,
               notes="exact; duplicates and infinities, no NaN or signed zeros"),
]

# scan_blelloch.cu, scan_hillis_steele.cu, scan_warp.cu ------------------------------------------

N_SCAN, B_BLELLOCH = 1000, 64
G_BLELLOCH = -(-N_SCAN // (2 * B_BLELLOCH))


def _blelloch_ref(args):
    tiles = _tiles(args[0].value, 2 * B_BLELLOCH).astype(np.int64)
    inclusive = np.cumsum(tiles, axis=1)
    exclusive = (inclusive - tiles).ravel()[:N_SCAN]
    return {1: exclusive.astype(np.int32), 2: inclusive[:, -1].astype(np.int32)}


def _add_offsets_ref(args):
    y, offsets = args[0].value, args[1].value
    return {0: y + offsets[np.arange(N_SCAN) // (2 * B_BLELLOCH)]}


N_HS = 1300


def _hillis_steele_ref(args):
    v = _tiles(args[0].value, 512)
    d = 1
    while d < 512:
        shifted = np.zeros_like(v)
        shifted[:, d:] = v[:, :-d]
        v = np.where(np.arange(512) >= d, shifted + v, v)
        d *= 2
    return {1: v.ravel()[:N_HS], 2: v[:, -1].copy()}


def _warp_scan(v: np.ndarray) -> np.ndarray:
    """Inclusive scan of each row of 32 lanes with __shfl_up_sync steps 1, 2, 4, 8, 16."""
    lane = np.arange(32)
    for d in (1, 2, 4, 8, 16):
        up = np.zeros_like(v)
        up[..., d:] = v[..., :-d]
        v = np.where(lane >= d, v + up, v)
    return v


def _scan_warp_ref(args):
    x = _tiles(args[0].value, 32).astype(np.int64)
    return {1: (np.cumsum(x, axis=1).ravel()[:N_SCAN]).astype(np.int32)}


B_BLOCK_SCAN = 96


def _block_scan_ref(args):
    tiles = _tiles(args[0].value, B_BLOCK_SCAN)  # zeros past n, as the kernel reads them
    warps = _warp_scan(tiles.reshape(len(tiles), -1, 32))
    totals = np.zeros((len(tiles), 32), dtype=np.float32)
    nwarps = B_BLOCK_SCAN // 32
    totals[:, :nwarps] = warps[:, :, 31]
    exclusive = _warp_scan(totals) - totals
    y = warps + exclusive[:, :nwarps, None]
    return {1: y.ravel()[:N_SCAN]}


SCANS = [
    KernelCase("scan_blelloch.cu", "scan_exclusive_blelloch", (G_BLELLOCH, 1, 1),
               (B_BLELLOCH, 1, 1), 2 * B_BLELLOCH * 4,
               lambda rng: [inp(rng.integers(-100, 100, N_SCAN).astype(np.int32)),
                            out(poison(N_SCAN, np.int32)), out(poison(G_BLELLOCH, np.int32)),
                            scalar(np.int32(N_SCAN))],
               _blelloch_ref, notes="exact; a partial last tile"),
    KernelCase("scan_blelloch.cu", "scan_add_block_offsets", (G_BLELLOCH, 1, 1),
               (B_BLELLOCH, 1, 1), 0,
               lambda rng: [inout(rng.integers(-100, 100, N_SCAN).astype(np.int32)),
                            inp(rng.integers(-10**5, 10**5, G_BLELLOCH).astype(np.int32)),
                            scalar(np.int32(N_SCAN))],
               _add_offsets_ref, notes="exact"),
    KernelCase("scan_hillis_steele.cu", "scan_inclusive_hillis_steele", grid1(N_HS, 512),
               (512, 1, 1), 0,
               lambda rng: [inp(f32(rng.standard_normal(N_HS))), out(poison(N_HS, np.float32)),
                            out(poison(grid1(N_HS, 512)[0], np.float32)),
                            scalar(np.int32(N_HS))],
               _hillis_steele_ref, notes="exact: the algorithm's own addition order"),
    KernelCase("scan_warp.cu", "scan_warp_inclusive", grid1(N_SCAN, 256), (256, 1, 1), 0,
               lambda rng: [inp(rng.integers(-10**6, 10**6, N_SCAN).astype(np.int32)),
                            out(poison(N_SCAN, np.int32)), scalar(np.int32(N_SCAN))],
               _scan_warp_ref, notes="exact; a partial last warp"),
    KernelCase("scan_warp.cu", "scan_block_inclusive", grid1(N_SCAN, B_BLOCK_SCAN),
               (B_BLOCK_SCAN, 1, 1), 0,
               lambda rng: [inp(f32(rng.standard_normal(N_SCAN))), out(poison(N_SCAN, np.float32)),
                            scalar(np.int32(N_SCAN))],
               _block_scan_ref,
               notes="exact: shuffle scan order, exclusive totals as inclusive - own; 3 warps"),
]

# stream_compaction.cu ---------------------------------------------------------------------------

N_COMPACT, THRESHOLD = 1000, np.float32(0.3)
G_COMPACT = grid1(N_COMPACT, 256)[0]


def _survivors(x):
    return np.flatnonzero(x > THRESHOLD)


def _counts(x):
    return np.bincount(_survivors(x) // 256, minlength=G_COMPACT).astype(np.int32)


def _compact_scatter_args(rng):
    x = f32(rng.uniform(0, 1, N_COMPACT))
    counts = _counts(x)
    offsets = (np.cumsum(counts) - counts).astype(np.int32)
    return [inp(x), inp(offsets), out(poison(N_COMPACT, np.float32)),
            out(poison(N_COMPACT, np.int32)), scalar(THRESHOLD), scalar(np.int32(N_COMPACT))]


def _compact_scatter_ref(args):
    x = args[0].value
    keep = _survivors(x)
    values, index = args[2].value.copy(), args[3].value.copy()
    values[: len(keep)] = x[keep]
    index[: len(keep)] = keep
    return {2: values, 3: index}


N_BLOCK_COUNTS = 700


def _scan_counts_ref(args):
    counts = args[0].value
    inclusive = np.cumsum(counts)
    return {1: (inclusive - counts).astype(np.int32), 2: inclusive[-1:].astype(np.int32)}


COMPACTION = [
    KernelCase("stream_compaction.cu", "compact_count", (G_COMPACT, 1, 1), (256, 1, 1), 0,
               lambda rng: [inp(f32(rng.uniform(0, 1, N_COMPACT))),
                            out(poison(G_COMPACT, np.int32)), scalar(THRESHOLD),
                            scalar(np.int32(N_COMPACT))],
               lambda a: {1: _counts(a[0].value)}, notes="exact"),
    KernelCase("stream_compaction.cu", "compact_scan_counts", (1, 1, 1), (1024, 1, 1), 0,
               lambda rng: [inp(rng.integers(0, 257, N_BLOCK_COUNTS).astype(np.int32)),
                            out(poison(N_BLOCK_COUNTS, np.int32)), out(poison(1, np.int32)),
                            scalar(np.int32(N_BLOCK_COUNTS))],
               _scan_counts_ref, notes="exact"),
    KernelCase("stream_compaction.cu", "compact_scatter", (G_COMPACT, 1, 1), (256, 1, 1), 0,
               _compact_scatter_args, _compact_scatter_ref,
               notes="exact; entries past the survivors keep their poison"),
]

# syncthreads_count.cu ---------------------------------------------------------------------------

N_VOTES = 1000
G_VOTES = grid1(N_VOTES, 256)[0]


def _votes_args(rng):
    x = rng.integers(-50, 100, N_VOTES).astype(np.int32)
    x[256:512] = np.abs(x[256:512]) + 1  # block 1: every thread votes yes
    return [inp(x), out(poison(4 * G_VOTES, np.int32)), scalar(np.int32(N_VOTES))]


def _votes_ref(args):
    x = _tiles(args[0].value, 256)
    valid = _tiles(np.ones(N_VOTES, dtype=bool), 256, False)
    p = valid & (x > 0)
    result = np.stack([p.sum(axis=1), p.all(axis=1), p.any(axis=1),
                       np.full(len(x), 256)], axis=1)
    return {1: result.astype(np.int32).ravel()}


# warp_shuffle.cu and warp_vote.cu ---------------------------------------------------------------

N_WARP = 512
SRC_LANE, DELTA = 13, 11


def _lanes(n: int = N_WARP):
    i = np.arange(n)
    return i, i % 32, i - i % 32


def _shuffle_all_ref(args):
    x = args[0].value
    i, lane, base = _lanes()
    d8 = DELTA % 8
    segment, sub = 8 * (lane // 8), lane % 8
    parts = [x[base + SRC_LANE], np.where(lane >= DELTA, x[i - DELTA], x),
             np.where(lane + DELTA < 32, x[np.minimum(i + DELTA, N_WARP - 1)], x),
             x[base + (lane ^ DELTA)], x[base + segment + SRC_LANE % 8],
             np.where(sub >= d8, x[i - d8], x),
             np.where(sub + d8 < 8, x[np.minimum(i + d8, N_WARP - 1)], x),
             x[base + segment + (sub ^ d8)]]
    return {1: np.concatenate(parts)}


def _rotate_f64_ref(args):
    x = args[0].value
    _, lane, base = _lanes()
    return {1: x[base + (lane + 1) % 32]}


def _width16_ref(args):
    x = args[0].value
    _, lane, base = _lanes()
    return {1: x[base + 16 * (lane // 16) + (15 - lane % 16)] + x[base + (lane ^ 16)]}


def _vote_args(rng):
    x = rng.integers(-20, 20, N_WARP).astype(np.int32)
    x[:32] = np.abs(x[:32]) + 1  # warp 0: all positive
    x[32:64] = -np.abs(x[32:64])  # warp 1: none positive
    return [inp(x), out(poison(6 * N_WARP, np.uint32)), scalar(np.int32(N_WARP))]


def _warp_mask(flags: np.ndarray) -> np.ndarray:
    """Per-lane ballot: the warp's 32 flags as a mask, repeated for each lane of the warp."""
    bits = flags.reshape(-1, 32).astype(np.uint64) << np.arange(32, dtype=np.uint64)
    return np.repeat(bits.sum(axis=1).astype(np.uint32), 32)


def _popcount(v: np.ndarray) -> np.ndarray:
    return np.unpackbits(v.astype("<u4").view(np.uint8).reshape(-1, 4), axis=1).sum(axis=1)


def _vote_ref(args):
    x = args[0].value
    p = x > 0
    ballot = _warp_mask(p)
    per_warp = p.reshape(-1, 32)
    inner = np.where(p, _warp_mask(p & (x & 1 == 1)), 0).astype(np.uint32)
    parts = [np.repeat(per_warp.all(axis=1), 32), np.repeat(per_warp.any(axis=1), 32), ballot,
             np.full(N_WARP, 0xFFFFFFFF), inner, _popcount(ballot)]
    return {1: np.concatenate([np.asarray(q).astype(np.uint32) for q in parts])}


def _match_args(rng):
    x = rng.integers(0, 6, N_WARP).astype(np.int32) * 997
    x[:32] = 5000 + rng.integers(0, 3, 32)  # warp 0: x / 1000 equal across the warp
    x[64:96] = -1999 + rng.integers(0, 3, 32)  # negative values: C division truncates
    return [inp(x), out(poison(3 * N_WARP, np.uint32)), scalar(np.int32(N_WARP))]


def _match_ref(args):
    x = args[0].value
    warps = x.reshape(-1, 32)
    lanes_equal = warps[:, :, None] == warps[:, None, :]
    any_mask = (lanes_equal.astype(np.uint64) << np.arange(32, dtype=np.uint64)).sum(axis=2)
    quotient = np.trunc(warps / 1000).astype(np.int64)
    all_equal = (quotient == quotient[:, :1]).all(axis=1)
    all_mask = np.repeat(np.where(all_equal, 0xFFFFFFFF, 0), 32)
    return {1: np.concatenate([any_mask.ravel(), all_mask,
                               np.repeat(all_equal, 32)]).astype(np.uint32)}


def _reduce_args(rng):
    x = rng.integers(0, 2**32, N_WARP, dtype=np.uint64).astype(np.uint32)
    x[:32] |= np.uint32(0x80000101)  # warp 0: common bits for the AND reduction
    return [inp(x), out(poison(8 * N_WARP, np.uint32)), scalar(np.int32(N_WARP))]


def _reduce_ref(args):
    x = args[0].value
    w = x.reshape(-1, 32)
    odd = np.where(np.arange(32) % 2 == 1, w, 0).astype(np.uint64).sum(axis=1) & 0xFFFFFFFF
    per_warp = [w.astype(np.uint64).sum(axis=1) & 0xFFFFFFFF, w.min(axis=1), w.max(axis=1),
                np.bitwise_and.reduce(w, axis=1), np.bitwise_or.reduce(w, axis=1),
                np.bitwise_xor.reduce(w, axis=1), w.view(np.int32).min(axis=1).view(np.uint32)]
    parts = [np.repeat(np.asarray(v).astype(np.uint32), 32) for v in per_warp]
    parts.append(np.where(np.arange(N_WARP) % 2 == 1, np.repeat(odd, 32), 0).astype(np.uint32))
    return {1: np.concatenate(parts)}


WARP = [
    KernelCase("syncthreads_count.cu", "block_votes", (G_VOTES, 1, 1), (256, 1, 1), 0,
               _votes_args, _votes_ref,
               notes="exact; block 1 all-yes, the last block partial (its _and is 0)"),
    KernelCase("warp_shuffle.cu", "shuffle_all", (N_WARP // 128, 1, 1), (128, 1, 1), 0,
               lambda rng: [inp(rng.integers(-10**6, 10**6, N_WARP).astype(np.int32)),
                            out(poison(8 * N_WARP, np.int32)), scalar(np.int32(N_WARP)),
                            scalar(np.int32(SRC_LANE)), scalar(np.int32(DELTA))],
               _shuffle_all_ref, notes="exact; src_lane 13 also tests masking at width 8"),
    KernelCase("warp_shuffle.cu", "shuffle_rotate_f64", (N_WARP // 128, 1, 1), (128, 1, 1), 0,
               lambda rng: [inp(rng.standard_normal(N_WARP)), out(poison(N_WARP, np.float64)),
                            scalar(np.int32(N_WARP))],
               _rotate_f64_ref, notes="exact"),
    KernelCase("warp_shuffle.cu", "shuffle_width16_f32", (N_WARP // 128, 1, 1), (128, 1, 1), 0,
               lambda rng: [inp(f32(rng.standard_normal(N_WARP))),
                            out(poison(N_WARP, np.float32)), scalar(np.int32(N_WARP))],
               _width16_ref, notes="exact"),
    KernelCase("warp_vote.cu", "warp_votes", (N_WARP // 128, 1, 1), (128, 1, 1), 0,
               _vote_args, _vote_ref,
               notes="exact; __activemask() at a convergent point expected to be all lanes"),
    KernelCase("warp_vote.cu", "warp_match", (N_WARP // 128, 1, 1), (128, 1, 1), 0,
               _match_args, _match_ref, notes="exact"),
    KernelCase("warp_vote.cu", "warp_reduce_intrinsics", (N_WARP // 128, 1, 1), (128, 1, 1), 0,
               _reduce_args, _reduce_ref, notes="exact"),
]

# warp_tiles.cu ---------------------------------------------------------------------------------


def _tiles_args(rng):
    x = rng.integers(-1000, 1000, N_WARP).astype(np.int32)
    x[:4] = np.abs(x[:4]) + 1     # a tile where every lane is positive
    return [inp(x), out(poison(5 * N_WARP, np.int32)), scalar(np.int32(N_WARP))]


def _tiles_ref(args):
    x = args[0].value.astype(np.int64)
    i, lane, _ = _lanes()
    quads = x.reshape(-1, 4)
    odd = (quads & 1).astype(np.int64) << (lane.reshape(-1, 4) % 32)
    tile = lane // 4
    parts = [np.repeat(quads.sum(axis=1), 4), np.repeat(odd.sum(axis=1), 4),
             np.repeat((quads > 0).all(axis=1), 4), np.repeat(quads[:, 3], 4),
             np.where(tile % 2 == 1, tile, 0)]
    return {1: np.concatenate([(np.asarray(q) + 2**31) % 2**32 - 2**31 for q in parts])
            .astype(np.int32)}


TILES = [
    KernelCase("warp_tiles.cu", "tile_ops", (N_WARP // 128, 1, 1), (128, 1, 1), 0,
               _tiles_args, _tiles_ref, notes="exact: integer arithmetic and masks"),
]

# mbarrier_sync.cu ------------------------------------------------------------------------------

G_MB, B_MB = 4, 128


def _mbarrier_ref(args):
    x = args[0].value.astype(np.int64).reshape(G_MB, B_MB)
    t = np.arange(B_MB)
    left, right = 3 * x[:, (t - 1) % B_MB], 3 * x[:, (t + 1) % B_MB]
    even = (3 * x - 3 * x[:, (t + 2) % B_MB]) + 7 * left
    y = np.where(t % 2 == 1, left + right, even)
    return {1: y.astype(np.int32).ravel()}


MBARRIER = [
    KernelCase("mbarrier_sync.cu", "mbarrier_phases", (G_MB, 1, 1), (B_MB, 1, 1), 0,
               lambda rng: [inp(rng.integers(-10**6, 10**6, G_MB * B_MB).astype(np.int32)),
                            out(poison(G_MB * B_MB, np.int32))],
               _mbarrier_ref, notes="exact: integer arithmetic"),
]

CASES = BARRIER_LOOP + SORTS + SCANS + COMPACTION + WARP + TILES + MBARRIER
