"""cuBLASLt's handlers: matmul descriptors, matrix layouts, preferences, the algorithm
heuristic and cublasLtMatmul, D = epilogue(alpha op(A) op(B) + beta C), on the GEMM core of
cublas_gemm.py (the same views of device memory, the same stream order).

Descriptors and layouts are Python objects behind opaque handles (state.handle). Epilogues
are cublaslt_epilogue.py's. On the cpu device the matmul is numpy's (cublas_gemm.py); on GPU
devices, cublaslt_gpu.py's kernels. Attributes that change what is computed and are not implemented
here (scale pointers, ReLU bit masks, orders other than column- and row-major) are refused
with CUBLAS_STATUS_NOT_SUPPORTED, by name, rather than ignored; attributes that only steer the
choice of a GPU kernel (preferences, SM count, fast accumulation, workspace) are accepted and
change nothing here. cublaslt_dispatch.py gives the shim these handlers.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field, replace

import numpy as np

from ptxport.compat import cublaslt_gpu
from ptxport.compat.cublas import (
    CUDART_VERSION,
    INVALID_VALUE,
    NOT_SUPPORTED,
    SUCCESS,
    VERSION,
    CublasError,
    cublasGetProperty,
    cublasGetStatusName,
    cublasGetStatusString,
    scalar_reader,
)
from ptxport.compat.cublas_gemm import DATA_TYPES, Operand, Product, ex_types, queue
from ptxport.compat.cublaslt_epilogue import EpilogueSpec, epilogue_of
from ptxport.compat.state import put, state

__all__ = ["MatmulDesc", "MatrixLayout"]

EPILOGUE_DEFAULT = 1
ORDER_COL, ORDER_ROW = 0, 1
# alpha's and beta's type -> its cudaDataType (CUDA_R_32F, _64F, _16F, _32I)
_SCALE_TYPES = {np.dtype(np.float32): 0, np.dtype(np.float64): 1, np.dtype(np.float16): 2,
                np.dtype(np.int32): 10}


@dataclass
class MatmulDesc:
    """A cublasLtMatmulDesc_t: the operation's types, transposes and epilogue."""

    compute_type: int
    scale_type: int
    pointer_mode: int = 0        # CUBLASLT_POINTER_MODE_HOST; 1: _DEVICE
    transa: int = 0
    transb: int = 0
    transc: int = 0
    epilogue: int = EPILOGUE_DEFAULT
    bias: int = 0
    bias_type: int | None = None  # None or -1: D's type, as cuBLASLt's default
    bias_stride: int = 0
    aux: int = 0
    aux_ld: int = 0
    aux_stride: int = 0
    aux_type: int | None = None   # None or -1: D's type
    hints: dict[int, int] = field(default_factory=dict)   # attributes that only steer kernels

    def epilogue_spec(self, d_type: int, m: int, n: int) -> EpilogueSpec:
        return EpilogueSpec.check(self.epilogue, {
            "bias": self.bias, "bias_type": self.bias_type, "bias_stride": self.bias_stride,
            "aux": self.aux, "aux_type": self.aux_type, "aux_ld": self.aux_ld,
            "aux_stride": self.aux_stride}, d_type, m, n)


@dataclass
class MatrixLayout:
    """A cublasLtMatrixLayout_t: a (batch of) column-major matrices as stored."""

    data_type: int
    rows: int
    cols: int
    ld: int
    order: int = ORDER_COL
    batch: int = 1
    stride: int = 0


class _Preference:
    """A cublasLtMatmulPreference_t: constraints on the GPU kernel chosen, none of which
    changes what the CPU computes."""


class _LtHandle:
    """A cublasLtHandle_t: cuBLASLt keeps no state in it that ptxport needs."""


