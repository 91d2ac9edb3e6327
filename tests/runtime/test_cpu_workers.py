"""The CPU device's workers: a launch's blocks run at the same time on set_workers() native
threads (runtime/backends/cpu/pool.py), each block on one worker (%smid), with the same
results as on one worker, failures reported as on one, launches from two streams at once
on threads of their own, and idle workers that watch for the next launch a while, then park
and wake when one comes."""

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.errors import KernelTimeoutError, KernelTrapError
from ptxport.runtime.backends.cpu import executor as cpu_executor
from ptxport.runtime.backends.cpu import pool as cpu_pool

KERNELS = Path(__file__).resolve().parents[1] / "kernels"

HEADER = """
.version 8.0
.target sm_80
.address_size 64
"""

# gather(arrived, smids, n): each block counts itself in *arrived, waits until n blocks have
# (so it ends only if n blocks run at once), then stores its %smid in smids[%ctaid.x].
# meet(mine, theirs, n): the same, counting in *mine and waiting for *theirs to reach n.
# gather_trap(arrived, n, bad): as gather, then block `bad` traps (on whichever worker
# took it: every worker has one block).
# count_runs(out): each block k adds 1 to out[k].
# trap_at(out, bad): block `bad` traps, every other block k stores k + 1 in out[k].
PTX = HEADER + """
.visible .entry gather(.param .u64 arrived, .param .u64 smids, .param .u32 n)
{
  .reg .pred %p<2>; .reg .b32 %r<6>; .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [arrived];
  ld.param.u64 %rd2, [smids];
  ld.param.u32 %r1, [n];
  atom.global.add.u32 %r2, [%rd1], 1;
$L_wait:
  atom.global.add.u32 %r3, [%rd1], 0;
  setp.lt.u32 %p1, %r3, %r1;
  @%p1 bra $L_wait;
  mov.u32 %r4, %smid;
  mov.u32 %r5, %ctaid.x;
  mul.wide.u32 %rd3, %r5, 4;
  add.s64 %rd4, %rd2, %rd3;
  st.global.u32 [%rd4], %r4;
  ret;
}

.visible .entry gather_trap(.param .u64 arrived, .param .u32 n, .param .u32 bad)
{
  .reg .pred %p<3>; .reg .b32 %r<6>; .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [arrived];
  ld.param.u32 %r1, [n];
  ld.param.u32 %r4, [bad];
  atom.global.add.u32 %r2, [%rd1], 1;
$L_wait:
  atom.global.add.u32 %r3, [%rd1], 0;
  setp.lt.u32 %p1, %r3, %r1;
  @%p1 bra $L_wait;
  mov.u32 %r5, %ctaid.x;
  setp.eq.u32 %p2, %r5, %r4;
  @%p2 trap;
  ret;
}

.visible .entry meet(.param .u64 mine, .param .u64 theirs, .param .u32 n)
{
  .reg .pred %p<2>; .reg .b32 %r<4>; .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [mine];
  ld.param.u64 %rd2, [theirs];
  ld.param.u32 %r1, [n];
  atom.global.add.u32 %r2, [%rd1], 1;
$L_wait:
  atom.global.add.u32 %r3, [%rd2], 0;
  setp.lt.u32 %p1, %r3, %r1;
  @%p1 bra $L_wait;
  ret;
}

.visible .entry count_runs(.param .u64 out)
{
  .reg .b32 %r<3>; .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %ctaid.x;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  atom.global.add.u32 %r2, [%rd3], 1;
  ret;
}

.visible .entry trap_at(.param .u64 out, .param .u32 bad)
{
  .reg .pred %p<2>; .reg .b32 %r<4>; .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [bad];
  mov.u32 %r2, %ctaid.x;
  setp.eq.u32 %p1, %r2, %r1;
  @%p1 trap;
  add.u32 %r3, %r2, 1;
  mul.wide.u32 %rd2, %r2, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r3;
  ret;
}

.visible .entry handoff(.param .u64 flag, .param .u64 out, .param .u32 fail)
{
  .reg .pred %p<5>; .reg .b32 %r<6>; .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [flag];
  ld.param.u64 %rd2, [out];
  ld.param.u32 %r5, [fail];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %tid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra $L_consumer;
  setp.ge.u32 %p2, %r2, 32;
  @%p2 bra $L_done;
  bar.sync 1, 32;
  setp.ne.u32 %p3, %r5, 0;
  @%p3 trap;
  setp.ne.u32 %p2, %r2, 0;
  @%p2 bra $L_done;
  st.volatile.global.u32 [%rd1], 1;
  bra.uni $L_done;
$L_consumer:
  setp.ne.u32 %p2, %r2, 0;
  @%p2 bra $L_done;
$L_wait:
  ld.volatile.global.u32 %r3, [%rd1];
  setp.eq.u32 %p4, %r3, 0;
  @%p4 bra $L_wait;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd2, %rd3;
  st.global.u32 [%rd4], 1;
$L_done:
  ret;
}
"""


