"""The NVRTC front end (ptxport/frontends/nvrtc.py) and the kernel corpus it compiles.

Every file of tests/kernels compiles for every architecture of corpus.ARCHS and the wheel's
ptxas accepts the PTX; errors carry NVRTC's log; macros and include paths reach NVRTC; the
on-disk cache gives back the same PTX without loading NVRTC.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ptxport.errors import BackendUnavailableError, CompileError
from ptxport.frontends import nvrtc
from ptxport.frontends.nvrtc import NvrtcOptions, compile_to_ptx

# tests/ is not a package: make its helper modules importable whatever pytest's import mode.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from corpus import (
    ARCHS,
    corpus_ptx,
    corpus_sources,
    entry_names,
    ptxas_errors,
    ptxas_path,
)

SOURCES = corpus_sources()
CASES = [(path, arch) for path in SOURCES for arch in ARCHS]
MIN_KERNELS = 62

HAVE_NVRTC, WHY_NOT = nvrtc.available()
pytestmark = pytest.mark.skipif(not HAVE_NVRTC, reason=WHY_NOT)

SAXPY = textwrap.dedent("""\
    extern "C" __global__ void saxpy(float a, const float* x, float* y, int n)
    {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n)
            y[i] = a * x[i] + y[i];
    }
    """)


def _compile_and_assemble(case: tuple[Path, str]) -> tuple[str, str]:
    """(PTX, ptxas's complaints) for one corpus case; ptxas is skipped ("") when absent."""
    path, arch = case
    ptx = corpus_ptx(path, arch)
    return ptx, ptxas_errors(ptx, arch) if ptxas_path() else ""


@pytest.fixture(scope="module")
def corpus_results() -> dict[tuple[Path, str], tuple[str, str] | CompileError]:
    """Every corpus case compiled and assembled once, in parallel (NVRTC and ptxas both run
    outside the GIL); a case that NVRTC refuses maps to its CompileError."""

    def run(case: tuple[Path, str]) -> tuple[str, str] | CompileError:
        try:
            return _compile_and_assemble(case)
        except CompileError as e:
            return e

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        return dict(zip(CASES, pool.map(run, CASES), strict=True))


@pytest.mark.parametrize("path, arch", CASES,
                         ids=[f"{path.stem}-{arch}" for path, arch in CASES])
def test_corpus_file_compiles_and_ptxas_accepts_it(corpus_results, path: Path, arch: str):
    result = corpus_results[path, arch]
    if isinstance(result, CompileError):
        pytest.fail(f"NVRTC refused {path.name} for {arch}:\n{result}")
    ptx, complaints = result
    assert f".target {arch}" in ptx
    assert entry_names(ptx), f"{path.name} has no kernels"
    assert complaints == "", f"ptxas -arch={arch} rejected the PTX of {path.name}:\n{complaints}"


def test_corpus_has_enough_kernels(corpus_results):
    names = []
    for path in SOURCES:
        result = corpus_results[path, ARCHS[0]]
        if isinstance(result, CompileError):
            pytest.fail(f"NVRTC refused {path.name}: {result}")
        names += entry_names(result[0])
    assert len(names) == len(set(names)), "two corpus files define a kernel of the same name"
    assert len(names) >= MIN_KERNELS, f"the corpus holds {len(names)} kernels"


def test_corpus_files_say_what_they_launch():
    # Later tests build numpy references from these comments.
    for path in SOURCES:
        head = path.read_text().splitlines()[0]
        assert head.startswith(f"// {path.name}:"), f"{path.name} does not open with its summary"
        assert "launch:" in path.read_text(), f"{path.name} gives no launch shapes"


def test_ptxas_comes_from_the_wheel():
    ptxas = ptxas_path()
    if ptxas is None:
        pytest.skip("the nvidia-cuda-nvcc wheel is not installed")
    assert "site-packages" in ptxas.parts or "dist-packages" in ptxas.parts


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PTXPORT_CACHE_DIR", str(tmp_path))
    return tmp_path / "nvrtc"


def test_syntax_error_raises_compile_error_with_nvrtc_log(cache_dir):
    source = 'extern "C" __global__ void broken(int* x)\n{\n    x[0] = 1 +;\n}\n'
    with pytest.raises(CompileError) as info:
        compile_to_ptx(source, "broken.cu")
    error = info.value
    assert "broken.cu" in str(error).splitlines()[0]
    assert "NVRTC refused" in str(error)
    assert "broken.cu(3): error" in error.log
    assert not cache_dir.exists() or not any(cache_dir.iterdir()), "a failure was cached"


def test_invalid_option_raises_compile_error(cache_dir):
    with pytest.raises(CompileError, match="INVALID_OPTION"):
        compile_to_ptx(SAXPY, "saxpy.cu", NvrtcOptions(arch="sm_7"))


def test_program_is_destroyed_on_success_and_failure(cache_dir, monkeypatch):
    from cuda.bindings import nvrtc as bindings

    destroyed = []
    real_destroy = bindings.nvrtcDestroyProgram

    def counting_destroy(program):
        destroyed.append(program)
        return real_destroy(program)

    monkeypatch.setattr(bindings, "nvrtcDestroyProgram", counting_destroy)
    compile_to_ptx(SAXPY, "saxpy.cu", cache=False)
    with pytest.raises(CompileError):
        compile_to_ptx("this is not C++", "bad.cu", cache=False)
    assert len(destroyed) == 2


def test_defines_reach_the_preprocessor(cache_dir):
    source = textwrap.dedent("""\
        #ifndef ENABLED
        #error ENABLED must be defined
        #endif
        extern "C" __global__ void k(int* out) { out[0] = VALUE; }
        """)
    ptx = compile_to_ptx(source, "defines.cu",
                         NvrtcOptions(defines={"ENABLED": None, "VALUE": "271828"}))
    assert "271828" in ptx
    with pytest.raises(CompileError, match="ENABLED must be defined"):
        compile_to_ptx(source, "defines.cu", NvrtcOptions(defines={"VALUE": "1"}))


def test_include_paths_are_searched(cache_dir, tmp_path):
    include = tmp_path / "include"
    include.mkdir()
    (include / "magic.h").write_text("#define MAGIC 314159\n")
    source = '#include "magic.h"\nextern "C" __global__ void k(int* out) { out[0] = MAGIC; }\n'
    assert "314159" in compile_to_ptx(source, "inc.cu", NvrtcOptions(include_paths=[str(include)]))
    with pytest.raises(CompileError, match="magic.h"):
        compile_to_ptx(source, "inc.cu")


def test_cuda_headers_come_from_the_runtime_wheel():
    include = nvrtc.cuda_include_dir()
    assert include is not None and (include / "cuda_fp16.h").is_file()
    assert "site-packages" in include.parts or "dist-packages" in include.parts


def test_std_and_fast_math_flags(cache_dir):
    source = textwrap.dedent("""\
        extern "C" __global__ void k(float* x)
        {
            if constexpr (sizeof(float) == 4)
                x[0] = x[0] / x[1];
        }
        """)
    precise = compile_to_ptx(source, "flags.cu", NvrtcOptions(std="c++17"))
    fast = compile_to_ptx(source, "flags.cu", NvrtcOptions(std="c++17", fast_math=True))
    assert "div.rn.f32" in precise
    assert "div.rn.f32" not in fast and "div.approx" in fast


def test_cache_returns_the_same_ptx_without_calling_nvrtc(cache_dir, monkeypatch):
    first = compile_to_ptx(SAXPY, "saxpy.cu")
    assert len(list(cache_dir.glob("*.ptx"))) == 1

    def no_nvrtc(*args, **kwargs):
        raise AssertionError("NVRTC was called on a cache hit")

    monkeypatch.setattr(nvrtc, "_run_nvrtc", no_nvrtc)
    monkeypatch.setattr(nvrtc, "_load_nvrtc", no_nvrtc)
    assert compile_to_ptx(SAXPY, "saxpy.cu") == first


def test_cache_hit_does_not_load_nvrtc(cache_dir):
    # A fresh interpreter: nothing has imported cuda.bindings.nvrtc before the cache hit.
    compile_to_ptx(SAXPY, "saxpy.cu")
    script = textwrap.dedent(f"""\
        import sys
        from ptxport.frontends.nvrtc import compile_to_ptx
        compile_to_ptx({SAXPY!r}, "saxpy.cu")
        print("loaded" if "cuda.bindings.nvrtc" in sys.modules else "not loaded")
        """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env=os.environ.copy(), check=True)
    assert result.stdout.strip() == "not loaded"


def test_cache_key_covers_source_name_and_options(cache_dir):
    compile_to_ptx(SAXPY, "saxpy.cu")
    compile_to_ptx(SAXPY, "saxpy.cu", NvrtcOptions(arch="sm_90"))
    compile_to_ptx(SAXPY, "other.cu")
    compile_to_ptx(SAXPY + "\n", "saxpy.cu")
    compile_to_ptx(SAXPY, "saxpy.cu", NvrtcOptions(defines={"X": "1"}))
    assert len(list(cache_dir.glob("*.ptx"))) == 5


def test_cache_can_be_bypassed(cache_dir):
    compile_to_ptx(SAXPY, "saxpy.cu", cache=False)
    assert not cache_dir.exists() or not list(cache_dir.iterdir())


def test_concurrent_compilations_share_the_cache_safely(cache_dir):
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda _: compile_to_ptx(SAXPY, "saxpy.cu"), range(4)))
    assert len(set(results)) == 1
    assert [p.suffix for p in cache_dir.iterdir()] == [".ptx"], "temporary files were left"


