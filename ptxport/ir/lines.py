"""Where an instruction came from in the program the user wrote: PTX's `.file` and `.loc`.

CUDA compilers asked for line information (NVRTC and nvcc with -lineinfo or -G) number the
source files with `.file N "name"` and put `.loc N line column` before the instructions of
each source line (PTX ISA 11.2, "Debugging directives"); a `.loc` holds for the instructions
after it up to the next `.loc` or the end of the function. This table keeps the `.loc`s by
their PTX line, in order, so that the source line of the instruction on a PTX line is one
binary search; from_ptx.py fills it, and error messages use it to name the user's file and
line before the PTX line (`check.cu:5 (PTX line 62)`).

The table is plain data (line numbers and names), made once when the PTX is read, so that
compiled kernels keep it to report run-time errors at no run-time cost.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

__all__ = ["LineTable", "parse_file", "parse_loc", "where"]

# .file N "name" [, timestamp, size]
_FILE = re.compile(r'^\s*(\d+)\s+"((?:[^"\\]|\\.)*)"')


def parse_file(text: str) -> tuple[int, str] | None:
    """The number and file name of a `.file` directive's text (after `.file`), or None."""
    m = _FILE.match(text)
    return (int(m[1]), m[2]) if m else None


def parse_loc(text: str) -> tuple[int, int] | None:
    """The file number and line of a `.loc` directive's text (after `.loc`), or None.
    (Split rather than matched: every source line of a module has its .loc.)"""
    parts = text.split(None, 2)
    try:
        return int(parts[0]), int(parts[1].rstrip(","))
    except (IndexError, ValueError):
        return None


@dataclass
class LineTable:
    """The `.loc` directives of a module by PTX line, and its `.file` names by number."""

    files: dict[int, str] = field(default_factory=dict)
    ptx_lines: list[int] = field(default_factory=list)
    locs: list[tuple[int, int] | None] = field(default_factory=list)

    def add(self, ptx_line: int, loc: tuple[int, int] | None) -> None:
        """A `.loc` (file number, line) on `ptx_line`; None ends the previous one's reach (at
        the start of a function). Lines must come in increasing order."""
        self.ptx_lines.append(ptx_line)
        self.locs.append(loc)

    def __bool__(self) -> bool:
        """Whether the module has line information (.file and .loc directives)."""
        return bool(self.files) and bool(self.locs)

    def source_line(self, ptx_line: int) -> tuple[str, int] | None:
        """The source file (its base name) and line of the instruction on `ptx_line`, or
        None when no `.loc` covers it or its file number has no `.file`."""
        i = bisect.bisect_right(self.ptx_lines, ptx_line) - 1
        loc = self.locs[i] if i >= 0 else None
        if loc is None or loc[1] == 0 or loc[0] not in self.files:
            return None
        return _base_name(self.files[loc[0]]), loc[1]


def _base_name(name: str) -> str:
    """A .file name without its directories: compilers write absolute paths (NVRTC puts its
    working directory before the program's name), Windows ones with escaped backslashes."""
    return name.replace("\\\\", "\\").rsplit("/", 1)[-1].rsplit("\\", 1)[-1] or name


def where(source: tuple[str, int] | None, ptx_line: int) -> str:
    """How messages name a place: `check.cu:5 (PTX line 62)` with line information, else
    `line 62` (of the PTX)."""
    if source is None:
        return f"line {ptx_line}"
    return f"{source[0]}:{source[1]} (PTX line {ptx_line})"
