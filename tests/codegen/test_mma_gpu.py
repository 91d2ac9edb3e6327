"""mma.sync.aligned, ldmatrix and stmatrix on the GPU targets without tensor cores
(codegen/targets/gpu_mma.py): kernels run on opencl:0 against numpy, each lane loading and
storing its fragments by the PTX ISA's layouts ("Matrix Fragments for mma.mMnNkK"); on a
machine with an NVIDIA GPU the same tests run on cuda:0, which checks these layouts against
the tensor cores. The kernels are also compiled for amdgpu. f32-accumulated results are
compared with a tolerance (the ISA leaves the accumulation order open), integer and
f64-exact ones exactly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_gpu_conformance import _module, needs_nvrtc

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.codegen.targets import amdgpu, spirv
from ptxport.errors import UnsupportedFeatureError
from ptxport.frontends import nvrtc
from ptxport.frontends.nvrtc import NvrtcOptions
from ptxport.runtime.backends import availability

KERNELS = Path(__file__).parent.parent / "kernels"


def _device_param(name: str):
    """opencl:0 checks the lowering; cuda:0 (an NVIDIA GPU, on the lead's GPU machine) checks
    these tests' own reading of the fragment layouts against the tensor cores."""
    ok, why = availability(name.partition(":")[0])
    return pytest.param(name, marks=pytest.mark.skipif(not ok, reason=f"no {name}: {why}"))


DEVICES = [_device_param("opencl:0"), _device_param("cuda:0")]

# Forms beyond tests/kernels/mma_sync.cu's; g = lane / 4, q = lane % 4 as in the ISA.
SOURCE = r"""
#define LANE int g = threadIdx.x >> 2, q = threadIdx.x & 3;
// C and D of the m16n8 shapes (16 x 8 row-major): element i at row g + 8 (i / 2), column
// 2q + i % 2
#define CD16(i) ((g + 8 * ((i) / 2)) * 8 + 2 * q + (i) % 2)

__device__ unsigned pack16(unsigned short lo, unsigned short hi)
{
    return (unsigned)lo | ((unsigned)hi << 16);
}

// m16n8k8 tf32: A 16x8 (a_i at row g + 8 (i % 2), column q + 4 (i / 2)), B 8x8 (b_i at row
// q + 4 i, column g)
extern "C" __global__ void mma_tf32(const float* A, const float* B, const float* C, float* D)
{
    LANE
    unsigned a[4], b[2];
    float c[4], d[4];
    for (int i = 0; i < 4; i++) a[i] = __float_as_uint(A[(g + 8 * (i % 2)) * 8 + q + 4 * (i / 2)]);
    for (int i = 0; i < 2; i++) b[i] = __float_as_uint(B[(q + 4 * i) * 8 + g]);
    for (int i = 0; i < 4; i++) c[i] = C[CD16(i)];
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, "
                 "{%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
                   "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
    for (int i = 0; i < 4; i++) D[CD16(i)] = d[i];
}

// m16n8k8 bf16: A 16x8 (a_i at row g + 8 (i / 2), column 2q + i % 2), B 8x8 (b_i at row
// 2q + i, column g)
extern "C" __global__ void mma_bf16_k8(const unsigned short* A, const unsigned short* B,
                                       const float* C, float* D)
{
    LANE
    unsigned a[2], b;
    float c[4], d[4];
    for (int r = 0; r < 2; r++)
        a[r] = pack16(A[(g + 8 * r) * 8 + 2 * q], A[(g + 8 * r) * 8 + 2 * q + 1]);
    b = pack16(B[2 * q * 8 + g], B[(2 * q + 1) * 8 + g]);
    for (int i = 0; i < 4; i++) c[i] = C[CD16(i)];
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
                 "{%4, %5}, {%6}, {%7, %8, %9, %10};"
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(b), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
    for (int i = 0; i < 4; i++) D[CD16(i)] = d[i];
}

// m16n8k32 s8 x u8 -> s32, wrapping (D) and with .satfinite (S): A 16x32 (a_i at row
// g + 8 ((i / 4) % 2), column 4q + i % 4 + 16 (i / 8)), B 32x8 (b_i at row
// 4q + i % 4 + 16 (i / 4), column g); four 8-bit elements a register, low byte first
extern "C" __global__ void mma_s8_u8(const signed char* A, const unsigned char* B, const int* C,
                                     int* D, int* S)
{
    LANE
    unsigned a[4] = {0, 0, 0, 0}, b[2] = {0, 0};
    int c[4], d[4], s[4];
    for (int i = 0; i < 16; i++)
        a[i / 4] |= (unsigned)(unsigned char)A[(g + 8 * ((i / 4) % 2)) * 32 + 4 * q + i % 4
                                               + 16 * (i / 8)] << (8 * (i % 4));
    for (int i = 0; i < 8; i++)
        b[i / 4] |= (unsigned)B[(4 * q + i % 4 + 16 * (i / 4)) * 8 + g] << (8 * (i % 4));
    for (int i = 0; i < 4; i++) c[i] = C[CD16(i)];
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.u8.s32 {%0, %1, %2, %3}, "
                 "{%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
                 : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
                   "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]));
    asm volatile("mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.u8.s32 {%0, %1, %2, %3}, "
                 "{%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
                 : "=r"(s[0]), "=r"(s[1]), "=r"(s[2]), "=r"(s[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
                   "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]));
    for (int i = 0; i < 4; i++) { D[CD16(i)] = d[i]; S[CD16(i)] = s[i]; }
}

// m8n8k4 f64: A 8x4 (row g, column q), B 4x8 (row q, column g), C and D 8x8 (row g,
// column 2q + i)
extern "C" __global__ void mma_f64(const double* A, const double* B, const double* C, double* D)
{
    LANE
    double a = A[g * 4 + q], b = B[q * 8 + g], c0 = C[g * 8 + 2 * q], c1 = C[g * 8 + 2 * q + 1];
    double d0, d1;
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, "
                 "{%4, %5};" : "=d"(d0), "=d"(d1) : "d"(a), "d"(b), "d"(c0), "d"(c1));
    D[g * 8 + 2 * q] = d0;
    D[g * 8 + 2 * q + 1] = d1;
}

// m8n8k16 u8 x s8: A 8x16 (a_i at row g, column 4q + i), B 16x8 (b_i at row 4q + i,
// column g), C and D 8x8 (row g, column 2q + i)
extern "C" __global__ void mma_u8_s8_m8(const unsigned char* A, const signed char* B,
                                        const int* C, int* D)
{
    LANE
    unsigned a = 0, b = 0;
    for (int i = 0; i < 4; i++) {
        a |= (unsigned)A[g * 16 + 4 * q + i] << (8 * i);
        b |= (unsigned)(unsigned char)B[(4 * q + i) * 8 + g] << (8 * i);
    }
    int d0, d1;
    asm volatile("mma.sync.aligned.m8n8k16.row.col.s32.u8.s8.s32 {%0, %1}, {%2}, {%3}, "
                 "{%4, %5};" : "=r"(d0), "=r"(d1)
                 : "r"(a), "r"(b), "r"(C[g * 8 + 2 * q]), "r"(C[g * 8 + 2 * q + 1]));
    D[g * 8 + 2 * q] = d0;
    D[g * 8 + 2 * q + 1] = d1;
}
"""

# m16n8k8 f64 (sm_90)
F64_SM90 = r"""
#define LANE int g = threadIdx.x >> 2, q = threadIdx.x & 3;
#define CD16(i) ((g + 8 * ((i) / 2)) * 8 + 2 * q + (i) % 2)
// m16n8k8 f64: A 16x8 (a_i at row g + 8 (i % 2), column q + 4 (i / 2)), B 8x8 (b_i at row
// q + 4 i, column g)
extern "C" __global__ void mma_f64_k8(const double* A, const double* B, const double* C,
                                      double* D)
{
    LANE
    double a[4], b[2], c[4], d[4];
    for (int i = 0; i < 4; i++) a[i] = A[(g + 8 * (i % 2)) * 8 + q + 4 * (i / 2)];
    for (int i = 0; i < 2; i++) b[i] = B[(q + 4 * i) * 8 + g];
    for (int i = 0; i < 4; i++) c[i] = C[CD16(i)];
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, "
                 "{%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
                 : "=d"(d[0]), "=d"(d[1]), "=d"(d[2]), "=d"(d[3])
                 : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]),
                   "d"(c[0]), "d"(c[1]), "d"(c[2]), "d"(c[3]));
    for (int i = 0; i < 4; i++) D[CD16(i)] = d[i];
}
"""

# stmatrix (sm_90): each lane holds its fragment of four 8x8 b16 matrices (register j:
# elements (g, 2q) and (g, 2q + 1) of matrix j) and the warp stores them, transposed with
# TRANS, to shared memory; lane 8j + r gives row r of matrix j
STMATRIX = r"""
extern "C" __global__ void store_matrices(const unsigned short* M, unsigned short* out)
{
    __shared__ __align__(16) unsigned short tile[4 * 64];
    int l = threadIdx.x, g = l >> 2, q = l & 3;
    unsigned r[4];
    for (int j = 0; j < 4; j++)
        r[j] = (unsigned)M[64 * j + 8 * g + 2 * q]
               | ((unsigned)M[64 * j + 8 * g + 2 * q + 1] << 16);
    unsigned at = (unsigned)__cvta_generic_to_shared(&tile[64 * (l / 8) + 8 * (l % 8)]);
    asm volatile("stmatrix.sync.aligned.m8n8.x4" TRANS ".shared.b16 [%0], {%1, %2, %3, %4};"
                 :: "r"(at), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]) : "memory");
    __syncwarp();
    for (int i = l; i < 256; i += 32)
        out[i] = tile[i];
}
"""


# ldmatrix alone: four 8x8 b16 matrices in shared memory (matrix j at 64 j, row-major); lane
# 8j + r gives row r of matrix j; every lane writes its registers out (4 a lane)
LDMATRIX = r"""
extern "C" __global__ void load_matrices(const unsigned short* M, unsigned* out)
{
    __shared__ __align__(16) unsigned short tile[4 * 64];
    int l = threadIdx.x;
    for (int i = l; i < 256; i += 32)
        tile[i] = M[i];
    __syncwarp();
    unsigned at = (unsigned)__cvta_generic_to_shared(&tile[64 * (l / 8) + 8 * (l % 8)]);
    unsigned r[4] = {0, 0, 0, 0};
#if COUNT == 1
    asm volatile("ldmatrix.sync.aligned.m8n8.x1" TRANS ".shared.b16 {%0}, [%1];"
                 : "=r"(r[0]) : "r"(at));
#else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4" TRANS ".shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(at));
#endif
    for (int j = 0; j < 4; j++)
        out[4 * l + j] = r[j];
}
"""


def _ptx(source: str, name: str, arch: str = "sm_80") -> str:
    return nvrtc.compile_to_ptx(source, name, NvrtcOptions(arch=arch))


def _bits(x: np.ndarray, kind: str) -> np.ndarray:
    if kind == "bf16":
        return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return x.astype(np.float16).view(np.uint16)


def _tf32(x: np.ndarray) -> np.ndarray:
    """float32 values that tf32 holds exactly (10 mantissa bits)."""
    return (x.astype(np.float32).view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)


def _bf16_values(x: np.ndarray) -> np.ndarray:
    return (x.astype(np.float32).view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)


@needs_nvrtc
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kernel,kind,k", [("mma_m16n8k16_f16_f32", "f16", 16),
                                           ("mma_m16n8k16_bf16_f32", "bf16", 16),
                                           ("mma_m16n8k8_f16_f32", "f16", 8)])
