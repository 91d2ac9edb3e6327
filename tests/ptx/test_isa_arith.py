"""The instruction table's arithmetic, comparison, logic, video, control-flow and miscellaneous
chapters (ptxport/ptx/isa/{integer,floating,compare_logic,video,misc}.py) against hand-written
PTX that NVIDIA's ptxas accepts (tests/ptx_handwritten/{arith_*,control_*,video}.ptx).

The .ptx files hold one instruction per line, so the checks that do not need our parser find
instructions with a regular expression: ptxas accepts every file, every opcode of these chapters
appears in them, and every modifier and operand count written there fits the table. Then the
parser must read every file.
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
from pathlib import Path

import pytest

from corpus import ptxas_path
from handwritten_ptx import TARGET, file_ids, instructions
from ptxport.ptx.isa import OPS, compare_logic, floating, integer, misc, video
from ptxport.ptx.isa._base import Op

HANDWRITTEN = Path(__file__).resolve().parent.parent / "ptx_handwritten"
FILES = sorted(
    [*HANDWRITTEN.glob("arith_*.ptx"), *HANDWRITTEN.glob("control_*.ptx"),
     HANDWRITTEN / "video.ptx"]
)
CHAPTERS = (integer, floating, compare_logic, video, misc)
MINE: dict[str, Op] = {op.name: op for chapter in CHAPTERS for op in chapter.OPS}

FAMILIES = {
    "integer arithmetic", "extended-precision integer arithmetic", "floating point",
    "comparison and selection", "logic and shift", "video", "control flow",
    "stack manipulation", "miscellaneous",
}
# Group names of these chapters: one name per meaning, shared across the whole table so that
# later stages can rely on them.
GROUP_NAMES = {
    "rnd", "ftz", "sat", "cc", "mode", "precision", "relu", "nan", "xorsign", "abs", "oob",
    "test", "cmp", "boolop", "dir", "op2", "scale", "po", "uni", "idx", "mask", "action",
    "sync", "aligned",
}

# --- the hand-written PTX ------------------------------------------------------------------------

def test_files_are_present() -> None:
    assert len(FILES) >= 5 and all(p.exists() for p in FILES)


@pytest.mark.parametrize("path", FILES, ids=file_ids(FILES))
def test_ptxas_accepts(path: Path) -> None:
    ptxas = ptxas_path()
    if ptxas is None:
        pytest.skip("ptxas not installed (the nvidia-cuda-nvcc wheel, in the test extra)")
    target = TARGET.search(path.read_text())
    assert target, f"{path.name} has no .target directive"
    result = subprocess.run([str(ptxas), f"-arch={target[1]}", str(path), "-o", "/dev/null"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"ptxas rejected {path.name}:\n{result.stderr}"


def test_every_opcode_is_exercised() -> None:
    written = {w.opcode for path in FILES for w in instructions(path)}
    missing = sorted(set(MINE) - written)
    assert not missing, f"opcodes with no instruction in the hand-written PTX: {missing}"


@pytest.mark.parametrize("path", FILES, ids=file_ids(FILES))
def test_written_forms_fit_the_table(path: Path) -> None:
    """Every modifier written with one of these opcodes is a type or a value of exactly one
    group, single-valued groups are given at most once, and the operand count is allowed."""
    problems = []
    for w in instructions(path):
        op = MINE.get(w.opcode)
        if op is None:
            continue
        where = f"{path.name}:{w.line}: {w.opcode}{''.join('.' + m for m in w.modifiers)}"
        seen: dict[str, str] = {}
        for word in w.modifiers:
            groups = [name for name, group in op.groups.items() if word in group.values]
            if word in op.types:
                continue
            if not groups:
                problems.append(f"{where}: '.{word}' is not in the table")
            elif not op.groups[groups[0]].multi and groups[0] in seen:
                problems.append(f"{where}: '.{seen[groups[0]]}' and '.{word}' share group "
                                f"'{groups[0]}'")
            else:
                seen[groups[0]] = word
        low, high = op.operands
        if not low <= len(w.operands) <= high:
            problems.append(f"{where}: {len(w.operands)} operands, table allows {low}..{high}")
    assert not problems, "\n".join(problems)


def _walk_instructions(node, found: list) -> None:
    from ptxport.ptx import ast

    if isinstance(node, ast.Instruction):
        found.append(node)
    elif isinstance(node, list | tuple):
        for item in node:
            _walk_instructions(item, found)
    elif dataclasses.is_dataclass(node) and not isinstance(node, type):
        for f in dataclasses.fields(node):
            if f.name != "source":
                _walk_instructions(getattr(node, f.name), found)


@pytest.mark.parametrize("path", FILES, ids=file_ids(FILES))
def test_parser_reads_every_instruction(path: Path) -> None:
    parser = pytest.importorskip("ptxport.ptx.parser")
    module = parser.parse(path.read_text(), str(path))
    parsed: list = []
    _walk_instructions(module, parsed)
    assert [i.opcode for i in parsed] == [w.opcode for w in instructions(path)]


# --- the table -----------------------------------------------------------------------------------

@pytest.mark.parametrize("op", list(MINE.values()), ids=list(MINE))
def test_op_is_well_formed(op: Op) -> None:
    assert OPS[op.name] is op
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)+", op.section), op.section
    assert op.family in FAMILIES
    assert op.operands is not None and 0 <= op.operands[0] <= op.operands[1]
    assert (1, 0) <= op.since <= (9, 5)
    assert set(op.groups) <= GROUP_NAMES, set(op.groups) - GROUP_NAMES
    owner: dict[str, str] = {}
    assert len(set(op.types)) == len(op.types), f"{op.name}: a type is listed twice"
    for t in op.types:
        owner[t] = "types"
    for name, group in op.groups.items():
        assert group.values, f"{op.name}: group '{name}' is empty"
        for value in group.values:
            assert value not in owner, (
                f"{op.name}: '.{value}' is in both '{owner[value]}' and '{name}'")
            owner[value] = name


def test_chapters_do_not_repeat_an_opcode() -> None:
    names = [op.name for chapter in CHAPTERS for op in chapter.OPS]
    assert len(names) == len(set(names))
