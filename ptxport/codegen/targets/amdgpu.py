"""The AMDGPU target: IR -> LLVM IR for amdgcn-amd-amdhsa -> relocatable object -> code object
(.hsaco) linked by ld.lld, for HIP's module API (hipModuleLoadData).

The instructions' meaning is the shared lowering's (lower.py, ops/): every floating-point,
integer and memory instruction becomes plain LLVM IR, which LLVM's AMDGPU backend selects.
This file gives that lowering what a GPU provides; amdgpu_warp.py gives special registers,
barriers and CUDA's 32-lane warp on wave32 and wave64 chips.

Addresses keep PTX's meaning:
- global, const and generic addresses are flat (address space 0) addresses; AMD GPUs give
  global (1) and constant (4) memory the same 64-bit addresses as flat ones;
- a shared address is the offset in the work-group's LDS (address space 3), as in PTX; the
  window's generic start (`space_base`) is the LDS aperture, so cvta works both ways;
  `.extern .shared` arrays are external zero-size LDS arrays, which LLVM places after the
  static LDS as dynamic LDS;
- local variables, registers and the parameter buffer are private allocas (address space 5);
  local addresses are their flat addresses;
- a kernel's parameters are its real kernel arguments with the PTX sizes and alignments
  (aggregates and over-aligned parameters `byref` in the kernarg segment), so that a launch
  packs arguments as for the original.

Code objects are version 4 (module flag amdhsa_code_object_version = 400): HIP runtimes
load them, and every ld.lld from LLVM 14 on links them.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

import llvmlite.binding as llvm
from llvmlite import ir as ll

from ptxport.codegen import ops  # noqa: F401  (registers the lowerings)
from ptxport.codegen.lower import (
    I8,
    I32,
    I64,
    PTR,
    FunctionLowering,
    declare,
    value_type,
)
from ptxport.codegen.targets import amdgpu_printf, spirv_heap
from ptxport.codegen.targets.amdgpu_warp import WarpModel
from ptxport.codegen.targets.gpu import (
    GpuLowering,
    GpuTarget,
    copy_kernel_parameters,
    declare_functions,
    initialize,
    kernel_parameters,
    lower_device_function,
    lower_return,
    module_variable,
    numbered_address,
    opaque_variable,
    parse_verified,
    target_machine,
)
from ptxport.codegen.targets.gpu_mma import MATRIX_LOWERINGS
from ptxport.codegen.targets.gpu_wmma import lower_wmma
from ptxport.errors import CompileError
from ptxport.ir import nodes as ir
from ptxport.ir.abi import ParamSlot

__all__ = ["CHIPS", "TRIPLE", "CODE_OBJECT_VERSION", "build_llvm", "compile_assembly",
           "compile_llvm_ir", "compile_object", "compile_module", "link", "linker",
           "unsupported_instructions", "wave_size"]

TRIPLE = "amdgcn-amd-amdhsa"
CODE_OBJECT_VERSION = 400
# Chips ptxport compiles for, and their wave size: CDNA runs wave64 only; RDNA is compiled
# for wave32, so that a CUDA warp is a wave.
CHIPS: dict[str, int] = {"gfx90a": 64, "gfx942": 64, "gfx1030": 32, "gfx1100": 32,
                         "gfx1201": 32}
# LLVM's AMDGPU address spaces.
FLAT, GLOBAL, SHARED, CONST, PRIVATE = 0, 1, 3, 4, 5
_SPACES = {"global": GLOBAL, "shared": SHARED, "const": CONST}
_OPAQUE = "texture, sampler and surface references and objects have no AMDGPU lowering yet"


def wave_size(chip: str) -> int:
    if chip not in CHIPS:
        raise ValueError(f"unknown AMD GPU '{chip}' (known: {', '.join(CHIPS)})")
    return CHIPS[chip]


# --- private memory -------------------------------------------------------------------------

class _PrivateAlloca(ll.instructions.AllocaInstr):
    """An alloca in AMDGPU's private address space (llvmlite's are always in address
    space 0, which the AMDGPU backend cannot place)."""

    def __init__(self, parent, typ, count, name):
        super().__init__(parent, typ, count, name)
        self.type = ll.PointerType(addrspace=PRIVATE)

    def descr(self, buf):
        buf.append(f"alloca {self.allocated_type}")
        if self.operands:
            op, = self.operands
            buf.append(f", {op.type} {op.get_reference()}")
        if self.align is not None:
            buf.append(f", align {self.align}")
        buf.append(f", addrspace({PRIVATE})")
        if self.metadata:
            buf.append(self._stringify_metadata(leading_comma=True))


class _PrivateBuilder(ll.IRBuilder):
    def alloca(self, typ, size=None, name=""):
        if size is not None and not isinstance(size, ll.Value):
            size = ll.Constant(I32, size)
        instr = _PrivateAlloca(self.block, typ, size, name)
        self._insert(instr)
        return instr


# The flat address of LDS offset 0 (the aperture): LDS offset 1 made flat, less 1 (LDS's
# null pointer is offset 0xffffffff, and offset 0 written as a constant would be LLVM's null,
# which becomes flat null).
_LDS_WINDOW = ll.FormattedConstant(
    PTR, "getelementptr (i8, ptr addrspacecast (ptr addrspace(3) inttoptr (i32 1 to "
         "ptr addrspace(3)) to ptr), i64 -1)")


class AmdgpuLowering(GpuLowering):
    """GpuLowering with private allocas and pointers in their state space's address space,
    so that LLVM selects LDS, global and scratch instructions. Predicates are passed as
    bytes, and LDS addresses are 32 bits wide."""

    target_name = "amdgpu"
    opaque_reason = _OPAQUE
    predicates_as_bytes = True
    narrow_spaces = frozenset(("shared",))

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.b = _PrivateBuilder(self.entry)

    def entry_alloca(self, typ: ll.Type, name: str = "", align: int = 0) -> ll.Value:
        with self.b.goto_entry_block():
            self.b.position_at_start(self.entry)
            slot = self.b.alloca(typ, name=name)
            if align:
                slot.align = align
        return slot

    def lowering_for(self, inst: ir.Instruction):
        return _OWN_LOWERINGS.get(inst.opcode) or super().lowering_for(inst)

    def variable_in(self, var: ir.Variable, space: str | None) -> ll.Value:
        """The variable where it is, for generic, .param and .local accesses."""
        pointer = self.target.own_pointer(self, var)
        wanted = {"local": PRIVATE, **_SPACES}.get(space, FLAT)
        if space is None or space in ("param", "local"):
            wanted = pointer.type.addrspace
        if pointer.type.addrspace != wanted:
            pointer = self.b.addrspacecast(pointer, ll.PointerType(addrspace=wanted))
        return pointer

    def address_in(self, address: ll.Value, space: str | None) -> ll.Value:
        if space == "shared":
            return self.b.inttoptr(address, ll.PointerType(addrspace=SHARED))
        if space == "param" and self.function.is_kernel:
            return self.b.gep(self.param_buffer, [address], source_etype=I8)
        if space == "local":
            return self.b.addrspacecast(self.b.inttoptr(address, PTR),
                                        ll.PointerType(addrspace=PRIVATE))
        return self.b.inttoptr(address, ll.PointerType(addrspace=_SPACES.get(space, FLAT)))


def _flat(fl: FunctionLowering, pointer: ll.Value) -> ll.Value:
    return pointer if pointer.type.addrspace == FLAT else fl.b.addrspacecast(pointer, PTR)


def _alloca(fl: AmdgpuLowering, inst: ir.Instruction) -> None:
    """alloca.u64 ptr, size{, align}: scratch memory; its flat address is the local one."""
    memory = fl.b.alloca(I8, size=fl.read(inst.operands[1], "u32"))
    memory.align = inst.operands[2].value if len(inst.operands) > 2 else 8
    fl.write(inst.operands[0], fl.b.ptrtoint(_flat(fl, memory), I64), "u64")


def _stacksave(fl: AmdgpuLowering, inst: ir.Instruction) -> None:
    private = ll.PointerType(addrspace=PRIVATE)
    saved = fl.b.call(declare(fl.llfn.module, "llvm.stacksave.p5", private, []), [])
    fl.write(inst.operands[0], fl.b.ptrtoint(_flat(fl, saved), I64), "u64")


def _stackrestore(fl: AmdgpuLowering, inst: ir.Instruction) -> None:
    private = ll.PointerType(addrspace=PRIVATE)
    restore = declare(fl.llfn.module, "llvm.stackrestore.p5", ll.VoidType(), [private])
    flat = fl.b.inttoptr(fl.read(inst.operands[0], "u64"), PTR)
    fl.b.call(restore, [fl.b.addrspacecast(flat, private)])


_OWN_LOWERINGS = {"ret": lower_return, "alloca": _alloca, "stacksave": _stacksave,
                  "stackrestore": _stackrestore, "wmma": lower_wmma, **MATRIX_LOWERINGS}


# --- the target ---------------------------------------------------------------------------

class AmdgpuTarget(GpuTarget):
    no_function = "which has no AMDGPU body (system calls other than printf, malloc and free "\
                  "have none)"

    def __init__(self, module: ir.Module, llmod: ll.Module, chip: str,
                 globals_: dict[str, ll.Value], functions: dict[str, ll.Function]):
        super().__init__(module, llmod, globals_, functions)
        self.name, self.chip = f"amdgpu:{chip}", chip
        self.warp = WarpModel(llmod, CHIPS[chip], self.name)
        self.printf_tracers: dict[int, object] = {}   # by id(function), for amdgpu_printf

    def special_register(self, fl: FunctionLowering, reg: ir.SpecialRegister) -> ll.Value:
        return self.warp.special_register(fl, reg)

    def space_base(self, fl: FunctionLowering, space: str | None):
        if space == "shared":
            return _LDS_WINDOW
        if space == "param" and fl.function.is_kernel:
            return _flat(fl, fl.param_buffer)
        return None

    def own_pointer(self, fl: FunctionLowering, var: ir.Variable) -> ll.Value:
        """A variable's storage, in its state space's address space."""
        if var.space in _SPACES:
            return self.global_variable(fl, var)
        return fl.frame_variable(var)

    def variable_pointer(self, fl: FunctionLowering, var: ir.Variable) -> ll.Value:
        """A flat pointer to the variable; a shared variable's is the LDS window plus its
        offset, so that its address (pointer minus space_base) folds to the offset."""
        pointer = self.own_pointer(fl, var)
        if var.space == "shared":
            offset = fl.b.zext(fl.b.ptrtoint(pointer, I32), I64)
            return fl.b.gep(_LDS_WINDOW, [offset], source_etype=I8)
        return _flat(fl, pointer)

    def exit(self, fl: FunctionLowering) -> None:
        if fl.function.is_kernel:
            fl.b.ret_void()
            return
        fl.b.call(declare(self.llmod, "llvm.amdgcn.endpgm", ll.VoidType(), []), [])
        fl.b.unreachable()

    def synchronize(self, fl: FunctionLowering, inst: ir.Instruction) -> None:
        self.warp.synchronize(fl, inst)

    def lane(self, fl: FunctionLowering) -> ll.Value:
        """The thread's lane in its CUDA warp (for gpu_wmma)."""
        return self.warp.laneid(fl)

    def read_lane(self, fl: FunctionLowering, value: ll.Value, lane: ll.Value) -> ll.Value:
        """`value` as lane `lane` of the thread's CUDA warp holds it (for gpu_wmma)."""
        return self.warp.read_lane(fl, value, lane)

    def call(self, fl: GpuLowering, inst: ir.Instruction, callee: ir.Function,
             returns: list, args: list) -> None:
        """CUDA's assert calls the driver's `__assertfail`, which ends the kernel with an
        error: here a trap, as HIP's own assert ends it (without CUDA's message)."""
        if callee.is_declaration and callee.name == "__assertfail":
            self.trap(fl, inst)
            fl.b.position_at_end(fl.llfn.append_basic_block("after_assert"))
            return
        if callee.is_declaration and callee.name == "vprintf":
            amdgpu_printf.lower_vprintf(self, fl, inst, list(returns), list(args))
            return
        if callee.is_declaration and callee.name in ("malloc", "free"):
            heap = fl.b.load(self.llmod.globals[spirv_heap.HEAP_SYMBOL], typ=I64)
            spirv_heap.lower_call(fl, inst, callee.name, heap, returns, args, convention="")
            return
        super().call(fl, inst, callee, returns, args)


