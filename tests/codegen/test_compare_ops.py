"""Comparison and selection on the CPU target (PTX ISA 9.7.6, 9.7.7): setp and set for every
comparison on integers, f32, f64, f16, bf16 and their packed pairs, the .and/.or/.xor forms
with a {!}c predicate, p|q results; selp; slct with its -0.0 rule.

Each kernel runs many instructions on the same operands: thread i loads a[i], b[i], c[i] and
stores one output per instruction. A predicate pair p|q comes back as p + 2 * q.
"""

from __future__ import annotations

import numpy as np
import pytest

from cpu_harness import sweep

# NaN bit patterns pass through numpy casts on purpose.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

UINT = {16: np.uint16, 32: np.uint32, 64: np.uint64}
CMP = ("eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num",
       "nan")
BOOLOPS = ("and", "or", "xor")

# The kernels leave predicates in %d: p, or p + 2 * q for a pair.
PAIR = " selp.b{w} %d, 1, 0, %p; selp.b{w} %e, 2, 0, %q; or.b{w} %d, %d, %e;"
ONE = " selp.b{w} %d, 1, 0, %p;"
CONDITION = "setp.ne.b{w} %pc, %c, 0; "


def run(insts: list[str], inputs: list, bits: int, regs: str = "") -> list[np.ndarray]:
    return sweep([inst.replace("{w}", str(bits)) for inst in insts], inputs, bits,
                 regs=f".reg .b{bits} %e; {regs}")


def check(name: str, got, want, inputs: list) -> None:
    got, want = np.asarray(got, dtype=np.uint64), np.asarray(want).astype(np.uint64)
    bad = np.nonzero(got != want)[0]
    if len(bad):
        i = bad[0]
        operands = ", ".join(f"{int(col[i]):x}" for col in inputs)
        pytest.fail(f"{name}: {len(bad)} of {len(want)} wrong; first for ({operands}): "
                    f"got {int(got[i]):x}, expected {int(want[i]):x}")


