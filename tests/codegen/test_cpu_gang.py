"""Warp gangs (codegen/targets/cpu/gang/): control flow that diverges inside a warp, warp
operations after divergence, partial warps, bad accesses and the scalar-path fallback, each
against an exact numpy reference."""

from __future__ import annotations

import numpy as np
import pytest

from cpu_harness import launch_on_cpu
from ptxport import Device, LaunchConfig, Program, launch
from ptxport.errors import IllegalAddressError, KernelExecutionError

HEADER = ".version 7.8\n.target sm_80\n.address_size 64\n"


def _run(body: str, params: str, grid, block, arrays, scalars=()):
    ptx = HEADER + f".visible .entry k({params})\n{{\n{body}\n}}\n"
    return launch_on_cpu(ptx, LaunchConfig(grid=grid, block=block), *arrays, *scalars)


# Each lane loops `lane` times (a loop whose trip count differs in the warp), then the warp
# sums the counts with shfl.bfly: lanes that left the loop early wait for the others.
LOOP_THEN_SHUFFLE = """
.reg .pred %p<3>; .reg .b32 %r<12>; .reg .b64 %rd<4>;
ld.param.u64 %rd1, [out];
mov.u32 %r1, %tid.x; and.b32 %r2, %r1, 31; mov.u32 %r3, 0; mov.u32 %r4, 0;
LOOP:
setp.ge.u32 %p1, %r4, %r2;
@%p1 bra DONE;
add.u32 %r3, %r3, 3; add.u32 %r4, %r4, 1;
bra LOOP;
DONE:
shfl.sync.bfly.b32 %r5, %r3, 16, 31, -1; add.u32 %r3, %r3, %r5;
shfl.sync.bfly.b32 %r5, %r3, 8, 31, -1; add.u32 %r3, %r3, %r5;
shfl.sync.bfly.b32 %r5, %r3, 4, 31, -1; add.u32 %r3, %r3, %r5;
shfl.sync.bfly.b32 %r5, %r3, 2, 31, -1; add.u32 %r3, %r3, %r5;
shfl.sync.bfly.b32 %r5, %r3, 1, 31, -1; add.u32 %r3, %r3, %r5;
mul.wide.u32 %rd2, %r1, 4; add.u64 %rd3, %rd1, %rd2; st.global.u32 [%rd3], %r3;
ret;"""


def test_divergent_loop_then_warp_shuffle():
    out = np.zeros(64, np.uint32)
    binary = _run(LOOP_THEN_SHUFFLE, ".param .u64 out", 1, 64, [out])
    assert binary.gang_refusal is None
    assert (out == 3 * sum(range(32))).all()


# if/else on odd lanes, each side writing a different value; a ballot after they join.
IF_ELSE_BALLOT = """
.reg .pred %p<3>; .reg .b32 %r<12>; .reg .b64 %rd<4>;
ld.param.u64 %rd1, [out];
mov.u32 %r1, %tid.x; and.b32 %r2, %r1, 1; setp.eq.u32 %p1, %r2, 1;
@%p1 bra ODD;
mul.lo.u32 %r3, %r1, 10;
bra JOIN;
ODD:
add.u32 %r3, %r1, 1000;
JOIN:
setp.gt.u32 %p2, %r3, 1010;
vote.sync.ballot.b32 %r4, %p2, -1;
activemask.b32 %r5;
add.u32 %r3, %r3, %r4;
mul.wide.u32 %rd2, %r1, 8; add.u64 %rd3, %rd1, %rd2;
st.global.v2.u32 [%rd3], {%r3, %r5};
ret;"""


def test_if_else_joins_before_vote():
    out = np.zeros((40, 2), np.uint32)
    binary = _run(IF_ELSE_BALLOT, ".param .u64 out", 1, 40, [out])
    assert binary.gang_refusal is None
    t = np.arange(40, dtype=np.int64)
    value = np.where(t % 2 == 1, t + 1000, t * 10)
    gt = value > 1010
    ballot = np.zeros(40, np.int64)
    for w in (0, 1):
        lanes = slice(32 * w, min(32 * w + 32, 40))
        ballot[lanes] = sum(1 << i for i, g in enumerate(gt[lanes]) if g)
    assert (out[:, 0] == ((value + ballot) & 0xFFFFFFFF)).all()
    assert (out[:32, 1] == 0xFFFFFFFF).all() and (out[32:, 1] == 0xFF).all()   # 8-lane warp


