"""A kernel as warp gangs for one block shape: the LLVM module with its gang function and the
run_blocks loop that runs a block's warps in rounds until all have exited.
"""

from __future__ import annotations

import llvmlite.binding as llvm
from llvmlite import ir as ll

from ptxport.codegen.lower import I1, I8, I32, I64, PTR
from ptxport.codegen.targets.cpu.abi import FRAME, KernelPlan
from ptxport.codegen.targets.cpu.entry import build_claiming, open_block_loop
from ptxport.codegen.targets.cpu.gang.lanes import BARRIER, SCRATCH_LANE, STATUS, GangUnsupported, W
from ptxport.codegen.targets.cpu.gang.lowering import lower_gang
from ptxport.codegen.targets.cpu.gang.refusals import refusal
from ptxport.codegen.targets.cpu.gang.state import gang_target_class
from ptxport.codegen.targets.cpu.module import declare_globals, plan_kernel
from ptxport.codegen.targets.cpu.options import CpuOptions
from ptxport.codegen.targets.cpu.runtime_functions import add_conversions
from ptxport.errors import UnsupportedFeatureError
from ptxport.ir import nodes as ir

__all__ = ["GangUnsupported", "build_gang", "check_gang"]


def _build_run_blocks(llmod: ll.Module, gang: ll.Function, warp_frame: int,
                      block: tuple[int, int, int]) -> None:
    """i64 run_blocks(ctx, frames, frame_size, nthreads, first, count, status*): blocks
    first..first+count-1, each warp by warp in rounds until every warp has exited (a round
    ends when each warp has exited or waits at a barrier); -1, or (block << 32 | thread) of
    the lane that faulted or waits forever, its status in *status."""
    fn = ll.Function(llmod, ll.FunctionType(I64, [PTR, PTR, I64, I32, I64, I64, PTR]),
                     name="run_blocks")
    ctx, frames, _frame_size, nthreads, first, count, status_out = fn.args
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    nthreads = I32(block[0] * block[1] * block[2])     # (the executor passes the same)
    warps = b.udiv(b.add(nthreads, I32(W - 1)), I32(W))
    names = ("round_head", "warp_head", "warp_body", "warp_run", "warp_next", "round_end",
             "failed")
    (round_head, warp_head, warp_body, warp_run, warp_next, round_end,
     failed) = (fn.append_basic_block(n) for n in names)
    n, block_body, block_next = open_block_loop(b, ctx, first, count)
    b.branch(round_head)
    b.position_at_end(round_head)
    fresh = b.phi(I1, "fresh")
    fresh.add_incoming(I1(1), block_body)
    b.branch(warp_head)
    b.position_at_end(warp_head)
    w = b.phi(I32, "w")
    waiting = b.phi(I1, "waiting")
    w.add_incoming(I32(0), round_head)
    waiting.add_incoming(I1(0), round_head)
    b.cbranch(b.icmp_unsigned("<", w, warps), warp_body, round_end)
    b.position_at_end(warp_body)
    frame = b.gep(frames, [b.mul(b.zext(w, I64), I64(warp_frame))], source_etype=I8)
    status_ptr = b.gep(frame, [I64(STATUS)], source_etype=I8)
    runs = b.or_(fresh, b.icmp_signed("==", b.load(status_ptr, typ=I32), I32(BARRIER)))
    skip = b.block
    b.cbranch(runs, warp_run, warp_next)
    b.position_at_end(warp_run)
    result = b.call(gang, [ctx, frame, w, nthreads, fresh])
    b.store(result, status_ptr)
    at_barrier = b.icmp_signed("==", result, I32(BARRIER))
    ok = b.or_(b.icmp_signed("==", result, I32(-1)), at_barrier)
    waiting_after = b.or_(waiting, at_barrier)
    ran = b.block
    b.cbranch(ok, warp_next, failed)
    b.position_at_end(warp_next)
    now_waiting = b.phi(I1)
    now_waiting.add_incoming(waiting, skip)
    now_waiting.add_incoming(waiting_after, ran)
    w.add_incoming(b.add(w, I32(1)), warp_next)
    waiting.add_incoming(now_waiting, warp_next)
    b.branch(warp_head)
    b.position_at_end(round_end)
    fresh.add_incoming(I1(0), round_end)
    b.cbranch(waiting, round_head, block_next)
    b.position_at_end(failed)
    b.store(result, status_out)
    lane = b.load(b.gep(ctx, [I64(SCRATCH_LANE)], source_etype=I8), typ=I32)
    thread = b.add(b.mul(w, I32(W)), lane)
    b.ret(b.or_(b.shl(n, I64(32)), b.zext(thread, I64)))


def build_gang(module: ir.Module, kernel_name: str, block: tuple[int, int, int],
               options: CpuOptions) -> tuple[ll.Module, KernelPlan]:
    """(LLVM module, KernelPlan) of `kernel_name` as warp gangs for blocks of shape `block`
    (thread indices, block size and the lanes alike are then known when compiling), with
    the same `run_blocks` and `run_claimed_blocks` entry points as the scalar path's kernels
    without waits. Raises GangUnsupported (with the reason) for kernels this path does not
    take: refusals.py's checks on the IR, or a lowering that cannot work on lanes."""
    kernel = module.functions[kernel_name]
    reason = refusal(module, kernel)
    if reason is not None:
        raise GangUnsupported(reason)
    llmod = ll.Module(name=f"ptxport.gang.{kernel_name}")
    llmod.triple = llvm.get_process_triple()
    plan = plan_kernel(module, kernel)
    plan.spills.clear()
    # (the module's other variables are in its storage, bound when the code is loaded; the
    # tables of function addresses the kernel does not name are left out of its code)
    globals_ = declare_globals(module, llmod)
    target = gang_target_class()(module, llmod, plan, globals_, {})
    gang = ll.Function(llmod, ll.FunctionType(I32, [PTR, PTR, I32, I32, I1]), name="gang")
    gang.linkage = "internal"
    # inlined into run_blocks, its one caller: a warp leaving at a barrier and resuming is
    # then a jump, not a call with a prologue saving registers and a large frame
    gang.attributes.add("alwaysinline")
    # The warp's frame is reached through this argument alone (the kernel's memory is
    # elsewhere): LLVM may keep registers that live in it in machine registers meanwhile.
    gang.args[1].add_attribute("noalias")
    try:
        fl = lower_gang(module, kernel, gang, target, plan, block, options)
    except UnsupportedFeatureError as e:     # a shared lowering the gang path cannot use
        raise GangUnsupported(str(e)) from e
    per_thread = max(FRAME.size, (fl.frame_bytes + W - 1) // W)
    plan.frame_size = (per_thread + 15) // 16 * 16      # warp frames: multiples of 512
    plan.gang = True
    _build_run_blocks(llmod, gang, W * plan.frame_size, block)
    build_claiming(llmod, llmod.globals["run_blocks"], 4, "run_claimed_blocks")
    add_conversions(llmod)
    return llmod, plan


def check_gang(module: ir.Module, kernel_name: str, options: CpuOptions) -> str | None:
    """Why the gang path does not take the kernel (None: it does), found by lowering it for
    one warp-wide row of threads (what it refuses does not depend on the block shape)."""
    try:
        build_gang(module, kernel_name, (W, 1, 1), options)
    except GangUnsupported as e:
        return str(e)
    return None
