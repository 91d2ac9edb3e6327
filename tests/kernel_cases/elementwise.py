"""Cases for the element-wise corpus files: activations, saxpy, vector_add and libm_double.

One thread (or one grid-stride step) per element: the reference is a numpy expression in the
kernel's precision. Where a grid-stride loop allows it, the grid covers fewer threads than
elements, so that the loop runs more than once.
"""

from __future__ import annotations

import math

import numpy as np

from ._core import KernelCase, inout, inp, out, scalar
from ._numerics import f32, fma32, fma64, poison

__all__ = ["CASES"]


def grid1(n: int, block: int) -> tuple[int, int, int]:
    return ((n + block - 1) // block, 1, 1)


def _vectorize(fn):
    """A math-module function applied element-wise, in float64."""
    return lambda x: np.array([fn(float(v)) for v in np.ravel(x)], dtype=np.float64)


# activations.cu ---------------------------------------------------------------------------------

N_ACT = 5000
GRID_ACT = (8, 1, 1)  # 2048 threads for 5000 elements: every grid-stride loop runs 2-3 times


def _unary_f32_args(low: float, high: float, specials=()):
    def make(rng):
        x = f32(rng.uniform(low, high, N_ACT))
        x[: len(specials)] = specials
        return [inp(x), out(poison(N_ACT, np.float32)), scalar(np.int32(N_ACT))]
    return make


def _relu_ref(args):
    x = args[0].value
    return {1: np.where(x > 0, x, np.float32(0))}


def _gelu_tanh_ref(args):
    v = args[0].value.astype(np.float64)
    k = float(np.float32(0.7978845608028654))
    return {1: (0.5 * v * (1 + np.tanh(k * (v + 0.044715 * v**3)))).astype(np.float32)}


def _gelu_erf_ref(args):
    v = args[0].value.astype(np.float64)
    erf = _vectorize(math.erf)(v * float(np.float32(0.7071067811865476)))
    return {1: (0.5 * v * (1 + erf)).astype(np.float32)}


def _leaky_args(rng):
    x = rng.standard_normal(N_ACT) * 10
    x[:4] = [np.inf, -np.inf, np.nan, -0.0]
    return [inp(x), out(poison(N_ACT, np.float64)), scalar(np.float64(0.01)),
            scalar(np.int32(N_ACT))]


def _leaky_ref(args):
    x, slope = args[0].value, args[2].value
    return {1: np.where(x > 0, x, slope * x)}


def _sigmoid_ref(args):
    x = args[0].value.astype(np.float64)
    return {1: (1 / (1 + np.exp(-x))).astype(np.float32)}


ACTIVATIONS = [
    KernelCase("activations.cu", "relu", GRID_ACT, (256, 1, 1), 0,
               _unary_f32_args(-5, 5, [np.nan, np.inf, -np.inf, 0.0, -1e-45]), _relu_ref,
               notes="fmaxf(NaN, 0) is 0; no -0.0 input (fmaxf may return either zero)"),
    KernelCase("activations.cu", "gelu_tanh", GRID_ACT, (256, 1, 1), 0,
               _unary_f32_args(-6, 6), _gelu_tanh_ref, rtol=1e-5, atol=1e-6,
               notes="tanhf is 2 ulp; the absolute tolerance covers 1 + tanh cancelling"),
    KernelCase("activations.cu", "gelu_erf", GRID_ACT, (256, 1, 1), 0,
               _unary_f32_args(-6, 6), _gelu_erf_ref, rtol=1e-5, atol=1e-6,
               notes="erff is 2 ulp; the absolute tolerance covers 1 + erf cancelling"),
    KernelCase("activations.cu", "leaky_relu_f64", GRID_ACT, (256, 1, 1), 0,
               _leaky_args, _leaky_ref, notes="exact: one rounded multiplication"),
    KernelCase("activations.cu", "sigmoid_fast", GRID_ACT, (256, 1, 1), 0,
               _unary_f32_args(-10, 10), _sigmoid_ref, rtol=4e-6, atol=1e-7,
               notes="__expf (ex2.approx) error grows with |x|: ~1e-6 relative at |x| = 10"),
]

# saxpy.cu ---------------------------------------------------------------------------------------

N_AXPY = 5000


def _saxpy_args(rng):
    return [scalar(np.float32(2.5)), inp(f32(rng.standard_normal(N_AXPY))),
            inout(f32(rng.standard_normal(N_AXPY))), scalar(np.int32(N_AXPY))]


def _daxpy_args(rng):
    return [scalar(np.float64(-1.25)), inp(rng.standard_normal(N_AXPY)),
            inout(rng.standard_normal(N_AXPY)), scalar(np.int64(N_AXPY))]


SAXPY = [
    KernelCase("saxpy.cu", "saxpy", GRID_ACT, (256, 1, 1), 0, _saxpy_args,
               lambda a: {2: fma32(a[0].value, a[1].value, a[2].value)}, ulp=1,
               notes="exact model of the fma.rn.f32 NVRTC emits; 1 ulp allows an uncontracted "
                     "compile"),
    KernelCase("saxpy.cu", "daxpy", GRID_ACT, (256, 1, 1), 0, _daxpy_args,
               lambda a: {2: fma64(a[0].value, a[1].value, a[2].value)}, ulp=1,
               notes="exact model of fma.rn.f64; 64-bit n and index"),
]

# vector_add.cu ----------------------------------------------------------------------------------

N_VADD = 1000


def _vadd_args(dtype, n_type):
    def make(rng):
        if dtype == np.float32:
            a, b = (f32(rng.standard_normal(N_VADD) * 100) for _ in range(2))
        else:
            info = np.iinfo(dtype)
            a, b = (rng.integers(info.min, info.max, N_VADD, dtype=dtype, endpoint=True)
                    for _ in range(2))
        return [inp(a), inp(b), out(poison(N_VADD, dtype)), scalar(n_type(N_VADD))]
    return make


def _vadd_ref(args):
    a, b = args[0].value, args[1].value
    if a.dtype.kind == "f":
        return {2: a + b}
    unsigned = a.view(f"u{a.itemsize}")
    return {2: (unsigned + b.view(unsigned.dtype)).view(a.dtype)}


VECTOR_ADD = [
    KernelCase("vector_add.cu", kernel, grid1(N_VADD, 128), (128, 1, 1), 0,
               _vadd_args(dtype, n_type), _vadd_ref, notes="exact; integers wrap")
    for kernel, dtype, n_type in [("vector_add_f32", np.float32, np.int32),
                                  ("vector_add_i32", np.int32, np.int32),
                                  ("vector_add_u64", np.uint64, np.uint64)]
]

# libm_double.cu ---------------------------------------------------------------------------------

N_LIBM = 1000
LIBM_SPECIALS = [0.0, -0.0, 1.0, 2.0, 0.5, -2.0, 700.0, -745.0, np.inf, -np.inf, np.nan, 1e-310]


def _libm_unary_args(rng):
    x = rng.uniform(-6, 6, N_LIBM)
    x[: len(LIBM_SPECIALS)] = LIBM_SPECIALS
    return [inp(x), out(poison(8 * N_LIBM, np.float64)), scalar(np.int32(N_LIBM))]


def _lgamma(v: float) -> float:
    try:
        return math.lgamma(v)
    except ValueError:  # the poles: non-positive integers
        return math.inf


def _erf(v: float) -> float:
    return math.erf(v) if not math.isnan(v) else math.nan


def _libm_unary_ref(args):
    x = args[0].value
    with np.errstate(all="ignore"):
        parts = [np.exp(x), np.log(np.abs(x)), np.sin(x), np.cos(x), np.sqrt(np.abs(x)),
                 _vectorize(_erf)(x), _vectorize(_lgamma)(x), np.cbrt(x)]
    return {1: np.concatenate(parts)}


def _libm_binary_args(rng):
    x = rng.uniform(-8, 8, N_LIBM)
    y = rng.uniform(-8, 8, N_LIBM)
    z = rng.standard_normal(N_LIBM)
    # fma with heavy cancellation, where one rounding and two differ
    z[::4] = -(x[::4] * y[::4]) * (1 + rng.uniform(-1e-9, 1e-9, len(z[::4])))
    x[:6] = [0.0, np.inf, 1.0, -3.0, 5.5, np.nan]
    y[:6] = [2.0, 1.0, np.inf, 2.0, -0.0, 1.0]
    return [inp(x), inp(y), inp(z), out(poison(8 * N_LIBM, np.float64)), scalar(np.int32(N_LIBM))]


def _remainder(a: float, b: float) -> float:
    if math.isnan(a) or math.isnan(b) or math.isinf(a) or b == 0:
        return math.nan
    if math.isinf(b):
        return a
    return math.remainder(a, b)


def _libm_binary_ref(args):
    x, y, z = (args[k].value for k in range(3))
    with np.errstate(all="ignore"):
        parts = [np.power(np.abs(x), y), fma64(x, y, z), np.arctan2(y, x), np.hypot(x, y),
                 np.fmod(x, y), np.array([_remainder(a, b) for a, b in zip(x, y, strict=True)]),
                 np.fmin(x, y), np.copysign(x, y)]
    return {3: np.concatenate(parts)}


def _libm_outputs_args(rng):
    x = rng.uniform(-50, 50, N_LIBM)
    x[:8] = [0.0, -0.0, 1e-310, -3.0, 0.5, -0.5, 1e300, 7.25]
    return [inp(x), out(poison(N_LIBM, np.float64)), out(poison(N_LIBM, np.float64)),
            out(poison(N_LIBM, np.int32)), out(poison(2 * N_LIBM, np.float64)),
            out(poison(N_LIBM, np.float64)), scalar(np.int32(N_LIBM))]


def _libm_outputs_ref(args):
    x = args[0].value
    mantissa, exponent = np.frexp(x)
    frac, ipart = np.modf(x)
    return {1: np.sin(x), 2: np.cos(x), 3: exponent.astype(np.int32),
            4: np.concatenate([mantissa, frac]), 5: ipart}


LIBM = [
    KernelCase("libm_double.cu", "math_f64_unary", grid1(N_LIBM, 128), (128, 1, 1), 0,
               _libm_unary_args, _libm_unary_ref, ulp=4, atol=2e-15,
               notes="CUDA's bounds: exp/log/sin/cos/erf/cbrt 1-2 ulp, lgamma 4 ulp away from "
                     "its zeros (the absolute tolerance covers results near 0); sqrt exact"),
    KernelCase("libm_double.cu", "math_f64_binary", grid1(N_LIBM, 128), (128, 1, 1), 0,
               _libm_binary_args, _libm_binary_ref, ulp=2,
               notes="pow/atan2/hypot 2 ulp; fma (exactly modelled, with cancelling inputs), "
                     "fmod, remainder, fmin, copysign exact but share the case's 2 ulp"),
    KernelCase("libm_double.cu", "math_f64_outputs", grid1(N_LIBM, 128), (128, 1, 1), 0,
               _libm_outputs_args, _libm_outputs_ref, ulp=2,
               notes="sincos 2 ulp; frexp and modf exact (no inf/NaN input: frexp's exponent "
                     "is unspecified there); the int exponents exact"),
]

CASES = ACTIVATIONS + SAXPY + VECTOR_ADD + LIBM
