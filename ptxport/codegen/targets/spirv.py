"""The SPIR-V target: IR -> LLVM IR for spirv64 (OpenCL kernel environment) -> SPIR-V, through
LLVM's SPIR-V backend; the opencl backend (runtime/backends/opencl.py) runs it.

The shared lowering (lower.py, ops/) computes every instruction's exact PTX meaning; what
this file adds is where a CUDA thread's world comes from in OpenCL:
- special registers are OpenCL built-ins (get_local_id, get_group_id, get_sub_group_local_id,
  ...), which LLVM's SPIR-V backend turns into SPIR-V built-in variables;
- a warp is a sub-group of 32 work-items (`intel_reqd_sub_group_size` 32 on every kernel
  that uses warp semantics); shfl is `sub_group_shuffle` (cl_khr_subgroup_shuffle) with PTX's
  lane arithmetic done here, and vote/ballot/redux/match are reductions built from shuffles,
  so that only one extension is needed;
- bar.sync is `barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)`; bar.red uses the
  work-group collectives of OpenCL 2.0.

Address spaces (LLVM's SPIR-V convention): private 0, global 1, constant 2, local 3 (CUDA's
shared memory), generic 4. Addresses keep PTX's meaning:
- global and generic addresses are generic addresses (.global/.const variables live in
  the module's variable block, global memory, so that a generic pointer may reach them);
- the CTA's shared memory is one `local` buffer, a kernel argument the runtime sizes (static
  variables at fixed offsets, then the dynamic `extern .shared` part), and a shared address is
  the offset into it; `space_base("shared")` is its generic address;
- .local variables are private allocas, addressed generically.

Every global, const, generic and shared access is checked (spirv_checks.py; a bad one is
skipped and reported after the launch). CUDA's assert (a call of `__assertfail`) prints
CUDA's text, is recorded like a bad access and returns (spirv_assert.py).

The kernel ABI (what KernelLayout describes to the backend): `(global i8 *params,
local i8 *shared, uint shared_bytes, global i64 *checks, global i8 *variables,
global i8 *base_0, ..., global i8 *base_k)`; `checks` is the launch's bounds-checks buffer,
`variables` the module's variable block (its .global and .const variables, spirv_globals.py;
device functions get it as a hidden parameter, before the checks' two). `params` holds
the PTX parameter buffer (ir.abi.param_layout), copied into private memory at entry. Every
8-byte parameter slot k may hold a device address: the runtime passes the cl.Buffer it lies
in as base_k and the offset into it in the slot; where base_k is NULL the slot holds a plain
64-bit value. On devices with shared virtual memory every base_k is NULL: a device address is
the SVM pointer itself, valid as it is wherever the kernel finds it.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from llvmlite import ir as ll

from ptxport.codegen import ops  # noqa: F401  (registers the lowerings)
from ptxport.codegen.device_runtime import refusal
from ptxport.codegen.lower import I8, I32, I64, FunctionLowering, const_int, counter_word
from ptxport.codegen.ops import atomic
from ptxport.codegen.ops.data import state_space, vector_count
from ptxport.codegen.targets import spirv_assert, spirv_checks, spirv_heap
from ptxport.codegen.targets.gpu import (
    GpuLowering,
    GpuTarget,
    declare_functions,
    function_numbers,
    lower_device_function,
    lower_return,
    opaque_variable,
    parse_verified,
)
from ptxport.codegen.targets.gpu_mma import MATRIX_LOWERINGS
from ptxport.codegen.targets.gpu_wmma import lower_wmma
from ptxport.codegen.targets.spirv_globals import ModuleVariables, module_variables
from ptxport.errors import CompileError, UnsupportedFeatureError
from ptxport.ir import nodes as ir
from ptxport.ir.abi import param_layout
from ptxport.ir.analysis import escaping_locals, recursive_call
from ptxport.ir.special_registers import ZERO_WITHOUT_DRIVER
from ptxport.ir.types import TYPES
from ptxport.passes.inline import functions_that, inline_calls, uses_shared_memory

__all__ = ["KernelLayout", "build_llvm", "compile_module", "unsupported_instructions",
           "variable_block", "TRIPLE"]

TRIPLE = "spirv64-unknown-unknown"
PRIVATE, GLOBAL, CONSTANT, LOCAL, GENERIC = 0, 1, 2, 3, 4
_SPACE_OF = {"global": GLOBAL, "const": GLOBAL, "shared": LOCAL}
WARP = 32
# The kernel's arguments: params, shared, shared_bytes, checks, the module's variable block,
# then one base per pointer slot.
_CHECKS, _VARIABLES, _FIRST_BASE = 3, 4, 5
# barrier() flags: CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE
_BOTH_FENCES = 3


def _ptr(addrspace: int) -> ll.PointerType:
    return ll.PointerType(addrspace=addrspace)


# Why mbarrier waits are refused: a waiting thread spins until others arrive.
_NO_SPINNING = ("waiting on an mbarrier: OpenCL does not promise that the work-items of a "
                "work-group make progress while one spins (Intel's CPU runtime runs them in "
                "turn), so the waiting thread could spin forever")


@dataclass(frozen=True)
class KernelLayout:
    """What the runtime needs to call a compiled kernel: the parameter buffer's size, the
    offsets of the 8-byte slots that get a buffer argument each, the static shared bytes
    (the dynamic part starts there), whether the kernel needs 32-wide sub-groups, and
    whether its module calls printf (`prints`), passing it doubles
    (`prints_doubles`, which needs a device with fp64), the module's asserts by number
    (`assertions`, spirv_assert.py), whether it takes ballots of a warp's lanes
    (`needs_ballot`: cl_khr_subgroup_ballot), and whether its module calls malloc or free
    (`uses_heap`: the launch gives it the device heap, spirv_heap.py), whether its
    module reads %globaltimer (`reads_timer`: the launch gives it the clock's calibration),
    and whether it reads the device clock at all, %clock or %globaltimer (`reads_clock`:
    cl_khr_kernel_clock)."""

    name: str
    params_size: int
    pointer_slots: tuple[int, ...]
    static_shared: int
    needs_warp: bool
    prints: bool = False
    prints_doubles: bool = False
    assertions: tuple[spirv_assert.Assertion, ...] = ()
    needs_ballot: bool = False
    uses_heap: bool = False
    reads_timer: bool = False
    reads_clock: bool = False


# --- the function lowering --------------------------------------------------------------------

class SpirvLowering(GpuLowering):
    """GpuLowering with pointers in their state space's address space (through the generic
    one, as SPIR-V casts), and the CTA's shared memory a kernel argument."""

    target_name = "spirv"
    opaque_reason = "texture, sampler and surface references have no SPIR-V form in ptxport"
    shared: ll.Value | None = None        # local i8*: the CTA's shared memory
    shared_bytes: ll.Value | None = None  # its size (static + dynamic), i32
    # Bounds checks (spirv_checks.py): the launch's checks buffer, this function's node, and
    # in kernels the parameter slots' allocations
    checks: ll.Value | None = None
    check_node: ll.Value | None = None
    slot_ranges: list = []
    block_window: list = []
    windows: list = []
    variable_block: ll.Value | None = None   # global i8*: the module's variables

    def _lower_instruction(self, inst: ir.Instruction) -> None:
        start, count, blocks = self.b.block, len(self.b.block.instructions), \
            len(self.llfn.blocks)
        super()._lower_instruction(inst)
        if not self.target.find_wide:
            return
        made = start.instructions[count:] + [i for block in self.llfn.blocks[blocks:]
                                             for i in block.instructions]
        if any(_too_wide(i) for i in made):
            raise self.unsupported(inst, "its exact PTX meaning is computed with 128-bit "
                                         "comparisons, which LLVM's SPIR-V backend cannot "
                                         "select")

    def lowering_for(self, inst: ir.Instruction):
        lower = _OWN_LOWERINGS.get(inst.opcode) or super().lowering_for(inst)
        if lower is None or not self.target.bounds_checks:
            return lower
        return spirv_checks.checked(lower)

    def variable_in(self, var: ir.Variable, space: str | None) -> ll.Value:
        pointer = self.target.own_pointer(self, var)
        wanted = _SPACE_OF.get(space, GENERIC)
        if pointer.type.addrspace != wanted:
            pointer = self.b.addrspacecast(pointer, _ptr(GENERIC))
            if wanted != GENERIC:
                pointer = self.b.addrspacecast(pointer, _ptr(wanted))
        return pointer

    def address_in(self, address: ll.Value, space: str | None) -> ll.Value:
        if space == "shared":
            return self.b.gep(self.target.shared_pointer(self), [address], source_etype=I8)
        if space == "param":
            base = self.target.space_base(self, "param")
            if base is None:    # a device function's parameters are not one window
                raise self.unsupported(self.inst, "a .param address held in a register "
                                                  "inside a device function")
            return self.b.gep(base, [address], source_etype=I8)
        return self.b.inttoptr(address, _ptr(_SPACE_OF.get(space, GENERIC)))


