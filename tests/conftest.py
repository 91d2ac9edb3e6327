"""Shared test setup: tests import helper modules (corpus.py) from this directory."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import background  # (a helper module of this directory, like corpus.py)


@pytest.fixture(autouse=True)
def _no_current_device_left_behind():
    """A test that makes a device current (Device.set_current) does so for itself only:
    afterwards Device() is again the best device present, whatever order tests run in."""
    yield
    from ptxport.runtime import device

    device._current.__dict__.pop("device", None)


@pytest.fixture
def cpu_options(monkeypatch):
    """Choose the CPU code generator's options (CpuOptions) for the kernels this test
    compiles on Device("cpu"): `cpu_options(gang=False)` runs them thread by thread."""
    from ptxport.codegen.targets.cpu.options import CpuOptions
    from ptxport.runtime import backends

    def use(**choices) -> None:
        monkeypatch.setattr(backends.get("cpu"), "options", CpuOptions(**choices))
    return use


@pytest.fixture
def one_worker():
    """Device("cpu") runs each launch's blocks on one worker, in block order, for the test: a
    fault test whose launch faults in several blocks names the first of them (with more
    workers, blocks fault at once and any of them may be the one reported, as on a GPU)."""
    from ptxport.runtime.backends.cpu import executor

    executor.set_workers(1)
    yield
    executor.set_workers(None)


# Fixtures that build the whole CUDA program corpus with nvcc (tests/programs_harness.py) take
# many minutes on a cold cache and a 2-core machine; the builds are cached, so only the first
# test to ask pays. pytest-timeout counts fixture setup, so those tests get a longer limit.
_CORPUS_BUILDING_FIXTURES = {"corpus_runs", "binaries"}


def pytest_collection_modifyitems(items):
    for item in items:
        if _CORPUS_BUILDING_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.timeout(1800))


def pytest_collection_finish(session):
    """A test module's `start_early(session)`, when it has one, queues slow subprocess work
    of its selected tests as soon as collection ends (tests/background.py: the program
    corpus's builds and runs, the kernel corpus's compiles for cpu, opencl:0 and AMDGPU): this
    process keeps one core busy with the tests before them, and the work takes another."""
    if session.config.option.collectonly:
        return
    session.config.add_cleanup(background.stop)
    modules = dict.fromkeys(item.module for item in session.items
                            if isinstance(item, pytest.Function))
    for module in modules:
        start = getattr(module, "start_early", None)
        if start is not None:
            start(session)
