"""Does every whole program of the corpus run right? (issue 14's programs, tests/programs/)

Runs each prebuilt program of a directory made by

    python tests/programs_harness.py --out DIR        (here: needs the nvcc wheels)

natively (NVIDIA's driver and runtime: the oracle) or under a wrapper, and compares its
stdout and exit status with the expected ones that DIR/manifest.json carries:

    python benchmarks/programs_gpu.py DIR [NAME ...]                       native
    python benchmarks/programs_gpu.py DIR --runner 'ptxport run --device cuda:0 --'

A program passes when it exits 0 and its stdout equals one of its expected outputs: the
first is what NVIDIA's runtime prints; a second one, where the manifest has it, is a clean
refusal (cudaErrorNotSupported) of a feature a portable runtime may lack, and the table says
which one matched. DIR/lib (the wheel's libcudart.so.13, for programs built with
`-cudart shared`) goes last on LD_LIBRARY_PATH, so that a runner's own libraries come first.

Prints a table and writes JSON (default benchmarks/results/programs_gpu-<native|runner>.json);
exits 1 unless every program passed. Needs only the standard library.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import platform
import re
import shlex
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_TIMEOUT_S = 300


@dataclass
class Outcome:
    """How one program ran."""

    name: str
    status: str          # "pass", "wrong output", "exit N", "signal NAME", "timeout"
    matched: str         # the expected file its stdout equals ("" if none)
    alternative: bool    # it matched a clean refusal, not NVIDIA's own output
    exit_status: int | None
    seconds: float
    diff: str            # against the first expected output, when none matched
    stderr_tail: str

    @property
    def passed(self) -> bool:
        return self.status == "pass"


def run_environment(directory: Path) -> dict[str, str]:
    """This process's environment with DIR/lib last on LD_LIBRARY_PATH."""
    env = dict(os.environ)
    paths = [p for p in env.get("LD_LIBRARY_PATH", "").split(os.pathsep) if p]
    env["LD_LIBRARY_PATH"] = os.pathsep.join([*paths, str(directory / "lib")])
    return env


def _status(exit_status: int, matched: str) -> str:
    if exit_status < 0:
        return f"signal {signal.Signals(-exit_status).name}"
    if exit_status != 0:
        return f"exit {exit_status}"
    return "pass" if matched else "wrong output"


def run_program(directory: Path, name: str, expected: dict[str, str], runner: list[str],
                timeout_s: float) -> Outcome:
    """Runs DIR/name (under `runner`, if any) and judges its stdout and exit status."""
    start = time.perf_counter()
    try:
        done = subprocess.run([*runner, str(directory / name)], cwd=directory,
                              env=run_environment(directory), capture_output=True,
                              timeout=timeout_s)
    except subprocess.TimeoutExpired as e:
        stderr = (e.stderr or b"").decode(errors="replace")
        return Outcome(name, "timeout", "", False, None, time.perf_counter() - start, "",
                       stderr[-2000:])
    seconds = time.perf_counter() - start
    stdout = done.stdout.decode(errors="replace")
    matched = next((file for file, text in expected.items() if stdout == text), "")
    first_name, first = next(iter(expected.items()))
    diff = "" if matched else "".join(difflib.unified_diff(
        first.splitlines(keepends=True), stdout.splitlines(keepends=True), "expected", "got"))
    return Outcome(name, _status(done.returncode, matched), matched,
                   bool(matched) and matched != first_name, done.returncode, seconds, diff,
                   done.stderr.decode(errors="replace")[-2000:])


def print_table(outcomes: list[Outcome]) -> None:
    width = max(len(o.name) for o in outcomes)
    print(f"{'program':<{width}}  {'result':<14} {'matched':<36} {'s':>7}")
    for o in outcomes:
        print(f"{o.name:<{width}}  {o.status:<14} {o.matched:<36} {o.seconds:7.2f}")
    for o in outcomes:
        if not o.passed:
            print(f"\n--- {o.name}: {o.status}")
            print(o.diff or "(stdout as expected)")
            print(f"stderr (end):\n{o.stderr_tail}")
    refused = sum(o.passed and o.alternative for o in outcomes)
    passed = sum(o.passed for o in outcomes)
    print(f"\npassed {passed}/{len(outcomes)} ({refused} of them by a clean refusal)")


def default_json_path(runner: list[str]) -> Path:
    label = "native" if not runner else re.sub(r"[^A-Za-z0-9]+", "_", " ".join(runner)).strip("_")
    return ROOT / "benchmarks" / "results" / f"programs_gpu-{label}.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", type=Path, help="made by programs_harness.py --out")
    parser.add_argument("names", nargs="*", help="programs to run (default: all)")
    parser.add_argument("--runner", default="", help="a command put before each program")
    parser.add_argument("--jobs", "-j", type=int, default=4, help="programs run at once")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S,
                        help="seconds per program")
    parser.add_argument("--json", type=Path, help="where to write the results")
    args = parser.parse_args(argv)
    directory = args.directory.resolve()
    programs = json.loads((directory / "manifest.json").read_text())["programs"]
    names = args.names or list(programs)
    runner = shlex.split(args.runner)
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        outcomes = list(pool.map(
            lambda n: run_program(directory, n, programs[n]["expected"], runner, args.timeout),
            names))
    print_table(outcomes)
    path = args.json or default_json_path(runner)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({
        "runner": args.runner, "host": platform.node(), "directory": str(directory),
        "passed": sum(o.passed for o in outcomes), "total": len(outcomes),
        "programs": [asdict(o) for o in outcomes],
    }, indent=1) + "\n")
    print(f"wrote {path}")
    return 0 if all(o.passed for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
