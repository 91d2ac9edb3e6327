"""cuBLAS's operations on Buffers, from Python: the routines of ptxport's drop-in libcublas
(ptxport.compat) for users of the runtime API.

Each routine queues its work on `stream` in order with the stream's kernels and copies, and
follows cuBLAS's definitions: matrices are column-major with a leading dimension (element
(i, j) at i + j*ld), `trans` is "N", "T" or "C" (C is T for real data), batch strides may be 0
(one matrix for every batch), with beta = 0 the output is not read, and bad arguments
(negative sizes, ld less than the rows stored, zero increments) raise InvalidValueError
before anything is queued. `matmul` is the row-major convenience most Python code wants.

Where the work runs: on the cpu device, a device buffer is host memory and the routines run
numpy's BLAS (OpenBLAS, multi-threaded) on views of it, without copies, through the same GEMM
core as the drop-in library (ptxport.compat.cublas_gemm); on GPU devices (cuda, hip,
opencl), GEMMs run ptxport's portable GEMM kernels (ptxport.blas.portable: CUDA C++ in this
package, compiled by ptxport for the device, tile shapes tuned per device) and the other
routines the kernels of ptxport.blas.routines (float32 and float64; nrm2 of float32 sums its
squares in float32 there).
"""

from __future__ import annotations

import operator
from collections.abc import Callable

import numpy as np

from ptxport.blas import routines
from ptxport.blas.host import gemm_work
from ptxport.errors import InvalidValueError
from ptxport.runtime.memory import Buffer
from ptxport.runtime.stream import Stream

__all__ = ["asum", "axpy", "dot", "geam", "gemm", "gemm_strided_batched", "gemv", "iamax",
           "matmul", "nrm2", "scal"]

_BF16 = np.dtype("<u2")   # bfloat16 is stored as its 16 bits
_DTYPES = {"float32": np.dtype(np.float32), "float64": np.dtype(np.float64),
           "float16": np.dtype(np.float16), "bfloat16": _BF16}
_OPS = {"N": False, "T": True, "C": True}


def _dtype(dtype: object, what: str = "dtype") -> np.dtype:
    name = "bfloat16" if dtype == "bfloat16" else np.dtype(dtype).name
    if name not in _DTYPES:
        raise InvalidValueError(f"{what} {dtype!r} is not one of {', '.join(_DTYPES)}")
    return _DTYPES[name]


def _compute(dtype: np.dtype) -> np.dtype:
    """The precision a routine computes in: f64 for f64 data, f32 otherwise (cuBLAS's 32F
    compute type for 16-bit data)."""
    return np.dtype(np.float64) if dtype == np.float64 else np.dtype(np.float32)


def _op(name: str, op: object) -> bool:
    if op not in _OPS:
        raise InvalidValueError(f"{name} = {op!r} is not 'N', 'T' or 'C'")
    return _OPS[op]


def _ints(**values: object) -> dict[str, int]:
    try:
        return {k: operator.index(v) for k, v in values.items()}
    except TypeError:
        bad = next(k for k, v in values.items() if not hasattr(v, "__index__"))
        raise InvalidValueError(f"{bad} must be an int, not {type(values[bad]).__name__}") \
            from None


def _stream_of(stream: object, *buffers: Buffer) -> Stream:
    if not isinstance(stream, Stream):
        raise InvalidValueError(f"stream= takes a Stream (Device.create_stream()), not "
                                f"{type(stream).__name__}")
    for buf in buffers:
        if not isinstance(buf, Buffer):
            raise InvalidValueError(f"ptxport.blas takes Buffers, not {type(buf).__name__}")
        if buf.device is not stream.device:
            raise InvalidValueError(f"a buffer on {buf.device} used with a stream of "
                                    f"{stream.device}")
    return stream


def _on_cpu(stream: Stream) -> bool:
    return stream.device.backend == "cpu"


def _elements(buf: Buffer, dtype: np.dtype, count: int, what: str) -> np.ndarray:
    """The first `count` elements of `buf` as a flat writable view (cpu device)."""
    if count * dtype.itemsize > buf.size:
        raise InvalidValueError(f"{what} needs {count} elements of {dtype.name} "
                                f"({count * dtype.itemsize} bytes); its buffer has {buf.size}")
    return np.frombuffer(buf._host_view(), dtype, count)


