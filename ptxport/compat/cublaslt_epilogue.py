"""cuBLASLt's epilogues (cublasLtEpilogue_t): what cublasLtMatmul does to alpha op(A) op(B) +
beta C before storing D, and the outputs some write beside D (the GELU input, bias gradients).

As NVIDIA's cuBLASLt documents them (cublasLtEpilogue_t, cublasLtMatmulDescAttributes_t):
- BIAS adds a vector of one value per row of D (per batch: BIAS_BATCH_STRIDE apart);
- RELU is max(0, x); GELU is the tanh approximation 0.5 x (1 + tanh(sqrt(2/pi)(x + 0.044715
  x^3))); with BIAS, the bias is added first;
- the _AUX forms of GELU also store their input (x, after the bias) in the auxiliary matrix
  (EPILOGUE_AUX_POINTER, _LD, _BATCH_STRIDE, _DATA_TYPE; default type: D's);
- DGELU multiplies the product by GELU's derivative at the auxiliary matrix's values (the
  forward pass's GELU input); DGELU_BGRAD also stores the sum of each row of that result in
  the bias vector (the bias gradient);
- BGRADA stores the sums of op(A)'s rows (one per row of D), BGRADB the sums of op(B)'s
  columns (one per column of D), each over the GEMM's k; D is the plain product.
All of it runs in the compute precision (FP32 for 16-bit data) and is rounded once on store.
The work here is on D^T's (batch, n, m) arrays, as cublas_gemm.py computes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ptxport.compat.cublas import INVALID_VALUE, NOT_SUPPORTED, CublasError, device_array
from ptxport.compat.cublas_gemm import DATA_TYPES, Epilogue, Operand, matrices, store, to_float

__all__ = ["EPILOGUES", "EpilogueSpec", "dgelu", "epilogue_of", "gelu"]

DEFAULT, RELU, BIAS, RELU_BIAS = 1, 2, 4, 6
GELU, GELU_AUX, GELU_BIAS, GELU_AUX_BIAS = 32, 160, 36, 164
DGELU, DGELU_BGRAD, BGRADA, BGRADB = 192, 208, 256, 512
EPILOGUES = {DEFAULT: "DEFAULT", RELU: "RELU", BIAS: "BIAS", RELU_BIAS: "RELU_BIAS",
             GELU: "GELU", GELU_AUX: "GELU_AUX", GELU_BIAS: "GELU_BIAS",
             GELU_AUX_BIAS: "GELU_AUX_BIAS", DGELU: "DGELU", DGELU_BGRAD: "DGELU_BGRAD",
             BGRADA: "BGRADA", BGRADB: "BGRADB"}
_NOT_RUN = {130: "RELU_AUX", 134: "RELU_AUX_BIAS", 136: "DRELU", 152: "DRELU_BGRAD"}
_WITH_AUX = (GELU_AUX, GELU_AUX_BIAS, DGELU, DGELU_BGRAD)
_BIAS_IN = (BIAS, RELU_BIAS, GELU_BIAS, GELU_AUX_BIAS)
_BIAS_OUT = (DGELU_BGRAD, BGRADA, BGRADB)
_SQRT_2_OVER_PI = np.sqrt(2 / np.pi)


def gelu(x: np.ndarray) -> np.ndarray:
    """GELU's tanh approximation, in x's precision."""
    c = x.dtype.type
    return c(0.5) * x * (c(1) + np.tanh(c(_SQRT_2_OVER_PI) * (x + c(0.044715) * x * x * x)))


def dgelu(x: np.ndarray) -> np.ndarray:
    """The derivative of gelu() at x, in x's precision."""
    c = x.dtype.type
    t = np.tanh(c(_SQRT_2_OVER_PI) * (x + c(0.044715) * x * x * x))
    return c(0.5) * (c(1) + t) + c(0.5) * x * (c(1) - t * t) * c(_SQRT_2_OVER_PI) * \
        (c(1) + c(3 * 0.044715) * x * x)


