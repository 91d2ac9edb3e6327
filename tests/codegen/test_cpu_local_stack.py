"""Device functions' local memory through generic addresses on the CPU (local_stack.py):
a .func passes the generic address of its .local array to another .func, which writes it
(as numba's calls pass result slots); recursion through such calls; writes past the live
frames and recursion too deep for the stack are reported, never performed. Where the calls
recurse or use alloca, a thread's stack is cudaLimitStackSize bytes (1 KiB unless set:
runtime/backends/cpu/stack_limit.py)."""

from __future__ import annotations

import numpy as np
import pytest

from cpu_harness import compile_ptx, kernel_ptx, run_ptx
from ptxport.codegen.targets.cpu.local_stack import DEFAULT_STACK_LIMIT
from ptxport.errors import IllegalAddressError
from ptxport.runtime.backends.cpu import stack_limit
from recursive_ptx import DOWN_PTX, FIB_PTX, RECURSION_PTX

# fill(p, n, v): p[i] = i * v for i < n, through the generic address p
FILL = """
.func fill(.param .b64 p, .param .b32 n, .param .b32 v)
{
.reg .b32 %r<8>; .reg .b64 %rd<4>; .reg .pred %p<2>;
ld.param.u64 %rd1, [p];
ld.param.u32 %r1, [n];
ld.param.u32 %r2, [v];
mov.u32 %r3, 0;
LOOP:
setp.ge.u32 %p1, %r3, %r1;
@%p1 bra DONE;
mul.lo.u32 %r4, %r3, %r2;
st.u32 [%rd1], %r4;
add.u64 %rd1, %rd1, 4;
add.u32 %r3, %r3, 1;
bra LOOP;
DONE:
ret;
}
"""
# sum_local(v, n): fills its 16-word local array through its generic address (n words),
# and sums the 16 words with ld.local
SUM_LOCAL = FILL + """
.func (.param .b32 r) sum_local(.param .b32 v, .param .b32 n)
{
.local .align 4 .b8 arr[64];
.reg .b32 %r<8>; .reg .b64 %rd<4>; .reg .pred %p<2>;
ld.param.u32 %r1, [v];
ld.param.u32 %r7, [n];
mov.u64 %rd1, arr;
cvta.local.u64 %rd2, %rd1;
{
.param .b64 a0; .param .b32 a1; .param .b32 a2;
st.param.b64 [a0], %rd2;
st.param.b32 [a1], %r7;
st.param.b32 [a2], %r1;
call fill, (a0, a1, a2);
}
mov.u32 %r2, 0;
mov.u32 %r3, 0;
LOOP:
setp.ge.u32 %p1, %r3, 16;
@%p1 bra DONE;
ld.local.u32 %r4, [%rd1];
add.u32 %r2, %r2, %r4;
add.u64 %rd1, %rd1, 4;
add.u32 %r3, %r3, 1;
bra LOOP;
DONE:
st.param.b32 [r], %r2;
ret;
}
"""
CALL_SUM_LOCAL = """
.reg .b32 %r<8>; .reg .b64 %rd<4>;
ld.param.u64 %rd1, [out];
ld.param.u32 %r5, [n];
mov.u32 %r1, %tid.x;
{
.param .b32 a0; .param .b32 a1; .param .b32 r0;
st.param.b32 [a0], %r1;
st.param.b32 [a1], %r5;
call (r0), sum_local, (a0, a1);
ld.param.b32 %r2, [r0];
}
mul.wide.u32 %rd2, %r1, 4;
add.u64 %rd3, %rd1, %rd2;
st.global.u32 [%rd3], %r2;
ret;
"""
LOCAL_PTX = kernel_ptx(CALL_SUM_LOCAL, ".param .u64 out, .param .u32 n", extra=SUM_LOCAL)


def test_a_device_functions_local_array_written_through_its_generic_address():
    out = np.zeros(96, np.uint32)
    run_ptx(LOCAL_PTX, "k", 1, 96, [out, np.uint32(16)])
    # sum over i < 16 of i * tid
    np.testing.assert_array_equal(out, np.arange(96) * 120)
    _, binary = compile_ptx(LOCAL_PTX, "k")
    # calls run thread by thread (warp gangs do not lower calls), on the local stack
    assert binary.for_block((96, 1, 1)).gang_refusal is not None


def test_a_write_past_the_innermost_frame_is_reported():
    # the 17th word lies past sum_local's array, the end of the live frames
    out = np.zeros(32, np.uint32)
    with pytest.raises(IllegalAddressError, match="wrote 4 bytes .* outside every "
                                                  "allocation, at line 16"):
        run_ptx(LOCAL_PTX, "k", 1, 32, [out, np.uint32(17)])