def _strided(buf: Buffer, dtype: np.dtype, shape: tuple[int, ...], steps: tuple[int, ...],
             what: str) -> np.ndarray:
    """The view of `buf` with `shape` and element `steps` (cpu device)."""
    if 0 in shape:
        return np.empty(shape, dtype)
    count = 1 + sum((n - 1) * s for n, s in zip(shape, steps, strict=True))
    flat = _elements(buf, dtype, count, what)
    return np.lib.stride_tricks.as_strided(flat, shape, [s * dtype.itemsize for s in steps])


def _submit(stream: Stream, work: Callable[[], None], what: str) -> None:
    stream._submit(work, what=f"ptxport.blas.{what}")


# -- Level 3 ----------------------------------------------------------------------------------

def _check_gemm(ta: bool, tb: bool, m: int, n: int, k: int, lda: int, ldb: int, ldc: int,
                batch: int) -> None:
    if min(m, n, k, batch) < 0:
        raise InvalidValueError(f"negative size: m={m} n={n} k={k} batch={batch}")
    for name, ld, rows in (("lda", lda, k if ta else m), ("ldb", ldb, n if tb else k),
                           ("ldc", ldc, m)):
        if ld < max(1, rows):
            raise InvalidValueError(f"{name} = {ld} is less than the {rows} rows of the "
                                    "matrix as stored")


def gemm(transa: str, transb: str, m: int, n: int, k: int, alpha: float, a: Buffer, lda: int,
         b: Buffer, ldb: int, beta: float, c: Buffer, ldc: int, *, stream: Stream,
         dtype: object = "float32", c_dtype: object | None = None) -> None:
    """C = alpha op(A) op(B) + beta C, column-major, as cublasGemmEx.

    Parameters
    ----------
    transa, transb : {"N", "T", "C"}
        op(A) is A or its transpose; A is stored m x k ("N") or k x m.
    m, n, k : int
        op(A) is m x k, op(B) k x n, C m x n.
    alpha, beta : float
        Scalars; with beta = 0, C is not read.
    a, b, c : Buffer
        The matrices, column-major, leading dimensions lda, ldb, ldc (in elements).
    stream : Stream
        Where the work is queued.
    dtype : {"float32", "float64", "float16", "bfloat16"}
        The element type of A and B (and of C unless `c_dtype` says otherwise: "float32" for
        16-bit inputs). 16-bit data are computed in FP32, rounded once when stored.
    """
    gemm_strided_batched(transa, transb, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc,
                         0, 1, stream=stream, dtype=dtype, c_dtype=c_dtype)


def gemm_strided_batched(transa: str, transb: str, m: int, n: int, k: int, alpha: float,
                         a: Buffer, lda: int, stride_a: int, b: Buffer, ldb: int,
                         stride_b: int, beta: float, c: Buffer, ldc: int, stride_c: int,
                         batch: int, *, stream: Stream, dtype: object = "float32",
                         c_dtype: object | None = None) -> None:
    """`batch` GEMMs (see gemm), matrix i of A at element i * stride_a (0: the same matrix
    for every batch), likewise B and C, as cublasGemmStridedBatchedEx."""
    stream = _stream_of(stream, a, b, c)
    ta, tb = _op("transa", transa), _op("transb", transb)
    sizes = _ints(m=m, n=n, k=k, lda=lda, ldb=ldb, ldc=ldc, batch=batch, stride_a=stride_a,
                  stride_b=stride_b, stride_c=stride_c)
    m, n, k, batch = sizes["m"], sizes["n"], sizes["k"], sizes["batch"]
    _check_gemm(ta, tb, m, n, k, sizes["lda"], sizes["ldb"], sizes["ldc"], batch)
    in_type = _dtype(dtype)
    out_type = in_type if c_dtype is None else _dtype(c_dtype, "c_dtype")
    if m == 0 or n == 0 or batch == 0:
        return
    problem = _Gemm(ta, tb, m, n, k, (sizes["lda"], sizes["ldb"], sizes["ldc"]),
                    (sizes["stride_a"], sizes["stride_b"], sizes["stride_c"]), batch)
    if _on_cpu(stream):
        _submit(stream, problem.host_work(a, b, c, in_type, out_type, alpha, beta), "gemm")
        return
    from ptxport.blas import portable

    portable.gemm(stream, problem, a, b, c, in_type, out_type, alpha, beta)


