"""ptxport's IR: PTX with every name resolved, scopes flattened, bodies split into a CFG.

What it keeps from PTX, explicitly, so that passes can see it: state spaces (on variables,
addresses and instructions), special registers as their own operand kind, and every
instruction's full meaning (its `Spec`: opcode, types, rounding, ftz, saturation, scope,
memory semantics, ...), written once here and lowered by each target.

Registers are assigned any number of times (PTX is not SSA); codegen may give each an alloca.

Values an instruction can take as operands:
  Register, SpecialRegister, IntImm/FloatImm (from ptx.ast, immutable), Variable (its
  address), Function (call target), BasicBlock (branch target), Address (a memory operand),
  VectorValue, NotValue (`!p`), PairValue (`d|p`), ListValue (call lists and bracketed
  texture operands) and SINK.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ptxport.ir.lines import LineTable
from ptxport.ir.types import Type
from ptxport.ptx.ast import SINK, FloatImm, IntImm, Sink, Source, Spec

__all__ = [
    "Register", "RegisterElement", "SymbolAddress", "Prototype", "SpecialRegister", "Variable",
    "Address", "VectorValue", "NotValue", "NegValue", "PairValue", "ListValue", "Instruction",
    "BasicBlock", "Function", "Module",
    "IntImm", "FloatImm", "Sink", "SINK", "TERMINATORS",
]

# Opcodes after which control does not fall through to the next instruction (when unguarded).
TERMINATORS = frozenset(("bra", "brx", "ret", "exit", "trap"))


class Register:
    """A PTX register (`.reg`), possibly a vector (`.reg .v4 .f32 %v`)."""

    __slots__ = ("name", "type", "vector")

    def __init__(self, name: str, type: Type, vector: int | None = None):
        self.name, self.type, self.vector = name, type, vector

    def __repr__(self) -> str:
        return f"Register({self.name}: {self.type})"


class SpecialRegister:
    """A read-only hardware value: `%tid.x`, `%laneid`, `%clock64`, ..."""

    __slots__ = ("name", "component", "type")

    def __init__(self, name: str, component: str | None, type: Type):
        self.name, self.component, self.type = name, component, type

    @property
    def text(self) -> str:
        return self.name if self.component is None else f"{self.name}.{self.component}"

    def __repr__(self) -> str:
        return f"SpecialRegister({self.text})"


@dataclass(eq=False, slots=True)
class Variable:
    """Memory with a name in a state space: module globals, kernel and function parameters,
    and a function's .local/.shared/.param/.const variables.

    `elements` is the total element count (1 for a scalar; product of the array dims);
    `unsized` is true for `[]` (extern shared arrays); `init` is the flattened initializer:
    a list of IntImm/FloatImm/(Variable, offset, generic) items in element order.
    """

    name: str
    space: str
    type: Type
    elements: int = 1
    vector: int | None = None
    align: int | None = None
    linkage: tuple[str, ...] = ()
    unsized: bool = False
    dims: tuple[int | None, ...] = ()
    init: list | None = None
    attributes: tuple[str, ...] = ()
    ptr_space: str | None = None
    ptr_align: int | None = None
    pos: int = 0

    @property
    def element_size(self) -> int:
        return self.type.size * (self.vector or 1)

    @property
    def managed(self) -> bool:
        """A `__managed__` variable (`.global .attribute(.managed)`, PTX ISA 5.4.8): memory the
        host reaches at the same address as the device (cuLibraryGetManaged)."""
        return "managed" in self.attributes

    @property
    def size(self) -> int:
        """Size in bytes (0 for an unsized extern array)."""
        return 0 if self.unsized else self.element_size * self.elements

    @property
    def alignment(self) -> int:
        return self.align or self.element_size

    @property
    def is_extern(self) -> bool:
        return "extern" in self.linkage

    def __repr__(self) -> str:
        return f"Variable(.{self.space} {self.name})"


@dataclass(frozen=True, slots=True)
class Address:
    """A memory operand: base (Register, Variable or None for absolute) plus a byte offset;
    `unified` for `[a].unified`."""

    base: Register | Variable | None
    offset: int = 0
    unified: bool = False


class RegisterElement:
    """A field of a vector register (`%v.x`) or a video-instruction selector (`%r1.b0`)."""

    __slots__ = ("register", "component")

    def __init__(self, register: Register, component: str):
        self.register, self.component = register, component

    def __eq__(self, other) -> bool:
        return (isinstance(other, RegisterElement) and other.register is self.register
                and other.component == self.component)

    def __hash__(self) -> int:
        return hash((id(self.register), self.component))


@dataclass(frozen=True, slots=True)
class SymbolAddress:
    """The address of a variable or function plus a byte offset, as a value (`mov.u64 %rd,
    arr+8;`, initializers); `generic` for `generic(var)` in an initializer."""

    target: object
    offset: int = 0
    generic: bool = False


@dataclass(frozen=True, slots=True)
class Prototype:
    """A `.callprototype`: the signature of an indirect call."""

    label: str
    returns: tuple
    params: tuple


@dataclass(frozen=True, slots=True)
class VectorValue:
    elements: tuple


@dataclass(frozen=True, slots=True)
class NotValue:
    value: Register


@dataclass(frozen=True, slots=True)
class NegValue:
    """`-%r` of video instructions."""

    value: object


@dataclass(frozen=True, slots=True)
class PairValue:
    first: object
    second: object


@dataclass(frozen=True, slots=True)
class ListValue:
    """`(a, b)` of a call, or `[tex, {x, y}]` of a texture instruction (`bracketed`)."""

    elements: tuple
    bracketed: bool = False


class Instruction:
    """One PTX instruction: its fixed meaning (`spec`), resolved operands, optional guard."""

    __slots__ = ("spec", "operands", "guard", "guard_negated", "pos")

    def __init__(self, spec: Spec, operands: tuple, guard: Register | None = None,
                 guard_negated: bool = False, pos: int = 0):
        self.spec, self.operands = spec, operands
        self.guard, self.guard_negated, self.pos = guard, guard_negated, pos

    @property
    def opcode(self) -> str:
        return self.spec.opcode

    @property
    def is_terminator(self) -> bool:
        return self.spec.opcode in TERMINATORS and self.guard is None

    def __repr__(self) -> str:
        return f"Instruction({self.spec.text})"


class BasicBlock:
    """A label (or a synthetic `%bbN`) and the instructions up to the next label or branch."""

    __slots__ = ("label", "instructions", "successors", "pos")

    def __init__(self, label: str, pos: int = 0):
        self.label, self.pos = label, pos
        self.instructions: list[Instruction] = []
        self.successors: list[BasicBlock] = []

    def __repr__(self) -> str:
        return f"BasicBlock({self.label})"


@dataclass(eq=False)
class Function:
    """A kernel (`.entry`) or device function (`.func`). `blocks[0]` is the entry block;
    a declaration (`.extern .func f(...);`) has no blocks."""

    name: str
    kind: str                                      # "entry" or "func"
    params: list[Variable] = field(default_factory=list)
    returns: list[Variable] = field(default_factory=list)
    linkage: tuple[str, ...] = ()
    directives: dict[str, tuple[int, ...]] = field(default_factory=dict)
    registers: dict[str, Register] = field(default_factory=dict)
    variables: dict[str, Variable] = field(default_factory=dict)
    blocks: list[BasicBlock] = field(default_factory=list)
    is_declaration: bool = False
    pos: int = 0

    @property
    def is_kernel(self) -> bool:
        return self.kind == "entry"

    def instructions(self):
        for block in self.blocks:
            yield from block.instructions

    def __repr__(self) -> str:
        return f"Function(.{self.kind} {self.name})"


@dataclass(eq=False)
class Module:
    version: tuple[int, int]
    target: tuple[str, ...]
    address_size: int
    globals: dict[str, Variable] = field(default_factory=dict)
    functions: dict[str, Function] = field(default_factory=dict)
    source: Source | None = None
    lines: LineTable = field(default_factory=LineTable)   # the user's source lines (.loc)

    @property
    def kernels(self) -> list[Function]:
        return [f for f in self.functions.values() if f.is_kernel]

    def location(self, pos: int):
        """file:line:column of a position in the module's source (None without a source)."""
        return self.source.location(pos) if self.source is not None else None

    def source_line(self, pos: int) -> tuple[str, int] | None:
        """The user's source file and line of the instruction at `pos`, from the module's
        `.file`/`.loc` directives (None without them)."""
        if not self.lines:
            return None
        location = self.location(pos)
        return self.lines.source_line(location.line) if location is not None else None

