"""Hung kernels: sync(timeout=) gives up waiting and names what still runs; a launch's
watchdog (LaunchConfig(timeout=)) stops a CPU launch that runs too long, on every execution
path (warp gangs, thread by thread, with barriers, inside a device function), and the
device is usable afterwards."""

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.errors import InvalidValueError, KernelTimeoutError, LaunchError

HEADER = """
.version 8.0
.target sm_80
.address_size 64
"""

# spin(flag, out): every thread waits until *flag is not 0 (atomicAdd(flag, 0), which warp
# gangs run), then thread 0 of block 0 stores it in *out. With bar.sync in the loop in
# spin_bar; in spin_call, a device function waits (ld.volatile), which only the thread-by-
# thread path runs.
SPIN_PTX = HEADER + """
.visible .entry spin(.param .u64 flag, .param .u64 out)
{
  .reg .pred %p<3>; .reg .b32 %r<4>; .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [flag];
  ld.param.u64 %rd2, [out];
$L_loop:
  atom.global.add.u32 %r1, [%rd1], 0;
  setp.eq.u32 %p1, %r1, 0;
  @%p1 bra $L_loop;
  mov.u32 %r2, %tid.x;
  mov.u32 %r3, %ctaid.x;
  or.b32 %r2, %r2, %r3;
  setp.eq.u32 %p2, %r2, 0;
  @%p2 st.global.u32 [%rd2], %r1;
  ret;
}

.visible .entry spin_bar(.param .u64 flag, .param .u64 out)
{
  .reg .pred %p<3>; .reg .b32 %r<4>; .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [flag];
  ld.param.u64 %rd2, [out];
$L_loop:
  bar.sync 0;
  atom.global.add.u32 %r1, [%rd1], 0;
  setp.eq.u32 %p1, %r1, 0;
  @%p1 bra $L_loop;
  mov.u32 %r2, %tid.x;
  mov.u32 %r3, %ctaid.x;
  or.b32 %r2, %r2, %r3;
  setp.eq.u32 %p2, %r2, 0;
  @%p2 st.global.u32 [%rd2], %r1;
  ret;
}

.func (.param .b32 value) wait_for(.param .b64 at)
{
  .reg .pred %p<2>; .reg .b32 %r<2>; .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [at];
$L_wait:
  ld.volatile.global.u32 %r1, [%rd1];
  setp.eq.u32 %p1, %r1, 0;
  @%p1 bra $L_wait;
  st.param.b32 [value], %r1;
  ret;
}

.visible .entry spin_call(.param .u64 flag, .param .u64 out)
{
  .reg .b32 %r<2>; .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [flag];
  ld.param.u64 %rd2, [out];
  {
  .param .b64 at;
  st.param.b64 [at], %rd1;
  .param .b32 value;
  call.uni (value), wait_for, (at);
  ld.param.b32 %r1, [value];
  }
  st.global.u32 [%rd2], %r1;
  ret;
}
"""

SHORT = 0.3     # seconds: long enough for a launch to start, short enough for a fast test


@pytest.fixture
def dev():
    return Device("cpu")


def _kernels():
    code = Program(SPIN_PTX, code_type="ptx").compile("native")
    return {name: code.get_kernel(name) for name in ("spin", "spin_bar", "spin_call")}


@pytest.fixture
def gang_kernels():
    return _kernels()


@pytest.fixture
def scalar_kernels(cpu_options):
    cpu_options(gang=False)
    return _kernels()


def _words(dev, stream, flag_value):
    flag, out = dev.allocate(4, stream=stream), dev.allocate(4, stream=stream)
    flag.fill(flag_value, 4, stream=stream)
    out.fill(0, 4, stream=stream)
    return flag, out


@pytest.mark.parametrize("name", ["spin", "spin_bar", "spin_call"])
@pytest.mark.parametrize("path", ["gang", "scalar"])
def test_the_watchdog_stops_a_hung_launch_and_the_device_goes_on(dev, name, path, request):
    kernel = request.getfixturevalue(f"{path}_kernels")[name]
    binary = kernel._binary(dev)
    as_gangs = hasattr(binary, "for_block") and binary.for_block((64, 1, 1)).plan.gang
    assert as_gangs == (path == "gang" and name != "spin_call")     # the path meant
    stream = dev.create_stream()
    flag, out = _words(dev, stream, 0)
    start = time.perf_counter()
    launch(stream, LaunchConfig(grid=8, block=64, timeout=SHORT), kernel, flag, out)
    with pytest.raises(KernelTimeoutError, match=f"kernel '{name}'.*was stopped") as caught:
        stream.sync()
    assert time.perf_counter() - start < SHORT + 5
    assert caught.value.stopped and caught.value.kernels == (name,)
    # the same kernel, the same stream: runs to its end once the flag is set
    flag.fill(7, 4, stream=stream)
    launch(stream, LaunchConfig(grid=8, block=64, timeout=60), kernel, flag, out)
    stream.sync()
    assert out.view(np.uint32)[0] == 7


