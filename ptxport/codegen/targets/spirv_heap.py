"""The device heap on the SPIR-V and AMDGPU targets: CUDA's device-side `malloc` and `free`
(and C++'s `new` and `delete`, which nvcc builds on them; calls of `.extern .func malloc` /
`free`).

CUDA's semantics (Programming Guide, "Dynamic Global Memory Allocation and Operations"): one
heap per device of cudaLimitMallocHeapSize bytes (8 MiB unless set before the first kernel
that uses it); malloc returns memory aligned to 16 bytes, or NULL when the heap cannot hold
the request; the memory lives until freed and is global memory (other threads, later kernels
and the host may use it).

The opencl backend allocates the heap (runtime/backends/opencl_blocks.py) on the first launch
of a kernel whose module calls malloc or free, and gives every launch its address in the
checks buffer (spirv_checks.CHECKS_HEAP). On the AMDGPU target (amdgpu.py) kernels read the
heap's address from the code object's global HEAP_SYMBOL (0 until the hip backend, which
allocates the heap the same way, stores it there after loading the module). The heap is
self-describing global memory, so that what a kernel allocates outlives it; its first HEADER
bytes hold, in 8-byte words: [0] the bump offset (where never-used memory starts, from the
heap's start), [1] the end of the heap (HEADER + the size), and [k], 5 <= k <= 31, the free
list of blocks of 2**k bytes.

Blocks have power-of-two sizes from 32 bytes: 16 bytes of header (a tag saying the block is
allocated, and k) and the caller's memory. malloc pops a block of its size class from the
free list, or else takes one from the bump offset; free pushes it back. Both are lock-free:
compare-and-swap loops on 64-bit words, the free lists' heads tagged with a count in their
high half against the ABA problem (offsets fit the low half: the heap is under 4 GiB).
Memory is reused only within a size class (it is never split or merged), so a heap can be
exhausted by sizes it once held many of; half a block may be unused. A free of NULL does
nothing; a free of an address malloc did not return, or freed already, frees nothing (CUDA
leaves it undefined).
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import I1, I64, FunctionLowering, declare
from ptxport.ir import nodes as ir

__all__ = ["DEFAULT_SIZE", "HEADER", "HEAP_SYMBOL", "MAX_SIZE", "initial_header",
           "define_functions", "lower_call", "uses_heap"]

DEFAULT_SIZE = 8 << 20          # cudaLimitMallocHeapSize's default
HEADER = 256                    # the heap's own words, before its first block
MAX_SIZE = (1 << 32) - HEADER   # offsets are 32-bit in the free lists' heads
HEAP_SYMBOL = "__ptxport_device_heap"   # AMDGPU: the global holding the heap's address
_BUMP, _END = 0, 1
_SMALLEST, _LARGEST = 5, 31     # block sizes 2**k
_BLOCK_HEADER = 16
_LIVE = 0x70747870              # "ptxp": an allocated block's tag
_MALLOC, _FREE = "ptxport.heap_malloc", "ptxport.heap_free"
_GLOBAL_PTR = ll.PointerType(addrspace=1)


def uses_heap(module: ir.Module) -> bool:
    """Whether the module calls the driver's malloc or free."""
    return any(f.is_declaration and f.name in ("malloc", "free")
               for f in module.functions.values()) and any(
        inst.opcode == "call" and any(isinstance(o, ir.Function) and o.is_declaration and
                                      o.name in ("malloc", "free") for o in inst.operands)
        for f in module.functions.values() for inst in f.instructions())


def initial_header(size: int) -> list[int]:
    """The words a fresh heap of `size` bytes starts with (the rest of the header is 0)."""
    return [HEADER, HEADER + size]


def define_functions(llmod: ll.Module, convention: str = "spir_func") -> None:
    """`i64 heap_malloc(i64 heap, i64 size)` and `void heap_free(i64 heap, i64 address)`,
    defined before the module's kernels (see spirv_checks.search_function), with the
    target's calling convention for device functions ("" for LLVM's default: AMDGPU)."""
    malloc = ll.Function(llmod, ll.FunctionType(I64, [I64, I64]), _MALLOC)
    free = ll.Function(llmod, ll.FunctionType(ll.VoidType(), [I64, I64]), _FREE)
    for fn in (malloc, free):
        fn.calling_convention, fn.linkage = convention, "internal"
        fn.attributes.add("noinline")
    _define_malloc(malloc)
    _define_free(free)


def lower_call(fl: FunctionLowering, inst: ir.Instruction, name: str, heap: ll.Value,
               returns: list, args: list, convention: str = "spir_func") -> None:
    """`call (ret), malloc, (size)` or `call free, (address)`, the heap at `heap` (an i64)."""
    b = fl.b
    target = fl.target
    convention = convention or None
    if name == "malloc":
        if len(returns) != 1 or len(args) != 1:
            raise fl.unsupported(inst, "malloc takes a size and returns a .b64 address")
        size = b.load(target.variable_pointer(fl, args[0]), typ=I64)
        address = b.call(fl.llfn.module.globals[_MALLOC], [heap, size], cconv=convention)
        b.store(address, target.variable_pointer(fl, returns[0]))
        return
    if returns or len(args) != 1:
        raise fl.unsupported(inst, "free takes one .b64 address and returns nothing")
    address = b.load(target.variable_pointer(fl, args[0]), typ=I64)
    b.call(fl.llfn.module.globals[_FREE], [heap, address], cconv=convention)


