"""cudart's hidden export tables (cuGetExportTable), and their handlers.

Static cudart asks libcuda for tables of function pointers by GUID. The facts here come from
reading ZLUDA's dark_api crate (vosen/ZLUDA, dark_api/src/lib.rs and zluda/src/impl/
driver.rs): the GUIDs, each table's length, which slots hold functions, that slot 0 of most
tables holds the table's size in bytes, and the integrity check. The code is ours.

The integrity check: cudart passes a version and the time and verifies the 16 bytes it gets
back before its first allocation. They are HMAC-MD2 (RFC 1319, RFC 2104) under a fixed key
of the driver's version, the check's version, the process and thread ids, the addresses of
the CUDART_INTERFACE and INTEGRITY_CHECK tables and of the check function, the time, and
each device's UUID and PCI domain, bus and device numbers; versions ending in 0 or 1 get
fixed answers.
"""

from __future__ import annotations

import ctypes
import os
import struct
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["TABLES", "ExportTables", "hmac_md2", "integrity_check", "md2"]

# (GUID as cudart passes its 16 bytes, name, length, {slot: handler symbol or "SIZE_OF"})
TABLES: dict[bytes, tuple[str, int, dict[int, str]]] = {
    bytes.fromhex("6BD5FB6C5BF4E74A8987D93912FD9DF9"): ("CUDART_INTERFACE", 13, {
        0: "SIZE_OF", 1: "ptxport_cudart_get_module_from_cubin",
        2: "ptxport_cudart_primary_context", 6: "ptxport_cudart_get_module_from_cubin_ext1",
        7: "ptxport_cudart_fn7", 8: "ptxport_cudart_get_module_from_cubin_ext2",
        12: "ptxport_cudart_load_compilers"}),
    bytes.fromhex("42D85A8123F6CB478298F6E78A3AECDC"): ("TOOLS_TLS", 4, {0: "SIZE_OF"}),
    bytes.fromhex("A094798C2E742E7493F20800200C0A66"): ("TOOLS_RUNTIME_CALLBACK_HOOKS", 7, {
        0: "SIZE_OF", 2: "ptxport_tools_get_buffer1", 6: "ptxport_tools_get_buffer2"}),
    bytes.fromhex("C693336E1121DF11A8C368F355D89593"): ("CONTEXT_LOCAL_STORAGE", 4, {
        0: "ptxport_cls_put", 1: "ptxport_cls_delete", 2: "ptxport_cls_get"}),
    bytes.fromhex("0CA50B8C1004929A89A7D0DF10E77286"): ("CTX_CREATE_BYPASS", 2, {
        0: "SIZE_OF", 1: "unsupported"}),
    bytes.fromhex("195BCBF4D67D024AACC51D29CEA631AE"): ("HEAP_ACCESS", 3, {
        0: "SIZE_OF", 1: "unsupported", 2: "unsupported"}),
    bytes.fromhex("B10541E1F7C7C74A9F64F223BE99F1E2"): ("DEVICE_EXTENDED_RT", 26, {
        0: "SIZE_OF", 5: "unsupported", 13: "ptxport_device_extended_13"}),
    # Asked for by CUDA 13.4+ runtimes: a size and 94 functions, all present. What is known
    # of them (public notes of projects that served cudart 13.4): slot 4 answers whether its
    # first argument is non-zero.
    bytes.fromhex("21318C60971432488CA641FF7324C8F2"): ("TOOLS_CONTEXT", 95, {
        0: "SIZE_OF", **{i: "unsupported" for i in range(1, 95)}}),
    bytes.fromhex("D4082055BDE6704B8D34BA123C66E1F2"): ("INTEGRITY_CHECK", 3, {
        0: "SIZE_OF", 1: "ptxport_integrity_check"}),
    bytes.fromhex("263E88607CD2614392F6BBD5006DFA7E"): ("CONTEXT_CHECKS", 4, {
        0: "SIZE_OF", 2: "ptxport_context_check", 3: "ptxport_context_check_fn3"}),
}


