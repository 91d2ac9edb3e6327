"""CUDA's texture fetch in numpy, and the kernels and cases that compare a device with it.

The formulas are the CUDA C++ Programming Guide's appendix "Texture Fetching" with the details
fitted to every fetch an H100 made (driver 580, benchmarks/texture_check.py, replayed by
benchmarks/texture_fit.py; docs/textures.md):
- normalized coordinates are first cut to fixed point with 24 fractional bits (rounded toward
  -inf), then scaled by the size exactly (no float32 rounding of x * width);
- nearest-point sampling reads T[floor(x)];
- linear filtering clamps x to [0.5, size - 0.5] in clamp mode, reads the texels around
  x - 0.5 with fractions q = frac(x - 0.5) rounded to 8 bits (half up), and weighs them with
  integer weights of 256 (`weights`: the product weights rounded, not separable);
- float texels are cut toward zero to 4 bits below their significand, aligned to the largest
  of each z slice, and the exact weighted sum is rounded once to float32 (float16 for half
  textures), to nearest with ties away from zero;
- integer texels read as normalized floats filter in 16-bit fixed point (_filter_normalized);
- a 1D texture filters as a 2D one of height 1 read at y = 0, so that in border mode half of
  each result is the border color;
- wrap and mirror apply to normalized coordinates only (clamp otherwise); border texels read
  the border color, converted to the format for normalized integers; channels beyond the
  format's read 0 (border texels included).
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
# Which texels, coordinates and directions the cases draw: 0 for the recorded H100 fetches
# (benchmarks/data); `texture_check.py run --seed N` draws others, for checking a fitted
# formula on fetches it was not fitted to (the .npz records N, texture_fit.py reads it).
SEED = 0

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
__global__ void fc(cudaTextureObject_t t, const float *coords, unsigned *out, int n)
{ BODY(texCubemap<float4>(t, c[0], c[1], c[2]), STORE4) }
__global__ void ic(cudaTextureObject_t t, const float *coords, unsigned *out, int n)
{ BODY(texCubemap<uint4>(t, c[0], c[1], c[2]), STOREI) }
// mipmapped 2D textures: c[2] is the level of detail, or both gradients' length
__global__ void flod(cudaTextureObject_t t, const float *coords, unsigned *out, int n)
{ BODY(tex2DLod<float4>(t, c[0], c[1], c[2]), STORE4) }
__global__ void fgrad(cudaTextureObject_t t, const float *coords, unsigned *out, int n)
{ BODY(tex2DGrad<float4>(t, c[0], c[1], make_float2(c[2], 0.0f), make_float2(0.0f, c[2])),
       STORE4) }
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
    rng = np.random.default_rng(seed + 1000 * SEED)
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
    rng = np.random.default_rng(seed + 1000 * SEED)
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


def _norm_scale(fmt) -> int:
    """The integer a normalized-float read maps to 1.0: 2^n - 1 or 2^(n-1) - 1."""
    bits = np.dtype(fmt[1]).itemsize * 8
    return 2 ** bits - 1 if np.dtype(fmt[1]).kind == "u" else 2 ** (bits - 1) - 1


def border_texel(fmt) -> np.ndarray:
    """(4,) float64: what a border texel holds, in the format's own terms. A float format
    holds the border color; an integer format read as normalized floats holds the color
    converted to the format (scaled, rounded to nearest with ties down, clamped: the H100
    reads 0.5 as 127/255); element-type integers read 0 (BORDER is not set for them)."""
    out = np.zeros(4)
    channels = fmt[2]
    if np.dtype(fmt[1]).kind == "f":
        out[:channels] = BORDER[:channels]
    elif fmt[3] == "normalized_float":
        scale = _norm_scale(fmt)
        low = 0 if np.dtype(fmt[1]).kind == "u" else -scale
        out[:channels] = np.clip(np.ceil(np.array(BORDER[:channels]) * scale - 0.5), low, scale)
    return out


def gather(data: np.ndarray, fmt, dims: int, mode: str, normalized: bool, idx) -> np.ndarray:
    """(n, 4) float64: the stored texels at integer indices idx (tuple of arrays x, y, z),
    addressed, border texels from border_texel, missing channels 0."""
    channels = fmt[2]
    cube = data.reshape((1,) * (3 - dims) + data.shape[:dims] + (channels,))
    depth, height, width = cube.shape[:3]
    outside = np.zeros(idx[0].shape, bool)
    addressed = []
    for k, n in enumerate((width, height, depth)):
        a, o = _address(idx[k], n, mode, normalized)
        addressed.append(a)
        outside |= o
    out = np.zeros((len(idx[0]), 4))
    out[:, :channels] = cube[addressed[2], addressed[1], addressed[0]].astype(np.float64)
    out[outside] = border_texel(fmt)
    return out


def _read(stored: np.ndarray, fmt) -> np.ndarray:
    """Stored texels as a point fetch returns them: (n, 4) uint32 bits of float32 or int."""
    kind = np.dtype(fmt[1]).kind
    if kind == "f":
        return stored.astype(np.float32).view(np.uint32)
    if fmt[3] == "element_type":
        return stored.astype(np.int64).astype(np.uint32)
    values = stored.astype(np.float32) / np.float32(_norm_scale(fmt))
    return np.maximum(values, np.float32(-1)).view(np.uint32)


def fetch(data: np.ndarray, fmt, dims: int, mode: str, normalized: bool, idx) -> np.ndarray:
    """The texels at integer indices idx, addressed, as a point fetch returns them: (n, 4)
    uint32 bits."""
    return _read(gather(data, fmt, dims, mode, normalized, idx), fmt)


COORDINATE_BITS = 24        # fractional bits of a normalized coordinate


def texel_coordinates(coords: np.ndarray, dims: int, normalized: bool,
                      sizes: tuple = ()) -> np.ndarray:
    """(n, 3) float64 texel coordinates: normalized ones cut to COORDINATE_BITS fractional
    bits (toward -inf) and scaled by the size exactly (`sizes`, or SIZES[dims])."""
    u = coords[:, :3].astype(np.float32).astype(np.float64)
    if normalized:
        size = np.array((tuple(sizes or SIZES[dims]) + (1, 1))[:3], np.float64)
        u = np.floor(u * 2.0 ** COORDINATE_BITS) / 2.0 ** COORDINATE_BITS * size
    return u


def round_float32(hi: np.ndarray, lo: np.ndarray, dtype=np.float32) -> np.ndarray:
    """hi + lo (float64, |lo| below half an ulp of hi) to float32 (or float16, returned as
    float32): nearest, ties away from zero."""
    t = hi.astype(dtype)
    over = np.abs(t.astype(np.float64)) > np.abs(hi)
    t[over] = np.nextafter(t[over], dtype(0))                  # hi cut toward zero
    rest = np.abs(hi - t.astype(np.float64))                    # exact
    half = np.abs(np.spacing(t)).astype(np.float64) / 2
    same = np.sign(lo) == np.sign(hi)
    up = (rest > half) | ((rest == half) & (same | (lo == 0)))
    t[up] = np.nextafter(t[up], np.copysign(dtype(np.inf), hi[up]).astype(dtype))
    return t.astype(np.float32)


def _two_sum(a, b):
    s = a + b
    v = s - a
    return s, (a - (s - v)) + (b - v)


def weights(q: np.ndarray, axes: int) -> dict:
    """{corner: (n,) integer weight of 256} of the 2 x 2 (x 2) texels around a sample whose
    fractions are q (n, 3), 8-bit fixed point. Each z slice's weight Z (256 - q_z, q_z; 256 in
    2D) is split between x0 and x1, X1 = Z q_x / 256, and each of those between y0 and y1:
    X1 gives its y1 corner X1 q_y / 256, X0 its y0 corner X0 (256 - q_y) / 256, every share
    rounded to nearest with ties up; the sibling takes what is left, so the diagonal corners
    (x0, y0) and (x1, y1) are the rounded ones. Corner bit k is the upper texel on axis k."""
    def share(whole, fraction):
        return np.floor(whole * fraction / 256 + 0.5)
    out = {}
    slices = ((0, 256 - q[:, 2]), (4, q[:, 2])) if axes == 3 else ((0, np.full(len(q), 256.0)),)
    for z, whole in slices:
        x1 = share(whole, q[:, 0])
        x0 = whole - x1
        out[z | 3] = share(x1, q[:, 1])
        out[z | 1] = x1 - out[z | 3]
        out[z] = share(x0, 256 - q[:, 1])
        out[z | 2] = x0 - out[z]
    return dict(sorted(out.items()))


# Float texels are filtered after each z slice's are cut to a common exponent: toward zero
# to this many bits below the largest one's (the format's significand and 4 more).
FILTER_BITS = {4: 28, 2: 15}


def _filter_floats(texels: dict, w: dict, fmt) -> np.ndarray:
    bits = FILTER_BITS[np.dtype(fmt[1]).itemsize]
    hi = lo = np.zeros_like(texels[0])
    for slab in (0, 4):
        corners = [c for c in texels if c & 4 == slab]
        if not corners:
            continue
        counted = [(w[c][:, None] > 0) & (texels[c] != 0) for c in corners]
        top = np.max([np.where(n, np.frexp(texels[c])[1], -1000)
                      for c, n in zip(corners, counted, strict=True)], axis=0)
        grid = np.ldexp(1.0, np.maximum(top, -900) - bits)
        for c in corners:
            term = w[c][:, None] / 256 * (np.trunc(texels[c] / grid) * grid)    # exact
            hi, err = _two_sum(hi, term)
            lo = lo + err
            hi, lo = _two_sum(hi, lo)
    return round_float32(hi, lo, np.float16 if bits == 15 else np.float32).view(np.uint32)


def _filter_normalized(texels: dict, w: dict, fmt) -> np.ndarray:
    """Integer texels read as normalized floats filter in 16 bits: 8-bit unsigned ones
    widened by 257, the sum rounded to a 16-bit integer (ties up); 8-bit signed ones filter
    as they are, to s = sum w t (8 fractional bits), and scale by about 32767/32512 as the
    H100 does: s + round((s >> 4) * 257 / 2^11), the shift toward -inf (docs/textures.md)."""
    signed = np.dtype(fmt[1]).kind == "i"
    widen = 257 if np.dtype(fmt[1]) == np.uint8 else 1
    total = sum(w[c][:, None].astype(np.int64) * texels[c].astype(np.int64) * widen
                for c in texels)
    if np.dtype(fmt[1]) == np.int8:
        value = total + (((total >> 4) * 257 + 1024) >> 11)
    else:
        value = np.floor((total + 128) / 256)
    out = (value / (32767 if signed else 65535)).astype(np.float32)
    return np.maximum(out, np.float32(-1)).view(np.uint32)


CUBE_SIZE = 4               # texels along each edge of a cube map's faces
CUBE_FORMATS = tuple(f for f in FORMATS if f[0] in ("f32x4", "f16x2", "u8x4_norm", "u16x4_elem"))


def cube_cases():
    """(format, filter mode) of the cube map cases."""
    for fmt, filt in itertools.product(CUBE_FORMATS, FILTER_MODES):
        if filt == "point" or is_float_result(fmt):
            yield fmt, filt


def cube_texels(fmt, seed: int = 2) -> np.ndarray:
    """(6, CUBE_SIZE, CUBE_SIZE[, channels]) texels of a cube map's faces."""
    _, dtype, channels, _ = fmt
    shape = (6, CUBE_SIZE, CUBE_SIZE) + ((channels,) if channels > 1 else ())
    rng = np.random.default_rng(seed + 1000 * SEED)
    if np.dtype(dtype).kind == "f":
        return rng.uniform(-4, 4, shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)