def _too_wide(inst: ll.Instruction) -> bool:
    """A comparison of integers wider than 64 bits: what LLVM's SPIR-V backend cannot
    legalize (wider arithmetic it does, with SPV_ALTERA_arbitrary_precision_integers)."""
    if not isinstance(inst, ll.instructions.ICMPInstr):
        return False
    return any(isinstance(o.type, ll.IntType) and o.type.width > 64 for o in inst.operands)


def _exit(fl: SpirvLowering, inst: ir.Instruction) -> None:
    if not fl.function.is_kernel:
        raise fl.unsupported(inst, "exit in a device function: OpenCL can only return")
    lower_return(fl, inst)


def _alloca(fl: SpirvLowering, inst: ir.Instruction) -> None:
    """alloca.u64 ptr, size{, align}: private memory, addressed generically."""
    size = fl.read(inst.operands[1], "u64")
    memory = fl.b.alloca(I8, size=size)
    memory.align = inst.operands[2].value if len(inst.operands) > 2 else 8
    memory.type = _ptr(PRIVATE)
    generic = fl.b.addrspacecast(memory, _ptr(GENERIC))
    fl.write(inst.operands[0], fl.b.ptrtoint(generic, I64), "u64")


def _no_stack(fl: SpirvLowering, inst: ir.Instruction) -> None:
    raise fl.unsupported(inst, "SPIR-V for OpenCL cannot save and restore the stack")


