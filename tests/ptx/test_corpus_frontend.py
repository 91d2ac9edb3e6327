"""Every PTX file we have — NVRTC's output for the whole kernel corpus (sm_80 and sm_90) and
the hand-written PTX of tests/ptx_handwritten — parses, round-trips through the printer, and
builds IR that verifies."""

from __future__ import annotations

from pathlib import Path

import pytest

from corpus import ARCHS, corpus_ptx, corpus_sources
from ptxport.ir.from_ptx import build
from ptxport.ir.printer import print_ir
from ptxport.ir.verify import verify
from ptxport.ptx import ast
from ptxport.ptx.parser import parse
from ptxport.ptx.printer import print_module

HANDWRITTEN = sorted((Path(__file__).resolve().parent.parent / "ptx_handwritten").glob("*.ptx"))


def _ptx_cases() -> list:
    cases = [pytest.param(path, arch, id=f"{path.stem}-{arch}")
             for path in corpus_sources() for arch in ARCHS]
    return cases + [pytest.param(path, None, id=path.stem) for path in HANDWRITTEN]


def _text(path: Path, arch: str | None) -> str:
    return path.read_text() if arch is None else corpus_ptx(path, arch)


def _instructions(statements):
    for s in statements:
        if isinstance(s, ast.Block):
            yield from _instructions(s.statements)
        elif isinstance(s, ast.Instruction):
            yield s


@pytest.mark.parametrize(("path", "arch"), _ptx_cases())
def test_parses_round_trips_and_verifies(path: Path, arch: str | None):
    text = _text(path, arch)
    module = parse(text, str(path))
    assert module.functions, "every corpus file defines at least one function"

    assert parse(text, str(path), fast_path=False) == module, \
        "the fast path and the token rules must read the same tree"

    printed = print_module(module)
    again = parse(printed, "printed.ptx")
    assert again == module, "parse -> print -> parse must give the same tree"
    assert print_module(again) == printed, "printing is stable"

    ir_module = build(module)
    verify(ir_module)
    ir_text = print_ir(ir_module)
    assert print_ir(build(again)) == ir_text, "the IR text depends only on the program"

    # Every instruction kept its structured form: opcode from the table, types classified.
    count = 0
    for function in module.functions:
        for inst in _instructions(function.body or []):
            count += 1
            assert set(inst.spec.types) <= set(inst.spec.modifiers)
    ir_count = sum(len(list(f.instructions())) for f in ir_module.functions.values())
    assert ir_count == count, "the IR holds exactly the instructions of the source"


def test_corpus_is_large_enough():
    kernels = sum(len(parse(corpus_ptx(p, "sm_90")).functions) for p in corpus_sources())
    assert len(corpus_sources()) >= 40
    assert kernels >= 40
