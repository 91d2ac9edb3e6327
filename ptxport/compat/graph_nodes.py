"""CUDA graphs built node by node (cudaGraphCreate, cudaGraphAdd*Node), their queries
(nodes, root nodes, edges, dependencies, types, kernel node parameters) and edits
(dependencies added or removed, nodes destroyed, graphs cloned, an instantiated graph's kernel
node parameters set), in the runtime's and the driver's forms.

A node keeps what CUDA copies when it is added: a kernel's packed parameters (the values
`kernelParams` points at then), a copy's or fill's arguments, a host function and its data;
launching the graph queues each node's work on the launch's stream through the same handlers
that queue it outside graphs, in an order that puts every node after its dependencies (the
nodes' own order where that allows). One stream runs them, so independent branches run one
after the other, which every dependency allows. A graph made by stream capture (graphs.py)
shows its captured work as nodes too, each depending on the one captured before it.
"""

from __future__ import annotations

import ctypes

from ptxport.compat import cudart_launch, execution, graphs, pitched, streams
from ptxport.compat.state import INVALID_VALUE, SUCCESS, CudaError, put, state
from ptxport.runtime.launch import launch_packed

# CUgraphNodeType
KERNEL, MEMCPY, MEMSET, HOST, CHILD, EMPTY, WAIT_EVENT, EVENT_RECORD = range(8)


class _KernelParams(ctypes.Structure):
    """cudaKernelNodeParams, and CUDA_KERNEL_NODE_PARAMS(_v2)'s first fields (the driver's
    `func` is a CUfunction, the runtime's a kernel's host stub)."""

    _fields_ = [("func", ctypes.c_void_p), ("grid", ctypes.c_uint * 3),
                ("block", ctypes.c_uint * 3), ("shared", ctypes.c_uint),
                ("kernelParams", ctypes.c_void_p), ("extra", ctypes.c_void_p)]


class _MemsetParams(ctypes.Structure):
    """cudaMemsetParams and CUDA_MEMSET_NODE_PARAMS."""

    _fields_ = [("dst", ctypes.c_uint64), ("pitch", ctypes.c_size_t),
                ("value", ctypes.c_uint), ("elementSize", ctypes.c_uint),
                ("width", ctypes.c_size_t), ("height", ctypes.c_size_t)]


class _HostParams(ctypes.Structure):
    """cudaHostNodeParams and CUDA_HOST_NODE_PARAMS."""

    _fields_ = [("fn", ctypes.c_void_p), ("userData", ctypes.c_void_p)]


class Node:
    """One node: its type, graph, dependencies, and `work(handle)`, which queues it on the
    stream `handle` names. `params` (kernel nodes) are what KernelNodeGetParams reads."""

    def __init__(self, graph: graphs.Graph, kind: int, work, params=None):
        self.graph, self.kind, self.work, self.params = graph, kind, work, params
        self.deps: list[Node] = []
        self.handle = state.handle(self)


def _node(handle: int | None) -> Node:
    return state.lookup(handle or 0, Node, "CUgraphNode")


def _graph(handle: int | None) -> graphs.Graph:
    return state.lookup(handle or 0, graphs.Graph, "CUgraph")


def _handles(address: int, count: int) -> list[int]:
    if count and not address:
        raise CudaError(INVALID_VALUE, f"{count} nodes named and no array given")
    return list((ctypes.c_void_p * count).from_address(address)) if count else []


def _add(out: int, graph_handle: int, deps: int, count: int, kind: int, work,
         params=None) -> int:
    if not out:
        raise CudaError(INVALID_VALUE, "the pointer for the new node is NULL")
    graph = _graph(graph_handle)
    node = Node(graph, kind, work, params)
    for handle in _handles(deps, count):
        dep = _node(handle)
        if dep.graph is not graph:
            raise CudaError(INVALID_VALUE, "a dependency is a node of another graph")
        if dep not in node.deps:
            node.deps.append(dep)
    graph.own.append(node)
    put(ctypes.c_void_p, out, node.handle)
    return SUCCESS


