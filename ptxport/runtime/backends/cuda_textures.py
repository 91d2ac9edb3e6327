"""CUDA arrays, mipmapped arrays, texture objects and surface objects on NVIDIA GPUs: the
driver's own (cuArray3DCreate, cuMipmappedArrayCreate, cuTexObjectCreate, cuSurfObjectCreate).

ptxport's NVPTX target keeps the texture and surface instructions (tex, tld4, txq, suld, sust,
suq), so on cuda devices the GPU's texture units sample: runtime/textures.py asks these hooks
(the cuda Backend's `textures`) for the driver's objects, and their handles are what programs
see and kernels receive. Copies to and from arrays are cuMemcpy3D on the calling thread's
per-thread default stream, waited for, as the backend's other hooks are; which side of a copy
is host memory the backend tells from its own allocations.
"""

from __future__ import annotations

from ptxport.errors import InvalidValueError
from ptxport.runtime.backends.cuda import _check, _check_request, _driver

__all__ = ["CudaTextures"]

# (channel kind, bits) -> CUarray_format
FORMATS = {("unsigned", 8): 0x01, ("unsigned", 16): 0x02, ("unsigned", 32): 0x03,
           ("signed", 8): 0x08, ("signed", 16): 0x09, ("signed", 32): 0x0A,
           ("float", 16): 0x10, ("float", 32): 0x20}
ADDRESS_MODES = {"wrap": 0, "clamp": 1, "mirror": 2, "border": 3}
FILTER_MODES = {"point": 0, "linear": 1}
# CU_TRSF_* flags of CUDA_TEXTURE_DESC
READ_AS_INTEGER, NORMALIZED_COORDINATES, SRGB = 0x1, 0x2, 0x10
DISABLE_TRILINEAR_OPTIMIZATION, SEAMLESS_CUBEMAP = 0x20, 0x40
_HOST_MEMORY, _UNIFIED_MEMORY, _ARRAY_MEMORY = 1, 4, 3      # CUmemorytype


class CudaTextures:
    """The cuda Backend's texture hooks; `backend` is that Backend (its contexts and its
    table of allocations)."""

    def __init__(self, backend) -> None:
        self._backend = backend

    def _enter(self, ordinal: int) -> None:
        self._backend._contexts.enter(ordinal)

    # -- arrays -----------------------------------------------------------------------------------

    def create_array(self, ordinal: int, fmt, extent: tuple[int, int, int], flags: int) -> int:
        """A CUDA array of `fmt` (a ChannelFormat) texels, `extent` (width, height, depth; 0
        for an absent dimension), CUDA_ARRAY3D_* `flags`; its CUarray as an int."""
        driver = _driver()
        self._enter(ordinal)
        desc = driver.CUDA_ARRAY3D_DESCRIPTOR()
        desc.Width, desc.Height, desc.Depth = extent
        desc.Format = driver.CUarray_format(FORMATS[(fmt.kind, fmt.bits)])
        desc.NumChannels, desc.Flags = fmt.channels, flags
        return int(_check_request(driver.cuArray3DCreate(desc),
                                  f"cannot create a CUDA array of {extent} on cuda:{ordinal}"))

    def destroy_array(self, ordinal: int, handle: int) -> None:
        driver = _driver()
        self._enter(ordinal)
        _check(driver.cuArrayDestroy(driver.CUarray(handle)),
               f"cannot destroy CUDA array {handle:#x} on cuda:{ordinal}")

    def create_mipmapped_array(self, ordinal: int, fmt, extent: tuple[int, int, int],
                               flags: int, levels: int) -> int:
        """A mipmapped array of `levels` levels, level 0 of `extent`; its CUmipmappedArray."""
        driver = _driver()
        self._enter(ordinal)
        desc = driver.CUDA_ARRAY3D_DESCRIPTOR()
        desc.Width, desc.Height, desc.Depth = extent
        desc.Format = driver.CUarray_format(FORMATS[(fmt.kind, fmt.bits)])
        desc.NumChannels, desc.Flags = fmt.channels, flags
        return int(_check_request(
            driver.cuMipmappedArrayCreate(desc, levels),
            f"cannot create a mipmapped array of {extent}, {levels} levels, on cuda:{ordinal}"))

    def mipmap_level(self, ordinal: int, handle: int, level: int) -> int:
        """The CUarray of level `level` of mipmapped array `handle` (owned by it)."""
        driver = _driver()
        self._enter(ordinal)
        return int(_check_request(
            driver.cuMipmappedArrayGetLevel(driver.CUmipmappedArray(handle), level),
            f"mipmapped array {handle:#x} has no level {level}"))

    def destroy_mipmapped_array(self, ordinal: int, handle: int) -> None:
        driver = _driver()
        self._enter(ordinal)
        _check(driver.cuMipmappedArrayDestroy(driver.CUmipmappedArray(handle)),
               f"cannot destroy mipmapped array {handle:#x} on cuda:{ordinal}")

    # -- copies -----------------------------------------------------------------------------------

    def copy(self, ordinal: int, src, dst, width_bytes: int, height: int, depth: int) -> None:
        """Copy a box of `width_bytes` x `height` rows x `depth` slices from `src` to `dst`,
        each a runtime.textures.CopySide (an array's CUarray, or an address with its pitch
        and rows per slice; x in bytes)."""
        driver = _driver()
        stream = self._backend._contexts.enter(ordinal)
        copy = driver.CUDA_MEMCPY3D()
        for prefix, side in (("src", src), ("dst", dst)):
            self._describe(driver, copy, prefix, side)
        copy.WidthInBytes, copy.Height, copy.Depth = width_bytes, height, depth
        doing = f"cannot copy {width_bytes} x {height} x {depth} bytes to or from a CUDA array"
        _check_request(driver.cuMemcpy3DAsync(copy, stream), doing)
        _check(driver.cuStreamSynchronize(stream), doing)

    def _describe(self, driver, copy, prefix: str, side) -> None:
        setattr(copy, f"{prefix}XInBytes", side.x)
        setattr(copy, f"{prefix}Y", side.y)
        setattr(copy, f"{prefix}Z", side.z)
        if side.array is not None:
            setattr(copy, f"{prefix}MemoryType", driver.CUmemorytype(_ARRAY_MEMORY))
            setattr(copy, f"{prefix}Array", driver.CUarray(side.array))
            return
        setattr(copy, f"{prefix}Pitch", side.pitch)
        setattr(copy, f"{prefix}Height", side.height)
        if self._backend._find(side.address) is None:     # the host's own memory
            setattr(copy, f"{prefix}MemoryType", driver.CUmemorytype(_HOST_MEMORY))
            setattr(copy, f"{prefix}Host", side.address)
        else:                                              # any of the driver's memory
            setattr(copy, f"{prefix}MemoryType", driver.CUmemorytype(_UNIFIED_MEMORY))
            setattr(copy, f"{prefix}Device", side.address)

    # -- texture and surface objects ----------------------------------------------------------

    def create_texture(self, ordinal: int, resource, desc) -> int:
        """A CUtexObject reading `resource` (a ResourceDesc) as `desc` (a TextureDesc) says."""
        driver = _driver()
        self._enter(ordinal)
        texture = driver.CUDA_TEXTURE_DESC()
        modes = (tuple(desc.address_mode) + ("clamp",) * 3)[:3]
        texture.addressMode = [driver.CUaddress_mode(ADDRESS_MODES[m]) for m in modes]
        texture.filterMode = driver.CUfilter_mode(FILTER_MODES[desc.filter_mode])
        texture.mipmapFilterMode = driver.CUfilter_mode(FILTER_MODES[desc.mipmap_filter_mode])
        texture.flags = _texture_flags(desc)
        texture.maxAnisotropy = desc.max_anisotropy
        texture.mipmapLevelBias = desc.mipmap_level_bias
        texture.minMipmapLevelClamp = desc.min_mipmap_level_clamp
        texture.maxMipmapLevelClamp = desc.max_mipmap_level_clamp
        texture.borderColor = list((tuple(desc.border_color) + (0.0,) * 4)[:4])
        return int(_check_request(
            driver.cuTexObjectCreate(_resource(driver, resource), texture, None),
            f"cannot create a texture object on cuda:{ordinal}"))

    def create_surface(self, ordinal: int, resource) -> int:
        driver = _driver()
        self._enter(ordinal)
        return int(_check_request(driver.cuSurfObjectCreate(_resource(driver, resource)),
                                  f"cannot create a surface object on cuda:{ordinal} (the "
                                  "array needs the surface load/store flag)"))

    def destroy_texture(self, ordinal: int, handle: int) -> None:
        driver = _driver()
        self._enter(ordinal)
        _check(driver.cuTexObjectDestroy(driver.CUtexObject(handle)),
               f"cannot destroy texture object {handle:#x}")

    def destroy_surface(self, ordinal: int, handle: int) -> None:
        driver = _driver()
        self._enter(ordinal)
        _check(driver.cuSurfObjectDestroy(driver.CUsurfObject(handle)),
               f"cannot destroy surface object {handle:#x}")