def test_16_bit_mma_of_the_corpus(device, kernel, kind, k):
    rng = np.random.default_rng(k)
    a = rng.standard_normal((2, 16, k)).astype(np.float32)
    b = rng.standard_normal((2, k, 8)).astype(np.float32)
    a, b = (_bf16_values(x) if kind == "bf16" else x.astype(np.float16).astype(np.float32)
            for x in (a, b))
    c = rng.standard_normal((2, 16, 8)).astype(np.float32)
    d = np.zeros_like(c)
    ptx = _ptx((KERNELS / "mma_sync.cu").read_text(), "mma_sync.cu")
    _run(device, ptx, kernel, [_bits(a, kind), _bits(b, kind), c, d], tiles=2)
    np.testing.assert_allclose(d, a.astype(np.float64) @ b + c, rtol=1e-5, atol=1e-5)


@needs_nvrtc
@pytest.mark.parametrize("device", DEVICES)
def test_mma_with_f16_accumulators(device):
    rng = np.random.default_rng(3)
    # small integers: every sum is exact in f16, so the result is too
    a, b = (rng.integers(-3, 4, shape).astype(np.float16) for shape in ((16, 16), (16, 8)))
    c = rng.integers(-8, 9, (16, 8)).astype(np.float16)
    d = np.zeros((16, 8), np.float16)
    ptx = _ptx((KERNELS / "mma_sync.cu").read_text(), "mma_sync.cu")
    _run(device, ptx, "mma_m16n8k16_f16_f16",
         [a.view(np.uint16), b.view(np.uint16), c.view(np.uint16), d.view(np.uint16)])
    np.testing.assert_array_equal(d, a.astype(np.float32) @ b.astype(np.float32) + c)


