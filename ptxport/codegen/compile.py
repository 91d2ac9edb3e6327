"""Compile a verified IR module for a named target: what `Program.compile(target)` returns.

Targets are named as on the command line (`ptxport compile --target`): "cpu", "nvptx:sm_XX",
"amdgpu:gfxNNNN", "spirv". The command line writes the same artifacts to files.
"""

from __future__ import annotations

from ptxport.errors import InvalidValueError
from ptxport.ir.nodes import Module

__all__ = ["compile_for_target", "compile_cpu_image", "sampler_lowered", "TARGET_FORMS"]

TARGET_FORMS = ("cpu", "nvptx:sm_XX", "amdgpu:gfxNNNN", "spirv")


def compile_for_target(module: Module, target: str) -> str | bytes | dict[str, str]:
    """The target's code for every kernel of `module`: PTX text for nvptx, a code object for
    amdgpu, a SPIR-V module for spirv, and LLVM IR text per kernel for cpu (the CPU target
    compiles kernels one by one, and JIT-compiles them when they are launched)."""
    family, _, arch = target.partition(":")
    module = sampler_lowered(module, family)
    if family == "nvptx":
        from ptxport.codegen.targets import nvptx

        if arch not in nvptx.ARCHS:
            raise InvalidValueError(f"nvptx needs one of {', '.join(nvptx.ARCHS)}, not {arch!r}")
        return nvptx.compile_module(module, arch)
    if family == "amdgpu":
        from ptxport.codegen.targets import amdgpu

        if arch not in amdgpu.CHIPS:
            raise InvalidValueError(f"amdgpu needs one of {', '.join(amdgpu.CHIPS)}, not {arch!r}")
        return amdgpu.compile_module(module, arch)
    if family == "spirv" and not arch:
        from ptxport.codegen.targets import spirv

        return spirv.compile_module(module)[0]
    if family == "cpu" and not arch:
        from ptxport.codegen.targets.cpu.module import build_llvm

        return {f.name: str(build_llvm(module, f.name)[0]) for f in module.kernels}
    raise InvalidValueError(f"unknown target {target!r}: the targets are "
                            f"{', '.join(TARGET_FORMS)}")


def sampler_lowered(module: Module, family: str) -> Module:
    """What a target family compiles: `module` itself where NVIDIA's texture units do the
    sampling (nvptx, the cuda device), else its texture and surface instructions lowered to
    calls of ptxport's sampler (passes/textures.py; the module itself when it has none)."""
    if family in ("nvptx", "cuda"):
        return module
    from ptxport.passes import textures

    return textures.run(module, family)


def compile_cpu_image(module: Module, kernel: str, options=None, block=None):
    """One kernel's CPU image (object code and plan; codegen/targets/cpu/compile.py), for
    blocks of shape `block` or, with None, for any shape: what the CPU backend loads and
    runs. `options` is a CpuOptions (None: the defaults)."""
    from ptxport.codegen.targets.cpu.compile import compile_image

    return compile_image(module, kernel, options, block)
