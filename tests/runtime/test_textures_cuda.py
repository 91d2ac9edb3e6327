"""Texture and surface objects on cuda devices, where they are the driver's own
(runtime/backends/cuda_textures.py) and ptxport's NVPTX kernels sample with the texture units.

Without a GPU: the runtime hands arrays, objects and copies to a backend's `textures` hooks
(a recording stand-in on the cpu backend), and the hooks fill the driver's structs
(CUDA_ARRAY3D_DESCRIPTOR, CUDA_RESOURCE_DESC, CUDA_TEXTURE_DESC, CUDA_MEMCPY3D: cuda-bindings'
own, with a stand-in for the calls) as cuda.h defines them.
With an NVIDIA GPU (cuda:0): every case of texture_reference.py (1D/2D/3D x 9 formats x 4
address modes x 2 filters x normalized or not) and its cube maps through the Python API, bit
for bit against the reference (which reproduces an H100's fetches); surfaces; mipmap levels.
"""

from __future__ import annotations

import types

import numpy as np
import pytest
import texture_reference as ref

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.errors import UnsupportedFeatureError
from ptxport.frontends import nvrtc
from ptxport.runtime.backends import availability
from ptxport.runtime.textures import (
    Array,
    ChannelFormat,
    CopySide,
    MipmappedArray,
    ResourceDesc,
    SurfaceObject,
    TextureDesc,
    TextureObject,
)

_CUDA, _CUDA_WHY = availability("cuda")
_NVRTC, _NVRTC_WHY = nvrtc.available()
needs_gpu = pytest.mark.skipif(not (_CUDA and _NVRTC),
                               reason=f"needs an NVIDIA GPU and NVRTC: {_CUDA_WHY or _NVRTC_WHY}")
try:
    from cuda.bindings import driver as _bindings
except ImportError:
    _bindings = None
needs_bindings = pytest.mark.skipif(_bindings is None, reason="cuda-bindings is not installed")


# -- the runtime's side, with recording hooks ----------------------------------------------------

class RecordingHooks:
    """A backend's `textures` hooks that record each call and give out handles."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self._next = 0x1000

    def _handle(self) -> int:
        self._next += 0x10
        return self._next

    def __getattr__(self, name: str):
        def call(*args):
            self.calls.append((name, *args))
            if name.startswith(("create", "mipmap_level")):
                return self._handle()
            return None
        return call


@pytest.fixture
def hooked(monkeypatch):
    device = Device("cpu")
    hooks = RecordingHooks()
    monkeypatch.setattr(device._backend, "textures", hooks)
    return device, hooks


def test_arrays_and_objects_are_the_hooks_own(hooked):
    device, hooks = hooked
    stream = device.create_stream()
    fmt = ChannelFormat("float", 32, 2)
    array = Array(device, fmt, 6, 4, surface=True, stream=stream)
    assert array.native and array.buffer is None
    assert hooks.calls[-1] == ("create_array", 0, fmt, (6, 4, 0), 0x2)
    texture = TextureObject(device, ResourceDesc.from_array(array),
                            TextureDesc(filter_mode="linear", srgb=True))
    name, ordinal, resource, desc = hooks.calls[-1]
    assert (name, resource.array, desc.srgb) == ("create_texture", array, True)
    surface = SurfaceObject(device, array)
    assert hooks.calls[-1][0] == "create_surface" and surface.handle != texture.handle
    texture.close()
    surface.close()
    array.close()
    assert [c[0] for c in hooks.calls[-3:]] == ["destroy_texture", "destroy_surface",
                                                "destroy_array"]
    assert hooks.calls[-1][2] == array.handle


def test_whole_array_copies_are_boxes_of_the_array(hooked):
    device, hooks = hooked
    stream = device.create_stream()
    array = Array(device, ChannelFormat("unsigned", 16, 4), 5, 3, 2, stream=stream)
    host = np.arange(2 * 3 * 5 * 4, dtype=np.uint16)
    array.copy_from(host, stream=stream)
    stream.sync()
    name, ordinal, src, dst, *box = hooks.calls[-1]
    assert name == "copy" and box == [40, 3, 2]
    assert dst == CopySide(array=array.handle)
    assert src.array is None and (src.pitch, src.height) == (40, 3)
    out = np.empty_like(host)
    array.copy_to(out, stream=stream)
    name, ordinal, src, dst, *box = hooks.calls[-1]
    assert src == CopySide(array=array.handle)
    assert dst.array is None and (dst.pitch, dst.height) == (40, 3) and box == [40, 3, 2]


def test_mipmapped_arrays_are_the_hooks_or_refused(hooked):
    device, hooks = hooked
    mipmap = MipmappedArray(device, ChannelFormat("float", 32), 16, 8, levels=3)
    level = mipmap.level(2)
    assert hooks.calls[-1] == ("mipmap_level", 0, mipmap.handle, 2)
    assert (level.width, level.height, level.depth) == (4, 2, 0)
    level.close()                                   # a level is freed with its mipmap
    assert hooks.calls[-1][0] == "mipmap_level"
    mipmap.close()
    assert hooks.calls[-1] == ("destroy_mipmapped_array", 0, mipmap.handle)


def test_srgb_and_seamless_cube_maps_are_refused_by_ptxports_sampler():
    device = Device("cpu")
    array = Array(device, ChannelFormat("float", 32), 4, 4)
    for desc in (TextureDesc(srgb=True), TextureDesc(seamless_cubemap=True)):
        with pytest.raises(UnsupportedFeatureError):
            TextureObject(device, ResourceDesc.from_array(array), desc)
    array.close()


# -- the hooks' side: the driver's structs -------------------------------------------------------

class RecordingDriver:
    """cuda-bindings' driver module with its calls recorded (structs and enums are real)."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def __getattr__(self, name: str):
        if not name.startswith("cu") or name.startswith(("cuda", "CU")):
            return getattr(_bindings, name)

        def call(*args):
            self.calls.append((name, *args))
            return (0, 0x5000) if "Create" in name else (0,)
        return call