class _Gemm:
    """A checked GEMM problem: transposes, sizes, leading dimensions and batch strides."""

    def __init__(self, ta: bool, tb: bool, m: int, n: int, k: int, lds: tuple[int, int, int],
                 strides: tuple[int, int, int], batch: int):
        self.ta, self.tb, self.m, self.n, self.k = ta, tb, m, n, k
        self.lds, self.strides, self.batch = lds, strides, batch

    def _transposed(self, buf: Buffer, dtype: np.dtype, which: int, rows: int, cols: int,
                    what: str) -> np.ndarray:
        """The stored rows x cols matrices of operand `which`, transposed: (batch, cols,
        rows), a row-major view."""
        return _strided(buf, dtype, (self.batch, cols, rows),
                        (self.strides[which], self.lds[which], 1), what)

    def host_work(self, a: Buffer, b: Buffer, c: Buffer, in_type: np.dtype,
                  out_type: np.dtype, alpha: float, beta: float) -> Callable[[], None]:
        m, n, k = self.m, self.n, self.k
        c_t = self._transposed(c, out_type, 2, m, n, "C")
        views = None
        if k:
            a_t = self._transposed(a, in_type, 0, *((k, m) if self.ta else (m, k)), "A")
            b_t = self._transposed(b, in_type, 1, *((n, k) if self.tb else (k, n)), "B")
            views = (b_t.swapaxes(1, 2) if self.tb else b_t,
                     a_t.swapaxes(1, 2) if self.ta else a_t)
        # (the views keep the buffers' host memory alive as long as the queued work)
        return gemm_work(c_t, c_t, views, lambda: alpha, lambda: beta, _compute(in_type), None)


def matmul(a: Buffer, b: Buffer, c: Buffer, m: int, n: int, k: int, *, stream: Stream,
           dtype: object = "float32", alpha: float = 1.0, beta: float = 0.0) -> None:
    """C = alpha A @ B + beta C for row-major, contiguous A (m x k), B (k x n) and C (m x n):
    the column-major GEMM C^T = B^T A^T, which reads the same memory."""
    gemm("N", "N", n, m, k, alpha, b, n, a, k, beta, c, n, stream=stream, dtype=dtype)


# -- Level 2 and geam -------------------------------------------------------------------------

def _matrix(buf: Buffer, dtype: np.dtype, rows: int, cols: int, ld: int, what: str) \
        -> np.ndarray:
    return _strided(buf, dtype, (rows, cols), (1, ld), what)


def _vector(buf: Buffer, dtype: np.dtype, n: int, inc: int, what: str) -> np.ndarray:
    """BLAS's vector: n elements |inc| apart, backwards for inc < 0."""
    view = _strided(buf, dtype, (n,), (abs(inc),), what)
    return view[::-1] if inc < 0 else view


def _fits(buf: Buffer, dtype: np.dtype, shape: tuple[int, ...], steps: tuple[int, ...],
          what: str) -> Buffer:
    """`buf`, checked to hold the elements of `shape` and `steps` (GPU devices, where the
    kernels read it: ptxport.blas.routines)."""
    if 0 not in shape:
        count = 1 + sum((n - 1) * abs(s) for n, s in zip(shape, steps, strict=True))
        if count * dtype.itemsize > buf.size:
            raise InvalidValueError(f"{what} needs {count} elements of {dtype.name} "
                                    f"({count * dtype.itemsize} bytes); its buffer has "
                                    f"{buf.size}")
    return buf


def _scalar(dtype: np.dtype, value: float) -> tuple[np.generic, np.uint64]:
    return dtype.type(value), np.uint64(0)


