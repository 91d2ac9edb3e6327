"""Launches begun at once on the CPU device's worker threads (backends/cpu/early.py): a
launch that would be queued on an idle stream opens its blocks to the pool's threads before
launch() returns, and the thread that later runs the stream's queue (a sync) joins it as
worker 0 for the blocks left; failures are raised by that sync as before, and later work
on the stream runs after it."""

import time

import numpy as np
import pytest

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.errors import IllegalAddressError, KernelExecutionError, KernelTrapError
from ptxport.runtime.backends.cpu import early
from ptxport.runtime.backends.cpu import executor as cpu_executor
from ptxport.runtime.backends.cpu import pool as cpu_pool

# count_runs(out, bad): each thread of block k adds 1 to out[k]; block `bad` then traps. (No loop:
# grids of at most 32768 threads of it run at once in launch(); larger ones are queued.)
PTX = """
.version 8.0
.target sm_80
.address_size 64

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

BLOCKS, BLOCK = 4096, 32      # (131072 threads: queued, not run inside launch())
NONE = np.uint32(1 << 30)     # (no block traps)


@pytest.fixture(scope="module")
def dev():
    device = Device("cpu")
    device.set_current()
    return device


@pytest.fixture(scope="module")
def count_runs(dev):
    return Program(PTX, code_type="ptx").compile("native").get_kernel("count_runs")


@pytest.fixture
def workers():
    yield cpu_executor.set_workers
    cpu_executor.set_workers(None)
    cpu_pool.trace_shares(False)


def _zeros(dev, stream):
    buffer = dev.allocate(BLOCKS * 4, stream=stream)
    buffer.fill(0, 4, stream=stream)
    stream.sync()
    return buffer


def _read(buffer, stream) -> np.ndarray:
    out = np.empty(buffer.size // 4, np.uint32)
    buffer.copy_to(out, stream=stream)
    stream.sync()
    return out[:BLOCKS]


def _spy(monkeypatch) -> list:
    """Record what each early start (early.Starter) returned (None: not begun early)."""
    calls, real = [], early.Starter.__call__

    def start(*args):
        calls.append(real(*args))
        return calls[-1]

    monkeypatch.setattr(early.Starter, "__call__", start)
    return calls


def test_the_blocks_begin_before_launch_returns(dev, count_runs, workers):
    workers(4)
    stream = dev.create_stream()
    out = _zeros(dev, stream)
    launch(stream, LaunchConfig(grid=BLOCKS, block=BLOCK), count_runs, out, NONE)
    stream.sync()       # (compiled at its first launch, which is queued as before)
    cpu_pool.trace_shares(True)
    before = time.clock_gettime(time.CLOCK_MONOTONIC)     # (the pool's trace's clock)
    launch(stream, LaunchConfig(grid=BLOCKS, block=BLOCK), count_runs, out, NONE)
    after = time.clock_gettime(time.CLOCK_MONOTONIC)
    time.sleep(0.01)
    stream.sync()
    record = cpu_pool.last_shares()
    # (a queued launch's job opened when a sync or the stream's thread took it, after
    # launch() returned; worker 0, the thread that took it, began its share then)
    assert before <= record["opened_ns"] / 1e9 <= after, (before, record["opened_ns"] / 1e9, after)
    assert (_read(out, stream) == 2 * BLOCK).all()


def test_later_work_on_the_stream_runs_after_an_early_launch(dev, count_runs, workers,
                                                             monkeypatch):
    workers(4)
    stream = dev.create_stream()
    out = _zeros(dev, stream)
    launch(stream, LaunchConfig(grid=BLOCKS, block=BLOCK), count_runs, out, NONE)
    stream.sync()       # (compiled at its first launch, which is queued as before)
    calls = _spy(monkeypatch)
    host = np.empty(BLOCKS, np.uint32)
    for _ in range(3):
        launch(stream, LaunchConfig(grid=BLOCKS, block=BLOCK), count_runs, out, NONE)
        launch(stream, LaunchConfig(grid=BLOCKS, block=BLOCK), count_runs, out, NONE)
        out.copy_to(host, stream=stream)
        stream.sync()
    assert (host == 7 * BLOCK).all()
    # (only a launch on an idle stream is begun early: the first of each pair always; the
    # second only where the first had finished before it was issued, as on a loaded machine)
    assert 3 <= len(calls) <= 6 and all(finish is not None for finish in calls)


def test_a_trap_in_an_early_launch_is_raised_by_the_sync_and_the_stream_goes_on(
        dev, count_runs, workers, monkeypatch):
    workers(4)
    calls = _spy(monkeypatch)
    stream = dev.create_stream()
    out = _zeros(dev, stream)
    launch(stream, LaunchConfig(grid=BLOCKS, block=BLOCK), count_runs, out, NONE)
    stream.sync()
    launch(stream, LaunchConfig(grid=BLOCKS, block=BLOCK), count_runs, out, np.uint32(3000))
    with pytest.raises(KernelTrapError, match=r"block \(3000, 0, 0\)"):
        stream.sync()
    assert calls and calls[-1] is not None
    out.fill(0, 4, stream=stream)
    launch(stream, LaunchConfig(grid=BLOCKS, block=BLOCK), count_runs, out, NONE)
    assert (_read(out, stream) == BLOCK).all()


def test_one_worker_and_timeouts_run_as_queued_launches(dev, count_runs, workers,
                                                        monkeypatch):
    workers(1)
    stream = dev.create_stream()
    out = _zeros(dev, stream)
    launch(stream, LaunchConfig(grid=BLOCKS, block=BLOCK), count_runs, out, NONE)
    stream.sync()       # (compiled at its first launch, which is queued as before)
    calls = _spy(monkeypatch)
    launch(stream, LaunchConfig(grid=BLOCKS, block=BLOCK), count_runs, out, NONE)
    stream.sync()
    # (one worker runs it all: not begun early)
    assert calls == [None]
    workers(4)
    launch(stream, LaunchConfig(grid=BLOCKS, block=BLOCK, timeout=60), count_runs, out, NONE)
    assert (_read(out, stream) == 3 * BLOCK).all()
    assert calls == [None]      # (a launch with a watchdog is never begun early)


def _spy_grids(monkeypatch) -> list:
    """The grid of each executor Grid that early.py makes from now on (the list fills)."""
    made, real = [], early.Grid

    def grid(*args):
        made.append(args[1])
        return real(*args)

    monkeypatch.setattr(early, "Grid", grid)
    return made


def test_a_repeated_launch_reuses_its_setup_and_a_changed_one_does_not(
        dev, count_runs, workers, monkeypatch):
    """early.Starter keeps the last launch's Grid and team: the same launch again reuses
    them; another grid, new allocations or a failure in between set the workers up anew,
    and every launch counts each block's threads once."""
    workers(4)
    stream = dev.create_stream()
    out = _zeros(dev, stream)
    config, half = LaunchConfig(grid=BLOCKS, block=BLOCK), LaunchConfig(grid=BLOCKS // 2,
                                                                         block=BLOCK)
    launch(stream, config, count_runs, out, NONE)
    stream.sync()       # (compiled at its first launch, which is queued as before)
    made = _spy_grids(monkeypatch)
    expected = np.full(BLOCKS, BLOCK, np.uint32)
    # (the first may reuse what an earlier test's launch left, where its allocations were
    # the same: it is not asked. An earlier test's buffer freed meanwhile, by the collector
    # or another stream's thread dropping the last reference, changes the allocations: a
    # launch after that may set up anew.)
    live, before = dev._backend._live_ranges, None
    for config_now, new in ((config, None), (config, False), (config, False), (half, True),
                            (config, True), (config, False)):
        made.clear()
        moved, before = live() is not before, live()
        launch(stream, config_now, count_runs, out, NONE)
        stream.sync()
        expected[:config_now.grid[0]] += BLOCK
        if new or (new is False and not moved and live() is before):
            assert made == ([config_now.grid] if new else []), (config_now, new)
    assert (_read(out, stream) == expected).all()
    # (a buffer allocated meanwhile: the allocations change, the workers' tables too)
    other = dev.allocate(16, stream=stream)
    made.clear()
    launch(stream, config, count_runs, out, NONE)
    stream.sync()
    assert made == [config.grid]
    made.clear()
    # (a trap: the next launch sets up again, and runs right)
    launch(stream, config, count_runs, out, np.uint32(5))
    with pytest.raises(KernelTrapError):
        stream.sync()
    out.fill(0, 4, stream=stream)
    stream.sync()       # (an idle stream: the launch is begun early)
    made.clear()
    launch(stream, config, count_runs, out, NONE)
    stream.sync()
    assert made == [config.grid]
    assert (_read(out, stream) == BLOCK).all()
    other.close()


