"""Calls through addresses on the CPU (CpuTarget.indirect_call): C++ virtual functions and a
table of function pointers, with vtables and the table in module variables initialized with
the functions' addresses; a call of an address that is no function is reported, never
jumped to. (CPU only: the GPU targets refuse function addresses in initializers, so this is
not a corpus file.)"""

from __future__ import annotations

import numpy as np
import pytest

from cpu_harness import kernel_ptx, run_ptx
from ptxport import Device, LaunchConfig, Program, launch
from ptxport.errors import IllegalAddressError
from ptxport.frontends import nvrtc

SOURCE = r"""
struct Op {
    __device__ virtual int apply(int x) const = 0;
};
struct Add : Op {
    int k;
    __device__ Add(int k) : k(k) {}
    __device__ int apply(int x) const override { return x + k; }
};
struct Mul : Op {
    int k;
    __device__ Mul(int k) : k(k) {}
    __device__ int apply(int x) const override { return x * k; }
};

typedef int (*unary_t)(int);
__device__ __noinline__ int twice(int x) { return 2 * x; }
__device__ __noinline__ int square(int x) { return x * x; }
__device__ unary_t table[2] = {twice, square};

extern "C" __global__ void virtual_ops(const int* x, int* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    Add add(3);
    Mul mul(5);
    int v = x[i];
    const Op* op = (v & 1) ? (const Op*)&add : (const Op*)&mul;
    y[i] = op->apply(v) + table[v & 1](v);
}

extern "C" __global__ void plain(int* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = 7 * i;
}
"""


_NVRTC, _NO_NVRTC = nvrtc.available()


@pytest.mark.skipif(not _NVRTC, reason=f"CUDA C++ input needs NVRTC: {_NO_NVRTC}")
def test_virtual_calls_and_function_pointer_tables():
    n = 1000
    x = np.random.default_rng(3).integers(-50000, 50000, n).astype(np.int32)
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(SOURCE, code_type="c++").compile("native").get_kernel("virtual_ops")
    bx, by = dev.allocate(x.nbytes, stream=stream), dev.allocate(x.nbytes, stream=stream)
    bx.copy_from(x, stream=stream)
    launch(stream, LaunchConfig(grid=(n + 127) // 128, block=128), kernel, bx, by, np.int32(n))
    y = np.zeros(n, np.int32)
    by.copy_to(y, stream=stream)
    stream.sync()
    v = x.astype(np.int64)
    odd = (v & 1) == 1
    want = np.where(odd, v + 3, v * 5) + np.where(odd, v * v, 2 * v)
    np.testing.assert_array_equal(y, ((want + 2**31) % 2**32 - 2**31).astype(np.int32))



@pytest.mark.skipif(not _NVRTC, reason=f"CUDA C++ input needs NVRTC: {_NO_NVRTC}")
def test_a_kernel_beside_vtables_runs_as_warp_gangs():
    """The module's vtables hold the addresses of functions that kernel does not call: it
    compiles (as warp gangs, without the tables) and runs."""
    n = 300
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(SOURCE, code_type="c++").compile("native").get_kernel("plain")
    by = dev.allocate(4 * n, stream=stream)
    launch(stream, LaunchConfig(grid=3, block=128), kernel, by, np.int32(n))
    y = np.zeros(n, np.int32)
    by.copy_to(y, stream=stream)
    stream.sync()
    np.testing.assert_array_equal(y, 7 * np.arange(n))
    assert kernel._binary(dev).for_block((128, 1, 1)).gang_refusal is None
    vtable_user = Program(SOURCE, code_type="c++").compile("native").get_kernel("virtual_ops")
    assert vtable_user._binary(dev).for_block((128, 1, 1)).gang_refusal is not None


FUNCTION = """
.func (.param .b32 r) f(.param .b32 a)
{
.reg .b32 %r<2>;
ld.param.b32 %r1, [a];
st.param.b32 [r], %r1;
ret;
}
"""
BAD_CALL = """
.reg .b32 %r<4>; .reg .b64 %rd<4>;
ld.param.u64 %rd1, [pf];
mov.u64 %rd2, f;
{
.param .b32 a; .param .b32 r;
prototype_0 : .callprototype (.param .b32 _) _ (.param .b32 _);
st.param.b32 [a], 1;
call (r), %rd1, (a), prototype_0;
ld.param.b32 %r1, [r];
}
"""


def test_a_call_of_an_address_that_is_no_function_is_reported():
    # f's address is taken (so f may be called through one); 0x1234 is not it
    ptx = kernel_ptx(BAD_CALL, ".param .u64 pf", extra=FUNCTION)
    with pytest.raises(IllegalAddressError, match="called address 0x1234, which is no function"):
        run_ptx(ptx, "k", 1, 1, [np.uint64(0x1234)])
