"""The runtime API's CUDA arrays, texture objects and surface objects, for the drop-in
libcudart.so.13: cudaMallocArray, cudaMalloc3DArray, cudaMallocMipmappedArray, the copies to,
from and between arrays (cudaMemcpy2DToArray, cudaMemcpyToArray, ... and cudaMemcpy3D with
arrays), cudaArrayGetInfo, cudaGetChannelDesc, cudaFreeArray, cudaCreateTextureObject,
cudaCreateSurfaceObject and their destroys.

Each is the driver's handler (textures.py, pitched.py) after the runtime's own structs are
read: cudaChannelFormatDesc (bits per channel, a kind) becomes a CUarray_format and a channel
count, cudaResourceDesc and cudaTextureDesc the runtime's ResourceDesc and TextureDesc, and
the copies CUDA_MEMCPY2D/3D with the array on one side; so the arrays and objects are the
driver shim's, on every device (the real driver's on cuda devices).
"""

from __future__ import annotations

import ctypes

from ptxport.compat import pitched, streams, textures
from ptxport.compat.state import INVALID_VALUE, NOT_SUPPORTED, SUCCESS, CudaError, put
from ptxport.runtime.textures import ChannelFormat, ResourceDesc, TextureDesc

INVALID_CHANNEL_DESCRIPTOR = 20   # cudaErrorInvalidChannelDescriptor
INVALID_MEMCPY_DIRECTION = 21
INVALID_PITCH = 12                # cudaErrorInvalidPitchValue
_KINDS = ("signed", "unsigned", "float")   # cudaChannelFormatKind 0, 1, 2
_UNIFIED, _ARRAY = 4, 3                    # CUmemorytype


class _ChannelFormatDesc(ctypes.Structure):
    """struct cudaChannelFormatDesc (driver_types.h)."""

    _fields_ = [("x", ctypes.c_int), ("y", ctypes.c_int), ("z", ctypes.c_int),
                ("w", ctypes.c_int), ("f", ctypes.c_int)]


class _Extent(ctypes.Structure):
    _fields_ = [("width", ctypes.c_size_t), ("height", ctypes.c_size_t),
                ("depth", ctypes.c_size_t)]


class _Linear(ctypes.Structure):
    _fields_ = [("devPtr", ctypes.c_void_p), ("desc", _ChannelFormatDesc),
                ("sizeInBytes", ctypes.c_size_t)]


class _Pitch2D(ctypes.Structure):
    _fields_ = [("devPtr", ctypes.c_void_p), ("desc", _ChannelFormatDesc),
                ("width", ctypes.c_size_t), ("height", ctypes.c_size_t),
                ("pitchInBytes", ctypes.c_size_t)]


class _Resource(ctypes.Union):
    _fields_ = [("handle", ctypes.c_void_p), ("linear", _Linear), ("pitch2D", _Pitch2D),
                ("reserved", ctypes.c_int * 32)]


class _ResourceDesc(ctypes.Structure):
    """struct cudaResourceDesc (driver_types.h)."""

    _fields_ = [("resType", ctypes.c_int), ("res", _Resource), ("flags", ctypes.c_uint)]


class _TextureDesc(ctypes.Structure):
    """struct cudaTextureDesc (texture_types.h)."""

    _fields_ = [("addressMode", ctypes.c_int * 3), ("filterMode", ctypes.c_int),
                ("readMode", ctypes.c_int), ("sRGB", ctypes.c_int),
                ("borderColor", ctypes.c_float * 4), ("normalizedCoords", ctypes.c_int),
                ("maxAnisotropy", ctypes.c_uint), ("mipmapFilterMode", ctypes.c_int),
                ("mipmapLevelBias", ctypes.c_float), ("minMipmapLevelClamp", ctypes.c_float),
                ("maxMipmapLevelClamp", ctypes.c_float),
                ("disableTrilinearOptimization", ctypes.c_int),
                ("seamlessCubemap", ctypes.c_int)]


# -- channel formats ----------------------------------------------------------------------------

