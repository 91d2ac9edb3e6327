"""One lane's value of a vector the gang builder made, computed as scalars from the
instructions that made the vector (constants, splats, insertions, shuffles, integer
arithmetic and casts), where an extractelement of the vector would keep the whole vector
live: a range check needs lane 0's and lane 31's addresses only, and the address vector
(32 sign extensions, shifts and adds in 64 bits) is then left to the cold paths that use
it (saxpy's grid-stride loop computed both 64-bit halves of two address vectors a pass to
take two lanes of each)."""

from __future__ import annotations

from typing import NamedTuple

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
               widths: tuple = (64,), frozen: bool = False):
    """`vector` (of 64-bit lanes, or of any lane width of `widths`) made again where the
    builder is, from the same 32-bit lanes and scalars: a cold path's copy of an address
    vector, so that the hot path, which took its range from lane()'s scalars, does not
    compute it (LLVM keeps one computation used on two cold paths where they part, in the
    hot code). strided.py passes (32, 64): a tree level's 32-bit shared addresses
    (`offset * (2t + 1) - 1`, a multiply of each half) were made on the hot path, which
    takes lanes 0 and 1 alone, for the four accesses' cold paths. With 32 among `widths` a
    cast's operand is made again too, its splats' scalars frozen (`frozen`), else the copy
    would be the hot vector's twin, which LLVM merges: NVRTC 13.0's `temp + 4 * sext(ai)`
    (blelloch18: a tree level's 32-bit index vectors left the hot path)."""
    if not (isinstance(vector, ll.Instruction) and isinstance(vector.type, ll.VectorType)
            and isinstance(vector.type.element, ll.IntType)
            and vector.type.element.width in widths):
        return vector
    if depth == 0:      # (32-bit leaves frozen, as the casts: a copy, not the hot value)
        return freeze(b, vector) if 32 in widths else vector
    op, args = vector.opname, vector.operands

    def again(v):
        return recomputed(b, v, written, depth - 1, widths, frozen)
    if op == "load" and isinstance(args[0], ll.AllocaInstr):
        stored = _slot_value(vector, written)
        if stored is None:
            return freeze(b, vector) if 32 in widths else vector
        return again(stored)
    if op in _BINARY:
        return getattr(ll.IRBuilder, _BINARY[op])(b, again(args[0]), again(args[1]))
    if op in _CASTS:        # (frozen: LLVM would take the hot code's cast for this copy)
        inner = recomputed(b, args[0], written, depth - 1, widths, True) \
            if 32 in widths else args[0]
        return getattr(ll.IRBuilder, op)(
            b, freeze(b, inner) if inner is args[0] else inner, vector.type)
    if op == "insertelement":
        return ll.IRBuilder.insert_element(
            b, again(args[0]), freeze(b, args[1]) if frozen else args[1], args[2])
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
    scalar = _splat_scalar(vector)
    if scalar is not None:      # (kept a splat: narrow_scaled finds its scalar)
        one = ll.IRBuilder.insert_element(b, ll.Constant(narrow, None),
                                          ll.IRBuilder.trunc(b, scalar, I32), I32(0))
        return ll.IRBuilder.shuffle_vector(b, one, ll.Constant(narrow, None),
                                           ll.Constant(narrow, [0] * narrow.count))
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


class NarrowScaled(NamedTuple):
    """Lanes that hold base + (n << shift): `base` a scalar alike in every lane, `n` a vector
    of 8- or 16-bit lanes zero-extended (a loaded byte scaled into a word offset), n << shift
    below 2^(width - 1)."""

    base: ll.Value
    narrow: ll.Value
    shift: int


def narrow_scaled(vector, written=None) -> NarrowScaled | None:
    """`vector`'s integer lanes as NarrowScaled, where the instructions that made it are an
    add of a splat and a shift (or multiply by a power of two) by a constant of zero
    extensions of 8- or 16-bit lanes (each exact: the same value modulo the lanes' width);
    else None. An atomic's lanes then keep the narrow lanes, a quarter of the stores."""
    added = _followed(vector, written)
    if not isinstance(added, ll.Instruction) or added.opname != "add":
        return None
    for splat, scaled in (added.operands, reversed(added.operands)):
        base = _splat_scalar(_followed(splat, written))
        if base is None:
            continue
        scaled = _followed(scaled, written)
        if not isinstance(scaled, ll.Instruction) or scaled.opname not in ("shl", "mul"):
            continue
        k = _constant(_splat_scalar(_followed(scaled.operands[1], written)))
        width = vector.type.element.width
        if k is None or (scaled.opname == "mul" and (k <= 0 or k & (k - 1))):
            continue
        shift = k if scaled.opname == "shl" else k.bit_length() - 1
        narrow, extended = _followed(scaled.operands[0], written), False
        while isinstance(narrow, ll.CastInstr) and narrow.opname == "zext":
            narrow, extended = _followed(narrow.operands[0], written), True
        if extended and isinstance(narrow.type, ll.VectorType) \
                and narrow.type.element.width <= 16 and narrow.type.element.width + shift < width:
            return NarrowScaled(base, narrow, shift)
    return None


