"""IR -> LLVM IR, the part every target shares.

`FunctionLowering` turns one IR function into one LLVM function: each PTX register becomes an
alloca (PTX registers are assigned many times; LLVM's mem2reg/SROA build SSA from them), each
IR block an LLVM block, and each instruction is lowered by the function registered for its
opcode in `LOWERINGS` (the modules of codegen/ops/ register them with `@lowering("add")`).

What differs between targets — where special registers, shared and local memory come from,
barriers and warp operations, exits and traps — is asked of the `Target` object, so that an
instruction's meaning is written once here and in ops/.

Operand rules follow PTX ISA 5.4 ("Operand Size Exceeding Instruction-Type Size"): a source
register wider than the instruction type is truncated; a destination register wider than
the instruction type is sign-extended for signed types and zero-extended otherwise.
"""

from __future__ import annotations

import struct
from abc import ABC, abstractmethod
from collections.abc import Callable

from llvmlite import ir as ll

from ptxport.errors import InternalError, PtxportError, UnsupportedFeatureError
from ptxport.ir import nodes as ir
from ptxport.ir.types import TYPES, Type
from ptxport.ptx.ast import FloatImm, IntImm, Sink

__all__ = [
    "LOWERINGS", "lowering", "FunctionLowering", "Target", "BFloatType", "value_type",
    "I1", "I8", "I16", "I32", "I64", "PTR", "const_int", "counter_word", "declare",
    "loop_headers",
]

I1, I8, I16, I32, I64 = (ll.IntType(n) for n in (1, 8, 16, 32, 64))
PTR = ll.PointerType()


class BFloatType(ll.types._BaseFloatType):
    """LLVM's `bfloat` (llvmlite has no class for it)."""

    null = "0xR0000"
    intrinsic_name = "bf16"

    def __str__(self) -> str:
        return "bfloat"

    def format_constant(self, value: float) -> str:
        bits = struct.unpack("<I", struct.pack("<f", value))[0]
        rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16  # round to nearest even
        return f"0xR{rounded & 0xFFFF:04X}"


BFloatType._create_instance()
BF16 = BFloatType()

_FLOATS = {"f16": ll.HalfType(), "bf16": BF16, "f32": ll.FloatType(), "f64": ll.DoubleType(),
           "tf32": ll.FloatType()}


def value_type(t: Type) -> ll.Type:
    """The LLVM type an instruction computes in for PTX type `t`."""
    if t.kind == "pred":
        return I1
    if t.name in _FLOATS:
        return _FLOATS[t.name]
    if t.name in ("f16x2", "bf16x2"):
        return ll.VectorType(_FLOATS[t.name[:-2]], 2)
    return ll.IntType(t.bits)


def one_lane(t: ll.Type) -> ll.Type:
    """The type of one lane's value: `t`, or its element when `t` holds a warp's lanes
    (the CPU's warp gangs compute these lowerings on such vectors, and call an LLVM
    intrinsic declared for one lane in its vector form)."""
    return t.element if getattr(t, "is_lanes", False) else t


def const_int(type_: ll.IntType, value: int) -> ll.Constant:
    return ll.Constant(type_, value & ((1 << type_.width) - 1))


def declare(llmod: ll.Module, name: str, ret: ll.Type, args: list) -> ll.Function:
    """The function `name` of `llmod` (an LLVM intrinsic, mostly), declared as `ret(args)`
    on first use."""
    existing = llmod.globals.get(name)
    if existing is not None:
        return existing
    return ll.Function(llmod, ll.FunctionType(ret, args), name)



# A rare branch's weights: LLVM lays its blocks out of the hot path, and puts spills and
# reloads there (a failed check, a fault, a NaN's payload).
_LIKELY = 1 << 20


def expect(fl: FunctionLowering, branch, likely: bool = True):
    """Mark a conditional branch's true (likely) or false edge as the one taken."""
    module = fl.llfn.module
    weights = (_LIKELY, 1) if likely else (1, _LIKELY)
    branch.set_metadata("prof", module.add_metadata(
        [ll.MetaDataString(module, "branch_weights"), I32(weights[0]), I32(weights[1])]))
    return branch


