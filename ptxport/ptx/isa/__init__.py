"""The PTX instruction table: `OPS` maps each opcode to its `Op` (see _base.py for the shape).

The entries live by chapter of the PTX ISA manual in the modules imported below.
"""

from __future__ import annotations

from ptxport.ptx.isa import (
    compare_logic,
    data_movement,
    floating,
    integer,
    matrix,
    misc,
    sync,
    texture_surface,
    video,
)
from ptxport.ptx.isa._base import ISA, Group, Op

__all__ = ["OPS", "FAMILIES", "ISA", "Group", "Op"]


def _collect() -> dict[str, Op]:
    table: dict[str, Op] = {}
    chapters = (integer, floating, compare_logic, data_movement, texture_surface, sync, matrix,
                video, misc)
    for chapter in chapters:
        for op in chapter.OPS:
            if op.name in table:
                raise RuntimeError(f"opcode '{op.name}' is defined twice in the PTX table")
            table[op.name] = op
    return table


OPS: dict[str, Op] = _collect()
FAMILIES: tuple[str, ...] = tuple(sorted({op.family for op in OPS.values()}))