def _channel_format(desc: _ChannelFormatDesc) -> ChannelFormat:
    bits = [b for b in (desc.x, desc.y, desc.z, desc.w) if b]
    if desc.f >= 3:
        raise CudaError(NOT_SUPPORTED, f"channel format kind {desc.f} (none, NV12 or a packed "
                                       "format) is not one ptxport's textures have")
    if desc.f < 0 or not bits or len(set(bits)) != 1 or len(bits) == 3 or \
            bits != [desc.x, desc.y, desc.z, desc.w][:len(bits)]:
        raise CudaError(INVALID_CHANNEL_DESCRIPTOR,
                        f"channel descriptor ({desc.x}, {desc.y}, {desc.z}, {desc.w}, kind "
                        f"{desc.f}): 1, 2 or 4 channels of one size")
    try:
        return ChannelFormat(_KINDS[desc.f], bits[0], len(bits))
    except ValueError as e:
        raise CudaError(INVALID_CHANNEL_DESCRIPTOR, str(e)) from None


def _read_format(address: int) -> tuple[int, int]:
    """(CUarray_format, channels) of the cudaChannelFormatDesc at `address`."""
    if not address:
        raise CudaError(INVALID_VALUE, "the cudaChannelFormatDesc pointer is NULL")
    fmt = _channel_format(_ChannelFormatDesc.from_address(address))
    return textures.format_code(fmt), fmt.channels


def _write_format(address: int, fmt: ChannelFormat) -> None:
    desc = _ChannelFormatDesc.from_address(address)
    desc.x, desc.y, desc.z, desc.w = [fmt.bits if i < fmt.channels else 0 for i in range(4)]
    desc.f = _KINDS.index(fmt.kind)


# -- arrays -------------------------------------------------------------------------------------

def cudaMallocArray(out: int, desc: int, width: int, height: int, flags: int) -> int:
    code, channels = _read_format(desc)
    return textures.create_array(out, width, height, 0, code, channels, flags)


def cudaMalloc3DArray(out: int, desc: int, width: int, height: int, depth: int,
                      flags: int) -> int:
    code, channels = _read_format(desc)
    return textures.create_array(out, width, height, depth, code, channels, flags)


def cudaMallocMipmappedArray(out: int, desc: int, width: int, height: int, depth: int,
                             levels: int, flags: int) -> int:
    code, channels = _read_format(desc)
    return textures.create_mipmapped_array(out, width, height, depth, code, channels, flags,
                                           levels)


def cudaGetMipmappedArrayLevel(out: int, mipmapped: int, level: int) -> int:
    return textures.cuMipmappedArrayGetLevel(out, mipmapped, level)


def cudaFreeMipmappedArray(mipmapped: int) -> int:
    return textures.cuMipmappedArrayDestroy(mipmapped) if mipmapped else SUCCESS


def cudaFreeArray(array: int) -> int:
    return textures.cuArrayDestroy(array) if array else SUCCESS   # NULL: nothing to do


def cudaArrayGetInfo(desc: int, extent: int, flags: int, array: int) -> int:
    a = textures.array(array)
    if desc:
        _write_format(desc, a.format)
    if extent:
        e = _Extent.from_address(extent)
        e.width, e.height, e.depth = a.width, a.height, a.depth
    if flags:
        put(ctypes.c_uint, flags, a.flags)
    return SUCCESS


def cudaGetChannelDesc(desc: int, array: int) -> int:
    if not desc:
        raise CudaError(INVALID_VALUE, "the cudaChannelFormatDesc pointer is NULL")
    _write_format(desc, textures.array(array).format)
    return SUCCESS


# -- copies -------------------------------------------------------------------------------------

def _check_kind(kind: int) -> None:
    if not 0 <= kind <= 4:
        raise CudaError(INVALID_MEMCPY_DIRECTION, f"{kind} is not a cudaMemcpyKind")


def _copy(src: tuple, dst: tuple, width: int, height: int, kind: int, stream: int,
          sync: bool) -> int:
    """A 2D copy of `height` rows of `width` bytes; each side ("array", handle, x, y) or
    ("linear", address, pitch) (host or device memory: unified addressing tells)."""
    _check_kind(kind)
    fields = {"WidthInBytes": width, "Height": height}
    for prefix, side in (("src", src), ("dst", dst)):
        if side[0] == "array":
            fields.update({f"{prefix}MemoryType": _ARRAY, f"{prefix}Array": side[1],
                           f"{prefix}XInBytes": side[2], f"{prefix}Y": side[3]})
        else:
            fields.update({f"{prefix}MemoryType": _UNIFIED, f"{prefix}Host": side[1],
                           f"{prefix}Device": side[1], f"{prefix}Pitch": side[2]})
            if height > 1 and side[2] < width:
                raise CudaError(INVALID_PITCH, f"rows of {width} bytes are wider than the "
                                               f"pitch {side[2]}")
    copy = pitched._Memcpy2D(**fields)
    return pitched._copy_2d(ctypes.addressof(copy), stream, sync)


