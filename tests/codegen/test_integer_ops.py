"""Integer and extended-precision arithmetic on the CPU target against exact references.

Each kernel runs many instructions on the same inputs (one LLVM compile per kernel): thread i
loads a[i], b[i], c[i], computes every output, and stores out_k[i]. References are Python
integers, written from the PTX ISA manual's semantics.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from cpu_harness import kernel_ptx, run_ptx
from ptxport.errors import UnsupportedFeatureError

BLOCK = 256
M32 = 0xFFFFFFFF
NP = {"u16": np.uint16, "s16": np.int16, "u32": np.uint32, "s32": np.int32, "u64": np.uint64,
      "s64": np.int64, "b16": np.uint16, "b32": np.uint32, "b64": np.uint64}


def run_lines(body: str, inputs: dict, outputs: dict, regs: str = "", version: str = "8.0",
              target: str = "sm_80") -> dict:
    """Run `body` once per element of the input arrays. `inputs` maps a register name to
    (ptx type, values); `outputs` maps a register name to its ptx type. The kernel declares
    each as `.reg .type %name`; returns name -> numpy array of results."""
    count = len(next(iter(inputs.values()))[1])
    padded = -(-count // BLOCK) * BLOCK
    arrays = {}
    for name, (t, values) in inputs.items():
        data = np.zeros(padded, dtype=NP[t])
        mask = (1 << (8 * data.itemsize)) - 1
        data[:count] = np.array([int(v) & mask for v in values], dtype=np.uint64).astype(NP[t])
        arrays[name] = data
    for name, t in outputs.items():
        arrays[name] = np.zeros(padded, dtype=NP[t])
    names = list(inputs) + list(outputs)
    lines = [".reg .u32 %i, %t; .reg .u64 %off, %ptr;", regs,
             *(f".reg .{t} %{n};" for n, (t, _) in inputs.items()),
             *(f".reg .{t} %{n};" for n, t in outputs.items()),
             "mov.u32 %t, %tid.x; mov.u32 %i, %ctaid.x;",
             f"mad.lo.u32 %i, %i, {BLOCK}, %t;"]

    def address(name: str, t: str) -> str:
        return (f"ld.param.u64 %ptr, [p_{name}]; mul.wide.u32 %off, %i, {NP[t]().itemsize}; "
                f"add.u64 %ptr, %ptr, %off;")

    for name, (t, _) in inputs.items():
        lines.append(f"{address(name, t)} ld.global.{t} %{name}, [%ptr];")
    lines.append(body)
    for name, t in outputs.items():
        lines.append(f"{address(name, t)} st.global.{t} [%ptr], %{name};")
    params = ", ".join(f".param .u64 p_{n}" for n in names)
    ptx = kernel_ptx("\n".join(lines), params, version=version, target=target)
    run_ptx(ptx, "k", padded // BLOCK, BLOCK, [arrays[n] for n in names])
    return {n: arrays[n][:count] for n in outputs}


def column(values, bits: int) -> np.ndarray:
    """Operand values as a numpy array that references compute on exactly: int64 where
    products of two operands fit, Python integers (object) otherwise."""
    if bits <= 16:
        return np.asarray(values, dtype=np.int64)
    return np.array([int(v) for v in values], dtype=object)


def check(name: str, got, expected, bits: int, inputs: list) -> None:
    mask = (1 << bits) - 1
    got = np.array([int(v) & mask for v in got], dtype=object)
    want = np.array(expected, dtype=object) & mask
    bad = np.nonzero(got != want)[0]
    if len(bad):
        i = bad[0]
        detail = ", ".join(f"{hex(int(col[i]) & ((1 << 64) - 1))}" for col in inputs)
        pytest.fail(f"{name}: {len(bad)} wrong; first for inputs ({detail}): "
                    f"got {hex(got[i])}, expected {hex(want[i])}")


# --- values ---------------------------------------------------------------------------------------

def signed(v, bits: int):
    """Bit patterns (int or array) read as `bits`-wide two's complement."""
    v = v & ((1 << bits) - 1)
    return np.where(v >> (bits - 1), v - (1 << bits), v) if isinstance(v, np.ndarray) else (
        v - (1 << bits) if v >> (bits - 1) else v)


def edges(bits: int) -> list[int]:
    top = 1 << bits
    values = {0, 1, 2, 3, 7, 0x7F, 0x80, 0xFF, 0x100, top - 1, top - 2, top // 2, top // 2 - 1,
              top // 2 + 1, top // 4, 0x7FFF, 0x8000, 0xFFFF, 0x10000, 0xFFFFFF, 0x800000,
              0x1000000, 0x7FFFFF}
    return sorted(v % top for v in values)


