"""The CPU target: PTX kernels as native host code, through LLVM's JIT (llvmlite).

How a thread block runs (DESIGN.md, "Executing a thread block on the CPU"). Each kernel
becomes a *thread function* `i32 thread(ctx, frame, point)` that runs one CUDA thread from a
resume point until it must wait for other threads — a barrier or a warp-level operation — or
until it exits. At such a point it spills its registers into its frame (per-thread memory
that also holds its .local memory), leaves the operation's inputs in the frame's exchange
slots, and returns the point's number. `run_threads`, also generated, calls the thread
function for every runnable thread of a block; the block executor (cpu_executor.py) then
completes the operations the threads wait at, with PTX's exact semantics, and runs them on.
Kernels with no such operations run each thread start to finish in one call.

Memory: global and const addresses are host addresses. Shared memory is a per-block window;
a shared address is an offset into it (as PTX's 32-bit shared addresses are), and cvta adds
the window's base. Local memory likewise is an offset into the thread's local area, which is
the tail of its frame (so it survives barriers).
"""

from __future__ import annotations

import ctypes
import hashlib
import struct
import threading
import weakref
from dataclasses import dataclass, field
from functools import cache

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir as ll

from ptxport.cache import cache_path, read_entry, write_entry
from ptxport.codegen import ops  # noqa: F401  (registers the lowerings)
from ptxport.codegen.lower import (
    I8,
    I32,
    I64,
    PTR,
    FunctionLowering,
    Target,
    const_int,
    value_type,
)
from ptxport.codegen.targets.cpu import image as cpu_image
from ptxport.codegen.targets.cpu import runtime_functions as cpu_runtime
from ptxport.codegen.targets.cpu.gang import lowering as cpu_gang
from ptxport.codegen.targets.cpu.stop import STOPPED, branch_on_stop, poll_stop
from ptxport.errors import CompileError, UnsupportedFeatureError
from ptxport.ir import nodes as ir
from ptxport.ir.abi import param_layout
from ptxport.ir.analysis import address_taken, live_after, modified_before, uses_and_defs
from ptxport.ir.lines import LineTable
from ptxport.ir.special_registers import ZERO_WITHOUT_DRIVER
from ptxport.passes.inline import inline_waiting_calls, is_wait
from ptxport.ptx.ast import FloatImm, IntImm
from ptxport.runtime.backends.cpu import heap as cpu_heap

__all__ = ["compile_kernel", "emit_object", "CpuKernelBinary", "SyncPoint", "CTX", "FRAME",
           "CROSS_TRIPLES"]


@dataclass(frozen=True)
class _Layout:
    """Byte offsets of a struct's fields."""

    fields: dict[str, int]
    size: int


# The block context every thread of a block shares.
CTX = _Layout({"params": 0, "shared": 8, "ntid": 16, "ctaid": 28, "nctaid": 40,
               "nwarpid": 52, "dynamic_smem": 56, "smid": 60, "nsmid": 64,
               "total_smem": 68, "alloc_table": 72, "alloc_count": 80, "checks": 84,
               "site_cache": 104, "stop": 112,
               "fault_address": 88, "fault_info": 96, "scratch": 128}, 384)
# The start of each thread's frame; registers and local memory follow.
FRAME = _Layout({"tid": 0, "laneid": 12, "warpid": 16,
                 "in0": 24, "in1": 32, "in2": 40, "in3": 48, "out0": 56, "out1": 64,
                 "in4": 72, "in5": 80}, 96)

# Statuses run_threads leaves for each thread.
RUNNABLE, BLOCKED, EXITED, TRAPPED = 0, 1, 2, 3
# A plan's line table (ir/lines.py, plain data) is stored in kernel images with the plan.
cpu_image.stored(LineTable)

# What the thread function returns when it stopped at an access outside every allocation.
FAULTED = -(1 << 24)
# The access size a fault records for a call through an address that is no function.
CALL_FAULT = 0x7FFF
# ... and for a device free of an address that is no live allocation of the heap.
FREE_FAULT = 0x7FFE


@cpu_image.stored
@dataclass
class SyncPoint:
    """Where a thread waits: the instruction, and what the executor needs to complete it."""

    number: int
    inst: ir.Instruction
    line: int


@cpu_image.stored
@dataclass
class KernelPlan:
    """Everything about a kernel's compiled form that the executor needs. It is stored with
    the kernel's object code (cpu_image.py): a field added here is stored too, unless its
    metadata says `build_only` (needed only while lowering)."""

    name: str
    param_size: int
    static_shared: int
    shared_offsets: dict[str, int]
    frame_size: int
    local_offset: int
    sync_points: dict[int, SyncPoint] = field(default_factory=dict)
    check_sites: int = 0     # site-cache slots: checked accesses (and gang prefetch sites)
    trap_lines: dict[int, int] = field(default_factory=dict)
    # the user's source line of each PTX line, from .loc (for error messages)
    source_lines: LineTable = field(default_factory=LineTable)
    register_offsets: dict[str, int] = field(default_factory=dict)
    # id(waiting instruction) -> (registers it saves, registers it restores when resumed)
    spills: dict[int, tuple[list, list]] = field(default_factory=dict,
                                                 metadata={"build_only": True})
    # warp gangs (cpu_gang.py): frames are per warp, 32 * frame_size bytes each
    gang: bool = False
    # calls device malloc or free: the device heap is reserved before its launches
    uses_heap: bool = False

    def frame_slot(self, reg: ir.Register) -> int:
        """The frame offset where `reg` is saved across waits (allocated on first use; the
        frame grows)."""
        offset = self.register_offsets.get(reg.name)
        if offset is None:
            typ = value_type(reg.type)
            size = typ.width // 8 if isinstance(typ, ll.IntType) else max(reg.type.size, 1)
            size = max(size, 1) * (reg.vector or 1)
            offset = _align(self.frame_size, min(size, 8))
            self.register_offsets[reg.name] = offset
            self.frame_size = offset + size
        return offset


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