def cudaMemcpy2DToArrayAsync(dst: int, x: int, y: int, src: int, spitch: int, width: int,
                             height: int, kind: int, stream: int) -> int:
    return _copy(("linear", src, spitch), ("array", dst, x, y), width, height, kind, stream,
                 False)


def cudaMemcpy2DToArray(dst: int, x: int, y: int, src: int, spitch: int, width: int,
                        height: int, kind: int) -> int:
    return _copy(("linear", src, spitch), ("array", dst, x, y), width, height, kind, 0, True)


def cudaMemcpy2DFromArrayAsync(dst: int, dpitch: int, src: int, x: int, y: int, width: int,
                               height: int, kind: int, stream: int) -> int:
    return _copy(("array", src, x, y), ("linear", dst, dpitch), width, height, kind, stream,
                 False)


def cudaMemcpy2DFromArray(dst: int, dpitch: int, src: int, x: int, y: int, width: int,
                          height: int, kind: int) -> int:
    return _copy(("array", src, x, y), ("linear", dst, dpitch), width, height, kind, 0, True)


def cudaMemcpy2DArrayToArray(dst: int, dst_x: int, dst_y: int, src: int, src_x: int,
                             src_y: int, width: int, height: int, kind: int) -> int:
    return _copy(("array", src, src_x, src_y), ("array", dst, dst_x, dst_y), width, height,
                 kind, 0, True)


def _pieces(array: int, x: int, y: int, count: int) -> list[tuple[int, int, int, int, int]]:
    """The deprecated 1D array copies: `count` bytes from byte x of row y on, row after row
    (as the array's bytes lie in a 2D array), as 2D copies (offset into the linear side,
    x, y, bytes per row, rows): the rest of the first row, whole rows, a last part."""
    a = textures.array(array)
    row, rows = a.pitch, max(a.height, 1) * max(a.depth, 1)
    if x >= row and count or y * row + x + count > rows * row:
        raise CudaError(INVALID_VALUE, f"{count} bytes from byte {x} of row {y} do not fit "
                                       f"in a CUDA array of {rows} rows of {row} bytes")
    pieces, offset = [], 0
    if x and count:
        first = min(row - x, count)
        pieces.append((0, x, y, first, 1))
        offset, y = first, y + 1
    whole = (count - offset) // row
    if whole:
        pieces.append((offset, 0, y, row, whole))
        offset, y = offset + whole * row, y + whole
    if count > offset:
        pieces.append((offset, 0, y, count - offset, 1))
    return pieces


def cudaMemcpyToArrayAsync(dst: int, x: int, y: int, src: int, count: int, kind: int,
                           stream: int) -> int:
    for offset, px, py, width, rows in _pieces(dst, x, y, count):
        _copy(("linear", src + offset, width), ("array", dst, px, py), width, rows, kind,
              stream, False)
    return SUCCESS


def cudaMemcpyToArray(dst: int, x: int, y: int, src: int, count: int, kind: int) -> int:
    cudaMemcpyToArrayAsync(dst, x, y, src, count, kind, 0)
    streams.legacy_sync()
    return SUCCESS


def cudaMemcpyFromArrayAsync(dst: int, src: int, x: int, y: int, count: int, kind: int,
                             stream: int) -> int:
    for offset, px, py, width, rows in _pieces(src, x, y, count):
        _copy(("array", src, px, py), ("linear", dst + offset, width), width, rows, kind,
              stream, False)
    return SUCCESS


def cudaMemcpyFromArray(dst: int, src: int, x: int, y: int, count: int, kind: int) -> int:
    cudaMemcpyFromArrayAsync(dst, src, x, y, count, kind, 0)
    streams.legacy_sync()
    return SUCCESS


