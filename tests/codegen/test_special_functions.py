"""The .approx instructions on the CPU target against the error bounds the PTX ISA manual
states (9.7.3.x, 9.7.4.x), and their special values exactly.

Bounds checked (the manual's): rcp.approx.f32 1 ulp; sqrt.approx.f32 relative 2**-23;
rsqrt.approx.f32 relative 2**-22.9; div.approx.f32 and div.full.f32 2 ulp (approx: for
2**-126 <= |b| <= 2**126); ex2.approx.f32 2 ulp; lg2.approx.f32 absolute 2**-22.6 on its
mantissa range (relative 2**-22 elsewhere); sin/cos.approx.f32 absolute 2**-20.5 on
[-100 pi, 100 pi]; tanh.approx.f32 relative 2**-11; ex2.approx.f16 relative 2**-9.9,
ex2.approx.ftz.bf16 relative 2**-7; tanh.approx.f16 absolute 2**-10.987 and .bf16 2**-8.
The two gross f64 approximations (rcp.approx.ftz.f64, rsqrt.approx.ftz.f64: 32 result bits,
from the operand's upper 32) are held to a relative 2**-19.
Inputs of 16 bits are swept exhaustively; f32 inputs are random bit patterns, values in the
bounded ranges, and special values.
"""

from __future__ import annotations

import numpy as np
import pytest

from cpu_harness import kernel_ptx, sweep

# The references meet NaNs and infinities among the operands on purpose.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

F32_NAN, HALF_NAN = 0x7FFF_FFFF, 0x7FFF


def run(insts: list[str], inputs: list, bits: int) -> list[np.ndarray]:
    """Each instruction (text over %a %b writing %d) on every element of the columns."""
    return sweep(insts, inputs, bits)


def f32(bits) -> np.ndarray:
    return np.asarray(bits, dtype=np.uint64).astype(np.uint32).view(np.float32).astype(
        np.float64)


def half(bits, bf16: bool) -> np.ndarray:
    bits = np.asarray(bits, dtype=np.uint64)
    if bf16:
        return f32(bits << np.uint64(16))
    return bits.astype(np.uint16).view(np.float16).astype(np.float64)


def ulp32(x: np.ndarray) -> np.ndarray:
    """The f32 ulp at |x| (2**-149 at the bottom)."""
    with np.errstate(divide="ignore"):
        exponent = np.floor(np.log2(np.abs(x)))
    return 2.0 ** np.maximum(np.nan_to_num(exponent, neginf=-149) - 23, -149)


def bound(name: str, ok: np.ndarray, x: np.ndarray, got: np.ndarray, want: np.ndarray) -> None:
    bad = np.nonzero(~ok)[0]
    if len(bad):
        i = bad[0]
        pytest.fail(f"{name}: {len(bad)} outside the manual's bound; first: x={x[i]!r} "
                    f"got {got[i]!r}, exact {want[i]!r}")


def exact_bits(name: str, got, want, inputs) -> None:
    got, want = np.asarray(got, dtype=np.uint64), np.asarray(want, dtype=np.uint64)
    bad = np.nonzero(got != want)[0]
    if len(bad):
        i = bad[0]
        pytest.fail(f"{name}: {len(bad)} wrong; first for {int(inputs[i]):x}: got "
                    f"{int(got[i]):x}, expected {int(want[i]):x}")


SPECIAL32 = [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC12345,
             0x7F800001, 0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00800000,
             0x3F800000, 0xBF800000, 0x7F7FFFFF, 0xFF7FFFFF]


def f32_operands(seed: int, low: float, high: float, count: int = 20000) -> np.ndarray:
    """Random bit patterns, values spread over [low, high] (both signs), and specials."""
    rng = np.random.default_rng(seed)
    spread = rng.uniform(low, high, count) * rng.choice((-1, 1), count)
    return np.concatenate([rng.integers(0, 1 << 32, count, dtype=np.uint64),
                           spread.astype(np.float32).view(np.uint32).astype(np.uint64),
                           np.array(SPECIAL32, dtype=np.uint64)])