class CpuTarget(Target):
    name = "cpu"

    def __init__(self, module: ir.Module, llmod: ll.Module, plan: KernelPlan,
                 globals_: dict[str, ll.GlobalVariable], functions: dict[str, ll.Function]):
        self.module, self.llmod, self.plan = module, llmod, plan
        self.globals, self.functions = globals_, functions
        self._entry_loads: dict = {}   # LLVM function -> the ctx fields loaded at its entry
        self._address_taken: list | None = None   # functions an indirect call may reach

    # --- per-function values ---------------------------------------------------------------

    def _ctx_field(self, fl: FunctionLowering, name: str, index: int = 0, typ=I32):
        """A field of the block context, loaded once at the function's entry: none changes
        while a thread runs, but LLVM cannot know that the kernel's stores leave them be,
        and would load them again after every store."""
        cache = self._entry_loads.setdefault(fl.llfn, {})
        key = (name, index, str(typ))
        value = cache.get(key)
        if value is None:
            with fl.b.goto_entry_block():
                fl.b.position_at_start(fl.entry)
                ctx = fl.llfn.args[0]
                p = fl.b.gep(ctx, [const_int(I64, CTX.fields[name] + 4 * index)],
                             source_etype=I8)
                value = cache[key] = fl.b.load(p, typ=typ)
        return value

    def _frame_field(self, fl: FunctionLowering, name: str, typ=I32, index: int = 0):
        frame = fl.llfn.args[1]
        p = fl.b.gep(frame, [const_int(I64, FRAME.fields[name] + 4 * index)], source_etype=I8)
        return fl.b.load(p, typ=typ)

    def special_register(self, fl: FunctionLowering, reg: ir.SpecialRegister) -> ll.Value:
        axis = "xyzw".find(reg.component) if reg.component else 0
        name = reg.name
        if name == "%tid":
            return self._frame_field(fl, "tid", index=axis) if axis < 3 else I32(0)
        if name in ("%ntid", "%ctaid", "%nctaid"):
            return self._ctx_field(fl, name[1:], axis) if axis < 3 else I32(0)
        if name == "%laneid":
            return self._frame_field(fl, "laneid")
        if name == "%warpid":
            return self._frame_field(fl, "warpid")
        if name == "%nwarpid":
            return self._ctx_field(fl, "nwarpid")
        if name.startswith("%lanemask_"):
            lane = self._frame_field(fl, "laneid")
            one = fl.b.shl(I32(1), lane)
            kind = name[len("%lanemask_"):]
            below = fl.b.sub(one, I32(1))
            return {"eq": lambda: one, "lt": lambda: below,
                    "le": lambda: fl.b.or_(below, one), "gt": lambda: fl.b.not_(
                        fl.b.or_(below, one)), "ge": lambda: fl.b.not_(below)}[kind]()
        if name in ("%smid",):
            return self._ctx_field(fl, "smid")
        if name in ("%nsmid",):
            return self._ctx_field(fl, "nsmid")
        if name in ("%dynamic_smem_size",):
            return self._ctx_field(fl, "dynamic_smem")
        if name in ("%total_smem_size", "%aggr_smem_size"):
            return self._ctx_field(fl, "total_smem")
        if name in ("%clock", "%clock_hi", "%clock64"):
            counter = fl.b.call(_intrinsic(self.llmod, "llvm.readcyclecounter", I64, []), [])
            if name == "%clock64":
                return counter
            if name == "%clock_hi":
                counter = fl.b.lshr(counter, I64(32))
            return fl.b.trunc(counter, I32)
        if name in ("%globaltimer", "%globaltimer_lo", "%globaltimer_hi"):
            nanoseconds = _global_timer(fl, self.llmod)
            if name == "%globaltimer":
                return nanoseconds
            if name == "%globaltimer_hi":
                nanoseconds = fl.b.lshr(nanoseconds, I64(32))
            return fl.b.trunc(nanoseconds, I32)
        if name in ("%gridid", "%current_graph_exec"):
            return I64(0)
        if name in ZERO_WITHOUT_DRIVER:
            return I32(0)
        if name == "%is_explicit_cluster":
            return ll.Constant(ll.IntType(1), 0)
        if name in ("%clusterid", "%cluster_ctaid"):
            return self._ctx_field(fl, "ctaid", axis) if name == "%clusterid" and axis < 3 \
                else I32(0)
        if name in ("%nclusterid",):
            return self._ctx_field(fl, "nctaid", axis) if axis < 3 else I32(1)
        if name in ("%cluster_nctaid",):
            return I32(1 if axis < 3 else 0)
        if name == "%cluster_ctarank":
            return I32(0)
        if name == "%cluster_nctarank":
            return I32(1)
        raise fl.unsupported(fl.inst, f"special register {reg.text} on the CPU")

    def space_base(self, fl: FunctionLowering, space: str | None):
        if space == "shared":
            return self._ctx_field(fl, "shared", typ=PTR)
        if space == "local":
            return self._local_base(fl)
        if space == "param" and fl.function.is_kernel:
            return self._ctx_field(fl, "params", typ=PTR)
        return None

    def _local_base(self, fl: FunctionLowering):
        frame = fl.llfn.args[1]
        return fl.b.gep(frame, [const_int(I64, self.plan.local_offset)], source_etype=I8)

    def variable_pointer(self, fl: FunctionLowering, var: ir.Variable):
        if var.space in ("global", "const"):
            return self.globals[var.name]
        if var.space == "shared":
            offset = self.plan.shared_offsets[var.name]
            base = self._ctx_field(fl, "shared", typ=PTR)
            return fl.b.gep(base, [const_int(I64, offset)], source_etype=I8)
        if var.name in fl.param_pointers:
            return fl.param_pointers[var.name]
        if var.space == "param" and fl.function.is_kernel and var in fl.function.params:
            slots, _ = param_layout(fl.function)
            offset = next(s.offset for s in slots if s.variable is var)
            base = self._ctx_field(fl, "params", typ=PTR)
            return fl.b.gep(base, [const_int(I64, offset)], source_etype=I8)
        offset = self.plan.register_offsets.get(f"local:{var.name}")
        if offset is not None and fl.function.is_kernel:
            return fl.b.gep(self._local_base(fl), [const_int(I64, offset)], source_etype=I8)
        if var.space in ("local", "param"):
            return fl.stack_variable(var, 8)
        raise fl.unsupported(fl.inst, f"a variable in .{var.space} space on the CPU")

    # --- control ----------------------------------------------------------------------------

    def checked_pointer(self, fl: FunctionLowering, pointer, space, size: int, write: bool):
        """Every access must fall inside one allocation: for global and generic addresses
        the launch's table of allocations (device buffers, module variables, the block's
        shared window, the threads' frames), for shared addresses the block's shared window.
        A kernel stops at a bad access (the executor raises IllegalAddressError); a device
        function records it and goes on harmlessly with a scratch pointer."""
        if space == "param" or space == "local":
            return pointer
        ctx = fl.llfn.args[0]
        if space == "shared":
            base = self._ctx_field(fl, "shared", typ=PTR)
            offset = fl.b.sub(fl.b.ptrtoint(pointer, I64), fl.b.ptrtoint(base, I64))
            limit = fl.b.zext(self._ctx_field(fl, "total_smem"), I64)
            ok = fl.b.icmp_unsigned("<=", fl.b.add(offset, I64(size)), limit)
        else:
            # Each access site remembers the allocation it last hit (per worker, in the
            # launch's site cache): usually the same one, so the search is rarely needed.
            site = self.plan.check_sites
            self.plan.check_sites += 1
            cache = self._ctx_field(fl, "site_cache", typ=PTR)
            slot = fl.b.gep(cache, [I64(16 * site)], source_etype=I8)
            lo = fl.b.load(slot, typ=I64)
            hi = fl.b.load(fl.b.gep(slot, [I64(8)], source_etype=I8), typ=I64)
            address = fl.b.ptrtoint(pointer, I64)
            end = fl.b.add(address, I64(size))
            hit = fl.b.and_(fl.b.icmp_unsigned(">=", address, lo),
                            fl.b.and_(fl.b.icmp_unsigned("<=", end, hi),
                                      fl.b.icmp_unsigned(">=", end, address)))
            search = fl.llfn.append_basic_block("access_search")
            searched = fl.llfn.append_basic_block("access_searched")
            before = fl.b.block
            fl.b.cbranch(hit, searched, search)
            fl.b.position_at_end(search)
            found = fl.b.call(_check_function(self.llmod), [ctx, address, I64(size), slot])
            fl.b.branch(searched)
            fl.b.position_at_end(searched)
            ok = fl.b.phi(ll.IntType(1))
            ok.add_incoming(ll.Constant(ll.IntType(1), 1), before)
            ok.add_incoming(found, search)
        good = fl.llfn.append_basic_block("access_ok")
        bad = fl.llfn.append_basic_block("access_fault")
        checked_in = fl.b.block
        fl.b.cbranch(ok, good, bad)
        fl.b.position_at_end(bad)
        self._fault(fl, pointer, size, write)
        if fl.function.is_kernel:
            fl.b.position_at_end(good)
            return pointer
        scratch = fl.b.gep(ctx, [I64(CTX.fields["scratch"])], source_etype=I8)
        fl.b.branch(good)
        fl.b.position_at_end(good)
        phi = fl.b.phi(PTR)
        phi.add_incoming(pointer, checked_in)
        phi.add_incoming(scratch, bad)
        return phi

    def _fault(self, fl: FunctionLowering, pointer, size: int, write: bool) -> None:
        """Record a bad access (or, with size CALL_FAULT, a call of an address that is no
        function) in the block context; a kernel stops there (returns FAULTED), a device
        function goes on and the executor reports it after the block."""
        ctx = fl.llfn.args[0]
        line = _line(self.module, fl.inst.pos) if fl.inst is not None else 0
        info = (line << 16) | (size << 1) | int(write)
        fault_address = fl.b.gep(ctx, [I64(CTX.fields["fault_address"])], source_etype=I8)
        fl.b.store(fl.b.ptrtoint(pointer, I64), fault_address)
        fault_info = fl.b.gep(ctx, [I64(CTX.fields["fault_info"])], source_etype=I8)
        fl.b.store(I64(info), fault_info)
        if fl.function.is_kernel:
            fl.b.ret(I32(FAULTED))

    def loop_header(self, fl: FunctionLowering) -> None:
        """Every loop looks at the launch's stop word, so that a launch spinning forever
        (on a flag no one sets) can be stopped: a kernel returns STOPPED, a device function
        returns to the kernel, which stops at its next loop or ends."""
        stopping = fl.llfn.append_basic_block("stopping")
        going_on = fl.llfn.append_basic_block("going_on")
        poll_stop(fl, self._ctx_field(fl, "stop", typ=PTR), stopping, going_on)
        fl.b.position_at_end(stopping)
        if fl.function.is_kernel:
            fl.b.ret(I32(STOPPED))
        else:
            fl.b.ret_void()
        fl.b.position_at_end(going_on)

    def exit(self, fl: FunctionLowering) -> None:
        if fl.function.is_kernel:
            fl.b.ret(I32(-1))
        else:
            raise fl.unsupported(fl.inst, "exit inside a device function")

    def trap(self, fl: FunctionLowering, inst: ir.Instruction) -> None:
        number = len(self.plan.trap_lines) + 1
        self.plan.trap_lines[number] = _line(self.module, inst.pos)
        if fl.function.is_kernel:
            fl.b.ret(I32(-1 - number))
        else:
            raise fl.unsupported(inst, "trap inside a device function")

    def call(self, fl, inst, callee, returns, args) -> None:
        if len(args) != len(callee.params) or len(returns) != len(callee.returns):
            raise fl.unsupported(inst, "a call whose arguments do not match the callee")
        pointers = []
        for value in list(returns) + list(args):
            if not isinstance(value, ir.Variable):
                raise fl.unsupported(inst, "call arguments must be .param variables")
            pointers.append(self.variable_pointer(fl, value))
        if callee.is_declaration:
            # .extern functions the CUDA driver provides: printf's vprintf, assert's
            # __assertfail (which ends the kernel: a trap after it), the heap's malloc, free
            if callee.name in ("malloc", "free"):
                self._heap_call(fl, inst, callee.name, pointers)
                return
            if callee.name not in ("vprintf", "__assertfail"):
                raise fl.unsupported(inst, f"a call of '{callee.name}', which the module "
                                           "declares but does not define")
            from ptxport.runtime.backends.cpu import printf as cpu_printf

            if callee.name == "vprintf":
                cpu_printf.lower_vprintf(fl, inst, list(returns), pointers)
                return
            cpu_printf.lower_assertfail(fl, inst, pointers)
            self.trap(fl, inst)
            fl.b.position_at_end(fl.llfn.append_basic_block("after_assert"))
            return
        llcallee = self.functions[callee.name]
        fl.b.call(llcallee, [fl.llfn.args[0], fl.llfn.args[1], *pointers])

    def _heap_call(self, fl: FunctionLowering, inst: ir.Instruction, name: str,
                   pointers: list) -> None:
        """Device malloc and free (cpu_heap.py); a free of no live allocation faults."""
        from ptxport.runtime.backends.cpu import heap as cpu_heap

        self.plan.uses_heap = True
        if name == "malloc":
            cpu_heap.lower_malloc(fl, inst, pointers)
            return
        address, bad = cpu_heap.lower_free(fl, inst, pointers)
        faulted = fl.llfn.append_basic_block("free_fault")
        freed = fl.llfn.append_basic_block("freed")
        fl.b.cbranch(bad, faulted, freed)
        fl.b.position_at_end(faulted)
        self._fault(fl, fl.b.inttoptr(address, PTR), FREE_FAULT, True)
        if fl.b.block.terminator is None:
            fl.b.branch(freed)
        fl.b.position_at_end(freed)

    def function_address(self, fl: FunctionLowering, function: ir.Function) -> ll.Value:
        llfn = self.functions.get(function.name)
        if llfn is None:
            raise fl.unsupported(fl.inst, f"the address of '{function.name}', which the "
                                          "module declares but does not define")
        return fl.b.ptrtoint(llfn, I64)

    def indirect_call(self, fl: FunctionLowering, inst: ir.Instruction, address: ll.Value,
                      returns: list, args: list) -> None:
        """A call through an address: compared with the address of every function of the
        module whose address is taken and which takes as many parameters, and that one
        called directly; an address that is none of them is reported as a bad access
        (never jumped to)."""
        pointers = []
        for value in list(returns) + list(args):
            if not isinstance(value, ir.Variable):
                raise fl.unsupported(inst, "call arguments must be .param variables")
            pointers.append(self.variable_pointer(fl, value))
        if self._address_taken is None:
            self._address_taken = address_taken(
                self.module, [self.module.functions[name] for name in self.functions])
        candidates = [f for f in self._address_taken
                      if len(f.returns) == len(returns) and len(f.params) == len(args)]
        done = fl.llfn.append_basic_block("indirect_done")
        for f in candidates:
            hit = fl.llfn.append_basic_block("indirect_call")
            miss = fl.llfn.append_basic_block("indirect_next")
            fl.b.cbranch(fl.b.icmp_unsigned("==", address,
                                            fl.b.ptrtoint(self.functions[f.name], I64)),
                         hit, miss)
            fl.b.position_at_end(hit)
            fl.b.call(self.functions[f.name], [fl.llfn.args[0], fl.llfn.args[1], *pointers])
            fl.b.branch(done)
            fl.b.position_at_end(miss)
        self._fault(fl, fl.b.inttoptr(address, PTR), CALL_FAULT, False)
        if fl.b.block.terminator is None:
            fl.b.branch(done)
        fl.b.position_at_end(done)

    def synchronize(self, fl: FunctionLowering, inst: ir.Instruction) -> None:
        if not fl.function.is_kernel:
            raise fl.unsupported(inst, "barriers and warp operations inside a device function "
                                       "that was not inlined")
        number = len(self.plan.sync_points) + 1
        self.plan.sync_points[number] = SyncPoint(number, inst, _line(self.module, inst.pos))
        from ptxport.codegen.targets.cpu import waits as cpu_sync

        cpu_sync.lower_wait(self, fl, inst, number)

    def lane_id(self, fl: FunctionLowering) -> ll.Value:
        return self._frame_field(fl, "laneid")

    def warp_matrix(self, fl: FunctionLowering, inst: ir.Instruction) -> None:
        """A warp operation like the others: the lanes leave their fragments (or row
        addresses) in their frames and the executor computes (cpu_sync.py)."""
        self.synchronize(fl, inst)

    def poll(self, fl: FunctionLowering, inst: ir.Instruction, test) -> ll.Value:
        """The threads of a block run one at a time: a test that fails lets the others run
        (the thread yields) before it tests again and gives that result."""
        first = test()
        before = fl.b.block
        yielding = fl.llfn.append_basic_block("poll_yield")
        done = fl.llfn.append_basic_block("polled")
        fl.b.cbranch(first, done, yielding)
        fl.b.position_at_end(yielding)
        self._yield(fl, inst)
        again = test()
        after = fl.b.block
        fl.b.branch(done)
        fl.b.position_at_end(done)
        result = fl.b.phi(ll.IntType(1))
        result.add_incoming(first, before)
        result.add_incoming(again, after)
        return result

    def wait_until(self, fl: FunctionLowering, inst: ir.Instruction, test) -> None:
        """Test; while the test fails, let the other threads run (yield) and test again."""
        loop = fl.llfn.append_basic_block("wait_until")
        yielding = fl.llfn.append_basic_block("wait_yield")
        done = fl.llfn.append_basic_block("waited")
        fl.b.branch(loop)
        fl.b.position_at_end(loop)
        fl.b.cbranch(test(), done, yielding)
        fl.b.position_at_end(yielding)
        self._yield(fl, inst)
        fl.b.branch(loop)
        fl.b.position_at_end(done)

    def _yield(self, fl: FunctionLowering, inst: ir.Instruction) -> None:
        if not fl.function.is_kernel:
            raise fl.unsupported(inst, "waiting on an mbarrier inside a device function that "
                                       "was not inlined")
        number = len(self.plan.sync_points) + 1
        self.plan.sync_points[number] = SyncPoint(number, inst, _line(self.module, inst.pos))
        self.spill_and_return(fl, number)

    # --- helpers for cpu_sync ---------------------------------------------------------------

    def frame_slot(self, fl: FunctionLowering, name: str):
        frame = fl.llfn.args[1]
        return fl.b.gep(frame, [const_int(I64, FRAME.fields[name])], source_etype=I8)

    def spill_and_return(self, fl: FunctionLowering, number: int) -> ll.Block:
        """Save the registers live across the waiting instruction in the frame and return
        `number`; the continuation block it returns is where execution resumes, with those
        registers reloaded."""
        spills = self.plan.spills.get(id(fl.inst))
        if spills is None:      # not analysed (an instruction made up by a lowering): all
            everything = sorted(fl.function.registers.values(), key=lambda r: r.name)
            spills = (everything, everything)
        save, restore = spills
        self._move(fl, save, to_frame=True)
        fl.b.ret(I32(number))
        resume = fl.llfn.append_basic_block(f"resume_{number}")
        self.dispatch.add_case(I32(number), resume)
        fl.b.position_at_end(resume)
        self._move(fl, restore, to_frame=False)
        return resume

    def _move(self, fl: FunctionLowering, registers, to_frame: bool) -> None:
        frame = fl.llfn.args[1]
        for reg in registers:
            offset = self.plan.frame_slot(reg)
            p = fl.b.gep(frame, [const_int(I64, offset)], source_etype=I8)
            if to_frame:
                fl.b.store(fl.b.load(fl.register_slot(reg)), p)
            else:
                fl.b.store(fl.b.load(p, typ=fl.storage_type(reg)), fl.register_slot(reg))


