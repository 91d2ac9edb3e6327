"""Device code that issue 16 found the GPU targets crashing on or refusing: cp.async into
shared memory and wmma (the CUDA samples' tensor-core GEMMs), the reserved shared memory and
environment special registers, and calls through a register (function pointers, virtual
functions). Code generation is checked for amdgpu and spirv (and ptxas for nvptx); kernels
run on opencl:0 where a device is present."""

from __future__ import annotations

import re

import numpy as np
import pytest
from test_cpu_indirect import BAD_CALL, FUNCTION
from test_cpu_indirect import SOURCE as VIRTUAL
from test_memory_ops import CP_ASYNC_BODY, expected_cp_async

from corpus import ptxas_errors, ptxas_path
from cpu_harness import kernel_ptx, run_ptx
from ptxport import Device, LaunchConfig, Program, launch
from ptxport.codegen.targets import amdgpu, nvptx, spirv
from ptxport.errors import UnsupportedFeatureError
from ptxport.frontends import nvrtc
from ptxport.ir.from_ptx import build
from ptxport.ir.verify import verify
from ptxport.ptx.parser import parse
from ptxport.runtime.backends import availability

_OPENCL, _WHY = availability("opencl")
needs_opencl = pytest.mark.skipif(not _OPENCL, reason=f"no OpenCL device for SPIR-V: {_WHY}")
_NVRTC, _NO_NVRTC = nvrtc.available()
needs_nvrtc = pytest.mark.skipif(not _NVRTC, reason=f"CUDA C++ input needs NVRTC: {_NO_NVRTC}")


def _module(ptx: str):
    module = build(parse(ptx, "t.ptx"))
    verify(module)
    return module


def _run_opencl(ptx: str, block: int, args: list, kernel: str = "k") -> None:
    """Run kernel(args...) on opencl:0 in one block of `block` threads; arrays among `args`
    are copied in and back, numpy scalars passed as they are."""
    device = Device("opencl:0")
    stream = device.create_stream()
    function = Program(ptx, code_type="ptx").compile("native").get_kernel(kernel)
    arrays = [a for a in args if isinstance(a, np.ndarray)]
    buffers = {id(a): device.allocate(a.nbytes, stream=stream) for a in arrays}
    for a in arrays:
        buffers[id(a)].copy_from(a, stream=stream)
    launch(stream, LaunchConfig(grid=1, block=block), function,
           *[buffers.get(id(a), a) for a in args])
    for a in arrays:
        buffers[id(a)].copy_to(a, stream=stream)
    stream.sync()
    for buffer in buffers.values():
        buffer.close()


# --- cp.async between address spaces ------------------------------------------------------------

CP_ASYNC = kernel_ptx(CP_ASYNC_BODY, ".param .u64 src, .param .u64 dst", target="sm_80",
                      version="8.0")


@pytest.mark.parametrize("chip", ["gfx1100", "gfx942"])
def test_cp_async_compiles_for_amdgpu(chip):
    """The copy is from .global's address space into .shared's (llvm.memcpy overloaded on
    both), not a generic-pointer memcpy handed an LDS pointer."""
    text = amdgpu.compile_llvm_ir(_module(CP_ASYNC), chip)
    assert "llvm.memcpy.p3.p1.i64" in text


def test_cp_async_compiles_for_spirv():
    assert spirv.compile_module(_module(CP_ASYNC))


@needs_opencl
def test_cp_async_on_opencl():
    src = np.arange(64 * 16, dtype=np.uint8).reshape(64, 16) + np.uint8(1)
    dst = np.zeros((64, 16), np.uint8)
    _run_opencl(CP_ASYNC, 64, [src, dst])
    assert (dst == expected_cp_async(src)).all()


# --- %envreg and %reserved_smem_* ---------------------------------------------------------------

DRIVER_REGISTERS = ["%reserved_smem_offset_begin", "%reserved_smem_offset_end",
                    "%reserved_smem_offset_cap", "%reserved_smem_offset_0",
                    "%reserved_smem_offset_1", "%envreg0", "%envreg17", "%envreg31"]


