"""Equality tests and predicate logic known from scalars (codegen/targets/cpu/gang/
warp_bounds.py): `setp.eq` / `setp.ne` of a register whose lanes hold u + c[i] against a
uniform value say from scalars whether all of a warp's lanes or none hold it, and `not`,
`and`, `or` and `mov` carry that to the predicates made of it; branches and skippable runs
go by it. Counted against numpy: %tid.x plus a parameter whose sum wraps inside a warp,
%tid.y in rows narrower than a warp (two rows a warp: two offsets), the value on either
side, predicates combined, in blocks of whole warps, with a partial warp, and 2D blocks;
the stencil's halo guards and boundary test in every block shape, image sizes that leave
partial blocks, and a halo read past the end, which faults naming the thread as the
thread-by-thread path does."""

from __future__ import annotations

import re

import numpy as np
import pytest

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.codegen.targets.cpu.gang import lowering
from ptxport.codegen.targets.cpu.gang.build import build_gang
from ptxport.codegen.targets.cpu.options import CpuOptions
from ptxport.errors import IllegalAddressError
from ptxport.ir.from_ptx import build
from ptxport.ir.verify import verify
from ptxport.ptx.parser import parse
from ptxport.runtime.program import ObjectCode

HEADER = ".version 7.8\n.target sm_80\n.address_size 64\n"

# (the predicate's instructions, whether the guarded count runs where it holds or where it
# does not); %r5 = tid.x + K (wraps where K is near 2**32), %r3 = tid.y; X and Y immediates.
# Thread-index predicates: passes/if_convert.py guards each `if` in place, a skippable run.
TESTS = [
    ("setp.eq.s32 %p1, %r5, X", True),
    ("setp.ne.s32 %p1, X, %r5", False),
    ("setp.eq.u32 %p1, %r3, Y", False),
    ("setp.ne.b32 %p1, %r3, 1", True),
    ("setp.eq.s32 %p2, %r5, X; setp.ne.s32 %p3, %r3, Y; and.pred %p1, %p2, %p3", True),
    ("setp.eq.s32 %p2, %r5, X; setp.eq.s32 %p3, %r3, Y; or.pred %p1, %p2, !%p3", False),
    ("setp.ne.s32 %p2, %r5, X; not.pred %p3, %p2; mov.pred %p1, %p3", True),
]


def _ptx(k: int, x: int, y: int) -> str:
    body = []
    for n, (setp, when) in enumerate(TESTS):
        # (each test its own predicates: a register's uniformity is the kernel's)
        setp = setp.replace("%p", f"%q{n}_").replace("X", str(x)).replace("Y", str(y))
        guard = f"@!%q{n}_1" if when else f"@%q{n}_1"
        # (a base of its own: accesses from one base are loaded and checked together,
        # which keeps a run from being skipped alone)
        body.append(f"""{setp};
add.s64 %s{n}, %rd4, {4 * n};
{guard} bra SKIP{n};
ld.global.u32 %r7, [%s{n}];
add.s32 %r7, %r7, 1;
st.global.u32 [%s{n}], %r7;
SKIP{n}:""")
    preds = " ".join(f".reg .pred %q{n}_<4>; .reg .b64 %s{n};" for n in range(len(TESTS)))
    return HEADER + f""".visible .entry k(.param .u64 out)
{{
.reg .b32 %r<20>; .reg .b64 %rd<8>; {preds}
ld.param.u64 %rd1, [out];
mov.u32 %r1, %tid.x;
mov.u32 %r3, %tid.y;
add.s32 %r5, %r1, {k};
mov.u32 %r15, %ntid.x;
mad.lo.s32 %r16, %r3, %r15, %r1;
mov.u32 %r17, %ntid.y;
mul.lo.s32 %r18, %r15, %r17;
mov.u32 %r19, %ctaid.x;
mad.lo.s32 %r16, %r19, %r18, %r16;
mul.wide.u32 %rd2, %r16, {4 * len(TESTS)};
add.s64 %rd4, %rd1, %rd2;
{chr(10).join(body)}
ret;
}}
"""


