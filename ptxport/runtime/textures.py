"""Texture and surface objects: CUDA arrays, resource and texture descriptions, and the
objects kernels read, on every device.

Shaped after CUDA's runtime API (cudaCreateChannelDesc, cudaMallocArray, cudaResourceDesc,
cudaTextureDesc, cudaCreateTextureObject, cudaCreateSurfaceObject) and CuPy's
cupy.cuda.texture. A texture or surface object is the device address of a 128-byte descriptor
in device memory; that 64-bit number is what a kernel takes as `cudaTextureObject_t`, and
the sampler that passes/textures.py links into kernels reads it (texture_sampler.cu's
Descriptor: the same layout, field for field). That is on devices without texture hardware
of ptxport's (cpu, opencl, hip). On cuda devices, whose kernels keep the texture
instructions, arrays and objects are the driver's own (the backend's `textures` hooks,
backends/cuda_textures.py): a handle is the CUarray, CUtexObject or CUsurfObject itself.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from ptxport.errors import InvalidValueError, UnsupportedFeatureError

__all__ = ["ChannelFormat", "Array", "MipmappedArray", "ResourceDesc", "TextureDesc",
           "TextureObject", "SurfaceObject", "CopySide", "copy_region", "ADDRESS_MODES",
           "FILTER_MODES", "READ_MODES", "CHANNEL_KINDS"]

# CUDA's enumerations (cudaAddressMode, cudaFilterMode, cudaTextureReadMode,
# cudaChannelFormatKind, cudaResourceType): the descriptor holds these numbers.
ADDRESS_MODES = {"wrap": 0, "clamp": 1, "mirror": 2, "border": 3}
FILTER_MODES = {"point": 0, "linear": 1}
READ_MODES = {"element_type": 0, "normalized_float": 1}
CHANNEL_KINDS = {"signed": 0, "unsigned": 1, "float": 2}
_RESOURCES = {"array": 0, "linear": 2, "pitch2d": 3}
# cudaArray* / CUDA_ARRAY3D_* flags
LAYERED, SURFACE_LOAD_STORE, CUBEMAP, TEXTURE_GATHER = 0x1, 0x2, 0x4, 0x8
_LAYOUT = struct.Struct("<3Q4I6I3II4f2I2I3fIQ")     # texture_sampler.cu's Descriptor
DESCRIPTOR_SIZE = 160


@dataclass(frozen=True)
class ChannelFormat:
    """What one texel holds: `channels` (1, 2 or 4) channels of `bits` (8, 16, 32) each, of
    `kind` "signed", "unsigned" or "float" (16-bit floats are halves). cudaChannelFormatDesc."""

    kind: str
    bits: int
    channels: int = 1

    def __post_init__(self):
        if self.kind not in CHANNEL_KINDS:
            raise InvalidValueError(f"channel kind {self.kind!r}: one of {list(CHANNEL_KINDS)}")
        if self.bits not in (8, 16, 32) or (self.kind == "float" and self.bits == 8):
            raise InvalidValueError(f"{self.bits}-bit {self.kind} channels are not a CUDA format")
        if self.channels not in (1, 2, 4):
            raise InvalidValueError(f"{self.channels} channels: CUDA formats have 1, 2 or 4")

    @classmethod
    def from_dtype(cls, dtype, channels: int = 1) -> ChannelFormat:
        """The format of numpy `dtype` elements (float32, float16, int8 ... uint32)."""
        dtype = np.dtype(dtype)
        kind = {"f": "float", "i": "signed", "u": "unsigned"}.get(dtype.kind)
        if kind is None:
            raise InvalidValueError(f"no channel format for {dtype}")
        return cls(kind, dtype.itemsize * 8, channels)

    @property
    def texel_size(self) -> int:
        return self.bits // 8 * self.channels


def _check_extent(width: int, height: int, depth: int, layered: bool, cubemap: bool) -> None:
    if width <= 0 or height < 0 or depth < 0 or (depth and not height and not layered):
        raise InvalidValueError(f"array extent ({width}, {height}, {depth}) is not one "
                                "CUDA allows")
    if cubemap and (width != height or not depth or depth % 6 or (depth > 6 and
                                                                  not layered)):
        raise InvalidValueError(f"a cube map of ({width}, {height}, {depth}): square "
                                "faces, depth 6 (or 6 per cube of a layered one)")


class Array:
    """A CUDA array: texels of one format in `width` x `height` x `depth` (0 for an absent
    dimension, as cudaExtent has it), laid out row after row; `layered` makes `depth` the
    number of layers (cudaArrayLayered). `cubemap` makes it a cube map (cudaArrayCubemap):
    width == height, depth 6 faces (+x, -x, +y, -y, +z, -z), or 6 per cube with `layered`
    (a cube map array); the faces are its layers. `surface` (cudaArraySurfaceLoadStore) and
    `gather` (cudaArrayTextureGather) are what CUDA requires of an array that backs a
    surface object or is read by tex2Dgather; cuda devices hold programs to them.
    cudaMalloc3DArray. `handle` is the cudaArray_t."""

    def __init__(self, device, format: ChannelFormat, width: int, height: int = 0,
                 depth: int = 0, *, layered: bool = False, cubemap: bool = False,
                 surface: bool = False, gather: bool = False, stream=None, _level=None):
        _check_extent(width, height, depth, layered, cubemap)
        self.cubemap, layered = cubemap, layered or cubemap
        self.device, self.format, self.layered = device, format, layered
        self.width, self.height, self.depth = width, height, depth
        self.flags = (LAYERED * layered | CUBEMAP * cubemap | SURFACE_LOAD_STORE * surface |
                      TEXTURE_GATHER * gather)
        self.pitch = width * format.texel_size
        self.slice = self.pitch * max(height, 1)
        self._native = device._backend.textures
        # _level: the driver's CUarray of a mipmapped array's level, which that array frees
        self._owned = _level is None
        if self._native is None:
            self.buffer = device.allocate(self.nbytes, stream=stream)
        elif _level is not None:
            self._handle, self.buffer = _level, None
        else:
            self.buffer = None
            self._handle = self._native.create_array(device._ordinal, format,
                                                     (width, height, depth), self.flags)

    @property
    def handle(self) -> int:
        """The 64-bit cudaArray_t: the driver's CUarray on cuda devices, else the address of
        the texels."""
        return self.buffer.handle if self._native is None else self._handle

    @property
    def native(self) -> bool:
        """Whether the device's driver holds the array (cuda devices)."""
        return self._native is not None

    @property
    def nbytes(self) -> int:
        return self.slice * max(self.depth, 1)

    @property
    def dims(self) -> int:
        """1, 2 or 3: the dimensions of one layer."""
        if self.layered:
            return 2 if self.height else 1
        return 3 if self.depth else (2 if self.height else 1)

    @property
    def shape(self) -> tuple[int, ...]:
        """The numpy shape of the whole array: (depth or layers, height, width, channels)
        without absent dimensions and without a channel axis for one channel."""
        shape = tuple(n for n in (self.depth, self.height) if n) + (self.width,)
        return shape + ((self.format.channels,) if self.format.channels > 1 else ())

    def copy_from(self, host: np.ndarray, *, stream) -> None:
        """The whole array from host memory (cudaMemcpy3D / cudaMemcpy2DToArray)."""
        data = self._bytes(host)
        if self._native is None:
            self.buffer.copy_from(data, stream=stream)
            return
        copy_region(self.device, self._host_side(data), CopySide(array=self.handle),
                    self._box(), stream=stream, keep=data)

    def copy_to(self, host: np.ndarray, *, stream) -> None:
        out = np.empty(self.nbytes, np.uint8)
        if self._native is None:
            self.buffer.copy_to(out, stream=stream)
        else:
            copy_region(self.device, CopySide(array=self.handle), self._host_side(out),
                        self._box(), stream=stream, keep=out)
        stream.sync()
        host[...] = out.view(host.dtype).reshape(host.shape)

    def _host_side(self, data: np.ndarray) -> CopySide:
        return CopySide(address=data.ctypes.data, pitch=self.pitch, height=max(self.height, 1))

    def _box(self) -> tuple[int, int, int]:
        return self.pitch, max(self.height, 1), max(self.depth, 1)

    def _bytes(self, host: np.ndarray) -> np.ndarray:
        host = np.ascontiguousarray(host)
        if host.nbytes != self.nbytes:
            raise InvalidValueError(f"{host.nbytes} bytes for an array of {self.nbytes}")
        return host.reshape(-1).view(np.uint8)

    def close(self) -> None:
        """Free the array (after the work that uses it: sync first). A mipmapped array's
        level is freed with its mipmapped array."""
        if not self._owned:
            return
        if self._native is None:
            self.buffer.close()
        else:
            self._native.destroy_array(self.device._ordinal, self._handle)


