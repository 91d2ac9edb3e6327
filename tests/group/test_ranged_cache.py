"""The block_range pass's kernel is a different kernel from the program's: it must never
share a compiled image with it. Both came from the same PTX text, and the CPU image cache
(codegen/targets/cpu/image.py, on disk, shared by every process) keys images by the module's
source text and the kernel's name; the pass kept the original module's source, so whichever
of the two was compiled first was loaded for the other. A group member then ran the plain
kernel on its sub-grid: reduce_sum_i32 (a grid-stride loop, then one atomicAdd per block)
summed the whole input on each member, and the group returned twice the sum; the plain
kernel, loaded after the ranged one, read hidden parameters past its parameter buffer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.codegen.targets.cpu.compile import image_key
from ptxport.codegen.targets.cpu.options import CpuOptions
from ptxport.frontends import nvrtc
from ptxport.passes import block_range
from ptxport.runtime.group import DeviceGroup

pytestmark = pytest.mark.skipif(not nvrtc.available()[0], reason="NVRTC builds the kernel")
SOURCE = Path(__file__).resolve().parents[1] / "kernels" / "reduce_shared.cu"
N = 20000
CONFIG = LaunchConfig(grid=8, block=256)


def _code():
    """A new ObjectCode each time (nothing compiled is kept between two of them in memory:
    only the disk cache is shared), from NVRTC's cached PTX."""
    return Program(SOURCE.read_text(), "c++").compile()


def _input():
    return np.random.default_rng(3).integers(-1000, 1000, N).astype(np.int32)


def _on_cpu(x) -> int:
    cpu = Device("cpu")
    stream = cpu.create_stream()
    bx, out = cpu.allocate(x.nbytes), cpu.allocate(4)
    bx.copy_from(x, stream=stream)
    out.copy_from(np.array([5], np.int32), stream=stream)
    launch(stream, CONFIG, _code().get_kernel("reduce_sum_i32"), bx, out, np.int32(N))
    host = np.empty(1, np.int32)
    out.copy_to(host, stream=stream)
    stream.sync()
    return int(host[0])


def _on_group(x) -> int:
    group = DeviceGroup(["cpu", "cpu"])
    try:
        gx, out = group.allocate(x.nbytes), group.allocate(4)
        gx.copy_from(x.view(np.uint8))
        out.copy_from(np.array([5], np.int32).view(np.uint8))
        group.launch(CONFIG, _code().get_kernel("reduce_sum_i32"), gx, out, np.int32(N))
        assert group.last_plan.split
        return int(out.copy_to(np.empty(1, np.int32))[0])
    finally:
        group.close()


@pytest.mark.parametrize("group_first", [False, True], ids=["plain-first", "group-first"])
def test_plain_and_ranged_kernels_do_not_share_cached_images(group_first, tmp_path,
                                                             monkeypatch):
    _code()      # (NVRTC's PTX, cached in the usual place, before the cache moves)
    monkeypatch.setenv("PTXPORT_CACHE_DIR", str(tmp_path))    # no image compiled yet
    x = _input()
    want = 5 + int(x.sum())
    order = [_on_group, _on_cpu] if group_first else [_on_cpu, _on_group]
    for run in order:
        assert run(x) == want, f"{run.__name__} after the other one filled the image cache"


def test_ranged_module_has_its_own_image_key():
    module = _code().get_kernel("reduce_sum_i32").object_code.module
    ranged = block_range.run(module, "reduce_sum_i32")
    options = CpuOptions()
    for block in (None, (256, 1, 1)):
        assert image_key(ranged, "reduce_sum_i32", block, options) != \
            image_key(module, "reduce_sum_i32", block, options)
    # error messages still point into the program's PTX
    pos = module.functions["reduce_sum_i32"].pos
    assert ranged.location(pos) == module.location(pos)


def test_member_running_native_ptx_is_refused(monkeypatch):
    """cuda's ptx_source 'native' compiles the module's source text, which is the program's
    kernel, not the pass's: a member there would run every block of the whole grid."""
    from ptxport.errors import UnsupportedFeatureError
    from ptxport.runtime.backends import get

    monkeypatch.setattr(get("cpu"), "ptx_source", "native", raising=False)
    group = DeviceGroup(["cpu", "cpu"])
    try:
        x = _input()
        gx, out = group.allocate(x.nbytes), group.allocate(4)
        with pytest.raises(UnsupportedFeatureError, match="ptx_source"):
            group.launch(CONFIG, _code().get_kernel("reduce_sum_i32"), gx, out, np.int32(N))
    finally:
        group.close()