def _line(module: ir.Module, pos: int) -> int:
    location = module.location(pos)
    return location.line if location else 0


def _intrinsic(llmod: ll.Module, name: str, ret, args) -> ll.Function:
    existing = llmod.globals.get(name)
    if existing is not None:
        return existing
    return ll.Function(llmod, ll.FunctionType(ret, args), name)


def _check_function(llmod: ll.Module) -> ll.Function:
    """i1 check(ctx, address, size, site): whether [address, address+size) lies inside one
    entry of the launch's allocation table (pairs of i64 start, end, sorted by start), found
    by binary search; on success the entry is remembered in the access site's cache slot."""
    existing = llmod.globals.get("ptxport.check")
    if existing is not None:
        return existing
    fn = ll.Function(llmod, ll.FunctionType(ll.IntType(1), [PTR, I64, I64, PTR]),
                     "ptxport.check")
    fn.linkage = "internal"
    fn.attributes.add("noinline")
    ctx, address, size, site = fn.args
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    table = b.load(b.gep(ctx, [I64(CTX.fields["alloc_table"])], source_etype=I8), typ=PTR)
    count = b.zext(b.load(b.gep(ctx, [I64(CTX.fields["alloc_count"])], source_etype=I8),
                          typ=I32), I64)
    head, body, done = (fn.append_basic_block(n) for n in ("head", "body", "done"))
    entry = b.block
    b.branch(head)
    b.position_at_end(head)
    lo = b.phi(I64, "lo")
    hi = b.phi(I64, "hi")
    lo.add_incoming(I64(0), entry)
    hi.add_incoming(count, entry)
    b.cbranch(b.icmp_unsigned("<", lo, hi), body, done)
    b.position_at_end(body)
    mid = b.lshr(b.add(lo, hi), I64(1))
    start = b.load(b.gep(table, [b.mul(mid, I64(2))], source_etype=I64), typ=I64)
    below = b.icmp_unsigned("<=", start, address)
    lo.add_incoming(b.select(below, b.add(mid, I64(1)), lo), body)
    hi.add_incoming(b.select(below, hi, mid), body)
    b.branch(head)
    b.position_at_end(done)
    candidate, outside = fn.append_basic_block("candidate"), fn.append_basic_block("outside")
    b.cbranch(b.icmp_unsigned(">", lo, I64(0)), candidate, outside)
    b.position_at_end(outside)
    b.ret(ll.Constant(ll.IntType(1), 0))
    b.position_at_end(candidate)
    start = b.load(b.gep(table, [b.sub(b.mul(lo, I64(2)), I64(2))], source_etype=I64), typ=I64)
    end = b.load(b.gep(table, [b.sub(b.mul(lo, I64(2)), I64(1))], source_etype=I64), typ=I64)
    last = b.add(address, size)
    ok = b.and_(b.icmp_unsigned("<=", last, end), b.icmp_unsigned(">=", last, address))
    remember, done_ = fn.append_basic_block("remember"), fn.append_basic_block("checked")
    b.cbranch(ok, remember, done_)
    b.position_at_end(remember)
    b.store(start, site)
    b.store(end, b.gep(site, [I64(8)], source_etype=I8))
    b.branch(done_)
    b.position_at_end(done_)
    b.ret(ok)
    return fn