def counter_word(b: ll.IRBuilder, counter: ll.Value, name: str) -> ll.Value:
    """The special register `name` read from its 64-bit counter (an i64): %clock64 and
    %globaltimer are the whole counter, %clock_hi and %globaltimer_hi its upper 32 bits,
    %clock and %globaltimer_lo its lower 32 bits."""
    if name in ("%clock64", "%globaltimer"):
        return counter
    if name.endswith("_hi"):
        counter = b.lshr(counter, I64(32))
    return b.trunc(counter, I32)

# --- the per-opcode lowering table ------------------------------------------------------------

Lowering = Callable[["FunctionLowering", ir.Instruction], None]
LOWERINGS: dict[str, Lowering] = {}


def lowering(*opcodes: str):
    """Register the decorated function as the lowering of `opcodes`."""
    def register(fn: Lowering) -> Lowering:
        for op in opcodes:
            LOWERINGS[op] = fn
        return fn
    return register


class Target(ABC):
    """What a target provides to the shared lowering. Each method gets the FunctionLowering
    whose builder is positioned where the code goes."""

    name = "abstract"
    # The widest integers the target's code may compute with (products twice as wide as
    # their operands are built from narrower ones beyond it).
    widest_integer = 128
    # Whether LLVM's llvm.ldexp is an instruction of the target on f32 (and its vectors): a
    # lowering may then scale by a power of two with it (else LLVM may call libm's ldexpf).
    native_ldexp = False
    # Whether an f64 result's NaN payload (float_format.f64_nan) is chosen on a branch taken
    # only where the result is a NaN (a CPU's predicted, never-taken branch) rather than by
    # selects on every result's path (GPUs, whose lanes would diverge on it).
    f64_nan_branch = False

    def rounded_f32(self, fl: FunctionLowering, op: str, xs: list, rnd: str) -> ll.Value | None:
        """op (add sub mul fma) of the f32 values `xs` rounded once in mode `rnd` (rz rm rp)
        by the machine's own arithmetic, IEEE 754's results in every case (signed zeros,
        subnormals, overflow; NaNs some NaN); None where the target has no such arithmetic
        for these values, and the lowering computes the exact result and rounds it."""
        return None

    def scaled_f32(self, fl: FunctionLowering, p: ll.Value, k: ll.Value) -> ll.Value | None:
        """p * 2**k (f32 values, k integral or NaN) rounded once to nearest, a NaN k giving a
        NaN, by one instruction of the machine; None where the target has none for these
        values."""
        return None

    @abstractmethod
    def special_register(self, fl: FunctionLowering, reg: ir.SpecialRegister) -> ll.Value:
        """The value of a special register (%tid.x, %laneid, %clock64, ...)."""

    @abstractmethod
    def space_base(self, fl: FunctionLowering, space: str) -> ll.Value | None:
        """The host pointer that address 0 of `space` maps to; None where the space's
        addresses are already generic (global, const)."""

    @abstractmethod
    def variable_pointer(self, fl: FunctionLowering, var: ir.Variable) -> ll.Value:
        """A pointer to a variable's storage."""

    def checked_pointer(self, fl: FunctionLowering, pointer: ll.Value, space: str | None,
                        size: int, write: bool) -> ll.Value:
        """`pointer`, after whatever check the target makes of an access through it."""
        return pointer

    def stack_memory(self, fl: FunctionLowering, size: ll.Value, align: int) -> ll.Value:
        """`size` (an i64) bytes of the function's stack memory (PTX's alloca), as a host
        pointer: LLVM's own stack, unless the target keeps stack memory elsewhere."""
        memory = fl.b.alloca(I8, size=size)
        memory.align = align
        return memory

    def stack_save(self, fl: FunctionLowering) -> ll.Value:
        """Where the function's stack memory ends now (PTX's stacksave), as a pointer."""
        return fl.b.call(declare(fl.llfn.module, "llvm.stacksave.p0", PTR, []), [])

    def stack_restore(self, fl: FunctionLowering, pointer: ll.Value) -> None:
        """Release the stack memory allocated since stack_save gave `pointer`."""
        restore = declare(fl.llfn.module, "llvm.stackrestore.p0", ll.VoidType(), [PTR])
        fl.b.call(restore, [pointer])

    @abstractmethod
    def exit(self, fl: FunctionLowering) -> None:
        """End the thread (a kernel's `exit` or `ret`)."""

    @abstractmethod
    def trap(self, fl: FunctionLowering, inst: ir.Instruction) -> None:
        """Abort the kernel (`trap`), reporting where."""

    def call(self, fl: FunctionLowering, inst: ir.Instruction, callee: ir.Function,
             returns: list, args: list) -> None:
        raise fl.unsupported(inst, "this target has no calls yet")

    def synchronize(self, fl: FunctionLowering, inst: ir.Instruction) -> None:
        """Barriers and warp-level operations (bar, barrier, shfl, vote, match, redux, ...)."""
        raise fl.unsupported(inst, "this target has no barriers or warp operations yet")

    def function_address(self, fl: FunctionLowering, function: ir.Function) -> ll.Value:
        """The address (an i64) of a function (`mov.u64 %rd, func`)."""
        raise fl.unsupported(fl.inst, "the address of a function")

    def indirect_call(self, fl: FunctionLowering, inst: ir.Instruction, address: ll.Value,
                      returns: list, args: list) -> None:
        """`call (ret), %reg, (args), prototype`: a call through an address."""
        raise fl.unsupported(inst, "indirect calls through a register")

    def warp_matrix(self, fl: FunctionLowering, inst: ir.Instruction) -> None:
        """The warp-collective matrix instructions (mma.sync.aligned, ldmatrix)."""
        raise fl.unsupported(inst, f"{inst.opcode} (a warp's matrix instruction) is not "
                                   f"implemented on target {self.name}")

    def warpgroup_matrix(self, fl: FunctionLowering, inst: ir.Instruction) -> None:
        """wgmma (sm_90a's warpgroup matrix multiply and its fence, commit and wait)."""
        raise fl.unsupported(inst, f"wgmma (a warpgroup's matrix multiply, sm_90a) is not "
                                   f"implemented on target {self.name}")

    def loop_header(self, fl: FunctionLowering) -> None:
        """Code at the start of a block that a branch reaches from itself or a later block
        (every loop passes one): where a target can stop a running launch, it looks there
        whether it was asked to. Nothing by default."""
        return

    def poll(self, fl: FunctionLowering, inst: ir.Instruction, test) -> ll.Value:
        """A non-blocking test of something other threads complete (mbarrier.test_wait):
        `test()` emits the test and gives an i1. Where threads run at the same time, the
        test itself."""
        return test()

    def wait_until(self, fl: FunctionLowering, inst: ir.Instruction, test) -> None:
        """Wait until `test()` (emitted as often as needed, an i1) holds, for something
        other threads complete (mbarrier.try_wait): where threads run at the same time, a
        loop."""
        loop = fl.llfn.append_basic_block("wait_until")
        done = fl.llfn.append_basic_block("waited")
        fl.b.branch(loop)
        fl.b.position_at_end(loop)
        fl.b.cbranch(test(), done, loop)
        fl.b.position_at_end(done)