def cudaMemcpyArrayToArray(dst: int, dst_x: int, dst_y: int, src: int, src_x: int,
                           src_y: int, count: int, kind: int) -> int:
    pieces = _pieces(src, src_x, src_y, count), _pieces(dst, dst_x, dst_y, count)
    if [p[3:] for p in pieces[0]] != [p[3:] for p in pieces[1]]:
        raise CudaError(NOT_SUPPORTED, "a 1D copy between CUDA arrays whose rows it crosses "
                                       "at different places")
    for (_, sx, sy, width, rows), (_, dx, dy, _, _) in zip(*pieces, strict=True):
        _copy(("array", src, sx, sy), ("array", dst, dx, dy), width, rows, kind, 0, True)
    return SUCCESS


def copy_3d(p, stream: int, sync: bool) -> int:
    """cudaMemcpy3D(Async) of the cudaMemcpy3DParms `p` with a CUDA array on one side or
    both: the extent's width and the x of both positions are in the array's texels (NVIDIA's
    runtime scales the memory side's x too, though the manual calls its element a byte)."""
    _check_kind(p.kind)
    texel = textures.array(p.srcArray or p.dstArray).format.texel_size
    fields = {"WidthInBytes": p.extent[0] * texel, "Height": p.extent[1],
              "Depth": p.extent[2]}
    for prefix in ("src", "dst"):
        handle = getattr(p, f"{prefix}Array")
        (x, y, z), (address, pitch, _, rows) = getattr(p, f"{prefix}Pos"), \
            getattr(p, f"{prefix}Ptr")
        fields.update({f"{prefix}Y": y, f"{prefix}Z": z})
        fields[f"{prefix}XInBytes"] = x * texel
        if handle:
            fields.update({f"{prefix}MemoryType": _ARRAY, f"{prefix}Array": handle})
        else:
            fields.update({f"{prefix}MemoryType": _UNIFIED, f"{prefix}Host": address,
                           f"{prefix}Device": address, f"{prefix}Pitch": pitch,
                           f"{prefix}Height": rows})
    copy = pitched._Memcpy3D(**fields)
    return pitched._copy_3d(ctypes.addressof(copy), stream, sync)


# -- texture and surface objects ----------------------------------------------------------------

def _resource(address: int) -> ResourceDesc:
    if not address:
        raise CudaError(INVALID_VALUE, "the cudaResourceDesc pointer is NULL")
    r = _ResourceDesc.from_address(address)
    if r.resType == 0:
        return ResourceDesc.from_array(textures.array(r.res.handle or 0))
    if r.resType == 1:
        return ResourceDesc.from_mipmapped_array(textures.mipmapped_array(r.res.handle or 0))
    if r.resType == 2:
        linear = r.res.linear
        return ResourceDesc.linear(textures.Memory(linear.devPtr or 0),
                                   _channel_format(linear.desc), linear.sizeInBytes)
    if r.resType == 3:
        p = r.res.pitch2D
        return ResourceDesc.pitch2d(textures.Memory(p.devPtr or 0), _channel_format(p.desc),
                                    p.width, p.height, p.pitchInBytes)
    raise CudaError(INVALID_VALUE, f"{r.resType} is not a cudaResourceType")


def _texture_desc(address: int, resource: ResourceDesc) -> TextureDesc:
    if not address:
        raise CudaError(INVALID_VALUE, "the cudaTextureDesc pointer is NULL")
    t = _TextureDesc.from_address(address)
    if any(m not in range(4) for m in t.addressMode) or t.filterMode not in (0, 1) or \
            t.mipmapFilterMode not in (0, 1) or t.readMode not in (0, 1):
        raise CudaError(INVALID_VALUE, "an address, filter or read mode CUDA does not have")
    fmt = resource.format
    # Normalized reads apply to 8- and 16-bit integers only; CUDA ignores them elsewhere.
    normalized = t.readMode == 1 and fmt.kind != "float" and fmt.bits < 32
    return TextureDesc(address_mode=tuple(textures.ADDRESS_MODES[m] for m in t.addressMode),
                       filter_mode=("point", "linear")[t.filterMode],
                       read_mode="normalized_float" if normalized else "element_type",
                       normalized_coords=bool(t.normalizedCoords),
                       border_color=tuple(t.borderColor),
                       mipmap_filter_mode=("point", "linear")[t.mipmapFilterMode],
                       mipmap_level_bias=t.mipmapLevelBias,
                       min_mipmap_level_clamp=t.minMipmapLevelClamp,
                       max_mipmap_level_clamp=t.maxMipmapLevelClamp,
                       max_anisotropy=t.maxAnisotropy, srgb=bool(t.sRGB),
                       seamless_cubemap=bool(t.seamlessCubemap),
                       disable_trilinear_optimization=bool(t.disableTrilinearOptimization))


