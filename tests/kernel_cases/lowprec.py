"""Cases for half_precision.cu (IEEE binary16) and bfloat16.cu.

Every binary16/bfloat16 operation in these kernels is one correctly rounded operation, so the
references are exact: the operation is done exactly (or rounded to odd) in float64 and rounded
once to the narrow format. numpy's float64 -> float16 conversion rounds directly (no double
rounding); bfloat16 values live in uint16 arrays as bit patterns.
"""

from __future__ import annotations

import numpy as np

from ._core import KernelCase, inout, inp, out, scalar
from ._numerics import (
    _add_round_to_odd,
    bf16_bits_rn,
    bf16_bits_rz,
    bf16_to_f32,
    f32,
    poison,
    round_f64,
    round_to_bits,
)

__all__ = ["CASES"]

N_HALF = 1000
GRID = ((N_HALF + 255) // 256, 1, 1)
BLOCK = (256, 1, 1)


def _f64(x) -> np.ndarray:
    return np.asarray(x).astype(np.float64)


def _half_fma(a, b, c) -> np.ndarray:
    """One rounding of a*b + c to binary16 (the product of two halves is exact in float64)."""
    with np.errstate(invalid="ignore", over="ignore"):
        return _add_round_to_odd(_f64(a) * _f64(b), _f64(c)).astype(np.float16)


def _halves(rng, n, specials=()) -> np.ndarray:
    x = (rng.standard_normal(n) * 4).astype(np.float16)
    x[-n // 10:] = (rng.standard_normal(n // 10) * 1e-5).astype(np.float16)  # subnormals
    x[: len(specials)] = specials
    return x


def _half_axpy_args(rng):
    x = _halves(rng, N_HALF, [300.0, -300.0, 1e-4])
    y = _halves(rng, N_HALF, [65000.0, 100.0, -1e-4])
    return [scalar(np.float16(-1.375)), inp(x), inout(y), scalar(np.int32(N_HALF))]


def _half2_args(rng):
    n = 2 * N_HALF
    a = _halves(rng, n, [np.nan, np.inf, 300.0, 6e-5, -np.inf])
    b = _halves(rng, n, [1.0, 2.0, 300.0, 1e-3, np.nan])
    c = _halves(rng, n)
    return [inp(a), inp(b), inp(c), out(poison(5 * n, np.float16)), scalar(np.int32(N_HALF))]


def _half2_ref(args):
    a, b, c = (args[k].value for k in range(3))
    with np.errstate(all="ignore"):
        parts = [_half_fma(a, np.float16(1), b), (_f64(a) * _f64(b)).astype(np.float16),
                 _half_fma(a, b, c),
                 _half_fma(a, np.float16(1), -b), np.fmax(a, b)]
    return {3: np.concatenate(parts)}


def _half_convert_args(rng):
    x = f32(rng.standard_normal(N_HALF) * np.exp2(rng.integers(-26, 17, N_HALF)))
    specials = [np.nan, np.inf, -np.inf, 65504.0, 65519.0, 65520.0, 70000.0, -70000.0, 1e-8,
                5.9604645e-08, 2.9802322e-08, 0.1, 1 + 2**-11, 1 + 3 * 2**-11, -2.5, 0.5, -0.0,
                3e9, -3e9]
    x[: len(specials)] = specials
    outs = [out(poison(N_HALF, t)) for t in
            (np.float16, np.float16, np.float16, np.float16, np.int32, np.float32, np.float64)]
    return [inp(x), *outs, scalar(np.int32(N_HALF))]


def _half_convert_ref(args):
    x = args[0].value
    rn = round_f64(x, np.float16, "rn")
    r = _f64(rn)
    to_int = np.where(np.isnan(r), 0, np.clip(np.rint(np.nan_to_num(r)), -(2.0**31), 2.0**31 - 1))
    return {1: rn, 2: round_f64(x, np.float16, "rz"), 3: round_f64(x, np.float16, "rd"),
            4: round_f64(x, np.float16, "ru"), 5: to_int.astype(np.int64).astype(np.int32),
            6: rn.astype(np.float32), 7: -r}


def _half_compare_args(rng):
    a = rng.integers(-4, 5, N_HALF).astype(np.float16)
    b = rng.integers(-4, 5, N_HALF).astype(np.float16)
    a[:3] = [np.nan, 1.0, np.nan]
    b[:3] = [1.0, np.nan, np.nan]
    return [inp(a), inp(b), out(poison(4 * N_HALF, np.uint8)), scalar(np.int32(N_HALF))]


def _half_compare_ref(args):
    a, b = args[0].value, args[1].value
    parts = [a < b, ~(a < b), np.isnan(a), a == b]
    return {2: np.concatenate(parts).astype(np.uint8)}


HALF = [
    KernelCase("half_precision.cu", "half_axpy", GRID, BLOCK, 0, _half_axpy_args,
               lambda a: {2: _half_fma(a[0].value, a[1].value, a[2].value)},
               notes="exact: one rounding; overflow to inf and subnormals included"),
    KernelCase("half_precision.cu", "half2_ops", GRID, BLOCK, 0, _half2_args, _half2_ref,
               notes="exact; n counts __half2 pairs; NaN, inf and subnormal lanes included"),
    KernelCase("half_precision.cu", "half_convert", GRID, BLOCK, 0, _half_convert_args,
               _half_convert_ref, notes="exact, four rounding modes, saturating to int"),
    KernelCase("half_precision.cu", "half_compare", GRID, BLOCK, 0, _half_compare_args,
               _half_compare_ref, notes="exact; ordered and unordered comparisons with NaN"),
]

# bfloat16.cu ------------------------------------------------------------------------------------


def _bf16(rng, n, scale=4.0) -> np.ndarray:
    return bf16_bits_rn(f32(rng.standard_normal(n) * scale))


def _bf16_round(v: np.ndarray) -> np.ndarray:
    """Float64 values (exact or rounded to odd) -> bfloat16 bits, nearest even."""
    return (f32(round_to_bits(v, 8)).view(np.uint32) >> 16).astype(np.uint16)


def _bf16_fma(a_bits, b_bits, c_bits) -> np.ndarray:
    a, b, c = (_f64(bf16_to_f32(v)) for v in (a_bits, b_bits, c_bits))
    return _bf16_round(_add_round_to_odd(a * b, c))


ONE_BF16 = np.uint16(0x3F80)


def _bf16_axpy_args(rng):
    return [scalar(np.float32(1.7)), inp(_bf16(rng, N_HALF), bfloat16=True),
            inout(_bf16(rng, N_HALF), bfloat16=True), scalar(np.int32(N_HALF))]


def _bf16_axpy_ref(args):
    a = bf16_bits_rn(args[0].value)
    return {2: _bf16_fma(np.full(N_HALF, a), args[1].value, args[2].value)}


def _bf162_args(rng):
    n = 2 * N_HALF
    return [inp(_bf16(rng, n), bfloat16=True), inp(_bf16(rng, n), bfloat16=True),
            out(poison(3 * n, np.uint16), bfloat16=True), scalar(np.int32(N_HALF))]


def _bf162_ref(args):
    a, b = args[0].value, args[1].value
    product = _bf16_round(_f64(bf16_to_f32(a)) * _f64(bf16_to_f32(b)))  # exact before rounding
    return {2: np.concatenate([_bf16_fma(a, np.full_like(a, ONE_BF16), b), product,
                               _bf16_fma(a, b, a)])}


def _bf16_convert_args(rng):
    x = f32(rng.standard_normal(N_HALF) * np.exp2(rng.integers(-30, 30, N_HALF)))
    # random sign and low bits of the upper half, exponent 0x7e or 0x7f, lower half exactly
    # the midpoint: ties to even in both directions
    upper = rng.integers(0, 1 << 16, 20, dtype=np.uint64).astype(np.uint32) & 0x80FF
    ties = (upper << 16) | np.uint32(0x3F008000)
    x[20:40] = ties.view(np.float32)
    x[:6] = [np.nan, np.inf, -np.inf, 3.4e38, -3.4e38, -0.0]
    outs = [out(poison(N_HALF, np.uint16), bfloat16=True),
            out(poison(N_HALF, np.uint16), bfloat16=True),
            out(poison(N_HALF, np.float32)), out(poison(2 * N_HALF, np.float32))]
    return [inp(x), *outs, scalar(np.int32(N_HALF))]


def _bf16_convert_ref(args):
    x = args[0].value
    rn = bf16_bits_rn(x)
    pair = np.stack([bf16_to_f32(rn), bf16_to_f32(bf16_bits_rn(-x))], axis=1)
    return {1: rn, 2: bf16_bits_rz(x), 3: bf16_to_f32(rn), 4: pair.ravel()}


def _bf16_dot_args(rng):
    a, b = _bf16(rng, N_HALF, 1.0), _bf16(rng, N_HALF, 1.0)
    return [inp(a, bfloat16=True), inp(b, bfloat16=True), out(poison(1, np.float32)),
            scalar(np.int32(N_HALF))]


def _bf16_dot_ref(args):
    products = bf16_to_f32(args[0].value) * bf16_to_f32(args[1].value)  # exact in float32
    acc = np.zeros(256, dtype=np.float32)
    padded = np.zeros(-(-N_HALF // 256) * 256, dtype=np.float32)
    padded[:N_HALF] = products
    for row in padded.reshape(-1, 256):
        acc = acc + row  # fmaf of an exact product: one float32 addition
    for h in (128, 64, 32, 16, 8, 4, 2, 1):
        acc[:h] = acc[:h] + acc[h:2 * h]
    return {2: acc[:1]}


N_SUMS = 2000  # 8 chunks of 256 for 4 warps: each warp's loop runs twice


def _bf16_add_sums_args(rng):
    return [inout(_bf16(rng, N_SUMS), bfloat16=True), inout(_bf16(rng, N_SUMS), bfloat16=True),
            inp(f32(rng.standard_normal(2 * N_SUMS) * 4.0)), scalar(np.int32(N_SUMS))]


def _bf16_add_sums_ref(args):
    sums = args[2].value
    return {k: bf16_bits_rn(sums[k * N_SUMS:(k + 1) * N_SUMS] + bf16_to_f32(args[k].value))
            for k in (0, 1)}


BF16 = [
    KernelCase("bfloat16.cu", "bf16_axpy", GRID, BLOCK, 0, _bf16_axpy_args, _bf16_axpy_ref,
               notes="exact: a rounded to bf16, then one rounding of a*x + y"),
    KernelCase("bfloat16.cu", "bf162_ops", GRID, BLOCK, 0, _bf162_args, _bf162_ref,
               notes="exact; n counts pairs"),
    KernelCase("bfloat16.cu", "bf16_convert", GRID, BLOCK, 0, _bf16_convert_args,
               _bf16_convert_ref,
               notes="exact; ties, overflow to inf, NaN; no float32 subnormal inputs"),
    KernelCase("bfloat16.cu", "bf16_dot", (1, 1, 1), BLOCK, 0, _bf16_dot_args, _bf16_dot_ref,
               notes="exact: bf16 products are exact in float32; the summation order is the "
                     "kernel's (per-thread strided sums, then the fixed tree)"),
    KernelCase("bfloat16.cu", "bf16_add_sums", (1, 1, 1), (128, 1, 1), 8 * N_SUMS,
               _bf16_add_sums_args, _bf16_add_sums_ref,
               notes="exact: a float32 add, then one rounding to bf16; its loop is the one "
                     "of llm.c's layernorm_backward_kernel10 whose SPIR-V, generated with loop "
                     "strength reduction, Intel's OpenCL runtime could not load"),
]

CASES = HALF + BF16