def cube_directions(count: int = 96, seed: int = 4) -> np.ndarray:
    """(count, 3) float32 directions: the six axes, the 12 edge and 8 corner directions (ties
    between major axes), then random ones."""
    rng = np.random.default_rng(seed + 1000 * SEED)
    out = rng.uniform(-1, 1, (count, 3)).astype(np.float32)
    special = [v for v in itertools.product((-1.0, 0.0, 1.0), repeat=3) if any(v)]
    out[:len(special)] = np.array(special, np.float32)
    return out


def cube_faces(directions: np.ndarray):
    """The CUDA C++ Programming Guide's cube map table ("Cubemap Textures") in float32: the
    face of each direction's major axis and the face's normalized
    coordinates ((s / m + 1) / 2, (t / m + 1) / 2). Ties between major axes go to z, then y
    (the H100 reads (1, 1, 1) from face 4, +z, and (1, 1, 0) from face 2, +y)."""
    x, y, z = (directions[:, k].astype(np.float32) for k in range(3))
    ax, ay, az = np.abs(x), np.abs(y), np.abs(z)
    on_z = (az >= ax) & (az >= ay)
    on_y = ~on_z & (ay >= ax)
    on_x = ~on_z & ~on_y
    face = np.where(on_x, np.where(x >= 0, 0, 1),
                    np.where(on_y, np.where(y >= 0, 2, 3), np.where(z >= 0, 4, 5)))
    m = np.where(on_x, ax, np.where(on_y, ay, az))
    s = np.where(on_x, np.where(x >= 0, -z, z), np.where(on_y, x, np.where(z >= 0, x, -x)))
    t = np.where(on_x, -y, np.where(on_y, np.where(y >= 0, z, -z), -y))
    one, half = np.float32(1), np.float32(0.5)
    return face, (s / m + one) * half, (t / m + one) * half


