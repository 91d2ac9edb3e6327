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


class DriverArrays:
    """A backend's `textures` hooks holding arrays as the driver does (apart from the
    device's memory; here numpy arrays), copying as CUDA_MEMCPY3D says: what compat's copies
    through the driver (textures.copy_native) must do on cuda devices, checked on cpu."""

    def __init__(self) -> None:
        self.arrays: dict[int, np.ndarray] = {}

    def create_array(self, ordinal, fmt, extent, flags) -> int:
        width, height, depth = extent
        data = np.zeros((max(depth, 1), max(height, 1), width * fmt.texel_size), np.uint8)
        handle = 0x100000 + 0x1000 * len(self.arrays)
        self.arrays[handle] = data
        return handle

    def destroy_array(self, ordinal, handle) -> None:
        del self.arrays[handle]

    def copy(self, ordinal, src, dst, width, height, depth) -> None:
        for z in range(depth):
            for y in range(height):
                self._write(dst, y, z, self._read(src, y, z, width))

    def _read(self, side, y, z, width) -> bytes:
        if side.array is not None:
            return self.arrays[side.array][side.z + z, side.y + y,
                                           side.x:side.x + width].tobytes()
        return ctypes.string_at(self._address(side, y, z), width)

    def _write(self, side, y, z, data: bytes) -> None:
        if side.array is not None:
            row = self.arrays[side.array][side.z + z, side.y + y]
            row[side.x:side.x + len(data)] = np.frombuffer(data, np.uint8)
        else:
            ctypes.memmove(self._address(side, y, z), data, len(data))

    @staticmethod
    def _address(side, y, z) -> int:
        return side.address + ((side.z + z) * side.height + side.y + y) * side.pitch + side.x


@pytest.fixture
def driver_arrays(monkeypatch):
    from ptxport.compat.state import state
    from ptxport.runtime import Device

    device = Device("cpu")
    if state._devices is None:
        monkeypatch.setattr(state, "_devices", [device])
    hooks = DriverArrays()
    monkeypatch.setattr(state.device._backend, "textures", hooks)
    return hooks


def _malloc_array(width, height, depth=0, bits=32, channels=1) -> int:
    handle = ctypes.c_void_p()
    desc = _desc(*[bits if i < channels else 0 for i in range(4)], f=2 if bits == 32 else 1)
    if depth:
        assert rt.cudaMalloc3DArray(ctypes.addressof(handle), ctypes.addressof(desc), width,
                                    height, depth, 0) == 0
    else:
        assert rt.cudaMallocArray(ctypes.addressof(handle), ctypes.addressof(desc), width,
                                  height, 0) == 0
    return handle.value


def test_copies_with_driver_arrays_go_through_the_driver(driver_arrays):
    """cudaMemcpy2DToArray (host and device memory, offsets, padded pitch),
    cudaMemcpy2DFromArray, cudaMemcpyToArray across rows and cudaMemcpy3D with positions,
    against the same copies in numpy."""
    from ptxport.compat import memory

    array = _malloc_array(7, 5)
    assert array in driver_arrays.arrays
    image = np.arange(5 * 9, dtype=np.float32).reshape(5, 9)       # rows padded to 9
    assert rt.cudaMemcpy2DToArray(array, 0, 0, image.ctypes.data, 36, 28, 5, 1) == 0
    model = image[:, :7].copy()
    device = ctypes.c_uint64()
    memory.cuMemAlloc_v2(ctypes.addressof(device), 6 * 4)
    block = np.arange(100, 106, dtype=np.float32).reshape(2, 3)
    ctypes.memmove(device.value, block.ctypes.data, block.nbytes)
    assert rt.cudaMemcpy2DToArray(array, 8, 3, device.value, 12, 12, 2, 3) == 0
    model[3:5, 2:5] = block
    out = np.full((5, 8), -1, np.float32)
    assert rt.cudaMemcpy2DFromArray(out.ctypes.data, 32, array, 0, 0, 28, 5, 2) == 0
    assert (out[:, :7] == model).all() and (out[:, 7] == -1).all()
    line = np.arange(-1, -11, -1, dtype=np.float32)
    assert rt.cudaMemcpyToArray(array, 16, 1, line.ctypes.data, 40, 1) == 0
    flat = model.reshape(-1)
    flat[7 + 4:7 + 4 + 10] = line
    back = np.empty(35, np.float32)
    assert rt.cudaMemcpyFromArray(back.ctypes.data, array, 0, 0, 140, 2) == 0
    assert (back == flat).all()
    with pytest.raises(CudaError):
        rt.cudaMemcpy2DToArray(array, 4, 0, image.ctypes.data, 36, 28, 1, 1)   # too wide
    memory.cuMemFree_v2(device.value)
    assert rt.cudaFreeArray(array) == 0 and array not in driver_arrays.arrays


def test_memcpy_3d_with_driver_arrays(driver_arrays):
    array = _malloc_array(4, 3, 2, bits=16, channels=2)
    volume = np.arange(2 * 3 * 4 * 2, dtype=np.int16).reshape(2, 3, 4, 2)
    p = cudart._Memcpy3DParms(dstArray=array, kind=1)
    p.srcPtr[:] = [volume.ctypes.data, 16, 4, 3]
    p.extent[:] = [4, 3, 2]
    assert cudart.cudaMemcpy3D(ctypes.addressof(p)) == 0
    out = np.zeros_like(volume)
    q = cudart._Memcpy3DParms(srcArray=array, kind=2)
    q.dstPtr[:] = [out.ctypes.data, 16, 4, 3]
    q.srcPos[:], q.dstPos[:], q.extent[:] = [1, 1, 0], [2, 0, 1], [2, 2, 1]
    assert cudart.cudaMemcpy3D(ctypes.addressof(q)) == 0
    want = np.zeros_like(volume)
    want[1, 0:2, 2:4] = volume[0, 1:3, 1:3]
    assert (out == want).all()