def test_an_internal_error_finishing_an_early_launch_names_the_kernel(
        dev, count_runs, workers, monkeypatch):
    workers(4)
    stream = dev.create_stream()
    out = _zeros(dev, stream)
    launch(stream, LaunchConfig(grid=BLOCKS, block=BLOCK), count_runs, out, NONE)
    stream.sync()
    calls = _spy(monkeypatch)
    real = early.Grid.finish

    def finish(self, pool, team):
        real(self, pool, team)
        raise RuntimeError("lost")

    monkeypatch.setattr(early.Grid, "finish", finish)
    launch(stream, LaunchConfig(grid=BLOCKS, block=BLOCK), count_runs, out, NONE)
    with pytest.raises(KernelExecutionError, match=r"kernel count_runs \(grid \(4096, 1, 1\).*"
                                                   r"failed: RuntimeError: lost"):
        stream.sync()
    assert calls and calls[-1] is not None
    monkeypatch.setattr(early.Grid, "finish", real)
    launch(stream, LaunchConfig(grid=BLOCKS, block=BLOCK), count_runs, out, NONE)
    assert (_read(out, stream) == 3 * BLOCK).all()


def test_a_small_grid_run_inside_launch_reuses_its_setup_but_never_stale_state(
        dev, count_runs, workers, monkeypatch):
    """A small grid runs inside launch() (early.Starter.run): the same launch again reuses
    the last one's Grid and team; a changed grid, a buffer freed and another allocated,
    or a failure in between set the workers up anew, and each launch computes its own
    result (a launch reaching a freed buffer faults)."""
    workers(4)
    stream = dev.create_stream()
    small, smaller = LaunchConfig(grid=64, block=BLOCK), LaunchConfig(grid=24, block=BLOCK)
    out = _zeros(dev, stream)
    launch(stream, small, count_runs, out, NONE)
    stream.sync()       # (compiled at its first launch, which is queued as before)
    made = _spy_grids(monkeypatch)
    runs, real_run = [], early.Starter.run

    def run(self, grid, *args):
        runs.append(grid)
        return real_run(self, grid, *args)

    monkeypatch.setattr(early.Starter, "run", run)
    expected = np.zeros(BLOCKS, np.uint32)
    expected[:64] = BLOCK
    for config, new in ((small, None), (small, False), (smaller, True), (smaller, False),
                        (small, True)):
        made.clear()
        launch(stream, config, count_runs, out, NONE)
        stream.sync()
        expected[:config.grid[0]] += BLOCK
        if new is not None:
            assert made == ([config.grid] if new else []), (config, new)
    assert runs == [small.grid] * 2 + [smaller.grid] * 2 + [small.grid]
    assert (_read(out, stream) == expected).all()
    # (the buffer freed and a larger one allocated, maybe where it was: the allocations'
    # ranges changed, the workers are set up anew, the result is the new buffer's alone)
    out.close()
    out = dev.allocate(BLOCKS * 4 + 256, stream=stream)
    out.fill(0, 4, stream=stream)
    stream.sync()
    made.clear()
    launch(stream, small, count_runs, out, NONE)
    stream.sync()
    assert made == [small.grid]
    expected[:] = 0
    expected[:64] = BLOCK
    assert (_read(out, stream) == expected).all()
    # (a trap, then the same launch: set up anew, and right)
    launch(stream, small, count_runs, out, np.uint32(7))
    with pytest.raises(KernelTrapError, match=r"block \(7, 0, 0\)"):
        stream.sync()
    out.fill(0, 4, stream=stream)
    stream.sync()
    made.clear()
    launch(stream, small, count_runs, out, NONE)
    stream.sync()
    assert made == [small.grid]
    assert (_read(out, stream) == expected).all()
    # (a freed buffer's address: the launch faults, as before, and names a thread)
    freed = dev.allocate(BLOCKS * 4, stream=stream)
    address = freed.handle
    freed.close()
    launch(stream, small, count_runs, np.uint64(address), NONE)
    with pytest.raises(IllegalAddressError, match="thread"):
        stream.sync()


