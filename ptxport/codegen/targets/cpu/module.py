"""A kernel's LLVM module for the thread-by-thread path (DESIGN.md, "Executing a thread block
on the CPU").

Each kernel becomes a *thread function* `i32 thread(ctx, frame, point)` that runs one CUDA
thread from a resume point until it must wait for other threads — a barrier or a warp-level
operation — or until it exits. At such a point it spills its registers into its frame
(per-thread memory that also holds its .local memory; layouts in abi.py), leaves the
operation's inputs in the frame's exchange slots, and returns the point's number.
`run_threads`, also generated (entry.py), calls the thread function for every runnable thread
of a block; the block executor (runtime/backends/cpu/executor.py) then completes the
operations the threads wait at, with PTX's exact semantics, and runs them on. Kernels with no
such operations run each thread start to finish in one call. Also here: the module's
variables, the device functions a kernel may reach, and `unsupported_instructions` for
`ptxport inspect`.
"""

from __future__ import annotations

import struct

import llvmlite.binding as llvm
from llvmlite import ir as ll

from ptxport.codegen import ops  # noqa: F401  (registers the lowerings)
from ptxport.codegen.lower import (
    I32,
    I64,
    PTR,
    FunctionLowering,
    const_int,
    value_type,
)
from ptxport.codegen.targets.cpu import runtime_functions as cpu_runtime
from ptxport.codegen.targets.cpu.abi import FRAME, KernelPlan, align
from ptxport.codegen.targets.cpu.entry import build_claiming, build_run_blocks, build_run_threads
from ptxport.codegen.targets.cpu.gang.refusals import refusal as gang_refusal
from ptxport.codegen.targets.cpu.local_stack import plan_local_stack
from ptxport.codegen.targets.cpu.native import build_run_block, build_run_waiting_blocks
from ptxport.codegen.targets.cpu.target import CpuTarget
from ptxport.errors import UnsupportedFeatureError
from ptxport.ir import nodes as ir
from ptxport.ir.abi import param_layout
from ptxport.passes.inline import inline_waiting_calls, is_wait
from ptxport.passes.plan_waits import spills
from ptxport.ptx.ast import FloatImm, IntImm

__all__ = ["build_llvm", "plan_kernel", "declare_globals", "holds_function_addresses",
           "unsupported_instructions"]


# --- module-level lowering --------------------------------------------------------------------

def plan_kernel(module: ir.Module, kernel: ir.Function) -> KernelPlan:
    shared_offsets, offset = {}, 0
    shared = [v for v in module.globals.values() if v.space == "shared"]
    shared += [v for v in kernel.variables.values() if v.space == "shared"]
    for var in sorted(shared, key=lambda v: v.unsized):   # extern (dynamic) arrays last
        offset = align(offset, max(var.alignment, 16 if var.unsized else 1))
        shared_offsets[var.name] = offset
        offset += var.size
    _, param_size = param_layout(kernel)
    # The frame: header, the thread's .local memory, then a slot for each register some
    # wait must save (a register never live across a wait stays in machine registers).
    register_offsets = {}
    local_offset = align(FRAME.size, 16)
    local = 0
    waits = {id(i) for i in kernel.instructions() if is_wait(i)}
    for var in kernel.variables.values():
        # .local memory, and with waits also the .param variables of call sequences (an
        # inlined function reads its parameters after waiting): memory that outlives a
        # thread function's return
        if var.space == "local" or (waits and var.space == "param"
                                    and not any(var is p for p in kernel.params)):
            local = align(local, max(var.alignment, 1))
            register_offsets[f"local:{var.name}"] = local
            local += var.size
    plan = KernelPlan(kernel.name, param_size, offset, shared_offsets,
                      align(local_offset + local, 16), local_offset,
                      register_offsets=register_offsets, source_lines=module.lines)
    # the registers each wait saves and restores (passes/plan_waits.py)
    plan.spills.update(spills(kernel))
    for _, restore in plan.spills.values():
        for reg in restore:                 # in name order: the IR is stable
            plan.frame_slot(reg)
    return plan


