"""The NVPTX target: IR -> LLVM IR for nvptx64 -> PTX, through LLVM's NVPTX backend.

What the shared lowering (lower.py, ops/) needs from a GPU is mostly the hardware itself:
special registers are `llvm.nvvm.read.ptx.sreg.*`, barriers and warp operations are NVVM
intrinsics, and instructions whose exact meaning the CPU target emulates (every
floating-point form, conversions, bit-field and byte operations, atomics, fences) pass
through as inline PTX: the instruction's own text with its registers as asm operands, so
that the GPU computes exactly what the original PTX asked for (`INLINE_PTX` lists them).

Addresses keep PTX's meaning, so that inline PTX can use them as they are:
- global and generic addresses are generic addresses (as on every NVIDIA GPU);
- a shared (const) address is the offset in the shared (const) window: the ptrtoint of an
  addrspace(3) (4) pointer, and `space_base` is the generic address of that window's start,
  `addrspacecast (ptr addrspace(3) null to ptr)`; loads and stores naming .shared use
  addrspace(3) pointers, so LLVM selects ld.shared/st.shared;
- .local variables are allocas, and local addresses are their generic addresses (LLVM turns
  accesses to allocas into ld.local/st.local itself);
- a kernel's parameters are its real parameters, with the original PTX's sizes and
  alignments (so a launch packs arguments as for the original), copied at entry into a
  buffer laid out by ir.abi.param_layout that `ld.param` reads.
"""

from __future__ import annotations

import llvmlite.binding as llvm
from llvmlite import ir as ll

from ptxport.codegen import ops  # noqa: F401  (registers the lowerings)
from ptxport.codegen.device_runtime import CDP1_ONLY, canonical_name
from ptxport.codegen.lower import (
    I1,
    I8,
    I32,
    I64,
    PTR,
    FunctionLowering,
    const_int,
    declare,
    value_type,
)
from ptxport.codegen.ops.data import instruction_type, state_space, vector_count
from ptxport.codegen.targets.gpu import (
    GpuLowering,
    GpuTarget,
    copy_kernel_parameters,
    declare_functions,
    generic,
    initialize,
    kernel_parameters,
    lower_device_function,
    lower_return,
    module_variable,
    opaque_variable,
    parse_verified,
    target_machine,
)
from ptxport.codegen.targets.nvptx_inline import (
    CONVERGENT,
    INLINE_PTX,
    MEMORY,
    PURE,
    asm,
    constraint,
    inline_ptx,
)
from ptxport.errors import UnsupportedFeatureError
from ptxport.ir import nodes as ir
from ptxport.ir.abi import ParamSlot

__all__ = ["compile_module", "build_llvm", "unsupported_instructions", "ARCHS", "INLINE_PTX",
           "TRIPLE"]

TRIPLE = "nvptx64-nvidia-cuda"
_OPAQUE = ("texture, sampler and surface references (.texref/.samplerref/.surfref); "
           "texture and surface objects (.u64 handles) are supported")
# Address spaces of the NVPTX backend.
GLOBAL, SHARED, CONST, LOCAL = 1, 3, 4, 5
_SPACES = {"global": GLOBAL, "shared": SHARED, "const": CONST}

# Architectures ptxport compiles for, and the first PTX ISA version each needs.
ARCHS: dict[str, tuple[int, int]] = {
    "sm_75": (6, 3), "sm_80": (7, 0), "sm_86": (7, 1), "sm_87": (7, 4), "sm_89": (7, 8),
    "sm_90": (7, 8), "sm_90a": (8, 0), "sm_100": (8, 6), "sm_100a": (8, 6), "sm_101": (8, 6),
    "sm_120": (8, 7), "sm_120a": (8, 7),
}
# The newest PTX ISA version LLVM 22 writes (and the CUDA 13.0 driver still JIT-compiles).
_NEWEST_PTX = (9, 0)

# --- the function lowering --------------------------------------------------------------------