def _atom(fl: SpirvLowering, inst: ir.Instruction) -> None:
    """atom/red: the shared lowering, but inc and dec (LLVM's uinc_wrap/udec_wrap, which the
    SPIR-V backend cannot select) as compare-and-swap loops with PTX's definitions."""
    op = inst.spec.get("op")
    if op not in ("inc", "dec") or vector_count(inst) != 1:
        atomic.atom(fl, inst)
        return
    b = fl.b
    t = TYPES[inst.spec.types[-1]]
    operands = list(inst.operands)
    dest = operands.pop(0) if inst.opcode == "atom" else None
    pointer = fl.pointer(operands[0], state_space(inst))
    limit = fl.read(operands[1], t)
    zero, one = ll.Constant(limit.type, 0), ll.Constant(limit.type, 1)

    def compute(old: ll.Value) -> ll.Value:
        if op == "inc":
            return b.select(b.icmp_unsigned(">=", old, limit), zero, b.add(old, one))
        wraps = b.or_(b.icmp_unsigned("==", old, zero), b.icmp_unsigned(">", old, limit))
        return b.select(wraps, limit, b.sub(old, one))

    old = atomic.cas_loop(fl, pointer, limit.type, compute,
                           atomic.ORDERING[inst.spec.get("sem")])
    if dest is not None:
        fl.write(dest, old, t)


_OWN_LOWERINGS = {"ret": lower_return, "exit": _exit, "alloca": _alloca, "atom": _atom,
                  "red": _atom, "stacksave": _no_stack, "stackrestore": _no_stack,
                  "wmma": lower_wmma, **MATRIX_LOWERINGS}


# --- the target ---------------------------------------------------------------------------

# PTX special register -> the OpenCL built-in (mangled, taking the dimension) that gives it.
_DIMENSIONED = {"%tid": "_Z12get_local_idj", "%ntid": "_Z14get_local_sizej",
                "%ctaid": "_Z12get_group_idj", "%nctaid": "_Z14get_num_groupsj"}
_SUB_GROUP = {"%laneid": "_Z22get_sub_group_local_idv", "%warpid": "_Z16get_sub_group_idv",
              "%nwarpid": "_Z18get_num_sub_groupsv"}
_LANEMASKS = ("%lanemask_eq", "%lanemask_le", "%lanemask_lt", "%lanemask_ge", "%lanemask_gt")
_CLOCKS = frozenset(("%clock", "%clock64", "%clock_hi"))
_TIMERS = frozenset(("%globaltimer", "%globaltimer_lo", "%globaltimer_hi"))
_WARP_REGISTERS = frozenset(_SUB_GROUP) | frozenset(_LANEMASKS)
_REDUCE_OPS = {"add": "add", "and": "and", "or": "or", "xor": "xor", "min": "min",
               "max": "max"}


