"""The entry points every CPU kernel module exports besides its thread (or gang) function:
run_threads, run_blocks and the claiming loops that take blocks from a shared counter.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen import ops  # noqa: F401  (registers the lowerings)
from ptxport.codegen.lower import (
    I8,
    I32,
    I64,
    PTR,
)
from ptxport.codegen.targets.cpu.abi import BLOCKED, CTX, EXITED, RUNNABLE, TRAPPED
from ptxport.codegen.targets.cpu.stop import branch_on_stop


def build_run_threads(llmod: ll.Module, thread: ll.Function) -> None:
    """void run_threads(ctx, frames, frame_size, points*, statuses*, n): runs every runnable
    thread of a block from its resume point until it waits, exits or traps."""
    fn = ll.Function(llmod, ll.FunctionType(ll.VoidType(), [PTR, PTR, I64, PTR, PTR, I32]),
                     name="run_threads")
    ctx, frames, frame_size, points, statuses, n = fn.args
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    head = fn.append_basic_block("head")
    body = fn.append_basic_block("body")
    run = fn.append_basic_block("run")
    nxt = fn.append_basic_block("next")
    done = fn.append_basic_block("done")
    b.branch(head)
    b.position_at_end(head)
    t = b.phi(I32, name="t")
    t.add_incoming(I32(0), fn.entry_basic_block)
    b.cbranch(b.icmp_signed("<", t, n), body, done)
    b.position_at_end(body)
    status_ptr = b.gep(statuses, [t], source_etype=I32)
    b.cbranch(b.icmp_signed("==", b.load(status_ptr, typ=I32), I32(RUNNABLE)), run, nxt)
    b.position_at_end(run)
    point_ptr = b.gep(points, [t], source_etype=I32)
    frame = b.gep(frames, [b.mul(b.zext(t, I64), frame_size)], source_etype=I8)
    result = b.call(thread, [ctx, frame, b.load(point_ptr, typ=I32)])
    status = b.select(b.icmp_signed(">", result, I32(0)), I32(BLOCKED),
                      b.select(b.icmp_signed("==", result, I32(-1)), I32(EXITED),
                               I32(TRAPPED)))
    b.store(status, status_ptr)
    b.store(result, point_ptr)
    b.branch(nxt)
    b.position_at_end(nxt)
    t_next = b.add(t, I32(1))
    t.add_incoming(t_next, nxt)
    b.branch(head)
    b.position_at_end(done)
    b.ret_void()


def build_run_blocks(llmod: ll.Module, thread: ll.Function) -> None:
    """i64 run_blocks(ctx, frames, frame_size, nthreads, first, count): for kernels without
    barriers or warp operations, runs blocks first..first+count-1 (linear block numbers)
    start to finish, every thread from the top. Returns -1 when all exited, else
    (block << 32 | thread) of the first thread that did not exit (its status is in the
    ctx's fault fields or its trap number in `status_out`)."""
    fn = ll.Function(llmod, ll.FunctionType(I64, [PTR, PTR, I64, I32, I64, I64, PTR]),
                     name="run_blocks")
    ctx, frames, frame_size, nthreads, first, count, status_out = fn.args
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    thread_head, thread_body, thread_next, failed = (
        fn.append_basic_block(n) for n in ("thread_head", "thread_body", "thread_next",
                                           "failed"))
    n, block_body, block_next = open_block_loop(b, ctx, first, count)
    b.branch(thread_head)
    b.position_at_end(thread_head)
    t = b.phi(I32, "t")
    t.add_incoming(I32(0), block_body)
    b.cbranch(b.icmp_signed("<", t, nthreads), thread_body, block_next)
    b.position_at_end(thread_body)
    frame = b.gep(frames, [b.mul(b.zext(t, I64), frame_size)], source_etype=I8)
    result = b.call(thread, [ctx, frame, I32(0)])
    b.cbranch(b.icmp_signed("==", result, I32(-1)), thread_next, failed)
    b.position_at_end(thread_next)
    t.add_incoming(b.add(t, I32(1)), thread_next)
    b.branch(thread_head)
    b.position_at_end(failed)
    b.store(result, status_out)
    b.ret(b.or_(b.shl(n, I64(32)), b.zext(t, I64)))


def store_block_coordinates(b: ll.IRBuilder, ctx, block, gx, gy) -> None:
    """Store linear block number `block`'s %ctaid (x fastest) in the context; gx, gy: the
    grid's %nctaid.x and .y (i64, as `block`)."""
    values = (b.urem(block, gx), b.urem(b.udiv(block, gx), gy), b.udiv(block, b.mul(gx, gy)))
    for axis, value in enumerate(values):
        pointer = b.gep(ctx, [I64(CTX.fields["ctaid"] + 4 * axis)], source_etype=I8)
        b.store(b.trunc(value, I32), pointer)


def open_block_loop(b: ll.IRBuilder, ctx, first, count):
    """Opens `for n in first..first+count` over linear block numbers in b's function: the
    builder is left in the loop's body with block n's %ctaid stored in the context, and the
    loop returns -1 when done (or asked to stop: the context's stop word is set). Returns
    (n, the body block, the block to branch to for the next block number). The first
    block's %ctaid takes divisions; each next one counts on from the context's (x, then y,
    then z), three divisions a block fewer, and nothing more kept in registers across the
    blocks' code (counters kept as values of the loop spilled in a histogram's inner loop)."""
    fn = b.function

    def field(name: str, index: int = 0):
        return b.gep(ctx, [I64(CTX.fields[name] + 4 * index)], source_etype=I8)

    gx = b.load(field("nctaid", 0), typ=I32)
    gy = b.load(field("nctaid", 1), typ=I32)
    stop = b.load(field("stop"), typ=PTR)
    end = b.add(first, count)
    store_block_coordinates(b, ctx, first, b.zext(gx, I64), b.zext(gy, I64))
    head, body, block_next, done, more = (fn.append_basic_block(name) for name in (
        "block_head", "block_body", "block_next", "done", "more_blocks"))
    entry = b.block
    b.branch(head)
    b.position_at_end(head)
    n = b.phi(I64, "block")
    n.add_incoming(first, entry)
    b.cbranch(b.icmp_unsigned("<", n, end), more, done)
    b.position_at_end(more)
    branch_on_stop(b, stop, done, body)   # (a stopped launch: its caller finds the word set)
    b.position_at_end(done)
    b.ret(I64(-1))
    b.position_at_end(block_next)
    n.add_incoming(b.add(n, I64(1)), block_next)
    x, y, z = (b.load(field("ctaid", axis), typ=I32) for axis in range(3))
    x_next = b.add(x, I32(1))
    row_done = b.icmp_unsigned("==", x_next, gx)
    y_next = b.add(y, b.zext(row_done, I32))
    plane_done = b.icmp_unsigned("==", y_next, gy)
    for axis, value in enumerate((b.select(row_done, I32(0), x_next),
                                  b.select(plane_done, I32(0), y_next),
                                  b.add(z, b.zext(plane_done, I32)))):
        b.store(value, field("ctaid", axis))
    b.branch(head)
    b.position_at_end(body)
    return n, body, block_next


# build_claiming's `finish`: i64 finish(ctx, block, end)
_FINISH = ll.FunctionType(I64, [PTR, I64, I64])


def build_claiming(llmod: ll.Module, inner: ll.Function, at: int, name: str,
                   finish: bool = False) -> None:
    """i64 name(<inner's arguments before `at`>, counter*, total, chunk, end*, <inner's
    arguments after first and count>): the workers of a launch share `counter`, the next
    block number to run; each claims `chunk` blocks at a time with an atomic add and runs
    them with inner(..., first, count, ...) until the grid (`total` blocks) is done or the
    launch is asked to stop (returns -1), or returns inner's first result other than -1
    after storing the end of the chunk it was running in *end (the caller handles that
    block and the rest of the chunk, then calls again). Claiming in native code keeps
    workers off Python's lock between chunks.

    With `finish`, one more parameter after end*: a function i64(ctx, block, end) (or null)
    that the worker calls itself for such a block: it finishes the block and the rest of the
    chunk (in Python) and returns -1 to go on claiming, or a failure to return. A block
    left for later could hang the grid: a block on another worker may spin on a flag it
    sets (cub's decoupled look-back), as a GPU's resident blocks all make progress.

    A negative `chunk`, -(divisor << 32 | least), claims decreasing chunks (OpenMP's guided
    schedule): max(least, blocks left / divisor) blocks, the blocks left as a plain read of
    the counter saw them (a claim that others overtook is a little larger, never wrong).
    The last chunks are small, so that a worker that runs slowly (its core busy with
    something else) does not hold a large one while the others have finished."""
    before, after = inner.args[:at], inner.args[at + 2:]
    words = 5 if finish else 4
    types = [a.type for a in before] + [PTR, I64, I64, PTR, _FINISH.as_pointer()][:words] \
        + [a.type for a in after]
    fn = ll.Function(llmod, ll.FunctionType(I64, types), name=name)
    args = list(fn.args)
    lead, own, trail = args[:at], args[at:at + words], args[at + words:]
    counter, total, chunk, end_out = own[:4]
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    loop, claim, run, done, stopped = (fn.append_basic_block(x) for x in (
        "loop", "claim", "run", "done", "stopped"))
    stop = b.load(b.gep(lead[0], [I64(CTX.fields["stop"])], source_etype=I8), typ=PTR)
    b.branch(loop)
    b.position_at_end(loop)
    branch_on_stop(b, stop, done, claim)
    b.position_at_end(claim)
    size = _claim_size(b, counter, total, chunk)
    first = b.atomic_rmw("add", counter, size, "monotonic")
    b.cbranch(b.icmp_unsigned(">=", first, total), done, run)
    b.position_at_end(run)
    end = b.add(first, size)
    end = b.select(b.icmp_unsigned("<", end, total), end, total)
    result = b.call(inner, [*lead, first, b.sub(end, first), *trail])
    b.cbranch(b.icmp_signed("==", result, I64(-1)), loop, stopped)
    b.position_at_end(done)
    b.ret(I64(-1))
    b.position_at_end(stopped)
    b.store(end, end_out)
    if finish:
        result = _call_finish(b, own[4], lead[0], result, end, loop)
    b.ret(result)


def _call_finish(b: ll.IRBuilder, finish, ctx, block, end, loop) -> ll.Value:
    """build_claiming: when `finish` is not null, call it for the block and branch to
    `loop` when it returns -1; its result otherwise (the block's number without one)."""
    fn = b.function
    call, out = fn.append_basic_block("finish"), fn.append_basic_block("out")
    here = b.block
    b.cbranch(b.icmp_unsigned("==", finish, ll.Constant(finish.type, None)), out, call)
    b.position_at_end(call)
    finished = b.call(finish, [ctx, block, end])
    b.cbranch(b.icmp_signed("==", finished, I64(-1)), loop, out)
    b.position_at_end(out)
    result = b.phi(I64)
    result.add_incoming(block, here)
    result.add_incoming(finished, call)
    return result


def _claim_size(b: ll.IRBuilder, counter, total, chunk) -> ll.Value:
    """How many blocks the next claim takes (build_claiming: `chunk`, or a guided chunk)."""
    fn = b.function
    guided, claim = fn.append_basic_block("guided"), fn.append_basic_block("claim_size")
    fixed = b.block
    b.cbranch(b.icmp_signed("<", chunk, I64(0)), guided, claim)
    b.position_at_end(guided)
    code = b.sub(I64(0), chunk)
    least = b.and_(code, I64(0xFFFFFFFF))
    seen = b.load_atomic(counter, "monotonic", 8, typ=I64)
    left = b.select(b.icmp_unsigned("<", seen, total), b.sub(total, seen), I64(0))
    share = b.udiv(left, b.lshr(code, I64(32)))
    decreasing = b.select(b.icmp_unsigned(">", share, least), share, least)
    b.branch(claim)
    b.position_at_end(claim)
    size = b.phi(I64)
    size.add_incoming(chunk, fixed)
    size.add_incoming(decreasing, guided)
    return size
