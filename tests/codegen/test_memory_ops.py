"""isspacep, cp.async, createpolicy, mapa/getctarank, nanosleep and the stack instructions on
the CPU target (PTX ISA 9.7.9.18-25, 9.7.17, 9.7.19.4)."""

from __future__ import annotations

import numpy as np
import pytest

from cpu_harness import kernel_ptx, run_ptx
from ptxport.errors import UnsupportedFeatureError

ISSPACEP_BODY = """.reg .b32 %r<4>; .reg .b64 %rd<12>; .reg .pred %p<2>;
.shared .align 4 .b32 s[4];
.local .align 8 .b64 l[2];
ld.param.u64 %rd1, [out]; cvta.to.global.u64 %rd1, %rd1;
ld.param.u64 %rd2, [data];
cvta.shared.u64 %rd3, s;
mov.u64 %rd4, l; cvta.local.u64 %rd4, %rd4;
mov.u64 %rd5, c; cvta.const.u64 %rd5, %rd5;
mov.u64 %rd6, data; cvta.param.u64 %rd6, %rd6;
cvta.shared.u64 %rd7, dyn; add.u64 %rd7, %rd7, 60;
add.u64 %rd8, %rd3, 12;
mov.u32 %r1, 0;
"""
ADDRESSES = ("%rd2", "%rd3", "%rd4", "%rd5", "%rd6", "%rd7", "%rd8")
SPACES = ("global", "shared", "local", "const", "param")


def test_isspacep():
    """Each generic address lies in its own space and in no other (but for a kernel
    parameter, which the H100 also calls global)."""
    body = ISSPACEP_BODY
    k = 0
    for address in ADDRESSES:
        for space in SPACES:
            body += (f"isspacep.{space} %p1, {address}; selp.u32 %r2, 1, 0, %p1;\n"
                     f"st.global.u32 [%rd1+{4 * k}], %r2;\n")
            k += 1
    body += "isspacep.shared::cta %p1, %rd3; selp.u32 %r2, 1, 0, %p1;\n" \
            f"st.global.u32 [%rd1+{4 * k}], %r2;\nret;"
    extra = ".const .align 4 .b32 c[4] = {1, 2, 3, 4};\n" \
            ".extern .shared .align 16 .b8 dyn[];"
    ptx = kernel_ptx(body, ".param .u64 out, .param .u64 data", extra=extra, target="sm_90",
                     version="8.0")
    out = np.zeros(len(ADDRESSES) * len(SPACES) + 1, np.uint32)
    data = np.zeros(4, np.uint32)
    run_ptx(ptx, "k", 1, 1, [out, data], shared=64)
    # global data, shared s, local l, const c, the param, dynamic shared, s + 12
    homes = ("global", "shared", "local", "const", "param", "shared", "shared")
    expected = [int(space == home) for home in homes for space in SPACES] + [1]
    expected[homes.index("param") * len(SPACES) + SPACES.index("global")] = 1
    assert out.tolist() == expected


