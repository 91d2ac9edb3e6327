"""Property-based fuzzing of the PTX parser (ptxport/ptx/parser.py, lexer.py).

The invariant for any text at all: `parse` returns a Module or raises PtxSyntaxError, within a
time budget, and every diagnostic points inside the text. The parser's fast path (statements
read by regular expression) must agree with its token rules: the same tree, or the same
diagnostics. Inputs:
  (a) arbitrary text, bytes decoded, and random strings of PTX's punctuation and words;
  (b) mutations of the hand-written PTX in tests/ptx_handwritten (tokens deleted, duplicated,
      swapped; punctuation inserted; characters replaced; truncation; lines spliced in);
  (c) random instructions built from the instruction table (ptxport.ptx.isa.OPS) inside a
      valid kernel, which, when they parse, must survive print -> parse unchanged;
and, as plain tests, nesting thousands of levels deep and every input that once crashed the
parser or made its two paths disagree.

CI runs are deterministic (`derandomize=True`) and take well under a minute. Set
PTXPORT_FUZZ_EXAMPLES to fuzz longer, with new random inputs each run:
`PTXPORT_FUZZ_EXAMPLES=20000 pytest tests/ptx/test_fuzz.py`.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from ptxport.errors import PtxSyntaxError
from ptxport.ptx import ast
from ptxport.ptx.isa import OPS
from ptxport.ptx.parser import parse
from ptxport.ptx.printer import print_module

HANDWRITTEN = Path(__file__).resolve().parent.parent / "ptx_handwritten"
CORPUS = {p.name: p.read_text() for p in sorted(HANDWRITTEN.glob("*.ptx"))}

EXAMPLES = int(os.environ.get("PTXPORT_FUZZ_EXAMPLES", "0"))
# Seconds one parse may take: inputs are at most about 100 KB, which the parser reads in tens of
# milliseconds; anything near this limit is a hang (a loop, or backtracking in a regex).
PARSE_BUDGET_S = 2.0


def fuzz_settings(examples: int):
    # A longer local run draws new inputs each time; the short run of CI is always the same.
    return settings(max_examples=max(examples, EXAMPLES), deadline=None, derandomize=not EXAMPLES,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


class ParseTimeout(Exception):
    pass


@contextlib.contextmanager
def time_budget(seconds: float):
    """Fail if the block takes more than `seconds` of CPU time (not wall-clock time, so that a
    busy machine cannot fail the test)."""
    expired = []

    def expire(signum, frame):
        expired.append(True)
        raise ParseTimeout(f"parse took longer than {seconds} s")

    previous = signal.signal(signal.SIGPROF, expire)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)
    if expired:  # the exception was raised where it is ignored (a gc callback)
        raise ParseTimeout(f"parse took longer than {seconds} s")


def check_parse(text: str, fast_path: bool = True) -> ast.Module | None:
    """Parse `text`: a Module, or None after checking the PtxSyntaxError it raised. Any other
    exception (or running past the budget) fails the test."""
    return parse_or_error(text, fast_path)[0]


def parse_or_error(text: str, fast_path: bool = True):
    """(Module, None) or (None, PtxSyntaxError), the error's diagnostics checked."""
    with time_budget(PARSE_BUDGET_S):
        try:
            return parse(text, "fuzz.ptx", fast_path=fast_path), None
        except PtxSyntaxError as e:
            error = e
    check_diagnostics(error, text)
    return None, error


def check_diagnostics(error: PtxSyntaxError, text: str) -> None:
    lines = text.split("\n")
    assert error.diagnostics
    for d in error.diagnostics:
        where = d.location
        assert where.file == "fuzz.ptx"
        assert 1 <= where.line <= len(lines), str(d)
        # A column may point one past a line's last character (a missing ';' at its end).
        assert 1 <= where.column <= len(lines[where.line - 1]) + 1, str(d)
        assert d.message
    assert str(error).count("\n") == len(error.diagnostics) - 1 + sum(
        str(d).count("\n") for d in error.diagnostics)


def check_paths_agree(text: str) -> ast.Module | None:
    """The fast path and the token rules read `text` alike: the same tree, or the same
    diagnostics. Returns the tree (None for an error)."""
    fast, fast_error = parse_or_error(text)
    slow, slow_error = parse_or_error(text, fast_path=False)
    assert fast == slow, "fast path and token rules read different trees"
    if fast_error or slow_error:
        assert fast_error and slow_error, "only one of fast path and token rules failed"
        assert fast_error.diagnostics == slow_error.diagnostics, (
            f"fast path:\n{fast_error}\ntoken rules:\n{slow_error}")
    return fast