def _module(k: int, x: int, y: int):
    module = build(parse(_ptx(k, x, y), "pred_bounds.ptx"))
    verify(module)
    return module


def _reference(block, blocks: int, k: int, x: int, y: int) -> np.ndarray:
    bx, by = block
    t = np.arange(bx * by)
    tx, ty = np.tile(t % bx, blocks), np.tile(t // bx, blocks)
    eq5, eq3 = (tx + k) % 2**32 == x % 2**32, ty == y
    holds = [eq5, ~eq5, eq3, ty != 1, eq5 & ~eq3, eq5 | ~eq3, eq5]
    return np.stack([h if when else ~h for (_, when), h in zip(TESTS, holds, strict=True)],
                    axis=1).astype(np.uint32)


CASES = [
    ((64, 1), 0, 33, 0),                    # lane 1 of warp 1
    ((64, 1), 2**32 - 20, 2**32 - 2, 0),    # tid.x + K wraps at lane 20 of warp 0
    ((64, 1), 2**32 - 20, 9, 0),            # a value after the wrap
    ((16, 4), 5, 5, 1),                     # two rows a warp: tid.y's two offsets
    ((8, 8), 3, 2**31 - 1, 6),              # four rows a warp; X at the signed top
    ((48, 1), 40, 50, 0),                   # a partial warp: no bounds, the lanes decide
]


@pytest.mark.parametrize("block, k, x, y", CASES)
@pytest.mark.parametrize("gang", [True, False])
def test_equality_runs_agree(cpu_options, block, k, x, y, gang):
    cpu_options(gang=gang)
    text = _ptx(k, x, y)
    kernel = ObjectCode(text, _module(k, x, y), "pred_bounds.ptx").get_kernel("k")
    dev = Device("cpu")
    stream = dev.create_stream()
    blocks = 3
    out = np.zeros((blocks * block[0] * block[1], len(TESTS)), np.uint32)
    buf = dev.allocate(out.nbytes, stream=stream)
    buf.copy_from(out, stream=stream)
    launch(stream, LaunchConfig(grid=blocks, block=block), kernel, buf)
    buf.copy_to(out, stream=stream)
    stream.sync()
    np.testing.assert_array_equal(out, _reference(block, blocks, k, x, y))


@pytest.mark.parametrize("block, known", [((64, 1), 4), ((16, 4), 6), ((48, 1), 0)])
def test_equality_runs_decide_from_scalars(monkeypatch, block, known):
    """In the segment's full-mask copy, where the warps are whole, the skippable runs of
    the vector predicates (in rows of 64 not those of `tid.y`, alike in a warp's lanes
    there) are jumped over on scalars first; in its copy for other masks, and where a warp
    is partial, none is."""
    found = []
    real = lowering.run_bounds

    def counting(fl, predicate):
        bounds = real(fl, predicate)
        found.append(bounds is not None)
        return bounds
    monkeypatch.setattr(lowering, "run_bounds", counting)
    build_gang(_module(0, 33, 1), "k", (*block, 1), CpuOptions())
    assert sum(found) == known, (sum(found), found)


STENCIL_ANY = r"""
extern "C" __global__ void stencil_any(const float* in, float* out, int width, int height)
{
    extern __shared__ float tile[];
    int bx = blockDim.x, by = blockDim.y, pitch = bx + 2;
    int x = blockIdx.x * bx + threadIdx.x, y = blockIdx.y * by + threadIdx.y;
    int tx = threadIdx.x + 1, ty = threadIdx.y + 1;
    bool inside = x < width && y < height;
    tile[ty * pitch + tx] = inside ? in[y * width + x] : 0.0f;
    if (threadIdx.x == 0)
        tile[ty * pitch] = x > 0 && y < height ? in[y * width + x - 1] : 0.0f;
    if (threadIdx.x == bx - 1)
        tile[ty * pitch + bx + 1] = x + 1 < width && y < height ? in[y * width + x + 1] : 0.0f;
    if (threadIdx.y == 0)
        tile[tx] = y > 0 && x < width ? in[(y - 1) * width + x] : 0.0f;
    if (threadIdx.y == by - 1)
        tile[(by + 1) * pitch + tx] = y + 1 < height && x < width ? in[(y + 1) * width + x]
                                                                  : 0.0f;
    __syncthreads();
    if (!inside)
        return;
    float v;
    if (x == 0 || y == 0 || x == width - 1 || y == height - 1)
        v = tile[ty * pitch + tx];
    else
        v = 0.25f * (((tile[(ty - 1) * pitch + tx] + tile[(ty + 1) * pitch + tx])
                      + tile[ty * pitch + tx - 1]) + tile[ty * pitch + tx + 1]);
    out[y * width + x] = v;
}
"""


def _stencil_run(kernel, block, width: int, height: int, rows: int | None = None,
                 shmem: int = 0, grid=None):
    """out of one launch over a height x width image of `rows` rows (height by default)."""
    dev = Device("cpu")
    stream = dev.create_stream()
    a = np.random.default_rng(width * 100 + height).standard_normal(
        (rows or height, width)).astype(np.float32)
    b_in = dev.allocate(a.nbytes, stream=stream)
    b_out = dev.allocate(4 * width * height, stream=stream)
    b_in.copy_from(a, stream=stream)
    grid = grid or (-(-width // block[0]), -(-height // block[1]))
    launch(stream, LaunchConfig(grid=grid, block=block, shmem_size=shmem), kernel, b_in,
           b_out, np.int32(width), np.int32(height))
    out = np.empty((height, width), np.float32)
    b_out.copy_to(out, stream=stream)
    stream.sync()
    return a, out


def _stencil_reference(a: np.ndarray) -> np.ndarray:
    want = a.copy()
    want[1:-1, 1:-1] = np.float32(0.25) * (((a[:-2, 1:-1] + a[2:, 1:-1]) + a[1:-1, :-2])
                                           + a[1:-1, 2:])
    return want


SIZES = [(17, 17), (31, 9), (33, 33), (50, 1), (1, 20)]


@pytest.mark.parametrize("width, height", SIZES)
@pytest.mark.parametrize("block", [(16, 16), (32, 8), (8, 32)])
def test_stencil_of_any_block_shape_agrees_with_numpy(block, width, height):
    kernel = Program(STENCIL_ANY, code_type="c++").compile("native").get_kernel(
        "stencil_any")
    shmem = 4 * (block[0] + 2) * (block[1] + 2)
    a, out = _stencil_run(kernel, block, width, height, shmem=shmem)
    np.testing.assert_array_equal(out, _stencil_reference(a))


def _stencil_2d():
    with open("tests/kernels/stencil_2d.cu") as f:
        source = f.read()
    return Program(source, code_type="c++").compile("native").get_kernel("stencil_2d_5pt")


@pytest.mark.parametrize("width, height", SIZES)
def test_stencil_2d_agrees_with_numpy(width, height):
    a, out = _stencil_run(_stencil_2d(), (16, 16), width, height)
    np.testing.assert_array_equal(out, _stencil_reference(a))


def _halo_fault(cpu_options, gang: bool) -> str:
    cpu_options(gang=gang)
    with pytest.raises(IllegalAddressError) as raised:
        _stencil_run(_stencil_2d(), (16, 16), 16, 17, rows=16, grid=(1, 1))
    return re.sub(r"0x[0-9a-f]+", "ADDRESS", str(raised.value))    # (buffers differ)


def test_a_halo_read_past_the_end_faults_at_its_thread(cpu_options):
    """One block over an image of 17 rows whose buffer holds 16: only the halo loads of
    `threadIdx.y == 15` (warp 7, lanes 16..31) read past the end, row 16; the fault names
    the first of them, threadIdx (0, 15) (thread 240), and the source line of that load,
    as the thread-by-thread path does."""
    message = _halo_fault(cpu_options, True)
    assert "default_program:29 " in message and "thread 240;" in message, message
    assert message == _halo_fault(cpu_options, False)
