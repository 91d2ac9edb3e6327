"""`ptxport run` and `ptxport env` as commands (the programs themselves: test_programs.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]


def _ptxport(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPOSITORY)}
    return subprocess.run([sys.executable, "-m", "ptxport.cli", *args], capture_output=True,
                          text=True, env=env, timeout=300)


def test_env_puts_the_shim_first():
    result = _ptxport("env", "--device", "cpu")
    assert result.returncode == 0, result.stderr
    lines = dict(line.removeprefix("export ").split("=", 1) for line in result.stdout.split("\n")
                 if line)
    first = lines["LD_LIBRARY_PATH"].strip("'").split(":")[0]
    assert (Path(first) / "libcuda.so.1").is_file()
    assert lines["PTXPORT_DEVICE"] == "cpu"
    assert str(REPOSITORY) in lines["PTXPORT_PYTHONPATH"]


def test_run_keeps_the_programs_exit_status_and_output():
    result = _ptxport("run", "--device", "cpu", "--", "sh", "-c", "echo out; echo err >&2; exit 3")
    assert (result.returncode, result.stdout, result.stderr) == (3, "out\n", "err\n")


def test_run_without_a_program_or_with_a_missing_one():
    result = _ptxport("run", "--device", "cpu")
    assert result.returncode == 2 and "name a program to run" in result.stderr
    result = _ptxport("run", "--", "/nonexistent/app")
    assert result.returncode == 127 and "cannot run /nonexistent/app" in result.stderr


def test_run_refuses_a_device_that_cannot_run_here():
    result = _ptxport("run", "--device", "nonsense", "--", "true")
    assert result.returncode == 2
    assert "--device nonsense: there is no backend named 'nonsense'" in result.stderr