CP_ASYNC_BODY = """.reg .b32 %r<8>; .reg .b64 %rd<8>; .reg .pred %p<2>;
createpolicy.fractional.L2::evict_last.b64 %rd5, 0f3F800000;
.shared .align 16 .b8 buf[1024];
mov.u32 %r1, %tid.x;
ld.param.u64 %rd1, [src]; ld.param.u64 %rd2, [dst];
mul.wide.u32 %rd3, %r1, 16; add.u64 %rd4, %rd1, %rd3;
mov.u32 %r2, buf; shl.b32 %r3, %r1, 4; add.u32 %r2, %r2, %r3;
// 0xFF first, so that the zero-filling shows
st.shared.v4.u32 [%r2], {-1, -1, -1, -1};
and.b32 %r4, %r1, 7;
setp.eq.u32 %p1, %r4, 0;
@%p1 cp.async.ca.shared.global [%r2], [%rd4], 4;
setp.eq.u32 %p1, %r4, 1;
@%p1 cp.async.ca.shared.global [%r2], [%rd4], 8;
setp.eq.u32 %p1, %r4, 2;
@%p1 cp.async.cg.shared.global [%r2], [%rd4], 16;
setp.eq.u32 %p1, %r4, 3;
@%p1 cp.async.cg.shared.global [%r2], [%rd4], 16, 5;
setp.eq.u32 %p1, %r4, 4;
@%p1 cp.async.ca.shared.global [%r2], [%rd4], 8, %r4;
setp.eq.u32 %p1, %r4, 5;
@%p1 cp.async.ca.shared.global [%r2], [%rd4], 16, %p1;
setp.eq.u32 %p1, %r4, 6;
@%p1 cp.async.cg.shared.global.L2::cache_hint [%r2], [%rd4], 16, %rd5;
setp.eq.u32 %p1, %r4, 7;
@%p1 cp.async.ca.shared::cta.global [%r2], [%rd4], 16, 0;
cp.async.commit_group;
cp.async.wait_group 0;
cp.async.wait_all;
bar.sync 0;
xor.b32 %r5, %r1, 1; shl.b32 %r5, %r5, 4; mov.u32 %r6, buf; add.u32 %r6, %r6, %r5;
ld.shared.v4.u32 {%r4, %r5, %r6, %r7}, [%r6];
xor.b32 %r3, %r1, 1; mul.wide.u32 %rd3, %r3, 16; add.u64 %rd6, %rd2, %rd3;
st.global.v4.u32 [%rd6], {%r4, %r5, %r6, %r7};
ret;"""


def test_cp_async():
    """cp-size 4/8/16, src-size (the rest zero-filled), ignore-src, a cache policy; a
    neighbour thread reads the result after the wait and a barrier."""
    ptx = kernel_ptx(CP_ASYNC_BODY, ".param .u64 src, .param .u64 dst", target="sm_80",
                     version="8.0")
    src = np.arange(64 * 16, dtype=np.uint8).reshape(64, 16) + np.uint8(1)
    dst = np.zeros((64, 16), np.uint8)
    run_ptx(ptx, "k", 1, 64, [src, dst])
    assert (dst == expected_cp_async(src)).all()


def expected_cp_async(src: np.ndarray) -> np.ndarray:
    """What CP_ASYNC_BODY's 64 threads leave in dst, given src (64 rows of 16 bytes)."""
    expected = np.full((64, 16), 0xFF, np.uint8)
    copied = {0: 4, 1: 8, 2: 16, 3: 5, 4: 4, 5: 0, 6: 16, 7: 0}   # bytes taken from src
    sizes = {0: 4, 1: 8, 2: 16, 3: 16, 4: 8, 5: 16, 6: 16, 7: 16}   # cp-size
    for t in range(64):
        n, size = copied[t % 8], sizes[t % 8]
        expected[t, :size] = 0
        expected[t, :n] = src[t, :n]
    return expected


CLUSTER_BODY = """.reg .b32 %r<8>; .reg .b64 %rd<4>;
.shared .align 4 .b32 s[2];
ld.param.u64 %rd1, [out];
st.shared.u32 [s+4], 1234;
mov.u32 %r1, s; add.u32 %r1, %r1, 4;
mov.u32 %r2, %cluster_ctarank;
mapa.shared::cluster.u32 %r3, %r1, %r2;
ld.shared::cluster.u32 %r4, [%r3];
getctarank.shared::cluster.u32 %r5, %r3;
cvta.shared.u64 %rd2, s;
mapa.u64 %rd3, %rd2, %r2;
ld.u32 %r6, [%rd3];
nanosleep.u32 1000;
nanosleep.u32 %r4;
st.global.v4.u32 [%rd1], {%r4, %r5, %r6, %r2};
ret;"""


def test_mapa_getctarank_nanosleep():
    """With one CTA per cluster, mapa to the own rank reads the own shared memory."""
    ptx = kernel_ptx(CLUSTER_BODY, ".param .u64 out", target="sm_90", version="8.0")
    out = np.zeros(4, np.uint32)
    run_ptx(ptx, "k", 2, 1, [out])
    assert out.tolist() == [1234, 0, 0, 0]


