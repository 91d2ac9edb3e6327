"""tests/programs/texture_object.cu, texture_cubemap.cu and texture_mipmap.cu under `ptxport
run` use real textures on cpu and opencl:0: cudaMallocArray, cudaMalloc3DArray (cube maps
included), cudaMallocMipmappedArray, cudaMemcpy2DToArray, cudaMemcpy3D and
cudaCreateTextureObject reach compat/textures.py through NVIDIA's static cudart and through
ptxport's libcudart.so.13 (the _shared_cudart build), and the kernels' tex instructions the
sampler. (The corpus test also accepts a clean refusal from a runtime without textures; this
one does not.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import programs_harness as harness
import pytest

from ptxport.runtime.backends import availability

REPOSITORY = Path(__file__).resolve().parents[2]
DEVICES = ["cpu", pytest.param("opencl:0", marks=pytest.mark.skipif(
    not availability("opencl")[0], reason="no OpenCL device for SPIR-V: "
                                          f"{availability('opencl')[1]}"))]


@pytest.fixture(scope="module", params=["texture_object", "texture_cubemap",
                                        "texture_object_shared_cudart", "texture_mipmap"])
def program(request) -> tuple[str, Path]:
    try:
        return request.param, harness.build(request.param)
    except harness.ToolkitMissingError as e:
        pytest.skip(f"cannot build the program here: {e}")


@pytest.mark.parametrize("device", DEVICES)
def test_texture_programs_use_textures(program, device):
    name, binary = program
    env = {**os.environ, "PYTHONPATH": str(REPOSITORY)}
    done = subprocess.run([sys.executable, "-m", "ptxport.cli", "run", "--device", device, "--",
                           str(binary)], capture_output=True, text=True, timeout=300, env=env,
                          cwd=binary.parent)
    # NVIDIA's output, the manifest's first: not the refusal it also accepts
    first = harness.load_manifest()[name].expected[0]
    expected = (harness.PROGRAM_DIR / "expected" / first).read_text()
    assert (done.returncode, done.stdout) == (0, expected), done.stderr[-2000:]
