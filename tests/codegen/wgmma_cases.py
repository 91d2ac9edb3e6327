"""Hand-written wgmma.mma_async kernels and their expected results, computed in numpy from
the PTX ISA's rules (shared by tests/codegen/test_wgmma.py and, on an H100,
benchmarks/wgmma_gpu_check.py, which checks these same rules against NVIDIA's hardware).

One CTA of 128 threads (one warpgroup) copies a shared-memory image made here (A and B laid
out by a descriptor's rules: canonical layout, leading/stride byte offsets, swizzle) into a
1024-byte-aligned `.shared` array, fences and waits at a barrier, then runs one wgmma whose
descriptors' start addresses are relative to that array (the kernel adds its address). Each
thread stores its D registers to out[thread][i]; out holds D's initial value before.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

THREADS = 128
SMEM = 32768
B_AT = 8192                   # B's region of the image (A's is 0 .. B_AT)
SWIZZLE_BYTES = {0: 0, 1: 128, 2: 64, 3: 32}      # descriptor mode -> swizzle width


@dataclass
class Operand:
    """How one operand lies in shared memory: descriptor `mode`, whether K-major, lbo/sbo
    in bytes, and `start` (bytes past its region) where the descriptor points."""

    mode: int = 0
    k_major: bool = True
    lbo: int = 128
    sbo: int = 256
    start: int = 0


@dataclass
class Case:
    n: int = 64
    d_type: str = "f32"
    ab_type: str = "f16"
    a: Operand | None = field(default_factory=Operand)     # None: A in registers
    b: Operand = field(default_factory=Operand)
    scale_a: int = 1
    scale_b: int = 1
    scale_d: bool = True

    @property
    def k(self) -> int:
        return 8 if self.ab_type == "tf32" else 16

    @property
    def d_registers(self) -> int:
        return self.n // 4 if self.d_type == "f16" else self.n // 2

    @property
    def name(self) -> str:
        a = "regs" if self.a is None else f"m{self.a.mode}{'k' if self.a.k_major else 'mn'}"
        b = f"m{self.b.mode}{'k' if self.b.k_major else 'mn'}"
        return f"n{self.n}_{self.d_type}_{self.ab_type}_a{a}_b{b}_s{self.scale_a}{self.scale_b}" \
               f"{int(self.scale_d)}"


def element_bytes(kind: str) -> int:
    return 4 if kind == "tf32" else 2


def element_offset(op: Operand, mn: int, k: int, size: int) -> int:
    """Byte offset (before swizzling, from the operand's start) of element (mn, k)."""
    w = max(SWIZZLE_BYTES[op.mode] // 16, 1)
    swizzled = op.mode != 0
    if op.k_major:
        per = 16 // size
        chunk = (mn % 8) * 16 * w + (mn // 8) * op.sbo + (k // per) * (16 if swizzled else op.lbo)
        return chunk + (k % per) * size
    u, e = divmod(mn, 8)
    p, q = (op.lbo, op.sbo) if swizzled else (op.sbo, op.lbo)
    return (u % w) * 16 + (u // w) * p + (k % 8) * 16 * w + (k // 8) * q + e * size


def swizzle(address: int, mode: int) -> int:
    bits = {0: 0, 1: 0x70, 2: 0x30, 3: 0x10}[mode]
    return address ^ ((address >> 3) & bits)


def place(image: np.ndarray, region: int, op: Operand, matrix: np.ndarray, k_axis: int,
          size: int) -> None:
    """Write `matrix` (its raw elements, uint16 or uint32) into the image by op's rules;
    k_axis says which axis of `matrix` is K."""
    raw = image.view(np.uint8)
    rows, cols = matrix.shape
    for i in range(rows):
        for j in range(cols):
            mn, k = (i, j) if k_axis == 1 else (j, i)
            at = swizzle(region + op.start + element_offset(op, mn, k, size), op.mode)
            raw[at:at + size] = np.frombuffer(matrix[i, j].tobytes(), np.uint8)


def descriptor(op: Operand, region: int) -> int:
    start = (region + op.start) >> 4
    return start | (op.lbo >> 4) << 16 | (op.sbo >> 4) << 32 | op.mode << 62


def inputs(case: Case, rng: np.random.Generator):
    """(a, b, a_bits, b_bits): A (64 x K) and B (K x N) as the values the mma uses (f64),
    and as the raw elements to store (uint16 f16/bf16, uint32 tf32 with junk in the 13
    mantissa bits the mma ignores)."""
    k, n = case.k, case.n
    a = rng.integers(-8, 9, (64, k)) / 4.0
    b = rng.integers(-8, 9, (k, n)) / 8.0
    return a, b, _bits(a, case.ab_type, rng), _bits(b, case.ab_type, rng)


def _bits(values: np.ndarray, kind: str, rng) -> np.ndarray:
    if kind == "f16":
        return values.astype(np.float16).view(np.uint16)
    f32 = values.astype(np.float32).view(np.uint32)
    if kind == "bf16":
        return (f32 >> 16).astype(np.uint16)
    junk = rng.integers(0, 1 << 13, values.shape).astype(np.uint32)
    return f32 | np.where(values != 0, junk, 0).astype(np.uint32)


def shared_image(case: Case, a_bits, b_bits) -> np.ndarray:
    image = np.zeros(SMEM // 4, np.uint32)
    size = element_bytes(case.ab_type)
    if case.a is not None:
        place(image, 0, case.a, a_bits, 1, size)
    place(image, B_AT, case.b, b_bits, 0, size)
    return image


def a_fragments(case: Case, a_bits) -> np.ndarray:
    """A in registers: thread t's 4 words (mma.m16n8k16's A layout for 16-bit types,
    m16n8k8's for tf32, on rows 16 * warp ..)."""
    out = np.zeros((THREADS, 4), np.uint32)
    for t in range(THREADS):
        w, g, q = t // 32, t % 32 // 4, t % 4
        for j in range(4):
            if case.ab_type == "tf32":
                row, col = g + 8 * (j & 1), q + 4 * (j >> 1)
                out[t, j] = a_bits[16 * w + row, col]
                continue
            word = 0
            for e in (0, 1):
                idx = 2 * j + e
                row, col = g + 8 * ((idx >> 1) & 1), 2 * q + (idx & 1) + 8 * (idx >> 2)
                word |= int(a_bits[16 * w + row, col]) << (16 * e)
            out[t, j] = word
    return out


def d_position(t: int, i: int) -> tuple[int, int]:
    """(row, column) of D that thread t's f32 accumulator element i holds."""
    w, g, q = t // 32, t % 32 // 4, t % 4
    return 16 * w + g + 8 * ((i >> 1) & 1), 8 * (i >> 2) + 2 * q + (i & 1)


def initial_d(case: Case, rng) -> np.ndarray:
    d = rng.integers(-16, 17, (64, case.n)) / 2.0
    return d


def d_registers(case: Case, d: np.ndarray) -> np.ndarray:
    """D (64 x N) as the threads' registers (uint32 words, THREADS x d_registers)."""
    values = np.zeros((THREADS, case.n // 2), np.float64)
    for t in range(THREADS):
        for i in range(case.n // 2):
            values[t, i] = d[d_position(t, i)]
    if case.d_type == "f32":
        return values.astype(np.float32).view(np.uint32)
    halves = values.astype(np.float16).view(np.uint16).astype(np.uint32)
    return halves[:, 0::2] | halves[:, 1::2] << 16


def expected(case: Case, a, b, d) -> np.ndarray:
    result = case.scale_a * case.scale_b * (a @ b) + (d if case.scale_d else 0)
    return d_registers(case, result)


def ptx(case: Case) -> str:
    """The kernel `wgmma_test(img, words, out, desc_a, desc_b, a_words, scale_d)`."""
    n, k, nreg = case.n, case.k, case.d_registers
    dregs = ", ".join(f"%d{i}" for i in range(nreg))
    # D in and out 4 registers an access (v4): each access is a site of the gang's checked
    # memory code, which would otherwise outweigh the wgmma's own code many times
    quads = [", ".join(f"%d{i}" for i in range(j, j + 4)) for j in range(0, nreg, 4)]
    loads = "\n".join(f"    ld.global.v4.b32 {{{q}}}, [%rd5+{16 * j}];"
                      for j, q in enumerate(quads))
    stores = "\n".join(f"    st.global.v4.b32 [%rd5+{16 * j}], {{{q}}};"
                       for j, q in enumerate(quads))
    if case.a is None:
        a_operand = "{%a0, %a1, %a2, %a3}"
        a_setup = "\n".join(["    ld.param.u64 %rd6, [p_ain];", "    mul.wide.u32 %rd7, %r0, 16;",
                             "    add.s64 %rd8, %rd6, %rd7;"] +
                            [f"    ld.global.b32 %a{j}, [%rd8+{4 * j}];" for j in range(4)])
        trans = [] if case.ab_type == "tf32" else [int(not case.b.k_major)]
    else:
        a_operand, a_setup = "%rd10", ""
        trans = [] if case.ab_type == "tf32" else [int(not case.a.k_major),
                                                   int(not case.b.k_major)]
    immediates = ", ".join(str(v) for v in [case.scale_a, case.scale_b, *trans])
    mma = f"wgmma.mma_async.sync.aligned.m64n{n}k{k}.{case.d_type}.{case.ab_type}.{case.ab_type}"
    return f"""
.version 8.0
.target sm_90a
.address_size 64

.shared .align 1024 .b8 smem[{SMEM}];

.visible .entry wgmma_test(.param .u64 p_img, .param .u32 p_words, .param .u64 p_out,
    .param .u64 p_da, .param .u64 p_db, .param .u64 p_ain, .param .u32 p_scale)
{{
    .reg .pred %p<4>;
    .reg .b32 %r<16>;
    .reg .b64 %rd<16>;
    .reg .b32 %d<{nreg}>;
    .reg .b32 %a<4>;

    mov.u32 %r0, %tid.x;
    ld.param.u64 %rd0, [p_img];
    ld.param.u32 %r1, [p_words];
    mov.u32 %r2, %r0;
    mov.u32 %r3, smem;
$copy:
    setp.ge.u32 %p0, %r2, %r1;
    @%p0 bra $copied;
    mul.wide.u32 %rd1, %r2, 4;
    add.s64 %rd2, %rd0, %rd1;
    ld.global.b32 %r4, [%rd2];
    shl.b32 %r5, %r2, 2;
    add.s32 %r6, %r3, %r5;
    st.shared.b32 [%r6], %r4;
    add.s32 %r2, %r2, {THREADS};
    bra $copy;
$copied:
    fence.proxy.async.shared::cta;
    bar.sync 0;
    ld.param.u64 %rd3, [p_out];
    mul.wide.u32 %rd4, %r0, {4 * nreg};
    add.s64 %rd5, %rd3, %rd4;
{loads}
{a_setup}
    cvt.u64.u32 %rd9, %r3;
    shr.u64 %rd9, %rd9, 4;
    ld.param.u64 %rd10, [p_da];
    add.s64 %rd10, %rd10, %rd9;
    ld.param.u64 %rd11, [p_db];
    add.s64 %rd11, %rd11, %rd9;
    ld.param.u32 %r7, [p_scale];
    setp.ne.u32 %p1, %r7, 0;
    wgmma.fence.sync.aligned;
    {mma} {{{dregs}}}, {a_operand}, %rd11, %p1, {immediates};
    wgmma.commit_group.sync.aligned;
    wgmma.wait_group.sync.aligned 0;
{stores}
    ret;
}}
"""


def arguments(case: Case, seed: int = 0) -> dict:
    """The host arrays of one run and the expected `out`: image, out (D's initial value),
    ain, desc_a, desc_b, scale_d, want."""
    rng = np.random.default_rng(seed)
    a, b, a_bits, b_bits = inputs(case, rng)
    d = initial_d(case, rng)
    image = shared_image(case, a_bits, b_bits)
    return {
        "image": image, "out": d_registers(case, d).copy(), "ain": a_fragments(case, a_bits),
        "desc_a": 0 if case.a is None else descriptor(case.a, 0),
        "desc_b": descriptor(case.b, B_AT), "scale_d": int(case.scale_d),
        "want": expected(case, a, b, d),
    }


def cases() -> list[Case]:
    """Each swizzle mode for A and B, K- and MN-major, LBO/SBO with gaps, a start inside a
    128-byte pattern, A in registers, bf16, tf32, an f16 accumulator, scale-d false and
    negated inputs."""
    def k_op(mode, start=0, gap=1):
        w16 = max(SWIZZLE_BYTES[mode], 16)
        return Operand(mode, True, lbo=4096 if mode == 0 else 16, sbo=8 * w16 * gap, start=start)

    def mn_op(mode, n):
        w = max(SWIZZLE_BYTES[mode] // 16, 1)
        if mode == 0:        # core matrices 8 x 16 bytes; MN blocks at SBO, K blocks at LBO
            return Operand(0, False, lbo=128 * (n // 8), sbo=128)
        return Operand(mode, False, lbo=8 * 16 * w * 2, sbo=8 * 16 * w)

    out = []
    for mode in (0, 1, 2, 3):
        out.append(Case(a=k_op(mode), b=k_op(mode, gap=2)))
        out.append(Case(a=mn_op(mode, 64), b=mn_op(mode, 64)))
    out += [
        Case(a=k_op(1, start=32), b=mn_op(1, 64)),          # Triton's k-block inside 128B
        Case(a=None, b=mn_op(1, 64)),
        Case(a=None, b=k_op(3), ab_type="bf16", scale_a=-1),
        Case(ab_type="bf16", a=k_op(2), b=mn_op(2, 64), scale_b=-1, scale_d=False),
        Case(ab_type="tf32", a=k_op(1), b=k_op(1)),
        Case(ab_type="tf32", a=None, b=k_op(0)),
        Case(d_type="f16", a=k_op(3), b=mn_op(3, 64)),
        Case(n=8, a=k_op(0), b=k_op(0)),
        Case(n=256, a=k_op(1), b=mn_op(1, 256)),
    ]
    return out
