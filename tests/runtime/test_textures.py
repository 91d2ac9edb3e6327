"""Texture and surface objects on devices without NVIDIA's texture units (cpu, opencl:0):
every address mode x filter mode x normalized/texel coordinates x read mode x channel
format on 1D, 2D and 3D textures against texture_reference.py (CUDA's texture-fetch formulas
in numpy), bit for bit; layered, linear and pitched resources; surfaces; the refusals.
"""

from __future__ import annotations

import numpy as np
import pytest
import texture_reference as ref

from ptxport import Device, LaunchConfig, Program, launch
from ptxport.errors import InvalidValueError, KernelAssertError
from ptxport.frontends import nvrtc
from ptxport.runtime.backends import availability
from ptxport.runtime.textures import (
    Array,
    ChannelFormat,
    ResourceDesc,
    SurfaceObject,
    TextureDesc,
    TextureObject,
)

_NVRTC, _NVRTC_WHY = nvrtc.available()
_OPENCL, _OPENCL_WHY = availability("opencl")
pytestmark = pytest.mark.skipif(not _NVRTC, reason=f"kernels come from NVRTC: {_NVRTC_WHY}")

DEVICES = ["cpu", pytest.param("opencl:0", marks=pytest.mark.skipif(
    not _OPENCL, reason=f"no OpenCL device for SPIR-V: {_OPENCL_WHY}"))]


@pytest.fixture(scope="module", params=DEVICES)
def device(request):
    return Device(request.param)


@pytest.fixture(scope="module")
def fetch_kernels():
    return Program(ref.KERNELS, code_type="c++").compile("native")


def run_case(device, kernels, dims, fmt, mode, filt, normalized):
    """(got, expected) uint32 bits of one texture-fetch case, the format's channels."""
    got, expected = ref.run_on_ptxport(device, kernels, dims, fmt, mode, filt, normalized)
    return got[:, :fmt[2]], expected[:, :fmt[2]]


@pytest.mark.parametrize("dims", [1, 2, 3])
@pytest.mark.parametrize("fmt", ref.FORMATS, ids=[f[0] for f in ref.FORMATS])
def test_fetch_matches_reference(device, fetch_kernels, dims, fmt):
    failures = []
    for case in ref.cases([dims]):
        if case[1] is not fmt:
            continue
        got, expected = run_case(device, fetch_kernels, *case)
        bad = np.nonzero((got != expected).any(axis=1))[0]
        if len(bad):
            failures.append(f"{case[2]} {case[3]} normalized={case[4]}: {len(bad)} of "
                            f"{len(got)} differ, first at {bad[0]}: {got[bad[0]]} != "
                            f"{expected[bad[0]]}")
    assert not failures, "\n".join(failures)


def test_the_reference_sees_filtering():
    """The cases are not vacuous: linear filtering and the address modes change results."""
    fmt = ref.FORMATS[0]
    data = ref.texels(2, fmt)
    coords = ref.coordinates(2, True)
    results = {(mode, filt): ref.sample(data, fmt, 2, mode, filt, True, coords).tobytes()
               for mode in ref.ADDRESS_MODES for filt in ref.FILTER_MODES}
    assert len(set(results.values())) == len(results)


# Fetches an H100 (driver 580) made in benchmarks/texture_check.py's first run, where the
# reference's earlier assumptions differed: (dims, format, address mode, filter, normalized,
# fetch index, the four channels' bits).
H100_FETCHES = [
    (1, "f32x1", "wrap", "point", False, 0, [1066155951, 0, 0, 0]),
    (1, "f32x1", "wrap", "point", True, 2, [1066155951, 0, 0, 0]),
    (1, "f32x1", "clamp", "linear", False, 10, [3223002527, 0, 0, 0]),
    (1, "f32x1", "wrap", "linear", True, 3, [1063905981, 0, 0, 0]),
    (1, "f32x1", "mirror", "linear", True, 8, [3202996177, 0, 0, 0]),
    (1, "f32x1", "border", "linear", False, 0, [1055670191, 0, 0, 0]),
    (1, "f32x1", "border", "linear", True, 0, [1055670191, 0, 0, 0]),
    (1, "f32x4", "wrap", "point", True, 2, [1066155951, 3219897608, 3228239237, 3229059505]),
    (1, "f32x4", "wrap", "linear", False, 2, [1072071885, 1060826206, 3216272526, 3212970271]),
]


