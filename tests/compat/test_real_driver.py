"""Finding NVIDIA's libcuda.so.1 for the cuda device inside the shim
(runtime/backends/real_driver.py), with fake directories: no GPU needed."""

from __future__ import annotations

import ctypes.util
import types
from pathlib import Path

import pytest

from ptxport.errors import BackendUnavailableError
from ptxport.runtime.backends import real_driver


def _library(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "libcuda.so.1"
    path.write_bytes(b"\x7fELF")
    return path


@pytest.fixture(autouse=True)
def _no_explicit_driver(monkeypatch):
    monkeypatch.delenv(real_driver.DRIVER_VARIABLE, raising=False)


def test_ptxports_directory_is_skipped_on_the_search_path(tmp_path):
    shim, real = _library(tmp_path / "shim"), _library(tmp_path / "nvidia")
    found = real_driver.find_real_libcuda(str(shim.parent), f"{shim.parent}:{real.parent}",
                                          listing="", defaults=())
    assert found == str(real)


def test_a_link_into_ptxports_directory_is_skipped(tmp_path):
    shim = _library(tmp_path / "shim")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "libcuda.so.1").symlink_to(shim)
    real = _library(tmp_path / "nvidia")
    found = real_driver.find_real_libcuda(str(shim.parent), str(tmp_path / "elsewhere"),
                                          listing="", defaults=(str(real.parent),))
    assert found == str(real)


def test_the_ld_cache_then_the_default_directories(tmp_path):
    shim, cached = _library(tmp_path / "shim"), _library(tmp_path / "cached")
    default = _library(tmp_path / "default")
    listing = (f"3 libs found in cache `/etc/ld.so.cache'\n"
               f"\tlibcuda.so.1 (libc6,x86-64) => {shim}\n"
               f"\tlibcudart.so.13 (libc6,x86-64) => /x/libcudart.so.13\n"
               f"\tlibcuda.so.1 (libc6,x86-64) => {cached}\n")
    assert real_driver.ld_cache_paths(listing) == [str(shim), str(cached)]
    assert real_driver.find_real_libcuda(str(shim.parent), "", listing,
                                         (str(default.parent),)) == str(cached)
    assert real_driver.find_real_libcuda(str(shim.parent), "", "",
                                         (str(default.parent),)) == str(default)


def test_none_found_says_where_it_looked(tmp_path):
    shim = _library(tmp_path / "shim")
    with pytest.raises(BackendUnavailableError, match="PTXPORT_CUDA_DRIVER"):
        real_driver.find_real_libcuda(str(shim.parent), str(shim.parent), "", ())


def test_an_explicit_driver_wins(tmp_path, monkeypatch):
    shim, chosen = _library(tmp_path / "shim"), _library(tmp_path / "chosen")
    monkeypatch.setenv(real_driver.DRIVER_VARIABLE, str(chosen))
    assert real_driver.find_real_libcuda(str(shim.parent), str(shim.parent), "", ()) == \
        str(chosen)


def test_cuda_bindings_loader_is_redirected_inside_the_shim(tmp_path, monkeypatch):
    """load_nvidia_dynamic_lib("cuda") answers the library found by path (a stand-in here:
    the C math library), other names go to cuda-pathfinder as before."""
    math = ctypes.util.find_library("m")
    real = next(Path(d) / math for d in real_driver.DEFAULT_DIRECTORIES
                if (Path(d) / math).is_file())
    monkeypatch.setenv(real_driver.DRIVER_VARIABLE, str(real))
    asked = []
    module = types.SimpleNamespace(load_nvidia_dynamic_lib=lambda name: asked.append(name))
    assert real_driver.redirect_cuda_bindings(module) is None   # outside the shim
    monkeypatch.setenv(real_driver.SHIM_DIRECTORY_VARIABLE, str(tmp_path))
    monkeypatch.setattr(real_driver, "_loaded", [])
    assert real_driver.redirect_cuda_bindings(module) == str(real.resolve())
    loaded = module.load_nvidia_dynamic_lib("cuda")
    assert loaded.abs_path == str(real.resolve()) and loaded._handle_uint
    module.load_nvidia_dynamic_lib("nvrtc")
    assert asked == ["nvrtc"]


def test_cuda_bindings_reads_the_redirected_loader(tmp_path, monkeypatch):
    """cuda-bindings' own driver initialisation goes through the replaced function: given a
    library without the driver's symbols, it fails on cuGetProcAddress_v2, not for a missing
    libcuda.so.1."""
    try:
        from cuda.bindings import driver
        from cuda.bindings._internal import driver as internal
    except ImportError:
        pytest.skip("needs cuda-bindings (pip install 'ptxport[cuda]')")
    if ctypes.util.find_library("cuda"):
        pytest.skip("an NVIDIA driver is installed here: cuda-bindings may have initialised "
                    "it in this process already, and initialises only once")
    math = ctypes.util.find_library("m")
    real = next(Path(d) / math for d in real_driver.DEFAULT_DIRECTORIES
                if (Path(d) / math).is_file())
    monkeypatch.setenv(real_driver.DRIVER_VARIABLE, str(real))
    monkeypatch.setenv(real_driver.SHIM_DIRECTORY_VARIABLE, str(tmp_path))
    monkeypatch.setattr(real_driver, "_loaded", [])
    monkeypatch.setattr(internal, "load_nvidia_dynamic_lib", internal.load_nvidia_dynamic_lib)
    real_driver.redirect_cuda_bindings(internal)
    with pytest.raises(RuntimeError, match="cuGetProcAddress_v2"):
        driver.cuInit(0)
