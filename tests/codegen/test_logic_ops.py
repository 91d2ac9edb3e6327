"""Logic, shift, bit-field and permute instructions on the CPU target against exact references
written from the PTX ISA manual's pseudo-code (one kernel runs many instructions)."""

from __future__ import annotations

import random

import numpy as np
from test_integer_ops import check, column, operand_columns, run_cases, run_lines, signed

from cpu_harness import kernel_ptx, run_ptx

M32 = 0xFFFFFFFF


def per_element(fn):
    """A reference written for Python integers, applied to operand arrays."""
    def apply(*cols):
        return np.array([fn(*(int(v) for v in args)) for args in zip(*cols, strict=True)],
                        dtype=object)
    return apply


# --- references (Python integers, from the manual's pseudo-code) ---------------------------------

def ref_shift(a, n, bits: int, op: str):
    """On arrays: shl/shr by unsigned amounts; from the width on, 0 or the sign."""
    if op == "shr.s":
        return signed(a, bits) >> np.minimum(n, bits - 1)
    shifted = a << np.minimum(n, bits) if op == "shl" else a >> np.minimum(n, bits)
    return np.where(n >= bits, 0, shifted)


def ref_shf(a: int, b: int, c: int, left: bool, clamp: bool) -> int:
    n = min(c, 32) if clamp else c & 31
    pair = b << 32 | a
    return ((pair << n) >> 32) if left else (pair >> n)


def ref_bfind(a: int, bits: int, is_signed: bool, shiftamt: bool) -> int:
    if is_signed and a >> (bits - 1):
        a = ~a & ((1 << bits) - 1)
    if a == 0:
        return M32
    position = a.bit_length() - 1
    return bits - 1 - position if shiftamt else position


def ref_fns(mask: int, base: int, offset: int) -> int:
    offset = signed(offset, 32)
    if offset == 0:
        return base if base < 32 and mask >> base & 1 else M32
    pos, count, step = base, abs(offset) - 1, 1 if offset > 0 else -1
    while 0 <= pos < 32:
        if mask >> pos & 1:
            if count == 0:
                return pos
            count -= 1
        pos += step
    return M32


def ref_bfe(a: int, b: int, c: int, bits: int, is_signed: bool) -> int:
    msb = bits - 1
    pos, length = b & 0xFF, c & 0xFF
    sbit = 0 if not is_signed or length == 0 else a >> min(pos + length - 1, msb) & 1
    d = 0
    for i in range(bits):
        bit = a >> (pos + i) & 1 if i < length and pos + i <= msb else sbit
        d |= bit << i
    return d


def ref_bfi(a: int, b: int, c: int, d: int, bits: int) -> int:
    msb = bits - 1
    pos, length = c & 0xFF, d & 0xFF
    f = b
    i = 0
    while i < length and pos + i <= msb:
        f = (f & ~(1 << (pos + i))) | (a >> i & 1) << (pos + i)
        i += 1
    return f


def ref_szext(a: int, b: int, clamp: bool, is_signed: bool) -> int:
    b1 = b & 0x1F
    too_large = b >= 32 and clamp
    mask = 0 if too_large else (M32 << b1) & M32
    sign_pos = (b1 - 1) & 0x1F
    sign = not (b1 == 0 or too_large or not is_signed) and a >> sign_pos & 1
    return (a & ~mask & M32) | (mask if sign else 0)


def ref_bmsk(a: int, b: int, clamp: bool) -> int:
    a1, b1 = a & 0x1F, b & 0x1F
    mask0 = (M32 << a1) & M32
    total = a1 + b1
    mask1 = (M32 << total) & M32
    overflow = total >= 32
    if clamp:
        if a >= 32:
            overflow, mask0 = True, 0
        if b >= 32:
            overflow = True
    if overflow:
        mask1 = 0
    elif b1 == 0:
        mask1 = M32
    return mask0 & ~mask1 & M32


PRMT_MODES = {  # nibble i: the source byte of d.b_i, by c & 3 (the manual's table)
    "f4e": (0x3210, 0x4321, 0x5432, 0x6543), "b4e": (0x5670, 0x6701, 0x7012, 0x0123),
    "rc8": (0x0000, 0x1111, 0x2222, 0x3333), "ecl": (0x3210, 0x3211, 0x3222, 0x3333),
    "ecr": (0x0000, 0x1110, 0x2210, 0x3210), "rc16": (0x1010, 0x3232, 0x1010, 0x3232),
}


