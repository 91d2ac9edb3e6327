"""The host side of a GEMM on the cpu device: numpy's matmul (OpenBLAS, all cores) on views
of the operands in place, with CUDA's precision rules (bfloat16 bits, integers exactly, beta = 0
never reading C). Shared by ptxport.blas and the drop-in cuBLAS/cuBLASLt (compat/)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["Epilogue", "gemm_work", "store", "to_float"]

_BF16 = np.dtype("<u2")               # bfloat16 is stored as its 16 bits here
# An epilogue: (the product in the compute type, the operand views) -> the result.
Epilogue = Callable[[np.ndarray, "tuple[np.ndarray, np.ndarray] | None"], np.ndarray]


def to_float(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Elements as `dtype` for computing (bfloat16 bits are the high half of a float32)."""
    if values.dtype == _BF16:
        return (values.astype(np.uint32) << 16).view(np.float32).astype(dtype, copy=False)
    return values.astype(dtype, copy=False)


def _to_bf16(values: np.ndarray) -> np.ndarray:
    """float32 values rounded to nearest even bfloat16 bits; NaN stays a (quiet) NaN."""
    bits = np.ascontiguousarray(values, np.float32).view(np.uint32)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(values), np.uint16(0x7FC0), rounded)


def store(target: np.ndarray, values: np.ndarray) -> None:
    """`values` into `target`, rounded to its type (integers wrap modulo 2**32, as the GPU's
    32-bit integer sums do)."""
    if target.dtype == _BF16:
        target[...] = _to_bf16(values)
    elif target.dtype.kind == "i":
        target[...] = np.asarray(values, np.int64).astype(target.dtype)
    else:
        target[...] = values


def _matmul(views: tuple[np.ndarray, np.ndarray], compute: np.dtype) -> np.ndarray:
    """op(B)^T op(A)^T in `compute` precision; integers exactly (through float64, whose 53
    bits hold any sum of int8 products a GEMM can have)."""
    if compute.kind == "i":
        exact = np.matmul(views[0].astype(np.float64), views[1].astype(np.float64))
        return exact.astype(np.int64)
    return np.matmul(to_float(views[0], compute), to_float(views[1], compute))


def gemm_work(d_t: np.ndarray, c_t: np.ndarray, views: tuple[np.ndarray, np.ndarray] | None,
              read_alpha: Callable[[], object], read_beta: Callable[[], object],
              compute: np.dtype, epilogue: Epilogue | None) -> Callable[[], None]:
    """The work of one GEMM call on transposed views: D^T = alpha B^T A^T + beta C^T, then
    the epilogue (`views` None: k = 0)."""

    def work() -> None:
        alpha, beta = read_alpha(), read_beta()
        if views is None or alpha == 0:
            product = None
        elif alpha == 1 and beta == 0 and epilogue is None and \
                views[0].dtype == views[1].dtype == d_t.dtype == compute:
            np.matmul(*views, out=d_t)   # straight into D: the common case, no temporary
            return
        else:
            product = _matmul(views, compute)
            if alpha != 1:
                product *= compute.type(alpha)
        # With beta = 0, C is not read: NaN or garbage in it must not propagate.
        total = product if product is not None else np.zeros(d_t.shape, compute)
        if beta != 0:
            total = to_float(c_t, compute) * compute.type(beta) + total
        if epilogue is not None:
            total = epilogue(total, views)
        store(d_t, total)

    return work