def loop_headers(function: ir.Function) -> set[int]:
    """id() of every block a branch reaches from that block or a later one (blocks are in
    program order, so every cycle of the control flow passes one of these)."""
    index = {id(block): i for i, block in enumerate(function.blocks)}
    return {id(successor) for i, block in enumerate(function.blocks)
            for successor in block.successors if index.get(id(successor), i + 1) <= i}


class FunctionLowering:
    """The lowering of one IR function into one LLVM function (created by the caller)."""

    def __init__(self, module: ir.Module, function: ir.Function, llfn: ll.Function,
                 target: Target, param_pointers: dict[str, ll.Value] | None = None):
        self.module, self.function, self.llfn, self.target = module, function, llfn, target
        self.entry = llfn.append_basic_block("entry")
        self.b = ll.IRBuilder(self.entry)
        self.registers: dict[int, ll.AllocaInstr] = {}
        self.blocks: dict[int, ll.Block] = {}
        # Where function parameters and call-sequence `.param` variables live.
        self.param_pointers: dict[str, ll.Value] = dict(param_pointers or {})
        self.local_vars: dict[int, ll.Value] = {}
        self.inst: ir.Instruction | None = None
        # None: an unsupported instruction raises; a list: (instruction, reason) is appended
        # and lowering goes on (what a target cannot compile, all at once)
        self.problems: list | None = None
        self.carry: ll.AllocaInstr | None = None  # CC.CF, made on first use
        # f32 registers no instruction tells NaNs apart in (ir.analysis.nan_blind_registers),
        # found on first use
        self.nan_blind: set | None = None
        self.zero_sign_blind: set | None = None     # likewise +0 and -0
        self.finite: set | None = None      # never a NaN (ir.analysis.finite_registers)
        # how many div.full instructions divide by each register (ops/float_arith.py)
        self.full_divisors: dict | None = None

    # --- setup -------------------------------------------------------------------------------

    def declare_registers(self) -> None:
        for reg in self.function.registers.values():
            self.registers[id(reg)] = self.b.alloca(self.storage_type(reg), name=reg.name)

    def entry_alloca(self, typ: ll.Type, name: str = "", align: int = 0) -> ll.Value:
        """Stack memory made once at the function's entry, as an untyped pointer (llvmlite
        types allocas, and stores of other types through them would be refused)."""
        with self.b.goto_entry_block():
            self.b.position_at_start(self.entry)
            slot = self.b.alloca(typ, name=name)
            if align:
                slot.align = align
        # LLVM's pointers are untyped (llvmlite prints every pointer as `ptr`); only
        # llvmlite's own checks look at the pointee type, so the slot is declared untyped.
        slot.type = PTR
        return slot

    def store_atomic(self, value: ll.Value, pointer: ll.Value, ordering: str,
                     align: int) -> None:
        """An atomic store through an untyped pointer (llvmlite's builder insists on a typed
        one, which LLVM no longer has)."""
        self.b._insert(ll.instructions.StoreAtomicInstr(self.b.block, value, pointer,
                                                         ordering, align))

    def storage_type(self, reg: ir.Register) -> ll.Type:
        element = value_type(reg.type)
        return ll.ArrayType(element, reg.vector) if reg.vector else element

    def register_slot(self, reg: ir.Register) -> ll.AllocaInstr:
        return self.registers[id(reg)]

    def carry_flag(self) -> ll.AllocaInstr:
        """The carry flag CC.CF that add.cc/addc/sub.cc/subc/mad.cc/madc write and read: one
        i1 per function, made and cleared at its entry on first use."""
        if self.carry is None:
            with self.b.goto_entry_block():
                self.b.position_at_start(self.entry)
                self.carry = self.b.alloca(I1, name="cc.cf")
                self.b.store(ll.Constant(I1, 0), self.carry)
        return self.carry

    def create_blocks(self) -> ll.Block:
        """One LLVM block per IR block; returns the first (where execution starts)."""
        for block in self.function.blocks:
            self.blocks[id(block)] = self.llfn.append_basic_block(_label(block.label))
        return self.blocks[id(self.function.blocks[0])]

    def lower_function(self, problems: list | None = None) -> None:
        """Registers, blocks and instructions of the function, entered at its first block
        (a target that enters it otherwise calls the three steps itself); `problems`: see
        self.problems."""
        self.problems = problems
        self.declare_registers()
        first = self.create_blocks()
        self.b.position_at_end(self.entry)
        self.b.branch(first)
        self.lower_body()

    def lower_body(self) -> None:
        """Lower every block (after create_blocks; the caller links the entry block)."""
        headers = loop_headers(self.function)
        for i, block in enumerate(self.function.blocks):
            self.b.position_at_end(self.blocks[id(block)])
            if id(block) in headers:
                self.target.loop_header(self)
            for inst in block.instructions:
                self.lower_instruction(inst)
            if not self.b.block.is_terminated:
                following = self.function.blocks[i + 1] if i + 1 < len(self.function.blocks) \
                    else None
                if following is not None:
                    self.b.branch(self.blocks[id(following)])
                else:
                    self.fall_off_end()

    def fall_off_end(self) -> None:
        """Control reached the end of the function body: PTX returns (ptxas adds the ret)."""
        if self.function.is_kernel:
            self.target.exit(self)
        else:
            self.b.ret_void()

    def lower_instruction(self, inst: ir.Instruction) -> None:
        if self.problems is None:
            self._lower_instruction(inst)
            return
        try:
            self._lower_instruction(inst)
        except (UnsupportedFeatureError, InternalError) as e:
            # Collecting (for `ptxport inspect`): note it, and go on in a fresh block; the
            # LLVM IR made this way is only looked at, never compiled.
            self.problems.append((inst, getattr(e, "reason", "") or str(e)))
            self.b.position_at_end(self.llfn.append_basic_block("skipped"))

    def lowering_for(self, inst: ir.Instruction) -> Lowering | None:
        """The lowering of `inst`: the shared one for its opcode, unless a target lowers it
        its own way (targets override this)."""
        return LOWERINGS.get(inst.opcode)

    def stack_variable(self, var: ir.Variable, align: int) -> ll.Value:
        """Stack memory of this LLVM function for a .local or .param variable (a device
        function's locals, a call sequence's parameters), made at its entry on first use."""
        slot = self.local_vars.get(id(var))
        if slot is None:
            slot = self.entry_alloca(ll.ArrayType(I8, max(var.size, 1)), var.name,
                                     max(var.alignment, align))
            self.local_vars[id(var)] = slot
        return slot

    def guard_value(self, inst: ir.Instruction) -> ll.Value:
        """The i1 under which a guarded instruction runs (its predicate, negated for @!p)."""
        guard = self.b.load(self.register_slot(inst.guard))
        return self.b.not_(guard) if inst.guard_negated else guard

    def _lower_instruction(self, inst: ir.Instruction) -> None:
        try:
            self._lower_guarded(inst)
        except PtxportError:
            raise
        except Exception as e:   # a bug of ours: said as one, with the instruction at fault
            raise self.internal_error(inst, e, f"for target {self.target.name}") from e

    def internal_error(self, inst: ir.Instruction, e: Exception, how: str) -> InternalError:
        """The InternalError for an exception `e` of ptxport's own while lowering `inst`
        (`how`: "for target X", "as warp gangs"), naming the instruction and its line."""
        where = self.module.location(inst.pos)
        return InternalError(
            f"{where or self.function.name}: ptxport failed to compile '{inst.spec.text}' "
            f"{how} ({type(e).__name__}: {e}); this is a bug in ptxport: please report it "
            "with the PTX")

    def _lower_guarded(self, inst: ir.Instruction) -> None:
        self.inst = inst
        lower = self.lowering_for(inst)
        if lower is None:
            raise self.unsupported(inst, "no lowering for this instruction yet")
        if inst.guard is None or inst.opcode == "bra":
            lower(self, inst)
            return
        guard = self.guard_value(inst)
        then = self.llfn.append_basic_block("guarded")
        after = self.llfn.append_basic_block("after")
        self.b.cbranch(guard, then, after)
        self.b.position_at_end(then)
        lower(self, inst)
        if not self.b.block.is_terminated:
            self.b.branch(after)
        self.b.position_at_end(after)

    def unsupported(self, inst: ir.Instruction, reason: str) -> UnsupportedFeatureError:
        return UnsupportedFeatureError(inst.spec.text, self.target.name,
                                       self.module.location(inst.pos), reason,
                                       self.module.source_line(inst.pos))

    def block_of(self, block: ir.BasicBlock) -> ll.Block:
        return self.blocks[id(block)]

    # --- reading operands --------------------------------------------------------------------

    def read(self, value, t: Type | str) -> ll.Value:
        """`value` (any IR operand) as an LLVM value of PTX type `t`."""
        t = TYPES[t] if isinstance(t, str) else t
        want = value_type(t)
        if isinstance(value, ir.Register):
            if value.vector:
                raise self.unsupported(self.inst, "a vector register used as a scalar")
            return self.convert(self.b.load(self.register_slot(value)), value.type, t)
        if isinstance(value, IntImm):
            if isinstance(want, ll.IntType):
                return const_int(want, value.value)
            if isinstance(want, ll.VectorType):  # packed types: an integer is the bit pattern
                return self.b.bitcast(const_int(ll.IntType(t.bits), value.value), want)
            return ll.Constant(want, float(value.value))
        if isinstance(value, FloatImm):
            return self.float_constant(value, t, want)
        if isinstance(value, ir.SpecialRegister):
            return self.convert(self.target.special_register(self, value), value.type, t)
        if isinstance(value, ir.NotValue):
            return self.b.not_(self.read(value.value, "pred"))
        if isinstance(value, ir.Variable | ir.SymbolAddress | ir.Function):
            return self.convert(self.symbol_address(value), TYPES["u64"], t)
        if isinstance(value, ir.RegisterElement):
            return self.read_element(value, t)
        raise self.unsupported(self.inst, f"operand {value!r} cannot be read as .{t.name}")

    def float_constant(self, value: FloatImm, t: Type, want: ll.Type) -> ll.Value:
        if isinstance(want, ll.IntType):  # mov.b32 %r1, 0f3F800000: the bits themselves
            return const_int(want, value.bits)
        number = (struct.unpack("<f", struct.pack("<I", value.bits))[0] if value.width == 32
                  else struct.unpack("<d", struct.pack("<Q", value.bits))[0])
        if isinstance(want, ll.VectorType):
            raise self.unsupported(self.inst, "a float constant for a packed type")
        if want == ll.FloatType() and value.width == 32:
            return ll.Constant(want, number)
        if want == ll.DoubleType():
            return ll.Constant(want, number)
        # Narrowing a literal to f32/f16/bf16: round once, as ptxas does, to nearest even.
        constant = ll.Constant(ll.DoubleType() if value.width == 64 else ll.FloatType(), number)
        return self.b.fptrunc(constant, want)

    def read_element(self, value: ir.RegisterElement, t: Type) -> ll.Value:
        reg = value.register
        index = "xyzw".find(value.component) if value.component in "xyzw" else \
            "rgba".find(value.component)
        if not reg.vector or index < 0:
            raise self.unsupported(self.inst, f"the selector .{value.component}")
        vector = self.b.load(self.register_slot(reg))
        return self.convert(self.b.extract_value(vector, index), reg.type, t)

    def convert(self, v: ll.Value, have: Type, want: Type) -> ll.Value:
        """Reinterpret a value of PTX type `have` as `want` by PTX's operand-size rules."""
        target = value_type(want)
        if v.type == target:
            return v
        bits = self.as_int(v)
        width = want.bits
        if bits.type.width > width:
            bits = self.b.trunc(bits, ll.IntType(width))
        elif bits.type.width < width:
            extend = self.b.sext if have.kind == "signed" else self.b.zext
            bits = extend(bits, ll.IntType(width))
        return bits if bits.type == target else self.b.bitcast(bits, target)

    def as_int(self, v: ll.Value) -> ll.Value:
        if isinstance(v.type, ll.IntType):
            return v
        if isinstance(v.type, ll.VectorType):
            width = v.type.count * _width(v.type.element)
        else:
            width = _width(v.type)
        return self.b.bitcast(v, ll.IntType(width))

    # --- writing results ---------------------------------------------------------------------

    def write(self, dest, v: ll.Value, t: Type | str) -> None:
        """Store `v` (of PTX type `t`) into the destination operand `dest`."""
        t = TYPES[t] if isinstance(t, str) else t
        if isinstance(dest, Sink):
            return
        if isinstance(dest, ir.Register) and not dest.vector:
            value = self.convert_out(v, t, dest.type)
            self.b.store(value, self.register_slot(dest))
            return
        if isinstance(dest, ir.RegisterElement):
            reg = dest.register
            index = "xyzw".find(dest.component)
            slot = self.register_slot(reg)
            vector = self.b.load(slot)
            element = self.convert_out(v, t, reg.type)
            self.b.store(self.b.insert_value(vector, element, index), slot)
            return
        raise self.unsupported(self.inst, f"cannot write a result into {dest!r}")

    def convert_out(self, v: ll.Value, have: Type, register: Type) -> ll.Value:
        """A result of instruction type `have` as the register type: wider registers are
        sign-extended for signed instruction types and zero-extended otherwise."""
        target = value_type(register)
        if v.type == target:
            return v
        bits = self.as_int(v)
        width = register.bits
        if bits.type.width < width:
            extend = self.b.sext if have.kind == "signed" else self.b.zext
            bits = extend(bits, ll.IntType(width))
        elif bits.type.width > width:
            bits = self.b.trunc(bits, ll.IntType(width))
        return bits if bits.type == target else self.b.bitcast(bits, target)

    def write_vector(self, dest, values: list[ll.Value], t: Type | str) -> None:
        """`{a, b, c, d}` destinations (vector loads, tex, ...): one value per element."""
        if isinstance(dest, ir.VectorValue):
            for element, v in zip(dest.elements, values, strict=True):
                self.write(element, v, t)
        elif isinstance(dest, ir.Register) and dest.vector == len(values):
            slot = self.register_slot(dest)
            vector = self.b.load(slot)
            for i, v in enumerate(values):
                vector = self.b.insert_value(vector, self.convert_out(v, TYPES[t] if
                                             isinstance(t, str) else t, dest.type), i)
            self.b.store(vector, slot)
        else:
            raise self.unsupported(self.inst, "a vector result needs a {…} destination")

    def read_vector(self, value, t: Type | str, count: int) -> list[ll.Value]:
        """The elements of a `{a, b, c, d}` source (vector stores)."""
        if isinstance(value, ir.VectorValue) and len(value.elements) == count:
            return [self.read(e, t) for e in value.elements]
        if isinstance(value, ir.Register) and value.vector == count:
            vector = self.b.load(self.register_slot(value))
            t = TYPES[t] if isinstance(t, str) else t
            return [self.convert(self.b.extract_value(vector, i), value.type, t)
                    for i in range(count)]
        raise self.unsupported(self.inst, f"a vector source of {count} elements is needed")

    # --- addresses ---------------------------------------------------------------------------

    def symbol_address(self, value) -> ll.Value:
        """The address (an i64) of a variable or function in its own state space."""
        offset = 0
        if isinstance(value, ir.SymbolAddress):
            value, offset, generic = value.target, value.offset, value.generic
            if generic:
                raise self.unsupported(self.inst, "generic() outside an initializer")
        if isinstance(value, ir.Function):
            if offset:
                raise self.unsupported(self.inst, "an offset from a function's address")
            return self.target.function_address(self, value)
        pointer = self.target.variable_pointer(self, value)
        address = self.b.ptrtoint(pointer, I64)
        base = self.target.space_base(self, value.space)
        if base is not None:  # shared/local/param addresses count from their window
            address = self.b.sub(address, self.b.ptrtoint(base, I64))
        return self.b.add(address, const_int(I64, offset)) if offset else address

    def pointer(self, operand, space: str | None, size: int = 1,
                write: bool = False) -> ll.Value:
        """The host pointer a memory operand `[...]` of state space `space` (None: generic)
        refers to, for an access of `size` bytes; the target checks it (an access outside
        every allocation is reported, never performed)."""
        if not isinstance(operand, ir.Address):
            raise self.unsupported(self.inst, "a memory operand must be written [address]")
        base, offset = operand.base, operand.offset
        if isinstance(base, ir.Variable):
            pointer = self.target.variable_pointer(self, base)
        else:
            if base is None:
                address = const_int(I64, 0)
            else:
                address = self.read(base, "u64" if base.type.bits == 64 else "u32")
                if address.type.width == 32:
                    address = self.b.zext(address, I64)
            window = self.target.space_base(self, space) if space else None
            pointer = (self.b.inttoptr(address, PTR) if window is None else
                       self.b.gep(window, [address], source_etype=I8))
        if offset:
            pointer = self.b.gep(pointer, [const_int(I64, offset)], source_etype=I8)
        return self.target.checked_pointer(self, pointer, space, size, write)

    def alignment(self, t: Type, count: int = 1) -> int:
        return max(t.size * count, 1)


def _width(t: ll.Type) -> int:
    if isinstance(t, ll.IntType):
        return t.width
    return {"half": 16, "bfloat": 16, "float": 32, "double": 64}[str(t)]


def _label(name: str) -> str:
    return name.replace("%", "").replace("$", "_") or "block"