@needs_nvrtc
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kernel", ["ldmatrix_gemm_f16", "ldmatrix_trans_gemm_f16"])
def test_ldmatrix_feeding_mma(device, kernel):
    """ldmatrix .x4 for A and .x2 (or .x2.trans) for B, as CUTLASS and Triton load them."""
    rng = np.random.default_rng(4)
    K = 48
    a = rng.standard_normal((2, 16, K)).astype(np.float16)
    b = rng.standard_normal((2, K, 8)).astype(np.float16)
    b_mem = b if "trans" in kernel else b.transpose(0, 2, 1).copy()
    d = np.zeros((2, 16, 8), np.float32)
    ptx = _ptx((KERNELS / "ldmatrix_mma.cu").read_text(), "ldmatrix_mma.cu")
    _run(device, ptx, kernel, [a.view(np.uint16), b_mem.view(np.uint16), d, np.int32(K)],
         tiles=2)
    expected = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(d, expected, rtol=1e-5, atol=1e-5)


@needs_nvrtc
@pytest.mark.parametrize("device", DEVICES)
def test_tf32_mma(device):
    rng = np.random.default_rng(5)
    a, b = _tf32(rng.standard_normal((16, 8))), _tf32(rng.standard_normal((8, 8)))
    c = rng.standard_normal((16, 8)).astype(np.float32)
    d = np.zeros_like(c)
    _run(device, _ptx(SOURCE, "mma_forms.cu"), "mma_tf32", [a, b, c, d])
    np.testing.assert_allclose(d, a.astype(np.float64) @ b + c, rtol=1e-5, atol=1e-5)