def test_a_reopened_launch_follows_the_workers_the_schedule_and_launches_between(
        dev, count_runs, workers, monkeypatch):
    """A launch like the last one begun early, which succeeded, reopens it (Starter's
    `ready`: no _begin, no new Grid); another worker count or schedule, or a launch of the
    kernel run whole in between (a small grid), set the workers up anew, and every launch
    counts each block's threads once."""
    workers(4)
    stream = dev.create_stream()
    out = _zeros(dev, stream)
    config, small = LaunchConfig(grid=BLOCKS, block=BLOCK), LaunchConfig(grid=64, block=BLOCK)
    launch(stream, config, count_runs, out, NONE)
    stream.sync()       # (compiled at its first launch, which is queued as before)
    launch(stream, config, count_runs, out, NONE)
    stream.sync()
    made, begun, real = _spy_grids(monkeypatch), [], early.Starter._begin

    def begin(self, grid, *args):
        begun.append(grid)
        return real(self, grid, *args)

    monkeypatch.setattr(early.Starter, "_begin", begin)
    expected = np.full(BLOCKS, 2 * BLOCK, np.uint32)
    steps = ((lambda: None, False), (lambda: workers(3), True), (lambda: None, False),
             (lambda: cpu_executor.set_schedule("chunks"), True), (lambda: None, False),
             (lambda: cpu_executor.set_schedule("guided"), True))
    try:
        for change, new in steps:
            change()
            made.clear()
            begun.clear()
            launch(stream, config, count_runs, out, NONE)
            stream.sync()
            expected += BLOCK
            assert (begun, made) == (([config.grid], [config.grid]) if new else ([], [])), new
        # (a small grid run whole in between, through _begin: the next sets up anew)
        launch(stream, small, count_runs, out, NONE)
        stream.sync()
        expected[:64] += BLOCK
        made.clear()
        begun.clear()
        launch(stream, config, count_runs, out, NONE)
        stream.sync()
        expected += BLOCK
        assert begun == made == [config.grid]
    finally:
        cpu_executor.set_schedule("guided")
    assert (_read(out, stream) == expected).all()
