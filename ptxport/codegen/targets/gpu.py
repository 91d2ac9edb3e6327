"""What the GPU targets (nvptx, amdgpu, spirv) lower the same way: a function's body, memory
operands as pointers in their state space's address space (GpuLowering), calls of device
functions and their parameters and results (passed by value, as PTX passes them; GpuTarget),
kernel parameters copied into the buffer ld.param reads, module variables with their
initial values, and handing the LLVM IR to LLVM."""

from __future__ import annotations

import struct
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable

import llvmlite.binding as llvm
from llvmlite import ir as ll

from ptxport.codegen.device_runtime import refusal
from ptxport.codegen.lower import (
    I1,
    I8,
    I32,
    I64,
    PTR,
    FunctionLowering,
    Target,
    const_int,
    declare,
    value_type,
)
from ptxport.errors import CompileError, UnsupportedFeatureError
from ptxport.ir import nodes as ir
from ptxport.ir.abi import ParamSlot, param_layout
from ptxport.ir.analysis import address_taken
from ptxport.ptx.ast import FloatImm, IntImm

__all__ = ["GpuLowering", "GpuTarget", "copy_kernel_parameters", "declare_functions",
           "function_numbers", "function_type", "generic", "initialize", "initializer",
           "kernel_parameters", "lower_device_function", "lower_return",
           "module_variable", "numbered_address", "opaque_variable", "parse_verified", "pass_type",
           "return_results", "signature", "target_machine"]


class GpuLowering(FunctionLowering, ABC):
    """FunctionLowering of a GPU target: a memory operand is a pointer in the LLVM address
    space of its state space, so that LLVM selects that space's loads and stores; a kernel's
    parameters lie in `param_buffer` (copy_kernel_parameters), a device function's in stack
    slots (lower_device_function).

    A target's subclass says how it passes parameters and results (the class attributes
    below, for pass_type), where a variable lies for an access in a state space
    (`variable_in`), and what an address held in a register points at in a state space
    (`address_in`)."""

    param_buffer: ll.Value | None = None
    # For pass_type: the target's name in its errors, why it cannot pass texture, sampler
    # and surface references, and whether it passes predicates as bytes.
    target_name = "gpu"
    opaque_reason = ""
    predicates_as_bytes = False
    # State spaces whose addresses the target keeps in 32 bits (AMDGPU's LDS): a 64-bit
    # register holding one is truncated, where a 32-bit one is otherwise widened.
    narrow_spaces: frozenset[str] = frozenset()

    @classmethod
    def pass_type(cls, var: ir.Variable) -> ll.Type:
        """How the target passes a device function's parameter or result, or a kernel's
        parameter (pass_type)."""
        return pass_type(var, cls.target_name, cls.opaque_reason, cls.predicates_as_bytes)

    def fall_off_end(self) -> None:
        """A kernel returns; a device function returns its results."""
        if self.function.is_kernel:
            self.b.ret_void()
        else:
            return_results(self, self.pass_type)

    def pointer(self, operand, space: str | None, size: int = 1,
                write: bool = False) -> ll.Value:
        """A pointer in the address space the target gives `space` (None: generic), so that
        LLVM selects the state space's instructions."""
        if not isinstance(operand, ir.Address):
            raise self.unsupported(self.inst, "a memory operand must be written [address]")
        base, offset = operand.base, operand.offset
        if isinstance(base, ir.Variable):
            pointer = self.variable_in(base, space)
        else:
            pointer = self.address_in(self._address(base, space), space)
        if offset:
            pointer = self.b.gep(pointer, [const_int(I64, offset)], source_etype=I8)
        return pointer

    def _address(self, base: ir.Register | None, space: str | None) -> ll.Value:
        """The address in register `base` (0 without one): an i64, or an i32 in a space of
        `narrow_spaces`."""
        address = const_int(I64, 0) if base is None else \
            self.read(base, "u64" if base.type.bits == 64 else "u32")
        if space in self.narrow_spaces:
            return self.b.trunc(address, I32) if address.type.width == 64 else address
        return self.b.zext(address, I64) if address.type.width == 32 else address

    @abstractmethod
    def variable_in(self, var: ir.Variable, space: str | None) -> ll.Value:
        """A pointer to `var` for an access in state space `space`."""

    @abstractmethod
    def address_in(self, address: ll.Value, space: str | None) -> ll.Value:
        """The pointer that `address` (from _address) is in state space `space`."""

    def frame_variable(self, var: ir.Variable) -> ll.Value:
        """A function's own .param or .local variable: its parameter's slot, else stack
        memory made at the function's entry on first use."""
        if var.name in self.param_pointers:
            return self.param_pointers[var.name]
        if var.space in ("local", "param"):
            return self.stack_variable(var, 4)
        raise self.unsupported(self.inst, f"a variable in .{var.space} space")


