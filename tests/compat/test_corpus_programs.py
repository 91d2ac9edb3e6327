"""The whole-program corpus (tests/programs/, issue 14) under `ptxport run`, on cpu and opencl:0.

Each program is built once by tests/programs_harness.py (cached on disk) and run unmodified
as `ptxport run --device D -- ./program`; it passes when it exits 0 and its stdout equals one
of its accepted outputs (NVIDIA's, or a clean refusal the manifest allows). The runs of the
session's selected tests (each building its program first, when the cache lacks it) start when
collection ends (start_early, called by tests/conftest.py), one at a time while the rest of the
suite runs in this process, two at a time (this machine's cores) once this file's tests wait
for them; each test waits for its own.

A program that does not pass on a device yet is listed in NOT_YET with the reason, and its
test asserts that it still fails: when it starts passing, the test fails until the program
is taken off the list.
"""

from __future__ import annotations

import difflib
import os
import subprocess
import sys
from concurrent.futures import Future
from pathlib import Path

import background
import programs_harness as harness
import pytest

from ptxport.runtime.backends import availability

REPOSITORY = Path(__file__).resolve().parents[2]
DEVICES = ("cpu", "opencl:0")
MANIFEST = harness.load_manifest()
PARALLEL_RUNS = 2
# per run, against a hang: thrust_cub's first run compiles cub's kernels for minutes (it ran
# past 300 s once on a loaded 2-core machine)
TIMEOUT_S = 600

# device -> program -> why it does not pass there yet
NOT_YET: dict[str, dict[str, str]] = {
    "cpu": {},
    "opencl:0": {
        "stack_limit": "its recursion keeps a local array whose address the next level "
                       "takes, which the SPIR-V target refuses (Intel's OpenCL compiler "
                       "crashed on such recursion)",
    },
}
# device -> program -> why it is not run there at all
SKIPPED: dict[str, dict[str, str]] = {
    "cpu": {
    },
    "opencl:0": {
        "thrust_cub": "passes, in 9 min 44 s (6 min 31 s of CPU) on a loaded 2-core machine, "
                      "most of it Intel's OpenCL compiler building cub's kernels (the onesweep "
                      "radix sort's 607 KB of SPIR-V: 216 s), past the test's time limit",
        "kernel_params": "Intel's OpenCL compiler spent over 200 s (in LLVM's SelectionDAG) on "
                         "the kernel that sums a 2 KiB struct parameter, which would hold the "
                         "suite for as long",
    },
}

# device -> programs that must give NVIDIA's own output there, not a refusal the manifest
# allows elsewhere
SUPPORTED: dict[str, set[str]] = {
    "cpu": {"dynamic_parallelism"},
    "opencl:0": set(),
}


def _available(device: str) -> tuple[bool, str]:
    return availability(device.partition(":")[0])


def _runs(device: str, name: str) -> bool:
    """Whether the test of `name` on `device` runs the program (the device is here, and the
    program is not SKIPPED there)."""
    return _available(device)[0] and name not in SKIPPED[device]


def _selected(session: pytest.Session) -> list[tuple[str, str]]:
    """(device, program) of this file's tests that the session will run, in their order."""
    pairs = [(item.callspec.params["device"], item.callspec.params["name"])
             for item in session.items
             if item.path == Path(__file__) and hasattr(item, "callspec")]
    return [pair for pair in pairs if _runs(*pair)]


def _build_and_run(device: str, name: str) -> subprocess.CompletedProcess:
    binary = harness.build(name)
    command = [sys.executable, "-m", "ptxport.cli", "run", "--device", device, "--",
               str(binary)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(REPOSITORY), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return background.run(command, TIMEOUT_S, env=env, cwd=binary.parent)


# the session's runs by (device, program) (start_early), or why the corpus cannot be built
_RUNS: dict[tuple[str, str], Future] | str | None = None


def start_early(session: pytest.Session) -> None:
    """Queues the runs of this file's selected tests in the background (tests/background.py;
    tests/conftest.py calls this when collection ends)."""
    global _RUNS
    try:
        harness.toolkit_root()
    except harness.ToolkitMissingError as e:
        _RUNS = f"cannot build the corpus here: {e}"
        return
    _RUNS = {pair: background.submit(_build_and_run, *pair, on_stop=harness.stop_builds)
             for pair in _selected(session)}


@pytest.fixture(scope="module")
def corpus_runs() -> dict[tuple[str, str], Future]:
    """The runs of every selected (device, program), started by start_early, PARALLEL_RUNS
    at a time while this file's tests wait for them: each future is the finished process."""
    if isinstance(_RUNS, str):
        pytest.skip(_RUNS)
    assert _RUNS is not None, "tests/conftest.py calls start_early when collection ends"
    background.allow(PARALLEL_RUNS)
    yield _RUNS
    background.allow(1)


def _explained(name: str, result: subprocess.CompletedProcess) -> str:
    expected = next(iter(MANIFEST[name].expected_outputs().values()))
    diff = "".join(difflib.unified_diff(expected.splitlines(keepends=True),
                                        result.stdout.splitlines(keepends=True),
                                        "expected", "got"))
    return (f"{name}: exit status {result.returncode}\n{diff or '(stdout as expected)'}\n"
            f"stderr:\n{result.stderr[-3000:]}")


def _passed(name: str, result: subprocess.CompletedProcess) -> bool:
    return result.returncode == 0 and MANIFEST[name].matching_output(result.stdout) is not None


@pytest.mark.parametrize("name", list(MANIFEST))
@pytest.mark.parametrize("device", DEVICES)
def test_program_under_ptxport_run(device: str, name: str, corpus_runs):
    available, why = _available(device)
    if not available:
        pytest.skip(f"no {device} here: {why}")
    if name in SKIPPED[device]:
        pytest.skip(SKIPPED[device][name])
    result = corpus_runs[device, name].result()
    if name in NOT_YET[device]:
        assert not _passed(name, result), \
            f"{name} passes on {device} now: take it off NOT_YET[{device!r}]"
        return
    assert _passed(name, result), _explained(name, result)
    if name in SUPPORTED[device]:
        assert MANIFEST[name].matching_output(result.stdout) == MANIFEST[name].expected[0], \
            f"{name} refused on {device}, which supports it:\n{result.stderr[-3000:]}"


def test_lists_name_programs_of_the_manifest():
    for listed in (NOT_YET, SKIPPED, SUPPORTED):
        for device, programs in listed.items():
            assert set(programs) <= set(MANIFEST), device