# attribute -> (field, C type of its value); field None: a hint that only steers the choice of
# a GPU kernel, kept (in MatmulDesc.hints) for GetAttribute and otherwise unused.
_DESC_ATTRIBUTES = {
    0: ("compute_type", ctypes.c_int32), 1: ("scale_type", ctypes.c_int32),
    2: ("pointer_mode", ctypes.c_int32), 3: ("transa", ctypes.c_int32),
    4: ("transb", ctypes.c_int32), 5: ("transc", ctypes.c_int32),
    7: ("epilogue", ctypes.c_uint32), 8: ("bias", ctypes.c_uint64),
    10: ("bias_stride", ctypes.c_int64), 11: ("aux", ctypes.c_uint64),
    12: ("aux_ld", ctypes.c_int64), 13: ("aux_stride", ctypes.c_int64),
    15: (None, ctypes.c_int32),   # SM_COUNT_TARGET
    22: ("aux_type", ctypes.c_int32),
    25: (None, ctypes.c_int8),    # FAST_ACCUM: allows, does not require, less precision
    26: ("bias_type", ctypes.c_int32),
}
_LAYOUT_ATTRIBUTES = {
    0: ("data_type", ctypes.c_uint32), 1: ("order", ctypes.c_int32),
    2: ("rows", ctypes.c_uint64), 3: ("cols", ctypes.c_uint64), 4: ("ld", ctypes.c_int64),
    5: ("batch", ctypes.c_int32), 6: ("stride", ctypes.c_int64),
}


def _set_attribute(obj: object, table: dict, attribute: int, buf: int, size: int,
                   what: str) -> int:
    if attribute not in table:
        raise CublasError(NOT_SUPPORTED, f"{what} attribute {attribute} is not supported")
    name, ctype = table[attribute]
    if not buf or size != ctypes.sizeof(ctype):
        raise CublasError(INVALID_VALUE, f"{what} attribute {attribute} takes "
                                         f"{ctypes.sizeof(ctype)} bytes, not {size} at "
                                         f"{buf:#x}")
    value = ctype.from_address(buf).value
    if name is None:
        obj.hints[attribute] = value
    else:
        setattr(obj, name, value)
    return SUCCESS


def _get_attribute(obj: object, table: dict, attribute: int, buf: int, size: int,
                   written: int, what: str) -> int:
    """cublasLt*GetAttribute: with sizeInBytes 0, the size the value needs; else the value
    (an attribute never set reads as its default: 0, or -1 for the data types that default
    to D's)."""
    if attribute not in table:
        raise CublasError(NOT_SUPPORTED, f"{what} attribute {attribute} is not supported")
    name, ctype = table[attribute]
    needed = ctypes.sizeof(ctype)
    if size == 0:
        if not written:
            raise CublasError(INVALID_VALUE, "sizeInBytes is 0 and sizeWritten is NULL")
        put(ctypes.c_size_t, written, needed)
        return SUCCESS
    if not buf or size != needed:
        raise CublasError(INVALID_VALUE, f"{what} attribute {attribute} takes {needed} bytes, "
                                         f"not {size} at {buf:#x}")
    value = obj.hints.get(attribute, 0) if name is None else getattr(obj, name)
    put(ctype, buf, -1 if value is None else value)
    if written:
        put(ctypes.c_size_t, written, needed)
    return SUCCESS


def _create(out: int, obj: object) -> int:
    if not out:
        raise CublasError(INVALID_VALUE, "the pointer for the new handle is NULL")
    put(ctypes.c_void_p, out, state.handle(obj))
    return SUCCESS


def _lookup(handle: int, kind: type, what: str):
    obj = state.objects.get(handle)
    if not isinstance(obj, kind):
        raise CublasError(INVALID_VALUE, f"{handle:#x} is not a {what}")
    return obj


def _destroy(handle: int, kind: type, what: str) -> int:
    _lookup(handle, kind, what)
    del state.objects[handle]
    return SUCCESS


# -- handles, descriptors, layouts, preferences ----------------------------------------------

def cublasLtCreate(out: int) -> int:
    return _create(out, _LtHandle())


def cublasLtDestroy(handle: int) -> int:
    return _destroy(handle, _LtHandle, "cublasLtHandle_t")


def cublasLtGetVersion() -> int:
    major, minor, patch = VERSION
    return major * 10000 + minor * 100 + patch


def cublasLtGetCudartVersion() -> int:
    return CUDART_VERSION


def cublasLtGetProperty(kind: int, value: int) -> int:
    return cublasGetProperty(kind, value)


def cublasLtGetStatusName(status: int) -> int:
    return cublasGetStatusName(status)


def cublasLtGetStatusString(status: int) -> int:
    return cublasGetStatusString(status)


def cublasLtMatmulDescCreate(out: int, compute_type: int, scale_type: int) -> int:
    return _create(out, MatmulDesc(compute_type, scale_type))