def gemv(trans: str, m: int, n: int, alpha: float, a: Buffer, lda: int, x: Buffer, incx: int,
         beta: float, y: Buffer, incy: int, *, stream: Stream,
         dtype: object = "float32") -> None:
    """y = alpha op(A) x + beta y, A m x n column-major, as cublas<t>gemv (m or n 0: y is
    left as it is; with beta = 0, y is not read)."""
    stream = _stream_of(stream, a, x, y)
    t = _op("trans", trans)
    s = _ints(m=m, n=n, lda=lda, incx=incx, incy=incy)
    if s["m"] < 0 or s["n"] < 0 or s["lda"] < max(1, s["m"]) or not s["incx"] or \
            not s["incy"]:
        raise InvalidValueError(f"gemv: m={m} n={n} lda={lda} incx={incx} incy={incy}: sizes "
                                "must be >= 0, lda >= max(1, m), increments not 0")
    if s["m"] == 0 or s["n"] == 0:
        return
    dt = _dtype(dtype)
    if not _on_cpu(stream):
        lx, ly = (s["m"], s["n"]) if t else (s["n"], s["m"])
        routines.gemv(stream, dt, t, s["m"], s["n"], _scalar(dt, alpha),
                      _fits(a, dt, (s["m"], s["n"]), (1, s["lda"]), "A"), s["lda"],
                      _fits(x, dt, (lx,), (s["incx"],), "x"), s["incx"], _scalar(dt, beta),
                      _fits(y, dt, (ly,), (s["incy"],), "y"), s["incy"])
        return
    matrix = _matrix(a, dt, s["m"], s["n"], s["lda"], "A")
    op_a = matrix.T if t else matrix
    xs = _vector(x, dt, op_a.shape[1], s["incx"], "x")
    ys = _vector(y, dt, op_a.shape[0], s["incy"], "y")

    def work() -> None:
        total = op_a @ xs * dt.type(alpha) if alpha != 0 else np.zeros(ys.shape, dt)
        ys[...] = total + ys * dt.type(beta) if beta != 0 else total

    _submit(stream, work, "gemv")


def geam(transa: str, transb: str, m: int, n: int, alpha: float, a: Buffer, lda: int,
         beta: float, b: Buffer, ldb: int, c: Buffer, ldc: int, *, stream: Stream,
         dtype: object = "float32") -> None:
    """C = alpha op(A) + beta op(B), C m x n column-major, as cublas<t>geam (a term whose
    scalar is 0 is not read)."""
    stream = _stream_of(stream, a, b, c)
    ta, tb = _op("transa", transa), _op("transb", transb)
    s = _ints(m=m, n=n, lda=lda, ldb=ldb, ldc=ldc)
    m, n = s["m"], s["n"]
    if m < 0 or n < 0:
        raise InvalidValueError(f"negative size: m={m} n={n}")
    for name, rows in (("lda", n if ta else m), ("ldb", n if tb else m), ("ldc", m)):
        if s[name] < max(1, rows):
            raise InvalidValueError(f"{name} = {s[name]} is less than the {rows} rows of the "
                                    "matrix as stored")
    if m == 0 or n == 0:
        return
    dt = _dtype(dtype)
    if not _on_cpu(stream):
        shape_a, shape_b = ((n, m) if ta else (m, n)), ((n, m) if tb else (m, n))
        routines.geam(stream, dt, ta, tb, m, n, _scalar(dt, alpha),
                      _fits(a, dt, shape_a, (1, s["lda"]), "A"), s["lda"], _scalar(dt, beta),
                      _fits(b, dt, shape_b, (1, s["ldb"]), "B"), s["ldb"],
                      _fits(c, dt, (m, n), (1, s["ldc"]), "C"), s["ldc"])
        return
    out = _matrix(c, dt, m, n, s["ldc"], "C")

    def term(buf: Buffer, t: bool, ld: int, what: str) -> np.ndarray:
        view = _matrix(buf, dt, *((n, m) if t else (m, n)), ld, what)
        return view.T if t else view

    def work() -> None:
        total = np.zeros((m, n), dt)
        if alpha != 0:
            total = term(a, ta, s["lda"], "A") * dt.type(alpha)
        if beta != 0:
            total = total + term(b, tb, s["ldb"], "B") * dt.type(beta)
        out[...] = total

    _submit(stream, work, "geam")


# -- Level 1 ----------------------------------------------------------------------------------

def _level1(stream: Stream, what: str, n: int, *buffers: Buffer) -> int:
    _stream_of(stream, *buffers)
    return _ints(n=n)["n"]