def test_bad_access_names_the_lane():
    body = """.reg .b32 %r<3>; .reg .b64 %rd<4>; ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x; mul.wide.u32 %rd2, %r1, 4; add.u64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r1; ret;"""
    out = np.zeros(37, np.uint32)        # 64 threads write 64 words: thread 37 is outside
    with pytest.raises(IllegalAddressError, match="thread 37"):
        _run(body, ".param .u64 out", 1, 64, [out])
    assert (out == np.arange(37)).all() or (out == 0).all()   # nothing past the buffer


def test_lanes_that_never_meet_at_a_shuffle():
    """Half the warp shuffles with a full member mask at one instruction, the other half at
    another: they wait for each other forever (a GPU hangs); ptxport says so."""
    body = """.reg .pred %p<2>; .reg .b32 %r<4>;
    mov.u32 %r1, %tid.x; setp.lt.u32 %p1, %r1, 16;
    @%p1 bra A;
    shfl.sync.idx.b32 %r2, %r1, 0, 31, -1; bra B;
    A: shfl.sync.idx.b32 %r2, %r1, 1, 31, -1;
    B: ret;"""
    with pytest.raises(KernelExecutionError, match="never arrive"):
        _run(body, "", 1, 32, [])


def test_barrier_inside_a_loop_with_shared_memory():
    """A block of 3 warps: each iteration writes shared memory, waits at bar.sync, reads a
    neighbour's word, waits again; registers survive the warp leaving and resuming."""
    body = """.reg .pred %p<2>; .reg .b32 %r<12>; .reg .b64 %rd<4>; .shared .align 4 .b32 s[96];
    ld.param.u64 %rd1, [out]; mov.u32 %r1, %tid.x; mov.u32 %r2, %r1; mov.u32 %r3, 0;
    mov.u32 %r6, s; shl.b32 %r7, %r1, 2; add.u32 %r7, %r6, %r7;
    add.u32 %r8, %r1, 1; rem.u32 %r8, %r8, 96; shl.b32 %r8, %r8, 2; add.u32 %r8, %r6, %r8;
    LOOP: st.shared.u32 [%r7], %r2; bar.sync 0; ld.shared.u32 %r2, [%r8]; bar.sync 0;
    add.u32 %r3, %r3, 1; setp.lt.u32 %p1, %r3, 5; @%p1 bra LOOP;
    mul.wide.u32 %rd2, %r1, 4; add.u64 %rd3, %rd1, %rd2; st.global.u32 [%rd3], %r2; ret;"""
    out = np.zeros(96, np.uint32)
    binary = _run(body, ".param .u64 out", 2, 96, [out])
    assert binary.gang_refusal is None
    assert (out == (np.arange(96) + 5) % 96).all()


def test_kernels_the_gang_path_does_not_take_run_on_the_scalar_path():
    body = """.reg .b32 %r<3>; .reg .b64 %rd<4>; .local .align 4 .b32 t[4];
    ld.param.u64 %rd1, [out]; mov.u32 %r1, %tid.x; st.local.u32 [t], %r1;
    ld.local.u32 %r2, [t]; mul.wide.u32 %rd2, %r1, 4; add.u64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r2; ret;"""
    out = np.zeros(40, np.uint32)
    binary = _run(body, ".param .u64 out", 1, 40, [out])
    assert ".local memory" in binary.gang_refusal
    assert (out == np.arange(40)).all()


# Lanes past n return before a full-mask shfl.down: the others, parked at the shuffle while
# the returning lanes have not yet run their `ret`, must go on once those exit (exited lanes
# do not take part in a warp operation).
EXIT_THEN_SHUFFLE = """
.reg .pred %p<3>; .reg .b32 %r<12>; .reg .f32 %f<4>; .reg .b64 %rd<8>;
ld.param.u64 %rd1, [x]; ld.param.u64 %rd2, [y]; ld.param.u32 %r1, [n];
mov.u32 %r2, %tid.x;
setp.ge.u32 %p1, %r2, %r1;
@%p1 bra END;
mul.wide.u32 %rd3, %r2, 4; add.u64 %rd4, %rd1, %rd3; ld.global.f32 %f1, [%rd4];
shfl.sync.down.b32 %f2|%p2, %f1, 1, 31, -1;
add.f32 %f3, %f1, %f2;
add.u64 %rd5, %rd2, %rd3; st.global.f32 [%rd5], %f3;
END:
ret;"""


