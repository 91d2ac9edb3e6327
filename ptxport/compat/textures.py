"""The driver API's CUDA arrays, texture objects and surface objects: cuArrayCreate,
cuArray3DCreate, their descriptors and cuArrayDestroy; cuTexObjectCreate/Destroy and
cuSurfObjectCreate/Destroy over arrays, linear and pitched memory. cudart's runtime calls
(cudaMallocArray, cudaMemcpy2DToArray, cudaCreateTextureObject, ...) arrive here through it.

The objects are ptxport.runtime.textures'. On cuda devices they are the real driver's (a
CUarray, a CUtexObject: the handle the program sees is the one its kernels give the texture
units), and so are copies to and from arrays (`copy_native`) and mipmapped arrays
(cuMipmappedArrayCreate). Elsewhere an array is device memory laid out row after row, a
texture or surface object the device address of the descriptor that the sampler linked into
kernels reads (passes/textures.py), a mipmapped array one array per level; pitched.py copies
to and from arrays through `array_origin`; cube maps (CUDA_ARRAY3D_CUBEMAP) are arrays of 6
layers per cube. Resource views and the packed formats CUDA 13 added are refused with
CUDA_ERROR_NOT_SUPPORTED and a line on stderr.
"""

from __future__ import annotations

import ctypes
from collections import namedtuple

from ptxport.compat import streams
from ptxport.compat.state import INVALID_VALUE, NOT_SUPPORTED, SUCCESS, CudaError, put, state
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

# CUarray_format -> (channel kind, bits)
_FORMATS = {0x01: ("unsigned", 8), 0x02: ("unsigned", 16), 0x03: ("unsigned", 32),
            0x08: ("signed", 8), 0x09: ("signed", 16), 0x0A: ("signed", 32),
            0x10: ("float", 16), 0x20: ("float", 32)}
_CODES = {v: k for k, v in _FORMATS.items()}
_LAYERED, _SURFACE, _CUBEMAP, _GATHER = 0x1, 0x2, 0x4, 0x8     # CUDA_ARRAY3D_* flags
_READ_AS_INTEGER, _NORMALIZED_COORDINATES, _SRGB = 0x1, 0x2, 0x10   # CU_TRSF_*
_DISABLE_TRILINEAR_OPTIMIZATION, _SEAMLESS_CUBEMAP = 0x20, 0x40
ADDRESS_MODES = ("wrap", "clamp", "mirror", "border")
_RESOURCE_ARRAY, _RESOURCE_MIPMAPPED, _RESOURCE_LINEAR, _RESOURCE_PITCH2D = 0, 1, 2, 3

_arrays: dict[int, Array] = {}
_mipmapped: dict[int, MipmappedArray] = {}
# texture and surface objects by handle (the driver numbers each kind apart)
_objects: dict[str, dict[int, object]] = {"texture": {}, "surface": {}}
Memory = namedtuple("Memory", "handle")   # device memory a resource names by address


class _ArrayDescriptor(ctypes.Structure):
    """CUDA_ARRAY_DESCRIPTOR (cuda.h)."""

    _fields_ = [("Width", ctypes.c_size_t), ("Height", ctypes.c_size_t),
                ("Format", ctypes.c_int), ("NumChannels", ctypes.c_uint)]


class _Array3DDescriptor(ctypes.Structure):
    """CUDA_ARRAY3D_DESCRIPTOR (cuda.h)."""

    _fields_ = [("Width", ctypes.c_size_t), ("Height", ctypes.c_size_t),
                ("Depth", ctypes.c_size_t), ("Format", ctypes.c_int),
                ("NumChannels", ctypes.c_uint), ("Flags", ctypes.c_uint)]


class _ResourceDesc(ctypes.Structure):
    """CUDA_RESOURCE_DESC (cuda.h): the union `res` read by resType."""

    _fields_ = [("resType", ctypes.c_int), ("res", ctypes.c_uint64 * 16),
                ("flags", ctypes.c_uint)]