def _driver_registers_ptx() -> str:
    """k(out): out[i] = the i-th of DRIVER_REGISTERS, and out[len] their OR."""
    body = [".reg .b32 %r<4>; .reg .b64 %rd<2>;",
            "ld.param.u64 %rd1, [out]; cvta.to.global.u64 %rd1, %rd1;", "mov.b32 %r2, 0;"]
    for i, name in enumerate(DRIVER_REGISTERS):
        body += [f"mov.b32 %r1, {name};", f"st.global.u32 [%rd1+{4 * i}], %r1;",
                 "or.b32 %r2, %r2, %r1;"]
    body += [f"st.global.u32 [%rd1+{4 * len(DRIVER_REGISTERS)}], %r2;", "ret;"]
    return kernel_ptx("\n".join(body), ".param .u64 out", target="sm_80", version="7.6")


def test_driver_registers_read_zero_on_the_cpu():
    """No driver sets an environment register, and no shared memory is reserved: an empty
    region at offset 0 (PTX ISA 10.24, 10.26-10.29)."""
    out = np.full(len(DRIVER_REGISTERS) + 1, 0xDEAD, np.uint32)
    run_ptx(_driver_registers_ptx(), "k", 1, 1, [out])
    assert out.tolist() == [0] * len(out)


@needs_opencl
def test_driver_registers_read_zero_on_opencl():
    out = np.full(len(DRIVER_REGISTERS) + 1, 0xDEAD, np.uint32)
    _run_opencl(_driver_registers_ptx(), 1, [out])
    assert out.tolist() == [0] * len(out)


def test_driver_registers_read_zero_on_amdgpu():
    _, optimized = amdgpu._optimized(_module(_driver_registers_ptx()), "gfx942")
    stores = [line for line in str(optimized).splitlines() if "store " in line]
    assert stores and all(line.strip().startswith("store i32 0,") for line in stores), stores


def test_nvptx_reads_the_drivers_registers():
    """On NVIDIA the driver's values are the truth: the registers pass through to ptxas."""
    ptx = nvptx.compile_module(_module(_driver_registers_ptx()))
    for name in DRIVER_REGISTERS:
        assert f"{name};" in ptx
    if ptxas_path() is not None:
        assert ptxas_errors(ptx, "sm_80") == ""


# --- calls through a register -------------------------------------------------------------------

POINTERS = r"""
typedef int (*unary_t)(int);
__device__ __noinline__ int twice(int x) { return 2 * x; }
__device__ __noinline__ int square(int x) { return x * x; }
__device__ __noinline__ int negate(int x) { return -x; }
__device__ __noinline__ long long widen(int x) { return 3ll * x; }

extern "C" __global__ void pointers(const int* x, int* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    int v = x[i];
    // volatile: a pointer NVRTC cannot fold into direct calls
    volatile unary_t f = (v % 3 == 0) ? twice : (v % 3 == 1) ? square : negate;
    long long (*volatile g)(int) = widen;
    y[i] = f(v) + (int)g(v);
}
"""


def _pointers_ptx() -> str:
    return nvrtc.compile_to_ptx(POINTERS, "pointers.cu")


def _pointers_expected(x: np.ndarray) -> np.ndarray:
    v = x.astype(np.int64)
    rest = np.fmod(v, 3)                           # C's %, which keeps the dividend's sign
    called = np.where(rest == 0, 2 * v, np.where(rest == 1, v * v, -v))
    return (called + 3 * v).astype(np.int32)


@needs_nvrtc
def test_nvptx_calls_through_registers():
    """LLVM's indirect call: a .callprototype and `call (r), %rd, (a), prototype`."""
    ptx = nvptx.compile_module(_module(_pointers_ptx()))
    assert ".callprototype" in ptx and "mov.b64" in ptx
    if ptxas_path() is not None:
        assert ptxas_errors(ptx, "sm_80") == ""


@needs_nvrtc
def test_amdgpu_dispatches_over_address_taken_functions():
    """A function's address is its number; each candidate of the prototype's type is
    compared and called directly (no indirect call reaches the code object)."""
    text = amdgpu.compile_llvm_ir(_module(_pointers_ptx()), "gfx942")
    assert re.search(r'call i32 @"_Z6squarei"', text)
    assert not re.search(r"call [^@]*%", text)     # no call through a value
    assert amdgpu.compile_object(_module(_pointers_ptx()), "gfx942")