def test_cache_dir_defaults_under_home(monkeypatch, tmp_path):
    monkeypatch.delenv("PTXPORT_CACHE_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert nvrtc.cache_dir() == tmp_path / ".cache" / "ptxport" / "nvrtc"


def test_version_and_availability():
    assert nvrtc.available() == (True, "")
    assert nvrtc.nvrtc_version() >= (12, 0)


def test_missing_bindings_raise_backend_unavailable(monkeypatch, cache_dir):
    import cuda.bindings

    monkeypatch.setitem(sys.modules, "cuda.bindings.nvrtc", None)
    monkeypatch.delattr(cuda.bindings, "nvrtc", raising=False)
    with pytest.raises(BackendUnavailableError, match=r"pip install 'ptxport\[cuda\]'"):
        compile_to_ptx(SAXPY, "saxpy.cu", cache=False)
    ok, why = nvrtc.available()
    assert not ok and "cuda-bindings" in why


def test_missing_library_raises_backend_unavailable(monkeypatch):
    from cuda.bindings import nvrtc as bindings

    def not_found():
        raise RuntimeError("Unable to load libnvrtc.so")

    monkeypatch.setattr(bindings, "nvrtcVersion", not_found)
    ok, why = nvrtc.available()
    assert not ok and "nvidia-cuda-nvrtc" in why and "pip install" in why


def test_compiling_leaves_pythons_shared_bytes_alone():
    # NVRTC writes its log and PTX into the buffers it is given: a one-byte log (an empty
    # one, its NUL) written into `b" " * 1`, Python's shared b" ", made every b" " in the
    # process b"\0" (printf padding and format strings then printed NULs). Run in a child, so
    # that a failure does not corrupt this process too.
    code = textwrap.dedent("""
        from ptxport.frontends.nvrtc import NvrtcOptions, compile_to_ptx
        compile_to_ptx('extern "C" __global__ void k(int* p) { *p = 1; }', "k.cu",
                       NvrtcOptions(arch="sm_80"), cache=False)
        print(bytes((32,))[0], b"a b"[1:2][0])
        """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["32", "32"]
