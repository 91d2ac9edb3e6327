"""The instructions the front end makes of a few PTX statements: how a pass gets the specs (and
operands) of the instructions it emits, exactly as the front end would make them."""

from __future__ import annotations

from ptxport.ir import nodes as ir

__all__ = ["snippet_instructions"]

_HEAD = """
.version 7.0
.target sm_70
.address_size 64
.visible .entry snippet()
{
    .reg .pred %p<3>;
    .reg .b32 %r<3>;
    .reg .b64 %rd<3>;
"""


def snippet_instructions(body: str, where: str) -> list[ir.Instruction]:
    """The instructions of `body` (statements that may use %p0-2, %r0-2 and %rd0-2, and
    declare more), then `ret`, in a kernel of their own; `where` names it in a parse error."""
    from ptxport.ir.from_ptx import build
    from ptxport.ptx.parser import parse

    module = build(parse(f"{_HEAD}{body}    ret;\n}}\n", where))
    return list(module.functions["snippet"].instructions())
