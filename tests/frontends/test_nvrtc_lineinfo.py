"""Line information from NVRTC: -lineinfo by default, -G on request, both readable by ptxport.

With line information the PTX carries `.file` and `.loc` directives (PTX ISA, "Debugging
Directives"), which error messages use to name the .cu line; the parser must accept them
wherever NVRTC puts them, and with -G also the `.section .debug_*` blocks.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from ptxport.frontends import nvrtc
from ptxport.frontends.nvrtc import NvrtcOptions, compile_to_ptx
from ptxport.ir.from_ptx import build
from ptxport.ir.verify import verify
from ptxport.ptx.parser import parse
from ptxport.runtime.program import Program, ProgramOptions

HAVE_NVRTC, WHY_NOT = nvrtc.available()
pytestmark = pytest.mark.skipif(not HAVE_NVRTC, reason=WHY_NOT)

# The store is on line 5: .loc directives must name it.
SCALE = textwrap.dedent("""\
    extern "C" __global__ void scale(float* x, float a, int n)
    {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n)
            x[i] = a * x[i];
    }
    """)


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PTXPORT_CACHE_DIR", str(tmp_path))
    return tmp_path / "nvrtc"


def _loc_lines(ptx: str) -> set[int]:
    """The source lines named by the .loc directives of file 1."""
    lines = set()
    for line in ptx.splitlines():
        words = line.split()
        if words[:2] == [".loc", "1"]:
            lines.add(int(words[2]))
    return lines


def test_lineinfo_is_on_by_default(cache_dir):
    ptx = compile_to_ptx(SCALE, "scale.cu")
    assert any(line.split()[:2] == [".file", "1"] for line in ptx.splitlines())
    assert 5 in _loc_lines(ptx)
    assert ".debug_info" not in ptx


def test_lineinfo_can_be_turned_off(cache_dir):
    ptx = compile_to_ptx(SCALE, "scale.cu", NvrtcOptions(lineinfo=False))
    assert ".loc" not in ptx and ".file" not in ptx


def test_debug_gives_full_debug_information(cache_dir):
    ptx = compile_to_ptx(SCALE, "scale.cu", NvrtcOptions(debug=True))
    assert ".section\t.debug_info" in ptx or ".section .debug_info" in ptx
    assert 5 in _loc_lines(ptx)


@pytest.mark.parametrize("options", [NvrtcOptions(), NvrtcOptions(debug=True)],
                         ids=["lineinfo", "debug"])
def test_ptx_with_line_information_reads_into_verified_ir(cache_dir, options):
    module = build(parse(compile_to_ptx(SCALE, "scale.cu", options), "scale.cu"))
    verify(module)
    assert [f.name for f in module.kernels] == ["scale"]


def test_cache_key_covers_lineinfo_and_debug(cache_dir):
    compile_to_ptx(SCALE, "scale.cu")
    compile_to_ptx(SCALE, "scale.cu", NvrtcOptions(lineinfo=False))
    compile_to_ptx(SCALE, "scale.cu", NvrtcOptions(debug=True))
    assert len(list(cache_dir.glob("*.ptx"))) == 3


def test_program_options_pass_lineinfo_and_debug(cache_dir):
    def ptx(**fields) -> str:
        options = ProgramOptions(arch="sm_80", name="scale.cu", **fields)
        return Program(SCALE, "c++", options).compile().ptx

    assert 5 in _loc_lines(ptx())
    assert ".loc" not in ptx(lineinfo=False)
    assert ".debug_info" in ptx(debug=True)
