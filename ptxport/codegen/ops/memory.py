"""The memory-side instructions besides ld/st/atom: isspacep (PTX ISA 9.7.9.19), cp.async and
its groups (9.7.9.25), createpolicy (9.7.9.18), mapa and getctarank (9.7.9.23-24), the stack
instructions alloca, stacksave, stackrestore (9.7.17), and nanosleep (9.7.19.4).

Generic addresses are the target's: a generic address lies in a state space's window when
`space_base(space) <= address < space_base(space) + size`. One CTA forms each cluster here
(the targets run no clusters of several CTAs), so mapa and getctarank are the identity and 0.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import (
    I1,
    I8,
    I32,
    I64,
    PTR,
    FunctionLowering,
    const_int,
    declare,
    lowering,
)
from ptxport.ir import nodes as ir
from ptxport.ir.abi import param_layout
from ptxport.ir.types import TYPES

# Instructions where a thread may wait for others: on targets that run a thread until such a
# point and return, stack memory does not live across them.
WAITS = frozenset(("bar", "barrier", "shfl", "vote", "match", "redux", "activemask", "elect"))


def _within(fl: FunctionLowering, address, base, size) -> ll.Value:
    """base <= address < base + size (i64 values; size may be narrower)."""
    b = fl.b
    start = b.ptrtoint(base, I64) if isinstance(base.type, ll.PointerType) else base
    offset = b.sub(address, start)
    size = b.zext(size, I64) if size.type != I64 else size
    return b.icmp_unsigned("<", offset, size)


def shared_window(fl: FunctionLowering) -> tuple[ll.Value, ll.Value] | None:
    """The generic address where the CTA's shared memory starts, and its size in bytes
    (static and dynamic); None where shared addresses are already generic."""
    base = fl.target.space_base(fl, "shared")
    if base is None:
        return None
    total = ir.SpecialRegister("%total_smem_size", None, TYPES["u32"])
    return fl.b.ptrtoint(base, I64), fl.target.special_register(fl, total)


def in_shared(fl: FunctionLowering, address: ll.Value) -> ll.Value:
    """Whether the generic address (an i64) lies in this CTA's shared memory."""
    window = shared_window(fl)
    if window is None:
        raise fl.unsupported(fl.inst, "this target does not tell shared addresses apart")
    return _within(fl, address, *window)


# --- isspacep ------------------------------------------------------------------------------------

