"""What each target can compile, instruction by instruction, for `ptxport inspect`.

A target with a code generator registers a checker: given an IR module, it returns, for each
instruction it cannot compile, why not. The CPU and NVPTX checkers run their real lowering in
a collecting mode, so what inspect reports is what compiling would say.
"""

from __future__ import annotations

from collections.abc import Callable

from ptxport.ir.nodes import Module

__all__ = ["TARGETS", "implemented", "unsupported"]

TARGETS: tuple[str, ...] = ("cpu", "nvptx", "amdgpu", "spirv")


def _cpu(module: Module) -> dict[int, str]:
    from ptxport.codegen.targets.cpu.module import unsupported_instructions

    return unsupported_instructions(module)


def _nvptx(module: Module) -> dict[int, str]:
    from ptxport.codegen.targets.nvptx import unsupported_instructions

    return unsupported_instructions(module)


def _spirv(module: Module) -> dict[int, str]:
    from ptxport.codegen.targets.spirv import unsupported_instructions

    return unsupported_instructions(module)


def _amdgpu(module: Module) -> dict[int, str]:
    from ptxport.codegen.targets.amdgpu import unsupported_instructions

    return unsupported_instructions(module)


# target -> checker(module) -> {id(instruction): reason}
_CHECKERS: dict[str, Callable[[Module], dict[int, str]]] = {
    "cpu": _cpu, "nvptx": _nvptx, "spirv": _spirv, "amdgpu": _amdgpu}


def implemented(target: str) -> bool:
    """Whether `target` has a code generator at all."""
    return target in _CHECKERS


def unsupported(target: str, module: Module) -> dict[int, str]:
    """id(instruction) -> why `target` cannot compile it; every instruction of the module
    when the target has no code generator yet."""
    checker = _CHECKERS.get(target)
    if checker is None:
        return {id(inst): f"no code generator for {target} yet"
                for f in module.functions.values() for inst in f.instructions()}
    if target == "nvptx":
        return checker(module)
    # textures and surfaces are the sampler's where NVIDIA's texture units are not
    from ptxport.passes.textures import lower_for_checks

    lowered, originals, reasons = lower_for_checks(module, target)
    for copied, reason in checker(lowered).items():
        original = originals.get(copied)
        if original is not None:
            reasons.setdefault(id(original), reason)
    return reasons