STACK_BODY = """.reg .b32 %r<6>; .reg .b64 %rd<8>;
ld.param.u64 %rd1, [out];
mov.u32 %r1, %tid.x;
stacksave.u64 %rd2;
cvt.u64.u32 %rd3, %r1; add.u64 %rd3, %rd3, 16;
alloca.u64 %rd4, %rd3, 16;
and.b64 %rd5, %rd4, 15;
st.local.u32 [%rd4], %r1;
st.local.u32 [%rd4+12], 77;
alloca.u64 %rd6, 8;
st.local.u32 [%rd6], 5;
ld.local.u32 %r2, [%rd4];
ld.local.u32 %r3, [%rd4+12];
ld.local.u32 %r4, [%rd6];
stackrestore.u64 %rd2;
cvt.u32.u64 %r5, %rd5;
mul.wide.u32 %rd7, %r1, 16; add.u64 %rd7, %rd1, %rd7;
st.global.v4.u32 [%rd7], {%r2, %r3, %r4, %r5};
ret;"""


def test_alloca_stacksave_stackrestore():
    ptx = kernel_ptx(STACK_BODY, ".param .u64 out", target="sm_90", version="8.0")
    out = np.zeros((64, 4), np.uint32)
    run_ptx(ptx, "k", 1, 64, [out])
    assert (out[:, 0] == np.arange(64)).all()
    assert (out[:, 1] == 77).all() and (out[:, 2] == 5).all() and (out[:, 3] == 0).all()


def test_alloca_across_a_barrier_is_unsupported():
    body = (".reg .b64 %rd<3>;\nalloca.u64 %rd1, 16;\nbar.sync 0;\nst.local.u32 [%rd1], 1;\n"
            "ret;")
    ptx = kernel_ptx(body, "", target="sm_90", version="8.0")
    with pytest.raises(UnsupportedFeatureError, match="survive"):
        run_ptx(ptx, "k", 1, 1, [])


def test_bulk_copies_are_unsupported():
    body = (".reg .b64 %rd<3>; .shared .align 16 .b8 buf[64]; .shared .align 8 .b64 bar;\n"
            "ld.param.u64 %rd1, [p];\n"
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [buf], [%rd1], "
            "64, [bar];\nret;")
    ptx = kernel_ptx(body, ".param .u64 p", target="sm_90", version="8.0")
    with pytest.raises(UnsupportedFeatureError, match="bulk"):
        run_ptx(ptx, "k", 1, 1, [np.zeros(16, np.uint32)])


def test_cp_async_that_reads_nothing_ignores_its_source_address():
    """A src-size of 0 (here in a register, as Triton's masked loads write it) or ignore-src
    reads no byte of the source: its address may be one no allocation holds (PTX ISA 9.7.9.25,
    cp.async), and the destination is only zero-filled."""
    body = """.reg .b32 %r<4>; .reg .b64 %rd<4>; .reg .pred %p<2>;
.shared .align 16 .b8 buf[32];
ld.param.u64 %rd1, [out];
mov.u32 %r1, buf;
st.shared.v4.u32 [%r1], {-1, -1, -1, -1};
st.shared.v4.u32 [%r1+16], {-1, -1, -1, -1};
mov.u64 %rd2, 16;
mov.u32 %r2, 0;
setp.eq.u32 %p1, %r2, 0;
cp.async.cg.shared.global [%r1], [%rd2], 16, %r2;
cp.async.ca.shared.global [%r1+16], [%rd2], 8, %p1;
cp.async.wait_all;
ld.shared.v4.u32 {%r0, %r1, %r2, %r3}, [buf];
st.global.v4.u32 [%rd1], {%r0, %r1, %r2, %r3};
ld.shared.v4.u32 {%r0, %r1, %r2, %r3}, [buf+16];
st.global.v4.u32 [%rd1+16], {%r0, %r1, %r2, %r3};
ret;"""
    ptx = kernel_ptx(body, ".param .u64 out", target="sm_80", version="8.0")
    out = np.zeros(8, np.uint32)
    run_ptx(ptx, "k", 1, 1, [out])
    assert out.tolist() == [0, 0, 0, 0, 0, 0, 0xFFFFFFFF, 0xFFFFFFFF]
