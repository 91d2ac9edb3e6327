"""The C signatures of the functions the drop-in libcudart.so.13 implements.

Prototypes as cuda_runtime_api.h and crt/host_runtime.h write them (without `struct` and
`enum`); build.py turns them into typed C functions passing their arguments to the handler of
the same name in cudart.py or cudart_launch.py (cudart_dispatch.py finds it). A struct passed
by value (dim3, cudaExtent, cudaPitchedPtr: signatures.STRUCTS) reaches the handler as its
fields. Every other name of cudart_names.NAMES is exported as a stub returning
cudaErrorNotSupported; the per-thread-default-stream variants (_ptds, _ptsz) of the
implemented names are implemented too.
"""

from __future__ import annotations

from ptxport.compat.cudart_names import NAMES
from ptxport.compat.signatures import Signature, parse

__all__ = ["ENTRY_POINTS", "NATIVE_NAMES", "NATIVE_SOURCE", "PER_THREAD", "unsupported_names"]

_REGISTRATION = """
void ** __cudaRegisterFatBinary(void *fatCubin)
void __cudaRegisterFatBinaryEnd(void **fatCubinHandle)
void __cudaUnregisterFatBinary(void **fatCubinHandle)
void __cudaRegisterFunction(void **fatCubinHandle, const void *hostFun, char *deviceFun, const char *deviceName, int thread_limit, uint3 *tid, uint3 *bid, dim3 *bDim, dim3 *gDim, int *wSize)
void __cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress, const char *deviceName, int ext, size_t size, int constant, int global)
void __cudaRegisterManagedVar(void **fatCubinHandle, void **hostVarPtrAddress, char *deviceAddress, const char *deviceName, int ext, size_t size, int constant, int global)
char __cudaInitModule(void **fatCubinHandle)
unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem, cudaStream_t stream)
cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem, void *stream)
cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *func)
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem, cudaStream_t stream)
cudaError_t cudaLaunchCooperativeKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem, cudaStream_t stream)
cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem, cudaStream_t stream)
cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *func, void **args)
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *attr, const void *func)
cudaError_t cudaFuncSetAttribute(const void *func, cudaFuncAttribute attr, int value)
cudaError_t cudaFuncSetCacheConfig(const void *func, cudaFuncCache cacheConfig)
cudaError_t cudaFuncGetName(const char **name, const void *func)
cudaError_t cudaFuncGetParamInfo(const void *func, size_t paramIndex, size_t *paramOffset, size_t *paramSize)
cudaError_t cudaFuncGetParamCount(const void *func, size_t *paramCount)
cudaError_t cudaGetFuncBySymbol(cudaFunction_t *functionPtr, const void *symbolPtr)
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, const void *func, int blockSize, size_t dynamicSMemSize)
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks, const void *func, int blockSize, size_t dynamicSMemSize, unsigned int flags)
cudaError_t cudaMemcpyToSymbol(const void *symbol, const void *src, size_t count, size_t offset, cudaMemcpyKind kind)
cudaError_t cudaMemcpyFromSymbol(void *dst, const void *symbol, size_t count, size_t offset, cudaMemcpyKind kind)
cudaError_t cudaMemcpyToSymbolAsync(const void *symbol, const void *src, size_t count, size_t offset, cudaMemcpyKind kind, cudaStream_t stream)
cudaError_t cudaMemcpyFromSymbolAsync(void *dst, const void *symbol, size_t count, size_t offset, cudaMemcpyKind kind, cudaStream_t stream)
cudaError_t cudaGetSymbolAddress(void **devPtr, const void *symbol)
cudaError_t cudaGetSymbolSize(size_t *size, const void *symbol)
"""

