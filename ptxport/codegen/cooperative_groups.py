"""CUDA's device runtime functions of cooperative groups, as PTX that ptxport links into a
module calling them: the grid synchronisation of numba-cuda (`cuda.cg.this_grid().sync()`)
and of pre-CUDA 11 cooperative groups.

cudadevrt (libcudadevrt.a, CUDA 13) defines them on the driver's system calls:

    cudaCGGetIntrinsicHandle(scope)   scope 1 (cudaCGScopeGrid): the grid's handle, else 0
    cudaCGSynchronize(handle, flags)  every thread of the grid waits for all the others;
                                      handle 0: returns 999 (cudaErrorUnknown), no wait
    cudaCGSynchronizeGrid(handle, f)  the same, its system call made by thread 0 of each
                                      block between two bar.sync 0

cudadevrt's handle is a token of the driver's (on an H100, driver 580: 0x7ffffffffffff in a
cooperative launch, 0 in a plain one, where cudaCGSynchronize returned 999 and did not
wait). Here the handle is the grid workspace that a cooperative launch passes in
%envreg1:%envreg2 (the high half in %envreg1), as cooperative_groups.h's `this_grid()` reads
it, and the wait is the header's `sync_grids` on the workspace's barrier word
(`grid_workspace::barrier`, bytes 4..7): bar.sync 0; thread 0 of each block adds 1 to the
word (block 0 adds 0x80000000 - (blocks - 1), so that the top bit flips when the last block
arrives) and waits for the flip; bar.sync 0. Both kinds of grid sync in one kernel
therefore count on one barrier. The cpu device passes no workspace to a launch that is not
cooperative: there these functions trap, as the header's `grid_group::sync()` does for such
a grid (`_CG_ABORT()`), so that a kernel that needs the wait stops with an error rather than
computing on without it (cudadevrt's 999). NVIDIA's driver 580 passes a workspace to plain
launches too (seen on an H100): on cuda devices a plain launch then waits, as the header's
`grid.sync()` does on that driver.
"""

from __future__ import annotations

import re

__all__ = ["FUNCTIONS", "LIBRARY_PTX", "calls_grid_sync", "declares_grid_sync"]

FUNCTIONS = ("cudaCGGetIntrinsicHandle", "cudaCGSynchronize", "cudaCGSynchronizeGrid")
_EXTERN = re.compile(r"\.extern\s+\.func\s*(?:\([^)]*\)\s*)?(cudaCG\w+)\s*\(")


def calls_grid_sync(undefined: set[str]) -> bool:
    """Whether a module whose undefined functions are `undefined` needs LIBRARY_PTX."""
    return any(name in FUNCTIONS for name in undefined)


def declares_grid_sync(ptx: str) -> bool:
    """Whether `ptx` declares (`.extern .func`) one of FUNCTIONS: a unit of a program that
    nvcc linked with cudadevrt for them (compat/execution.py links LIBRARY_PTX instead)."""
    return any(name in FUNCTIONS for name in _EXTERN.findall(ptx))


_SYNC_BODY = """
{
    .reg .pred %p<5>;
    .reg .b32 %r<16>;
    .reg .b64 %rd<3>;

    ld.param.u64 %rd1, [{name}_param_0];
    setp.eq.u64 %p1, %rd1, 0;
    @%p1 bra $L_{name}_not_cooperative;
    bar.sync 0;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %tid.y;
    mov.u32 %r3, %tid.z;
    add.u32 %r4, %r1, %r2;
    add.u32 %r4, %r4, %r3;
    setp.ne.u32 %p2, %r4, 0;
    @%p2 bra $L_{name}_wait;                    // thread 0 of the block arrives for it
    mov.u32 %r5, %nctaid.x;
    mov.u32 %r6, %nctaid.y;
    mov.u32 %r7, %nctaid.z;
    mul.lo.u32 %r8, %r5, %r6;
    mul.lo.u32 %r8, %r8, %r7;
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ctaid.y;
    mov.u32 %r3, %ctaid.z;
    add.u32 %r4, %r1, %r2;
    add.u32 %r4, %r4, %r3;
    setp.eq.u32 %p3, %r4, 0;
    sub.u32 %r9, 0x80000001, %r8;               // block 0: 0x80000000 - (blocks - 1)
    selp.u32 %r10, %r9, 1, %p3;
    add.u64 %rd2, %rd1, 4;                      // grid_workspace::barrier
    atom.add.release.gpu.u32 %r11, [%rd2], %r10;
$L_{name}_spin:
    ld.acquire.gpu.u32 %r12, [%rd2];
    xor.b32 %r13, %r11, %r12;
    and.b32 %r14, %r13, 0x80000000;
    setp.eq.u32 %p4, %r14, 0;
    @%p4 bra $L_{name}_spin;
$L_{name}_wait:
    bar.sync 0;
    st.param.b32 [func_retval0], 0;
    ret;
$L_{name}_not_cooperative:
    .loc 1 1 0
    trap;
    .loc 1 0 0
}
"""


def _sync(name: str) -> str:
    return (f".visible .func (.param .b32 func_retval0) {name}(\n"
            f"    .param .b64 {name}_param_0,\n    .param .b32 {name}_param_1\n)"
            + _SYNC_BODY.replace("{name}", name))


# what a KernelTrapError names as the place of the trap in a launch that is not cooperative
_NOT_COOPERATIVE = ("grid synchronisation in a launch that is not cooperative "
                    "(LaunchConfig(is_cooperative=True), cudaLaunchCooperativeKernel)")

LIBRARY_PTX = """//
// ptxport's cudadevrt functions of cooperative groups (codegen/cooperative_groups.py)
//
.version 7.0
.target sm_70
.address_size 64

// (what a trap's error names as its place: the grid has no workspace)
.file 1 "{_NOT_COOPERATIVE}"

.visible .func (.param .b64 func_retval0) cudaCGGetIntrinsicHandle(
    .param .b32 cudaCGGetIntrinsicHandle_param_0
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<4>;

    ld.param.u32 %r1, [cudaCGGetIntrinsicHandle_param_0];
    mov.u64 %rd3, 0;
    setp.ne.u32 %p1, %r1, 1;                    // only cudaCGScopeGrid has a handle
    @%p1 bra $L_handle_done;
    mov.u32 %r2, %envreg1;
    mov.u32 %r3, %envreg2;
    cvt.u64.u32 %rd1, %r2;
    shl.b64 %rd1, %rd1, 32;
    cvt.u64.u32 %rd2, %r3;
    or.b64 %rd3, %rd1, %rd2;
$L_handle_done:
    st.param.b64 [func_retval0], %rd3;
    ret;
}

""".replace("{_NOT_COOPERATIVE}", _NOT_COOPERATIVE) \
    + _sync("cudaCGSynchronize") + "\n" + _sync("cudaCGSynchronizeGrid")
