"""CUDA graphs made by stream capture: cudaStreamBeginCapture ... cudaStreamEndCapture, then
cudaGraphInstantiate and cudaGraphLaunch.

While a stream is captured, what the program queues on it (copies, fills, launches, event
records) is kept as the graph's nodes instead of run (streams.Capture); a launch of the
instantiated graph queues them all, in capture order, on the stream it is given. The
parameters of each node are those at capture time, as in CUDA. A stream that waits for an
event recorded in a capture joins it (fork and join across streams); all nodes replay in
capture order on one stream, which satisfies every dependency the capture recorded. Graphs
built node by node, and the nodes of captured graphs, are graph_nodes.py's. Not yet: updates
of instantiated graphs (cudaGraphExecUpdate), conditional nodes, graph memory nodes.
"""

from __future__ import annotations

import ctypes
import threading

from ptxport.compat import streams
from ptxport.compat.state import DEFAULT_STREAMS, SUCCESS, CudaError, put, state

_ACTIVE = 1          # CU_STREAM_CAPTURE_STATUS_ACTIVE
_mode = threading.local()


class Graph:
    """A graph: the work a capture kept (`capture`), then the nodes added one by one
    (`own`, graph_nodes.Node)."""

    def __init__(self, capture: streams.Capture | None = None):
        self.capture = capture
        self.own: list = []
        self._captured: list = []      # the captured work as nodes, made once each

    def captured_nodes(self, node_class) -> list:
        """The captured work as nodes of `node_class` (graph_nodes.Node), each depending on
        the one captured before it."""
        work = self.capture.nodes if self.capture is not None else []
        while len(self._captured) < len(work):
            i = len(self._captured)
            node = node_class(self, self.capture.kinds[i], _captured_work(work[i]))
            node.deps = self._captured[-1:]
            self._captured.append(node)
        return list(self._captured)


def _captured_work(queue):
    """A captured node's work(handle): queue it on the stream `handle` names."""
    return lambda handle: queue(streams.ordered(handle))


class GraphExec:
    """An instantiated graph: its nodes' work as it was at instantiation, in an order that
    puts each after its dependencies; `by_node`: a node's place there."""

    def __init__(self, graph: Graph):
        from ptxport.compat.graph_nodes import instantiate_order
        order = instantiate_order(graph)
        self.nodes = [node.work for node in order]
        self.by_node = {node: i for i, node in enumerate(order)}


def cuStreamBeginCapture_v2(handle: int, mode: int) -> int:
    if handle in DEFAULT_STREAMS:
        raise CudaError(streams.CAPTURE_UNSUPPORTED, "the default stream cannot be captured: "
                                                     "capture a stream of cudaStreamCreate")
    if handle in streams.captures:
        raise CudaError(401, "the stream is being captured already")   # ILLEGAL_STATE
    capture = streams.Capture(state.stream(handle))
    streams.captures[handle] = capture
    state.handle(Graph(capture))   # a handle from the start, for cuStreamGetCaptureInfo
    return SUCCESS


def _graph_of(capture: streams.Capture) -> int:
    return next(h for h, obj in state.objects.items()
                if isinstance(obj, Graph) and obj.capture is capture)


def cuStreamEndCapture(handle: int, graph: int) -> int:
    capture = streams.captures.pop(handle, None)
    if capture is None:
        raise CudaError(401, "the stream is not being captured")
    for other in [h for h, c in streams.captures.items() if c is capture]:
        del streams.captures[other]   # streams that joined by waiting for its events
    put(ctypes.c_void_p, graph, _graph_of(capture))
    return SUCCESS


def cuStreamIsCapturing(handle: int, status: int) -> int:
    state.stream(handle)
    put(ctypes.c_int, status, _ACTIVE if handle in streams.captures else 0)
    return SUCCESS


def cuStreamGetCaptureInfo_v3(handle: int, status: int, capture_id: int, graph: int,
                              dependencies: int, edge_data: int, count: int) -> int:
    capture = streams.captures.get(handle)
    put(ctypes.c_int, status, _ACTIVE if capture is not None else 0)
    if capture is not None:
        if capture_id:
            put(ctypes.c_uint64, capture_id, id(capture))
        if graph:
            put(ctypes.c_void_p, graph, _graph_of(capture))
        if dependencies:
            put(ctypes.c_void_p, dependencies, None)
        if edge_data:
            put(ctypes.c_void_p, edge_data, None)
        if count:
            put(ctypes.c_size_t, count, 0)
    return SUCCESS


def cuThreadExchangeStreamCaptureMode(mode: int) -> int:
    previous = getattr(_mode, "value", 0)   # CU_STREAM_CAPTURE_MODE_GLOBAL
    _mode.value = ctypes.c_int.from_address(mode).value
    put(ctypes.c_int, mode, previous)
    return SUCCESS


def cuGraphInstantiateWithFlags(exec_out: int, graph: int, flags: int) -> int:
    put(ctypes.c_void_p, exec_out, state.handle(GraphExec(state.lookup(graph, Graph, "CUgraph"))))
    return SUCCESS


def cuGraphLaunch(graph_exec: int, handle: int) -> int:
    streams.ordered(handle)
    for work in state.lookup(graph_exec, GraphExec, "CUgraphExec").nodes:
        work(handle)
    return SUCCESS


def cuGraphUpload(graph_exec: int, handle: int) -> int:
    state.lookup(graph_exec, GraphExec, "CUgraphExec")
    return SUCCESS   # nothing to upload: nodes are queued when launched


def cuGraphExecDestroy(graph_exec: int) -> int:
    state.release(graph_exec, GraphExec, "CUgraphExec")
    return SUCCESS


def cuGraphDestroy(graph: int) -> int:
    state.release(graph, Graph, "CUgraph")
    return SUCCESS
