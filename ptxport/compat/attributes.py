"""CUdevice_attribute values (cuDeviceGetAttribute) for a ptxport device.

The limits a launch is checked against come from the device's DeviceProperties, so that a
program sees the limits ptxport enforces; the rest describe what ptxport's runtime does on
every device (unified addressing, managed memory, stream priorities are accepted, no
texture hardware) or, where a value only informs a program's choices (L2 size, bus width),
those of the compute capability the device presents. The numbers are cuda.h's
(CUdevice_attribute_enum).
"""

from __future__ import annotations

from collections.abc import Callable

from ptxport.runtime.backends import DeviceProperties

__all__ = ["ATTRIBUTES", "attribute"]

_P = DeviceProperties

# attribute number -> (name, value from the device's properties)
ATTRIBUTES: dict[int, tuple[str, Callable[[_P], int]]] = {
    1: ("MAX_THREADS_PER_BLOCK", lambda p: p.max_threads_per_block),
    2: ("MAX_BLOCK_DIM_X", lambda p: p.max_block_dim_x),
    3: ("MAX_BLOCK_DIM_Y", lambda p: p.max_block_dim_y),
    4: ("MAX_BLOCK_DIM_Z", lambda p: p.max_block_dim_z),
    5: ("MAX_GRID_DIM_X", lambda p: p.max_grid_dim_x),
    6: ("MAX_GRID_DIM_Y", lambda p: p.max_grid_dim_y),
    7: ("MAX_GRID_DIM_Z", lambda p: p.max_grid_dim_z),
    8: ("MAX_SHARED_MEMORY_PER_BLOCK", lambda p: p.max_shared_memory_per_block),
    9: ("TOTAL_CONSTANT_MEMORY", lambda p: p.total_constant_memory),
    10: ("WARP_SIZE", lambda p: p.warp_size),
    11: ("MAX_PITCH", lambda p: 2**31 - 1),
    12: ("MAX_REGISTERS_PER_BLOCK", lambda p: 65536),
    13: ("CLOCK_RATE", lambda p: p.clock_rate),
    14: ("TEXTURE_ALIGNMENT", lambda p: 512),
    15: ("GPU_OVERLAP", lambda p: 1),
    16: ("MULTIPROCESSOR_COUNT", lambda p: p.multiprocessor_count),
    17: ("KERNEL_EXEC_TIMEOUT", lambda p: 0),
    18: ("INTEGRATED", lambda p: int(p.integrated)),
    19: ("CAN_MAP_HOST_MEMORY", lambda p: int(p.integrated)),
    20: ("COMPUTE_MODE", lambda p: 0),                       # default: shared
    30: ("SURFACE_ALIGNMENT", lambda p: 512),
    31: ("CONCURRENT_KERNELS", lambda p: 1),
    32: ("ECC_ENABLED", lambda p: 0),
    33: ("PCI_BUS_ID", lambda p: 0),
    34: ("PCI_DEVICE_ID", lambda p: 0),
    35: ("TCC_DRIVER", lambda p: 0),
    36: ("MEMORY_CLOCK_RATE", lambda p: p.clock_rate),
    37: ("GLOBAL_MEMORY_BUS_WIDTH", lambda p: 64),
    38: ("L2_CACHE_SIZE", lambda p: 50 * 1024 * 1024),
    39: ("MAX_THREADS_PER_MULTIPROCESSOR", lambda p: p.max_threads_per_multiprocessor),
    40: ("ASYNC_ENGINE_COUNT", lambda p: 1),
    41: ("UNIFIED_ADDRESSING", lambda p: int(p.unified_addressing)),
    50: ("PCI_DOMAIN_ID", lambda p: 0),
    51: ("TEXTURE_PITCH_ALIGNMENT", lambda p: 32),
    75: ("COMPUTE_CAPABILITY_MAJOR", lambda p: p.compute_capability_major),
    76: ("COMPUTE_CAPABILITY_MINOR", lambda p: p.compute_capability_minor),
    78: ("STREAM_PRIORITIES_SUPPORTED", lambda p: 1),
    79: ("GLOBAL_L1_CACHE_SUPPORTED", lambda p: 1),
    80: ("LOCAL_L1_CACHE_SUPPORTED", lambda p: 1),
    81: ("MAX_SHARED_MEMORY_PER_MULTIPROCESSOR",
         lambda p: p.max_shared_memory_per_multiprocessor),
    82: ("MAX_REGISTERS_PER_MULTIPROCESSOR", lambda p: 65536),
    83: ("MANAGED_MEMORY", lambda p: int(p.unified_addressing)),
    84: ("MULTI_GPU_BOARD", lambda p: 0),
    85: ("MULTI_GPU_BOARD_GROUP_ID", lambda p: 0),
    86: ("HOST_NATIVE_ATOMIC_SUPPORTED", lambda p: int(p.integrated)),
    87: ("SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO", lambda p: 2),
    88: ("PAGEABLE_MEMORY_ACCESS", lambda p: int(p.integrated)),
    89: ("CONCURRENT_MANAGED_ACCESS", lambda p: int(p.integrated)),
    90: ("COMPUTE_PREEMPTION_SUPPORTED", lambda p: 0),
    91: ("CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM", lambda p: int(p.integrated)),
    95: ("COOPERATIVE_LAUNCH", lambda p: int(p.cooperative_launch)),
    96: ("COOPERATIVE_MULTI_DEVICE_LAUNCH", lambda p: 0),
    97: ("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", lambda p: p.max_shared_memory_per_block_optin),
    99: ("HOST_REGISTER_SUPPORTED", lambda p: 0),
    100: ("PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES", lambda p: int(p.integrated)),
    101: ("DIRECT_MANAGED_MEM_ACCESS_FROM_HOST", lambda p: int(p.integrated)),
    106: ("MAX_BLOCKS_PER_MULTIPROCESSOR", lambda p: p.max_blocks_per_multiprocessor),
    111: ("RESERVED_SHARED_MEMORY_PER_BLOCK", lambda p: 0),
    115: ("MEMORY_POOLS_SUPPORTED", lambda p: 1),     # (compat/mempools.py)
    119: ("MEMPOOL_SUPPORTED_HANDLE_TYPES", lambda p: 0),
    120: ("CLUSTER_LAUNCH", lambda p: 0),
    126: ("MEM_SYNC_DOMAIN_COUNT", lambda p: 1),
}


def attribute(number: int, properties: DeviceProperties) -> int:
    """The value of attribute `number`: 0 (not supported, or no such hardware) for the
    attributes not listed, which are texture and surface limits and capabilities ptxport's
    runtime does not offer."""
    entry = ATTRIBUTES.get(number)
    return 0 if entry is None else int(entry[1](properties))