def cublasLtMatmulDescDestroy(desc: int) -> int:
    return _destroy(desc, MatmulDesc, "cublasLtMatmulDesc_t")


def cublasLtMatmulDescSetAttribute(desc: int, attribute: int, buf: int, size: int) -> int:
    return _set_attribute(_lookup(desc, MatmulDesc, "cublasLtMatmulDesc_t"), _DESC_ATTRIBUTES,
                          attribute, buf, size, "cublasLtMatmulDesc")


def cublasLtMatmulDescGetAttribute(desc: int, attribute: int, buf: int, size: int,
                                   written: int) -> int:
    return _get_attribute(_lookup(desc, MatmulDesc, "cublasLtMatmulDesc_t"), _DESC_ATTRIBUTES,
                          attribute, buf, size, written, "cublasLtMatmulDesc")


def cublasLtMatrixLayoutCreate(out: int, data_type: int, rows: int, cols: int,
                               ld: int) -> int:
    return _create(out, MatrixLayout(data_type, rows, cols, ld))


def cublasLtMatrixLayoutDestroy(layout: int) -> int:
    return _destroy(layout, MatrixLayout, "cublasLtMatrixLayout_t")


def cublasLtMatrixLayoutSetAttribute(layout: int, attribute: int, buf: int,
                                     size: int) -> int:
    return _set_attribute(_lookup(layout, MatrixLayout, "cublasLtMatrixLayout_t"),
                          _LAYOUT_ATTRIBUTES, attribute, buf, size, "cublasLtMatrixLayout")


def cublasLtMatrixLayoutGetAttribute(layout: int, attribute: int, buf: int, size: int,
                                     written: int) -> int:
    return _get_attribute(_lookup(layout, MatrixLayout, "cublasLtMatrixLayout_t"),
                          _LAYOUT_ATTRIBUTES, attribute, buf, size, written,
                          "cublasLtMatrixLayout")


def cublasLtMatmulPreferenceCreate(out: int) -> int:
    return _create(out, _Preference())


def cublasLtMatmulPreferenceDestroy(pref: int) -> int:
    return _destroy(pref, _Preference, "cublasLtMatmulPreference_t")


def cublasLtMatmulPreferenceSetAttribute(pref: int, attribute: int, buf: int,
                                         size: int) -> int:
    _lookup(pref, _Preference, "cublasLtMatmulPreference_t")
    if not buf:
        raise CublasError(INVALID_VALUE, "the attribute's value pointer is NULL")
    return SUCCESS


# -- the matmul -------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Plan:
    """A matmul's shape and types, checked: the product, and C's and D's layouts."""

    product: Product
    c: MatrixLayout
    d: MatrixLayout


def _plan(desc: MatmulDesc, a: MatrixLayout, b: MatrixLayout, c: MatrixLayout,
          d: MatrixLayout) -> _Plan:
    """Check a matmul as cuBLASLt does: CUBLAS_STATUS_INVALID_VALUE for shapes that do not
    fit, CUBLAS_STATUS_NOT_SUPPORTED for what ptxport does not run."""
    if (c.data_type, c.rows, c.cols) != (d.data_type, d.rows, d.cols):
        raise CublasError(NOT_SUPPORTED if c.data_type != d.data_type else INVALID_VALUE,
                          "C and D must have the same type and shape")
    scale, compute = ex_types(a.data_type, b.data_type, d.data_type, desc.compute_type)
    if _SCALE_TYPES.get(scale) != desc.scale_type:
        raise CublasError(NOT_SUPPORTED, f"scale type {desc.scale_type} with compute type "
                                         f"{desc.compute_type}: ptxport runs the scale type "
                                         "of the compute type (CUDA_R_32F or CUDA_R_64F)")
    if desc.pointer_mode not in (0, 1) or desc.transc != 0:
        raise CublasError(NOT_SUPPORTED, "pointer modes other than HOST and DEVICE, and a "
                                         "transposed C, are not supported")
    if any(layout.order not in (ORDER_COL, ORDER_ROW) for layout in (a, b, c, d)):
        raise CublasError(NOT_SUPPORTED, "only CUBLASLT_ORDER_COL and _ROW layouts are "
                                         "supported (not the tiled orders COL32, ...)")
    m, n = d.rows, d.cols
    rows_a, k = (a.cols, a.rows) if desc.transa else (a.rows, a.cols)
    k_b, cols_b = (b.cols, b.rows) if desc.transb else (b.rows, b.cols)
    if (rows_a, k_b, cols_b) != (m, k, n):
        raise CublasError(INVALID_VALUE, f"op(A) is {rows_a} x {k}, op(B) {k_b} x {cols_b}, "
                                         f"D {m} x {n}: they do not multiply")
    if len({a.batch, b.batch, c.batch, d.batch}) != 1:
        raise CublasError(INVALID_VALUE, "the layouts' batch counts differ")
    for name, layout in zip("ABCD", (a, b, c, d), strict=True):
        lines, what = (layout.cols, "columns") if layout.order == ORDER_ROW else \
            (layout.rows, "rows")
        if layout.ld < max(1, lines):
            raise CublasError(INVALID_VALUE, f"{name}'s ld {layout.ld} is less than its "
                                             f"{lines} {what}")
    product = Product(desc.transa, desc.transb, m, n, k, _operand(0, a), _operand(0, b),
                      d.batch, compute)
    return _Plan(product, c, d)


