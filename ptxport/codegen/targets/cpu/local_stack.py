"""Device functions' local memory on the CPU: a stack per worker that generic addresses reach.

A kernel's own .local memory is the tail of its thread's frame (abi.py), inside the memory
the access checks know. A device function that is not inlined runs from its call to its
return without waiting for other threads (module.py inlines those that wait), so each worker
has at most one chain of device-function calls live at a time: their local memory is a stack
per worker, the *local stack*, which the executor places after the worker's frames. The
.local variables of a device function whose address escapes (taken as a value, as for
`cvta.local` and numba's result slots, or read through a generic address) get a place in the
function's frame on that stack; the others stay LLVM stack slots, which LLVM keeps in
registers.

A caller reserves its callee's frame: it moves the stack's top (a field of the block
context) up by the frame's size, checked against the stack's end (a call that would run past
it is reported as a fault and not made: the stack overflow of too deep a recursion), makes
the call and moves the top back; the callee finds its frame just below the top it starts
with. The access checks (target.check_function) accept a generic access inside [stack start,
top), the frames live now, so that an access past the innermost frame is still reported.

PTX's stack memory (alloca, stacksave, stackrestore: .local addresses too) is taken from the
top of the same stack, so that generic addresses reach it as well; a caller's release of its
callee's frame releases what the callee allocated, and a kernel's thread starts with an
empty stack (a function with stack memory never waits, memory.py's _check_stack).

The size of the stack: without recursion or stack memory, the deepest chain of frames the
kernel's calls can make (known when it is compiled, as the CUDA driver sizes a kernel's stack
when its calls are known); otherwise the thread's stack is cudaLimitStackSize bytes (1 KiB,
CUDA's default, unless set: runtime/backends/cpu/stack_limit.py sets the plan's size at each
launch), which the frames of escaping local variables and PTX's stack memory share, as the
frames of a GPU thread share its stack. A function on a cycle of calls with no escaping
local variables takes none of it (as ptxas gives such functions few bytes or none), but its
calls still use the worker's native stack: each call of such a function first checks that
the native stack has not gone NATIVE_STACK_BUDGET bytes below where the kernel's thread
function started (the floor the thread function writes into the block context), and is
otherwise reported as a fault (NATIVE_STACK_FAULT) and not made, so that no recursion
overflows a worker's native stack.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ptxport.codegen.lower import I8, I64, PTR, FunctionLowering, declare
from ptxport.codegen.targets.cpu.abi import NATIVE_STACK_FAULT, STACK_FAULT, align
from ptxport.ir import nodes as ir
from ptxport.ir.analysis import address_taken, calls_of, escaping_locals

__all__ = ["LocalStack", "DEFAULT_STACK_LIMIT", "NATIVE_STACK_BUDGET", "plan_local_stack"]

# cudaLimitStackSize's default (CUDA's: 1 KiB per thread): a thread's stack where the
# kernel's calls may recurse or use stack memory, until the limit is set
DEFAULT_STACK_LIMIT = 1024
# The native stack that calls of recursive device functions may use below the kernel's
# thread function (workers' threads have glibc's default stack, 8 MiB where RLIMIT_STACK is
# 8 MiB, and at least 2 MiB)
NATIVE_STACK_BUDGET = 1 << 20
_FRAME_ALIGN = 16
# PTX's stack memory, which lives on the local stack too
_STACK_MEMORY = frozenset({"alloca", "stacksave", "stackrestore"})


@dataclass
class LocalStack:
    """Where device functions' escaping local variables live on the local stack."""

    # function name -> bytes its frame takes (a multiple of 16; absent: no frame)
    frames: dict[str, int] = field(default_factory=dict)
    # (function name, variable name) -> offset of the variable in its function's frame
    offsets: dict[tuple[str, str], int] = field(default_factory=dict)
    # bytes of a worker's stack (0: no function has a frame or stack memory)
    size: int = 0
    # the stack's size is cudaLimitStackSize's (the calls may recurse or use stack memory)
    from_limit: bool = False
    # the functions (kernel included) with stack memory (alloca, stacksave, stackrestore)
    dynamic: set[str] = field(default_factory=set)
    # the functions on a cycle of calls: their calls check the native stack
    cyclic: set[str] = field(default_factory=set)
    # the kernels' LLVM functions that start their thread with an empty stack
    _emptied: set = field(default_factory=set)

    def variable_pointer(self, target, fl: FunctionLowering, var: ir.Variable):
        """The host pointer of `var` in the frame of the function being lowered (None if
        it has no place there)."""
        offset = self.offsets.get((fl.function.name, var.name))
        if offset is None:
            return None
        top = target.ctx_field(fl, "local_stack", typ=PTR)   # (as the function starts)
        frame = self.frames[fl.function.name]
        return fl.b.gep(top, [I64(offset - frame)], source_etype=I8)

    def call(self, target, fl: FunctionLowering, callee: str, make_call) -> None:
        """`make_call()` with the frame of `callee` reserved around it: the top moves up by
        the frame's size, or, where that passes the stack's end (or, for a function on a
        cycle of calls, where the native stack is past its budget), the call is reported
        as a fault and not made."""
        frame = self.frames.get(callee)
        if frame is None and callee not in self.cyclic:
            make_call()
            return
        calling = fl.llfn.append_basic_block("frame_reserved")
        after = fl.llfn.append_basic_block("frame_released")
        if callee in self.cyclic:
            self._check_native_stack(target, fl, after)
        if frame is None:
            fl.b.branch(calling)
            fl.b.position_at_end(calling)
            make_call()
            fl.b.branch(after)
            fl.b.position_at_end(after)
            return
        slot = target.ctx_slot(fl, "local_stack")
        # (a function with stack memory moves the top itself: where it is now)
        top = fl.b.load(slot, typ=PTR) if fl.function.name in self.dynamic else \
            target.ctx_field(fl, "local_stack", typ=PTR)
        end = target.ctx_field(fl, "local_stack_end", typ=I64)
        raised = fl.b.gep(top, [I64(frame)], source_etype=I8)
        fits = fl.b.icmp_unsigned("<=", fl.b.ptrtoint(raised, I64), end)
        _fault_unless(target, fl, fits, calling, raised, STACK_FAULT, after, "stack_overflow")
        fl.b.store(raised, slot)
        make_call()
        fl.b.store(top, slot)
        fl.b.branch(after)
        fl.b.position_at_end(after)

    def _check_native_stack(self, target, fl: FunctionLowering, after) -> None:
        """Branch to a fault (then to `after`) where the native stack is below the floor
        the kernel's thread function set (enter_kernel); go on in a new block otherwise."""
        sp = fl.b.call(declare(fl.llfn.module, "llvm.stacksave.p0", PTR, []), [])
        floor = fl.b.load(target.ctx_slot(fl, "native_stack_floor"), typ=I64)
        room = fl.b.icmp_unsigned(">=", fl.b.ptrtoint(sp, I64), floor)
        _fault_unless(target, fl, room, fl.llfn.append_basic_block("native_stack_room"), sp,
                      NATIVE_STACK_FAULT, after, "native_stack_overflow")

    def enter_kernel(self, target, fl: FunctionLowering) -> None:
        """At the start of the kernel's thread function (with the builder there): where
        the calls may recurse, the native stack's floor for them (NATIVE_STACK_BUDGET
        below this function's stack)."""
        if not self.cyclic:
            return
        sp = fl.b.call(declare(fl.llfn.module, "llvm.stacksave.p0", PTR, []), [])
        floor = fl.b.sub(fl.b.ptrtoint(sp, I64), I64(NATIVE_STACK_BUDGET))
        fl.b.store(floor, target.ctx_slot(fl, "native_stack_floor"))

    def allocate(self, target, fl: FunctionLowering, size, align: int):
        """`size` (an i64) bytes at the top of the stack, aligned to `align`, for PTX's
        alloca; where they do not fit, a fault (a kernel stops there; a device function
        goes on with the stack's start)."""
        self._empty_in_kernel(target, fl)
        b = fl.b
        slot = target.ctx_slot(fl, "local_stack")
        top = b.ptrtoint(b.load(slot, typ=PTR), I64)
        start = b.and_(b.add(top, I64(align - 1)), I64(-align))
        end = b.add(start, size)
        limit = target.ctx_field(fl, "local_stack_end", typ=I64)
        fits = b.and_(b.icmp_unsigned("<=", end, limit), b.icmp_unsigned(">=", end, start))
        reserved = fl.llfn.append_basic_block("stack_memory")
        overflow = fl.llfn.append_basic_block("stack_memory_overflow")
        b.cbranch(fits, reserved, overflow)
        b.position_at_end(overflow)
        target.fault(fl, b.inttoptr(end, PTR), STACK_FAULT, True)
        fallback = b.block if b.block.terminator is None else None
        b.position_at_end(reserved)
        b.store(b.inttoptr(end, PTR), slot)
        if fallback is None:            # (a kernel stopped at the fault)
            return b.inttoptr(start, PTR)
        done = fl.llfn.append_basic_block("stack_memory_done")
        b.branch(done)
        b.position_at_end(fallback)
        b.branch(done)
        b.position_at_end(done)
        address = b.phi(I64)
        address.add_incoming(start, reserved)
        address.add_incoming(target.ctx_field(fl, "local_stack_start", typ=I64), fallback)
        return b.inttoptr(address, PTR)

    def save(self, target, fl: FunctionLowering):
        """The stack's top now (PTX's stacksave)."""
        self._empty_in_kernel(target, fl)
        return fl.b.load(target.ctx_slot(fl, "local_stack"), typ=PTR)

    def restore(self, target, fl: FunctionLowering, pointer) -> None:
        """Move the stack's top back to `pointer` (PTX's stackrestore)."""
        self._empty_in_kernel(target, fl)
        fl.b.store(pointer, target.ctx_slot(fl, "local_stack"))

    def _empty_in_kernel(self, target, fl: FunctionLowering) -> None:
        """A kernel's stack memory lasts until its thread ends: its thread function starts
        by emptying the stack (such a kernel never waits, so it runs in one call)."""
        if not fl.function.is_kernel or fl.llfn in self._emptied:
            return
        self._emptied.add(fl.llfn)
        with fl.b.goto_entry_block():
            fl.b.position_at_start(fl.entry)
            start = fl.b.load(target.ctx_slot(fl, "local_stack_start"), typ=PTR)
            fl.b.store(start, target.ctx_slot(fl, "local_stack"))


