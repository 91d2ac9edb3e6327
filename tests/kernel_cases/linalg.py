"""Cases for the numerical workloads: gemm_tiled, mma_sync, ldmatrix_mma, matvec, spmv_csr,
convolution, stencil_1d/2d/3d, softmax, layernorm, nbody and mandelbrot.

Where a kernel's float operations are all determined (explicit fmaf, or the contraction that
NVRTC's PTX shows: noted per case), the reference replays them one by one with exact fma models
and is bit-exact; the small tolerances given only leave room for another compiler's choices.
Kernels with approximate intrinsics or data-dependent summation (softmax, layernorm, nbody) are
compared with float64 references and the tolerances their comments state.
"""

from __future__ import annotations

import numpy as np

from ._core import KernelCase, inout, inp, out, scalar
from ._numerics import f32, fma32, fma64, poison

__all__ = ["CASES"]


def grid1(n: int, block: int) -> tuple[int, int, int]:
    return ((n + block - 1) // block, 1, 1)


# gemm_tiled.cu ----------------------------------------------------------------------------------

M, N, K = 40, 36, 50
GEMM_GRID = ((N + 15) // 16, (M + 15) // 16, 1)


def _gemm_args(dtype):
    def make(rng):
        a = rng.uniform(-1, 1, M * K).astype(dtype)
        b = rng.uniform(-1, 1, K * N).astype(dtype)
        c = rng.uniform(-1, 1, M * N).astype(dtype)
        return [scalar(np.int32(M)), scalar(np.int32(N)), scalar(np.int32(K)),
                scalar(dtype(1.5)), inp(a), inp(b), scalar(dtype(-0.5)), inout(c)]
    return make


def _gemm_ref(args):
    """acc = fma(A[r][k], B[k][c], acc) in k order, then C = fma(acc, alpha, C * beta), as the
    PTX has it."""
    alpha, a, b, beta, c = (args[k].value for k in (3, 4, 5, 6, 7))
    fma = fma32 if a.dtype == np.float32 else fma64
    a, b = a.reshape(M, K), b.reshape(K, N)
    acc = np.zeros((M, N), dtype=a.dtype)
    for k in range(K):
        acc = fma(a[:, k:k + 1], b[k:k + 1, :], acc)
    return {7: fma(acc, alpha, c.reshape(M, N) * beta).astype(a.dtype).ravel()}


GEMM = [
    KernelCase("gemm_tiled.cu", kernel, GEMM_GRID, (16, 16, 1), 0, _gemm_args(dtype), _gemm_ref,
               ulp=2, atol=1e-6 if dtype == np.float32 else 1e-14,
               notes=f"{what}; exact model of the PTX's fmas; M, N, K not multiples of 16")
    for kernel, dtype, what in [
        ("sgemm_tiled", np.float32, "float"), ("dgemm_tiled", np.float64, "double"),
        ("_Z12gemm_tiled_tIfEviiiT_PKS0_S2_S0_PS0_", np.float32, "gemm_tiled_t<float>"),
        ("_Z12gemm_tiled_tIdEviiiT_PKS0_S2_S0_PS0_", np.float64, "gemm_tiled_t<double>")]
]

# matvec.cu --------------------------------------------------------------------------------------


def _gemv_args(rows, cols, dtype=np.float32):
    def make(rng):
        return [inp(rng.uniform(-1, 1, rows * cols).astype(dtype)),
                inp(rng.uniform(-1, 1, rows if dtype == np.float64 else cols).astype(dtype)),
                out(poison(cols if dtype == np.float64 else rows, dtype)),
                scalar(np.int32(rows)), scalar(np.int32(cols))]
    return make


def _gemv_row_ref(args):
    rows, cols = int(args[3].value), int(args[4].value)
    a, x = args[0].value.reshape(rows, cols), args[1].value
    acc = np.zeros(rows, dtype=np.float32)
    for c in range(cols):
        acc = fma32(a[:, c], x[c], acc)
    return {2: acc}


def _shfl_down_sum(v: np.ndarray) -> np.ndarray:
    """Lane 0's result of `v += __shfl_down_sync(v, o)` for o = 16 .. 1 (lanes whose source
    is past the warp get their own value back)."""
    for o in (16, 8, 4, 2, 1):
        source = np.concatenate([v[:, o:], v[:, 32 - o:]], axis=1)
        v = v + source
    return v[:, 0]


def _gemv_warp_ref(args):
    rows, cols = int(args[3].value), int(args[4].value)
    a, x = args[0].value.reshape(rows, cols), args[1].value
    lanes = np.zeros((rows, 32), dtype=np.float32)
    for c0 in range(0, cols, 32):
        width = min(32, cols - c0)
        lanes[:, :width] = fma32(a[:, c0:c0 + width], x[c0:c0 + width], lanes[:, :width])
    return {2: _shfl_down_sum(lanes)}


def _gemv_t_ref(args):
    rows, cols = int(args[3].value), int(args[4].value)
    a, x = args[0].value.reshape(rows, cols), args[1].value
    acc = np.zeros(cols)
    for r in range(rows):
        acc = fma64(a[r], x[r], acc)
    return {2: acc}


MATVEC = [
    KernelCase("matvec.cu", "gemv_thread_per_row", grid1(300, 128), (128, 1, 1), 0,
               _gemv_args(300, 77), _gemv_row_ref, notes="exact: explicit fmaf in order"),
    KernelCase("matvec.cu", "gemv_warp_per_row", grid1(37, 8), (256, 1, 1), 0,
               _gemv_args(37, 100), _gemv_warp_ref,
               notes="exact: per-lane fmaf then the shuffle tree; the last block has 5 rows"),
    KernelCase("matvec.cu", "gemv_transposed_f64", grid1(300, 128), (128, 1, 1), 0,
               _gemv_args(65, 300, np.float64), _gemv_t_ref, notes="exact: explicit fma"),
]

# spmv_csr.cu ------------------------------------------------------------------------------------

SPMV_COLS = 200


def _csr_args(rows: int, max_len: int):
    def make(rng):
        lengths = rng.integers(0, max_len + 1, rows)
        lengths[:2] = [0, max_len]
        row_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
        nnz = int(row_ptr[-1])
        return [inp(row_ptr), inp(rng.integers(0, SPMV_COLS, nnz).astype(np.int32)),
                inp(f32(rng.uniform(-1, 1, nnz))), inp(f32(rng.uniform(-1, 1, SPMV_COLS))),
                out(poison(rows, np.float32)), scalar(np.int32(rows))]
    return make


def _lane_sums(args, lanes: int) -> np.ndarray:
    """Per-row, per-lane fmaf sums: lane l takes entries start + l, + lanes, ..."""
    row_ptr, col, values, x = (args[k].value for k in range(4))
    rows = len(row_ptr) - 1
    acc = np.zeros((rows, lanes), dtype=np.float32)
    start, length = row_ptr[:-1], np.diff(row_ptr)
    for step in range(0, int(length.max()), lanes):
        j = step + np.arange(lanes)
        active = j[None, :] < length[:, None]
        k = np.where(active, start[:, None] + j[None, :], 0)
        acc = np.where(active, fma32(values[k], x[col[k]], acc), acc)
    return acc


def _xor_butterfly(v: np.ndarray) -> np.ndarray:
    for m in (16, 8, 4, 2, 1):
        v = v + v[:, np.arange(32) ^ m]
    return v[:, 0]


SPMV = [
    KernelCase("spmv_csr.cu", "spmv_csr_scalar", grid1(300, 128), (128, 1, 1), 0,
               _csr_args(300, 40), lambda a: {4: _lane_sums(a, 1)[:, 0]},
               notes="exact: explicit fmaf in k order; empty rows included"),
    KernelCase("spmv_csr.cu", "spmv_csr_vector", grid1(37, 4), (128, 1, 1), 0,
               _csr_args(37, 100), lambda a: {4: _xor_butterfly(_lane_sums(a, 32))},
               notes="exact: per-lane fmaf, then the xor butterfly"),
]

# convolution.cu ---------------------------------------------------------------------------------

N_CONV1 = 1000
K_FILTER = f32([1, 8, 28, 56, 70, 56, 28, 8, 1]) / np.float32(256)


def _conv1d_ref(args):
    x = np.concatenate([np.zeros(4, np.float32), args[0].value, np.zeros(4, np.float32)])
    acc = np.zeros(N_CONV1, dtype=np.float32)
    for k in range(9):
        acc = fma32(K_FILTER[k], x[k:k + N_CONV1], acc)
    return {1: acc}


W_IMG, H_IMG, FW = 50, 37, 5


def _conv2d_ref(args):
    img, filt = args[0].value.reshape(H_IMG, W_IMG), args[1].value.reshape(FW, FW)
    r = FW // 2
    padded = np.zeros((H_IMG + 2 * r, W_IMG + 2 * r), dtype=np.float32)
    padded[r:r + H_IMG, r:r + W_IMG] = img
    acc = np.zeros((H_IMG, W_IMG), dtype=np.float32)
    for dy in range(FW):
        for dx in range(FW):
            acc = fma32(filt[dy, dx], padded[dy:dy + H_IMG, dx:dx + W_IMG], acc)
    return {2: acc.ravel()}


CONVOLUTION = [
    KernelCase("convolution.cu", "conv1d_const", grid1(N_CONV1, 256), (256, 1, 1), 0,
               lambda rng: [inp(f32(rng.standard_normal(N_CONV1))),
                            out(poison(N_CONV1, np.float32)), scalar(np.int32(N_CONV1))],
               _conv1d_ref, notes="exact: explicit fmaf in tap order"),
    KernelCase("convolution.cu", "conv2d_same", ((W_IMG + 15) // 16, (H_IMG + 15) // 16, 1),
               (16, 16, 1), FW * FW * 4,
               lambda rng: [inp(f32(rng.standard_normal(W_IMG * H_IMG))),
                            inp(f32(rng.standard_normal(FW * FW))),
                            out(poison(W_IMG * H_IMG, np.float32)), scalar(np.int32(W_IMG)),
                            scalar(np.int32(H_IMG)), scalar(np.int32(FW))],
               _conv2d_ref, notes="exact: explicit fmaf in (dy, dx) order, zero padding"),
]

# stencil_1d.cu, stencil_2d.cu, stencil_3d.cu ----------------------------------------------------

N_ST1 = 1000
COEF = (np.float32(0.3), np.float32(-0.6), np.float32(0.2))


def _stencil1_ref(args):
    x = np.concatenate([np.zeros(1, np.float32), args[0].value, np.zeros(1, np.float32)])
    a, b, c = COEF
    left, mid, right = x[:-2], x[1:-1], x[2:]
    return {1: fma32(right, c, fma32(left, a, mid * b))}


W_ST2, H_ST2 = 40, 35


def _stencil2_ref(args):
    v = args[0].value.reshape(H_ST2, W_ST2)
    result = v.copy()
    inner = ((v[:-2, 1:-1] + v[2:, 1:-1]) + v[1:-1, :-2]) + v[1:-1, 2:]
    result[1:-1, 1:-1] = np.float32(0.25) * inner
    return {1: result.ravel()}


NX3, NY3, NZ3 = 20, 14, 9
C0, C1 = np.float64(0.4), np.float64(0.1)


def _stencil3_ref(args):
    v = args[0].value.reshape(NZ3, NY3, NX3)
    c = v[1:-1, 1:-1, 1:-1]
    neighbours = ((((v[1:-1, 1:-1, :-2] + v[1:-1, 1:-1, 2:]) + v[1:-1, :-2, 1:-1])
                   + v[1:-1, 2:, 1:-1]) + v[:-2, 1:-1, 1:-1]) + v[2:, 1:-1, 1:-1]
    result = v.copy()
    result[1:-1, 1:-1, 1:-1] = fma64(c, C0, neighbours * C1)
    return {1: result.ravel()}


STENCILS = [
    KernelCase("stencil_1d.cu", "stencil_1d_3pt", grid1(N_ST1, 256), (256, 1, 1), 0,
               lambda rng: [inp(f32(rng.standard_normal(N_ST1))), out(poison(N_ST1, np.float32)),
                            scalar(COEF[0]), scalar(COEF[1]), scalar(COEF[2]),
                            scalar(np.int32(N_ST1))],
               _stencil1_ref, ulp=2, atol=1e-6,
               notes="exact model of the PTX: fma(c, x+1, fma(a, x-1, b * x))"),
    KernelCase("stencil_2d.cu", "stencil_2d_5pt", ((W_ST2 + 15) // 16, (H_ST2 + 15) // 16, 1),
               (16, 16, 1), 0,
               lambda rng: [inp(f32(rng.standard_normal(W_ST2 * H_ST2))),
                            out(poison(W_ST2 * H_ST2, np.float32)), scalar(np.int32(W_ST2)),
                            scalar(np.int32(H_ST2))],
               _stencil2_ref, notes="exact: additions in the stated order, then * 0.25"),
    KernelCase("stencil_3d.cu", "stencil_3d_7pt", ((NX3 + 7) // 8, (NY3 + 7) // 8, (NZ3 + 3) // 4),
               (8, 8, 4), 0,
               lambda rng: [inp(rng.standard_normal(NX3 * NY3 * NZ3)),
                            out(poison(NX3 * NY3 * NZ3, np.float64)), scalar(np.int32(NX3)),
                            scalar(np.int32(NY3)), scalar(np.int32(NZ3)), scalar(C0), scalar(C1)],
               _stencil3_ref, ulp=2, atol=1e-15,
               notes="exact model of the PTX: fma(c0, in, c1 * neighbours)"),
]

# softmax.cu and layernorm.cu --------------------------------------------------------------------


def _softmax_ref(args):
    rows, cols = int(args[2].value), int(args[3].value)
    x = args[0].value.reshape(rows, cols).astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {1: (e / e.sum(axis=1, keepdims=True)).astype(np.float32).ravel()}


def _softmax_args(rows, cols):
    def make(rng):
        return [inp(f32(rng.standard_normal(rows * cols) * 3)),
                out(poison(rows * cols, np.float32)), scalar(np.int32(rows)),
                scalar(np.int32(cols))]
    return make


ROWS_LN, COLS_LN = 20, 300


def _layernorm_args(rows):
    def make(rng):
        return [inp(f32(rng.standard_normal(rows * COLS_LN) * 2 + 0.5)),
                out(poison(rows * COLS_LN, np.float32)),
                inp(f32(rng.normal(1, 0.1, COLS_LN))), inp(f32(rng.normal(0, 0.5, COLS_LN))),
                scalar(np.int32(rows)), scalar(np.int32(COLS_LN)), scalar(np.float32(1e-5))]
    return make


def _layernorm_ref(args):
    rows = int(args[4].value)
    x = args[0].value.reshape(rows, COLS_LN).astype(np.float64)
    gamma, beta = args[2].value.astype(np.float64), args[3].value.astype(np.float64)
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    y = (x - mean) / np.sqrt(var + float(args[6].value)) * gamma + beta
    return {1: y.astype(np.float32).ravel()}


NORMS = [
    KernelCase("softmax.cu", "softmax_rows_warp", grid1(10, 4), (128, 1, 1), 0,
               _softmax_args(10, 100), _softmax_ref, rtol=1e-5, atol=1e-9,
               notes="expf is 2 ulp; the last block has 2 of its 4 rows"),
    KernelCase("softmax.cu", "softmax_rows_block", (6, 1, 1), (128, 1, 1), 0,
               _softmax_args(6, 1000), _softmax_ref, rtol=1e-5, atol=1e-9,
               notes="expf is 2 ulp"),
    KernelCase("layernorm.cu", "layernorm_rows", (ROWS_LN, 1, 1), (256, 1, 1), 0,
               _layernorm_args(ROWS_LN), _layernorm_ref, rtol=2e-5, atol=2e-5,
               notes="rsqrtf is approximate; float32 sums"),
    KernelCase("layernorm.cu", "layernorm_rows_welford", grid1(21, 8), (256, 1, 1), 0,
               _layernorm_args(21), _layernorm_ref, rtol=2e-5, atol=2e-5,
               notes="rsqrtf is approximate; Welford in float32; the last block has 5 rows"),
]

# nbody.cu ---------------------------------------------------------------------------------------

N_BODIES, DT, SOFTENING2 = 300, np.float32(0.01), np.float32(0.01)


def _nbody_args(rng):
    pos = np.concatenate([rng.standard_normal((N_BODIES, 3)), rng.uniform(0.5, 1.5, (N_BODIES, 1))],
                         axis=1)
    return [inp(f32(pos).ravel()), out(poison(4 * N_BODIES, np.float32)),
            inout(f32(rng.standard_normal(3 * N_BODIES) * 0.1)), scalar(np.int32(N_BODIES)),
            scalar(DT), scalar(SOFTENING2)]


def _nbody_ref(args):
    pm = args[0].value.reshape(N_BODIES, 4).astype(np.float64)
    p, m = pm[:, :3], pm[:, 3]
    d = p[None, :, :] - p[:, None, :]
    inv3 = (np.sum(d * d, axis=2) + float(SOFTENING2)) ** -1.5
    acc = np.sum(d * (m[None, :] * inv3)[:, :, None], axis=1)
    v = args[2].value.reshape(N_BODIES, 3).astype(np.float64) + acc * float(DT)
    new = np.concatenate([p + v * float(DT), m[:, None]], axis=1)
    return {1: f32(new).ravel(), 2: f32(v).ravel()}


NBODY = [
    KernelCase("nbody.cu", "nbody_step", grid1(N_BODIES, 128), (128, 1, 1), 0, _nbody_args,
               _nbody_ref, rtol=1e-4, atol=1e-5,
               notes="rsqrtf is approximate and the float32 sums cancel: float64 reference "
                     "within the file's stated 1e-4 relative tolerance"),
]

# mandelbrot.cu ----------------------------------------------------------------------------------

W_MB, H_MB = 64, 48
MB_GRID = ((W_MB + 15) // 16, (H_MB + 15) // 16, 1)


def _mb_scalars(dtype, max_iter):
    return [scalar(np.int32(W_MB)), scalar(np.int32(H_MB)), scalar(dtype(-2.2)),
            scalar(dtype(-1.2)), scalar(dtype(3.2 / W_MB)), scalar(dtype(2.4 / H_MB)),
            scalar(np.int32(max_iter))]


def _escape(args, dtype):
    """The iteration exactly as the PTX does it: the squares computed once per step and reused
    by the test and the next step; zi = fma(zr + zr, zi, ci); c = fma(p, d, origin)."""
    x0, y0, dx, dy, max_iter = (args[k].value for k in range(3, 8))
    fma = fma32 if dtype == np.float32 else fma64
    py, px = np.mgrid[0:H_MB, 0:W_MB]
    cr = fma(px.astype(dtype), dx, x0).astype(dtype)
    ci = fma(py.astype(dtype), dy, y0).astype(dtype)
    zr = zi = zr2 = zi2 = r2 = np.zeros_like(cr)
    count = np.zeros(cr.shape, dtype=np.int32)
    running = np.ones(cr.shape, dtype=bool)
    while running.any():
        t = cr + (zr2 - zi2)
        new_zi = fma(zr + zr, zi, ci).astype(dtype)
        new_zr2, new_zi2 = t * t, new_zi * new_zi
        new_r2 = new_zr2 + new_zi2
        zr, zi = np.where(running, t, zr), np.where(running, new_zi, zi)
        zr2, zi2 = np.where(running, new_zr2, zr2), np.where(running, new_zi2, zi2)
        r2 = np.where(running, new_r2, r2)
        count = count + running
        running = running & (new_r2 <= 4) & (count < int(max_iter))
    return count, r2


def _mandelbrot_ref(args):
    count, _ = _escape(args, np.float32)
    return {0: count.ravel()}


def _mandelbrot_f64_ref(args):
    count, r2 = _escape(args, np.float64)
    max_iter = int(args[7].value)
    with np.errstate(all="ignore"):
        smooth = count + 1 - np.log2(np.log(np.sqrt(r2)))
    return {0: np.where(count < max_iter, smooth, float(max_iter)).ravel()}


MANDELBROT = [
    KernelCase("mandelbrot.cu", "mandelbrot", MB_GRID, (16, 16, 1), 0,
               lambda rng: [out(poison(W_MB * H_MB, np.int32)), *_mb_scalars(np.float32, 200)],
               _mandelbrot_ref,
               notes="exact: the escape counts are chaotic, so the reference replays the PTX's "
                     "operations (which NVRTC contracted, which it reused) bit for bit"),
    KernelCase("mandelbrot.cu", "mandelbrot_f64_smooth", MB_GRID, (16, 16, 1), 0,
               lambda rng: [out(poison(W_MB * H_MB, np.float64)), *_mb_scalars(np.float64, 100)],
               _mandelbrot_f64_ref, rtol=1e-13, atol=1e-12,
               notes="iteration replayed exactly as in mandelbrot; log and log2 from libdevice "
                     "(1 ulp)"),
]

# mma_sync.cu -------------------------------------------------------------------------------------

T_MMA = 3


def _small(rng, count: int, kind: str) -> np.ndarray:
    """16-bit float bits of small multiples of 1/4 (every product and sum exact)."""
    values = rng.integers(-12, 13, count).astype(np.float32) / 4
    if kind == "bf16":
        return (values.view(np.uint32) >> 16).astype(np.uint16)
    return values.astype(np.float16).view(np.uint16)


def _as_float(bits: np.ndarray, kind: str) -> np.ndarray:
    if kind == "bf16":
        return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return bits.view(np.float16).astype(np.float64)


def _mma_case(kernel: str, k: int, kind: str, f16_cd: bool = False) -> KernelCase:
    def make(rng):
        c = rng.integers(-8, 9, T_MMA * 128).astype(np.float32)
        c_arg = c.astype(np.float16).view(np.uint16) if f16_cd else c
        d = poison(T_MMA * 128, np.uint16 if f16_cd else np.float32)
        return [inp(_small(rng, T_MMA * 16 * k, kind)), inp(_small(rng, T_MMA * k * 8, kind)),
                inp(c_arg), out(d)]

    def reference(args):
        a = _as_float(args[0].value, kind).reshape(T_MMA, 16, k)
        b = _as_float(args[1].value, kind).reshape(T_MMA, k, 8)
        c = (args[2].value.view(np.float16) if f16_cd else args[2].value).astype(np.float64)
        d = (a @ b + c.reshape(T_MMA, 16, 8)).ravel()
        return {3: d.astype(np.float16).view(np.uint16) if f16_cd else d.astype(np.float32)}

    return KernelCase("mma_sync.cu", kernel, (T_MMA, 1, 1), (32, 1, 1), 0, make, reference,
                      notes="exact: small multiples of 1/4, every product and sum exact")


MMA = [
    _mma_case("mma_m16n8k16_f16_f32", 16, "f16"),
    _mma_case("mma_m16n8k16_bf16_f32", 16, "bf16"),
    _mma_case("mma_m16n8k8_f16_f32", 8, "f16"),
    _mma_case("mma_m16n8k16_f16_f16", 16, "f16", f16_cd=True),
]

K_LDM = 48


def _ldmatrix_case(kernel: str, transposed: bool) -> KernelCase:
    def make(rng):
        return [inp(_small(rng, T_MMA * 16 * K_LDM, "f16")),
                inp(_small(rng, T_MMA * 8 * K_LDM, "f16")),
                out(poison(T_MMA * 128, np.float32)), scalar(np.int32(K_LDM))]

    def reference(args):
        a = _as_float(args[0].value, "f16").reshape(T_MMA, 16, K_LDM)
        b = _as_float(args[1].value, "f16")
        b = b.reshape(T_MMA, K_LDM, 8) if transposed else \
            b.reshape(T_MMA, 8, K_LDM).transpose(0, 2, 1)
        return {2: (a @ b).astype(np.float32).ravel()}

    return KernelCase("ldmatrix_mma.cu", kernel, (T_MMA, 1, 1), (32, 1, 1), 0, make, reference,
                      notes="exact: small multiples of 1/4, every product and sum exact")


MMA += [_ldmatrix_case("ldmatrix_gemm_f16", False),
        _ldmatrix_case("ldmatrix_trans_gemm_f16", True)]

CASES = GEMM + MMA + MATVEC + SPMV + CONVOLUTION + STENCILS + NORMS + NBODY + MANDELBROT