def test_lanes_that_return_before_a_warp_shuffle_do_not_block_it():
    x = np.arange(64, dtype=np.float32)
    y = np.zeros(64, np.float32)
    n = 40
    binary = _run(EXIT_THEN_SHUFFLE, ".param .u64 x, .param .u64 y, .param .u32 n", 1, 64,
                  [x, y], (np.uint32(n),))
    assert binary.gang_refusal is None
    lane = np.arange(n)
    source = np.where(lane % 32 == 31, lane, lane + 1)   # lane 31: out of range, its own
    expected = x[:n] + x[source]
    # lane n-1 reads lane n, which exited: undefined in PTX, so not compared
    np.testing.assert_array_equal(y[:n - 1], expected[:n - 1])
    assert (y[n:] == 0).all()


# Every thread writes its %tid.x/y/z at its linear number (x fastest).
THREAD_INDICES = """
.reg .b32 %r<16>; .reg .b64 %rd<4>;
ld.param.u64 %rd1, [out];
mov.u32 %r1, %tid.x; mov.u32 %r2, %tid.y; mov.u32 %r3, %tid.z;
mov.u32 %r4, %ntid.x; mov.u32 %r5, %ntid.y;
mad.lo.u32 %r6, %r3, %r5, %r2; mad.lo.u32 %r7, %r6, %r4, %r1;
mul.lo.u32 %r8, %r7, 3;
mul.wide.u32 %rd2, %r8, 4; add.u64 %rd3, %rd1, %rd2;
st.global.u32 [%rd3], %r1; st.global.u32 [%rd3+4], %r2; st.global.u32 [%rd3+8], %r3;
ret;"""


@pytest.mark.parametrize("block", [(1, 1, 1), (7, 3, 5), (16, 16, 1), (96, 3, 1), (1024, 1, 1),
                                   (3, 341, 1), (10, 10, 10), (17, 1, 60), (1, 1, 64),
                                   (33, 31, 1)])
