"""The portable GEMM kernels (ptxport/blas/kernels/gemm.cu) compiled by ptxport for the cpu
and opencl:0 devices, against numpy in f64: odd sizes that leave partial tiles, transposes,
leading dimensions above the rows (which must stay untouched), batches with a zero stride,
alpha and beta, and the tensor-core (mma.sync) kernel on the CPU target. Inputs are
multiples of 1/8 so that every type computes the exact result. Each kernel variant is one
NVRTC + ptxport compilation, cached on disk after the first run."""

from __future__ import annotations

import numpy as np
import pytest

from ptxport import Device, blas
from ptxport.blas import _Gemm, portable
from ptxport.blas.portable import TileConfig
from ptxport.errors import InvalidValueError
from ptxport.runtime.backends import availability

RNG = np.random.default_rng(3)
BF16 = np.dtype("<u2")
SIMT = TileConfig(False, 32, 32, 8, 2, 2)
MMA = TileConfig(True, 64, 64, 32, wm=2, wn=2)


def _device(name: str) -> Device:
    ok, why = availability(name.partition(":")[0])
    if not ok:
        pytest.skip(f"no {name} here: {why}")
    return Device(name)


def _stored(values: np.ndarray, dtype) -> np.ndarray:
    """`values` rounded to nearest even in `dtype` (bfloat16: its 16 bits)."""
    if dtype == BF16:
        bits = values.astype(np.float32).view(np.uint32)
        return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return values.astype(dtype)


