"""A small GPT trained in CUDA C++ (tests/programs/gpt_trainer.cu: embeddings, layernorm,
causal attention, a GELU MLP, cross-entropy, AdamW, every matmul through cuBLAS) under
`ptxport run`, against the same model and training written here in numpy (float64).

The program prints its losses to stderr; they must equal numpy's to 1e-4 relative at every
step. The numpy model's own backward pass is checked against central differences, so that
the two cannot agree on a wrong gradient.
"""

from __future__ import annotations

import re

import numpy as np
import programs_harness as harness
import pytest

from ptxport.runtime.backends import availability

V, T, C, L, NH, B = 64, 16, 32, 2, 2, 2
HS, N = C // NH, B * T
STEPS = 5
LR, BETA1, BETA2, EPS, DECAY = 1e-3, 0.9, 0.999, 1e-8, 0.01
SEED = 20241125
GELU_K = np.sqrt(2.0 / np.pi)
LAYER = ("ln1w", "ln1b", "qkvw", "qkvb", "projw", "projb", "ln2w", "ln2b", "fcw", "fcb",
         "fc2w", "fc2b")
LAYER_SHAPES = ((C,), (C,), (3 * C, C), (3 * C,), (C, C), (C,), (C,), (C,), (4 * C, C),
                (4 * C,), (C, 4 * C), (C,))


class Generator:
    """xorshift32, as gpt_trainer.cu's Generator."""

    def __init__(self, seed: int):
        self.state = seed

    def next(self) -> int:
        x = self.state
        x ^= (x << 13) & 0xFFFFFFFF
        x ^= x >> 17
        x ^= (x << 5) & 0xFFFFFFFF
        self.state = x
        return x

    def symmetric(self, scale: float) -> np.float32:
        u = np.float32((self.next() >> 8) / 16777216.0)
        return (np.float32(2.0) * u - np.float32(1.0)) * np.float32(scale)


def parameter_shapes() -> list[tuple[str, tuple[int, ...]]]:
    """Names and shapes in the program's order (its param_sizes)."""
    shapes = [("wte", (V, C)), ("wpe", (T, C))]
    for layer in range(L):
        pairs = zip(LAYER, LAYER_SHAPES, strict=True)
        shapes += [(f"{name}{layer}", shape) for name, shape in pairs]
    return [*shapes, ("lnfw", (C,)), ("lnfb", (C,))]


def initial_state() -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    gen = Generator(SEED)
    params = {}
    for name, shape in parameter_shapes():
        size = int(np.prod(shape))
        if name.startswith(("ln1w", "ln2w", "lnfw")):
            values = np.ones(size, np.float32)
        else:
            values = np.array([gen.symmetric(0.1) for _ in range(size)], np.float32)
        params[name] = values.reshape(shape).astype(np.float64)
    tokens = np.array([gen.next() % V for _ in range(N)])
    targets = np.array([gen.next() % V for _ in range(N)])
    return params, tokens, targets


def layernorm(x, w, b):
    mean = x.mean(-1, keepdims=True)
    rstd = 1.0 / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + 1e-5)
    norm = (x - mean) * rstd
    return norm * w + b, (norm, rstd)


def layernorm_backward(dout, w, cache):
    norm, rstd = cache
    dnorm = dout * w
    dx = (dnorm - dnorm.mean(-1, keepdims=True)
          - norm * (dnorm * norm).mean(-1, keepdims=True)) * rstd
    return dx, (dout * norm).sum(0), dout.sum(0)


def gelu(x):
    return 0.5 * x * (1.0 + np.tanh(GELU_K * (x + 0.044715 * x ** 3)))


def gelu_backward(x, dout):
    th = np.tanh(GELU_K * (x + 0.044715 * x ** 3))
    dth = (1.0 - th ** 2) * GELU_K * (1.0 + 3 * 0.044715 * x ** 2)
    return dout * (0.5 * (1.0 + th) + 0.5 * x * dth)


def heads(x):
    """(N, C) -> (B, NH, T, HS)"""
    return x.reshape(B, T, NH, HS).transpose(0, 2, 1, 3)


def merge(x):
    return x.transpose(0, 2, 1, 3).reshape(N, C)


MASK = np.tril(np.ones((T, T), bool))


def block_forward(p, i, x):
    cache = {"x": x}
    ln1, cache["ln1c"] = layernorm(x, p[f"ln1w{i}"], p[f"ln1b{i}"])
    qkv = ln1 @ p[f"qkvw{i}"].T + p[f"qkvb{i}"]
    q, k, v = (heads(qkv[:, j * C:(j + 1) * C]) for j in range(3))
    scores = np.where(MASK, q @ k.transpose(0, 1, 3, 2) / np.sqrt(HS), -np.inf)
    att = np.exp(scores - scores.max(-1, keepdims=True))
    att /= att.sum(-1, keepdims=True)
    y = merge(att @ v)
    x2 = x + y @ p[f"projw{i}"].T + p[f"projb{i}"]
    ln2, cache["ln2c"] = layernorm(x2, p[f"ln2w{i}"], p[f"ln2b{i}"])
    h = ln2 @ p[f"fcw{i}"].T + p[f"fcb{i}"]
    hg = gelu(h)
    cache.update(ln1=ln1, q=q, k=k, v=v, att=att, y=y, ln2=ln2, h=h, hg=hg)
    return x2 + hg @ p[f"fc2w{i}"].T + p[f"fc2b{i}"], cache


