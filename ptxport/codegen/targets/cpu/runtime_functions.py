"""What the machine code of CPU kernels may call besides itself, made sure to be there.

LLVM lowers some operations on the host to calls of compiler-runtime functions: conversions
to bfloat16 (`__truncsfbf2`, `__truncdfbf2`) and from double to half (`__truncdfhf2`) on
x86-64, and half conversions on CPUs without F16C. The process may not provide them (GCC's
runtime has the bfloat16 ones only since GCC 13), and a call to a missing function would
crash the process. So:
  - `add_conversions` defines them in every kernel module, exactly rounded (to nearest even)
    through round-to-odd, with weak linkage (the process's own, if any, may win: they agree);
  - `undefined_symbols` lists what an object file still needs, so that compiling fails with a
    clear error, never a crash at run time, when the process lacks one of them.
"""

from __future__ import annotations

import struct

from llvmlite import ir as ll

from ptxport.codegen.lower import BF16, I16, I32

__all__ = ["add_conversions", "near_references", "undefined_symbols"]

F32, F64, F16 = ll.FloatType(), ll.DoubleType(), ll.HalfType()


def _define(llmod: ll.Module, name: str, ret, arg):
    if name in llmod.globals:
        return None
    fn = ll.Function(llmod, ll.FunctionType(ret, [arg]), name)
    fn.linkage = "weak"
    return fn, ll.IRBuilder(fn.append_basic_block("entry"))


def _round_to_odd_f32(b: ll.IRBuilder, d: ll.Value) -> ll.Value:
    """double -> float rounded to odd (truncate, then set the last bit if inexact): rounding
    that float once more to a format of at most 22 significant bits gives the correctly
    rounded result (no double rounding)."""
    f = b.fptrunc(d, F32)
    bits = b.bitcast(f, I32)
    back = b.fpext(f, F64)
    magnitude_up = b.fcmp_ordered(">", b.call(_fabs(b.module), [back]),
                                  b.call(_fabs(b.module), [d]))
    toward_zero = b.select(magnitude_up, b.sub(bits, I32(1)), bits)
    inexact = b.fcmp_unordered("!=", b.fpext(b.bitcast(toward_zero, F32), F64), d)
    is_nan = b.fcmp_unordered("uno", d, d)
    odd = b.select(inexact, b.or_(toward_zero, I32(1)), toward_zero)
    return b.select(is_nan, f, b.bitcast(odd, F32))


def _fabs(llmod: ll.Module) -> ll.Function:
    name = "llvm.fabs.f64"
    if name in llmod.globals:
        return llmod.globals[name]
    return ll.Function(llmod, ll.FunctionType(F64, [F64]), name)


def _f32_to_bf16_bits(b: ll.IRBuilder, f: ll.Value) -> ll.Value:
    """float -> bfloat16 bits, rounded to nearest even; NaN stays NaN (quieted)."""
    bits = b.bitcast(f, I32)
    lsb = b.and_(b.lshr(bits, I32(16)), I32(1))
    rounded = b.lshr(b.add(bits, b.add(I32(0x7FFF), lsb)), I32(16))
    quiet_nan = b.or_(b.lshr(bits, I32(16)), I32(0x40))
    is_nan = b.fcmp_unordered("uno", f, f)
    return b.trunc(b.select(is_nan, quiet_nan, rounded), I16)


def add_conversions(llmod: ll.Module) -> None:
    made = _define(llmod, "__truncsfbf2", BF16, F32)
    if made:
        fn, b = made
        b.ret(b.bitcast(_f32_to_bf16_bits(b, fn.args[0]), BF16))
    made = _define(llmod, "__truncdfbf2", BF16, F64)
    if made:
        fn, b = made
        b.ret(b.bitcast(_f32_to_bf16_bits(b, _round_to_odd_f32(b, fn.args[0])), BF16))
    made = _define(llmod, "__truncdfhf2", F16, F64)
    if made:
        fn, b = made
        b.ret(b.fptrunc(_round_to_odd_f32(b, fn.args[0]), F16))


def _sections(obj: bytes) -> list[tuple]:
    """An ELF64 little-endian object's section headers; [] for other formats."""
    if obj[:4] != b"\x7fELF" or obj[4] != 2 or obj[5] != 1:
        return []
    (shoff,) = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    return [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + i * shentsize)
            for i in range(shnum)]


# x86-64 relocations relative to the instruction pointer that name a symbol directly:
# R_X86_64_PC32, R_X86_64_PLT32 (RuntimeDyld makes a stub for the latter)
_NEAR_RELOCATIONS = (2, 4)


def near_references(obj: bytes) -> list[str]:
    """The undefined symbols an x86-64 ELF object reaches by 32-bit offsets from its code
    (a call through a PLT stub, a data address assumed within 2 GiB) rather than through
    its GOT; [] for other formats and machines."""
    sections = _sections(obj)
    if not sections or struct.unpack_from("<H", obj, 0x12)[0] != 62:     # EM_X86_64
        return []
    names = set()
    for _name, sh_type, _, _, offset, size, link, _, _, entsize in sections:
        if sh_type != 4:    # SHT_RELA
            continue
        symtab = sections[link]
        strtab = sections[symtab[6]]
        for at in range(offset, offset + size, entsize):
            (info,) = struct.unpack_from("<Q", obj, at + 8)
            if info & 0xFFFFFFFF not in _NEAR_RELOCATIONS:
                continue
            st_name, _, _, st_shndx = struct.unpack_from(
                "<IBBH", obj, symtab[4] + (info >> 32) * symtab[9])
            if st_shndx == 0 and st_name:
                start = strtab[4] + st_name
                names.add(obj[start:obj.index(b"\0", start)].decode())
    return sorted(names)


def undefined_symbols(obj: bytes) -> list[str]:
    """The names an ELF64 object file refers to but does not define (its undefined global
    symbols); [] for other formats, which are not checked."""
    sections = _sections(obj)
    names = []
    for _name, sh_type, _, _, offset, size, link, _, _, entsize in sections:
        if sh_type != 2:  # SHT_SYMTAB
            continue
        strtab = sections[link]
        str_off = strtab[4]
        for i in range(1, size // entsize):
            st_name, st_info, _, st_shndx = struct.unpack_from("<IBBH", obj,
                                                               offset + i * entsize)
            if st_shndx == 0 and st_name and (st_info >> 4) in (1, 2):  # GLOBAL or WEAK
                end = obj.index(b"\0", str_off + st_name)
                names.append(obj[str_off + st_name:end].decode())
    return names