class GpuTarget(Target):
    """What the GPU targets' Target objects share: the module's variables (`globals`, their
    LLVM globals) and device functions (`functions`, LLVM functions by name), and calls of
    device functions, which take their parameters and give their results by value, as PTX
    passes them (so that a recursion's frames are no larger than the original's).

    Calls through an address (function pointers, virtual functions) are LLVM's indirect calls
    where the target has function pointers (`function_pointers`); elsewhere a function's
    address is its number among the module's address-taken functions (function_numbers), and
    a call compares the address with each candidate's number and calls that one directly."""

    # Why a callee has no LLVM function, in the target's words; the calling convention of
    # device functions (None: LLVM's default).
    no_function = "whose parameters the target cannot pass"
    function_convention: str | None = None
    function_pointers = False

    def __init__(self, module: ir.Module, llmod: ll.Module, globals_: dict,
                 functions: dict[str, ll.Function]):
        self.module, self.llmod = module, llmod
        self.globals, self.functions = globals_, functions
        self.function_numbers = function_numbers(module)

    @abstractmethod
    def own_pointer(self, fl: GpuLowering, var: ir.Variable) -> ll.Value:
        """A variable's storage, in its state space's address space."""

    def global_variable(self, fl: GpuLowering, var: ir.Variable) -> ll.Value:
        """The LLVM global of a .global, .const or .shared variable."""
        pointer = self.globals.get(var.name)
        if pointer is None:
            raise fl.unsupported(fl.inst, fl.opaque_reason if var.type.kind == "opaque" else
                                 f"the .{var.space} variable '{var.name}' is not declared "
                                 "at module scope")
        return pointer

    def hidden_arguments(self, fl: GpuLowering) -> list[ll.Value]:
        """What the target passes device functions after PTX's parameters (declared with
        declare_functions' `hidden`): nothing unless the target says otherwise."""
        return []

    def enter_function(self, fl: GpuLowering) -> None:
        """Set up a device function's lowering at its entry, once its parameters are in
        their slots (nothing unless the target needs it)."""

    def trap(self, fl: GpuLowering, inst: ir.Instruction) -> None:
        """llvm.trap, which ends the kernel with an error."""
        fl.b.call(declare(self.llmod, "llvm.trap", ll.VoidType(), []), [])
        fl.b.unreachable()

    def call(self, fl: GpuLowering, inst: ir.Instruction, callee: ir.Function,
             returns: list, args: list) -> None:
        """A call of a device function: the .param variables of the call sequence hold its
        parameters before and its results after."""
        if len(args) != len(callee.params) or len(returns) != len(callee.returns):
            raise fl.unsupported(inst, "a call whose arguments do not match the callee")
        if not all(isinstance(v, ir.Variable) for v in list(returns) + list(args)):
            raise fl.unsupported(inst, "call arguments must be .param variables")
        llcallee = self.functions.get(callee.name)
        if llcallee is None:
            raise fl.unsupported(inst, refusal(callee.name)
                                 or f"a call of '{callee.name}', {self.no_function}")
        self._call_value(fl, llcallee, returns, args)

    def _call_value(self, fl: GpuLowering, callee: ll.Value, returns: list,
                    args: list) -> None:
        """Call `callee` (with its `function_type`) with the values of the .param variables
        `args` and the target's hidden arguments, and store its results into `returns`."""
        hidden = self.hidden_arguments(fl)
        types = callee.function_type.args[:len(callee.function_type.args) - len(hidden)]
        values = [fl.b.load(self.own_pointer(fl, arg), typ=typ)
                  for arg, typ in zip(args, types, strict=True)]
        result = fl.b.call(callee, values + hidden, cconv=self.function_convention)
        for i, var in enumerate(returns):
            value = result if len(returns) == 1 else fl.b.extract_value(result, i)
            fl.b.store(value, self.own_pointer(fl, var))

    def function_address(self, fl: FunctionLowering, function: ir.Function) -> ll.Value:
        """`mov.u64 %rd, func`: the function's address, or its number."""
        if function.is_kernel:
            return self.kernel_address(fl, function)
        if function.name not in self.functions:
            raise fl.unsupported(fl.inst, f"the address of '{function.name}', a function "
                                          "the target does not compile on its own")
        if self.function_pointers:
            return fl.b.ptrtoint(self.functions[function.name], I64)
        return const_int(I64, self.function_numbers[function.name])

    def kernel_address(self, fl: FunctionLowering, kernel: ir.Function) -> ll.Value:
        """`mov.u64 %rd, kernel`: what a device-side launch names (dynamic parallelism),
        refused unless the target launches grids from the device."""
        raise fl.unsupported(fl.inst, f"dynamic parallelism: the address of the kernel "
                                      f"'{kernel.name}' (what a device-side launch names; "
                                      "ptxport runs such launches on the cpu and nvptx "
                                      "targets only)")

    def indirect_call(self, fl: FunctionLowering, inst: ir.Instruction, address: ll.Value,
                      returns: list, args: list) -> None:
        """`call (ret), %rd, (args), prototype`: through the address, or by comparing it with
        the number of each function of the prototype's LLVM type and calling that one."""
        if not all(isinstance(v, ir.Variable) for v in list(returns) + list(args)):
            raise fl.unsupported(inst, "call arguments must be .param variables")
        hidden = [value.type for value in self.hidden_arguments(fl)]
        prototype = signature([fl.pass_type(v) for v in returns],
                              [fl.pass_type(v) for v in args] + hidden)
        if self.function_pointers:
            callee = _CalleeAddress(fl.b.block, address, prototype)
            fl.b._insert(callee)    # llvmlite has no public way to insert an instruction
            self._call_value(fl, callee, returns, args)
            return
        done = fl.llfn.append_basic_block("indirect_done")
        for name, number in self.function_numbers.items():
            callee = self.functions.get(name)
            if callee is None and self._of_type(fl, name, prototype, hidden):
                raise fl.unsupported(inst, f"a call through an address that may be '{name}', "
                                           "a function the target does not compile on its "
                                           "own")
            if callee is None or callee.function_type != prototype:
                continue
            hit = fl.llfn.append_basic_block(f"indirect_{name}")
            miss = fl.llfn.append_basic_block("indirect_next")
            fl.b.cbranch(fl.b.icmp_unsigned("==", address, const_int(I64, number)), hit, miss)
            fl.b.position_at_end(hit)
            self._call_value(fl, callee, returns, args)
            fl.b.branch(done)
            fl.b.position_at_end(miss)
        self.call_of_no_function(fl, inst)
        if fl.b.block.terminator is None:
            fl.b.branch(done)
        fl.b.position_at_end(done)

    def _of_type(self, fl: GpuLowering, name: str, prototype: ll.FunctionType,
                 hidden: list[ll.Type]) -> bool:
        """Whether the function `name` would have the LLVM type `prototype` (declared with
        the target's `hidden` parameters)."""
        try:
            typ = function_type(self.module.functions[name], fl.pass_type)
            return ll.FunctionType(typ.return_type, [*typ.args, *hidden]) == prototype
        except UnsupportedFeatureError:
            return False

    def call_of_no_function(self, fl: FunctionLowering, inst: ir.Instruction) -> None:
        """A call through an address that is no function of the prototype's type (undefined
        in PTX): the kernel traps rather than jump anywhere."""
        self.trap(fl, inst)


