"""CUDA's texture fetch in numpy, and the kernels and cases that compare a device with it.

The formulas are the CUDA C++ Programming Guide's appendix "Texture Fetching" with the details
measured on an H100 (driver 580, benchmarks/texture_check.py; docs/textures.md):
- normalized coordinates are first cut to fixed point with 24 fractional bits (rounded toward
  -inf), then scaled by the size exactly (no float32 rounding of x * width);
- nearest-point sampling reads T[floor(x)];
- linear filtering reads the texels around x - 0.5 with weights frac(x - 0.5) rounded to 8
  fractional bits (half up); the weighted sum is exact and rounded once to float32, to
  nearest with ties away from zero; a 1D texture filters as a 2D one of height 1 read at
  y = 0, so that in border mode half of each result is the border color;
- wrap and mirror apply to normalized coordinates only (clamp otherwise); border texels
  read the border color; channels beyond the format's read 0 (border texels included).
passes/texture_sampler.cu does the same, so that a device running ptxport's sampler must
agree bit for bit; benchmarks/texture_check.py holds both against an NVIDIA GPU.
"""

from __future__ import annotations

import itertools

import numpy as np

ADDRESS_MODES = ("wrap", "clamp", "mirror", "border")
FILTER_MODES = ("point", "linear")
SIZES = {1: (7,), 2: (5, 4), 3: (4, 3, 3)}         # (width, height, depth)
BORDER = (0.25, -1.0, 2.0, 0.5)

# (name, numpy dtype, channels, read mode)
FORMATS = (
    ("f32x1", np.float32, 1, "element_type"),
    ("f32x4", np.float32, 4, "element_type"),
    ("f16x2", np.float16, 2, "element_type"),
    ("u8x4_norm", np.uint8, 4, "normalized_float"),
    ("s16x2_norm", np.int16, 2, "normalized_float"),
    ("s8x1_norm", np.int8, 1, "normalized_float"),
    ("u8x1_elem", np.uint8, 1, "element_type"),
    ("s32x2_elem", np.int32, 2, "element_type"),
    ("u16x4_elem", np.uint16, 4, "element_type"),
)

KERNELS = r"""
#define STORE4(v) do { out[4*i] = __float_as_uint(v.x); out[4*i+1] = __float_as_uint(v.y); \
  out[4*i+2] = __float_as_uint(v.z); out[4*i+3] = __float_as_uint(v.w); } while (0)
#define STOREI(v) do { out[4*i] = v.x; out[4*i+1] = v.y; out[4*i+2] = v.z; out[4*i+3] = v.w; \
  } while (0)
#define BODY(FETCH, STORE) int i = blockIdx.x * blockDim.x + threadIdx.x; \
  if (i < n) { const float *c = coords + 3 * i; auto v = FETCH; STORE(v); }
extern "C" {
__global__ void f1(cudaTextureObject_t t, const float *coords, unsigned *out, int n)
{ BODY(tex1D<float4>(t, c[0]), STORE4) }
__global__ void f2(cudaTextureObject_t t, const float *coords, unsigned *out, int n)
{ BODY(tex2D<float4>(t, c[0], c[1]), STORE4) }
__global__ void f3(cudaTextureObject_t t, const float *coords, unsigned *out, int n)
{ BODY(tex3D<float4>(t, c[0], c[1], c[2]), STORE4) }
__global__ void i1(cudaTextureObject_t t, const float *coords, unsigned *out, int n)
{ BODY(tex1D<uint4>(t, c[0]), STOREI) }
__global__ void i2(cudaTextureObject_t t, const float *coords, unsigned *out, int n)
{ BODY(tex2D<uint4>(t, c[0], c[1]), STOREI) }
__global__ void i3(cudaTextureObject_t t, const float *coords, unsigned *out, int n)
{ BODY(tex3D<uint4>(t, c[0], c[1], c[2]), STOREI) }
}
"""


def cases(dims_list=(1, 2, 3)):
    """(dims, format, address mode, filter mode, normalized coordinates) of every case CUDA
    accepts (linear filtering needs float results)."""
    for dims, fmt, mode, filt, normalized in itertools.product(
            dims_list, FORMATS, ADDRESS_MODES, FILTER_MODES, (False, True)):
        floats = fmt[1] in (np.float32, np.float16) or fmt[3] == "normalized_float"
        if filt == "linear" and not floats:
            continue
        yield dims, fmt, mode, filt, normalized