class MipmappedArray:
    """A CUDA mipmapped array (cudaMallocMipmappedArray): `levels` arrays (at most
    1 + log2 of the largest dimension, as CUDA clamps it), level 0 of `width` x `height` x
    `depth` and each next level half as large (rounded down, at least 1) per dimension (not
    the layers of a layered one). `level(i)` is level i as an Array
    (cudaGetMipmappedArrayLevel), freed with this one. `handle` is the
    cudaMipmappedArray_t."""

    def __init__(self, device, format: ChannelFormat, width: int, height: int = 0,
                 depth: int = 0, *, levels: int, layered: bool = False,
                 cubemap: bool = False, surface: bool = False, gather: bool = False,
                 stream=None):
        _check_extent(width, height, depth, layered, cubemap)
        self.device, self.format = device, format
        self.width, self.height, self.depth = width, height, depth
        self.layered, self.cubemap = layered or cubemap, cubemap
        self._shape = dict(layered=layered, cubemap=cubemap, surface=surface, gather=gather)
        self.flags = (LAYERED * self.layered | CUBEMAP * cubemap | SURFACE_LOAD_STORE * surface
                      | TEXTURE_GATHER * gather)
        largest = max(width, height, 0 if self.layered else depth)
        self.levels = max(1, min(levels, largest.bit_length()))
        self._native = device._backend.textures
        if self._native is not None:
            self.handle = self._native.create_mipmapped_array(
                device._ordinal, format, (width, height, depth), self.flags, levels)
            return
        self._levels = [Array(device, format, *self._extent(i), **self._shape, stream=stream)
                        for i in range(self.levels)]
        for array in self._levels:
            array._owned = False
        self.handle = self._levels[0].handle

    def _extent(self, index: int) -> tuple[int, int, int]:
        width, height = (max(n >> index, 1) if n else 0 for n in (self.width, self.height))
        depth = self.depth if self.layered or not self.depth else max(self.depth >> index, 1)
        return width, height, depth

    def level(self, index: int) -> Array:
        if not 0 <= index < self.levels:
            raise InvalidValueError(f"level {index} of a mipmapped array of {self.levels}")
        if self._native is None:
            return self._levels[index]
        handle = self._native.mipmap_level(self.device._ordinal, self.handle, index)
        return Array(self.device, self.format, *self._extent(index), **self._shape,
                     _level=handle)

    def close(self) -> None:
        if self._native is not None:
            self._native.destroy_mipmapped_array(self.device._ordinal, self.handle)
            return
        for array in self._levels:
            array.buffer.close()


