"""Video instructions on the CPU target against references written from the manual's
pseudo-code: random forms (types, selectors, .sat, secondary operations, merges, masks) in one
kernel per family, each run on 256 operand triples biased to byte and half-word boundaries.

The SIMD reference agrees with an H100 on 400 random forms. On the scalar forms the H100
departs from the manual's pseudo-code in places (see ops/video.py); the references here are
the manual's.
"""

from __future__ import annotations

import itertools
import random
import re

import numpy as np
import pytest

from cpu_harness import kernel_ptx, run_ptx

N = 256
M32 = 0xFFFFFFFF
CMP = {"eq": lambda x, y: x == y, "ne": lambda x, y: x != y, "lt": lambda x, y: x < y,
       "le": lambda x, y: x <= y, "gt": lambda x, y: x > y, "ge": lambda x, y: x >= y}


# --- reference ------------------------------------------------------------------------------------

def sx(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def part(v: int, signed: bool, sel: str | None) -> int:
    """partSelectSignExtend."""
    if not sel:
        return sx(v, 32) if signed else v & M32
    bits = 8 if sel[0] == "b" else 16
    field = (v >> (int(sel[1:]) * bits)) & ((1 << bits) - 1)
    return sx(field, bits) if signed else field


def clamp(v: int, bits: int, signed: bool) -> int:
    low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    return max(low, min(high, v))


def operand(text: str) -> tuple[str, str | None, bool]:
    m = re.match(r"(-?)%([abcd])(?:\.(\w+))?$", text.strip())
    return m.group(2), m.group(3), bool(m.group(1))


def parse(line: str):
    line = line.strip().rstrip(";")
    op, rest = line.split(None, 1)
    name, *mods = op.split(".")
    return name, mods, [operand(o) for o in rest.split(",")]


def ref_scalar(name, mods, ops, v):
    signs = [m == "s32" for m in mods if m in ("u32", "s32")]
    (_, dsel, _), (an, asel, _), (bn, bsel, _) = ops[:3]
    if name == "vset":
        (a_signed, b_signed), d_signed = signs, False
    else:
        d_signed, a_signed, b_signed = signs
    ta, tb = part(v[an], a_signed, asel), part(v[bn], b_signed, bsel)
    if name in ("vshl", "vshr"):
        n = min(tb, 32) if "clamp" in mods else tb & 31
        tmp = ta << n if name == "vshl" else ta >> n
    elif name == "vset":
        tmp = int(CMP[next(m for m in mods if m in CMP)](ta, tb))
    else:
        tmp = {"vadd": ta + tb, "vsub": ta - tb, "vabsdiff": abs(ta - tb),
               "vmin": min(ta, tb), "vmax": max(ta, tb)}[name]
    if "sat" in mods:
        tmp = clamp(tmp, 32 if not dsel else (8 if dsel[0] == "b" else 16), d_signed)
    c = v["c"]
    op2 = next((m for m in mods if m in ("add", "min", "max")), None)
    if op2:
        cv = sx(c, 32) if (a_signed if name == "vset" else d_signed) else c
        tmp = {"add": tmp + cv, "min": min(tmp, cv), "max": max(tmp, cv)}[op2]
    if dsel:
        bits = 8 if dsel[0] == "b" else 16
        mask = ((1 << bits) - 1) << (int(dsel[1:]) * bits)
        return ((tmp << (int(dsel[1:]) * bits)) & mask) | (c & ~mask & M32)
    return tmp & M32


def ref_vmad(mods, ops, v):
    _, a_signed, b_signed = [m == "s32" for m in mods if m in ("u32", "s32")]
    (an, asel, na), (bn, bsel, nb), (_, _, nc) = ops[1:4]
    signed_final = a_signed or b_signed or na != nb or nc
    tmp = part(v[an], a_signed, asel) * part(v[bn], b_signed, bsel)
    c = sx(v["c"], 32) if signed_final else v["c"]
    tmp = (-tmp if na != nb else tmp) + (-c if nc else c) + ("po" in mods)
    tmp >>= 7 if "shr7" in mods else 15 if "shr15" in mods else 0
    if "sat" in mods:
        tmp = clamp(tmp, 32, signed_final)
    return tmp & M32


def ref_simd(name, mods, ops, v):
    lanes = int(name[-1])
    base = name[:-1]
    bits = 32 // lanes
    signs = [m == "s32" for m in mods if m in ("u32", "s32")]
    if base == "vset":
        (a_signed, b_signed), d_signed = signs, False
    else:
        d_signed, a_signed, b_signed = signs
    (_, mask, _), (_, asel, _), (_, bsel, _) = ops[:3]
    pair = v["b"] << 32 | v["a"]
    defaults = ("h10", "h32") if lanes == 2 else ("b3210", "b7654")

    def select(sel, default, signed):
        digits = (sel or default)[1:]
        fields = [(pair >> (int(digits[lanes - 1 - i]) * bits)) & ((1 << bits) - 1)
                  for i in range(lanes)]
        return [sx(f, bits) if signed else f for f in fields]

    va, vb = select(asel, defaults[0], a_signed), select(bsel, defaults[1], b_signed)
    t = []
    for x, y in zip(va, vb, strict=True):
        s = x + y
        r = {"vadd": s, "vsub": x - y, "vavrg": (s + 1) >> 1 if s >= 0 else s >> 1,
             "vabsdiff": abs(x - y), "vmin": min(x, y), "vmax": max(x, y)}.get(base)
        if base == "vset":
            r = int(CMP[next(m for m in mods if m in CMP)](x, y))
        if "sat" in mods:
            r = clamp(r, bits, d_signed)
        t.append(r)
    active = [str(i) in (mask or defaults[0])[1:] for i in range(lanes)]
    c = v["c"]
    if "add" in mods:
        return (c + sum(r for r, on in zip(t, active, strict=True) if on)) & M32
    out = 0
    for i in range(lanes):
        field = t[i] if active[i] else c >> (i * bits)
        out |= (field & ((1 << bits) - 1)) << (i * bits)
    return out


def reference(line: str, a: int, b: int, c: int) -> int:
    name, mods, ops = parse(line)
    v = {"a": a, "b": b, "c": c}
    if name == "vmad":
        return ref_vmad(mods, ops, v)
    if name[-1] in "24":
        return ref_simd(name, mods, ops, v)
    return ref_scalar(name, mods, ops, v)


# --- forms and operands ---------------------------------------------------------------------------

SEL = ["", ".b0", ".b1", ".b2", ".b3", ".h0", ".h1"]
T = ["u32", "s32"]
CMPS = list(CMP)


def scalar_lines(rng: random.Random, count: int) -> list[str]:
    lines = []
    for _ in range(count):
        op = rng.choice(["vadd", "vsub", "vabsdiff", "vmin", "vmax", "vshl", "vshr", "vset"])
        asel, bsel = rng.choice(SEL), rng.choice(SEL)
        if op == "vset":
            head = f"vset.{rng.choice(T)}.{rng.choice(T)}.{rng.choice(CMPS)}"
        else:
            shift = op in ("vshl", "vshr")
            head = (f"{op}.{rng.choice(T)}.{rng.choice(T)}.{'u32' if shift else rng.choice(T)}"
                    f"{rng.choice(['', '.sat'])}"
                    f"{rng.choice(['.clamp', '.wrap']) if shift else ''}")
        form = rng.choice(["plain", "op2", "merge"])
        if form == "plain":
            lines.append(f"{head} %d, %a{asel}, %b{bsel};")
        elif form == "op2":
            lines.append(f"{head}.{rng.choice(['add', 'min', 'max'])} %d, %a{asel}, %b{bsel}, %c;")
        else:
            lines.append(f"{head} %d{rng.choice(SEL[1:])}, %a{asel}, %b{bsel}, %c;")
    return lines


def vmad_lines(rng: random.Random, count: int) -> list[str]:
    lines = []
    for _ in range(count):
        head = (f"vmad.{rng.choice(T)}.{rng.choice(T)}.{rng.choice(T)}")
        tail = rng.choice(["", ".sat"]) + rng.choice(["", "", ".shr7", ".shr15"])
        asel, bsel = rng.choice(SEL), rng.choice(SEL)
        if rng.random() < 0.25:
            lines.append(f"{head}.po{tail} %d, %a{asel}, %b{bsel}, %c;")
            continue
        na, nb = rng.choice(["", "-"]), rng.choice(["", "-"])
        nc = rng.choice(["", "-"]) if na == nb else ""  # -(a*b) - c is not a form
        lines.append(f"{head}{tail} %d, {na}%a{asel}, {nb}%b{bsel}, {nc}%c;")
    return lines


def simd_lines(rng: random.Random, count: int, lanes: int) -> list[str]:
    lines = []
    for _ in range(count):
        op = rng.choice(["vadd", "vsub", "vavrg", "vabsdiff", "vmin", "vmax", "vset"])
        if lanes == 2:
            mask = rng.choice(["", ".h0", ".h1", ".h10"])

            def sel():
                return rng.choice(["", f".h{rng.randrange(4)}{rng.randrange(4)}"])
        else:
            mask = rng.choice([""] + [".b" + "".join(str(k) for k in range(3, -1, -1)
                                                     if m >> k & 1) for m in range(1, 16)])

            def sel():
                return rng.choice(["", ".b" + "".join(str(rng.randrange(8)) for _ in range(4))])
        if op == "vset":
            head = f"vset{lanes}.{rng.choice(T)}.{rng.choice(T)}.{rng.choice(CMPS)}"
            head += rng.choice(["", ".add"])
        else:
            head = f"{op}{lanes}.{rng.choice(T)}.{rng.choice(T)}.{rng.choice(T)}"
            head += rng.choice(["", ".sat", ".add"])
        lines.append(f"{head} %d{mask}, %a{sel()}, %b{sel()}, %c;")
    return lines


def operands(seed: int) -> list[list[int]]:
    rng = random.Random(seed)
    special = [0, 1, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0xFFFF, 0x7FFFFFFF, 0x80000000, M32,
               0xFFFFFF80, 0xFFFF8000, 0x00800080, 0x80808080, 0x7F7F7F7F]
    columns = []
    for _ in range(3):
        column = []
        for _ in range(N):
            r = rng.random()
            if r < 0.25:
                column.append(rng.choice(special))
            elif r < 0.5:
                column.append(sum(rng.choice((0, 1, 0x7F, 0x80, 0xFF, 0xFE, 0x81)) << (8 * k)
                                  for k in range(4)))
            elif r < 0.6:
                column.append(rng.randrange(0, 70))
            else:
                column.append(rng.getrandbits(32))
        columns.append(column)
    return columns


def run_forms(lines: list[str], seed: int, columns: list[list[int]] | None = None) -> None:
    """All lines in one kernel: line k's result for thread i goes to out[k * N + i]. d is
    cleared first: merged fields and masked-off lanes come from c, not from d's old value
    (as on an H100)."""
    a, b, c = columns or operands(seed)
    body = [".reg .b32 %a, %b, %c, %d, %i, %t; .reg .b64 %pa, %pb, %pc, %po, %off, %q;",
            "mov.u32 %t, %tid.x; mov.u32 %i, %ctaid.x; mad.lo.u32 %i, %i, 256, %t;",
            "ld.param.u64 %pa, [pa]; ld.param.u64 %pb, [pb]; ld.param.u64 %pc, [pc];",
            "ld.param.u64 %po, [po]; mul.wide.u32 %off, %i, 4; add.u64 %po, %po, %off;",
            "add.u64 %pa, %pa, %off; add.u64 %pb, %pb, %off; add.u64 %pc, %pc, %off;",
            "ld.global.u32 %a, [%pa]; ld.global.u32 %b, [%pb]; ld.global.u32 %c, [%pc];"]
    for k, line in enumerate(lines):
        body.append(f"mov.u32 %d, 0; {line} add.u64 %q, %po, {4 * N * k}; "
                    "st.global.u32 [%q], %d;")
    ptx = kernel_ptx("\n".join(body), ".param .u64 pa, .param .u64 pb, .param .u64 pc, "
                     ".param .u64 po")
    out = np.zeros(N * len(lines), dtype=np.uint32)
    run_ptx(ptx, "k", N // 256, 256, [np.array(x, dtype=np.uint32) for x in (a, b, c)] + [out])
    got = out.reshape(len(lines), N)
    for k, line in enumerate(lines):
        for i in range(N):
            want = reference(line, a[i], b[i], c[i])
            if int(got[k, i]) != want:
                pytest.fail(f"{line}: a={a[i]:#x} b={b[i]:#x} c={c[i]:#x}: got {int(got[k, i]):#x},"
                            f" expected {want:#x}")


def test_scalar_forms():
    run_forms(scalar_lines(random.Random(11), 90), seed=1)


def test_vmad():
    run_forms(vmad_lines(random.Random(12), 50), seed=2)


def test_simd2():
    run_forms(simd_lines(random.Random(13), 80, 2), seed=3)


def test_simd4():
    run_forms(simd_lines(random.Random(14), 80, 4), seed=4)


def test_hand_checked_values():
    """Worked examples: byte/half-word selection with sign extension, saturation, the
    secondary .add, the merge, the SIMD accumulate and compare; the reference must give them
    and so must the kernel."""
    a, b, c = 0x80FF00FE, 0xFFFF0102, 0x11223344
    cases = {
        "vadd.s32.u32.s32.sat %d, %a.b0, %b.h0;": 254 + 258,
        "vsub.s32.s32.u32.sat.add %d, %a.h1, %b.b3, %c;": (-32513 - 255 + c) & M32,
        "vmax.u32.u32.u32 %d.b2, %a.b1, %b.b0, %c;": 0x11023344,
        "vabsdiff4.u32.u32.u32.add %d, %a, %b, %c;": c + 252 + 1 + 0 + 127,
        "vset2.u32.u32.lt %d, %a, %b, %c;": 0x00010001,
        "vadd2.u32.u32.u32 %d.h0, %a, %b, %c;": 0x11220200,
        "vmad.s32.s32.s32.shr7 %d, -%a.h0, %b.h1, %c;": (-0xFE * -1 + c) >> 7,
    }
    for line, want in cases.items():
        assert reference(line, a, b, c) == want, line
    run_forms(list(cases), seed=0, columns=[[a] * N, [b] * N, [c] * N])


def _crossed(*values: list[int]) -> list[list[int]]:
    """The columns a, b, c of every combination of the values, repeated to N threads."""
    rows = list(itertools.product(*values))
    rows = (rows * (N // len(rows) + 1))[:N]
    return [list(column) for column in zip(*rows, strict=True)]


def test_vmad_widest_intermediates():
    """Every sign, negation, .po, .sat and scale of vmad on whole words at the 32-bit
    extremes: ±a·b ± c then needs up to 66 bits (a product of two unsigned words, negated,
    less a c), which the lowering holds in two 64-bit halves."""
    extremes = [0, 1, 0x7FFFFFFF, 0x80000000, 0x80000001, M32]
    negations = ["%a, %b, %c", "-%a, %b, %c", "%a, -%b, %c", "-%a, -%b, %c", "%a, %b, -%c",
                 "-%a, -%b, -%c"]
    lines = []
    for a_type, b_type in itertools.product(T, T):
        for sat, scale in itertools.product(["", ".sat"], ["", ".shr7", ".shr15"]):
            head = f"vmad.s32.{a_type}.{b_type}"
            lines.append(f"{head}.po{sat}{scale} %d, %a, %b, %c;")
            lines += [f"{head}{sat}{scale} %d, {sources};" for sources in negations]
    run_forms(lines, seed=0, columns=_crossed(extremes, extremes, extremes))


def test_video_shifts_widest_intermediates():
    """vshl and vshr of whole words by amounts around 32, in both modes, with .sat and the
    secondary operations: an unsigned word shifted left by 32 needs 65 bits."""
    words = [0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x80000001, 0xC0000000, 0x40000000]
    amounts = [0, 1, 30, 31, 32, 33, 0x80000000, M32]
    lines = []
    for op, d_type, a_type in itertools.product(["vshl", "vshr"], T, T):
        for sat, mode in itertools.product(["", ".sat"], [".clamp", ".wrap"]):
            head = f"{op}.{d_type}.{a_type}.u32{sat}{mode}"
            lines.append(f"{head} %d, %a, %b;")
            lines += [f"{head}.{op2} %d, %a, %b, %c;" for op2 in ("add", "min", "max")]
    run_forms(lines, seed=0, columns=_crossed(words, amounts, [0, 0x7FFFFFFF, 0x80000000, M32]))
