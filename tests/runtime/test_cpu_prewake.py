"""The CPU device's early wake (pool.prewake): launch() wakes the worker threads that parked
before it checks and packs its arguments; the woken threads watch for the launch for the
pool's spin time, take it like threads that never parked (each block once, failures named
as before), and park again when none comes."""

import time

import numpy as np
import pytest

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.errors import ArgumentError, KernelTrapError
from ptxport.runtime.backends.cpu import executor as cpu_executor
from ptxport.runtime.backends.cpu import pool as cpu_pool

# gather(arrived, n): each block counts itself in *arrived and waits until n blocks have
# (it ends only if n blocks run at once, one per worker).
# count_runs(out, bad): each block k adds 1 to out[k]; block `bad` then traps.
PTX = """
.version 8.0
.target sm_80
.address_size 64

.visible .entry gather(.param .u64 arrived, .param .u32 n)
{
  .reg .pred %p<2>; .reg .b32 %r<4>; .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [arrived];
  ld.param.u32 %r1, [n];
  atom.global.add.u32 %r2, [%rd1], 1;
$L_wait:
  atom.global.add.u32 %r3, [%rd1], 0;
  setp.lt.u32 %p1, %r3, %r1;
  @%p1 bra $L_wait;
  ret;
}

.visible .entry count_runs(.param .u64 out, .param .u32 bad)
{
  .reg .pred %p<2>; .reg .b32 %r<4>; .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r3, [bad];
  mov.u32 %r1, %ctaid.x;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  atom.global.add.u32 %r2, [%rd3], 1;
  setp.eq.u32 %p1, %r1, %r3;
  @%p1 trap;
  ret;
}
"""


@pytest.fixture(scope="module")
def dev():
    device = Device("cpu")
    device.set_current()
    return device


@pytest.fixture(scope="module")
def kernels(dev):
    return Program(PTX, code_type="ptx").compile("native")


@pytest.fixture
def workers():
    yield cpu_executor.set_workers
    cpu_executor.set_workers(None)
    cpu_pool.set_spin()


def _zeros(dev, stream, count: int):
    buffer = dev.allocate(count * 4, stream=stream)
    buffer.fill(0, 4, stream=stream)
    return buffer


def _read(buffer, stream, count: int) -> np.ndarray:
    out = np.empty(count, np.uint32)
    buffer.copy_to(out, stream=stream)
    stream.sync()
    return out


def _gather(dev, stream, kernels, count: int):
    arrived = _zeros(dev, stream, 1)
    launch(stream, LaunchConfig(grid=count, block=1, timeout=60), kernels.get_kernel("gather"),
           arrived, np.uint32(count))
    assert _read(arrived, stream, 1)[0] == count


def _parked(pool) -> list[int]:
    return [int(words[cpu_pool._PARKED]) for words in pool._threads]


def _until(condition, seconds: float = 5.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.001)
    return condition()


