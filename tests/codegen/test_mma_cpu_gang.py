"""mma.sync.aligned and ldmatrix lowered natively for warp gangs (codegen/targets/cpu/gang/
mma.py), against numpy with the fragment layouts of the PTX ISA (9.7.14.5.8 and siblings)
written out here, and against the thread-by-thread resolver for the forms it computes."""

from __future__ import annotations

import numpy as np
import pytest

from cpu_harness import kernel_ptx
from ptxport.codegen.targets.cpu.options import CpuOptions
from ptxport.errors import KernelExecutionError
from ptxport.ir.abi import param_layout
from ptxport.ir.from_ptx import build
from ptxport.ir.verify import verify
from ptxport.passes.segment import inline_warp_ops
from ptxport.passes.uniformity import uniform_registers
from ptxport.ptx.parser import parse
from ptxport.runtime.backends.cpu.kernels import compile_kernel

WARPS = 2
_BINARIES: dict = {}


def _run(ptx: str, args: list, gang: bool, threads: int = 32 * WARPS):
    key = (ptx, gang)
    if key not in _BINARIES:
        module = build(parse(ptx, "test.ptx"))
        verify(module)
        _BINARIES[key] = (module, compile_kernel(module, "k", CpuOptions(gang=gang)))
    module, binary = _BINARIES[key]
    slots, size = param_layout(module.functions["k"])
    buffer = bytearray(size)
    for slot, arg in zip(slots, args, strict=True):
        buffer[slot.offset:slot.offset + 8] = np.uint64(arg.ctypes.data).tobytes()
    binary.launch((1, 1, 1), (threads, 1, 1), 0, bytes(buffer),
                  [(a.ctypes.data, a.nbytes) for a in args])
    return binary


# (shape, d, a, b, c) -> M, N, K
FORMS = {
    ("m16n8k16", "f32", "f16", "f16", "f32"): (16, 8, 16),
    ("m16n8k16", "f32", "bf16", "bf16", "f32"): (16, 8, 16),
    ("m16n8k16", "f16", "f16", "f16", "f16"): (16, 8, 16),
    ("m16n8k8", "f32", "f16", "f16", "f32"): (16, 8, 8),
    ("m16n8k8", "f32", "bf16", "bf16", "f32"): (16, 8, 8),
    ("m16n8k8", "f32", "tf32", "tf32", "f32"): (16, 8, 8),
    ("m16n8k32", "s32", "s8", "s8", "s32"): (16, 8, 32),
    ("m16n8k32", "s32", "u8", "s8", "s32"): (16, 8, 32),
    ("m16n8k32", "s32", "u8", "u8", "s32"): (16, 8, 32),
    ("m16n8k16", "s32", "s8", "u8", "s32"): (16, 8, 16),
    ("m16n8k4", "f32", "tf32", "tf32", "f32"): (16, 8, 4),
    ("m8n8k4", "f64", "f64", "f64", "f64"): (8, 8, 4),
}
BITS = {"f16": 16, "bf16": 16, "tf32": 32, "f32": 32, "s8": 8, "u8": 8, "s32": 32, "f64": 64}