def compare(cmp: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """PTX's comparison on float values (NaN-aware)."""
    unordered = np.isnan(x) | np.isnan(y)
    with np.errstate(invalid="ignore"):
        relation = {"eq": x == y, "ne": x != y, "lt": x < y, "le": x <= y, "gt": x > y,
                    "ge": x >= y, "num": np.zeros_like(unordered),
                    "nan": np.zeros_like(unordered)}
    base = cmp[:-1] if cmp.endswith("u") and cmp != "neu" else ("ne" if cmp == "neu" else cmp)
    if cmp == "num":
        return ~unordered
    if cmp == "nan":
        return unordered
    if cmp in ("equ", "neu", "ltu", "leu", "gtu", "geu"):
        return relation[base] | unordered
    return relation[cmp] & ~unordered


def combine(boolop: str, value: np.ndarray, c: np.ndarray) -> np.ndarray:
    return {"and": value & c, "or": value | c, "xor": value ^ c}[boolop]


def f32_values(bits, ftz: bool = False) -> np.ndarray:
    bits = np.asarray(bits, dtype=np.uint64).astype(np.uint32)
    if ftz:
        bits = np.where((bits & 0x7F80_0000) == 0, bits & 0x8000_0000, bits).astype(np.uint32)
    return bits.view(np.float32).astype(np.float64)


def half_values(bits, bf16: bool, ftz: bool = False) -> np.ndarray:
    bits = np.asarray(bits, dtype=np.uint64)
    if bf16:
        return f32_values(bits << np.uint64(16), ftz)
    b16 = bits.astype(np.uint16)
    if ftz:
        b16 = np.where((b16 & 0x7C00) == 0, b16 & 0x8000, b16).astype(np.uint16)
    return b16.view(np.float16).astype(np.float64)


S32 = [0x00000000, 0x80000000, 0x3F800000, 0xBF800000, 0x00000001, 0x80000001, 0x007FFFFF,
       0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FFFFFFF, 0xFFC00000,
       0x7F800001, 0x40000000, 0x3F800001]
S64 = [0, 1 << 63, 0x3FF0000000000000, 0xBFF0000000000000, 0x1, 0x8000000000000001,
       0x7FEFFFFFFFFFFFFF, 0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000,
       0xFFF0000000000001, 0x3FF0000000000001]


def columns(specials: list[int], bits: int, count: int, seed: int) -> list[np.ndarray]:
    """Every pair of special values, random patterns, and equal pairs; c random 0/1."""
    rng = np.random.default_rng(seed)
    a = [x for x in specials for _ in specials]
    b = [y for _ in specials for y in specials]
    randoms = rng.integers(0, 1 << bits, count, dtype=np.uint64)
    a = np.concatenate([np.array(a, np.uint64), randoms, randoms[:100]])
    b = np.concatenate([np.array(b, np.uint64), np.roll(randoms, 1), randoms[:100]])
    return [a, b, rng.integers(0, 2, len(a), dtype=np.uint64)]


@pytest.mark.parametrize("bits, suffix, specials", [(32, "f32", S32), (64, "f64", S64)])
def test_float_setp_every_comparison(bits, suffix, specials):
    cols = columns(specials, bits, 1500, seed=bits)
    insts = [f"setp.{c}.{suffix} %p|%q, %a, %b;" + PAIR for c in CMP]
    boolean = [(c, op, neg) for c in ("lt", "nan", "geu", "ne") for op in BOOLOPS
               for neg in ("", "!")]
    insts += [CONDITION + f"setp.{c}.{op}.{suffix} %p|%q, %a, %b, {neg}%pc;" + PAIR
              for c, op, neg in boolean]
    ftz = ("lt", "equ", "eq", "nan") if bits == 32 else ()
    insts += [f"setp.{c}.ftz.f32 %p, %a, %b;" + ONE for c in ftz]
    got = run(insts, cols, bits)
    to_value = f32_values if bits == 32 else (lambda v: np.asarray(v, np.uint64).view(
        np.float64))
    x, y = to_value(cols[0]), to_value(cols[1])
    c = cols[2].astype(bool)
    for cmp, out in zip(CMP, got, strict=False):
        t = compare(cmp, x, y)
        check(f"setp.{cmp}.{suffix}", out, t + 2 * ~t, cols)
    for (cmp, op, neg), out in zip(boolean, got[len(CMP):], strict=False):
        t, cc = compare(cmp, x, y), (~c if neg else c)
        check(f"setp.{cmp}.{op}.{suffix} {neg}c", out,
              combine(op, t, cc) + 2 * combine(op, ~t, cc), cols)
    for cmp, out in zip(ftz, got[len(CMP) + len(boolean):], strict=True):
        check(f"setp.{cmp}.ftz.f32", out,
              compare(cmp, f32_values(cols[0], True), f32_values(cols[1], True)), cols)


def test_half_setp_every_a():
    """Every 16-bit a against 2 random b each, every comparison, f16 and bf16."""
    rng = np.random.default_rng(16)
    a = np.tile(np.arange(1 << 16, dtype=np.uint64), 2)
    cols = [a, rng.integers(0, 1 << 16, len(a), dtype=np.uint64),
            rng.integers(0, 2, len(a), dtype=np.uint64)]
    forms = [(c, suffix, "") for suffix in ("f16", "bf16") for c in CMP]
    forms += [(c, "f16", ".ftz") for c in ("lt", "equ", "ge")]
    insts = [f"setp.{c}{ftz}.{suffix} %p, %a, %b;" + ONE for c, suffix, ftz in forms]
    insts += [CONDITION + "setp.gtu.xor.bf16 %p, %a, %b, !%pc;" + ONE]
    got = run(insts, cols, 16)
    for (cmp, suffix, ftz), out in zip(forms, got, strict=False):
        bf16 = suffix == "bf16"
        x, y = (half_values(v, bf16, bool(ftz)) for v in cols[:2])
        check(f"setp.{cmp}{ftz}.{suffix}", out, compare(cmp, x, y), cols)
    x, y = (half_values(v, True) for v in cols[:2])
    check("setp.gtu.xor.bf16", got[-1], compare("gtu", x, y) ^ ~cols[2].astype(bool), cols)


def test_packed_setp_gives_one_predicate_per_half():
    """setp on f16x2/bf16x2: p from the low halves, q from the high halves, each combined
    with c."""
    rng = np.random.default_rng(17)
    cols = [rng.integers(0, 1 << 32, 20000, dtype=np.uint64) for _ in range(2)]
    cols[1][:5000] = cols[0][:5000] ^ rng.integers(0, 2, 5000, dtype=np.uint64) << np.uint64(16)
    cols.append(rng.integers(0, 2, 20000, dtype=np.uint64))
    forms = [(c, suffix, "", "") for suffix in ("f16x2", "bf16x2") for c in CMP]
    forms += [("lt", "f16x2", ".and", "!"), ("nan", "bf16x2", ".or", ""),
              ("ge", "f16x2.ftz", ".xor", "")]
    insts = [(CONDITION if op else "") + f"setp.{c}{op}.{suffix} %p|%q, %a, %b"
             + (f", {neg}%pc;" if op else ";") + PAIR for c, suffix, op, neg in forms]
    got = run(insts, cols, 32)
    c = cols[2].astype(bool)
    for (cmp, suffix, op, neg), out in zip(forms, got, strict=True):
        bf16, ftz = suffix.startswith("bf16"), suffix.endswith("ftz")
        lanes = [compare(cmp, half_values(cols[0] >> np.uint64(16 * k) & np.uint64(0xFFFF),
                                          bf16, ftz),
                         half_values(cols[1] >> np.uint64(16 * k) & np.uint64(0xFFFF), bf16,
                                     ftz)) for k in (0, 1)]
        if op:
            lanes = [combine(op[1:], lane, ~c if neg else c) for lane in lanes]
        check(f"setp.{cmp}{op}.{suffix}", out, lanes[0] + 2 * lanes[1], cols)


def test_set_writes_ones_or_one_point_zero():
    rng = np.random.default_rng(18)
    cols = columns(S32, 32, 1500, seed=18)
    x, y = f32_values(cols[0]), f32_values(cols[1])
    c = cols[2].astype(bool)
    forms = [("set.lt.f32.f32", compare("lt", x, y), 0x3F80_0000),
             ("set.gtu.u32.f32", compare("gtu", x, y), 0xFFFF_FFFF),
             ("set.nan.s32.f32", compare("nan", x, y), 0xFFFF_FFFF),
             ("set.lt.ftz.f32.f32", compare("lt", f32_values(cols[0], True),
                                            f32_values(cols[1], True)), 0x3F80_0000),
             ("set.lt.s32.s32", cols[0].astype(np.uint32).view(np.int32)
              < cols[1].astype(np.uint32).view(np.int32), 0xFFFF_FFFF),
             ("set.hi.u32.u32", cols[0] > cols[1], 0xFFFF_FFFF),
             ("set.eq.f32.b32", cols[0] == cols[1], 0x3F80_0000)]
    insts = [f"{name} %d, %a, %b;" for name, _, _ in forms]
    insts += [CONDITION + "set.ltu.or.f32.f32 %d, %a, %b, %pc;",
              CONDITION + "set.ne.xor.u32.f32 %d, %a, %b, !%pc;"]
    got = run(insts, cols, 32)
    for (name, truth, one), out in zip(forms, got, strict=False):
        check(name, out, np.where(truth, one, 0), cols)
    check("set.ltu.or.f32.f32", got[-2], np.where(compare("ltu", x, y) | c, 0x3F80_0000, 0),
          cols)
    check("set.ne.xor.u32.f32", got[-1], np.where(compare("ne", x, y) ^ ~c, 0xFFFF_FFFF, 0),
          cols)
    # Half sources and destinations, scalar and packed.
    del rng
    halves = [np.tile(np.arange(1 << 16, dtype=np.uint64), 1),
              np.random.default_rng(19).integers(0, 1 << 16, 1 << 16, dtype=np.uint64)]
    got = run(["set.lt.f16.f16 %d, %a, %b;", "set.lt.u16.f16 %d, %a, %b;",
               "set.gtu.bf16.bf16 %d, %a, %b;", "set.ge.s16.bf16 %d, %a, %b;",
               "set.lt.ftz.f16.f16 %d, %a, %b;"], halves, 16)
    f16 = [half_values(v, False) for v in halves]
    bf16 = [half_values(v, True) for v in halves]
    check("set.lt.f16.f16", got[0], np.where(compare("lt", *f16), 0x3C00, 0), halves)
    check("set.lt.u16.f16", got[1], np.where(compare("lt", *f16), 0xFFFF, 0), halves)
    check("set.gtu.bf16.bf16", got[2], np.where(compare("gtu", *bf16), 0x3F80, 0), halves)
    check("set.ge.s16.bf16", got[3], np.where(compare("ge", *bf16), 0xFFFF, 0), halves)
    ftz = [half_values(v, False, True) for v in halves]
    check("set.lt.ftz.f16.f16", got[4], np.where(compare("lt", *ftz), 0x3C00, 0), halves)
    packed = [halves[0] | halves[1] << np.uint64(16), halves[1] | halves[0] << np.uint64(16)]
    got = run(["set.lt.f16x2.f16x2 %d, %a, %b;", "set.gtu.u32.f16x2 %d, %a, %b;",
               "set.ne.bf16x2.bf16x2 %d, %a, %b;", "set.lt.s32.bf16x2 %d, %a, %b;"],
              packed, 32)
    for (name, bf16_, cmp, one), out in zip(
            (("set.lt.f16x2.f16x2", False, "lt", 0x3C00), ("set.gtu.u32.f16x2", False, "gtu",
                                                            0xFFFF),
             ("set.ne.bf16x2.bf16x2", True, "ne", 0x3F80), ("set.lt.s32.bf16x2", True, "lt",
                                                            0xFFFF)), got, strict=True):
        want = np.zeros(len(out), np.uint64)
        for k in (0, 1):
            part = [half_values(v >> np.uint64(16 * k) & np.uint64(0xFFFF), bf16_)
                    for v in packed]
            want |= np.where(compare(cmp, *part), one, 0).astype(np.uint64) << np.uint64(16 * k)
        check(name, out, want, packed)


INTEGER_OPS = {"s": ("eq", "ne", "lt", "le", "gt", "ge"),
               "u": ("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs"),
               "b": ("eq", "ne")}
RELATION = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
            "gt": np.greater, "ge": np.greater_equal, "lo": np.less, "ls": np.less_equal,
            "hi": np.greater, "hs": np.greater_equal}