def test_f32_reciprocal_square_root_division():
    x = f32_operands(1, 0.0, 4.0)
    y = np.roll(x, 7)
    names = ["rcp.approx.f32 %d, %a;", "rcp.approx.ftz.f32 %d, %a;", "sqrt.approx.f32 %d, %a;",
             "rsqrt.approx.f32 %d, %a;", "rsqrt.approx.ftz.f32 %d, %a;",
             "div.approx.f32 %d, %a, %b;", "div.full.f32 %d, %a, %b;",
             "div.approx.ftz.f32 %d, %a, %b;"]
    got = [f32(g) for g in run(names, [x, y], 32)]
    a, b = f32(x), f32(y)
    finite = np.isfinite(a) & (a != 0)
    with np.errstate(all="ignore"):
        rcp, root, quotient = 1 / a, np.sqrt(a), a / b
        rroot = 1 / np.sqrt(a)
    normal_range = finite & (np.abs(rcp) < 2.0 ** 128)
    bound("rcp.approx.f32", ~normal_range | (np.abs(got[0] - rcp) <= ulp32(rcp)), a, got[0], rcp)
    positive = finite & (a > 0)
    bound("sqrt.approx.f32", ~positive | (np.abs(got[2] / root - 1) <= 2.0 ** -23), a, got[2],
          root)
    bound("rsqrt.approx.f32", ~positive | (np.abs(got[3] / rroot - 1) <= 2.0 ** -22.9), a,
          got[3], rroot)
    in_range = (np.abs(b) >= 2.0 ** -126) & (np.abs(b) <= 2.0 ** 126) & np.isfinite(a) & \
        (np.abs(quotient) < 2.0 ** 128) & (np.abs(quotient) >= 2.0 ** -126)
    for name, out in (("div.approx.f32", got[5]), ("div.full.f32", got[6])):
        bound(name, ~in_range | (np.abs(out - quotient) <= 2 * ulp32(quotient)), a, out,
              quotient)
    # Special values, bit for bit.
    s = np.array(SPECIAL32, dtype=np.uint64)
    specials = run(names[:5], [s], 32)
    inf, ninf, zero, nzero = 0x7F800000, 0xFF800000, 0, 0x80000000
    nan = F32_NAN
    exact_bits("rcp.approx.f32", specials[0], [inf, ninf, zero, nzero, nan, nan, nan, inf, ninf,
                                               0x7E800001, 0xFE800001, 0x7E800000, 0x3F800000,
                                               0xBF800000, 0x00200000, 0x80200000], s)
    exact_bits("rcp.approx.ftz.f32", specials[1], [inf, ninf, zero, nzero, nan, nan, nan, inf,
                                                   ninf, inf, ninf, 0x7E800000, 0x3F800000,
                                                   0xBF800000, zero, nzero], s)
    exact_bits("rsqrt.approx.ftz.f32", specials[4], [inf, ninf, zero, nan, nan, nan, nan, inf,
                                                     ninf, inf, ninf, 0x5F000000, 0x3F800000,
                                                     nan, 0x1F800000, nan], s)
    # div.approx: for 2**126 < |b| the quotient is a zero (NaN for infinite a).
    big = np.array([0x7EC00000, 0x7F000000, 0xFF7FFFFF], dtype=np.uint64)
    numerators = np.array([0x3F800000, 0x7F800000, 0x7F7FFFFF], dtype=np.uint64)
    out = run(["div.approx.f32 %d, %a, %b;"], [numerators, big], 32)[0]
    exact_bits("div.approx.f32, huge b", out, [0, nan, 0x80000000], big)


def test_f32_division_by_a_shared_divisor():
    """div.full.f32 by a register that another div.full divides by too: a * (1 / b) with b
    scaled into the normal range (float_arith._by_reciprocal), 2 ulp over the full range of
    b (subnormal, beyond 2**126), zeros, infinities and NaNs as the quotient's."""
    x = f32_operands(4, 0.0, 4.0)
    rng = np.random.default_rng(5)
    edges = np.concatenate([rng.uniform(2.0 ** -149, 2.0 ** -126, 2000),
                            rng.uniform(2.0 ** 126, 2.0 ** 127.9, 2000)])
    edges *= rng.choice((-1, 1), edges.size)
    y = np.concatenate([np.roll(x, 7), edges.astype(np.float32).view(np.uint32)])
    x = np.concatenate([x, rng.integers(0, 1 << 32, edges.size, dtype=np.uint64)])
    y = y.astype(np.uint64)
    got = [f32(g) for g in run(["div.full.f32 %d, %a, %b;", "div.full.f32 %d, %c, %b;"],
                               [x, y, np.roll(x, 3)], 32)]
    b = f32(y)
    for out, a in ((got[0], f32(x)), (got[1], f32(np.roll(x, 3)))):
        with np.errstate(all="ignore"):
            quotient = a / b
        finite = np.isfinite(quotient) & (np.abs(quotient) < 2.0 ** 127.9) & (quotient != 0)
        bound("div.full.f32 (shared divisor)",
              ~finite | (np.abs(out - quotient) <= 2 * ulp32(quotient)), a, out, quotient)
        special = ~np.isfinite(quotient) | (quotient == 0)
        want = quotient.astype(np.float32).view(np.uint32)
        want = np.where(np.isnan(quotient), np.uint32(F32_NAN), want)
        exact_bits("div.full.f32 (shared divisor), special quotients",
                   out[special].astype(np.float32).view(np.uint32), want[special],
                   np.asarray(y)[special])


