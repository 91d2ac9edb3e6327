"""Syntax tree -> IR: resolve every name, flatten nested scopes, split bodies into blocks.

Resolution follows PTX's scoping (PTX ISA 4.4, 5.1): a name in a function body is looked up
in the enclosing `{ }` scopes, innermost first, then among the module's variables and
functions; labels belong to the whole function and may be used before they appear. Names
that nested scopes declare twice (each call sequence's `param0`) get a `$N` suffix so that
every register and variable of a function has one name in the IR.

All problems of a module are collected and raised together as one PtxSemanticError.
"""

from __future__ import annotations

import gc
import math
import re

from ptxport.errors import Diagnostic, PtxSemanticError
from ptxport.ir import nodes as ir
from ptxport.ir.blocks import successors
from ptxport.ir.lines import parse_file, parse_loc
from ptxport.ir.special_registers import PREDEFINED_CONSTANTS, SPECIAL_REGISTERS
from ptxport.ir.types import TYPES
from ptxport.ptx import ast

__all__ = ["build"]

_RANGE_NAME = re.compile(r"(.*?)(\d+)$")
# Register ranges `%r<N>` up to this size are expanded when declared; larger ones (hand-written
# PTX may declare %r<100000>) make each register on first use.
_EAGER_RANGE = 4096


class _Problem(Exception):
    def __init__(self, pos: int, message: str, text: str = ""):
        super().__init__(message)
        self.pos, self.message, self.text = pos, message, text


def build(module: ast.Module) -> ir.Module:
    """Build the IR of a parsed module; raise PtxSemanticError listing every problem."""
    enabled = gc.isenabled()
    gc.disable()  # as in the parser: a large acyclic structure is being built
    try:
        return _ModuleBuilder(module).run()
    finally:
        if enabled:
            gc.enable()