class NvptxLowering(GpuLowering):
    """GpuLowering with NVPTX's own lowerings of some opcodes (inline PTX, vector and
    address-space-aware loads and stores); pointers are in the LLVM address space of their
    state space (generic for None and a device function's .param)."""

    target_name = "nvptx"
    opaque_reason = _OPAQUE

    def lowering_for(self, inst: ir.Instruction):
        return self.target.own_lowering(inst) or super().lowering_for(inst)

    def variable_in(self, var: ir.Variable, space: str | None) -> ll.Value:
        pointer = self.target.own_pointer(self, var)
        wanted = LOCAL if space == "local" else _SPACES.get(space, 0)
        if pointer.type.addrspace != wanted:
            pointer = self.b.addrspacecast(pointer, ll.PointerType(addrspace=wanted))
        return pointer

    def address_in(self, address: ll.Value, space: str | None) -> ll.Value:
        window = self.target.space_base(self, space) if space == "param" else None
        if window is not None:
            return self.b.gep(window, [address], source_etype=I8)
        if space == "local":  # local addresses are generic: cvta.to.local
            return self.b.addrspacecast(self.b.inttoptr(address, PTR),
                                        ll.PointerType(addrspace=LOCAL))
        return self.b.inttoptr(address, ll.PointerType(addrspace=_SPACES.get(space, 0)))


def _load(fl: NvptxLowering, inst: ir.Instruction) -> None:
    """ld{.space}{.cop}{.vec}.type: one LLVM load of the whole vector (ld.v4.f32 stays one
    instruction); .nc marks it invariant, which LLVM selects as ld.global.nc."""
    t = instruction_type(inst)
    count = vector_count(inst)
    pointer = fl.pointer(inst.operands[1], state_space(inst), t.size * count)
    element = value_type(t)
    typ = ll.VectorType(element, count) if count > 1 else element
    value = fl.b.load(pointer, typ=typ, align=t.size * count)
    if inst.spec.has("nc") and pointer.type.addrspace == GLOBAL:
        value.set_metadata("invariant.load", fl.llfn.module.add_metadata([]))
    if count == 1 and not isinstance(inst.operands[0], ir.VectorValue):
        fl.write(inst.operands[0], value, t)
    elif count == 1:  # `ld.b32 {%r1}, [a]` (Triton writes these): a one-element vector
        fl.write_vector(inst.operands[0], [value], t)
    else:
        fl.write_vector(inst.operands[0],
                        [fl.b.extract_element(value, I32(i)) for i in range(count)], t)


def _store(fl: NvptxLowering, inst: ir.Instruction) -> None:
    t = instruction_type(inst)
    count = vector_count(inst)
    pointer = fl.pointer(inst.operands[0], state_space(inst), t.size * count, write=True)
    source = inst.operands[1]
    if count == 1 and not isinstance(source, ir.VectorValue):
        fl.b.store(fl.read(source, t), pointer, align=t.size)
        return
    vector = ll.Constant(ll.VectorType(value_type(t), count), None)
    for i, v in enumerate(fl.read_vector(source, t, count)):
        vector = fl.b.insert_element(vector, v, I32(i))
    fl.b.store(vector, pointer, align=t.size * count)


def _alloca(fl: NvptxLowering, inst: ir.Instruction) -> None:
    """alloca.u64 ptr, size{, align}: stack memory; its (generic) address is the local one."""
    size = fl.read(inst.operands[1], "u64")
    memory = fl.b.alloca(I8, size=size)
    memory.align = inst.operands[2].value if len(inst.operands) > 2 else 8
    fl.write(inst.operands[0], fl.b.ptrtoint(memory, I64), "u64")


def _stacksave(fl: NvptxLowering, inst: ir.Instruction) -> None:
    save = declare(fl.llfn.module, "llvm.stacksave.p0", PTR, [])
    fl.write(inst.operands[0], fl.b.ptrtoint(fl.b.call(save, []), I64), "u64")


def _stackrestore(fl: NvptxLowering, inst: ir.Instruction) -> None:
    restore = declare(fl.llfn.module, "llvm.stackrestore.p0", ll.VoidType(), [PTR])
    fl.b.call(restore, [fl.b.inttoptr(fl.read(inst.operands[0], "u64"), PTR)])


# --- the target ---------------------------------------------------------------------------

