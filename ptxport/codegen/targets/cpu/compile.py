"""Compiling one kernel for the host CPU: an image (object code and its plan) that the CPU
backend (runtime/backends/cpu/) loads and runs. Images are stored on disk by their key (the
kernel's code, the block shape, the options, the host CPU and LLVM), so a kernel compiled
before, in any process, is loaded instead of lowered.

A kernel the warp-gang path takes (gang/) is compiled per block shape: its shape-free image
has no plan, and says only that (`Image.plan is None`); `compile_image(..., block=shape)`
then gives that shape's code. A kernel it refuses is compiled thread by thread once, for
every shape, and its image says why (`Image.gang_refusal`).
"""

from __future__ import annotations

import llvmlite.binding as llvm

from ptxport.codegen.targets.cpu import image as images
from ptxport.codegen.targets.cpu.gang.build import GangUnsupported, build_gang, check_gang
from ptxport.codegen.targets.cpu.gang.lanes import W
from ptxport.codegen.targets.cpu.machine import (
    CODEGEN_VERSION,
    LLVM_LOCK,
    host,
    object_code,
)
from ptxport.codegen.targets.cpu.module import build_llvm
from ptxport.codegen.targets.cpu.options import CpuOptions
from ptxport.errors import InternalError
from ptxport.ir import nodes as ir

__all__ = ["compile_image", "image_key", "emit_object", "CROSS_TRIPLES"]


def image_key(module: ir.Module, kernel: str, block: tuple | None,
              options: CpuOptions) -> str | None:
    """The key of `kernel`'s image for blocks of shape `block` (None: any shape)."""
    return images.kernel_key(module, kernel, block,
                             {"codegen": CODEGEN_VERSION, **options.key()}, host())


def compile_image(module: ir.Module, kernel: str, options: CpuOptions | None = None,
                  block: tuple[int, int, int] | None = None) -> images.Image:
    """The image of `kernel` (of a verified IR module) for blocks of shape `block`, or, with
    no block, for any shape (a gang kernel's shape-free image has no plan: ask again with
    the shape). Loaded from the disk cache when it was compiled before."""
    options = options or CpuOptions()
    key = image_key(module, kernel, block, options)
    image = images.load(key)
    if image is not None and (block is None or image.plan is not None):
        return image
    image = _compile(module, kernel, options, None if block is None else tuple(block), key)
    images.store(key, image)
    return image


# The shape-free check's lowerings for one warp-wide row, (W, 1, 1), by that row's image key,
# kept (the last few) until the kernel is compiled for its first shape: where that is the
# same row, the check's LLVM module is compiled instead of lowering the kernel again (the
# same key is the same kernel, shape and options: the same module, as the disk cache assumes);
# another shape drops it
_ROW_LOWERINGS: dict[str, tuple] = {}
_ROW_LOWERINGS_KEPT = 4


def _compile(module: ir.Module, kernel: str, options: CpuOptions,
             block: tuple | None, key: str | None) -> images.Image:
    if not options.gang:
        return _scalar(module, kernel, "turned off (CpuOptions(gang=False))")
    if block is None:
        built: dict = {}
        refusal = check_gang(module, kernel, options, built)
        row_key = image_key(module, kernel, (W, 1, 1), options) if built else None
        if row_key is not None:
            _ROW_LOWERINGS[row_key] = built["built"]
            for stale in list(_ROW_LOWERINGS)[:-_ROW_LOWERINGS_KEPT]:
                _ROW_LOWERINGS.pop(stale, None)
        # a gang kernel's shape-free image only says so: its code is made per block shape
        return images.Image(None, b"", None) if refusal is None else \
            _scalar(module, kernel, refusal)
    # (the row's lowering, whatever this shape: it is kept for the first shape only)
    row_key = key if block == (W, 1, 1) else image_key(module, kernel, (W, 1, 1), options)
    kept = _ROW_LOWERINGS.pop(row_key, None) if row_key is not None else None
    try:
        llmod, plan = kept if block == (W, 1, 1) and kept is not None else \
            build_gang(module, kernel, block, options)
    except GangUnsupported as e:     # something only this shape brings (check_gang passed)
        return _scalar(module, kernel, f"for blocks of {block}: {e}")
    return images.Image(plan, _object_code(str(llmod), kernel, f"as warp gangs for {block}"),
                        None)


def _scalar(module: ir.Module, kernel: str, refusal: str) -> images.Image:
    llmod, plan = build_llvm(module, kernel)
    return images.Image(plan, _object_code(str(llmod), kernel, "thread by thread"), refusal)


def _object_code(llvm_ir: str, kernel: str, how: str) -> bytes:
    try:
        with LLVM_LOCK:
            return object_code(llvm_ir)
    except RuntimeError as e:      # LLVM rejected the module ptxport made: ptxport's bug
        raise InternalError(f"LLVM rejected the CPU code of kernel '{kernel}' ({how}): "
                            f"{str(e).splitlines()[0]}; please report this to ptxport") \
            from e


# Other CPUs the code generator is checked to compile for (an object file, not run here).
CROSS_TRIPLES = {"x86_64": "x86_64-unknown-linux-gnu", "aarch64": "aarch64-unknown-linux-gnu"}


def emit_object(module: ir.Module, kernel: str, triple: str, cpu: str = "generic") -> bytes:
    """An optimized object file of `kernel`'s CPU code for another CPU (`triple`), e.g. to
    check that a kernel compiles for AArch64 on an x86-64 machine."""
    llmod, _ = build_llvm(module, kernel)
    llmod.triple = triple
    with LLVM_LOCK:
        llvm.initialize_all_targets()
        llvm.initialize_all_asmprinters()
        tm = llvm.Target.from_triple(triple).create_target_machine(cpu=cpu, opt=3)
        parsed = llvm.parse_assembly(str(llmod))
        parsed.verify()
        pb = llvm.create_pass_builder(tm, llvm.PipelineTuningOptions(speed_level=3))
        pb.getModulePassManager().run(parsed, pb)
        return tm.emit_object(parsed)