def _initializer(var: ir.Variable, element: ll.Type, globals_: dict,
                 functions: dict) -> ll.Constant:
    count = var.elements * (var.vector or 1)
    values = []
    for item in var.init or []:
        if isinstance(item, IntImm):
            values.append(const_int(element, item.value) if isinstance(element, ll.IntType)
                          else ll.Constant(element, float(item.value)))
        elif isinstance(item, FloatImm):
            if isinstance(element, ll.IntType):
                values.append(const_int(element, item.bits))
            else:
                fmt = ("<f", "<I") if item.width == 32 else ("<d", "<Q")
                number = struct.unpack(fmt[0], struct.pack(fmt[1], item.bits))[0]
                values.append(ll.Constant(element, number))
        elif isinstance(item, ir.SymbolAddress) and isinstance(item.target, ir.Variable) \
                and item.target.name in globals_ and isinstance(element, ll.IntType):
            address = globals_[item.target.name].ptrtoint(element)
            if item.offset:
                address = address.add(const_int(element, item.offset))
            values.append(address)
        elif isinstance(item, ir.SymbolAddress) and isinstance(item.target, ir.Function) \
                and item.target.name in functions and isinstance(element, ll.IntType) \
                and not item.offset:
            # a function's address (a vtable's entry, a table of function pointers): what
            # an indirect call compares with the functions it may call
            values.append(functions[item.target.name].ptrtoint(element))
        else:
            raise UnsupportedFeatureError("initializer", "cpu", None,
                                          f"cannot initialize '{var.name}' with {item!r}")
    values += [ll.Constant(element, 0 if isinstance(element, ll.IntType) else 0.0)] * (
        count - len(values))
    if var.dims or var.vector or count > 1:
        return ll.Constant(ll.ArrayType(element, count), values)
    return values[0]


def declare_globals(module: ir.Module, llmod: ll.Module) -> dict[str, ll.GlobalVariable]:
    """The module's .global and .const variables (without their initial values)."""
    out = {}
    for var in module.globals.values():
        if var.space not in ("global", "const"):
            continue
        element = value_type(var.type)
        if var.type.kind == "opaque":
            element = I64
        count = var.elements * (var.vector or 1)
        typ = ll.ArrayType(element, count) if (var.dims or var.vector or count > 1) else element
        g = ll.GlobalVariable(llmod, typ, name=f"ptx.{var.name}")
        g.align = max(var.alignment, 1)
        out[var.name] = g
    return out


def holds_function_addresses(var: ir.Variable) -> bool:
    return any(isinstance(item, ir.SymbolAddress) and isinstance(item.target, ir.Function)
               for item in var.init or [])


def initialize_globals(module: ir.Module, globals_: dict, functions: dict) -> None:
    """The initial values of the module's variables (once the functions whose addresses
    they may hold are declared). A variable is one for all kernels of a module, as in CUDA:
    each kernel's code names it as an external symbol bound at load time to the module's
    storage (module_storage), except tables of function addresses (vtables), which hold
    this kernel's own functions and stay in its code."""
    for var in module.globals.values():
        g = globals_.get(var.name)
        if g is None or not holds_function_addresses(var):
            continue
        element = I64 if var.type.kind == "opaque" else value_type(var.type)
        g.initializer = (_initializer(var, element, globals_, functions)
                         if var.init is not None else ll.Constant(g.value_type, None))


def function_type(function: ir.Function) -> ll.FunctionType:
    count = len(function.returns) + len(function.params)
    return ll.FunctionType(ll.VoidType(), [PTR, PTR] + [PTR] * count)


def build_llvm(module: ir.Module, kernel_name: str,
               problems: list | None = None) -> tuple[ll.Module, KernelPlan]:
    """The LLVM module for one kernel: its thread function, the device functions it may
    call, the module's variables, and `run_threads`. With `problems` (a list), instructions
    the target cannot compile are collected there instead of raising."""
    kernel = module.functions[kernel_name]
    # device functions that wait run inlined (a thread returns to the executor to wait)
    try:
        inlined = inline_waiting_calls(module, kernel)
    except UnsupportedFeatureError:
        if problems is None:
            raise
        inlined = None      # the waits inside the called functions are reported instead
    if inlined is not None:
        kernel = inlined.function
    reported = len(problems) if problems is not None else 0
    llmod = ll.Module(name=f"ptxport.{kernel_name}")
    llmod.triple = llvm.get_process_triple()
    plan = plan_kernel(module, kernel)
    globals_ = declare_globals(module, llmod)
    functions: dict[str, ll.Function] = {}
    reachable = reachable_functions(kernel, module)
    for f in reachable:
        if not f.is_declaration:
            fn = ll.Function(llmod, function_type(f), name=f"ptx.func.{f.name}")
            fn.linkage = "internal"
            functions[f.name] = fn
    initialize_globals(module, globals_, functions)
    stack = plan_local_stack(module, kernel, reachable)
    plan.local_stack, plan.stack_from_limit = stack.size, stack.from_limit
    target = CpuTarget(module, llmod, plan, globals_, functions, stack)
    for f in module.functions.values():
        if f.name in functions:
            _lower_device_function(module, f, functions[f.name], target, problems)
    thread = ll.Function(llmod, ll.FunctionType(I32, [PTR, PTR, I32]), name="thread")
    thread.linkage = "internal"
    thread.attributes.add("alwaysinline")
    _lower_kernel(module, kernel, thread, target, problems)
    if problems is not None:
        if inlined is not None:     # report problems where the user wrote them
            problems[reported:] = [(inlined.origin.get(id(inst), inst), reason)
                                   for inst, reason in problems[reported:]]
        return llmod, plan
    plan.frame_size = align(plan.frame_size, 16)
    build_run_threads(llmod, thread)
    build_run_blocks(llmod, thread)
    build_claiming(llmod, llmod.globals["run_blocks"], 4, "run_claimed_blocks")
    cpu_runtime.add_conversions(llmod)
    if plan.sync_points:
        build_run_block(llmod, llmod.globals["run_threads"], plan)
        build_run_waiting_blocks(llmod, llmod.globals["run_block_from"])
        build_claiming(llmod, llmod.globals["run_waiting_blocks"], 6,
                       "run_claimed_waiting_blocks", finish=True)
    return llmod, plan