def ref_prmt(a, b, c, mode: str | None):
    """On arrays: byte i of d is the byte of {b, a} that nibble i of the control names."""
    a, b, c = (np.asarray(v, dtype=np.uint64) for v in (a, b, c))
    source = b << np.uint64(32) | a
    control = c if mode is None else np.array(PRMT_MODES[mode], dtype=np.uint64)[c & 3]
    d = np.zeros_like(a)
    for i in range(4):
        nibble = control >> np.uint64(4 * i) & np.uint64(0xF)
        value = source >> (np.uint64(8) * (nibble & np.uint64(7))) & np.uint64(0xFF)
        if mode is None:
            sign = np.where(value & np.uint64(0x80), np.uint64(0xFF), np.uint64(0))
            value = np.where(nibble & np.uint64(8), sign, value)
        d |= value << np.uint64(8 * i)
    return d


# --- operands -------------------------------------------------------------------------------------

def amounts(count: int, seed: int) -> list[int]:
    """Shift amounts and bit positions: every small value many times, and large ones."""
    rng = random.Random(seed)
    special = [0, 1, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 255, 256, 257, 0xFFFF,
               0x7FFFFFFF, 0x80000000, M32, 0x100000020]
    out = []
    for i in range(count):
        r = rng.random()
        out.append(i % 70 if r < 0.6 else rng.choice(special) if r < 0.8 else
                   rng.getrandbits(32))
    return [v & M32 for v in out]


# --- tests ----------------------------------------------------------------------------------------

def bit_cases(bits: int) -> list:
    b = f"b{bits}"
    u, s = f"u{bits}", f"s{bits}"
    mask = (1 << bits) - 1
    cases = [
        ("and", b, f"and.{b} %and, %a, %b;", lambda a, b, c, n: a & b),
        ("or", b, f"or.{b} %or, %a, %b;", lambda a, b, c, n: a | b),
        ("xor", b, f"xor.{b} %xor, %a, %b;", lambda a, b, c, n: a ^ b),
        ("not", b, f"not.{b} %not, %a;", lambda a, b, c, n: ~a & mask),
        ("cnot", b, f"cnot.{b} %cnot, %a;", lambda a, b, c, n: np.where(a == 0, 1, 0)),
        ("shl", b, f"shl.{b} %shl, %a, %n;", lambda a, b, c, n: ref_shift(a, n, bits, "shl")),
        ("shrb", b, f"shr.{b} %shrb, %a, %n;",
         lambda a, b, c, n: ref_shift(a, n, bits, "shr.u")),
        ("shru", u, f"shr.{u} %shru, %a, %n;",
         lambda a, b, c, n: ref_shift(a, n, bits, "shr.u")),
        ("shrs", s, f"shr.{s} %shrs, %a, %n;",
         lambda a, b, c, n: ref_shift(a, n, bits, "shr.s")),
    ]
    if bits >= 32:
        cases += [
            ("popc", "u32", f"popc.{b} %popc, %a;",
             per_element(lambda a, b, c, n: bin(a).count("1"))),
            ("clz", "u32", f"clz.{b} %clz, %a;",
             per_element(lambda a, b, c, n: bits - a.bit_length())),
            ("brev", b, f"brev.{b} %brev, %a;",
             per_element(lambda a, b, c, n: int(f"{a:0{bits}b}"[::-1], 2))),
            ("bfi", b, f"bfi.{b} %bfi, %a, %b, %n, %c32;",
             per_element(lambda a, b, c, n: ref_bfi(a, b, n, c & M32, bits))),
        ]
        for t in (u, s):
            for mode in ("", ".shiftamt"):
                name = f"bfind{t}{mode[1:]}"
                cases.append((name, "u32", f"bfind{mode}.{t} %{name}, %a;", per_element(
                    lambda a, b, c, n, t=t, m=mode: ref_bfind(a, bits, t[0] == "s", bool(m)))))
            cases.append((f"bfe{t}", t, f"bfe.{t} %bfe{t}, %a, %n, %c32;", per_element(
                lambda a, b, c, n, t=t: ref_bfe(a, n, c & M32, bits, t[0] == "s"))))
    return cases


def test_32bit_forms():
    a, b, c = operand_columns(32, 4096, seed=320)
    n = amounts(len(a), seed=321)
    c = [v if i % 3 else v % 300 for i, v in enumerate(c)]  # bit-field lengths, small and not
    cases = bit_cases(32)
    for left in (True, False):
        for clamp in (True, False):
            name = f"shf{'l' if left else 'r'}{'c' if clamp else 'w'}"
            line = (f"shf.{'l' if left else 'r'}.{'clamp' if clamp else 'wrap'}.b32 "
                    f"%{name}, %a, %b, %n;")
            cases.append((name, "b32", line, per_element(
                lambda a, b, c, n, left=left, clamp=clamp: ref_shf(a, b, n, left, clamp))))
    for t in ("u32", "s32"):
        for mode in ("clamp", "wrap"):
            name = f"szext{t}{mode}"
            cases.append((name, t, f"szext.{mode}.{t} %{name}, %a, %n;", per_element(
                lambda a, b, c, n, t=t, m=mode: ref_szext(a, n, m == "clamp", t == "s32"))))
    for mode in ("clamp", "wrap"):
        cases.append((f"bmsk{mode}", "b32", f"bmsk.{mode}.b32 %bmsk{mode}, %n, %c;", per_element(
            lambda a, b, c, n, m=mode: ref_bmsk(n, c, m == "clamp"))))
    run_cases(cases, {"a": ("b32", a), "b": ("b32", b), "c": ("b32", c), "n": ("u32", n)},
              regs=".reg .b32 %c32;", setup="mov.b32 %c32, %c;", exact_bits=64,
              version="7.6", target="sm_80")