@lowering("isspacep")
def isspacep(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """isspacep.space p, a: whether generic address a lies in `space`. .global: outside the
    shared, local and const windows (global memory is the rest of the address space); a
    kernel parameter's generic address counts as both .param and .global, as on the H100."""
    space = inst.spec.get("space")
    address = fl.read(inst.operands[1], "u64")
    space = {"shared::cta": "shared", "shared::cluster": "shared", "param::entry": "param"}.get(
        space, space)
    if space == "global":
        inside = I1(0)
        for other in ("shared", "local", "const"):
            inside = fl.b.or_(inside, _in_space(fl, other, address))
        result = fl.b.not_(inside)
    else:
        result = _in_space(fl, space, address)
    fl.write(inst.operands[0], result, "pred")


def _in_space(fl: FunctionLowering, space: str, address: ll.Value) -> ll.Value:
    b = fl.b
    if space == "shared":
        return in_shared(fl, address)
    if space == "param":
        base = fl.target.space_base(fl, "param")
        if base is None or not fl.function.is_kernel:
            return I1(0)
        _, size = param_layout(fl.function)
        return _within(fl, address, base, const_int(I64, size))
    if space == "local":
        base = fl.target.space_base(fl, "local")
        size = _local_size(fl.function)
        if base is None or size == 0:
            return I1(0)
        return _within(fl, address, base, const_int(I64, size))
    if space == "const":
        inside = I1(0)
        for var in fl.module.globals.values():
            if var.space == "const" and var.size:
                pointer = fl.target.variable_pointer(fl, var)
                inside = b.or_(inside, _within(fl, address, pointer, const_int(I64, var.size)))
        return inside
    raise fl.unsupported(fl.inst, f"isspacep.{space}")


def _local_size(function: ir.Function) -> int:
    """The bytes the function's .local variables take, laid out in order, each aligned."""
    size = 0
    for var in function.variables.values():
        if var.space == "local":
            alignment = max(var.alignment, 1)
            size = (size + alignment - 1) // alignment * alignment + var.size
    return size


# --- asynchronous copies -------------------------------------------------------------------------

@lowering("cp")
def cp(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """cp.async.{ca,cg}.shared{::cta}.global [dst], [src], cp-size{, src-size | ignore-src}
    {, cache-policy}: done at once (a copy that completes early is one the program may see),
    so commit_group, wait_group and wait_all have nothing left to wait for, and
    cp.async.mbarrier.arrive (without .noinc) leaves the mbarrier's count as it was."""
    kind = inst.spec.get("kind") or ()
    if kind == ("async",):
        _copy_async(fl, inst)
    elif kind in (("async", "commit_group"), ("async", "wait_group"), ("async", "wait_all")):
        return
    elif kind == ("async", "mbarrier", "arrive") and not inst.spec.get("noinc"):
        return
    else:
        raise fl.unsupported(inst, "bulk and tensor copies (cp.async.bulk, cp.reduce.async), "
                                   "and cp.async.mbarrier.arrive.noinc, are not implemented")


def _copy_async(fl: FunctionLowering, inst: ir.Instruction) -> None:
    b = fl.b
    spaces = inst.spec.get("space") or ("shared", "global")
    dst_space = "shared" if spaces[0].startswith("shared") else spaces[0]
    dst = fl.pointer(inst.operands[0], dst_space)
    src_space = spaces[1] if len(spaces) > 1 else "global"
    size = inst.operands[2].value
    extra = list(inst.operands[3:])
    if inst.spec.get("l2hint") and extra:
        extra.pop()                                    # the cache policy: a hint
    llmod = fl.llfn.module
    if not extra:
        src = fl.pointer(inst.operands[1], src_space)
        b.call(_memcpy(llmod, dst, src), [dst, src, const_int(I64, size), I1(0)])
        return
    operand = extra[0]
    if isinstance(operand, ir.NotValue) or getattr(operand, "type", None) is TYPES["pred"]:
        count = b.select(fl.read(operand, "pred"), const_int(I64, 0), const_int(I64, size))
    else:
        given = b.zext(fl.read(operand, "u32"), I64)
        count = b.select(b.icmp_unsigned("<", given, const_int(I64, size)), given,
                         const_int(I64, size))
    # A src-size of 0 (or ignore-src) reads nothing: the source is only an address then, and
    # may be one no allocation holds (Triton points masked-off lanes anywhere), so it is
    # neither checked nor touched. Every memcpy/memset has a constant length: a variable
    # one becomes a call to the C library, which compiled CPU kernels do not link against.
    with b.if_else(b.icmp_unsigned("==", count, const_int(I64, size))) as (full, partial):
        with full:
            src = fl.pointer(inst.operands[1], src_space)
            b.call(_memcpy(llmod, dst, src), [dst, src, const_int(I64, size), I1(0)])
        with partial:
            memset = declare(llmod, f"llvm.memset.{_overload(dst)}.i64", ll.VoidType(),
                             [dst.type, I8, I64, I1])
            b.call(memset, [dst, ll.Constant(I8, 0), const_int(I64, size), I1(0)])
            with b.if_then(b.icmp_unsigned("!=", count, const_int(I64, 0))):
                _copy_bytes(fl, dst, fl.pointer(inst.operands[1], src_space), count, size)


def _copy_bytes(fl: FunctionLowering, dst: ll.Value, src: ll.Value, count: ll.Value,
                size: int) -> None:
    """Copy the first `count` bytes of src to dst, one by one (0 < count < size <= 16)."""
    b = fl.b
    done = fl.llfn.append_basic_block("cp_async_copied")
    for i in range(size - 1):
        offset = const_int(I64, i)
        byte = b.load(b.gep(src, [offset], source_etype=I8), typ=I8)
        b.store(byte, b.gep(dst, [offset], source_etype=I8))
        if i == size - 2:
            b.branch(done)
        else:
            more = fl.llfn.append_basic_block("cp_async_byte")
            b.cbranch(b.icmp_unsigned("<", const_int(I64, i + 1), count), more, done)
            b.position_at_end(more)
    b.position_at_end(done)


def _memcpy(llmod: ll.Module, dst: ll.Value, src: ll.Value) -> ll.Function:
    """llvm.memcpy for these pointers: the intrinsic is overloaded on their address spaces
    (the destination is .shared's, the source .global's, wherever the target gives those
    their own)."""
    return declare(llmod, f"llvm.memcpy.{_overload(dst)}.{_overload(src)}.i64",
                   ll.VoidType(), [dst.type, src.type, I64, I1])


def _overload(pointer: ll.Value) -> str:
    """The name part of an intrinsic overloaded on `pointer`'s type: p<address space>."""
    return f"p{pointer.type.addrspace}"


# --- cache policies, clusters, sleeping ----------------------------------------------------------

@lowering("createpolicy")
def createpolicy(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """An opaque cache policy: only ever a hint to ld/st/atom, so any value will do."""
    fl.write(inst.operands[0], const_int(I64, 0), "b64")


@lowering("mapa")
def mapa(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """mapa{.shared::cluster}.type d, a, b: a's counterpart in CTA b of the cluster. With one
    CTA per cluster, b can only be this CTA (rank 0), and the address is a itself."""
    t = TYPES[inst.spec.types[0]]
    fl.write(inst.operands[0], fl.read(inst.operands[1], t), t)


@lowering("getctarank")
def getctarank(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """The rank in its cluster of the CTA that owns a shared::cluster address: 0 here."""
    fl.write(inst.operands[0], I32(0), "u32")


@lowering("nanosleep")
def nanosleep(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """nanosleep only promises a sleep of about *up to* t nanoseconds (0 included), so not
    sleeping is exact; a CPU thread that runs a whole CTA must not sleep for one of them."""


# --- the stack -----------------------------------------------------------------------------------

def _check_stack(fl: FunctionLowering, inst: ir.Instruction) -> None:
    t = inst.spec.types[0]
    if t != "u64":
        raise fl.unsupported(inst, "32-bit local addresses of stack memory (only .u64)")
    if any(i.opcode in WAITS for i in fl.function.instructions()):
        raise fl.unsupported(inst, "stack memory in a function that also waits for other "
                                   "threads (barriers, warp operations): it would not survive "
                                   "the wait")


def _local_address(fl: FunctionLowering, pointer: ll.Value) -> ll.Value:
    """A host pointer as a .local address (an offset from the local window)."""
    address = fl.b.ptrtoint(pointer, I64)
    base = fl.target.space_base(fl, "local")
    return address if base is None else fl.b.sub(address, fl.b.ptrtoint(base, I64))


def _host_pointer(fl: FunctionLowering, address: ll.Value) -> ll.Value:
    base = fl.target.space_base(fl, "local")
    if base is None:
        return fl.b.inttoptr(address, PTR)
    return fl.b.gep(base, [address], source_etype=I8)


@lowering("alloca")
def alloca(fl: FunctionLowering, inst: ir.Instruction) -> None:
    """alloca.type ptr, size{, immAlign}: `size` bytes of the function's stack; ptr is a
    .local address (alignment 8 unless given)."""
    _check_stack(fl, inst)
    size = fl.read(inst.operands[1], "u64")
    align = inst.operands[2].value if len(inst.operands) > 2 else 8
    memory = fl.target.stack_memory(fl, size, max(align, 1))
    fl.write(inst.operands[0], _local_address(fl, memory), "u64")


@lowering("stacksave")
def stacksave(fl: FunctionLowering, inst: ir.Instruction) -> None:
    _check_stack(fl, inst)
    fl.write(inst.operands[0], _local_address(fl, fl.target.stack_save(fl)), "u64")


@lowering("stackrestore")
def stackrestore(fl: FunctionLowering, inst: ir.Instruction) -> None:
    _check_stack(fl, inst)
    fl.target.stack_restore(fl, _host_pointer(fl, fl.read(inst.operands[0], "u64")))
