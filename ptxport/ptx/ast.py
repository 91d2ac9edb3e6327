"""The PTX syntax tree: what the parser builds and the printer prints.

Every node carries `pos`, its byte offset in the source text; `Source.location(pos)` turns it
into file:line:column only when someone asks (a diagnostic, the IR printer), which keeps
nodes small: a 5 MB PTX file has hundreds of thousands of instructions.

Positions never take part in equality, so parse -> print -> parse gives an equal tree.

An instruction keeps its fixed meaning (`Spec`: opcode and modifiers, shared by every
instruction written the same way) apart from its operands, which later stages rewrite.
Operands are immutable and may be shared between instructions.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from ptxport.errors import SourceLocation


class Source:
    """A PTX text with its file name; maps byte offsets to lines and columns."""

    __slots__ = ("name", "text", "_line_starts")

    def __init__(self, text: str, name: str = "<ptx>"):
        self.name = name
        self.text = text
        self._line_starts: list[int] | None = None

    def location(self, pos: int) -> SourceLocation:
        if self._line_starts is None:
            starts = [0]
            find = self.text.find
            i = find("\n")
            while i >= 0:
                starts.append(i + 1)
                i = find("\n", i + 1)
            self._line_starts = starts
        line = bisect.bisect_right(self._line_starts, pos)
        return SourceLocation(self.name, line, pos - self._line_starts[line - 1] + 1)

    def line_text(self, pos: int) -> str:
        start = self.text.rfind("\n", 0, pos) + 1
        end = self.text.find("\n", pos)
        return self.text[start:] if end < 0 else self.text[start:end]


# --- Operands ---------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Name:
    """An identifier used as an operand: a register, variable, function or label (the IR
    resolves which); `component` is a vector or special-register field (`%tid.x`)."""

    name: str
    component: str | None = None


@dataclass(frozen=True, slots=True)
class IntImm:
    """An integer constant (constant expressions are folded by the parser)."""

    value: int


@dataclass(frozen=True, slots=True)
class FloatImm:
    """A floating-point constant kept as its exact bits: 0fXXXXXXXX (width 32) or
    0dXXXXXXXXXXXXXXXX and decimal literals (width 64, as PTX reads them)."""

    bits: int
    width: int


@dataclass(frozen=True, slots=True)
class SymbolOffset:
    """`symbol+offset` outside brackets (address of a variable plus a byte offset)."""

    name: str
    offset: int


@dataclass(frozen=True, slots=True)
class GenericOf:
    """`generic(symbol)+offset` in an initializer: the generic address of a variable."""

    name: str
    offset: int = 0


@dataclass(frozen=True, slots=True)
class Field:
    """`name = value` inside a .samplerref initializer."""

    name: str
    value: Operand


@dataclass(frozen=True, slots=True)
class Address:
    """`[base]`, `[base+offset]` or `[offset]`: base is a Name or None (absolute); `unified`
    for `[a].unified` (ld/st: the generic address is in the unified address space)."""

    base: Name | None
    offset: int = 0
    unified: bool = False


@dataclass(frozen=True, slots=True)
class Vector:
    """`{a, b, c, d}`."""

    elements: tuple[Operand, ...]


@dataclass(frozen=True, slots=True)
class Bracketed:
    """A bracketed list that is not an address: `[tex, {x, y}]`, `[tex, sampler, {...}]`."""

    elements: tuple[Operand, ...]


@dataclass(frozen=True, slots=True)
class Parenthesized:
    """A call's return or argument list: `(a, b)`."""

    elements: tuple[Operand, ...]


@dataclass(frozen=True, slots=True)
class Not:
    """A negated predicate operand: `!p`."""

    operand: Operand


@dataclass(frozen=True, slots=True)
class Neg:
    """A negated register operand: `-%r1` (video instructions such as vmad)."""

    operand: Operand


@dataclass(frozen=True, slots=True)
class PredPair:
    """Two destinations `d|p` (setp, lop3, shfl, ...)."""

    first: Operand
    second: Operand


@dataclass(frozen=True, slots=True)
class Sink:
    """The sink operand `_`: a destination whose value is discarded."""


Operand = (Name | IntImm | FloatImm | SymbolOffset | GenericOf | Field | Address | Vector
           | Bracketed | Parenthesized | Not | Neg | PredPair | Sink)
SINK = Sink()


