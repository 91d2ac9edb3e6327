"""How the opencl backend finds Intel's OpenCL CPU runtime from PyPI (intel-opencl-rt) after
`pip install 'ptxport[opencl]'`: with no OpenCL setup by the user, beside the system's ICDs,
and never instead of the user's own OCL_ICD_VENDORS.

Skipped where the wheel is not installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ptxport.runtime.backends import opencl

pytestmark = pytest.mark.skipif(opencl._wheel_library_dir() is None,
                                reason="intel-opencl-rt is not installed in this environment")

# The user's first program: a kernel on opencl:0, in a process whose environment says nothing
# about OpenCL (no OCL_ICD_VENDORS, no LD_LIBRARY_PATH).
_FIRST_PROGRAM = r"""
import numpy as np
from ptxport import Device, LaunchConfig, Program, launch

PTX = '''
.version 8.0
.target sm_80
.address_size 64
.visible .entry twice(.param .u64 x)
{
    .reg .b32 %r<3>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [x];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    ld.global.u32 %r2, [%rd3];
    shl.b32 %r2, %r2, 1;
    st.global.u32 [%rd3], %r2;
    ret;
}
'''
dev = Device("opencl:0")
dev.set_current()
stream = dev.create_stream()
kernel = Program(PTX, code_type="ptx").compile("native").get_kernel("twice")
host = np.arange(64, dtype=np.uint32)
x = dev.allocate(host.nbytes, stream=stream)
x.copy_from(host, stream=stream)
launch(stream, LaunchConfig(grid=1, block=64), kernel, x)
out = np.empty_like(host)
x.copy_to(out, stream=stream)
stream.sync()
assert (out == 2 * host).all(), out
print("ran on", dev)
"""


def test_a_clean_environment_finds_the_wheel_runtime(tmp_path):
    root = Path(__file__).resolve().parents[2]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path),
           "PYTHONPATH": str(root), "PTXPORT_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", _FIRST_PROGRAM], env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert "ran on opencl:0" in done.stdout


def test_platforms_listed_before_ptxport_get_a_hint(tmp_path):
    root = Path(__file__).resolve().parents[2]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path),
           "PYTHONPATH": str(root), "PTXPORT_CACHE_DIR": str(tmp_path / "cache")}
    program = ("import pyopencl\ntry:\n    pyopencl.get_platforms()\nexcept pyopencl.Error:\n"
               "    pass\nfrom ptxport.runtime.backends import availability\n"
               "print(availability('opencl')[1])")
    done = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert "pyopencl was imported before ptxport could make the ICD loader see it; set " \
        f"OCL_ICD_VENDORS={tmp_path / 'cache'}" in done.stdout


def _icd_files(directory: str) -> dict[str, str]:
    return {p.name: p.read_text() for p in Path(directory).iterdir()}


def test_the_system_icds_stay_visible(tmp_path, monkeypatch):
    vendors = tmp_path / "vendors"
    vendors.mkdir()
    (vendors / "other.icd").write_text("libOtherOpenCL.so.1\n")
    monkeypatch.setenv("OPENCL_VENDOR_PATH", str(vendors))
    monkeypatch.setenv("PTXPORT_CACHE_DIR", str(tmp_path / "cache"))
    files = _icd_files(opencl.wheel_icd_directory.__wrapped__())
    assert files.pop("other.icd") == "libOtherOpenCL.so.1\n"
    assert [text.strip() for text in files.values()] == [
        str(opencl._wheel_library_dir() / "libintelocl.so")]


def test_a_system_intel_runtime_is_not_listed_twice(tmp_path, monkeypatch):
    vendors = tmp_path / "vendors"
    vendors.mkdir()
    (vendors / "intel64.icd").write_text("/opt/intel/oneapi/lib/libintelocl.so\n")
    monkeypatch.setenv("OPENCL_VENDOR_PATH", str(vendors))
    monkeypatch.setenv("PTXPORT_CACHE_DIR", str(tmp_path / "cache"))
    assert _icd_files(opencl.wheel_icd_directory.__wrapped__()) == {
        "intel64.icd": "/opt/intel/oneapi/lib/libintelocl.so\n"}


def test_the_users_own_vendors_setting_is_kept(monkeypatch):
    monkeypatch.setenv("OCL_ICD_VENDORS", "/somewhere/of/the/users")
    opencl._register_wheel_runtime.__wrapped__()
    assert os.environ["OCL_ICD_VENDORS"] == "/somewhere/of/the/users"
