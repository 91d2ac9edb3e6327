"""What each target can compile, instruction by instruction.

Every code generator registers here the instructions it lowers, as a predicate over the IR
instruction (opcode, types and modes), so that `ptxport inspect` and the compile step agree on
what a target supports and say so before any code is generated.

No code generator exists yet: every target below lists nothing, and `unsupported_reason`
answers that the target has no code generator. The issues "Run CUDA kernels on the CPU",
"NVIDIA target", "AMD target" and "SPIR-V target" fill these tables.
"""

from __future__ import annotations

from collections.abc import Callable

from ptxport.ir.nodes import Instruction

__all__ = ["TARGETS", "register", "implemented", "unsupported_reason"]

TARGETS: tuple[str, ...] = ("cpu", "nvptx", "amdgpu", "spirv")

# target -> opcode -> predicate(instruction) -> None if supported, else the reason it is not
_SUPPORT: dict[str, dict[str, Callable[[Instruction], str | None]]] = {t: {} for t in TARGETS}


def register(target: str, opcode: str, check: Callable[[Instruction], str | None]) -> None:
    """Declare that `target` lowers `opcode` in the forms `check` accepts."""
    _SUPPORT[target][opcode] = check


def implemented(target: str) -> bool:
    """Whether `target` has a code generator at all."""
    return bool(_SUPPORT[target])


def unsupported_reason(target: str, inst: Instruction) -> str | None:
    """None if `target` can compile `inst`; otherwise why not, in a few words."""
    table = _SUPPORT[target]
    if not table:
        return f"no code generator for {target} yet"
    check = table.get(inst.opcode)
    if check is None:
        return f"'{inst.opcode}' is not lowered for {target}"
    return check(inst)