def cudaCreateTextureObject(out: int, resource: int, texture: int, view: int) -> int:
    if not out:
        raise CudaError(INVALID_VALUE, "the pointer for the texture object is NULL")
    if view:
        raise CudaError(NOT_SUPPORTED, "resource views (cudaResourceViewDesc) are not "
                                       "supported")
    res = _resource(resource)
    return textures.create_texture(out, res, _texture_desc(texture, res))


def cudaDestroyTextureObject(handle: int) -> int:
    return textures.cuTexObjectDestroy(handle)


def cudaCreateSurfaceObject(out: int, resource: int) -> int:
    if not out:
        raise CudaError(INVALID_VALUE, "the pointer for the surface object is NULL")
    return textures.create_surface(out, _resource(resource))


def cudaDestroySurfaceObject(handle: int) -> int:
    return textures.cuSurfObjectDestroy(handle)


def _write_resource(address: int, resource: ResourceDesc) -> None:
    """The cudaResourceDesc of `resource` at `address` (the getters)."""
    if not address:
        raise CudaError(INVALID_VALUE, "the cudaResourceDesc pointer is NULL")
    ctypes.memset(address, 0, ctypes.sizeof(_ResourceDesc))
    r = _ResourceDesc.from_address(address)
    r.resType = ("array", "mipmapped", "linear", "pitch2d").index(resource.kind)
    if resource.kind in ("array", "mipmapped"):
        r.res.handle = resource.array.handle
        return
    fmt = resource.format
    if resource.kind == "linear":
        linear = r.res.linear
        linear.devPtr = resource.buffer.handle
        linear.sizeInBytes = resource.width * fmt.texel_size
        _write_format(ctypes.addressof(linear.desc), fmt)
        return
    p = r.res.pitch2D
    p.devPtr, p.width, p.height, p.pitchInBytes = (resource.buffer.handle, resource.width,
                                                   resource.height, resource.pitch)
    _write_format(ctypes.addressof(p.desc), fmt)


def cudaGetTextureObjectResourceDesc(out: int, handle: int) -> int:
    _write_resource(out, textures.texture_object("texture", handle).resource)
    return SUCCESS


def cudaGetSurfaceObjectResourceDesc(out: int, handle: int) -> int:
    _write_resource(out, textures.texture_object("surface", handle).resource)
    return SUCCESS


def cudaGetTextureObjectTextureDesc(out: int, handle: int) -> int:
    desc = textures.texture_object("texture", handle).desc
    if not out:
        raise CudaError(INVALID_VALUE, "the cudaTextureDesc pointer is NULL")
    ctypes.memset(out, 0, ctypes.sizeof(_TextureDesc))
    t = _TextureDesc.from_address(out)
    modes = (tuple(desc.address_mode) + ("clamp",) * 3)[:3]
    t.addressMode[:] = [textures.ADDRESS_MODES.index(m) for m in modes]
    t.filterMode = ("point", "linear").index(desc.filter_mode)
    t.readMode = int(desc.read_mode == "normalized_float")
    t.sRGB, t.normalizedCoords = int(desc.srgb), int(desc.normalized_coords)
    t.borderColor[:] = (tuple(desc.border_color) + (0.0,) * 4)[:4]
    t.maxAnisotropy = desc.max_anisotropy
    t.mipmapFilterMode = ("point", "linear").index(desc.mipmap_filter_mode)
    t.mipmapLevelBias = desc.mipmap_level_bias
    t.minMipmapLevelClamp = desc.min_mipmap_level_clamp
    t.maxMipmapLevelClamp = desc.max_mipmap_level_clamp
    t.disableTrilinearOptimization = int(desc.disable_trilinear_optimization)
    t.seamlessCubemap = int(desc.seamless_cubemap)
    return SUCCESS