class _TextureDesc(ctypes.Structure):
    """CUDA_TEXTURE_DESC (cuda.h)."""

    _fields_ = [("addressMode", ctypes.c_int * 3), ("filterMode", ctypes.c_int),
                ("flags", ctypes.c_uint), ("maxAnisotropy", ctypes.c_uint),
                ("mipmapFilterMode", ctypes.c_int), ("mipmapLevelBias", ctypes.c_float),
                ("minMipmapLevelClamp", ctypes.c_float),
                ("maxMipmapLevelClamp", ctypes.c_float), ("borderColor", ctypes.c_float * 4),
                ("reserved", ctypes.c_int * 12)]


def format_code(fmt: ChannelFormat) -> int:
    """The CUarray_format of `fmt`'s channels."""
    return _CODES[(fmt.kind, fmt.bits)]


def _format(code: int, channels: int) -> ChannelFormat:
    if code not in _FORMATS:
        raise CudaError(NOT_SUPPORTED, f"array format {code:#x} is not one ptxport's textures "
                                       "have (8/16/32-bit integers, half and float)")
    return ChannelFormat(*_FORMATS[code], channels)


def _shape(flags: int) -> dict:
    return dict(layered=bool(flags & _LAYERED), cubemap=bool(flags & _CUBEMAP),
                surface=bool(flags & _SURFACE), gather=bool(flags & _GATHER))


def create_array(out: int, width: int, height: int, depth: int, code: int, channels: int,
            flags: int) -> int:
    if not out:
        raise CudaError(INVALID_VALUE, "the pointer for the array's handle is NULL")
    array = Array(state.device, _format(code, channels), width, height, depth, **_shape(flags))
    _arrays[array.handle] = array
    put(ctypes.c_void_p, out, array.handle)
    return SUCCESS


def cuArrayCreate_v2(out: int, desc: int) -> int:
    if not desc:
        raise CudaError(INVALID_VALUE, "the CUDA_ARRAY_DESCRIPTOR pointer is NULL")
    d = _ArrayDescriptor.from_address(desc)
    return create_array(out, d.Width, d.Height, 0, d.Format, d.NumChannels, 0)


def cuArray3DCreate_v2(out: int, desc: int) -> int:
    if not desc:
        raise CudaError(INVALID_VALUE, "the CUDA_ARRAY3D_DESCRIPTOR pointer is NULL")
    d = _Array3DDescriptor.from_address(desc)
    return create_array(out, d.Width, d.Height, d.Depth, d.Format, d.NumChannels, d.Flags)


def mipmapped_array(handle: int) -> MipmappedArray:
    found = _mipmapped.get(handle)
    if found is None:
        raise CudaError(INVALID_VALUE, f"{handle:#x} is not a live mipmapped array")
    return found


def check_box(handle: int, x: int, y: int, z: int, width: int, height: int,
              depth: int) -> None:
    """A copy's box (x and width in bytes) must lie within array `handle`."""
    a = array(handle)
    rows, slices = max(a.height, 1), max(a.depth, 1)
    if x + width > a.pitch or y + height > rows or z + depth > slices:
        raise CudaError(INVALID_VALUE, f"a copy of {width} bytes x {height} rows x {depth} "
                                       f"at ({x}, {y}, {z}) does not fit in a CUDA array of "
                                       f"rows of {a.pitch} bytes, {rows} rows, {slices} "
                                       "slices")


def array(handle: int) -> Array:
    found = _arrays.get(handle)
    if found is None:
        raise CudaError(INVALID_VALUE, f"{handle:#x} is not a live CUDA array")
    return found


def cuArrayDestroy(handle: int) -> int:
    found = array(handle)
    if handle in _levels:
        raise CudaError(INVALID_VALUE, f"{handle:#x} is a level of a mipmapped array, freed "
                                       "with it (cuMipmappedArrayDestroy)")
    streams.legacy_sync()
    del _arrays[handle]
    found.close()
    return SUCCESS


_levels: dict[int, int] = {}     # a mipmapped array's level's handle -> the mipmapped array


def cuMipmappedArrayCreate(out: int, desc: int, levels: int) -> int:
    if not desc:
        raise CudaError(INVALID_VALUE, "the CUDA_ARRAY3D_DESCRIPTOR pointer is NULL")
    d = _Array3DDescriptor.from_address(desc)
    return create_mipmapped_array(out, d.Width, d.Height, d.Depth, d.Format, d.NumChannels,
                                  d.Flags, levels)