def texels(dims: int, fmt, seed: int = 0) -> np.ndarray:
    """Texel data of shape (depth, height, width, channels) trimmed to `dims`."""
    _, dtype, channels, _ = fmt
    width, height, depth = (SIZES[dims] + (1, 1))[:3]
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        data = rng.uniform(-4, 4, (depth, height, width, channels)).astype(dtype)
    else:
        info = np.iinfo(dtype)
        data = rng.integers(info.min, info.max, (depth, height, width, channels),
                            endpoint=True).astype(dtype)
    shape = (depth, height, width)[3 - dims:] + ((channels,) if channels > 1 else ())
    return data.reshape(shape)


def coordinates(dims: int, normalized: bool, count: int = 96, seed: int = 1) -> np.ndarray:
    """(count, 3) float32 coordinates: texel centres and edges, and random points from half
    a texture outside to one and a half texture beyond."""
    rng = np.random.default_rng(seed)
    size = np.array((SIZES[dims] + (1, 1))[:3], np.float32)
    points = rng.uniform(-0.5, 1.5, (count, 3)).astype(np.float32)
    edges = np.array([0.0, 0.5, 1.0, -0.25], np.float32)[:, None].repeat(3, 1) / size
    points[:len(edges)] = edges
    points[len(edges):2 * len(edges)] = np.floor(points[:len(edges)] * size) / size + 0.5 / size
    if not normalized:
        points = (points * size).astype(np.float32)
    points[:, dims:] = 0.5 if not normalized else 0.5 / size[dims:]
    return points


def _address(i: np.ndarray, n: int, mode: str, normalized: bool):
    if not normalized and mode in ("wrap", "mirror"):
        mode = "clamp"
    outside = np.zeros(i.shape, bool)
    if mode == "wrap":
        return i % n, outside
    if mode == "mirror":
        m = i % (2 * n)
        return np.where(m < n, m, 2 * n - 1 - m), outside
    if mode == "border":
        outside = (i < 0) | (i >= n)
    return np.clip(i, 0, n - 1), outside


def _channel_values(raw: np.ndarray, fmt) -> np.ndarray:
    """Texels as the texture returns them: float32, or int bits as uint32."""
    _, dtype, _, read_mode = fmt
    kind = np.dtype(dtype).kind
    if kind == "f":
        return raw.astype(np.float32)
    if read_mode == "element_type":
        return raw.astype(np.int64).astype(np.uint32)
    bits = np.dtype(dtype).itemsize * 8
    if kind == "u":
        return raw.astype(np.float32) / np.float32(2 ** bits - 1)
    return np.maximum(raw.astype(np.float32) / np.float32(2 ** (bits - 1) - 1), np.float32(-1))


def fetch(data: np.ndarray, fmt, dims: int, mode: str, normalized: bool, idx) -> np.ndarray:
    """The texels at integer indices idx (tuple of arrays x, y, z), addressed: (n, 4) of
    float32 (float results) or uint32."""
    channels = fmt[2]
    cube = data.reshape((1,) * (3 - dims) + data.shape[:dims] + (channels,))
    depth, height, width = cube.shape[:3]
    outside = np.zeros(idx[0].shape, bool)
    addressed = []
    for k, n in enumerate((width, height, depth)):
        a, o = _address(idx[k], n, mode, normalized)
        addressed.append(a)
        outside |= o
    values = _channel_values(cube[addressed[2], addressed[1], addressed[0]], fmt)
    floats = values.dtype == np.float32
    out = np.zeros((len(idx[0]), 4), values.dtype)
    out[:, :channels] = values
    # a border texel is the border color: (0, 0, 0, 0) for integer results here (what CUDA
    # does with another color for them is not settled: benchmarks/texture_check.py tells)
    border = np.array(BORDER if floats else (0.0,) * 4, np.float32)
    border[channels:] = 0
    out[outside] = border if floats else border.view(np.uint32)
    return out


COORDINATE_BITS = 24        # fractional bits of a normalized coordinate


def texel_coordinates(coords: np.ndarray, dims: int, normalized: bool) -> np.ndarray:
    """(n, 3) float64 texel coordinates: normalized ones cut to COORDINATE_BITS fractional
    bits (toward -inf) and scaled by the size exactly."""
    u = coords[:, :3].astype(np.float32).astype(np.float64)
    if normalized:
        size = np.array((SIZES[dims] + (1, 1))[:3], np.float64)
        u = np.floor(u * 2.0 ** COORDINATE_BITS) / 2.0 ** COORDINATE_BITS * size
    return u


