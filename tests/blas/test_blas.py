"""ptxport.blas on the cpu device: each routine against numpy in f64, column-major with odd
sizes, every transpose pair, leading dimensions above the rows, alpha/beta 0 and not,
zero batch strides, stream order, and the argument checks."""

from __future__ import annotations

import numpy as np
import pytest

from ptxport import Device, blas
from ptxport.errors import InvalidValueError
from ptxport.runtime.backends import availability

RNG = np.random.default_rng(17)


@pytest.fixture(scope="module")
def stream():
    return Device("cpu").create_stream()


@pytest.fixture(scope="module", params=["cpu", "opencl:0"])
def any_stream(request):
    """A stream of the cpu device, then of opencl:0 (where the routines are the kernels of
    ptxport/blas/kernels/routines.cu)."""
    ok, why = availability(request.param.partition(":")[0])
    if not ok:
        pytest.skip(f"no {request.param} here: {why}")
    return Device(request.param).create_stream()


def _upload(values: np.ndarray, stream):
    flat = np.ascontiguousarray(values).ravel()
    buf = stream.device.allocate(max(flat.nbytes, 1), stream=stream)
    if flat.nbytes:
        buf.copy_from(flat, stream=stream)
    return buf


def _download(buf, dtype, stream) -> np.ndarray:
    out = np.empty(buf.size // np.dtype(dtype).itemsize, dtype)
    buf.copy_to(out, stream=stream)
    stream.sync()
    return out


def _stored(rows: int, cols: int, ld: int, dtype=np.float64) -> np.ndarray:
    """A column-major rows x cols matrix with leading dimension ld, as its flat storage
    (the padding rows hold values too: they must not be read)."""
    return RNG.standard_normal(ld * cols).astype(dtype)


def _as_matrix(flat: np.ndarray, rows: int, cols: int, ld: int, offset: int = 0) -> np.ndarray:
    return flat[offset:offset + ld * cols].reshape(cols, ld).T[:rows].astype(np.float64)


@pytest.mark.parametrize("transa", "NTC")
@pytest.mark.parametrize("transb", "NTC")
def test_gemm_every_transpose_pair(stream, transa, transb):
    m, n, k = 7, 5, 3
    ta, tb = transa != "N", transb != "N"
    ra, ca = (k, m) if ta else (m, k)
    rb, cb = (n, k) if tb else (k, n)
    lda, ldb, ldc = ra + 2, rb + 1, m + 3
    a, b, c = _stored(ra, ca, lda), _stored(rb, cb, ldb), _stored(m, n, ldc)
    op_a = _as_matrix(a, ra, ca, lda)
    op_b = _as_matrix(b, rb, cb, ldb)
    want = c.copy()
    view = want.reshape(n, ldc).T
    view[:m] = 0.5 * (op_a.T if ta else op_a) @ (op_b.T if tb else op_b) - 2 * view[:m]
    buffers = [_upload(x, stream) for x in (a, b, c)]
    blas.gemm(transa, transb, m, n, k, 0.5, buffers[0], lda, buffers[1], ldb, -2.0,
              buffers[2], ldc, stream=stream, dtype="float64")
    np.testing.assert_allclose(_download(buffers[2], np.float64, stream), want, rtol=1e-12)


def test_gemm_beta_zero_does_not_read_c_and_alpha_zero_scales(stream):
    m, n, k = 4, 3, 2
    a, b = _stored(m, k, m, np.float32), _stored(k, n, k, np.float32)
    c = np.full(m * n, np.nan, np.float32)
    ab, bb, cb = (_upload(x, stream) for x in (a, b, c))
    blas.gemm("N", "N", m, n, k, 1.0, ab, m, bb, k, 0.0, cb, m, stream=stream)
    want = _as_matrix(a, m, k, m) @ _as_matrix(b, k, n, k)
    np.testing.assert_allclose(_download(cb, np.float32, stream).reshape(n, m).T, want,
                               rtol=1e-5)
    blas.gemm("N", "N", m, n, k, 0.0, ab, m, bb, k, 3.0, cb, m, stream=stream)
    np.testing.assert_allclose(_download(cb, np.float32, stream).reshape(n, m).T, 3 * want,
                               rtol=1e-5)


def test_strided_batched_with_a_broadcast(stream):
    m, n, k, batch = 5, 4, 6, 3
    a = _stored(m, k, m)                        # one A for every batch (stride 0)
    b = RNG.standard_normal(k * n * batch + 2)
    c = RNG.standard_normal(m * n * batch)
    ab, bb, cb = (_upload(x, stream) for x in (a, b, c))
    blas.gemm_strided_batched("N", "N", m, n, k, 1.0, ab, m, 0, bb, k, k * n + 0, 1.0, cb, m,
                              m * n, batch, stream=stream, dtype="float64")
    got = _download(cb, np.float64, stream)
    for t in range(batch):
        want = _as_matrix(a, m, k, m) @ _as_matrix(b, k, n, k, t * k * n) + \
            _as_matrix(c, m, n, m, t * m * n)
        np.testing.assert_allclose(_as_matrix(got, m, n, m, t * m * n), want, rtol=1e-12)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_inputs_with_float32_output(stream, dtype):
    m, n, k = 9, 6, 5
    a = (RNG.integers(-8, 9, m * k) / 8).astype(np.float32)   # exact in 16 bits
    b = (RNG.integers(-8, 9, k * n) / 8).astype(np.float32)

    def stored(values: np.ndarray) -> np.ndarray:
        if dtype == "float16":
            return values.astype(np.float16)
        return (values.view(np.uint32) >> 16).astype(np.uint16)

    ab, bb = _upload(stored(a), stream), _upload(stored(b), stream)
    cb = _upload(np.zeros(m * n, np.float32), stream)
    blas.gemm("N", "N", m, n, k, 1.0, ab, m, bb, k, 0.0, cb, m, stream=stream, dtype=dtype,
              c_dtype="float32")
    want = a.reshape(k, m).T.astype(np.float64) @ b.reshape(n, k).T
    np.testing.assert_array_equal(_download(cb, np.float32, stream).reshape(n, m).T, want)


def test_matmul_is_row_major_and_in_stream_order(stream):
    m, n, k = 6, 8, 7
    a = RNG.standard_normal((m, k)).astype(np.float32)
    b = RNG.standard_normal((k, n)).astype(np.float32)
    dev = Device("cpu")
    ab, bb = dev.allocate(a.nbytes, stream=stream), dev.allocate(b.nbytes, stream=stream)
    cb = dev.allocate(m * n * 4, stream=stream)
    # the copies are queued, not waited for: the GEMM must run after them
    ab.copy_from(a, stream=stream)
    bb.copy_from(b, stream=stream)
    blas.matmul(ab, bb, cb, m, n, k, stream=stream)
    np.testing.assert_allclose(_download(cb, np.float32, stream).reshape(m, n), a @ b,
                               rtol=1e-5)


@pytest.mark.parametrize("trans", "NT")
def test_gemv_with_strides(any_stream, trans):
    stream = any_stream
    m, n, lda = 7, 4, 9
    a = _stored(m, n, lda)
    lx, ly = (m, n) if trans == "T" else (n, m)
    x, y = RNG.standard_normal(2 * lx), RNG.standard_normal(ly)
    ab, xb, yb = (_upload(v, stream) for v in (a, x, y))
    blas.gemv(trans, m, n, 2.0, ab, lda, xb, 2, 0.5, yb, -1, stream=stream, dtype="float64")
    op_a = _as_matrix(a, m, n, lda)
    op_a = op_a.T if trans == "T" else op_a
    want = (2 * op_a @ x[::2] + 0.5 * y[::-1])[::-1]
    np.testing.assert_allclose(_download(yb, np.float64, stream), want, rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_geam_transposes(any_stream, dtype):
    stream = any_stream
    m, n = 5, 3
    a, b = _stored(n, m, n + 1), _stored(m, n, m)
    a, b = a.astype(dtype), b.astype(dtype)
    c = np.zeros(m * n, dtype)
    ab, bb, cb = (_upload(v, stream) for v in (a, b, c))
    blas.geam("T", "N", m, n, 1.5, ab, n + 1, -1.0, bb, m, cb, m, stream=stream,
              dtype=np.dtype(dtype).name)
    want = 1.5 * _as_matrix(a, n, m, n + 1).T - _as_matrix(b, m, n, m)
    np.testing.assert_allclose(_download(cb, dtype, stream).reshape(n, m).T, want,
                               rtol=1e-6)
    # beta = 0: B is not read (NaN there stays out of C)
    bb.copy_from(np.full(b.size, np.nan, dtype), stream=stream)
    blas.geam("T", "N", m, n, 2.0, ab, n + 1, 0.0, bb, m, cb, m, stream=stream,
              dtype=np.dtype(dtype).name)
    np.testing.assert_allclose(_download(cb, dtype, stream).reshape(n, m).T,
                               2 * _as_matrix(a, n, m, n + 1).T, rtol=1e-6)


def test_level1(any_stream):
    stream = any_stream
    x = np.array([1, -7, 2, 5, -3, 7, 4, 0], np.float32)
    y = np.arange(8, dtype=np.float32)
    xb, yb = _upload(x, stream), _upload(y, stream)
    assert blas.dot(4, xb, 2, yb, 2, stream=stream) == pytest.approx(float(x[::2] @ y[::2]))
    assert blas.nrm2(8, xb, 1, stream=stream) == pytest.approx(float(np.linalg.norm(x)))
    assert blas.asum(4, xb, 2, stream=stream) == pytest.approx(10.0)
    assert blas.iamax(8, xb, 1, stream=stream) == 2    # |-7| first, 1-based
    assert blas.iamax(0, xb, 1, stream=stream) == 0
    assert blas.iamax(4, xb, -2, stream=stream) == 0   # incx < 0: BLAS's quick return
    assert blas.dot(3, xb, -1, yb, 2, stream=stream) == pytest.approx(
        float(x[:3][::-1] @ y[::2][:3]))
    big = RNG.standard_normal(1000)
    bigb = _upload(big, stream)
    assert blas.asum(1000, bigb, 1, stream=stream, dtype="float64") == \
        pytest.approx(np.abs(big).sum(), rel=1e-12)
    assert blas.nrm2(500, bigb, 2, stream=stream, dtype="float64") == \
        pytest.approx(np.linalg.norm(big[::2]), rel=1e-12)
    assert blas.iamax(1000, bigb, 1, stream=stream, dtype="float64") == \
        np.argmax(np.abs(big)) + 1
    blas.axpy(8, 2.0, xb, 1, yb, 1, stream=stream)
    blas.scal(4, -1.0, yb, 2, stream=stream)
    want = y + 2 * x
    want[::2] *= -1
    np.testing.assert_allclose(_download(yb, np.float32, stream), want)


@pytest.mark.parametrize("args, message", [
    (dict(m=-1), "negative size"),
    (dict(lda=3), "lda = 3 is less than the 4 rows"),
    (dict(ldc=2), "ldc = 2 is less than the 4 rows"),
    (dict(transa="X"), "transa = 'X'"),
    (dict(k=100, ldb=100), "needs"),          # B would run past its buffer
])
def test_gemm_argument_checks(stream, args, message):
    dev = Device("cpu")
    buf = dev.allocate(256, stream=stream)
    call = dict(transa="N", transb="N", m=4, n=4, k=4, alpha=1.0, a=buf, lda=4, b=buf, ldb=4,
                beta=0.0, c=buf, ldc=4)
    call.update(args)
    with pytest.raises(InvalidValueError, match=message):
        blas.gemm(**call, stream=stream)


def test_stream_and_buffer_must_match(stream):
    buf = Device("cpu").allocate(64, stream=stream)
    with pytest.raises(InvalidValueError, match="takes a Stream"):
        blas.axpy(1, 1.0, buf, 1, buf, 1, stream=None)
    with pytest.raises(InvalidValueError, match="takes Buffers"):
        blas.axpy(1, 1.0, np.zeros(4), 1, buf, 1, stream=stream)
