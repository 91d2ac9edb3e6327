"""The driver API's CUDA arrays, texture objects and surface objects: cuArrayCreate,
cuArray3DCreate, their descriptors and cuArrayDestroy; cuTexObjectCreate/Destroy and
cuSurfObjectCreate/Destroy over arrays, linear and pitched memory. cudart's runtime calls
(cudaMallocArray, cudaMemcpy2DToArray, cudaCreateTextureObject, ...) arrive here through it.

The objects are ptxport.runtime.textures': an array is device memory laid out row after row,
a texture or surface object the device address of the descriptor that the sampler linked
into kernels reads (passes/textures.py). pitched.py copies to and from arrays through
`array_origin`; cube maps (CUDA_ARRAY3D_CUBEMAP) are arrays of 6 layers per cube. Mipmapped
arrays, resource views and the packed formats CUDA 13 added are refused with
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
_READ_AS_INTEGER, _NORMALIZED_COORDINATES = 0x1, 0x2          # CU_TRSF_*
_ADDRESS_MODES = ("wrap", "clamp", "mirror", "border")
_RESOURCE_ARRAY, _RESOURCE_MIPMAPPED, _RESOURCE_LINEAR, _RESOURCE_PITCH2D = 0, 1, 2, 3

_arrays: dict[int, Array] = {}
_objects: dict[int, object] = {}
_Memory = namedtuple("_Memory", "handle")   # device memory a resource names by address


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


def _format(code: int, channels: int) -> ChannelFormat:
    if code not in _FORMATS:
        raise CudaError(NOT_SUPPORTED, f"array format {code:#x} is not one ptxport's textures "
                                       "have (8/16/32-bit integers, half and float)")
    return ChannelFormat(*_FORMATS[code], channels)


def _create(out: int, width: int, height: int, depth: int, code: int, channels: int,
            flags: int) -> int:
    if not out:
        raise CudaError(INVALID_VALUE, "the pointer for the array's handle is NULL")
    array = Array(state.device, _format(code, channels), width, height, depth,
                  layered=bool(flags & _LAYERED), cubemap=bool(flags & _CUBEMAP))
    _arrays[array.buffer.handle] = array
    put(ctypes.c_void_p, out, array.buffer.handle)
    return SUCCESS


def cuArrayCreate_v2(out: int, desc: int) -> int:
    d = _ArrayDescriptor.from_address(desc)
    return _create(out, d.Width, d.Height, 0, d.Format, d.NumChannels, 0)


def cuArray3DCreate_v2(out: int, desc: int) -> int:
    d = _Array3DDescriptor.from_address(desc)
    return _create(out, d.Width, d.Height, d.Depth, d.Format, d.NumChannels, d.Flags)


def array(handle: int) -> Array:
    found = _arrays.get(handle)
    if found is None:
        raise CudaError(INVALID_VALUE, f"{handle:#x} is not a live CUDA array")
    return found


def cuArrayDestroy(handle: int) -> int:
    found = array(handle)
    streams.legacy_sync()
    del _arrays[handle]
    found.close()
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
    d.Flags = _LAYERED if a.layered else 0
    return SUCCESS


def array_origin(handle: int, x: int, y: int, z: int) -> tuple[int, int, int]:
    """(address of byte x of row y of slice z, pitch, slice size) in array `handle`, for
    pitched.py's copies."""
    a = array(handle)
    return a.buffer.handle + z * a.slice + y * a.pitch + x, a.pitch, a.slice


def _resource(address: int) -> ResourceDesc:
    if not address:
        raise CudaError(INVALID_VALUE, "the CUDA_RESOURCE_DESC pointer is NULL")
    r = _ResourceDesc.from_address(address)
    words = r.res
    if r.resType == _RESOURCE_ARRAY:
        return ResourceDesc.from_array(array(words[0]))
    if r.resType in (_RESOURCE_LINEAR, _RESOURCE_PITCH2D):
        fmt = _format(words[1] & 0xFFFFFFFF, words[1] >> 32)
        if r.resType == _RESOURCE_LINEAR:
            return ResourceDesc.linear(_Memory(words[0]), fmt, words[2])
        return ResourceDesc.pitch2d(_Memory(words[0]), fmt, words[2], words[3], words[4])
    what = "mipmapped arrays" if r.resType == _RESOURCE_MIPMAPPED else f"type {r.resType}"
    raise CudaError(NOT_SUPPORTED, f"texture resources of {what} are not supported")


def _texture_desc(address: int, resource: ResourceDesc) -> TextureDesc:
    if not address:
        raise CudaError(INVALID_VALUE, "the CUDA_TEXTURE_DESC pointer is NULL")
    t = _TextureDesc.from_address(address)
    if any(m not in range(4) for m in t.addressMode) or t.filterMode not in (0, 1):
        raise CudaError(INVALID_VALUE, "an address or filter mode CUDA does not have")
    fmt = resource.format
    normalized_read = not t.flags & _READ_AS_INTEGER and fmt.kind != "float" and fmt.bits < 32
    return TextureDesc(address_mode=tuple(_ADDRESS_MODES[m] for m in t.addressMode),
                       filter_mode=("point", "linear")[t.filterMode],
                       read_mode="normalized_float" if normalized_read else "element_type",
                       normalized_coords=bool(t.flags & _NORMALIZED_COORDINATES),
                       border_color=tuple(t.borderColor))


def cuTexObjectCreate(out: int, resource: int, texture: int, view: int) -> int:
    if not out:
        raise CudaError(INVALID_VALUE, "the pointer for the texture object is NULL")
    if view:
        raise CudaError(NOT_SUPPORTED, "resource views (CUDA_RESOURCE_VIEW_DESC) are not "
                                       "supported")
    res = _resource(resource)
    obj = TextureObject(state.device, res, _texture_desc(texture, res))
    _objects[obj.handle] = obj
    put(ctypes.c_uint64, out, obj.handle)
    return SUCCESS


def cuSurfObjectCreate(out: int, resource: int) -> int:
    if not out:
        raise CudaError(INVALID_VALUE, "the pointer for the surface object is NULL")
    obj = SurfaceObject(state.device, _resource(resource))
    _objects[obj.handle] = obj
    put(ctypes.c_uint64, out, obj.handle)
    return SUCCESS


def _destroy(handle: int) -> int:
    obj = _objects.pop(handle, None)
    if obj is None:
        raise CudaError(INVALID_VALUE, f"{handle:#x} is not a live texture or surface object")
    streams.legacy_sync()    # kernels queued before may still read it
    obj.close()
    return SUCCESS


def cuTexObjectDestroy(handle: int) -> int:
    return _destroy(handle)


def cuSurfObjectDestroy(handle: int) -> int:
    return _destroy(handle)