def _positions(which: str, kind: str, shape: str):
    """(element e, lane) -> (row, col) per the PTX ISA's fragment figures."""
    def at(e, lane):
        g, q = lane >> 2, lane % 4
        if shape == "m8n8k4":
            return {"a": (g, q), "b": (q, g), "c": (g, 2 * q + e)}[which]
        if which == "c":
            return (g if e < 2 else g + 8), 2 * q + e % 2
        if shape == "m16n8k4":
            return (g + 8 * e, q) if which == "a" else (q, g)
        if shape == "m16n8k16" and kind in ("s8", "u8"):
            return (g + 8 * (e // 4), 4 * q + e % 4) if which == "a" else (4 * q + e, g)
        if kind == "tf32":
            return (g + 8 * (e % 2), q + 4 * (e // 2)) if which == "a" else (q + 4 * e, g)
        if kind in ("s8", "u8"):
            if which == "a":
                return g + (8 if e in (4, 5, 6, 7, 12, 13, 14, 15) else 0), \
                    4 * q + e % 4 + (16 if e >= 8 else 0)
            return 4 * q + e % 4 + (16 if e >= 4 else 0), g
        if which == "a":
            return g + (8 if e in (2, 3, 6, 7) else 0), 2 * q + e % 2 + (8 if e >= 4 else 0)
        return 2 * q + e % 2 + (8 if e >= 2 else 0), g
    return at


def _values(kind: str, shape, rng) -> np.ndarray:
    if kind in ("s8", "u8", "s32"):
        low, high = {"s8": (-128, 128), "u8": (0, 256), "s32": (-2**20, 2**20)}[kind]
        return rng.integers(low, high, shape).astype(np.int64)
    if kind == "tf32":     # values with low mantissa bits set: the gang does not read them
        return rng.standard_normal(shape).astype(np.float32).astype(np.float64)
    x = rng.standard_normal(shape)
    if kind == "bf16":
        return (x.astype(np.float32).view(np.uint32) & 0xFFFF0000).view(np.float32).astype(
            np.float64)
    return x.astype({"f16": np.float16, "f32": np.float32, "f64": np.float64}[kind]).astype(
        np.float64)


def _pack(matrix, which, kind, shape) -> np.ndarray:
    """The (lanes, registers) words of each lane's fragment (two 32-bit words for f64)."""
    at = _positions(which, kind, shape)
    bits = BITS[kind]
    count = matrix.size // 32
    elements = np.array([[matrix[at(e, lane)] for e in range(count)] for lane in range(32)])
    if kind == "f64":
        return elements.astype(np.float64).view(np.uint32)
    if kind in ("f32", "tf32"):
        return elements.astype(np.float32).view(np.uint32)
    if kind in ("s8", "u8", "s32"):
        raw = elements.astype(np.int64) & ((1 << bits) - 1)
    elif kind == "f16":
        raw = elements.astype(np.float16).view(np.uint16).astype(np.int64)
    else:
        raw = elements.astype(np.float32).view(np.uint32).astype(np.int64) >> 16
    per = 32 // bits
    raw = raw.reshape(32, -1, per)
    return sum(raw[:, :, x] << (bits * x) for x in range(per)).astype(np.uint32)


def _unpack(words, kind, shape, m, n) -> np.ndarray:
    at = _positions("c", kind, shape)
    if kind == "f64":
        elements = words.view(np.float64)
    elif kind == "f32":
        elements = words.view(np.float32)
    elif kind == "s32":
        elements = words.view(np.int32)
    else:
        elements = words.view(np.float16)
    out = np.zeros((m, n))
    for lane in range(32):
        for e in range(elements.shape[1]):
            out[at(e, lane)] = elements[lane, e]
    return out


def _mma_ptx(form, counts) -> str:
    shape, d, a, b, c = form
    wide = d == "f64"
    reg = "%rd" if wide else "%r"
    step = 8 if wide else 4
    lines = [".reg .b32 %r<80>; .reg .b64 %rd<40>; .reg .b64 %p<9>;",
             "mov.u32 %r79, %tid.x;"]
    names = {}
    at = 1
    for i, (operand, count) in enumerate(zip("abcd", counts, strict=True)):
        lines += [f"ld.param.u64 %p{i}, [p{operand}];",
                  f"mul.wide.u32 %p{4 + i}, %r79, {count * step};",
                  f"add.s64 %p{i}, %p{i}, %p{4 + i};"]
        names[operand] = [f"{reg}{at + x}" for x in range(count)]
        at += count
        if operand != "d":
            t = "b64" if wide else "b32"
            lines += [f"ld.global.{t} {r}, [%p{i}+{step * x}];"
                      for x, r in enumerate(names[operand])]
    lines.append(f"mma.sync.aligned.{shape}.row.col.{d}.{a}.{b}.{c} "
                 + ", ".join("{" + ", ".join(names[o]) + "}" for o in "dabc") + ";")
    lines += [f"st.global.{'b64' if wide else 'b32'} [%p3+{step * x}], {r};"
              for x, r in enumerate(names["d"])]
    return kernel_ptx("\n".join(lines), ", ".join(f".param .u64 p{o}" for o in "abcd"))


def _matrices(form, seed: int = 0):
    _, _, a, b, c = form
    m, n, k = FORMS[form]
    rng = np.random.default_rng(seed)
    return _values(a, (m, k), rng), _values(b, (k, n), rng), _values(c, (m, n), rng)


def _case(form, seed: int = 0):
    shape, d, a, b, c = form
    A, B, C = _matrices(form, seed)
    packed = [_pack(A, "a", a, shape), _pack(B, "b", b, shape), _pack(C, "c", c, shape)]
    words = [np.tile(p, (WARPS, 1)) for p in packed]
    out = np.zeros_like(words[2])
    per = 2 if d == "f64" else 1
    counts = [p.shape[1] // per for p in packed] + [out.shape[1] // per]
    if a == "tf32":      # only the tf32 bits take part
        A = (A.astype(np.float32).view(np.uint32) & 0xFFFFE000).view(np.float32)
        B = (B.astype(np.float32).view(np.uint32) & 0xFFFFE000).view(np.float32)
    expected = A.astype(np.float64) @ B.astype(np.float64) + C
    return _mma_ptx(form, counts), words, out, expected

def _sequential_f32(A, B, C) -> np.ndarray:
    """C + A B as the gang sums it: C first, then k = 0, 1, ... each product (exact in f32
    for f16, bf16 and tf32 inputs) added with one rounding to f32."""
    acc = C.astype(np.float32)
    for kk in range(A.shape[1]):
        acc = (acc + np.outer(A[:, kk], B[kk]).astype(np.float32)).astype(np.float32)
    return acc


@pytest.mark.parametrize("form", list(FORMS), ids=lambda f: ".".join(f))
def test_mma_matches_numpy(form):
    ptx, words, out, expected = _case(form)
    binary = _run(ptx, [*words, out], gang=True)
    assert binary.gang_refusal is None
    shape, d = form[0], form[1]
    m, n, _ = FORMS[form]
    for w in range(WARPS):
        got = _unpack(out[32 * w:32 * (w + 1)], d, shape, m, n)
        if d == "s32":
            np.testing.assert_array_equal(got, expected)      # wraps only past 2^31
        else:
            tolerance = {"f16": 2e-3, "f32": 1e-5, "f64": 1e-13}[d]
            np.testing.assert_allclose(got, expected, rtol=tolerance, atol=tolerance * 4)


@pytest.mark.parametrize("form", [f for f in FORMS if f[2] in ("f16", "bf16", "tf32")],
                         ids=lambda f: ".".join(f))
def test_float_mma_is_the_sequential_f32_sum(form):
    """Bit for bit: C, then each k's product (exact in f32) added with one rounding."""
    ptx, words, out, _ = _case(form)
    _run(ptx, [*words, out], gang=True)
    A, B, C = _matrices(form)
    if form[2] == "tf32":      # only the tf32 bits take part
        A, B = ((x.astype(np.float32).view(np.uint32) & 0xFFFFE000).view(np.float32)
                for x in (A, B))
    want = _sequential_f32(A, B, C)
    shape, d = form[0], form[1]
    m, n, _ = FORMS[form]
    got = _unpack(out[:32], d, shape, m, n)
    if d == "f16":
        want = want.astype(np.float16)
    np.testing.assert_array_equal(got.astype(want.dtype), want)


@pytest.mark.parametrize("form", [f for f in FORMS if f[2] in ("f16", "bf16")],
                         ids=lambda f: ".".join(f))
def test_gang_agrees_with_the_resolver(form):
    ptx, words, out, _ = _case(form, seed=3)
    _run(ptx, [*words, out], gang=True)
    scalar = np.zeros_like(out)
    assert _run(ptx, [*words, scalar], gang=False).gang_refusal is not None
    # the resolver sums in f64 and rounds once; the gang's f32 FMA chain may differ in the
    # last bits of f32 (never for f16 results of these sizes... but allow 1 f16 ulp)
    if form[1] == "f32":
        np.testing.assert_allclose(out.view(np.float32), scalar.view(np.float32),
                                   rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_allclose(out.view(np.float16).astype(np.float32),
                                   scalar.view(np.float16).astype(np.float32), rtol=2e-3,
                                   atol=2e-3)


def test_integer_mma_wraps_modulo_2_32():
    form = ("m16n8k32", "s32", "s8", "s8", "s32")
    ptx, words, out, expected = _case(form)
    product = expected - _unpack(words[2][:32], "s32", "m16n8k32", 16, 8)
    words[2] = np.full_like(words[2], 0x7FFFFFFF)
    _run(ptx, [*words, out], gang=True)
    got = _unpack(out[:32], "s32", "m16n8k32", 16, 8)
    want = (product.astype(np.int64) + 0x7FFFFFFF + 2**31) % 2**32 - 2**31
    assert (product > 0).any()
    np.testing.assert_array_equal(got, want)


def test_a_warp_with_exited_lanes_is_an_error():
    form = ("m16n8k16", "f32", "f16", "f16", "f32")
    ptx, words, out, _ = _case(form)
    with pytest.raises(KernelExecutionError, match="never arrive"):
        _run(ptx, [*words, out], gang=True, threads=48)


LDMATRIX = """
.reg .b32 %r<12>; .reg .b64 %rd<8>;
.shared .align 16 .b8 tile[2048];
ld.param.u64 %rd1, [pin];
ld.param.u64 %rd2, [pout];
mov.u32 %r1, %tid.x;
mul.wide.u32 %rd3, %r1, 64;
add.s64 %rd4, %rd1, %rd3;
mov.u32 %r2, tile;
shl.b32 %r3, %r1, 6;
add.u32 %r3, %r2, %r3;
ld.global.v4.b32 {%r4, %r5, %r6, %r7}, [%rd4];
st.shared.v4.b32 [%r3], {%r4, %r5, %r6, %r7};
bar.sync 0;
and.b32 %r8, %r1, 31;
mul.lo.u32 %r8, %r8, {STRIDE};
add.u32 %r8, %r2, %r8;
ldmatrix.sync.aligned.m8n8.{FORM}.shared.b16 {REGS}, [%r8];
mul.wide.u32 %rd5, %r1, 16;
add.s64 %rd6, %rd2, %rd5;
{STORES}
"""


@pytest.mark.parametrize("count", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix_matches_numpy(count, trans):
    # lane l's row address: tile + 48 * l (rows 64 bytes apart from global rows; 48 makes
    # rows straddle the copied rows); each lane's 16-byte rows at 64-byte steps in tile
    stride = 48
    regs = [f"%r{4 + j}" for j in range(count)]
    stores = "\n".join(f"st.global.b32 [%rd6+{4 * j}], {r};" for j, r in enumerate(regs))
    form = f"x{count}" + (".trans" if trans else "")
    ptx = kernel_ptx(LDMATRIX.replace("{FORM}", form).replace("{STRIDE}", str(stride))
                     .replace("{REGS}", "{" + ", ".join(regs) + "}")
                     .replace("{STORES}", stores), ".param .u64 pin, .param .u64 pout")
    rng = np.random.default_rng(count)
    source = rng.integers(0, 2**16, (32, 32), dtype=np.uint16)   # 64 bytes per thread
    out = np.zeros((32, 4), np.uint32)
    binary = _run(ptx, [source, out], gang=True, threads=32)
    assert binary.gang_refusal is None
    tile = np.zeros(2048, np.uint8)
    tile[:] = np.concatenate([source[t].view(np.uint8)[:16].tolist() + [0] * 48
                               for t in range(32)])
    halves = tile.view(np.uint16)
    lane = np.arange(32)
    for j in range(count):
        rows = np.stack([halves[(stride * (8 * j + r)) // 2:(stride * (8 * j + r)) // 2 + 8]
                         for r in range(8)])
        if trans:
            rows = rows.T
        low = rows[lane // 4, 2 * (lane % 4)].astype(np.uint32)
        high = rows[lane // 4, 2 * (lane % 4) + 1].astype(np.uint32)
        np.testing.assert_array_equal(out[:, j], low | (high << 16), err_msg=f"matrix {j}")


def test_a_long_matrix_kernel_runs_thread_by_thread():
    # over MATRIX_KERNEL_LIMIT instructions: its gang code would take LLVM minutes
    from ptxport.codegen.targets.cpu.gang.refusals import MATRIX_KERNEL_LIMIT
    form = ("m16n8k16", "f32", "f16", "f16", "f32")
    ptx, words, out, expected = _case(form)
    padding = "add.u32 %r78, %r78, 1;\n" * MATRIX_KERNEL_LIMIT
    ptx = ptx.replace("mov.u32 %r79, %tid.x;", "mov.u32 %r79, %tid.x;\nmov.u32 %r78, 0;\n"
                      + padding)
    binary = _run(ptx, [*words, out], gang=True)
    assert "warp matrix instructions" in binary.gang_refusal
    got = _unpack(out[:32], "f32", "m16n8k16", 16, 8)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=4e-5)



# Three mmas in one block (one segment): the first two share A (its operand buffer made
# once), the third reads A's registers after a load rewrote them and B1 again; each mma's
# D is the next one's C.
SHARED_FRAGMENTS = """
.reg .b32 %r<40>; .reg .f32 %f<8>; .reg .b64 %rd<12>;
mov.u32 %r1, %tid.x;
ld.param.u64 %rd1, [pa]; ld.param.u64 %rd2, [pb]; ld.param.u64 %rd3, [pc];
ld.param.u64 %rd4, [pd];
mul.wide.u32 %rd5, %r1, 16; add.s64 %rd6, %rd1, %rd5; add.s64 %rd7, %rd3, %rd5;
add.s64 %rd9, %rd4, %rd5;
mul.wide.u32 %rd5, %r1, 8; add.s64 %rd8, %rd2, %rd5;
ld.global.v4.b32 {%r10, %r11, %r12, %r13}, [%rd6];
ld.global.v2.b32 {%r20, %r21}, [%rd8];
ld.global.v2.b32 {%r22, %r23}, [%rd8+256];
ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd7];
mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f1, %f2, %f3, %f4}, {%r10, %r11, %r12, %r13},
    {%r20, %r21}, {%f1, %f2, %f3, %f4};
mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f1, %f2, %f3, %f4}, {%r10, %r11, %r12, %r13},
    {%r22, %r23}, {%f1, %f2, %f3, %f4};
ld.global.v4.b32 {%r10, %r11, %r12, %r13}, [%rd6+512];
mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f1, %f2, %f3, %f4}, {%r10, %r11, %r12, %r13},
    {%r20, %r21}, {%f1, %f2, %f3, %f4};
st.global.v4.f32 [%rd9], {%f1, %f2, %f3, %f4};
"""


def test_mmas_sharing_fragments_in_one_segment_are_exact():
    shape = "m16n8k16"
    rng = np.random.default_rng(7)
    A1, A2 = (_values("f16", (16, 16), rng) for _ in range(2))
    B1, B2 = (_values("f16", (16, 8), rng) for _ in range(2))
    C = _values("f32", (16, 8), rng)
    a = np.concatenate([_pack(A1, "a", "f16", shape), _pack(A2, "a", "f16", shape)])
    b = np.concatenate([_pack(B1, "b", "f16", shape), _pack(B2, "b", "f16", shape)])
    c = _pack(C, "c", "f32", shape)
    out = np.zeros_like(c)
    ptx = kernel_ptx(SHARED_FRAGMENTS, ".param .u64 pa, .param .u64 pb, .param .u64 pc, "
                     ".param .u64 pd")
    module = build(parse(ptx, "test.ptx"))
    verify(module)
    kernel = module.functions["k"]
    mmas = [i for i in kernel.instructions() if i.opcode == "mma"]
    assert inline_warp_ops(kernel, uniform_registers(kernel, (32, 1, 1))) >= {
        id(i) for i in mmas}                    # a converged block: no segment starts there
    assert _run(ptx, [a, b, c, out], gang=True, threads=32).gang_refusal is None
    want = _sequential_f32(A2, B1, _sequential_f32(A1, B2, _sequential_f32(A1, B1, C)))
    np.testing.assert_array_equal(_unpack(out, "f32", shape, 16, 8).astype(np.float32), want)


def test_mma_where_a_divergent_branch_rejoins():
    """The two halves of each warp take different sides of a branch and meet again before
    the mma (a converged block again: it starts no segment); both warps' D is right."""
    form = ("m16n8k16", "f32", "f16", "f16", "f32")
    ptx, words, out, expected = _case(form)
    branch = """mov.u32 %r79, %tid.x;
and.b32 %r78, %r79, 31;
setp.lt.u32 %q1, %r78, 16;
@%q1 bra LOW;
add.u32 %r77, %r79, 1;
bra.uni JOIN;
LOW:
add.u32 %r77, %r79, 2;
JOIN:"""
    ptx = ptx.replace("mov.u32 %r79, %tid.x;", branch, 1).replace(
        ".reg .b64 %p<9>;", ".reg .b64 %p<9>; .reg .pred %q<2>;")
    assert _run(ptx, [*words, out], gang=True).gang_refusal is None
    for w in range(WARPS):
        got = _unpack(out[32 * w:32 * (w + 1)], "f32", "m16n8k16", 16, 8)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=4e-5)