def _word(b: ll.IRBuilder, heap: ll.Value, offset: ll.Value) -> ll.Value:
    """A pointer to the 8-byte word at `offset` from the heap's start."""
    return b.inttoptr(b.add(heap, offset), _GLOBAL_PTR)


def _atomic_read(b: ll.IRBuilder, pointer: ll.Value) -> ll.Value:
    return b.atomic_rmw("or", pointer, I64(0), "seq_cst")


def _swapped(b: ll.IRBuilder, pointer: ll.Value, old: ll.Value, new: ll.Value) -> ll.Value:
    return b.extract_value(b.cmpxchg(pointer, old, new, "seq_cst", "seq_cst"), 1)


def _define_malloc(fn: ll.Function) -> None:
    heap, size = fn.args
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    nothing = fn.append_basic_block("nothing")
    ll.IRBuilder(nothing).ret(I64(0))
    need = b.add(b.select(b.icmp_unsigned("==", size, I64(0)), I64(1), size),
                 I64(_BLOCK_HEADER))
    fits = b.and_(b.icmp_unsigned("<=", size, I64(1 << _LARGEST)),
                  b.icmp_unsigned("<=", need, I64(1 << _LARGEST)))
    sized = fn.append_basic_block("sized")
    b.cbranch(b.and_(fits, b.icmp_unsigned("!=", heap, I64(0))), sized, nothing)
    b.position_at_end(sized)
    ctlz = declare(fn.module, "llvm.ctlz.i64", I64, [I64, I1])
    k = b.sub(I64(64), b.call(ctlz, [b.sub(need, I64(1)), I1(0)]))
    k = b.select(b.icmp_unsigned("<", k, I64(_SMALLEST)), I64(_SMALLEST), k)
    block_size = b.shl(I64(1), k)
    head = _word(b, heap, b.shl(k, I64(3)))
    pop, bump, found = (fn.append_basic_block(n) for n in ("pop", "bump", "found"))
    b.branch(pop)
    # pop: the free list of the class, where it has a block
    b.position_at_end(pop)
    top = _atomic_read(b, head)
    offset = b.and_(top, I64(0xFFFFFFFF))
    popping = fn.append_basic_block("popping")
    b.cbranch(b.icmp_unsigned("==", offset, I64(0)), bump, popping)
    b.position_at_end(popping)
    after = b.load(_word(b, heap, b.add(offset, I64(_BLOCK_HEADER))), typ=I64)
    tag = b.shl(b.add(b.lshr(top, I64(32)), I64(1)), I64(32))
    b.cbranch(_swapped(b, head, top, b.or_(tag, b.and_(after, I64(0xFFFFFFFF)))), found, pop)
    # bump: memory never used yet, where the heap has room
    b.position_at_end(bump)
    start = _atomic_read(b, _word(b, heap, I64(8 * _BUMP)))
    end = b.add(start, block_size)
    limit = b.load(_word(b, heap, I64(8 * _END)), typ=I64)
    claim = fn.append_basic_block("claim")
    b.cbranch(b.icmp_unsigned(">", end, limit), nothing, claim)
    b.position_at_end(claim)
    b.cbranch(_swapped(b, _word(b, heap, I64(8 * _BUMP)), start, end), found, bump)
    b.position_at_end(found)
    block = b.phi(I64)
    block.add_incoming(offset, popping)
    block.add_incoming(start, claim)
    b.store(b.or_(I64(_LIVE << 32), k), _word(b, heap, block))
    b.ret(b.add(heap, b.add(block, I64(_BLOCK_HEADER))))


def _define_free(fn: ll.Function) -> None:
    heap, address = fn.args
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    done = fn.append_basic_block("done")
    ll.IRBuilder(done).ret_void()
    offset = b.sub(b.sub(address, heap), I64(_BLOCK_HEADER))
    limit = b.load(_word(b, heap, I64(8 * _END)), typ=I64)
    inside = b.and_(b.and_(b.icmp_unsigned(">=", address, b.add(heap, I64(HEADER +
                                                                         _BLOCK_HEADER))),
                           b.icmp_unsigned("<", offset, limit)),
                    b.icmp_unsigned("==", b.and_(address, I64(15)), I64(0)))
    check = fn.append_basic_block("check")
    b.cbranch(b.and_(inside, b.icmp_unsigned("!=", heap, I64(0))), check, done)
    b.position_at_end(check)
    # the tag says the block is allocated; taking it away makes a second free do nothing
    tag = b.atomic_rmw("xchg", _word(b, heap, offset), I64(0), "seq_cst")
    push = fn.append_basic_block("push")
    b.cbranch(b.icmp_unsigned("==", b.lshr(tag, I64(32)), I64(_LIVE)), push, done)
    b.position_at_end(push)
    k = b.and_(tag, I64(0xFF))
    head = _word(b, heap, b.shl(k, I64(3)))
    loop = fn.append_basic_block("push_loop")
    b.branch(loop)
    b.position_at_end(loop)
    top = _atomic_read(b, head)
    b.store(b.and_(top, I64(0xFFFFFFFF)), _word(b, heap, b.add(offset, I64(_BLOCK_HEADER))))
    new = b.or_(b.shl(b.add(b.lshr(top, I64(32)), I64(1)), I64(32)), offset)
    b.cbranch(_swapped(b, head, top, new), done, loop)