@dataclass(frozen=True)
class CopySide:
    """One side of a copy of a box (copy_region): a CUDA array's handle, or memory at
    `address` (host or device) with rows `pitch` bytes apart and `height` rows per slice;
    the box starts at byte `x` of row `y` of slice `z`."""

    array: int | None = None
    address: int = 0
    pitch: int = 0
    height: int = 0
    x: int = 0
    y: int = 0
    z: int = 0


def copy_region(device, src: CopySide, dst: CopySide, box: tuple[int, int, int], *, stream,
                keep: object = None) -> None:
    """Copy `box` (bytes per row, rows, slices) from `src` to `dst`, one of them an array of
    `device` held by its driver (Array.native), in `stream`'s order (cuMemcpy3D); `keep`
    lives until the copy ran."""
    native = device._backend.textures

    def run(data=keep) -> None:     # `data`: alive until the copy ran
        native.copy(device._ordinal, src, dst, *box)

    stream._submit(run, what=f"a copy of {box[0]} x {box[1]} x {box[2]} bytes with a "
                             "CUDA array")


@dataclass(frozen=True)
class ResourceDesc:
    """What a texture reads (cudaResourceDesc): an Array, a MipmappedArray (cuda devices),
    linear memory (`buffer` of `width` texels, read with integer coordinates by tex1Dfetch)
    or pitched 2D memory."""

    kind: str
    array: Array | MipmappedArray | None = None
    buffer: object = None
    format: ChannelFormat | None = None
    width: int = 0
    height: int = 0
    pitch: int = 0

    @classmethod
    def from_array(cls, array: Array) -> ResourceDesc:
        return cls("array", array=array, format=array.format)

    @classmethod
    def from_mipmapped_array(cls, array: MipmappedArray) -> ResourceDesc:
        return cls("mipmapped", array=array, format=array.format)

    @classmethod
    def linear(cls, buffer, format: ChannelFormat, nbytes: int) -> ResourceDesc:
        return cls("linear", buffer=buffer, format=format, width=nbytes // format.texel_size)

    @classmethod
    def pitch2d(cls, buffer, format: ChannelFormat, width: int, height: int,
                pitch: int) -> ResourceDesc:
        if pitch < width * format.texel_size:
            raise InvalidValueError(f"pitch {pitch} is less than a row ({width} texels)")
        return cls("pitch2d", buffer=buffer, format=format, width=width, height=height,
                   pitch=pitch)

    def geometry(self) -> tuple:
        """(address, pitch, slice, (width, height, depth), layers, dims); cube map or not is
        the array's `cubemap`."""
        if self.kind == "array":
            a = self.array
            layers = a.depth if a.layered else 0
            depth = 1 if a.layered else max(a.depth, 1)
            return (a.buffer.handle, a.pitch, a.slice, (a.width, max(a.height, 1), depth),
                    layers, a.dims)
        if self.kind == "linear":
            row = self.width * self.format.texel_size
            return self.buffer.handle, row, row, (self.width, 1, 1), 0, 1
        return (self.buffer.handle, self.pitch, self.pitch * self.height,
                (self.width, self.height, 1), 0, 2)


@dataclass(frozen=True)
class TextureDesc:
    """How a texture is read (cudaTextureDesc): address mode per dimension ("wrap", "clamp",
    "mirror", "border"), "point" or "linear" filtering, "element_type" or "normalized_float"
    reads, normalized coordinates, and the border color; for mipmapped arrays, the filter
    between levels, the level bias and clamps. The rest is read where the driver samples
    (cuda devices): anisotropy, sRGB, seamless cube maps; ptxport's own sampler refuses sRGB
    and seamless cube maps and filters isotropically (max_anisotropy is ignored)."""

    address_mode: tuple[str, ...] = ("clamp", "clamp", "clamp")
    filter_mode: str = "point"
    read_mode: str = "element_type"
    normalized_coords: bool = False
    border_color: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0)
    mipmap_filter_mode: str = "point"
    mipmap_level_bias: float = 0.0
    min_mipmap_level_clamp: float = 0.0
    max_mipmap_level_clamp: float = 0.0
    max_anisotropy: int = 0
    srgb: bool = False
    seamless_cubemap: bool = False
    disable_trilinear_optimization: bool = False