def test_f32_ex2_lg2():
    x = f32_operands(2, 0.0, 130.0)
    got = [f32(g) for g in run(["ex2.approx.f32 %d, %a;", "lg2.approx.f32 %d, %a;",
                                "ex2.approx.ftz.f32 %d, %a;", "lg2.approx.ftz.f32 %d, %a;"],
                               [x], 32)]
    a = f32(x)
    with np.errstate(all="ignore"):
        power, log = np.exp2(a), np.log2(a)
    finite = np.isfinite(power) & (power < 2.0 ** 128) & np.isfinite(a)
    bound("ex2.approx.f32", ~finite | (np.abs(got[0] - power) <= 2 * ulp32(power)), a, got[0],
          power)
    positive = np.isfinite(a) & (a > 0)
    mantissa_range = positive & (a >= 0.5) & (a <= 2)
    error = np.abs(got[1] - log)
    ok = np.where(mantissa_range, error <= 2.0 ** -22.6, error <= 2.0 ** -22 * np.abs(log))
    bound("lg2.approx.f32", ~positive | ok, a, got[1], log)
    s = np.array(SPECIAL32, dtype=np.uint64)
    out = run(["ex2.approx.f32 %d, %a;", "lg2.approx.f32 %d, %a;", "ex2.approx.ftz.f32 %d, %a;",
               "lg2.approx.ftz.f32 %d, %a;"], [s], 32)
    nan, inf, ninf = F32_NAN, 0x7F800000, 0xFF800000
    one = 0x3F800000
    exact_bits("ex2 specials", out[0][:7], [one, one, inf, 0, nan, nan, nan], s)
    exact_bits("lg2 specials", out[1][:7], [ninf, ninf, inf, nan, nan, nan, nan], s)
    exact_bits("lg2 of subnormals", out[1][7:11], [0xC3150000, nan, 0xC2FC0000, nan], s[7:])
    exact_bits("lg2.ftz of subnormals", out[3][7:11], [ninf, ninf, ninf, ninf], s[7:])
    tiny = np.array([0xC3080000, 0xC2FE0000], dtype=np.uint64)   # 2**-136, 2**-127
    flushed = run(["ex2.approx.f32 %d, %a;", "ex2.approx.ftz.f32 %d, %a;"], [tiny], 32)
    exact_bits("ex2 to a subnormal", flushed[0], [0x00002000, 0x00400000], tiny)
    exact_bits("ex2.ftz to a subnormal", flushed[1], [0, 0], tiny)


def _has_avx512() -> bool:
    from ptxport.codegen.targets.cpu.machine import host

    return "+avx512f" in host()[1].split(",")


# ex2.approx.f32's last step, p * 2**k: vscalefps on a float k (the CPU target's avx512.py,
# a warp's lanes on an AVX-512 host), llvm.ldexp (that host's scalars), two products by
# powers of two (elsewhere)
EX2_ROUTES = {"vscalefps": (True, True), "ldexp": (False, True), "two products": (False, False)}