# --- module-level lowering ----------------------------------------------------------------------

def _declare_variables(module: ir.Module, llmod: ll.Module,
                       collecting: bool) -> dict[str, ll.Value]:
    """One LLVM global per .global/.const/.shared variable, under its PTX name (so that
    hipModuleGetGlobal finds the global and const ones)."""

    out: dict[str, ll.Value] = {}
    variables = list(module.globals.values())
    for f in module.functions.values():
        variables += [v for v in f.variables.values() if v.space == "shared"]
    pending = []
    for var in variables:
        if var.space not in _SPACES or var.name in out:
            continue
        if opaque_variable(module, var, "amdgpu", _OPAQUE, collecting):
            continue
        element = I8 if var.type.kind == "pred" else value_type(var.type)
        g = out[var.name] = module_variable(llmod, var, var.name, element, _SPACES[var.space])
        if var.space != "shared" and not var.is_extern:
            pending.append((var, g, element))
    for var, g, element in pending:
        initialize(module, var, g, element, out, "amdgpu", collecting,
                   numbered_address(module))
    return out


def _declare_heap(llmod: ll.Module) -> None:
    """CUDA's device heap (device-side malloc and free; spirv_heap.py): its functions, and
    the global holding its address, which the hip backend sets after loading the code object
    (hipModuleGetGlobal); malloc returns NULL while it is 0."""
    spirv_heap.define_functions(llmod, convention="")
    heap = ll.GlobalVariable(llmod, I64, spirv_heap.HEAP_SYMBOL, addrspace=GLOBAL)
    heap.initializer = I64(0)
    heap.align = 8