def check_round_trip(module: ast.Module) -> None:
    printed = print_module(module)
    again = check_parse(printed)
    assert again is not None, f"the printed module does not parse:\n{printed}"
    assert again == module, printed


# --- (a) arbitrary text -------------------------------------------------------------------------

HEADER = ".version 8.5\n.target sm_90\n.address_size 64\n"
KERNEL_OPEN = HEADER + ".visible .entry k(.param .u64 p)\n{\n"

# Characters that mean something to the lexer, so that random text reaches past its first token.
PTX_ALPHABET = st.sampled_from(list(
    " \t\n\r.;,:{}[]()<>!|@_%$+-*/~?=&^\"'\\#0123456789abcdefxXfFdDU"
    "ptrglobsharedentryfuncversion") + [
    ".reg", ".b32", "%r", "%rd", "%p", "add", "ld", "mov", ".entry", ".version", "/*", "*/",
    "//", "0f", "0d", "0x", "0b", "1.5", "e+", ".pragma", ".section", ".func", "{", "}"])

ptx_like_text = st.lists(PTX_ALPHABET, max_size=120).map("".join)


# Inputs that once crashed or hung the parser.
BIG = "0xFFFFFFFFFFFFFFFF"
REGRESSIONS = {
    "module-level '}'": "}",                # the error loop never moved past it: a hang
    "extra '}'": ".version 8.5\n.entry k() { ret; }\n}",
    "long version": ".version " + "9" * 5000 + ".0\n",    # int() of 4300+ digits: ValueError
    "long register count": KERNEL_OPEN + "\t.reg .b32 %r<" + "9" * 5000 + ">;\n}\n",
    "huge quotient": KERNEL_OPEN + f"\tmov.u64 %rd1, {'*'.join([BIG] * 17)} / 1;\n}}\n",
    "deep parentheses": KERNEL_OPEN + "\tmov.u32 %r1, " + "(" * 2000 + "1" + ")" * 2000 + ";\n}\n",
    # Quadratic time: each '/' looked for the end of the comment again; the fast path's lazy
    # operands retried `[ \t]*;` at every space.
    "many unterminated comments": KERNEL_OPEN + "\tadd.s32 %r1, %r2, %r3 /*\n" * 3000,
    "spaces without ';'": KERNEL_OPEN + "\tadd.s32 %r1" + " " * 100_000 + "x\n}\n",
}


@pytest.mark.parametrize("text", REGRESSIONS.values(), ids=REGRESSIONS.keys())
def test_regressions(text):
    check_paths_agree(text)


# Kernel bodies that the fast path and the token rules once read differently.
DISAGREEMENTS = {
    "empty operand after a vector": "mov.b64 %rd1, {%r1, %r2}, ;",  # fast path accepted it
    "empty operand between": "mov.b64 {%r1,%r2},,%rd1;",
    "unclosed '['": "ld.u32 %r1, [%rd1;",
    "empty last operand": "add.s32 %r1, %r2,\n\n\t;",
    "no operands before a line break": "exit \n\t;",               # fast path: an empty operand
    "modifier after a space": "add .s32 %r1, %r2, %r3;",           # ptxas accepts these two
    "modifiers after a space": "add.s32 \t.sat %r1, %r2, %r3;",
    "octal register count": ".reg .b32 %r<010>;",
    "'_' as a guard": "@_ ret;",
    "'%' as a label": "%:\n\tret;",
    # The token rules skipped the statement after a wrong operand count (error 3 was lost).
    "three errors": "foo.s32 %r1;\n\tadd.s32 %r1, %r2;\n\tmov.u32 %r1, 09;",
    # Recovery took the vector's '}' for the end of the body.
    "error in a vector": "ld.v4.f32 {%f1, _, %f3]  %f4}, [%rd2];\n\tret;",
    "empty vector element": "st.v4.f32 [%rd1], {%f1, , %f3, %f4};\n\tret;",
}


@pytest.mark.parametrize("body", DISAGREEMENTS.values(), ids=DISAGREEMENTS.keys())
def test_paths_agree_on(body):
    check_paths_agree(KERNEL_OPEN + "\t" + body + "\n}\n")


@fuzz_settings(300)
@given(st.text(max_size=400))
def test_arbitrary_text(text):
    check_parse(text)


