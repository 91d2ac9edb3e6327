"""Device group members in Ray actors: one launch over several processes or machines.

Each member is an actor (`_Worker`) that holds its own device (Device("cpu") by default) and
runs its box of blocks with the same LocalMember code as an in-process member. Buffers move
through Ray's object store: the driver puts a buffer's contents once per version and sends
the reference, so members of one machine share one copy. Every transfer carries a CRC-32 of
its bytes, checked by the side that receives it.

Lineage: the driver keeps, per member and buffer, the reference to the contents the member
was last sent (or last sent back in full). When an actor dies (a killed process, a lost
machine), RayMember starts a replacement, sends it those contents again and re-runs the
launch it was running, so the launch's result is the same; after `max_restarts` failed
tries the launch raises GroupMemberError and the group's buffers keep their contents from
before it (never a partial result).
"""

from __future__ import annotations

import os
import threading
import time
import zlib
from pathlib import Path

import numpy as np

from ptxport.errors import BackendUnavailableError, GroupMemberError, PtxportError
from ptxport.runtime.group import argument_keys

__all__ = ["RayMember", "checksum", "ray_members"]


class ChecksumError(PtxportError):
    """Bytes that arrived are not the bytes that were sent."""


def checksum(data: np.ndarray) -> int:
    return zlib.crc32(memoryview(np.ascontiguousarray(data)).cast("B"))


def _ray():
    try:
        import ray
    except ModuleNotFoundError:
        raise BackendUnavailableError(
            "DeviceGroup.ray needs Ray: pip install 'ptxport[ray]'") from None
    return ray


class _Worker:
    """The actor: a LocalMember on `device`, kernels compiled from PTX it was sent."""

    def __init__(self, device: str, cores: tuple[int, ...]):
        if cores and hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, cores)
        from ptxport.runtime.group import LocalMember

        self.member = LocalMember(device)
        self.codes: dict[str, object] = {}
        self.hold: str | None = None

    def pid(self) -> int:
        return os.getpid()

    def hold_next_launch(self, marker: str) -> None:
        """(tests) At the next launch, create file `marker` and wait to be killed."""
        self.hold = marker

    def upload(self, key: int, data, crc: int) -> None:
        data = np.asarray(data)
        if checksum(data) != crc:
            raise ChecksumError(f"buffer {key}: the bytes received do not match their CRC")
        self.member.upload(key, data)

    def patch(self, key: int, ranges, pieces, crc: int) -> None:
        joined = np.concatenate([np.asarray(p) for p in pieces]) if pieces else \
            np.zeros(0, np.uint8)
        if checksum(joined) != crc:
            raise ChecksumError(f"buffer {key}: the bytes received do not match their CRC")
        host = self.member.download(key)
        for (lo, hi), piece in zip(ranges, pieces, strict=True):
            host[lo:hi] = piece
        self.member.upload(key, host)

    def download(self, key: int, ranges):
        data = self.member.download(key, ranges)
        joined = data if ranges is None else (
            np.concatenate(data) if data else np.zeros(0, np.uint8))
        return data, checksum(joined)

    def discard(self, key: int) -> None:
        self.member.discard(key)

    def run(self, digest: str, ptx: str | None, name: str, launch: tuple, args) -> float:
        if self.hold is not None:
            Path(self.hold).touch()
            time.sleep(300)
        code = self.codes.get(digest)
        if code is None:
            if ptx is None:
                return -1.0              # (the driver sends the PTX again)
            from ptxport.runtime.program import Program

            code = self.codes[digest] = Program(ptx, "ptx").compile()
        from ptxport.runtime.launch import LaunchConfig

        grid, block, shmem, first, sub = launch
        config = LaunchConfig(grid=grid, block=block, shmem_size=shmem)
        return self.member.run(code.get_kernel(name), config, first, sub, args)


_ACTOR = None
_ACTOR_LOCK = threading.Lock()


def _actor_class():
    global _ACTOR
    with _ACTOR_LOCK:
        if _ACTOR is None:
            _ACTOR = _ray().remote(num_cpus=0, max_restarts=0)(_Worker)
        return _ACTOR


