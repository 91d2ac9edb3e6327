"""Fail when a file of the ptxport package is over 800 lines or a function over 80.

    python tools/check_sizes.py [ROOT]      (ROOT: the package folder, default ptxport/)

A large file or function is a sign to split by responsibility (STYLE.md); .ci/run runs this
before the tests, so the budget holds on every change. Lines are counted as in an editor;
a function's lines run from its `def` (decorators included) to its last line, nested
functions included.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 80


def oversized(root: Path) -> list[str]:
    """One line per file or function over its budget, `path:line: what`."""
    problems = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        lines = len(text.splitlines())
        if lines > MAX_FILE_LINES:
            problems.append(f"{path}:1: {lines} lines (at most {MAX_FILE_LINES})")
        for node in ast.walk(ast.parse(text, str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                start = min([node.lineno] + [d.lineno for d in node.decorator_list])
                length = node.end_lineno - start + 1
                if length > MAX_FUNCTION_LINES:
                    problems.append(f"{path}:{start}: function {node.name} has {length} "
                                    f"lines (at most {MAX_FUNCTION_LINES})")
    return problems


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent.parent / "ptxport"
    problems = oversized(root)
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
