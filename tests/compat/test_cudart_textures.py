"""The drop-in libcudart's arrays and texture objects (compat/cudart_textures.py): its structs
laid out as the wheel's headers lay them out, channel descriptors read as CUDA reads them,
the deprecated 1D array copies cut into rows, and cudaMemcpy3D with arrays on cpu. The whole
API runs in tests/programs/texture_arrays.cu (the corpus test, static and shared cudart)."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from ptxport.compat import cudart
from ptxport.compat import cudart_textures as rt
from ptxport.compat.state import CudaError


def _include() -> Path:
    try:
        import nvidia
    except ImportError:
        pytest.skip("needs the nvidia-cuda-runtime wheel (pip install 'ptxport[test]')")
    for root in map(Path, nvidia.__path__):
        for include in (*root.glob("cu[0-9]*/include"), root / "cuda_runtime" / "include"):
            if (include / "texture_types.h").exists():
                return include
    pytest.skip("no texture_types.h in the nvidia wheels")


STRUCTS = {   # C struct -> (ctypes struct, fields whose offsets are compared)
    "cudaChannelFormatDesc": (rt._ChannelFormatDesc, ("y", "w", "f")),
    "cudaResourceDesc": (rt._ResourceDesc, ("res", "flags")),
    "cudaTextureDesc": (rt._TextureDesc, ("filterMode", "readMode", "borderColor",
                                          "normalizedCoords", "mipmapFilterMode",
                                          "maxMipmapLevelClamp", "seamlessCubemap")),
}


def test_struct_layouts_equal_the_headers(tmp_path):
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("needs a C compiler to read the headers' layout")
    lines, want = [], []
    for name, (struct, fields) in STRUCTS.items():
        lines += [f'printf("%zu\\n", offsetof(struct {name}, {f}));' for f in fields]
        lines.append(f'printf("%zu\\n", sizeof(struct {name}));')
        want += [getattr(struct, f).offset for f in fields] + [ctypes.sizeof(struct)]
    members = {"linear.sizeInBytes": "res.linear.sizeInBytes",
               "pitch2D.pitchInBytes": "res.pitch2D.pitchInBytes"}
    for path in members.values():
        lines.append(f'printf("%zu\\n", offsetof(struct cudaResourceDesc, {path}));')
    want += [rt._ResourceDesc.res.offset + rt._Linear.sizeInBytes.offset,
             rt._ResourceDesc.res.offset + rt._Pitch2D.pitchInBytes.offset]
    source = tmp_path / "layout.c"
    source.write_text("#include <stddef.h>\n#include <stdio.h>\n#include <driver_types.h>\n"
                      "#include <texture_types.h>\nint main() {\n" + "\n".join(lines) +
                      "\nreturn 0; }\n")
    binary = tmp_path / "layout"
    subprocess.run([compiler, f"-I{_include()}", str(source), "-o", str(binary)], check=True)
    got = [int(x) for x in subprocess.run([str(binary)], capture_output=True, text=True,
                                          check=True).stdout.split()]
    assert got == want


def _desc(x, y=0, z=0, w=0, f=2) -> rt._ChannelFormatDesc:
    return rt._ChannelFormatDesc(x, y, z, w, f)


def test_channel_descriptors_read_as_cuda_reads_them():
    fmt = rt._channel_format(_desc(16, 16, f=0))
    assert (fmt.kind, fmt.bits, fmt.channels) == ("signed", 16, 2)
    fmt = rt._channel_format(_desc(8, 8, 8, 8, f=1))
    assert (fmt.kind, fmt.bits, fmt.channels) == ("unsigned", 8, 4)
    for bad in (_desc(32, 32, 32), _desc(32, 16), _desc(0, 32), _desc(8, f=2),
                _desc(0)):
        with pytest.raises(CudaError) as e:
            rt._channel_format(bad)
        assert e.value.code == rt.INVALID_CHANNEL_DESCRIPTOR
    with pytest.raises(CudaError) as e:
        rt._channel_format(_desc(8, f=5))       # cudaChannelFormatKindUnsignedNormalized8X1
    assert e.value.code == 801


class _FakeArray:
    pitch, height, depth = 40, 5, 0


def test_one_dimensional_array_copies_run_row_after_row(monkeypatch):
    monkeypatch.setattr(rt.textures, "array", lambda handle: _FakeArray)
    # (offset into the memory, x, y, bytes per row, rows)
    assert rt._pieces(1, 0, 0, 200) == [(0, 0, 0, 40, 5)]
    assert rt._pieces(1, 8, 1, 100) == [(0, 8, 1, 32, 1), (32, 0, 2, 40, 1),
                                        (72, 0, 3, 28, 1)]
    assert rt._pieces(1, 4, 2, 10) == [(0, 4, 2, 10, 1)]
    with pytest.raises(CudaError):
        rt._pieces(1, 0, 4, 41)                  # past the last row


def test_memcpy_3d_positions_are_texels_on_both_sides(monkeypatch):
    """NVIDIA's static cudart turns srcPos.x of the memory side into srcPos.x * texel bytes
    when an array takes part (observed through ptxport's libcuda): ours does the same."""
    seen = {}
    monkeypatch.setattr(rt.textures, "array", lambda handle: type(
        "A", (), {"format": type("F", (), {"texel_size": 4})})())
    monkeypatch.setattr(rt.pitched, "_copy_3d", lambda address, stream, sync: seen.update(
        copy=rt.pitched._Memcpy3D.from_buffer_copy(
            (ctypes.c_char * ctypes.sizeof(rt.pitched._Memcpy3D)).from_address(address))))
    host = np.zeros(64, np.int32)
    p = cudart._Memcpy3DParms(dstArray=0x77, kind=1)
    p.srcPtr[:] = [host.ctypes.data, 32, 8, 6]
    p.srcPos[:], p.dstPos[:], p.extent[:] = [1, 1, 1], [4, 3, 2], [3, 2, 2]
    rt.copy_3d(p, 0, True)
    c = seen["copy"]
    assert (c.srcXInBytes, c.srcY, c.srcZ, c.srcPitch, c.srcHeight) == (4, 1, 1, 32, 6)
    assert (c.dstXInBytes, c.dstY, c.dstZ, c.dstArray) == (16, 3, 2, 0x77)
    assert (c.WidthInBytes, c.Height, c.Depth) == (12, 2, 2)
