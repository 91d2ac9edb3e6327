"""Streams and events: asynchrony, order within a stream, overlap and waits across streams,
timing, and failures raised at the next sync."""

import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from ptxport import Device, Event, LaunchConfig, Program, launch
from ptxport.errors import IllegalAddressError, InvalidValueError, KernelExecutionError
from ptxport.runtime import stream as stream_module

ONE = LaunchConfig(grid=1, block=1)


@pytest.fixture
def dev():
    return Device("cpu")


@pytest.fixture
def log(fake_kernels):
    """Kernels of MISC_PTX: mark(value, delay_ms) appends value to the returned list after
    sleeping; fault(kind) raises IllegalAddressError (kind 0) or ValueError (kind 1)."""
    entries = []
    lock = threading.Lock()

    def mark(grid, block, shmem, value, delay_ms):
        time.sleep(delay_ms / 1000)
        with lock:
            entries.append(int(value))

    def fault(grid, block, shmem, kind):
        if kind == 0:
            raise IllegalAddressError("fault: illegal address 0x10 (test)")
        raise ValueError("a bug in a kernel binary")

    fake_kernels["mark"] = mark
    fake_kernels["fault"] = fault
    return entries


@pytest.fixture
def kernels(misc_ptx):
    code = Program(misc_ptx, code_type="ptx").compile("native")
    return code.get_kernel("mark"), code.get_kernel("fault")


def _mark(stream, kernels, value, delay_ms=0):
    launch(stream, ONE, kernels[0], np.uint32(value), np.uint32(delay_ms))


def test_launch_returns_at_once_and_work_runs_in_order(dev, log, kernels):
    stream = dev.create_stream()
    start = time.perf_counter()
    _mark(stream, kernels, 1, delay_ms=300)
    _mark(stream, kernels, 2)
    _mark(stream, kernels, 3)
    event = stream.record()
    assert time.perf_counter() - start < 0.2 and not event.is_done
    stream.sync()
    assert log == [1, 2, 3] and event.is_done


def test_copies_and_launches_share_one_order(dev, fake_kernels, saxpy_ptx):
    saxpy = Program(saxpy_ptx, code_type="ptx").compile("native").get_kernel("saxpy")
    stream = dev.create_stream()
    n = 256
    x_host, y_host = np.arange(n, dtype=np.float32), np.zeros(n, dtype=np.float32)
    x, y = dev.allocate(x_host.nbytes, stream=stream), dev.allocate(y_host.nbytes, stream=stream)
    x.copy_from(x_host, stream=stream)
    y.fill(0, 4, stream=stream)
    for _ in range(5):
        launch(stream, LaunchConfig(grid=1, block=n), saxpy, np.float32(1), x, y, np.int32(n))
    y.copy_to(y_host, stream=stream)
    stream.sync()
    np.testing.assert_array_equal(y_host, 5 * x_host)


def test_streams_overlap_unless_told_to_wait(dev, log, kernels):
    slow, fast = dev.create_stream(), dev.create_stream()
    _mark(slow, kernels, 1, delay_ms=300)
    _mark(fast, kernels, 2)
    fast.sync()
    assert log == [2]                      # the fast stream did not wait for the slow one
    slow.sync()
    assert log == [2, 1]


def test_wait_on_a_stream(dev, log, kernels):
    first, second = dev.create_stream(), dev.create_stream()
    _mark(first, kernels, 1, delay_ms=200)
    second.wait(first)
    _mark(second, kernels, 2)
    second.sync()
    assert log == [1, 2]


def test_wait_on_an_event_takes_its_latest_record(dev, log, kernels):
    first, second = dev.create_stream(), dev.create_stream()
    event = dev.create_event()
    assert event.is_done                   # never recorded: nothing to wait for
    _mark(first, kernels, 1, delay_ms=200)
    first.record(event)
    second.wait(event)
    _mark(first, kernels, 3, delay_ms=200)  # after the point `second` waits for
    _mark(second, kernels, 2)
    second.sync()
    assert log == [1, 2]
    first.sync()
    assert log == [1, 2, 3]


