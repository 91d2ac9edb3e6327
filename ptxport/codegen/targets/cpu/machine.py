"""Machine code from the CPU target's LLVM modules: the host's target machine, optimized object
code (cached on disk by its LLVM IR), and object files for other CPUs.
"""

from __future__ import annotations

import hashlib
import threading
from functools import cache

import llvmlite.binding as llvm

from ptxport.cache import cache_path, read_entry, write_entry
from ptxport.codegen import ops  # noqa: F401  (registers the lowerings)

# --- JIT --------------------------------------------------------------------------------------

LLVM_LOCK = threading.Lock()


def target_machine():
    """A new target machine for the host. Each JIT engine takes ownership of the one it is
    given (and destroys it with itself), so engines never share one."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(
        cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(),
        opt=3, jit=True)


def kernel_machine():
    """A new target machine for kernels' object code. On x86-64, the small code model
    (code and data within 2 GiB of each other, addressed relative to the instruction
    pointer) and position-independent code: a constant is one operand `c(%rip)`, not a
    `movabs` of the constant pool's address and a load (31 a stencil block, and LLVM made
    the splats of each again in every warp rather than keep them in registers). The JIT's
    memory manager for kernels (jit.py: llvmlite's, `use_lmm`) puts an object's code and
    data in one mapping, so they lie close wherever it is mapped; what lies elsewhere in
    the process (module variables, runtime functions) is reached through the GOT
    (_through_got), whose entries that manager reserves too. Other hosts: the JIT's
    default (the large code model)."""
    if not _small_code_model():
        return target_machine()
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(
        cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(),
        opt=3, jit=True, codemodel="small", reloc="pic")


@cache
def _small_code_model() -> bool:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    return llvm.get_process_triple().startswith("x86_64")


# (an unused metadata number: the CPU target's modules number theirs from 0)
_RT_LIB_USE_GOT = '\n!llvm.module.flags = !{!999999}\n!999999 = !{i32 7, !"RtLibUseGOT", i32 1}\n'


def kernel_module(llvm_ir: str):
    """A kernel's LLVM IR parsed and verified, for kernel_machine()."""
    small = _small_code_model()
    parsed = llvm.parse_assembly(llvm_ir + _RT_LIB_USE_GOT if small else llvm_ir)
    parsed.verify()
    if small:
        _through_got(parsed)
    return parsed


def _through_got(parsed) -> None:
    """Calls of functions the object does not define (and of the runtime functions LLVM
    calls by itself: RtLibUseGOT) go through the GOT, never a PLT stub: RuntimeDyld gives
    each stub a GOT entry that llvmlite's memory manager has not reserved, and it aborts
    the process (jit.py refuses any such call left)."""
    for fn in parsed.functions:
        if fn.is_declaration and not fn.name.startswith("llvm."):
            fn.add_function_attribute("nonlazybind")


def jit_engine(llvm_ir: str):
    """An MCJIT engine holding `llvm_ir` compiled for the host, finalized (its functions'
    addresses valid while the engine lives). The caller holds LLVM_LOCK."""
    module = llvm.parse_assembly(llvm_ir)
    module.triple = llvm.get_process_triple()
    engine = llvm.create_mcjit_compiler(module, target_machine())
    engine.finalize_object()
    return engine


def object_code(llvm_ir: str) -> bytes:
    """Optimized machine code for the module, from the disk cache when this exact LLVM IR
    was compiled before for this CPU by this LLVM (so a second process starts fast)."""
    key = hashlib.sha256("\0".join((
        llvm_ir, llvm.llvm_version_info.__repr__(), llvm.get_host_cpu_name(),
        llvm.get_host_cpu_features().flatten(), CODEGEN_VERSION)).encode()).hexdigest()
    path = cache_path("cpu", key, ".o")
    obj = read_entry(path)
    if obj is None:
        parsed = kernel_module(llvm_ir)
        tm = kernel_machine()
        pb = llvm.create_pass_builder(tm, llvm.PipelineTuningOptions(speed_level=3))
        pb.getModulePassManager().run(parsed, pb)
        obj = tm.emit_object(parsed)
        write_entry(path, obj)
    return obj


# Part of every cache key: bump when the generated code's meaning changes without the LLVM IR
# changing (e.g. the executor's protocol).
CODEGEN_VERSION = "cpu-7"


@cache
def host() -> tuple[str, str, str]:
    """What machine code depends on besides its input: the host CPU, its features, LLVM."""
    return (llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten(),
            repr(llvm.llvm_version_info))
