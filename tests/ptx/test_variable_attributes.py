"""`.attribute(...)` on variables (PTX ISA 5.4.8, "Variable Attribute Directive"): where nvcc
and the ISA's examples put it (after the state space, `.global .attribute(.managed) .s32 g;`),
before it, with `.unified(uuid1, uuid2)`'s numbers, and kept through a print round trip."""

from __future__ import annotations

import re

import pytest

from ptxport.errors import PtxSyntaxError
from ptxport.ptx import ast
from ptxport.ptx.parser import parse
from ptxport.ptx.printer import print_module

HEADER = ".version 8.5\n.target sm_90\n.address_size 64\n"


def _variables(declarations: str) -> dict[str, ast.Variable]:
    return {v.name: v for v in parse(HEADER + declarations, "attributes.ptx").variables}


@pytest.mark.parametrize("declaration", [
    ".global .attribute(.managed) .align 4 .u32 m_total;",      # nvcc's __managed__
    ".global .attribute(.managed) .align 4 .b8 m_weights[8] = {0, 0, 128, 63, 0, 0, 0, 64};",
    ".attribute(.managed) .global .u32 m_total;",
    ".visible .global .attribute(.managed) .u64 x;",
])
def test_managed_is_kept_wherever_it_is_written(declaration):
    (variable,) = _variables(declaration).values()
    assert variable.attributes == ("managed",)
    assert variable.space == "global"


def test_unified_keeps_its_numbers():
    variables = _variables(".global .attribute(.managed, .unified(19, 95)) .f32 f;")
    assert variables["f"].attributes == ("managed", "unified(19,95)")


def test_round_trip_keeps_the_attributes():
    text = HEADER + ".global .attribute(.managed) .align 4 .b8 w[4] = {1, 2, 3, 4};\n"
    module = parse(text, "a.ptx")
    printed = print_module(module)
    assert ".global .attribute(.managed)" in printed
    assert parse(printed, "b.ptx") == module


@pytest.mark.parametrize(("declaration", "words"), [
    (".global .attribute(managed) .u32 a;", "an attribute such as .managed"),
    (".global .attribute(.unified(1 2)) .u32 a;", "')'"),
])
def test_malformed_attribute_is_a_syntax_error(declaration, words):
    with pytest.raises(PtxSyntaxError, match=re.escape(words)):
        parse(HEADER + declaration, "bad.ptx")