_DEVICE = """
cudaError_t cudaGetLastError(void)
cudaError_t cudaPeekAtLastError(void)
const char * cudaGetErrorName(cudaError_t error)
const char * cudaGetErrorString(cudaError_t error)
cudaError_t cudaGetDeviceCount(int *count)
cudaError_t cudaGetDevice(int *device)
cudaError_t cudaSetDevice(int device)
cudaError_t cudaInitDevice(int device, unsigned int deviceFlags, unsigned int flags)
cudaError_t cudaSetDeviceFlags(unsigned int flags)
cudaError_t cudaGetDeviceFlags(unsigned int *flags)
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device)
cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int device)
cudaError_t cudaDeviceGetPCIBusId(char *pciBusId, int len, int device)
cudaError_t cudaDeviceSynchronize(void)
cudaError_t cudaDeviceReset(void)
cudaError_t cudaDeviceGetLimit(size_t *pValue, cudaLimit limit)
cudaError_t cudaDeviceSetLimit(cudaLimit limit, size_t value)
cudaError_t cudaDeviceGetCacheConfig(cudaFuncCache *pCacheConfig)
cudaError_t cudaDeviceSetCacheConfig(cudaFuncCache cacheConfig)
cudaError_t cudaDeviceGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
cudaError_t cudaDeviceCanAccessPeer(int *canAccessPeer, int device, int peerDevice)
cudaError_t cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags)
cudaError_t cudaDeviceDisablePeerAccess(int peerDevice)
cudaError_t cudaDeviceGetP2PAttribute(int *value, cudaDeviceP2PAttr attr, int srcDevice, int dstDevice)
cudaError_t cudaDriverGetVersion(int *driverVersion)
cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr, unsigned long long flags, cudaDriverEntryPointQueryResult *driverStatus)
cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr, unsigned int cudaVersion, unsigned long long flags, cudaDriverEntryPointQueryResult *driverStatus)
cudaError_t cudaProfilerStart(void)
cudaError_t cudaProfilerStop(void)
cudaError_t cudaRuntimeGetVersion(int *runtimeVersion)
"""