def reachable_functions(kernel: ir.Function,
                         module: ir.Module | None = None) -> list[ir.Function]:
    """The device functions `kernel` may call, directly or through an address (a function
    whose address is taken in a reachable function or in a module variable's initializer,
    such as a C++ vtable): only these are compiled with it."""
    seen: dict[str, ir.Function] = {}
    pending = [kernel]

    def reach(value) -> None:
        if isinstance(value, ir.SymbolAddress):
            value = value.target
        if isinstance(value, ir.Function) and value.name not in seen:
            seen[value.name] = value
            pending.append(value)

    for var in (module.globals.values() if module is not None else ()):
        for item in var.init or []:
            reach(item)
    while pending:
        f = pending.pop()
        for inst in f.instructions():
            for value in inst.operands:
                reach(value)
    return [f for f in seen.values() if not f.is_kernel]


def _lower_device_function(module, f: ir.Function, llfn: ll.Function, target: CpuTarget,
                           problems: list | None):
    pointers = {p.name: llfn.args[2 + i] for i, p in enumerate(f.returns + f.params)}
    FunctionLowering(module, f, llfn, target, pointers).lower_function(problems)


def _lower_kernel(module, kernel: ir.Function, thread: ll.Function, target: CpuTarget,
                  problems: list | None):
    fl = FunctionLowering(module, kernel, thread, target)
    fl.problems = problems
    fl.declare_registers()
    first = fl.create_blocks()
    dispatch_block = thread.append_basic_block("dispatch")
    fl.b.position_at_end(fl.entry)
    target.stack.enter_kernel(target, fl)
    fl.b.branch(dispatch_block)
    fl.b.position_at_end(dispatch_block)
    target.dispatch = fl.b.switch(thread.args[2], first)
    fl.lower_body()


def unsupported_instructions(module: ir.Module) -> dict[int, str]:
    """id(instruction) -> why the CPU target cannot compile it, for every instruction of
    every kernel and device function of `module` that it cannot (found by the lowering
    itself, so this agrees with what compiling would say)."""
    problems: list = []
    reached: set[str] = set()
    for kernel in module.kernels:
        start = len(problems)
        build_llvm(module, kernel.name, problems)
        if gang_refusal(module, kernel) is None:    # warp gangs lower wgmma (gang/wgmma.py)
            problems[start:] = [(i, r) for i, r in problems[start:] if i.opcode != "wgmma"]
        reached.update(f.name for f in reachable_functions(kernel, module))
    # device functions no kernel calls: lowered together, without a kernel
    alone = [f for f in module.functions.values()
             if not f.is_kernel and not f.is_declaration and f.name not in reached]
    if alone:
        llmod = ll.Module()
        functions = {f.name: ll.Function(llmod, function_type(f), name=f"ptx.func.{f.name}")
                     for f in module.functions.values()
                     if not f.is_kernel and not f.is_declaration}
        plan = KernelPlan("", 0, 0, {}, FRAME.size, FRAME.size)
        globals_ = declare_globals(module, llmod)
        initialize_globals(module, globals_, functions)
        target = CpuTarget(module, llmod, plan, globals_, functions)
        start = len(problems)
        for f in alone:
            _lower_device_function(module, f, functions[f.name], target, problems)
        # a wait inside a device function is fine once a kernel calls it: it runs inlined
        problems[start:] = [(inst, reason) for inst, reason in problems[start:]
                            if not is_wait(inst)]
    return {id(inst): reason for inst, reason in problems}