# --- Instructions -----------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Spec:
    """An instruction's fixed meaning: opcode, modifiers as written, and their meaning per the
    instruction table (types in order; each other modifier under its group name)."""

    opcode: str
    modifiers: tuple[str, ...]
    types: tuple[str, ...] = field(compare=False)
    groups: dict[str, str | tuple[str, ...]] = field(compare=False, hash=False)

    def get(self, group: str, default=None):
        return self.groups.get(group, default)

    def has(self, modifier: str) -> bool:
        return modifier in self.modifiers

    @property
    def text(self) -> str:
        return ".".join((self.opcode,) + self.modifiers)


@dataclass(slots=True)
class Instruction:
    spec: Spec
    operands: tuple[Operand, ...]
    guard: Name | None = None
    guard_negated: bool = False
    pos: int = field(default=0, compare=False)

    @property
    def opcode(self) -> str:
        return self.spec.opcode


@dataclass(slots=True)
class Label:
    name: str
    pos: int = field(default=0, compare=False)


# --- Declarations -----------------------------------------------------------------------------

@dataclass(slots=True)
class Initializer:
    """A variable's initial value: a scalar operand, or a brace list of initializers."""

    value: Operand | list[Initializer]


@dataclass(slots=True)
class Variable:
    """A variable in any state space: `.reg .b32 %r<4>;`, `.shared .align 4 .f32 s[256];`,
    `.global .u32 g = 1;`. `dims` holds array sizes, None for an unsized `[]`; `count` is the N
    of a register range `%r<N>`. `attributes` holds `.attribute(...)` text, e.g. managed."""

    space: str
    type: str
    name: str
    linkage: tuple[str, ...] = ()
    align: int | None = None
    vector: str | None = None
    dims: tuple[int | None, ...] = ()
    count: int | None = None
    init: Initializer | None = None
    attributes: tuple[str, ...] = ()
    ptr: bool = False           # .ptr attribute on a kernel parameter
    ptr_space: str | None = None
    ptr_align: int | None = None
    pos: int = field(default=0, compare=False)

    @property
    def is_array(self) -> bool:
        return bool(self.dims)


@dataclass(slots=True)
class Pragma:
    values: tuple[str, ...]
    pos: int = field(default=0, compare=False)


@dataclass(slots=True)
class DebugLoc:
    """`.loc file line column {, attributes}` (kept as written after the directive)."""

    text: str
    pos: int = field(default=0, compare=False)


@dataclass(slots=True)
class Block:
    """A nested `{ ... }` scope inside a function body."""

    statements: list[Statement]
    pos: int = field(default=0, compare=False)


@dataclass(slots=True)
class CallPrototype:
    """`label: .callprototype (.param .b32 _) _ (.param .b32 _);`"""

    label: str
    returns: list[Variable]
    params: list[Variable]
    noreturn: bool = False
    pos: int = field(default=0, compare=False)


@dataclass(slots=True)
class BranchTargets:
    """`label: .branchtargets L1, L2;` (targets of brx.idx) or `label: .calltargets f, g;`
    (possible targets of an indirect call); `kind` is which of the two."""

    label: str
    targets: tuple[str, ...]
    kind: str = "branchtargets"
    pos: int = field(default=0, compare=False)


Statement = (BranchTargets | Instruction | Label | Variable | Pragma | DebugLoc | Block
             | CallPrototype)


@dataclass(slots=True)
class Function:
    """A `.entry` (kernel) or `.func` (device function), with or without a body."""

    kind: str                                  # "entry" or "func"
    name: str
    linkage: tuple[str, ...] = ()
    returns: list[Variable] = field(default_factory=list)
    params: list[Variable] = field(default_factory=list)
    directives: list[tuple[str, tuple[int, ...]]] = field(default_factory=list)  # .maxntid ...
    pragmas: list[Pragma] = field(default_factory=list)
    attributes: tuple[str, ...] = ()           # .noreturn, .attribute(...), .abi_preserve ...
    body: list[Statement] | None = None
    pos: int = field(default=0, compare=False)

    @property
    def is_kernel(self) -> bool:
        return self.kind == "entry"


@dataclass(slots=True)
class Directive:
    """A module-level directive kept as written: .file, .section (debug data), .alias, ..."""

    name: str
    text: str
    pos: int = field(default=0, compare=False)


TopLevel = Function | Variable | Directive | Pragma


@dataclass(slots=True)
class Module:
    version: tuple[int, int]
    target: tuple[str, ...]
    address_size: int = 64
    items: list[TopLevel] = field(default_factory=list)
    source: Source | None = field(default=None, compare=False, repr=False)

    @property
    def functions(self) -> list[Function]:
        return [i for i in self.items if isinstance(i, Function)]

    @property
    def variables(self) -> list[Variable]:
        return [i for i in self.items if isinstance(i, Variable)]
