"""ptxport's drop-in libcudart.so.13: its errors against CUDA's header and NVIDIA's runtime,
its struct layouts against the header, and `-cudart shared` programs served by it."""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import programs_harness as harness
import pytest

from ptxport.compat import cudart_errors
from ptxport.compat.build import entry_points_source, shim_directory
from ptxport.compat.cudart_device import DeviceProp
from ptxport.compat.cudart_launch import _FuncAttributes
from ptxport.compat.cudart_signatures import ENTRY_POINTS

REPOSITORY = Path(__file__).resolve().parents[2]


def _runtime_wheel() -> Path:
    try:
        import nvidia
    except ImportError:
        pytest.skip("needs the nvidia-cuda-runtime wheel (pip install 'ptxport[test]')")
    for root in map(Path, nvidia.__path__):
        for include in (*root.glob("cu[0-9]*/include"), root / "cuda_runtime" / "include"):
            if (include / "driver_types.h").exists():
                return include.parent
    pytest.skip("the nvidia-cuda-runtime wheel has no include/driver_types.h here")


def _header_errors() -> dict[int, str]:
    """enum cudaError of the wheel's driver_types.h: value -> name."""
    text = (_runtime_wheel() / "include" / "driver_types.h").read_text()
    body = text[text.index("enum __device_builtin__ cudaError"):]
    body = body[:body.index("};")]
    return {int(value): name
            for name, value in re.findall(r"^\s*(cuda\w+)\s*=\s*(\d+)", body, re.M)}


def test_every_cuda_error_of_the_header_has_its_name():
    header = _header_errors()
    assert len(header) > 100
    assert {value: name for value, (name, _) in cudart_errors.ERRORS.items()} == header
    assert cudart_errors.name(123456) == cudart_errors.text(123456) == \
        "unrecognized error code"


@pytest.fixture(scope="module")
def ptxport_cudart():
    """ptxport's libcudart.so.13, loaded in this process (it joins this interpreter)."""
    lib = ctypes.CDLL(str(shim_directory() / "libcudart.so.13"))
    for name in ("cudaGetErrorName", "cudaGetErrorString"):
        getattr(lib, name).restype = ctypes.c_char_p
        getattr(lib, name).argtypes = [ctypes.c_int]
    return lib


def test_error_names_and_strings_through_the_library_equal_nvidias(ptxport_cudart):
    """Through the C entry points, for every value of the header: the name is the header's,
    the text NVIDIA's libcudart.so.13 gives (loaded beside it, where present)."""
    library = next((_runtime_wheel() / "lib").glob("libcudart.so.*"), None)
    nvidia = ctypes.CDLL(str(library)) if library else None
    for value, name in _header_errors().items():
        assert ptxport_cudart.cudaGetErrorName(value).decode() == name
        text = ptxport_cudart.cudaGetErrorString(value).decode()
        assert text == cudart_errors.ERRORS[value][1]
        if nvidia is not None:
            nvidia.cudaGetErrorString.restype = ctypes.c_char_p
            assert text == nvidia.cudaGetErrorString(value).decode(), name


def test_struct_layouts_equal_the_headers(tmp_path):
    """sizeof and field offsets of cudaDeviceProp and cudaFuncAttributes, by a C compiler
    reading the wheel's driver_types.h."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("needs a C compiler to read the header's layout")
    fields = ("totalGlobalMem", "maxGridSize", "sharedMemPerBlockOptin", "clusterLaunch",
              "hostNumaMultinodeIpcSupported")
    source = tmp_path / "layout.c"
    source.write_text(
        "#include <stddef.h>\n#include <stdio.h>\n#include <driver_types.h>\nint main() {\n"
        + "".join(f'printf("%zu\\n", offsetof(struct cudaDeviceProp, {f}));\n' for f in fields)
        + 'printf("%zu\\n%zu\\n", sizeof(struct cudaDeviceProp), '
          "sizeof(struct cudaFuncAttributes));\nreturn 0; }\n")
    binary = tmp_path / "layout"
    subprocess.run([compiler, f"-I{_runtime_wheel() / 'include'}", str(source), "-o",
                    str(binary)], check=True)
    got = [int(x) for x in subprocess.run([str(binary)], capture_output=True, text=True,
                                          check=True).stdout.split()]
    assert got == [*(getattr(DeviceProp, f).offset for f in fields),
                   ctypes.sizeof(DeviceProp), ctypes.sizeof(_FuncAttributes)]


def test_structs_by_value_reach_the_handler_as_fields():
    launch = next(sig for sig in ENTRY_POINTS if sig.name == "__cudaLaunchKernel")
    from ptxport.compat.build import LIBRARIES

    library = next(lib for lib in LIBRARIES if lib.names[0] == "libcudart.so.13")
    source = entry_points_source(library)
    assert "typedef struct { unsigned int x; unsigned int y; unsigned int z; } dim3;" in source
    body = source[source.index(f" {launch.name}("):]
    assert "(uint64_t)a1.x, (uint64_t)a1.y, (uint64_t)a1.z, (uint64_t)a2.x" in \
        body[:body.index("}\n")]


def _run(binary: Path, trace: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(REPOSITORY), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return subprocess.run([sys.executable, "-m", "ptxport.cli", "run", "--device", "cpu",
                           "--trace", str(trace), "--", str(binary)],
                          capture_output=True, text=True, timeout=300, env=env)


@pytest.fixture(scope="module")
def shared_builds():
    try:
        harness.toolkit_root()
    except harness.ToolkitMissingError as e:
        pytest.skip(f"cannot build the corpus here: {e}")
    return harness.build_all(["saxpy_shared_cudart"])


def test_shared_cudart_program_is_served_by_ptxports_runtime(shared_builds, tmp_path):
    """The calls of a `-cudart shared` program reach ptxport's libcudart: its trace has the
    runtime's calls (NVIDIA's runtime would show the driver's cuLaunchKernel instead)."""
    result = _run(shared_builds["saxpy_shared_cudart"], tmp_path / "trace")
    assert result.returncode == 0, result.stderr
    assert result.stdout.endswith("PASS\n")
    calls = [line.split("(")[0] for line in (tmp_path / "trace").read_text().splitlines()]
    for name in ("__cudaRegisterFatBinary", "__cudaRegisterFunction", "cudaMalloc",
                 "__cudaPushCallConfiguration", "__cudaLaunchKernel", "cudaMemcpy",
                 "__cudaUnregisterFatBinary"):
        assert name in calls, name
    assert "cuLaunchKernel" not in calls and "cuGetProcAddress_v2" not in calls


