"""The README's and docs' examples run as written.

Every ```python block of a document runs, in order, in one namespace per document (a page
reads top to bottom, so a later block may use what an earlier one made), from the
repository's root. The README's quick start is checked too: its test command is exactly what
.ci/run runs, its first command's example runs, and its `ptxport compile` lines work on the
example's own .cu file. A document whose example needs a device this machine lacks (cuda,
hip) says so in the block with a `Device("cuda:0")`-style line, and only that document is
skipped, with the reason.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from ptxport.frontends import nvrtc

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)


def blocks(path: Path, language: str) -> list[str]:
    """The fenced code blocks of `path` in `language`, in order."""
    return [body for lang, body in _FENCE.findall(path.read_text()) if lang == language]


def _absent_backend(code: str) -> str | None:
    """Why the code cannot run here, if it asks for a device whose backend is absent."""
    from ptxport.runtime import system

    for name in re.findall(r'Device\("(cuda|hip|opencl):\d+"\)', code):
        why = system.backends.get(name)
        if why:
            return f"the example uses a {name} device: {why}"
    return None


@pytest.mark.parametrize("path", [p for p in DOCUMENTS if blocks(p, "python")],
                         ids=lambda p: p.relative_to(ROOT).as_posix())
def test_python_examples_run_as_written(path, monkeypatch):
    if not nvrtc.available()[0]:
        pytest.skip("the examples compile CUDA C++ with NVRTC (pip install 'ptxport[cuda]')")
    code = blocks(path, "python")
    reason = _absent_backend("\n".join(code))
    if reason:
        pytest.skip(reason)
    monkeypatch.chdir(ROOT)
    namespace: dict = {"__name__": f"docs_example_{path.stem}"}
    for number, body in enumerate(code, 1):
        try:
            exec(compile(body, f"{path.name}, python block {number}", "exec"), namespace)
        except Exception as e:
            raise AssertionError(f"{path.name}: python block {number} failed: "
                                 f"{type(e).__name__}: {e}\n{body}") from e


def _quick_start() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Quick start"):]
    return [line for line in blocks_of(section, "bash")[0].splitlines()
            if line and not line.startswith("#")]


def blocks_of(text: str, language: str) -> list[str]:
    return [body for lang, body in _FENCE.findall(text) if lang == language]


def test_the_quick_starts_test_command_is_what_ci_runs():
    install_and_run, install_and_test = _quick_start()
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert install_and_test == ci
    assert install_and_run.startswith("python3 -m venv .venv && .venv/bin/pip install -e ")


def test_the_quick_starts_main_job_runs():
    if not nvrtc.available()[0]:
        pytest.skip("examples/saxpy.py compiles CUDA C++ with NVRTC (pip install "
                    "'ptxport[cuda]')")
    install_and_run = _quick_start()[0]
    command = shlex.split(install_and_run.split("&&")[-1])
    assert command[0] == ".venv/bin/python"
    result = subprocess.run([sys.executable, *command[1:], "--n", "100000"], cwd=ROOT,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr


def _readme_compile_commands() -> list[list[str]]:
    """The README's `ptxport compile FILE.cu --target T -o out.X` examples, as argv lists."""
    text = (ROOT / "README.md").read_text()
    commands = re.findall(r"`(ptxport compile FILE\.cu[^`]*)`", text)
    commands += [f"ptxport compile FILE.cu --target {t} {o}"
                 for t, o in re.findall(r"`(\w+(?::\w+)?) (-o out\.\w+)`", text)]
    return [shlex.split(c) for c in commands]


def test_the_readmes_compile_examples_work(tmp_path):
    if not nvrtc.available()[0]:
        pytest.skip("the examples compile a .cu file with NVRTC")
    commands = _readme_compile_commands()
    assert len(commands) >= 4, commands
    for argv in commands:
        argv = [str(ROOT / "examples" / "saxpy.cu") if a == "FILE.cu" else a for a in argv]
        output = argv[argv.index("-o") + 1]
        argv[argv.index("-o") + 1] = str(tmp_path / output)
        result = subprocess.run([sys.executable, "-m", "ptxport.cli", *argv[1:]], cwd=ROOT,
                                capture_output=True, text=True, timeout=600,
                                env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert result.returncode == 0, (argv, result.stderr)
        # (a file of several kernels gives the cpu target one output per kernel: out.K.ll)
        written = [p for p in tmp_path.iterdir() if p.name.startswith(Path(output).stem)
                   and p.suffix == Path(output).suffix]
        assert written and all(p.stat().st_size > 0 for p in written), argv