@pytest.mark.parametrize("dims, name, mode, filt, normalized, index, bits", H100_FETCHES)
def test_the_reference_fetches_what_an_h100_fetched(dims, name, mode, filt, normalized, index,
                                                    bits):
    fmt = next(f for f in ref.FORMATS if f[0] == name)
    got = ref.sample(ref.texels(dims, fmt), fmt, dims, mode, filt, normalized,
                     ref.coordinates(dims, normalized))
    assert got[index].tolist() == bits


def test_rounding_ties_go_away_from_zero():
    one = np.float64(1.0)
    half_ulp = 2.0 ** -24
    got = ref.round_float32(np.array([one + half_ulp, -one - half_ulp, one + half_ulp]),
                            np.array([0.0, 0.0, -1e-30]))
    assert got.tolist() == [np.nextafter(np.float32(1), np.float32(2)),
                            np.nextafter(np.float32(-1), np.float32(-2)), np.float32(1)]


OTHER_KERNELS = r"""
extern "C" {
__global__ void layered(cudaTextureObject_t t1, cudaTextureObject_t t2, float *out) {
  int i = threadIdx.x;
  out[i] = tex1DLayered<float>(t1, i + 0.5f, i % 3);
  out[32 + i] = tex2DLayered<float>(t2, (i % 4) + 0.5f, (i / 4 % 2) + 0.5f, i % 3);
  out[64 + i] = tex2DLod<float>(t2, (i % 4) + 0.5f, 0.5f, 2.0f);
}
__global__ void linear_fetch(cudaTextureObject_t t, int *out, int n) {
  int i = threadIdx.x;
  out[i] = tex1Dfetch<int>(t, i - 2);
}
__global__ void pitched(cudaTextureObject_t t, float *out) {
  int x = threadIdx.x, y = blockIdx.x;
  out[y * 8 + x] = tex2D<float>(t, x + 0.5f, y + 0.5f);
}
__global__ void surfaces(cudaSurfaceObject_t s, int w, int h) {
  int x = threadIdx.x, y = blockIdx.x;
  float4 v = surf2Dread<float4>(s, x * 16, y);
  surf2Dwrite(make_float4(v.w, v.z, v.y, v.x + 1.0f), s, x * 16, y);
}
__global__ void surface_zero(cudaSurfaceObject_t s, int *out) {
  int x = threadIdx.x;
  out[x] = surf1Dread<int>(s, (x - 2) * 4, cudaBoundaryModeZero);
  out[32 + x] = surf1Dread<int>(s, (x - 2) * 4, cudaBoundaryModeClamp);
}
__global__ void surface_trap(cudaSurfaceObject_t s, int *out) {
  out[0] = surf1Dread<int>(s, 4096);
}
__global__ void queries(cudaTextureObject_t t, cudaSurfaceObject_t s, int *out) {
  int w, h, d;
  asm("txq.width.b32 %0, [%1];" : "=r"(w) : "l"(t));
  asm("txq.height.b32 %0, [%1];" : "=r"(h) : "l"(t));
  asm("suq.depth.b32 %0, [%1];" : "=r"(d) : "l"(s));
  out[0] = w; out[1] = h; out[2] = d;
}
}
"""


@pytest.fixture(scope="module")
def other_kernels():
    return Program(OTHER_KERNELS, code_type="c++").compile("native")


def _run(device, kernel, grid, block, *args):
    stream = device.create_stream()
    launch(stream, LaunchConfig(grid=grid, block=block), kernel, *args)
    stream.sync()
    return stream


def _download(buffer, shape, dtype):
    host = np.empty(shape, dtype)
    stream = buffer.device.create_stream()
    buffer.copy_to(host, stream=stream)
    stream.sync()
    return host