@fuzz_settings(200)
@given(st.binary(max_size=400), st.sampled_from(["utf-8", "latin-1"]))
def test_arbitrary_bytes(data, encoding):
    check_parse(data.decode(encoding, errors="replace"))


@fuzz_settings(400)
@given(ptx_like_text, st.sampled_from(["", HEADER, KERNEL_OPEN]))
def test_ptx_like_text(text, prefix):
    check_paths_agree(prefix + text)


# --- (b) mutations of real PTX ------------------------------------------------------------------

_PIECE = re.compile(r"\s+|[\w$%.:]+|.", re.DOTALL)
PUNCTUATION = list(";,:{}[]()<>!|@_+-*/\"=.") + ["/*", "*/", "//", "\n", "0x", "09"]


@st.composite
def mutated_ptx(draw):
    """A hand-written PTX file after a few random edits of its tokens, characters and lines."""
    name = draw(st.sampled_from(sorted(CORPUS)))
    text = CORPUS[name]
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(
            ["delete", "duplicate", "swap", "punct", "char", "truncate", "splice"]))
        if kind == "truncate":
            text = text[:draw(st.integers(0, len(text)))]
            continue
        if kind == "char" and text:
            i = draw(st.integers(0, len(text) - 1))
            text = text[:i] + draw(st.sampled_from(["", "\0", "{", "}", "é"])) + text[i + 1:]
            continue
        if kind == "splice":
            other = CORPUS[draw(st.sampled_from(sorted(CORPUS)))].split("\n")
            lines = text.split("\n")
            start = draw(st.integers(0, len(other)))
            piece = other[start:start + draw(st.integers(1, 20))]
            at = draw(st.integers(0, len(lines)))
            text = "\n".join(lines[:at] + piece + lines[at:])
            continue
        pieces = _PIECE.findall(text)
        if not pieces:
            continue
        i = draw(st.integers(0, len(pieces) - 1))
        if kind == "delete":
            del pieces[i]
        elif kind == "duplicate":
            pieces.insert(i, pieces[i])
        elif kind == "swap":
            j = draw(st.integers(0, len(pieces) - 1))
            pieces[i], pieces[j] = pieces[j], pieces[i]
        else:
            pieces.insert(i, draw(st.sampled_from(PUNCTUATION)))
        text = "".join(pieces)
    return text


@fuzz_settings(300)
@given(mutated_ptx())
def test_mutated_ptx(text):
    check_paths_agree(text)


# --- (c) instructions from the instruction table ---------------------------------------------

REGISTERS = ["%r1", "%rd2", "%f3", "%fd4", "%p1", "%h5", "%rs6", "%tid.x", "%ctaid.y", "%laneid",
             "sym", "$L__BB0_1", "_x", "p"]
register = st.sampled_from(REGISTERS)
sign = st.sampled_from(["", "-"])
_INT_FORMATS = ("{}", "0x{:x}", "0X{:X}", "0b{:b}", "0{:o}")
integer = st.builds(
    lambda value, form, suffix: (form.format(value) if value else "0") + suffix,
    st.integers(0, (1 << 64) - 1) | st.integers(0, 300), st.sampled_from(_INT_FORMATS),
    st.sampled_from(["", "", "U"]))
floating = st.builds(str.__add__, sign, st.one_of(
    st.integers(0, (1 << 32) - 1).map("0f{:08X}".format),
    st.integers(0, (1 << 64) - 1).map("0d{:016x}".format),
    st.sampled_from(["1.5", "0.0", "3.", "1e3", "2.5e-3", "1E+10", "123.456e7"])))
scalar = register | st.builds(str.__add__, sign, integer) | floating
operand = st.one_of(
    scalar,
    st.just("_"),
    register.map("!{}".format),
    st.builds("{}|{}".format, register | st.just("_"), register),
    register.map("[{}]".format),
    st.builds("[{}{}{}]".format, register | st.sampled_from(["sym", "arr"]),
              st.sampled_from(["+", "-"]), integer),
    integer.map("[{}]".format),
    st.builds("{}{}{}".format, st.sampled_from(["sym", "arr"]), st.sampled_from(["+", "-"]),
              integer),
    register.map("-{}".format),
    st.lists(scalar, min_size=1, max_size=4).map(lambda v: "{" + ", ".join(v) + "}"),
    st.lists(register, max_size=3).map(lambda v: "(" + ", ".join(v) + ")"),
    st.builds("[{}, {{{}}}]".format, register,
              st.lists(register, min_size=1, max_size=4).map(", ".join)),
    # Small terms: a result past 64 bits would not survive the round trip (the parser does not
    # wrap constant expressions to 64 bits as PTX ISA 4.6.2 says; reported to the lead).
    st.builds("({} {} {})".format, st.integers(0, 1 << 32),
              st.sampled_from(["+", "*", "<<", "|", "-", "/", "%"]), st.integers(0, 9)),
)


