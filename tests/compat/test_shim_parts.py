"""The pieces of the compatibility layer that need no program: the entry-point table, the
integrity check's hash, fat binary parsing."""

from __future__ import annotations

import ctypes
import struct

import pytest

from ptxport.compat import dark_api, dispatch, fatbin, signatures
from ptxport.compat.build import entry_points_source
from ptxport.errors import InvalidValueError, PtxportError


def test_every_entry_point_has_a_handler():
    for sig in signatures.ENTRY_POINTS:
        assert callable(dispatch.find_handler(sig.name, dispatch._MODULES,
                                              signatures.PER_THREAD_SUFFIXES)), sig.name


def test_prototypes_parse_with_c_types():
    sig = signatures.parse("CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, "
                           "size_t N)")
    assert [(p.name, p.c_type, p.is_signed) for p in sig.params] == [
        ("dstDevice", "unsigned long long", False), ("uc", "unsigned char", False),
        ("N", "size_t", False)]
    assert signatures.parse("CUresult cuCtxSynchronize(void)").params == ()
    with pytest.raises(PtxportError, match="unknown C type"):
        signatures.parse("CUresult cuFoo(CUnothing x)")


def test_generated_entry_points_extend_narrow_and_signed_arguments():
    source = entry_points_source()
    assert "EXPORT int cuDeviceGet(void * a0, int a1)" in source
    # the ordinal is signed (bit 1 of the mask), the pointer is not
    assert "(uint64_t)(uintptr_t)a0, (uint64_t)(int64_t)a1}" in source
    assert "ptxport_call(" in source and "0x2u" in source


@pytest.mark.parametrize("message, digest", [
    (b"", "8350e5a3e24c153df2275c9f80692773"),                     # RFC 1319's test suite
    (b"abc", "da853b0d3f88d99b30283a69e6ded6bb"),
    (b"message digest", "ab4f496bfb2a530b219ff33031fe06b0"),
    (b"12345678901234567890123456789012345678901234567890123456789012345678901234567890",
     "d5976f79d83d3a0dc9806c3c66f3efd8"),
])
def test_md2_matches_rfc_1319(message, digest):
    assert dark_api.md2(message).hex() == digest


def test_integrity_check_fixed_answers_and_inputs():
    fixed = dark_api.integrity_check(13050, 0, 13050, 0, 0, 0, 0, [])
    assert struct.unpack("<QQ", fixed) == (0x3341181C03CB675C, 0x8ED383AA1F4CD1E8)
    device = dark_api.DeviceIdentity(bytes(16), 0, 2, 0)
    args = (13052, 1700000000, 13050, 7, 0x1000, 0x2000, 0x3000, [device])
    answer = dark_api.integrity_check(*args, process=42)
    assert len(answer) == 16
    assert answer == dark_api.integrity_check(*args, process=42)
    assert answer != dark_api.integrity_check(*args, process=43)   # the process is hashed


def _entry(kind: int, sm: int, payload: bytes, flags: int = 0x11, stored: bytes | None = None,
           ) -> bytes:
    stored = payload if stored is None else stored
    compressed = len(stored) if stored is not payload else 0
    header = struct.pack("<HHIIIIIIIIIQQQ", kind, 0x101, 64, len(payload) if not compressed
                         else len(stored), 0, compressed, 0, 0, sm, 64, 0, flags, 0,
                         len(payload))
    return header + stored


def _fatbin(*entries: bytes) -> ctypes.Array:
    body = b"".join(entries)
    return ctypes.create_string_buffer(struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(body)) + body)


def test_fatbin_picks_the_best_ptx_and_decompresses_zstd():
    zstandard = pytest.importorskip("zstandard")
    ptx70, ptx90 = b"// ptx for 70\0", b"// ptx for 90\0\0"
    packed = zstandard.ZstdCompressor().compress(ptx90)
    image = _fatbin(_entry(2, 80, b"ELF..."), _entry(1, 70, ptx70),
                    _entry(1, 90, ptx90, flags=0x8011, stored=packed))
    [entries] = fatbin.read_image(ctypes.addressof(image))
    assert [(e.kind, e.sm) for e in entries] == [("elf", 80), ("ptx", 70), ("ptx", 90)]
    assert fatbin.best_ptx(entries, 90) == "// ptx for 90"
    assert fatbin.best_ptx(entries, 80) == "// ptx for 70"


def test_fatbin_without_ptx_says_how_to_rebuild():
    image = _fatbin(_entry(2, 80, b"ELF..."))
    [entries] = fatbin.read_image(ctypes.addressof(image))
    with pytest.raises(InvalidValueError, match=r"machine code only \(sm_80\).*-arch=sm_XX"):
        fatbin.best_ptx(entries, 90)


def test_image_that_is_ptx_text():
    text = ctypes.create_string_buffer(b".version 8.0\n.target sm_80\n")
    assert fatbin.read_image(ctypes.addressof(text)).startswith(".version 8.0")