def _global_timer(fl: FunctionLowering, llmod: ll.Module) -> ll.Value:
    """Nanoseconds from CLOCK_REALTIME (as %globaltimer counts), via libc's clock_gettime."""
    clock_gettime = _intrinsic(llmod, "clock_gettime", I32, [I32, PTR])
    timespec = fl.entry_alloca(ll.ArrayType(I64, 2), "timespec")
    fl.b.call(clock_gettime, [I32(0), timespec])
    seconds = fl.b.load(timespec, typ=I64)
    nanos = fl.b.load(fl.b.gep(timespec, [I64(8)], source_etype=I8), typ=I64)
    return fl.b.add(fl.b.mul(seconds, I64(1_000_000_000)), nanos)


# --- module-level lowering --------------------------------------------------------------------

def _plan(module: ir.Module, kernel: ir.Function) -> KernelPlan:
    shared_offsets, offset = {}, 0
    shared = [v for v in module.globals.values() if v.space == "shared"]
    shared += [v for v in kernel.variables.values() if v.space == "shared"]
    for var in sorted(shared, key=lambda v: v.unsized):   # extern (dynamic) arrays last
        offset = _align(offset, max(var.alignment, 16 if var.unsized else 1))
        shared_offsets[var.name] = offset
        offset += var.size
    _, param_size = param_layout(kernel)
    # The frame: header, the thread's .local memory, then a slot for each register some
    # wait must save (a register never live across a wait stays in machine registers).
    register_offsets = {}
    local_offset = _align(FRAME.size, 16)
    local = 0
    waits = {id(i) for i in kernel.instructions() if is_wait(i)}
    for var in kernel.variables.values():
        # .local memory, and with waits also the .param variables of call sequences (an
        # inlined function reads its parameters after waiting): memory that outlives a
        # thread function's return
        if var.space == "local" or (waits and var.space == "param"
                                    and not any(var is p for p in kernel.params)):
            local = _align(local, max(var.alignment, 1))
            register_offsets[f"local:{var.name}"] = local
            local += var.size
    plan = KernelPlan(kernel.name, param_size, offset, shared_offsets,
                      _align(local_offset + local, 16), local_offset,
                      register_offsets=register_offsets, source_lines=module.lines)
    if waits:
        live = live_after(kernel, waits)
        # an mbarrier test saves registers only when it yields
        modified = modified_before(kernel, waits, frozenset(
            id(i) for i in kernel.instructions() if id(i) in waits and i.opcode == "mbarrier"))
        for inst in kernel.instructions():
            if id(inst) not in waits:
                continue
            # the wait's own results are written after it resumes (unless it is guarded
            # and may not run)
            uses, defs = uses_and_defs(inst)
            restore = live[id(inst)] - (set() if inst.guard is not None else defs)
            if inst.opcode == "mbarrier":     # it tests again when it resumes
                restore |= uses
            save = restore & modified[id(inst)]
            key = lambda r: r.name  # noqa: E731
            plan.spills[id(inst)] = (sorted(save, key=key), sorted(restore, key=key))
            for reg in plan.spills[id(inst)][1]:     # in name order: the IR is stable
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