def test_f32_ex2_scales_alike_by_every_route(monkeypatch):
    # the same bits every way, results that round to subnormals and overflow included (each
    # route builds its own PTX text)
    from ptxport.codegen.targets.cpu.target import CpuTarget

    rng = np.random.default_rng(5)
    tails = rng.uniform(-152.0, -124.0, 4000).astype(np.float32)    # subnormal results
    x = np.concatenate([f32_operands(6, 0.0, 140.0, 8000),
                        tails.view(np.uint32).astype(np.uint64)])
    forms = ["ex2.approx.f32 %d, %a;", "ex2.approx.ftz.f32 %d, %a;"]
    routes = [r for r in EX2_ROUTES if _has_avx512() or r == "two products"]
    got = {}
    for k, route in enumerate(routes):
        lanes, ldexp = EX2_ROUTES[route]
        monkeypatch.setattr(CpuTarget, "avx512_lanes", lanes)
        monkeypatch.setattr(CpuTarget, "native_ldexp", ldexp)
        got[route] = sweep(forms, [x], 32, regs=f".reg .b32 %route_{k};")
    for route in routes[:-1]:
        for k, form in enumerate(forms):
            exact_bits(f"{form} by {route}", got[route][k], got[routes[-1]][k], [x])
    # .ftz: a subnormal operand gives 1 (flushed or not), a result below 2**-126 a zero
    plain, flushed = (f32(g) for g in got[routes[0]])
    a = f32(x)
    want = np.where(np.abs(a) < 2.0 ** -126, 1.0, np.where(plain < 2.0 ** -126, 0.0, plain))
    nan = np.isnan(plain)
    exact_bits("ex2.approx.ftz.f32", np.where(nan, F32_NAN, flushed.astype(np.float32).view(
        np.uint32)), np.where(nan, F32_NAN, want.astype(np.float32).view(np.uint32)), x)
    assert ((plain > 0) & (plain < 2.0 ** -126)).sum() > 1000


# nvcc's expf (CUDA 13, without fast math), as the softmax's loops hold it: j = x log2(e)
# rounded down by fma.rm into the low bits of 1.5 * 2**23 (after cvt.sat's clamp), the rest
# by ex2.approx.ftz, times 2**j made from j's bits
EXPF = """
fma.rn.f32 %e1, %x, 0f3BBB989D, 0f3F000000;
cvt.sat.f32.f32 %e2, %e1;
fma.rm.f32 %e3, %e2, 0f437C0000, 0f4B400001;
add.f32 %e4, %e3, 0fCB40007F;
neg.f32 %e5, %e4;
fma.rn.f32 %e6, %x, 0f3FB8AA3B, %e5;
fma.rn.f32 %e7, %x, 0f32A57060, %e6;
mov.b32 %j, %e3;
shl.b32 %j, %j, 23;
mov.b32 %e8, %j;
ex2.approx.ftz.f32 %e9, %e7;
mul.f32 %e10, %e9, %e8;
"""
EXPF_REGS = ".reg .f32 %x, %e<11>; .reg .b32 %j, %seen;"


def _expf_text(observed: bool) -> str:
    """EXPF on %a into %d; `observed`: each intermediate also moved out as bits (so none of
    them is NaN-blind: ir.analysis.nan_blind_registers)."""
    seen = "".join(f" mov.b32 %seen, %e{k};" for k in range(1, 10)) if observed else ""
    return "mov.b32 %x, %a;" + EXPF + seen + " mov.b32 %d, %e10;"


@pytest.mark.parametrize("lanes", [True, False], ids=["avx512", "exact"])
def test_nvcc_expf_sequence_over_the_whole_range(monkeypatch, lanes):
    # CUDA's expf is within 2 ulp over the whole range; so is the sequence made of ptxport's
    # instructions (fma.rm by AVX-512's embedded rounding or computed exactly), subnormal
    # results included; inf, -inf, NaN and large negative x exactly; the same bits whether
    # the intermediates are observed (NaN-blind readers: cvt.sat, neg) or not
    from ptxport.codegen.targets.cpu.target import CpuTarget

    if lanes and not _has_avx512():
        pytest.skip("the host has no AVX-512")
    monkeypatch.setattr(CpuTarget, "avx512_lanes", lanes)
    rng = np.random.default_rng(11)
    x = np.concatenate([f32_operands(12, 0.0, 104.0),
                        rng.uniform(-104.0, -87.0, 4000).astype(np.float32).view(np.uint32),
                        np.array([0xC2CFF1B5, 0xC2CE8ED0, 0x42B17218, 0x42B17217, 0xC2B00000],
                                 dtype=np.uint64)]).astype(np.uint64)
    regs = EXPF_REGS + f" .reg .b32 %lanes_{int(lanes)};"
    blind, observed = sweep([_expf_text(False), _expf_text(True)], [x], 32, regs=regs)
    exact_bits("expf, intermediates observed", blind, observed, x)
    got, a = f32(blind), f32(x)
    with np.errstate(all="ignore"):
        want = np.exp(a)
    finite = np.isfinite(a) & (want < 2.0 ** 128)
    bound("expf", ~finite | (np.abs(got - want) <= 2 * ulp32(want)), a, got, want)
    assert ((want < 2.0 ** -126) & (got > 0)).sum() > 1000         # subnormal results
    s = np.array([0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC12345, 0xC2D00000, 0xFF7FFFFF,
                  0x00000001, 0x80000000], dtype=np.uint64)
    specials = sweep([_expf_text(False)], [s], 32, regs=regs)[0]
    exact_bits("expf specials", specials, [0x7F800000, 0, F32_NAN, F32_NAN, 0, 0, 0x3F800000,
                                           0x3F800000], s)


