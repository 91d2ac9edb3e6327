"""The CPU target's hooks for the shared lowering (codegen/lower.py): special registers,
state-space addresses and their checks, calls, traps, waits and loop polls, for a *thread
function* that runs one CUDA thread from a resume point until it must wait.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen import ops  # noqa: F401  (registers the lowerings)
from ptxport.codegen.lower import (
    I8,
    I32,
    I64,
    PTR,
    FunctionLowering,
    Target,
    const_int,
    counter_word,
)
from ptxport.codegen.targets.allocation_table import search_allocations
from ptxport.codegen.targets.cpu import avx512
from ptxport.codegen.targets.cpu.abi import (
    CALL_FAULT,
    CTX,
    FAULTED,
    FRAME,
    FREE_FAULT,
    KernelPlan,
    SyncPoint,
)
from ptxport.codegen.targets.cpu.calls import (
    lower_assertfail,
    lower_free,
    lower_malloc,
    lower_vprintf,
)
from ptxport.codegen.targets.cpu.device_runtime import kernel_address, lower_device_runtime
from ptxport.codegen.targets.cpu.local_stack import LocalStack
from ptxport.codegen.targets.cpu.machine import host
from ptxport.codegen.targets.cpu.stop import STOPPED, poll_stop
from ptxport.codegen.targets.cpu.waits import lower_wait
from ptxport.codegen.targets.thread_wgmma import compute_wgmma
from ptxport.ir import nodes as ir
from ptxport.ir.abi import param_layout
from ptxport.ir.analysis import address_taken
from ptxport.ir.special_registers import ZERO_WITHOUT_DRIVER
from ptxport.ir.types import TYPES


class CpuTarget(Target):
    name = "cpu"
    # AVX-512's vscalefps (the host's features are part of every image's key)
    native_ldexp = "+avx512f" in host()[1].split(",")
    # AVX-512's rounding modes in the instruction and its vscalefps on a warp's lanes
    # (avx512.py)
    avx512_lanes = native_ldexp
    f64_nan_branch = True

    def __init__(self, module: ir.Module, llmod: ll.Module, plan: KernelPlan,
                 globals_: dict[str, ll.GlobalVariable], functions: dict[str, ll.Function],
                 stack: LocalStack | None = None):
        self.module, self.llmod, self.plan = module, llmod, plan
        self.globals, self.functions = globals_, functions
        self.stack = stack if stack is not None else LocalStack()
        self._entry_loads: dict = {}   # LLVM function -> the ctx fields loaded at its entry
        self._address_taken: list | None = None   # functions an indirect call may reach

    # --- per-function values ---------------------------------------------------------------

    def ctx_field(self, fl: FunctionLowering, name: str, index: int = 0, typ=I32):
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

    def ctx_slot(self, fl: FunctionLowering, name: str):
        """The address of a field of the block context."""
        return fl.b.gep(fl.llfn.args[0], [const_int(I64, CTX.fields[name])], source_etype=I8)

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
            return self.ctx_field(fl, name[1:], axis) if axis < 3 else I32(0)
        if name == "%laneid":
            return self._frame_field(fl, "laneid")
        if name == "%warpid":
            return self._frame_field(fl, "warpid")
        if name == "%nwarpid":
            return self.ctx_field(fl, "nwarpid")
        if name.startswith("%lanemask_"):
            lane = self._frame_field(fl, "laneid")
            one = fl.b.shl(I32(1), lane)
            kind = name[len("%lanemask_"):]
            below = fl.b.sub(one, I32(1))
            return {"eq": lambda: one, "lt": lambda: below,
                    "le": lambda: fl.b.or_(below, one), "gt": lambda: fl.b.not_(
                        fl.b.or_(below, one)), "ge": lambda: fl.b.not_(below)}[kind]()
        if name in ("%smid",):
            return self.ctx_field(fl, "smid")
        if name in ("%nsmid",):
            return self.ctx_field(fl, "nsmid")
        if name in ("%dynamic_smem_size",):
            return self.ctx_field(fl, "dynamic_smem")
        if name in ("%total_smem_size", "%aggr_smem_size"):
            return self.ctx_field(fl, "total_smem")
        if name in ("%clock", "%clock_hi", "%clock64"):
            counter = fl.b.call(intrinsic(self.llmod, "llvm.readcyclecounter", I64, []), [])
            return counter_word(fl.b, counter, name)
        if name in ("%globaltimer", "%globaltimer_lo", "%globaltimer_hi"):
            return counter_word(fl.b, _global_timer(fl, self.llmod), name)
        if name in ("%gridid", "%current_graph_exec"):
            return I64(0)
        if name in ("%envreg1", "%envreg2"):
            # a cooperative launch's grid workspace (cooperative groups' grid.sync() finds
            # its barrier there), as NVIDIA's driver passes it: %envreg1 the high half of
            # its address, %envreg2 the low; zero otherwise (the executor sets the field)
            word = self.ctx_field(fl, "grid_workspace", typ=I64)
            if name == "%envreg1":
                word = fl.b.lshr(word, I64(32))
            return fl.b.trunc(word, I32)
        if name in ZERO_WITHOUT_DRIVER:
            return I32(0)
        if name == "%is_explicit_cluster":
            return ll.Constant(ll.IntType(1), 0)
        if name in ("%clusterid", "%cluster_ctaid"):
            return self.ctx_field(fl, "ctaid", axis) if name == "%clusterid" and axis < 3 \
                else I32(0)
        if name in ("%nclusterid",):
            return self.ctx_field(fl, "nctaid", axis) if axis < 3 else I32(1)
        if name in ("%cluster_nctaid",):
            return I32(1 if axis < 3 else 0)
        if name == "%cluster_ctarank":
            return I32(0)
        if name == "%cluster_nctarank":
            return I32(1)
        raise fl.unsupported(fl.inst, f"special register {reg.text} on the CPU")

    def rounded_f32(self, fl: FunctionLowering, op: str, xs: list, rnd: str):
        return avx512.rounded_f32(fl, op, xs, rnd) if self.avx512_lanes else None

    def scaled_f32(self, fl: FunctionLowering, p: ll.Value, k: ll.Value):
        return avx512.scaled_f32(fl, p, k) if self.avx512_lanes else None

    def space_base(self, fl: FunctionLowering, space: str | None):
        if space == "shared":
            return self.ctx_field(fl, "shared", typ=PTR)
        if space == "local":
            return self._local_base(fl)
        if space == "param" and fl.function.is_kernel:
            return self.ctx_field(fl, "params", typ=PTR)
        return None

    def _local_base(self, fl: FunctionLowering):
        frame = fl.llfn.args[1]
        return fl.b.gep(frame, [const_int(I64, self.plan.local_offset)], source_etype=I8)

    def variable_pointer(self, fl: FunctionLowering, var: ir.Variable):
        if var.space in ("global", "const"):
            return self.globals[var.name]
        if var.space == "shared":
            offset = self.plan.shared_offsets[var.name]
            base = self.ctx_field(fl, "shared", typ=PTR)
            return fl.b.gep(base, [const_int(I64, offset)], source_etype=I8)
        if var.name in fl.param_pointers:
            return fl.param_pointers[var.name]
        if var.space == "param" and fl.function.is_kernel and var in fl.function.params:
            slots, _ = param_layout(fl.function)
            offset = next(s.offset for s in slots if s.variable is var)
            base = self.ctx_field(fl, "params", typ=PTR)
            return fl.b.gep(base, [const_int(I64, offset)], source_etype=I8)
        offset = self.plan.register_offsets.get(f"local:{var.name}")
        if offset is not None and fl.function.is_kernel:
            return fl.b.gep(self._local_base(fl), [const_int(I64, offset)], source_etype=I8)
        on_stack = self.stack.variable_pointer(self, fl, var)
        if on_stack is not None:
            return on_stack
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
            base = self.ctx_field(fl, "shared", typ=PTR)
            offset = fl.b.sub(fl.b.ptrtoint(pointer, I64), fl.b.ptrtoint(base, I64))
            limit = fl.b.zext(self.ctx_field(fl, "total_smem"), I64)
            ok = fl.b.icmp_unsigned("<=", fl.b.add(offset, I64(size)), limit)
        else:
            # Each access site remembers the allocation it last hit (per worker, in the
            # launch's site cache): usually the same one, so the search is rarely needed.
            site = self.plan.check_sites
            self.plan.check_sites += 1
            cache = self.ctx_field(fl, "site_cache", typ=PTR)
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
            found = fl.b.call(check_function(self.llmod), [ctx, address, I64(size), slot])
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
        self.fault(fl, pointer, size, write)
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

    def fault(self, fl: FunctionLowering, pointer, size: int, write: bool) -> None:
        """Record a bad access (or, with size CALL_FAULT, a call of an address that is no
        function) in the block context; a kernel stops there (returns FAULTED), a device
        function goes on and the executor reports it after the block."""
        ctx = fl.llfn.args[0]
        line = source_line(self.module, fl.inst.pos) if fl.inst is not None else 0
        info = (line << 16) | (size << 1) | int(write)
        # (the first fault of the block is kept: the threads after a faulting one still run
        # to their own fault, and the message names the first thread with its address)
        fault_address = fl.b.gep(ctx, [I64(CTX.fields["fault_address"])], source_etype=I8)
        fault_info = fl.b.gep(ctx, [I64(CTX.fields["fault_info"])], source_etype=I8)
        was = fl.b.load(fault_info, typ=I64)
        first = fl.b.icmp_unsigned("==", was, I64(0))
        fl.b.store(fl.b.select(first, fl.b.ptrtoint(pointer, I64),
                               fl.b.load(fault_address, typ=I64)), fault_address)
        fl.b.store(fl.b.select(first, I64(info), was), fault_info)
        if fl.function.is_kernel:
            fl.b.ret(I32(FAULTED))

    def stack_memory(self, fl: FunctionLowering, size: ll.Value, align: int) -> ll.Value:
        return self.stack.allocate(self, fl, size, align)

    def stack_save(self, fl: FunctionLowering) -> ll.Value:
        return self.stack.save(self, fl)

    def stack_restore(self, fl: FunctionLowering, pointer: ll.Value) -> None:
        self.stack.restore(self, fl, pointer)

    def loop_header(self, fl: FunctionLowering) -> None:
        """Every loop looks at the launch's stop word, so that a launch spinning forever
        (on a flag no one sets) can be stopped: a kernel returns STOPPED, a device function
        returns to the kernel, which stops at its next loop or ends."""
        stopping = fl.llfn.append_basic_block("stopping")
        going_on = fl.llfn.append_basic_block("going_on")
        poll_stop(fl, self.ctx_field(fl, "stop", typ=PTR), stopping, going_on)
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
        self.plan.trap_lines[number] = source_line(self.module, inst.pos)
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
            if lower_device_runtime(fl, inst, callee, pointers):   # dynamic parallelism
                return
            if callee.name not in ("vprintf", "__assertfail"):
                raise fl.unsupported(inst, f"a call of '{callee.name}', which the module "
                                           "declares but does not define")
            if callee.name == "vprintf":
                lower_vprintf(fl, inst, list(returns), pointers)
                return
            lower_assertfail(fl, inst, pointers)
            self.trap(fl, inst)
            fl.b.position_at_end(fl.llfn.append_basic_block("after_assert"))
            return
        llcallee = self.functions[callee.name]
        self.stack.call(self, fl, callee.name, lambda: fl.b.call(
            llcallee, [fl.llfn.args[0], fl.llfn.args[1], *pointers]))

    def _heap_call(self, fl: FunctionLowering, inst: ir.Instruction, name: str,
                   pointers: list) -> None:
        """Device malloc and free (cpu_heap.py); a free of no live allocation faults."""

        self.plan.uses_heap = True
        if name == "malloc":
            lower_malloc(fl, inst, pointers)
            return
        address, bad = lower_free(fl, inst, pointers)
        faulted = fl.llfn.append_basic_block("free_fault")
        freed = fl.llfn.append_basic_block("freed")
        fl.b.cbranch(bad, faulted, freed)
        fl.b.position_at_end(faulted)
        self.fault(fl, fl.b.inttoptr(address, PTR), FREE_FAULT, True)
        if fl.b.block.terminator is None:
            fl.b.branch(freed)
        fl.b.position_at_end(freed)

    def function_address(self, fl: FunctionLowering, function: ir.Function) -> ll.Value:
        if function.is_kernel:      # what a device-side launch names
            address = kernel_address(self.module, function)
            if address is None:
                raise fl.unsupported(fl.inst, f"the address of the kernel '{function.name}', "
                                              "which is not in the module")
            return I64(address)
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
            llcallee = self.functions[f.name]
            self.stack.call(self, fl, f.name, lambda llcallee=llcallee: fl.b.call(
                llcallee, [fl.llfn.args[0], fl.llfn.args[1], *pointers]))
            fl.b.branch(done)
            fl.b.position_at_end(miss)
        self.fault(fl, fl.b.inttoptr(address, PTR), CALL_FAULT, False)
        if fl.b.block.terminator is None:
            fl.b.branch(done)
        fl.b.position_at_end(done)

    def synchronize(self, fl: FunctionLowering, inst: ir.Instruction) -> None:
        lower_wait(self, fl, inst, self._sync_point(fl, inst, "barriers and warp operations"))

    def lane_id(self, fl: FunctionLowering) -> ll.Value:
        return self._frame_field(fl, "laneid")

    def warp_matrix(self, fl: FunctionLowering, inst: ir.Instruction) -> None:
        """A warp operation like the others: the lanes leave their fragments (or row
        addresses) in their frames and the executor computes (runtime/backends/cpu/warps.py)."""
        self.synchronize(fl, inst)

    def warpgroup_matrix(self, fl: FunctionLowering, inst: ir.Instruction) -> None:
        """wgmma thread by thread (warp gangs have their own, gang/wgmma.py): each thread
        computes its own accumulators from shared memory, every element's address checked
        (codegen/targets/thread_wgmma.py); A in registers is refused (no lane shuffles)."""
        b = fl.b

        def shared(address: ll.Value, size: int) -> ll.Value:
            pointer = b.gep(self.space_base(fl, "shared"), [b.zext(address, I64)],
                            source_etype=I8)
            return self.checked_pointer(fl, pointer, "shared", size, False)

        lane = None
        if inst.spec.get("op") == "mma_async":
            lane = fl.read(ir.SpecialRegister("%laneid", None, TYPES["u32"]), "u32")
        compute_wgmma(fl, inst, lane, shared, None)

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
        self.spill_and_return(fl, self._sync_point(fl, inst, "waiting on an mbarrier"))

    def _sync_point(self, fl: FunctionLowering, inst: ir.Instruction, what: str) -> int:
        """The number of a new sync point of the plan at `inst` (where the thread returns to
        the executor and is resumed); `what` names the operation in the error for a device
        function that was not inlined."""
        if not fl.function.is_kernel:
            raise fl.unsupported(inst, f"{what} inside a device function that was not inlined")
        number = len(self.plan.sync_points) + 1
        self.plan.sync_points[number] = SyncPoint(number, inst, source_line(self.module, inst.pos))
        return number

    # --- helpers for waits.py ---------------------------------------------------------------

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


def source_line(module: ir.Module, pos: int) -> int:
    location = module.location(pos)
    return location.line if location else 0


def intrinsic(llmod: ll.Module, name: str, ret, args) -> ll.Function:
    existing = llmod.globals.get(name)
    if existing is not None:
        return existing
    return ll.Function(llmod, ll.FunctionType(ret, args), name)


def check_function(llmod: ll.Module) -> ll.Function:
    """i1 check(ctx, address, size, site): whether [address, address+size) lies inside the
    live frames of the worker's local stack (local_stack.py: not remembered, as the frames
    change) or inside one entry of the launch's allocation table (pairs of i64 start, end,
    sorted by start), found by binary search; on success the entry is remembered in the
    access site's cache slot."""
    existing = llmod.globals.get("ptxport.check")
    if existing is not None:
        return existing
    fn = ll.Function(llmod, ll.FunctionType(ll.IntType(1), [PTR, I64, I64, PTR]),
                     "ptxport.check")
    fn.linkage = "internal"
    fn.attributes.add("noinline")
    ctx, address, size, site = fn.args
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    _accept_local_stack(fn, b, ctx, address, size)
    table = b.load(b.gep(ctx, [I64(CTX.fields["alloc_table"])], source_etype=I8), typ=PTR)
    count = b.zext(b.load(b.gep(ctx, [I64(CTX.fields["alloc_count"])], source_etype=I8),
                          typ=I32), I64)
    lo = search_allocations(fn, b, table, 0, count, address, ("head", "body", "done"),
                            ("lo", "hi"))
    candidate, outside = fn.append_basic_block("candidate"), fn.append_basic_block("outside")
    b.cbranch(b.icmp_unsigned(">", lo, I64(0)), candidate, outside)
    b.position_at_end(outside)
    b.ret(ll.Constant(ll.IntType(1), 0))
    b.position_at_end(candidate)
    start = b.load(b.gep(table, [b.sub(b.mul(lo, I64(2)), I64(2))], source_etype=I64), typ=I64)
    end = b.load(b.gep(table, [b.sub(b.mul(lo, I64(2)), I64(1))], source_etype=I64), typ=I64)
    last = b.add(address, size)
    ok = b.and_(b.icmp_unsigned("<=", last, end), b.icmp_unsigned(">=", last, address))
    remember, checked = fn.append_basic_block("remember"), fn.append_basic_block("checked")
    b.cbranch(ok, remember, checked)
    b.position_at_end(remember)
    b.store(start, site)
    b.store(end, b.gep(site, [I64(8)], source_etype=I8))
    b.branch(checked)
    b.position_at_end(checked)
    b.ret(ok)
    return fn