def block_backward(p, g, i, dres, c):
    g[f"fc2w{i}"] += dres.T @ c["hg"]
    g[f"fc2b{i}"] += dres.sum(0)
    dh = gelu_backward(c["h"], dres @ p[f"fc2w{i}"])
    g[f"fcw{i}"] += dh.T @ c["ln2"]
    g[f"fcb{i}"] += dh.sum(0)
    dx, dw, db = layernorm_backward(dh @ p[f"fcw{i}"], p[f"ln2w{i}"], c["ln2c"])
    dres = dres + dx
    g[f"ln2w{i}"] += dw
    g[f"ln2b{i}"] += db
    g[f"projw{i}"] += dres.T @ c["y"]
    g[f"projb{i}"] += dres.sum(0)
    dy = heads(dres @ p[f"projw{i}"])
    att, q, k, v = c["att"], c["q"], c["k"], c["v"]
    datt = dy @ v.transpose(0, 1, 3, 2)
    dv = att.transpose(0, 1, 3, 2) @ dy
    dscores = att * (datt - (att * datt).sum(-1, keepdims=True)) / np.sqrt(HS)
    dq, dk = dscores @ k, dscores.transpose(0, 1, 3, 2) @ q
    dqkv = np.concatenate([merge(dq), merge(dk), merge(dv)], axis=1)
    g[f"qkvw{i}"] += dqkv.T @ c["ln1"]
    g[f"qkvb{i}"] += dqkv.sum(0)
    dx, dw, db = layernorm_backward(dqkv @ p[f"qkvw{i}"], p[f"ln1w{i}"], c["ln1c"])
    g[f"ln1w{i}"] += dw
    g[f"ln1b{i}"] += db
    return dres + dx


def loss_and_gradients(p, tokens, targets, gradients: bool = True):
    x = p["wte"][tokens] + p["wpe"][np.arange(N) % T]
    caches = []
    for i in range(L):
        x, cache = block_forward(p, i, x)
        caches.append(cache)
    lnf, lnfc = layernorm(x, p["lnfw"], p["lnfb"])
    logits = lnf @ p["wte"].T
    logits -= logits.max(-1, keepdims=True)
    probs = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    loss = -np.log(probs[np.arange(N), targets]).mean()
    if not gradients:
        return loss, None
    g = {name: np.zeros_like(value) for name, value in p.items()}
    dlogits = probs.copy()
    dlogits[np.arange(N), targets] -= 1.0
    dlogits /= N
    g["wte"] += dlogits.T @ lnf
    dres, g["lnfw"], g["lnfb"] = layernorm_backward(dlogits @ p["wte"], p["lnfw"], lnfc)
    for i in reversed(range(L)):
        dres = block_backward(p, g, i, dres, caches[i])
    np.add.at(g["wte"], tokens, dres)
    g["wpe"] += dres.reshape(B, T, C).sum(0)
    return loss, g


def train() -> list[float]:
    p, tokens, targets = initial_state()
    m = {name: np.zeros_like(value) for name, value in p.items()}
    v = {name: np.zeros_like(value) for name, value in p.items()}
    losses = []
    for step in range(1, STEPS + 1):
        loss, g = loss_and_gradients(p, tokens, targets)
        losses.append(loss)
        for name in p:
            m[name] = BETA1 * m[name] + (1 - BETA1) * g[name]
            v[name] = BETA2 * v[name] + (1 - BETA2) * g[name] ** 2
            mhat, vhat = m[name] / (1 - BETA1 ** step), v[name] / (1 - BETA2 ** step)
            p[name] -= LR * (mhat / (np.sqrt(vhat) + EPS) + DECAY * p[name])
    return losses


def test_numpy_gradients_match_central_differences():
    p, tokens, targets = initial_state()
    _, g = loss_and_gradients(p, tokens, targets)
    rng = np.random.default_rng(0)
    for name in ("wte", "wpe", "ln1w0", "qkvw0", "qkvb1", "projw1", "fcw0", "fc2b1", "lnfb"):
        flat = p[name].reshape(-1)
        for index in rng.choice(flat.size, 3, replace=False):
            saved, h = flat[index], 1e-5
            flat[index] = saved + h
            up, _ = loss_and_gradients(p, tokens, targets, gradients=False)
            flat[index] = saved - h
            down, _ = loss_and_gradients(p, tokens, targets, gradients=False)
            flat[index] = saved
            numeric = (up - down) / (2 * h)
            assert g[name].reshape(-1)[index] == pytest.approx(numeric, rel=1e-5, abs=1e-9), \
                (name, index)


@pytest.fixture(scope="module")
def trainer():
    try:
        return harness.build("gpt_trainer")
    except harness.ToolkitMissingError as e:
        pytest.skip(f"cannot build tests/programs/gpt_trainer.cu here: {e}")


def _losses(stderr: str) -> list[float]:
    return [float(x) for x in re.findall(r"^step \d+ loss (\S+)$", stderr, re.MULTILINE)]


@pytest.mark.parametrize("device", ["cpu", "opencl:0"])
def test_trainer_losses_match_numpy(trainer, ptxport_run, device):
    """On the cpu device cuBLAS is numpy's BLAS; on opencl:0 its GEMMs are ptxport's portable
    GEMM kernels (docs/blas.md): the same losses either way."""
    ok, why = availability(device.partition(":")[0])
    if not ok:
        pytest.skip(f"no {device} device: {why}")
    result = ptxport_run(trainer, device=device)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.endswith("PASS\n"), result.stdout
    got, want = _losses(result.stderr), train()
    assert len(got) == STEPS, result.stderr
    assert want[-1] < want[0] - 0.1   # the reference itself trains
    np.testing.assert_allclose(got, want, rtol=1e-4)