@needs_nvrtc
@needs_opencl
def test_calls_through_registers_on_opencl():
    x = np.arange(-40, 40, dtype=np.int32)
    y = np.zeros_like(x)
    _run_opencl(_pointers_ptx(), len(x), [x, y, np.int32(len(x))], kernel="pointers")
    np.testing.assert_array_equal(y, _pointers_expected(x))


def _virtual_expected(x: np.ndarray) -> np.ndarray:
    """test_cpu_indirect.SOURCE's virtual_ops: op->apply(v) + table[v & 1](v)."""
    v = x.astype(np.int64)
    odd = (v & 1) == 1
    want = np.where(odd, v + 3, v * 5) + np.where(odd, v * v, 2 * v)
    return ((want + 2**31) % 2**32 - 2**31).astype(np.int32)


@needs_nvrtc
def test_vtables_and_function_tables_hold_function_addresses():
    """Initializers with functions' addresses: NVPTX writes the functions' names (ptxas
    resolves them); AMDGPU and SPIR-V write the functions' numbers."""
    module = _module(nvrtc.compile_to_ptx(VIRTUAL, "virtual.cu"))
    ptx = nvptx.compile_module(module)
    assert ".u64 table[2] = {_Z5twicei, _Z6squarei};" in ptx
    if ptxas_path() is not None:
        assert ptxas_errors(ptx, "sm_80") == ""
    assert amdgpu.compile_object(module, "gfx1100")


@needs_nvrtc
@needs_opencl
def test_virtual_calls_on_opencl():
    x = np.random.default_rng(3).integers(-50000, 50000, 96).astype(np.int32)
    y = np.zeros_like(x)
    _run_opencl(nvrtc.compile_to_ptx(VIRTUAL, "virtual.cu"), len(x),
                [x, y, np.int32(len(x))], kernel="virtual_ops")
    np.testing.assert_array_equal(y, _virtual_expected(x))


SHARED_CALLEE = """
.shared .align 4 .b32 counter;
.func (.param .b32 r) bump(.param .b32 a)
{
.reg .b32 %r<3>;
ld.param.b32 %r1, [a];
atom.shared.add.u32 %r2, [counter], %r1;
st.param.b32 [r], %r2;
ret;
}
.global .align 8 .u64 pointer = bump;
"""
CALL_THROUGH = """
.reg .b32 %r<2>; .reg .b64 %rd<2>;
ld.global.u64 %rd1, [pointer];
{
.param .b32 a; .param .b32 r;
prototype_0 : .callprototype (.param .b32 _) _ (.param .b32 _);
st.param.b32 [a], 1;
call (r), %rd1, (a), prototype_0;
ld.param.b32 %r1, [r];
}
ret;
"""


def test_spirv_refuses_a_call_that_may_reach_a_function_it_only_inlines():
    """SPIR-V runs functions that use shared memory inlined only: one of those whose address
    is taken cannot be called through it, and the call says so rather than do nothing (the
    address in a register is refused too)."""
    module = _module(kernel_ptx(CALL_THROUGH, "", extra=SHARED_CALLEE))
    with pytest.raises(UnsupportedFeatureError, match="may be 'bump'"):
        spirv.compile_module(module)
    taken = CALL_THROUGH.replace("ld.global.u64 %rd1, [pointer];", "mov.u64 %rd1, bump;")
    with pytest.raises(UnsupportedFeatureError, match="the address of 'bump'"):
        spirv.compile_module(_module(kernel_ptx(taken, "", extra=SHARED_CALLEE)))


# --- wmma without tensor cores ------------------------------------------------------------------

