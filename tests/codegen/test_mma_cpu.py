"""mma.sync.aligned and ldmatrix on the CPU (runtime/backends/cpu/warps.py): the forms it
computes are checked against an H100 by the corpus (tests/kernels/mma_sync.cu,
ldmatrix_mma.cu); here, what it refuses."""

from __future__ import annotations

import numpy as np
import pytest

from cpu_harness import kernel_ptx, run_ptx
from ptxport.errors import KernelExecutionError, UnsupportedFeatureError

BODY = """
.reg .b32 %r<12>; .reg .f32 %f<12>; .reg .b64 %rd<4>; .reg .pred %p<2>;
ld.param.u64 %rd1, [pout];
mov.u32 %r1, %tid.x;
mov.b32 %r2, 0x3C003C00;
mov.f32 %f1, 0f00000000;
{GUARD}
mma.sync.aligned.{FORM} {%f2, %f3, %f4, %f5}, {%r2, %r2, %r2, %r2}, {%r2, %r2},
    {%f1, %f1, %f1, %f1};
mul.wide.u32 %rd2, %r1, 4;
add.s64 %rd3, %rd1, %rd2;
st.global.f32 [%rd3], %f2;
DONE:
"""


def _ptx(form: str, guard: str = "") -> str:
    return kernel_ptx(BODY.replace("{FORM}", form).replace("{GUARD}", guard),
                      ".param .u64 pout")


def test_all_ones_give_k():
    out = np.zeros(32, np.float32)
    run_ptx(_ptx("m16n8k16.row.col.f32.f16.f16.f32"), "k", 1, 32, [out])
    np.testing.assert_array_equal(out, np.full(32, 16, np.float32))


def test_a_form_it_does_not_compute_is_refused():
    with pytest.raises(UnsupportedFeatureError, match="m16n8k16 and m16n8k8"):
        run_ptx(_ptx("m16n8k16.row.col.satfinite.f32.f16.f16.f32"), "k", 1, 32,
                [np.zeros(32, np.float32)])


def test_a_warp_with_missing_lanes_is_an_error():
    guard = "setp.ge.u32 %p1, %r1, 16;\n@%p1 bra DONE;"
    # the gang path: the lanes wait for the warp's others, which exited (never arrive)
    with pytest.raises(KernelExecutionError, match="all 32 lanes|never arrive"):
        run_ptx(_ptx("m16n8k16.row.col.f32.f16.f16.f32", guard), "k", 1, 32,
                [np.zeros(32, np.float32)])


LDMATRIX = """
.reg .b32 %r<8>; .reg .b64 %rd<4>; .reg .pred %p<2>;
.shared .align 16 .b8 tile[256];
ld.param.u64 %rd1, [pout];
mov.u32 %r1, %tid.x;
mov.u32 %r2, tile;
setp.ge.u32 %p1, %r1, 16;
@%p1 mov.u32 %r2, 1048576;
ldmatrix.sync.aligned.{FORM} {%r3, %r4}, [%r2];
mul.wide.u32 %rd2, %r1, 4;
add.s64 %rd3, %rd1, %rd2;
st.global.u32 [%rd3], %r3;
"""


def test_an_ldmatrix_form_it_does_not_load_is_refused():
    ptx = kernel_ptx(LDMATRIX.replace("{FORM}", "m16n16.x2.trans.shared.b8"), ".param .u64 pout")
    with pytest.raises(UnsupportedFeatureError, match="m8n8"):
        run_ptx(ptx, "k", 1, 32, [np.zeros(32, np.uint32)])


def test_lanes_past_the_rows_give_no_address():
    # .x2: only lanes 0-15 give row addresses (all the tile's first row here); lanes 16-31
    # hold an address far outside shared memory, which PTX ignores: no fault
    ptx = kernel_ptx(LDMATRIX.replace("{FORM}", "m8n8.x2.shared.b16"), ".param .u64 pout")
    out = np.ones(32, np.uint32)
    run_ptx(ptx, "k", 1, 32, [out])
    np.testing.assert_array_equal(out, np.zeros(32, np.uint32))