def _annotate(fn: ll.Function, kernel: ir.Function) -> None:
    """.reqntid/.maxntid as the flat work-group size range LLVM allocates registers for
    (the launch must not exceed it, as CUDA's must not)."""
    for directive in ("reqntid", "maxntid"):
        dims = kernel.directives.get(directive)
        if dims:
            total = 1
            for d in dims:
                total *= d
            low = total if directive == "reqntid" else 1
            _string_attribute(fn, "amdgpu-flat-work-group-size", f"{low},{total}")
            return
    # CUDA allows 1024 threads per block (LLVM's default range too), stated so that the
    # code object's metadata says it.
    _string_attribute(fn, "amdgpu-flat-work-group-size", "1,1024")


def _string_attribute(fn: ll.Function, key: str, value: str) -> None:
    """A "key"="value" function attribute (llvmlite checks names against LLVM's enum
    attributes, which string attributes are not)."""
    set.add(fn.attributes, f'"{key}"="{value}"')


def build_llvm(module: ir.Module, chip: str = "gfx1100",
               problems: list | None = None) -> ll.Module:
    """The LLVM module (amdgcn-amd-amdhsa, code object v4) of every kernel and device
    function of `module` for `chip`. With `problems`, instructions the target cannot compile
    are collected there instead of raising."""
    wave_size(chip)
    llmod = ll.Module(name="ptxport.amdgpu")
    llmod.triple = TRIPLE
    llmod.data_layout = str(_target_machine(chip).target_data)
    flag = llmod.add_metadata([I32(1), ll.MetaDataString(llmod, "amdhsa_code_object_version"),
                               I32(CODE_OBJECT_VERSION)])
    llmod.add_named_metadata("llvm.module.flags").add(flag)
    globals_ = _declare_variables(module, llmod, problems is not None)
    functions = declare_functions(module, llmod, [f for f in module.functions.values()
                                                  if not (f.is_kernel or f.is_declaration)],
                                  AmdgpuLowering.pass_type, problems)
    for fn in functions.values():
        fn.linkage = "internal"
    if spirv_heap.uses_heap(module):
        _declare_heap(llmod)
    if amdgpu_printf.uses_printf(module):
        amdgpu_printf.declare_buffer(llmod)
    target = AmdgpuTarget(module, llmod, chip, globals_, functions)
    for f in list(module.functions.values()):
        if f.is_declaration:
            continue
        if f.is_kernel:
            _lower_kernel(module, f, llmod, target, problems)
        elif f.name in functions:
            lower_device_function(AmdgpuLowering(module, f, functions[f.name], target),
                                  problems)
    return llmod