class SpirvTarget(GpuTarget):
    name = "spirv"
    # LLVM's SPIR-V backend computes with wider integers (SPV_ALTERA_arbitrary_precision_
    # integers) but aborts on a constant of more than 64 significant bits, which LLVM folds
    # out of a 64-bit mul.hi by a constant (an APInt that getZExtValue refuses)
    widest_integer = 64
    no_function = "whose parameters SPIR-V cannot pass"
    function_convention = "spir_func"

    def __init__(self, module: ir.Module, llmod: ll.Module, functions: dict[str, ll.Function]):
        super().__init__(module, llmod, {}, functions)
        # the shared buffer of the kernel being lowered (_shared_offsets)
        self.shared_offsets: dict[str, int] = {"": 0}
        self.variables: ModuleVariables = module_variables(module, self.function_numbers)
        self.uses_warp = False
        self.uses_ballot = False   # sub_group_ballot (spirv_warp.active_lanes)
        self.reads_timer = False   # %globaltimer (_global_timer)
        self.reads_clock = False   # %clock* or %globaltimer: cl_khr_kernel_clock
        # Report the first comparison wider than 64 bits (after LLVM failed on one: most
        # are optimized away, so they are not refused up front).
        self.find_wide = False
        self.bounds_checks = True     # check memory accesses (spirv_checks.py)
        self.prints = self.prints_doubles = False      # printf (spirv_printf.py)
        self.printf_tracers: dict[int, object] = {}   # by id(function)
        self._strings: dict[bytes, ll.GlobalVariable] = {}
        self.assertions: list[spirv_assert.Assertion] = []     # spirv_assert.py
        self.asserting = spirv_assert.asserting_functions(module)

    def builtin(self, name: str, ret: ll.Type, args: list, convergent: bool = False):
        fn = self.llmod.globals.get(name)
        if fn is None:
            fn = ll.Function(self.llmod, ll.FunctionType(ret, args), name)
            fn.calling_convention = "spir_func"
            if convergent:
                fn.attributes.add("convergent")
        return fn

    def call_builtin(self, fl: FunctionLowering, name: str, ret: ll.Type, args: list,
                     convergent: bool = False) -> ll.Value:
        fn = self.builtin(name, ret, [a.type for a in args], convergent)
        return fl.b.call(fn, args, cconv="spir_func")

    # --- values ------------------------------------------------------------------------------

    def special_register(self, fl: FunctionLowering, reg: ir.SpecialRegister) -> ll.Value:
        t = reg.type
        want = ll.IntType(t.bits)
        if reg.name in _DIMENSIONED:
            if reg.component == "w" or not reg.component:
                return const_int(want, 0)
            value = self.call_builtin(fl, _DIMENSIONED[reg.name], I64,
                                      [I32("xyz".index(reg.component))])
            return fl.b.trunc(value, want) if want.width < 64 else value
        if reg.name in _WARP_REGISTERS:
            self.uses_warp = True
        if reg.name in _SUB_GROUP:
            return _fit(fl, self.call_builtin(fl, _SUB_GROUP[reg.name], I32, []), want)
        if reg.name in _LANEMASKS:
            return _fit(fl, _lanemask(fl, reg.name[len("%lanemask_"):], self.lane(fl)), want)
        if reg.name in ("%total_smem_size", "%dynamic_smem_size"):
            total = fl.shared_bytes if fl.shared_bytes is not None else I32(0)
            if reg.name == "%dynamic_smem_size":
                total = fl.b.sub(total, I32(self.static_shared))
            return _fit(fl, total, want)
        if reg.name in _CLOCKS:  # cl_khr_kernel_clock (SPV_KHR_shader_clock)
            self.reads_clock = True
            counter = self.call_builtin(fl, "_Z17clock_read_devicev", I64, [])
            return _fit(fl, counter_word(fl.b, counter, reg.name), want)
        if reg.name in _TIMERS:
            self.reads_timer = self.reads_clock = True
            return _fit(fl, counter_word(fl.b, _global_timer(self, fl), reg.name), want)
        if reg.name in ZERO_WITHOUT_DRIVER:
            return const_int(want, 0)
        raise fl.unsupported(fl.inst, f"the special register {reg.text}: OpenCL has no "
                                      "equivalent")

    def hidden_arguments(self, fl: FunctionLowering) -> list[ll.Value]:
        return [fl.variable_block, fl.checks, fl.check_node]

    def enter_function(self, fl: FunctionLowering) -> None:
        fl.variable_block = fl.llfn.args[-3]
        spirv_checks.enter_device_function(fl)

    def poll(self, fl: FunctionLowering, inst: ir.Instruction, test) -> ll.Value:
        raise fl.unsupported(inst, _NO_SPINNING)

    def wait_until(self, fl: FunctionLowering, inst: ir.Instruction, test) -> None:
        raise fl.unsupported(inst, _NO_SPINNING)

    def lane(self, fl: FunctionLowering) -> ll.Value:
        self.uses_warp = True
        return self.call_builtin(fl, "_Z22get_sub_group_local_idv", I32, [])

    def read_lane(self, fl: FunctionLowering, value: ll.Value, lane: ll.Value) -> ll.Value:
        """`value` as work-item `lane` of the sub-group holds it (for gpu_wmma)."""
        from ptxport.codegen.targets import spirv_warp

        return spirv_warp.shuffle(self, fl, value, lane)

    @property
    def static_shared(self) -> int:
        return self.shared_offsets.get("", 0)

    def shared_pointer(self, fl: FunctionLowering) -> ll.Value:
        if fl.shared is None:
            raise fl.unsupported(fl.inst, "shared memory in a device function: OpenCL gives "
                                          "local memory to kernels only")
        return fl.shared

    def space_base(self, fl: FunctionLowering, space: str | None):
        if space == "shared":
            return fl.b.addrspacecast(self.shared_pointer(fl), _ptr(GENERIC))
        if space == "param" and fl.function.is_kernel and fl.param_buffer is not None:
            return fl.b.addrspacecast(fl.param_buffer, _ptr(GENERIC))
        return None

    def own_pointer(self, fl: FunctionLowering, var: ir.Variable) -> ll.Value:
        """A variable's storage in its own address space."""
        if var.space == "shared":
            offset = self.shared_offsets.get(var.name)
            if offset is None:
                raise fl.unsupported(fl.inst, f"the .shared variable '{var.name}'")
            return fl.b.gep(self.shared_pointer(fl), [I64(offset)], source_etype=I8)
        if var.space in ("global", "const"):
            found = self.variables.offsets.get(var.name)
            if found is None:
                raise fl.unsupported(fl.inst, f"the .{var.space} variable '{var.name}' "
                                              "(texture, sampler and surface references "
                                              "have no OpenCL equivalent here)")
            return fl.b.gep(fl.variable_block, [I64(found[0])], source_etype=I8)
        return fl.frame_variable(var)

    def variable_pointer(self, fl: FunctionLowering, var: ir.Variable) -> ll.Value:
        """A generic pointer to the variable (its address is the generic address, or for
        shared ones the offset into the shared buffer once space_base is subtracted)."""
        pointer = self.own_pointer(fl, var)
        return pointer if pointer.type.addrspace == GENERIC else \
            fl.b.addrspacecast(pointer, _ptr(GENERIC))

    # --- control -----------------------------------------------------------------------------

    def exit(self, fl: FunctionLowering) -> None:
        _exit(fl, fl.inst)

    def trap(self, fl: FunctionLowering, inst: ir.Instruction) -> None:
        """OpenCL cannot abort a kernel: the work-item records the trap and returns
        (spirv_assert.lower_trap)."""
        spirv_assert.lower_trap(fl, inst)

    def call_of_no_function(self, fl: FunctionLowering, inst: ir.Instruction) -> None:
        """Undefined in PTX; OpenCL cannot abort the kernel, so the call does nothing."""

    def call(self, fl, inst, callee: ir.Function, returns: list, args: list) -> None:
        if callee.is_declaration:
            if callee.name == "__assertfail":
                spirv_assert.lower_assertfail(self, fl, inst, list(args))
                return
            if callee.name in ("malloc", "free"):
                heap = fl.b.load(fl.b.gep(fl.checks, [I64(spirv_checks.CHECKS_HEAP)],
                                          source_etype=I64), typ=I64)
                spirv_heap.lower_call(fl, inst, callee.name, heap, list(returns), list(args))
                return
            if callee.name != "vprintf":
                raise fl.unsupported(inst, refusal(callee.name)
                                     or f"a call of the external '{callee.name}'")
            from ptxport.codegen.targets import spirv_printf

            spirv_printf.lower_vprintf(self, fl, inst, list(returns), list(args))
            return
        super().call(fl, inst, callee, returns, args)
        if callee.name in self.asserting:   # the stop of a failed assert goes on up
            spirv_assert.stop_if_asserted(fl)

    # --- printf (spirv_printf.py) --------------------------------------------------------------

    def printf(self, fl: FunctionLowering) -> ll.Function:
        """OpenCL C's `int printf(constant char *format, ...)`."""
        fn = self.llmod.globals.get("printf")
        if fn is None:
            fn = ll.Function(self.llmod, ll.FunctionType(I32, [_ptr(CONSTANT)], var_arg=True),
                             "printf")
            fn.calling_convention = "spir_func"
        elif not (isinstance(fn, ll.Function) and fn.function_type.var_arg):
            raise fl.unsupported(fl.inst, "the module's own function 'printf' has the name "
                                          "of OpenCL's printf, which SPIR-V needs for this "
                                          "call")
        return fn

    def constant_string(self, text: bytes) -> ll.GlobalVariable:
        """A NUL-terminated string in the constant address space (one per text)."""
        g = self._strings.get(text)
        if g is None:
            typ = ll.ArrayType(I8, len(text) + 1)
            g = ll.GlobalVariable(self.llmod, typ, self.llmod.get_unique_name("printf.format"),
                                  addrspace=CONSTANT)
            g.type = _ptr(CONSTANT)
            g.initializer = ll.Constant(typ, bytearray(text + b"\0"))
            g.global_constant, g.unnamed_addr, g.linkage, g.align = True, True, "private", 1
            self._strings[text] = g
        return g

    # --- barriers and warp operations ----------------------------------------------------------

    def synchronize(self, fl: FunctionLowering, inst: ir.Instruction) -> None:
        from ptxport.codegen.targets import spirv_warp

        spirv_warp.synchronize(self, fl, inst)


