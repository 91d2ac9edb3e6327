"""`jit(cache=True)`: a kernel's PTX kept in ptxport's on-disk cache across processes.

numba-cuda's own `cache=True` stores cubins for the GPU it finds, through its dispatcher;
here the PTX numba-cuda produced for one signature (linked with the `link=` files) is kept
under ptxport's cache root (ptxport.cache, kind "numba"), and ptxport caches what it compiles
from that PTX itself. The key follows numba's rule for when a cached function is stale: the
function's source file (its path, modification time and size) and code, the signature, the
compute capability, the options, numba-cuda's and ptxport's versions, and the contents of the
link files. As with numba, a change to a function in another file that the kernel calls is
not seen (clear the cache, or touch the kernel's file); a function without a source file
(defined interactively) is compiled in each process.
"""

from __future__ import annotations

import hashlib
import inspect
import os
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

from ptxport.cache import cache_path, read_entry, write_entry
from ptxport.version import __version__

__all__ = ["cache_key", "load", "store"]


def cache_key(func, signature: tuple, cc: tuple[int, int], options: dict,
              link: Sequence) -> str | None:
    """The cache key of `func` compiled for `signature`; None when it cannot be cached."""
    try:
        source = inspect.getsourcefile(func)
        stat = os.stat(source) if source else None
    except (TypeError, OSError):
        stat = None
    if stat is None:
        return None
    digest = hashlib.sha256()
    for part in (metadata.version("numba-cuda"), __version__, source, stat.st_mtime_ns,
                 stat.st_size, func.__module__, func.__qualname__,
                 func.__code__.co_code.hex(), repr(signature), cc,
                 repr(sorted(options.items()))):
        digest.update(repr(part).encode() + b"\0")
    for file in link:
        digest.update(read_entry(Path(file)) or b"<unreadable>")
    return digest.hexdigest()


def load(key: str) -> str | None:
    """The cached PTX of `key`, if any."""
    data = read_entry(cache_path("numba", key, ".ptx"))
    return None if data is None else data.decode()


def store(key: str, ptx: str) -> None:
    write_entry(cache_path("numba", key, ".ptx"), ptx.encode())