def test_fns_offsets():
    """fns with offsets around zero in both directions, bases 0..31, and many masks."""
    rng = random.Random(7)
    masks = [0, M32, 0xAAAAAAAA, 0x55555555, 0x80000001, 1, 0x80000000] + \
        [rng.getrandbits(32) for _ in range(57)]
    mask, base, offset = [], [], []
    for m in masks:
        for bs in list(range(32)) + [32, 33, M32]:
            for off in (0, 1, -1, 2, -2, rng.randint(-33, 33)):
                mask.append(m)
                base.append(bs)
                offset.append(off & M32)
    case = ("fns", "b32", "fns.b32 %fns, %a, %b, %c;", per_element(ref_fns))
    run_cases([case], {"a": ("b32", mask), "b": ("u32", base), "c": ("s32", offset)},
              exact_bits=64, version="7.0", target="sm_80")


def test_16bit_forms():
    """Every 16-bit value of a, with shift amounts 0..69 and large ones."""
    rng = random.Random(16)
    a = list(range(65536))
    b = [rng.getrandbits(16) for _ in a]
    n = amounts(len(a), seed=17)
    run_cases(bit_cases(16), {"a": ("b16", a), "b": ("b16", b), "c": ("b16", b[::-1]),
                              "n": ("u32", n)}, exact_bits=16)


def test_64bit_forms():
    a, b, c = operand_columns(64, 2048, seed=640)
    n = amounts(len(a), seed=641)
    c = [v if i % 3 else v % 300 for i, v in enumerate(c)]
    run_cases(bit_cases(64), {"a": ("b64", a), "b": ("b64", b), "c": ("b64", c),
                              "n": ("u32", n)},
              regs=".reg .b32 %c32, %chi;", setup="mov.b64 {%c32, %chi}, %c;", exact_bits=64)


def test_predicate_logic():
    a = [i & 1 for i in range(4)] * 64
    b = [i >> 1 & 1 for i in range(4)] * 64
    body = """
    setp.ne.u32 %p, %a, 0; setp.ne.u32 %q, %b, 0;
    and.pred %r, %p, %q; selp.u32 %and, 1, 0, %r;
    or.pred %r, %p, %q; selp.u32 %or, 1, 0, %r;
    xor.pred %r, %p, %q; selp.u32 %xor, 1, 0, %r;
    not.pred %r, %p; selp.u32 %not, 1, 0, %r;
    """
    outs = run_lines(body, {"a": ("u32", a), "b": ("u32", b)},
                     {"and": "u32", "or": "u32", "xor": "u32", "not": "u32"},
                     regs=".reg .pred %p, %q, %r;")
    cols = [column(a, 32), column(b, 32)]
    check("and.pred", outs["and"], [x & y for x, y in zip(a, b, strict=True)], 32, cols)
    check("or.pred", outs["or"], [x | y for x, y in zip(a, b, strict=True)], 32, cols)
    check("xor.pred", outs["xor"], [x ^ y for x, y in zip(a, b, strict=True)], 32, cols)
    check("not.pred", outs["not"], [1 - x for x in a], 32, cols)


def _lop3_inputs() -> tuple[list[int], list[int], list[int]]:
    rng = random.Random(3)
    a = [0xF0F0F0F0, 0, M32] + [rng.getrandbits(32) for _ in range(253)]
    b = [0xCCCCCCCC, M32, 0] + [rng.getrandbits(32) for _ in range(253)]
    c = [0xAAAAAAAA, 0, M32] + [rng.getrandbits(32) for _ in range(253)]
    return a, b, c


def ref_lop3(a, b, c, lut: int):
    """Bit i of the result is bit (a_i b_i c_i, read as a 3-bit number) of lut."""
    a, b, c = (np.asarray(v, dtype=np.uint64) for v in (a, b, c))
    result = np.zeros_like(a)
    for index in range(8):
        if lut >> index & 1:
            term = np.full_like(a, M32)
            for bit, v in ((4, a), (2, b), (1, c)):
                term &= v if index & bit else ~v & M32
            result |= term
    return result


