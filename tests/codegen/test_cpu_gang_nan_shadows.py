"""Warp gangs' NaN shadows (codegen/targets/cpu/gang/nan_shadows.py): f32 arithmetic inside
a segment keeps LLVM's NaN and a shadow of the lanes to make canonical where the value
leaves the run. Warp scans by shfl.up/down (full and partial masks, widths below 32) with
NaN payloads, infinities and signalling NaNs, bit for bit against a numpy model of PTX: an
f32 add, mul or max that gives NaN gives the canonical NaN 0x7FFFFFFF, a lane whose value
only ever passed through selp and shuffles keeps its payload, a lane whose shuffle source
is out of range keeps its own value."""

from __future__ import annotations

import numpy as np
import pytest

from corpus import KERNEL_DIR, corpus_ptx
from ptxport import Device, LaunchConfig, Program, launch
from ptxport.codegen.targets.cpu.gang.build import build_gang
from ptxport.codegen.targets.cpu.gang.nan_shadows import lazy_registers
from ptxport.codegen.targets.cpu.options import CpuOptions
from ptxport.ir.from_ptx import build
from ptxport.ptx.parser import parse

CANONICAL = np.uint32(0x7FFFFFFF)

SOURCE = r"""
#define FULL 0xffffffffu
extern "C" __global__ void scan_up(const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x & 31;
    float v = x[i];
    for (int d = 1; d < 32; d <<= 1) {
        float up = __shfl_up_sync(FULL, v, d);
        if (lane >= d) v += up;
    }
    y[i] = v;
}
extern "C" __global__ void scan_up8(const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x & 31;
    float v = x[i];
    for (int d = 1; d < 8; d <<= 1) {
        float up = __shfl_up_sync(FULL, v, d, 8);
        if ((lane & 7) >= d) v += up;
    }
    y[i] = v;
}
extern "C" __global__ void max_down_then_shift(const float* x, float* y)
{
    // a suffix maximum by shfl.down (NVRTC branches around each max: v lives across
    // segments, so it is no lazy register), doubled, then shifted down one lane
    int i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x & 31;
    float v = x[i];
    for (int d = 1; d < 32; d <<= 1) {
        float down = __shfl_down_sync(FULL, v, d);
        v = lane + d < 32 ? fmaxf(v, down) : v;
    }
    y[i] = __shfl_down_sync(FULL, v * 2.0f, 1);
}
extern "C" __global__ void scan_by(const float* x, float* y, int step)
{
    // shfl.up by a lane offset known only when running (a shuffle through memory)
    int i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x & 31;
    float v = x[i];
    for (int d = step; d < 32; d <<= 1) {
        float up = __shfl_up_sync(FULL, v, d);
        if (lane >= d) v += up;
    }
    y[i] = v;
}
extern "C" __global__ void scan_half(const float* x, float* y)
{
    // the low 16 lanes scan among themselves (a partial member mask), the others copy
    int i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x & 31;
    float v = x[i];
    if (lane < 16) {
        for (int d = 1; d < 16; d <<= 1) {
            float up = __shfl_up_sync(0xffffu, v, d, 16);
            if (lane >= d) v += up;
        }
    }
    y[i] = v;
}
"""

# payloads, signalling and negative NaNs, infinities of both signs (inf - inf is NaN)
SPECIALS = [0x7FC01234, 0xFFC00001, 0x7F800001, 0xFFFFFFFF, 0x7F800000, 0xFF800000,
            0x80000000, 0x00000001]


def _canonical(values: np.ndarray) -> np.ndarray:
    bits = values.astype(np.float32).view(np.uint32)
    return np.where(np.isnan(values), CANONICAL, bits)


def _shift(bits: np.ndarray, d: int, width: int, up: bool) -> np.ndarray:
    """shfl.sync.up/down.b32 by d within segments of `width` lanes: out-of-range lanes keep
    their own value (PTX ISA, shfl.sync)."""
    lanes = np.arange(bits.size) % 32
    start = lanes - lanes % width
    source = lanes - d if up else lanes + d
    ok = source >= start if up else source < start + width
    index = np.arange(bits.size) + np.where(ok, source - lanes, 0)
    return bits[index]


def _add(a_bits, b_bits):
    with np.errstate(invalid="ignore", over="ignore"):
        return _canonical(a_bits.view(np.float32) + b_bits.view(np.float32))


def _scan(bits: np.ndarray, width: int, lanes_in, d: int = 1) -> np.ndarray:
    lane = np.arange(bits.size) % 32
    v = bits.copy()
    while d < width:
        take = ((lane % width) >= d) & lanes_in
        v = np.where(take, _add(v, _shift(v, d, width, True)), v)
        d *= 2
    return v


