"""One lane's value of a vector the gang builder made, computed as scalars from the
instructions that made the vector (constants, splats, insertions, shuffles, integer
arithmetic and casts), where an extractelement of the vector would keep the whole vector
live: a range check needs lane 0's and lane 31's addresses only, and the address vector
(32 sign extensions, shifts and adds in 64 bits) is then left to the cold paths that use
it (saxpy's grid-stride loop computed both 64-bit halves of two address vectors a pass to
take two lanes of each)."""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import I32

# LLVM's opcode -> llvmlite's IRBuilder method
_BINARY = {"add": "add", "sub": "sub", "mul": "mul", "shl": "shl", "and": "and_", "or": "or_",
           "xor": "xor", "lshr": "lshr", "ashr": "ashr"}
_CASTS = {"sext", "zext", "trunc"}
_DEPTH = 8      # how many instructions deep to look before extracting instead


def lane(b: ll.IRBuilder, vector, k: int, written=None, depth: int = _DEPTH):
    """Lane `k` (a Python int) of `vector`, as a scalar of its element type; `written`:
    the value a register's slot holds (GangLowering.written), for loads of a slot that
    the load's block did not store."""
    element = vector.type.element
    if isinstance(vector, ll.Constant):
        value = vector.constant
        item = value[k] if isinstance(value, (list, tuple)) else value
        return item if isinstance(item, ll.Constant) else ll.Constant(element, item)
    if depth > 0 and isinstance(vector, ll.Instruction):
        op, args = vector.opname, vector.operands
        stored = _slot_value(vector, written)
        if stored is not None:
            return lane(b, stored, k, written, depth - 1)
        if op in _BINARY:
            return getattr(ll.IRBuilder, _BINARY[op])(b, lane(b, args[0], k, written, depth - 1),
                                                      lane(b, args[1], k, written, depth - 1))
        if op in _CASTS and isinstance(args[0].type, ll.VectorType):
            return getattr(ll.IRBuilder, op)(b, lane(b, args[0], k, written, depth - 1), element)
        if op == "insertelement" and isinstance(args[2], ll.Constant):
            if args[2].constant == k:
                return args[1]
            return lane(b, args[0], k, written, depth - 1)
        if op == "shufflevector" and isinstance(args[2].constant, (list, tuple)):
            index = args[2].constant[k]
            index = index.constant if isinstance(index, ll.Constant) else index
            count = args[0].type.count
            if isinstance(index, int):
                return lane(b, args[0] if index < count else args[1], index % count,
                            written, depth - 1)
    return ll.IRBuilder.extract_element(b, vector, I32(k))


def _slot_value(load, written):
    """The value `load` reads where it loads a register's slot (an alloca): the block's own
    last store before it (_stored), else the segment's record of the slot (`written`), of
    the load's type; None otherwise."""
    if load.opname != "load" or not isinstance(load.operands[0], ll.AllocaInstr):
        return None
    stored = _stored(load)
    if stored is None and written is not None:
        stored = written(load.operands[0], load)
    return stored if stored is not None and stored.type == load.type else None


def _stored(load):
    """The value the last store before `load` in its block put in its register's slot (an
    alloca, which only stores to it change: the builder keeps registers there until
    LLVM's mem2reg), or None where the block does not store it before the load."""
    slot, block = load.operands[0], load.parent
    instructions = block.instructions
    for inst in reversed(instructions[:instructions.index(load)]):
        if isinstance(inst, ll.StoreInstr) and inst.operands[1] is slot:
            value = inst.operands[0]
            return value if value.type == load.type else None
    return None