_MEMORY = """
cudaError_t cudaMalloc(void **devPtr, size_t size)
cudaError_t cudaFree(void *devPtr)
cudaError_t cudaMallocHost(void **ptr, size_t size)
cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
cudaError_t cudaFreeHost(void *ptr)
cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags)
cudaError_t cudaHostUnregister(void *ptr)
cudaError_t cudaHostGetDevicePointer(void **pDevice, void *pHost, unsigned int flags)
cudaError_t cudaHostGetFlags(unsigned int *pFlags, void *pHost)
cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream)
cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream)
cudaError_t cudaGraphCreate(cudaGraph_t *pGraph, unsigned int flags)
cudaError_t cudaGraphAddEmptyNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph, const cudaGraphNode_t *pDependencies, size_t numDependencies)
cudaError_t cudaGraphAddKernelNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph, const cudaGraphNode_t *pDependencies, size_t numDependencies, const cudaKernelNodeParams *pNodeParams)
cudaError_t cudaGraphAddMemsetNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph, const cudaGraphNode_t *pDependencies, size_t numDependencies, const cudaMemsetParams *pMemsetParams)
cudaError_t cudaGraphAddMemcpyNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph, const cudaGraphNode_t *pDependencies, size_t numDependencies, const cudaMemcpy3DParms *pCopyParams)
cudaError_t cudaGraphAddMemcpyNode1D(cudaGraphNode_t *pGraphNode, cudaGraph_t graph, const cudaGraphNode_t *pDependencies, size_t numDependencies, void *dst, const void *src, size_t count, cudaMemcpyKind kind)
cudaError_t cudaGraphAddHostNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph, const cudaGraphNode_t *pDependencies, size_t numDependencies, const cudaHostNodeParams *pNodeParams)
cudaError_t cudaGraphAddChildGraphNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph, const cudaGraphNode_t *pDependencies, size_t numDependencies, cudaGraph_t childGraph)
cudaError_t cudaGraphAddEventRecordNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph, const cudaGraphNode_t *pDependencies, size_t numDependencies, cudaEvent_t event)
cudaError_t cudaGraphAddEventWaitNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph, const cudaGraphNode_t *pDependencies, size_t numDependencies, cudaEvent_t event)
cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t *nodes, size_t *numNodes)
cudaError_t cudaGraphGetRootNodes(cudaGraph_t graph, cudaGraphNode_t *pRootNodes, size_t *pNumRootNodes)
cudaError_t cudaGraphGetEdges(cudaGraph_t graph, cudaGraphNode_t *from, cudaGraphNode_t *to, cudaGraphEdgeData *edgeData, size_t *numEdges)
cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node, cudaGraphNodeType *pType)
cudaError_t cudaGraphNodeGetDependencies(cudaGraphNode_t node, cudaGraphNode_t *pDependencies, cudaGraphEdgeData *edgeData, size_t *pNumDependencies)
cudaError_t cudaGraphNodeGetDependentNodes(cudaGraphNode_t node, cudaGraphNode_t *pDependentNodes, cudaGraphEdgeData *edgeData, size_t *pNumDependentNodes)
cudaError_t cudaGraphKernelNodeGetParams(cudaGraphNode_t node, cudaKernelNodeParams *pNodeParams)
cudaError_t cudaGraphKernelNodeSetParams(cudaGraphNode_t node, const cudaKernelNodeParams *pNodeParams)
cudaError_t cudaGraphExecKernelNodeSetParams(cudaGraphExec_t hGraphExec, cudaGraphNode_t node, const cudaKernelNodeParams *pNodeParams)
cudaError_t cudaGraphAddDependencies(cudaGraph_t graph, const cudaGraphNode_t *from, const cudaGraphNode_t *to, const cudaGraphEdgeData *edgeData, size_t numDependencies)
cudaError_t cudaGraphRemoveDependencies(cudaGraph_t graph, const cudaGraphNode_t *from, const cudaGraphNode_t *to, const cudaGraphEdgeData *edgeData, size_t numDependencies)
cudaError_t cudaGraphDestroyNode(cudaGraphNode_t node)
cudaError_t cudaGraphClone(cudaGraph_t *pGraphClone, cudaGraph_t originalGraph)
cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream)
cudaError_t cudaMemPoolCreate(cudaMemPool_t *memPool, const cudaMemPoolProps *poolProps)
cudaError_t cudaMemPoolDestroy(cudaMemPool_t memPool)
cudaError_t cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep)
cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t memPool, cudaMemPoolAttr attr, void *value)
cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t memPool, cudaMemPoolAttr attr, void *value)
cudaError_t cudaMemPoolSetAccess(cudaMemPool_t memPool, const cudaMemAccessDesc *descList, size_t count)
cudaError_t cudaMemPoolGetAccess(cudaMemAccessFlags *flags, cudaMemPool_t memPool, cudaMemLocation *location)
cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *memPool, int device)
cudaError_t cudaDeviceGetMemPool(cudaMemPool_t *memPool, int device)
cudaError_t cudaDeviceSetMemPool(int device, cudaMemPool_t memPool)
cudaError_t cudaMemGetInfo(size_t *free, size_t *total)
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes *attributes, const void *ptr)
cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, cudaMemcpyKind kind)
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, cudaMemcpyKind kind, cudaStream_t stream)
cudaError_t cudaMemcpyPeer(void *dst, int dstDevice, const void *src, int srcDevice, size_t count)
cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice, size_t count, cudaStream_t stream)
cudaError_t cudaMemset(void *devPtr, int value, size_t count)
cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream)
cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height)
cudaError_t cudaMalloc3D(cudaPitchedPtr *pitchedDevPtr, cudaExtent extent)
cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height, cudaMemcpyKind kind)
cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height, cudaMemcpyKind kind, cudaStream_t stream)
cudaError_t cudaMemset2D(void *devPtr, size_t pitch, int value, size_t width, size_t height)
cudaError_t cudaMemset2DAsync(void *devPtr, size_t pitch, int value, size_t width, size_t height, cudaStream_t stream)
cudaError_t cudaMemset3D(cudaPitchedPtr pitchedDevPtr, int value, cudaExtent extent)
cudaError_t cudaMemset3DAsync(cudaPitchedPtr pitchedDevPtr, int value, cudaExtent extent, cudaStream_t stream)
cudaError_t cudaMemcpy3D(const cudaMemcpy3DParms *p)
cudaError_t cudaMemcpy3DAsync(const cudaMemcpy3DParms *p, cudaStream_t stream)
cudaError_t cudaMemPrefetchAsync(const void *devPtr, size_t count, cudaMemLocation location, unsigned int flags, cudaStream_t stream)
cudaError_t cudaMemAdvise(const void *devPtr, size_t count, cudaMemoryAdvise advice, cudaMemLocation location)
"""

