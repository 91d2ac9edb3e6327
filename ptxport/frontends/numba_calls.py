"""The calls between device functions in numba-cuda's PTX, and those a target cannot run.

NVVM inlines most device functions; those it leaves as PTX `.func`s are called with
numba's calling convention: the caller passes a generic pointer to its own local memory
(`cvta.local` of its depot) for the callee to store the result in. These are refused by name
before a launch rather than failing inside it:

- grid synchronisation (`cuda.cg.this_grid().sync()`), which calls CUDA's device runtime
  (cudaCGSynchronize) and needs a cooperative launch, which no ptxport backend makes;
- recursion (a function that reaches itself through calls) on OpenCL, whose kernels
  (OpenCL C and SPIR-V for it) may not recurse;
- on the cpu target, a device function that takes the generic address of its own local
  memory (recursion, or nested calls NVVM did not inline, as with `opt=False`): the cpu
  target keeps a device function's locals outside the memory a generic address may reach.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ptxport.errors import UnsupportedFeatureError

__all__ = ["CallGraph", "call_graph", "refuse_unrunnable_calls"]

_HEADER = re.compile(r"\.(entry|func)\s+(?:\([^)]*\)\s*)?([\w$]+)\s*\(")
_CALL = re.compile(r"\bcall(?:\.uni)?\s+(?:\([^)]*\)\s*,\s*)?([\w$]+)")
_MANGLED_PART = re.compile(r"(\d+)")


@dataclass(frozen=True)
class CallGraph:
    """The kernels and device functions of one module: who calls whom, and which device
    functions take the generic address of their own local memory."""

    calls: dict[str, frozenset[str]]
    local_addresses: frozenset[str]

    def undefined(self) -> set[str]:
        """The functions called but not defined in the module."""
        return {name for callees in self.calls.values() for name in callees} - set(self.calls)

    def recursive(self) -> list[str]:
        """The functions that reach themselves through calls."""
        return [name for name in self.calls if name in self._reachable(name)]

    def _reachable(self, start: str) -> set[str]:
        seen: set[str] = set()
        todo = list(self.calls.get(start, ()))
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                todo.extend(self.calls.get(name, ()))
        return seen


def call_graph(ptx: str) -> CallGraph:
    """The call graph of the functions defined in `ptx` (declarations are skipped)."""
    calls: dict[str, frozenset[str]] = {}
    local_addresses: set[str] = set()
    for match in _HEADER.finditer(ptx):
        kind, name = match.groups()
        body = _body(ptx, match.end())
        if body is None:
            continue
        calls[name] = frozenset(_CALL.findall(body))
        if kind == "func" and "cvta.local" in body:
            local_addresses.add(name)
    return CallGraph(calls, frozenset(local_addresses))


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


def python_name(mangled: str) -> str:
    """The Python name in numba's Itanium-style mangled name (`_ZN8__main__4factB2v1...`
    -> `__main__.fact`); the name itself when it is not one."""
    if not mangled.startswith("_ZN"):
        return mangled
    parts, index = [], 3
    while (match := _MANGLED_PART.match(mangled, index)) is not None:
        length = int(match.group(1))
        parts.append(mangled[match.end():match.end() + length])
        index = match.end() + length
    return ".".join(parts) or mangled


def refuse_unrunnable_calls(graph: CallGraph, backend: str, kernel: str) -> None:
    """Raise UnsupportedFeatureError if `backend` cannot run the calls of `graph`."""
    grid_sync = sorted(name for name in graph.undefined() if name.startswith("cudaCG"))
    if grid_sync:
        raise UnsupportedFeatureError(
            f"grid synchronisation (cuda.cg.this_grid().sync(), calling {grid_sync[0]}) in "
            f"kernel {kernel}", backend, reason=(
                "it needs a cooperative launch (every block of the grid resident at once), "
                "which no ptxport backend makes yet; split the kernel at the grid sync into "
                "two launches"))
    recursive = graph.recursive()
    if recursive and backend == "opencl":
        raise UnsupportedFeatureError(
            f"recursive device function {python_name(recursive[0])} (called by kernel "
            f"{kernel})", backend, reason="OpenCL kernels may not recurse; write it as a loop")