def operand_columns(bits: int, count: int, seed: int, columns: int = 3) -> list[list[int]]:
    """`columns` operand lists: every pair of edge values for the first two, then random
    values (uniform and of random width, so that small and large magnitudes both occur)."""
    rng = random.Random(seed)
    e = edges(bits)
    cols = [[x for x in e for _ in e], [y for _ in e for y in e]]
    while len(cols) < columns:
        cols.append([rng.choice(e) for _ in cols[0]])
    for _ in range(count - len(cols[0])):
        for col in cols:
            width = rng.choice((bits, bits, rng.randint(1, bits)))
            col.append(rng.getrandbits(width))
    return cols


def grid16() -> list[int]:
    """256 16-bit values around every boundary: all pairs of them are swept exhaustively."""
    values = set(range(0, 64)) | set(range(0x7FFF - 31, 0x7FFF + 33)) | \
        set(range(0xFFFF - 63, 0x10000)) | {0x00FF, 0x0100, 0x0101, 0x00FE, 0x0F0F, 0xF0F0,
                                            0x5555, 0xAAAA, 0x1234, 0xFEDC, 0x4000, 0xC000}
    rng = random.Random(16)
    while len(values) < 256:
        values.add(rng.getrandbits(16))
    return sorted(values)


# --- references (numpy arrays in, numpy arrays out) ---------------------------------------------

def ref_div(a, b, bits: int, is_signed: bool):
    """PTX div; by zero, all ones (what NVIDIA's H100 gives, for every type)."""
    if is_signed:
        a, b = signed(a, bits), signed(b, bits)
    safe = np.where(b == 0, 1, b)
    q = abs(a) // abs(safe)
    return np.where(b == 0, -1, np.where((a < 0) != (safe < 0), -q, q))


def ref_rem(a, b, bits: int, is_signed: bool):
    """PTX rem (the sign of the dividend); by zero, all ones (as div)."""
    if is_signed:
        a, b = signed(a, bits), signed(b, bits)
    safe = np.where(b == 0, 1, b)
    r = abs(a) % abs(safe)
    return np.where(b == 0, -1, np.where(a < 0, -r, r))


def saturate(v, bits: int, is_signed: bool):
    low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if is_signed else (0, (1 << bits) - 1)
    return np.minimum(np.maximum(v, low), high)


def val(v, t: str):
    """The value of bit patterns v as PTX type t."""
    bits = int(t[1:])
    return signed(v, bits) if t[0] == "s" else v & ((1 << bits) - 1)


def mul24(a, b, t: str, hi: bool):
    a24, b24 = a & 0xFFFFFF, b & 0xFFFFFF
    if t == "s32":
        a24, b24 = signed(a24, 24), signed(b24, 24)
    product = a24 * b24
    return (product >> 16) if hi else product


def byte(v, i: int, is_signed: bool, bits: int = 8):
    field = (v >> (i * bits)) & ((1 << bits) - 1)
    return signed(field, bits) if is_signed else field