def test_unsupported_runtime_call_is_named_once(build, ptxport_run, tmp_path):
    # CUDA IPC is not in the runtime library (texture arrays were until cudart_textures.py)
    binary = build("unsupported", "-cudart", "shared")
    result = ptxport_run(binary, trace=tmp_path / "trace")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["ipc: cudaErrorNotSupported", "after: 7 7"]
    assert result.stderr.count("ptxport: cudaIpcGetMemHandle is not supported yet; it returns "
                               "cudaErrorNotSupported") == 1
    assert "cudaIpcGetMemHandle(...) -> 801" in (tmp_path / "trace").read_text()


def test_runtime_calls_beyond_the_corpus(build, ptxport_run):
    binary = build("runtime_extras", "-cudart", "shared")
    result = ptxport_run(binary)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "managed: cudaSuccess 69",
        "symbol: size 32, 0 20 80",
        "overrun: cudaErrorInvalidValue",
        "3d: cudaSuccess cudaSuccess pitch>=40 1, 1 59",
        "function: max threads >= 256 1",
        "parameters: 1, at 0, 4 bytes",
        "stream device: 0",
        "pointers: device 1 host 1",
        "entry point: 1 0 1",
        "errors: cudaErrorIllegalAddress / an illegal memory access was encountered",
        "last error: cudaErrorMemoryAllocation then cudaSuccess",
    ], result.stderr


def test_stream_attach_mem_async_checks_as_cuda_does(monkeypatch):
    """cuStreamAttachMemAsync (under cudaStreamAttachMemAsync): a managed allocation's start,
    length 0 or its size, one of the three flags, SINGLE not on the NULL stream."""
    from ptxport.compat import memory, streams
    from ptxport.compat.state import CudaError, state
    from ptxport.runtime import Device

    if state._devices is None:
        monkeypatch.setattr(state, "_devices", [Device("cpu")])
    managed, plain, stream = ctypes.c_uint64(), ctypes.c_uint64(), ctypes.c_void_p()
    memory.cuMemAllocManaged(ctypes.addressof(managed), 64, 1)
    memory.cuMemAlloc_v2(ctypes.addressof(plain), 64)
    streams.cuStreamCreate(ctypes.addressof(stream), 0)
    try:
        for flags in (1, 2, 4):
            assert memory.cuStreamAttachMemAsync(stream.value, managed.value, 0, flags) == 0
        assert memory.cuStreamAttachMemAsync(stream.value, managed.value, 64, 4) == 0
        for args in ((stream.value, managed.value, 0, 3), (0, managed.value, 0, 4),
                     (stream.value, plain.value, 0, 1), (stream.value, managed.value + 8, 0, 1),
                     (stream.value, managed.value, 32, 1)):
            with pytest.raises(CudaError) as refused:
                memory.cuStreamAttachMemAsync(*args)
            assert refused.value.code == 1, args
        assert streams.cuStreamSynchronize(stream.value) == 0
    finally:
        streams.cuStreamDestroy_v2(stream.value)
        memory.cuMemFree_v2(managed.value)
        memory.cuMemFree_v2(plain.value)


def test_a_python_host_exits_cleanly_after_loading_the_library():
    """A Python program that loads ptxport's library (as CuPy and numba do) joins its own
    interpreter; at exit the library must not touch that interpreter after Python finalised
    it (it did: a segmentation fault after the program's last line)."""
    code = ("import ctypes, sys; lib = ctypes.CDLL(sys.argv[1]); "
            "lib.cudaGetErrorName.restype = ctypes.c_char_p; "
            "print(lib.cudaGetErrorName(1).decode())")
    result = subprocess.run([sys.executable, "-c", code,
                             str(shim_directory() / "libcudart.so.13")],
                            capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(REPOSITORY)})
    assert (result.returncode, result.stdout) == (0, "cudaErrorInvalidValue\n"), result.stderr