def scaled_extension(vector, written=None) -> tuple | None:
    """(v, K) where `vector`'s 64-bit lanes hold U + K * sext(v[i]): U a sum of splats, K a
    constant (a multiply, or a shift by a constant below 32), v a vector of 32-bit lanes
    (NVRTC 13.0's `mul.wide.s32 %rd, %r, 4; add.s64 %rd, temp, %rd`); else None."""
    scaled = _unsplatted(vector, written)
    if not isinstance(scaled, ll.Instruction) or scaled.opname not in ("shl", "mul"):
        return None
    pairs = [scaled.operands] if scaled.opname == "shl" else [
        scaled.operands, tuple(reversed(scaled.operands))]
    for extended, factor in pairs:
        k = _signed_constant(_splat_scalar(_followed(factor, written)))
        extended = _followed(extended, written)
        if not k or not (isinstance(extended, ll.CastInstr) and extended.opname == "sext"
                         and extended.operands[0].type.element.width == 32):
            continue
        if scaled.opname == "shl":
            if not 0 < k < 32:
                continue
            k = 1 << k
        return extended.operands[0], k
    return None


def lane_step(b: ll.IRBuilder, vector, written=None):
    """Lane 1's value less lane 0's of `vector` (its element type, modulo its width), the
    adds of a splat it was made with left out (they add the same to both lanes): `v` and
    `v + c` get the same instructions, which LLVM computes once (a tree level's `temp[ai]`
    and `temp[ai + offset]`)."""
    value = _unsplatted(vector, written)
    return b.sub(lane(b, value, 1, written), lane(b, value, 0, written))


def _unsplatted(vector, written):
    """`vector` (followed through register slots) without the splats added to it."""
    value = _followed(vector, written)
    while isinstance(value, ll.Instruction) and value.opname == "add":
        first, second = (_followed(v, written) for v in value.operands)
        if _splat_scalar(second) is not None:
            value = first
        elif _splat_scalar(first) is not None:
            value = second
        else:
            break
    return value


def _signed_constant(value) -> int | None:
    """The signed integer a scalar constant holds (through sign extensions too), else None."""
    if isinstance(value, ll.CastInstr) and value.opname == "sext":
        return _signed_constant(value.operands[0])
    bits = _constant(value)
    if bits is None:
        return None
    width = value.type.width
    return bits - (1 << width) if bits >> (width - 1) else bits


def _followed(value, written, depth: int = _DEPTH):
    """`value`, or where it loads a register's slot the value stored there (_slot_value),
    followed through such loads."""
    while depth and isinstance(value, ll.Instruction) and value.opname == "load" \
            and isinstance(value.operands[0], ll.AllocaInstr):
        stored = _slot_value(value, written)
        if stored is None:
            break
        value, depth = stored, depth - 1
    return value


def _splat_scalar(value):
    """The scalar a splat holds in every lane (the gang builder's insertelement at 0 and
    shuffle by a zero mask, or a constant vector of one value), else None."""
    if isinstance(value, ll.Constant) and isinstance(value.type, ll.VectorType):
        items = value.constant if isinstance(value.constant, (list, tuple)) else None
        if items and all(isinstance(i, ll.Constant) and i.constant == items[0].constant
                         for i in items):
            return items[0]
        return None
    if not (isinstance(value, ll.Instruction) and value.opname == "shufflevector"):
        return None
    first, _, mask = value.operands
    if not (isinstance(mask.constant, (list, tuple))
            and all(getattr(m, "constant", m) == 0 for m in mask.constant)):
        return None
    if isinstance(first, ll.Instruction) and first.opname == "insertelement" \
            and _constant(first.operands[2]) == 0:
        return first.operands[1]
    return None


def _constant(value) -> int | None:
    """The integer a scalar constant (or casts of one) holds, else None."""
    if isinstance(value, ll.Constant) and isinstance(value.type, ll.IntType) \
            and isinstance(value.constant, int):
        return value.constant & ((1 << value.type.width) - 1)
    if isinstance(value, ll.CastInstr) and value.opname in ("zext", "trunc") \
            and isinstance(value.type, ll.IntType):
        inner = _constant(value.operands[0])
        return None if inner is None else inner & ((1 << value.type.width) - 1)
    return None


def _below(value, limit: int) -> bool:
    """Whether `value` is a constant (a vector's lanes, each) below `limit`."""
    if not isinstance(value, ll.Constant):
        return False
    items = value.constant if isinstance(value.constant, (list, tuple)) else [value.constant]
    return all(isinstance(getattr(i, "constant", i), int) and 0 <= getattr(i, "constant", i)
               < limit for i in items)
