"""How the PTX parser (ptxport/ptx/parser.py) reports mistakes, and what it reads correctly.

- Each malformed snippet gives a PtxSyntaxError whose first diagnostic has the expected line,
  column and words, read alike by the fast path and by the token rules.
- A module with several mistakes reports every one, in order, each on its own line.
- Every hand-written PTX file (tests/ptx_handwritten) survives parse -> print -> parse.
- `parse_operand` reads every operand form to the expected node.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from ptxport.errors import PtxSyntaxError
from ptxport.ptx import ast
from ptxport.ptx.parser import parse, parse_operand
from ptxport.ptx.printer import print_module

HANDWRITTEN = sorted((Path(__file__).resolve().parent.parent / "ptx_handwritten").glob("*.ptx"))

HEADER = ".version 8.5\n.target sm_90\n.address_size 64\n"


def kernel(body: str) -> str:
    """A kernel whose body starts on line 6."""
    return HEADER + ".visible .entry k()\n{\n" + body + "\n}\n"


def errors_of(text: str, fast_path: bool = True) -> PtxSyntaxError:
    with pytest.raises(PtxSyntaxError) as caught:
        parse(text, "bad.ptx", fast_path=fast_path)
    return caught.value


# name: (PTX text, line, column, words the message must contain)
CASES = {
    "unknown opcode": (kernel("\tfoo.s32 %r1, %r2;"), 6, 2, ("unknown instruction 'foo'",)),
    "unknown modifier": (kernel("\tadd.q32 %r1, %r2, %r3;"), 6, 2,
                         ("'.q32'", "not a modifier of 'add'")),
    "unknown modifier after a guard": (kernel("\t@!%p1 ld.globl.u32 %r1, [%rd1];"), 6, 8,
                                       ("'.globl'", "'ld'")),
    "two rounding modes": (kernel("\tadd.rn.rz.f32 %f1, %f2, %f3;"), 6, 2,
                           ("'.rn' and '.rz'", "at most one rnd")),
    "a modifier twice": (kernel("\tadd.sat.sat.s32 %r1, %r2, %r3;"), 6, 2, ("'.sat'",)),
    "too few operands": (kernel("\tadd.s32 %r1, %r2;"), 6, 2,
                         ("'add.s32' takes 3 operands, found 2",)),
    "too many operands": (kernel("\tret %r1;"), 6, 2, ("'ret' takes 0 operands, found 1",)),
    "empty operand": (kernel("\tadd.s32 %r1, , %r3;"), 6, 15, ("expected an operand", "','")),
    "missing ';'": (kernel("\tadd.s32 %r1, %r2, %r3\n\tret;"), 7, 2,
                    ("expected ',' or ';'", "'ret'")),
    "missing ';' at the end of the file": (HEADER + ".entry k()\n{\n\tret", 6, 5,
                                           ("end of the file",)),
    "unterminated comment": (kernel("\tret; /* never closed"), 6, 7,
                             ("unterminated comment", "'*/'")),
    "bad character": (kernel("\tadd.s32 %r1, %r2, #3;"), 6, 20,
                      ("'#' cannot start a PTX token",)),
    "missing '}'": (HEADER + ".entry k()\n{\n\tret;\n", 7, 1, ("missing '}'",)),
    "extra '}'": (kernel("\tret;") + "}\n", 8, 1, ("found '}'",)),
    "missing .version": (".target sm_90\n.entry k()\n{\n\tret;\n}\n", 1, 1,
                         ("missing '.version'",)),
    "bad .version": (".version 8\n.target sm_90\n", 1, 10, ("PTX version such as 8.5",)),
    "bad .address_size": (".version 8.5\n.target sm_90\n.address_size 48\n", 3, 1,
                          ("32 or 64",)),
    "malformed integer": (kernel("\tmov.u32 %r1, 09;"), 6, 15,
                          ("malformed integer constant '09'",)),
    "malformed integer in an address": (kernel("\tld.global.u32 %r1, [%rd1+08];"), 6, 27,
                                        ("'08'",)),
    "65-bit hexadecimal integer": (kernel("\tmov.u64 %rd1, 0x10000000000000000;"), 6, 16,
                                   ("does not fit in 64 bits",)),
    "65-bit decimal integer": (kernel("\tmov.u64 %rd1, 18446744073709551616;"), 6, 16,
                               ("'18446744073709551616' does not fit in 64 bits",)),
    "division by zero": (kernel("\tmov.u32 %r1, 4 / (2 - 2);"), 6, 17, ("division by zero",)),
    "register range without a number": (kernel("\t.reg .b32 %r<x>;"), 6, 15,
                                        ("expected a register count", "'x'")),
    "register range without '>'": (kernel("\t.reg .b32 %r<4;"), 6, 16, ("expected '>'",)),
    "negative register range": (kernel("\t.reg .b32 %r<-1>;"), 6, 15,
                                ("expected a register count",)),
    "octal register range": (kernel("\t.reg .b32 %r<09>;"), 6, 15, ("'09'",)),
    "unterminated string": (HEADER + '.pragma "nounroll;\n', 4, 9, ("unterminated string",)),
    "unterminated string in a body": (kernel('\t.pragma "nounroll;'), 6, 10,
                                      ("unterminated string",)),
    ".section without '}'": (HEADER + ".section .debug_info {\n\t.b8 1\n", 4, 10,
                             ("unterminated .section", "'}'")),
    "two types in a declaration": (kernel("\t.reg .b32 .f32 %r;"), 6, 12, ("two types",)),
    "unknown word in a declaration": (kernel("\t.reg .b32 .bogus %r;"), 6, 12,
                                      ("unexpected '.bogus' in a .reg declaration",)),
    "nesting too deep": (kernel("\tmov.u32 %r1, " + "(" * 3000 + "1" + ")" * 3000 + ";"), 6,
                         None, ("nesting too deep",)),
}


@pytest.mark.parametrize("fast_path", [True, False], ids=["fast-path", "token-rules"])
@pytest.mark.parametrize(("text", "line", "column", "words"), CASES.values(), ids=CASES.keys())
def test_error_is_reported_where_it_is(text, line, column, words, fast_path):
    error = errors_of(text, fast_path)
    first = error.diagnostics[0]
    assert first.location.file == "bad.ptx"
    assert first.location.line == line, str(error)
    if column is not None:
        assert first.location.column == column, str(error)
    for word in words:
        assert word in first.message, str(error)
    assert str(error).startswith(f"bad.ptx:{line}:{first.location.column}: error: ")


def test_every_error_of_a_module_is_reported_in_order():
    text = kernel(
        "\tfoo.s32 %r1;\n"                      # line 6: unknown instruction
        "\tadd.s32 %r1, %r2;\n"                 # line 7: too few operands
        "\tmov.u32 %r1, 1;\n"                   # line 8: fine
        "\tmov.u32 %r1, 09;"                    # line 9: malformed integer
    ) + ".entry j()\n{\n\tadd.q32 %r1, %r2, %r3;\n}\n"   # line 13: unknown modifier
    for fast_path in (True, False):
        error = errors_of(text, fast_path)
        where = [(d.location.line, d.location.column) for d in error.diagnostics]
        assert where == [(6, 2), (7, 2), (9, 15), (13, 2)], str(error)
        assert "unknown instruction" in error.diagnostics[0].message
        assert "takes 3 operands" in error.diagnostics[1].message
        assert "malformed integer" in error.diagnostics[2].message
        assert "'.q32'" in error.diagnostics[3].message
        assert str(error).count("\n") == 3          # one line per diagnostic


def test_errors_inside_vectors_do_not_end_the_body():
    # Recovery skips the whole statement, braces of its vectors included, and goes on.
    text = kernel("\tld.v4.f32 {%f1, , %f3, %f4}, [%rd2];\n\tst.v2.f32 [%rd1], {%f1 %f2};\n\tret;")
    for fast_path in (True, False):
        error = errors_of(text, fast_path)
        assert [d.location.line for d in error.diagnostics] == [6, 7], str(error)


def test_first_error_fields():
    error = errors_of(kernel("\tfoo.s32 %r1, %r2;"))
    assert (error.file, error.line, error.column) == ("bad.ptx", 6, 2)
    assert error.text == "foo"
    assert error.message == "unknown instruction 'foo'"


# --- round trips ----------------------------------------------------------------------------

@pytest.mark.parametrize("path", HANDWRITTEN, ids=[p.name for p in HANDWRITTEN])
def test_handwritten_round_trip(path: Path):
    module = parse(path.read_text(), str(path))
    printed = print_module(module)
    again = parse(printed, "printed.ptx")
    assert again == module
    assert print_module(again) == printed


# --- operands -------------------------------------------------------------------------------

def f32(value: float) -> ast.FloatImm:
    return ast.FloatImm(struct.unpack("<I", struct.pack("<f", value))[0], 32)


def f64(value: float) -> ast.FloatImm:
    return ast.FloatImm(struct.unpack("<Q", struct.pack("<d", value))[0], 64)


R1, R2, P1, P2, RD1 = (ast.Name(n) for n in ("%r1", "%r2", "%p1", "%p2", "%rd1"))

OPERANDS = {
    # registers and names
    "%r1": R1,
    "%tid.x": ast.Name("%tid", "x"),
    "$L__BB0_1": ast.Name("$L__BB0_1"),
    "_": ast.SINK,
    "!%p1": ast.Not(P1),
    "%p1|%p2": ast.PredPair(P1, P2),
    "_|%p2": ast.PredPair(ast.SINK, P2),
    "-%r1": ast.Neg(R1),
    "sym+4": ast.SymbolOffset("sym", 4),
    "sym-4": ast.SymbolOffset("sym", -4),
    # integers in every base (PTX ISA 4.5.1: a leading 0 is octal)
    "42": ast.IntImm(42),
    "42U": ast.IntImm(42),
    "-42": ast.IntImm(-42),
    "0x2A": ast.IntImm(42),
    "0X2aU": ast.IntImm(42),
    "052": ast.IntImm(42),
    "0b101010": ast.IntImm(42),
    "0": ast.IntImm(0),
    "0xFFFFFFFFFFFFFFFF": ast.IntImm((1 << 64) - 1),
    # constant expressions, folded as C does (truncating division, exact past 2**53)
    "1 + 2 * 3": ast.IntImm(7),
    "1 << 4 | 3": ast.IntImm(19),
    "-7 / 2": ast.IntImm(-3),
    "-7 % 2": ast.IntImm(-1),
    "7 % -2": ast.IntImm(1),
    "0xFFFFFFFFFFFFFFFF / 1": ast.IntImm((1 << 64) - 1),
    "~0": ast.IntImm(-1),
    "1 ? 2 : 3": ast.IntImm(2),
    "2 > 1 && 0 == 0": ast.IntImm(1),
    # floating point: exact bits
    "0f3F800000": f32(1.0),
    "-0f3F800000": f32(-1.0),
    "0F7F800000": f32(float("inf")),
    "0d3FF0000000000000": f64(1.0),
    "-0d3FF0000000000000": f64(-1.0),
    "1.5": f64(1.5),
    "-1.5": f64(-1.5),
    "3.": f64(3.0),
    "1e3": f64(1000.0),
    "2.5E-3": f64(2.5e-3),
    # addresses
    "[%rd1]": ast.Address(RD1),
    "[%rd1+8]": ast.Address(RD1, 8),
    "[%rd1-8]": ast.Address(RD1, -8),
    "[%rd1+0x10]": ast.Address(RD1, 16),
    "[sym+4]": ast.Address(ast.Name("sym"), 4),
    "[64]": ast.Address(None, 64),
    "[%rd1].unified": ast.Address(RD1, 0, unified=True),
    # lists
    "{%r1, %r2}": ast.Vector((R1, R2)),
    "{%r1, _, 0f3F800000}": ast.Vector((R1, ast.SINK, f32(1.0))),
    "[tex, {%r1, %r2}]": ast.Bracketed((ast.Name("tex"), ast.Vector((R1, R2)))),
    "[tex, smp, {%r1}]": ast.Bracketed((ast.Name("tex"), ast.Name("smp"), ast.Vector((R1,)))),
    "(%r1, %r2)": ast.Parenthesized((R1, R2)),
    "()": ast.Parenthesized(()),
}


@pytest.mark.parametrize(("text", "expected"), OPERANDS.items(), ids=OPERANDS.keys())
def test_parse_operand(text, expected):
    assert parse_operand(text) == expected


@pytest.mark.parametrize("text", ["", "%r1 %r2", "[%rd1", "{%r1, %r2", "#", "09", "1 /", "4 / 0",
                                  "(" * 3000 + "1" + ")" * 3000])
def test_parse_operand_errors(text):
    with pytest.raises(PtxSyntaxError) as caught:
        parse_operand(text)
    assert all(d.location.file == "<operand>" for d in caught.value.diagnostics)
