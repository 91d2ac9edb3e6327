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


def jit_engine(llvm_ir: str):
    """An MCJIT engine holding `llvm_ir` compiled for the host, finalized (its functions'
    addresses valid while the engine lives). The caller holds LLVM_LOCK."""
    module = llvm.parse_assembly(llvm_ir)
    module.triple = llvm.get_process_triple()
    engine = llvm.create_mcjit_compiler(module, target_machine())
    engine.finalize_object()
    return engine


def object_code(llvm_ir: str, tm) -> bytes:
    """Optimized machine code for the module, from the disk cache when this exact LLVM IR
    was compiled before for this CPU by this LLVM (so a second process starts fast)."""
    key = hashlib.sha256("\0".join((
        llvm_ir, llvm.llvm_version_info.__repr__(), llvm.get_host_cpu_name(),
        llvm.get_host_cpu_features().flatten(), CODEGEN_VERSION)).encode()).hexdigest()
    path = cache_path("cpu", key, ".o")
    obj = read_entry(path)
    if obj is None:
        parsed = llvm.parse_assembly(llvm_ir)
        parsed.verify()
        pb = llvm.create_pass_builder(tm, llvm.PipelineTuningOptions(speed_level=3))
        pb.getModulePassManager().run(parsed, pb)
        obj = tm.emit_object(parsed)
        write_entry(path, obj)
    return obj


# Part of every cache key: bump when the generated code's meaning changes without the LLVM IR
# changing (e.g. the executor's protocol).
CODEGEN_VERSION = "cpu-6"


@cache
def host() -> tuple[str, str, str]:
    """What machine code depends on besides its input: the host CPU, its features, LLVM."""
    return (llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten(),
            repr(llvm.llvm_version_info))
