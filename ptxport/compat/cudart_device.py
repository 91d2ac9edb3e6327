"""cudaGetDeviceProperties: struct cudaDeviceProp of CUDA 13 (driver_types.h), filled from
the device attributes the driver shim reports (attributes.py says where each comes from).
Fields of features ptxport's devices lack (textures, surfaces, NUMA, interop) are 0, which is
what the corresponding attributes say too."""

from __future__ import annotations

import ctypes

from ptxport.compat import driver

__all__ = ["DeviceProp", "properties"]

# (field, C type, count) in the struct's order; count 0 for a scalar.
_LAYOUT = """
name c 256; uuid B 16; luid c 8; luidDeviceNodeMask I 0; totalGlobalMem Z 0;
sharedMemPerBlock Z 0; regsPerBlock i 0; warpSize i 0; memPitch Z 0; maxThreadsPerBlock i 0;
maxThreadsDim i 3; maxGridSize i 3; totalConstMem Z 0; major i 0; minor i 0;
textureAlignment Z 0; texturePitchAlignment Z 0; multiProcessorCount i 0; integrated i 0;
canMapHostMemory i 0; maxTexture1D i 0; maxTexture1DMipmap i 0; maxTexture2D i 2;
maxTexture2DMipmap i 2; maxTexture2DLinear i 3; maxTexture2DGather i 2; maxTexture3D i 3;
maxTexture3DAlt i 3; maxTextureCubemap i 0; maxTexture1DLayered i 2; maxTexture2DLayered i 3;
maxTextureCubemapLayered i 2; maxSurface1D i 0; maxSurface2D i 2; maxSurface3D i 3;
maxSurface1DLayered i 2; maxSurface2DLayered i 3; maxSurfaceCubemap i 0;
maxSurfaceCubemapLayered i 2; surfaceAlignment Z 0; concurrentKernels i 0; ECCEnabled i 0;
pciBusID i 0; pciDeviceID i 0; pciDomainID i 0; tccDriver i 0; asyncEngineCount i 0;
unifiedAddressing i 0; memoryBusWidth i 0; l2CacheSize i 0; persistingL2CacheMaxSize i 0;
maxThreadsPerMultiProcessor i 0; streamPrioritiesSupported i 0; globalL1CacheSupported i 0;
localL1CacheSupported i 0; sharedMemPerMultiprocessor Z 0; regsPerMultiprocessor i 0;
managedMemory i 0; isMultiGpuBoard i 0; multiGpuBoardGroupID i 0;
hostNativeAtomicSupported i 0; pageableMemoryAccess i 0; concurrentManagedAccess i 0;
computePreemptionSupported i 0; canUseHostPointerForRegisteredMem i 0; cooperativeLaunch i 0;
sharedMemPerBlockOptin Z 0; pageableMemoryAccessUsesHostPageTables i 0;
directManagedMemAccessFromHost i 0; maxBlocksPerMultiProcessor i 0;
accessPolicyMaxWindowSize i 0; reservedSharedMemPerBlock Z 0; hostRegisterSupported i 0;
sparseCudaArraySupported i 0; hostRegisterReadOnlySupported i 0;
timelineSemaphoreInteropSupported i 0; memoryPoolsSupported i 0; gpuDirectRDMASupported i 0;
gpuDirectRDMAFlushWritesOptions I 0; gpuDirectRDMAWritesOrdering i 0;
memoryPoolSupportedHandleTypes I 0; deferredMappingCudaArraySupported i 0;
ipcEventSupported i 0; clusterLaunch i 0; unifiedFunctionPointers i 0; deviceNumaConfig i 0;
deviceNumaId i 0; mpsEnabled i 0; hostNumaId i 0; gpuPciDeviceID I 0; gpuPciSubsystemID I 0;
hostNumaMultinodeIpcSupported i 0; reserved i 56
"""
_TYPES = {"c": ctypes.c_char, "B": ctypes.c_ubyte, "I": ctypes.c_uint, "i": ctypes.c_int,
          "Z": ctypes.c_size_t}


def _fields() -> list[tuple[str, type]]:
    fields = []
    for item in _LAYOUT.replace("\n", " ").split(";"):
        name, code, count = item.split()
        ctype = _TYPES[code]
        fields.append((name, ctype * int(count) if int(count) else ctype))
    return fields


class DeviceProp(ctypes.Structure):
    _fields_ = _fields()


# field -> CUdevice_attribute (the runtime's cudaDeviceAttr has the same numbers); a list
# for an array field.
_ATTRIBUTES: dict[str, int | tuple[int, ...]] = {
    "sharedMemPerBlock": 8, "regsPerBlock": 12, "warpSize": 10, "memPitch": 11,
    "maxThreadsPerBlock": 1, "maxThreadsDim": (2, 3, 4), "maxGridSize": (5, 6, 7),
    "totalConstMem": 9, "major": 75, "minor": 76, "textureAlignment": 14,
    "texturePitchAlignment": 51, "multiProcessorCount": 16, "integrated": 18,
    "canMapHostMemory": 19, "concurrentKernels": 31, "ECCEnabled": 32, "pciBusID": 33,
    "pciDeviceID": 34, "pciDomainID": 50, "tccDriver": 35, "asyncEngineCount": 40,
    "unifiedAddressing": 41, "memoryBusWidth": 37, "l2CacheSize": 38,
    "persistingL2CacheMaxSize": 108, "maxThreadsPerMultiProcessor": 39,
    "streamPrioritiesSupported": 78, "globalL1CacheSupported": 79,
    "localL1CacheSupported": 80, "sharedMemPerMultiprocessor": 81,
    "regsPerMultiprocessor": 82, "managedMemory": 83, "isMultiGpuBoard": 84,
    "multiGpuBoardGroupID": 85, "hostNativeAtomicSupported": 86, "pageableMemoryAccess": 88,
    "concurrentManagedAccess": 89, "computePreemptionSupported": 90,
    "canUseHostPointerForRegisteredMem": 91, "cooperativeLaunch": 95,
    "sharedMemPerBlockOptin": 97, "pageableMemoryAccessUsesHostPageTables": 100,
    "directManagedMemAccessFromHost": 101, "maxBlocksPerMultiProcessor": 106,
    "accessPolicyMaxWindowSize": 109, "reservedSharedMemPerBlock": 111,
    "hostRegisterSupported": 99, "sparseCudaArraySupported": 112,
    "hostRegisterReadOnlySupported": 113, "timelineSemaphoreInteropSupported": 114,
    "memoryPoolsSupported": 115, "gpuDirectRDMASupported": 116,
    "gpuDirectRDMAFlushWritesOptions": 117, "gpuDirectRDMAWritesOrdering": 118,
    "memoryPoolSupportedHandleTypes": 119, "deferredMappingCudaArraySupported": 121,
    "clusterLaunch": 120,
}


def properties(device: int) -> DeviceProp:
    """The struct for device ordinal `device` (driver._check_device refuses one not shown)."""
    driver._check_device(device)
    prop = DeviceProp()
    prop.name = driver.device_name(device).encode()[:255]
    prop.uuid[:] = list(driver.device_uuid(device))
    total = ctypes.c_size_t()
    driver.cuDeviceTotalMem_v2(ctypes.addressof(total), device)
    prop.totalGlobalMem = total.value
    for field, attribute in _ATTRIBUTES.items():
        if isinstance(attribute, tuple):
            getattr(prop, field)[:] = [driver.device_attribute(a, device) for a in attribute]
        else:
            setattr(prop, field, driver.device_attribute(attribute, device))
    return prop