def test_layered_and_level(device, other_kernels):
    """tex1DLayered/tex2DLayered read the layer asked for; tex2DLod of a texture without
    mipmaps reads level 0 (as CUDA does)."""
    stream = device.create_stream()
    f32 = ChannelFormat.from_dtype(np.float32)
    data1 = np.arange(3 * 32, dtype=np.float32).reshape(3, 32)
    a1 = Array(device, f32, 32, 0, 3, layered=True, stream=stream)
    a1.copy_from(data1, stream=stream)
    data2 = np.arange(3 * 2 * 4, dtype=np.float32).reshape(3, 2, 4) * 10
    a2 = Array(device, f32, 4, 2, 3, layered=True, stream=stream)
    a2.copy_from(data2, stream=stream)
    t1 = TextureObject(device, ResourceDesc.from_array(a1), stream=stream)
    t2 = TextureObject(device, ResourceDesc.from_array(a2), stream=stream)
    out = device.allocate(96 * 4, stream=stream)
    _run(device, other_kernels.get_kernel("layered"), 1, 32, np.uint64(t1.handle),
         np.uint64(t2.handle), out)
    got = _download(out, 96, np.float32)
    i = np.arange(32)
    np.testing.assert_array_equal(got[:32], data1[i % 3, i])
    np.testing.assert_array_equal(got[32:64], data2[i % 3, i // 4 % 2, i % 4])
    np.testing.assert_array_equal(got[64:], data2[0, 0, i % 4])


def test_linear_memory_fetch(device, other_kernels):
    """tex1Dfetch of linear memory: integer coordinates, zero outside."""
    stream = device.create_stream()
    values = np.arange(100, 124, dtype=np.int32)
    buffer = device.allocate(values.nbytes, stream=stream)
    buffer.copy_from(values, stream=stream)
    texture = TextureObject(device, ResourceDesc.linear(
        buffer, ChannelFormat.from_dtype(np.int32), values.nbytes), stream=stream)
    out = device.allocate(32 * 4, stream=stream)
    _run(device, other_kernels.get_kernel("linear_fetch"), 1, 32, np.uint64(texture.handle),
         out, np.int32(24))
    index = np.arange(32) - 2
    expected = np.where((index >= 0) & (index < 24), 100 + index, 0)
    np.testing.assert_array_equal(_download(out, 32, np.int32), expected)


def test_pitched_2d(device, other_kernels):
    stream = device.create_stream()
    image = np.arange(4 * 16, dtype=np.float32).reshape(4, 16)   # pitch: 16 floats, width 8
    buffer = device.allocate(image.nbytes, stream=stream)
    buffer.copy_from(image, stream=stream)
    texture = TextureObject(device, ResourceDesc.pitch2d(
        buffer, ChannelFormat.from_dtype(np.float32), 8, 4, 64), stream=stream)
    out = device.allocate(32 * 4, stream=stream)
    _run(device, other_kernels.get_kernel("pitched"), 4, 8, np.uint64(texture.handle), out)
    np.testing.assert_array_equal(_download(out, (4, 8), np.float32), image[:, :8])


def test_surface_read_write(device, other_kernels):
    """surf2Dread/surf2Dwrite with byte x coordinates on a float4 array."""
    stream = device.create_stream()
    data = np.arange(3 * 5 * 4, dtype=np.float32).reshape(3, 5, 4)
    array = Array(device, ChannelFormat.from_dtype(np.float32, 4), 5, 3, stream=stream)
    array.copy_from(data, stream=stream)
    surface = SurfaceObject(device, array, stream=stream)
    _run(device, other_kernels.get_kernel("surfaces"), 3, 5, np.uint64(surface.handle),
         np.int32(5), np.int32(3))
    got = np.empty_like(data)
    array.copy_to(got, stream=stream)
    expected = data[..., ::-1].copy()
    expected[..., 3] += 1
    np.testing.assert_array_equal(got, expected)


def test_surface_boundary_modes(device, other_kernels):
    stream = device.create_stream()
    values = np.arange(7, 7 + 16, dtype=np.int32)
    array = Array(device, ChannelFormat.from_dtype(np.int32), 16, stream=stream)
    array.copy_from(values, stream=stream)
    surface = SurfaceObject(device, array, stream=stream)
    out = device.allocate(64 * 4, stream=stream)
    _run(device, other_kernels.get_kernel("surface_zero"), 1, 32, np.uint64(surface.handle),
         out)
    got = _download(out, 64, np.int32)
    x = np.arange(32) - 2
    inside = (x >= 0) & (x < 16)
    np.testing.assert_array_equal(got[:32], np.where(inside, values[np.clip(x, 0, 15)], 0))
    np.testing.assert_array_equal(got[32:], values[np.clip(x, 0, 15)])
    with pytest.raises(KernelAssertError, match="out of bounds"):
        _run(device, other_kernels.get_kernel("surface_trap"), 1, 1,
             np.uint64(surface.handle), out)


def test_queries(device, other_kernels):
    stream = device.create_stream()
    f32 = ChannelFormat.from_dtype(np.float32)
    a2 = Array(device, f32, 6, 5, stream=stream)
    a3 = Array(device, f32, 2, 3, 4, stream=stream)
    texture = TextureObject(device, ResourceDesc.from_array(a2), stream=stream)
    surface = SurfaceObject(device, a3, stream=stream)
    out = device.allocate(12, stream=stream)
    _run(device, other_kernels.get_kernel("queries"), 1, 1, np.uint64(texture.handle),
         np.uint64(surface.handle), out)
    np.testing.assert_array_equal(_download(out, 3, np.int32), [6, 5, 4])


def test_refusals():
    device = Device("cpu")
    f32, u8 = ChannelFormat.from_dtype(np.float32), ChannelFormat.from_dtype(np.uint8)
    array = Array(device, u8, 4)
    with pytest.raises(InvalidValueError, match="linear filtering"):
        TextureObject(device, ResourceDesc.from_array(array), TextureDesc(filter_mode="linear"))
    with pytest.raises(InvalidValueError, match="normalized-float"):
        TextureObject(device, ResourceDesc.from_array(Array(device, f32, 4)),
                      TextureDesc(read_mode="normalized_float"))
    with pytest.raises(InvalidValueError):
        ChannelFormat("float", 8)


CUBE_KERNELS = r"""
extern "C" __global__ void cube(cudaTextureObject_t t, const float *d, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = texCubemap<float>(t, d[3 * i], d[3 * i + 1], d[3 * i + 2]);
}
extern "C" __global__ void faces(cudaTextureObject_t t, const float *st, const int *face,
                                 float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex2DLayered<float>(t, st[2 * i], st[2 * i + 1], face[i]);
}
"""


@pytest.mark.parametrize("filt", ["point", "linear"])
def test_cube_maps_read_the_face_of_the_major_axis(device, filt):
    """texCubemap equals tex2DLayered of the face and face coordinates the programming
    guide's table gives, on the same six faces (clamped to the face)."""
    stream = device.create_stream()
    rng = np.random.default_rng(3)
    faces = rng.uniform(-4, 4, (6, 4, 4)).astype(np.float32)
    fmt = ChannelFormat.from_dtype(np.float32)
    cube = Array(device, fmt, 4, 4, 6, cubemap=True, stream=stream)
    layered = Array(device, fmt, 4, 4, 6, layered=True, stream=stream)
    for array in (cube, layered):
        array.copy_from(faces, stream=stream)
    desc = TextureDesc(address_mode=("clamp",) * 3, filter_mode=filt, normalized_coords=True)
    tex_cube = TextureObject(device, ResourceDesc.from_array(cube), desc, stream=stream)
    tex_faces = TextureObject(device, ResourceDesc.from_array(layered), desc, stream=stream)
    axes = np.repeat(np.eye(3, dtype=np.float32), 2, axis=0) * np.array([[1], [-1]] * 3,
                                                                          np.float32)
    directions = np.concatenate([axes, rng.uniform(-1, 1, (250, 3)).astype(np.float32)])
    face, s, t = ref.cube_faces(directions)
    assert set(face.tolist()) == set(range(6))
    kernels = Program(CUBE_KERNELS, code_type="c++").compile("native")
    n = len(directions)

    def run(name, *arrays):
        buffers = [device.allocate(a.nbytes, stream=stream) for a in arrays]
        for b, a in zip(buffers, arrays, strict=True):
            b.copy_from(np.ascontiguousarray(a), stream=stream)
        out = device.allocate(4 * n, stream=stream)
        handle = tex_cube.handle if name == "cube" else tex_faces.handle
        launch(stream, LaunchConfig(grid=(n + 63) // 64, block=64), kernels.get_kernel(name),
               np.uint64(handle), *buffers, out, np.int32(n))
        got = np.empty(n, np.float32)
        out.copy_to(got, stream=stream)
        stream.sync()
        return got

    got = run("cube", directions)
    want = run("faces", np.stack([s, t], 1), face.astype(np.int32))
    assert got.tobytes() == want.tobytes()
    if filt == "point":         # the axes hit their faces' centres: texel (2, 2)
        assert got[:6].tolist() == faces[np.arange(6), 2, 2].tolist()


GATHER_KERNELS = r"""
#define OUT "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
extern "C" __global__ void cube(cudaTextureObject_t t, const float *d, float4 *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float4 v;
  if (i < n) {
    asm("tld4.g.cube.v4.f32.f32 {%0, %1, %2, %3}, [%4, {%5, %6, %7, %7}];"
        : OUT : "l"(t), "f"(d[3 * i]), "f"(d[3 * i + 1]), "f"(d[3 * i + 2]));
    out[i] = v;
  }
}
extern "C" __global__ void faces(cudaTextureObject_t t, const float *st, const int *face,
                                 float4 *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float4 v;
  if (i < n) {
    asm("tld4.g.a2d.v4.f32.f32 {%0, %1, %2, %3}, [%4, {%5, %6, %7, %7}];"
        : OUT : "l"(t), "r"(face[i]), "f"(st[2 * i]), "f"(st[2 * i + 1]));
    out[i] = v;
  }
}
"""


def test_tld4_of_a_cube_map_gathers_on_the_face_of_the_major_axis(device):
    """tld4.cube equals tld4.a2d of the face and face coordinates that texCubemap reads
    (the footprint clamped to the face), channel g of a two-channel cube map."""
    stream = device.create_stream()
    rng = np.random.default_rng(5)
    faces = rng.uniform(-4, 4, (6, 4, 4, 2)).astype(np.float32)
    fmt = ChannelFormat("float", 32, 2)
    cube = Array(device, fmt, 4, 4, 6, cubemap=True, stream=stream)
    layered = Array(device, fmt, 4, 4, 6, layered=True, stream=stream)
    for array in (cube, layered):
        array.copy_from(faces, stream=stream)
    desc = TextureDesc(address_mode=("clamp",) * 3, normalized_coords=True)
    textures = [TextureObject(device, ResourceDesc.from_array(a), desc) for a in (cube, layered)]
    directions = np.concatenate([np.eye(3, dtype=np.float32), -np.eye(3, dtype=np.float32),
                                 rng.uniform(-1, 1, (120, 3)).astype(np.float32)])
    face, s, t = ref.cube_faces(directions)
    kernels = Program(GATHER_KERNELS, code_type="c++").compile("native")
    n = len(directions)
    results = []
    for name, texture, inputs in (("cube", textures[0], (directions,)),
                                  ("faces", textures[1], (np.stack([s, t], 1),
                                                          face.astype(np.int32)))):
        buffers = [device.allocate(a.nbytes, stream=stream) for a in inputs]
        for b, a in zip(buffers, inputs, strict=True):
            b.copy_from(np.ascontiguousarray(a), stream=stream)
        out = device.allocate(16 * n, stream=stream)
        launch(stream, LaunchConfig(grid=(n + 63) // 64, block=64), kernels.get_kernel(name),
               np.uint64(texture.handle), *buffers, out, np.int32(n))
        got = np.empty((n, 4), np.float32)
        out.copy_to(got, stream=stream)
        stream.sync()
        results.append(got)
    assert results[0].tobytes() == results[1].tobytes()
    # +x hits its face's centre: the 2 x 2 texels around (2, 2), in tld4's order
    assert results[0][0].tolist() == faces[0, [2, 2, 1, 1], [1, 2, 2, 1], 1].tolist()


@pytest.mark.parametrize("fmt, filt", list(ref.cube_cases()),
                         ids=[f"{f[0]}-{filt}" for f, filt in ref.cube_cases()])
def test_cube_fetch_matches_reference(device, fetch_kernels, fmt, filt):
    got, expected = ref.run_cube_on_ptxport(device, fetch_kernels, fmt, filt)
    assert got.tobytes() == expected.tobytes()


MIPMAP_KERNELS = r"""
extern "C" __global__ void at_lod(cudaTextureObject_t t, float *out, int w, int h, float lod) {
  int x = threadIdx.x, y = blockIdx.x;
  out[y * w + x] = tex2DLod<float>(t, (x + 0.5f) / w, (y + 0.5f) / h, lod);
}
extern "C" __global__ void level_sizes(cudaTextureObject_t t, unsigned *out) {
  int l = threadIdx.x;
  unsigned w, h;
  asm("txq.level.width.b32 %0, [%1], %2;" : "=r"(w) : "l"(t), "r"(l));
  asm("txq.level.height.b32 %0, [%1], %2;" : "=r"(h) : "l"(t), "r"(l));
  out[2 * l] = w;
  out[2 * l + 1] = h;
}
extern "C" __global__ void at_gradient(cudaTextureObject_t t, float *out, int w, int h,
                                       float g) {
  int x = threadIdx.x, y = blockIdx.x;
  out[y * w + x] = tex2DGrad<float>(t, (x + 0.5f) / w, (y + 0.5f) / h, make_float2(g, 0),
                                    make_float2(0, g / 2));
}
"""


def test_mipmap_levels(device):
    """tex2DLod at each level (point and linear mipmap filtering), past the last level and
    below 0, the bias and the clamps, a fraction between levels, and tex2DGrad's level of
    detail (log2 of the longer gradient in level 0's texels)."""
    from ptxport.runtime.textures import MipmappedArray

    stream = device.create_stream()
    kernels = Program(MIPMAP_KERNELS, code_type="c++").compile("native")
    mipmap = MipmappedArray(device, ChannelFormat("float", 32), 16, 8, levels=9,
                            stream=stream)
    assert mipmap.levels == 5                     # 16 x 8 down to 1 x 1, as CUDA clamps it
    images = []
    for level in range(mipmap.levels):
        w, h = max(16 >> level, 1), max(8 >> level, 1)
        images.append(np.arange(w * h, dtype=np.float32).reshape(h, w) + 1000 * level)
        mipmap.level(level).copy_from(images[-1], stream=stream)
    out = device.allocate(16 * 8 * 4, stream=stream)

    def fetch(desc, kernel, level, value):
        tex = TextureObject(device, ResourceDesc.from_mipmapped_array(mipmap), desc)
        w, h = images[level].shape[1], images[level].shape[0]
        launch(stream, LaunchConfig(grid=h, block=w), kernels.get_kernel(kernel),
               np.uint64(tex.handle), out, np.int32(w), np.int32(h), np.float32(value))
        got = np.empty(16 * 8, np.float32)
        out.copy_to(got, stream=stream)
        stream.sync()
        tex.close()
        return got[:w * h].reshape(h, w)

    point = TextureDesc(normalized_coords=True, max_mipmap_level_clamp=10.0)
    for level in range(mipmap.levels):
        assert (fetch(point, "at_lod", level, level) == images[level]).all(), level
    assert (fetch(point, "at_lod", 4, 7.0) == images[4]).all()
    assert (fetch(point, "at_lod", 0, -3.0) == images[0]).all()
    clamped = TextureDesc(normalized_coords=True, mipmap_level_bias=1.0,
                          min_mipmap_level_clamp=2.0, max_mipmap_level_clamp=3.0)
    assert (fetch(clamped, "at_lod", 2, 0.0) == images[2]).all()
    assert (fetch(clamped, "at_lod", 3, 3.0) == images[3]).all()
    linear = TextureDesc(normalized_coords=True, max_mipmap_level_clamp=10.0,
                         mipmap_filter_mode="linear")
    # lod 1.25 at level 1's texel centres: level 2 reads texel (x / 2, y / 2) there
    got = fetch(linear, "at_lod", 1, 1.25)
    upper = images[2][np.arange(4)[:, None] // 2, np.arange(8)[None, :] // 2]
    assert (got == (images[1] * 0.75 + upper * 0.25).astype(np.float32)).all()
    # gradients (1/4, 0) and (0, 1/8) of level 0's 16 x 8: 4 and 1 texels, lod 2
    assert (fetch(point, "at_gradient", 2, 0.25) == images[2]).all()
    tex = TextureObject(device, ResourceDesc.from_mipmapped_array(mipmap), point)
    launch(stream, LaunchConfig(grid=1, block=mipmap.levels), kernels.get_kernel("level_sizes"),
           np.uint64(tex.handle), out)
    sizes = np.empty(16 * 8, np.uint32)
    out.copy_to(sizes, stream=stream)
    stream.sync()
    tex.close()
    assert sizes[:2 * mipmap.levels].reshape(-1, 2).tolist() == [[16, 8], [8, 4], [4, 2],
                                                                   [2, 1], [1, 1]]
    out.close()
    mipmap.close()