def _kernel_work(function_handle: int, p: _KernelParams):
    """A kernel node's work: its parameters packed now, launched (checked) at each launch."""
    function = state.lookup(function_handle, execution.Function, "CUfunction")
    params = execution._parameters(function, p.kernelParams or 0, p.extra or 0)
    shape, shared = (*p.grid, *p.block), p.shared
    config = execution._config(function_handle, function, shape, shared)

    def work(handle: int) -> None:
        launch_packed(streams.ordered(handle), config, function.kernel, params, checked=True)
    return work


def _kernel_node_params(p: _KernelParams, func: int) -> _KernelParams:
    kept = _KernelParams()
    ctypes.memmove(ctypes.addressof(kept), ctypes.addressof(p), ctypes.sizeof(p))
    kept.func = func
    return kept


def cudaGraphCreate(graph_out: int, flags: int) -> int:
    if flags:
        raise CudaError(INVALID_VALUE, "cudaGraphCreate takes flags 0")
    put(ctypes.c_void_p, graph_out, state.handle(graphs.Graph()))
    return SUCCESS


def cudaGraphAddEmptyNode(out: int, graph: int, deps: int, count: int) -> int:
    return _add(out, graph, deps, count, EMPTY, lambda handle: None)


# How each form names the kernel in its parameters: (the CUfunction to launch, the value
# KernelNodeGetParams gives back in `func`).
def _runtime_kernel(params: int) -> tuple[int, int]:
    """cudaKernelNodeParams: `func` is a kernel's host stub."""
    func = _KernelParams.from_address(params).func or 0
    return cudart_launch.function_of(func), func


def _driver_kernel(params: int) -> tuple[int, int]:
    """CUDA_KERNEL_NODE_PARAMS_v2: `func` (a CUfunction) or, when that is NULL, `kern` (a
    CUkernel, at byte 56: what NVIDIA's runtime passes)."""
    function = _KernelParams.from_address(params).func or \
        ctypes.c_void_p.from_address(params + 56).value or 0
    return function, function


def _v1_kernel(params: int) -> tuple[int, int]:
    """CUDA_KERNEL_NODE_PARAMS_v1: `func` only."""
    function = _KernelParams.from_address(params).func or 0
    return function, function


def _kernel_node(params: int, naming) -> tuple:
    """A kernel node's (work, kept parameters) from `params`, named as `naming` reads it."""
    function, func = naming(params)
    p = _KernelParams.from_address(params)
    return _kernel_work(function, p), _kernel_node_params(p, func)


def cudaGraphAddKernelNode(out: int, graph: int, deps: int, count: int, params: int) -> int:
    return _add(out, graph, deps, count, KERNEL, *_kernel_node(params, _runtime_kernel))


def cuGraphAddKernelNode_v2(out: int, graph: int, deps: int, count: int, params: int) -> int:
    return _add(out, graph, deps, count, KERNEL, *_kernel_node(params, _driver_kernel))


def cuGraphAddKernelNode(out: int, graph: int, deps: int, count: int, params: int) -> int:
    return _add(out, graph, deps, count, KERNEL, *_kernel_node(params, _v1_kernel))


def _memset_work(params: int):
    p = _MemsetParams.from_address(params)
    if p.elementSize not in (1, 2, 4):
        raise CudaError(INVALID_VALUE, f"elementSize {p.elementSize}: 1, 2 or 4")
    dst, value, width, height = p.dst, p.value, p.width, max(p.height, 1)
    pitch = p.pitch if height > 1 else width * p.elementSize
    fill = {1: pitched.cuMemsetD2D8Async, 2: pitched.cuMemsetD2D16Async,
            4: pitched.cuMemsetD2D32Async}[p.elementSize]
    return lambda handle: fill(dst, pitch, value, width, height, handle)


def cudaGraphAddMemsetNode(out: int, graph: int, deps: int, count: int, params: int) -> int:
    return _add(out, graph, deps, count, MEMSET, _memset_work(params))