def _declare_globals(module: ir.Module, llmod: ll.Module) -> dict[str, ll.GlobalVariable]:
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


def _holds_function_addresses(var: ir.Variable) -> bool:
    return any(isinstance(item, ir.SymbolAddress) and isinstance(item.target, ir.Function)
               for item in var.init or [])


def _initialize_globals(module: ir.Module, globals_: dict, functions: dict) -> None:
    """The initial values of the module's variables (once the functions whose addresses
    they may hold are declared). A variable is one for all kernels of a module, as in CUDA:
    each kernel's code names it as an external symbol bound at load time to the module's
    storage (module_storage), except tables of function addresses (vtables), which hold
    this kernel's own functions and stay in its code."""
    for var in module.globals.values():
        g = globals_.get(var.name)
        if g is None or not _holds_function_addresses(var):
            continue
        element = I64 if var.type.kind == "opaque" else value_type(var.type)
        g.initializer = (_initializer(var, element, globals_, functions)
                         if var.init is not None else ll.Constant(g.value_type, None))


def _function_type(function: ir.Function) -> ll.FunctionType:
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
    plan = _plan(module, kernel)
    globals_ = _declare_globals(module, llmod)
    functions: dict[str, ll.Function] = {}
    for f in _reachable_functions(kernel, module):
        if not f.is_declaration:
            fn = ll.Function(llmod, _function_type(f), name=f"ptx.func.{f.name}")
            fn.linkage = "internal"
            functions[f.name] = fn
    _initialize_globals(module, globals_, functions)
    target = CpuTarget(module, llmod, plan, globals_, functions)
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
    plan.frame_size = _align(plan.frame_size, 16)
    _build_run_threads(llmod, thread)
    _build_run_blocks(llmod, thread)
    build_claiming(llmod, llmod.globals["run_blocks"], 4, "run_claimed_blocks")
    cpu_runtime.add_conversions(llmod)
    if plan.sync_points:
        from ptxport.codegen.targets.cpu.native import build_run_block, build_run_waiting_blocks

        build_run_block(llmod, llmod.globals["run_threads"], plan)
        build_run_waiting_blocks(llmod, llmod.globals["run_block_from"])
        build_claiming(llmod, llmod.globals["run_waiting_blocks"], 6,
                       "run_claimed_waiting_blocks")
    return llmod, plan