@pytest.fixture
def workers():
    """set_workers(n) for the test, the default again after it."""
    yield cpu_executor.set_workers
    cpu_executor.set_workers(None)


@pytest.fixture(params=cpu_executor.SCHEDULES)
def schedule(request):
    """Each of set_schedule's ways to share blocks for the test, the default again after."""
    default = cpu_executor._SCHEDULE[0]
    cpu_executor.set_schedule(request.param)
    yield request.param
    cpu_executor.set_schedule(default)


@pytest.fixture(scope="module")
def dev():
    device = Device("cpu")
    device.set_current()
    return device


@pytest.fixture(scope="module")
def kernels(dev):
    return Program(PTX, code_type="ptx").compile("native")


def _zeros(dev, stream, count: int, dtype=np.uint32):
    buffer = dev.allocate(count * np.dtype(dtype).itemsize, stream=stream)
    buffer.fill(0, 4, stream=stream)
    return buffer


def _read(buffer, stream, count: int, dtype=np.uint32) -> np.ndarray:
    out = np.empty(count, dtype)
    buffer.copy_to(out, stream=stream)
    stream.sync()
    return out


@pytest.mark.parametrize("count", [2, 4])
def test_blocks_run_at_the_same_time_one_per_worker(dev, kernels, workers, count):
    workers(count)
    stream = dev.create_stream()
    arrived, smids = _zeros(dev, stream, 1), _zeros(dev, stream, count)
    # (each block waits for all: it ends only if `count` workers run blocks at once)
    launch(stream, LaunchConfig(grid=count, block=1, timeout=60), kernels.get_kernel("gather"),
           arrived, smids, np.uint32(count))
    stream.sync()
    assert sorted(_read(smids, stream, count)) == list(range(count))


def test_one_worker_runs_blocks_one_after_another(dev, kernels, workers):
    # (what makes the test above able to fail: without parallel workers, gather never ends)
    workers(1)
    stream = dev.create_stream()
    arrived, smids = _zeros(dev, stream, 1), _zeros(dev, stream, 2)
    launch(stream, LaunchConfig(grid=2, block=1, timeout=0.3), kernels.get_kernel("gather"),
           arrived, smids, np.uint32(2))
    with pytest.raises(KernelTimeoutError):
        stream.sync()


def test_launches_from_two_streams_run_at_the_same_time(dev, kernels, workers):
    workers(2)
    first, second = dev.create_stream(), dev.create_stream()
    a, b = _zeros(dev, first, 1), _zeros(dev, first, 1)
    first.sync()
    meet = kernels.get_kernel("meet")
    # (each waits for the other's blocks: both grids must run at once, each on 2 workers)
    launch(first, LaunchConfig(grid=2, block=1, timeout=60), meet, a, b, np.uint32(2))
    launch(second, LaunchConfig(grid=2, block=1, timeout=60), meet, b, a, np.uint32(2))
    first.sync()
    second.sync()
    assert _read(a, first, 1)[0] == 2 and _read(b, first, 1)[0] == 2