def scalar_cases(bits: int) -> list[tuple[str, str, str, object]]:
    """(output name, output type, PTX line, reference(a, b, c)) for the scalar forms of one
    width. The reference gets bit patterns and returns integers (taken modulo 2**width)."""
    u, s = f"u{bits}", f"s{bits}"
    w = bits
    cases = [
        ("add", u, f"add.{u} %add, %a, %b;", lambda a, b, c: a + b),
        ("sub", u, f"sub.{s} %sub, %a, %b;", lambda a, b, c: a - b),
        ("mullo", u, f"mul.lo.{u} %mullo, %a, %b;", lambda a, b, c: a * b),
        ("mulhiu", u, f"mul.hi.{u} %mulhiu, %a, %b;", lambda a, b, c: (a * b) >> w),
        ("mulhis", s, f"mul.hi.{s} %mulhis, %a, %b;",
         lambda a, b, c: (val(a, s) * val(b, s)) >> w),
        ("madlo", u, f"mad.lo.{s} %madlo, %a, %b, %c;", lambda a, b, c: a * b + c),
        ("madhiu", u, f"mad.hi.{u} %madhiu, %a, %b, %c;", lambda a, b, c: ((a * b) >> w) + c),
        ("madhis", s, f"mad.hi.{s} %madhis, %a, %b, %c;",
         lambda a, b, c: ((val(a, s) * val(b, s)) >> w) + c),
        ("sadu", u, f"sad.{u} %sadu, %a, %b, %c;", lambda a, b, c: c + abs(a - b)),
        ("sads", u, f"sad.{s} %sads, %a, %b, %c;",
         lambda a, b, c: c + abs(val(a, s) - val(b, s))),
        ("divu", u, f"div.{u} %divu, %a, %b;", lambda a, b, c: ref_div(a, b, w, False)),
        ("divs", s, f"div.{s} %divs, %a, %b;", lambda a, b, c: ref_div(a, b, w, True)),
        ("remu", u, f"rem.{u} %remu, %a, %b;", lambda a, b, c: ref_rem(a, b, w, False)),
        ("rems", s, f"rem.{s} %rems, %a, %b;", lambda a, b, c: ref_rem(a, b, w, True)),
        ("abs", s, f"abs.{s} %abs, %a;", lambda a, b, c: abs(val(a, s))),
        ("neg", s, f"neg.{s} %neg, %a;", lambda a, b, c: -a),
        ("minu", u, f"min.{u} %minu, %a, %b;", lambda a, b, c: np.minimum(a, b)),
        ("mins", s, f"min.{s} %mins, %a, %b;",
         lambda a, b, c: np.minimum(val(a, s), val(b, s))),
        ("maxu", u, f"max.{u} %maxu, %a, %b;", lambda a, b, c: np.maximum(a, b)),
        ("maxs", s, f"max.{s} %maxs, %a, %b;",
         lambda a, b, c: np.maximum(val(a, s), val(b, s))),
    ]
    if bits <= 32:
        wide_u, wide_s = f"u{2 * bits}", f"s{2 * bits}"
        cases += [
            ("mulwu", wide_u, f"mul.wide.{u} %mulwu, %a, %b;", lambda a, b, c: a * b),
            ("mulws", wide_s, f"mul.wide.{s} %mulws, %a, %b;",
             lambda a, b, c: val(a, s) * val(b, s)),
            ("madwu", wide_u, f"mov.b{2 * w} %cw, {{%c, %a}}; mad.wide.{u} %madwu, %a, %b, %cw;",
             lambda a, b, c: a * b + (c | a << w)),
            ("madws", wide_s, f"mov.b{2 * w} %cw, {{%b, %c}}; mad.wide.{s} %madws, %a, %b, %cw;",
             lambda a, b, c: val(a, s) * val(b, s) + (b | c << w)),
        ]
    return cases


def run_cases(cases, inputs: dict, regs: str = "", exact_bits: int = 64, setup: str = "",
              **kw) -> None:
    """Run every case's line in one kernel and check each output against its reference,
    computed on int64 arrays where `exact_bits` (the widest operand the references multiply)
    is 16 or less, on Python integers otherwise. `setup` runs after the loads, first."""
    body = "\n".join([setup] + [line for _, _, line, _ in cases])
    outs = run_lines(body, inputs, {name: t for name, t, _, _ in cases}, regs, **kw)
    columns = [column(values, exact_bits) for _, values in inputs.values()]
    for name, t, _, reference in cases:
        check(name, outs[name], reference(*columns), int(t[1:]), columns)


# --- tests ----------------------------------------------------------------------------------------

def test_16bit_all_pairs_of_boundary_values():
    grid = grid16()
    a = [x for x in grid for _ in grid]
    b = [y for _ in grid for y in grid]
    c = [(x * 7 + y * 13) & 0xFFFF for x, y in zip(a, b, strict=True)]
    run_cases(scalar_cases(16), {"a": ("u16", a), "b": ("u16", b), "c": ("u16", c)},
              regs=".reg .b32 %cw;", exact_bits=16)


