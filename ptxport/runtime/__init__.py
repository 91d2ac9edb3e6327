"""The runtime: devices, memory, streams, events, programs and launches, shaped like NVIDIA's
cuda.core so that CUDA Python users feel at home. Every kind of processor is reached through
a backend (runtime/backends/), all with the same few hooks.
"""

from ptxport.runtime.device import ComputeCapability, Device, DeviceProperties
from ptxport.runtime.event import Event, EventOptions
from ptxport.runtime.launch import LaunchConfig, launch
from ptxport.runtime.memory import Buffer
from ptxport.runtime.memory_resource import DeviceMemoryResource, MemoryResource
from ptxport.runtime.program import Kernel, ObjectCode, ParamInfo, Program, ProgramOptions
from ptxport.runtime.stream import Stream
from ptxport.runtime.system import System, system

__all__ = [
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
]