class _CalleeAddress(ll.instructions.CastInstr):
    """`inttoptr` of an address into a function pointer of `function_type` (what llvmlite's
    call reads of its callee; its own reads a typed pointer, which LLVM's IR no longer has)."""

    function_type = None

    def __init__(self, parent: ll.Block, address: ll.Value, prototype: ll.FunctionType):
        super().__init__(parent, "inttoptr", address, PTR)
        self.function_type = prototype


def generic(constant: ll.Constant) -> ll.Constant:
    """`addrspacecast (constant to ptr)` (llvmlite has no constant addrspacecast)."""
    return ll.FormattedConstant(PTR, f"addrspacecast ({constant.type} "
                                     f"{constant.get_reference()} to ptr)")


def lower_return(fl: GpuLowering, inst: ir.Instruction) -> None:
    """ret: a kernel returns; a device function returns its results' values. What follows
    goes into a block of its own (unreachable unless branched to)."""
    fl.fall_off_end()
    fl.b.position_at_end(fl.llfn.append_basic_block("after_ret"))


def lower_device_function(fl: GpuLowering, problems: list | None) -> None:
    """A device function whose parameters are copied into, and whose results are returned
    from, stack slots that the body's ld.param/st.param use (SROA makes registers of them
    again)."""
    for var, arg in zip(fl.function.params, fl.llfn.args[:len(fl.function.params)],
                        strict=True):
        slot = fl.entry_alloca(arg.type, var.name, max(var.alignment, 1))
        fl.b.store(arg, slot)
        fl.param_pointers[var.name] = slot
    for var in fl.function.returns:
        fl.param_pointers[var.name] = fl.entry_alloca(fl.pass_type(var), var.name,
                                                      max(var.alignment, 1))
    fl.target.enter_function(fl)
    fl.lower_function(problems)