def sample_cube(data: np.ndarray, fmt, filt: str, directions: np.ndarray) -> np.ndarray:
    """What texCubemap<float4 or uint4> returns, (n, 4) uint32 bits: the face a 2D texture
    read at normalized coordinates, clamped to it (no filtering across faces)."""
    face, s, t = cube_faces(directions)
    out = np.zeros((len(directions), 4), np.uint32)
    for f in range(6):
        chosen = face == f
        coords = np.zeros((int(chosen.sum()), 3), np.float32)
        coords[:, 0], coords[:, 1] = s[chosen], t[chosen]
        out[chosen] = sample(data[f], fmt, 2, "clamp", filt, True, coords)
    return out


def is_float_result(fmt) -> bool:
    return fmt[1] in (np.float32, np.float16) or fmt[3] == "normalized_float"


def sample(data: np.ndarray, fmt, dims: int, mode: str, filt: str, normalized: bool,
           coords: np.ndarray) -> np.ndarray:
    """What tex{1,2,3}D<float4 or uint4> returns at `coords`, as (n, 4) uint32 bits."""
    sizes = tuple(reversed(data.shape[:dims]))
    u = texel_coordinates(coords, dims, normalized, sizes)
    u[:, dims:] = 0
    if filt == "point" or not is_float_result(fmt):
        idx = [np.floor(u[:, k]).astype(np.int64) if k < dims else np.zeros(len(u), np.int64)
               for k in range(3)]
        return fetch(data, fmt, dims, mode, normalized, idx)
    if mode == "clamp" or (not normalized and mode in ("wrap", "mirror")):
        u[:, :dims] = np.clip(u[:, :dims], 0.5, np.array(sizes, np.float64) - 0.5)
    axes = max(dims, 2)               # a 1D texture filters as 2D of height 1 at y = 0
    b = u - 0.5
    base = np.floor(b).astype(np.int64)
    q = np.floor((b - np.floor(b)) * 256 + 0.5)
    w = weights(q, axes)
    texels = {}
    for corner in w:
        idx = [base[:, k] + ((corner >> k) & 1) if k < axes else np.zeros(len(u), np.int64)
               for k in range(3)]
        texels[corner] = gather(data, fmt, dims, mode, normalized, idx)
    if np.dtype(fmt[1]).kind == "f":
        return _filter_floats(texels, w, fmt)
    return _filter_normalized(texels, w, fmt)