class ExportTables:
    """The tables, built once in memory that lives as long as the process.

    `address_of(symbol)` gives a shim function's address; `stub_for(label)` an
    unsupported-call stub that names `label` when called."""

    def __init__(self, address_of: Callable[[str], int], stub_for: Callable[[str], int]):
        self._tables: dict[bytes, ctypes.Array] = {}
        self.addresses: dict[str, int] = {}
        for guid, (name, length, slots) in TABLES.items():
            table = (ctypes.c_void_p * length)()
            for index, what in slots.items():
                if what == "SIZE_OF":
                    table[index] = 8 * length
                elif what == "unsupported":
                    table[index] = stub_for(f"cuGetExportTable {name}[{index}]")
                else:
                    table[index] = address_of(what)
            self._tables[guid] = table
            self.addresses[name] = ctypes.addressof(table)
        # Buffers the tools-callback table hands out (cudart writes into them).
        self.buffer1 = (ctypes.c_uint32 * 1024)()
        self.buffer2 = (ctypes.c_uint32 * 14)()

    def get(self, guid: bytes) -> int | None:
        table = self._tables.get(guid)
        return None if table is None else ctypes.addressof(table)

    def slot(self, name: str, index: int) -> int:
        return ctypes.c_void_p.from_address(self.addresses[name] + 8 * index).value or 0


# -- the integrity check ------------------------------------------------------------------

_S = bytes.fromhex(  # MD2's substitution table (RFC 1319), from the digits of pi
    "292E43C9A2D87C013D3654A1ECF0061362A705F3C0C7738C98932BD9BC4C82CA"
    "1E9B573CFDD4E01667426F188A17E512BE4EC4D6DA9EDE49A0FBF58EBB2FEE7A"
    "A968799115B2073F94C210890B225F21807F5D9A5A903227353ECCE7BFF79703"
    "FF1930B348A5B5D1D75E922AAC56AAC64FB838D296A47DB676FC6BE29C7404F1"
    "459D705964718720865BCF65E62DA8021B6025ADAEB0B9F61C46616934407E0F"
    "5547A323DD51AF3AC35CF9CEBAC5EA262C530D6E85288409D3DFCDF441814D52"
    "6ADC37C86CC1ABFA24E17B080CBDB14A7888958BE363E86DE9CBD5FE3B001D39"
    "F2EFB70E6658D0E4A67772F8EB754B0A314450B48FED1F1ADB998D339F118314")


def md2(data: bytes) -> bytes:
    """The MD2 digest of `data` (RFC 1319)."""
    pad = 16 - len(data) % 16
    data += bytes([pad]) * pad
    checksum, last = bytearray(16), 0
    for block in range(0, len(data), 16):
        for j in range(16):
            checksum[j] ^= _S[data[block + j] ^ last]
            last = checksum[j]
    data += bytes(checksum)
    state = bytearray(48)
    for block in range(0, len(data), 16):
        for j in range(16):
            state[16 + j] = data[block + j]
            state[32 + j] = state[16 + j] ^ state[j]
        t = 0
        for round_ in range(18):
            for k in range(48):
                state[k] ^= _S[t]
                t = state[k]
            t = (t + round_) % 256
    return bytes(state[:16])


def hmac_md2(key: bytes, message: bytes) -> bytes:
    """HMAC (RFC 2104) over MD2, whose block is 16 bytes; `key` is 16 bytes."""
    inner = md2(bytes(k ^ 0x36 for k in key) + message)
    return md2(bytes(k ^ 0x5C for k in key) + inner)


_KEY = bytes.fromhex("146ADDAE53A9A752AA0841360BF55A9F")
_FIXED = {0: struct.pack("<QQ", 0x3341181C03CB675C, 0x8ED383AA1F4CD1E8),
          1: struct.pack("<QQ", 0x1841181C03CB675C, 0x8ED383AA1F4CD1E8)}


@dataclass(frozen=True)
class DeviceIdentity:
    """What the integrity check hashes of a device."""

    uuid: bytes
    pci_domain: int
    pci_bus: int
    pci_device: int


def integrity_check(version: int, unix_seconds: int, driver_version: int, thread: int,
                    cudart_table: int, check_table: int, check_function: int,
                    devices: list[DeviceIdentity], process: int | None = None) -> bytes:
    """The 16 bytes cudart expects from INTEGRITY_CHECK[1] (see the module docstring)."""
    if version % 10 in _FIXED:
        return _FIXED[version % 10]
    message = struct.pack(
        "<IIIIQQQQ", driver_version, version, os.getpid() if process is None else process,
        thread & 0xFFFFFFFF, cudart_table, check_table, check_function, unix_seconds)
    for d in devices:
        message += d.uuid + struct.pack("<iii", d.pci_domain, d.pci_bus, d.pci_device)
    return hmac_md2(_KEY, message)
