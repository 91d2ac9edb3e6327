"""Where each kernel parameter lives in the parameter buffer a launch passes.

PTX lays out a kernel's `.param` space like a C struct of its parameters in order: each at
the next offset that is a multiple of its alignment (`.align N`, else its element size). The
runtime packs arguments by this layout and every target reads them by it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ptxport.ir.nodes import Function, Variable

__all__ = ["ParamSlot", "param_layout"]


@dataclass(frozen=True)
class ParamSlot:
    name: str
    offset: int
    size: int
    align: int
    variable: Variable


def param_layout(function: Function) -> tuple[list[ParamSlot], int]:
    """The slot of each parameter of `function`, and the buffer's total size (rounded up to
    the largest alignment)."""
    slots, offset, largest = [], 0, 1
    for p in function.params:
        align = p.alignment
        offset = (offset + align - 1) // align * align
        slots.append(ParamSlot(p.name, offset, p.size, align, p))
        offset += p.size
        largest = max(largest, align)
    return slots, (offset + largest - 1) // largest * largest
