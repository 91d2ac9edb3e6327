"""Cases for the files that sweep one family of operations per kernel: conversions,
float_intrinsics, int_intrinsics, int64_arith and hash_rng.

Each kernel writes k stacked output arrays out[k*n + i]; the references build the same stack.
Inputs mix random values with the edge values of each operation (ties, zeros, infinities,
NaN, saturation bounds). Integer references use Python integers where numpy would overflow
or lacks the operation, which is slow but fine for n <= 1000.
"""

from __future__ import annotations

import numpy as np

from ._core import KernelCase, inout, inp, out, scalar
from ._numerics import _add_round_to_odd, f32, fma32, poison, round_f64, to_f32

__all__ = ["CASES"]

M32 = (1 << 32) - 1
M64 = (1 << 64) - 1


def grid1(n: int, block: int) -> tuple[int, int, int]:
    return ((n + block - 1) // block, 1, 1)


def _s32(v: int) -> int:
    v &= M32
    return v - (1 << 32) if v >> 31 else v


def _s16(v: int) -> int:
    return v - 0x10000 if v & 0x8000 else v


def _s64(v: int) -> int:
    v &= M64
    return v - (1 << 64) if v >> 63 else v


def _map(fn, *columns, dtype):
    return np.array([fn(*(int(c) for c in row)) for row in zip(*columns, strict=True)],
                    dtype=object).astype(dtype)


# conversions.cu ---------------------------------------------------------------------------------

N_CONV = 1000


def _int_conv_args(rng):
    magnitude = rng.integers(0, 1 << 62, N_CONV, dtype=np.int64) >> rng.integers(0, 62, N_CONV)
    x = np.where(rng.integers(0, 2, N_CONV) == 1, magnitude, -magnitude)
    specials = [0, -1, 1, 127, 128, -129, 255, 256, 32767, -32769, 65535, 65536, 2**31 - 1,
                -(2**31), 2**31, 2**32 - 1, 2**32 + 5, 2**62 - 1, -(2**62 - 1), 2**24 + 1,
                2**25 + 3, -(2**53) - 1, 2**61 + 2**37]
    x[: len(specials)] = specials
    return [inp(x), out(poison(9 * N_CONV, np.int64)), scalar(np.int32(N_CONV))]


def _int64_to_f32(x: np.ndarray) -> np.ndarray:
    """Correctly rounded int64 -> float32 (cvt.rn.f32.s64): the two 32-bit halves are exact
    doubles, summed with rounding to odd."""
    high = (x >> 32 << 32).astype(np.float64)
    low = (x & 0xFFFFFFFF).astype(np.float64)
    return _add_round_to_odd(high, low).astype(np.float32)


def _int_conv_ref(args):
    x = args[0].value
    parts = [x.astype(np.int8), x.astype(np.uint8), x.astype(np.int16), x.astype(np.uint16),
             x.astype(np.int32), x.astype(np.uint32),
             _int64_to_f32(x).astype(np.int64),
             np.array([float(int(v) & M64) for v in x]).view(np.int64),
             np.array([float(int(v)) for v in x]).view(np.int64)]
    return {1: np.concatenate([p.astype(np.int64) for p in parts])}


def _float_conv_args(rng):
    x = np.concatenate([rng.uniform(-2.0**31 + 1, 2.0**31 - 1, N_CONV // 4),
                        rng.uniform(-10, 10, N_CONV // 4),
                        rng.integers(-1000, 1000, N_CONV // 4) + 0.5,
                        rng.standard_normal(N_CONV - 3 * (N_CONV // 4)) * 1e-3])
    specials = [0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 2.0**31 - 0.5, -(2.0**31) + 0.25,
                16777217.0, 1 + 2.0**-30, 3.4e38 / 2**100, 1e-50, -1e-50]
    x[: len(specials)] = specials
    return [inp(x), out(poison(4 * N_CONV, np.float32)), out(poison(2 * N_CONV, np.int32)),
            out(poison(N_CONV, np.uint32)), out(poison(2 * N_CONV, np.float64)),
            scalar(np.int32(N_CONV))]


def _float_conv_ref(args):
    x = args[0].value
    f = np.stack([to_f32(x, mode) for mode in ("rn", "rz", "ru", "rd")], axis=1)
    truncated = np.trunc(x).astype(np.int32)
    nearest = np.clip(np.rint(x), -(2.0**31), 2.0**31 - 1).astype(np.int32)
    i32 = np.stack([truncated, nearest], axis=1)
    u32 = np.trunc(np.abs(x)).astype(np.uint32)
    d = np.stack([x.astype(np.float32).astype(np.float64),
                  truncated.astype(np.float32).astype(np.float64)], axis=1)
    return {1: f.ravel(), 2: i32.ravel(), 3: u32, 4: d.ravel()}


CONVERSIONS = [
    KernelCase("conversions.cu", "int_conversions", grid1(N_CONV, 256), (256, 1, 1), 0,
               _int_conv_args, _int_conv_ref, notes="exact; the double results as their bits"),
    KernelCase("conversions.cu", "float_conversions", grid1(N_CONV, 256), (256, 1, 1), 0,
               _float_conv_args, _float_conv_ref, notes="exact, every rounding mode"),
]

# float_intrinsics.cu ----------------------------------------------------------------------------

N_FLT = 1000


def _fast_math_args(rng):
    x = f32(rng.uniform(-np.pi, np.pi, N_FLT))
    x = np.where(np.abs(x) < 1e-3, np.float32(0.25), x)
    y = f32(rng.uniform(0.5, 4, N_FLT) * rng.choice([-1, 1], N_FLT))
    x[:3] = [np.nan, 1.0, -1.0]
    return [inp(x), inp(y), out(poison(8 * N_FLT, np.float32)), scalar(np.int32(N_FLT))]


def _fast_math_ref(args):
    a = args[0].value.astype(np.float64)
    b = args[1].value.astype(np.float64)
    with np.errstate(all="ignore"):
        parts = [np.exp(a), np.sin(a), np.cos(a), np.log(np.abs(a)), a / b,
                 1 / np.sqrt(np.abs(a)), np.nan_to_num(np.clip(a, 0, 1), nan=0.0),
                 np.power(np.abs(a), b)]
    return {2: np.concatenate(parts).astype(np.float32)}


def _rounding_args(rng):
    def values():
        return f32(rng.uniform(1, 2, N_FLT) * np.exp2(rng.integers(-10, 11, N_FLT))
                   * rng.choice([-1, 1], N_FLT))
    x, y = values(), values()
    pairs = [(0.0, -0.0), (-0.0, -0.0), (1.5, -1.5), (np.inf, 2.0), (-np.inf, np.inf),
             (3.0, 0.0), (0.0, 0.0), (np.nan, 1.0), (-0.0, 5.0), (1.0, 3.0), (-1.0, 3.0),
             (2.0, 0.5), (1 + 2**-23, 1 - 2**-24), (16777215.0, 0.5)]
    for k, (a, b) in enumerate(pairs):
        x[k], y[k] = a, b
    return [inp(x), inp(y), out(poison(16 * N_FLT, np.float32)), scalar(np.int32(N_FLT))]


def _add_directed(x: np.ndarray, y: np.ndarray, mode: str) -> np.ndarray:
    """__fadd_r?: the float64 sum of two floats of nearby exponents is exact; an exact zero sum
    is -0 under rounding down unless both operands are +0 (IEEE 754 6.3)."""
    s = x.astype(np.float64) + y.astype(np.float64)
    r = round_f64(s, np.float32, mode)
    if mode == "rd":
        both_plus_zero = (x == 0) & (y == 0) & ~np.signbit(x) & ~np.signbit(y)
        r = np.where((s == 0) & ~both_plus_zero, np.float32(-0.0), r)
    return r


def _rounding_ref(args):
    x, y = args[0].value, args[1].value
    a, b = x.astype(np.float64), y.astype(np.float64)
    with np.errstate(all="ignore"):
        product = a * b
        parts = [_add_directed(x, y, m) for m in ("rn", "rz", "ru", "rd")]
        parts += [round_f64(product, np.float32, m) for m in ("rn", "rz", "ru", "rd")]
        parts += [fma32(x, y, np.float32(1)),
                  round_f64(_add_round_to_odd(product, np.full_like(product, -1.0)),
                            np.float32, "rz"),
                  round_f64(a / b, np.float32, "rn"), round_f64(a / b, np.float32, "rd"),
                  round_f64(np.sqrt(np.abs(a)), np.float32, "rn"),
                  round_f64(np.sqrt(np.abs(a)), np.float32, "ru"),
                  round_f64(1 / a, np.float32, "rn"), round_f64(1 / a, np.float32, "rz")]
    return {2: np.concatenate(parts)}


def _to_int_args(rng):
    x = np.concatenate([f32(rng.integers(-100, 100, N_FLT // 2) + 0.5),
                        f32(rng.uniform(-3e9, 3e9, N_FLT // 4)),
                        f32(rng.standard_normal(N_FLT - 3 * (N_FLT // 4)) * 1e3)])
    specials = [np.nan, np.inf, -np.inf, 2.0**31, -(2.0**31), 2147483520.0, 3e9, 4.3e9, 1e19,
                -1e19, -1.5, -2.5, 2.5, 0.5, -0.5, -0.0, 1e-30, 2.0**63, -(2.0**63)]
    x[: len(specials)] = specials
    return [inp(x), out(poison(4 * N_FLT, np.int32)), out(poison(N_FLT, np.uint32)),
            out(poison(N_FLT, np.int64)), scalar(np.int32(N_FLT))]


def _saturate(r: np.ndarray, low: float, high: float, dtype, nan_value) -> np.ndarray:
    """Float64 integral values -> dtype, saturating at [low, high], NaN -> nan_value."""
    result = np.where(np.isnan(r), 0.0, np.clip(r, low, high))
    as_int = np.array([int(v) for v in result], dtype=object)
    as_int[np.isnan(r)] = nan_value
    return as_int.astype(dtype)


def _to_int_ref(args):
    x = args[0].value.astype(np.float64)
    i32 = [_saturate(fn(x), -(2.0**31), 2.0**31 - 1, np.int32, 0)
           for fn in (np.rint, np.trunc, np.ceil, np.floor)]
    u32 = _saturate(np.rint(x), 0, 2.0**32 - 1, np.uint32, 0)
    largest_below = 9223372036854774784.0  # the last double before 2**63
    i64 = np.where(x >= 2.0**63, np.iinfo(np.int64).max,
                   _saturate(np.trunc(x), -(2.0**63), largest_below, np.int64, -(1 << 63)))
    return {1: np.concatenate(i32), 2: u32, 3: i64}


def _misc_args(rng):
    x = f32(rng.uniform(0.5, 2, N_FLT) * np.exp2(rng.integers(-20, 21, N_FLT))
            * rng.choice([-1, 1], N_FLT))
    x[N_FLT // 2:] = f32(rng.integers(-20, 21, N_FLT - N_FLT // 2) + 0.5)
    y = f32(rng.uniform(-200, 200, N_FLT))
    specials = [np.nan, np.inf, -np.inf, 0.49999997, -0.49999997, 2.5, -2.5, 1e-40, 8388609.0,
                -0.0, 3.0, 1e30]
    x[: len(specials)] = specials
    y[len(specials)] = np.nan
    y[len(specials) + 1] = x[len(specials) + 1]  # nextafterf(x, x) and fdimf(x, x)
    return [inp(x), inp(y), out(poison(14 * N_FLT, np.float32)), scalar(np.int32(N_FLT))]


def _roundf(x: np.ndarray) -> np.ndarray:
    a = x.astype(np.float64)
    return np.copysign(np.floor(np.abs(a) + 0.5), a).astype(np.float32)


def _misc_ref(args):
    x, y = args[0].value, args[1].value
    exponent = np.where(np.isnan(y), 0, np.trunc(np.nan_to_num(y))).astype(np.int32)
    with np.errstate(all="ignore"):
        parts = [np.fmin(x, y), np.fmax(x, y), np.copysign(x, y), np.trunc(x), np.rint(x),
                 np.where(np.isfinite(x), _roundf(x), x), np.floor(x), np.ceil(x), np.abs(x),
                 np.nextafter(x, y),
                 np.where(np.isnan(x) | np.isnan(y), np.float32(np.nan),
                          np.where(x > y, x - y, np.float32(0))),
                 np.ldexp(x, exponent), x / y, np.sqrt(np.abs(x))]
    return {2: np.concatenate([f32(p) for p in parts])}


FLOAT_INTRINSICS = [
    KernelCase("float_intrinsics.cu", "float_fast_math", grid1(N_FLT, 256), (256, 1, 1), 0,
               _fast_math_args, _fast_math_ref, rtol=2e-5, atol=2e-6,
               notes="approximate intrinsics: __powf/__expf errors grow with |y log2 x|; "
                     "__sinf/__cosf/__logf absolute error ~2**-21.4; __saturatef(NaN) = 0"),
    KernelCase("float_intrinsics.cu", "float_rounding", grid1(N_FLT, 256), (256, 1, 1), 0,
               _rounding_args, _rounding_ref,
               notes="exact IEEE results in all four rounding modes, with signed zeros"),
    KernelCase("float_intrinsics.cu", "float_to_int", grid1(N_FLT, 256), (256, 1, 1), 0,
               _to_int_args, _to_int_ref,
               notes="saturating; NaN gives 0, except INT64_MIN for the 64-bit result"),
    KernelCase("float_intrinsics.cu", "float_misc", grid1(N_FLT, 256), (256, 1, 1), 0,
               _misc_args, _misc_ref,
               notes="exact; (int)NaN is 0 as cvt.rzi.s32.f32 gives; no ±0 ties in fmin/fmax"),
]

# int_intrinsics.cu ------------------------------------------------------------------------------

N_INT = 1000


def _brev(v: int, bits: int) -> int:
    return int(f"{v:0{bits}b}"[::-1], 2)


def _ffs(v: int) -> int:
    return (v & -v).bit_length()


def _byte_perm(a: int, b: int, s: int) -> int:
    source = a | (b << 32)
    return sum(((source >> (8 * ((s >> (4 * j)) & 7))) & 0xFF) << (8 * j) for j in range(4))


def _bytes(v: int, signed: bool) -> list[int]:
    parts = [(v >> (8 * k)) & 0xFF for k in range(4)]
    return [p - 256 if signed and p >= 128 else p for p in parts]


def _u32_ops(a: int, b: int) -> list[int]:
    s = b & 63
    pair = a | (b << 32)
    sa, sb = _s32(a), _s32(b)
    halves = [_s16(a & 0xFFFF), _s16(a >> 16)]
    return [
        bin(a).count("1"), 32 - a.bit_length(), _brev(a, 32), _ffs(a),
        _byte_perm(a, b, b >> 16),
        ((pair << (s & 31)) >> 32) & M32, (pair >> (s & 31)) & M32,
        ((pair << min(s, 32)) >> 32) & M32, (pair >> min(s, 32)) & M32,
        (a * b) >> 32, ((sa * sb) >> 32) & M32,
        (abs(sa - sb) + 7) & M32, (abs(a - b) + 7) & M32,
        (sum(p * q for p, q in zip(_bytes(a, True), _bytes(b, True), strict=True)) + 100) & M32,
        (sum(p * q for p, q in zip(_bytes(a, False), _bytes(b, False), strict=True)) + 100) & M32,
        (halves[0] * _bytes(b, True)[0] + halves[1] * _bytes(b, True)[1]) & M32,
    ]


def _int_u32_args(rng):
    x = rng.integers(0, 1 << 32, N_INT, dtype=np.uint64).astype(np.uint32)
    y = rng.integers(0, 1 << 32, N_INT, dtype=np.uint64).astype(np.uint32)
    x[:6] = [0, 1, 0x80000000, M32, 0x7FFFFFFF, 0x00FF00FF]
    y[:6] = [0, 32, 33, 63, 31, 0x76543210]
    return [inp(x), inp(y), out(poison(16 * N_INT, np.uint32)), scalar(np.int32(N_INT))]


def _int_u32_ref(args):
    rows = [_u32_ops(int(a), int(b)) for a, b in zip(args[0].value, args[1].value, strict=True)]
    return {2: np.array(rows, dtype=np.uint64).T.ravel().astype(np.uint32)}


def _u64_ops(a: int, b: int) -> list[int]:
    sa, sb = _s64(a), _s64(b)
    s = b & 63
    return [bin(a).count("1"), 64 - a.bit_length(), _brev(a, 64), _ffs(a), (a * b) >> 64,
            ((sa * sb) >> 64) & M64, a >> s, (sa >> s) & M64, (a << s) & M64]


def _int_u64_args(rng):
    x = rng.integers(0, 1 << 64, N_INT, dtype=np.uint64, endpoint=False)
    x >>= rng.integers(0, 64, N_INT).astype(np.uint64)
    y = rng.integers(0, 1 << 64, N_INT, dtype=np.uint64, endpoint=False)
    x[:4] = [0, 1, 1 << 63, M64]
    y[:4] = [0, 64, 63, M64]
    return [inp(x), inp(y), out(poison(9 * N_INT, np.uint64)), scalar(np.int32(N_INT))]


def _int_u64_ref(args):
    rows = [_u64_ops(int(a), int(b)) for a, b in zip(args[0].value, args[1].value, strict=True)]
    return {2: np.array(rows, dtype=object).T.ravel().astype(np.uint64)}


def _bitfield_args(rng):
    x = rng.integers(0, 1 << 32, N_INT, dtype=np.uint64).astype(np.uint32)
    return [inp(x), out(poison(3 * N_INT, np.uint32)), scalar(np.int32(N_INT))]


def _bitfield_ref(args):
    v = args[0].value
    return {1: np.concatenate([(v >> 5) & 0x3FF, (v & ~np.uint32(0xFF00)) | ((v >> 24) << 8),
                               (v & 0xFFFF).astype(np.uint16).view(np.int16).astype(np.int32)
                               .view(np.uint32)])}


INT_INTRINSICS = [
    KernelCase("int_intrinsics.cu", "int_bits_u32", grid1(N_INT, 256), (256, 1, 1), 0,
               _int_u32_args, _int_u32_ref, notes="exact"),
    KernelCase("int_intrinsics.cu", "int_bits_u64", grid1(N_INT, 256), (256, 1, 1), 0,
               _int_u64_args, _int_u64_ref, notes="exact"),
    KernelCase("int_intrinsics.cu", "int_bitfield", grid1(N_INT, 256), (256, 1, 1), 0,
               _bitfield_args, _bitfield_ref, notes="exact"),
]

# int64_arith.cu ---------------------------------------------------------------------------------

N_I64 = 600


def _int64_args(rng):
    def values():
        magnitude = rng.integers(1, 1 << 63, N_I64, dtype=np.int64, endpoint=False)
        magnitude >>= rng.integers(0, 63, N_I64)
        return np.where(rng.integers(0, 2, N_I64) == 1, magnitude, -magnitude)
    x, y = values(), values()
    y = np.where(y == 0, 3, y)
    x[:8] = [-(1 << 63), -(1 << 63), (1 << 63) - 1, -7, 7, -7, 0, 1 << 40]
    y[:8] = [1, 2, -1, 2, -2, -2, 5, (1 << 40) + 1]
    return [inp(x), inp(y), out(poison(12 * N_I64, np.int64)), scalar(np.int32(N_I64))]


def _int64_row(a: int, b: int) -> list[int]:
    ua, ub = a & M64, b & M64
    q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
    return [q, a - q * b, ua // ub, ua % ub, ua * ub, ua + ub, ua - ub,
            _s32(a) * _s32(b), min(a, b), max(ua, ub), (-ua if a < 0 else a),
            -1 if a < b else (1 if a > b else 0)]


def _int64_ref(args):
    rows = [[_s64(v) for v in _int64_row(int(a), int(b))]
            for a, b in zip(args[0].value, args[1].value, strict=True)]
    return {2: np.array(rows, dtype=object).T.ravel().astype(np.int64)}


LCG_MULT, LCG_INC = 6364136223846793005, 1442695040888963407


def _lcg_args(rng):
    seeds = rng.integers(0, 1 << 64, N_I64, dtype=np.uint64, endpoint=False)
    steps = rng.integers(0, 1 << 40, N_I64, dtype=np.uint64)
    steps >>= rng.integers(0, 40, N_I64).astype(np.uint64)
    steps[:4] = [0, 1, 2, (1 << 64) - 1]
    return [inp(seeds), inp(steps), out(poison(N_I64, np.uint64)), scalar(np.int32(N_I64))]


def _lcg_advance(seed: int, steps: int) -> int:
    """s -> M s + C applied `steps` times: the affine map raised to a power, mod 2**64."""
    mult, inc, acc_mult, acc_inc = LCG_MULT, LCG_INC, 1, 0
    while steps:
        if steps & 1:
            acc_mult, acc_inc = acc_mult * mult & M64, (acc_inc * mult + inc) & M64
        inc, mult = (mult + 1) * inc & M64, mult * mult & M64
        steps >>= 1
    return (acc_mult * seed + acc_inc) & M64


def _lcg_ref(args):
    seeds, steps = args[0].value, args[1].value
    # check the power algorithm against plain stepping where that is cheap
    for seed, count in zip(seeds[:3], steps[:3], strict=True):
        s = int(seed)
        for _ in range(int(count)):
            s = (LCG_MULT * s + LCG_INC) & M64
        assert s == _lcg_advance(int(seed), int(count))
    return {2: _map(_lcg_advance, seeds, steps, dtype=np.uint64)}


INT64 = [
    KernelCase("int64_arith.cu", "int64_ops", grid1(N_I64, 256), (256, 1, 1), 0,
               _int64_args, _int64_ref, notes="exact; no division by 0 or INT64_MIN / -1"),
    KernelCase("int64_arith.cu", "lcg_skip", grid1(N_I64, 256), (256, 1, 1), 0,
               _lcg_args, _lcg_ref, notes="exact; steps up to 2**64 - 1"),
]

# hash_rng.cu ------------------------------------------------------------------------------------

N_HASH = 1000


def _fmix32(h: np.ndarray) -> np.ndarray:
    h = h.astype(np.uint64)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & M32
    h ^= h >> 16
    return h.astype(np.uint32)


def _murmur_args(rng):
    x = rng.integers(0, 1 << 32, N_HASH, dtype=np.uint64).astype(np.uint32)
    x[:3] = [0, 1, M32]
    return [inp(x), out(poison(N_HASH, np.uint32)), scalar(np.int32(N_HASH))]


XORSHIFT_STEPS = 5


def _xorshift_args(rng):
    state = rng.integers(1, 1 << 64, N_HASH, dtype=np.uint64, endpoint=False)
    return [inout(state), out(poison(N_HASH, np.uint64)), scalar(np.int32(N_HASH)),
            scalar(np.int32(XORSHIFT_STEPS))]


def _xorshift_ref(args):
    s = args[0].value.copy()
    r = np.zeros_like(s)
    with np.errstate(over="ignore"):
        for _ in range(XORSHIFT_STEPS):
            s ^= s >> np.uint64(12)
            s ^= s << np.uint64(25)
            s ^= s >> np.uint64(27)
            r = s * np.uint64(0x2545F4914F6CDD1D)
    return {0: s, 1: r}


N_PHILOX = 2048


def _philox_ref(args):
    seed = int(args[0].value)
    c0 = np.arange(N_PHILOX // 4, dtype=np.uint64)
    c1, c2, c3 = (np.zeros_like(c0) for _ in range(3))
    k0, k1 = seed & M32, seed >> 32
    for _ in range(10):
        p0, p1 = c0 * 0xD2511F53, c2 * 0xCD9E8D57
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & M32, (p0 >> 32) ^ c3 ^ k1, p0 & M32
        k0, k1 = (k0 + 0x9E3779B9) & M32, (k1 + 0xBB67AE85) & M32
    words = np.stack([c0, c1, c2, c3], axis=1).ravel()
    return {1: ((words >> 8).astype(np.float64) * 2.0**-24).astype(np.float32)}


HASH_RNG = [
    KernelCase("hash_rng.cu", "murmur_fmix32", grid1(N_HASH, 256), (256, 1, 1), 0,
               _murmur_args, lambda a: {1: _fmix32(a[0].value)}, notes="exact"),
    KernelCase("hash_rng.cu", "xorshift64star", grid1(N_HASH, 256), (256, 1, 1), 0,
               _xorshift_args, _xorshift_ref, notes="exact"),
    KernelCase("hash_rng.cu", "philox4x32_uniform", grid1(N_PHILOX // 4, 128), (128, 1, 1), 0,
               lambda rng: [scalar(np.uint64(0x243F6A8885A308D3)),
                            out(poison(N_PHILOX, np.float32)), scalar(np.int32(N_PHILOX))],
               _philox_ref, notes="exact: 24-bit integers times 2**-24"),
]

CASES = CONVERSIONS + FLOAT_INTRINSICS + INT_INTRINSICS + INT64 + HASH_RNG
