"""The calls between device functions in numba-cuda's PTX, and those no target can run.

NVVM inlines most device functions; those it leaves as PTX `.func`s are called with
numba's calling convention: the caller passes a generic pointer to its own local memory
(`cvta.local` of its depot) for the callee to store the result in. Every target runs these
(the cpu target keeps such local memory on its local stack), and the targets refuse what
they cannot run themselves, for every front end (the SPIR-V target refuses recursion, which
OpenCL forbids). Refused here by name, before a launch rather than inside it: grid
synchronisation (`cuda.cg.this_grid().sync()`, which calls CUDA's device runtime:
codegen/cooperative_groups.py) on a device that makes no cooperative launches.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ptxport.codegen import cooperative_groups
from ptxport.errors import UnsupportedFeatureError

__all__ = ["CallGraph", "call_graph", "refuse_unrunnable_calls"]

_HEADER = re.compile(r"\.(entry|func)\s+(?:\([^)]*\)\s*)?([\w$]+)\s*\(")
_CALL = re.compile(r"\bcall(?:\.uni)?\s+(?:\([^)]*\)\s*,\s*)?([\w$]+)")


@dataclass(frozen=True)
class CallGraph:
    """The kernels and device functions of one module, and whom each calls."""

    calls: dict[str, frozenset[str]]

    def undefined(self) -> set[str]:
        """The functions called but not defined in the module."""
        return {name for callees in self.calls.values() for name in callees} - set(self.calls)


def call_graph(ptx: str) -> CallGraph:
    """The call graph of the functions defined in `ptx` (declarations are skipped)."""
    calls: dict[str, frozenset[str]] = {}
    for match in _HEADER.finditer(ptx):
        body = _body(ptx, match.end())
        if body is not None:
            calls[match.group(2)] = frozenset(_CALL.findall(body))
    return CallGraph(calls)


def _body(ptx: str, start: int) -> str | None:
    """The text between the braces of the definition whose parameter list opens at
    `start`; None for a declaration (`;` before any `{`)."""
    close = ptx.find(")", start)
    brace, semicolon = ptx.find("{", close), ptx.find(";", close)
    if brace < 0 or 0 <= semicolon < brace:
        return None
    depth = 0
    for index in range(brace, len(ptx)):
        if ptx[index] == "{":
            depth += 1
        elif ptx[index] == "}":
            depth -= 1
            if depth == 0:
                return ptx[brace + 1:index]
    return None


def refuse_unrunnable_calls(graph: CallGraph, device, kernel: str) -> None:
    """Raise UnsupportedFeatureError if `device` (a runtime Device) cannot run the calls of
    `graph`: grid synchronisation where the device makes no cooperative launches."""
    grid_sync = sorted(name for name in graph.undefined()
                       if name in cooperative_groups.FUNCTIONS)
    if grid_sync and not device.properties.cooperative_launch:
        raise UnsupportedFeatureError(
            f"grid synchronisation (cuda.cg.this_grid().sync(), calling {grid_sync[-1]}) in "
            f"kernel {kernel}", str(device), reason=(
                f"it needs a cooperative launch (every block of the grid resident at once), "
                f"which {device} does not make (the cpu device does); split the kernel at "
                "the grid sync into two launches"))