@pytest.fixture
def driver(monkeypatch):
    from ptxport.runtime.backends import cuda_textures

    fake = RecordingDriver()
    monkeypatch.setattr(cuda_textures, "_driver", lambda: fake)
    backend = types.SimpleNamespace(
        _contexts=types.SimpleNamespace(enter=lambda ordinal: "stream"),
        _find=lambda address: (0, "device") if address >= 0x7000_0000 else None)
    return fake, cuda_textures.CudaTextures(backend)


@needs_bindings
def test_an_array_is_cuArray3DCreate_of_its_format(driver):
    fake, hooks = driver
    assert hooks.create_array(0, ChannelFormat("signed", 16, 4), (8, 6, 0), 0x3) == 0x5000
    name, desc = fake.calls[-1]
    assert name == "cuArray3DCreate"
    assert (desc.Width, desc.Height, desc.Depth, int(desc.Format), desc.NumChannels,
            desc.Flags) == (8, 6, 0, 0x09, 4, 0x3)


@needs_bindings
def test_texture_descriptions_become_the_drivers(driver):
    fake, hooks = driver
    memory = types.SimpleNamespace(handle=0x7000_0100)
    fmt = ChannelFormat("unsigned", 8, 4)
    desc = TextureDesc(address_mode=("wrap", "border"), filter_mode="linear",
                       read_mode="normalized_float", normalized_coords=True,
                       border_color=(0.5, 1.0), max_anisotropy=4, seamless_cubemap=True)
    hooks.create_texture(0, ResourceDesc.pitch2d(memory, fmt, 10, 7, 64), desc)
    name, resource, texture, view = fake.calls[-1]
    assert name == "cuTexObjectCreate" and view is None
    assert int(resource.resType) == 3
    p = resource.res.pitch2D
    assert (int(p.devPtr), int(p.format), p.numChannels, p.width, p.height,
            p.pitchInBytes) == (0x7000_0100, 0x01, 4, 10, 7, 64)
    assert [int(m) for m in texture.addressMode] == [0, 3, 1]
    assert int(texture.filterMode) == 1 and texture.maxAnisotropy == 4
    assert texture.flags == 0x2 | 0x40          # normalized coordinates, seamless; no integer
    assert list(texture.borderColor) == [0.5, 1.0, 0.0, 0.0]
    hooks.create_texture(0, ResourceDesc.linear(memory, ChannelFormat("signed", 32), 400),
                         TextureDesc())
    resource, texture = fake.calls[-1][1:3]
    assert int(resource.resType) == 2 and resource.res.linear.sizeInBytes == 400
    assert texture.flags == 0x1                 # read as integer