def create_mipmapped_array(out: int, width: int, height: int, depth: int, code: int,
                           channels: int, flags: int, levels: int) -> int:
    if not out:
        raise CudaError(INVALID_VALUE, "the pointer for the mipmapped array's handle is NULL")
    mipmapped = MipmappedArray(state.device, _format(code, channels), width, height, depth,
                               levels=levels, **_shape(flags))
    _mipmapped[mipmapped.handle] = mipmapped
    put(ctypes.c_void_p, out, mipmapped.handle)
    return SUCCESS


def cuMipmappedArrayGetLevel(out: int, handle: int, level: int) -> int:
    mipmapped = mipmapped_array(handle)
    if not out:
        raise CudaError(INVALID_VALUE, "the pointer for the level's handle is NULL")
    found = mipmapped.level(level)
    _arrays.setdefault(found.handle, found)
    _levels[found.handle] = handle
    put(ctypes.c_void_p, out, found.handle)
    return SUCCESS


def cuMipmappedArrayDestroy(handle: int) -> int:
    mipmapped = mipmapped_array(handle)
    streams.legacy_sync()
    for level in [k for k, v in _levels.items() if v == handle]:
        del _levels[level], _arrays[level]
    del _mipmapped[handle]
    mipmapped.close()
    return SUCCESS


def cuArrayGetDescriptor_v2(out: int, handle: int) -> int:
    a = array(handle)
    d = _ArrayDescriptor.from_address(out)
    d.Width, d.Height = a.width, a.height
    d.Format, d.NumChannels = _CODES[(a.format.kind, a.format.bits)], a.format.channels
    return SUCCESS


def cuArray3DGetDescriptor_v2(out: int, handle: int) -> int:
    a = array(handle)
    d = _Array3DDescriptor.from_address(out)
    d.Width, d.Height, d.Depth = a.width, a.height, a.depth
    d.Format, d.NumChannels = _CODES[(a.format.kind, a.format.bits)], a.format.channels
    d.Flags = a.flags
    return SUCCESS


def array_origin(handle: int, x: int, y: int, z: int) -> tuple[int, int, int]:
    """(address of byte x of row y of slice z, pitch, slice size) in array `handle`, for
    pitched.py's copies; never an array of the driver's (copy_native copies those)."""
    a = array(handle)
    return a.buffer.handle + z * a.slice + y * a.pitch + x, a.pitch, a.slice


def _resource(address: int) -> ResourceDesc:
    if not address:
        raise CudaError(INVALID_VALUE, "the CUDA_RESOURCE_DESC pointer is NULL")
    r = _ResourceDesc.from_address(address)
    words = r.res
    if r.resType == _RESOURCE_ARRAY:
        return ResourceDesc.from_array(array(words[0]))
    if r.resType == _RESOURCE_MIPMAPPED:
        return ResourceDesc.from_mipmapped_array(mipmapped_array(words[0]))
    if r.resType in (_RESOURCE_LINEAR, _RESOURCE_PITCH2D):
        fmt = _format(words[1] & 0xFFFFFFFF, words[1] >> 32)
        if r.resType == _RESOURCE_LINEAR:
            return ResourceDesc.linear(Memory(words[0]), fmt, words[2])
        return ResourceDesc.pitch2d(Memory(words[0]), fmt, words[2], words[3], words[4])
    raise CudaError(INVALID_VALUE, f"{r.resType} is not a CUresourcetype")