# Special registers NVVM has an intrinsic for: PTX name -> intrinsic suffix. The rest are read
# with inline PTX (`mov.u32 d, %name;`).
_SREG_INTRINSICS = {
    "%tid": "tid", "%ntid": "ntid", "%ctaid": "ctaid", "%nctaid": "nctaid",
    "%laneid": "laneid", "%warpid": "warpid", "%nwarpid": "nwarpid", "%smid": "smid",
    "%nsmid": "nsmid", "%lanemask_eq": "lanemask.eq", "%lanemask_le": "lanemask.le",
    "%lanemask_lt": "lanemask.lt", "%lanemask_ge": "lanemask.ge", "%lanemask_gt": "lanemask.gt",
    "%clock": "clock", "%clock64": "clock64", "%globaltimer": "globaltimer",
    "%globaltimer_lo": "globaltimer.lo", "%dynamic_smem_size": "dynamic_smem_size",
    "%total_smem_size": "total_smem_size",
}
# Those that change while a thread runs: read them where they are read, every time.
_VOLATILE_SREGS = frozenset(("%clock", "%clock_hi", "%clock64", "%globaltimer",
                             "%globaltimer_lo", "%globaltimer_hi", "%smid", "%warpid"))

_REDUX = {"add": "add", "and": "and", "or": "or", "xor": "xor"}