def cuGraphAddMemsetNode(out: int, graph: int, deps: int, count: int, params: int,
                         context: int) -> int:
    return _add(out, graph, deps, count, MEMSET, _memset_work(params))


def cudaGraphAddMemcpyNode1D(out: int, graph: int, deps: int, count: int, dst: int, src: int,
                             nbytes: int, kind: int) -> int:
    from ptxport.compat import cudart
    return _add(out, graph, deps, count, MEMCPY,
                lambda handle: cudart.cudaMemcpyAsync(dst, src, nbytes, kind, handle))


def cudaGraphAddMemcpyNode(out: int, graph: int, deps: int, count: int, params: int) -> int:
    from ptxport.compat import cudart
    size = ctypes.sizeof(cudart._Memcpy3DParms)
    kept = ctypes.create_string_buffer(ctypes.string_at(params, size), size)
    return _add(out, graph, deps, count, MEMCPY, lambda handle: cudart.cudaMemcpy3DAsync(
        ctypes.addressof(kept), handle))


def cuGraphAddMemcpyNode(out: int, graph: int, deps: int, count: int, params: int,
                         context: int) -> int:
    size = ctypes.sizeof(pitched._Memcpy3D)
    kept = ctypes.create_string_buffer(ctypes.string_at(params, size), size)
    return _add(out, graph, deps, count, MEMCPY, lambda handle: pitched.cuMemcpy3DAsync_v2(
        ctypes.addressof(kept), handle))


def cudaGraphAddHostNode(out: int, graph: int, deps: int, count: int, params: int) -> int:
    p = _HostParams.from_address(params)
    fn, data = p.fn, p.userData or 0
    if not fn:
        raise CudaError(INVALID_VALUE, "the host node's function is NULL")
    return _add(out, graph, deps, count, HOST,
                lambda handle: streams.cuLaunchHostFunc(handle, fn, data))


def cudaGraphAddChildGraphNode(out: int, graph: int, deps: int, count: int,
                               child: int) -> int:
    ordered = _ordered(_clone(_graph(child)))     # (CUDA copies the child graph)
    return _add(out, graph, deps, count, CHILD,
                lambda handle: [node.work(handle) for node in ordered])


def cudaGraphAddEventRecordNode(out: int, graph: int, deps: int, count: int,
                                event: int) -> int:
    return _add(out, graph, deps, count, EVENT_RECORD,
                lambda handle: streams.cuEventRecord(event, handle))


def cudaGraphAddEventWaitNode(out: int, graph: int, deps: int, count: int, event: int) -> int:
    return _add(out, graph, deps, count, WAIT_EVENT,
                lambda handle: streams.cuStreamWaitEvent(handle, event, 0))


# -- queries --------------------------------------------------------------------------------

def all_nodes(graph: graphs.Graph) -> list[Node]:
    """The graph's nodes: those captured (each after the one before), then those added."""
    captured = graph.captured_nodes(Node)
    return captured + graph.own


def _answer(handles: list, out: int, count: int, extra: int = 0) -> int:
    """CUDA's way of answering with an array: the count alone when `out` is NULL, else
    at most *count entries (NULL past the end) and the count there is."""
    if not count:
        raise CudaError(INVALID_VALUE, "the count pointer is NULL")
    if out:
        room = ctypes.c_size_t.from_address(count).value
        array = (ctypes.c_void_p * room).from_address(out)
        for i in range(room):
            array[i] = handles[i] if i < len(handles) else None
        if extra:     # edge data: default edges, all zero (8 bytes each)
            ctypes.memset(extra, 0, 8 * room)
        put(ctypes.c_size_t, count, min(room, len(handles)))
    else:
        put(ctypes.c_size_t, count, len(handles))
    return SUCCESS


def cudaGraphGetNodes(graph: int, out: int, count: int) -> int:
    return _answer([n.handle for n in all_nodes(_graph(graph))], out, count)


