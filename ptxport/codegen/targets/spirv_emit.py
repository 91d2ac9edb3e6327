"""LLVM IR (stdin) -> SPIR-V (stdout) with LLVM's SPIR-V backend, in a process of its own.

LLVM's SPIR-V backend reports IR it cannot select (an atomic or an integer width it has no
rule for) with a fatal error that ends the process; spirv.py runs this module as a child
process, so that such an error becomes a CompileError with LLVM's message instead of ending
the user's program.
"""

from __future__ import annotations

import sys

import llvmlite.binding as llvm

TRIPLE = "spirv64-unknown-unknown"
# SPIR-V extensions the output may use (Intel's OpenCL runtimes read them all).
# SPV_EXT_relaxed_printf_string_address_space: LLVM 22's SPIR-V backend loses track of the
# constant address space of a printf format (always an addrspace(2) constant here) in a
# module with another function that it does not inline (the bounds checks' search), and
# refuses the module without it.
EXTENSIONS = ("SPV_ALTERA_arbitrary_precision_integers", "SPV_KHR_shader_clock",
              "SPV_KHR_bit_instructions", "SPV_EXT_relaxed_printf_string_address_space")
# --disable-lsr: loop strength reduction (which LLVM runs while generating code, at -O1 and
# above) writes loop start values with odd-width integers, e.g. `zext (trunc i64
# get_local_id to i5) to i32` for `threadIdx.x % 32` (llm.c's bf16 layernorm_backward_kernel10);
# LLVM 22's SPIR-V backend turns that pair into an OpBitwiseAnd of i32 type on the i64 operand,
# which Intel's OpenCL runtime (2026.2) translates and then cannot read back ("Linking failed:
# Invalid binary operator record"). The -O2 IR of that kernel has no such widths (only LSR
# made them), and the runtime reruns LLVM's loop optimizations, LSR included, for the
# device it compiles for, so nothing is lost (tests/kernels/bfloat16.cu: bf16_add_sums).
CODEGEN_OPTIONS = ("--disable-lsr",)


def emit(text: str, opt: int = 2) -> bytes:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    llvm.set_option("ptxport", "--spirv-ext=" + ",".join("+" + e for e in EXTENSIONS))
    for option in CODEGEN_OPTIONS:
        llvm.set_option("ptxport", option)
    tm = llvm.Target.from_triple(TRIPLE).create_target_machine(opt=opt)
    module = llvm.parse_assembly(text)
    module.verify()
    pb = llvm.create_pass_builder(tm, llvm.PipelineTuningOptions(speed_level=opt))
    pb.getModulePassManager().run(module, pb)
    return bytes(tm.emit_object(module))


def main() -> None:
    sys.stdout.buffer.write(emit(sys.stdin.read()))


if __name__ == "__main__":
    main()