@pytest.mark.parametrize("bits", [16, 32, 64])
def test_integer_setp(bits):
    rng = np.random.default_rng(bits)
    top = 1 << bits
    edges = [0, 1, 2, top // 2 - 1, top // 2, top // 2 + 1, top - 1, top - 2]
    cols = columns(edges, bits, 2000, seed=bits + 1)
    cols[1][-300:] = cols[0][-300:]
    del rng
    forms = [(kind, cmp) for kind, ops in INTEGER_OPS.items() for cmp in ops]
    insts = [f"setp.{cmp}.{kind}{bits} %p|%q, %a, %b;" + PAIR for kind, cmp in forms]
    insts.append(CONDITION + f"setp.lt.and.s{bits} %p|%q, %a, %b, !%pc;" + PAIR)
    got = run(insts, cols, bits)
    signed = {16: np.int16, 32: np.int32, 64: np.int64}[bits]
    as_signed = [c.astype(UINT[bits]).view(signed) for c in cols[:2]]
    for (kind, cmp), out in zip(forms, got, strict=False):
        x, y = as_signed if kind == "s" else cols[:2]
        t = RELATION[cmp](x, y)
        check(f"setp.{cmp}.{kind}{bits}", out, t + 2 * ~t, cols)
    t, c = np.less(*as_signed), ~cols[2].astype(bool)
    check(f"setp.lt.and.s{bits} !c", got[-1], (t & c) + 2 * (~t & c), cols)


def test_selp_and_slct():
    """selp keeps bits (NaN payloads too); slct takes a when c >= 0, -0.0 and (with .ftz)
    negative subnormals included, b for NaN c."""
    rng = np.random.default_rng(20)
    selectors = S32 + [0x80400000, 0x807FFFFF, 0xFFFFFFFF, 0x7FFFFFFF]
    count = len(selectors) * 40
    cols = [rng.integers(0, 1 << 32, count, dtype=np.uint64),
            rng.integers(0, 1 << 32, count, dtype=np.uint64),
            np.array(selectors * 40, dtype=np.uint64)]
    cols[0][:4] = [0x7FC12345, 0xFFC00001, 0x7F800001, 0x80000000]
    got = run([CONDITION + "selp.f32 %d, %a, %b, %pc;", "slct.b32.f32 %d, %a, %b, %c;",
               "slct.ftz.f32.f32 %d, %a, %b, %c;", "slct.u32.s32 %d, %a, %b, %c;"], cols, 32)
    c = cols[2]
    check("selp.f32", got[0], np.where(c != 0, cols[0], cols[1]), cols)
    value = f32_values(c)
    with np.errstate(invalid="ignore"):
        check("slct.b32.f32", got[1], np.where(value >= 0, cols[0], cols[1]), cols)
        check("slct.ftz.f32.f32", got[2], np.where(f32_values(c, True) >= 0, cols[0], cols[1]),
              cols)
    check("slct.u32.s32", got[3], np.where(c < 0x8000_0000, cols[0], cols[1]), cols)
    wide = [rng.integers(0, 1 << 64, 3000, dtype=np.uint64) for _ in range(3)]
    wide[0][:2] = [0x7FF8000000012345, 0xFFF0000000000001]
    got = run([CONDITION + "selp.f64 %d, %a, %b, %pc;", CONDITION + "selp.s64 %d, %a, %b, !%pc;",
               "cvt.u32.u64 %w, %c; slct.f64.s32 %d, %a, %b, %w;"], wide, 64,
              regs=".reg .b32 %w;")
    c = wide[2]
    check("selp.f64", got[0], np.where(c != 0, wide[0], wide[1]), wide)
    check("selp.s64 !c", got[1], np.where(c == 0, wide[0], wide[1]), wide)
    check("slct.f64.s32", got[2], np.where((c & np.uint64(0x8000_0000)) == 0, wide[0], wide[1]),
          wide)
