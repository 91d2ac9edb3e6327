"""Launches that run at once on the launching thread (a loop-free kernel on an idle stream)
keep a stream's semantics: a failure is raised by the next sync, not by launch(); work
queued before still runs first; later work is skipped after a failure; Events around it
still order and time it. And which kernels may run so: ptxport.ir.analysis.runs_to_completion."""

from __future__ import annotations

import importlib
import threading

import numpy as np
import pytest

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.errors import IllegalAddressError
from ptxport.ir.analysis import runs_to_completion
from ptxport.ir.from_ptx import build
from ptxport.ptx.parser import parse
from tests.cpu_harness import index_outside

HEADER = ".version 7.0\n.target sm_80\n.address_size 64\n"

STORE = HEADER + """
.visible .entry store(.param .u64 p, .param .u32 i, .param .u32 v)
{
    .reg .b64 %rd<4>;
    .reg .b32 %r<3>;
    ld.param.u64 %rd1, [p];
    ld.param.u32 %r1, [i];
    ld.param.u32 %r2, [v];
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r2;
    ret;
}
"""

LOOP = HEADER + """
.visible .entry spin(.param .u64 p)
{
    .reg .b64 %rd<2>;
    .reg .b32 %r<2>;
    .reg .pred %p<2>;
    ld.param.u64 %rd1, [p];
$wait:
    ld.volatile.global.u32 %r1, [%rd1];
    setp.eq.u32 %p1, %r1, 0;
    @%p1 bra $wait;
    ret;
}
"""

CALL = HEADER + """
.func f()
{
    ret;
}
.visible .entry calls()
{
    call f;
    ret;
}
"""

FORWARD = HEADER + """
.visible .entry forward(.param .u32 n)
{
    .reg .b32 %r<2>;
    .reg .pred %p<2>;
    ld.param.u32 %r1, [n];
    setp.eq.u32 %p1, %r1, 0;
    @%p1 bra $done;
    add.u32 %r1, %r1, 1;
$done:
    ret;
}
"""

ONE = LaunchConfig(grid=1, block=1)


def _function(ptx: str, name: str):
    return build(parse(ptx)).functions[name]


@pytest.mark.parametrize("ptx, name, expected", [
    (STORE, "store", True), (FORWARD, "forward", True), (LOOP, "spin", False),
    (CALL, "calls", False)])
def test_which_kernels_run_to_completion(ptx, name, expected):
    assert runs_to_completion(_function(ptx, name)) is expected


@pytest.fixture(scope="module")
def store():
    return Program(STORE, code_type="ptx").compile("native").get_kernel("store")


def test_an_inline_launch_runs_and_its_fault_is_raised_by_the_next_sync(store):
    dev = Device("cpu")
    stream = dev.create_stream()
    out = dev.allocate(16, stream=stream)
    out.fill(0, 4, stream=stream)
    launch(stream, ONE, store, out, np.uint32(0), np.uint32(7))     # first launch: queued
    stream.sync()
    launch(stream, ONE, store, out, np.uint32(1), np.uint32(8))     # idle stream: at once
    bad = np.uint32(index_outside(dev, out, signed=False))
    launch(stream, ONE, store, out, bad, np.uint32(9))                  # faults
    launch(stream, ONE, store, out, np.uint32(2), np.uint32(10))    # skipped after it
    with pytest.raises(IllegalAddressError, match="kernel 'store' wrote 4 bytes") as caught:
        stream.sync()
    assert any("skipped" in note for note in getattr(caught.value, "__notes__", []))
    stream.sync()                                       # the error was raised once
    launch(stream, ONE, store, out, np.uint32(3), np.uint32(11))
    host = np.zeros(4, np.uint32)
    out.copy_to(host, stream=stream)
    stream.sync()
    assert host.tolist() == [7, 8, 0, 11]


def test_an_inline_launch_waits_for_work_queued_before_it(store):
    dev = Device("cpu")
    stream, other = dev.create_stream(), dev.create_stream()
    out = dev.allocate(4, stream=stream)
    launch(stream, ONE, store, out, np.uint32(0), np.uint32(1))
    stream.sync()
    gate = threading.Event()
    other._submit(gate.wait, what="a test's gate")      # `other` is held up by the gate
    stream.wait(other)                                 # so `stream` is not idle either
    launch(stream, ONE, store, out, np.uint32(0), np.uint32(2))
    host, reader = np.zeros(1, np.uint32), dev.create_stream()
    out.copy_to(host, stream=reader)                    # (not ordered after the launch)
    reader.sync()
    assert host[0] == 1
    gate.set()
    stream.sync()
    out.copy_to(host, stream=reader)
    reader.sync()
    assert host[0] == 2


def test_events_around_inline_launches_complete_and_time_them(store):
    dev = Device("cpu")
    stream = dev.create_stream()
    out = dev.allocate(4, stream=stream)
    launch(stream, ONE, store, out, np.uint32(0), np.uint32(1))
    stream.sync()
    start = stream.record(options={"enable_timing": True})
    launch(stream, ONE, store, out, np.uint32(0), np.uint32(2))
    end = stream.record(options={"enable_timing": True})
    end.sync()
    assert start.is_done and end.is_done and end - start >= 0


def test_a_large_grid_is_queued_not_run_at_once(store, monkeypatch):
    launch_module = importlib.import_module("ptxport.runtime.launch")
    dev = Device("cpu")
    stream = dev.create_stream()
    out = dev.allocate(4, stream=stream)
    launch(stream, ONE, store, out, np.uint32(0), np.uint32(1))
    stream.sync()
    ran_now = []
    real = stream._run_now
    monkeypatch.setattr(stream, "_run_now", lambda *a, **k: ran_now.append(1) or real(*a, **k))
    launch(stream, ONE, store, out, np.uint32(0), np.uint32(2))
    monkeypatch.setattr(launch_module, "_AT_ONCE_THREADS", 0)
    launch(stream, ONE, store, out, np.uint32(0), np.uint32(3))
    stream.sync()
    assert ran_now == [1]
    host = np.zeros(1, np.uint32)
    out.copy_to(host, stream=stream)
    stream.sync()
    assert host[0] == 3
