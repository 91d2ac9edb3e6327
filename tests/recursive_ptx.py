"""Recursive PTX for the targets' tests: each kernel `k` writes results to `out`. The CPU
runs recursion (on its local stack: codegen/targets/cpu/local_stack.py), AMDGPU with LLVM's
stack, and the SPIR-V target refuses it (OpenCL may not recurse)."""

from __future__ import annotations

from cpu_harness import kernel_ptx

__all__ = ["DOWN_PTX", "FIB_PTX", "RECURSION_PTX"]

# depth_sum(n) = n + depth_sum(n - 1), the inner result stored by store_sum through the
# generic address of depth_sum's local slot: recursion through two functions
RECURSION = """
.func store_sum(.param .b64 p, .param .b32 n);
.func (.param .b64 r) depth_sum(.param .b32 n)
{
.local .align 8 .b8 slot[8];
.reg .b32 %r<4>; .reg .b64 %rd<8>; .reg .pred %p<2>;
ld.param.u32 %r1, [n];
setp.eq.u32 %p1, %r1, 0;
@%p1 bra BASE;
sub.u32 %r2, %r1, 1;
mov.u64 %rd1, slot;
cvta.local.u64 %rd2, %rd1;
{
.param .b64 a0; .param .b32 a1;
st.param.b64 [a0], %rd2;
st.param.b32 [a1], %r2;
call store_sum, (a0, a1);
}
ld.local.u64 %rd3, [slot];
cvt.u64.u32 %rd4, %r1;
add.u64 %rd5, %rd3, %rd4;
st.param.b64 [r], %rd5;
ret;
BASE:
st.param.b64 [r], 0;
ret;
}
.func store_sum(.param .b64 p, .param .b32 n)
{
.reg .b32 %r<2>; .reg .b64 %rd<4>;
ld.param.u64 %rd1, [p];
ld.param.u32 %r1, [n];
{
.param .b32 a0; .param .b64 r0;
st.param.b32 [a0], %r1;
call (r0), depth_sum, (a0);
ld.param.b64 %rd2, [r0];
}
st.u64 [%rd1], %rd2;
ret;
}
"""
CALL_DEPTH_SUM = """
.reg .b32 %r<8>; .reg .b64 %rd<4>;
ld.param.u64 %rd1, [out];
ld.param.u32 %r5, [n];
mov.u32 %r1, %tid.x;
add.u32 %r3, %r1, %r5;
{
.param .b32 a0; .param .b64 r0;
st.param.b32 [a0], %r3;
call (r0), depth_sum, (a0);
ld.param.b64 %rd2, [r0];
}
mul.wide.u32 %rd3, %r1, 8;
add.u64 %rd3, %rd1, %rd3;
st.global.u64 [%rd3], %rd2;
ret;
"""
RECURSION_PTX = kernel_ptx(CALL_DEPTH_SUM, ".param .u64 out, .param .u32 n", extra=RECURSION)


# down(n) = n == 0 ? 0 : down(n - 1) + 1: recursion with no local memory, bounded too
DOWN = """
.func (.param .b32 r) down(.param .b32 n)
{
.reg .b32 %r<4>; .reg .pred %p<2>;
ld.param.u32 %r1, [n];
mov.u32 %r3, 0;
setp.eq.u32 %p1, %r1, 0;
@%p1 bra DONE;
sub.u32 %r2, %r1, 1;
{
.param .b32 a0; .param .b32 r0;
st.param.b32 [a0], %r2;
call (r0), down, (a0);
ld.param.b32 %r3, [r0];
}
add.u32 %r3, %r3, 1;
DONE:
st.param.b32 [r], %r3;
ret;
}
"""
CALL_DOWN = """
.reg .b32 %r<4>; .reg .b64 %rd<2>;
ld.param.u64 %rd1, [out];
ld.param.u32 %r1, [n];
{
.param .b32 a0; .param .b32 r0;
st.param.b32 [a0], %r1;
call (r0), down, (a0);
ld.param.b32 %r2, [r0];
}
st.global.u32 [%rd1], %r2;
ret;
"""
DOWN_PTX = kernel_ptx(CALL_DOWN, ".param .u64 out, .param .u32 n", extra=DOWN)


# fib(n) = fib(n - 1) + fib(n - 2): two calls, which LLVM cannot turn into a loop
FIB = """
.func (.param .b32 r) fib(.param .b32 n)
{
.reg .b32 %r<8>; .reg .pred %p<2>;
ld.param.u32 %r1, [n];
mov.u32 %r5, %r1;
setp.lt.u32 %p1, %r1, 2;
@%p1 bra DONE;
sub.u32 %r2, %r1, 1;
{
.param .b32 a0; .param .b32 r0;
st.param.b32 [a0], %r2;
call (r0), fib, (a0);
ld.param.b32 %r3, [r0];
}
sub.u32 %r2, %r1, 2;
{
.param .b32 a0; .param .b32 r0;
st.param.b32 [a0], %r2;
call (r0), fib, (a0);
ld.param.b32 %r4, [r0];
}
add.u32 %r5, %r3, %r4;
DONE:
st.param.b32 [r], %r5;
ret;
}
"""
CALL_FIB = """
.reg .b32 %r<4>; .reg .b64 %rd<4>;
ld.param.u64 %rd1, [out];
mov.u32 %r1, %tid.x;
{
.param .b32 a0; .param .b32 r0;
st.param.b32 [a0], %r1;
call (r0), fib, (a0);
ld.param.b32 %r2, [r0];
}
mul.wide.u32 %rd2, %r1, 4;
add.u64 %rd3, %rd1, %rd2;
st.global.u32 [%rd3], %r2;
ret;
"""
FIB_PTX = kernel_ptx(CALL_FIB, ".param .u64 out", extra=FIB)