def _check(resource: ResourceDesc, desc: TextureDesc) -> None:
    """cudaCreateTextureObject's refusals (cudaErrorInvalidValue)."""
    for mode in desc.address_mode:
        if mode not in ADDRESS_MODES:
            raise InvalidValueError(f"address mode {mode!r}: one of {list(ADDRESS_MODES)}")
    if (desc.filter_mode not in FILTER_MODES or desc.mipmap_filter_mode not in FILTER_MODES
            or desc.read_mode not in READ_MODES):
        raise InvalidValueError(f"filter mode {desc.filter_mode!r} or read mode "
                                f"{desc.read_mode!r} is not one CUDA has")
    fmt = resource.format
    normalized = desc.read_mode == "normalized_float"
    if normalized and (fmt.kind == "float" or fmt.bits == 32):
        raise InvalidValueError("normalized-float reads are for 8- and 16-bit integer formats")
    if desc.filter_mode == "linear" and fmt.kind != "float" and not normalized:
        raise InvalidValueError("linear filtering needs a float result: a float format or "
                                "normalized-float reads")


def _descriptor(resource: ResourceDesc, desc: TextureDesc | None, levels: int = 0,
                table: int = 0) -> bytes:
    """The sampler's Descriptor; with `levels`, of level 0 of a mipmapped array whose levels'
    own Descriptors are at address `table`."""
    address, pitch, slice_, size, layers, dims = resource.geometry()
    fmt = resource.format
    desc = desc or TextureDesc()
    modes = (tuple(desc.address_mode) + ("clamp",) * 3)[:3]
    border = (tuple(desc.border_color) + (0.0,) * 4)[:4]
    packed = _LAYOUT.pack(address, pitch, slice_, *size, layers, CHANNEL_KINDS[fmt.kind],
                          fmt.bits, fmt.channels, READ_MODES[desc.read_mode],
                          int(desc.normalized_coords), FILTER_MODES[desc.filter_mode],
                          *(ADDRESS_MODES[m] for m in modes), _RESOURCES[resource.kind],
                          *border, dims, int(resource.kind == "array" and
                                             resource.array.cubemap),
                          levels, FILTER_MODES[desc.mipmap_filter_mode], desc.mipmap_level_bias,
                          desc.min_mipmap_level_clamp, desc.max_mipmap_level_clamp, 0, table)
    return packed.ljust(DESCRIPTOR_SIZE, b"\0")