def plan_local_stack(module: ir.Module, kernel: ir.Function,
                     functions: list[ir.Function]) -> LocalStack:
    """The frames of `functions` (the device functions compiled with `kernel`) and the
    stack a worker needs for the kernel's calls."""
    stack = LocalStack()
    defined = [f for f in functions if not f.is_declaration]
    taken = address_taken(module, defined)
    graph = {f.name: sorted({c.name for _, c in calls_of(module, f, taken)
                             if not c.is_declaration})
             for f in [kernel, *defined]}
    cyclic = stack.cyclic = _on_cycles(graph)
    stack.dynamic = {f.name for f in [kernel, *defined]
                     if any(i.opcode in _STACK_MEMORY for i in f.instructions())}
    for f in defined:
        size = 0
        for var in escaping_locals(f):
            size = align(size, max(var.alignment, 1))
            stack.offsets[(f.name, var.name)] = size
            size += max(var.size, 1)
        if size:
            stack.frames[f.name] = align(size, _FRAME_ALIGN)
    if not stack.frames and not stack.dynamic:
        return stack
    stack.from_limit = bool(cyclic or stack.dynamic)
    stack.size = DEFAULT_STACK_LIMIT if stack.from_limit else \
        _deepest(kernel.name, graph, stack.frames)
    return stack