def test_event_timing_in_milliseconds(dev, log, kernels):
    stream = dev.create_stream()
    start = stream.record(options={"enable_timing": True})
    _mark(stream, kernels, 1, delay_ms=100)
    end = dev.create_event({"enable_timing": True})
    stream.record(end)
    end.sync()
    assert 90 <= end - start < 5000
    untimed = stream.record()
    untimed.sync()
    with pytest.raises(InvalidValueError, match="enable_timing"):
        end - untimed
    _mark(stream, kernels, 2, delay_ms=200)
    later = stream.record(options={"enable_timing": True})
    with pytest.raises(InvalidValueError, match="not completed"):
        later - start
    stream.sync()
    assert isinstance(later, Event) and later - start >= 290


def test_failures_are_raised_at_the_next_sync_and_the_stream_recovers(dev, log, kernels):
    stream = dev.create_stream()
    launch(stream, ONE, kernels[1], np.uint32(0))   # returns at once; the failure comes later
    _mark(stream, kernels, 1)                       # skipped: it may need what failed
    event = stream.record()
    with pytest.raises(IllegalAddressError, match="illegal address") as caught:
        stream.sync()
    assert log == []
    if hasattr(caught.value, "__notes__"):
        assert "1 later operation(s) on the same stream were skipped" in caught.value.__notes__[0]
    with pytest.raises(IllegalAddressError):
        event.sync()                                # events report what failed before them
    stream.sync()                                   # reported once: the stream is usable again
    _mark(stream, kernels, 2)
    stream.sync()
    assert log == [2]


def test_unexpected_exceptions_become_kernel_execution_errors(dev, log, kernels):
    stream = dev.create_stream()
    launch(stream, ONE, kernels[1], np.uint32(1))
    with pytest.raises(KernelExecutionError, match="kernel fault failed on cpu:0: ValueError"):
        stream.sync()


def test_a_stream_waiting_on_failed_work_fails_too(dev, log, kernels):
    failing, waiting = dev.create_stream(), dev.create_stream()
    launch(failing, ONE, kernels[1], np.uint32(0))
    waiting.wait(failing)
    _mark(waiting, kernels, 1)
    with pytest.raises(IllegalAddressError):
        waiting.sync()
    with pytest.raises(IllegalAddressError):
        failing.sync()
    assert log == []


def test_device_sync_waits_for_every_stream(dev, log, kernels):
    streams = [dev.create_stream() for _ in range(3)]
    for value, stream in enumerate(streams):
        _mark(stream, kernels, value, delay_ms=100)
    dev.sync()
    assert sorted(log) == [0, 1, 2]


def test_closed_stream_takes_no_more_work(dev, log, kernels):
    stream = dev.create_stream()
    _mark(stream, kernels, 1, delay_ms=50)
    stream.close()                                 # queued work still runs
    with pytest.raises(InvalidValueError, match="closed"):
        _mark(stream, kernels, 2)
    dev.sync()
    assert log == [1]


def test_record_and_wait_check_their_arguments(dev):
    stream = dev.create_stream()
    with pytest.raises(InvalidValueError, match="takes an Event or a Stream"):
        stream.wait(3)
    with pytest.raises(InvalidValueError, match="takes an Event"):
        stream.record("now")


# A launch queued on an idle stream does not wake the stream's thread (stream.py's
# _Worker.submit, `defer`): a sync takes it on the syncing thread; otherwise the thread
# finds it at its next look at the queue (every _TICK seconds while work keeps coming),
# or a submission wakes it once it sleeps.

@pytest.fixture
def ran_on(fake_kernels, kernels):
    """The threads the `mark` kernel ran on, and a threading.Event set when it ran."""
    threads, ran = [], threading.Event()

    def mark(grid, block, shmem, value, delay_ms):
        threads.append(threading.current_thread())
        ran.set()

    fake_kernels["mark"] = mark
    return threads, ran