def launch_fetch(device, kernels, dims, fmt, handle: int, coords: np.ndarray) -> np.ndarray:
    """Run the fetch kernel of `dims` (1, 2, 3, "c" for a cube map, or "flod" / "fgrad" for
    a mipmapped 2D texture) on texture `handle` at `coords`: (n, 4) uint32 bits."""
    from ptxport import LaunchConfig, launch

    stream = device.create_stream()
    n = len(coords)
    c = device.allocate(coords.nbytes, stream=stream)
    c.copy_from(coords, stream=stream)
    out = device.allocate(n * 16, stream=stream)
    kernel = kernels.get_kernel(dims if dims in ("flod", "fgrad") else
                                f"{'f' if is_float_result(fmt) else 'i'}{dims}")
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


def run_cube_on_ptxport(device, kernels, fmt, filt):
    """(got, expected) of one cube map case on a ptxport device and in this model."""
    from ptxport.runtime.textures import (
        Array,
        ChannelFormat,
        ResourceDesc,
        TextureDesc,
        TextureObject,
    )

    stream = device.create_stream()
    data = cube_texels(fmt)
    array = Array(device, ChannelFormat.from_dtype(fmt[1], fmt[2]), CUBE_SIZE, CUBE_SIZE, 6,
                  cubemap=True, stream=stream)
    array.copy_from(data, stream=stream)
    desc = TextureDesc(address_mode=("clamp",) * 3, filter_mode=filt, read_mode=fmt[3],
                       normalized_coords=True)
    texture = TextureObject(device, ResourceDesc.from_array(array), desc, stream=stream)
    directions = cube_directions()
    got = launch_fetch(device, kernels, "c", fmt, texture.handle, directions)
    texture.close()
    array.close()
    return got, sample_cube(data, fmt, filt, directions)