def test_lop3_every_truth_table():
    """All 256 truth tables in one kernel; thread i stores table k's result at 256 * i + k,
    four tables a store (each store is a site of the memory code, which outweighs lop3's)."""
    a, b, c = _lop3_inputs()
    n = len(a)
    lines = [".reg .b32 %a, %b, %c, %d<4>, %t, %i; .reg .b64 %pa, %pb, %pc, %po, %off;",
             "mov.u32 %t, %tid.x; mov.u32 %i, %ctaid.x; mad.lo.u32 %i, %i, 256, %t;",
             "ld.param.u64 %pa, [pa]; ld.param.u64 %pb, [pb]; ld.param.u64 %pc, [pc];",
             "ld.param.u64 %po, [po]; mul.wide.u32 %off, %i, 4;",
             "add.u64 %pa, %pa, %off; add.u64 %pb, %pb, %off; add.u64 %pc, %pc, %off;",
             "ld.global.u32 %a, [%pa]; ld.global.u32 %b, [%pb]; ld.global.u32 %c, [%pc];",
             "mul.wide.u32 %off, %i, 1024; add.u64 %po, %po, %off;"]
    for first in range(0, 256, 4):
        lines += [f"lop3.b32 %d{j}, %a, %b, %c, {first + j};" for j in range(4)]
        lines.append(f"st.global.v4.u32 [%po+{4 * first}], {{%d0, %d1, %d2, %d3}};")
    ptx = kernel_ptx("\n".join(lines), ".param .u64 pa, .param .u64 pb, .param .u64 pc, "
                     ".param .u64 po", version="7.0", target="sm_80")
    arrays = [np.array(v, dtype=np.uint32) for v in (a, b, c)]
    out = np.zeros(n * 256, dtype=np.uint32)
    run_ptx(ptx, "k", n // 256, 256, [*arrays, out])
    got = out.reshape(n, 256)
    for lut in range(256):
        check(f"lop3 {lut:#04x}", got[:, lut], ref_lop3(a, b, c, lut), 32, [column(a, 32)])


def test_lop3_predicate_result():
    """lop3.BoolOp.b32 d|p, a, b, c, immLut, q: p = (d != 0) BoolOp q."""
    a, b, c = _lop3_inputs()
    a = a + [0] * 256
    b = b + [0] * 256
    c = c + [M32] * 256
    q = [i % 3 == 0 for i in range(len(a))]
    body = """
    setp.ne.u32 %q, %qi, 0;
    lop3.or.b32 %d1|%p, %a, %b, %c, 0x80, %q; selp.u32 %p1, 1, 0, %p;
    lop3.and.b32 %d2|%p, %a, %b, %c, 0x96, %q; selp.u32 %p2, 1, 0, %p;
    lop3.and.b32 _|%p, %a, %b, %c, 0xF0, %q; selp.u32 %p3, 1, 0, %p;
    """
    outs = run_lines(body, {"a": ("b32", a), "b": ("b32", b), "c": ("b32", c),
                            "qi": ("u32", [int(v) for v in q])},
                     {"d1": "b32", "p1": "u32", "d2": "b32", "p2": "u32", "p3": "u32"},
                     regs=".reg .pred %p, %q;", version="8.2", target="sm_80")
    cols = [column(a, 32)]
    d1, d2, d3 = (ref_lop3(a, b, c, lut).tolist() for lut in (0x80, 0x96, 0xF0))
    check("lop3.or d", outs["d1"], d1, 32, cols)
    check("lop3.and d", outs["d2"], d2, 32, cols)
    for name, out, d, combine in (("lop3.or p", "p1", d1, any), ("lop3.and p", "p2", d2, all),
                                  ("lop3.and _|p", "p3", d3, all)):
        expected = [int(combine((x != 0, w))) for x, w in zip(d, q, strict=True)]
        check(name, outs[out], expected, 32, cols)


def test_prmt():
    """The generic form with every 16-bit selector, and each mode with every c & 3."""
    rng = random.Random(5)
    count = 65536
    a = [rng.getrandbits(32) for _ in range(count)]
    b = [rng.getrandbits(32) for _ in range(count)]
    c = [i | rng.getrandbits(16) << 16 for i in range(count)]
    cases = [("generic", "b32", "prmt.b32 %generic, %a, %b, %c;",
              lambda a, b, c: ref_prmt(a, b, c, None))]
    for mode in PRMT_MODES:
        cases.append((mode, "b32", f"prmt.b32.{mode} %{mode}, %a, %b, %c;",
                      lambda a, b, c, m=mode: ref_prmt(a, b, c, m)))
    run_cases(cases, {"a": ("b32", a), "b": ("b32", b), "c": ("b32", c)}, exact_bits=16)