def test_expf_sequence_registers_are_nan_blind():
    # cvt.f32.f32 and neg give the canonical NaN (cvt.sat: +0) whatever NaN they read, so the
    # registers only they and arithmetic read need no canonical NaN; the fma.rm's result is
    # moved out as bits, but is never a NaN
    from ptxport.ir.analysis import finite_registers, nan_blind_registers
    from ptxport.ir.from_ptx import build
    from ptxport.ptx.parser import parse

    text = kernel_ptx(f".reg .b32 %a, %d; {EXPF_REGS}\n" + _expf_text(False), "")
    kernel = build(parse(text)).kernels[0]
    assert {r.name for r in nan_blind_registers(kernel)} >= {"%e1", "%e4", "%e5", "%e6", "%e7"}
    assert not {r.name for r in nan_blind_registers(kernel)} & {"%e3", "%e10"}
    # the clamp, the fma.rm's result and the sum after it are finite: no NaN to make canonical
    assert {r.name for r in finite_registers(kernel)} == {"%e2", "%e3", "%e4"}


def test_finite_registers_only_where_bounds_are_proved():
    from ptxport.ir.analysis import finite_registers
    from ptxport.ir.from_ptx import build
    from ptxport.ptx.parser import parse

    body = ("mov.b32 %x, %a; cvt.sat.f32.f32 %s, %x; mul.f32 %m, %s, 0f7E000000; "
            "fma.rn.f32 %big, %m, 0f40800000, %s; add.rn.sat.f32 %t, %x, %x; "
            "mov.f32 %n, 0f7FC00000; mov.f32 %i, 0f7F800000; add.f32 %u, %s, %n; "
            "mov.f32 %acc, 0f00000000; add.f32 %acc, %acc, %s; mov.b32 %d, %acc;")
    regs = ".reg .f32 %x, %s, %m, %big, %t, %n, %i, %u, %acc;"
    text = kernel_ptx(f".reg .b32 %a, %d; {regs}\n" + body, "")
    kernel = build(parse(text)).kernels[0]
    # %m at most 2**125; %m * 4 + %s beyond 2**126; %acc written from itself; NaN, infinity
    assert {r.name for r in finite_registers(kernel)} == {"%s", "%m", "%t"}


def test_f32_sin_cos_tanh():
    x = f32_operands(3, 0.0, 100 * np.pi)
    got = [f32(g) for g in run(["sin.approx.f32 %d, %a;", "cos.approx.f32 %d, %a;",
                                "tanh.approx.f32 %d, %a;", "sin.approx.ftz.f32 %d, %a;"],
                               [x], 32)]
    a = f32(x)
    bounded = np.abs(a) <= 100 * np.pi
    for name, out, exact in (("sin", got[0], np.sin(a)), ("cos", got[1], np.cos(a)),
                             ("sin.ftz", got[3], np.sin(a))):
        bound(f"{name}.approx.f32", ~bounded | (np.abs(out - exact) <= 2.0 ** -20.5), a, out,
              exact)
    finite = np.isfinite(a)
    everywhere = ~finite | ((np.abs(got[0]) <= 1) & (np.abs(got[1]) <= 1))
    bound("sin/cos in [-1, 1]", everywhere, a, got[0], np.sin(a))
    t = np.tanh(a)
    bound("tanh.approx.f32", ~finite | (np.abs(got[2] - t) <= 2.0 ** -11 * np.abs(t)), a,
          got[2], t)
    s = np.array(SPECIAL32[:7], dtype=np.uint64)
    out = run(["sin.approx.f32 %d, %a;", "cos.approx.f32 %d, %a;", "tanh.approx.f32 %d, %a;"],
              [s], 32)
    nan = F32_NAN
    exact_bits("sin specials", out[0], [0, 0x80000000, nan, nan, nan, nan, nan], s)
    exact_bits("cos specials", out[1], [0x3F800000, 0x3F800000, nan, nan, nan, nan, nan], s)
    exact_bits("tanh specials", out[2], [0, 0x80000000, 0x3F800000, 0xBF800000, nan, nan, nan],
               s)