def _accept_local_stack(fn: ll.Function, b: ll.IRBuilder, ctx, address, size) -> None:
    """Return true from the check function `fn` if the access lies in [local stack start,
    local stack top) (both zero without a local stack: nothing does)."""
    start = b.load(b.gep(ctx, [I64(CTX.fields["local_stack_start"])], source_etype=I8), typ=I64)
    top = b.load(b.gep(ctx, [I64(CTX.fields["local_stack"])], source_etype=I8), typ=I64)
    last = b.add(address, size)
    inside = b.and_(b.icmp_unsigned(">=", address, start),
                    b.and_(b.icmp_unsigned("<=", last, top), b.icmp_unsigned(">=", last, address)))
    accepted, search = fn.append_basic_block("local_stack"), fn.append_basic_block("search")
    b.cbranch(inside, accepted, search)
    b.position_at_end(accepted)
    b.ret(ll.Constant(ll.IntType(1), 1))
    b.position_at_end(search)


def _global_timer(fl: FunctionLowering, llmod: ll.Module) -> ll.Value:
    """Nanoseconds from CLOCK_REALTIME (as %globaltimer counts), via libc's clock_gettime."""
    clock_gettime = intrinsic(llmod, "clock_gettime", I32, [I32, PTR])
    timespec = fl.entry_alloca(ll.ArrayType(I64, 2), "timespec")
    fl.b.call(clock_gettime, [I32(0), timespec])
    seconds = fl.b.load(timespec, typ=I64)
    nanos = fl.b.load(fl.b.gep(timespec, [I64(8)], source_etype=I8), typ=I64)
    return fl.b.add(fl.b.mul(seconds, I64(1_000_000_000)), nanos)