def test_32bit_forms():
    a, b, c = operand_columns(32, 4096, seed=32)
    cases = scalar_cases(32) + [
        ("addsat", "s32", "add.sat.s32 %addsat, %a, %b;",
         lambda a, b, c: saturate(val(a, "s32") + val(b, "s32"), 32, True)),
        ("subsat", "s32", "sub.sat.s32 %subsat, %a, %b;",
         lambda a, b, c: saturate(val(a, "s32") - val(b, "s32"), 32, True)),
        ("madhisat", "s32", "mad.hi.sat.s32 %madhisat, %a, %b, %c;",
         lambda a, b, c: saturate(((val(a, "s32") * val(b, "s32")) >> 32) + val(c, "s32"),
                                  32, True)),
        ("minrelu", "s32", "min.relu.s32 %minrelu, %a, %b;",
         lambda a, b, c: np.maximum(0, np.minimum(val(a, "s32"), val(b, "s32")))),
        ("maxrelu", "s32", "max.relu.s32 %maxrelu, %a, %b;",
         lambda a, b, c: np.maximum(0, np.maximum(val(a, "s32"), val(b, "s32")))),
    ]
    for t in ("u32", "s32"):
        for mode in ("lo", "hi"):
            cases.append((f"mul24{mode}{t}", t, f"mul24.{mode}.{t} %mul24{mode}{t}, %a, %b;",
                          lambda a, b, c, t=t, hi=mode == "hi": mul24(a, b, t, hi)))
            cases.append((f"mad24{mode}{t}", t,
                          f"mad24.{mode}.{t} %mad24{mode}{t}, %a, %b, %c;",
                          lambda a, b, c, t=t, hi=mode == "hi": mul24(a, b, t, hi) + c))
    cases.append(("mad24sat", "s32", "mad24.hi.sat.s32 %mad24sat, %a, %b, %c;",
                  lambda a, b, c: saturate(mul24(a, b, "s32", True) + val(c, "s32"), 32, True)))
    for at in ("u32", "s32"):
        for bt in ("u32", "s32"):
            sa, sb = at == "s32", bt == "s32"
            name = f"dp4a{at[0]}{bt[0]}"
            cases.append((name, "u32", f"dp4a.{at}.{bt} %{name}, %a, %b, %c;",
                          lambda a, b, c, sa=sa, sb=sb: c + sum(
                              byte(a, i, sa) * byte(b, i, sb) for i in range(4))))
            for mode, first in (("lo", 0), ("hi", 2)):
                name = f"dp2a{mode}{at[0]}{bt[0]}"
                cases.append((name, "u32", f"dp2a.{mode}.{at}.{bt} %{name}, %a, %b, %c;",
                              lambda a, b, c, sa=sa, sb=sb, k=first: c + sum(
                                  byte(a, i, sa, 16) * byte(b, k + i, sb) for i in range(2))))
    run_cases(cases, {"a": ("u32", a), "b": ("u32", b), "c": ("u32", c)}, regs=".reg .b64 %cw;",
              target="sm_90")  # min/max.relu need sm_90


def test_64bit_forms():
    a, b, c = operand_columns(64, 2048, seed=64)
    run_cases(scalar_cases(64), {"a": ("u64", a), "b": ("u64", b), "c": ("u64", c)})


def _packed(op, bits: int, count: int, is_signed: bool, sat: bool = False):
    """Reference of a lane-wise packed operation."""
    def reference(a, b, c=None):
        out = 0
        for i in range(count):
            x, y = byte(a, i, is_signed, bits), byte(b, i, is_signed, bits)
            r = op(x, y)
            if sat:
                r = saturate(r, bits, is_signed)
            out = out | (r & ((1 << bits) - 1)) << (i * bits)
        return out
    return reference


def packed_inputs() -> tuple[np.ndarray, np.ndarray]:
    """Even elements: 16-bit lanes, lane 0 of a and b running over every pair of 16-bit
    boundary values; odd elements: byte lanes, lane 0 running over every pair of bytes. The
    other lanes see the same pairs in other orders."""
    i = np.arange(65536, dtype=np.int64)
    grid = np.array(grid16(), dtype=np.int64)
    bytes_a, bytes_b = i >> 8, i & 0xFF
    for lane in range(1, 4):
        j = (i * (2 * lane + 1) + lane * 40503) & 0xFFFF
        bytes_a = bytes_a | (j >> 8) << (8 * lane)
        bytes_b = bytes_b | (j & 0xFF) << (8 * lane)
    j = (i * 3 + 12345) & 0xFFFF
    halves_a = grid[i >> 8] | grid[j >> 8] << 16
    halves_b = grid[i & 0xFF] | grid[j & 0xFF] << 16
    return np.where(i % 2, bytes_a, halves_a), np.where(i % 2, bytes_b, halves_b)


