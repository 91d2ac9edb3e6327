"""PTX text -> syntax tree (ast.py), by hand-written recursive descent.

Each method has the grammar rule it reads as a comment above it (PTX ISA chapters 4-11); the
operand and constant-expression rules are in operands.py.

Speed: most statements of a kernel body are simple instructions (`add.s32 %r1, %r2, 4;`).
Those are recognised by one regular expression straight from the text, and each distinct
operand text is parsed once by the ordinary operand rule and then shared (operands are
immutable). Everything else goes through the token-by-token rules. Both paths produce the
same nodes through the same operand and instruction-table code, so they cannot disagree on
meaning.

Errors: a malformed statement is reported with file:line:column and the text at fault, the
parser skips to the end of the statement, and goes on; `parse` raises one PtxSyntaxError
listing every error of the module.
"""

from __future__ import annotations

import gc
import re

from ptxport.errors import Diagnostic, PtxSyntaxError
from ptxport.ptx import ast
from ptxport.ptx.isa import OPS
from ptxport.ptx.isa._base import ALL_TYPES, STATE_SPACES
from ptxport.ptx.lexer import EOF, MODIFIER, Lexer
from ptxport.ptx.operands import OperandRules, StatementError, classify

__all__ = ["parse", "parse_operand"]

_VARIABLE_SPACES = frozenset(STATE_SPACES + ("reg", "sreg", "tex"))
_VARIABLE_TYPES = frozenset(ALL_TYPES + ("texref", "samplerref", "surfref"))
_LINKAGE = frozenset(("visible", "extern", "weak", "common"))
_VECTOR = frozenset(("v2", "v4", "v8"))
# Performance-tuning and cluster directives between a kernel's parameters and its body
# (PTX ISA 11.4, 11.5): each takes a list of integers.
_FUNCTION_DIRECTIVES = frozenset((
    "maxntid", "reqntid", "minnctapersm", "maxnctapersm", "maxnreg", "explicitcluster",
    "reqnctapercluster", "maxclusterrank", "blocksareclusters", "abi_preserve",
    "abi_preserve_control", "noreturn",
))

# A simple instruction read straight from the text: guard, opcode, modifiers, and operands
# made of anything but the characters that need the token rules (parentheses, `!`, `|`,
# comments, strings); vector operands `{...}` are allowed.
# Names (guard, label, register) follow the lexer's identifier rule: `_`, `%` alone are not.
# Modifiers after a space (`add .s32 ...`, which ptxas accepts) and operands that start on a
# later line are left to the token rules. The operands are matched greedily from their first
# character, so that a statement without its ';' fails in linear time (a lazy match then
# `[ \t]*;` took quadratic time on long runs of spaces); they keep their trailing spaces.
_SIMPLE_INSTRUCTION = re.compile(
    r"""(?:@(!?)([A-Za-z][\w$]*|[_$%][\w$]+)[ \t]+)?
        ([a-z][a-z0-9_]*)
        ((?:""" + MODIFIER + r""")*)
        (?:[ \t]+(?=[^\s;.])((?:[^;{}()"/!|@]|\{[^{}()"/!|@;]*\})*)|[ \t]*);
        (?:[ \t\r\n]+|//[^\n]*)*     # and the space and comments up to the next statement
        """,
    re.VERBOSE,
)
_SKIP = re.compile(r"(?:[ \t\r\n]+|//[^\n]*|/\*[\s\S]*?\*/)*")
_SIMPLE_LABEL = re.compile(r"([A-Za-z][\w$]*|[_$%][\w$]+)[ \t]*:(?![:])")
# Counts with a leading 0 (octal) or too many digits for 64 bits go to the token rules.
_SIMPLE_REGISTERS = re.compile(
    r"\.reg[ \t]+\.([a-z0-9]+)[ \t]+([A-Za-z][\w$]*|[_$%][\w$]+)"
    r"(?:<([1-9]\d{0,17}|0)>)?[ \t]*;")