def _fit(fl: FunctionLowering, value: ll.Value, want: ll.IntType) -> ll.Value:
    if value.type.width == want.width:
        return value
    if value.type.width > want.width:
        return fl.b.trunc(value, want)
    return fl.b.zext(value, want)


def _global_timer(target: SpirvTarget, fl: FunctionLowering) -> ll.Value:
    """%globaltimer (nanoseconds since the Unix epoch, as NVIDIA's driver sets it): the device
    clock (cl_khr_kernel_clock) mapped by the calibration the launch's checks buffer holds
    (CHECKS_TIMER: the host's nanoseconds and the clock at one moment, nanoseconds per tick
    in 32.32 fixed point; runtime/backends/opencl_timer.py)."""
    counter = target.call_builtin(fl, "_Z17clock_read_devicev", I64, [])
    base_ns, base_clock, per_tick = (
        fl.b.load(fl.b.gep(fl.checks, [I64(spirv_checks.CHECKS_TIMER + i)], source_etype=I64),
                  typ=I64) for i in range(3))
    wide = ll.IntType(128)
    ticks = fl.b.zext(fl.b.sub(counter, base_clock), wide)
    elapsed = fl.b.lshr(fl.b.mul(ticks, fl.b.zext(per_tick, wide)), ll.Constant(wide, 32))
    return fl.b.add(base_ns, fl.b.trunc(elapsed, I64))


