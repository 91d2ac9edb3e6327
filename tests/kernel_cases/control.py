"""Cases for the files about control flow and code shape: control_flow, device_functions,
noinline_sync, noinline_shared, inline_asm, printf_kernel, clock_timing and assert_kernel.

All integer results are exact; the float ones are computed in float32 exactly as the kernels
do (their multiplications by 0.5 and 2 are exact, so contraction changes nothing).
"""

from __future__ import annotations

from functools import cache

import numpy as np

from ._core import KernelCase, inp, out, scalar
from ._numerics import f32, poison

__all__ = ["CASES"]


def grid1(n: int, block: int) -> tuple[int, int, int]:
    return ((n + block - 1) // block, 1, 1)


def _wrap32(v: np.ndarray) -> np.ndarray:
    """int64 values reduced modulo 2**32 to int32 (two's complement)."""
    return (((v & 0xFFFFFFFF) ^ 0x80000000) - 0x80000000).astype(np.int32)


# control_flow.cu --------------------------------------------------------------------------------

N_CF = 1000


def _switch_args(rng):
    op = rng.integers(-2, 15, N_CF).astype(np.int32)
    a = rng.integers(-(2**31), 2**31, N_CF).astype(np.int32)
    b = rng.integers(-(2**31), 2**31, N_CF).astype(np.int32)
    small = rng.random(N_CF) < 0.5
    a[small] = rng.integers(-100, 100, small.sum())
    b[small] = rng.integers(-40, 40, small.sum())
    specials = [(11, -(2**31), -1), (11, 7, 0), (11, -7, 2), (11, 7, -2), (7, -5, 1), (6, 1, 31),
                (10, 3, 3), (2, 2**31 - 1, 2**31 - 1), (0, 2**31 - 1, 1), (1, -(2**31), 1)]
    for k, (o, x, y) in enumerate(specials):
        op[k], a[k], b[k] = o, x, y
    return [inp(op), inp(a), inp(b), out(poison(N_CF, np.int32)), scalar(np.int32(N_CF))]


def _switch_ref(args):
    op = args[0].value
    a, b = (args[k].value.astype(np.int64) for k in (1, 2))
    shift = b & 31
    valid = (b != 0) & ~((a == -(2**31)) & (b == -1))
    quotient = np.abs(a) // np.where(b == 0, 1, np.abs(b)) * np.sign(a) * np.sign(b)
    table = [a + b, a - b, a * b, a & b, a | b, a ^ b, a << shift, a >> shift,
             np.minimum(a, b), np.maximum(a, b), (a == b).astype(np.int64),
             np.where(valid, quotient, 0)]
    result = np.full(N_CF, -1, dtype=np.int64)
    for code, values in enumerate(table):
        result = np.where(op == code, values, result)
    return {3: _wrap32(result)}


@cache
def _nested_count(limit: int) -> int:
    count = 0
    for p in range(limit):
        for q in range(limit):
            if (p + q) % 3 == 0:
                continue
            if p * q > 50:
                break
            count += 1
        if count > 500:
            break
    return count


def _nested_args(rng):
    limits = rng.integers(0, 65, N_CF).astype(np.int32)
    limits[:3] = [0, 1, 64]
    return [inp(limits), out(poison(N_CF, np.int32)), scalar(np.int32(N_CF))]


def _collatz_args(rng):
    start = rng.integers(1, 2**31, N_CF).astype(np.uint32)
    start[:4] = [1, 2, 27, 2**31 - 1]
    return [inp(start), out(poison(N_CF, np.int32)), scalar(np.int32(N_CF))]


def _collatz_ref(args):
    v = args[0].value.astype(np.uint64)
    steps = np.zeros(N_CF, dtype=np.int32)
    with np.errstate(over="ignore"):
        for _ in range(1000):
            running = v != 1
            if not running.any():
                break
            v = np.where(running, np.where(v & 1, 3 * v + 1, v >> np.uint64(1)), v)
            steps += running
    return {1: steps}


def _select_args(rng):
    x = rng.integers(-300, 300, N_CF).astype(np.int32)
    x[:6] = [-101, -100, 0, 101, 102, 100]
    return [inp(x), out(poison(N_CF, np.int32)), scalar(np.int32(N_CF))]


def _select_ref(args):
    v = args[0].value
    conditions = [v < -100, v < 0, v == 0, (v > 100) & (v & 1 == 1)]
    return {1: np.select(conditions, [-3, -1, 0, 3], default=1).astype(np.int32)}


CONTROL_FLOW = [
    KernelCase("control_flow.cu", "switch_dispatch", grid1(N_CF, 128), (128, 1, 1), 0,
               _switch_args, _switch_ref, notes="exact; every case, the default, and division "
                                                "by 0 and INT_MIN / -1"),
    KernelCase("control_flow.cu", "nested_loops", grid1(N_CF, 128), (128, 1, 1), 0,
               _nested_args,
               lambda a: {1: np.array([_nested_count(int(v)) for v in a[0].value],
                                      dtype=np.int32)}, notes="exact"),
    KernelCase("control_flow.cu", "goto_collatz", grid1(N_CF, 128), (128, 1, 1), 0,
               _collatz_args, _collatz_ref, notes="exact; 64-bit trajectories, capped at 1000"),
    KernelCase("control_flow.cu", "select_chain", grid1(N_CF, 128), (128, 1, 1), 0,
               _select_args, _select_ref, notes="exact"),
]

# device_functions.cu ----------------------------------------------------------------------------

N_DF = 200


def _factorial(k: int) -> int:
    result = 1
    for j in range(2, k + 1):
        result = result * j % (1 << 64)
    return result


@cache
def _fib(k: int) -> int:
    return k if k < 2 else _fib(k - 1) + _fib(k - 2)


def _noinline_ref(args):
    x = args[0].value
    other = np.float32(2) * x - np.float32(1)
    lo, hi = np.fmin(x, other), np.fmax(x, other)
    return {1: np.clip(lo, np.float32(0), np.float32(1)) + hi * np.float32(0.5)}


DEVICE_FUNCTIONS = [
    KernelCase("device_functions.cu", "recursive_factorial", grid1(N_DF, 64), (64, 1, 1), 0,
               lambda rng: [inp(rng.integers(0, 26, N_DF).astype(np.int32)),
                            out(poison(N_DF, np.uint64)), scalar(np.int32(N_DF))],
               lambda a: {1: np.array([_factorial(int(k)) for k in a[0].value],
                                      dtype=np.uint64)},
               notes="exact, modulo 2**64"),
    KernelCase("device_functions.cu", "recursive_fib", grid1(N_DF, 64), (64, 1, 1), 0,
               lambda rng: [inp(rng.integers(0, 21, N_DF).astype(np.int32)),
                            out(poison(N_DF, np.int32)), scalar(np.int32(N_DF))],
               lambda a: {1: np.array([_fib(int(k)) for k in a[0].value], dtype=np.int32)},
               notes="exact"),
    KernelCase("device_functions.cu", "noinline_calls", grid1(N_DF, 128), (128, 1, 1), 0,
               lambda rng: [inp(f32(rng.uniform(-2, 2, N_DF))), out(poison(N_DF, np.float32)),
                            scalar(np.int32(N_DF))],
               _noinline_ref, notes="exact: the multiplications by 2 and 0.5 are exact"),
    KernelCase("device_functions.cu", "_Z14scale_by_powerIiLi3EEvPKT_PS0_i", grid1(N_DF, 128),
               (128, 1, 1), 0,
               lambda rng: [inp(rng.integers(-(2**31), 2**31, N_DF).astype(np.int32)),
                            out(poison(N_DF, np.int32)), scalar(np.int32(N_DF))],
               lambda a: {1: (a[0].value.view(np.uint32) ** 3).view(np.int32)},
               notes="scale_by_power<int, 3>: exact, wrapping"),
    KernelCase("device_functions.cu", "_Z14scale_by_powerIdLi2EEvPKT_PS0_i", grid1(N_DF, 128),
               (128, 1, 1), 0,
               lambda rng: [inp(rng.standard_normal(N_DF) * 1e3), out(poison(N_DF, np.float64)),
                            scalar(np.int32(N_DF))],
               lambda a: {1: a[0].value * a[0].value}, notes="scale_by_power<double, 2>: exact"),
]

# inline_asm.cu ----------------------------------------------------------------------------------

N_LANES = 256
N_ASM = 1000


def _lane_ref(args):
    lane = np.arange(N_LANES, dtype=np.uint32) % 32
    below = ((np.uint64(1) << lane.astype(np.uint64)) - np.uint64(1)).astype(np.uint32)
    return {0: np.stack([lane, below, lane // 2], axis=1).ravel()}


def _asm_args(rng):
    a, b, c = (rng.integers(0, 2**32, N_ASM, dtype=np.uint64).astype(np.uint32) for _ in range(3))
    a[:2], b[:2] = [5, 0xFFFF8000], [3, 0]
    return [inp(a), inp(b), inp(c), out(poison(7 * N_ASM, np.uint32)), scalar(np.int32(N_ASM))]


def _asm_ref(args):
    a, b, c = (args[k].value for k in range(3))
    field = (a >> 4) & 0xFFF
    signed_field = np.where(field & 0x800, field | np.uint32(0xFFFFF000), field)
    pair = a.astype(np.uint64) | (b.astype(np.uint64) << np.uint64(32))
    start = (c & 3).astype(np.uint64) * np.uint64(8)
    prmt = ((pair >> start) & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    parts = [a ^ b ^ c, (a & b) | (a & c) | (b & c), field, signed_field,
             (a & ~np.uint32(0xFF00)) | ((b & 0xFF) << 8), prmt, (a > b).astype(np.uint32)]
    return {3: np.concatenate(parts).astype(np.uint32)}


INLINE_ASM = [
    KernelCase("inline_asm.cu", "asm_lane_info", (N_LANES // 64, 1, 1), (64, 1, 1), 0,
               lambda rng: [out(poison(3 * N_LANES, np.uint32)), scalar(np.int32(N_LANES))],
               _lane_ref, notes="exact; full warps"),
    KernelCase("inline_asm.cu", "asm_bit_ops", grid1(N_ASM, 256), (256, 1, 1), 0,
               _asm_args, _asm_ref, notes="exact; prmt.f4e reads the selector's low 2 bits"),
]

# printf_kernel.cu and clock_timing.cu ----------------------------------------------------------

N_TIMED, ITERATIONS = 500, 20


def _timed_ref(args):
    v = args[0].value.copy()
    for _ in range(ITERATIONS):
        v = v * np.float32(0.5) + np.float32(0.25)
    return {1: v, 2: np.ones(N_TIMED, dtype=np.uint64)}


SIDE_EFFECTS = [
    KernelCase("printf_kernel.cu", "printf_values", (2, 1, 1), (4, 1, 1), 0,
               lambda rng: [inp(f32(rng.uniform(-10, 10, 7))), scalar(np.int32(7))],
               lambda a: {},
               notes="no buffer output: 7 lines of stdout (checked elsewhere); thread 7 prints "
                     "nothing"),
    KernelCase("printf_kernel.cu", "printf_once", (1, 1, 1), (32, 1, 1), 0,
               lambda rng: [scalar(np.int32(-42)), scalar(np.float64(2.5e-3))],
               lambda a: {}, notes="no buffer output: one line of stdout (checked elsewhere)"),
    KernelCase("clock_timing.cu", "timed_work", grid1(N_TIMED, 128), (128, 1, 1), 0,
               lambda rng: [inp(f32(rng.uniform(-100, 100, N_TIMED))),
                            out(poison(N_TIMED, np.float32)), out(poison(N_TIMED, np.uint64)),
                            scalar(np.int32(N_TIMED)), scalar(np.int32(ITERATIONS))],
               _timed_ref,
               notes="exact; only the order-independent facts of the timers: they never go back"),
    KernelCase("clock_timing.cu", "clock32_delta", (1, 1, 1), (32, 1, 1), 0,
               lambda rng: [out(poison(32, np.uint32))],
               lambda a: {0: np.ones(32, dtype=np.uint32)},
               notes="%clock counts up across a __nanosleep"),
]

# noinline_sync.cu and noinline_shared.cu ----------------------------------------------------------

G_NS, B_NS = 6, 256
S1_NS, S2_NS = 37, 250


def _rotate_twice_ref(args):
    x = args[0].value.reshape(G_NS, B_NS)
    t = np.arange(B_NS)
    r1 = x[:, (t + S1_NS) % B_NS]
    r2 = r1[:, (t + S2_NS) % B_NS]
    return {1: (r2 + 3 * r1).astype(np.int32).ravel()}


NOINLINE_SYNC = [
    KernelCase("noinline_sync.cu", "block_sum_noinline", (G_NS, 1, 1), (B_NS, 1, 1), 0,
               lambda rng: [inp(rng.integers(-10**6, 10**6, G_NS * B_NS).astype(np.int32)),
                            out(poison(G_NS, np.int32))],
               lambda a: {1: a[0].value.reshape(G_NS, B_NS).sum(axis=1).astype(np.int32)},
               notes="exact: integer sums"),
    KernelCase("noinline_shared.cu", "rotate_twice_noinline", (G_NS, 1, 1), (B_NS, 1, 1), 0,
               lambda rng: [inp(rng.integers(-10**6, 10**6, G_NS * B_NS).astype(np.int32)),
                            out(poison(G_NS * B_NS, np.int32)), scalar(np.int32(S1_NS)),
                            scalar(np.int32(S2_NS))],
               _rotate_twice_ref, notes="exact: data movement"),
]

# assert_kernel.cu ------------------------------------------------------------------------------

N_GATHER, GATHER_LIMIT = 250, 300


def _gather_args(rng):
    return [inp(rng.integers(0, GATHER_LIMIT, N_GATHER).astype(np.int32)),
            inp(f32(rng.uniform(-100, 100, GATHER_LIMIT))),
            out(poison(N_GATHER, np.float32)), scalar(np.int32(N_GATHER)),
            scalar(np.int32(GATHER_LIMIT))]


def _reverse_ref(args):
    v = args[0].value.reshape(4, 128)[:, ::-1]
    return {1: (v + v[:, np.arange(128) ^ 1]).reshape(-1)}


ASSERTS = [
    KernelCase("assert_kernel.cu", "checked_gather", grid1(N_GATHER, 64), (64, 1, 1), 0,
               _gather_args, lambda a: {2: a[1].value[a[0].value] * np.float32(2)},
               notes="exact; every index in range, so the assert has no effect"),
    KernelCase("assert_kernel.cu", "checked_reverse", (4, 1, 1), (128, 1, 1), 0,
               lambda rng: [inp(rng.integers(0, 1 << 20, 512).astype(np.int32)),
                            out(poison(512, np.int32))], _reverse_ref,
               notes="exact; every value >= 0, so the assert has no effect"),
]

CASES = CONTROL_FLOW + DEVICE_FUNCTIONS + NOINLINE_SYNC + INLINE_ASM + SIDE_EFFECTS + ASSERTS