def _reachable_functions(kernel: ir.Function,
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
    fl = FunctionLowering(module, f, llfn, target, pointers)
    fl.problems = problems
    fl.declare_registers()
    first = fl.create_blocks()
    fl.b.position_at_end(fl.entry)
    fl.b.branch(first)
    fl.lower_body()


def _lower_kernel(module, kernel: ir.Function, thread: ll.Function, target: CpuTarget,
                  problems: list | None):
    fl = FunctionLowering(module, kernel, thread, target)
    fl.problems = problems
    fl.declare_registers()
    first = fl.create_blocks()
    dispatch_block = thread.append_basic_block("dispatch")
    fl.b.position_at_end(fl.entry)
    fl.b.branch(dispatch_block)
    fl.b.position_at_end(dispatch_block)
    target.dispatch = fl.b.switch(thread.args[2], first)
    fl.lower_body()


def _build_run_threads(llmod: ll.Module, thread: ll.Function) -> None:
    """void run_threads(ctx, frames, frame_size, points*, statuses*, n): runs every runnable
    thread of a block from its resume point until it waits, exits or traps."""
    fn = ll.Function(llmod, ll.FunctionType(ll.VoidType(), [PTR, PTR, I64, PTR, PTR, I32]),
                     name="run_threads")
    ctx, frames, frame_size, points, statuses, n = fn.args
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    head = fn.append_basic_block("head")
    body = fn.append_basic_block("body")
    run = fn.append_basic_block("run")
    nxt = fn.append_basic_block("next")
    done = fn.append_basic_block("done")
    b.branch(head)
    b.position_at_end(head)
    t = b.phi(I32, name="t")
    t.add_incoming(I32(0), fn.entry_basic_block)
    b.cbranch(b.icmp_signed("<", t, n), body, done)
    b.position_at_end(body)
    status_ptr = b.gep(statuses, [t], source_etype=I32)
    b.cbranch(b.icmp_signed("==", b.load(status_ptr, typ=I32), I32(RUNNABLE)), run, nxt)
    b.position_at_end(run)
    point_ptr = b.gep(points, [t], source_etype=I32)
    frame = b.gep(frames, [b.mul(b.zext(t, I64), frame_size)], source_etype=I8)
    result = b.call(thread, [ctx, frame, b.load(point_ptr, typ=I32)])
    status = b.select(b.icmp_signed(">", result, I32(0)), I32(BLOCKED),
                      b.select(b.icmp_signed("==", result, I32(-1)), I32(EXITED),
                               I32(TRAPPED)))
    b.store(status, status_ptr)
    b.store(result, point_ptr)
    b.branch(nxt)
    b.position_at_end(nxt)
    t_next = b.add(t, I32(1))
    t.add_incoming(t_next, nxt)
    b.branch(head)
    b.position_at_end(done)
    b.ret_void()


def _build_run_blocks(llmod: ll.Module, thread: ll.Function) -> None:
    """i64 run_blocks(ctx, frames, frame_size, nthreads, first, count): for kernels without
    barriers or warp operations, runs blocks first..first+count-1 (linear block numbers)
    start to finish, every thread from the top. Returns -1 when all exited, else
    (block << 32 | thread) of the first thread that did not exit (its status is in the
    ctx's fault fields or its trap number in `status_out`)."""
    fn = ll.Function(llmod, ll.FunctionType(I64, [PTR, PTR, I64, I32, I64, I64, PTR]),
                     name="run_blocks")
    ctx, frames, frame_size, nthreads, first, count, status_out = fn.args
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    thread_head, thread_body, thread_next, failed = (
        fn.append_basic_block(n) for n in ("thread_head", "thread_body", "thread_next",
                                           "failed"))
    n, block_body, block_next = open_block_loop(b, ctx, first, count)
    b.branch(thread_head)
    b.position_at_end(thread_head)
    t = b.phi(I32, "t")
    t.add_incoming(I32(0), block_body)
    b.cbranch(b.icmp_signed("<", t, nthreads), thread_body, block_next)
    b.position_at_end(thread_body)
    frame = b.gep(frames, [b.mul(b.zext(t, I64), frame_size)], source_etype=I8)
    result = b.call(thread, [ctx, frame, I32(0)])
    b.cbranch(b.icmp_signed("==", result, I32(-1)), thread_next, failed)
    b.position_at_end(thread_next)
    t.add_incoming(b.add(t, I32(1)), thread_next)
    b.branch(thread_head)
    b.position_at_end(failed)
    b.store(result, status_out)
    b.ret(b.or_(b.shl(n, I64(32)), b.zext(t, I64)))


def open_block_loop(b: ll.IRBuilder, ctx, first, count):
    """Opens `for n in first..first+count` over linear block numbers in b's function: the
    builder is left in the loop's body with block n's %ctaid stored in the context, and the
    loop returns -1 when done (or asked to stop: the context's stop word is set). Returns
    (n, the body block, the block to branch to for the next block number)."""
    fn = b.function

    def field(name: str, index: int = 0):
        return b.gep(ctx, [I64(CTX.fields[name] + 4 * index)], source_etype=I8)

    gx = b.zext(b.load(field("nctaid", 0), typ=I32), I64)
    gy = b.zext(b.load(field("nctaid", 1), typ=I32), I64)
    stop = b.load(field("stop"), typ=PTR)
    end = b.add(first, count)
    head, body, block_next, done, more = (fn.append_basic_block(name) for name in (
        "block_head", "block_body", "block_next", "done", "more_blocks"))
    entry = b.block
    b.branch(head)
    b.position_at_end(head)
    n = b.phi(I64, "block")
    n.add_incoming(first, entry)
    b.cbranch(b.icmp_unsigned("<", n, end), more, done)
    b.position_at_end(more)
    branch_on_stop(b, stop, done, body)   # (a stopped launch: its caller finds the word set)
    b.position_at_end(done)
    b.ret(I64(-1))
    b.position_at_end(block_next)
    n.add_incoming(b.add(n, I64(1)), block_next)
    b.branch(head)
    b.position_at_end(body)
    b.store(b.trunc(b.urem(n, gx), I32), field("ctaid", 0))
    b.store(b.trunc(b.urem(b.udiv(n, gx), gy), I32), field("ctaid", 1))
    b.store(b.trunc(b.udiv(n, b.mul(gx, gy)), I32), field("ctaid", 2))
    return n, body, block_next


def build_claiming(llmod: ll.Module, inner: ll.Function, at: int, name: str) -> None:
    """i64 name(<inner's arguments before `at`>, counter*, total, chunk, end*, <inner's
    arguments after first and count>): the workers of a launch share `counter`, the next
    block number to run; each claims `chunk` blocks at a time with an atomic add and runs
    them with inner(..., first, count, ...) until the grid (`total` blocks) is done or the
    launch is asked to stop (returns -1), or returns inner's first result other than -1
    after storing the end of the chunk it was running in *end (the caller handles that
    block and the rest of the chunk, then calls again). Claiming in native code keeps
    workers off Python's lock between chunks."""
    before, after = inner.args[:at], inner.args[at + 2:]
    types = [a.type for a in before] + [PTR, I64, I64, PTR] + [a.type for a in after]
    fn = ll.Function(llmod, ll.FunctionType(I64, types), name=name)
    args = list(fn.args)
    lead, (counter, total, chunk, end_out), trail = (args[:at], args[at:at + 4],
                                                     args[at + 4:])
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    loop, claim, run, done, stopped = (fn.append_basic_block(x) for x in (
        "loop", "claim", "run", "done", "stopped"))
    stop = b.load(b.gep(lead[0], [I64(CTX.fields["stop"])], source_etype=I8), typ=PTR)
    b.branch(loop)
    b.position_at_end(loop)
    branch_on_stop(b, stop, done, claim)
    b.position_at_end(claim)
    first = b.atomic_rmw("add", counter, chunk, "monotonic")
    b.cbranch(b.icmp_unsigned(">=", first, total), done, run)
    b.position_at_end(run)
    end = b.add(first, chunk)
    end = b.select(b.icmp_unsigned("<", end, total), end, total)
    result = b.call(inner, [*lead, first, b.sub(end, first), *trail])
    b.cbranch(b.icmp_signed("==", result, I64(-1)), loop, stopped)
    b.position_at_end(done)
    b.ret(I64(-1))
    b.position_at_end(stopped)
    b.store(end, end_out)
    b.ret(result)


# --- JIT --------------------------------------------------------------------------------------

_LLVM_LOCK = threading.Lock()


def _target_machine():
    """A new target machine for the host. Each JIT engine takes ownership of the one it is
    given (and destroys it with itself), so engines never share one."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(
        cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(),
        opt=3, jit=True)


def _object_code(llvm_ir: str, tm) -> bytes:
    """Optimized machine code for the module, from the disk cache when this exact LLVM IR
    was compiled before for this CPU by this LLVM (so a second process starts fast)."""
    key = hashlib.sha256("\0".join((
        llvm_ir, llvm.llvm_version_info.__repr__(), llvm.get_host_cpu_name(),
        llvm.get_host_cpu_features().flatten(), _CODEGEN_VERSION)).encode()).hexdigest()
    path = cache_path("cpu", key, ".o")
    obj = read_entry(path)
    if obj is None:
        parsed = llvm.parse_assembly(llvm_ir)
        parsed.verify()
        pb = llvm.create_pass_builder(tm, llvm.PipelineTuningOptions(speed_level=3))
        pb.getModulePassManager().run(parsed, pb)
        obj = tm.emit_object(parsed)
        write_entry(path, obj)
    return obj


# Part of every cache key: bump when the generated code's meaning changes without the LLVM IR
# changing (e.g. the executor's protocol).
_CODEGEN_VERSION = "cpu-6"

RunThreads = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                              ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32)


RunBlock = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                            ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32)
RunWaitingBlocks = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p,
                                    ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p,
                                    ctypes.c_int32, ctypes.c_int64, ctypes.c_int64)
RunBlocks = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                             ctypes.c_int32, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)


RunClaimedBlocks = ctypes.CFUNCTYPE(
    ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32,
    ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p)
RunClaimedWaitingBlocks = ctypes.CFUNCTYPE(
    ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p,
    ctypes.c_void_p, ctypes.c_int32, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
    ctypes.c_void_p)


_STORAGE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_STORAGE_LOCK = threading.Lock()


def module_storage(module: ir.Module) -> dict[str, tuple[int, int]]:
    """name -> (address, size) of the module's .global and .const variables (all but
    function-address tables), in host memory shared by every kernel of this module and kept
    as long as the module, filled with their initial values."""
    with _STORAGE_LOCK:
        found = _STORAGE.get(module)
        if found is not None:
            return found[0]
        variables = [v for v in module.globals.values()
                     if v.space in ("global", "const") and not _holds_function_addresses(v)]
        arrays, where = [], {}
        for var in variables:
            size, align = max(var.size, 1), max(var.alignment, 16)
            array = np.zeros(size + align, np.uint8)
            start = (-array.ctypes.data) % align
            arrays.append(array)
            where[var.name] = (array.ctypes.data + start, var.size)
        for var, array in zip(variables, arrays, strict=True):
            data = _initial_bytes(var, where)
            address, _ = where[var.name]
            start = address - array.ctypes.data
            array[start:start + len(data)] = np.frombuffer(data, np.uint8)
        _STORAGE[module] = (where, arrays)
        return where


def _initial_bytes(var: ir.Variable, where: dict) -> bytes:
    """A variable's initial contents (zeros past its initializer), by PTX's rules: integers
    and floats of the element's size, addresses of variables."""
    element = 8 if var.type.kind == "opaque" else max(var.type.size, 1)
    out = bytearray()
    for item in var.init or []:
        if isinstance(item, IntImm):
            value = item.value
            if var.type.kind == "float":
                bits = {2: "<e", 4: "<f", 8: "<d"}[element]
                out += struct.pack(bits, float(value))
                continue
        elif isinstance(item, FloatImm):
            if var.type.kind == "float" and item.width // 8 != element:
                raise UnsupportedFeatureError("initializer", "cpu", None,
                                              f"cannot initialize '{var.name}' with {item!r}")
            value = item.bits
        elif isinstance(item, ir.SymbolAddress) and isinstance(item.target, ir.Variable) \
                and item.target.name in where:
            value = where[item.target.name][0] + item.offset
        else:
            raise UnsupportedFeatureError("initializer", "cpu", None,
                                          f"cannot initialize '{var.name}' with {item!r}")
        out += (value & ((1 << (8 * element)) - 1)).to_bytes(element, "little")
    return bytes(out[:max(var.size, 0)])


