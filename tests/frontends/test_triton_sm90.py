"""Triton's tutorial matmul compiled for sm_90 (GPUTarget("cuda", 90, 32): wgmma.mma_async
with shared-memory descriptors, fence.proxy.async, wgmma.fence/commit_group/wait_group) on
the cpu device, against numpy: f16 and bf16 inputs with f32 accumulators, and f32 inputs in
tf32 (Triton's default input precision). Triton caches the PTX (~/.triton), so a second run
compiles nothing; ptxport caches the CPU code."""

import numpy as np
import pytest

triton = pytest.importorskip("triton", reason="triton is not installed (pip install "
                                              "'ptxport[triton]')")
import triton.language as tl  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402

import ptxport.frontends.triton as pt  # noqa: E402
from ptxport import Device, Program  # noqa: E402

SM90 = GPUTarget("cuda", 90, 32)


@triton.jit
def tutorial_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                    stride_cm, stride_cn, BLOCK_SIZE_M: tl.constexpr,
                    BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                    GROUP_SIZE_M: tl.constexpr, BF16: tl.constexpr):
    """Triton's 03-matrix-multiplication tutorial kernel (f32 output; BF16: the inputs are
    bfloat16 bits in 16-bit integers, numpy having no bfloat16)."""
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    if BF16:
        a_ptr = a_ptr.to(tl.pointer_type(tl.bfloat16))
        b_ptr = b_ptr.to(tl.pointer_type(tl.bfloat16))
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, accumulator, mask=c_mask)


@pytest.fixture
def cpu():
    dev = Device("cpu")
    pt.activate(dev, target=SM90)
    yield dev
    pt.deactivate()


def _tf32(x: np.ndarray) -> np.ndarray:
    """What wgmma reads of f32 inputs in tf32: the 13 low mantissa bits dropped."""
    return (x.astype(np.float32).view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)


def _bf16(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(bits as uint16, the values) of x rounded to bfloat16 (nearest even)."""
    bits = x.astype(np.float32).view(np.uint32)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype(np.uint16), (rounded << 16).astype(np.uint32).view(np.float32)


# bf16: f16's kernel with the other input type (20 s of LLVM in a fresh CI): `pytest -m slow`;
# wgmma's bf16 form itself is checked on the cpu in tests/codegen/test_wgmma.py
@pytest.mark.parametrize("kind", ["f16", pytest.param("bf16", marks=pytest.mark.slow), "tf32"])
def test_tutorial_matmul_sm90_wgmma(cpu, kind):
    rng = np.random.default_rng(9)
    m, n, k = 96, 80, 72                        # partial tiles in every dimension
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    if kind == "f16":
        a_in, b_in = a.astype(np.float16), b.astype(np.float16)
        a_used, b_used = a_in, b_in
    elif kind == "bf16":
        (a_in, a_used), (b_in, b_used) = _bf16(a), _bf16(b)
    else:
        a_in, b_in, a_used, b_used = a, b, _tf32(a), _tf32(b)
    c = np.zeros((m, n), np.float32)
    da, db, dc = (pt.device_array(x, cpu) for x in (a_in, b_in, c))
    grid = (triton.cdiv(m, 64) * triton.cdiv(n, 64),)
    # (tf32's k-step of 16: two wgmma k8 a step, as 16-bit inputs have; 32 doubled the
    # kernel's code, 31 s of compiling)
    compiled = tutorial_matmul[grid](da, db, dc, m, n, k, k, 1, n, 1, n, 1, BLOCK_SIZE_M=64,
                                     BLOCK_SIZE_N=64, BLOCK_SIZE_K=16 if kind == "tf32" else 32,
                                     GROUP_SIZE_M=8,
                                     BF16=kind == "bf16", num_warps=4, num_stages=3)
    ptx = compiled.asm["ptx"]
    form = {"f16": "f32.f16.f16", "bf16": "f32.bf16.bf16", "tf32": "f32.tf32.tf32"}[kind]
    assert f"wgmma.mma_async.sync.aligned.m64n64k{8 if kind == 'tf32' else 16}.{form}" in ptx
    program = Program(ptx, code_type="ptx").compile("native")
    assert program.get_kernel("tutorial_matmul")._binary(cpu).gang_refusal is None
    want = a_used.astype(np.float64) @ b_used.astype(np.float64)
    # products of these inputs are exact in f32; only the f32 sums round
    np.testing.assert_allclose(dc.numpy(), want, rtol=1e-5, atol=1e-5)


@triton.jit
def attention_f16(q_ptr, k_ptr, v_ptr, o_ptr, seq_len, scale, HEAD: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """A flash-attention forward in f16 with f32 accumulators: on sm_90 its P @ V is a wgmma
    whose A (P, converted to f16) comes from registers."""
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HEAD)
    q = tl.load(q_ptr + rows[:, None] * HEAD + dims[None, :], mask=rows[:, None] < seq_len,
                other=0.0)
    m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD], tl.float32)
    for start in range(0, seq_len, BLOCK_N):
        keys = start + tl.arange(0, BLOCK_N)
        k = tl.load(k_ptr + keys[None, :] * HEAD + dims[:, None], mask=keys[None, :] < seq_len,
                    other=0.0)
        s = tl.dot(q, k) * scale
        s = tl.where(keys[None, :] < seq_len, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + keys[:, None] * HEAD + dims[None, :], mask=keys[:, None] < seq_len,
                    other=0.0)
        acc = tl.dot(p.to(tl.float16), v, acc * alpha[:, None])
        m_i = m_new
    tl.store(o_ptr + rows[:, None] * HEAD + dims[None, :], acc / l_i[:, None],
             mask=rows[:, None] < seq_len)


def test_flash_attention_sm90_wgmma_with_a_in_registers(cpu):
    rng = np.random.default_rng(10)
    seq, head = 100, 64
    q, k, v = (rng.standard_normal((seq, head)).astype(np.float16) for _ in range(3))
    out = np.zeros((seq, head), np.float32)
    dq, dk, dv, dout = (pt.device_array(x, cpu) for x in (q, k, v, out))
    scale = 1 / np.sqrt(head)
    compiled = attention_f16[(triton.cdiv(seq, 64),)](dq, dk, dv, dout, seq, scale, HEAD=head,
                                                       BLOCK_M=64, BLOCK_N=64, num_warps=4)
    assert "f32.f16.f16 {" in compiled.asm["ptx"].replace("}, {%r", "} A{%r")  # sanity
    assert "} A{%r" in compiled.asm["ptx"].replace("}, {%r", "} A{%r")         # A in registers
    s = (q.astype(np.float64) @ k.T.astype(np.float64)) * scale
    p = np.exp(s - s.max(axis=1, keepdims=True))
    # P is rounded to f16 before P @ V, as the kernel does
    want = (p.astype(np.float16).astype(np.float64) @ v) / p.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(dout.numpy(), want, rtol=2e-3, atol=2e-3)