@needs_bindings
def test_copies_name_host_memory_and_the_drivers_memory_apart(driver):
    fake, hooks = driver
    hooks.copy(0, CopySide(address=0x1234_0000, pitch=64, height=4, x=8),
               CopySide(array=0x99, x=16, y=1, z=2), 32, 3, 2)
    name, copy, stream = fake.calls[-2]
    assert name == "cuMemcpy3DAsync" and fake.calls[-1][0] == "cuStreamSynchronize"
    assert int(copy.srcMemoryType) == 1 and int(copy.srcHost) == 0x1234_0000
    assert (copy.srcXInBytes, copy.srcPitch, copy.srcHeight) == (8, 64, 4)
    assert int(copy.dstMemoryType) == 3 and int(copy.dstArray) == 0x99
    assert (copy.dstXInBytes, copy.dstY, copy.dstZ) == (16, 1, 2)
    assert (copy.WidthInBytes, copy.Height, copy.Depth) == (32, 3, 2)
    hooks.copy(0, CopySide(array=0x99), CopySide(address=0x7000_0000, pitch=32, height=3),
               32, 3, 2)
    copy = fake.calls[-2][1]
    assert int(copy.dstMemoryType) == 4 and int(copy.dstDevice) == 0x7000_0000


# -- on the GPU -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def gpu():
    return Device("cuda:0")


@pytest.fixture(scope="module")
def fetch_kernels():
    return Program(ref.KERNELS, code_type="c++").compile("native")


@needs_gpu
@pytest.mark.parametrize("dims", [1, 2, 3])
@pytest.mark.parametrize("fmt", ref.FORMATS, ids=[f[0] for f in ref.FORMATS])
def test_the_texture_units_fetch_what_the_reference_does(gpu, fetch_kernels, dims, fmt):
    failures = []
    for case in ref.cases([dims]):
        if case[1] is not fmt:
            continue
        got, expected = ref.run_on_ptxport(gpu, fetch_kernels, *case)
        got, expected = got[:, :fmt[2]], expected[:, :fmt[2]]
        bad = np.nonzero((got != expected).any(axis=1))[0]
        if len(bad):
            failures.append(f"{case[2]} {case[3]} normalized={case[4]}: {len(bad)} differ")
    assert not failures, "\n".join(failures)


@needs_gpu
@pytest.mark.parametrize("fmt, filt", list(ref.cube_cases()))
def test_cube_maps_on_the_texture_units(gpu, fetch_kernels, fmt, filt):
    got, expected = ref.run_cube_on_ptxport(gpu, fetch_kernels, fmt, filt)
    assert (got[:, :fmt[2]] == expected[:, :fmt[2]]).all()


SURFACE_AND_LEVELS = r"""
extern "C" __global__ void fill(cudaSurfaceObject_t s, int w) {
  int x = threadIdx.x, y = blockIdx.x;
  surf2Dwrite(x * 1000 + y, s, x * 4, y);
}
extern "C" __global__ void levels(cudaTextureObject_t t, float *out, int w, int h, float lod) {
  int x = threadIdx.x, y = blockIdx.x;
  out[y * w + x] = tex2DLod<float>(t, (x + 0.5f) / w, (y + 0.5f) / h, lod);
}
"""


@needs_gpu
def test_surfaces_and_mipmap_levels_on_the_gpu(gpu):
    stream = gpu.create_stream()
    kernels = Program(SURFACE_AND_LEVELS, code_type="c++").compile("native")
    array = Array(gpu, ChannelFormat("signed", 32), 9, 5, surface=True, stream=stream)
    surface = SurfaceObject(gpu, array)
    launch(stream, LaunchConfig(grid=5, block=9), kernels.get_kernel("fill"),
           np.uint64(surface.handle), np.int32(9))
    got = np.empty((5, 9), np.int32)
    array.copy_to(got, stream=stream)
    assert (got == np.arange(9)[None, :] * 1000 + np.arange(5)[:, None]).all()
    surface.close()
    array.close()

    mipmap = MipmappedArray(gpu, ChannelFormat("float", 32), 16, 8, levels=3)
    for level in range(3):
        w, h = 16 >> level, 8 >> level
        mipmap.level(level).copy_from(np.full((h, w), level + 0.25, np.float32), stream=stream)
    texture = TextureObject(gpu, ResourceDesc.from_mipmapped_array(mipmap),
                            TextureDesc(normalized_coords=True, max_mipmap_level_clamp=2.0))
    out = gpu.allocate(16 * 8 * 4, stream=stream)
    for level in range(3):
        w, h = 16 >> level, 8 >> level
        launch(stream, LaunchConfig(grid=h, block=w), kernels.get_kernel("levels"),
               np.uint64(texture.handle), out, np.int32(w), np.int32(h), np.float32(level))
        got = np.empty(16 * 8, np.float32)
        out.copy_to(got, stream=stream)
        stream.sync()
        assert (got[:w * h] == level + 0.25).all(), level
    texture.close()
    mipmap.close()