def _check_sampler(device, desc: TextureDesc) -> None:
    """What ptxport's own sampler cannot do (UnsupportedFeatureError)."""
    for what, used in (("sRGB reads", desc.srgb), ("seamless cube maps",
                                                   desc.seamless_cubemap)):
        if used:
            raise UnsupportedFeatureError(what, str(device), reason="ptxport's texture "
                                          "sampler converts no sRGB and filters no texels "
                                          "across cube faces; cuda devices sample natively")


class _DescriptorObject:
    def __init__(self, device, data: bytes, stream):
        if device._backend.name == "group":
            raise UnsupportedFeatureError(
                "texture and surface objects", str(device), reason="a descriptor holds the "
                "address of its array in one device's memory, which a device group's members "
                "do not share: read the array through a pointer parameter")
        self.device = device
        self._buffer = _upload(device, data, stream)

    @property
    def handle(self) -> int:
        """The 64-bit object a kernel takes (cudaTextureObject_t / cudaSurfaceObject_t)."""
        return self._buffer.handle

    def close(self) -> None:
        self._buffer.close()


def _upload(device, data: bytes, stream):
    """A buffer of `device` holding `data`."""
    stream = stream or device.default_stream
    buffer = device.allocate(len(data), stream=stream)
    buffer.copy_from(np.frombuffer(data, np.uint8), stream=stream)
    stream.sync()
    return buffer


class _MipmappedObject(_DescriptorObject):
    """A texture object of a mipmapped array for ptxport's sampler: level 0's Descriptor,
    pointing to a table of every level's."""

    def __init__(self, device, mipmap: MipmappedArray, desc: TextureDesc, stream):
        levels = [ResourceDesc.from_array(mipmap.level(i)) for i in range(mipmap.levels)]
        self._table = _upload(device, b"".join(_descriptor(r, desc) for r in levels), stream)
        super().__init__(device, _descriptor(levels[0], desc, mipmap.levels,
                                             self._table.handle), stream)

    def close(self) -> None:
        super().close()
        self._table.close()


class _NativeObject:
    """A texture or surface object of the device's driver (cuda devices)."""

    def __init__(self, device, handle: int, destroy):
        self.device, self._handle, self._destroy = device, handle, destroy

    @property
    def handle(self) -> int:
        """The 64-bit object a kernel takes (cudaTextureObject_t / cudaSurfaceObject_t)."""
        return self._handle

    def close(self) -> None:
        self._destroy(self.device._ordinal, self._handle)


class TextureObject:
    """cudaCreateTextureObject(resource, texture description). `handle` is the 64-bit
    cudaTextureObject_t; close() destroys it (after the kernels that read it)."""

    def __init__(self, device, resource: ResourceDesc, desc: TextureDesc | None = None, *,
                 stream=None):
        self.resource, self.desc = resource, desc or TextureDesc()
        _check(resource, self.desc)
        native = device._backend.textures
        if native is not None:
            handle = native.create_texture(device._ordinal, resource, self.desc)
            self._object = _NativeObject(device, handle, native.destroy_texture)
            return
        _check_sampler(device, self.desc)
        if resource.kind == "mipmapped":
            self._object = _MipmappedObject(device, resource.array, self.desc, stream)
            return
        self._object = _DescriptorObject(device, _descriptor(resource, self.desc), stream)

    @property
    def handle(self) -> int:
        return self._object.handle

    def close(self) -> None:
        self._object.close()


class SurfaceObject:
    """cudaCreateSurfaceObject: byte-addressed reads and writes of an Array."""

    def __init__(self, device, resource: ResourceDesc | Array, *, stream=None):
        if isinstance(resource, Array):
            resource = ResourceDesc.from_array(resource)
        if resource.kind != "array":
            raise InvalidValueError("a surface object needs a CUDA array")
        self.resource = resource
        native = device._backend.textures
        if native is not None:
            handle = native.create_surface(device._ordinal, resource)
            self._object = _NativeObject(device, handle, native.destroy_surface)
        else:
            self._object = _DescriptorObject(device, _descriptor(resource, None), stream)

    @property
    def handle(self) -> int:
        return self._object.handle

    def close(self) -> None:
        self._object.close()