def _widened(values: np.ndarray, dtype) -> np.ndarray:
    if dtype == BF16:
        return (values.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return values.astype(np.float64)


def _check(device: Device, config: TileConfig, ta: bool, tb: bool, m: int, n: int, k: int,
           in_type, out_type, batch: int = 1, aligned: bool = False) -> None:
    """aligned: leading dimensions and batch strides multiples of 16 bytes, so that the
    kernels take their vector loads (partial groups at the edges stay element-wise)."""
    stream = device.create_stream()
    ra, ca = (k, m) if ta else (m, k)
    rb, cb = (n, k) if tb else (k, n)
    lds = tuple(-(-x // 8) * 8 + 8 for x in (ra, rb, m)) if aligned else (ra + 1, rb + 3, m + 2)
    # A is shared by every batch (stride 0); B and C have one matrix per batch
    a = RNG.integers(-8, 9, (ca, lds[0])) / 8
    b = RNG.integers(-8, 9, (batch, cb, lds[1])) / 8
    c = RNG.integers(-8, 9, (batch, n, lds[2])) / 8
    buffers = []
    for values, dtype in ((a, in_type), (b, in_type), (c, out_type)):
        data = np.ascontiguousarray(_stored(values, dtype)).ravel()
        buf = device.allocate(data.nbytes, stream=stream)
        buf.copy_from(data, stream=stream)
        buffers.append(buf)
    problem = _Gemm(ta, tb, m, n, k, lds, (0, cb * lds[1], n * lds[2]), batch)
    portable.launch_gemm(stream, config, problem, *buffers, np.dtype(in_type),
                         np.dtype(out_type), 0.5, -2.0)
    got = np.empty(c.size, out_type)
    buffers[2].copy_to(got, stream=stream)
    stream.sync()
    got = _widened(got.reshape(c.shape), out_type)
    op_a = a[:, :ra].T
    op_a = op_a.T if ta else op_a
    for t in range(batch):
        op_b = b[t, :, :rb].T
        op_b = op_b.T if tb else op_b
        want = 0.5 * op_a @ op_b - 2 * c[t, :, :m].T   # exact; rounded once when stored
        np.testing.assert_array_equal(got[t, :, :m].T,
                                      _widened(_stored(want, out_type), out_type))
        # rows between m and ldc are not C's: untouched
        np.testing.assert_array_equal(got[t, :, m:], c[t, :, m:])


# The plain SIMT kernel on cpu, under `pytest -m slow` (33 s and 38 s of LLVM in a fresh
# CI): on cpu the SIMT kernel's tiles and k loop run in test_simt_split_k's and
# test_simt_cp_async's cpu cases (the same 32 x 32 x 8 tiles, A transposed), the plain
# kernel with the mixed transposes on opencl:0 (test_simt_f32_on_opencl); cpu runs all
# four transposes through the lanes and mma kernels (test_lanes_kernel_on_cpu,
# test_mma_pipeline_on_cpu)
@pytest.mark.slow
@pytest.mark.parametrize("ta, tb", [(False, False), (True, True)])
def test_simt_f32_on_cpu(ta, tb):
    _check(_device("cpu"), SIMT, ta, tb, 37, 29, 19, np.float32, np.float32, batch=2)


# The SIMT kernel's variants below run on opencl:0 here (and cuda:0 on a GPU), not on cpu:
# cpu devices take the lanes kernel (tested below), each SIMT variant costs the CPU target
# about a minute of LLVM in a fresh CI, and the two tests above keep the SIMT kernel itself
# checked on cpu.
SIMT_VEC = TileConfig(False, 64, 64, 16, 4, 4)   # 4 floats a thread per tile: float4 loads


@pytest.mark.parametrize("device", ["opencl:0"])
@pytest.mark.parametrize("ta, tb", [(False, True), (True, False)])
def test_simt_f32_vector_loads(device, ta, tb):
    _check(_device(device), SIMT_VEC, ta, tb, 37, 29, 19, np.float32, np.float32, batch=2,
           aligned=True)


@pytest.mark.parametrize("device", ["opencl:0"])
def test_simt_fragments_ahead(device):
    # shared values read a k-step ahead; the next tile's first ones after the barrier inside
    # the last k-step (k = 40: three tiles of 16)
    _check(_device(device), TileConfig(False, 64, 64, 16, 4, 4, ahead=True), True, False, 37,
           29, 40, np.float32, np.float32, batch=2, aligned=True)


SIMT_WARP = TileConfig(False, 64, 64, 16, 4, 4, warp=True)


@pytest.mark.parametrize("device", ["opencl:0", "cuda:0"])
@pytest.mark.parametrize("m, n, k", [(37, 29, 40), (64, 128, 48)])
def test_simt_warp_tiles(device, m, n, k):
    # threads in 32 x 16 warp tiles; 64 x 128 x 48: whole tiles, the EVEN variant (no edge
    # checks at all)
    _check(_device(device), SIMT_WARP, True, False, m, n, k, np.float32, np.float32, batch=2,
           aligned=True)


CP_ASYNC = (TileConfig(False, 64, 64, 8, 4, 4, cpasync=True),
            TileConfig(False, 64, 64, 16, 4, 4, ahead=True, warp=True, cpasync=True))


# every case on opencl:0 (and cuda:0 on a GPU); one on cpu, with 2 x 2 micro-tiles (the same
# three-buffer cp.async ring; 4 x 4 cost 40 s of LLVM in a fresh CI, cp.async's gang lowering
# has its own tests)
@pytest.mark.parametrize("device, config, ta, tb", [
    ("cpu", TileConfig(False, 32, 32, 8, 2, 2, cpasync=True), True, False),
    *((d, c, ta, tb) for d in ("opencl:0", "cuda:0") for c in CP_ASYNC
      for ta, tb in ((False, False), (True, False), (False, True)))],
    ids=lambda v: v.label if isinstance(v, TileConfig) else str(v))
def test_simt_cp_async(device, config, ta, tb):
    # tiles copied element by element with cp.async (zero-filled at the edges): three
    # buffers with BK = 8 (k = 40: five k-steps around the ring), two with BK = 16
    _check(_device(device), config, ta, tb, 37, 29, 40, np.float32, np.float32, batch=2)


def test_simt_cp_async_f64_and_whole_tiles():
    _check(_device("opencl:0"), TileConfig(False, 64, 64, 8, 4, 4, cpasync=True), True, True,
           33, 17, 9, np.float64, np.float64)
    _check(_device("opencl:0"), TileConfig(False, 64, 64, 8, 4, 4, warp=True, cpasync=True),
           True, False, 128, 64, 32, np.float32, np.float32, aligned=True)


def test_simt_cp_async_is_ignored_for_16_bit_data():
    # the SIMT kernel widens 16-bit inputs in registers: those tiles take the staged path
    # (gemm.cu's SIMT_ASYNC, the same on every device). On opencl:0, where 16-bit GEMMs run
    # this kernel; on cpu (which takes the mma kernel for them) it cost about a minute of LLVM
    # in a fresh CI, and cp.async on cpu has test_simt_cp_async's case
    _check(_device("opencl:0"), TileConfig(False, 32, 32, 8, 2, 2, cpasync=True), False, True,
           37, 29, 40, BF16, BF16)


@pytest.mark.parametrize("device", ["opencl:0"])
def test_simt_whole_tiles(device):
    _check(_device(device), SIMT_VEC, False, True, 128, 64, 32, np.float32, np.float32,
           aligned=True)


# k split among blocks (gemm.cu's SPLIT): each part's partial sums meet in a workspace, the
# last block of a tile adds them and stores C. Edges, a batch (the parts of every matrix),
# and whole tiles with aligned C (the 16-byte epilogue stores)
@pytest.mark.parametrize("device, config, m, n, k, batch, aligned", [
    ("cpu", TileConfig(False, 32, 32, 8, 2, 2, split=2), 37, 45, 77, 2, False),
    ("cpu", TileConfig(False, 32, 32, 8, 4, 4, split=3), 64, 32, 96, 1, True),
    ("opencl:0", TileConfig(False, 32, 32, 8, 2, 2, split=2), 37, 45, 77, 2, False)])
def test_simt_split_k(device, config, m, n, k, batch, aligned):
    _check(_device(device), config, True, False, m, n, k, np.float32, np.float32, batch,
           aligned)


def test_split_k_workspace_per_stream_and_counters_reset():
    device = _device("cpu")
    config = TileConfig(False, 32, 32, 8, 2, 2, split=2)
    one, two = device.create_stream(), device.create_stream()
    work, counters = portable._split_workspace(one, 4, config, np.dtype(np.float32))
    assert portable._split_workspace(one, 2, config, np.dtype(np.float32))[0] is work
    assert portable._split_workspace(two, 4, config, np.dtype(np.float32))[0] is not work
    bigger = portable._split_workspace(one, 8, config, np.dtype(np.float32))
    assert bigger[0].size >= 8 * 2 * 32 * 32 * 4 and bigger[1].size >= 8 * 4
    # two launches in a row on one stream: the first left every tile's counter at zero
    m, n, k = 64, 64, 40
    a, b = (RNG.integers(-8, 9, (m, k)) / 8).astype(np.float32), \
        (RNG.integers(-8, 9, (k, n)) / 8).astype(np.float32)
    bufs = [device.allocate(x.nbytes, stream=one) for x in (a, b, np.empty((m, n), np.float32))]
    for buf, x in zip(bufs, (a, b), strict=False):
        buf.copy_from(np.asfortranarray(x).ravel(order="K"), stream=one)
    problem = _Gemm(False, False, m, n, k, (m, k, m), (0, 0, 0), 1)
    for _ in range(2):
        portable.launch_gemm(one, config, problem, *bufs, np.dtype(np.float32),
                             np.dtype(np.float32), 1.0, 0.0)
    got = np.empty(m * n, np.float32)
    bufs[2].copy_to(got, stream=one)
    counts = np.empty(portable._WORKSPACES[one][1].size // 4, np.uint32)
    portable._WORKSPACES[one][1].copy_to(counts, stream=one)
    one.sync()
    np.testing.assert_array_equal(got.reshape(n, m).T, a.astype(np.float64) @ b)
    assert not counts.any()


def test_split_k_needs_a_k_step_a_part():
    config = TileConfig(False, 32, 32, 8, 2, 2, split=3)
    assert portable._splits(17, config)        # 3 k-steps: one a part
    assert not portable._splits(16, config)    # 2 k-steps: the third part would be empty


def test_simt_f64_on_opencl():
    # (on opencl:0, as the SIMT variants above: cpu devices take the lanes kernel for f64,
    # test_lanes_kernel_f64 below; this one cost about 25 s of LLVM on cpu in a fresh CI)
    _check(_device("opencl:0"), SIMT, True, False, 33, 17, 9, np.float64, np.float64)


@pytest.mark.parametrize("device", ["opencl:0"])
def test_simt_f64_four_vector_reads(device):
    # runs of 4 doubles read as one 32-byte vector from shared memory (the first candidate,
    # which cpu and opencl devices take untuned, has 4 x 4 micro-tiles)
    _check(_device(device), portable.SIMT_CANDIDATES[0], False, True, 37, 29, 19, np.float64,
           np.float64)


@pytest.mark.parametrize("in_type, out_type", [(BF16, np.float32), (np.float16, np.float16)])
def test_mma_kernel_on_cpu(in_type, out_type):
    # mma.sync runs in the CPU target's resolver: small, but odd in every dimension
    _check(_device("cpu"), MMA, True, False, 37, 29, 40, in_type, out_type)


# three cp.async stages, wrapped around more than once by k = 100 (four k-steps of 32)
MMA_PIPELINE = TileConfig(True, 64, 64, 32, wm=2, wn=2, stages=3)


@pytest.mark.parametrize("ta, tb", [(False, False), (False, True), (True, False), (True, True)])
def test_mma_pipeline_on_cpu(ta, tb):
    # aligned: cp.async with zero fill at the edges, ldmatrix (.trans for A not transposed
    # and B transposed) from the swizzled tiles
    _check(_device("cpu"), MMA_PIPELINE, ta, tb, 37, 29, 100, BF16, np.float32, batch=2,
           aligned=True)


@pytest.mark.parametrize("m, n, k", [(37, 29, 100), (64, 128, 96)])
def test_mma_fragments_ahead_on_cpu(m, n, k):
    # fragments double-buffered, the next stage's first ones read across the barrier;
    # 64 x 128 x 96: whole tiles (EVEN: cp.async of full chunks, no edge checks)
    _check(_device("cpu"), TileConfig(True, 64, 64, 32, wm=2, wn=2, stages=3, ahead=True),
           True, False, m, n, k, BF16, np.float32, aligned=True)


@pytest.mark.parametrize("config", portable.MMA_CANDIDATES, ids=lambda c: c.label)
@pytest.mark.parametrize("m, n, k", [(300, 200, 170), (256, 512, 192)])
def test_mma_candidates_on_cuda(config, m, n, k):
    # the tiles the autotuner chooses from, on an NVIDIA GPU: edges, and whole tiles (EVEN)
    _check(_device("cuda:0"), config, True, False, m, n, k, BF16, BF16, aligned=True)


@pytest.mark.parametrize("config", portable.SIMT_CANDIDATES, ids=lambda c: c.label)
@pytest.mark.parametrize("m, n, k", [(300, 200, 170), (256, 512, 192)])
def test_simt_candidates_on_cuda(config, m, n, k):
    _check(_device("cuda:0"), config, True, False, m, n, k, np.float32, np.float32,
           aligned=True)


def test_mma_late_copies_on_cpu():
    # each k-step's copies issued after its first mmas (BK = 64: four 16-wide steps)
    _check(_device("cpu"), TileConfig(True, 64, 64, 64, wm=2, wn=2, stages=3, late=True),
           True, False, 37, 29, 200, BF16, np.float32, aligned=True)


# the warpgroup kernel (sm_90a's wgmma) on the CPU target's warp gangs: two warpgroups of
# 64 x 64, three stages with one wgmma group in flight (copies one k-step ahead), k = 200:
# four k-steps of 64, the last partial. Marked slow (`pytest -m slow`): the variant is about
# 60k lines of LLVM IR on the CPU target, whose first compile ran past the suite's 600 s
# per test in a fresh CI simulation on a 2-core machine (it passed there with a longer
# timeout); whole tiles (EVEN), K-major operands and the other shapes are checked on the
# H100 below, every swizzle and major of the instruction itself on the cpu in
# tests/codegen/test_wgmma.py.
WGMMA = TileConfig(True, 128, 64, 64, wm=2, wn=1, stages=3, ahead=True, wgmma=True)


@pytest.mark.slow
@pytest.mark.parametrize("ta, tb, aligned", [(True, False, True), (False, True, False)])
def test_wgmma_kernel_on_cpu(ta, tb, aligned):
    # both operands K-major (k contiguous: A transposed, B not), then both MN-major, in
    # shared tiles under the 128-byte swizzle: cp.async with zero fill at the edges, or
    # (leading dimensions not multiples of 16 bytes) element-wise copies
    _check(_device("cpu"), WGMMA, ta, tb, 70, 37, 200, BF16, np.float32, batch=2,
           aligned=aligned)


@pytest.mark.parametrize("config", portable.WGMMA_CANDIDATES, ids=lambda c: c.label)
@pytest.mark.parametrize("m, n, k", [(300, 200, 170), (256, 512, 192)])
def test_wgmma_candidates_on_cuda(config, m, n, k):
    # on an NVIDIA sm_90 GPU (the only one wgmma runs on): edges, and whole tiles (EVEN)
    device = _device("cuda:0")
    if not portable._uses_wgmma(device):
        pytest.skip(f"wgmma needs sm_90, not {device.name}")
    _check(device, config, True, False, m, n, k, BF16, BF16, aligned=True)


@pytest.mark.parametrize("ta, tb", [(False, False), (False, True), (True, True)])
@pytest.mark.parametrize("aligned", [True, False])
def test_wgmma_layouts_on_cuda(ta, tb, aligned):
    device = _device("cuda:0")
    if not portable._uses_wgmma(device):
        pytest.skip(f"wgmma needs sm_90, not {device.name}")
    _check(device, portable.WGMMA_CANDIDATES[0], ta, tb, 300, 200, 170, BF16, np.float32,
           batch=2, aligned=aligned)


def test_wgmma_only_on_sm_90():
    from types import SimpleNamespace

    def gpu(cc):
        return SimpleNamespace(backend="cuda", compute_capability=cc)
    assert portable._uses_wgmma(gpu((9, 0)))
    assert not portable._uses_wgmma(gpu((8, 0))) and not portable._uses_wgmma(gpu((10, 0)))
    assert not portable._uses_wgmma(Device("cpu"))
    assert portable.candidates(True, np.dtype(np.float32), wgmma=True)[0].wgmma
    assert not any(c.wgmma for c in portable.candidates(True, np.dtype(np.float32)))


def test_tile_labels_round_trip():
    for config in (*portable.SIMT_CANDIDATES, *portable.MMA_CANDIDATES,
                   *portable.WGMMA_CANDIDATES, MMA_PIPELINE, WGMMA):
        assert TileConfig.parse(config.label) == config
    with pytest.raises(InvalidValueError, match="mma:BMxBNxBK"):
        TileConfig.parse("mma:128x128")
    with pytest.raises(InvalidValueError):   # warp tiles: a SIMT option only
        TileConfig.parse("mma:128x128x32/2x4/s3/warp")
    with pytest.raises(InvalidValueError):
        TileConfig.parse("simt:128x128x8/8x8/late")
    assert TileConfig.parse("mma:128x128x32/2x4/s3/ahead").ahead
    assert TileConfig.parse("simt:128x128x8/8x8/ahead/warp") == \
        TileConfig(False, 128, 128, 8, 8, 8, ahead=True, warp=True)
    assert TileConfig.parse("mma:128x128x64/2x2/s3/late").late
    assert TileConfig.parse("wgmma:128x256x64/2x1/s4/ahead") == portable.WGMMA_CANDIDATES[0]
    assert TileConfig.parse("simt:128x128x8/8x8/warp/cpasync").cpasync
    assert TileConfig.parse("simt:128x128x8/8x16/warp/k2") == \
        TileConfig(False, 128, 128, 8, 8, 16, warp=True, split=2)
    assert TileConfig(False, 64, 64, 8, 4, 4, split=3).label == "simt:64x64x8/4x4/k3"
    with pytest.raises(InvalidValueError):   # late copies: the mma.sync kernel's only
        TileConfig.parse("wgmma:128x256x64/2x1/s4/late")


def test_simt_candidates_fit_static_shared_memory(monkeypatch):
    # 128 x 128 x 16 tiles of doubles need 67 KB: not a candidate for f64, one for f32
    big = TileConfig(False, 128, 128, 16, 8, 8, warp=True)
    monkeypatch.setattr(portable, "SIMT_CANDIDATES", (*portable.SIMT_CANDIDATES, big))
    assert big in portable.candidates(False, np.dtype(np.float32))
    assert big not in portable.candidates(False, np.dtype(np.float64))
    assert all(c.static_shared(4) <= 48 * 1024 for c in portable.candidates(
        False, np.dtype(np.float32)))


def test_small_and_large_problems_are_tuned_apart():
    assert portable.tune_size(1000, 1000) == 1024
    assert portable.tune_size(8192, 8192) == 8192
    assert portable.tune_size(16384, 16384) == 8192
    assert portable.tune_size(4000, 4000) == 4096
    assert portable.tune_size(512, 512, batch=16) == 2048   # C's area counts every batch
    assert portable.tune_size(0, 5) == 1024


@pytest.mark.parametrize("ta, tb", [(False, True), (True, False)])
def test_simt_f32_on_opencl(ta, tb):
    _check(_device("opencl:0"), SIMT, ta, tb, 37, 29, 19, np.float32, np.float32, batch=2)


def test_simt_16_bit_on_opencl():
    # SPIR-V lowers no mma.sync: the SIMT kernel widens bf16 to f32
    _check(_device("opencl:0"), SIMT, False, True, 37, 29, 40, BF16, BF16)


def test_tensor_cores_only_where_the_target_has_mma():
    assert portable._uses_mma(Device("cpu"), np.dtype(np.float16))
    assert not portable._uses_mma(Device("cpu"), np.dtype(np.float32))


def test_blas_gemm_on_opencl_runs_the_portable_kernel():
    device = _device("opencl:0")
    stream = device.create_stream()
    m, n, k = 21, 13, 9
    a = (RNG.integers(-8, 9, (k, m)) / 8).astype(np.float32)   # column-major m x k
    b = (RNG.integers(-8, 9, (n, k)) / 8).astype(np.float32)   # column-major k x n
    buffers = []
    for values in (a, b, np.zeros((n, m), np.float32)):
        buf = device.allocate(values.nbytes, stream=stream)
        buf.copy_from(np.ascontiguousarray(values).ravel(), stream=stream)
        buffers.append(buf)
    blas.gemm("N", "N", m, n, k, 1.0, buffers[0], m, buffers[1], k, 0.0, buffers[2], m,
              stream=stream)
    got = np.empty((n, m), np.float32)
    buffers[2].copy_to(got, stream=stream)
    stream.sync()
    np.testing.assert_array_equal(got.T, a.T.astype(np.float64) @ b.T)


def test_the_autotuner_keeps_the_first_candidate_within_two_percent(monkeypatch, tmp_path):
    # timings within the noise of the fastest go to the earlier candidate, every time; the
    # choice is cached per size class and layout
    from types import SimpleNamespace

    monkeypatch.setenv("PTXPORT_CACHE_DIR", str(tmp_path))
    tiles = portable.candidates(False, np.dtype(np.float32))
    times = {tiles[0]: 1.05, tiles[1]: 1.01, tiles[2]: 1.0}
    timed = []

    def fake_time(device, config, in_type, out_type, size, layout="NN", depth=None):
        timed.append((config, size, layout))
        return times.get(config, 2.0)

    monkeypatch.setattr(portable, "time_tile", fake_time)
    gpu = SimpleNamespace(backend="cuda", name="fake GPU")
    f32 = np.dtype(np.float32)
    assert portable.tuned_config(gpu, False, f32, f32, 4096, "TN") == tiles[1]
    assert {(size, layout) for _, size, layout in timed} == {(4096, "TN")}
    assert len(timed) == len(tiles)
    assert portable.tuned_config(gpu, False, f32, f32, 4096, "TN") == tiles[1]   # cached
    assert len(timed) == len(tiles)
    portable.tuned_config(gpu, False, f32, f32, 4096, "NN")   # another layout: tuned apart
    assert len(timed) == 2 * len(tiles)


# the lanes kernel (gemm_lanes.cuh), which cpu devices take instead of the SIMT kernel: small
# panels so that small problems cross them (k = 70: three panels of 32, the last partial;
# n = 29: two blocks of 16 columns, four groups of 4 each, the last past n; m = 37: two row
# tiles, the second moved up to overlap the first)
LANES = TileConfig(False, 32, 16, 32, 2, 4, lanes=True)


# each operand both ways in these two; the mixed transposes (15 s of LLVM each in a fresh CI)
# under `pytest -m slow`, and in other tiles below: (False, True) two rows a lane, (True,
# False) f64
@pytest.mark.parametrize("ta, tb", [
    (False, False), pytest.param(False, True, marks=pytest.mark.slow),
    pytest.param(True, False, marks=pytest.mark.slow), (True, True)])
def test_lanes_kernel_on_cpu(ta, tb):
    _check(_device("cpu"), LANES, ta, tb, 37, 29, 70, np.float32, np.float32, batch=2)


@pytest.mark.parametrize("m, n, k", [(5, 3, 2), (64, 32, 64), (33, 16, 0)])
def test_lanes_kernel_edges(m, n, k):
    # fewer rows than a warp (rows clamped); whole tiles (EVEN: no edge tests); k = 0 (C =
    # beta C, one empty panel)
    _check(_device("cpu"), LANES, False, False, m, n, k, np.float32, np.float32)


@pytest.mark.parametrize("m", [37, 100])
def test_lanes_kernel_two_rows_a_lane(m):
    # 64-row tiles, each lane two rows 32 apart: fewer rows than a tile (clamped), and two
    # tiles, the second moved up to overlap the first
    _check(_device("cpu"), TileConfig(False, 64, 16, 32, 2, 4, lanes=True), False, True, m,
           29, 70, np.float32, np.float32)


def test_lanes_first_candidate():
    # the tile near-ties go to (64 x 256 x 128, two rows and four columns a lane): edges in
    # every dimension, two panels, the second partial
    _check(_device("cpu"), portable.LANES_CANDIDATES[0], False, False, 100, 70, 130,
           np.float32, np.float32)


def test_lanes_kernel_f64():
    _check(_device("cpu"), LANES, True, False, 37, 29, 40, np.float64, np.float64)


def test_lanes_labels_and_candidates():
    for config in (*portable.LANES_CANDIDATES, LANES):
        assert TileConfig.parse(config.label) == config
    assert LANES.label == "lanes:32x16x32/4/u2"
    with pytest.raises(InvalidValueError):
        TileConfig.parse("lanes:48x16x32/4/u2")   # a block is one warp: 32 rows a lane
    f32, f64 = np.dtype(np.float32), np.dtype(np.float64)
    assert portable.candidates(False, f32, lanes=True) == portable.LANES_CANDIDATES
    # panels of doubles too (dynamic shared memory, up to a cpu block's 227 KiB), but not
    # the widest tiles' (64 x 128 x 128: 256 KiB)
    doubles = portable.candidates(False, f64, lanes=True)
    assert doubles == tuple(c for c in portable.LANES_CANDIDATES
                            if c.static_shared(8) <= 227 * 1024)
    assert doubles[0].bn == 128 and len(doubles) >= 3
    assert max(c.static_shared(8) for c in doubles) > 48 * 1024


def test_cpu_size_classes():
    # by C's area, from 256 up, but no class past the size where 64 x 64 tiles make 64
    # blocks a worker: one worker 512, 16 workers 2048
    size = portable.cpu_tune_size
    assert [size(n, n, 1, 16) for n in (100, 256, 400, 1000, 1400, 3000, 8000)] == \
        [256, 256, 512, 1024, 1024, 2048, 2048]
    assert [size(n, n, 1, 1) for n in (100, 300, 1000, 8000)] == [256, 256, 512, 512]
    assert size(256, 256, 16, 16) == 1024   # every batch counts
    assert size(0, 5, 1, 4) == 256


def test_cpu_tuning_depth_is_bounded():
    # the tuning GEMM's depth at every class the workers have: whole 128-deep panels, at
    # most the size, and one launch at most _CPU_TUNE_FLOP a worker where the depth was cut
    for workers in (1, 2, 16, 64):
        largest = portable.cpu_tune_size(1 << 20, 1 << 20, 1, workers)
        for size in (s for s in portable._CPU_TUNE_SIZES if s <= largest):
            depth = portable.cpu_tune_depth(size, workers)
            assert depth % 128 == 0 and 128 <= depth <= size
            assert depth == size or 2 * size * size * depth <= \
                portable._CPU_TUNE_FLOP * workers
    assert portable.cpu_tune_depth(512, 1) == 512
    assert portable.cpu_tune_depth(2048, 16) == 896


def test_cpu_tuning_keeps_each_candidates_faster_pass(monkeypatch, tmp_path):
    # cpu tuning times every candidate twice and keeps its faster time: a candidate slowed
    # in the first pass (the host busy then) still wins when it is the fastest
    from types import SimpleNamespace

    monkeypatch.setenv("PTXPORT_CACHE_DIR", str(tmp_path))
    f32 = np.dtype(np.float32)
    tiles = portable.candidates(False, f32, lanes=True)
    calls = []

    def fake_time(device, config, in_type, out_type, size, layout="NN", depth=None):
        calls.append(config)
        first = calls.count(config) == 1
        return (5.0 if first else 1.0) if config == tiles[2] else 2.0

    monkeypatch.setattr(portable, "time_tile", fake_time)
    cpu = SimpleNamespace(backend="cpu", name="fake CPU")
    assert portable.tuned_config(cpu, False, f32, f32, 1024) == tiles[2]
    assert calls == list(tiles) * 2


def test_cpu_tuning_keeps_the_first_candidate_within_the_noise(monkeypatch, tmp_path):
    # on a cpu the first candidate stays the pick unless another times more than 10% faster
    # (one tile's time moves that much between runs on a busy host); elsewhere 2%
    from types import SimpleNamespace

    from ptxport.runtime.backends.cpu import executor

    monkeypatch.setenv("PTXPORT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(executor, "_WORKERS", 16)     # (256 and 1024: classes of their own)
    f32 = np.dtype(np.float32)
    tiles = portable.candidates(False, f32, lanes=True)
    first = {256: 1.08, 1024: 1.12}

    def fake_time(device, config, in_type, out_type, size, layout="NN", depth=None):
        return first[size] if config == tiles[0] else 1.0 if config == tiles[1] else 2.0

    monkeypatch.setattr(portable, "time_tile", fake_time)
    cpu = SimpleNamespace(backend="cpu", name="fake CPU")
    assert portable.tuned_config(cpu, False, f32, f32, 256) == tiles[0]
    assert portable.tuned_config(cpu, False, f32, f32, 1024) == tiles[1]


def test_cpu_tuning_per_size_class_and_workers(monkeypatch, tmp_path):
    # the cpu device tunes the lanes kernel's candidates once per (size class, workers,
    # layout), at the class's size and bounded depth, and caches the choice
    from types import SimpleNamespace

    from ptxport.runtime.backends.cpu import executor

    monkeypatch.setenv("PTXPORT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(executor, "_WORKERS", 16)
    f32 = np.dtype(np.float32)
    tiles = portable.candidates(False, f32, lanes=True)
    timed = []
    fastest = {256: tiles[2], 1024: tiles[1], 2048: tiles[0]}

    def fake_time(device, config, in_type, out_type, size, layout="NN", depth=None):
        timed.append((size, depth, layout))
        return 1.0 if config == fastest[size] else 2.0

    monkeypatch.setattr(portable, "time_tile", fake_time)
    cpu = SimpleNamespace(backend="cpu", name="fake CPU")

    def tile(m, n, k):
        return portable.tile_for(cpu, _Gemm(False, False, m, n, k, (m, k, m), (0, 0, 0), 1),
                                 f32, f32)
    assert tile(200, 300, 50) == tiles[2]
    assert set(timed) == {(256, 256, "NN")} and len(timed) == 2 * len(tiles)   # two passes
    assert tile(1000, 1100, 7) == tiles[1]
    assert tile(4096, 4096, 4096) == tiles[0]
    assert set(timed[-2 * len(tiles):]) == {(2048, 896, "NN")}
    assert tile(3000, 3000, 10) == tiles[0] and len(timed) == 6 * len(tiles)   # cached
    monkeypatch.setattr(executor, "_WORKERS", 1)   # another worker count: tuned apart
    fastest[512] = tiles[3]
    assert tile(4096, 4096, 4096) == tiles[3]
    assert timed[-1] == (512, 512, "NN")
    # the mma kernel (16-bit data) is not tuned on cpu devices
    assert portable.tuned_config(cpu, True, BF16, f32) == portable.MMA_CANDIDATES[0]
    assert len(timed) == 8 * len(tiles)