@needs_nvrtc
@pytest.mark.parametrize("device", DEVICES)
def test_bf16_m16n8k8_mma(device):
    rng = np.random.default_rng(6)
    a, b = (_bf16_values(rng.standard_normal(s)) for s in ((16, 8), (8, 8)))
    c = rng.standard_normal((16, 8)).astype(np.float32)
    d = np.zeros_like(c)
    _run(device, _ptx(SOURCE, "mma_forms.cu"), "mma_bf16_k8",
         [_bits(a, "bf16"), _bits(b, "bf16"), c, d])
    np.testing.assert_allclose(d, a.astype(np.float64) @ b + c, rtol=1e-5, atol=1e-5)


@needs_nvrtc
@pytest.mark.parametrize("device", DEVICES)
def test_integer_mma_wraps_and_saturates(device):
    rng = np.random.default_rng(7)
    a = rng.integers(-128, 128, (16, 32)).astype(np.int8)
    b = rng.integers(0, 256, (32, 8)).astype(np.uint8)
    c = rng.integers(-2**31, 2**31, (16, 8), dtype=np.int64).astype(np.int32)
    c[0, :] = 2**31 - 1                  # these rows overflow unless the products are small
    c[9, :] = -2**31
    d, s = np.zeros_like(c), np.zeros_like(c)
    _run(device, _ptx(SOURCE, "mma_forms.cu"), "mma_s8_u8", [a, b, c, d, s])
    exact = a.astype(np.int64) @ b.astype(np.int64) + c
    np.testing.assert_array_equal(d, exact.astype(np.uint64).astype(np.uint32).view(np.int32))
    np.testing.assert_array_equal(s, np.clip(exact, -2**31, 2**31 - 1))
    assert (exact != np.clip(exact, -2**31, 2**31 - 1)).any()    # the test saturates


@needs_nvrtc
@pytest.mark.parametrize("device", DEVICES)
def test_f64_mma(device):
    rng = np.random.default_rng(8)
    a, b, c = rng.standard_normal((8, 4)), rng.standard_normal((4, 8)), rng.standard_normal((8, 8))
    d = np.zeros((8, 8))
    _run(device, _ptx(SOURCE, "mma_forms.cu"), "mma_f64", [a, b, c, d])
    np.testing.assert_allclose(d, a @ b + c, rtol=1e-14, atol=1e-14)


@needs_nvrtc
@pytest.mark.parametrize("device", DEVICES)
def test_f64_m16n8k8_mma(device):
    rng = np.random.default_rng(9)
    a, b, c = (rng.standard_normal(s) for s in ((16, 8), (8, 8), (16, 8)))
    d = np.zeros((16, 8))
    _run(device, _ptx(F64_SM90, "mma_f64.cu", "sm_90"), "mma_f64_k8", [a, b, c, d])
    np.testing.assert_allclose(d, a @ b + c, rtol=1e-13, atol=1e-13)