class NvptxTarget(GpuTarget):
    name = "nvptx"
    no_function = "whose parameters NVPTX cannot pass"
    function_pointers = True   # LLVM NVPTX calls through registers with a .callprototype
    kernels: dict[str, ll.Function]   # the module's kernels, by name (set by build_llvm)

    def own_lowering(self, inst: ir.Instruction):
        """NVPTX's lowering of `inst` where it replaces the shared one, else None."""
        passthrough = INLINE_PTX.get(inst.opcode)
        if passthrough is not None and passthrough[0](inst):
            kind = passthrough[1]
            return lambda fl, i: inline_ptx(fl, i, kind)
        return _OWN_LOWERINGS.get(inst.opcode)

    def kernel_address(self, fl: FunctionLowering, kernel: ir.Function) -> ll.Value:
        """`mov.u64 %rd, kernel` as NVPTX writes it: what a device-side launch passes
        cudadevrt's cudaGetParameterBufferV2 (dynamic parallelism; the cuda backend links
        such a module with libcudadevrt.a)."""
        fn = self.kernels.get(kernel.name)
        if fn is None:
            raise fl.unsupported(fl.inst, f"the address of the kernel '{kernel.name}', whose "
                                          "parameters NVPTX cannot pass")
        return fl.b.ptrtoint(fn, I64)

    # --- values ------------------------------------------------------------------------------

    def special_register(self, fl: FunctionLowering, reg: ir.SpecialRegister) -> ll.Value:
        name = _SREG_INTRINSICS.get(reg.name)
        if reg.component == "w" and reg.name in ("%tid", "%ntid", "%ctaid", "%nctaid"):
            return I32(0)
        t = reg.type
        ret = I1 if t.kind == "pred" else ll.IntType(t.bits)
        if name is not None:
            if reg.component:
                name += "." + reg.component
            fn = declare(self.llmod, f"llvm.nvvm.read.ptx.sreg.{name}", ret, [])
            return fl.b.call(fn, [])
        kind = MEMORY if reg.name in _VOLATILE_SREGS else PURE
        bits = 1 if t.kind == "pred" else t.bits
        move = "mov.pred" if bits == 1 else f"mov.b{bits}"
        return asm(fl, f"{move} $0, {reg.text};", ret, [], f"={constraint(bits)}", kind)

    def space_base(self, fl: FunctionLowering, space: str | None):
        if space in ("shared", "const"):
            return generic(ll.Constant(ll.PointerType(addrspace=_SPACES[space]), None))
        if space == "param" and fl.function.is_kernel:
            return fl.param_buffer
        return None

    def own_pointer(self, fl: FunctionLowering, var: ir.Variable) -> ll.Value:
        """A variable's storage, in its state space's address space."""
        if var.space in _SPACES:
            pointer = self.globals.get((fl.function.name, var.name))  # the function's own
            return self.global_variable(fl, var) if pointer is None else pointer
        return fl.frame_variable(var)

    def variable_pointer(self, fl: FunctionLowering, var: ir.Variable) -> ll.Value:
        """A generic pointer to the variable. Shared and const variables: the window's start
        plus the variable's offset in it, so that their address (pointer minus space_base)
        folds to the offset itself."""
        pointer = self.own_pointer(fl, var)
        if var.space in ("shared", "const"):
            offset = pointer.ptrtoint(I64)
            return fl.b.gep(self.space_base(fl, var.space), [offset], source_etype=I8)
        if var.space == "global":
            return fl.b.addrspacecast(pointer, PTR)
        return pointer

    # --- control -----------------------------------------------------------------------------

    def exit(self, fl: FunctionLowering) -> None:
        if fl.function.is_kernel:
            fl.b.ret_void()
            return
        asm(fl, "exit;", ll.VoidType(), [], "~{memory}")
        fl.b.unreachable()

    # --- barriers and warp operations ----------------------------------------------------------

    def synchronize(self, fl: FunctionLowering, inst: ir.Instruction) -> None:
        lower = getattr(self, "_sync_" + inst.opcode)
        if not lower(fl, inst):
            inline_ptx(fl, inst, CONVERGENT)

    def _intrinsic(self, name: str, ret: ll.Type, args: list) -> ll.Function:
        return declare(self.llmod, name, ret, args)

    def _sync_bar(self, fl: FunctionLowering, inst: ir.Instruction) -> bool:
        """bar{.cta}.sync a{, b}, barrier{.cta}.sync{.aligned} a{, b} and bar.warp.sync m;
        the other forms (arrive, red, cluster barriers) pass through."""
        if inst.spec.has("warp"):
            fn = self._intrinsic("llvm.nvvm.bar.warp.sync", ll.VoidType(), [I32])
            fl.b.call(fn, [fl.read(inst.operands[0], "b32")])
            return True
        if inst.spec.get("op") != "sync" or inst.spec.get("scope") == "cluster":
            return False
        aligned = inst.opcode == "bar" or inst.spec.has("aligned")
        name = "llvm.nvvm.barrier.cta.sync" + (".aligned" if aligned else "")
        a = fl.read(inst.operands[0], "u32")
        if len(inst.operands) > 1:
            fn = self._intrinsic(name + ".count", ll.VoidType(), [I32, I32])
            fl.b.call(fn, [a, fl.read(inst.operands[1], "u32")])
        else:
            fl.b.call(self._intrinsic(name + ".all", ll.VoidType(), [I32]), [a])
        return True

    _sync_barrier = _sync_bar

    def _mask(self, fl: FunctionLowering, inst: ir.Instruction, operand) -> ll.Value:
        """A member mask; the operations without .sync (deprecated since sm_70) take the
        active lanes, as CUDA's compatibility path does."""
        if operand is not None and inst.spec.has("sync"):
            return fl.read(operand, "b32")
        return fl.b.call(self._intrinsic("llvm.nvvm.activemask", I32, []), [])

    def _sync_shfl(self, fl: FunctionLowering, inst: ir.Instruction) -> bool:
        """shfl{.sync}.mode.b32 d{|p}, a, b, c{, membermask}."""
        mode = inst.spec.get("mode")
        dest, a, b, c = inst.operands[:4]
        mask = self._mask(fl, inst, inst.operands[4] if len(inst.operands) > 4 else None)
        args = [mask, fl.read(a, "b32"), fl.read(b, "b32"), fl.read(c, "b32")]
        name = f"llvm.nvvm.shfl.sync.{mode}.i32"
        if isinstance(dest, ir.PairValue):
            fn = self._intrinsic(name + "p", ll.LiteralStructType([I32, I1]), [I32] * 4)
            pair = fl.b.call(fn, args)
            fl.write(dest.first, fl.b.extract_value(pair, 0), "b32")
            fl.write(dest.second, fl.b.extract_value(pair, 1), "pred")
        else:
            fl.write(dest, fl.b.call(self._intrinsic(name, I32, [I32] * 4), args), "b32")
        return True

    def _sync_vote(self, fl: FunctionLowering, inst: ir.Instruction) -> bool:
        """vote{.sync}.{all,any,uni}.pred d, {!}a{, m}; vote{.sync}.ballot.b32 d, {!}a{, m}."""
        mode = inst.spec.get("mode")
        dest, a = inst.operands[:2]
        mask = self._mask(fl, inst, inst.operands[2] if len(inst.operands) > 2 else None)
        ret, t = (I32, "b32") if mode == "ballot" else (I1, "pred")
        fn = self._intrinsic(f"llvm.nvvm.vote.{mode}.sync", ret, [I32, I1])
        fl.write(dest, fl.b.call(fn, [mask, fl.read(a, "pred")]), t)
        return True

    def _sync_match(self, fl: FunctionLowering, inst: ir.Instruction) -> bool:
        """match.any.sync.b{32,64} d, a, m; match.all.sync.b{32,64} d{|p}, a, m."""
        mode = inst.spec.get("mode")
        t = instruction_type(inst)
        dest, a, m = inst.operands
        value_t = ll.IntType(t.bits)
        name = f"llvm.nvvm.match.{mode}.sync.i{t.bits}"
        args = [fl.read(m, "b32"), fl.read(a, f"b{t.bits}")]
        if mode == "any":
            fl.write(dest, fl.b.call(self._intrinsic(name, I32, [I32, value_t]), args), "b32")
            return True
        fn = self._intrinsic(name + "p", ll.LiteralStructType([I32, I1]), [I32, value_t])
        pair = fl.b.call(fn, args)
        first = dest.first if isinstance(dest, ir.PairValue) else dest
        fl.write(first, fl.b.extract_value(pair, 0), "b32")
        if isinstance(dest, ir.PairValue):
            fl.write(dest.second, fl.b.extract_value(pair, 1), "pred")
        return True

    def _sync_redux(self, fl: FunctionLowering, inst: ir.Instruction) -> bool:
        """redux.sync.op.{b32,u32,s32} d, a, m (the f32 forms pass through)."""
        op = inst.spec.get("op")
        t = instruction_type(inst)
        if t.is_float or t.bits != 32:
            return False
        name = _REDUX.get(op) or (("u" if t.kind == "unsigned" else "") + op)
        dest, a, m = inst.operands
        fn = self._intrinsic(f"llvm.nvvm.redux.sync.{name}", I32, [I32, I32])
        fl.write(dest, fl.b.call(fn, [fl.read(a, "b32"), fl.read(m, "b32")]), t)
        return True

    def _sync_activemask(self, fl: FunctionLowering, inst: ir.Instruction) -> bool:
        fn = self._intrinsic("llvm.nvvm.activemask", I32, [])
        fl.write(inst.operands[0], fl.b.call(fn, []), "b32")
        return True

    def _sync_elect(self, fl: FunctionLowering, inst: ir.Instruction) -> bool:
        """elect.sync d|p, membermask."""
        dest, m = inst.operands
        fn = self._intrinsic("llvm.nvvm.elect.sync", ll.LiteralStructType([I32, I1]), [I32])
        pair = fl.b.call(fn, [fl.read(m, "b32")])
        first, second = (dest.first, dest.second) if isinstance(dest, ir.PairValue) \
            else (dest, None)
        fl.write(first, fl.b.extract_value(pair, 0), "b32")
        if second is not None:
            fl.write(second, fl.b.extract_value(pair, 1), "pred")
        return True