def _lanemask(fl: FunctionLowering, kind: str, lane: ll.Value) -> ll.Value:
    b = fl.b
    bit = b.shl(I32(1), lane)
    if kind == "eq":
        return bit
    below = b.sub(bit, I32(1))
    return {"lt": below, "le": b.or_(below, bit), "ge": b.not_(below),
            "gt": b.not_(b.or_(below, bit))}[kind]


# --- module-level lowering ----------------------------------------------------------------------

def _check_variables(module: ir.Module, collecting: bool) -> None:
    """.global and .const variables live in the module's variable block (spirv_globals.py);
    those SPIR-V cannot have are refused here, or left to the instructions using them when
    `collecting`."""
    for var in module.globals.values():
        if var.space not in ("global", "const") or opaque_variable(
                module, var, "spirv", "texture, sampler and surface references", collecting):
            continue
        if var.is_extern and not collecting:
            raise UnsupportedFeatureError(f".extern .{var.space} {var.name}", "spirv",
                                          module.location(var.pos),
                                          "SPIR-V modules are not linked with others")


def _refuse_recursion(module: ir.Module, problems: list | None) -> None:
    """OpenCL C forbids recursion (OpenCL C 6.9), and OpenCL runtimes need not compile it:
    Intel's CPU runtime runs plain recursive functions (tests/programs/cpp_features'), but
    crashed the process (in its compiler) on numba's recursive functions, which pass their
    results through generic addresses of local memory. So a cycle of calls reachable from a
    function whose local variables' addresses escape (every device function is compiled
    into the one module) is refused at the call that closes it (or, `problems` being a list,
    noted there); plain recursion is left to the runtime."""
    escaping = [f for f in module.functions.values()
                if not f.is_declaration and escaping_locals(f)]
    found = recursive_call(module, escaping) if escaping else None
    if found is None:
        return
    inst, caller, callee = found
    again = "it calls itself" if caller is callee else f"called again through '{caller.name}'"
    reason = (f"recursive device function '{callee.name}' ({again}): "
              "OpenCL kernels may not recurse; write the recursion as a loop")
    if problems is not None:
        problems.append((inst, reason))
        return
    raise UnsupportedFeatureError(inst.spec.text, "spirv", module.location(inst.pos), reason,
                                  module.source_line(inst.pos))


def _shared_offsets(module: ir.Module, kernel: ir.Function) -> dict[str, int]:
    """Offsets in the kernel's shared buffer for the .shared variables it uses (`kernel` with
    the functions that name shared memory inlined: its own and the module's that its
    instructions name; static ones in declaration order, each aligned; "" holds the static
    total, where the dynamic `extern .shared` arrays start). Only those: a module's kernels
    together may declare more shared memory than one work-group has."""
    named: dict[str, ir.Variable] = {}   # in the order the instructions name them
    for inst in kernel.instructions():
        for operand in inst.operands:
            named.update((v.name, v) for v in _shared_variables(operand))
    variables = [v for v in module.globals.values() if v.space == "shared" and v.name in named]
    variables += [v for v in kernel.variables.values() if v.space == "shared"]
    variables += named.values()     # (a function's own, inlined into the kernel)
    offsets: dict[str, int] = {}
    size, dynamic = 0, []
    for var in variables:
        if var.name in offsets:
            continue
        if var.unsized or var.is_extern:
            dynamic.append(var)
            offsets[var.name] = -1
            continue
        align = max(var.alignment, 1)
        size = (size + align - 1) // align * align
        offsets[var.name] = size
        size += var.size
    static = (size + 15) // 16 * 16
    for var in dynamic:
        offsets[var.name] = static
    offsets[""] = static
    return offsets