def declare_functions(module: ir.Module, llmod: ll.Module, functions: Iterable[ir.Function],
                      pass_as: Callable[[ir.Variable], ll.Type],
                      problems: list | None,
                      hidden: tuple[ll.Type, ...] = ()) -> dict[str, ll.Function]:
    """An LLVM function of function_type's type for each of `functions` (device functions),
    by name, with the target's `hidden` parameters after PTX's (see GpuTarget.hidden_arguments);
    one whose parameters or results the target cannot pass is refused (see _passable)."""
    declared = {}
    for f in functions:
        typ = _passable(module, f, problems, lambda f=f: function_type(f, pass_as))
        if typ is not None:
            typ = ll.FunctionType(typ.return_type, [*typ.args, *hidden])
            declared[f.name] = ll.Function(llmod, typ, name=f.name)
    return declared


def kernel_parameters(module: ir.Module, kernel: ir.Function,
                      pass_as: Callable[[ir.Variable], ll.Type], problems: list | None,
                      reference_space: int = 0,
                      target: str | None = None) -> list[tuple[ll.Type, bool]] | None:
    """Each of a kernel's LLVM parameters, with the PTX parameter's size and alignment (so that
    a launch packs arguments as for the original), and whether it is passed by reference:
    aggregates (`.param .align A .b8 name[N]`) and over-aligned parameters, as pointers in
    address space `reference_space`. None where one cannot be passed (see _passable)."""
    def parameters() -> list[tuple[ll.Type, bool]]:
        params = []
        for var in kernel.params:
            typ = pass_as(var)
            if isinstance(typ, ll.ArrayType) or var.align not in (None, var.type.size):
                aggregate = ll.ArrayType(I8, max(var.size, 1))
                params.append((ll.PointerType(aggregate, addrspace=reference_space), True))
            else:
                params.append((typ, False))
        return params

    return _passable(module, kernel, problems, parameters, target)


def _passable(module: ir.Module, f: ir.Function, problems: list | None, types: Callable,
              target: str | None = None):
    """`types()`, the LLVM types of f's parameters; where the target cannot pass one, raise
    its error at f's line (naming `target` where given), or with `problems` (a list) report
    every instruction of `f` there and give None."""
    try:
        return types()
    except UnsupportedFeatureError as e:
        if problems is None:
            raise UnsupportedFeatureError(e.feature, target or e.target, module.location(f.pos),
                                          e.reason) from None
        problems.extend((inst, e.reason) for inst in f.instructions())
        return None


def copy_kernel_parameters(
        fl: GpuLowering, params: list[tuple[ll.Type, bool]],
        by_reference: Callable[[GpuLowering, ll.Value, ll.Argument, ParamSlot], None]) -> None:
    """Copy a kernel's parameters (`params` from kernel_parameters) into `fl.param_buffer`,
    stack memory laid out by ir.abi.param_layout, which ld.param reads: one passed by value
    is stored at its slot, and `by_reference(fl, at, arg, slot)` copies one passed by
    reference to `at`, the target's way."""
    slots, size = param_layout(fl.function)
    largest = max([s.align for s in slots], default=1)
    fl.param_buffer = fl.entry_alloca(ll.ArrayType(I8, max(size, 1)), "params", largest)
    for slot, arg, (_, reference) in zip(slots, fl.llfn.args, params, strict=True):
        at = fl.b.gep(fl.param_buffer, [const_int(I64, slot.offset)], source_etype=I8)
        if reference:
            by_reference(fl, at, arg, slot)
        else:
            fl.b.store(arg, at, align=slot.align)
        fl.param_pointers[slot.name] = at


