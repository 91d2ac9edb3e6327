"""Floating-point arithmetic on the CPU target against exact references (PTX ISA 9.7.3-9.7.5).

Each kernel runs many instructions on the same operands (one LLVM compile per kernel): thread
i loads a[i], b[i], c[i] as bit patterns, computes every output, and stores out_k[i]. The
references compute exactly with Python integers (a value is n * 2**e) and round by the
manual's rules in every mode; where the manual leaves a result open they follow what an H100
does (NaN results, .ftz tininess, .sat of -0: see ops/float_arith.py).
"""

from __future__ import annotations

import functools
import math
import random
from dataclasses import dataclass

import numpy as np
import pytest

from cpu_harness import sweep
from ptxport.errors import UnsupportedFeatureError

MODES = ("rn", "rz", "rm", "rp")


def run(insts: list[str], inputs: list, bits: int, out_bits: int | None = None,
        target: str = "sm_90", version: str = "8.7", regs: str = "") -> list[np.ndarray]:
    """Each instruction (text over %a %b %c writing %d, all .b<bits> registers) on every
    element of the input columns; one output column per instruction."""
    return sweep(insts, inputs, bits, out_bits, regs, target, version)


def check(name: str, got, expected, inputs: list, width: int) -> None:
    got = np.asarray(got).astype(np.uint64)
    want = np.asarray(expected, dtype=np.uint64)
    bad = np.nonzero(got != want)[0]
    if len(bad):
        i = bad[0]
        digits = width // 4
        operands = ", ".join(f"{int(col[i]):0{digits}x}" for col in inputs)
        pytest.fail(f"{name}: {len(bad)} of {len(want)} wrong; first for ({operands}): "
                    f"got {int(got[i]):0{digits}x}, expected {int(want[i]):0{digits}x}")


# --- an exact reference: formats, decoding, rounding ----------------------------------------------

class Fmt:
    """An IEEE binary format; `nan` is the NaN the hardware returns."""

    def __init__(self, bits: int, precision: int, nan: int):
        self.bits, self.precision, self.nan = bits, precision, nan
        self.bias = (1 << (bits - precision - 1)) - 1
        self.emin = 1 - self.bias
        self.sign = 1 << (bits - 1)
        self.inf = ((1 << (bits - precision)) - 1) << (precision - 1)
        self.max = self.inf - 1


F16, BF16 = Fmt(16, 11, 0x7FFF), Fmt(16, 8, 0x7FFF)
F32, F64 = Fmt(32, 24, 0x7FFF_FFFF), Fmt(64, 53, 0xFFF8_0000_0000_0000)


@dataclass(frozen=True)
class Num:
    """A finite value (-1)**neg * n * 2**e, or a special: kind 'nan' / 'inf'."""

    neg: bool
    n: int = 0
    e: int = 0
    kind: str = "num"
    sticky: bool = False   # the true magnitude is a little above n * 2**e (div, sqrt)

    @property
    def zero(self) -> bool:
        return self.kind == "num" and self.n == 0 and not self.sticky


@functools.lru_cache(maxsize=1 << 16)
def decode(bits: int, fmt: Fmt, ftz: bool = False) -> Num:
    neg = bool(bits & fmt.sign)
    magnitude = bits & (fmt.sign - 1)
    fraction_bits = fmt.precision - 1
    exponent = magnitude >> fraction_bits
    fraction = magnitude & ((1 << fraction_bits) - 1)
    if magnitude > fmt.inf:
        return Num(neg, kind="nan")
    if magnitude == fmt.inf:
        return Num(neg, kind="inf")
    if exponent == 0:
        if ftz:
            return Num(neg)
        return Num(neg, fraction, fmt.emin - fraction_bits)
    return Num(neg, fraction | (1 << fraction_bits), exponent - fmt.bias - fraction_bits)


def is_nan(bits: int, fmt: Fmt) -> bool:
    return (bits & (fmt.sign - 1)) > fmt.inf


def round_num(x: Num, fmt: Fmt, rnd: str, ftz: bool = False) -> int:
    """x rounded to fmt in mode rnd; .ftz flushes results tiny after rounding."""
    sign = fmt.sign if x.neg else 0
    if x.kind == "nan":
        return fmt.nan
    if x.kind == "inf":
        return sign | fmt.inf
    if x.zero:
        return sign
    p = fmt.precision
    lead = x.n.bit_length() - 1 + x.e

    def rounded(quantum: int) -> int:
        shift = quantum - x.e
        assert shift > 0 or not x.sticky, "reference needs more bits"
        if shift <= 0:
            return x.n << -shift
        q, rem = x.n >> shift, x.n & ((1 << shift) - 1)
        half = 1 << (shift - 1)
        inexact = rem != 0 or x.sticky
        up = {"rn": rem > half or (rem == half and (x.sticky or q & 1)), "rz": False,
              "rm": x.neg and inexact, "rp": not x.neg and inexact}[rnd]
        return q + up

    if ftz:   # tiny: below 2**emin once rounded with an unbounded exponent
        quantum = lead - (p - 1)
        if quantum < fmt.emin and rounded(quantum) < 1 << (fmt.emin - quantum):
            return sign
    quantum = max(lead, fmt.emin) - (p - 1)
    q = rounded(quantum)
    if q == 1 << p:
        q, quantum = q >> 1, quantum + 1
    if q and quantum + p - 1 > fmt.bias:
        overflow_to_max = rnd == "rz" or (rnd == "rm" and not x.neg) or (rnd == "rp" and x.neg)
        return sign | (fmt.max if overflow_to_max else fmt.inf)
    if q < 1 << (p - 1):
        return sign | q
    return sign | ((quantum + p - 1 + fmt.bias) << (p - 1)) | (q - (1 << (p - 1)))


def add(x: Num, y: Num, rnd: str) -> Num:
    if "nan" in (x.kind, y.kind) or (x.kind == y.kind == "inf" and x.neg != y.neg):
        return Num(False, kind="nan")
    if x.kind == "inf" or y.kind == "inf":
        return x if x.kind == "inf" else y
    e = min(x.e, y.e)
    n = (-1 if x.neg else 1) * (x.n << (x.e - e)) + (-1 if y.neg else 1) * (y.n << (y.e - e))
    if n == 0:
        return Num(x.neg if x.zero and y.zero and x.neg == y.neg else rnd == "rm")
    return Num(n < 0, abs(n), e)


def mul(x: Num, y: Num) -> Num:
    neg = x.neg != y.neg
    if "nan" in (x.kind, y.kind) or ("inf" in (x.kind, y.kind) and (x.zero or y.zero)):
        return Num(False, kind="nan")
    if "inf" in (x.kind, y.kind):
        return Num(neg, kind="inf")
    return Num(neg, x.n * y.n, x.e + y.e)