def test_half_ex2_tanh_every_value():
    every = np.arange(1 << 16, dtype=np.uint64)
    got = run(["ex2.approx.f16 %d, %a;", "tanh.approx.f16 %d, %a;",
               "ex2.approx.ftz.bf16 %d, %a;", "tanh.approx.bf16 %d, %a;"], [every], 16)
    for k, (bf16, name) in enumerate(((False, "f16"), (True, "bf16"))):
        x = half(every, bf16)
        ex2, th = half(got[2 * k], bf16), half(got[2 * k + 1], bf16)
        with np.errstate(all="ignore"):
            power = np.exp2(x)
        largest = 65504.0 if not bf16 else 3.3895e38
        smallest = 2.0 ** -14 if not bf16 else 2.0 ** -126
        normal = np.isfinite(x) & (power <= largest) & (power >= smallest)
        relative = 2.0 ** -7 if bf16 else 2.0 ** -9.9
        bound(f"ex2.approx.{name}", ~normal | (np.abs(ex2 / power - 1) <= relative), x, ex2,
              power)
        absolute = 2.0 ** -8 if bf16 else 2.0 ** -10.987
        finite = np.isfinite(x)
        bound(f"tanh.approx.{name}", ~finite | (np.abs(th - np.tanh(x)) <= absolute), x, th,
              np.tanh(x))
        nan = np.isnan(x)
        exact_bits(f"{name} NaN results", got[2 * k][nan], np.full(nan.sum(), HALF_NAN),
                   every[nan])
    packed = every | (np.roll(every, 1) << np.uint64(16))
    pair = run(["ex2.approx.f16x2 %d, %a;", "tanh.approx.bf16x2 %d, %a;"], [packed], 32)
    low, high = every, np.roll(every, 1)
    exact_bits("ex2.approx.f16x2", pair[0], got[0][low] | (got[0][high] << np.uint64(16)),
               packed)
    exact_bits("tanh.approx.bf16x2", pair[1], got[3][low] | (got[3][high] << np.uint64(16)),
               packed)


def test_f64_reciprocals():
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.integers(0, 1 << 64, 20000, dtype=np.uint64),
                        np.array([0, 1 << 63, 0x7FF0000000000000, 0xFFF0000000000000,
                                  0x7FF8000000012345, 0x0000000000000001, 0x3FF0000000000000,
                                  0xBFF0000000000000], dtype=np.uint64)])
    got = run(["rcp.approx.ftz.f64 %d, %a;", "rsqrt.approx.f64 %d, %a;",
               "rsqrt.approx.ftz.f64 %d, %a;"], [x], 64)
    a = x.view(np.float64)
    values = [g.view(np.float64) for g in got]
    with np.errstate(all="ignore"):
        rcp, rroot = 1 / a, 1 / np.sqrt(a)
    normal = np.isfinite(a) & (np.abs(a) > 2.0 ** -1022) & (np.abs(a) < 2.0 ** 1022)
    bound("rcp.approx.ftz.f64", ~normal | (np.abs(values[0] / rcp - 1) <= 2.0 ** -19), a,
          values[0], rcp)
    positive = normal & (a > 0)
    bound("rsqrt.approx.f64", ~positive | (np.abs(values[1] / rroot - 1) <= 2.0 ** -50), a,
          values[1], rroot)
    bound("rsqrt.approx.ftz.f64", ~positive | (np.abs(values[2] / rroot - 1) <= 2.0 ** -19),
          a, values[2], rroot)
    exact_bits("upper 32 bits only", got[0][normal] & np.uint64(0xFFFF_FFFF), 0, x[normal])
    tail = x[-8:]
    gross_nan, inf, ninf = 0x7FFF_FFFF_0000_0000, 0x7FF0000000000000, 0xFFF0000000000000
    exact_bits("rcp.approx.ftz.f64 specials", got[0][-8:],
               [inf, ninf, 0, 1 << 63, gross_nan, inf, 0x3FF0000000000000, 0xBFF0000000000000],
               tail)
    exact_bits("rsqrt.approx.f64 specials", got[1][-8:],
               [inf, ninf, 0, 0xFFF8000000000000, 0x7FF8000000012345, 0x6180000000000000,
                0x3FF0000000000000, 0xFFF8000000000000], tail)