def _shared_variables(operand) -> list[ir.Variable]:
    """The .shared variables an operand names."""
    if isinstance(operand, ir.Variable):
        return [operand] if operand.space == "shared" else []
    if isinstance(operand, ir.Address):
        return _shared_variables(operand.base)
    if isinstance(operand, ir.SymbolAddress):
        return _shared_variables(operand.target)
    if isinstance(operand, ir.VectorValue | ir.ListValue):
        return [v for e in operand.elements for v in _shared_variables(e)]
    return []


def _uses_warp(function: ir.Function) -> bool:
    warp_ops = ("shfl", "vote", "match", "redux", "activemask", "elect", "wmma", *MATRIX_LOWERINGS)
    for inst in function.instructions():
        if inst.opcode in warp_ops or (inst.opcode == "bar" and inst.spec.has("warp")):
            return True
        for operand in inst.operands:
            if isinstance(operand, ir.SpecialRegister) and operand.name in _WARP_REGISTERS:
                return True
    return False


def build_llvm(module: ir.Module, problems: list | None = None,
               kernels: list[str] | None = None, find_wide: bool = False,
               bounds_checks: bool = True) -> tuple[ll.Module, dict[str, KernelLayout]]:
    """The LLVM module (spirv64) of the named kernels (all without `kernels`) and every
    device function of `module`, and each kernel's layout. With `problems` (a list), what
    the target cannot compile is collected there instead of raising. `bounds_checks`:
    whether memory accesses are checked (spirv_checks.py); the kernel ABI is the same
    either way."""
    llmod = ll.Module(name="ptxport.spirv")
    llmod.triple = TRIPLE
    _check_variables(module, problems is not None)
    _refuse_recursion(module, problems)
    # OpenCL gives local memory to kernels only: functions that name shared memory run
    # inlined into each kernel that calls them (and are not compiled on their own)
    inlined_only = functions_that(module, uses_shared_memory)
    functions = declare_functions(
        module, llmod, [f for f in module.functions.values()
                        if not (f.is_kernel or f.is_declaration or f.name in inlined_only)],
        SpirvLowering.pass_type, problems, (_ptr(GLOBAL), *spirv_checks.hidden_types()))
    for fn in functions.values():
        fn.calling_convention = "spir_func"
        fn.linkage = "internal"
    target = SpirvTarget(module, llmod, functions)
    target.find_wide, target.bounds_checks = find_wide, bounds_checks
    if bounds_checks:   # before the kernels (see search_function)
        spirv_checks.search_function(llmod)
    heap = spirv_heap.uses_heap(module)
    if heap:
        spirv_heap.define_functions(llmod)
    layouts = {}
    for f in list(module.functions.values()):
        if f.is_declaration or not (f.is_kernel or f.name in functions):
            continue
        if f.is_kernel and kernels is not None and f.name not in kernels:
            continue
        if f.is_kernel:
            layouts[f.name] = _lower_inlined_kernel(module, f, llmod, target, problems,
                                                    inlined_only)
        else:
            lower_device_function(SpirvLowering(module, f, functions[f.name], target),
                                  problems)
    if target.prints or target.assertions or heap or target.reads_clock:
        # (known once every function is lowered)
        layouts = {name: replace(layout, prints=target.prints, uses_heap=heap,
                                 reads_timer=target.reads_timer,
                                 reads_clock=target.reads_clock,
                                 prints_doubles=target.prints_doubles,
                                 assertions=tuple(target.assertions))
                   for name, layout in layouts.items()}
    return llmod, layouts


def _lower_inlined_kernel(module: ir.Module, kernel: ir.Function, llmod: ll.Module,
                          target: SpirvTarget, problems: list | None,
                          inlined_only: set[str]) -> KernelLayout:
    """_lower_kernel of `kernel` with its calls of `inlined_only` inlined; problems are
    reported at the instructions of the module they came from."""
    try:
        inlined = inline_calls(module, kernel, inlined_only, "spirv", "uses shared memory")
    except UnsupportedFeatureError as e:
        if problems is None:
            raise
        problems.append((e.instruction, e.reason))
        return KernelLayout(kernel.name, 0, (), 0, False)
    reported = len(problems) if problems is not None else 0
    layout = _lower_kernel(module, inlined.function, llmod, target, problems)
    if problems is not None:
        problems[reported:] = [(inlined.origin.get(id(inst), inst), reason)
                               for inst, reason in problems[reported:]]
    return layout