class _ModuleBuilder:
    def __init__(self, module: ast.Module):
        self.ast = module
        self.source = module.source or ast.Source("", "<ptx>")
        self.ir = ir.Module(module.version, module.target, module.address_size,
                            source=module.source)
        self.problems: list[Diagnostic] = []
        self.counted = (0, 1)   # (position, its PTX line): where ptx_line counts on from

    def report(self, pos: int, message: str, text: str = "") -> None:
        if text:  # point at the name itself when it is on the statement's line
            line_end = self.source.text.find("\n", pos)
            found = self.source.text.find(text, pos, None if line_end < 0 else line_end)
            pos = found if found >= 0 else pos
        self.problems.append(Diagnostic(self.source.location(pos), message, text))

    def run(self) -> ir.Module:
        bodies: list[tuple[ast.Function, ir.Function]] = []
        initialized: list[tuple[ast.Variable, ir.Variable]] = []
        for item in self.ast.items:
            try:
                if isinstance(item, ast.Variable):
                    var = self.variable(item)
                    self.declare_global(var, item.pos)
                    if item.init is not None:
                        initialized.append((item, var))
                elif isinstance(item, ast.Directive) and item.name == "file":
                    self.source_file(item.text)
                elif isinstance(item, ast.Function):
                    function = self.signature(item)
                    if item.body is not None:
                        bodies.append((item, function))
            except _Problem as p:
                self.report(p.pos, p.message, p.text)
        # Initializers and bodies may name any module-level symbol, declared before or after.
        for node, var in initialized:
            try:
                var.init = self.initializer(node, var)
            except _Problem as p:
                self.report(p.pos, p.message, p.text)
        for node, function in bodies:
            _FunctionBuilder(self, node, function).run()
        if self.problems:
            raise PtxSemanticError(self.problems)
        return self.ir

    def ptx_line(self, pos: int) -> int:
        """The PTX line of `pos`, counted on from the previous call's position (.loc
        directives come in the order of the text; counting newlines in C is cheaper than
        Source.location's table of line starts)."""
        last_pos, last_line = self.counted
        if pos < last_pos:
            last_pos, last_line = 0, 1
        line = last_line + self.source.text.count("\n", last_pos, pos)
        self.counted = (pos, line)
        return line

    def source_file(self, text: str) -> None:
        """`.file N "name"`: the name of the user's source file number N."""
        numbered = parse_file(text)
        if numbered is not None:
            self.ir.lines.files[numbered[0]] = numbered[1]

    # --- module-level declarations -------------------------------------------------------------

    def declare_global(self, var: ir.Variable, pos: int) -> None:
        name = var.name
        if name in self.ir.functions:
            raise _Problem(pos, f"'{name}' is declared as a function and as a variable", name)
        old = self.ir.globals.get(name)
        if old is not None and not (old.is_extern or var.is_extern):
            raise _Problem(pos, f"variable '{name}' is defined twice", name)
        if old is None or old.is_extern:
            self.ir.globals[name] = var

    def signature(self, node: ast.Function) -> ir.Function:
        function = ir.Function(
            node.name, node.kind,
            params=[self.variable(p) for p in node.params],
            returns=[self.variable(p) for p in node.returns],
            linkage=node.linkage, directives=dict(node.directives),
            is_declaration=node.body is None, pos=node.pos)
        if node.kind == "entry":
            for p in node.params:
                if p.space != "param":
                    raise _Problem(p.pos, f"kernel parameter '{p.name}' must be in .param space",
                                   p.name)
        if node.name in self.ir.globals:
            raise _Problem(node.pos, f"'{node.name}' is declared as a variable and as a function",
                           node.name)
        old = self.ir.functions.get(node.name)
        if old is not None:
            if not old.is_declaration and not function.is_declaration:
                raise _Problem(node.pos, f"function '{node.name}' is defined twice", node.name)
            if old.kind != function.kind or len(old.params) != len(function.params):
                raise _Problem(node.pos, f"'{node.name}' is declared twice with different "
                                         "signatures", node.name)
            if function.is_declaration:
                return old
        self.ir.functions[node.name] = function
        return function

    def variable(self, node: ast.Variable) -> ir.Variable:
        vtype = TYPES.get(node.type)
        if vtype is None:
            raise _Problem(node.pos, f"'.{node.type}' is not a type a variable can have",
                           node.type)
        vector = int(node.vector[1:]) if node.vector else None
        unsized = bool(node.dims) and node.dims[0] is None
        if any(d is None for d in node.dims[1:]):
            raise _Problem(node.pos, f"only the first dimension of '{node.name}' may be unsized",
                           node.name)
        if any(d is not None and d <= 0 for d in node.dims):
            raise _Problem(node.pos, f"array '{node.name}' has a dimension of zero or less",
                           node.name)
        if node.align is not None and (node.align <= 0 or node.align & (node.align - 1)):
            raise _Problem(node.pos, f"alignment of '{node.name}' must be a power of two",
                           node.name)
        elements = math.prod(d for d in node.dims if d is not None) if node.dims else 1
        if unsized and node.init is not None and isinstance(node.init.value, list):
            # `.global .u32 a[] = {1, 2, 3};` takes its size from the initializer.
            elements *= len(node.init.value)
            unsized = False
        return ir.Variable(
            node.name, node.space, vtype, elements, vector, node.align, node.linkage, unsized,
            node.dims, None, node.attributes, node.ptr_space, node.ptr_align, node.pos)

    def initializer(self, node: ast.Variable, var: ir.Variable) -> list:
        flat: list = []

        def walk(init: ast.Initializer) -> None:
            if isinstance(init.value, list):
                for item in init.value:
                    walk(item)
            else:
                flat.append(self.initial_value(init.value, node.pos))

        walk(node.init)
        capacity = var.elements * (var.vector or 1)
        values = sum(not isinstance(v, ast.Field) for v in flat)  # sampler fields are one value
        if values > capacity:
            raise _Problem(node.pos, f"initializer of '{var.name}' has {values} values for "
                                     f"{capacity} elements", var.name)
        return flat

    def initial_value(self, value: ast.Operand, pos: int):
        if isinstance(value, ast.IntImm | ast.FloatImm):
            return value
        if isinstance(value, ast.Field):  # .samplerref fields keep their names
            return value
        if isinstance(value, ast.Name):
            return ir.SymbolAddress(self.symbol(value.name, pos))
        if isinstance(value, ast.SymbolOffset):
            return ir.SymbolAddress(self.symbol(value.name, pos), value.offset)
        if isinstance(value, ast.GenericOf):
            return ir.SymbolAddress(self.symbol(value.name, pos), value.offset, generic=True)
        raise _Problem(pos, "this initializer value is not a constant or an address")

    def symbol(self, name: str, pos: int):
        target = self.ir.globals.get(name) or self.ir.functions.get(name)
        if target is None:
            raise _Problem(pos, f"undefined variable or function '{name}'", name)
        return target