@pytest.fixture
def stack_size():
    """Sets cudaLimitStackSize for the test (restored after)."""
    yield stack_limit.set_stack_size
    stack_limit.set_stack_size(DEFAULT_STACK_LIMIT)


def test_recursion_through_generic_addresses_of_local_memory(stack_size):
    # 131 levels of depth_sum's 16-byte frame: more than CUDA's default stack of 1 KiB
    stack_size(64 << 10)
    out = np.zeros(64, np.uint64)
    run_ptx(RECURSION_PTX, "k", 2, 32, [out, np.uint32(100)])
    n = 100 + np.arange(32, dtype=np.uint64)
    np.testing.assert_array_equal(out[:32], n * (n + 1) // 2)


def test_recursion_too_deep_for_the_stack_is_reported(stack_size):
    out = np.zeros(1, np.uint64)
    # depth_sum's frame (its 8-byte slot) takes 16 bytes a level: 64 levels fill 1 KiB
    run_ptx(RECURSION_PTX, "k", 1, 1, [out, np.uint32(63)])
    assert out[0] == 63 * 64 // 2
    with pytest.raises(IllegalAddressError, match=f"ran out of stack .*{DEFAULT_STACK_LIMIT} "
                                                  r"bytes per thread \(cudaLimitStackSize.* at "
                                                  "line (20|39) "):
        run_ptx(RECURSION_PTX, "k", 1, 1, [out, np.uint32(64)])
    # the limit set is what the next launch has
    stack_size(4096)
    run_ptx(RECURSION_PTX, "k", 1, 1, [out, np.uint32(255)])
    assert out[0] == 255 * 256 // 2
    with pytest.raises(IllegalAddressError, match="ran out of stack .*4096 bytes per thread"):
        run_ptx(RECURSION_PTX, "k", 1, 1, [out, np.uint32(256)])


def test_recursion_without_local_memory_is_bounded_by_the_stack():
    out = np.zeros(1, np.uint32)
    run_ptx(DOWN_PTX, "k", 1, 1, [out, np.uint32(1000)])
    assert out[0] == 1000
    # (no local memory: none of cudaLimitStackSize's) a million levels of native frames
    # would overflow the worker's native stack
    with pytest.raises(IllegalAddressError, match="ran out of native stack"):
        run_ptx(DOWN_PTX, "k", 1, 1, [out, np.uint32(1_000_000)])


def test_recursion_with_two_calls_a_level():
    out = np.zeros(24, np.uint32)
    run_ptx(FIB_PTX, "k", 1, 24, [out])
    fib = [0, 1]
    while len(fib) < 24:
        fib.append(fib[-1] + fib[-2])
    np.testing.assert_array_equal(out, fib)


# alloca'd memory (the kernel's) written through its generic address, then a call of
# sum_local, whose frame goes above it, and the alloca'd word read back with ld.local
ALLOCA_THEN_CALL = """
.reg .b32 %r<8>; .reg .b64 %rd<8>;
ld.param.u64 %rd1, [out];
ld.param.u64 %rd6, [size];
mov.u32 %r1, %tid.x;
alloca.u64 %rd4, %rd6, 16;
cvta.local.u64 %rd5, %rd4;
add.u32 %r6, %r1, 1000;
st.u32 [%rd5], %r6;
{
.param .b32 a0; .param .b32 a1; .param .b32 r0;
st.param.b32 [a0], %r1;
st.param.b32 [a1], 16;
call (r0), sum_local, (a0, a1);
ld.param.b32 %r2, [r0];
}
ld.local.u32 %r3, [%rd4];
mul.wide.u32 %rd2, %r1, 8;
add.u64 %rd3, %rd1, %rd2;
st.global.v2.u32 [%rd3], {%r2, %r3};
ret;
"""
ALLOCA_PTX = kernel_ptx(ALLOCA_THEN_CALL, ".param .u64 out, .param .u64 size",
                        extra=SUM_LOCAL, target="sm_90")


def test_alloca_memory_through_its_generic_address_beside_calls():
    out = np.zeros((64, 2), np.uint32)
    run_ptx(ALLOCA_PTX, "k", 2, 64, [out, np.uint64(16)])
    np.testing.assert_array_equal(out[:, 0], np.arange(64) * 120)
    np.testing.assert_array_equal(out[:, 1], np.arange(64) + 1000)


def test_alloca_larger_than_the_stack_is_reported():
    out = np.zeros((1, 2), np.uint32)
    line = ALLOCA_PTX.splitlines().index("alloca.u64 %rd4, %rd6, 16;") + 1
    with pytest.raises(IllegalAddressError, match=f"ran out of stack .*alloca.* at line {line} "):
        run_ptx(ALLOCA_PTX, "k", 1, 1, [out, np.uint64(2 * DEFAULT_STACK_LIMIT)])