def _lower_kernel(module: ir.Module, kernel: ir.Function, llmod: ll.Module,
                  target: SpirvTarget, problems: list | None) -> KernelLayout:
    slots, size = param_layout(kernel)
    pointer_slots = tuple(s.offset for s in slots if s.size == 8 and s.offset % 8 == 0)
    args = [_ptr(GLOBAL), _ptr(LOCAL), I32, _ptr(GLOBAL), _ptr(GLOBAL)] + \
        [_ptr(GLOBAL)] * len(pointer_slots)
    fn = ll.Function(llmod, ll.FunctionType(ll.VoidType(), args), name=kernel.name)
    fn.calling_convention = "spir_kernel"
    # warp semantics in the kernel or in a function it calls
    warp_functions = functions_that(module, _uses_warp)
    needs_warp = _uses_warp(kernel) or any(
        inst.opcode == "call" and any(isinstance(o, ir.Function) and o.name in warp_functions
                                      for o in inst.operands)
        for inst in kernel.instructions())
    if needs_warp:
        fn.set_metadata("intel_reqd_sub_group_size", llmod.add_metadata([I32(WARP)]))
    target.shared_offsets = _shared_offsets(module, kernel)
    fl = SpirvLowering(module, kernel, fn, target)
    params, fl.shared, fl.shared_bytes = fn.args[:3]
    fl.variable_block = fn.args[_VARIABLES]
    fl.param_buffer = fl.entry_alloca(ll.ArrayType(I8, max(size, 1)), "params", 16)
    fl.param_buffer.type = _ptr(PRIVATE)
    for slot in slots:
        at = fl.b.gep(fl.param_buffer, [I64(slot.offset)], source_etype=I8)
        source = fl.b.gep(params, [I64(slot.offset)], source_etype=I8)
        typ = ll.ArrayType(I8, slot.size) if slot.size not in (1, 2, 4, 8) \
            else ll.IntType(slot.size * 8)
        value = fl.b.load(source, typ=typ, align=1)
        if slot.offset in pointer_slots:
            base = fn.args[_FIRST_BASE + pointer_slots.index(slot.offset)]
            value = fl.b.select(fl.b.icmp_unsigned("==", base, ll.Constant(_ptr(GLOBAL), None)),
                                value, fl.b.add(value, fl.b.ptrtoint(base, I64)))
        fl.b.store(value, at, align=1)
        fl.param_pointers[slot.name] = at
    spirv_checks.enter_kernel(fl, fn.args[_CHECKS], list(fn.args[_FIRST_BASE:]), size)
    fl.lower_function(problems)
    return KernelLayout(kernel.name, size, pointer_slots, target.static_shared,
                        needs_warp or target.uses_warp, needs_ballot=target.uses_ballot)


# --- compiling ------------------------------------------------------------------------------

def compile_module(module: ir.Module, kernels: list[str] | None = None,
                   bounds_checks: bool = True) -> tuple[bytes, dict[str, KernelLayout]]:
    """The SPIR-V binary of the named kernels (all without `kernels`) of a verified IR module,
    and each kernel's layout; `bounds_checks` as for build_llvm. Raises
    UnsupportedFeatureError naming the first instruction SPIR-V cannot express,
    CompileError where LLVM's SPIR-V backend fails."""
    llmod, layouts = build_llvm(module, kernels=kernels, bounds_checks=bounds_checks)
    text = str(llmod)
    parse_verified(text, "SPIR-V")
    # The script alone (not `-m`, which would import all of ptxport first): only llvmlite.
    done = subprocess.run([sys.executable, str(Path(__file__).with_name("spirv_emit.py"))],
                          input=text.encode(), capture_output=True, check=False)
    if done.returncode != 0:
        if b"s128" in done.stderr:  # name the instruction that needed 128-bit comparisons
            build_llvm(module, kernels=kernels, find_wide=True, bounds_checks=bounds_checks)
        names = ", ".join(layouts)
        raise CompileError(f"LLVM's SPIR-V backend failed on {names}",
                           done.stderr.decode(errors="replace").strip())
    return done.stdout, layouts


def variable_block(module: ir.Module) -> ModuleVariables:
    """Where the kernels of `module` find its .global and .const variables (spirv_globals)."""
    return module_variables(module, function_numbers(module))


def unsupported_instructions(module: ir.Module) -> dict[int, str]:
    """id(instruction) -> why SPIR-V cannot compile it (found by the lowering itself)."""
    problems: list = []
    build_llvm(module, problems)
    return {id(inst): reason for inst, reason in problems}