_OWN_LOWERINGS = {"ret": lower_return, "ld": _load, "ldu": _load, "st": _store, "alloca": _alloca,
                  "stacksave": _stacksave, "stackrestore": _stackrestore}


# --- module-level lowering ----------------------------------------------------------------------

def _declare_variables(module: ir.Module, llmod: ll.Module, collecting: bool,
                       functions: dict[str, ll.Function]) -> dict[object, ll.Value]:
    """One LLVM global per .global/.const/.shared variable, in its address space, under its
    PTX name (so that cuModuleGetGlobal finds it), keyed by that name ((function, name) for a
    function's own .shared variables); a device function's address among the initial values
    is the function's (of `functions`). `collecting`: leave out the variables NVPTX cannot
    have (the instructions using them report it) instead of raising."""
    def function_address(function: ir.Function) -> ll.Constant | None:
        llfn = functions.get(function.name)
        return None if llfn is None else \
            ll.FormattedConstant(I64, f"ptrtoint (ptr {llfn.get_reference()} to i64)")

    out: dict[object, ll.Value] = {}
    variables = [(var.name, var.name, var) for var in module.globals.values()]
    for f in module.functions.values():  # a function's own .shared variables, by function
        variables += [((f.name, v.name), f"{f.name}.{v.name}", v) for v in f.variables.values()
                      if v.space == "shared"]
    pending = []
    for key, name, var in variables:
        if var.space not in _SPACES:
            continue
        if opaque_variable(module, var, "nvptx", _OPAQUE, collecting):
            continue
        element = I8 if var.type.kind == "pred" else value_type(var.type)
        g = out[key] = module_variable(llmod, var, name, element, _SPACES[var.space])
        if var.space != "shared" and not var.is_extern:
            # Not an LLVM `constant`, .const included: the host writes __constant__ variables
            # (cudaMemcpyToSymbol) after compiling, so their loads must not fold to the
            # initializer. addrspace(4) alone makes them ld.const.
            pending.append((var, g, element))
    for var, g, element in pending:
        initialize(module, var, g, element, out, "nvptx", collecting, function_address)
    return out