def test_a_launch_followed_by_a_sync_runs_on_the_syncing_thread(dev, kernels, ran_on,
                                                                 monkeypatch):
    monkeypatch.setattr(stream_module, "_TICK", 60.0)   # the stream's thread never looks
    stream = dev.create_stream()
    _mark(stream, kernels, 1)
    time.sleep(0.05)                 # (a thread woken by the launch would have taken it)
    stream.sync()
    assert ran_on[0] == [threading.current_thread()]


@pytest.mark.parametrize("linger", [0, 25], ids=["asleep", "looking"])
def test_a_launch_no_one_syncs_still_runs(dev, kernels, ran_on, monkeypatch, linger):
    monkeypatch.setattr(stream_module, "_LINGER", linger)   # 0: the thread sleeps at once
    stream = dev.create_stream()
    time.sleep(0.01)
    _mark(stream, kernels, 1)
    assert ran_on[1].wait(10), "a queued launch did not run without a sync"
    assert ran_on[0] != [threading.current_thread()]
    stream.sync()


def test_waits_that_do_not_take_work_start_a_deferred_launch(dev, kernels, ran_on,
                                                             monkeypatch):
    monkeypatch.setattr(stream_module, "_TICK", 60.0)
    stream = dev.create_stream()
    start = time.perf_counter()
    _mark(stream, kernels, 1)
    stream.sync(timeout=30)          # waits without taking the work: it wakes the thread
    _mark(stream, kernels, 2)
    stream.record().sync(timeout=30)     # a record behind a launch wakes it too
    assert time.perf_counter() - start < 30 and len(ran_on[0]) == 2
    assert threading.current_thread() not in ran_on[0]


# -- finalizers -------------------------------------------------------------------------------

def _in_a_thread_holding(lock: threading.Lock, drop) -> bool:
    """Whether `drop()` returns (within 20 s) in a thread that holds `lock`: as a garbage
    collection does that starts inside a `with lock` section (a tuple or list made there)
    and finds the last reference to a Buffer or a Stream in garbage, whose finalizer then
    runs in that thread. (A finalizer that waited for the lock hung the thread, and the
    stream's own thread with it; session 12's one hang at exit looked like that.)"""
    def hold() -> None:
        with lock:
            drop()
    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    thread.join(20)
    return not thread.is_alive()


def test_a_buffer_dropped_inside_its_streams_lock_is_freed_later(dev):
    stream = dev.create_stream()
    kept = [dev.allocate(64, stream=stream)]
    address = kept[0].handle
    assert address in dev._backend._live
    assert _in_a_thread_holding(stream._worker._lock, kept.clear)
    stream.sync()       # (the free left for later is queued, and runs)
    assert address not in dev._backend._live


def test_a_stream_dropped_inside_its_lock_still_ends_its_thread(dev):
    streams = [dev.create_stream()]
    worker = streams[0]._worker
    assert _in_a_thread_holding(worker._lock, streams.clear)
    dev.default_stream.sync()   # (the stop left for later)
    worker._thread.join(20)
    assert not worker._thread.is_alive()


def test_the_interpreter_exits_with_buffers_and_busy_streams_left():
    """At exit, weakref.finalize's hook frees the buffers still alive (queued on their
    streams, one of them busy) and stops the streams; the daemon stream threads are not
    waited for: the process ends at once."""
    code = """if True:
        import threading
        from ptxport import Device
        dev = Device("cpu")
        streams = [dev.create_stream() for _ in range(3)]
        buffers = [dev.allocate(64, stream=s) for s in streams for _ in range(4)]
        forever = threading.Event()
        streams[0]._submit(forever.wait, what="work that never ends")
        streams[1].sync()
        print("end of the script", flush=True)
    """
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "end of the script\n"
    assert "Exception" not in done.stderr, done.stderr   # (a finalizer's, at exit)