def _operand(address: int, layout: MatrixLayout) -> Operand:
    return Operand(address, DATA_TYPES[layout.data_type], layout.ld, layout.stride,
                   layout.order == ORDER_ROW)


def _layouts(*handles: int) -> list[MatrixLayout]:
    return [_lookup(h, MatrixLayout, "cublasLtMatrixLayout_t") for h in handles]


def cublasLtMatmulAlgoGetHeuristic(handle: int, desc: int, a: int, b: int, c: int, d: int,
                                   pref: int, requested: int, results: int,
                                   count_out: int) -> int:
    _lookup(handle, _LtHandle, "cublasLtHandle_t")
    _lookup(pref, _Preference, "cublasLtMatmulPreference_t")
    if requested <= 0 or not results or not count_out:
        raise CublasError(INVALID_VALUE, "requestedAlgoCount must be positive, and the "
                                         "result pointers not NULL")
    matmul = _lookup(desc, MatmulDesc, "cublasLtMatmulDesc_t")
    plan = _plan(matmul, *_layouts(a, b, c, d))
    matmul.epilogue_spec(plan.d.data_type, plan.product.m, plan.product.n)
    # One algorithm, needing no workspace: cublasLtMatmulHeuristicResult_t is the algo
    # (8 x uint64), workspaceSize (size_t), state (cublasStatus_t), wavesCount (float) and
    # 4 reserved ints, 96 bytes.
    ctypes.memset(results, 0, 96)
    ctypes.c_float.from_address(results + 76).value = 1.0
    put(ctypes.c_int, count_out, 1)
    return SUCCESS


def cublasLtMatmul(handle: int, desc: int, alpha: int, a: int, a_layout: int, b: int,
                   b_layout: int, beta: int, c: int, c_layout: int, d: int, d_layout: int,
                   algo: int, workspace: int, workspace_size: int, stream: int) -> int:
    # `algo` and the workspace pick and feed a GPU kernel; every choice computes the same.
    _lookup(handle, _LtHandle, "cublasLtHandle_t")
    matmul = _lookup(desc, MatmulDesc, "cublasLtMatmulDesc_t")
    layouts = _layouts(a_layout, b_layout, c_layout, d_layout)
    plan = _plan(matmul, *layouts)
    product = replace(plan.product, a=_operand(a, layouts[0]), b=_operand(b, layouts[1]))
    d_op = _operand(d, plan.d)
    c_op = d_op if (c, c_layout) == (d, d_layout) else _operand(c, plan.c)
    on_device = matmul.pointer_mode == 1
    scale = DATA_TYPES[matmul.scale_type]
    spec = matmul.epilogue_spec(plan.d.data_type, product.m, product.n)
    if state.device.backend != "cpu":
        cublaslt_gpu.matmul(stream, product, cublaslt_gpu.scalar_args(on_device, alpha, "alpha"),
                            cublaslt_gpu.scalar_args(on_device, beta, "beta"), c_op, d_op,
                            None if spec.epilogue == EPILOGUE_DEFAULT else spec)
        return SUCCESS
    queue(stream, product, scalar_reader(on_device, alpha, scale, "alpha"),
          scalar_reader(on_device, beta, scale, "beta"), c_op, d_op,
          epilogue_of(spec, product.m, product.n, product.batch))
    return SUCCESS