def return_results(fl: FunctionLowering, value_type: Callable[[ir.Variable], ll.Type]) -> None:
    """Return a device function's results (read from their .param slots): none, one value,
    or a struct of them; `value_type` is how the target passes each."""
    results = [fl.b.load(fl.param_pointers[var.name], typ=value_type(var))
               for var in fl.function.returns]
    if not results:
        fl.b.ret_void()
    elif len(results) == 1:
        fl.b.ret(results[0])
    else:
        aggregate = ll.Constant(fl.llfn.function_type.return_type, None)
        for i, value in enumerate(results):
            aggregate = fl.b.insert_value(aggregate, value, i)
        fl.b.ret(aggregate)


def pass_type(var: ir.Variable, target: str, opaque_reason: str,
              predicates_as_bytes: bool = False) -> ll.Type:
    """How a parameter or result of PTX size and type is passed in LLVM: f32/f64 as floats,
    predicates as i1 (as bytes with `predicates_as_bytes`), other scalars as integers of
    their width, everything else as bytes."""
    t = var.type
    if t.kind == "opaque":
        raise UnsupportedFeatureError(f".param .{t.name} {var.name}", target, None,
                                      opaque_reason)
    if not (var.dims or var.vector or var.elements != 1):
        if t.name in ("f32", "f64"):
            return value_type(t)
        if t.kind == "pred":
            if not predicates_as_bytes:
                return I1
        elif t.bits in (8, 16, 32, 64):
            return ll.IntType(t.bits)
    return ll.ArrayType(I8, max(var.size, 1))


def function_type(f: ir.Function, pass_as: Callable[[ir.Variable], ll.Type]) -> ll.FunctionType:
    """A device function's LLVM type (signature of how the target passes its results and
    parameters)."""
    return signature([pass_as(v) for v in f.returns], [pass_as(p) for p in f.params])


def signature(results: list[ll.Type], params: list[ll.Type]) -> ll.FunctionType:
    """The LLVM type of a function that takes `params` by value and returns its results: none,
    one, or a struct of several."""
    ret = (ll.VoidType() if not results else results[0] if len(results) == 1
           else ll.LiteralStructType(results))
    return ll.FunctionType(ret, params)


def numbered_address(module: ir.Module) -> FunctionAddress:
    """A function's address in an initializer, on a target that calls through numbers."""
    numbers = function_numbers(module)

    def address(function: ir.Function) -> ll.Constant | None:
        number = numbers.get(function.name)
        return None if number is None else const_int(I64, number)
    return address


def function_numbers(module: ir.Module) -> dict[str, int]:
    """The address of each device function whose address is taken, on a target that calls
    through numbers: 1, 2, ... in the order address_taken finds them (0 stays the null
    pointer, which calls nothing)."""
    return {f.name: number for number, f in enumerate(
        address_taken(module, (f for f in module.functions.values() if not f.is_declaration)),
        start=1)}


def opaque_variable(module: ir.Module, var: ir.Variable, target: str, reason: str,
                    collecting: bool) -> bool:
    """Whether `var` is a texture, sampler or surface reference, which a target without them
    leaves out when `collecting` (the instructions using it report that) and otherwise
    refuses, saying `reason`."""
    if var.type.kind != "opaque":
        return False
    if collecting:
        return True
    raise UnsupportedFeatureError(f".{var.space} .{var.type.name} {var.name}", target,
                                  module.location(var.pos), reason)


def module_variable(llmod: ll.Module, var: ir.Variable, name: str, element: ll.Type,
                    addrspace: int) -> ll.GlobalVariable:
    """The LLVM global of a .global, .const or .shared variable in `addrspace`: an array of
    `element` where PTX declares one (of no elements where unsized, which LLVM places after
    the static ones), with PTX's linkage for .shared and .extern variables. The others need
    their initial value (initialize)."""
    count = var.elements * (var.vector or 1)
    typ = ll.ArrayType(element, 0 if var.unsized else count) \
        if (var.dims or var.vector or count > 1 or var.unsized) else element
    g = ll.GlobalVariable(llmod, typ, name=name, addrspace=addrspace)
    g.align = max(var.alignment, 16 if var.unsized else 1)
    # Untyped, as LLVM's pointers are (llvmlite checks stores against a pointee type).
    g.type = ll.PointerType(addrspace=addrspace)
    if var.space == "shared":
        g.linkage = "external" if var.unsized or var.is_extern else "internal"
        if not (var.unsized or var.is_extern):
            g.initializer = ll.Constant(typ, ll.Undefined)
    elif var.is_extern:
        g.linkage = "external"
    return g


