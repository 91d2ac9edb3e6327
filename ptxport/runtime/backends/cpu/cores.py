"""How many cores this process may use: the CPU device runs one worker per core by default.

The scheduler's affinity mask says which cores a process may run on, not how much of them:
a container given 4 CPUs' time on a 64-core host (a cgroup CPU quota, `docker --cpus 4`)
sees all 64 in its mask, and 64 workers there would run in turns, each stopped for the rest
of the quota's period whenever the group has spent it, while the others wait for it at the
grid's end. So the count is the affinity mask's, at most the quota's (rounded up).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

__all__ = ["usable_cores"]


def usable_cores(proc: Path = Path("/proc/self/cgroup"),
                 mount: Path = Path("/sys/fs/cgroup")) -> int:
    """The cores this process may use (`proc`, `mount`: where the cgroup files are, for
    tests)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        (os.cpu_count() or 1)
    quota = cgroup_quota(proc, mount)
    return max(1, min(cores, math.ceil(quota))) if quota is not None else cores


def cgroup_quota(proc: Path, mount: Path) -> float | None:
    """The CPUs' time a cgroup CPU quota allows this process (quota / period, the smallest
    of its group's and the groups above it), or None without a quota (or cgroups)."""
    try:
        lines = proc.read_text().splitlines()
    except OSError:
        return None
    limits = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":          # cgroup v2: "0::/path", cpu.max is "quota period"
            limits += _along(mount, path, ("cpu.max",), _v2_limit)
        elif "cpu" in controllers.split(","):     # v1: cpu.cfs_quota_us, cpu.cfs_period_us
            for directory in (controllers, "cpu", "cpu,cpuacct"):
                limits += _along(mount / directory, path, ("cpu.cfs_quota_us",
                                                           "cpu.cfs_period_us"), _v1_limit)
    return min(limits) if limits else None


def _along(root: Path, path: str, names: tuple[str, ...], limit) -> list[float]:
    """The limits of the group at `path` under `root` and of the groups above it (a group's
    quota bounds the groups inside it). In a container the path may name a group outside
    its view of the hierarchy: then `root` itself is the container's group."""
    found, directory = [], root / path.strip("/")
    while True:
        try:
            value = limit(*(directory.joinpath(n).read_text() for n in names))
        except (OSError, ValueError):
            value = None
        if value is not None:
            found.append(value)
        if directory == root or root not in directory.parents:
            return found
        directory = directory.parent


def _v2_limit(text: str) -> float | None:
    quota, period = text.split()
    return None if quota == "max" else int(quota) / int(period)


def _v1_limit(quota: str, period: str) -> float | None:
    return None if int(quota) <= 0 else int(quota) / int(period)