def test_sync_timeout_names_the_running_kernel_and_the_work_goes_on(dev, gang_kernels):
    stream = dev.create_stream()
    flag, out = _words(dev, stream, 0)
    stream.sync()
    launch(stream, LaunchConfig(grid=2, block=32), gang_kernels["spin"], flag, out)
    out.fill(1, 4, stream=stream)
    with pytest.raises(KernelTimeoutError, match=r"kernel spin \(grid \(2, 1, 1\).*running "
                       r"for .*1 later operation") as caught:
        stream.sync(timeout=SHORT)
    assert caught.value.kernels == ("spin",) and not caught.value.stopped
    event = stream.record()
    with pytest.raises(KernelTimeoutError, match="kernel spin"):
        event.sync(timeout=0.05)
    flag.view(np.uint32)[0] = 5     # (the CPU device's memory is the host's)
    stream.sync(timeout=60)
    event.sync(timeout=60)
    assert out.view(np.uint32)[0] == 1 and event.is_done


def test_sync_timeouts_follow_a_wait_to_the_stream_it_waits_for(dev, gang_kernels):
    first, second = dev.create_stream(), dev.create_stream()
    flag, out = _words(dev, first, 0)
    launch(first, LaunchConfig(grid=1, block=32), gang_kernels["spin"], flag, out)
    second.wait(first)
    with pytest.raises(KernelTimeoutError, match="a wait for an event of another stream.*"
                                                 "that waits for kernel spin") as caught:
        second.sync(timeout=SHORT)
    assert caught.value.kernels == ("spin",)
    with pytest.raises(KernelTimeoutError, match="kernel spin"):
        dev.sync(timeout=0.05)
    flag.view(np.uint32)[0] = 1
    second.sync(timeout=60)
    dev.sync(timeout=60)


@pytest.mark.parametrize("bad", [0, -1, float("nan"), "soon"])
def test_bad_launch_timeouts_are_refused(bad):
    with pytest.raises(LaunchError, match="timeout must be a"):
        LaunchConfig(grid=1, block=1, timeout=bad)


@pytest.mark.parametrize("bad", [-1, float("nan"), "soon"])
def test_bad_sync_timeouts_are_refused(dev, bad):
    with pytest.raises(InvalidValueError, match="timeout="):
        dev.create_stream().sync(timeout=bad)
    with pytest.raises(InvalidValueError, match="timeout="):
        dev.create_event().sync(timeout=bad)
    with pytest.raises(InvalidValueError, match="timeout="):
        dev.sync(timeout=bad)


def test_a_device_that_cannot_stop_kernels_refuses_a_watchdog(dev, monkeypatch, gang_kernels):
    monkeypatch.setattr(dev._backend, "stops_launches", False)
    stream = dev.create_stream()
    flag, out = _words(dev, stream, 1)
    with pytest.raises(LaunchError, match="cannot stop a running kernel"):
        launch(stream, LaunchConfig(grid=1, block=32, timeout=1), gang_kernels["spin"], flag,
               out)


def test_the_watchdog_stops_blocks_run_in_python_rounds(dev, scalar_kernels):
    kernel = scalar_kernels["spin_bar"]
    kernel._binary(dev).native_waits = False    # the general resolver, round by round
    stream = dev.create_stream()
    flag, out = _words(dev, stream, 0)
    launch(stream, LaunchConfig(grid=4, block=64, timeout=SHORT), kernel, flag, out)
    with pytest.raises(KernelTimeoutError, match="was stopped"):
        stream.sync()
    flag.fill(3, 4, stream=stream)
    launch(stream, LaunchConfig(grid=4, block=64), kernel, flag, out)
    stream.sync()
    assert out.view(np.uint32)[0] == 3


def test_a_sync_timeout_says_when_the_device_cannot_stop_kernels(dev, monkeypatch,
                                                                  gang_kernels):
    stream = dev.create_stream()
    flag, out = _words(dev, stream, 0)
    launch(stream, LaunchConfig(grid=1, block=32), gang_kernels["spin"], flag, out)
    monkeypatch.setattr(dev._backend, "stops_launches", False)
    with pytest.raises(KernelTimeoutError, match="cannot stop a kernel running on cpu:0"):
        stream.sync(timeout=0.05)
    flag.view(np.uint32)[0] = 1
    stream.sync(timeout=60)


def test_a_process_with_a_hung_launch_still_exits(tmp_path):
    # The launch runs on the stream's thread and the worker pool's native threads; at the
    # interpreter's exit its stop word is set, so that they leave the kernel.
    script = tmp_path / "hang.py"
    script.write_text(f"""
import numpy as np
from ptxport import Device, LaunchConfig, Program, launch
from ptxport.runtime.backends.cpu import executor as cpu_executor
from ptxport.errors import KernelTimeoutError
cpu_executor.set_workers(2)
dev = Device("cpu")
stream = dev.create_stream()
kernel = Program({SPIN_PTX!r}, code_type="ptx").compile("native").get_kernel("spin")
flag, out = dev.allocate(4, stream=stream), dev.allocate(4, stream=stream)
flag.fill(0, 4, stream=stream)
launch(stream, LaunchConfig(grid=8, block=32), kernel, flag, out)
try:
    stream.sync(timeout=0.3)
except KernelTimeoutError as e:
    print(e.kernels)
""")
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and "('spin',)" in done.stdout, done.stderr