WMMA = r"""
#include <mma.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
using namespace nvcuda;

// bf16 from shared memory (the CUDA samples' bf16TensorCoreGemm): row-major a, column-major
// b, f32 accumulators that are scaled element by element, stored row-major.
extern "C" __global__ void wmma_bf16(const __nv_bfloat16 *a, const __nv_bfloat16 *b,
                                     float *d)
{
    __shared__ __nv_bfloat16 sa[16 * 16], sb[16 * 16];
    for (int i = threadIdx.x; i < 256; i += 32) { sa[i] = a[i]; sb[i] = b[i]; }
    __syncthreads();
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::fill_fragment(fc, 1.0f);
    wmma::load_matrix_sync(fa, sa, 16);
    wmma::load_matrix_sync(fb, sb, 16);
    wmma::mma_sync(fc, fa, fb, fc);
    for (int t = 0; t < fc.num_elements; t++)
        fc.x[t] *= 2.0f;
    wmma::store_matrix_sync(d, fc, 16, wmma::mem_row_major);
}

// f16 from global memory with strides: column-major a (ld 24), row-major b (ld 20), f16
// accumulators loaded column-major, stored column-major (ld 18).
extern "C" __global__ void wmma_f16(const half *a, const half *b, const half *c, half *d)
{
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::col_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, half> fc;
    wmma::load_matrix_sync(fa, a, 24);
    wmma::load_matrix_sync(fb, b, 20);
    wmma::load_matrix_sync(fc, c, 18, wmma::mem_col_major);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(d, fc, 18, wmma::mem_col_major);
}
"""


def _bf16(x: np.ndarray) -> np.ndarray:
    """float32 values exactly representable in bf16, as bf16 bits."""
    return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)


def _wmma_inputs(seed: int):
    rng = np.random.default_rng(seed)
    # small integers and halves: every product and sum is exact in f32 and in f16
    return [rng.integers(-4, 5, (16, 16)).astype(np.float32) / 2 for _ in range(3)]


@needs_nvrtc
@needs_opencl
def test_wmma_bf16_from_shared_memory_on_opencl():
    a, b, _ = _wmma_inputs(1)
    d = np.zeros((16, 16), np.float32)
    _run_opencl(nvrtc.compile_to_ptx(WMMA, "wmma.cu"), 32,
                [_bf16(a), _bf16(b.T.copy()), d], kernel="wmma_bf16")
    np.testing.assert_array_equal(d, 2 * (a @ b + 1))


@needs_nvrtc
@needs_opencl
def test_wmma_f16_with_strides_and_layouts_on_opencl():
    a, b, c = _wmma_inputs(2)
    a_mem = np.zeros((16, 24), np.float16)          # column-major: column j at a_mem[j]
    a_mem[:, :16] = a.T
    b_mem = np.zeros((16, 20), np.float16)          # row-major
    b_mem[:, :16] = b
    c_mem = np.zeros((16, 18), np.float16)          # column-major
    c_mem[:, :16] = c.T
    d_mem = np.full((16, 18), 7, np.float16)
    _run_opencl(nvrtc.compile_to_ptx(WMMA, "wmma.cu"), 32,
                [a_mem.view(np.uint16), b_mem.view(np.uint16), c_mem.view(np.uint16),
                 d_mem.view(np.uint16)], kernel="wmma_f16")
    np.testing.assert_array_equal(d_mem[:, :16].T.astype(np.float32), a @ b + c)
    assert (d_mem[:, 16:] == 7).all()                # the padding is left alone


def test_amdgpu_traps_on_a_call_of_an_address_that_is_no_function():
    """f is the only candidate; any other address reaches llvm.trap, never a jump."""
    ptx = kernel_ptx(BAD_CALL + "ret;", ".param .u64 pf", extra=FUNCTION)
    text = amdgpu.compile_llvm_ir(_module(ptx), "gfx1100")
    kernel = text[text.index('define amdgpu_kernel void @"k"'):]
    assert "icmp eq i64" in kernel and 'call void @"llvm.trap"()' in kernel
    assert re.search(r'call i32 @"f"', kernel)


