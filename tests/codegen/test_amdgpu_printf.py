"""CUDA's printf on the AMDGPU target (amdgpu_printf.py) and its host side on the hip backend
(runtime/backends/hip_printf.py), proven without an AMD GPU: the records the kernel writes
(checked in its LLVM IR) and the text the host prints of such records."""

from __future__ import annotations

import re
import struct

import pytest
from test_amdgpu import read_code_object

from corpus import corpus_ptx, corpus_sources
from ptxport.codegen.targets import amdgpu, amdgpu_printf
from ptxport.errors import UnsupportedFeatureError
from ptxport.frontends import nvrtc
from ptxport.ir.from_ptx import build
from ptxport.ir.verify import verify
from ptxport.ptx.parser import parse
from ptxport.runtime.backends import hip_printf

needs_nvrtc = pytest.mark.skipif(not nvrtc.available()[0],
                                 reason="NVRTC is needed for the corpus's PTX")


def _printf_kernel():
    source = next(p for p in corpus_sources() if p.name == "printf_kernel.cu")
    module = build(parse(corpus_ptx(source, "sm_80"), source.name))
    verify(module)
    return module


@pytest.mark.parametrize("fmt, size", [
    (b"no arguments\n", 0), (b"%d %d\n", 8), (b"%d %f\n", 16), (b"%c%lld", 16),
    (b"%*.*d", 12), (b"%s=%d", 12), (b"100%%", 0)])
def test_argument_size_follows_vprintfs_packing(fmt, size):
    assert amdgpu_printf.argument_size(fmt) == size


@needs_nvrtc
@pytest.mark.parametrize("chip", ["gfx1100", "gfx942"])
def test_vprintf_appends_a_record_of_the_formats_arguments(chip):
    text = amdgpu.compile_llvm_ir(_printf_kernel(), chip)
    assert re.search(rf'@"?{amdgpu_printf.PRINTF_SYMBOL}"? = addrspace\(1\) global i64 0',
                     text)
    # printf_values: 7 arguments in 40 bytes (int, int, double, long long, unsigned, int,
    # pointer); printf_once: 3 in 16
    copies = re.findall(r'call void @"llvm\.memcpy\.p1\.p0\.i64"\(.*, i64 (\d+), i1 0\)', text)
    assert copies == ["40", "16"]
    assert re.search(r"select +i1 %[^,]+, i32 7, i32 -2", text)
    assert re.search(r"select +i1 %[^,]+, i32 3, i32 -2", text)
    assert re.findall(r"atomicrmw add ptr addrspace\(1\) %[^,]+, i64 (\d+) monotonic",
                      text) == ["56", "32"]


@needs_nvrtc
def test_the_code_object_links_with_the_buffers_global():

    if amdgpu.linker() is None:
        pytest.skip("no ld.lld: pip install 'ptxport[amd]' (ziglang wheel)")
    info = read_code_object(amdgpu.compile_module(_printf_kernel(), "gfx942"))
    assert amdgpu_printf.PRINTF_SYMBOL in info["symbols"]


class _Device:
    """Device memory for the host side: strings and the buffer at made-up addresses."""

    def __init__(self):
        self.memory: dict[int, bytearray] = {}

    def put(self, address: int, data: bytes) -> None:
        self.memory[address] = bytearray(data)

    def read(self, address: int, size: int) -> bytes:
        for start, data in self.memory.items():
            if start <= address < start + len(data):
                return bytes(data[address - start:address - start + size]).ljust(size, b"\0")
        from ptxport.errors import PtxportError

        raise PtxportError(f"no device memory at {address:#x}")

    def write(self, address: int, data: bytes) -> None:
        for start, block in self.memory.items():
            if start <= address < start + len(block):
                block[address - start:address - start + len(data)] = data
                return
        raise AssertionError(address)


def _record(fmt_address: int, args: bytes) -> bytes:
    padded = args.ljust((len(args) + 7) // 8 * 8, b"\0")
    return struct.pack("<QQ", amdgpu_printf.RECORD_HEADER + len(padded), fmt_address) + padded


def test_the_host_prints_the_records_and_empties_the_buffer(capfd):
    device, base, capacity = _Device(), 0x10000, 256
    device.put(0x1000, b"block %d: x=%.3f s=%s c=%c\n\0")
    device.put(0x2000, b"ok\0")
    device.put(0x3000, b"private %s|%5s|\n\0")
    first = struct.pack("<i4xdQi", 1, 2.5, 0x2000, ord("a"))
    second = struct.pack("<QQ", 0x7FFF0000, 0)     # a private string, then a null one
    body = _record(0x1000, first) + _record(0x3000, second)
    device.put(base, struct.pack("<QQ", len(body), capacity) + body.ljust(capacity, b"\0"))
    hip_printf.drain(base, device.read, device.write)
    out = capfd.readouterr()
    assert out.out == "block 1: x=2.500 s=ok c=a\nprivate (private)|(null)|\n"
    assert out.err == ""
    assert device.read(base, 16 + len(body)) == struct.pack("<QQ", 0, capacity) + \
        bytes(len(body))


def test_records_that_did_not_fit_are_counted_on_stderr(capfd):
    device, base, capacity = _Device(), 0x10000, 48
    device.put(0x1000, b"line %d\n\0")
    body = _record(0x1000, struct.pack("<i", 7))
    device.put(base, struct.pack("<QQ", len(body) + 2 * 24, capacity) +
               body.ljust(capacity, b"\0"))
    hip_printf.drain(base, device.read, device.write)
    out = capfd.readouterr()
    assert out.out == "line 7\n"
    assert "dropped" in out.err


@needs_nvrtc
def test_a_format_known_only_at_run_time_is_refused_by_name():
    source = 'extern "C" __global__ void k(const char *fmt, int x) { printf(fmt, x); }\n'
    module = build(parse(nvrtc.compile_to_ptx(source, "runtime_format.cu"), "f.ptx"))
    verify(module)
    with pytest.raises(UnsupportedFeatureError, match=r"printf's format .*AMDGPU target") as e:
        amdgpu.compile_llvm_ir(module, "gfx1100")
    assert "amdgpu:gfx1100" in str(e.value) and "call" in str(e.value)