def test_thread_indices_of_any_block_shape(block):
    n = int(np.prod(block))
    out = np.full(3 * n, -1, np.int32)
    binary = _run(THREAD_INDICES, ".param .u64 out", 1, block, [out])
    assert binary.gang_refusal is None
    linear = np.arange(n)
    expected = np.stack([linear % block[0], linear // block[0] % block[1],
                         linear // (block[0] * block[1])], axis=1)
    np.testing.assert_array_equal(out.reshape(n, 3), expected)


SHARED_ATOMICS = r"""
extern "C" __global__ void k(const int* x, int* out, int* old)
{
    __shared__ int acc[6];
    __shared__ unsigned umax;
    __shared__ int slots[96];
    int t = threadIdx.x;
    if (t < 6) acc[t] = t == 2 ? 1 << 30 : (t == 4 ? -1 : 0);
    if (t == 0) umax = 0;
    slots[t] = t;
    __syncthreads();
    int v = x[t];
    if (t % 3 != 1) {                 // a partial mask: lanes skip the atomics
        atomicAdd(&acc[0], v);
        atomicSub(&acc[1], v);
        atomicMin(&acc[2], v);
        atomicMax(&acc[3], v);
        atomicAnd(&acc[4], v | 0x0F0F0000);
        atomicXor(&acc[5], v);
        atomicMax(&umax, (unsigned)v);
    }
    old[t] = atomicExch(&slots[t], v);
    __syncthreads();
    old[96 + t] = atomicCAS(&slots[(t + 1) % 96], (t + 1) % 96 == 0 ? 7 : x[(t + 1) % 96], t);
    __syncthreads();
    if (t < 6) out[t] = acc[t];
    if (t == 6) out[6] = (int)umax;
    out[8 + t] = slots[t];
}
"""


def test_shared_memory_atomics_of_every_operation():
    """Shared-memory atomics are plain read-modify-writes on the gang path (one host thread
    runs a block); every operation, with a partial mask, against numpy."""
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(SHARED_ATOMICS, code_type="c++").compile("native").get_kernel("k")
    rng = np.random.default_rng(5)
    x = rng.integers(-1000, 1000, 96).astype(np.int32)
    out = np.zeros(8 + 96, np.int32)
    old = np.zeros(192, np.int32)
    buffers = []
    for a in (x, out, old):
        buf = dev.allocate(a.nbytes, stream=stream)
        buf.copy_from(a, stream=stream)
        buffers.append(buf)
    launch(stream, LaunchConfig(grid=1, block=96), kernel, *buffers)
    buffers[1].copy_to(out, stream=stream)
    buffers[2].copy_to(old, stream=stream)
    stream.sync()
    assert kernel._binary(dev).gang_refusal is None
    t = np.arange(96)
    v = x[t % 3 != 1]
    with np.errstate(over="ignore"):
        assert out[0] == v.sum() and out[1] == -v.sum()
    assert out[2] == min(1 << 30, v.min()) and out[3] == max(0, v.max())
    assert out[4] == np.bitwise_and.reduce(v | 0x0F0F0000)
    assert out[5] == np.bitwise_xor.reduce(v)
    assert out[6] == np.int32(v.astype(np.uint32).max())
    np.testing.assert_array_equal(old[:96], t)            # exch: each thread's own slot
    # every slot holds x after the exchanges; thread i's CAS (the only one on slot i + 1)
    # swaps where the slot holds what it compares with (slot 0: 7, which it does not)
    j = (t + 1) % 96
    np.testing.assert_array_equal(old[96:], x[j])
    expected = x.copy()
    expected[j] = np.where(x[j] == np.where(j == 0, 7, x[j]), t, x[j])
    np.testing.assert_array_equal(out[8:], expected)


FULL_WARP_ATOMICS = r"""
extern "C" __global__ void k(const unsigned char* data, unsigned* hist, int* old, float* sums)
{
    __shared__ unsigned bins[256];
    __shared__ int counters[4];
    __shared__ float total[2];
    int t = threadIdx.x;
    bins[t] = 0;
    if (t < 4) counters[t] = 100 * t;
    if (t < 2) total[t] = 0.0f;
    __syncthreads();
    for (int i = t; i < 4096; i += blockDim.x)     // whole warps: increments of 1 by all lanes
        atomicAdd(&bins[data[i]], 1u);
    old[t] = atomicAdd(&counters[t % 4], t % 4 + 1);  // lanes collide; old values are read
    atomicAdd(&total[t & 1], 0.5f);
    __syncthreads();
    hist[t] = bins[t];
    if (t < 4) old[256 + t] = counters[t];
    if (t < 2) sums[t] = total[t];
}
"""


def test_shared_atomics_of_whole_warps():
    """All 32 lanes' shared atomics (the full-mask copy's path): increments of 1 that
    collide, old values read back, a float operand every lane has alike."""
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(FULL_WARP_ATOMICS, code_type="c++").compile("native").get_kernel("k")
    data = np.random.default_rng(7).integers(0, 256, 4096).astype(np.uint8)
    data[:64] = 3          # two whole warps on one bin
    hist = np.zeros(256, np.uint32)
    old = np.zeros(260, np.int32)
    sums = np.zeros(2, np.float32)
    buffers = []
    for a in (data, hist, old, sums):
        buf = dev.allocate(a.nbytes, stream=stream)
        buf.copy_from(a, stream=stream)
        buffers.append(buf)
    launch(stream, LaunchConfig(grid=1, block=256), kernel, *buffers)
    for a, buf in zip((hist, old, sums), buffers[1:], strict=True):
        buf.copy_to(a, stream=stream)
    stream.sync()
    assert kernel._binary(dev).gang_refusal is None
    np.testing.assert_array_equal(hist, np.bincount(data, minlength=256))
    t = np.arange(256)
    for c in range(4):      # the 64 threads on counter c each saw one of its 64 values
        seen = np.sort(old[:256][t % 4 == c])
        np.testing.assert_array_equal(seen, 100 * c + (c + 1) * np.arange(64))
        assert old[256 + c] == 100 * c + (c + 1) * 64
    np.testing.assert_array_equal(sums, [64.0, 64.0])


def test_code_per_block_shape():
    """One kernel launched with several block shapes: thread indices are constants of the
    code compiled for each (GangKernelBinary.for_block), which is kept per shape."""
    dev = Device("cpu")
    stream = dev.create_stream()
    ptx = HEADER + f".visible .entry k(.param .u64 out)\n{{\n{THREAD_INDICES}\n}}\n"
    kernel = Program(ptx, code_type="ptx").compile("native").get_kernel("k")
    binary = kernel._binary(dev)
    for shape in [(64, 1, 1), (16, 4, 1), (48, 1, 1), (8, 8, 2), (3, 5, 7), (64, 1, 1)]:
        n = shape[0] * shape[1] * shape[2]
        out = np.full((n, 3), -1, np.int32)
        buf = dev.allocate(out.nbytes, stream=stream)
        launch(stream, LaunchConfig(grid=2, block=shape), kernel, buf)
        buf.copy_to(out, stream=stream)
        stream.sync()
        t = np.arange(n)
        expected = np.stack([t % shape[0], t // shape[0] % shape[1],
                             t // (shape[0] * shape[1])], axis=1)
        np.testing.assert_array_equal(out, expected, err_msg=str(shape))
        assert binary.for_block(shape).gang_refusal is None
    assert binary.for_block((64, 1, 1)) is binary.for_block((64, 1, 1))
    assert binary.for_block((64, 1, 1)) is not binary.for_block((16, 4, 1))