class CpuKernelBinary:
    """A kernel compiled for the host: `launch` runs a whole grid on the calling thread. Made
    from the kernel's object code and plan, fresh from the lowering or from its image."""

    def __init__(self, name: str, object_code: bytes, plan: KernelPlan, module: ir.Module,
                 gang_refusal: str | None = None):
        self.name, self.plan, self.module = name, plan, module
        # why the kernel runs thread by thread (None: it runs as warp gangs)
        self.gang_refusal = gang_refusal
        self._prepared = False
        # The object file reads its bytes in place: they must live as long as the engine.
        self.object_code = object_code
        storage = module_storage(module)
        # printf's calls name a callback that importing cpu_printf registers (a process that
        # loads an image has not lowered a printf, which imports it)
        from ptxport.runtime.backends.cpu import printf as cpu_printf  # noqa: F401
        with _LLVM_LOCK:
            # this module's variables, for the symbols the object leaves undefined
            for var_name, (address, _) in storage.items():
                llvm.add_symbol(f"ptx.{var_name}", address)
            missing = [symbol for symbol in cpu_runtime.undefined_symbols(object_code)
                       if not llvm.address_of_symbol(symbol)]
            if missing:
                raise CompileError(
                    f"kernel '{name}' needs {', '.join(missing)}, which this process does not "
                    "provide (a compiler runtime function); please report this to ptxport")
            empty = llvm.parse_assembly("")
            empty.triple = llvm.get_process_triple()
            self._engine = llvm.create_mcjit_compiler(empty, _target_machine())
            self._object_file = llvm.ObjectFileRef.from_data(object_code)
            self._engine.add_object_file(self._object_file)
            self._engine.finalize_object()
            self._bind_entry_points()

    def _bind_entry_points(self) -> None:
        address = self._engine.get_function_address
        waits = bool(self.plan.sync_points)
        # (warp gangs have no run_threads: the executor never calls it for them)
        self.run_threads = RunThreads(address("run_threads"))
        self.run_blocks = RunBlocks(address("run_blocks"))
        self.run_claimed_blocks = RunClaimedBlocks(address("run_claimed_blocks"))
        # Completes the common waits natively (cpu_native.py); tests turn it off to
        # compare with the general resolver.
        self.run_block = RunBlock(address("run_block")) if waits else None
        self.run_waiting_blocks = (RunWaitingBlocks(address("run_waiting_blocks"))
                                   if waits else None)
        self.run_claimed_waiting_blocks = (
            RunClaimedWaitingBlocks(address("run_claimed_waiting_blocks")) if waits else None)
        self.native_waits = True

    def image(self) -> cpu_image.Image:
        """What a later process needs to run this kernel without compiling it."""
        return cpu_image.Image(self.plan, self.object_code, self.gang_refusal)

    def for_block(self, block) -> CpuKernelBinary:
        """The code for blocks of shape `block`: this one, for every shape."""
        return self

    def prepare(self, block) -> bool:
        """Ready for a launch with blocks of shape `block`: True the first time (the code was
        compiled or loaded for it, just before)."""
        first, self._prepared = not self._prepared, True
        return first

    def global_ranges(self) -> list[tuple[int, int]]:
        """(address, size) of the module's .global and .const variables in this binary."""
        ranges = []
        storage = module_storage(self.module)
        for var in self.module.globals.values():
            if var.space in ("global", "const") and var.size:
                address = storage[var.name][0] if var.name in storage else \
                    self._engine.get_global_value_address(f"ptx.{var.name}")
                ranges.append((address, var.size))
        return ranges

    def launch(self, grid, block, dynamic_shared: int, params: bytes,
               allocations: list[tuple[int, int]] | None = None,
               timeout: float | None = None) -> None:
        """Run the grid. `allocations` lists the (address, size) of the device buffers the
        kernel may reach; every global or generic access is then checked against them (and
        the module's variables, shared and local memory), and an access outside all of them
        raises IllegalAddressError. None runs without checks. A launch still running after
        `timeout` seconds is stopped and raises KernelTimeoutError. The device heap, once a
        kernel using malloc or free reserves it, is one more allocation of every launch."""
        from ptxport.runtime.backends.cpu.executor import run_grid

        if self.plan.uses_heap:
            cpu_heap.HEAP.reserve()
        heap = cpu_heap.HEAP.range()
        if allocations is not None and heap is not None:
            allocations = [*allocations, heap]
        run_grid(self, tuple(grid), tuple(block), dynamic_shared, params, allocations,
                 timeout)


def _binary(name: str, llmod: ll.Module, plan: KernelPlan, module: ir.Module,
            gang_refusal: str | None = None) -> CpuKernelBinary:
    """The binary of a freshly lowered kernel."""
    with _LLVM_LOCK:
        object_code = _object_code(str(llmod), _target_machine())
    return CpuKernelBinary(name, object_code, plan, module, gang_refusal)