def round_float32(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """hi + lo (float64, |lo| below half an ulp of hi) to float32: nearest, ties away from
    zero."""
    t = hi.astype(np.float32)
    over = np.abs(t.astype(np.float64)) > np.abs(hi)
    t[over] = np.nextafter(t[over], np.float32(0))           # hi cut toward zero
    rest = np.abs(hi - t.astype(np.float64))                  # exact
    half = np.abs(np.spacing(t)).astype(np.float64) / 2
    same = np.sign(lo) == np.sign(hi)
    up = (rest > half) | ((rest == half) & (same | (lo == 0)))
    t[up] = np.nextafter(t[up], np.copysign(np.float32(np.inf), hi[up]).astype(np.float32))
    return t


def _two_sum(a, b):
    s = a + b
    v = s - a
    return s, (a - (s - v)) + (b - v)


def sample(data: np.ndarray, fmt, dims: int, mode: str, filt: str, normalized: bool,
           coords: np.ndarray) -> np.ndarray:
    """What tex{1,2,3}D<float4 or uint4> returns at `coords`, as (n, 4) uint32 bits."""
    u = texel_coordinates(coords, dims, normalized)
    u[:, dims:] = 0
    floats = fmt[1] in (np.float32, np.float16) or fmt[3] == "normalized_float"
    if filt == "point" or not floats:
        idx = [np.floor(u[:, k]).astype(np.int64) if k < dims else np.zeros(len(u), np.int64)
               for k in range(3)]
        return fetch(data, fmt, dims, mode, normalized, idx).view(np.uint32)
    axes = max(dims, 2)               # a 1D texture filters as 2D of height 1 at y = 0
    b = u - 0.5
    f = np.floor(b)
    base = f.astype(np.int64)
    q = np.floor((b - f) * 256 + 0.5)
    hi = np.zeros((len(u), 4))
    lo = np.zeros((len(u), 4))
    for corner in range(1 << axes):
        w = np.ones(len(u))
        idx = []
        for k in range(3):
            bit = (corner >> k) & 1 if k < axes else 0
            if k < axes:
                w = w * (q[:, k] if bit else 256 - q[:, k]) / 256
            idx.append(base[:, k] + bit if k < axes else np.zeros(len(u), np.int64))
        t = fetch(data, fmt, dims, mode, normalized, idx).astype(np.float64)
        hi, err = _two_sum(hi, w[:, None] * t)      # each product is exact in float64
        lo = lo + err
        hi, lo = _two_sum(hi, lo)
    return round_float32(hi, lo).view(np.uint32)


def is_float_result(fmt) -> bool:
    return fmt[1] in (np.float32, np.float16) or fmt[3] == "normalized_float"


def launch_fetch(device, kernels, dims, fmt, handle: int, coords: np.ndarray) -> np.ndarray:
    """Run the fetch kernel of `dims` on texture `handle` at `coords`: (n, 4) uint32 bits."""
    from ptxport import LaunchConfig, launch

    stream = device.create_stream()
    n = len(coords)
    c = device.allocate(coords.nbytes, stream=stream)
    c.copy_from(coords, stream=stream)
    out = device.allocate(n * 16, stream=stream)
    kernel = kernels.get_kernel(f"{'f' if is_float_result(fmt) else 'i'}{dims}")
    launch(stream, LaunchConfig(grid=(n + 63) // 64, block=64), kernel, np.uint64(handle), c,
           out, np.int32(n))
    got = np.empty((n, 4), np.uint32)
    out.copy_to(got, stream=stream)
    stream.sync()
    c.close()
    out.close()
    return got


def run_on_ptxport(device, kernels, dims, fmt, mode, filt, normalized):
    """(got, expected): one case on a ptxport device with texture objects of its own
    (ptxport.runtime.textures) and in this model, as (n, 4) uint32 bits."""
    from ptxport.runtime.textures import (
        Array,
        ChannelFormat,
        ResourceDesc,
        TextureDesc,
        TextureObject,
    )

    stream = device.create_stream()
    data = texels(dims, fmt)
    width, height, depth = (SIZES[dims] + (0, 0))[:3]
    array = Array(device, ChannelFormat.from_dtype(fmt[1], fmt[2]), width, height, depth,
                  stream=stream)
    array.copy_from(data, stream=stream)
    border = BORDER if is_float_result(fmt) else (0.0,) * 4
    desc = TextureDesc(address_mode=(mode,) * 3, filter_mode=filt, read_mode=fmt[3],
                       normalized_coords=normalized, border_color=border)
    texture = TextureObject(device, ResourceDesc.from_array(array), desc, stream=stream)
    coords = coordinates(dims, normalized)
    got = launch_fetch(device, kernels, dims, fmt, texture.handle, coords)
    texture.close()
    array.close()
    return got, sample(data, fmt, dims, mode, filt, normalized, coords)