def recomputed(b: ll.IRBuilder, vector, written=None, depth: int = _DEPTH,
               widths: tuple = (64,)):
    """`vector` (of 64-bit lanes, or of any lane width of `widths`) made again where the
    builder is, from the same 32-bit lanes and scalars: a cold path's copy of an address
    vector, so that the hot path, which took its range from lane()'s scalars, does not
    compute it (LLVM keeps one computation used on two cold paths where they part, in the
    hot code). strided.py passes (32, 64): a tree level's 32-bit shared addresses
    (`offset * (2t + 1) - 1`, a multiply of each half) were made on the hot path, which
    takes lanes 0 and 1 alone, for the four accesses' cold paths."""
    if not (isinstance(vector, ll.Instruction) and isinstance(vector.type, ll.VectorType)
            and isinstance(vector.type.element, ll.IntType)
            and vector.type.element.width in widths):
        return vector
    if depth == 0:      # (32-bit leaves frozen, as the casts: a copy, not the hot value)
        return freeze(b, vector) if 32 in widths else vector
    op, args = vector.opname, vector.operands

    def again(v):
        return recomputed(b, v, written, depth - 1, widths)
    if op == "load" and isinstance(args[0], ll.AllocaInstr):
        stored = _slot_value(vector, written)
        if stored is None:
            return freeze(b, vector) if 32 in widths else vector
        return again(stored)
    if op in _BINARY:
        return getattr(ll.IRBuilder, _BINARY[op])(b, again(args[0]), again(args[1]))
    if op in _CASTS:        # (frozen: LLVM would take the hot code's cast for this copy)
        return getattr(ll.IRBuilder, op)(b, freeze(b, args[0]), vector.type)
    if op == "insertelement":
        return ll.IRBuilder.insert_element(b, again(args[0]), args[1], args[2])
    if op == "shufflevector":
        return ll.IRBuilder.shuffle_vector(b, again(args[0]), again(args[1]), args[2])
    return freeze(b, vector) if 32 in widths else vector


def freeze(b: ll.IRBuilder, value):
    """LLVM's `freeze` of `value` (llvmlite's builder has none): the same value, which LLVM
    does not take for the value it froze, so a copy computed from it stays a copy."""
    instr = ll.Instruction(b.block, value.type, "freeze", [value])
    b._insert(instr)
    return instr


_RING = ("add", "sub", "mul", "and", "or", "xor")     # (the same modulo 2^32 in 32 bits)


def narrowed(b: ll.IRBuilder, vector, written=None, depth: int = _DEPTH):
    """`vector`'s 64-bit lanes truncated to 32 bits, computed in 32 bits from the
    instructions that made it (adds, multiplies, shifts by constants below 32, bitwise
    operations, extensions of 32-bit or narrower lanes: each the same modulo 2^32): LLVM
    keeps a vector's truncation after its 64-bit sum (13.0's widened shared offsets, an
    atomic's `bins[data[i]]`, were computed in four 64-bit vectors and then narrowed)."""
    narrow = ll.VectorType(I32, vector.type.count)
    if depth > 0 and isinstance(vector, ll.Instruction):
        op, args = vector.opname, vector.operands

        def again(v):
            return narrowed(b, v, written, depth - 1)
        if op == "load" and isinstance(args[0], ll.AllocaInstr):
            stored = _slot_value(vector, written)
            if stored is not None:
                return again(stored)
        elif op in _RING or (op == "shl" and _below(args[1], 32)):
            return getattr(ll.IRBuilder, _BINARY[op])(b, again(args[0]), again(args[1]))
        elif op in ("zext", "sext") and isinstance(args[0].type, ll.VectorType) \
                and args[0].type.element.width <= 32:
            if args[0].type.element.width == 32:
                return args[0]
            return getattr(ll.IRBuilder, op)(b, args[0], narrow)
    return ll.IRBuilder.trunc(b, vector, narrow)


def _below(value, limit: int) -> bool:
    """Whether `value` is a constant (a vector's lanes, each) below `limit`."""
    if not isinstance(value, ll.Constant):
        return False
    items = value.constant if isinstance(value.constant, (list, tuple)) else [value.constant]
    return all(isinstance(getattr(i, "constant", i), int) and 0 <= getattr(i, "constant", i)
               < limit for i in items)