# Mipmapped 2D textures (benchmarks/texture_cuda_check.py; tex2DLod and tex2DGrad)
MIP_SIZE, MIP_LEVELS = (16, 8), 5      # 16 x 8 down to 1 x 1
MIP_FORMAT = FORMATS[1]                # f32x4: every channel a weight's witness
WHOLE_LODS = (-1.0, 0.0, 1.0, 2.0, 3.0, 4.0, 6.0)


def mip_texels() -> list[np.ndarray]:
    """Each level's texels, (height, width, 4) float32."""
    rng = np.random.default_rng(7 + 1000 * SEED)
    width, height = MIP_SIZE
    return [rng.uniform(-4, 4, (max(height >> k, 1), max(width >> k, 1), 4)).astype(np.float32)
            for k in range(MIP_LEVELS)]


def mip_coordinates(kernel: str, count: int = 192) -> np.ndarray:
    """(count, 3): normalized (u, v) and the level of detail (flod), or the gradient whose
    log2 in level 0's texels is one (fgrad): whole ones, halves, and random ones."""
    rng = np.random.default_rng(8 + 1000 * SEED)
    points = rng.uniform(0.0, 1.0, (count, 3)).astype(np.float32)
    lods = rng.uniform(-1.0, 5.5, count)
    fixed = WHOLE_LODS + (0.25, 0.5, 0.75, 1.5, 2.49, 2.5, 2.51, 3.5)
    lods[:len(fixed)] = fixed
    points[:, 2] = lods if kernel == "flod" else np.exp2(lods) / MIP_SIZE[0]
    return points


def run_mipmap_on_ptxport(device, kernels, kernel: str, filt: str, mip_filter: str):
    """The fetches of mipmap case (kernel "flod" or "fgrad", texture filter, mipmap filter)
    on a ptxport device, as (n, 4) uint32 bits."""
    from ptxport.runtime.textures import (
        ChannelFormat,
        MipmappedArray,
        ResourceDesc,
        TextureDesc,
        TextureObject,
    )

    stream = device.create_stream()
    mipmap = MipmappedArray(device, ChannelFormat("float", 32, 4), *MIP_SIZE,
                            levels=MIP_LEVELS, stream=stream)
    levels = mip_texels()
    for k, data in enumerate(levels):
        mipmap.level(k).copy_from(data, stream=stream)
    stream.sync()
    desc = TextureDesc(filter_mode=filt, mipmap_filter_mode=mip_filter, normalized_coords=True,
                       max_mipmap_level_clamp=float(MIP_LEVELS - 1))
    texture = TextureObject(device, ResourceDesc.from_mipmapped_array(mipmap), desc)
    got = launch_fetch(device, kernels, kernel, MIP_FORMAT, texture.handle,
                       mip_coordinates(kernel))
    texture.close()
    mipmap.close()
    return got