def test_a_trap_on_one_worker_fails_the_launch_and_the_next_runs(dev, kernels, workers,
                                                                  schedule):
    workers(4)
    stream = dev.create_stream()
    blocks = 256
    out = _zeros(dev, stream, blocks)
    trap_at = kernels.get_kernel("trap_at")
    launch(stream, LaunchConfig(grid=blocks, block=32), trap_at, out, np.uint32(77))
    with pytest.raises(KernelTrapError, match=r"block \(77, 0, 0\)"):
        stream.sync()
    launch(stream, LaunchConfig(grid=blocks, block=32), trap_at, out, np.uint32(blocks))
    stream.sync()
    assert (_read(out, stream, blocks) == np.arange(1, blocks + 1)).all()


@pytest.mark.parametrize("count", [2, 4])
def test_a_block_finished_in_python_does_not_hold_up_blocks_waiting_for_it(
        dev, kernels, workers, schedule, count):
    # Block 0 waits at a barrier for one warp of its two (bar.sync 1, 32): the general
    # resolver, in Python, completes it; then it sets the flag every other block spins on
    # (as cub's decoupled look-back waits on earlier tiles). Its worker must finish it at
    # once: a block left until the others finish would hang the grid.
    workers(count)
    stream = dev.create_stream()
    blocks = 64 * count
    flag, out = _zeros(dev, stream, 1), _zeros(dev, stream, blocks)
    handoff = kernels.get_kernel("handoff")
    launch(stream, LaunchConfig(grid=blocks, block=64, timeout=60), handoff, flag, out,
           np.uint32(0))
    stream.sync()
    assert (_read(out, stream, blocks)[1:] == 1).all()
    # a trap in that block fails the launch, and the blocks that wait for it end too
    flag, out = _zeros(dev, stream, 1), _zeros(dev, stream, blocks)
    launch(stream, LaunchConfig(grid=blocks, block=64, timeout=60), handoff, flag, out,
           np.uint32(1))
    with pytest.raises(KernelTrapError, match=r"block \(0, 0, 0\)"):
        stream.sync()
    launch(stream, LaunchConfig(grid=blocks, block=64, timeout=60), handoff, flag, out,
           np.uint32(0))
    stream.sync()
    assert (_read(out, stream, blocks)[1:] == 1).all()


def _run_corpus(dev, source: str, name: str, grid: int, block: int, args):
    """Launch tests/kernels/<source>.cu's `name` with `args` (arrays go as copies in device
    buffers); the arrays' contents after, in order."""
    kernel = Program((KERNELS / f"{source}.cu").read_text(),
                     code_type="c++").compile("native").get_kernel(name)
    stream = dev.create_stream()
    arrays = [a for a in args if isinstance(a, np.ndarray) and a.ndim == 1]
    buffers = {}
    for array in arrays:
        buffers[id(array)] = dev.allocate(array.nbytes, stream=stream)
        buffers[id(array)].copy_from(array, stream=stream)
    launch(stream, LaunchConfig(grid=grid, block=block), kernel,
           *(buffers.get(id(a), a) for a in args))
    results = [np.empty_like(array) for array in arrays]
    for array, result in zip(arrays, results, strict=True):
        buffers[id(array)].copy_to(result, stream=stream)
    stream.sync()
    return results


@pytest.mark.parametrize("count", [1, 3, 8])
def test_results_are_the_same_on_any_number_of_workers(dev, workers, schedule, count):
    workers(count)
    rng = np.random.default_rng(1)
    n = 1 << 18
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    # a kernel without waits (every block in one native call per chunk) ...
    _, got = _run_corpus(dev, "saxpy", "saxpy", 512, 256, [np.float32(2.5), x, y, np.int32(n)])
    np.testing.assert_allclose(got, np.float32(2.5) * x + y, rtol=1e-6)
    # ... and one with barriers (blocks in rounds, the waits completed natively)
    values = rng.integers(0, 10, n, dtype=np.int32)
    _, total = _run_corpus(dev, "reduce_shared", "reduce_sum_i32", 256, 256,
                           [values, np.zeros(1, np.int32), np.int32(n)])
    assert int(total[0]) == int(values.sum())