def _annotate(llmod: ll.Module, fn: ll.Function, kernel: ir.Function) -> None:
    """.maxntid/.reqntid/.minnctapersm/.maxnreg/.maxclusterrank as NVVM annotations (LLVM
    turns them into its nvvm.* function attributes)."""
    names = {"maxntid": ("maxntidx", "maxntidy", "maxntidz"),
             "reqntid": ("reqntidx", "reqntidy", "reqntidz"),
             "minnctapersm": ("minctasm",), "maxnreg": ("maxnreg",),
             "maxclusterrank": ("maxclusterrank",),
             "reqnctapercluster": ("cluster_dim_x", "cluster_dim_y", "cluster_dim_z")}
    annotations = llmod.get_named_metadata("nvvm.annotations") \
        if "nvvm.annotations" in llmod.namedmetadata else None
    for directive, values in kernel.directives.items():
        for key, value in zip(names.get(directive, ()), values, strict=False):
            if annotations is None:
                annotations = llmod.add_named_metadata("nvvm.annotations")
            annotations.add(llmod.add_metadata([fn, ll.MetaDataString(llmod, key), I32(value)]))


def build_llvm(module: ir.Module, problems: list | None = None) -> ll.Module:
    """The LLVM module (nvptx64) of every kernel and device function of `module`. With
    `problems` (a list), instructions the target cannot compile are collected there instead
    of raising."""
    llmod = ll.Module(name="ptxport.nvptx")
    llmod.triple = TRIPLE
    functions = declare_functions(module, llmod,
                                  [f for f in module.functions.values() if not f.is_kernel],
                                  NvptxLowering.pass_type, problems)
    _device_runtime_names(module, llmod, functions)
    globals_ = _declare_variables(module, llmod, problems is not None, functions)
    for f in module.functions.values():
        if f.name in functions and not f.is_declaration and "visible" not in f.linkage:
            functions[f.name].linkage = "internal"
    target = NvptxTarget(module, llmod, globals_, functions)
    kernels = {f.name: _declare_kernel(module, f, llmod, problems)
               for f in module.functions.values() if f.is_kernel and not f.is_declaration}
    target.kernels = {name: fn for name, (fn, _) in kernels.items() if fn is not None}
    for f in list(module.functions.values()):
        if f.is_declaration or not (f.is_kernel or f.name in functions):
            continue
        if f.is_kernel:
            fn, params = kernels[f.name]
            if fn is not None:
                _lower_kernel(module, f, fn, params, target, problems)
        else:
            lower_device_function(NvptxLowering(module, f, functions[f.name], target),
                                  problems)
    return llmod


def _device_runtime_names(module: ir.Module, llmod: ll.Module,
                          functions: dict[str, ll.Function]) -> None:
    """Calls of CUDA's device runtime as libcudadevrt.a defines them: a declaration under a
    CUDA C++ name (`cudaLaunchDevice`, the Programming Guide's PTX form) becomes one of the
    library's `__cudaCDP2` function of that name (same parameters; cuda_device_runtime_api.h
    maps one to the other). CDP1's device-side cudaDeviceSynchronize is left undeclared, so
    that its call is refused with the reason (device_runtime.refusal)."""
    for f in module.functions.values():
        canonical = canonical_name(f.name)
        if not f.is_declaration or canonical is None or f.name not in functions:
            continue
        if canonical in CDP1_ONLY:
            del functions[f.name]
        elif not f.name.startswith("__cudaCDP2"):
            library_name = "__cudaCDP2" + f.name[len("cuda"):]
            typ = functions[f.name].function_type
            existing = llmod.globals.get(library_name)
            functions[f.name] = existing if existing is not None else \
                ll.Function(llmod, typ, name=library_name)


