"""Whole-function transformations and analyses of the IR, one per module, each with a `run`.

Every pass is `run(module, kernel, block=None) -> PassResult`: the kernel after the pass (a
transformation returns a new function, an analysis the same one) and what it found, as
lines (`notes`). `ptxport inspect FILE --dump-after PASS` prints a kernel's IR and notes
after a pass, running the passes before it in PIPELINE order. The code generators call the
passes' own functions (inline_waiting_calls, uniform_registers, ...); `run` shows what
those give.

A new pass is a module here with a `run`, and one line in PASSES (in pipeline order).
block_range (a kernel that computes a box of a launch's blocks, for device groups) is a
pass of the group runtime, not of a target's pipeline: its `run(module, kernel)` returns the
rewritten module, and it is not in PASSES. Nor is textures (texture and surface instructions
as calls of a sampler, for every target but NVPTX): its `run(module)` rewrites a whole module
before code generation (codegen/compile.py).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field

from ptxport.errors import InvalidValueError
from ptxport.ir import nodes as ir

__all__ = ["PASSES", "PassResult", "run_until", "dump"]

# name -> the module that holds its run(), in pipeline order. The CPU target's warp-gang
# path runs if-convert, hoist-checks and hoist-global-checks, then the analyses up to
# lane-forms on the result; its thread-by-thread path runs inline on the kernel as written
# (THREAD_PATH_START), then plan-waits on the inlined kernel (the analyses pass the kernel
# on unchanged).
THREAD_PATH_START = "inline"
PASSES = {
    "if-convert": "ptxport.passes.if_convert",    # short divergent ifs guarded (warp gangs)
    "hoist-checks": "ptxport.passes.hoist_checks",  # loops' shared checks once (warp gangs)
    "hoist-global-checks": "ptxport.passes.hoist_global_checks",  # and global ones (gangs)
    "uniformity": "ptxport.passes.uniformity",    # registers alike in a warp's lanes
    "segment": "ptxport.passes.segment",          # warp-gang code segments
    "lane-offsets": "ptxport.passes.lane_offsets",  # lanes apart by constants (warp gangs)
    "lane-forms": "ptxport.passes.lane_forms",    # and per half warp, widened (warp gangs)
    "shared-bounds": "ptxport.passes.shared_bounds",  # shared accesses inside a variable
    "inline": "ptxport.passes.inline",            # device functions that wait, inlined
    "plan-waits": "ptxport.passes.plan_waits",    # registers each wait saves and restores
}


@dataclass
class PassResult:
    """A kernel after a pass, and what the pass found (one line each)."""

    function: ir.Function
    notes: list[str] = field(default_factory=list)


def run_until(module: ir.Module, kernel: str, last: str,
              block: tuple[int, int, int] | None = None) -> PassResult:
    """Run the passes of PASSES in order on `kernel` of a verified module, up to and with
    `last`; returns the last pass's result."""
    if last not in PASSES:
        raise InvalidValueError(f"no pass named {last!r}: the passes are "
                                f"{', '.join(PASSES)}")
    function = module.functions.get(kernel)
    if function is None or not function.is_kernel:
        raise InvalidValueError(f"no kernel named {kernel!r} in the module")
    result = PassResult(function)
    for name, where in PASSES.items():
        if name == THREAD_PATH_START:       # (that path starts from the kernel as written)
            result = PassResult(function)
        result = importlib.import_module(where).run(module, result.function, block)
        if name == last:
            return result
    raise AssertionError("unreachable: `last` is one of PASSES")


def dump(result: PassResult, name: str) -> str:
    """The text `--dump-after` prints: the kernel's IR, then the pass's notes."""
    from ptxport.ir.printer import print_function

    lines = [f"// after {name}", print_function(result.function).rstrip("\n")]
    lines += [f"// {note}" for note in result.notes]
    return "\n".join(lines) + "\n"