def test_a_forked_child_runs_launches_on_workers_of_its_own(tmp_path):
    # (the child has none of its parent's pool threads: it must not wait for them)
    script = tmp_path / "fork.py"
    script.write_text(f"""
import os
import numpy as np
from ptxport import Device, LaunchConfig, Program, launch
from ptxport.runtime.backends.cpu import executor as cpu_executor
cpu_executor.set_workers(2)
dev = Device("cpu")
stream = dev.create_stream()
gather = Program({PTX!r}, code_type="ptx").compile("native").get_kernel("gather")

def run():
    arrived, smids = dev.allocate(4, stream=stream), dev.allocate(8, stream=stream)
    arrived.fill(0, 4, stream=stream)
    launch(stream, LaunchConfig(grid=2, block=1, timeout=30), gather, arrived, smids,
           np.uint32(2))
    out = np.empty(2, np.uint32)
    smids.copy_to(out, stream=stream)
    stream.sync()
    return sorted(out.tolist())

assert run() == [0, 1]
child = os.fork()
if child == 0:
    os._exit(0 if run() == [0, 1] else 1)
_, status = os.waitpid(child, 0)
print("child", os.waitstatus_to_exitcode(status), "parent", run())
""")
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, timeout=120)
    assert "child 0 parent [0, 1]" in done.stdout, done.stderr


def test_many_launches_of_every_size_on_many_workers(dev, kernels, workers):
    # (grids that end before the pool's threads wake, and grids they join: the threads that
    # come late, and those that take the job, must leave each launch finished and the pool
    # ready for the next)
    workers(8)
    stream = dev.create_stream()
    out = _zeros(dev, stream, 64)
    trap_at = kernels.get_kernel("trap_at")
    for launch_number in range(400):
        blocks = 1 + launch_number % 64
        launch(stream, LaunchConfig(grid=blocks, block=32), trap_at, out, np.uint32(1 << 30))
        if launch_number % 50 == 49:
            out.fill(0, 4, stream=stream)
            launch(stream, LaunchConfig(grid=blocks, block=32), trap_at, out,
                   np.uint32(1 << 30))
            got = _read(out, stream, 64)
            assert (got[:blocks] == np.arange(1, blocks + 1)).all() and not got[blocks:].any()
    stream.sync()


@pytest.mark.parametrize("count", [3, 16])
def test_each_block_runs_once_whatever_the_schedule(dev, kernels, workers, schedule, count):
    # (guided chunks shrink as the grid runs out, down to one block: every size of grid, up
    # to more blocks than the chunks' divisor and least size, must be claimed exactly once)
    workers(count)
    stream = dev.create_stream()
    sizes = [*range(1, 70), 257, 1000, 4099, 8195]
    out = _zeros(dev, stream, max(sizes))
    count_runs = kernels.get_kernel("count_runs")
    for blocks in sizes:
        out.fill(0, 4, stream=stream)
        launch(stream, LaunchConfig(grid=blocks, block=1, timeout=60), count_runs, out)
        got = _read(out, stream, max(sizes))
        assert (got[:blocks] == 1).all() and not got[blocks:].any(), blocks


def test_an_unknown_schedule_is_refused():
    with pytest.raises(ValueError, match="unknown schedule 'static'"):
        cpu_executor.set_schedule("static")


@pytest.fixture
def spin():
    """pool.set_spin(seconds, cap) for the test, the default (adaptive) again after it."""
    yield cpu_pool.set_spin
    cpu_pool.set_spin()


def _cpu_while_idle(seconds: float) -> float:
    """The process's CPU seconds while its Python thread sleeps for `seconds`."""
    start = time.process_time()
    time.sleep(seconds)
    return time.process_time() - start


def test_idle_workers_park_after_the_spin_time(dev, kernels, workers, spin):
    # (workers that never parked would keep their cores busy between launches, slowing
    # anything else in the process, such as numpy's or torch's own threads)
    workers(2)
    stream = dev.create_stream()
    out = _zeros(dev, stream, 4)
    count_runs = kernels.get_kernel("count_runs")
    spin(60)
    launch(stream, LaunchConfig(grid=4, block=1), count_runs, out)
    stream.sync()
    spinning = _cpu_while_idle(0.3)
    spin(0.001)
    launch(stream, LaunchConfig(grid=4, block=1), count_runs, out)
    stream.sync()
    time.sleep(0.05)
    parked = _cpu_while_idle(0.3)
    assert parked < 0.03 and spinning > 4 * parked, (spinning, parked)
    assert (_read(out, stream, 4) == 2).all()


