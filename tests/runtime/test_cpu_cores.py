"""The CPU device's default worker count: the cores of the affinity mask, at most what a
cgroup CPU quota allows (runtime/backends/cpu/cores.py), read from stand-in cgroup trees."""

import os

import pytest

from ptxport.runtime.backends.cpu.cores import cgroup_quota, usable_cores


def _tree(tmp_path, proc_line: str, files: dict[str, str]):
    tmp_path.mkdir(parents=True, exist_ok=True)
    proc = tmp_path / "cgroup"
    proc.write_text(proc_line + "\n")
    mount = tmp_path / "fs"
    for name, text in files.items():
        (mount / name).parent.mkdir(parents=True, exist_ok=True)
        (mount / name).write_text(text)
    return proc, mount


def test_a_v2_quota_of_the_process_group(tmp_path):
    proc, mount = _tree(tmp_path, "0::/job/step", {"job/step/cpu.max": "250000 100000\n",
                                                   "cpu.max": "max 100000\n"})
    assert cgroup_quota(proc, mount) == 2.5


def test_a_v2_quota_of_a_group_above_bounds_the_one_inside(tmp_path):
    proc, mount = _tree(tmp_path, "0::/job/step", {"job/step/cpu.max": "max 100000\n",
                                                   "job/cpu.max": "300000 100000\n"})
    assert cgroup_quota(proc, mount) == 3.0


def test_a_container_sees_its_own_group_at_the_root(tmp_path):
    # (its /proc/self/cgroup names a path of the host's hierarchy it does not see)
    proc, mount = _tree(tmp_path, "0::/kubepods/pod1/abc", {"cpu.max": "400000 100000\n"})
    assert cgroup_quota(proc, mount) == 4.0


def test_a_v1_quota_and_none_without_one(tmp_path):
    proc, mount = _tree(tmp_path, "4:cpu,cpuacct:/docker/x",
                        {"cpu,cpuacct/docker/x/cpu.cfs_quota_us": "150000\n",
                         "cpu,cpuacct/docker/x/cpu.cfs_period_us": "100000\n"})
    assert cgroup_quota(proc, mount) == 1.5
    proc, mount = _tree(tmp_path / "none", "4:cpu,cpuacct:/",
                        {"cpu,cpuacct/cpu.cfs_quota_us": "-1\n",
                         "cpu,cpuacct/cpu.cfs_period_us": "100000\n"})
    assert cgroup_quota(proc, mount) is None
    assert cgroup_quota(tmp_path / "missing", mount) is None


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="no affinity mask here")
def test_workers_are_the_affinity_masks_cores_at_most_the_quota_rounded_up(tmp_path):
    mask = len(os.sched_getaffinity(0))
    proc, mount = _tree(tmp_path, "0::/", {"cpu.max": "50000 100000\n"})
    assert usable_cores(proc, mount) == 1
    proc, mount = _tree(tmp_path / "big", "0::/", {"cpu.max": f"{mask * 200000} 100000\n"})
    assert usable_cores(proc, mount) == mask
    proc, mount = _tree(tmp_path / "none", "0::/", {"cpu.max": "max 100000\n"})
    assert usable_cores(proc, mount) == mask