def _on_cycles(graph: dict[str, list[str]]) -> set[str]:
    """The functions of `graph` (name -> callees) that reach themselves."""
    cyclic = set()
    for start in graph:
        seen: set[str] = set()
        todo = list(graph[start])
        while todo:
            name = todo.pop()
            if name == start:
                cyclic.add(start)
                break
            if name not in seen:
                seen.add(name)
                todo.extend(graph.get(name, ()))
    return cyclic


def _deepest(name: str, graph: dict[str, list[str]], frames: dict[str, int],
             memo: dict[str, int] | None = None) -> int:
    """The most stack a call chain from `name` (a graph without cycles) takes, not counting
    `name`'s own frame."""
    memo = {} if memo is None else memo
    if name not in memo:
        memo[name] = max((frames.get(c, 0) + _deepest(c, graph, frames, memo)
                          for c in graph.get(name, ())), default=0)
    return memo[name]


def _fault_unless(target, fl: FunctionLowering, ok, go_on, address, fault: int, after,
                  name: str) -> None:
    """Go on in block `go_on` where `ok`; else fault (`fault` at `address`) and then branch
    to `after`. The builder ends at the start of `go_on`."""
    overflow = fl.llfn.append_basic_block(name)
    fl.b.cbranch(ok, go_on, overflow)
    fl.b.position_at_end(overflow)
    target.fault(fl, address, fault, True)
    if fl.b.block.terminator is None:
        fl.b.branch(after)
    fl.b.position_at_end(go_on)