def _max_down_then_shift(bits: np.ndarray) -> np.ndarray:
    lane = np.arange(bits.size) % 32
    v = bits.copy()
    for d in (1, 2, 4, 8, 16):
        w = _shift(v, d, 32, False)
        a, b = v.view(np.float32), w.view(np.float32)
        # max: one NaN gives the other operand, two give the canonical NaN
        both = np.isnan(a) & np.isnan(b)
        with np.errstate(invalid="ignore"):
            m = np.where(np.isnan(a), b, np.where(np.isnan(b), a, np.maximum(a, b)))
        m = np.where(both, CANONICAL.view(np.float32), m).astype(np.float32)
        m_bits = m.view(np.uint32).copy()
        # max orders -0 below +0
        zeros = (a == 0) & (b == 0)
        m_bits = np.where(zeros, np.where((v == 0) | (w == 0), 0, 0x80000000), m_bits)
        v = np.where(lane + d < 32, m_bits.astype(np.uint32), v)
    with np.errstate(invalid="ignore", over="ignore"):
        doubled = _canonical(v.view(np.float32) * np.float32(2))
    return _shift(doubled, 1, 32, False)


def _inputs(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.integers(-50, 50, n).astype(np.float32).view(np.uint32).copy()
    where = rng.choice(n, size=n // 6, replace=False)
    x[where] = rng.choice(np.array(SPECIALS, np.uint32), size=where.size)
    x[::32] = 0x7FC05678          # every warp's lane 0: a payload that no add reaches
    x[8::32] = 0xFFA00001         # a segment of 8's first lane: a signalling NaN
    return x


def _run(kernel_name: str, x: np.ndarray, *scalars, block: int = 64,
         ptx: str | None = None) -> np.ndarray:
    dev = Device("cpu")
    stream = dev.create_stream()
    program = Program(SOURCE, code_type="c++") if ptx is None else Program(ptx, code_type="ptx")
    kernel = program.compile("native").get_kernel(kernel_name)
    xb = dev.allocate(x.nbytes, stream=stream)
    yb = dev.allocate(x.nbytes, stream=stream)
    xb.copy_from(x, stream=stream)
    launch(stream, LaunchConfig(grid=x.size // block, block=block), kernel, xb, yb, *scalars)
    y = np.empty_like(x)
    yb.copy_to(y, stream=stream)
    stream.sync()
    assert kernel._binary(dev).gang_refusal is None
    return y


def _check(got: np.ndarray, want: np.ndarray, x: np.ndarray) -> None:
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(int(i), hex(int(x[i])), hex(int(got[i])), hex(int(want[i])))
                           for i in bad[:8]]


@pytest.mark.parametrize("seed", [0, 1])
def test_scan_up_keeps_payloads_only_where_no_add_reached(seed):
    x = _inputs(256, seed)
    _check(_run("scan_up", x), _scan(x, 32, True), x)


def test_scan_up_in_segments_of_eight():
    x = _inputs(256, 2)
    _check(_run("scan_up8", x), _scan(x, 8, True), x)


def test_max_by_shfl_down_then_a_shuffle_carries_the_value_out():
    x = _inputs(256, 3)
    _check(_run("max_down_then_shift", x), _max_down_then_shift(x), x)


@pytest.mark.parametrize("step", [1, 2, 4])
def test_scan_by_a_lane_offset_known_when_running(step):
    x = _inputs(256, 5)
    _check(_run("scan_by", x, np.int32(step)), _scan(x, 32, True, step), x)


# f32 sums (lazy registers) carried out of the run by shuffles (down: lane 31 keeps its own
# value; up in segments of 16: each segment's first lane) and by a mov, then stored
CARRIED_OUT = """
.version 7.8
.target sm_80
.address_size 64
.visible .entry carried_out(.param .u64 x, .param .u64 y)
{
    .reg .b64 %rd<6>; .reg .b32 %r<4>; .reg .f32 %f<6>;
    ld.param.u64 %rd1, [x]; ld.param.u64 %rd2, [y];
    mov.u32 %r1, %tid.x; mov.u32 %r2, %ctaid.x; mov.u32 %r3, %ntid.x;
    mad.lo.s32 %r1, %r2, %r3, %r1;
    mul.wide.u32 %rd3, %r1, 4; add.s64 %rd4, %rd1, %rd3; add.s64 %rd5, %rd2, %rd3;
    ld.global.f32 %f1, [%rd4];
    add.f32 %f2, %f1, %f1;
    mul.f32 %f3, %f2, %f1;
    shfl.sync.down.b32 %f4, %f3, 1, 31, -1;
    shfl.sync.up.b32 %f5, %f2, 3, 4096, -1;
    add.f32 %f4, %f4, %f5;
    sub.f32 %f5, %f3, %f1;
    mov.b32 %r2, %f5;
    st.global.f32 [%rd5], %f4;
    add.s64 %rd5, %rd5, 1024;
    st.global.b32 [%rd5], %r2;
    ret;
}
"""


def test_sums_carried_out_by_shuffles_and_mov_are_canonical():
    x = _inputs(256, 6)
    y = np.zeros(512, np.uint32)
    dev = Device("cpu")
    stream = dev.create_stream()
    kernel = Program(CARRIED_OUT, code_type="ptx").compile("native").get_kernel("carried_out")
    xb, yb = dev.allocate(x.nbytes, stream=stream), dev.allocate(y.nbytes, stream=stream)
    xb.copy_from(x, stream=stream)
    launch(stream, LaunchConfig(grid=4, block=64), kernel, xb, yb)
    yb.copy_to(y, stream=stream)
    stream.sync()
    twice = _add(x, x)
    with np.errstate(invalid="ignore", over="ignore"):
        product = _canonical(twice.view(np.float32) * x.view(np.float32))
        difference = _canonical(product.view(np.float32) - x.view(np.float32))
    want = _add(_shift(product, 1, 32, False), _shift(twice, 3, 16, True))
    _check(y[:256], want, x)
    _check(y[256:], difference, x)


def test_scan_under_a_partial_member_mask():
    x = _inputs(256, 4)
    lane = np.arange(x.size) % 32
    _check(_run("scan_half", x), _scan(x, 16, lane < 16), x)


def test_lazy_registers_exclude_stored_guarded_and_unknown_shuffles():
    body = """
    ld.global.f32 %a, [%rd1];
    add.f32 %s, %a, %a;
    selp.f32 %t, %a, %s, %p;
    mov.b32 %u, %t;
    shfl.sync.up.b32 %v, %u, 1, 0, -1;
    mul.f32 %w, %v, %t;
    shfl.sync.up.b32 %q, %w, %n, 0, -1;
    @%p add.f32 %g, %w, %w;
    add.f32 %o, %w, %g;
    st.global.f32 [%rd1], %o;
    st.global.f32 [%rd1], %q;
    """
    ptx = (".version 7.8\n.target sm_80\n.address_size 64\n"
           ".visible .entry k(.param .u64 p, .param .u32 n)\n{\n"
           ".reg .pred %p; .reg .b64 %rd1; .reg .b32 %n, %u, %v, %q;\n"
           ".reg .f32 %a, %s, %t, %w, %g, %o;\n"
           "ld.param.u64 %rd1, [p]; ld.param.u32 %n, [n]; setp.ne.u32 %p, %n, 0;\n"
           f"{body}\nret;\n}}\n")
    kernel = build(parse(ptx)).kernels[0]
    lazy = lazy_registers(kernel, set(), lambda o: getattr(o, "value", None))
    # %a is loaded, %o and %q stored, %g written under a guard, %n a shuffle's lane
    # operand, %w read by a shuffle whose lane is not known when compiling
    assert {r.name for r in lazy} == {"%s", "%t", "%u", "%v"}


def test_a_kernel_s_code_is_the_same_at_every_build():
    # the shadows' stack slots were made in the order of a set of registers (by id): each
    # build (each process) gave other LLVM IR, which keys the disk cache's object code
    ptx = corpus_ptx(KERNEL_DIR / "scan_warp.cu", "sm_90")
    texts = {str(build_gang(build(parse(ptx)), "scan_block_inclusive", (256, 1, 1),
                            CpuOptions())[0]) for _ in range(3)}
    assert len(texts) == 1
    assert "nan_shadow_" in texts.pop()


# f32 temporaries written in an order their names do not sort in
_TEMPORARIES = """.version 7.8
.target sm_80
.address_size 64
.visible .entry k(.param .u64 x, .param .u64 y)
{
.reg .b32 %r<4>; .reg .f32 %f<12>; .reg .b64 %rd<6>;
ld.param.u64 %rd1, [x]; ld.param.u64 %rd2, [y];
mov.u32 %r1, %tid.x; mul.wide.u32 %rd3, %r1, 4; add.s64 %rd4, %rd1, %rd3;
add.s64 %rd5, %rd2, %rd3;
ld.global.f32 %f1, [%rd4];
mul.f32 %f9, %f1, %f1; add.f32 %f3, %f9, %f1; mul.f32 %f7, %f3, %f9;
add.f32 %f2, %f7, %f3; sub.f32 %f5, %f2, %f7; add.f32 %f10, %f5, %f2;
st.global.f32 [%rd5], %f10;
ret;
}
"""


def test_shadow_slots_come_in_the_registers_order():
    # the module's text keys the compiled code's disk cache: its shadows' slots in the
    # registers' order by name, not a set's (which changes from process to process)
    import re

    from ptxport.codegen.targets.cpu.gang.build import build_gang
    from ptxport.codegen.targets.cpu.options import CpuOptions

    text = str(build_gang(build(parse(_TEMPORARIES)), "k", (32, 1, 1), CpuOptions())[0])
    names = re.findall(r'%"?nan_shadow_(\w+)"? = alloca', text)
    assert len(names) >= 4, names
    # (each slot goes in front of the entry block's allocas: the last made comes first)
    assert names == sorted(names, reverse=True)