def axpy(n: int, alpha: float, x: Buffer, incx: int, y: Buffer, incy: int, *,
         stream: Stream, dtype: object = "float32") -> None:
    """y = alpha x + y (n <= 0: nothing), as cublas<t>axpy."""
    n = _level1(stream, "axpy", n, x, y)
    if n <= 0:
        return
    dt = _dtype(dtype)
    if not _on_cpu(stream):
        routines.axpy(stream, dt, n, _scalar(dt, alpha), _fits(x, dt, (n,), (incx,), "x"),
                      incx, _fits(y, dt, (n,), (incy,), "y"), incy)
        return
    xs, ys = _vector(x, dt, n, incx, "x"), _vector(y, dt, n, incy, "y")
    _submit(stream, lambda: np.add(ys, dt.type(alpha) * xs, out=ys), "axpy")


def scal(n: int, alpha: float, x: Buffer, incx: int, *, stream: Stream,
         dtype: object = "float32") -> None:
    """x = alpha x (n <= 0 or incx <= 0: nothing), as cublas<t>scal."""
    n = _level1(stream, "scal", n, x)
    if n <= 0 or incx <= 0:
        return
    dt = _dtype(dtype)
    if not _on_cpu(stream):
        routines.scal(stream, dt, n, _scalar(dt, alpha), _fits(x, dt, (n,), (incx,), "x"),
                      incx)
        return
    xs = _vector(x, dt, n, incx, "x")
    _submit(stream, lambda: np.multiply(xs, dt.type(alpha), out=xs), "scal")


def _reduce(stream: Stream, what: str, compute: Callable[[], object]) -> object:
    """Queue a reduction and wait for its value (cuBLAS's host pointer mode)."""
    cell: list[object] = []
    _submit(stream, lambda: cell.append(compute()), what)
    stream.sync()
    return cell[0]


def dot(n: int, x: Buffer, incx: int, y: Buffer, incy: int, *, stream: Stream,
        dtype: object = "float32") -> float:
    """The dot product of x and y (0 for n <= 0), once the stream's earlier work is done."""
    n = _level1(stream, "dot", n, x, y)
    if n <= 0:
        return 0.0
    dt = _dtype(dtype)
    if not _on_cpu(stream):
        return float(routines.reduce_to_host(stream, "dot", dt, n,
                                             _fits(x, dt, (n,), (incx,), "x"), incx,
                                             _fits(y, dt, (n,), (incy,), "y"), incy))
    xs, ys = _vector(x, dt, n, incx, "x"), _vector(y, dt, n, incy, "y")
    return float(_reduce(stream, "dot", lambda: np.dot(xs, ys)))


def _one_vector(name: str, n: int, x: Buffer, incx: int, stream: Stream, dtype: object,
                on_host: Callable[[np.ndarray], object]) -> object | None:
    """A reduction of one vector (nrm2, asum, iamax): None for n <= 0 or incx <= 0 (the
    caller's zero), else the routine's kernel on GPU devices, `on_host(x)` on the cpu."""
    n = _level1(stream, name, n, x)
    if n <= 0 or incx <= 0:
        return None
    dt = _dtype(dtype)
    if not _on_cpu(stream):
        return routines.reduce_to_host(stream, name, dt, n, _fits(x, dt, (n,), (incx,), "x"),
                                       incx)
    xs = _vector(x, dt, n, incx, "x")
    return _reduce(stream, name, lambda: on_host(xs))


def nrm2(n: int, x: Buffer, incx: int, *, stream: Stream, dtype: object = "float32") -> float:
    """The Euclidean norm of x (0 for n <= 0 or incx <= 0), squares summed in double."""
    result = _one_vector("nrm2", n, x, incx, stream, dtype,
                         lambda xs: np.sqrt(np.sum(np.square(xs, dtype=np.float64))))
    return 0.0 if result is None else float(result)


def asum(n: int, x: Buffer, incx: int, *, stream: Stream, dtype: object = "float32") -> float:
    """The sum of |x_i| (0 for n <= 0 or incx <= 0)."""
    result = _one_vector("asum", n, x, incx, stream, dtype,
                         lambda xs: np.sum(np.abs(xs), dtype=np.float64))
    return 0.0 if result is None else float(result)


def iamax(n: int, x: Buffer, incx: int, *, stream: Stream, dtype: object = "float32") -> int:
    """The 1-based index of the first element of largest magnitude (0 for n <= 0 or
    incx <= 0), as cublasI<t>amax."""
    result = _one_vector("iamax", n, x, incx, stream, dtype,
                         lambda xs: int(np.argmax(np.abs(xs))) + 1)
    return 0 if result is None else int(result)