WMMA_FORMS = r"""
#include <mma.h>
using namespace nvcuda;

// m32n8k16 f16 -> f32, every matrix packed row-major (a 32 x 16, b 16 x 8, d 32 x 8)
extern "C" __global__ void wmma_tall(const half *a, const half *b, float *d)
{
    wmma::fragment<wmma::matrix_a, 32, 8, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 32, 8, 16, half, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 32, 8, 16, float> fc;
    wmma::fill_fragment(fc, 0.5f);
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 8);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(d, fc, 8, wmma::mem_row_major);
}

// m16n16k16 s8 -> s32 with saturation, c loaded row-major
extern "C" __global__ void wmma_s8(const signed char *a, const signed char *b, const int *c,
                                   int *d)
{
    wmma::fragment<wmma::matrix_a, 16, 16, 16, signed char, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, signed char, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, int> fc;
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::load_matrix_sync(fc, c, 16, wmma::mem_row_major);
    wmma::mma_sync(fc, fa, fb, fc, true);
    wmma::store_matrix_sync(d, fc, 16, wmma::mem_row_major);
}

// m16n16k8 tf32 -> f32 and m8n8k4 f64
extern "C" __global__ void wmma_tf32(const float *a, const float *b, float *d)
{
    wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> fc;
    wmma::fill_fragment(fc, 0.0f);
    wmma::load_matrix_sync(fa, a, 8);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(d, fc, 16, wmma::mem_row_major);
}

extern "C" __global__ void wmma_f64(const double *a, const double *b, double *d)
{
    wmma::fragment<wmma::matrix_a, 8, 8, 4, double, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 8, 8, 4, double, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 8, 8, 4, double> fc;
    wmma::fill_fragment(fc, 1.0);
    wmma::load_matrix_sync(fa, a, 4);
    wmma::load_matrix_sync(fb, b, 4);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(d, fc, 8, wmma::mem_row_major);
}
"""


@needs_nvrtc
@needs_opencl
def test_wmma_shapes_and_types_on_opencl():
    """m32n8k16 f16, s8 with .satfinite, tf32 (its low 13 mantissa bits ignored) and f64."""
    ptx = nvrtc.compile_to_ptx(WMMA_FORMS, "wmma_forms.cu")
    rng = np.random.default_rng(5)
    a, b = rng.integers(-4, 5, (32, 16)) / 2, rng.integers(-4, 5, (16, 8)) / 2
    d = np.zeros((32, 8), np.float32)
    _run_opencl(ptx, 32, [a.astype(np.float16).view(np.uint16),
                          b.astype(np.float16).view(np.uint16), d], kernel="wmma_tall")
    np.testing.assert_array_equal(d, a @ b + 0.5)

    a, b = rng.integers(-128, 128, (16, 16)), rng.integers(-128, 128, (16, 16))
    c = rng.integers(-1000, 1000, (16, 16))
    c[0] = 2**31 - 100                               # row 0 saturates one way or the other
    c[1] = -(2**31) + 100
    d = np.zeros((16, 16), np.int32)
    _run_opencl(ptx, 32, [a.astype(np.int8), b.T.astype(np.int8).copy(), c.astype(np.int32),
                          d], kernel="wmma_s8")
    np.testing.assert_array_equal(d, np.clip(a @ b + c, -(2**31), 2**31 - 1))

    a = rng.integers(-4, 5, (16, 8)).astype(np.float32) / 2
    a[0, 0] = np.float32(1 + 2**-20)                 # below tf32's precision: read as 1
    b = rng.integers(-4, 5, (8, 16)).astype(np.float32) / 2
    d = np.zeros((16, 16), np.float32)
    _run_opencl(ptx, 32, [a, b, d], kernel="wmma_tf32")
    a[0, 0] = 1
    np.testing.assert_array_equal(d, a @ b)

    a, b = rng.standard_normal((8, 4)), rng.standard_normal((4, 8))
    d = np.zeros((8, 8))
    _run_opencl(ptx, 32, [a, b.T.copy(), d], kernel="wmma_f64")
    np.testing.assert_allclose(d, a @ b + 1, rtol=1e-14)


@needs_nvrtc
def test_wmma_compiles_for_amdgpu():
    for source in (WMMA, WMMA_FORMS):
        module = _module(nvrtc.compile_to_ptx(source, "wmma.cu"))
        for chip in ("gfx1100", "gfx942"):
            assert amdgpu.compile_object(module, chip)


def test_sub_byte_wmma_is_refused_by_name():
    body = """.reg .b32 %r<2>; .reg .b64 %rd<2>;
ld.param.u64 %rd1, [p];
wmma.load.a.sync.aligned.row.m8n8k32.global.s4 {%r1}, [%rd1], 32;
ret;"""
    module = _module(kernel_ptx(body, ".param .u64 p", target="sm_80", version="7.0"))
    for compile_ in (spirv.compile_module, lambda m: amdgpu.compile_object(m, "gfx1100")):
        with pytest.raises(UnsupportedFeatureError, match=r"\.s4 a fragments"):
            compile_(module)