_SPLIT_OPERANDS = re.compile(r"(?:[^,{\[]|\{[^{}]*\}|\[[^\[\]]*\])+")


def _never(text: str, pos: int) -> None:
    return None



def parse(text: str, filename: str = "<ptx>", *, fast_path: bool = True) -> ast.Module:
    """Parse a PTX module; raise PtxSyntaxError listing every error found.

    `fast_path=False` reads every statement with the token rules (tests compare the two).
    """
    # The tree has no reference cycles, so the cycle collector would only rescan the growing
    # tree again and again (a quarter of the time on large files); it is paused meanwhile.
    enabled = gc.isenabled()
    gc.disable()
    parser = _Parser(text, filename, fast_path)
    try:
        return parser.module()
    except RecursionError:
        raise parser._too_deep() from None
    finally:
        if enabled:
            gc.enable()


def parse_operand(text: str) -> ast.Operand:
    """Parse one operand written alone (for tools and tests)."""
    parser = _Parser(text + ";", "<operand>")
    try:
        operand = parser._operand()
        parser._expect(";", "end of operand")
    except StatementError as e:
        parser._report(e)
    except RecursionError:
        raise parser._too_deep() from None
    if parser.errors:
        raise PtxSyntaxError(parser.errors)
    return operand


class _Parser(OperandRules):
    def __init__(self, text: str, filename: str, fast_path: bool = True):
        self.text = text
        self.fast_path = fast_path
        self.source = ast.Source(text, filename)
        self.lexer = Lexer(text)
        self.tok = self.lexer.next()
        self.errors: list[Diagnostic] = []
        self._specs: dict[tuple[str, str], ast.Spec] = {}
        self._operands: dict[str, ast.Operand] = {}

    # --- tokens --------------------------------------------------------------------------

    def _advance(self) -> tuple:
        tok = self.tok
        self.tok = self.lexer.next()
        return tok

    def _reset(self, pos: int) -> None:
        """Continue reading tokens at `pos` (after a statement read from the text)."""
        self.lexer.pos = pos
        self.tok = self.lexer.next()

    def _accept(self, kind: str) -> bool:
        if self.tok[0] == kind:
            self.tok = self.lexer.next()
            return True
        return False

    def _expect(self, kind: str, what: str) -> tuple:
        if self.tok[0] != kind:
            raise self._unexpected(f"expected {what}")
        return self._advance()

    def _accept_dot(self, word: str) -> bool:
        if self.tok[0] == "dot" and self.tok[1] == "." + word:
            self._advance()
            return True
        return False

    def _unexpected(self, message: str) -> StatementError:
        kind, text, pos = self.tok
        if kind == EOF:
            return StatementError(pos, f"{message}, found the end of the file")
        if kind == "bad":
            if text.startswith("unterminated"):
                return StatementError(pos, text)
            return StatementError(pos, f"{message}; '{text}' cannot start a PTX token", text)
        return StatementError(pos, f"{message}, found '{text}'", text)

    def _report(self, e: StatementError) -> None:
        self.errors.append(ast_diag(self.source, e.pos, e.message, e.text))

    def _too_deep(self) -> PtxSyntaxError:
        """The error for brackets, blocks or unary operators nested deeper than Python's
        recursion limit lets the recursive descent go (hundreds of levels)."""
        self._report(StatementError(self.tok[2], "nesting too deep: brackets, braces or unary "
                                         "operators nested hundreds of levels deep"))
        return PtxSyntaxError(self.errors)

    def _recover(self, start: int, in_body: bool = False) -> None:
        """Skip the statement that starts at `start`: to just after its ';' (or before a '}'
        that closes the enclosing body).

        Braces are counted from the statement's start, not from the error, so that the '}' of
        a vector the error was in does not pass for the end of the body; other brackets are not
        counted, so that a stray ']' cannot close a '{'. At module level a '}' closing what was
        skipped ends the item (a function's body); in a body, braces after a statement's start
        are its own (vector operands, initializers)."""
        self._reset(start)
        depth = 0
        while self.tok[0] != EOF:
            kind = self.tok[0]
            if kind == "{":
                depth += 1
            elif kind == "}":
                if depth == 0:
                    return
                depth -= 1
                if depth == 0 and not in_body:
                    self._advance()
                    if self.tok[0] != ";":
                        return
            elif kind == ";" and (depth == 0 or in_body):  # no ';' inside a statement's braces
                self._advance()
                return
            self._advance()

    # --- module ----------------------------------------------------------------------------

    # module := '.version' INT.INT '.target' ID {',' ID} ['.address_size' INT] item*
    def module(self) -> ast.Module:
        module = ast.Module(version=(0, 0), target=(), source=self.source)
        seen_version = False
        while self.tok[0] != EOF:
            start = self.tok[2]
            try:
                if self._accept_dot("version"):
                    module.version = self._version()
                    seen_version = True
                elif self._accept_dot("target"):
                    module.target = self._target()
                elif self._accept_dot("address_size"):
                    module.address_size = self._int("an address size (32 or 64)")
                    if module.address_size not in (32, 64):
                        raise StatementError(start, "address size must be 32 or 64")
                else:
                    item = self._top_level()
                    if item is not None:
                        module.items.append(item)
            except StatementError as e:
                self._report(e)
                self._recover(start)
                if self.tok[0] == "}":  # no body to close here: skip it, or the loop stalls
                    self._advance()
        if not seen_version and not self.errors:
            self._report(StatementError(
                0, "missing '.version' directive at the start of the module"))
        if self.errors:
            raise PtxSyntaxError(self.errors)
        return module

    def _version(self) -> tuple[int, int]:
        kind, text, pos = self.tok
        if kind != "flt" or not re.fullmatch(r"\d{1,9}\.\d{1,9}", text):
            raise self._unexpected("expected a PTX version such as 8.5")
        self._advance()
        major, minor = text.split(".")
        return int(major), int(minor)

    def _target(self) -> tuple[str, ...]:
        names = [self._expect("id", "a target such as sm_90")[1]]
        while self._accept(","):
            names.append(self._expect("id", "a target option")[1])
        return tuple(names)

    # item := '.file' ... | '.section' ... | '.pragma' STR ';' | '.alias' ID ',' ID ';'
    #       | linkage* (entry | func | variable)
    def _top_level(self):
        kind, text, pos = self.tok
        if kind == ";":
            self._advance()
            return None
        if kind != "dot":
            raise self._unexpected("expected a directive (.entry, .func, .global, ...)")
        word = text[1:]
        if word in ("file", "loc"):
            return ast.Directive(word, self._rest_of_line(), pos)
        if word == "section":
            return ast.Directive(word, self._section(), pos)
        if word == "pragma":
            return self._pragma()
        if word == "alias":
            self._advance()
            first = self._expect("id", "a function name")[1]
            self._expect(",", "','")
            second = self._expect("id", "a function name")[1]
            self._expect(";", "';'")
            return ast.Directive("alias", f"{first}, {second}", pos)
        linkage = []
        while self.tok[0] == "dot" and self.tok[1][1:] in _LINKAGE:
            linkage.append(self._advance()[1][1:])
        attributes = self._attributes()
        kind, text, _ = self.tok
        if kind == "dot" and text == ".entry":
            return self._function("entry", tuple(linkage), pos)
        if kind == "dot" and text == ".func":
            return self._function("func", tuple(linkage), pos, attributes)
        if kind == "dot" and text[1:] in _VARIABLE_SPACES:
            variables = self._variable_statement(tuple(linkage), attributes)
            if len(variables) != 1:
                raise StatementError(pos, "declare one module-level variable per statement")
            return variables[0]
        raise self._unexpected("expected .entry, .func or a variable declaration")

    def _rest_of_line(self) -> str:
        """The text after the current directive up to the end of its line (.file, .loc)."""
        start = self.tok[2] + len(self.tok[1])
        end = self.text.find("\n", start)
        end = len(self.text) if end < 0 else end
        self._reset(end)
        return self.text[start:end].strip()

    # section := '.section' DOT '{' anything balanced '}'
    def _section(self) -> str:
        self._advance()
        start = self.tok[2]
        self._expect("dot", "a section name such as .debug_info")
        self._expect("{", "'{'")
        depth = 1
        while depth:
            kind = self._advance()[0]
            if kind == EOF:
                raise StatementError(start, "unterminated .section: missing '}'")
            depth += {"{": 1, "}": -1}.get(kind, 0)
        return self.text[start:self.tok[2]].strip()

    # pragma := '.pragma' STR {',' STR} ';'
    def _pragma(self) -> ast.Pragma:
        pos = self._advance()[2]
        values = [self._string()]
        while self._accept(","):
            values.append(self._string())
        self._expect(";", "';' after .pragma")
        return ast.Pragma(tuple(values), pos)

    def _string(self) -> str:
        return self._expect("str", "a string")[1][1:-1]

    # attributes := {'.attribute' attribute-list}
    def _attributes(self) -> tuple[str, ...]:
        out: list[str] = []
        while self._accept_dot("attribute"):
            out.extend(self._attribute_list())
        return tuple(out)

    # attribute-list := '(' attribute {',' attribute} ')'
    # attribute := DOT ['(' INT {',' INT} ')']       e.g. .managed, .unified(19, 95)
    # (PTX ISA 5.4.8, "Variable Attribute Directive: .attribute",
    # https://docs.nvidia.com/cuda/parallel-thread-execution/#variable-attribute-directive-attribute)
    def _attribute_list(self) -> list[str]:
        self._expect("(", "'(' after .attribute")
        names = [self._attribute()]
        while self._accept(","):
            names.append(self._attribute())
        self._expect(")", "')'")
        return names

    def _attribute(self) -> str:
        name = self._expect("dot", "an attribute such as .managed")[1][1:]
        if not self._accept("("):
            return name
        values = [self._int("a number")]
        while self._accept(","):
            values.append(self._int("a number"))
        self._expect(")", "')'")
        return f"{name}({','.join(str(v) for v in values)})"

    # entry := '.entry' ID ['(' params ')'] directive* (';' | '{' body '}')
    # func  := '.func' ['(' params ')'] ID ['(' params ')'] attribute* (';' | '{' body '}')
    def _function(self, kind: str, linkage, pos: int, attributes=()) -> ast.Function:
        self._advance()
        returns = []
        if kind == "func" and self.tok[0] == "(":
            returns = self._params()
        name = self._expect("id", f"the name of the .{kind}")[1]
        function = ast.Function(kind, name, linkage, returns, pos=pos, attributes=attributes)
        if self.tok[0] == "(":
            function.params = self._params()
        self._function_directives(function)
        if self._accept(";"):
            return function
        self._expect("{", f"'{{' to start the body of {name}, or ';'")
        function.body = self._body()
        return function

    def _function_directives(self, function: ast.Function) -> None:
        while True:
            kind, text, pos = self.tok
            if kind != "dot":
                return
            word = text[1:]
            if word == "pragma":
                function.pragmas.append(self._pragma())
            elif word == "attribute":
                function.attributes += self._attributes()
            elif word in _FUNCTION_DIRECTIVES:
                self._advance()
                values = []
                if self.tok[0] == "int":
                    values.append(self._int("a number"))
                    while self._accept(","):
                        values.append(self._int("a number"))
                function.directives.append((word, tuple(values)))
            else:
                raise self._unexpected(f"expected the body of {function.name}")

    # params := param {',' param} ;  param := ('.param' | '.reg') variable-declaration
    def _params(self) -> list[ast.Variable]:
        self._expect("(", "'('")
        params = []
        if self._accept(")"):
            return params
        while True:
            kind, text, pos = self.tok
            if kind != "dot" or text not in (".param", ".reg"):
                raise self._unexpected("expected a parameter (.param or .reg)")
            self._advance()
            params.append(self._declarator(text[1:], (), (), pos, in_signature=True))
            if self._accept(")"):
                return params
            self._expect(",", "',' or ')' in the parameter list")

    # variable-statement := space-and-attributes declarator {',' declarator} ';'
    def _variable_statement(self, linkage=(), attributes=()) -> list[ast.Variable]:
        kind, text, pos = self._advance()
        space = text[1:]
        first = self._declarator(space, linkage, attributes, pos)
        variables = [first]
        while self._accept(","):
            name_pos = self.tok[2]
            name = self._expect("id", "a variable name")[1]
            variables.append(self._declarator_tail(
                ast.Variable(space, first.type, name, linkage, first.align, first.vector,
                             attributes=first.attributes, pos=name_pos)))
        self._expect(";", "';' after the declaration")
        return variables

    # declarator := {'.align' INT | '.vN' | TYPE | '.ptr' | space | '.attribute' attribute-list} ID
    #               ['<' INT '>'] {'[' [expr] ']'} ['=' initializer]
    def _declarator(self, space, linkage, attributes, pos, in_signature=False) -> ast.Variable:
        var = ast.Variable(space, "", "", linkage, attributes=attributes, pos=pos)
        while self.tok[0] == "dot":
            _, text, at = self._advance()  # errors point at the modifier, not past it
            word = text[1:]
            if word == "align":
                if var.ptr:
                    var.ptr_align = self._int("an alignment")
                else:
                    var.align = self._int("an alignment")
            elif word in _VECTOR:
                var.vector = word
            elif word in _VARIABLE_TYPES:
                if var.type:
                    raise StatementError(
                        at, f"two types in one declaration: .{var.type}, .{word}", text)
                var.type = word
            elif word == "ptr" and in_signature:
                var.ptr = True
            elif var.ptr and word in _VARIABLE_SPACES:
                var.ptr_space = word
            elif word == "attribute" and not in_signature:
                var.attributes += tuple(self._attribute_list())
            else:
                raise StatementError(at, f"unexpected '.{word}' in a .{space} declaration", text)
        if not var.type:
            raise self._unexpected(f"expected a type in the .{space} declaration")
        var.pos = self.tok[2]
        if in_signature and self._accept("_"):
            var.name = "_"  # prototypes name their parameters `_`
        else:
            var.name = self._expect("id", "a variable name")[1]
        return self._declarator_tail(var)

    def _declarator_tail(self, var: ast.Variable) -> ast.Variable:
        if self._accept("<"):
            var.count = self._int("a register count")
            self._expect(">", "'>'")
        dims = []
        while self._accept("["):
            dims.append(None if self.tok[0] == "]" else self._const_expr())
            self._expect("]", "']'")
        var.dims = tuple(dims)
        if self._accept("="):
            var.init = self._initializer()
        return var

    # initializer := '{' initializer {',' initializer} '}' | ID '=' value | value
    def _initializer(self) -> ast.Initializer:
        if self._accept("{"):
            items = [self._initializer()]
            while self._accept(","):
                items.append(self._initializer())
            self._expect("}", "'}' closing the initializer")
            return ast.Initializer(items)
        kind, text, _ = self.tok
        if kind == "id" and text in ("generic", "mask") and self.lexer.text[self.lexer.pos:
                                                                           ].lstrip()[:1] == "(":
            self._advance()
            self._expect("(", "'('")
            name = self._expect("id", "a variable name")[1]
            self._expect(")", "')'")
            return ast.Initializer(ast.GenericOf(name, self._offset()))
        value = self._value()
        if isinstance(value, ast.Name) and self._accept("="):
            return ast.Initializer(ast.Field(value.name, self._value()))
        return ast.Initializer(value)

    # --- function bodies -------------------------------------------------------------------

    # body := statement* '}'
    def _body(self) -> list:
        statements = []
        text = self.text
        skip, simple, label = _SKIP.match, _SIMPLE_INSTRUCTION.match, _SIMPLE_LABEL.match
        reg = _SIMPLE_REGISTERS.match
        pos = self.tok[2]
        while True:
            # Simple instructions and labels are read straight from the text; the token
            # rules take everything else.
            if not self.fast_path:
                simple = reg = label = _never
            m = simple(text, pos)
            if m is not None and m.group(3) in OPS:
                try:
                    statements.append(self._simple_instruction(m))
                except StatementError as e:
                    self._report(e)
                pos = m.end()
                continue
            m = reg(text, pos)
            if m is not None and m.group(1) in _VARIABLE_TYPES:
                statements.append(self._simple_register(m))
                pos = skip(text, m.end()).end()
                continue
            m = label(text, pos)
            if m is not None and not text.startswith(".", skip(text, m.end()).end()):
                statements.append(ast.Label(m.group(1), pos))
                pos = skip(text, m.end()).end()
                continue
            self._reset(pos)
            kind = self.tok[0]
            if kind == "}":
                self._advance()
                return statements
            if kind == EOF:
                raise StatementError(self.tok[2], "missing '}' at the end of the function body")
            try:
                statement = self._statement()
                if isinstance(statement, list):
                    statements.extend(statement)
                elif statement is not None:
                    statements.append(statement)
            except StatementError as e:
                self._report(e)
                self._recover(pos, in_body=True)
            pos = self.tok[2]

    def _simple_instruction(self, m: re.Match) -> ast.Instruction:
        negated, guard, opcode, modifiers, operands = m.groups()
        spec = self._specs.get((opcode, modifiers)) or self._spec(opcode, modifiers, m.start(3))
        if operands:
            split = "{" in operands or "[" in operands
            pieces = _SPLIT_OPERANDS.findall(operands) if split else operands.split(",")
            if split and ",".join(pieces) != operands:
                # The split skipped an empty operand (`a, , b`, `{a}, ;`) or an unclosed '[':
                # the token rules read the statement and report what is wrong.
                self._reset(m.start())
                return self._instruction()
            cache = self._operands
            try:
                values = tuple([cache[piece] for piece in pieces])
            except KeyError:
                values = tuple(self._new_operands(operands, m.start(5), split))
        else:
            values = ()
        counts = OPS[opcode].operands
        if counts is not None and not counts[0] <= len(values) <= counts[1]:
            self._check_operand_count(spec, values, m.start(3))
        return ast.Instruction(spec, values, ast.Name(guard) if guard else None,
                               bool(negated), m.start())

    def _simple_register(self, m: re.Match) -> ast.Variable:
        type_, name, count = m.groups()
        return ast.Variable("reg", type_, name, count=None if count is None else int(count),
                            pos=m.start(2))

    def _new_operands(self, operands: str, base: int, split: bool):
        """The operands of a simple instruction (written in `operands`, which starts at
        `base`): each distinct operand text is parsed once by the token rules, then shared."""
        if split:
            pieces = [(p.group(), p.start()) for p in _SPLIT_OPERANDS.finditer(operands)]
        else:
            pieces, at = [], 0
            for piece in operands.split(","):
                pieces.append((piece, at))
                at += len(piece) + 1
        cache = self._operands
        for piece, at in pieces:
            value = cache.get(piece)
            if value is None:
                key = piece.strip()
                pos = base + at + (piece.find(key[0]) if key else 0)
                value = cache[piece] = self._operand_at(key, pos)
            yield value

    def _operand_at(self, text: str, pos: int) -> ast.Operand:
        """Parse the operand written at `pos` (whose text is `text`) with the token rules."""
        saved = self.lexer.pos, self.tok
        try:
            self._reset(pos)
            operand = self._operand()
            if self.tok[0] not in (",", ";") or self.tok[2] < pos + len(text):
                raise self._unexpected("expected ',' or ';' after an operand")
            return operand
        finally:
            self.lexer.pos, self.tok = saved

    # statement := '{' body '}' | variable-statement | '.pragma' ... | '.loc' ...
    #            | ID ':' [call-prototype] | instruction
    def _statement(self):
        kind, text, pos = self.tok
        if kind == "{":
            self._advance()
            return ast.Block(self._body(), pos)
        if kind == ";":
            self._advance()
            return None
        if kind == "dot":
            word = text[1:]
            if word in _VARIABLE_SPACES:
                return self._variable_statement()
            if word == "pragma":
                return self._pragma()
            if word in ("loc", "file"):
                return ast.DebugLoc(f".{word} {self._rest_of_line()}", pos)
            if word == "attribute":
                attributes = self._attributes()
                if self.tok[0] == "dot" and self.tok[1][1:] in _VARIABLE_SPACES:
                    return self._variable_statement((), attributes)
            raise self._unexpected("expected an instruction, a label or a declaration")
        return self._instruction()

    # instruction := ['@' ['!'] ID] ID {DOT} [operand {',' operand}] ';'
    #              | ID ':' '.callprototype' ...
    def _instruction(self):
        start = self.tok[2]
        guard, negated = None, False
        if self._accept("@"):
            negated = self._accept("!")
            guard = ast.Name(self._expect("id", "a predicate register after '@'")[1])
        kind, opcode, pos = self._expect("id", "an instruction")
        if guard is None and self._accept(":"):
            if self._accept_dot("callprototype"):
                return self._call_prototype(opcode, pos)
            for kind in ("branchtargets", "calltargets"):
                if self._accept_dot(kind):
                    targets = [self._expect("id", "a label or function name")[1]]
                    while self._accept(","):
                        targets.append(self._expect("id", "a label or function name")[1])
                    self._expect(";", f"';' after .{kind}")
                    return ast.BranchTargets(opcode, tuple(targets), kind, pos)
            return ast.Label(opcode, pos)
        modifiers = []
        while self.tok[0] == "dot":
            modifiers.append(self._advance()[1])
        spec = self._spec(opcode, "".join(modifiers), pos)
        operands = []
        if self.tok[0] != ";":
            operands.append(self._operand())
            while self._accept(","):
                operands.append(self._operand())
        if self.tok[0] != ";":
            raise self._unexpected("expected ',' or ';' after an operand")
        # Checked before the ';' is taken, so that recovery skips this statement, not the next.
        self._check_operand_count(spec, operands, pos)
        self._advance()
        return ast.Instruction(spec, tuple(operands), guard, negated, start)

    # call-prototype := ID ':' '.callprototype' ['(' param ')'] '_' '(' params ')' ['.noreturn'] ';'
    def _call_prototype(self, label: str, pos: int) -> ast.CallPrototype:
        returns = self._params() if self.tok[0] == "(" else []
        self._expect("_", "'_' in the call prototype")
        params = self._params() if self.tok[0] == "(" else []
        noreturn = self._accept_dot("noreturn")
        self._expect(";", "';' after the call prototype")
        return ast.CallPrototype(label, returns, params, noreturn, pos)

    # --- the instruction table ---------------------------------------------------------------

    def _spec(self, opcode: str, modifiers: str, pos: int) -> ast.Spec:
        spec = self._specs.get((opcode, modifiers))
        if spec is None:
            spec = classify(opcode, modifiers, pos)
            self._specs[(opcode, modifiers)] = spec
        return spec

    def _check_operand_count(self, spec: ast.Spec, operands, pos: int) -> None:
        counts = OPS[spec.opcode].operands
        if counts is not None and not counts[0] <= len(operands) <= counts[1]:
            want = str(counts[0]) if counts[0] == counts[1] else f"{counts[0]} to {counts[1]}"
            raise StatementError(pos, f"'{spec.text}' takes {want} operands, found {len(operands)}",
                         spec.text)

def ast_diag(source: ast.Source, pos: int, message: str, text: str = "") -> Diagnostic:
    return Diagnostic(source.location(pos), message, text)
