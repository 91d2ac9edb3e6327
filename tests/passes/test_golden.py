"""Golden files for the passes of ptxport/passes: for each input golden/NAME.ptx and each
pass P, golden/NAME.P.txt holds what `ptxport inspect golden/NAME.ptx --dump-after P` prints
(every kernel's IR after the pass, and what the pass found).

A test that fails writes what it got beside the expected file, as NAME.P.txt.actual, so that
the difference can be read. After a change that is meant to change a dump, regenerate the
files and read their diff before committing it:

    PYTHONPATH=. python tests/passes/test_golden.py --regenerate
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ptxport.ir.from_ptx import build
from ptxport.ir.verify import verify
from ptxport.passes import PASSES, dump, run_until
from ptxport.ptx.parser import parse

GOLDEN = Path(__file__).resolve().parent / "golden"
INPUTS = sorted(GOLDEN.glob("*.ptx"))


def dumps(path: Path, name: str) -> str:
    """What --dump-after `name` prints for the file at `path`."""
    module = build(parse(path.read_text(), path.name))
    verify(module)
    return "".join(f"// kernel {f.name}\n" + dump(run_until(module, f.name, name), name)
                   for f in module.kernels)


def _expected(path: Path, name: str) -> Path:
    return path.with_name(f"{path.stem}.{name}.txt")


@pytest.mark.parametrize("name", list(PASSES))
@pytest.mark.parametrize("path", INPUTS, ids=lambda p: p.stem)
def test_dump_after_pass(path: Path, name: str):
    actual = dumps(path, name)
    expected = _expected(path, name)
    actual_path = expected.with_name(expected.name + ".actual")
    if not expected.exists() or expected.read_text() != actual:
        actual_path.write_text(actual)
    assert expected.exists(), f"no golden file; the output is in {actual_path.name}"
    assert actual == expected.read_text(), (
        f"the dump after {name} differs from {expected.name}; it is in {actual_path.name}")
    actual_path.unlink(missing_ok=True)


def test_the_inputs_are_there():
    assert len(INPUTS) >= 2


def test_inline_changes_the_kernel_and_the_analyses_do_not():
    module = build(parse((GOLDEN / "waiting_call.ptx").read_text(), "waiting_call.ptx"))
    verify(module)
    kernel = module.functions["k"]
    assert run_until(module, "k", "uniformity").function is kernel
    inlined = run_until(module, "k", "inline").function
    assert inlined is not kernel
    assert not any(i.opcode == "call" for i in inlined.instructions())
    assert any(i.opcode == "call" for i in kernel.instructions())


def _regenerate() -> None:
    for path in INPUTS:
        for name in PASSES:
            _expected(path, name).write_text(dumps(path, name))
            print(f"wrote {_expected(path, name).relative_to(Path.cwd())}")


if __name__ == "__main__":
    if sys.argv[1:] != ["--regenerate"]:
        sys.exit(__doc__)
    _regenerate()
