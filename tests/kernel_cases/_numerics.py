"""Exact numpy models of the GPU's arithmetic, for the references of the kernel cases.

numpy has no fused multiply-add and no directed rounding, and it lacks bfloat16; the kernels
use all three. Everything here is vectorised and exact (no tolerance needed) within the stated
ranges:
- fma32: a*b is exact in float64, and rounding a*b + c to odd in float64 first makes the final
  rounding to float32 correct (53 >= 24 + 2 bits).
- fma64: Boldo and Melquiond's emulated FMA ("Emulation of FMA and correctly rounded sums:
  proved algorithms using rounding to odd", IEEE TC 2008): Dekker's exact product, an exact
  sum, one addition rounded to odd, one rounded to nearest. Valid without overflow or
  underflow in the intermediate terms (|a|, |b| < 2**995, results far from denormals).
- directed rounding of a float64 value to float32/float16 by stepping from the nearest value.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "bf16_bits_rn",
    "bf16_bits_rz",
    "bf16_to_f32",
    "f32",
    "fma32",
    "fma64",
    "poison",
    "round_f64",
    "round_to_bits",
    "to_f16",
    "to_f32",
]

F32_POISON = np.float32(-31415.9)
INT_POISON = 0x5A5A5A5A


def f32(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float32)


def poison(shape, dtype) -> np.ndarray:
    """An output buffer's initial contents: a pattern no kernel writes by accident."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return np.full(shape, F32_POISON, dtype=dtype)
    return np.full(shape, INT_POISON & ((1 << (8 * dtype.itemsize - 1)) - 1), dtype=dtype)


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    s = a + b
    bb = s - a
    err = (a - (s - bb)) + (b - bb)
    return s, np.where(np.isfinite(s), err, 0.0)


def _add_round_to_odd(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a + b in float64 rounded to odd: exact sums stay, inexact ones get an odd last bit."""
    s, err = _two_sum(a, b)
    even = (s.view(np.uint64) & np.uint64(1)) == 0
    toward = np.where(err > 0, np.inf, -np.inf)
    return np.where((err != 0) & even, np.nextafter(s, toward), s)


def fma32(a, b, c) -> np.ndarray:
    """fmaf(a, b, c) with one rounding, as fma.rn.f32."""
    a64, b64, c64 = (np.asarray(v, dtype=np.float32).astype(np.float64) for v in (a, b, c))
    with np.errstate(invalid="ignore", over="ignore"):
        p = a64 * b64
        s = _add_round_to_odd(p, c64)
        s = np.where(np.isfinite(p) & np.isfinite(c64), s, p + c64)
    return s.astype(np.float32)


_SPLIT = 134217729.0  # 2**27 + 1: Dekker's splitting constant for binary64


def _split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    t = _SPLIT * a
    hi = t - (t - a)
    return hi, a - hi


def fma64(a, b, c) -> np.ndarray:
    """fma(a, b, c) in double with one rounding, as fma.rn.f64 (see the module docstring)."""
    a, b, c = (np.asarray(v, dtype=np.float64) for v in (a, b, c))
    with np.errstate(invalid="ignore", over="ignore"):
        uh = a * b
        ahi, alo = _split(a)
        bhi, blo = _split(b)
        ul = ((ahi * bhi - uh) + ahi * blo + alo * bhi) + alo * blo
        th, tl = _two_sum(c, uh)
        v = _add_round_to_odd(tl, ul)
        z = np.where(v == 0, th, th + v)
        ok = np.isfinite(uh) & np.isfinite(c) & np.isfinite(ul)
        return np.where(ok, z, uh + c)


def round_f64(v, dtype, mode: str = "rn") -> np.ndarray:
    """Float64 values rounded to float32 or float16 with "rn", "rz", "ru" or "rd".

    Exact when v is the exact result or one rounded to odd in float64 (an inexact value then
    lies strictly between the same two neighbours as the exact one).
    """
    v = np.asarray(v, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        nearest = v.astype(dtype)
        if mode == "rn":
            return nearest
        back = nearest.astype(np.float64)
        down = np.where(back > v, np.nextafter(nearest, dtype(-np.inf)), nearest)
        up = np.where(back < v, np.nextafter(nearest, dtype(np.inf)), nearest)
    if mode == "rd":
        return down
    if mode == "ru":
        return up
    if mode == "rz":
        return np.where(v >= 0, down, up)
    raise ValueError(f"unknown rounding mode {mode!r}")


def to_f32(v, mode: str = "rn") -> np.ndarray:
    return round_f64(v, np.float32, mode)


def to_f16(v, mode: str = "rn") -> np.ndarray:
    return round_f64(v, np.float16, mode)


def round_to_bits(v, bits: int) -> np.ndarray:
    """Float64 values rounded to nearest-even with `bits` significant bits (normal range only)."""
    v = np.asarray(v, dtype=np.float64)
    m, e = np.frexp(v)
    return np.ldexp(np.rint(np.ldexp(m, bits)), e - bits)


def bf16_to_f32(bits) -> np.ndarray:
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def bf16_bits_rn(x) -> np.ndarray:
    """float32 -> bfloat16 bits, round to nearest even (cvt.rn.bf16.f32); NaN -> 0x7fff."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(np.asarray(x, dtype=np.float32)), np.uint16(0x7FFF), rounded)


def bf16_bits_rz(x) -> np.ndarray:
    """float32 -> bfloat16 bits, truncating (cvt.rz.bf16.f32); NaN -> 0x7fff."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32)
    rounded = (u >> 16).astype(np.uint16)
    return np.where(np.isnan(np.asarray(x, dtype=np.float32)), np.uint16(0x7FFF), rounded)