_STREAMS = """
cudaError_t cudaStreamCreate(cudaStream_t *pStream)
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags, int priority)
cudaError_t cudaStreamDestroy(cudaStream_t stream)
cudaError_t cudaStreamSynchronize(cudaStream_t stream)
cudaError_t cudaStreamQuery(cudaStream_t stream)
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
cudaError_t cudaStreamGetFlags(cudaStream_t hStream, unsigned int *flags)
cudaError_t cudaStreamGetPriority(cudaStream_t hStream, int *priority)
cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback, void *userData, unsigned int flags)
cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData)
cudaError_t cudaStreamAttachMemAsync(cudaStream_t stream, void *devPtr, size_t length, unsigned int flags)
cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode)
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph)
cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus *pCaptureStatus)
cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream, cudaStreamCaptureStatus *captureStatus_out, unsigned long long *id_out, cudaGraph_t *graph_out, const cudaGraphNode_t **dependencies_out, const cudaGraphEdgeData **edgeData_out, size_t *numDependencies_out)
cudaError_t cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode *mode)
cudaError_t cudaStreamGetId(cudaStream_t hStream, unsigned long long *streamId)
cudaError_t cudaStreamGetDevice(cudaStream_t hStream, int *device)
cudaError_t cudaGraphUpload(cudaGraphExec_t graphExec, cudaStream_t stream)
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph, unsigned long long flags)
cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream)
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec)
cudaError_t cudaGraphDestroy(cudaGraph_t graph)
cudaError_t cudaEventCreate(cudaEvent_t *event)
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags)
cudaError_t cudaEventQuery(cudaEvent_t event)
cudaError_t cudaEventSynchronize(cudaEvent_t event)
cudaError_t cudaEventDestroy(cudaEvent_t event)
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
"""