def fma(x: Num, y: Num, z: Num, rnd: str) -> Num:
    return add(mul(x, y), z, rnd)


def div(x: Num, y: Num, fmt: Fmt) -> Num:
    neg = x.neg != y.neg
    if "nan" in (x.kind, y.kind) or (x.kind == y.kind == "inf") or (x.zero and y.zero):
        return Num(False, kind="nan")
    if x.kind == "inf" or y.zero:
        return Num(neg, kind="inf")
    if y.kind == "inf" or x.zero:
        return Num(neg)
    k = max(0, fmt.precision + 3 - (x.n.bit_length() - y.n.bit_length()))
    q, r = divmod(x.n << k, y.n)
    return Num(neg, q, x.e - y.e - k, sticky=r != 0)


def sqrt(x: Num, fmt: Fmt) -> Num:
    if x.kind == "nan" or (x.neg and not x.zero):
        return Num(False, kind="nan")
    if x.kind == "inf" or x.zero:
        return x
    k = max(0, 2 * fmt.precision + 6 - x.n.bit_length())
    k += (x.e - k) % 2
    root = math.isqrt(x.n << k)
    return Num(False, root, (x.e - k) // 2, sticky=root * root != x.n << k)


ONE = {F16: 0x3C00, BF16: 0x3F80, F32: 0x3F80_0000, F64: 0x3FF0_0000_0000_0000}


def saturate(bits: int, fmt: Fmt) -> int:
    """.sat: NaN and everything up to +0 (-0 included) give +0, above 1.0 gives 1.0."""
    if is_nan(bits, fmt) or bits & fmt.sign or bits == 0:
        return 0
    return min(bits, ONE[fmt])


def relu(bits: int, fmt: Fmt) -> int:
    if is_nan(bits, fmt):
        return fmt.nan
    return 0 if bits & fmt.sign else bits


def quiet64(bits: int) -> int:
    return bits | (1 << 51)


def reference(op: str, operands: list[int], fmt: Fmt, rnd: str = "rn", ftz: bool = False,
              sat: bool = False, relu_: bool = False) -> int:
    """The bits PTX gives for `op` on operand bits (f64 NaNs by the hardware's payload rule)."""
    operands = [int(v) for v in operands]
    xs = [decode(v, fmt, ftz) for v in operands]
    if op == "add":
        r = add(xs[0], xs[1], rnd)
    elif op == "sub":
        r = add(xs[0], Num(not xs[1].neg, xs[1].n, xs[1].e, xs[1].kind), rnd)
    elif op == "mul":
        r = mul(xs[0], xs[1])
    elif op == "fma":
        r = fma(xs[0], xs[1], xs[2], rnd)
    elif op == "div":
        r = div(xs[0], xs[1], fmt)
    elif op == "rcp":
        r = div(Num(False, 1, 0), xs[0], fmt)
    else:
        r = sqrt(xs[0], fmt)
    bits = round_num(r, fmt, rnd, ftz)
    if fmt is F64 and r.kind == "nan":
        order = {"fma": [1, 2, 0], "div": [0, 1], "rcp": [0], "sqrt": [0]}.get(op, [1, 0])
        nans = [operands[i] for i in order if is_nan(operands[i], F64)]
        bits = quiet64(nans[0]) if nans else F64.nan
    if sat:
        bits = saturate(bits, fmt)
    if relu_:
        bits = relu(bits, fmt)
    return bits


def test_reference_agrees_with_numpy_to_nearest():
    """The reference itself: f32 sums and quotients to nearest as numpy computes them."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal(300).astype(np.float32)
    b = (rng.standard_normal(300) * 1e-3).astype(np.float32)
    for x, y in zip(a, b, strict=True):
        operands = [int(x.view(np.uint32)), int(y.view(np.uint32))]
        assert reference("add", operands, F32) == int((x + y).view(np.uint32))
        assert reference("div", operands, F32) == int((x / y).view(np.uint32))


# --- operands ------------------------------------------------------------------------------------

S32 = [0x00000000, 0x80000000, 0x3F800000, 0xBF800000, 0x3F000000, 0x40000000, 0x3FC00000,
       0x00000001, 0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0x80000001, 0x807FFFFF, 0x80800000,
       0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FFFFFFF, 0x7FC12345, 0xFFC00000, 0x7F800001,
       0x40400000, 0x3EAAAAAB, 0x7E800000, 0x3F7FFFFF, 0x00400000, 0x3F800001, 0x4B800001]
S64 = [0, 1 << 63, 0x3FF0000000000000, 0xBFF0000000000000, 0x1, 0x000FFFFFFFFFFFFF,
       0x0010000000000000, 0x7FEFFFFFFFFFFFFF, 0x7FF0000000000000, 0xFFF0000000000000,
       0x7FFFFFFFFFFFFFFF, 0x7FF8000000012345, 0xFFF8000000000ABC, 0x7FF0000000000001,
       0x4008000000000000, 0x3FD5555555555555, 0x3FF0000000000001, 0x8000000000000001]


def random_floats(fmt: Fmt, count: int, seed: int) -> list[int]:
    """Bit patterns with exponents anywhere, near the subnormal range and near overflow."""
    rng = random.Random(seed)
    fraction_bits = fmt.precision - 1
    top = (1 << (fmt.bits - fmt.precision)) - 1
    out = []
    for _ in range(count):
        exponent = rng.choice((rng.randrange(0, top), rng.randrange(0, 40),
                               rng.randrange(top - 30, top), rng.randrange(fmt.bias - 8,
                                                                           fmt.bias + 8)))
        out.append((rng.getrandbits(1) << (fmt.bits - 1)) | (exponent << fraction_bits)
                   | rng.getrandbits(fraction_bits))
    return out


def operands(specials: list[int], fmt: Fmt, count: int, seed: int, arity: int) -> list[list]:
    """Every pair of special values (the third operand cycling through them), then random
    operands, and fma operands that nearly cancel (c close to -a*b)."""
    cols: list[list[int]] = [[], [], []]
    for x in specials:
        for i, y in enumerate(specials):
            cols[0].append(x)
            cols[1].append(y)
            cols[2].append(specials[(i * 7 + x) % len(specials)])
    for col, seed_offset in zip(cols, range(3), strict=True):
        col.extend(random_floats(fmt, count, seed + seed_offset))
    if arity == 3:
        rng = random.Random(seed)
        for i in range(len(cols[0]) - count // 3, len(cols[0])):
            product = reference("mul", [cols[0][i], cols[1][i]], fmt)
            cols[2][i] = (product ^ fmt.sign) ^ rng.randrange(4)
    return cols[:arity]


def expected(op: str, cols: list, fmt: Fmt, **mode) -> list[int]:
    return [reference(op, list(xs), fmt, **mode) for xs in zip(*cols, strict=True)]


# --- f32 ------------------------------------------------------------------------------------------

ARITY = {"sqrt": 1, "rcp": 1, "fma": 3, "mad": 3}


def _sweep(fmt: Fmt, specials: list[int], suffix: str, ops: list[tuple], seed: int,
           regs: str = "") -> None:
    """ops: (opcode, modifiers, mode kwargs), one kernel per arity; mad is fma; `regs`: more
    register declarations (a kernel text of its own)."""
    for arity in (1, 2, 3):
        chosen = [o for o in ops if ARITY.get(o[0], 2) == arity]
        if not chosen:
            continue
        cols = operands(specials, fmt, 250, seed + arity, max(arity, 2))
        if arity == 1:
            cols = [cols[0] + cols[1]]
        operand_text = ", ".join(f"%{n}" for n in "abc"[:arity])
        insts = [f"{op}{modifiers}.{suffix} %d, {operand_text};" for op, modifiers, _ in chosen]
        got = run(insts, cols, fmt.bits, regs=regs)
        for (op, modifiers, mode), out in zip(chosen, got, strict=True):
            want = expected("fma" if op == "mad" else op, cols, fmt, **mode)
            check(f"{op}{modifiers}.{suffix}", out, want, cols, fmt.bits)


def test_f32_every_rounding_mode():
    ops = [(op, f".{m}", {"rnd": m}) for m in MODES
           for op in ("add", "sub", "mul", "fma", "div", "sqrt", "rcp")]
    ops += [("mad", ".rm", {"rnd": "rm"}), ("add", "", {}), ("div", ".full", {})]
    ops += [("fma", ".rp.sat", {"rnd": "rp", "sat": True}),
            ("sub", ".rm.sat", {"rnd": "rm", "sat": True})]
    _sweep(F32, S32, "f32", ops, seed=10)


def test_f32_directed_rounding_computed_exactly(monkeypatch):
    # a warp's lanes on an AVX-512 host round .rz .rm .rp in the instruction (the CPU
    # target's avx512.py); elsewhere, and for values alike in every lane, the exact result
    # is rounded (float_rounding.py): that path, on the lanes too
    from ptxport.codegen.targets.cpu.target import CpuTarget

    monkeypatch.setattr(CpuTarget, "avx512_lanes", False)
    ops = [(op, f".{m}", {"rnd": m}) for m in MODES[1:] for op in ("add", "sub", "mul", "fma")]
    ops += [(op, f".{m}.sat", {"rnd": m, "sat": True}) for m in MODES[1:] for op in ("add", "fma")]
    _sweep(F32, S32, "f32", ops, seed=11, regs=".reg .b32 %exactly;")


def test_f32_ftz_and_sat():
    ops = []
    for m in MODES:
        ops += [(op, f".{m}.ftz", {"rnd": m, "ftz": True})
                for op in ("add", "mul", "fma", "div", "sqrt", "rcp")]
    ops += [(op, ".rn.sat", {"sat": True}) for op in ("add", "sub", "mul", "fma")]
    ops += [(op, ".rz.ftz.sat", {"rnd": "rz", "ftz": True, "sat": True})
            for op in ("add", "mul", "fma")]
    ops += [("div", ".full.ftz", {"ftz": True}), ("rcp", ".approx.ftz", {"ftz": True})]
    _sweep(F32, S32, "f32", ops, seed=20)


def test_f32_ftz_tininess_is_after_rounding():
    """A result flushes when, rounded to 24 bits with an unbounded exponent, it is below
    2**-126: (1 - 2**-24) * 2**-126 flushes though it rounds to 2**-126 in .rn;
    2**-126 * (1 - 2**-25) does not (as on an H100)."""
    cases = [(0x3F7F_FFFF, 0x0080_0000, 0), (0x3F80_0400, 0x00FF_F800, 0x8080_0000)]
    cols = [list(c) for c in zip(*cases, strict=True)]
    got = run([f"fma.{m}.ftz.f32 %d, %a, %b, %c;" for m in MODES], cols, 32)
    for m, out in zip(MODES, got, strict=True):
        check(f"fma.{m}.ftz", out, expected("fma", cols, F32, rnd=m, ftz=True), cols, 32)
    assert [int(got[0][0]), int(got[0][1])] == [0, 0x0080_0000]


# --- f64 ------------------------------------------------------------------------------------------

def test_f64_every_rounding_mode_and_nan_payloads():
    ops = [(op, f".{m}", {"rnd": m}) for m in MODES
           for op in ("add", "sub", "mul", "fma", "div", "sqrt", "rcp")]
    _sweep(F64, S64, "f64", ops, seed=30)


def test_f64_directed_rounding_into_subnormals():
    """Products and quotients whose exact values fall below 2**-1022 or past the largest
    double, and fma that cancels: residuals must not underflow."""
    rng = random.Random(31)

    def value(low: int, high: int) -> int:
        exponent = max(rng.randrange(low, high) + 1023, 0)
        return (rng.getrandbits(1) << 63) | (exponent << 52) | rng.getrandbits(52)

    cols = [[], [], []]
    for _ in range(600):
        a, b = value(-540, -500), value(-560, -520)
        cols[0].append(a)
        cols[1].append(b)
        cols[2].append(rng.choice((value(-1080, -1030), rng.getrandbits(4), value(-5, 5))))
    insts = [f"{op}.{m}.f64 %d, %a, %b{', %c' if op == 'fma' else ''};"
             for m in MODES for op in ("mul", "div", "fma")]
    got = run(insts, cols, 64)
    i = 0
    for m in MODES:
        for op in ("mul", "div", "fma"):
            used = cols if op == "fma" else cols[:2]
            check(f"{op}.{m}.f64", got[i], expected(op, used, F64, rnd=m), used, 64)
            i += 1


# --- f16, bf16 and packed pairs -------------------------------------------------------------------

def half_pairs(count: int, seed: int) -> list[list[int]]:
    """Every 16-bit pattern as a, against random b (and c)."""
    rng = np.random.default_rng(seed)
    a = np.tile(np.arange(1 << 16, dtype=np.uint64), count)
    return [a] + [rng.integers(0, 1 << 16, len(a), dtype=np.uint64) for _ in range(2)]


def f16_round(x64: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return x64.astype(np.float16).view(np.uint16).astype(np.uint64)


def bf16_round(x64: np.ndarray) -> np.ndarray:
    """Exact f64 values (sums or products of two bf16) to bf16, to nearest even: through f32
    (harmless double rounding: 24 >= 2 * 8 + 2), then by hand."""
    with np.errstate(over="ignore"):
        f = x64.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = (f + 0x7FFF + ((f >> 16) & 1)) >> 16
    nan = np.isnan(x64)
    return np.where(nan, 0x7FFF, rounded & 0xFFFF)


def half_values(bits: np.ndarray, fmt: Fmt) -> np.ndarray:
    if fmt is F16:
        return bits.astype(np.uint16).view(np.float16).astype(np.float64)
    with np.errstate(invalid="ignore"):
        return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


HALVES = ((F16, "f16"), (BF16, "bf16"))


def test_half_add_sub_mul_every_a():
    """Every 16-bit a against 4 random b each: add, sub, mul to nearest even (.ftz, .sat for
    f16 by the exact reference on a sample)."""
    cols = half_pairs(4, seed=40)[:2]
    insts = [f"{op}.rn.{suffix} %d, %a, %b;" for _, suffix in HALVES
             for op in ("add", "sub", "mul")]
    got = run(insts + ["add.ftz.f16 %d, %a, %b;", "mul.sat.f16 %d, %a, %b;"], cols, 16)
    for k, (fmt, suffix) in enumerate(HALVES):
        x, y = (half_values(c, fmt) for c in cols)
        round_ = f16_round if fmt is F16 else bf16_round
        with np.errstate(invalid="ignore"):
            for out, exact, name in zip(got[3 * k:3 * k + 3], (x + y, x - y, x * y),
                                        ("add", "sub", "mul"), strict=True):
                want = np.where(np.isnan(exact), fmt.nan, round_(exact))
                check(f"{name}.{suffix}", out, want, cols, 16)
    small = [c[::37] for c in cols]
    check("add.ftz.f16", got[6][::37], expected("add", small, F16, ftz=True), small, 16)
    check("mul.sat.f16", got[7][::37], expected("mul", small, F16, sat=True), small, 16)


def test_half_fma_rounds_once():
    """fma rounds a * b + c once (LLVM's own f16 fma would round twice); .relu .ftz .sat."""
    cols = [list(c[::31]) for c in half_pairs(1, seed=41)]
    rng = random.Random(42)
    for i in range(0, len(cols[0]), 3):      # near-cancellation
        fmt = F16 if i % 2 else BF16
        cols[2][i] = reference("mul", [cols[0][i], cols[1][i]], fmt) ^ fmt.sign ^ \
            rng.randrange(3)
    forms = [("fma.rn.f16", F16, {}), ("fma.rn.relu.f16", F16, {"relu_": True}),
             ("fma.rn.ftz.f16", F16, {"ftz": True}), ("fma.rn.sat.f16", F16, {"sat": True}),
             ("fma.rn.ftz.relu.f16", F16, {"ftz": True, "relu_": True}),
             ("fma.rn.bf16", BF16, {}), ("fma.rn.relu.bf16", BF16, {"relu_": True})]
    got = run([f"{name} %d, %a, %b, %c;" for name, _, _ in forms], cols, 16)
    for (name, fmt, mode), out in zip(forms, got, strict=True):
        check(name, out, expected("fma", cols, fmt, **mode), cols, 16)


def test_half_directed_rounding():
    """f16/bf16 with .rz/.rm/.rp (beyond what ptxas accepts today, lowered by the same
    exact rounding)."""
    cols = [list(c[::97]) for c in half_pairs(1, seed=43)]
    forms = [(op, m, fmt, suffix) for fmt, suffix in HALVES for m in ("rz", "rm", "rp")
             for op in ("add", "mul", "fma")]
    got = run([f"{op}.{m}.{suffix} %d, %a, %b{', %c' if op == 'fma' else ''};"
               for op, m, _, suffix in forms], cols, 16)
    for (op, m, fmt, suffix), out in zip(forms, got, strict=True):
        used = cols if op == "fma" else cols[:2]
        check(f"{op}.{m}.{suffix}", out, expected(op, used, fmt, rnd=m), used, 16)


def lanes(column, width: int) -> list[list[int]]:
    mask = (1 << width) - 1
    return [[int(v) & mask for v in column], [int(v) >> width & mask for v in column]]


def test_packed_pairs_compute_each_lane():
    """f16x2, bf16x2: each half computes as its scalar instruction (lane 0 low)."""
    rng = np.random.default_rng(44)
    cols = [rng.integers(0, 1 << 32, 800, dtype=np.uint64) for _ in range(3)]
    cases = [("add.rn.f16x2", "add", F16, {}), ("sub.ftz.f16x2", "sub", F16, {"ftz": True}),
             ("mul.rn.sat.f16x2", "mul", F16, {"sat": True}),
             ("fma.rn.relu.f16x2", "fma", F16, {"relu_": True}),
             ("add.rn.bf16x2", "add", BF16, {}), ("fma.rn.bf16x2", "fma", BF16, {}),
             ("fma.rn.relu.bf16x2", "fma", BF16, {"relu_": True})]
    insts = [f"{name} %d, %a, %b{', %c' if op == 'fma' else ''};" for name, op, _, _ in cases]
    got = run(insts, cols, 32)
    split = [lanes(c, 16) for c in cols]
    for (name, op, fmt, mode), out in zip(cases, got, strict=True):
        arity = 3 if op == "fma" else 2
        want = [0] * len(out)
        for lane in (0, 1):
            used = [split[k][lane] for k in range(arity)]
            for i, bits in enumerate(expected(op, used, fmt, **mode)):
                want[i] |= bits << (16 * lane)
        check(name, out, want, cols, 32)


def test_f32x2_and_mixed_precision():
    """sm_100's f32x2 lanes, and add/sub/fma.f32 with f16/bf16 operands widened exactly."""
    rng = np.random.default_rng(45)
    count = 600
    wide = [rng.integers(0, 1 << 64, count, dtype=np.uint64) for _ in range(3)]
    got = run(["add.rz.f32x2 %d, %a, %b;", "fma.rn.ftz.f32x2 %d, %a, %b, %c;",
               "mul.rp.f32x2 %d, %a, %b;"], wide, 64, target="sm_100a", version="8.8")
    split = [lanes(c, 32) for c in wide]
    for out, op, mode in zip(got, ("add", "fma", "mul"),
                             ({"rnd": "rz"}, {"ftz": True}, {"rnd": "rp"}), strict=True):
        arity = 3 if op == "fma" else 2
        want = [0] * count
        for lane in (0, 1):
            used = [split[k][lane] for k in range(arity)]
            for i, bits in enumerate(expected(op, used, F32, **mode)):
                want[i] |= bits << (32 * lane)
        check(f"{op}.f32x2", out, want, wide, 64)
    halves = [rng.integers(0, 1 << 16, count, dtype=np.uint64) for _ in range(2)]
    singles = random_floats(F32, count, 46)
    cols = [halves[0], halves[1], singles]
    narrow = "cvt.u16.u32 %h, %a; cvt.u16.u32 %g, %b; "
    got = run([narrow + f"{form}.f32.{suffix} %d, %h, {'%g, ' if form[0] == 'f' else ''}%c;"
               for _, suffix in HALVES for form in ("add.rm", "sub.rn.sat", "fma.rz")],
              cols, 32, target="sm_100a", version="8.8", regs=".reg .b16 %h, %g;")
    for k, (fmt, suffix) in enumerate(HALVES):
        widened = [[widen(int(v), fmt) for v in col] for col in halves]
        check(f"add.rm.f32.{suffix}", got[3 * k],
              expected("add", [widened[0], singles], F32, rnd="rm"), cols, 32)
        check(f"sub.rn.sat.f32.{suffix}", got[3 * k + 1],
              expected("sub", [widened[0], singles], F32, sat=True), cols, 32)
        check(f"fma.rz.f32.{suffix}", got[3 * k + 2],
              expected("fma", [widened[0], widened[1], singles], F32, rnd="rz"), cols, 32)


def widen(bits: int, fmt: Fmt) -> int:
    """A f16/bf16 as the f32 with the same value (a NaN as some NaN)."""
    if fmt is BF16:
        return bits << 16
    half = np.array([bits], np.uint16).view(np.float16)
    return int(half.astype(np.float32).view(np.uint32)[0])


# --- min max abs neg copysign testp ---------------------------------------------------------------

def min_max_reference(x: int, y: int, fmt: Fmt, is_max: bool, nan: bool = False,
                      xorsign: bool = False, ftz: bool = False) -> int:
    x, y = int(x), int(y)
    def value(bits: int):
        d = decode(bits, fmt, ftz)
        return d, (float("nan") if d.kind == "nan" else
                   (-1) ** d.neg * (float("inf") if d.kind == "inf" else d.n * 2.0 ** d.e))

    if ftz:
        x, y = (round_num(decode(v, fmt, True), fmt, "rn") if not is_nan(v, fmt) else v
                for v in (x, y))
    sign = (x ^ y) & fmt.sign
    if xorsign:
        x, y = x & (fmt.sign - 1), y & (fmt.sign - 1)
    (_, vx), (_, vy) = value(x), value(y)
    x_nan, y_nan = is_nan(x, fmt), is_nan(y, fmt)
    if (x_nan and y_nan) or (nan and (x_nan or y_nan)):
        return quiet64(y) if fmt is F64 and not nan else fmt.nan
    if x_nan or y_nan:
        r = y if x_nan else x
    elif vx == vy:
        r = (x & y) if is_max else (x | y)      # +0 above -0
    else:
        r = x if (vx > vy) == is_max else y
    return (r & (fmt.sign - 1)) | sign if xorsign else r


@pytest.mark.parametrize("fmt, suffix, specials", [(F32, "f32", S32), (F64, "f64", S64)])
def test_min_max(fmt, suffix, specials):
    cols = operands(specials, fmt, 500, 50, 2)
    forms = [("min", {}), ("max", {})]
    if fmt is F32:
        forms += [("min.NaN", {"nan": True}), ("max.NaN", {"nan": True}),
                  ("min.xorsign.abs", {"xorsign": True}), ("max.xorsign.abs", {"xorsign": True}),
                  ("min.ftz", {"ftz": True}), ("max.ftz.NaN.xorsign.abs",
                                               {"ftz": True, "nan": True, "xorsign": True})]
    got = run([f"{name}.{suffix} %d, %a, %b;" for name, _ in forms], cols, fmt.bits)
    for (name, mode), out in zip(forms, got, strict=True):
        want = [min_max_reference(x, y, fmt, name.startswith("max"), **mode)
                for x, y in zip(*cols, strict=True)]
        check(f"{name}.{suffix}", out, want, cols, fmt.bits)


def min_max_numpy(x: np.ndarray, y: np.ndarray, fmt: Fmt, is_max: bool, nan: bool = False,
                  xorsign: bool = False, ftz: bool = False) -> np.ndarray:
    """min_max_reference for whole columns of f16/bf16 bit patterns."""
    x, y = x.astype(np.int64), y.astype(np.int64)
    sign, magnitude_mask = fmt.sign, fmt.sign - 1
    if ftz:
        subnormal = lambda v: ((v & magnitude_mask) < (1 << (fmt.precision - 1)))  # noqa: E731
        x, y = (np.where(subnormal(v), v & sign, v) for v in (x, y))
    signs = (x ^ y) & sign
    if xorsign:
        x, y = x & magnitude_mask, y & magnitude_mask
    vx, vy = half_values(x, fmt), half_values(y, fmt)
    x_nan, y_nan = np.isnan(vx), np.isnan(vy)
    with np.errstate(invalid="ignore"):
        pick_x = (vx > vy) if is_max else (vx < vy)
    tie = (vx == vy) & ((x & sign) == 0 if is_max else (x & sign) != 0)
    r = np.where(pick_x | tie, x, y)
    r = np.where(x_nan, y, np.where(y_nan, x, r))
    both = (x_nan | y_nan) if nan else (x_nan & y_nan)
    r = np.where(both, fmt.nan, r)
    if xorsign:
        r = np.where(both, r, (r & magnitude_mask) | signs)
    return r.astype(np.uint64)


def test_min_max_half_every_a():
    """Every 16-bit a against 2 random b each; packed pairs lane by lane."""
    cols = half_pairs(2, seed=51)[:2]
    forms = [(name, mode, fmt, suffix) for fmt, suffix in HALVES
             for name, mode in (("min", {}), ("max", {}), ("max.NaN", {"nan": True}),
                                ("min.xorsign.abs", {"xorsign": True}),
                                ("max.NaN.xorsign.abs", {"nan": True, "xorsign": True}))]
    forms += [("min.ftz", {"ftz": True}, F16, "f16"),
              ("max.ftz.NaN", {"ftz": True, "nan": True}, F16, "f16")]
    got = run([f"{name}.{suffix} %d, %a, %b;" for name, _, _, suffix in forms], cols, 16)
    for (name, mode, fmt, suffix), out in zip(forms, got, strict=True):
        want = min_max_numpy(cols[0], cols[1], fmt, name.startswith("max"), **mode)
        check(f"{name}.{suffix}", out, want, cols, 16)
    for fmt, _ in HALVES:
        sample = [c[::97] for c in cols]
        scalar = [min_max_reference(x, y, fmt, True, nan=True, xorsign=True)
                  for x, y in zip(*sample, strict=True)]
        check("numpy vs scalar reference", scalar,
              min_max_numpy(*sample, fmt, True, nan=True, xorsign=True), sample, 16)
    packed = [cols[0] | (cols[1] << 16), np.roll(cols[0] | (cols[1] << 16), 1)]
    got = run(["max.xorsign.abs.f16x2 %d, %a, %b;", "min.NaN.bf16x2 %d, %a, %b;"], packed, 32)
    split = [lanes_numpy(c) for c in packed]
    for out, fmt, is_max, mode in ((got[0], F16, True, {"xorsign": True}),
                                   (got[1], BF16, False, {"nan": True})):
        want = min_max_numpy(split[0][0], split[1][0], fmt, is_max, **mode) | \
            min_max_numpy(split[0][1], split[1][1], fmt, is_max, **mode) << np.uint64(16)
        check("packed min/max", out, want, packed, 32)


def lanes_numpy(column: np.ndarray) -> list[np.ndarray]:
    column = np.asarray(column, dtype=np.uint64)
    return [column & np.uint64(0xFFFF), column >> np.uint64(16)]


def test_three_operand_min_max():
    cols = operands(S32[:14], F32, 300, 53, 3)
    got = run(["min.f32 %d, %a, %b, %c;", "max.NaN.f32 %d, %a, %b, %c;",
               "min.abs.f32 %d, %a, %b, %c;"], cols, 32, target="sm_100a", version="8.8")

    def chain(xs, is_max: bool, **mode) -> int:
        r = xs[0]
        for x in xs[1:]:
            r = min_max_reference(r, x, F32, is_max, **mode)
        return r

    rows = list(zip(*cols, strict=True))
    check("min3", got[0], [chain(r, is_max=False) for r in rows], cols, 32)
    check("max3.NaN", got[1], [chain(r, is_max=True, nan=True) for r in rows], cols, 32)
    check("min3.abs", got[2], [chain([v & 0x7FFF_FFFF for v in r], is_max=False)
                               for r in rows], cols, 32)


def test_abs_neg_every_half_and_specials():
    """Sign-bit operations; a NaN gives the canonical NaN (f64: itself, quietened)."""
    every = [np.arange(1 << 16, dtype=np.uint64)]
    v = every[0].astype(np.int64)
    forms = [(f, fmt, suffix) for fmt, suffix in HALVES for f in ("abs", "neg")]
    forms += [("abs.ftz", F16, "f16"), ("neg.ftz", F16, "f16")]
    got = run([f"{f}.{suffix} %d, %a;" for f, _, suffix in forms], every, 16)
    for (form, fmt, suffix), out in zip(forms, got, strict=True):
        nan = (v & (fmt.sign - 1)) > fmt.inf
        x = np.where((v & fmt.inf) == 0, v & fmt.sign, v) if "ftz" in form else v
        r = x & (fmt.sign - 1) if form.startswith("abs") else x ^ fmt.sign
        check(f"{form}.{suffix}", out, np.where(nan, fmt.nan, r), every, 16)


def test_abs_neg_copysign_testp_f32_f64():
    """Sign-bit operations and classes; abs/neg of a NaN give the canonical NaN (f64: the
    operand quietened); copysign copies bits, NaNs too; testp.normal includes zeros."""
    tests = ("finite", "infinite", "number", "notanumber", "normal", "subnormal")
    for fmt, suffix, specials in ((F32, "f32", S32), (F64, "f64", S64)):
        cols = operands(specials, fmt, 0, 54, 2)
        ftz = ".ftz" if fmt is F32 else ""
        got = run([f"copysign.{suffix} %d, %a, %b;", f"abs{ftz}.{suffix} %d, %a;",
                   f"neg.{suffix} %d, %a;"]
                  + [f"testp.{t}.{suffix} %p, %a; selp.b{fmt.bits} %d, 1, 0, %p;"
                     for t in tests], cols, fmt.bits)
        magnitude = fmt.sign - 1
        want = [(x & fmt.sign) | (y & magnitude) for x, y in zip(*cols, strict=True)]
        check(f"copysign.{suffix}", got[0], want, cols, fmt.bits)
        check(f"abs{ftz}.{suffix}", got[1],
              [sign_op_nan(v, fmt) if is_nan(v, fmt) else flushed(v, fmt, ftz) & magnitude
               for v in cols[0]], cols, fmt.bits)
        check(f"neg.{suffix}", got[2], [sign_op_nan(v, fmt) if is_nan(v, fmt) else v ^ fmt.sign
                                        for v in cols[0]], cols, fmt.bits)
        for test, out in zip(tests, got[3:], strict=True):
            check(f"testp.{test}.{suffix}", out, [classify(v, fmt, test) for v in cols[0]],
                  cols, fmt.bits)


def sign_op_nan(bits: int, fmt: Fmt) -> int:
    return quiet64(bits) if fmt is F64 else fmt.nan


def flushed(bits: int, fmt: Fmt, ftz) -> int:
    return bits & fmt.sign if ftz and bits & fmt.inf == 0 else bits


def classify(bits: int, fmt: Fmt, test: str) -> int:
    magnitude = bits & (fmt.sign - 1)
    subnormal = 0 < magnitude < 1 << (fmt.precision - 1)
    return int({"finite": magnitude < fmt.inf, "infinite": magnitude == fmt.inf,
                "number": magnitude <= fmt.inf, "notanumber": magnitude > fmt.inf,
                "normal": magnitude < fmt.inf and not subnormal, "subnormal": subnormal}[test])


def test_forms_outside_the_manual_are_refused():
    for inst in ("fma.rn.oob.f16 %d, %a, %b, %a;", "add.ftz.f64 %d, %a, %b;",
                 "div.approx.f64 %d, %a, %b;"):
        bits = 64 if "f64" in inst else 16
        with pytest.raises(UnsupportedFeatureError):
            run([inst], [[0], [0]], bits)


def test_nan_blind_registers_skip_canonical_nans_unobserved():
    # %y is read only by f32 arithmetic and comparisons: its NaN may stay LLVM's (the GEMM's
    # accumulators); %x is also moved out as bits: each NaN written to it is the canonical one
    from ptxport.ir.analysis import nan_blind_registers
    from ptxport.ir.from_ptx import build
    from ptxport.ptx.parser import parse

    body = ["mov.b32 %x, %a; fma.rn.f32 %y, %x, %x, %x; fma.rn.f32 %y, %y, %x, %y; "
            "add.rn.f32 %x, %y, %y; setp.lt.f32 %p, %y, %x; mov.b32 %d, %x;",
            "mov.b32 %x, %a; mul.rn.f32 %y, %x, %x; sub.rn.f32 %x, %y, %x; mov.b32 %d, %x;"]
    nans = [0x7FC01234, 0xFFA00001, 0x7F800001, 0xFFFFFFFF]
    inputs = [nans + [0x3F800000, 0x7F800000, 0xFF800000]]
    out = run(body, inputs, 32, regs=".reg .f32 %x, %y;")
    with np.errstate(invalid="ignore", over="ignore"):
        one = np.array(inputs[0], np.uint32).view(np.float32)
        first = one * one + one
        sums = [2 * (first * one + first), one * one - one]
    for k, got in enumerate(out):
        want = np.where(np.isnan(sums[k]), np.uint32(0x7FFFFFFF), sums[k].view(np.uint32))
        check(f"instruction {k}", got, want, inputs, 32)
    kernel = build(parse(kernel_text(body[0]))).kernels[0]
    assert {r.name for r in nan_blind_registers(kernel)} == {"%y"}


def test_nan_blind_softmax_chain_matches_observed_registers():
    # Triton's softmax in .b32 registers: differences, products, ex2, max and div read only by
    # NaN-blind instructions skip canonicalization; the stored result must not change (the
    # same chain with each register also moved out as bits keeps every NaN canonical)
    from ptxport.ir.analysis import nan_blind_registers
    from ptxport.ir.from_ptx import build
    from ptxport.ptx.parser import parse

    chain = ("sub.f32 %x, %a, %b; mul.f32 %y, %x, 0f3FB8AA3B; ex2.approx.f32 %z, %y; "
             "max.f32 %w, %z, %b; div.full.f32 %v, %z, %w; add.f32 %d, %v, %v;")
    seen = chain + " mov.b32 %u, %x; mov.b32 %u, %y; mov.b32 %u, %z; mov.b32 %u, %w; " \
        "mov.b32 %u, %v;"
    regs = ".reg .b32 %u, %v, %w, %x, %y, %z;"
    specials = [0x7FC01234, 0xFFA00001, 0x7F800001, 0xFFFFFFFF, 0x7F800000, 0xFF800000,
                0x80000000, 0, 0x3F800000, 0xC2C80000, 0x42C80000, 0x00000001]
    a = [x for x in specials for _ in specials]
    b = [y for _ in specials for y in specials]
    blind, observed = run([chain, seen], [a, b], 32, regs=regs)
    check("softmax chain", blind, observed, [a, b], 32)
    nan = (np.asarray(observed, np.uint32) & 0x7FFFFFFF) > 0x7F800000
    assert nan.any() and (np.asarray(observed, np.uint32)[nan] == 0x7FFFFFFF).all()
    kernel = build(parse(kernel_text(chain, regs))).kernels[0]
    # (%a and %b too: loaded, never canonicalized; %d is stored, %u moved out as bits)
    assert {r.name for r in nan_blind_registers(kernel)} == \
        {"%a", "%b", "%v", "%w", "%x", "%y", "%z"}


def test_zero_sign_blind_max_matches_observed_registers():
    # a softmax's row maximum: max, then x - max into ex2, whose 2**(+0) and 2**(-0) are both
    # 1; max/min written to such a register skip ordering -0 below +0 (and, read only by
    # NaN-blind instructions, making two NaNs the canonical one): the stored bits must be
    # those of the same chain with the maximum also moved out as bits
    from ptxport.ir.analysis import zero_sign_blind_registers
    from ptxport.ir.from_ptx import build
    from ptxport.ptx.parser import parse

    chain = ("max.f32 %w, %a, %b; min.f32 %v, %b, %a; max.f32 %w, %w, %v; "
             "sub.f32 %x, %a, %w; mul.f32 %y, %x, 0f3FB8AA3B; ex2.approx.f32 %d, %y;")
    seen = chain + " mov.b32 %u, %w; mov.b32 %u, %v;"
    regs = ".reg .b32 %u, %v, %w, %x, %y;"
    specials = [0x7FC01234, 0xFFA00001, 0x7F800001, 0xFFFFFFFF, 0x7F800000, 0xFF800000,
                0x80000000, 0, 0x3F800000, 0xBF800000, 0xC2C80000, 0x00000001, 0x80000001]
    a = [x for x in specials for _ in specials]
    b = [y for _ in specials for y in specials]
    blind, observed = run([chain, seen], [a, b], 32, regs=regs)
    check("softmax maximum", blind, observed, [a, b], 32)
    kernel = build(parse(kernel_text(chain, regs))).kernels[0]
    assert {r.name for r in zero_sign_blind_registers(kernel)} == \
        {"%a", "%b", "%v", "%w", "%x", "%y"}
    # a warp's butterfly (shuffled, then max), a dividend and an FMA carry the sign on
    body = ("shfl.sync.bfly.b32 %x, %a, 16, 31, -1; max.f32 %w, %a, %x; "
            "div.full.f32 %v, %w, %b; fma.rn.f32 %y, %v, %b, %b; ex2.approx.f32 %d, %y;")
    kernel = build(parse(kernel_text(body, regs))).kernels[0]
    assert {r.name for r in zero_sign_blind_registers(kernel)} == {"%a", "%x", "%w", "%v", "%y"}
    # a divisor, a stored or moved-out register, an operand of max.xorsign.abs: observed
    for body, name in (("max.f32 %w, %a, %b; div.full.f32 %d, %a, %w;", "%w"),
                       ("max.f32 %w, %a, %b; div.full.f32 %x, %w, %a; mov.b32 %d, %x;", "%w"),
                       ("max.xorsign.abs.f32 %x, %a, %b; ex2.approx.f32 %d, %x;", "%a")):
        kernel = build(parse(kernel_text(body, regs))).kernels[0]
        assert name not in {r.name for r in zero_sign_blind_registers(kernel)}, body


def test_blind_registers_through_nvrtc_butterflies_and_expf_clamp():
    # NVRTC's shuffles write a predicate too (%x|%p), and nvcc's expf clamps x - max with
    # cvt.sat.f32.f32, which gives +0 for -0: the row maximum stays zero-sign-blind; the
    # stored bits match the same chain with the maximum moved out as bits
    from ptxport.ir.analysis import nan_blind_registers, zero_sign_blind_registers
    from ptxport.ir.from_ptx import build
    from ptxport.ptx.parser import parse

    chain = ("max.f32 %w, %a, %b; shfl.sync.bfly.b32 %x|%p, %w, 1, 31, -1; "
             "max.f32 %v, %w, %x; sub.f32 %y, %a, %v; "
             "fma.rn.f32 %z, %y, 0f3BBB989D, 0f3F000000; cvt.sat.f32.f32 %d, %z;")
    seen = chain + " mov.b32 %u, %w; mov.b32 %u, %v;"
    regs = ".reg .b32 %u, %v, %w, %x, %y, %z;"
    specials = [0x7FC01234, 0x7F800000, 0xFF800000, 0x80000000, 0, 0x3F800000, 0xBF800000,
                0x00000001, 0x80000001, 0xC0400000]
    a = [x for x in specials for _ in specials]
    b = [y for _ in specials for y in specials]
    blind, observed = run([chain, seen], [a, b], 32, regs=regs)
    check("expf clamp of x - max", blind, observed, [a, b], 32)
    kernel = build(parse(kernel_text(chain, regs))).kernels[0]
    assert {r.name for r in zero_sign_blind_registers(kernel)} >= {"%w", "%x", "%v", "%y", "%z"}
    # NaNs likewise: the maximum is copied by the shuffle into a register only max reads
    assert {r.name for r in nan_blind_registers(kernel)} >= {"%w", "%x", "%v", "%y", "%z"}
    kernel = build(parse(kernel_text(seen, regs))).kernels[0]
    assert not {r.name for r in nan_blind_registers(kernel)} & {"%w", "%v"}
    # copied into a register that is stored: observed, the copy's source too
    stored = "max.f32 %w, %a, %b; shfl.sync.bfly.b32 %x|%p, %w, 1, 31, -1; mov.b32 %d, %x;"
    kernel = build(parse(kernel_text(stored, regs))).kernels[0]
    assert not {r.name for r in nan_blind_registers(kernel)} & {"%w", "%x"}
    # without .sat, cvt.f32.f32 keeps the zero's sign: observed
    kernel = build(parse(kernel_text(chain.replace("cvt.sat", "cvt"), regs))).kernels[0]
    assert not {r.name for r in zero_sign_blind_registers(kernel)} & {"%w", "%v", "%z"}


def kernel_text(inst: str, regs: str = ".reg .f32 %x, %y;") -> str:
    from cpu_harness import kernel_ptx

    return kernel_ptx(f".reg .b32 %a, %b, %d; {regs} .reg .pred %p;\n" + inst, "")


def test_blindness_follows_shuffles_and_shared_memory():
    # a 4-warp softmax's partial maxima and sums: shuffled, stored to the warps' slots in
    # shared memory and loaded back into registers read only by NaN-blind (and zero-sign-
    # blind) arithmetic skip canonicalization; the stored bits must be those of the same
    # chain with the shared value also moved out as bits
    from ptxport.ir.analysis import nan_blind_registers, zero_sign_blind_registers
    from ptxport.ir.from_ptx import build
    from ptxport.ptx.parser import parse

    slot = "mov.u32 %s, slots; shl.b32 %o, %t, 2; add.u32 %s, %s, %o; "
    chain = (slot + "max.f32 %w, %a, %b; shfl.sync.bfly.b32 %v, %w, 0, 31, -1; "
             "max.f32 %w, %w, %v; st.shared.b32 [%s], %w; bar.sync 0; "
             "ld.shared.b32 %x, [%s]; sub.f32 %y, %a, %x; mul.f32 %y, %y, 0f3FB8AA3B; "
             "ex2.approx.f32 %d, %y;")
    seen = chain + " mov.b32 %u, %w;"
    regs = ".reg .b32 %u, %v, %w, %x, %y; .reg .u32 %s, %o; .shared .align 4 .b32 slots[256];"
    specials = [0x7FC01234, 0xFFA00001, 0x7F800001, 0xFFFFFFFF, 0x7F800000, 0xFF800000,
                0x80000000, 0, 0x3F800000, 0xBF800000, 0xC2C80000, 0x00000001, 0x80000001]
    a = [x for x in specials for _ in specials]
    b = [y for _ in specials for y in specials]
    blind, observed = run([chain, seen], [a, b], 32, regs=regs)
    check("through shared memory", blind, observed, [a, b], 32)
    regs += " .reg .u32 %t; .reg .u64 %ptr;"     # (the sweep's own registers)
    kernel = build(parse(kernel_text(chain, regs))).kernels[0]
    for found in (nan_blind_registers(kernel), zero_sign_blind_registers(kernel)):
        assert {"%v", "%w", "%x"} <= {r.name for r in found}
    # shared memory read otherwise (a generic load may reach it, a divisor observes the
    # sign of zero): what is stored there is observed
    for body, blindness in (
            (chain + " cvta.shared.u64 %ptr, slots; ld.b32 %u, [%ptr];", nan_blind_registers),
            (chain + " ld.shared.b32 %u, [%s]; div.full.f32 %d, %a, %u;",
             zero_sign_blind_registers)):
        kernel = build(parse(kernel_text(body, regs))).kernels[0]
        assert "%w" not in {r.name for r in blindness(kernel)}, body


@pytest.mark.parametrize("op", ["max", "min"])
def test_min_max_chains_as_trees_keep_their_bits(op):
    # a chain d1 = max(a, b), d2 = max(d1, c)... whose links are read once (a softmax's row
    # maximum) runs as a balanced tree on warp gangs (gang/chains.py): every order gives the
    # same bits (NaNs absent, -0 below +0, two NaNs the canonical NaN); the same chain with
    # its links also moved out as bits stays a chain
    from ptxport.codegen.targets.cpu.gang.chains import balance_chains
    from ptxport.ir.from_ptx import build
    from ptxport.ptx.parser import parse

    leaves = ("neg.f32 %v, %a; abs.f32 %w, %b; mov.b32 %x, 0x80000000; "
              "mov.b32 %y, 0x7FC05678;")
    links = ["%u1", "%u2", "%u3", "%u4", "%u5"]
    chain = [f"{op}.f32 %u1, %a, %b;", f"{op}.f32 %u2, %u1, %v;", f"{op}.f32 %u3, %w, %u2;",
             f"{op}.f32 %u4, %u3, %x;", f"{op}.f32 %u5, %u4, %a;", f"{op}.f32 %d, %u5, %y;"]
    tree = leaves + " ".join(chain)
    seen = tree + "".join(f" mov.b32 %z, {link};" for link in links)
    regs = ".reg .b32 %u1, %u2, %u3, %u4, %u5, %v, %w, %x, %y, %z;"
    specials = [0x7FC01234, 0xFFA00001, 0x7F800001, 0xFFFFFFFF, 0x7F800000, 0xFF800000,
                0x80000000, 0, 0x3F800000, 0xBF800000, 0x00000001, 0x80000001]
    a = [x for x in specials for _ in specials]
    b = [y for _ in specials for y in specials]
    # (one kernel each: a link written twice in one kernel stays a chain)
    (balanced,), (chained,) = (run([body], [a, b], 32, regs=regs) for body in (tree, seen))
    check(f"{op} chain", balanced, chained, [a, b], 32)

    class Lowering:         # what balance_chains reads of a gang's lowering
        skips: dict = {}
        uniform: set = set()
        crossing: set = set()
        chain_counts = None

    for body, steps in ((tree, 3), (seen, 6)):
        fl = Lowering()
        fl.function = build(parse(kernel_text(body, regs))).kernels[0]
        code = [i for i in fl.function.instructions() if i.opcode == op]
        # the dependent steps to %d: ceil(log2(7 leaves)) as a tree, 6 as a chain
        depth: dict = {}
        for inst in balance_chains(code, fl):
            depth[inst.operands[0].name] = 1 + max(depth.get(v.name, 0)
                                                   for v in inst.operands[1:])
        assert depth["%d"] == steps, body
