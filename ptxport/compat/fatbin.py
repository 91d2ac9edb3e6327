"""Fat binaries read in memory: the PTX that nvcc put in a program, for ptxport to compile.

A host program holds, per translation unit, a wrapper (__fatBinC_Wrapper_t: magic
0x466243B1, version, pointer to the fat binary) around a fat binary: a header (magic
0xBA55ED50, version 1, header size, size of what follows) and entries, each with its own
header (kind 1 = PTX, 2 = ELF/SASS; header size; payload size; compressed size; the sm
version; flags, of which 0x2000 = LZ4 and 0x8000 = zstd compression; the uncompressed
size). nvcc 13 compresses PTX with zstd by default. A binary section may hold several fat
binaries one after another; a wrapper names one (version 1) or a NULL-terminated array of
them (version 2). Layout facts from reading ZLUDA's
dark_api/fatbin.rs and cuda_types/dark_api.rs; checked on nvcc 13.5's output.
"""

from __future__ import annotations

import ctypes
import struct
from dataclasses import dataclass

from ptxport.errors import InvalidValueError

__all__ = ["FatbinEntry", "best_ptx", "read_entries", "read_image"]

WRAPPER_MAGIC = 0x466243B1
FATBIN_MAGIC = 0xBA55ED50
_KIND_PTX, _KIND_ELF = 1, 2
_LZ4, _ZSTD = 0x2000, 0x8000
_ENTRY_HEADER = struct.Struct("<HHIIIIIIIIIQQQ")  # 64 bytes, see the module docstring


@dataclass(frozen=True)
class FatbinEntry:
    kind: str          # "ptx", "elf" or "other"
    sm: int            # e.g. 80 for sm_80
    payload: bytes     # decompressed


def _read(address: int, size: int) -> bytes:
    return ctypes.string_at(address, size)


def read_image(address: int) -> list[list[FatbinEntry]] | str:
    """What a module image at `address` holds: the entries of each fat binary in it (given
    a wrapper, whose version 2 lists several, or a fat binary header) or, for anything else,
    the PTX text (a NUL-terminated string)."""
    magic = struct.unpack("<I", _read(address, 4))[0]
    if magic == WRAPPER_MAGIC:
        _, version, data, fatbins = struct.unpack("<IIQQ", _read(address, 24))
        if version != 2:
            return [read_entries(data)]
        parts = []  # version 2: a NULL-terminated array of fat binary headers
        while pointer := struct.unpack("<Q", _read(fatbins + 8 * len(parts), 8))[0]:
            parts.append(read_entries(pointer))
        return parts
    if magic == FATBIN_MAGIC:
        return [read_entries(address)]
    return ctypes.string_at(address).decode("utf-8", "replace")


def read_entries(address: int) -> list[FatbinEntry]:
    """The entries of the fat binary whose header is at `address`."""
    magic, version, header_size, size = struct.unpack("<IHHQ", _read(address, 16))
    if magic != FATBIN_MAGIC or version != 1:
        raise InvalidValueError(
            f"no fat binary at {address:#x} (magic {magic:#x}, version {version}); the "
            "program's device code is in a format ptxport does not know")
    data = _read(address + header_size, size)
    entries, offset = [], 0
    while offset + _ENTRY_HEADER.size <= len(data):
        (kind, _version, head, payload_size, _u0, compressed_size, _u1, _u2, sm, _bits, _u3,
         flags, _u5, uncompressed) = _ENTRY_HEADER.unpack_from(data, offset)
        stored = compressed_size if flags & (_LZ4 | _ZSTD) else payload_size
        raw = data[offset + head: offset + head + stored]
        entries.append(FatbinEntry(
            {_KIND_PTX: "ptx", _KIND_ELF: "elf"}.get(kind, "other"), sm,
            _decompress(raw, flags, uncompressed)))
        offset += head + max(payload_size, compressed_size)
    return entries


def _decompress(raw: bytes, flags: int, size: int) -> bytes:
    if flags & _ZSTD:
        try:
            import zstandard
        except ModuleNotFoundError:
            raise InvalidValueError(
                "this program's PTX is zstd-compressed (nvcc 13's default) and the "
                "zstandard module is missing: pip install 'ptxport[compat]'") from None
        return zstandard.ZstdDecompressor().decompress(raw, max_output_size=max(size, 1))
    if flags & _LZ4:
        raise InvalidValueError(
            "this program's PTX is LZ4-compressed (nvcc before 13), which ptxport cannot "
            "read yet: rebuild it with nvcc 13, or with -Xfatbin -compress=false")
    return raw


def best_ptx(entries: list[FatbinEntry], sm: int) -> str:
    """The PTX for the highest architecture at most `sm` (else the lowest there is), as text.

    Raises InvalidValueError, saying how to rebuild, when the binary has no PTX."""
    ptx = sorted((e for e in entries if e.kind == "ptx"), key=lambda e: e.sm)
    if not ptx:
        archs = ", ".join(f"sm_{e.sm}" for e in entries if e.kind == "elf") or "none"
        raise InvalidValueError(
            f"this program carries machine code only ({archs}) and no PTX, which is what "
            "ptxport runs: rebuild it with nvcc -arch=sm_XX (which keeps PTX) or add "
            "-gencode arch=compute_XX,code=compute_XX")
    fitting = [e for e in ptx if e.sm <= sm] or ptx[:1]
    return fitting[-1].payload.rstrip(b"\0").decode("utf-8", "replace")