def _texture_flags(desc) -> int:
    flags = NORMALIZED_COORDINATES if desc.normalized_coords else 0
    if desc.read_mode == "element_type":
        flags |= READ_AS_INTEGER
    if desc.srgb:
        flags |= SRGB
    if desc.seamless_cubemap:
        flags |= SEAMLESS_CUBEMAP
    if desc.disable_trilinear_optimization:
        flags |= DISABLE_TRILINEAR_OPTIMIZATION
    return flags


def _resource(driver, resource):
    """CUDA_RESOURCE_DESC of a runtime.textures.ResourceDesc."""
    r = driver.CUDA_RESOURCE_DESC()
    kind = resource.kind
    if kind == "array":
        r.resType = driver.CUresourcetype.CU_RESOURCE_TYPE_ARRAY
        r.res.array.hArray = driver.CUarray(resource.array.handle)
        return r
    if kind == "mipmapped":
        r.resType = driver.CUresourcetype.CU_RESOURCE_TYPE_MIPMAPPED_ARRAY
        r.res.mipmap.hMipmappedArray = driver.CUmipmappedArray(resource.array.handle)
        return r
    fmt = resource.format
    if kind == "linear":
        r.resType = driver.CUresourcetype.CU_RESOURCE_TYPE_LINEAR
        linear = r.res.linear
        linear.devPtr = resource.buffer.handle
        linear.format = driver.CUarray_format(FORMATS[(fmt.kind, fmt.bits)])
        linear.numChannels = fmt.channels
        linear.sizeInBytes = resource.width * fmt.texel_size
        return r
    if kind != "pitch2d":
        raise InvalidValueError(f"a texture resource of kind {kind!r}")
    r.resType = driver.CUresourcetype.CU_RESOURCE_TYPE_PITCH2D
    pitched = r.res.pitch2D
    pitched.devPtr = resource.buffer.handle
    pitched.format = driver.CUarray_format(FORMATS[(fmt.kind, fmt.bits)])
    pitched.numChannels = fmt.channels
    pitched.width, pitched.height, pitched.pitchInBytes = (resource.width, resource.height,
                                                           resource.pitch)
    return r
