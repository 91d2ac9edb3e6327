"""The CPU code generator's output compiles for AArch64 too (checked here as object files;
running it needs an AArch64 machine)."""

from __future__ import annotations

import pytest

from corpus import KERNEL_DIR, corpus_ptx
from ptxport.codegen.targets.cpu.compile import CROSS_TRIPLES, emit_object
from ptxport.ir.from_ptx import build
from ptxport.ir.verify import verify
from ptxport.ptx.parser import parse

# A spread of the corpus: barriers, warp shuffles and votes, atomics, half precision, calls,
# local memory, printf.
KERNELS = [("reduce_warp.cu", None), ("warp_vote.cu", None),
           ("histogram.cu", None), ("half_precision.cu", "half2_ops"),
           ("device_functions.cu", None), ("local_arrays.cu", None),
           ("printf_kernel.cu", None), ("scan_blelloch.cu", None)]


@pytest.mark.parametrize("file,kernel", KERNELS, ids=[f for f, _ in KERNELS])
@pytest.mark.parametrize("arch", ["aarch64"])
def test_corpus_kernel_compiles_for(file, kernel, arch):
    module = build(parse(corpus_ptx(KERNEL_DIR / file, "sm_80"), file))
    verify(module)
    name = kernel or module.kernels[0].name
    obj = emit_object(module, name, CROSS_TRIPLES[arch])
    assert obj[:4] == b"\x7fELF"
    assert int.from_bytes(obj[18:20], "little") == 183  # EM_AARCH64
