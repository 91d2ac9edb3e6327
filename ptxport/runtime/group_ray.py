"""Device group members in Ray actors: one launch over several processes or machines.

Each member is an actor (`_Worker`) that holds its own device (Device("cpu") by default) and
runs its box of blocks with the same LocalMember code as an in-process member. Buffers move
through Ray's object store: the driver puts a buffer's contents once per version and sends
the reference, so members of one machine share one copy. Every transfer carries a checksum of
its bytes (checksum()), checked by the side that receives it.

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
from pathlib import Path

import numpy as np

from ptxport.errors import BackendUnavailableError, GroupMemberError, PtxportError
from ptxport.runtime.group import argument_keys

__all__ = ["Puts", "RayMember", "checksum", "ray_members"]


class ChecksumError(PtxportError):
    """Bytes that arrived are not the bytes that were sent."""


_BLOCK = 1 << 18                                   # 64-bit words summed at a time
_WEIGHTS = np.arange(1, _BLOCK + 1, dtype=np.uint64)
_MASK = (1 << 64) - 1


def checksum(data) -> int:
    """A Fletcher checksum of an array's bytes (or of each of a list of arrays'), over
    64-bit words modulo 2**64: the sum of the words and the sum of each word times its
    position, with the size. Any one changed word changes it, and so do two words swapped
    (unless their difference times their distance is a multiple of 2**64);
    numpy computes it at memory speed (zlib.crc32 runs at 1-2 GB/s, the time of a
    transfer)."""
    total = 0
    for piece in data if isinstance(data, list | tuple) else (data,):
        total = (total * 0x9E3779B97F4A7C15 + _fletcher(piece)) & ((1 << 136) - 1)
    return total


def _fletcher(piece) -> int:
    raw = np.frombuffer(memoryview(np.ascontiguousarray(piece)).cast("B"), np.uint8)
    whole = raw.size - raw.size % 8
    words = raw[:whole].view(np.uint64)
    plain = weighted = 0
    for start in range(0, words.size, _BLOCK):
        block = words[start:start + _BLOCK]
        block_sum = int(block.sum(dtype=np.uint64))
        weighted += int(np.dot(block, _WEIGHTS[:block.size])) + start * block_sum
        plain += block_sum
    tail = int.from_bytes(raw[whole:].tobytes(), "little")
    plain, weighted = plain + tail, weighted + (words.size + 1) * tail
    return ((weighted & _MASK) << 72) | ((plain & _MASK) << 8) | (raw.size & 0xFF)


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
        self.before: dict[int, np.ndarray] = {}   # copies as they were before the last run

    def pid(self) -> int:
        return os.getpid()

    def hold_next_launch(self, marker: str) -> None:
        """(tests) At the next launch, create file `marker` and wait to be killed."""
        self.hold = marker

    def upload(self, key: int, data, crc: int) -> None:
        data = np.asarray(data)
        if checksum(data) != crc:
            raise ChecksumError(f"buffer {key}: the bytes received do not match their checksum")
        self.member.upload(key, data)

    def patch(self, key: int, size: int, ranges, pieces, crc: int) -> None:
        pieces = [np.asarray(p) for p in pieces]
        if checksum(pieces) != crc:
            raise ChecksumError(f"buffer {key}: the bytes received do not match their checksum")
        self.member.write_pieces(key, ranges, pieces, size)

    def download(self, key: int, ranges):
        view = self.member._view(key) if ranges is not None else None
        # (views of the member's copy where it is host memory: Ray copies them into the
        # object store as the call returns)
        data = self.member.download(key, ranges) if view is None else \
            [view[lo:hi] for lo, hi in ranges]
        return data, checksum(data)

    def changes(self, key: int):
        """(ranges, pieces) where the copy may differ from before the last run, and
        their checksum."""
        ranges, pieces = self.member.changes(key, self.before[key])
        return ranges, pieces, checksum(pieces)

    def discard(self, key: int) -> None:
        self.member.discard(key)

    def run(self, digest: str, ptx: str | None, name: str, launch: tuple, args,
            watch=()) -> float:
        """Run the blocks of `launch`, first keeping a copy of the buffers `watch`
        (for changes())."""
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

        self.before = {key: self.member.download(key) for key in watch}
        grid, block, shmem, first, sub = launch
        config = LaunchConfig(grid=grid, block=block, shmem_size=shmem)
        return self.member.run(code.get_kernel(name), config, first, sub, args)


_ACTOR = None
_LINEAGE_STEPS = 8        # pieces sent kept as such in a member's lineage, before one whole
_ACTOR_LOCK = threading.Lock()


def _actor_class():
    global _ACTOR
    with _ACTOR_LOCK:
        if _ACTOR is None:
            _ACTOR = _ray().remote(num_cpus=0, max_restarts=0)(_Worker)
        return _ACTOR


class Puts:
    """The object-store copy of each group buffer's current version and its checksum, shared
    by the members of one group: a version is put (and checksummed) once, not once per
    member."""

    def __init__(self):
        self._lock = threading.Lock()
        self._locks: dict[int, threading.Lock] = {}
        self._refs: dict[int, tuple[object, object, int]] = {}   # key -> (version, ref, crc)

    def get(self, key: int, data: np.ndarray, version=None) -> tuple[object, int]:
        """(ref, crc) of `data`, the contents of `version` of buffer `key` (None: contents
        of no version, put every time)."""
        if version is None:
            return _ray().put(data), checksum(data)
        with self._lock:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            found = self._refs.get(key)
            if found is None or found[0] != version:
                found = self._refs[key] = (version, _ray().put(data), checksum(data))
            return found[1], found[2]

    def drop(self, key: int) -> None:
        with self._lock:
            self._refs.pop(key, None)
            self._locks.pop(key, None)


class RayMember:
    """A device group member in a Ray actor (see the module's docstring)."""

    keeps_results = False     # the group fetches what a whole launch wrote (lineage)

    def __init__(self, index: int, device: str, cores: tuple[int, ...] = (),
                 max_restarts: int = 2, puts: Puts | None = None):
        self.name = f"ray{index}:{device}"
        self._puts = Puts() if puts is None else puts
        self._watch: tuple[int, ...] = ()  # mask-merged keys of the next run (changes())
        self._device, self._cores, self.max_restarts = device, cores, max_restarts
        # key -> what the member was sent, in order: ("whole", ref, crc) and
        # ("pieces", size, ranges, ref, crc); replayed into a replacement
        self._lineage: dict[int, list[tuple]] = {}
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
        ray.get([self.actor.upload.remote(key, *step[1:]) if step[0] == "whole" else
                 self.actor.patch.remote(key, *step[1:])
                 for key, steps in self._lineage.items() for step in steps])
        keep = set(self._last_run[-1]) if rerun and self._last_run else set()
        if self.on_lost is not None and self._stale - keep:
            self.on_lost(self._stale - keep)
        self._stale &= keep
        if rerun and self._last_run is not None:
            self._run_once(*self._last_run[:-1])
        self.recoveries.append(time.perf_counter() - start)

    # -- the member interface ----------------------------------------------------------------

    def upload(self, key: int, data: np.ndarray, version=None) -> None:
        ray = _ray()
        ref, crc = self._puts.get(key, data, version)
        self._last_run = None       # (a re-run would now read these new contents)
        self._stale.discard(key)

        def send():
            self._lineage[key] = [("whole", ref, crc)]
            return ray.get(self.actor.upload.remote(key, ref, crc))

        self._recovering(send)

    def upload_ranges(self, key: int, ranges, data: np.ndarray, version=None) -> None:
        ray = _ray()
        pieces = [data[lo:hi] for lo, hi in ranges]
        ref, crc = ray.put(pieces), checksum(pieces)
        steps = self._lineage.setdefault(key, [])
        steps.append(("pieces", data.size, ranges, ref, crc))
        held = sum(hi - lo for step in steps if step[0] == "pieces" for lo, hi in step[2])
        if len(steps) > _LINEAGE_STEPS or held > data.size:
            # the host's contents hold what it was sent: one copy, shared by the members,
            # instead of pieces adding up to more than the buffer in the object store
            steps[:] = [("whole", *self._puts.get(key, data, version))]
        self._last_run = None
        self._stale.discard(key)
        self._recovering(lambda: ray.get(self.actor.patch.remote(key, data.size, ranges,
                                                                 ref, crc)))

    def download(self, key: int, ranges=None):
        ray = _ray()

        def fetch():
            data_ref, crc_ref = self.actor.download.options(num_returns=2).remote(key, ranges)
            data, crc = ray.get([data_ref, crc_ref])
            if checksum(data) != crc:
                raise ChecksumError(f"{self.name}: buffer {key} arrived corrupted")
            if ranges is None:
                self._lineage[key] = [("whole", data_ref, crc)]
                self._stale.discard(key)
            return data if ranges is None else [np.asarray(d) for d in data]

        return self._recovering(fetch, rerun=True)

    def watch(self, keys) -> None:
        """At the next run, the worker keeps a copy of buffers `keys` as they were, so
        that changes() sends back only what changed."""
        self._watch = tuple(keys)

    def changes(self, key: int, before: np.ndarray | None = None) -> tuple[list, list]:
        """(ranges, pieces): the member's copy of `key` where it may differ from its
        contents before the last run (kept by the worker; `before` is not sent)."""
        ray = _ray()

        def fetch():
            ranges, pieces, crc = ray.get(self.actor.changes.remote(key))
            if checksum(pieces) != crc:
                raise ChecksumError(f"{self.name}: buffer {key} arrived corrupted")
            return ranges, [np.asarray(p) for p in pieces]

        return self._recovering(fetch, rerun=True)

    def discard(self, key: int) -> None:
        self._puts.drop(key)
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
        watch, self._watch = self._watch, ()
        self._last_run = (digest, code.ptx, kernel.name, launch, args, watch, keys)
        seconds = self._recovering(lambda: self._run_once(digest, code.ptx, kernel.name,
                                                          launch, args, watch))
        self._stale |= set(keys)
        return seconds

    def _run_once(self, digest, ptx, name, launch, args, watch=()) -> float:
        ray = _ray()
        sent = ptx if digest not in self._codes else None
        seconds = ray.get(self.actor.run.remote(digest, sent, name, launch, args, watch))
        if seconds < 0:
            seconds = ray.get(self.actor.run.remote(digest, ptx, name, launch, args, watch))
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
    members, puts = [], Puts()
    for i in range(num_workers):
        share = ()
        if pin_cores and cores:
            per = max(1, len(cores) // num_workers)
            share = tuple(cores[(i * per) % len(cores):(i * per) % len(cores) + per])
        members.append(RayMember(i, device, share, max_restarts, puts))
    return members
