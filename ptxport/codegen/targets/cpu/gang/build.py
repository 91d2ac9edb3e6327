"""A kernel as warp gangs for one block shape: the LLVM module with its gang function and the
run_blocks loop that runs a block's warps in rounds until all have exited.
"""

from __future__ import annotations

import llvmlite.binding as llvm
from llvmlite import ir as ll

from ptxport.codegen.lower import I1, I32, PTR
from ptxport.codegen.targets.cpu.abi import FRAME, KernelPlan
from ptxport.codegen.targets.cpu.entry import build_claiming
from ptxport.codegen.targets.cpu.gang.butterflies import broadcast_butterflies
from ptxport.codegen.targets.cpu.gang.fallthrough import join_fallthrough
from ptxport.codegen.targets.cpu.gang.frame_scopes import scope_frame
from ptxport.codegen.targets.cpu.gang.guarded_runs import guarded_runs
from ptxport.codegen.targets.cpu.gang.lanes import BLOCK_COPY, GangUnsupported, W
from ptxport.codegen.targets.cpu.gang.lowering import lower_gang
from ptxport.codegen.targets.cpu.gang.refusals import refusal
from ptxport.codegen.targets.cpu.gang.rounds import build_run_blocks
from ptxport.codegen.targets.cpu.gang.state import GangLowering, gang_target_class
from ptxport.codegen.targets.cpu.gang.streams import kernel_facts
from ptxport.codegen.targets.cpu.module import declare_globals, plan_kernel
from ptxport.codegen.targets.cpu.options import CpuOptions
from ptxport.codegen.targets.cpu.runtime_functions import add_conversions
from ptxport.errors import UnsupportedFeatureError
from ptxport.ir import nodes as ir
from ptxport.passes.block_checks import block_checks
from ptxport.passes.hoist_checks import hoist_checks
from ptxport.passes.hoist_global_checks import GlobalChecks, hoist_global_checks
from ptxport.passes.if_convert import if_convert
from ptxport.passes.segment import is_barrier

__all__ = ["GangUnsupported", "build_gang", "check_gang"]


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
    # blocks split only by labels nothing branches to (Triton's debug labels) joined
    kernel = join_fallthrough(kernel)
    # whole-warp butterfly reductions end in a broadcast of lane 0 (LLVM then narrows them)
    kernel = broadcast_butterflies(kernel, block)
    # short divergent ifs get guarded copies (a new function; the module's stays)
    linear: dict = {}
    skips: dict = {}
    if options.if_convert:
        kernel, _, linear, skips = if_convert(kernel, block)
    # one-block loops whose shared accesses are checked once before them (a copy each)
    prechecked: frozenset = frozenset()
    if options.hoist_checks:
        kernel, _, prechecked, copies, moved = hoist_checks(kernel, block)
        skips.update((copies[k], v) for k, v in list(skips.items()) if k in copies)
        linear = {id(moved[k]) if k in moved else k: moved.get(id(v), v)
                  for k, v in linear.items()}
    # loops' global accesses' ranges tested once at their entry (the test added there)
    global_checks = GlobalChecks()
    if options.hoist_global_checks:
        kernel, _, global_checks, moved = hoist_global_checks(kernel, block)
        linear = {id(moved[k]) if k in moved else k: moved.get(id(v), v)
                  for k, v in linear.items()}
    # global accesses whose range over the block's threads is tested once a block
    block_found = None
    if options.block_checks:
        kernel, _, block_found, moved = block_checks(kernel, block, global_checks.checked)
        linear = {id(moved[k]) if k in moved else k: moved.get(id(v), v)
                  for k, v in linear.items()}
    # straight-line runs whose effects are all guarded by one predicate, skipped likewise
    skips.update(guarded_runs(kernel, skips))
    llmod = ll.Module(name=f"ptxport.gang.{kernel_name}")
    llmod.triple = llvm.get_process_triple()
    plan = plan_kernel(module, kernel)
    plan.spills.clear()
    # (the module's other variables are in its storage, bound when the code is loaded; the
    # tables of function addresses the kernel does not name are left out of its code)
    globals_ = declare_globals(module, llmod)
    target = gang_target_class()(module, llmod, plan, globals_, {})
    gang = ll.Function(llmod, ll.FunctionType(I32, [PTR, PTR, I32, I32, I1, I32, PTR]),
                       name="gang")
    gang.linkage = "internal"
    # inlined into run_blocks, its one caller: a warp leaving at a barrier and resuming is
    # then a jump, not a call with a prologue saving registers and a large frame
    gang.attributes.add("alwaysinline")
    # The warp's frame is reached through this argument alone (the kernel's memory is
    # elsewhere): LLVM may keep registers that live in it in machine registers meanwhile.
    gang.args[1].add_attribute("noalias")
    gang.args[BLOCK_COPY].add_attribute("noalias")
    try:
        fl = lower_gang(module, kernel, gang, target, plan, block, options, linear,
                        skips, prechecked, global_checks, block_found)
    except UnsupportedFeatureError as e:     # a shared lowering the gang path cannot use
        raise GangUnsupported(str(e)) from e
    scope_frame(gang, 1)
    per_thread = max(FRAME.size, (fl.frame_bytes + W - 1) // W)
    plan.frame_size = (per_thread + 15) // 16 * 16      # warp frames: multiples of 512
    plan.gang = True
    build_run_blocks(llmod, gang, W * plan.frame_size, block, sorted(fl.resumed_at),
                     target.block_fields, fl.yield_points, target.block_params,
                     fl.idle_copies if fl.idle_flag is not None else None,
                     _few_rounds(fl) if options.first_round is None else options.first_round,
                     fl.verdict_reset, fl.call_test)
    build_claiming(llmod, llmod.globals["run_blocks"], 4, "run_claimed_blocks")
    add_conversions(llmod)
    return llmod, plan


def _few_rounds(fl: GangLowering) -> bool:
    """Whether a block runs in few rounds, more than one: the kernel has barriers, none on a
    loop, and no loop yields (interleave.py), so that a warp waits at each barrier once at
    most. Only there has the block's first round a loop of its own by default (rounds.py,
    CpuOptions.first_round): where rounds are many it is one of them, and its copy of the
    gang function costs object code and compile time (gemm 88 -> 115 KB) for no time the
    host measured; with no barrier the first round is the only one, and LLVM's copy of the
    general round there was as short (vector_add 756 -> 755 instructions a block, softmax
    35,560 -> 35,735)."""
    if fl.yield_edges:
        return False
    cycle_of = kernel_facts(fl).cycle_of
    barriers = [inst for inst in fl.function.instructions() if is_barrier(inst)]
    return bool(barriers) and all(cycle_of[id(inst)] is None for inst in barriers)


def check_gang(module: ir.Module, kernel_name: str, options: CpuOptions,
               built: dict | None = None) -> str | None:
    """Why the gang path does not take the kernel (None: it does), found by lowering it for
    one warp-wide row of threads (what it refuses does not depend on the block shape).
    `built`, if given, receives that lowering (build_gang's result, under "built") where it
    succeeds: a caller whose kernel is then launched with that row need not lower it again."""
    try:
        result = build_gang(module, kernel_name, (W, 1, 1), options)
    except GangUnsupported as e:
        return str(e)
    if built is not None:
        built["built"] = result
    return None