def test_parked_workers_woken_early_watch_for_a_launch_then_park_again(dev, kernels, workers):
    workers(4)
    cpu_pool.set_spin(0.05)
    stream = dev.create_stream()
    _gather(dev, stream, kernels, 4)
    pool = cpu_pool._FREE[-1]
    threads = len(pool._threads)        # (3, or more if an earlier test grew the pool)
    assert _until(lambda: _parked(pool) == [1] * threads), _parked(pool)
    cpu_pool.prewake(threads)
    # (each woken thread leaves its futex and watches the generation: no longer parked)
    assert _until(lambda: _parked(pool) == [0] * threads, 2.0), _parked(pool)
    # (no launch came: after the spin (50 ms) every one parks again, counted as sleeping)
    assert _until(lambda: _parked(pool) == [1] * threads), _parked(pool)
    assert _until(lambda: int(pool.words[cpu_pool._SLEEPERS // 8]) == threads)
    start = time.process_time()
    time.sleep(0.2)
    assert time.process_time() - start < 0.05       # (parked, not spinning on the flag)
    _gather(dev, stream, kernels, 4)                # (and a launch still wakes all three)


def test_a_launch_after_an_early_wake_runs_each_block_once(dev, kernels, workers):
    workers(4)
    cpu_pool.set_spin(0.0005)
    stream = dev.create_stream()
    count_runs = kernels.get_kernel("count_runs")
    out = _zeros(dev, stream, 4096)
    for _ in range(6):
        time.sleep(0.01)        # (the threads park between launches)
        launch(stream, LaunchConfig(grid=4096, block=1), count_runs, out, np.uint32(1 << 30))
        stream.sync()
    assert (_read(out, stream, 4096) == 6).all()
    _gather(dev, stream, kernels, 4)        # (every worker took part after an early wake)


def test_a_trap_after_an_early_wake_names_its_block(dev, kernels, workers):
    workers(4)
    cpu_pool.set_spin(0.0005)
    stream = dev.create_stream()
    count_runs = kernels.get_kernel("count_runs")
    out = _zeros(dev, stream, 512)
    time.sleep(0.01)
    launch(stream, LaunchConfig(grid=512, block=1), count_runs, out, np.uint32(300))
    with pytest.raises(KernelTrapError, match=r"block \(300, 0, 0\)"):
        stream.sync()
    time.sleep(0.01)
    launch(stream, LaunchConfig(grid=512, block=1), count_runs, out, np.uint32(1 << 30))
    stream.sync()
    assert _read(out, stream, 512)[300] >= 2


def test_launch_wakes_before_packing_and_only_with_several_workers(dev, kernels, workers,
                                                                   monkeypatch):
    calls = []
    monkeypatch.setattr(cpu_pool, "prewake", calls.append)
    stream = dev.create_stream()
    count_runs = kernels.get_kernel("count_runs")
    workers(4)
    with pytest.raises(ArgumentError):      # (woken before the arguments were looked at)
        launch(stream, LaunchConfig(grid=64, block=1), count_runs, "not a buffer", 0)
    assert calls == [3]                     # (the 3 threads besides the launching one)
    out = _zeros(dev, stream, 2)
    launch(stream, LaunchConfig(grid=2, block=1), count_runs, out, np.uint32(5))
    stream.sync()
    assert calls == [3, 1]                  # (2 blocks: one thread besides)
    workers(1)
    launch(stream, LaunchConfig(grid=2, block=1), count_runs, out, np.uint32(5))
    stream.sync()
    assert calls == [3, 1, 0]


def test_a_fixed_spin_of_zero_wakes_nothing_early(dev, kernels, workers):
    workers(3)
    cpu_pool.set_spin(0)
    stream = dev.create_stream()
    _gather(dev, stream, kernels, 3)
    pool = cpu_pool._FREE[-1]
    assert _until(lambda: all(_parked(pool))), _parked(pool)
    cpu_pool.prewake(2)
    time.sleep(0.05)
    assert all(_parked(pool)), _parked(pool)


def test_an_early_wake_wakes_only_the_threads_the_launch_will_use(dev, kernels, workers):
    workers(4)
    cpu_pool.set_spin(0.05)
    stream = dev.create_stream()
    _gather(dev, stream, kernels, 4)
    pool = cpu_pool._FREE[-1]
    threads = len(pool._threads)
    assert _until(lambda: _parked(pool) == [1] * threads), _parked(pool)
    cpu_pool.prewake(1)             # (a launch of 2 blocks: worker 1 besides this thread)
    assert _until(lambda: _parked(pool)[0] == 0, 2.0), _parked(pool)
    assert _parked(pool)[1:] == [1] * (threads - 1)


def test_a_launch_like_the_last_wakes_parked_threads_only(dev, kernels, workers,
                                                          monkeypatch):
    """A launch like the last one (launch.py's _again: the kernel's starter's expect) wakes
    the parked threads it will use (pool.parked says some are), and none where none
    parked; each block runs once either way."""
    workers(4)
    cpu_pool.set_spin(0.0005)
    stream = dev.create_stream()
    count_runs = kernels.get_kernel("count_runs")
    out = _zeros(dev, stream, 512)
    config = LaunchConfig(grid=512, block=1)
    for _ in range(2):      # (the second is like the first: _again)
        launch(stream, config, count_runs, out, np.uint32(1 << 30))
        stream.sync()
    calls, real = [], cpu_pool.prewake

    def prewake(helpers):
        calls.append(helpers)
        real(helpers)

    monkeypatch.setattr(cpu_pool, "prewake", prewake)
    pool = cpu_pool._FREE[-1]
    assert _until(lambda: _parked(pool)[:3] == [1] * 3), _parked(pool)
    assert cpu_pool.parked()
    launch(stream, config, count_runs, out, np.uint32(1 << 30))
    stream.sync()
    assert calls == [3]
    cpu_pool.set_spin(0.5)      # (threads that ran it watch for the next for 0.5 s)
    launch(stream, config, count_runs, out, np.uint32(1 << 30))
    stream.sync()
    calls.clear()
    runs = 4
    if not cpu_pool.parked():   # (a loaded machine may have parked one meanwhile)
        launch(stream, config, count_runs, out, np.uint32(1 << 30))
        stream.sync()
        assert calls == []
        runs += 1
    assert (_read(out, stream, 512) == runs).all()