@pytest.mark.parametrize("seconds", [0, 0.002])
def test_parked_workers_wake_for_the_next_launch(dev, kernels, workers, spin, seconds):
    # (after the spin time every worker is parked on its condition: a launch whose blocks
    # all wait for each other ends only if it wakes every one of them)
    workers(4)
    spin(seconds)
    stream = dev.create_stream()
    gather = kernels.get_kernel("gather")
    for _ in range(3):
        time.sleep(seconds + 0.02)
        arrived, smids = _zeros(dev, stream, 1), _zeros(dev, stream, 4)
        launch(stream, LaunchConfig(grid=4, block=1, timeout=60), gather, arrived, smids,
               np.uint32(4))
        assert sorted(_read(smids, stream, 4)) == [0, 1, 2, 3]


@pytest.mark.parametrize("spin_s", [0, 60])
def test_every_parked_worker_wakes_also_when_the_pool_has_more(dev, kernels, workers, spin,
                                                               spin_s):
    # (the launching thread wakes the parked threads the launch has worker numbers for:
    # the pool has 5 threads, the second launch needs 3; with a long spin the first
    # launch's threads are awake for the next, with none every launch wakes them)
    spin(spin_s)
    stream = dev.create_stream()
    gather = kernels.get_kernel("gather")
    for count in (6, 3, 6, 2):
        workers(count)
        time.sleep(0.02)
        arrived, smids = _zeros(dev, stream, 1), _zeros(dev, stream, count)
        launch(stream, LaunchConfig(grid=count, block=1, timeout=60), gather, arrived, smids,
               np.uint32(count))
        assert sorted(_read(smids, stream, count)) == list(range(count))


@pytest.mark.parametrize("bad", [0, 3, 5])
def test_a_trap_on_a_woken_worker_names_its_block(dev, kernels, workers, spin, bad):
    # (6 blocks that wait for each other: each on a worker of its own, 5 of them woken
    # from parking; whichever has block `bad` traps, and the launch names that block)
    spin(0)
    workers(6)
    stream = dev.create_stream()
    gather_trap = kernels.get_kernel("gather_trap")
    for trap in (bad, 6):
        time.sleep(0.02)
        arrived = _zeros(dev, stream, 1)
        launch(stream, LaunchConfig(grid=6, block=1, timeout=60), gather_trap, arrived,
               np.uint32(6), np.uint32(trap))
        if trap < 6:
            with pytest.raises(KernelTrapError, match=rf"block \({bad}, 0, 0\)"):
                stream.sync()
        assert _read(arrived, stream, 1)[0] == 6


def test_without_futexes_parked_workers_poll_and_wake(tmp_path):
    # (where the system has no futex, as macOS, parked pool threads poll their flag: in a
    # process whose pool is built so, blocks that all wait for each other still meet after
    # the workers parked)
    script = tmp_path / "poll.py"
    script.write_text(f"""
import time
import numpy as np
from ptxport import Device, LaunchConfig, Program, launch
from ptxport.runtime.backends.cpu import executor as cpu_executor
from ptxport.runtime.backends.cpu import pool as cpu_pool
cpu_pool._futex_number = lambda: None
cpu_pool.set_spin(0)
cpu_executor.set_workers(4)
dev = Device("cpu")
stream = dev.create_stream()
gather = Program({PTX!r}, code_type="ptx").compile("native").get_kernel("gather")
for _ in range(3):
    time.sleep(0.02)
    arrived, smids = dev.allocate(4, stream=stream), dev.allocate(16, stream=stream)
    arrived.fill(0, 4, stream=stream)
    launch(stream, LaunchConfig(grid=4, block=1, timeout=30), gather, arrived, smids,
           np.uint32(4))
    out = np.empty(4, np.uint32)
    smids.copy_to(out, stream=stream)
    stream.sync()
    print(sorted(out.tolist()))
""")
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.stdout.split("\n")[:3] == ["[0, 1, 2, 3]"] * 3, done.stderr


def test_a_negative_spin_time_is_refused():
    with pytest.raises(ValueError, match="at least 0 seconds"):
        cpu_pool.set_spin(-1)
    with pytest.raises(ValueError, match="cap must be at least 0 seconds"):
        cpu_pool.set_spin(None, cap=-1)