def _texture_desc(address: int, resource: ResourceDesc) -> TextureDesc:
    if not address:
        raise CudaError(INVALID_VALUE, "the CUDA_TEXTURE_DESC pointer is NULL")
    t = _TextureDesc.from_address(address)
    if any(m not in range(4) for m in t.addressMode) or t.filterMode not in (0, 1) or \
            t.mipmapFilterMode not in (0, 1):
        raise CudaError(INVALID_VALUE, "an address or filter mode CUDA does not have")
    fmt = resource.format
    normalized_read = not t.flags & _READ_AS_INTEGER and fmt.kind != "float" and fmt.bits < 32
    return TextureDesc(address_mode=tuple(ADDRESS_MODES[m] for m in t.addressMode),
                       filter_mode=("point", "linear")[t.filterMode],
                       read_mode="normalized_float" if normalized_read else "element_type",
                       normalized_coords=bool(t.flags & _NORMALIZED_COORDINATES),
                       border_color=tuple(t.borderColor),
                       mipmap_filter_mode=("point", "linear")[t.mipmapFilterMode],
                       mipmap_level_bias=t.mipmapLevelBias,
                       min_mipmap_level_clamp=t.minMipmapLevelClamp,
                       max_mipmap_level_clamp=t.maxMipmapLevelClamp,
                       max_anisotropy=t.maxAnisotropy, srgb=bool(t.flags & _SRGB),
                       seamless_cubemap=bool(t.flags & _SEAMLESS_CUBEMAP),
                       disable_trilinear_optimization=bool(
                           t.flags & _DISABLE_TRILINEAR_OPTIMIZATION))


def cuTexObjectCreate(out: int, resource: int, texture: int, view: int) -> int:
    if not out:
        raise CudaError(INVALID_VALUE, "the pointer for the texture object is NULL")
    if view:
        raise CudaError(NOT_SUPPORTED, "resource views (CUDA_RESOURCE_VIEW_DESC) are not "
                                       "supported")
    res = _resource(resource)
    return create_texture(out, res, _texture_desc(texture, res))


def create_texture(out: int, resource: ResourceDesc, desc: TextureDesc) -> int:
    """cuTexObjectCreate and cudaCreateTextureObject, their descriptions read."""
    obj = TextureObject(state.device, resource, desc)
    _objects["texture"][obj.handle] = obj
    put(ctypes.c_uint64, out, obj.handle)
    return SUCCESS


def cuSurfObjectCreate(out: int, resource: int) -> int:
    if not out:
        raise CudaError(INVALID_VALUE, "the pointer for the surface object is NULL")
    return create_surface(out, _resource(resource))


def create_surface(out: int, resource: ResourceDesc) -> int:
    obj = SurfaceObject(state.device, resource)
    _objects["surface"][obj.handle] = obj
    put(ctypes.c_uint64, out, obj.handle)
    return SUCCESS


def texture_object(kind: str, handle: int):
    """The live texture or surface object (`kind`) of `handle`."""
    found = _objects[kind].get(handle)
    if found is None:
        raise CudaError(INVALID_VALUE, f"{handle:#x} is not a live {kind} object")
    return found


def _write_resource(address: int, resource: ResourceDesc) -> None:
    """CUDA_RESOURCE_DESC of `resource` at `address` (the getters)."""
    if not address:
        raise CudaError(INVALID_VALUE, "the CUDA_RESOURCE_DESC pointer is NULL")
    ctypes.memset(address, 0, ctypes.sizeof(_ResourceDesc))
    r = _ResourceDesc.from_address(address)
    kinds = {"array": _RESOURCE_ARRAY, "mipmapped": _RESOURCE_MIPMAPPED,
             "linear": _RESOURCE_LINEAR, "pitch2d": _RESOURCE_PITCH2D}
    r.resType = kinds[resource.kind]
    if resource.kind in ("array", "mipmapped"):
        r.res[0] = resource.array.handle
        return
    fmt = resource.format
    r.res[0], r.res[1] = resource.buffer.handle, format_code(fmt) | fmt.channels << 32
    if resource.kind == "linear":
        r.res[2] = resource.width * fmt.texel_size
    else:
        r.res[2], r.res[3], r.res[4] = resource.width, resource.height, resource.pitch


def cuTexObjectGetResourceDesc(out: int, handle: int) -> int:
    _write_resource(out, texture_object("texture", handle).resource)
    return SUCCESS


def cuSurfObjectGetResourceDesc(out: int, handle: int) -> int:
    _write_resource(out, texture_object("surface", handle).resource)
    return SUCCESS


