"""numba-cuda kernels through ptxport.frontends.numba on the cpu device and opencl:0,
checked against numpy (numba compiles each kernel once per signature, in process)."""

import collections
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("numba.cuda", reason="numba-cuda is not installed (pip install "
                                         "'ptxport[numba]')")

from numba import cuda, float32
from numba import types as numba_types
from numba.cuda.extending import overload, register_jitable

from ptxport import Device
from ptxport.errors import ArgumentError, InvalidValueError, UnsupportedFeatureError
from ptxport.frontends import numba as pnb
from ptxport.frontends.numba_target import compiling_for
from ptxport.frontends.nvrtc import available as nvrtc_available
from ptxport.runtime.backends import availability

_OPENCL, _WHY = availability("opencl")
DEVICES = ["cpu", pytest.param("opencl:0", marks=pytest.mark.skipif(
    not _OPENCL, reason=f"no OpenCL device for SPIR-V: {_WHY}"))]


@pytest.fixture(params=DEVICES)
def device(request):
    dev = Device(request.param)
    dev.set_current()
    return dev


@pnb.jit
def scale_grid_stride(x, out, alpha):
    start, step = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, x.size, step):
        out[i] = alpha * x[i]


@pnb.jit
def block_sums(x, total, partial):
    # a shared-memory tree reduction per block, then one atomic per block
    tile = cuda.shared.array(128, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    tile[t] = x[i] if i < x.size else 0
    cuda.syncthreads()
    s = 64
    while s > 0:
        if t < s:
            tile[t] += tile[t + s]
        cuda.syncthreads()
        s //= 2
    if t == 0:
        partial[cuda.blockIdx.x] = tile[0]
        cuda.atomic.add(total, 0, tile[0])


@pnb.jit
def histogram(values, bins):
    i = cuda.grid(1)
    if i < values.size:
        cuda.atomic.add(bins, values[i] % bins.size, 1)


@pnb.jit
def stencil_2d(a, out):
    y, x = cuda.grid(2)
    if 0 < y < a.shape[0] - 1 and 0 < x < a.shape[1] - 1:
        out[y, x] = 0.25 * (a[y - 1, x] + a[y + 1, x] + a[y, x - 1] + a[y, x + 1]) - a[y, x]


@pnb.jit
def dynamic_shared_reverse(x, out):
    buf = cuda.shared.array(0, float32)
    t = cuda.threadIdx.x
    buf[t] = x[t]
    cuda.syncthreads()
    out[t] = buf[cuda.blockDim.x - 1 - t]


@pnb.jit
def clamp_with_local_array(x, out):
    # a per-thread local array
    i = cuda.grid(1)
    bounds = cuda.local.array(2, float32)
    bounds[0], bounds[1] = -1, 1
    if i < x.size:
        out[i] = min(max(x[i], bounds[0]), bounds[1])


def test_local_array(device):
    x = np.linspace(-3, 3, 100).astype(np.float32)
    out = np.zeros_like(x)
    clamp_with_local_array[1, 128](x, out)
    np.testing.assert_array_equal(out, np.clip(x, -1, 1))


@register_jitable
def clamp_unit(v):
    # a math helper as users write them: register_jitable, called from a device function
    return min(max(v, -1.0), 1.0)


def _smoothstep_impl(v):
    return v * v * (3 - 2 * v)


def smoothstep(v):
    """Python's version; the kernels use the overload below."""
    return _smoothstep_impl(v)


@overload(smoothstep, target="cuda")
def _smoothstep_overload(v):
    return _smoothstep_impl


@cuda.jit(device=True)
def weighted(values, i, weight):
    # numba's own device function (lazy: typed when a kernel calling it is compiled)
    return weight * values[i] + clamp_unit(values[i])


@pnb.jit(device=True)
def neighbours(values, i):
    # ptxport's device function calling numba's, with an array and a scalar
    left = weighted(values, i - 1, 0.5) if i > 0 else 0.0
    return left + weighted(values, i, 2.0) + math.exp(values[i])


@pnb.jit("int64(int64, int64)", device=True)
def triangle(n, scale):
    # compiled at decoration, for the given signature
    total = 0
    for k in range(n + 1):
        total += k
    return total * scale


@pnb.jit
def device_function_calls(x, out, tri):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = neighbours(x, i) + smoothstep(x[i])
        tri[i] = triangle(i, 3)


def test_device_functions_register_jitable_overload_and_math(device):
    x = np.linspace(-2, 2, 50).astype(np.float32)
    out = np.zeros_like(x)
    tri = np.zeros(x.size, np.int64)
    device_function_calls[2, 32](x, out, tri)
    x64 = x.astype(np.float64)
    weighted_ = 2.0 * x64 + np.clip(x64, -1, 1)
    left = np.concatenate([[0.0], 0.5 * x64[:-1] + np.clip(x64[:-1], -1, 1)])
    expected = left + weighted_ + np.exp(x64) + x64 * x64 * (3 - 2 * x64)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    n = np.arange(x.size)
    np.testing.assert_array_equal(tri, 3 * n * (n + 1) // 2)


@pnb.jit("int64(int64)", device=True)
def factorial(n):
    if n <= 1:
        return 1
    return n * factorial(n - 1)


@pnb.jit
def factorials(out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = factorial(i)


def test_recursive_device_functions_run_on_cpu_and_are_refused_on_opencl(device):
    """numba passes each call a pointer to the caller's local memory for the result: on the
    cpu target that memory is on the local stack, which generic addresses reach; OpenCL
    kernels may not recurse, and the SPIR-V target says so before Intel's compiler sees it."""
    out = np.zeros(21, np.int64)
    if device.backend == "opencl":
        with pytest.raises(UnsupportedFeatureError, match="recursive.*factorial.*may not "
                                                          "recurse"):
            factorials[1, 32](out)
        return
    factorials[1, 32](out)
    np.testing.assert_array_equal(out, [math.factorial(max(n, 1)) for n in range(21)])


@pnb.jit(opt=False)
def unoptimized_calls(x, out):
    # NVVM at -opt=0 inlines nothing: `neighbours` calls `weighted` as PTX .funcs
    i = cuda.grid(1)
    if i < x.size:
        out[i] = neighbours(x, i)


def test_calls_nvvm_did_not_inline(device):
    """numba's results come back through a generic pointer to the caller's local memory
    (on the cpu target, device functions' local stack)."""
    x = np.linspace(-2, 2, 40).astype(np.float32)
    out = np.zeros_like(x)
    unoptimized_calls[1, 64](x, out)
    x64 = x.astype(np.float64)
    left = np.concatenate([[0.0], 0.5 * x64[:-1] + np.clip(x64[:-1], -1, 1)])
    expected = left + 2.0 * x64 + np.clip(x64, -1, 1) + np.exp(x64)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_the_compile_leaves_numbas_context_as_it_was():
    from numba.cuda.cudadrv import devices

    assert devices._runtime._get_attached_context() is None
    factorials.compile((numba_types.int64[::1],))
    assert devices._runtime._get_attached_context() is None
    with compiling_for((9, 0)):
        context = devices._runtime._get_attached_context()
        assert cuda.get_current_device().compute_capability == (9, 0)
        with pytest.raises(UnsupportedFeatureError, match="CUDA context's memalloc"):
            context.memalloc(16)
    assert devices._runtime._get_attached_context() is None


def test_grid_stride_loop(device):
    x = np.arange(10_000, dtype=np.float32)
    out = np.zeros_like(x)
    scale_grid_stride[4, 64](x, out, np.float32(1.5))        # 256 threads, 10000 elements
    np.testing.assert_array_equal(out, np.float32(1.5) * x)


def test_strided_arrays(device):
    """Non-contiguous arrays (numba's "A" layout on the cpu device, in place; copied in and
    back elsewhere): a reversed every-other view in, one column of a 2-D array out."""
    x = np.arange(200, dtype=np.float32)[::-2]
    out = np.zeros((100, 3), np.float32)
    scale_grid_stride[2, 32](x, out[:, 1], np.float32(2))
    np.testing.assert_array_equal(out[:, 1], 2 * x)
    assert not out[:, 0].any() and not out[:, 2].any()


def test_shared_memory_reduction_and_atomics(device):
    rng = np.random.default_rng(0)
    x = rng.random(1000).astype(np.float32)
    total = np.zeros(1, np.float32)
    blocks = 8
    partial = np.zeros(blocks, np.float32)
    block_sums[blocks, 128](x, total, partial)
    padded = np.concatenate([x, np.zeros(blocks * 128 - x.size, np.float32)])
    np.testing.assert_allclose(partial, padded.reshape(blocks, 128).sum(axis=1), rtol=1e-5)
    np.testing.assert_allclose(total[0], x.sum(dtype=np.float64), rtol=1e-5)


def test_integer_atomics_histogram(device):
    values = np.random.default_rng(1).integers(0, 1000, 5000).astype(np.int32)
    bins = np.zeros(16, np.int32)
    histogram[(values.size + 255) // 256, 256](values, bins)
    np.testing.assert_array_equal(bins, np.bincount(values % 16, minlength=16))


def test_2d_stencil_on_device_arrays(device):
    a = np.random.default_rng(2).random((30, 45)).astype(np.float32)
    d_a, d_out = pnb.to_device(a, device), pnb.to_device(np.zeros_like(a), device)
    stencil_2d[(4, 6), (8, 8)](d_a, d_out)
    expected = np.zeros_like(a)
    expected[1:-1, 1:-1] = 0.25 * (a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:]) \
        - a[1:-1, 1:-1]
    np.testing.assert_allclose(d_out.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_dynamic_shared_memory(device):
    x = np.arange(64, dtype=np.float32)
    out = np.zeros_like(x)
    dynamic_shared_reverse[1, 64, device.default_stream, 64 * 4](x, out)
    np.testing.assert_array_equal(out, x[::-1])


@pnb.jit
def complex_axpy_with_tuple(x, out, c, terms):
    # terms: (a float, an array, an int32), flattened by numba into separate parameters
    i = cuda.grid(1)
    if i < x.size:
        out[i] = x[i] * c + terms[0] * terms[1][i] + terms[2]


def test_complex_and_tuple_scalars(device):
    x = (np.arange(40) * (1 - 0.5j)).astype(np.complex64)
    y = np.linspace(0, 1, 40).astype(np.float32)
    out = np.zeros_like(x)
    complex_axpy_with_tuple[2, 32](x, out, np.complex64(1 + 2j), (2.0, y, np.int32(3)))
    np.testing.assert_allclose(out, x * np.complex64(1 + 2j) + 2 * y + 3, rtol=1e-6)
    out128 = np.zeros(40, np.complex128)
    complex_axpy_with_tuple[2, 32](x.astype(np.complex128), out128, 0.5 - 1j, (1, y, 1.5))
    np.testing.assert_allclose(out128, x.astype(np.complex128) * (0.5 - 1j) + y + 1.5,
                               rtol=1e-12)


Interval = collections.namedtuple("Interval", "low high")

PARTICLE = np.dtype([("mass", np.float32), ("hits", np.int64), ("spin", np.complex64)],
                    align=True)


@pnb.jit
def records_and_named_tuples(particle, bounds, out):
    out[0] = particle.mass * particle.hits + particle.spin.imag
    out[1] = bounds.high - bounds.low
    particle.hits = 42            # numba copies a record argument back after the launch


@pnb.jit
def weigh_particles(particles, out):
    i = cuda.grid(1)
    if i < particles.size:
        out[i] = particles[i].mass * particles[i].hits
        particles[i].hits += i


def test_arrays_of_records(device):
    particles = np.zeros(40, PARTICLE)
    particles["mass"], particles["hits"] = np.arange(40) / 4, np.arange(40) * 3
    out = np.zeros(40, np.float32)
    weigh_particles[2, 32](particles, out)
    np.testing.assert_array_equal(out, (np.arange(40) / 4 * np.arange(40) * 3))
    np.testing.assert_array_equal(particles["hits"], np.arange(40) * 4)
    every_other = np.zeros(20, np.float32)
    weigh_particles[1, 32](particles[::2], every_other)         # numba's "A" layout on cpu
    np.testing.assert_array_equal(every_other, out[::2] * 4 / 3)


def test_records_and_named_tuples(device):
    particles = np.zeros(3, PARTICLE)
    particles["mass"], particles["hits"], particles["spin"] = [1, 2, 3], [4, 5, 6], 0.5j
    out = np.zeros(2, np.float32)
    records_and_named_tuples[1, 1](particles[1], Interval(np.float32(1.5), 4.0), out)
    np.testing.assert_array_equal(out, [2 * 5 + 0.5, 2.5])
    np.testing.assert_array_equal(particles["hits"], [4, 42, 6])


LINKED = Path(__file__).resolve().parents[2] / "examples" / "numba_link"
mul_f32 = cuda.declare_device("mul_f32", "float32(float32, float32)")
add_f32 = cuda.declare_device("add_f32", "float32(float32, float32)")


@pnb.jit(link=[LINKED / "mul.cu", str(LINKED / "add.ptx")])
def linked_fma(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = add_f32(mul_f32(x[i], np.float32(3)), np.float32(0.5))


@pytest.mark.skipif(not nvrtc_available()[0], reason=f"NVRTC: {nvrtc_available()[1]}")
def test_link_cu_and_ptx_files(device):
    x = np.arange(50, dtype=np.float32)
    out = np.zeros_like(x)
    linked_fma[2, 32](x, out)
    np.testing.assert_array_equal(out, 3 * x + 0.5)


def test_link_files_ptxport_cannot_link_are_refused():
    @pnb.jit(link=["helpers.cubin"])
    def uses_cubin(out):
        out[0] = mul_f32(out[0], out[0])

    with pytest.raises(UnsupportedFeatureError, match="linking helpers.cubin into kernel "
                                                      "uses_cubin"):
        uses_cubin[1, 1](np.zeros(1, np.float32))

    @pnb.jit(link=[LINKED / "missing.ptx"])
    def uses_missing(out):
        out[0] = mul_f32(out[0], out[0])

    with pytest.raises(InvalidValueError, match="cannot read link file .*missing.ptx"):
        uses_missing[1, 1](np.zeros(1, np.float32))


_CACHED_KERNEL = """
import sys
import numpy as np
from numba import cuda
from ptxport import Device
from ptxport.frontends import numba as pnb

@pnb.jit(cache=True)
def scale(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = FACTOR * x[i]

if sys.argv[1] == "cached":          # numba must not compile: the PTX comes from the cache
    def refuse(*args, **kwargs):
        raise AssertionError("numba compiled a kernel that was cached")
    cuda.compile_ptx = refuse
Device("cpu").set_current()
x = np.arange(10, dtype=np.float32)
out = np.zeros_like(x)
scale[1, 16](x, out)
print(out.tolist())
"""


def _run_cached(script: Path, mode: str, cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PTXPORT_CACHE_DIR": str(cache),
           "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    return subprocess.run([sys.executable, str(script), mode], capture_output=True, text=True,
                          timeout=300, env=env)


def test_cache_true_keeps_the_ptx_across_processes(tmp_path):
    script = tmp_path / "cached_kernel.py"
    script.write_text(_CACHED_KERNEL.replace("FACTOR", "2"))
    first = _run_cached(script, "compile", tmp_path / "cache")
    assert first.returncode == 0, first.stderr
    assert list((tmp_path / "cache" / "numba").glob("*.ptx")), "nothing was cached"
    second = _run_cached(script, "cached", tmp_path / "cache")
    assert second.returncode == 0, second.stderr
    assert second.stdout == first.stdout == f"{[2.0 * i for i in range(10)]}\n"
    # an edited source file is compiled again, as numba's cache does
    script.write_text(_CACHED_KERNEL.replace("FACTOR", "3.0"))
    edited = _run_cached(script, "cached", tmp_path / "cache")
    assert "numba compiled a kernel that was cached" in edited.stderr


def test_launch_mistakes_are_named():
    with pytest.raises(InvalidValueError, match="kernel\\[grid, block\\]"):
        scale_grid_stride(np.zeros(1, np.float32), np.zeros(1, np.float32), 1.0)
    with pytest.raises(ArgumentError, match="argument 2: cannot pass a str"):
        scale_grid_stride[1, 1](np.zeros(1, np.float32), np.zeros(1, np.float32), "x")
    with pytest.raises(InvalidValueError, match="kernel's signature"):
        pnb.jit("void(float32[:])")
    with pytest.raises(InvalidValueError, match="jit option extensions, link_to for a kernel"):
        pnb.jit(extensions=[], link_to=[])
    with pytest.raises(InvalidValueError, match="max_registers=0 .*shared_memory_carveout=101"):
        pnb.jit(max_registers=0, shared_memory_carveout=101)


@pnb.jit(max_registers=32, lto=True, shared_memory_carveout="MaxShared", inline="always")
def hinted_axpy(a, x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = a * x[i] + out[i]


def test_hints_to_nvidias_tools_are_accepted(device):
    # (register limit, LTO, L1/shared carveout, numba's inlining: no effect on results)
    x = np.arange(100, dtype=np.float32)
    out = np.ones_like(x)
    hinted_axpy[1, 128](np.float32(2), x, out)
    np.testing.assert_array_equal(out, 2 * x + 1)
    assert hinted_axpy.hints == {"max_registers": 32, "lto": True,
                                 "shared_memory_carveout": "MaxShared", "inline": "always"}


def test_example_numba_saxpy_runs():
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run([sys.executable, str(root / "examples" / "numba_saxpy.py")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "matches numpy" in result.stdout, result.stdout
