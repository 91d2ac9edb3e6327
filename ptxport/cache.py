"""ptxport's on-disk cache: one directory per kind of artifact under one root.

The root is $PTXPORT_CACHE_DIR, else ~/.cache/ptxport. Entries are written atomically (a
temporary file renamed into place), so concurrent processes see a whole entry or none.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["cache_path", "read_entry", "write_entry"]


def cache_path(kind: str, key: str, suffix: str = "") -> Path:
    root = os.environ.get("PTXPORT_CACHE_DIR")
    base = Path(root) if root else Path.home() / ".cache" / "ptxport"
    return base / kind / f"{key}{suffix}"


def read_entry(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def write_entry(path: Path, data: bytes) -> None:
    """Store `data` at `path`; a cache that cannot be written is not an error."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError:
        pass