def cuTexObjectGetTextureDesc(out: int, handle: int) -> int:
    obj = texture_object("texture", handle)
    if not out:
        raise CudaError(INVALID_VALUE, "the CUDA_TEXTURE_DESC pointer is NULL")
    ctypes.memset(out, 0, ctypes.sizeof(_TextureDesc))
    t, d = _TextureDesc.from_address(out), obj.desc
    t.addressMode[:] = [ADDRESS_MODES.index(m) for m in (tuple(d.address_mode) +
                                                          ("clamp",) * 3)[:3]]
    t.filterMode = ("point", "linear").index(d.filter_mode)
    t.mipmapFilterMode = ("point", "linear").index(d.mipmap_filter_mode)
    integer = d.read_mode == "element_type" and obj.resource.format.kind != "float"
    t.flags = (_READ_AS_INTEGER * integer | _NORMALIZED_COORDINATES * d.normalized_coords |
               _SRGB * d.srgb | _SEAMLESS_CUBEMAP * d.seamless_cubemap |
               _DISABLE_TRILINEAR_OPTIMIZATION * d.disable_trilinear_optimization)
    t.maxAnisotropy, t.mipmapLevelBias = d.max_anisotropy, d.mipmap_level_bias
    t.minMipmapLevelClamp, t.maxMipmapLevelClamp = (d.min_mipmap_level_clamp,
                                                    d.max_mipmap_level_clamp)
    t.borderColor[:] = (tuple(d.border_color) + (0.0,) * 4)[:4]
    return SUCCESS


def _destroy(kind: str, handle: int) -> int:
    obj = _objects[kind].pop(handle, None)
    if obj is None:
        raise CudaError(INVALID_VALUE, f"{handle:#x} is not a live {kind} object")
    streams.legacy_sync()    # kernels queued before may still read it
    obj.close()
    return SUCCESS


def cuTexObjectDestroy(handle: int) -> int:
    return _destroy("texture", handle)


def cuSurfObjectDestroy(handle: int) -> int:
    return _destroy("surface", handle)


_HOST_MEMORY, _ARRAY_MEMORY = 1, 3      # CUmemorytype


def _copy_side(c, prefix: str, width: int, rows: int) -> CopySide:
    """One side of the CUDA_MEMCPY2D or CUDA_MEMCPY3D `c` (prefix "src" or "dst")."""
    def field(name: str) -> int:     # CUDA_MEMCPY2D has no Z and no Height of its own
        return getattr(c, prefix + name, 0) or 0

    x, y, z = field("XInBytes"), field("Y"), field("Z")
    kind = field("MemoryType")
    if kind == _ARRAY_MEMORY:
        return CopySide(array=array(field("Array")).handle, x=x, y=y, z=z)
    address = field("Host") if kind == _HOST_MEMORY else field("Device")
    # One row needs no pitch in CUDA; the driver's 3D copy wants one of a row at least.
    return CopySide(address=address, pitch=max(field("Pitch"), width),
                    height=max(field("Height"), rows), x=x, y=y, z=z)


def copy_native(c, stream: int, sync: bool) -> bool:
    """A cuMemcpy2D/3D (`c`: CUDA_MEMCPY2D or CUDA_MEMCPY3D) that reads or writes an array
    held by its device's driver (cuda): the driver's copy, in stream order. False when no
    such array takes part (pitched.py copies those)."""
    arrays = [array(getattr(c, p + "Array") or 0) for p in ("src", "dst")
              if getattr(c, p + "MemoryType") == _ARRAY_MEMORY]
    native = [a for a in arrays if a.native]
    if not native:
        return False
    if len(native) != len(arrays) or any(a.device is not native[0].device for a in arrays):
        raise CudaError(NOT_SUPPORTED, "a copy between CUDA arrays of different devices")
    width, rows, depth = c.WidthInBytes, c.Height, getattr(c, "Depth", 1)
    src, dst = (_copy_side(c, p, width, rows) for p in ("src", "dst"))
    device = native[0].device
    hooks = device._backend.textures
    streams.enqueue(stream, lambda: hooks.copy(device._ordinal, src, dst, width, rows, depth),
                    sync)
    return True