def _lower_kernel(module: ir.Module, kernel: ir.Function, llmod: ll.Module,
                  target: AmdgpuTarget, problems: list | None) -> None:
    # aggregates `byref` in the kernarg segment
    params = kernel_parameters(module, kernel, AmdgpuLowering.pass_type, problems, CONST,
                               target.name)
    if params is None:
        return
    fn = ll.Function(llmod, ll.FunctionType(ll.VoidType(), [t for t, _ in params]),
                     name=kernel.name)
    fn.calling_convention = "amdgpu_kernel"
    _annotate(fn, kernel)
    fl = AmdgpuLowering(module, kernel, fn, target)
    copy_kernel_parameters(fl, params, _copy_byref)
    fl.lower_function(problems)


def _copy_byref(fl: GpuLowering, at: ll.Value, arg: ll.Argument, slot: ParamSlot) -> None:
    """A parameter in the kernarg segment, loaded whole."""
    arg.add_attribute("byref")
    arg.attributes.align = slot.align
    fl.b.store(fl.b.load(arg, typ=arg.type.pointee), at, align=slot.align)


# --- compiling and linking ----------------------------------------------------------------------

_ATOMIC_SCAN_LOCK = threading.Lock()
_ATOMIC_SCAN_SET = False


def _choose_atomic_scan() -> None:
    """LLVM's atomic optimizer combines a wave's atomics on one address into one; its
    default way ("Iterative", a loop over the active lanes) aborts LLVM 22's gfx11 code
    generator ("Cannot print this instruction") where a 64-bit atomic with a value that
    differs per lane is followed by a trap (an assert, a cooperative groups' check):
    cooperative_launch.cu's grid_sum did. "DPP" (lane scans with DPP moves, LLVM's
    default before) compiles it on every chip. The option is global to the process and may
    be set once; only the AMDGPU backend reads it."""
    global _ATOMIC_SCAN_SET
    with _ATOMIC_SCAN_LOCK:
        if not _ATOMIC_SCAN_SET:
            llvm.set_option("ptxport", "-amdgpu-atomic-optimizer-strategy=DPP")
            _ATOMIC_SCAN_SET = True