class _FunctionBuilder:
    def __init__(self, module: _ModuleBuilder, node: ast.Function, function: ir.Function):
        self.m, self.node, self.f = module, node, function
        self.labels: dict[str, ir.BasicBlock] = {}
        self.prototypes: dict[str, ir.Prototype] = {}
        self.branch_targets: dict[str, ir.ListValue] = {}
        # What a name means here: one dict for all enclosing scopes, with an undo list per
        # open `{ }` scope, so that a lookup is a single dict access.
        self.visible: dict[str, object] = {}           # name -> Register or Variable
        # %r<N>: prefix -> (template register, N); `made`: name -> (prefix, that declaration,
        # the register made from it on first use), valid while the declaration is in scope.
        self.ranges: dict[str, tuple[ir.Register, int]] = {}
        self.made: dict[str, tuple[str, tuple, ir.Register]] = {}
        self.declared_here: set[str] = set()
        self.undo: list[tuple[dict, str, object]] = []
        self.memo: dict[int, object] = {}
        self.block: ir.BasicBlock | None = None
        self.synthetic = 0
        self.taken: set[str] = set()

    def run(self) -> None:
        for p in self.f.params + self.f.returns:
            self.declare(p, p.pos, record=False)
        self.collect_labels(self.node.body)
        self.open_block(ir.BasicBlock("%entry", self.node.pos))
        if self.m.ir.lines.locs:    # no .loc of the previous function holds here
            self.m.ir.lines.add(self.m.ptx_line(self.node.pos), None)
        self.statements(self.node.body)
        self.f.blocks = [b for i, b in enumerate(self.f.blocks)
                         if i == 0 or b.instructions or b.label in self.labels]
        self.link_blocks()

    # --- declarations ------------------------------------------------------------------------

    def declare(self, thing, pos: int, record: bool = True) -> None:
        """Make `thing` (a Register or Variable) visible in the current scope; `record` adds it
        to the function's registers or variables (parameters are kept apart)."""
        name = thing.name
        self.bind(self.visible, name, thing, pos)
        thing.name = self.unique_name(name)
        if not record:
            return
        table = self.f.registers if isinstance(thing, ir.Register) else self.f.variables
        table[thing.name] = thing

    def unique_name(self, name: str) -> str:
        """`name`, or `name$N` if the function already has something of that name."""
        unique, n = name, 0
        while unique in self.taken:
            n += 1
            unique = f"{name}${n}"
        self.taken.add(unique)
        return unique

    def declare_variable(self, node: ast.Variable) -> None:
        if node.space != "reg":
            var = self.m.variable(node)
            if node.init is not None:
                var.init = self.m.initializer(node, var)
            self.declare(var, node.pos)
            return
        rtype = TYPES.get(node.type)
        if rtype is None:
            raise _Problem(node.pos, f"'.{node.type}' is not a register type", node.type)
        vector = int(node.vector[1:]) if node.vector else None
        if node.count is None:
            self.declare(ir.Register(node.name, rtype, vector), node.pos)
        elif node.count <= _EAGER_RANGE:
            # Compilers declare exactly the registers they use: make them all now, so that
            # every later lookup is one dict access.
            for i in range(node.count):
                self.declare(ir.Register(f"{node.name}{i}", rtype, vector), node.pos)
        else:
            self.bind(self.ranges, node.name,
                      (ir.Register(node.name, rtype, vector), node.count), node.pos)

    def bind(self, table: dict, name: str, value, pos: int) -> None:
        """Give `name` a meaning in the current scope, remembering the outer one."""
        if name in self.declared_here:
            raise _Problem(pos, f"'{name}' is declared twice in the same scope", name)
        self.declared_here.add(name)
        self.undo.append((table, name, table.get(name)))
        table[name] = value
        if self.memo:
            self.memo = {}  # a new name may shadow one that earlier operands resolved to

    def open_scope(self) -> tuple:
        saved = (len(self.undo), self.declared_here)
        self.declared_here = set()
        return saved

    def close_scope(self, saved: tuple) -> None:
        depth, self.declared_here = saved
        while len(self.undo) > depth:
            table, name, old = self.undo.pop()
            if old is None:
                table.pop(name, None)
            else:
                table[name] = old
        self.memo = {}

    def lookup(self, name: str):
        found = self.visible.get(name)
        if found is None and self.ranges:
            made = self.made.get(name)
            if made is not None and self.ranges.get(made[0]) is made[1]:
                return made[2]
            found = self.range_register(name)
        return found

    def range_register(self, name: str):
        """`%r5` from a `.reg .b32 %r<N>;` in scope, made on first use."""
        m = _RANGE_NAME.match(name)
        if m is None or m.group(1) not in self.ranges:
            return None
        prefix, index = m.groups()
        declaration = self.ranges[prefix]
        template, count = declaration[0], declaration[1]
        if int(index) >= count or (index[0] == "0" and index != "0"):
            return None
        reg = ir.Register(self.unique_name(name), template.type, template.vector)
        self.made[name] = (prefix, declaration, reg)
        self.f.registers[reg.name] = reg
        return reg

    # --- statements --------------------------------------------------------------------------

    def collect_labels(self, statements: list) -> None:
        for s in statements:
            if isinstance(s, ast.Label):
                if s.name in self.labels:
                    self.m.report(s.pos, f"label '{s.name}' is defined twice", s.name)
                self.labels[s.name] = ir.BasicBlock(s.name, s.pos)
            elif isinstance(s, ast.Block):
                self.collect_labels(s.statements)

    def open_block(self, block: ir.BasicBlock) -> None:
        self.f.blocks.append(block)
        self.block = block

    def statements(self, statements: list) -> None:
        for s in statements:
            try:
                if isinstance(s, ast.Instruction):
                    self.instruction(s)
                elif isinstance(s, ast.Label):
                    self.open_block(self.labels[s.name])
                elif isinstance(s, ast.Variable):
                    self.declare_variable(s)
                elif isinstance(s, ast.DebugLoc):
                    self.debug_directive(s)
                elif isinstance(s, ast.Block):
                    saved = self.open_scope()
                    try:
                        self.statements(s.statements)
                    finally:
                        self.close_scope(saved)
                elif isinstance(s, ast.CallPrototype):
                    self.prototypes[s.label] = ir.Prototype(
                        s.label, tuple(self.m.variable(p) for p in s.returns),
                        tuple(self.m.variable(p) for p in s.params))
                elif isinstance(s, ast.BranchTargets):
                    resolve = self.label if s.kind == "branchtargets" else self.m.symbol
                    self.branch_targets[s.label] = ir.ListValue(
                        tuple(resolve(t, s.pos) for t in s.targets))
            except _Problem as p:
                self.m.report(p.pos, p.message, p.text)

    def debug_directive(self, node: ast.DebugLoc) -> None:
        """`.loc` (the user's source line of the instructions that follow) or `.file`."""
        word, _, rest = node.text.partition(" ")
        if word == ".loc":
            loc = parse_loc(rest)
            if loc is not None:
                self.m.ir.lines.add(self.m.ptx_line(node.pos), loc)
        elif word == ".file":
            self.m.source_file(rest)

    def instruction(self, node: ast.Instruction) -> None:
        guard = None
        if node.guard is not None:
            guard = self.lookup(node.guard.name)
            if not isinstance(guard, ir.Register) or guard.type.kind != "pred":
                raise _Problem(node.pos, f"guard '{node.guard.name}' is not a predicate register",
                               node.guard.name)
        memo, visible = self.memo, self.visible
        values = []
        for o in node.operands:
            if o.__class__ is ast.Name and o.component is None:
                value = visible.get(o.name) or self.operand(o, node.pos)
            else:
                value = memo.get(id(o))
                if value is None:
                    value = memo[id(o)] = self.operand(o, node.pos)
            values.append(value)
        _check_special_register_reads(node, values)
        inst = ir.Instruction(node.spec, tuple(values), guard, node.guard_negated, node.pos)
        if self.block is None:
            self.synthetic += 1
            self.open_block(ir.BasicBlock(f"%bb{self.synthetic}", node.pos))
        self.block.instructions.append(inst)
        if node.spec.opcode in ir.TERMINATORS:
            self.block = None

    def link_blocks(self) -> None:
        link_blocks(self.f)

    # --- operands ----------------------------------------------------------------------------

    def operand(self, o: ast.Operand, pos: int):
        if isinstance(o, ast.Name):
            return self.name(o, pos)
        if isinstance(o, ast.IntImm | ast.FloatImm | ast.Sink):
            return o
        if isinstance(o, ast.Address):
            if o.base is None:
                return ir.Address(None, o.offset, o.unified)
            base = self.name(o.base, pos)
            if isinstance(base, ir.SymbolAddress):
                base = base.target
            if not isinstance(base, ir.Register | ir.Variable):
                raise _Problem(pos, f"'{o.base.name}' cannot be the base of an address; use a "
                                    "register or a variable", o.base.name)
            return ir.Address(base, o.offset, o.unified)
        if isinstance(o, ast.SymbolOffset):
            target = self.lookup(o.name) or self.m.ir.globals.get(o.name) \
                or self.m.ir.functions.get(o.name)
            if not isinstance(target, ir.Variable | ir.Function):
                raise _Problem(pos, f"'{o.name}+offset' needs a variable, and '{o.name}' is "
                                    f"{'undefined' if target is None else 'a register'}", o.name)
            return ir.SymbolAddress(target, o.offset)
        if isinstance(o, ast.Vector):
            return ir.VectorValue(tuple(self.operand(e, pos) for e in o.elements))
        if isinstance(o, ast.Bracketed | ast.Parenthesized):
            return ir.ListValue(tuple(self.operand(e, pos) for e in o.elements),
                                isinstance(o, ast.Bracketed))
        if isinstance(o, ast.Not):
            return ir.NotValue(self.operand(o.operand, pos))
        if isinstance(o, ast.Neg):
            return ir.NegValue(self.operand(o.operand, pos))
        if isinstance(o, ast.PredPair):
            return ir.PairValue(self.operand(o.first, pos), self.operand(o.second, pos))
        raise _Problem(pos, f"this operand cannot appear in an instruction: {o!r}")

    def name(self, o: ast.Name, pos: int):
        name, component = o.name, o.component
        found = self.lookup(name)
        if found is not None and component is None:
            return found
        if name in PREDEFINED_CONSTANTS and component is None:
            return ast.IntImm(PREDEFINED_CONSTANTS[name])
        special = SPECIAL_REGISTERS.get(name)
        if special is not None:
            type_name, components = special
            if components and component not in components:
                raise _Problem(pos, f"special register '{name}' needs one of "
                                    f"{', '.join('.' + c for c in components)}", name)
            if not components and component is not None:
                raise _Problem(pos, f"special register '{name}' has no field '.{component}'",
                               name)
            return ir.SpecialRegister(name, component, TYPES[type_name])
        if found is None:
            found = self.m.ir.globals.get(name) or self.m.ir.functions.get(name) \
                or self.labels.get(name) or self.prototypes.get(name) \
                or self.branch_targets.get(name)
        if found is None:
            kind = "register" if name.startswith("%") else "name"
            raise _Problem(pos, f"undefined {kind} '{name}'", name)
        if component is not None:
            if not isinstance(found, ir.Register):
                raise _Problem(pos, f"'{name}.{component}': only registers have fields", name)
            return ir.RegisterElement(found, component)
        return found

    def label(self, name: str, pos: int) -> ir.BasicBlock:
        block = self.labels.get(name)
        if block is None:
            raise _Problem(pos, f"undefined label '{name}'", name)
        return block


def _check_special_register_reads(node: ast.Instruction, values: list) -> None:
    """Special registers are read by `mov` (also inside a vector) and by integer-to-integer
    `cvt` only: ptxas refuses any other instruction ("Special register argument not allowed
    for instruction 'add'"), so such PTX is malformed rather than a variant to compute."""
    spec = node.spec
    if spec.opcode == "mov" or (spec.opcode == "cvt" and all(
            t[0] in "usb" for t in spec.types)):
        return
    for value in values:
        found = value.elements if isinstance(value, ir.VectorValue) else (value,)
        for v in found:
            if isinstance(v, ir.SpecialRegister):
                shown = v.name + ("." + v.component if v.component else "")
                raise _Problem(node.pos, f"special register '{shown}' cannot be an operand of "
                                         f"'{spec.text}': PTX reads special registers only with "
                                         "mov or an integer cvt; copy it into a register first",
                               v.name)


def link_blocks(f: ir.Function) -> None:
    """Sets every block's successors from its last instruction (bra, brx) and the order of
    the blocks (falling through into the next one)."""
    blocks = f.blocks
    for i, block in enumerate(blocks):
        block.successors = successors(block, blocks[i + 1] if i + 1 < len(blocks) else None)