@st.composite
def instructions(draw):
    """`[@[!]p] opcode{.modifier} operand, ...;` with modifiers and operand count mostly as the
    table allows, and sometimes not."""
    op = OPS[draw(st.sampled_from(sorted(OPS)))]
    modifiers = list(draw(st.lists(st.sampled_from(op.types), max_size=3))) if op.types else []
    for group in op.groups.values():
        if draw(st.booleans()):
            values = draw(st.lists(st.sampled_from(group.values), min_size=1,
                                   max_size=2 if group.multi else 1, unique=True))
            modifiers += values
    modifiers = draw(st.permutations(modifiers))
    if draw(st.integers(0, 19)) == 0:
        modifiers.append(draw(st.sampled_from(["bogus", "rn", "v4", "f32", "x"])))
    low, high = op.operands if op.operands else (0, 5)
    wrong = draw(st.integers(0, 19)) == 0
    count = draw(st.integers(0, 7) if wrong else st.integers(low, min(high, low + 6)))
    values = draw(st.lists(operand, min_size=count, max_size=count))
    guard = draw(st.sampled_from(["", "", "", "@%p1 ", "@!%p2 ", "@p "]))
    space = draw(st.sampled_from([" ", "\t", "  "]))
    text = guard + ".".join([op.name, *modifiers])
    if values:
        text += space + ", ".join(values)
    return text + ";"


@fuzz_settings(300)
@given(st.lists(instructions(), min_size=1, max_size=6),
       st.sampled_from(["", "$L__BB0_1:\n", "\t.reg .b32 %r<8>;\n"]))
@example(["mov.u32 %r1, 010;"], "\t.reg .b32 %r<010>;\n")  # octal count: paths disagreed
@example(["@_ ret;"], "_:\n")                              # `_` is no name: paths disagreed
def test_generated_instructions(body, prefix):
    text = KERNEL_OPEN + prefix + "\n".join("\t" + i for i in body) + "\n\tret;\n}\n"
    module = check_paths_agree(text)
    event("parsed" if module is not None else "syntax error")
    if module is not None:
        check_round_trip(module)


@fuzz_settings(200)
@given(instructions())
def test_errors_point_into_the_instruction(instruction):
    # One instruction in a kernel: whatever is wrong with it is reported on its own line.
    text = KERNEL_OPEN + "\t" + instruction + "\n}\n"
    line = KERNEL_OPEN.count("\n") + 1
    try:
        with time_budget(PARSE_BUDGET_S):
            parse(text, "fuzz.ptx")
    except PtxSyntaxError as e:
        check_diagnostics(e, text)
        assert [d.location.line for d in e.diagnostics] == [line] * len(e.diagnostics), str(e)


# --- deep nesting -------------------------------------------------------------------------------

# `@` marks where the nested text goes.
NESTED_CONTEXTS = {
    "expression": KERNEL_OPEN + "\tmov.u32 %r1, @;\n}\n",     # ((((1)))), ----1
    "operand": KERNEL_OPEN + "\tmov.u32 %r1, !@;\n}\n",       # !!!!p, [[[[1]]]]
    "blocks": KERNEL_OPEN + "@\n}\n",                         # {{{{ }}}}
    "initializer": HEADER + ".global .u32 g[1] = @;\n",        # {{{{1}}}}
    "arguments": KERNEL_OPEN + "\tcall f, @;\n}\n",           # ((((1))))
}
NESTINGS = {"(": ")", "-": "", "!": "", "~": "", "{": "}", "[": "]", "(-": ")"}


@pytest.mark.parametrize("depth", [1, 50, 5000])
@pytest.mark.parametrize("opener", sorted(NESTINGS))
@pytest.mark.parametrize("context", NESTED_CONTEXTS.values(), ids=NESTED_CONTEXTS.keys())
def test_deep_nesting(context, opener, depth):
    # Each level is a few Python frames of the recursive descent: thousands of levels must
    # give a PtxSyntaxError, not a RecursionError.
    for closer in (NESTINGS[opener] * depth, ""):
        check_parse(context.replace("@", opener * depth + "1" + closer))
