"""Every corpus program natively and under `ptxport run --device cuda:0`, side by side.

Issue 14's GPU check: ptxport's PTX translation and its drop-in libcuda/libcudart run whole
programs on the real GPU (through NVIDIA's driver, which ptxport's cuda backend loads by path
inside the shim) with the results of NVIDIA's own runtime. For each program of a directory
made by `python tests/programs_harness.py --out DIR` (or --build DIR here, which needs the
nvcc wheels), runs it natively (the oracle) and under ptxport, and prints one row per
program: each run's verdict against the expected outputs (benchmarks/programs_gpu.py's
rules), whether the two runs' stdout and exit status are equal, and their times side by side.

    python benchmarks/programs_ptxport_gpu.py DIR [NAME ...] [--device cuda:0] [-j 4]

A program that is missing, or whose run fails in any way, is one row saying so; the others
run on. Writes JSON (default benchmarks/results/programs_ptxport_gpu-<device>.json); exits 1
unless every program passes under ptxport with the native run's stdout and exit status.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from programs_gpu import DEFAULT_TIMEOUT_S, Outcome, run_program

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Row:
    """One program, run both ways."""

    name: str
    native: Outcome
    ptxport: Outcome

    @property
    def same_stdout(self) -> bool:
        """Equal verdicts on equal outputs: both matched the same expected file, or (when
        neither matched) both failed the same way."""
        return self.native.matched == self.ptxport.matched and \
            self.native.diff == self.ptxport.diff

    @property
    def same_exit(self) -> bool:
        return self.native.exit_status == self.ptxport.exit_status

    @property
    def agrees(self) -> bool:
        return self.ptxport.passed and self.same_stdout and self.same_exit


def _failed(name: str, status: str, detail: str) -> Outcome:
    return Outcome(name, status, "", False, None, 0.0, "", detail[-2000:])


def run_safely(directory: Path, name: str, expected: dict[str, str], runner: list[str],
               timeout_s: float) -> Outcome:
    """run_program, with a missing program or any failure of the run as an outcome."""
    if not (directory / name).is_file():
        return _failed(name, "missing", f"{directory / name} does not exist")
    if not expected:
        return _failed(name, "no expected output", "the manifest lists none")
    try:
        return run_program(directory, name, expected, runner, timeout_s)
    except Exception:   # one row, not the whole table
        return _failed(name, "error", traceback.format_exc())


def _expected(directory: Path, entry: dict) -> dict[str, str]:
    """{file: text} of a program's accepted outputs (manifest.json written by --out holds
    them inline; the repository's manifest names files in expected/)."""
    expected = entry.get("expected", {})
    if isinstance(expected, dict):
        return expected
    texts = {}
    for file in expected:
        path = directory / "expected" / file
        if path.is_file():
            texts[file] = path.read_text()
    return texts


def ptxport_runner(device: str) -> list[str]:
    return [sys.executable, "-m", "ptxport.cli", "run", "--device", device, "--"]


def run_both(directory: Path, name: str, entry: dict, device: str, timeout_s: float) -> Row:
    expected = _expected(directory, entry)
    native = run_safely(directory, name, expected, [], timeout_s)
    under = run_safely(directory, name, expected, ptxport_runner(device), timeout_s)
    return Row(name, native, under)


def print_table(rows: list[Row], device: str) -> None:
    width = max(len(r.name) for r in rows)
    print(f"{'program':<{width}}  {'native':<14} {'ptxport ' + device:<16} {'stdout':<7} "
          f"{'exit':<5} {'native s':>8} {'ptxport s':>9} {'ratio':>7}")
    for r in rows:
        ratio = r.ptxport.seconds / r.native.seconds if r.native.seconds else float("nan")
        print(f"{r.name:<{width}}  {r.native.status:<14} {r.ptxport.status:<16} "
              f"{'same' if r.same_stdout else 'DIFF':<7} "
              f"{'same' if r.same_exit else 'DIFF':<5} {r.native.seconds:8.2f} "
              f"{r.ptxport.seconds:9.2f} {ratio:7.1f}")
    for r in rows:
        if not r.agrees:
            print(f"\n--- {r.name}: native {r.native.status}, ptxport {r.ptxport.status}")
            print(r.ptxport.diff or "(ptxport's stdout as expected)")
            print(f"ptxport's stderr (end):\n{r.ptxport.stderr_tail}")
    print(f"\nnative passed {sum(r.native.passed for r in rows)}/{len(rows)}; under ptxport "
          f"{sum(r.ptxport.passed for r in rows)}/{len(rows)}; same stdout and exit status "
          f"as native and passing: {sum(r.agrees for r in rows)}/{len(rows)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", type=Path, help="made by programs_harness.py --out")
    parser.add_argument("names", nargs="*", help="programs to run (default: all)")
    parser.add_argument("--device", default="cuda:0", help="ptxport's device (cuda:0)")
    parser.add_argument("--build", action="store_true",
                        help="build the corpus into DIR first (needs the nvcc wheels)")
    parser.add_argument("--jobs", "-j", type=int, default=4, help="programs run at once")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S,
                        help="seconds per run")
    parser.add_argument("--json", type=Path, help="where to write the results")
    args = parser.parse_intermixed_args(argv)
    directory = args.directory.resolve()
    # `python -m ptxport.cli` in the runs: this checkout's ptxport
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    if args.build:
        sys.path.insert(0, str(ROOT / "tests"))
        import programs_harness

        programs_harness.export(directory, args.names or None)
    programs = json.loads((directory / "manifest.json").read_text())["programs"]
    names = args.names or list(programs)
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        rows = list(pool.map(lambda n: run_both(directory, n, programs.get(n, {}),
                                                args.device, args.timeout), names))
    print_table(rows, args.device)
    label = re.sub(r"[^A-Za-z0-9]+", "_", args.device)
    path = args.json or ROOT / "benchmarks" / "results" / f"programs_ptxport_gpu-{label}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({
        "device": args.device, "host": platform.node(), "directory": str(directory),
        "seconds": time.perf_counter() - start,
        "native_passed": sum(r.native.passed for r in rows),
        "ptxport_passed": sum(r.ptxport.passed for r in rows),
        "agree": sum(r.agrees for r in rows), "total": len(rows),
        "programs": [{"name": r.name, "same_stdout": r.same_stdout, "same_exit": r.same_exit,
                      "native": asdict(r.native), "ptxport": asdict(r.ptxport)}
                     for r in rows],
    }, indent=1) + "\n")
    print(f"wrote {path}")
    return 0 if all(r.agrees for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