def _target_machine(chip: str):
    features = "+wavefrontsize32" if CHIPS[chip] == 32 else "+wavefrontsize64"
    machine = target_machine(TRIPLE, cpu=chip, features=features, opt=3, reloc="pic")
    _choose_atomic_scan()
    return machine


def compile_llvm_ir(module: ir.Module, chip: str) -> str:
    """The LLVM IR text ptxport makes of `module` for `chip`, before optimisation."""
    return str(build_llvm(module, chip))


def _optimized(module: ir.Module, chip: str):
    """(target machine, a fresh optimised LLVM module): emitting twice from one AMDGPU
    module aborts LLVM, so each emission parses its own."""
    text = compile_llvm_ir(module, chip)
    tm = _target_machine(chip)
    parsed = parse_verified(text, "AMDGPU")
    pb = llvm.create_pass_builder(tm, llvm.PipelineTuningOptions(speed_level=3))
    pb.getModulePassManager().run(parsed, pb)
    return tm, parsed


def compile_object(module: ir.Module, chip: str) -> bytes:
    """The relocatable ELF object (one per module) of every kernel, optimised for `chip`."""
    tm, parsed = _optimized(module, chip)
    return tm.emit_object(parsed)


def compile_assembly(module: ir.Module, chip: str) -> str:
    """The GCN/RDNA assembly of every kernel for `chip` (what compile_object assembles)."""
    tm, parsed = _optimized(module, chip)
    return tm.emit_assembly(parsed)


def linker() -> list[str] | None:
    """The command that runs ld.lld: the one inside the `ziglang` wheel (LLD of LLVM's own
    release), else an ld.lld on PATH (Debian's lld); None when there is neither."""
    spec = importlib.util.find_spec("ziglang")
    if spec is not None and spec.origin:
        zig = Path(spec.origin).parent / "zig"
        if zig.is_file() and os.access(zig, os.X_OK):
            return [str(zig), "ld.lld"]
    found = shutil.which("ld.lld") or next(
        (shutil.which(f"ld.lld-{v}") for v in range(30, 13, -1) if shutil.which(f"ld.lld-{v}")),
        None)
    return [found] if found else None


def link(obj: bytes) -> bytes:
    """The code object (a shared ELF object) ld.lld makes of one relocatable object."""
    command = linker()
    if command is None:
        raise CompileError("no ld.lld to link AMDGPU code objects",
                           "pip install 'ptxport[amd]' (the ziglang wheel ships ld.lld)")
    with tempfile.TemporaryDirectory(prefix="ptxport-amdgpu-") as tmp:
        source, out = Path(tmp) / "kernels.o", Path(tmp) / "kernels.hsaco"
        source.write_bytes(obj)
        result = subprocess.run([*command, "-shared", "--no-undefined", "-o", str(out),
                                 str(source)], capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise CompileError("ld.lld could not link the AMDGPU code object",
                               result.stderr or result.stdout)
        return out.read_bytes()


def compile_module(module: ir.Module, chip: str = "gfx1100") -> bytes:
    """The AMDGPU code object (.hsaco) of a verified IR module for `chip`. Raises
    UnsupportedFeatureError naming the first instruction the target cannot express."""
    return link(compile_object(module, chip))


def unsupported_instructions(module: ir.Module, chip: str = "gfx942") -> dict[int, str]:
    """id(instruction) -> why AMDGPU cannot compile it (wave64: the stricter warp model)."""
    problems: list = []
    build_llvm(module, chip, problems)
    return {id(inst): reason for inst, reason in problems}
