"""Device groups over Ray actors (runtime/group_ray.py), on a local Ray of 2 workers that
the module's tests share: results equal one device's, every transfer is checksummed, and a
worker killed during a launch is replaced and its blocks re-run (never a partial result)."""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest
from group_kernels import group_code

from ptxport import LaunchConfig
from ptxport.errors import GroupMemberError
from ptxport.frontends import nvrtc

ray = pytest.importorskip("ray", reason="Ray is needed: pip install 'ptxport[ray]'")
pytestmark = pytest.mark.skipif(not nvrtc.available()[0], reason="NVRTC builds the kernels")

N = 20000


@pytest.fixture(scope="module")
def group():
    from ptxport.runtime.group import DeviceGroup

    group = DeviceGroup.ray(num_workers=2, device="cpu", object_store_mb=80)
    yield group
    group.close()
    ray.shutdown()


def _launch(group, x: np.ndarray):
    a = group.allocate(x.nbytes)
    a.copy_from(x)
    out = group.allocate(x.nbytes)
    group.launch(LaunchConfig(grid=(N + 127) // 128, block=128),
                 group_code().get_kernel("disjoint"), out, a, np.int32(N))
    return out.copy_to(np.empty(N, np.float32))


def test_ray_group_equals_one_device(group):
    x = np.linspace(-1, 1, N, dtype=np.float32)
    assert (_launch(group, x) == x * np.float32(2) + 1).all()
    assert group.last_plan.split and len(group.last_plan.boxes) == 2
    values = np.arange(1000, dtype=np.int32) - 400
    bufs = [group.allocate(16)] + [group.allocate(4) for _ in range(5)]
    for b in bufs:
        b.fill(0, 4)
    inputs = group.allocate(values.nbytes)
    inputs.copy_from(values)
    group.launch(LaunchConfig(grid=8, block=128), group_code().get_kernel("atomics"), *bufs,
                 inputs, np.int32(1000))
    assert bufs[1].copy_to(np.empty(1, np.int32))[0] == -400
    assert bufs[2].copy_to(np.empty(1, np.int32))[0] == 599
    assert bufs[5].copy_to(np.empty(1, np.float32))[0] == (values & 15).sum()


def _kill_during_next_launch(member, marker) -> threading.Thread:
    pid = member.pid()
    ray.get(member.actor.hold_next_launch.remote(str(marker)))

    def kill():
        deadline = time.monotonic() + 60
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(pid, signal.SIGKILL)

    thread = threading.Thread(target=kill)
    thread.start()
    return thread


def test_worker_killed_mid_launch_is_replaced_and_its_blocks_rerun(group, tmp_path):
    member = group.members[1]
    before = len(member.recoveries)
    old_pid = member.pid()
    killer = _kill_during_next_launch(member, tmp_path / "running")
    x = np.arange(N, dtype=np.float32)
    result = _launch(group, x)
    killer.join()
    assert (result == x * 2 + 1).all()
    assert len(member.recoveries) == before + 1 and member.pid() != old_pid


def test_a_member_that_cannot_be_replaced_fails_the_launch_cleanly(group, tmp_path):
    member = group.members[0]
    member.max_restarts = 0
    try:
        a = group.allocate(4 * N)
        a.copy_from(np.ones(N, np.float32))
        out = group.allocate(4 * N)
        out.copy_from(np.full(N, 9, np.float32))
        killer = _kill_during_next_launch(member, tmp_path / "running")
        with pytest.raises(GroupMemberError, match="ray0:cpu was lost"):
            group.launch(LaunchConfig(grid=(N + 127) // 128, block=128),
                         group_code().get_kernel("disjoint"), out, a, np.int32(N))
        killer.join()
        assert (out.copy_to(np.empty(N, np.float32)) == 9).all()   # not partial
    finally:
        member.max_restarts = 2


def test_a_corrupted_transfer_is_detected_and_sent_again(group, monkeypatch):
    from ptxport.runtime import group_ray

    real, calls = group_ray.checksum, []

    def once_wrong(data):
        calls.append(1)
        return real(data) + (1 if len(calls) == 1 else 0)

    member = group.members[1]
    before = member.retransfers
    x = np.full(N, 3, np.float32)
    a = group.allocate(x.nbytes)
    a.copy_from(x)
    out = group.allocate(x.nbytes)
    group.launch(LaunchConfig(grid=(N + 127) // 128, block=128),
                 group_code().get_kernel("disjoint"), out, a, np.int32(N))
    monkeypatch.setattr(group_ray, "checksum", once_wrong)
    data = member.download(out.key)            # the driver's check of the first copy fails
    monkeypatch.undo()
    assert member.retransfers == before + 1
    _, first, grid = group.last_plan.boxes[1]
    mine = slice(first[0] * 128, min(N, (first[0] + grid[0]) * 128))
    assert (data.view(np.float32)[mine] == 7).all()
    assert (data == member.download(out.key)).all()