@needs_nvrtc
@pytest.mark.parametrize("device", DEVICES)
def test_integer_m8n8k16_mma(device):
    rng = np.random.default_rng(10)
    a = rng.integers(0, 256, (8, 16)).astype(np.uint8)
    b = rng.integers(-128, 128, (16, 8)).astype(np.int8)
    c = rng.integers(-1000, 1000, (8, 8)).astype(np.int32)
    d = np.zeros_like(c)
    _run(device, _ptx(SOURCE, "mma_forms.cu"), "mma_u8_s8_m8", [a, b, c, d])
    np.testing.assert_array_equal(d, a.astype(np.int64) @ b.astype(np.int64) + c)


@needs_nvrtc
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("trans", [False, True])
def test_stmatrix(device, trans):
    source = STMATRIX.replace("TRANS", '".trans"' if trans else '""')
    m = np.arange(256, dtype=np.uint16) * np.uint16(7) + np.uint16(3)
    out = np.zeros(256, np.uint16)
    _run(device, _ptx(source, "stmatrix.cu", "sm_90"), "store_matrices", [m, out])
    matrices = m.reshape(4, 8, 8)
    np.testing.assert_array_equal(out.reshape(4, 8, 8),
                                  matrices.transpose(0, 2, 1) if trans else matrices)


@needs_nvrtc
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("count,trans", [(1, False), (1, True), (4, True)])
def test_ldmatrix_registers(device, count, trans):
    """Lane l's register j: elements (l / 4, 2 (l % 4)) and (l / 4, 2 (l % 4) + 1) of
    matrix j (of its transpose with .trans), the lower column in the low half."""
    trans_text = '".trans"' if trans else '""'
    source = f"#define COUNT {count}\n#define TRANS {trans_text}\n{LDMATRIX}"
    m = (np.arange(256, dtype=np.uint32) * 2654435761 >> 16).astype(np.uint16)
    out = np.zeros((32, 4), np.uint32)
    _run(device, _ptx(source, f"ldmatrix{count}{trans}.cu"), "load_matrices", [m, out])
    matrices = m.reshape(4, 8, 8)
    if trans:
        matrices = matrices.transpose(0, 2, 1)
    lane = np.arange(32)
    for j in range(4):
        low = matrices[j, lane // 4, 2 * (lane % 4)].astype(np.uint32)
        high = matrices[j, lane // 4, 2 * (lane % 4) + 1].astype(np.uint32)
        want = low | (high << 16) if j < count else np.zeros(32, np.uint32)
        np.testing.assert_array_equal(out[:, j], want)


@needs_nvrtc
@pytest.mark.parametrize("chip", ["gfx942", "gfx1100"])
def test_the_forms_compile_for_amdgpu(chip):
    for source, name, arch in ((SOURCE, "mma_forms.cu", "sm_80"),
                               ((KERNELS / "ldmatrix_mma.cu").read_text(), "ldmatrix_mma.cu",
                                "sm_80"),
                               (STMATRIX.replace("TRANS", '".trans"'), "stmatrix.cu", "sm_90"),
                               (F64_SM90, "mma_f64.cu", "sm_90")):
        assert amdgpu.compile_object(_module(_ptx(source, name, arch)), chip)


def test_an_mma_form_it_does_not_lower_is_refused():
    ptx = """.version 8.0
.target sm_80
.address_size 64
.visible .entry k()
{
.reg .b32 %r<8>; .reg .f32 %f<8>;
mma.sync.aligned.m16n8k64.row.col.s32.s4.s4.s32 {%r1, %r2, %r3, %r4}, {%r5, %r5, %r5, %r5},
    {%r6, %r6}, {%r1, %r2, %r3, %r4};
ret;
}
"""
    with pytest.raises(UnsupportedFeatureError, match="m16n8k64.*spirv"):
        spirv.compile_module(_module(ptx))


def _run(device: str, ptx: str, kernel: str, args: list, tiles: int = 1) -> None:
    """kernel(args...) on `device` over `tiles` blocks of one warp; arrays among `args` are
    copied in and back, numpy scalars passed as they are."""
    target = Device(device)
    stream = target.create_stream()
    function = Program(ptx, code_type="ptx").compile("native").get_kernel(kernel)
    arrays = [a for a in args if isinstance(a, np.ndarray)]
    buffers = {id(a): target.allocate(a.nbytes, stream=stream) for a in arrays}
    for a in arrays:
        buffers[id(a)].copy_from(a, stream=stream)
    launch(stream, LaunchConfig(grid=tiles, block=32), function,
           *[buffers.get(id(a), a) for a in args])
    for a in arrays:
        buffers[id(a)].copy_to(a, stream=stream)
    stream.sync()