_TEXTURES = """
cudaError_t cudaMallocArray(cudaArray_t *array, const cudaChannelFormatDesc *desc, size_t width, size_t height, unsigned int flags)
cudaError_t cudaMalloc3DArray(cudaArray_t *array, const cudaChannelFormatDesc *desc, cudaExtent extent, unsigned int flags)
cudaError_t cudaMallocMipmappedArray(cudaMipmappedArray_t *mipmappedArray, const cudaChannelFormatDesc *desc, cudaExtent extent, unsigned int numLevels, unsigned int flags)
cudaError_t cudaGetMipmappedArrayLevel(cudaArray_t *levelArray, cudaMipmappedArray_const_t mipmappedArray, unsigned int level)
cudaError_t cudaFreeMipmappedArray(cudaMipmappedArray_t mipmappedArray)
cudaError_t cudaFreeArray(cudaArray_t array)
cudaError_t cudaArrayGetInfo(cudaChannelFormatDesc *desc, cudaExtent *extent, unsigned int *flags, cudaArray_t array)
cudaError_t cudaGetChannelDesc(cudaChannelFormatDesc *desc, cudaArray_const_t array)
cudaError_t cudaMemcpy2DToArray(cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src, size_t spitch, size_t width, size_t height, cudaMemcpyKind kind)
cudaError_t cudaMemcpy2DToArrayAsync(cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src, size_t spitch, size_t width, size_t height, cudaMemcpyKind kind, cudaStream_t stream)
cudaError_t cudaMemcpy2DFromArray(void *dst, size_t dpitch, cudaArray_const_t src, size_t wOffset, size_t hOffset, size_t width, size_t height, cudaMemcpyKind kind)
cudaError_t cudaMemcpy2DFromArrayAsync(void *dst, size_t dpitch, cudaArray_const_t src, size_t wOffset, size_t hOffset, size_t width, size_t height, cudaMemcpyKind kind, cudaStream_t stream)
cudaError_t cudaMemcpy2DArrayToArray(cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst, cudaArray_const_t src, size_t wOffsetSrc, size_t hOffsetSrc, size_t width, size_t height, cudaMemcpyKind kind)
cudaError_t cudaMemcpyToArray(cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src, size_t count, cudaMemcpyKind kind)
cudaError_t cudaMemcpyToArrayAsync(cudaArray_t dst, size_t wOffset, size_t hOffset, const void *src, size_t count, cudaMemcpyKind kind, cudaStream_t stream)
cudaError_t cudaMemcpyFromArray(void *dst, cudaArray_const_t src, size_t wOffset, size_t hOffset, size_t count, cudaMemcpyKind kind)
cudaError_t cudaMemcpyFromArrayAsync(void *dst, cudaArray_const_t src, size_t wOffset, size_t hOffset, size_t count, cudaMemcpyKind kind, cudaStream_t stream)
cudaError_t cudaMemcpyArrayToArray(cudaArray_t dst, size_t wOffsetDst, size_t hOffsetDst, cudaArray_const_t src, size_t wOffsetSrc, size_t hOffsetSrc, size_t count, cudaMemcpyKind kind)
cudaError_t cudaCreateTextureObject(cudaTextureObject_t *pTexObject, const cudaResourceDesc *pResDesc, const cudaTextureDesc *pTexDesc, const cudaResourceViewDesc *pResViewDesc)
cudaError_t cudaDestroyTextureObject(cudaTextureObject_t texObject)
cudaError_t cudaCreateSurfaceObject(cudaSurfaceObject_t *pSurfObject, const cudaResourceDesc *pResDesc)
cudaError_t cudaDestroySurfaceObject(cudaSurfaceObject_t surfObject)
cudaError_t cudaGetTextureObjectResourceDesc(cudaResourceDesc *pResDesc, cudaTextureObject_t texObject)
cudaError_t cudaGetTextureObjectTextureDesc(cudaTextureDesc *pTexDesc, cudaTextureObject_t texObject)
cudaError_t cudaGetSurfaceObjectResourceDesc(cudaResourceDesc *pResDesc, cudaSurfaceObject_t surfObject)
"""

# Functions written in C in the library itself: pure functions returning a struct by value,
# which the shim's handlers (returning an integer) cannot.
NATIVE_NAMES = ("cudaCreateChannelDesc",)
NATIVE_SOURCE = """
typedef struct { int x, y, z, w; int f; } ptxport_channel_format_desc;
EXPORT ptxport_channel_format_desc cudaCreateChannelDesc(int x, int y, int z, int w, int f) {
    ptxport_channel_format_desc desc = {x, y, z, w, f};
    return desc;
}
"""

_BASE: tuple[Signature, ...] = tuple(
    parse(line) for line in (_REGISTRATION + _DEVICE + _MEMORY + _STREAMS +
                             _TEXTURES).splitlines()
    if line.strip())

# The runtime's per-thread-default-stream variants: NAME_ptds (synchronous calls) and
# NAME_ptsz (those taking a stream).
PER_THREAD = ("_ptds", "_ptsz")


def _per_thread_variants(base: tuple[Signature, ...]) -> tuple[Signature, ...]:
    by_name = {sig.name: sig for sig in base}
    variants = []
    for name in NAMES:
        stem, _, suffix = name.rpartition("_")
        if f"_{suffix}" in PER_THREAD and stem in by_name:
            variants.append(Signature(by_name[stem].ret, name, by_name[stem].params))
    return tuple(variants)


ENTRY_POINTS: tuple[Signature, ...] = _BASE + _per_thread_variants(_BASE)


def unsupported_names() -> tuple[str, ...]:
    """The runtime's names the library exports as stubs, in the order of their numbers."""
    implemented = {sig.name for sig in ENTRY_POINTS} | set(NATIVE_NAMES)
    return tuple(name for name in NAMES if name not in implemented)