def _gathers(dev, stream, kernels, times: int, pause: float):
    """`times` launches of gather on 2 blocks (both workers take part), `pause` seconds
    apart; the pool they ran on (a launch gives its pool back to the end of the free list)."""
    gather = kernels.get_kernel("gather")
    for _ in range(times):
        time.sleep(pause)
        arrived, smids = _zeros(dev, stream, 1), _zeros(dev, stream, 2)
        launch(stream, LaunchConfig(grid=2, block=1, timeout=60), gather, arrived, smids,
               np.uint32(2))
        assert sorted(_read(smids, stream, 2)) == [0, 1]
    return cpu_pool._FREE[-1]


def _adaptive(gaps: tuple[float, float], cap: float) -> float:
    """The adaptive spin for these last two gaps (pool.set_spin)."""
    floor = min(cpu_pool.SPIN_FLOOR_NS / 1e9, cap)
    return min(max(2 * max(gaps), floor), cap) if max(gaps) <= cap else floor


def test_the_spin_adapts_to_the_gaps_between_launches(dev, kernels, workers, spin):
    # (asserted on the policy's state, not on timings: the pauses only bound the gaps from
    # below, which a loaded machine makes longer, never shorter)
    workers(2)
    stream = dev.create_stream()
    spin(None, cap=30.0)            # launches 50 ms apart count as frequent
    pool = _gathers(dev, stream, kernels, 3, 0.05)
    state = pool.spin_state()
    assert min(state["gaps"]) >= 0.05 and state["spin"] >= 0.1, state
    assert state["spin"] == pytest.approx(_adaptive(state["gaps"], 30.0), abs=1e-8), state
    # (its helper thread, worker 1, is still watching for the next launch, not parked)
    assert int(pool._threads[0][cpu_pool._PARKED]) == 0, state
    spin(None, cap=0.002)           # the same gaps are now rare launches: the floor
    pool = _gathers(dev, stream, kernels, 2, 0.05)
    state = pool.spin_state()
    assert min(state["gaps"]) >= 0.05 and state["spin"] == cpu_pool.SPIN_FLOOR_NS / 1e9, state
    time.sleep(0.05)                # (0.1 ms of spin, then it parks: the core is given back)
    assert int(pool._threads[0][cpu_pool._PARKED]) == 1, state
    assert "adaptive" in cpu_pool.spin_policy() and "2 ms" in cpu_pool.spin_policy()


@pytest.mark.parametrize("seconds", [0, 0.0005])
def test_a_fixed_spin_overrides_the_adaptive_one(dev, kernels, workers, spin, seconds):
    workers(2)
    stream = dev.create_stream()
    spin(seconds)
    pool = _gathers(dev, stream, kernels, 3, 0.001)
    assert pool.spin_state()["spin"] == seconds
    assert cpu_pool.spin_policy() == f"spin fixed {seconds * 1e3:g} ms"


# two_sites(out, arrived, never): as gather, each of 2 blocks waits for the other (so both
# workers take part), then stores 1 in out[2 * block]; with `never`, 2 in the word after.
SITES_PTX = HEADER + """
.visible .entry two_sites(.param .u64 out, .param .u64 arrived, .param .u32 never)
{
  .reg .pred %p<3>; .reg .b32 %r<5>; .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [out];
  ld.param.u64 %rd4, [arrived];
  ld.param.u32 %r1, [never];
  atom.global.add.u32 %r3, [%rd4], 1;
$L_wait:
  atom.global.add.u32 %r4, [%rd4], 0;
  setp.lt.u32 %p2, %r4, 2;
  @%p2 bra $L_wait;
  mov.u32 %r2, %ctaid.x;
  mul.wide.u32 %rd2, %r2, 8;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], 1;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 st.global.u32 [%rd3+4], 2;
  ret;
}
"""


