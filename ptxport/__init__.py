"""ptxport: read PTX and run CUDA kernels on any processor.

The public API is the runtime's, shaped like NVIDIA's cuda.core and re-exported here flat:

    from ptxport import Device, Program, LaunchConfig, launch

The front end (ptxport.ptx), the IR (ptxport.ir) and `ptxport inspect` are used through
their own modules; every error class is in ptxport.errors.
"""

from ptxport import errors
from ptxport.runtime import (
    Buffer,
    ComputeCapability,
    Device,
    DeviceMemoryResource,
    DeviceProperties,
    Event,
    EventOptions,
    Kernel,
    LaunchConfig,
    MemoryResource,
    ObjectCode,
    ParamInfo,
    Program,
    ProgramOptions,
    Stream,
    System,
    launch,
    system,
)
from ptxport.runtime.textures import (
    Array,
    ChannelFormat,
    MipmappedArray,
    ResourceDesc,
    SurfaceObject,
    TextureDesc,
    TextureObject,
)
from ptxport.version import __version__

__all__ = [
    "__version__",
    "errors",
    "Buffer",
    "ComputeCapability",
    "Device",
    "DeviceMemoryResource",
    "DeviceProperties",
    "Event",
    "EventOptions",
    "Kernel",
    "LaunchConfig",
    "MemoryResource",
    "ObjectCode",
    "ParamInfo",
    "Program",
    "ProgramOptions",
    "Stream",
    "System",
    "launch",
    "system",
    "Array",
    "ChannelFormat",
    "MipmappedArray",
    "ResourceDesc",
    "SurfaceObject",
    "TextureDesc",
    "TextureObject",
]
