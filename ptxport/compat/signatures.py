"""The C signatures of the entry points the drop-in libcuda.so.1 exports.

Each entry is a prototype as cuda.h writes it (CUDA's type names, which the tracer prints),
for the exact symbol cuda.h's macros select (cuMemAlloc is cuMemAlloc_v2). build.py turns
the list into typed C functions (so that 8-, 16- and 32-bit arguments arrive correctly
extended) that pass their arguments to the Python handler of the same name in driver.py,
dark_api.py or an entry of HIDDEN (the slots of cudart's export tables, which have no
exported name). Adding an entry point means adding its prototype here and its handler.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ptxport.compat.driver_names import NAMES
from ptxport.errors import PtxportError

__all__ = ["ENTRY_POINTS", "PER_THREAD_SUFFIXES", "STRUCTS", "Param", "Signature", "c_type",
           "flat", "parse"]

# CUDA's scalar types, as C types the shim compiles; everything with a `*` is a pointer.
_C_TYPES = {
    "CUresult": "int", "void": "void", "int": "int", "unsigned int": "unsigned int",
    "unsigned char": "unsigned char", "unsigned short": "unsigned short",
    "size_t": "size_t", "float": "float", "double": "double",
    "cuuint64_t": "unsigned long long", "cuuint32_t": "unsigned int",
    "unsigned long long": "unsigned long long", "CUdevice": "int",
    "CUdeviceptr": "unsigned long long",
    # Handles: opaque pointers.
    "CUcontext": "void *", "CUmodule": "void *", "CUfunction": "void *", "CUstream": "void *",
    "CUevent": "void *", "CUlibrary": "void *", "CUkernel": "void *", "CUgraph": "void *",
    "CUgraphExec": "void *", "CUarray": "void *", "CUmemoryPool": "void *",
    "CUgraphNode": "void *", "CUgraphNodeType": "int", "CUmipmappedArray": "void *",
    "CUtexObject": "unsigned long long", "CUsurfObject": "unsigned long long",
    # Enums: int-sized.
    "CUdevice_attribute": "int", "CUfunction_attribute": "int", "CUpointer_attribute": "int",
    "CUlimit": "int", "CUfunc_cache": "int", "CUsharedconfig": "int", "CUjit_option": "int",
    "CUlibraryOption": "int", "CUstreamCaptureMode": "int", "CUmemAttach_flags": "int",
    "CUdriverProcAddressQueryResult": "int", "CUmem_advise": "int",
    "CUdevice_P2PAttribute": "int", "cudaDeviceP2PAttr": "int", "CUmemPool_attribute": "int",
    "CUhostFn": "void *", "CUstreamCallback": "void *",
    # Passed by value: two ints, which the x86-64 and AArch64 ABIs pass in one register.
    "CUmemLocation": "unsigned long long",
    # Structs passed by value (STRUCTS): the handler gets their fields as arguments.
    "dim3": "dim3", "cudaExtent": "cudaExtent", "cudaPitchedPtr": "cudaPitchedPtr",
    # The runtime's (cuda_runtime_api.h, driver_types.h), for cudart_signatures.py.
    "cudaError_t": "int", "cudaEvent_t": "void *", "cudaMemcpyKind": "int",
    "cudaDeviceAttr": "int", "cudaFuncAttribute": "int", "cudaFuncCache": "int",
    "cudaLimit": "int", "cudaStreamCaptureMode": "int", "cudaGraph_t": "void *",
    "cudaGraphExec_t": "void *", "cudaKernel_t": "void *", "cudaHostFn_t": "void *",
    "cudaStreamCallback_t": "void *", "cudaPointerAttributes": "void *",
    "cudaMemoryAdvise": "int", "cudaMemLocation": "unsigned long long",
    "cudaSharedMemConfig": "int", "unsigned": "unsigned int", "char": "char",
    "cudaMemPool_t": "void *", "cudaMemPoolAttr": "int", "cudaGraphNode_t": "void *",
    "cudaArray_t": "void *", "cudaArray_const_t": "void *", "cudaMipmappedArray_t": "void *",
    "cudaMipmappedArray_const_t": "void *", "cudaTextureObject_t": "unsigned long long",
    "cudaSurfaceObject_t": "unsigned long long",
    # cuBLAS's (cublas_api.h, library_types.h), for cublas_signatures.py.
    "cublasStatus_t": "int", "cublasHandle_t": "void *", "cudaStream_t": "void *",
    "cublasOperation_t": "int", "cublasPointerMode_t": "int", "cublasMath_t": "int",
    "cublasAtomicsMode_t": "int", "cudaDataType": "int", "cublasComputeType_t": "int",
    "cublasGemmAlgo_t": "int", "libraryPropertyType": "int", "long long int": "long long",
    "int64_t": "long long", "uint64_t": "unsigned long long", "cudaDataType_t": "int",
    "cublasLtHandle_t": "void *", "cublasLtMatmulDesc_t": "void *",
    "cublasLtMatrixLayout_t": "void *", "cublasLtMatmulPreference_t": "void *",
    "cublasLtMatmulDescAttributes_t": "int", "cublasLtMatrixLayoutAttribute_t": "int",
    "cublasLtMatmulPreferenceAttributes_t": "int",
}
_UNSIGNED = {"unsigned int", "unsigned char", "unsigned short", "size_t", "unsigned long long",
             "void *"}

# Structs passed by value: C type -> its fields (C type, name) in order. build.py declares
# them, and the handler of a function taking one gets its fields as separate arguments.
STRUCTS: dict[str, tuple[tuple[str, str], ...]] = {
    "dim3": (("unsigned int", "x"), ("unsigned int", "y"), ("unsigned int", "z")),
    "cudaExtent": (("size_t", "width"), ("size_t", "height"), ("size_t", "depth")),
    "cudaPitchedPtr": (("void *", "ptr"), ("size_t", "pitch"), ("size_t", "xsize"),
                       ("size_t", "ysize")),
}

_PROTOTYPE = re.compile(r"^\s*(?P<ret>[\w *]+?)\s+(?P<name>\w+)\((?P<params>.*)\)\s*$")


@dataclass(frozen=True)
class Param:
    """One parameter: its CUDA type as written, its name, and its C type."""

    type: str
    name: str

    @property
    def c_type(self) -> str:
        return c_type(self.type)

    @property
    def is_pointer(self) -> bool:
        return "*" in self.c_type

    @property
    def is_signed(self) -> bool:
        return not self.is_pointer and self.c_type not in _UNSIGNED | {"float", "double"}


@dataclass(frozen=True)
class Signature:
    """A C function: its return type, name and parameters."""

    ret: str
    name: str
    params: tuple[Param, ...]

    @property
    def prototype(self) -> str:
        params = ", ".join(f"{p.type} {p.name}" for p in self.params) or "void"
        return f"{self.ret} {self.name}({params})"


def flat(sig: Signature) -> Signature:
    """`sig` with each struct passed by value replaced by its fields (`grid.x`, ...): the
    arguments its handler gets, as the trace names them."""
    params = []
    for p in sig.params:
        fields = STRUCTS.get(p.c_type)
        params.extend(Param(t, f"{p.name}.{n}") for t, n in fields) if fields else \
            params.append(p)
    return Signature(sig.ret, sig.name, tuple(params))


def c_type(cuda_type: str) -> str:
    """The C type the shim declares for a CUDA type (pointers to anything are `void *`)."""
    if "*" in cuda_type:
        return "void *"
    base = " ".join(cuda_type.replace("const ", "").split())
    try:
        return _C_TYPES[base]
    except KeyError:
        raise PtxportError(
            f"ptxport.compat.signatures: unknown C type {cuda_type!r}: add it to _C_TYPES") \
            from None


def parse(prototype: str) -> Signature:
    """A prototype such as 'CUresult cuInit(unsigned int Flags)' as a Signature."""
    match = _PROTOTYPE.match(prototype)
    if match is None:
        raise PtxportError(f"ptxport.compat.signatures: cannot read prototype {prototype!r}")
    params = []
    text = match["params"].strip()
    if text and text != "void":
        for part in text.split(","):
            part = part.strip()
            split = max(part.rfind(" "), part.rfind("*"))
            params.append(Param(part[:split + 1].strip(), part[split + 1:].strip()))
    signature = Signature(match["ret"].strip(), match["name"], tuple(params))
    for p in (*signature.params, Param(signature.ret, "")):
        c_type(p.type)
    return signature


_DRIVER = """
CUresult cuInit(unsigned int Flags)
CUresult cuDriverGetVersion(int *driverVersion)
CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus)
CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
CUresult cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId)
CUresult cuGetErrorString(CUresult error, const char **pStr)
CUresult cuGetErrorName(CUresult error, const char **pStr)
CUresult cuDeviceGet(CUdevice *device, int ordinal)
CUresult cuDeviceGetCount(int *count)
CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
CUresult cuDeviceComputeCapability(int *major, int *minor, CUdevice dev)
CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags, CUdevice dev)
CUresult cuCtxDestroy_v2(CUcontext ctx)
CUresult cuCtxGetCurrent(CUcontext *pctx)
CUresult cuCtxSetCurrent(CUcontext ctx)
CUresult cuCtxPushCurrent_v2(CUcontext ctx)
CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
CUresult cuCtxGetDevice(CUdevice *device)
CUresult cuCtxGetFlags(unsigned int *flags)
CUresult cuCtxSynchronize(void)
CUresult cuCtxGetLimit(size_t *pvalue, CUlimit limit)
CUresult cuCtxSetLimit(CUlimit limit, size_t value)
CUresult cuCtxGetCacheConfig(CUfunc_cache *pconfig)
CUresult cuCtxSetCacheConfig(CUfunc_cache config)
CUresult cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
CUresult cuModuleLoadData(CUmodule *module, const void *image)
CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions, CUjit_option *options, void **optionValues)
CUresult cuModuleLoad(CUmodule *module, const char *fname)
CUresult cuModuleUnload(CUmodule hmod)
CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode *mode)
CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod, const char *name)
CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions, void **jitOptionsValues, unsigned int numJitOptions, CUlibraryOption *libraryOptions, void **libraryOptionValues, unsigned int numLibraryOptions)
CUresult cuLibraryUnload(CUlibrary library)
CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
CUresult cuLibraryGetModule(CUmodule *pMod, CUlibrary library)
CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name)
CUresult cuLibraryGetManaged(CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name)
CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
CUresult cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev)
CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev)
CUresult cuKernelSetCacheConfig(CUkernel kernel, CUfunc_cache config, CUdevice dev)
CUresult cuKernelGetName(const char **name, CUkernel hfunc)
CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value)
CUresult cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config)
CUresult cuFuncGetName(const char **name, CUfunction hfunc)
CUresult cuFuncGetModule(CUmodule *hmod, CUfunction hfunc)
CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
CUresult cuMemFree_v2(CUdeviceptr dptr)
CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
CUresult cuMemFreeHost(void *p)
CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags)
CUresult cuMemGetInfo_v2(size_t *free, size_t *total)
CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream)
CUresult cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N)
CUresult cuMemsetD16_v2(CUdeviceptr dstDevice, unsigned short us, size_t N)
CUresult cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N)
CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream)
CUresult cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream)
CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream)
CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height, unsigned int ElementSizeBytes)
CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags)
CUresult cuGraphAddEmptyNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies)
CUresult cuGraphAddKernelNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS *nodeParams)
CUresult cuGraphAddKernelNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
CUresult cuGraphAddMemsetNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies, const CUDA_MEMSET_NODE_PARAMS *memsetParams, CUcontext ctx)
CUresult cuGraphAddHostNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies, const CUDA_HOST_NODE_PARAMS *nodeParams)
CUresult cuGraphAddChildGraphNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies, CUgraph childGraph)
CUresult cuGraphAddEventRecordNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies, CUevent event)
CUresult cuGraphAddEventWaitNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies, CUevent event)
CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)
CUresult cuGraphGetRootNodes(CUgraph hGraph, CUgraphNode *rootNodes, size_t *numRootNodes)
CUresult cuGraphGetEdges_v2(CUgraph hGraph, CUgraphNode *from, CUgraphNode *to, CUgraphEdgeData *edgeData, size_t *numEdges)
CUresult cuGraphGetEdges(CUgraph hGraph, CUgraphNode *from, CUgraphNode *to, size_t *numEdges)
CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type)
CUresult cuGraphNodeGetDependencies_v2(CUgraphNode hNode, CUgraphNode *dependencies, CUgraphEdgeData *edgeData, size_t *numDependencies)
CUresult cuGraphNodeGetDependencies(CUgraphNode hNode, CUgraphNode *dependencies, size_t *numDependencies)
CUresult cuGraphNodeGetDependentNodes_v2(CUgraphNode hNode, CUgraphNode *dependentNodes, CUgraphEdgeData *edgeData, size_t *numDependentNodes)
CUresult cuGraphNodeGetDependentNodes(CUgraphNode hNode, CUgraphNode *dependentNodes, size_t *numDependentNodes)
CUresult cuGraphAddDependencies_v2(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to, const CUgraphEdgeData *edgeData, size_t numDependencies)
CUresult cuGraphAddDependencies(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to, size_t numDependencies)
CUresult cuGraphRemoveDependencies_v2(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to, const CUgraphEdgeData *edgeData, size_t numDependencies)
CUresult cuGraphRemoveDependencies(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to, size_t numDependencies)
CUresult cuGraphDestroyNode(CUgraphNode hNode)
CUresult cuGraphClone(CUgraph *phGraphClone, CUgraph originalGraph)
CUresult cuGraphAddMemcpyNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies, size_t numDependencies, const CUDA_MEMCPY3D *copyParams, CUcontext ctx)
CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS *nodeParams)
CUresult cuGraphKernelNodeSetParams_v2(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS *nodeParams)
CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec hGraphExec, CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS *nodeParams)
CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
CUresult cuMemPoolDestroy(CUmemoryPool pool)
CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count)
CUresult cuMemPoolGetAccess(CUmemAccess_flags *flags, CUmemoryPool memPool, CUmemLocation *location)
CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream)
CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *pCopy)
CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *pCopy)
CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *pCopy, CUstream hStream)
CUresult cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext, size_t ByteCount)
CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext, size_t ByteCount, CUstream hStream)
CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D *pCopy)
CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *pCopy, CUstream hStream)
CUresult cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER *pCopy)
CUresult cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream)
CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray)
CUresult cuArrayDestroy(CUarray hArray)
CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc, unsigned int numMipmapLevels)
CUresult cuMipmappedArrayGetLevel(CUarray *pLevelArray, CUmipmappedArray hMipmappedArray, unsigned int level)
CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray)
CUresult cuArrayGetDescriptor_v2(CUDA_ARRAY_DESCRIPTOR *pArrayDescriptor, CUarray hArray)
CUresult cuArray3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR *pArrayDescriptor, CUarray hArray)
CUresult cuTexObjectCreate(CUtexObject *pTexObject, const CUDA_RESOURCE_DESC *pResDesc, const CUDA_TEXTURE_DESC *pTexDesc, const CUDA_RESOURCE_VIEW_DESC *pResViewDesc)
CUresult cuTexObjectDestroy(CUtexObject texObject)
CUresult cuSurfObjectCreate(CUsurfObject *pSurfObject, const CUDA_RESOURCE_DESC *pResDesc)
CUresult cuSurfObjectDestroy(CUsurfObject surfObject)
CUresult cuTexObjectGetResourceDesc(CUDA_RESOURCE_DESC *pResDesc, CUtexObject texObject)
CUresult cuTexObjectGetTextureDesc(CUDA_TEXTURE_DESC *pTexDesc, CUtexObject texObject)
CUresult cuSurfObjectGetResourceDesc(CUDA_RESOURCE_DESC *pResDesc, CUsurfObject surfObject)
CUresult cuMemsetD2D8_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height)
CUresult cuMemsetD2D16_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width, size_t Height)
CUresult cuMemsetD2D32_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width, size_t Height)
CUresult cuMemsetD2D8Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height, CUstream hStream)
CUresult cuMemsetD2D16Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width, size_t Height, CUstream hStream)
CUresult cuMemsetD2D32Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width, size_t Height, CUstream hStream)
CUresult cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned int flags, CUstream hStream)
CUresult cuMemAdvise_v2(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUmemLocation location)
CUresult cuStreamAttachMemAsync(CUstream hStream, CUdeviceptr dptr, size_t length, unsigned int flags)
CUresult cuMemHostGetFlags(unsigned int *pFlags, void *p)
CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
CUresult cuMemHostUnregister(void *p)
CUresult cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev)
CUresult cuDeviceGetP2PAttribute(int *value, CUdevice_P2PAttribute attrib, CUdevice srcDevice, CUdevice dstDevice)
CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags)
CUresult cuCtxDisablePeerAccess(CUcontext peerContext)
CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes, void **data, CUdeviceptr ptr)
CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
CUresult cuStreamDestroy_v2(CUstream hStream)
CUresult cuStreamSynchronize(CUstream hStream)
CUresult cuStreamQuery(CUstream hStream)
CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
CUresult cuStreamGetFlags(CUstream hStream, unsigned int *flags)
CUresult cuStreamGetPriority(CUstream hStream, int *priority)
CUresult cuStreamGetId(CUstream hStream, unsigned long long *streamId)
CUresult cuStreamGetCtx(CUstream hStream, CUcontext *pctx)
CUresult cuStreamGetDevice(CUstream hStream, CUdevice *device)
CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
CUresult cuStreamAddCallback(CUstream hStream, CUstreamCallback callback, void *userData, unsigned int flags)
CUresult cuCtxGetId(CUcontext ctx, unsigned long long *ctxId)
CUresult cuProfilerStart(void)
CUresult cuProfilerStop(void)
CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus)
CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode)
CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
CUresult cuStreamGetCaptureInfo_v3(CUstream hStream, CUstreamCaptureStatus *captureStatus_out, cuuint64_t *id_out, CUgraph *graph_out, const CUgraphNode **dependencies_out, const CUgraphEdgeData **edgeData_out, size_t *numDependencies_out)
CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags)
CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
CUresult cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream)
CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
CUresult cuGraphDestroy(CUgraph hGraph)
CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
CUresult cuEventDestroy_v2(CUevent hEvent)
CUresult cuEventRecord(CUevent hEvent, CUstream hStream)
CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags)
CUresult cuEventSynchronize(CUevent hEvent)
CUresult cuEventQuery(CUevent hEvent)
CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd)
CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream, void **kernelParams)
CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra)
CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)
CUresult cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset, size_t *paramSize)
CUresult cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex, size_t *paramOffset, size_t *paramSize)
CUresult cuFuncGetParamCount(CUfunction func, size_t *paramCount)
CUresult cuKernelGetParamCount(CUkernel kernel, size_t *paramCount)
CUresult cuOccupancyAvailableDynamicSMemPerBlock(size_t *dynamicSmemSize, CUfunction func, int numBlocks, int blockSize)
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize)
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize, unsigned int flags)
"""

# The slots of cudart's export tables (dark_api.py): no exported names, so ptxport's own.
_HIDDEN = """
CUresult ptxport_cudart_get_module_from_cubin(CUmodule *module, const void *fatbinc_wrapper)
CUresult ptxport_cudart_primary_context(CUcontext *pctx, CUdevice dev)
CUresult ptxport_cudart_get_module_from_cubin_ext1(CUmodule *module, const void *fatbinc_wrapper, void *arg3, void *arg4, unsigned int arg5)
void ptxport_cudart_fn7(size_t arg1)
CUresult ptxport_cudart_get_module_from_cubin_ext2(const void *fatbin_header, CUmodule *module, void *arg3, void *arg4, unsigned int arg5)
CUresult ptxport_cudart_load_compilers(void)
void ptxport_tools_get_buffer1(void **ptr, size_t *size)
void ptxport_tools_get_buffer2(void **ptr, size_t *size)
CUresult ptxport_cls_put(CUcontext ctx, void *key, void *value, void *dtor)
CUresult ptxport_cls_delete(CUcontext ctx, void *key)
CUresult ptxport_cls_get(void **value, CUcontext ctx, void *key)
CUresult ptxport_integrity_check(unsigned int version, unsigned long long unix_seconds, void *result)
CUresult ptxport_context_check(CUcontext ctx, unsigned int *result1, const void **result2)
unsigned int ptxport_context_check_fn3(void)
CUresult ptxport_device_extended_13(unsigned char *result, CUdevice dev)
"""

_BASE: tuple[Signature, ...] = tuple(
    parse(line) for line in (_DRIVER + _HIDDEN).splitlines() if line.strip())


def _per_thread_variants(base: tuple[Signature, ...]) -> tuple[Signature, ...]:
    """The per-thread-default-stream variants (NAME_ptds, NAME_ptsz: cuda.h's names for
    programs built with --default-stream per-thread) of the implemented entry points: same
    prototype; their handlers read stream 0 as the calling thread's default stream."""
    by_name = {sig.name: sig for sig in base}
    variants = []
    for name in NAMES:
        stem, _, suffix = name.rpartition("_")
        if suffix in ("ptds", "ptsz") and stem in by_name and \
                not stem.startswith("cuGetProcAddress"):
            variants.append(Signature(by_name[stem].ret, name, by_name[stem].params))
    return tuple(variants)


ENTRY_POINTS: tuple[Signature, ...] = _BASE + _per_thread_variants(_BASE)
PER_THREAD_SUFFIXES = ("_ptds", "_ptsz")