def _from_image(name: str, image: cpu_image.Image, module: ir.Module) -> CpuKernelBinary:
    return CpuKernelBinary(name, image.object_code, image.plan, module, image.gang_refusal)


@cache
def _host() -> tuple[str, str, str]:
    """What machine code depends on besides its input: the host CPU, its features, LLVM."""
    return (llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten(),
            repr(llvm.llvm_version_info))


def _image_key(module: ir.Module, kernel: str, block: tuple | None) -> str | None:
    """The key of `kernel`'s image for blocks of shape `block` (None: any shape)."""
    options = {"codegen": _CODEGEN_VERSION, **cpu_gang.switches()}
    return cpu_image.kernel_key(module, kernel, block, options, _host())


class GangKernelBinary:
    """A kernel that runs as warp gangs (cpu_gang.py), compiled for each block shape it is
    launched with, on that shape's first launch: thread indices, the block's size and the
    registers every lane of a warp holds alike (threadIdx.y in 32-wide blocks) are then
    constants of the code. Each shape's code is stored as an image (cpu_image.py), which
    later processes load instead of compiling."""

    def __init__(self, name: str, module: ir.Module):
        self.name, self.module = name, module
        self.gang_refusal: str | None = None
        self._shapes: dict[tuple, CpuKernelBinary] = {}
        self._scalar: CpuKernelBinary | None = None
        self._lock = threading.Lock()

    def for_block(self, block) -> CpuKernelBinary:
        """The compiled code for blocks of this shape (loaded or compiled now if it is the
        first)."""
        block = tuple(block)
        with self._lock:
            binary = self._shapes.get(block)
            if binary is None:
                binary = self._shapes[block] = self._load_or_compile(block)
            return binary

    def prepare(self, block) -> bool:
        """Compile (or load) the code for blocks of shape `block` now, if not yet: True if
        it did."""
        with self._lock:
            first = tuple(block) not in self._shapes
        self.for_block(block)
        return first

    def _load_or_compile(self, block: tuple) -> CpuKernelBinary:
        key = _image_key(self.module, self.name, block)
        image = cpu_image.load(key)
        if image is not None and image.plan is not None:
            binary = _from_image(self.name, image, self.module)
        else:
            binary = self._compile(block)
            cpu_image.store(key, binary.image())
        if binary.gang_refusal is not None:
            self.gang_refusal = binary.gang_refusal
        return binary

    def _compile(self, block: tuple) -> CpuKernelBinary:
        if self._scalar is None:
            try:
                llmod, plan = cpu_gang.build(self.module, self.name, block)
                return _binary(self.name, llmod, plan, self.module)
            except cpu_gang.GangUnsupported as e:     # (compile_kernel's check passed)
                self.gang_refusal = f"for blocks of {block}: {e}"
            except RuntimeError as e:    # LLVM refused the module: a gap in cpu_gang's checks
                self.gang_refusal = f"LLVM rejected the gang code: {str(e).splitlines()[0]}"
            # thread by thread from now on, for every shape
            llmod, plan = build_llvm(self.module, self.name)
            self._scalar = _binary(self.name, llmod, plan, self.module, self.gang_refusal)
        return self._scalar

    def launch(self, grid, block, dynamic_shared: int, params: bytes,
               allocations: list[tuple[int, int]] | None = None,
               timeout: float | None = None) -> None:
        """CpuKernelBinary.launch with the code for this block shape."""
        self.for_block(block).launch(grid, block, dynamic_shared, params, allocations, timeout)


def compile_kernel(module: ir.Module, kernel: str,
                   options=None) -> CpuKernelBinary | GangKernelBinary:
    """Compile `kernel` of a verified IR module for the host CPU: as warp gangs
    (cpu_gang.py; machine code per block shape, at its first launch) where that path takes
    the kernel, else thread by thread. A kernel compiled before (in any process) is loaded
    from its image (cpu_image.py) instead: nothing is lowered."""
    key = _image_key(module, kernel, None)
    image = cpu_image.load(key)
    if image is not None:
        return GangKernelBinary(kernel, module) if image.plan is None else \
            _from_image(kernel, image, module)
    binary = _compile_kernel(module, kernel)
    # a gang kernel's image only says so: its code is stored per block shape
    cpu_image.store(key, cpu_image.Image(None, b"", None)
                    if isinstance(binary, GangKernelBinary) else binary.image())
    return binary


def _compile_kernel(module: ir.Module, kernel: str) -> CpuKernelBinary | GangKernelBinary:
    refusal = "turned off (PTXPORT_CPU_GANG=0)"
    if cpu_gang.enabled():
        try:
            cpu_gang.check(module, kernel)
        except cpu_gang.GangUnsupported as e:
            refusal = str(e)
        else:
            return GangKernelBinary(kernel, module)
    llmod, plan = build_llvm(module, kernel)
    return _binary(kernel, llmod, plan, module, refusal)


def unsupported_instructions(module: ir.Module) -> dict[int, str]:
    """id(instruction) -> why the CPU target cannot compile it, for every instruction of
    every kernel and device function of `module` that it cannot (found by the lowering
    itself, so this agrees with what compiling would say)."""
    problems: list = []
    reached: set[str] = set()
    for kernel in module.kernels:
        build_llvm(module, kernel.name, problems)
        reached.update(f.name for f in _reachable_functions(kernel, module))
    # device functions no kernel calls: lowered together, without a kernel
    alone = [f for f in module.functions.values()
             if not f.is_kernel and not f.is_declaration and f.name not in reached]
    if alone:
        llmod = ll.Module()
        functions = {f.name: ll.Function(llmod, _function_type(f), name=f"ptx.func.{f.name}")
                     for f in module.functions.values()
                     if not f.is_kernel and not f.is_declaration}
        plan = KernelPlan("", 0, 0, {}, FRAME.size, FRAME.size)
        globals_ = _declare_globals(module, llmod)
        _initialize_globals(module, globals_, functions)
        target = CpuTarget(module, llmod, plan, globals_, functions)
        start = len(problems)
        for f in alone:
            _lower_device_function(module, f, functions[f.name], target, problems)
        # a wait inside a device function is fine once a kernel calls it: it runs inlined
        problems[start:] = [(inst, reason) for inst, reason in problems[start:]
                            if not is_wait(inst)]
    return {id(inst): reason for inst, reason in problems}


# Other CPUs the code generator is checked to compile for (an object file, not run here).
CROSS_TRIPLES = {"x86_64": "x86_64-unknown-linux-gnu", "aarch64": "aarch64-unknown-linux-gnu"}


def emit_object(module: ir.Module, kernel: str, triple: str, cpu: str = "generic") -> bytes:
    """An optimized object file of `kernel`'s CPU code for another CPU (`triple`), e.g. to
    check that a kernel compiles for AArch64 on an x86-64 machine."""
    llmod, _ = build_llvm(module, kernel)
    llmod.triple = triple
    with _LLVM_LOCK:
        llvm.initialize_all_targets()
        llvm.initialize_all_asmprinters()
        tm = llvm.Target.from_triple(triple).create_target_machine(cpu=cpu, opt=3)
        parsed = llvm.parse_assembly(str(llmod))
        parsed.verify()
        pb = llvm.create_pass_builder(tm, llvm.PipelineTuningOptions(speed_level=3))
        pb.getModulePassManager().run(parsed, pb)
        return tm.emit_object(parsed)
