"""Reading tests/ptx_handwritten/*.ptx without the parser, for the instruction-table tests:
one instruction per line, found by a regular expression, so that the checks of the table do
not depend on the parser they feed."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

__all__ = ["TARGET", "Written", "file_ids", "instructions", "split_operands"]

# One instruction on one line: {label:} {@{!}guard} opcode{.modifier}* {operands};
_INSTRUCTION = re.compile(
    r"^\s*(?:[A-Za-z_$][\w$]*\s*:\s*)?"
    r"(?:@!?[%\w$]+\s+)?"
    r"(?P<opcode>[a-z][a-z0-9_]*)(?P<modifiers>(?:\.[\w:]+)*)"
    r"(?:\s+(?P<operands>[^;]*?))?\s*;\s*$"
)
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
TARGET = re.compile(r"^\s*\.target\s+(\w+)", re.MULTILINE)


@dataclasses.dataclass(frozen=True)
class Written:
    """One instruction as written in a .ptx file."""

    line: int
    opcode: str
    modifiers: tuple[str, ...]
    operands: tuple[str, ...]


def split_operands(text: str) -> tuple[str, ...]:
    """Split at the commas outside (), {} and []: `(r), f, (a, b)` is three operands,
    `[t, {x, y}], p` two."""
    if not text:
        return ()
    pieces, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "({[":
            depth += 1
        elif c in ")}]":
            depth -= 1
        elif c == "," and depth == 0:
            pieces.append(text[start:i].strip())
            start = i + 1
    pieces.append(text[start:].strip())
    return tuple(pieces)


def instructions(path: Path) -> list[Written]:
    text = _COMMENT.sub(lambda m: "\n" * m.group().count("\n"), path.read_text())
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        m = _INSTRUCTION.match(line)
        if m:
            modifiers = tuple(m["modifiers"][1:].split(".")) if m["modifiers"] else ()
            found.append(Written(number, m["opcode"], modifiers,
                                 split_operands(m["operands"] or "")))
    return found


def file_ids(paths: list[Path]) -> list[str]:
    return [p.name for p in paths]