def test_packed_forms():
    a, b = packed_inputs()
    add, mn, mx = (lambda x, y: x + y), np.minimum, np.maximum
    cases = []
    for t, bits, count in (("u16x2", 16, 2), ("s16x2", 16, 2)):
        s = t[0] == "s"
        cases += [
            (f"add{t}", "b32", f"add.{t} %add{t}, %a, %b;", _packed(add, bits, count, s)),
            (f"min{t}", "b32", f"min.{t} %min{t}, %a, %b;", _packed(mn, bits, count, s)),
            (f"max{t}", "b32", f"max.{t} %max{t}, %a, %b;", _packed(mx, bits, count, s)),
        ]
    cases += [
        ("minrelu16", "b32", "min.relu.s16x2 %minrelu16, %a, %b;",
         _packed(lambda x, y: np.maximum(0, np.minimum(x, y)), 16, 2, True)),
        ("maxrelu16", "b32", "max.relu.s16x2 %maxrelu16, %a, %b;",
         _packed(lambda x, y: np.maximum(0, np.maximum(x, y)), 16, 2, True)),
    ]
    run_cases(cases, {"a": ("b32", a), "b": ("b32", b)}, exact_bits=16, version="8.0",
              target="sm_90")


def test_packed_forms_of_ptx_9_2():
    """Byte lanes and saturating packed add/sub (ptxas accepts them from PTX ISA 9.2)."""
    a, b = packed_inputs()
    add, sub = (lambda x, y: x + y), (lambda x, y: x - y)
    cases = []
    for t, bits, count in (("u16x2", 16, 2), ("s16x2", 16, 2), ("u8x4", 8, 4), ("s8x4", 8, 4)):
        s = t[0] == "s"
        cases += [
            (f"sadd{t}", "b32", f"add.sat.{t} %sadd{t}, %a, %b;",
             _packed(add, bits, count, s, sat=True)),
        ]
        if bits == 8:
            cases += [
                (f"add{t}", "b32", f"add.{t} %add{t}, %a, %b;", _packed(add, bits, count, s)),
                (f"sub{t}", "b32", f"sub.{t} %sub{t}, %a, %b;", _packed(sub, bits, count, s)),
                (f"ssub{t}", "b32", f"sub.sat.{t} %ssub{t}, %a, %b;",
                 _packed(sub, bits, count, s, sat=True)),
                (f"min{t}", "b32", f"min.{t} %min{t}, %a, %b;",
                 _packed(np.minimum, bits, count, s)),
                (f"max{t}", "b32", f"max.{t} %max{t}, %a, %b;",
                 _packed(np.maximum, bits, count, s)),
            ]
    cases += [
        ("minrelu8", "b32", "min.relu.s8x4 %minrelu8, %a, %b;",
         _packed(lambda x, y: np.maximum(0, np.minimum(x, y)), 8, 4, True)),
        ("maxrelu8", "b32", "max.relu.s8x4 %maxrelu8, %a, %b;",
         _packed(lambda x, y: np.maximum(0, np.maximum(x, y)), 8, 4, True)),
        ("neg8", "b32", "neg.s8x4 %neg8, %a;", _packed(lambda x, y: -x, 8, 4, True)),
    ]
    run_cases(cases, {"a": ("b32", a), "b": ("b32", b)}, exact_bits=16, version="9.2",
              target="sm_120a")


def _words(v: int, count: int, bits: int = 32) -> list[int]:
    return [(v >> (bits * i)) & ((1 << bits) - 1) for i in range(count)]