def cudaGraphGetRootNodes(graph: int, out: int, count: int) -> int:
    return _answer([n.handle for n in all_nodes(_graph(graph)) if not n.deps], out, count)


def cudaGraphGetEdges(graph: int, sources: int, targets: int, edge_data: int,
                      count: int) -> int:
    edges = [(d.handle, n.handle) for n in all_nodes(_graph(graph)) for d in n.deps]
    if (sources == 0) != (targets == 0):
        raise CudaError(INVALID_VALUE, "give both edge arrays, or neither")
    _answer([e[0] for e in edges], sources, count, edge_data)
    return _answer([e[1] for e in edges], targets, count) if targets else SUCCESS


def cudaGraphNodeGetType(node: int, kind: int) -> int:
    put(ctypes.c_int, kind, _node(node).kind)
    return SUCCESS


def cudaGraphNodeGetDependencies(node: int, out: int, edge_data: int, count: int) -> int:
    return _answer([d.handle for d in _node(node).deps], out, count, edge_data)


def cudaGraphNodeGetDependentNodes(node: int, out: int, edge_data: int, count: int) -> int:
    me = _node(node)
    return _answer([n.handle for n in all_nodes(me.graph) if me in n.deps], out, count,
                   edge_data)


def cudaGraphKernelNodeGetParams(node: int, params: int) -> int:
    me = _node(node)
    if me.kind != KERNEL or me.params is None:
        raise CudaError(INVALID_VALUE, "not a kernel node added by cudaGraphAddKernelNode")
    ctypes.memmove(params, ctypes.addressof(me.params), ctypes.sizeof(_KernelParams))
    return SUCCESS


def _set_params(node: int, params: int, naming) -> int:
    me = _node(node)
    if me.kind != KERNEL:
        raise CudaError(INVALID_VALUE, "not a kernel node")
    me.work, me.params = _kernel_node(params, naming)
    return SUCCESS


def cudaGraphKernelNodeSetParams(node: int, params: int) -> int:
    return _set_params(node, params, _runtime_kernel)


def cuGraphKernelNodeSetParams_v2(node: int, params: int) -> int:
    return _set_params(node, params, _driver_kernel)


def cuGraphKernelNodeGetParams_v2(node: int, params: int) -> int:
    """The parameters as added, `func` and `kern` both naming the kernel (`ctx` NULL)."""
    cudaGraphKernelNodeGetParams(node, params)
    kernel = _node(node).params.func
    ctypes.c_void_p.from_address(params + 56).value = kernel
    ctypes.c_void_p.from_address(params + 64).value = None
    return SUCCESS


def _exec_set(graph_exec: int, node: int, params: int, naming) -> int:
    exec_ = state.lookup(graph_exec or 0, graphs.GraphExec, "CUgraphExec")
    me = _node(node)
    if me not in exec_.by_node:
        raise CudaError(INVALID_VALUE, "the node is not in the instantiated graph")
    exec_.nodes[exec_.by_node[me]] = _kernel_node(params, naming)[0]
    return SUCCESS


def cudaGraphExecKernelNodeSetParams(graph_exec: int, node: int, params: int) -> int:
    return _exec_set(graph_exec, node, params, _runtime_kernel)


def cuGraphExecKernelNodeSetParams_v2(graph_exec: int, node: int, params: int) -> int:
    return _exec_set(graph_exec, node, params, _driver_kernel)


# -- edits ----------------------------------------------------------------------------------

def cudaGraphAddDependencies(graph: int, sources: int, targets: int, edge_data: int,
                             count: int) -> int:
    g = _graph(graph)
    pairs = list(zip(_handles(sources, count), _handles(targets, count), strict=True))
    for source, target in pairs:
        a, b = _node(source), _node(target)
        if a.graph is not g or b.graph is not g:
            raise CudaError(INVALID_VALUE, "an edge between nodes of another graph")
        if a not in b.deps:
            b.deps.append(a)
    _ordered(g)     # (refuses a cycle)
    return SUCCESS


