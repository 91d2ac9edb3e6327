"""Large copies on the CPU device run on the worker pool (runtime/backends/cpu/copies.py):
every byte arrives whatever the size (pieces of CHUNK_BYTES, a short last one), overlapping
ranges keep memmove's result, and Buffer copies through the stream use it."""

import numpy as np
import pytest

from ptxport import Device
from ptxport.runtime.backends.cpu import copies
from ptxport.runtime.backends.cpu import executor as cpu_executor
from ptxport.runtime.backends.cpu import pool as cpu_pool


def _random(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)


@pytest.mark.parametrize("nbytes", [copies.PARALLEL_BYTES - 1, copies.PARALLEL_BYTES,
                                    copies.PARALLEL_BYTES + copies.CHUNK_BYTES // 3,
                                    (13 << 20) + 7])
@pytest.mark.parametrize("workers", [1, 2, 5])
def test_a_copy_moves_every_byte(nbytes, workers):
    src, dst = _random(nbytes), np.zeros(nbytes + 64, np.uint8)
    copies.copy(dst.ctypes.data, src.ctypes.data, nbytes, workers)
    assert (dst[:nbytes] == src).all()
    assert not dst[nbytes:].any()       # (nothing past the end)


def test_overlapping_ranges_copy_as_memmove_does():
    n = 8 << 20
    data = _random(n + (1 << 20))
    want = data.copy()
    want[1 << 20:] = data[:n]
    copies.copy(data.ctypes.data + (1 << 20), data.ctypes.data, n, 4)
    assert (data == want).all()


def test_a_parallel_copy_takes_pieces_on_several_threads(monkeypatch):
    # (the job the pool ran: as many workers as asked, up to one per MiB)
    runs = []
    real = cpu_pool.Pool.run

    def run(self, job, traced=True):
        runs.append((int(job.words[cpu_pool.WORKERS]), int(job.words[cpu_pool.TOTAL]),
                     traced))
        return real(self, job, traced)

    monkeypatch.setattr(cpu_pool.Pool, "run", run)
    n = 6 << 20
    src, dst = _random(n), np.zeros(n, np.uint8)
    copies.copy(dst.ctypes.data, src.ctypes.data, n, 16)
    assert runs == [(6, n // copies.CHUNK_BYTES, False)]
    assert (dst == src).all()


def test_buffer_copies_on_the_cpu_device_use_the_workers(monkeypatch):
    calls = []
    real = copies.copy
    monkeypatch.setattr(copies, "copy", lambda *a: (calls.append(a[2:]), real(*a)))
    cpu_executor.set_workers(3)
    try:
        dev = Device("cpu")
        stream = dev.create_stream()
        n = 5 << 20
        host = _random(n, 1)
        buffer = dev.allocate(n, stream=stream)
        buffer.copy_from(host, stream=stream)
        other = buffer.copy_to(stream=stream)
        out = np.zeros(n, np.uint8)
        other.copy_to(out, stream=stream)
        stream.sync()
    finally:
        cpu_executor.set_workers(None)
    assert (out == host).all()
    assert calls == [(n, 3)] * 3
