"""Shared test setup: tests import helper modules (corpus.py) from this directory."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _register_intel_opencl_runtime() -> None:
    """Intel's OpenCL CPU runtime from PyPI (intel-opencl-rt), when installed, is made visible
    to the ICD loader for this test run only: OCL_ICD_VENDORS names a temporary directory with
    an ICD file for its libintelocl.so (the system's OpenCL setup is left as it is)."""
    import os

    try:
        from ptxport.runtime.backends.opencl import wheel_icd_directory
    except ImportError:
        return
    directory = wheel_icd_directory()
    if directory is not None and "OCL_ICD_VENDORS" not in os.environ:
        os.environ["OCL_ICD_VENDORS"] = directory


_register_intel_opencl_runtime()


@pytest.fixture(autouse=True)
def _no_current_device_left_behind():
    """A test that makes a device current (Device.set_current) does so for itself only:
    afterwards Device() is again the best device present, whatever order tests run in."""
    yield
    from ptxport.runtime import device

    device._current.__dict__.pop("device", None)