# How a target writes a function's address in an initializer (None: it cannot).
FunctionAddress = Callable[[ir.Function], ll.Constant | None]


def initialize(module: ir.Module, var: ir.Variable, g: ll.GlobalVariable, element: ll.Type,
               globals_: dict, target: str, collecting: bool,
               function_address: FunctionAddress | None = None) -> None:
    """Give `g` the initial value of `var` (initializer); one that cannot be made raises, or
    when `collecting` is zero (the instructions using the variable report the problem)."""
    try:
        g.initializer = initializer(module, var, g.value_type, element, globals_, target,
                                    function_address)
    except UnsupportedFeatureError:
        if not collecting:
            raise
        g.initializer = ll.Constant(g.value_type, None)
    g.value_type = g.initializer.type


def initializer(module: ir.Module, var: ir.Variable, typ: ll.Type, element: ll.Type,
                globals_: dict, target: str,
                function_address: FunctionAddress | None = None) -> ll.Constant:
    """The initial value; with addresses of variables among the items, a literal struct whose
    address fields are pointers (what NVPTX prints as `generic(var)+offset` or `var+offset`).
    A function's address (a vtable's or a table's entry) is `function_address(function)`."""
    if var.init is None:
        return ll.Constant(typ, None)
    values = [_initial_item(module, var, item, element, globals_, target, function_address)
              for item in var.init]
    if not isinstance(typ, ll.ArrayType):
        return values[0]
    values += [ll.Constant(element, None)] * (typ.count - len(values))
    if any(v.type != element for v in values):
        return ll.Constant.literal_struct(values)
    return ll.Constant(typ, values)


def _initial_item(module: ir.Module, var: ir.Variable, item, element: ll.Type,
                  globals_: dict, target: str,
                  function_address: FunctionAddress | None) -> ll.Constant:
    if isinstance(item, IntImm):
        return (const_int(element, item.value) if isinstance(element, ll.IntType)
                else ll.Constant(element, float(item.value)))
    if isinstance(item, FloatImm):
        if isinstance(element, ll.IntType):
            return const_int(element, item.bits)
        return ll.Constant(element, _float_of(item))
    if isinstance(item, ir.SymbolAddress) and isinstance(item.target, ir.Variable) \
            and item.target.name in globals_ and element == I64:
        target = globals_[item.target.name]
        expression = target.get_reference()
        if item.offset:
            expression = f"getelementptr (i8, {target.type} {expression}, i64 {item.offset})"
        if item.generic:
            return ll.FormattedConstant(PTR, f"addrspacecast ({target.type} {expression} "
                                             "to ptr)")
        return ll.FormattedConstant(target.type, expression)
    if isinstance(item, ir.SymbolAddress) and isinstance(item.target, ir.Function) \
            and not (item.offset or item.generic) and element == I64 \
            and function_address is not None:
        address = function_address(item.target)
        if address is not None:
            return address
    raise UnsupportedFeatureError("initializer", target, module.location(var.pos),
                                  f"cannot initialize '{var.name}' with {item!r}")


def _float_of(item: FloatImm) -> float:
    if item.width == 32:
        return struct.unpack("<f", struct.pack("<I", item.bits))[0]
    return struct.unpack("<d", struct.pack("<Q", item.bits))[0]


# --- handing the LLVM IR to LLVM ------------------------------------------------------------------

_LOCK = threading.Lock()
_INITIALIZED = False


def target_machine(triple: str, **options) -> llvm.TargetMachine:
    """LLVM's target machine for `triple` (`options` as create_target_machine takes them);
    the first call, from whichever thread, initializes LLVM's targets."""
    global _INITIALIZED
    with _LOCK:
        if not _INITIALIZED:
            llvm.initialize_all_targets()
            llvm.initialize_all_asmprinters()
            _INITIALIZED = True
    return llvm.Target.from_triple(triple).create_target_machine(**options)


def parse_verified(text: str, target: str) -> llvm.ModuleRef:
    """The LLVM IR `text` that ptxport made for `target` ("NVPTX", ...), parsed in a fresh
    context and verified; IR that LLVM refuses is ptxport's bug, and is reported as one."""
    try:
        parsed = llvm.parse_assembly(text, context=llvm.create_context())
        parsed.verify()
    except RuntimeError as e:
        raise CompileError(f"LLVM refused the IR ptxport made for {target}; please report "
                           "this to ptxport", str(e)) from None
    return parsed