def _declare_kernel(module: ir.Module, kernel: ir.Function, llmod: ll.Module,
                    problems: list | None) -> tuple[ll.Function | None, list]:
    """The LLVM function of a kernel (declared before any body is lowered, so that a
    device-side launch in an earlier kernel can take its address), with its parameters (see
    kernel_parameters); (None, []) where they cannot be passed."""
    params = kernel_parameters(module, kernel, NvptxLowering.pass_type, problems)
    if params is None:
        return None, []
    fn = ll.Function(llmod, ll.FunctionType(ll.VoidType(), [t for t, _ in params]),
                     name=kernel.name)
    fn.calling_convention = "ptx_kernel"
    _annotate(llmod, fn, kernel)
    return fn, params


def _lower_kernel(module: ir.Module, kernel: ir.Function, fn: ll.Function, params: list,
                  target: NvptxTarget, problems: list | None) -> None:
    llmod = fn.module
    memcpy = declare(llmod, "llvm.memcpy.p0.p0.i64", ll.VoidType(), [PTR, PTR, I64, I1])

    def byval(fl: GpuLowering, at: ll.Value, arg: ll.Argument, slot: ParamSlot) -> None:
        """A memcpy, which LLVM turns into loads of the parameter where it is read."""
        arg.add_attribute("byval")
        arg.attributes.align = slot.align
        fl.b.call(memcpy, [at, fl.b.bitcast(arg, PTR), const_int(I64, slot.size), I1(0)])

    fl = NvptxLowering(module, kernel, fn, target)
    copy_kernel_parameters(fl, params, byval)
    fl.lower_function(problems)


# --- compiling ------------------------------------------------------------------------------

def ptx_version(module: ir.Module, arch: str) -> tuple[int, int]:
    """The PTX ISA version of the output: the module's own (its inline PTX may need it), at
    least what `arch` needs, at most what LLVM writes."""
    return min(max(tuple(module.version), ARCHS[arch]), _NEWEST_PTX)


def compile_module(module: ir.Module, arch: str = "sm_80") -> str:
    """PTX for every kernel and device function of a verified IR module, for `arch`
    ("sm_80", "sm_90", ...). Raises UnsupportedFeatureError naming the first instruction
    NVPTX cannot express, ValueError for an architecture not in ARCHS."""
    if arch not in ARCHS:
        raise ValueError(f"unknown NVIDIA architecture '{arch}' (known: {', '.join(ARCHS)})")
    arch = _specific_arch(module, arch)
    llmod = build_llvm(module)
    major, minor = ptx_version(module, arch)
    tm = target_machine(TRIPLE, cpu=arch, features=f"+ptx{major}{minor}", opt=3)
    parsed = parse_verified(str(llmod), "NVPTX")
    tuning = llvm.PipelineTuningOptions(speed_level=3)
    # NVVM already unrolled what it wanted to; unrolling again only adds registers.
    tuning.loop_unrolling = False
    pb = llvm.create_pass_builder(tm, tuning)
    pb.getModulePassManager().run(parsed, pb)
    return tm.emit_assembly(parsed)


def _specific_arch(module: ir.Module, arch: str) -> str:
    """`arch`, or sm_90a for a module with wgmma on sm_90: the warpgroup instructions exist
    only in sm_90a's architecture-specific PTX (PTX ISA 9.7.15); other architectures are
    refused, naming the instruction."""
    found = next((inst for f in module.functions.values() for block in f.blocks
                  for inst in block.instructions if inst.opcode == "wgmma"), None)
    if found is None or arch == "sm_90a":
        return arch
    if arch == "sm_90":
        return "sm_90a"
    raise UnsupportedFeatureError(found.spec.text, f"nvptx for {arch}",
                                  module.location(found.pos),
                                  "wgmma exists only on sm_90a (compile for sm_90 or sm_90a)",
                                  module.source_line(found.pos))


def unsupported_instructions(module: ir.Module) -> dict[int, str]:
    """id(instruction) -> why NVPTX cannot compile it, for every such instruction of
    `module` (found by the lowering itself, so this agrees with compile_module)."""
    problems: list = []
    build_llvm(module, problems)
    return {id(inst): reason for inst, reason in problems}