def test_a_checked_launch_starts_every_workers_site_cache_afresh(dev, workers):
    # (the workers zero their own access sites' cache when their share starts; a site the
    # next launch never reaches keeps what it had only if they did not)
    workers(2)
    stream = dev.create_stream()
    out, arrived = _zeros(dev, stream, 4), _zeros(dev, stream, 1)
    kernel = Program(SITES_PTX, code_type="ptx").compile("native").get_kernel("two_sites")
    # (no timeout: a launch with one has a stop word of its own, and its workers are set
    # up afresh in Python)
    config = LaunchConfig(grid=2, block=1)
    launch(stream, config, kernel, out, arrived, np.uint32(0))
    stream.sync()
    binary = kernel._binary(dev)
    teams = [team for shape in [binary, *getattr(binary, "_shapes", {}).values()]
             for team in shape.__dict__.get("_teams", {}).values()]
    caches = [w.site_cache for team in teams for w in team.workers]
    assert len(caches) == 2 and all(w.site_cache_bytes for team in teams for w in team.workers)
    for cache in caches:
        cache[:] = 0xDEAD
    arrived.fill(0, 4, stream=stream)
    launch(stream, config, kernel, out, arrived, np.uint32(0))
    stream.sync()
    assert not any((cache == 0xDEAD).any() for cache in caches)
    assert (_read(out, stream, 4) == [1, 0, 1, 0]).all()


def test_traced_launches_say_when_each_worker_ran_its_share(dev, kernels, workers):
    # (benchmarks/cpu_scaling.py reports from these how late the last worker starts)
    workers(4)
    stream = dev.create_stream()
    gather = kernels.get_kernel("gather")
    cpu_pool.trace_shares(True)
    try:
        arrived, smids = _zeros(dev, stream, 1), _zeros(dev, stream, 4)
        launch(stream, LaunchConfig(grid=4, block=1, timeout=60), gather, arrived, smids,
               np.uint32(4))         # (every block waits for the other three: 4 shares)
        stream.sync()
        record = cpu_pool.last_shares()
    finally:
        cpu_pool.trace_shares(False)
    assert record is not None and len(record["shares"]) == 4
    for begin, end in record["shares"]:
        assert 0 <= begin <= end <= record["end"]
    assert 0 <= record["own"] <= record["end"]
    assert cpu_pool.last_shares() is None


def test_a_traced_launchs_record_outlives_the_next_launch_of_its_job(dev, kernels, workers):
    # (a traced run keeps its job, and last_shares() copies the job's trace words: the next
    # launch of the same kernel, begun on the same job before anyone asked, copies them
    # first, so that the record asked for while it runs is still the ended launch's)
    workers(2)
    stream = dev.create_stream()
    out = _zeros(dev, stream, 1024)
    count_runs = kernels.get_kernel("count_runs")
    config = LaunchConfig(grid=1024, block=64)      # (too many threads to run at once)
    cpu_pool.trace_shares(True)
    try:
        launch(stream, config, count_runs, out)
        stream.sync()
        between = time.monotonic_ns()
        launch(stream, config, count_runs, out)
        first = cpu_pool.last_shares()
        stream.sync()
        second = cpu_pool.last_shares()
    finally:
        cpu_pool.trace_shares(False)
    assert (_read(out, stream, 1024) == 2 * 64).all()
    assert first["opened_ns"] < between < second["opened_ns"]
    for record in (first, second):
        assert 0 <= record["own"] <= record["end"]
        assert all(0 <= begin <= end <= record["end"]
                   for begin, end in filter(None, record["shares"]))


def test_a_grid_smaller_than_the_pool_runs_on_as_many_workers_as_blocks(dev, kernels, workers):
    # (benchmarks/cpu_workers.py counts the shares taken: a grid of 2 blocks on 4 workers
    # has 2 shares, both run at once: gather ends only then)
    workers(4)
    stream = dev.create_stream()
    gather = kernels.get_kernel("gather")
    cpu_pool.trace_shares(True)
    try:
        arrived, smids = _zeros(dev, stream, 1), _zeros(dev, stream, 2)
        launch(stream, LaunchConfig(grid=2, block=1, timeout=60), gather, arrived, smids,
               np.uint32(2))
        stream.sync()
        record = cpu_pool.last_shares()
    finally:
        cpu_pool.trace_shares(False)
    assert record is not None and len(record["shares"]) == 2
    assert all(share is not None for share in record["shares"])
    assert sorted(_read(smids, stream, 2)) == [0, 1]