@dataclass(frozen=True)
class EpilogueSpec:
    """A matmul descriptor's epilogue and the attributes it reads, checked against D."""

    epilogue: int
    bias: int              # BIAS_POINTER
    bias_type: np.dtype
    bias_stride: int       # BIAS_BATCH_STRIDE, elements
    aux: int               # EPILOGUE_AUX_POINTER
    aux_type: np.dtype
    aux_ld: int
    aux_stride: int

    @staticmethod
    def check(epilogue: int, attributes: dict[str, int | None], d_type: int,
              m: int, n: int) -> EpilogueSpec:
        """The epilogue of a descriptor, refused as cuBLASLt refuses it: NOT_SUPPORTED for
        one ptxport does not run, INVALID_VALUE for a missing pointer or a short aux ld."""
        if epilogue not in EPILOGUES:
            name = _NOT_RUN.get(epilogue, str(epilogue))
            raise CublasError(NOT_SUPPORTED, f"epilogue {name} ({epilogue}) is not supported "
                                             f"(ptxport runs {', '.join(EPILOGUES.values())})")

        def dtype(key: str) -> np.dtype:
            value = attributes[key]
            data_type = d_type if value is None or value == -1 else value
            if data_type not in DATA_TYPES or DATA_TYPES[data_type].kind == "i":
                raise CublasError(NOT_SUPPORTED, f"{key} {data_type} is not supported")
            return DATA_TYPES[data_type]

        needs_bias = epilogue in _BIAS_IN or epilogue in _BIAS_OUT
        if needs_bias and not attributes["bias"]:
            raise CublasError(INVALID_VALUE, f"epilogue {EPILOGUES[epilogue]} needs "
                                             "CUBLASLT_MATMUL_DESC_BIAS_POINTER")
        aux_ld = attributes["aux_ld"] or 0
        if epilogue in _WITH_AUX:
            if not attributes["aux"]:
                raise CublasError(INVALID_VALUE, f"epilogue {EPILOGUES[epilogue]} needs "
                                                 "CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER")
            if aux_ld < max(1, m):
                raise CublasError(INVALID_VALUE, f"the auxiliary matrix's ld {aux_ld} is less "
                                                 f"than D's {m} rows")
            if aux_ld % 8:
                raise CublasError(NOT_SUPPORTED, f"the auxiliary matrix's ld {aux_ld} is not "
                                                 "a multiple of 8, as cuBLASLt requires")
        return EpilogueSpec(epilogue, attributes["bias"] or 0, dtype("bias_type"),
                            attributes["bias_stride"] or 0, attributes["aux"] or 0,
                            dtype("aux_type"), aux_ld, attributes["aux_stride"] or 0)

    def _vector(self, length: int, batch: int) -> np.ndarray:
        """The bias vector(s) as a (batch, length) view."""
        count = (batch - 1) * self.bias_stride + length
        flat = device_array(self.bias, self.bias_type, count, "the bias vector")
        size = self.bias_type.itemsize
        return np.lib.stride_tricks.as_strided(flat, (batch, length),
                                               (self.bias_stride * size, size))

    def _aux(self, m: int, n: int, batch: int) -> np.ndarray:
        return matrices(Operand(self.aux, self.aux_type, self.aux_ld, self.aux_stride), m, n,
                        batch, "the auxiliary matrix")


def epilogue_of(spec: EpilogueSpec, m: int, n: int, batch: int) -> Epilogue | None:
    """The function cublas_gemm.queue applies for `spec` (None for DEFAULT); the views of
    its vectors and matrices are made (and checked) now."""
    kind = spec.epilogue
    if kind == DEFAULT:
        return None
    bias = spec._vector(n if kind == BGRADB else m, batch) if spec.bias else None
    aux = spec._aux(m, n, batch) if kind in _WITH_AUX else None

    def apply(total: np.ndarray, views: tuple[np.ndarray, np.ndarray] | None) -> np.ndarray:
        if kind in _BIAS_IN:
            total = total + to_float(bias, total.dtype)[:, None, :]
        if kind in (GELU_AUX, GELU_AUX_BIAS):
            store(aux, total)
        if kind in (RELU, RELU_BIAS):
            total = np.maximum(total, total.dtype.type(0))
        elif kind in (GELU, GELU_AUX, GELU_BIAS, GELU_AUX_BIAS):
            total = gelu(total)
        elif kind in (DGELU, DGELU_BGRAD):
            total = total * dgelu(to_float(aux, total.dtype))
            if kind == DGELU_BGRAD:
                store(bias, total.sum(axis=1))
        elif kind in (BGRADA, BGRADB):
            store(bias, _input_sums(kind, views, total.dtype, bias.shape))
        return total

    return apply


def _input_sums(kind: int, views: tuple[np.ndarray, np.ndarray] | None, dtype: np.dtype,
                shape: tuple[int, int]) -> np.ndarray:
    """BGRADA's row sums of op(A) or BGRADB's column sums of op(B), over k (zeros when k is
    0). views are (op(B)^T: (batch, n, k), op(A)^T: (batch, k, m))."""
    if views is None:
        return np.zeros(shape, dtype)
    if kind == BGRADA:
        return to_float(views[1], dtype).sum(axis=1)
    return to_float(views[0], dtype).sum(axis=2)