def cudaGraphRemoveDependencies(graph: int, sources: int, targets: int, edge_data: int,
                                count: int) -> int:
    _graph(graph)
    for source, target in zip(_handles(sources, count), _handles(targets, count), strict=True):
        a, b = _node(source), _node(target)
        if a not in b.deps:
            raise CudaError(INVALID_VALUE, "no such edge")
        b.deps.remove(a)
    return SUCCESS


def cudaGraphDestroyNode(node: int) -> int:
    me = state.release(node or 0, Node, "CUgraphNode")
    if me not in me.graph.own:
        raise CudaError(INVALID_VALUE, "a captured node cannot be destroyed")
    me.graph.own.remove(me)
    for other in me.graph.own:
        if me in other.deps:
            other.deps.remove(me)
    return SUCCESS


def _clone(graph: graphs.Graph) -> graphs.Graph:
    copy, mapping = graphs.Graph(), {}
    for node in all_nodes(graph):
        twin = Node(copy, node.kind, node.work, node.params)
        twin.deps = [mapping[d] for d in node.deps]
        mapping[node] = twin
        copy.own.append(twin)
    return copy


def cudaGraphClone(out: int, graph: int) -> int:
    put(ctypes.c_void_p, out, state.handle(_clone(_graph(graph))))
    return SUCCESS


def _ordered(graph: graphs.Graph) -> list[Node]:
    """The nodes, each after its dependencies (the nodes' own order where that allows)."""
    nodes = all_nodes(graph)
    done: set[int] = set()
    order: list[Node] = []
    while len(order) < len(nodes):
        ready = [n for n in nodes if id(n) not in done and all(id(d) in done for d in n.deps)]
        if not ready:
            raise CudaError(INVALID_VALUE, "the graph's dependencies form a cycle")
        order.append(ready[0])
        done.add(id(ready[0]))
    return order


def instantiate_order(graph: graphs.Graph) -> list[Node]:
    return _ordered(graph)


# The driver's forms with the runtime's arguments.
cuGraphCreate = cudaGraphCreate
cuGraphAddEmptyNode = cudaGraphAddEmptyNode
cuGraphAddHostNode = cudaGraphAddHostNode
cuGraphAddChildGraphNode = cudaGraphAddChildGraphNode
cuGraphAddEventRecordNode = cudaGraphAddEventRecordNode
cuGraphAddEventWaitNode = cudaGraphAddEventWaitNode
cuGraphGetNodes = cudaGraphGetNodes
cuGraphGetRootNodes = cudaGraphGetRootNodes
cuGraphGetEdges_v2 = cudaGraphGetEdges
cuGraphNodeGetType = cudaGraphNodeGetType
cuGraphNodeGetDependencies_v2 = cudaGraphNodeGetDependencies
cuGraphNodeGetDependentNodes_v2 = cudaGraphNodeGetDependentNodes
cuGraphAddDependencies_v2 = cudaGraphAddDependencies
cuGraphRemoveDependencies_v2 = cudaGraphRemoveDependencies
cuGraphDestroyNode = cudaGraphDestroyNode
cuGraphClone = cudaGraphClone


# The CUDA 12 forms without edge data.
def cuGraphGetEdges(graph: int, sources: int, targets: int, count: int) -> int:
    return cudaGraphGetEdges(graph, sources, targets, 0, count)


def cuGraphNodeGetDependencies(node: int, out: int, count: int) -> int:
    return cudaGraphNodeGetDependencies(node, out, 0, count)


def cuGraphNodeGetDependentNodes(node: int, out: int, count: int) -> int:
    return cudaGraphNodeGetDependentNodes(node, out, 0, count)


def cuGraphAddDependencies(graph: int, sources: int, targets: int, count: int) -> int:
    return cudaGraphAddDependencies(graph, sources, targets, 0, count)


def cuGraphRemoveDependencies(graph: int, sources: int, targets: int, count: int) -> int:
    return cudaGraphRemoveDependencies(graph, sources, targets, 0, count)