def test_carry_chains():
    """Multi-word add, subtract and multiply through the carry flag: add.cc/addc/sub.cc/subc/
    mad.cc/madc on 32 and 64 bits, with carries and borrows in every position."""
    rng = random.Random(99)
    specials = [0, 1, (1 << 128) - 1, (1 << 127), (1 << 96) - 1, (1 << 64) - 1, (1 << 32) - 1,
                (1 << 128) - (1 << 32), 0xFFFFFFFF_00000000_FFFFFFFF_00000000]
    xs, ys = [], []
    for x in specials:
        for y in specials:
            xs.append(x)
            ys.append(y)
    while len(xs) < 4096:
        xs.append(rng.getrandbits(128) if rng.random() < 0.5 else rng.choice(specials) ^
                  (1 << rng.randrange(128)))
        ys.append(rng.getrandbits(128) if rng.random() < 0.5 else rng.choice(specials))
    inputs = {}
    for k in range(4):
        inputs[f"x{k}"] = ("u32", [_words(x, 4)[k] for x in xs])
        inputs[f"y{k}"] = ("u32", [_words(y, 4)[k] for y in ys])
    inputs["xl"] = ("u64", [x & ((1 << 64) - 1) for x in xs])
    inputs["xh"] = ("u64", [x >> 64 for x in xs])
    inputs["yl"] = ("u64", [y & ((1 << 64) - 1) for y in ys])
    inputs["yh"] = ("u64", [y >> 64 for y in ys])
    outputs = {f"{name}{k}": "u32" for name in ("s", "d", "p") for k in range(4)}
    outputs.update({"sl": "u64", "sh": "u64", "dl": "u64", "dh": "u64", "cs": "u32",
                    "cd": "u32", "mixa": "u32", "mixs": "u32"})
    body = """
    add.cc.u32 %s0, %x0, %y0; addc.cc.u32 %s1, %x1, %y1; addc.cc.s32 %s2, %x2, %y2;
    addc.cc.u32 %s3, %x3, %y3; addc.u32 %cs, 0, 0;
    sub.cc.u32 %d0, %x0, %y0; subc.cc.u32 %d1, %x1, %y1; subc.cc.s32 %d2, %x2, %y2;
    subc.cc.u32 %d3, %x3, %y3; subc.u32 %cd, 0, 0;
    add.cc.u64 %sl, %xl, %yl; addc.u64 %sh, %xh, %yh;
    sub.cc.s64 %dl, %xl, %yl; subc.u64 %dh, %xh, %yh;
    mul.lo.u32 %p0, %x0, %y0; mul.hi.u32 %p1, %x0, %y0;
    mad.lo.cc.u32 %p1, %x1, %y0, %p1; madc.hi.u32 %p2, %x1, %y0, 0;
    mad.lo.cc.u32 %p1, %x0, %y1, %p1; madc.hi.cc.u32 %p2, %x0, %y1, %p2; addc.u32 %p3, 0, 0;
    mad.lo.cc.u32 %p2, %x1, %y1, %p2; madc.hi.u32 %p3, %x1, %y1, %p3;
    sub.cc.u32 %mixa, %x0, %y0; addc.u32 %mixa, 0, 0;
    add.cc.u32 %mixs, %x0, %y0; subc.u32 %mixs, 0, 0;
    """
    outs = run_lines(body, inputs, outputs)
    total = [x + y for x, y in zip(xs, ys, strict=True)]
    difference = [x - y for x, y in zip(xs, ys, strict=True)]
    product = [(x & (1 << 64) - 1) * (y & (1 << 64) - 1) for x, y in zip(xs, ys, strict=True)]
    columns = [xs, ys]
    for k in range(4):
        check(f"add word {k}", outs[f"s{k}"], [_words(v, 4)[k] for v in total], 32, columns)
        check(f"sub word {k}", outs[f"d{k}"], [_words(v, 4)[k] for v in difference], 32,
              columns)
        check(f"mul word {k}", outs[f"p{k}"], [_words(v, 4)[k] for v in product], 32, columns)
    check("carry out", outs["cs"], [v >> 128 for v in total], 32, columns)
    check("borrow out", outs["cd"], [-1 if v < 0 else 0 for v in difference], 32, columns)
    # Mixed chains: the flag is the carry of a + ~b + 1 after a subtraction (as on NVIDIA's
    # hardware), and subc adds ~b and the flag.
    x0, y0 = [x & M32 for x in xs], [y & M32 for y in ys]
    check("sub.cc then addc", outs["mixa"], [int(x >= y) for x, y in zip(x0, y0, strict=True)],
          32, columns)
    check("add.cc then subc", outs["mixs"], [(x + y >> 32) - 1 for x, y in
                                             zip(x0, y0, strict=True)], 32, columns)
    check("add low", outs["sl"], total, 64, columns)
    check("add high", outs["sh"], [v >> 64 for v in total], 64, columns)
    check("sub low", outs["dl"], difference, 64, columns)
    check("sub high", outs["dh"], [v >> 64 for v in difference], 64, columns)


def test_forms_ptx_does_not_define_are_refused():
    """Modifier combinations the manual does not define are refused by name, not computed
    some other way."""
    for line, reason in (("add.sat.u32 %d, %a, %a;", ".sat"),
                         ("mad.lo.sat.s32 %d, %a, %a, %a;", ".sat"),
                         ("mad24.lo.sat.s32 %d, %a, %a, %a;", ".sat"),
                         ("mul.wide.u64 %w, %w, %w;", ".wide"),
                         ("min.relu.u32 %d, %a, %a;", ".relu"),
                         ("add.cc.u16 %h, %h, %h;", "carry flag")):
        with pytest.raises(UnsupportedFeatureError, match=reason):
            run_lines(line, {"a": ("u32", [1])}, {"d": "u32"},
                      regs=".reg .u64 %w; .reg .u16 %h;")
