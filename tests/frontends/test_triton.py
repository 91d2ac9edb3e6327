"""Triton kernels (tests/frontends/triton_kernels.py) through ptxport as Triton's driver,
on the cpu device and on opencl:0, checked against numpy.

Triton compiles each kernel once per specialization and keeps it in its cache (~/.triton),
so a second run of this file compiles nothing."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

triton = pytest.importorskip("triton", reason="triton is not installed (pip install "
                                              "'ptxport[triton]')")

from triton_kernels import (  # noqa: E402
    add_kernel,
    attention_forward_kernel,
    dropout_kernel,
    layernorm_backward_kernel,
    layernorm_kernel,
    matmul_kernel,
    rand_kernel,
    scale_kernel,
    softmax_kernel,
)

import ptxport.frontends.triton as pt  # noqa: E402
from ptxport import Device, Program  # noqa: E402
from ptxport.codegen.targets.cpu.gang.build import build_gang  # noqa: E402
from ptxport.codegen.targets.cpu.options import CpuOptions  # noqa: E402
from ptxport.errors import ArgumentError  # noqa: E402
from ptxport.runtime.backends import availability  # noqa: E402

_OPENCL, _WHY = availability("opencl")
DEVICES = ["cpu", pytest.param("opencl:0", marks=pytest.mark.skipif(
    not _OPENCL, reason=f"no OpenCL device for SPIR-V: {_WHY}"))]


@pytest.fixture(params=DEVICES)
def device(request):
    dev = Device(request.param)
    pt.activate(dev)
    yield dev
    pt.deactivate()


def _arrays(device, *host):
    return [pt.device_array(a, device) for a in host]


def test_vector_add(device):
    rng = np.random.default_rng(0)
    n = 5000                                   # not a multiple of BLOCK: the mask matters
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    dx, dy, out = _arrays(device, x, y, np.zeros(n, np.float32))
    add_kernel[(triton.cdiv(n, 1024),)](dx, dy, out, n, BLOCK=1024)
    np.testing.assert_array_equal(out.numpy(), x + y)


def test_vector_add_in_place_on_cpu_and_staged_elsewhere(device):
    """A torch-less caller's numpy arrays: wrapped in place on the cpu device; a host array
    without data_ptr() is refused by Triton's own specializer, so device_array() it is."""
    n = 300
    x = np.arange(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    dout = pt.device_array(out, device)
    add_kernel[(1,)](*_arrays(device, x, x), dout, n, BLOCK=512)
    if device.backend == "cpu":
        np.testing.assert_array_equal(out, 2 * x)      # written in place
    np.testing.assert_array_equal(dout.numpy(), 2 * x)
    with pytest.raises(TypeError, match="ndarray"):
        add_kernel[(1,)](x, x, out, n, BLOCK=512)


@pytest.mark.skipif(not _OPENCL, reason=f"no OpenCL device for SPIR-V: {_WHY}")
def test_an_array_of_another_device_is_refused():
    x = pt.device_array(np.zeros(4, np.float32), Device("cpu"))
    pt.activate(Device("opencl:0"))
    try:
        with pytest.raises(ArgumentError,
                           match="argument x_ptr is on cpu:0 but the launch is on opencl:0"):
            add_kernel[(1,)](x, x, x, 4, BLOCK=512)
    finally:
        pt.deactivate()


def test_a_cooperative_launch_runs_on_the_cpu_within_its_workers():
    from ptxport.errors import CooperativeLaunchTooLargeError
    from ptxport.runtime.backends.cpu.executor import worker_count

    pt.activate(Device("cpu"))
    try:
        x = pt.device_array(np.arange(4, dtype=np.float32))
        out = pt.device_array(np.zeros(4, np.float32))
        add_kernel[(1,)](x, x, out, 4, BLOCK=128, launch_cooperative_grid=True)
        np.testing.assert_array_equal(out.numpy(), 2 * np.arange(4, dtype=np.float32))
        with pytest.raises(CooperativeLaunchTooLargeError, match="cooperative"):
            add_kernel[(worker_count() + 1,)](x, x, out, 4, BLOCK=128,
                                              launch_cooperative_grid=True)
    finally:
        pt.deactivate()


def test_vector_add_runs_as_warp_gangs_with_whole_vector_accesses():
    """Triton's vector add (n a multiple of 16: four contiguous floats per thread, predicated
    ld/st.global.v4.b32 from inline asm) runs on the cpu device as warp gangs, not thread by
    thread, and each warp's .v4 access is one masked access of its 128 elements, not four
    gathers (codegen/targets/cpu/gang/memory.py)."""
    dev = Device("cpu")
    pt.activate(dev)
    try:
        n = 1 << 14
        x, y = np.arange(n, dtype=np.float32), np.full(n, 0.5, np.float32)
        dx, dy, out = _arrays(dev, x, y, np.zeros(n, np.float32))
        compiled = add_kernel[(triton.cdiv(n, 1024),)](dx, dy, out, n, BLOCK=1024)
        np.testing.assert_array_equal(out.numpy(), x + y)
    finally:
        pt.deactivate()
    ptx = compiled.asm["ptx"]
    assert "ld.global.v4.b32" in ptx and "st.global.v4.b32" in ptx
    program = Program(ptx, code_type="ptx").compile("native")
    assert program.get_kernel("add_kernel")._binary(dev).gang_refusal is None
    llmod, _ = build_gang(program.module, "add_kernel", (compiled.metadata.num_warps * 32, 1, 1),
                          CpuOptions())
    text = str(llmod)
    assert "llvm.masked.load.v128i32" in text and "llvm.masked.store.v128i32" in text


def test_a_large_grid_runs_on_the_launching_thread(monkeypatch):
    """A Triton launch returns once the kernel ran, so a grid of any size runs on the
    launching thread (runtime/launch.py's launch_now) instead of being handed to the
    stream's thread and waited for (two hand-overs between threads a launch)."""
    dev = Device("cpu")
    pt.activate(dev)
    try:
        n = 1 << 19        # 512 blocks of 128 threads: more than launch() runs at once
        x, y = np.arange(n, dtype=np.float32), np.full(n, 2, np.float32)
        dx, dy, out = _arrays(dev, x, y, np.zeros(n, np.float32))
        add_kernel[(n // 1024,)](dx, dy, out, n, BLOCK=1024)       # (compiles: queued)
        stream = dev.default_stream
        queued = []
        monkeypatch.setattr(stream, "_submit", lambda *a, **k: queued.append(a))
        out.numpy()[:] = 0
        add_kernel[(n // 1024,)](dx, dy, out, n, BLOCK=1024)
        assert not queued
        np.testing.assert_array_equal(out.numpy(), x + y)
    finally:
        pt.deactivate()


def _softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_fused_softmax(device):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((37, 200), dtype=np.float32)
    dx, out = _arrays(device, x, np.zeros_like(x))
    softmax_kernel[(16,)](out, dx, x.shape[1], x.shape[1], x.shape[0], x.shape[1], BLOCK=256,
                          num_warps=4)
    np.testing.assert_allclose(out.numpy(), _softmax(x), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_matmul_with_tl_dot(device, dtype):
    """tl.dot lowers to ldmatrix + mma.sync on sm_80 (f16 inputs) and FMA loops for f32 in
    IEEE mode."""
    rng = np.random.default_rng(2)
    m, n, k = 32, 32, 48
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    da, db, dc = _arrays(device, a, b, np.zeros((m, n), np.float32))

    def run():
        matmul_kernel[(triton.cdiv(m, 16), triton.cdiv(n, 16))](
            da, db, dc, m, n, k, k, 1, n, 1, n, 1, BLOCK_M=16, BLOCK_N=16, BLOCK_K=16,
            num_warps=1)

    # on opencl:0, the f16 form's ldmatrix and mma.sync run as sub-group shuffles and FMAs
    run()
    expected = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(dc.numpy(), expected, rtol=1e-4, atol=1e-4)


# 96-64-96 and 80-48-80: one kernel (Triton specializes sizes and strides on divisibility by
# 16), so one compile: whole tiles, then partial ones in every dimension. 70-45-83 (strides
# not multiples of 16: element-wise cp.async and loads) is another kernel, 55 s of LLVM in a
# fresh CI: `pytest -m slow`.
@pytest.mark.parametrize("m, n, k", [(96, 64, 96), (80, 48, 80),
                                     pytest.param(70, 45, 83, marks=pytest.mark.slow)])
def test_f32_matmul_in_the_benchmarks_tiles_on_the_cpu(m, n, k):
    """The f32 IEEE matmul as benchmarks/python_kernels.py launches it (32x32x32 tiles, 4
    warps: an FMA loop over cp.async tiles in shared memory, read through windows), whole
    tiles and partial ones in every dimension (the pipeline's zero-filled copies past K)."""
    device = Device("cpu")
    pt.activate(device)
    try:
        rng = np.random.default_rng(11)
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        da, db, dc = _arrays(device, a, b, np.zeros((m, n), np.float32))
        matmul_kernel[(triton.cdiv(m, 32), triton.cdiv(n, 32))](
            da, db, dc, m, n, k, k, 1, n, 1, n, 1, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32,
            num_warps=4)
        np.testing.assert_allclose(dc.numpy(), a.astype(np.float64) @ b, rtol=1e-4,
                                   atol=1e-4)
    finally:
        pt.deactivate()


class _Storage:
    def __init__(self, array):
        self._array = array

    def data_ptr(self):
        return self._array.ctypes.data

    def nbytes(self):
        return self._array.nbytes


class _HostTensor:
    """What Triton and the driver see of a torch CPU tensor: data_ptr(), dtype and its
    storage (here a strided numpy view and the array it views)."""

    def __init__(self, view, base):
        self._view, self._base, self.dtype = view, base, view.dtype

    def data_ptr(self):
        return self._view.__array_interface__["data"][0]

    def untyped_storage(self):
        return _Storage(self._base)


def test_strided_host_tensors_on_the_cpu():
    """A transposed view passed with its strides, as Triton code passes torch tensors: the
    driver registers the whole storage, so the kernel's accesses are checked against it."""
    pt.activate(Device("cpu"))
    try:
        rng = np.random.default_rng(7)
        m = n = k = 32
        a = rng.standard_normal((m, k)).astype(np.float32)
        bt = rng.standard_normal((n, k)).astype(np.float32)     # b = bt.T, not contiguous
        c = np.zeros((m, n), np.float32)
        tensors = [_HostTensor(v, base) for v, base in ((a, a), (bt.T, bt), (c, c))]
        matmul_kernel[(2, 2)](*tensors, m, n, k, k, 1, 1, k, n, 1, BLOCK_M=16,
                              BLOCK_N=16, BLOCK_K=16, num_warps=1)
        np.testing.assert_allclose(c, a.astype(np.float64) @ bt.T, rtol=1e-4, atol=1e-4)
    finally:
        pt.deactivate()


def test_layernorm_forward(device):
    rng = np.random.default_rng(3)
    rows, cols = 6, 300                        # cols > BLOCK: the loops run twice
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    w = rng.standard_normal(cols, dtype=np.float32)
    b = rng.standard_normal(cols, dtype=np.float32)
    dx, dy, dw, db, dmean, drstd = _arrays(
        device, x, np.zeros_like(x), w, b, np.zeros(rows, np.float32),
        np.zeros(rows, np.float32))
    layernorm_kernel[(rows,)](dx, dy, dw, db, dmean, drstd, cols, cols, 1e-5, BLOCK=256)
    mean = x.mean(axis=1)
    rstd = 1 / np.sqrt(x.var(axis=1) + 1e-5)
    np.testing.assert_allclose(dmean.numpy(), mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(drstd.numpy(), rstd, rtol=1e-5)
    expected = (x - mean[:, None]) * rstd[:, None] * w + b
    np.testing.assert_allclose(dy.numpy(), expected, rtol=1e-4, atol=1e-5)


def test_layernorm_backward_with_atomics(device):
    rng = np.random.default_rng(5)
    rows, cols = 8, 100
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    dy = rng.standard_normal((rows, cols), dtype=np.float32)
    w = rng.standard_normal(cols, dtype=np.float32)
    mean = x.mean(axis=1, dtype=np.float32)
    rstd = (1 / np.sqrt(x.var(axis=1) + 1e-5)).astype(np.float32)
    arrays = _arrays(device, dy, x, w, mean, rstd, np.zeros_like(x),
                     np.zeros(cols, np.float32), np.zeros(cols, np.float32))
    layernorm_backward_kernel[(rows,)](*arrays, cols, cols, BLOCK=128)
    xhat = (x - mean[:, None]) * rstd[:, None]
    wdy = w * dy
    dx = (wdy - (xhat * (xhat * wdy).mean(axis=1, keepdims=True)
                 + wdy.mean(axis=1, keepdims=True))) * rstd[:, None]
    np.testing.assert_allclose(arrays[5].numpy(), dx, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(arrays[6].numpy(), (dy * xhat).sum(axis=0), rtol=1e-4,
                               atol=1e-5)
    np.testing.assert_allclose(arrays[7].numpy(), dy.sum(axis=0), rtol=1e-5, atol=1e-5)


# On opencl:0 this kernel runs too, but Intel's OpenCL CPU runtime took 70-80 s to finalize
# its SPIR-V at the first launch (measured 2026-11-25), over this file's time budget.
@pytest.mark.parametrize("device", ["cpu"], indirect=True)
def test_flash_attention_forward(device):
    rng = np.random.default_rng(6)
    seq, head = 40, 16                      # not a multiple of the 16-key blocks
    q, k, v = (rng.standard_normal((seq, head), dtype=np.float32) for _ in range(3))
    dq, dk, dv, out = _arrays(device, q, k, v, np.zeros_like(q))
    scale = 1 / np.sqrt(head)
    attention_forward_kernel[(triton.cdiv(seq, 16),)](dq, dk, dv, out, seq, scale, HEAD=head,
                                                      BLOCK_M=16, BLOCK_N=16, num_warps=1)
    s = (q.astype(np.float64) @ k.T.astype(np.float64)) * scale
    p = np.exp(s - s.max(axis=1, keepdims=True))
    expected = (p / p.sum(axis=1, keepdims=True)) @ v
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-4, atol=1e-5)


def _philox_uniform(seed: int, offsets: np.ndarray) -> np.ndarray:
    """tl.rand(seed, offsets) in numpy: 10 rounds of Philox 4x32 (triton/language/random.py)
    on (offset, 0, 0, 0) with the key (seed's low, high words), first word as a float."""
    m = 0xFFFFFFFF
    c0, c1, c2, c3 = offsets.astype(np.uint64), *(np.zeros(len(offsets), np.uint64),) * 3
    k0, k1 = np.uint64(seed & m), np.uint64(seed >> 32 & m)
    for _ in range(10):
        p0, p2 = np.uint64(0xD2511F53) * c0, np.uint64(0xCD9E8D57) * c2
        c0, c2, c1, c3 = ((p2 >> np.uint64(32)) ^ c1 ^ k0, (p0 >> np.uint64(32)) ^ c3 ^ k1,
                          p2 & np.uint64(m), p0 & np.uint64(m))
        k0, k1 = (k0 + np.uint64(0x9E3779B9)) & np.uint64(m), \
            (k1 + np.uint64(0xBB67AE85)) & np.uint64(m)
    x = c0.astype(np.uint32).view(np.int32)
    x = np.where(x < 0, ~x, x)
    return x.astype(np.float32) * np.float32(4.6566127342e-10)   # int -> f32, then f32 mul


def test_tl_rand_is_philox(device):
    n = 1000
    out = pt.device_array(np.zeros(n, np.float32), device)
    rand_kernel[(triton.cdiv(n, 256),)](out, n, 1234, BLOCK=256)
    np.testing.assert_array_equal(out.numpy(), _philox_uniform(1234, np.arange(n)))


def test_dropout(device):
    rng = np.random.default_rng(4)
    n, p = 2048, 0.25
    x = rng.random(n, dtype=np.float32) + 1
    dx, out = _arrays(device, x, np.zeros_like(x))
    dropout_kernel[(triton.cdiv(n, 512),)](dx, out, n, p, 7, BLOCK=512)
    keep = _philox_uniform(7, np.arange(n)) > p
    np.testing.assert_allclose(out.numpy(), np.where(keep, x / np.float32(1 - p), 0),
                               rtol=1e-6)


def test_autotune_picks_a_config_and_caches_it(device):
    n = 1000
    x = np.arange(n, dtype=np.float32)
    dx, out = _arrays(device, x, np.zeros_like(x))
    scale_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](dx, out, n, 3.0)
    np.testing.assert_array_equal(out.numpy(), 3 * x)
    assert scale_kernel.best_config.kwargs["BLOCK"] in (128, 256)
    assert len(scale_kernel.cache) >= 1


def test_torch_cpu_tensors(device):
    torch = pytest.importorskip("torch", reason="torch is not installed (optional)")
    x = torch.arange(100, dtype=torch.float32)
    out = torch.zeros(100)
    add_kernel[(1,)](x, x, out, 100, BLOCK=128)
    assert torch.equal(out, 2 * x)       # in place on the cpu; copied back from elsewhere
    if device.backend == "cpu":          # a strided view (staging needs contiguous tensors)
        a, bt = torch.randn(32, 32), torch.randn(32, 32)
        c = torch.zeros(32, 32)
        b = bt.t()
        matmul_kernel[(2, 2)](a, b, c, 32, 32, 32, *a.stride(), *b.stride(), *c.stride(),
                              BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, num_warps=1)
        torch.testing.assert_close(c, a @ b, rtol=1e-4, atol=1e-4)


def test_example_triton_softmax_runs():
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run([sys.executable, str(root / "examples" / "triton_softmax.py")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "matches numpy" in result.stdout, result.stdout