class RayMember:
    """A device group member in a Ray actor (see the module's docstring)."""

    keeps_results = False     # the group fetches what a whole launch wrote (lineage)

    def __init__(self, index: int, device: str, cores: tuple[int, ...] = (),
                 max_restarts: int = 2):
        self.name = f"ray{index}:{device}"
        self._device, self._cores, self.max_restarts = device, cores, max_restarts
        self._lineage: dict[int, tuple[object, int]] = {}   # key -> (ref, crc) it holds
        self._stale: set[int] = set()      # keys a run may have written since their lineage
        self._last_run: tuple | None = None
        self._codes: set[str] = set()
        self.recoveries: list[float] = []  # seconds each replacement took, launch re-run included
        self.retransfers = 0               # transfers sent again after a checksum mismatch
        self.on_lost = None                # group callback: keys this member no longer holds
        self._spawn()

    def _spawn(self) -> None:
        self.actor = _actor_class().remote(self._device, self._cores)
        self._codes = set()

    def pid(self) -> int:
        return _ray().get(self.actor.pid.remote())

    def close(self) -> None:
        _ray().kill(self.actor)

    # -- recovery -------------------------------------------------------------------------------

    def _recovering(self, call, rerun: bool = False):
        ray = _ray()
        lost = (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError,
                ray.exceptions.ObjectLostError, ChecksumError)
        for attempt in range(self.max_restarts + 1):
            try:
                return call()
            except lost as e:
                corrupted = isinstance(e, ChecksumError)
                if attempt == self.max_restarts:
                    what = "sent corrupted data" if corrupted else "was lost"
                    raise GroupMemberError(
                        f"{self.name} {what} {attempt + 1} time(s) and could not be replaced "
                        f"({type(e).__name__}); the launch did not complete and its outputs "
                        "are as they were before it") from e
                if corrupted:           # the worker is fine: send the bytes again
                    self.retransfers += 1
                else:
                    self._replace(rerun)

    def _replace(self, rerun: bool) -> None:
        """A new actor holding what the lost one was sent; with `rerun`, the last launch
        run again on it."""
        ray = _ray()
        start = time.perf_counter()
        try:
            ray.kill(self.actor)
        except Exception:        # (it is gone already)
            pass
        self._spawn()
        ray.get([self.actor.upload.remote(key, ref, crc)
                 for key, (ref, crc) in self._lineage.items()])
        keep = set(self._last_run[-1]) if rerun and self._last_run else set()
        if self.on_lost is not None and self._stale - keep:
            self.on_lost(self._stale - keep)
        self._stale &= keep
        if rerun and self._last_run is not None:
            self._run_once(*self._last_run[:-1])
        self.recoveries.append(time.perf_counter() - start)

    # -- the member interface ----------------------------------------------------------------

    def upload(self, key: int, data: np.ndarray) -> None:
        ray = _ray()
        ref = ray.put(data)
        self._last_run = None       # (a re-run would now read these new contents)
        self._stale.discard(key)

        def send():
            self._lineage[key] = (ref, checksum(data))
            return ray.get(self.actor.upload.remote(key, ref, self._lineage[key][1]))

        self._recovering(send)

    def upload_ranges(self, key: int, ranges, data: np.ndarray) -> None:
        ray = _ray()
        pieces = [data[lo:hi] for lo, hi in ranges]
        joined = np.concatenate(pieces) if pieces else np.zeros(0, np.uint8)
        self._lineage[key] = (ray.put(data), checksum(data))
        self._last_run = None
        self._stale.discard(key)
        self._recovering(lambda: ray.get(self.actor.patch.remote(key, ranges, pieces,
                                                                 checksum(joined))))

    def download(self, key: int, ranges=None):
        ray = _ray()

        def fetch():
            data_ref, crc_ref = self.actor.download.options(num_returns=2).remote(key, ranges)
            data, crc = ray.get([data_ref, crc_ref])
            joined = data if ranges is None else (
                np.concatenate(data) if data else np.zeros(0, np.uint8))
            if checksum(joined) != crc:
                raise ChecksumError(f"{self.name}: buffer {key} arrived corrupted")
            if ranges is None:
                self._lineage[key] = (data_ref, crc)
                self._stale.discard(key)
            return data if ranges is None else [np.asarray(d) for d in data]

        return self._recovering(fetch, rerun=True)

    def discard(self, key: int) -> None:
        self._lineage.pop(key, None)
        self._stale.discard(key)
        try:
            _ray().get(self.actor.discard.remote(key))
        except Exception:        # (a lost actor holds nothing)
            pass

    def run(self, kernel, config, first, grid, args) -> float:
        code = kernel.object_code
        digest = f"{id(code)}:{hash(code.ptx)}"
        launch = (config.grid, config.block, config.shmem_size, first, grid)
        keys = argument_keys(args)
        self._last_run = (digest, code.ptx, kernel.name, launch, args, keys)
        seconds = self._recovering(lambda: self._run_once(digest, code.ptx, kernel.name,
                                                          launch, args))
        self._stale |= set(keys)
        return seconds

    def _run_once(self, digest, ptx, name, launch, args) -> float:
        ray = _ray()
        sent = ptx if digest not in self._codes else None
        seconds = ray.get(self.actor.run.remote(digest, sent, name, launch, args))
        if seconds < 0:
            seconds = ray.get(self.actor.run.remote(digest, ptx, name, launch, args))
        self._codes.add(digest)
        return seconds


def _init_ray(num_workers: int, object_store_mb: int) -> None:
    ray = _ray()
    if ray.is_initialized():
        return
    root = str(Path(__file__).resolve().parents[2])
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    ray.init(num_cpus=max(num_workers, 1), object_store_memory=object_store_mb << 20,
             include_dashboard=False, log_to_driver=False, configure_logging=False,
             runtime_env={"env_vars": {"PYTHONPATH": path}})


def ray_members(num_workers: int, device: str = "cpu", *, pin_cores: bool = True,
                max_restarts: int = 2, object_store_mb: int = 256, **_) -> list[RayMember]:
    """`num_workers` RayMembers on `device`, starting a local Ray if none is running
    (ray.init(address=...) first to use a cluster). With `pin_cores`, each worker is
    pinned to its share of this machine's cores (its blocks run on those only)."""
    if num_workers < 1:
        raise ValueError("num_workers must be at least 1")
    _init_ray(num_workers, object_store_mb)
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    members = []
    for i in range(num_workers):
        share = ()
        if pin_cores and cores:
            per = max(1, len(cores) // num_workers)
            share = tuple(cores[(i * per) % len(cores):(i * per) % len(cores) + per])
        members.append(RayMember(i, device, share, max_restarts))
    return members
