"""The CPU target's binary interface: the block context and thread frame layouts, the
statuses and fault codes compiled code returns, and a kernel's plan (what the executor needs
besides the object code; stored with it in the kernel's image).

Memory: global and const addresses are host addresses. Shared memory is a per-block window;
a shared address is an offset into it (as PTX's 32-bit shared addresses are), and cvta adds
the window's base. Local memory likewise is an offset into the thread's local area, which is
the tail of its frame (so it survives barriers); a device function's local memory that a
generic address may reach is on the worker's local stack (local_stack.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from llvmlite import ir as ll

from ptxport.codegen import ops  # noqa: F401  (registers the lowerings)
from ptxport.codegen.lower import value_type
from ptxport.codegen.targets.cpu.image import stored
from ptxport.ir import nodes as ir
from ptxport.ir.lines import LineTable


@dataclass(frozen=True)
class Layout:
    """Byte offsets of a struct's fields."""

    fields: dict[str, int]
    size: int


# The block context every thread of a block shares.
CTX = Layout({"params": 0, "shared": 8, "ntid": 16, "ctaid": 28, "nctaid": 40,
               "nwarpid": 52, "dynamic_smem": 56, "smid": 60, "nsmid": 64,
               "total_smem": 68, "alloc_table": 72, "alloc_count": 80, "checks": 84,
               "site_cache": 104, "stop": 112, "grid_workspace": 120,
               "fault_address": 88, "fault_info": 96, "scratch": 128,
               # device functions' local stack (local_stack.py): the end of the innermost
               # frame, the stack's start and its end
               "local_stack": 384, "local_stack_start": 392, "local_stack_end": 400,
               # the lowest native stack address calls of recursive functions may start at
               "native_stack_floor": 408}, 416)
# The start of each thread's frame; registers and local memory follow.
FRAME = Layout({"tid": 0, "laneid": 12, "warpid": 16,
                 "in0": 24, "in1": 32, "in2": 40, "in3": 48, "out0": 56, "out1": 64,
                 "in4": 72, "in5": 80}, 96)

# Statuses run_threads leaves for each thread.
RUNNABLE, BLOCKED, EXITED, TRAPPED = 0, 1, 2, 3
# A plan's line table (ir/lines.py, plain data) is stored in kernel images with the plan.
stored(LineTable)

# What the thread function returns when it stopped at an access outside every allocation.
FAULTED = -(1 << 24)
# The access size a fault records for a call through an address that is no function.
CALL_FAULT = 0x7FFF
# ... and for a device free of an address that is no live allocation of the heap.
FREE_FAULT = 0x7FFE
# ... and for a call whose callee's local memory does not fit on the local stack.
STACK_FAULT = 0x7FFD
# ... and for a call of a recursive function past the native stack's budget (local_stack.py).
NATIVE_STACK_FAULT = 0x7FFC


@stored
@dataclass
class SyncPoint:
    """Where a thread waits: the instruction, and what the executor needs to complete it."""

    number: int
    inst: ir.Instruction
    line: int


@stored
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
    # warp gangs (codegen/targets/cpu/gang/): frames are per warp, 32 * frame_size bytes each
    gang: bool = False
    # calls device malloc or free: the device heap is reserved before its launches
    uses_heap: bool = False
    # bytes of each worker's stack for device functions' local memory (local_stack.py)
    local_stack: int = 0
    # that stack is cudaLimitStackSize's (the calls may recurse or use stack memory): the
    # cpu backend sets local_stack to the limit at each launch
    stack_from_limit: bool = False

    def frame_slot(self, reg: ir.Register) -> int:
        """The frame offset where `reg` is saved across waits (allocated on first use; the
        frame grows)."""
        offset = self.register_offsets.get(reg.name)
        if offset is None:
            typ = value_type(reg.type)
            size = typ.width // 8 if isinstance(typ, ll.IntType) else max(reg.type.size, 1)
            size = max(size, 1) * (reg.vector or 1)
            offset = align(self.frame_size, min(size, 8))
            self.register_offsets[reg.name] = offset
            self.frame_size = offset + size
        return offset


def align(n: int, a: int) -> int:
    return (n + a - 1) // a * a
