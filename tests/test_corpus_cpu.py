"""The whole kernel corpus on the CPU device, through the public API, against numpy.

Every case of tests/kernel_cases runs here. A kernel that needs an instruction the CPU
target does not lower yet is listed in NOT_YET with the reason, and its test asserts that
it is still refused with UnsupportedFeatureError (so the list cannot silently go stale:
when support lands, the test fails until the kernel is taken off the list).

Kernels run as warp gangs where that path takes them (codegen/targets/cpu/gang/); those also
run on the scalar path (CpuOptions(gang=False)), so that both stay checked against numpy.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import background
import numpy as np
import pytest

from corpus import KERNEL_DIR, corpus_ptx
from kernel_cases import CASES, KernelCase, run_case
from kernel_cases.runtime import run_on_device
from ptxport import Device, Program
from ptxport.errors import UnsupportedFeatureError

# kernel name -> why it cannot run on the CPU yet
NOT_YET: dict[str, str] = {}

# The benchmark's kernels (benchmarks/cpu_kernels.py) that must run as warp gangs: a change
# that sends one back to the scalar path is a large slowdown, and fails here with the reason.
GANG_KERNELS = {"saxpy", "vector_add_f32", "reduce_sum_i32", "reduce_sum_warp_f64",
                "sgemm_tiled", "transpose_shared_padded", "scan_exclusive_blelloch",
                "scan_block_inclusive", "histogram_shared", "stencil_2d_5pt",
                "softmax_rows_warp"}

_PROGRAMS: dict[tuple[str, bool], object] = {}


def _program(file: str, gang: bool = True):
    if (file, gang) not in _PROGRAMS:
        ptx = corpus_ptx(KERNEL_DIR / file, "sm_80")
        _PROGRAMS[file, gang] = Program(ptx, code_type="ptx").compile("native")
    return _PROGRAMS[file, gang]


def cpu_launcher(case: KernelCase, args, gang: bool = True) -> dict[int, np.ndarray]:
    """The kernel_cases launcher contract, on Device("cpu")."""
    kernel = _program(case.file, gang).get_kernel(case.kernel)
    return run_on_device(Device("cpu"), kernel, case, args)


# cases a background process compiles at once (tests/warm_corpus.py), and its time limit
_WARM_CHUNK, _WARM_TIMEOUT_S = 40, 900


def warm_in_background(session: pytest.Session, test_file: str, device: str) -> None:
    """Queues the compiles of `test_file`'s selected cases for `device` in the background
    (tests/background.py): processes of their own write the disk cache that the file's tests
    then load. Nothing waits for them: a test that comes first compiles its kernel itself.
    The last cases go first, so that tests that catch up with them meet them halfway instead
    of compiling the same kernels at the same time."""
    names = list(dict.fromkeys(item.callspec.params["case"].name for item in session.items
                               if item.path == Path(test_file) and hasattr(item, "callspec")))
    names.reverse()
    command = [sys.executable, str(Path(__file__).with_name("warm_corpus.py")), device]
    for start in range(0, len(names), _WARM_CHUNK):
        background.submit(background.run, [*command, *names[start:start + _WARM_CHUNK]],
                          _WARM_TIMEOUT_S)


def start_early(session: pytest.Session) -> None:
    """(tests/conftest.py calls this when collection ends)"""
    warm_in_background(session, __file__, "cpu")


def _binary(case: KernelCase):
    return _program(case.file)._binary(Device("cpu"), case.kernel)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_kernel_on_cpu(case: KernelCase):
    if case.kernel in NOT_YET:
        with pytest.raises(UnsupportedFeatureError):
            run_case(case, cpu_launcher)
        return
    run_case(case, cpu_launcher)
    if case.kernel in GANG_KERNELS:
        assert _binary(case).gang_refusal is None, _binary(case).gang_refusal


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_kernel_on_cpu_scalar_path(case: KernelCase, cpu_options):
    if case.kernel in NOT_YET or _binary(case).gang_refusal is not None:
        pytest.skip("runs on the scalar path in test_kernel_on_cpu already")
    cpu_options(gang=False)
    run_case(case, lambda c, args: cpu_launcher(c, args, gang=False))
    assert _program(case.file, False)._binary(Device("cpu"), case.kernel).gang_refusal


def test_the_background_compiles_are_what_the_tests_load(tmp_path, monkeypatch, cpu_options):
    """start_early's process (tests/warm_corpus.py) writes the images this file's tests
    load: with its cache, a case runs on both paths without compiling anything."""
    case = next(c for c in CASES if c.kernel == "saxpy")
    subprocess.run([sys.executable, str(Path(__file__).with_name("warm_corpus.py")), "cpu",
                    case.name], env={**os.environ, "PTXPORT_CACHE_DIR": str(tmp_path)},
                   check=True)
    from ptxport.codegen.targets.cpu import compile as cpu_compile

    def compiled(*args):
        raise AssertionError(f"compiled {args[1]}: the background left no image of it")
    monkeypatch.setenv("PTXPORT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cpu_compile, "_compile", compiled)
    monkeypatch.setattr(sys.modules[__name__], "_PROGRAMS", {})
    run_case(case, cpu_launcher)
    cpu_options(gang=False)
    run_case(case, lambda c, args: cpu_launcher(c, args, gang=False))
