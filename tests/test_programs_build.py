"""The whole-program corpus (tests/programs/, issue 14) builds with the nvcc wheels alone, and
every binary carries what ptxport reads (PTX for compute_80) and what NVIDIA's H100 runs
natively (SASS for sm_90). Running the programs is the job of the compatibility layer's tests
(under `ptxport run`) and of benchmarks/programs_gpu.py (natively, on the GPU machine).

Builds are cached on disk (tests/programs_harness.py): a cold run builds every program once,
in parallel; later runs only read the cache.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import programs_harness as harness
import pytest

try:
    harness.toolkit_root()
except harness.ToolkitMissingError as e:
    pytest.skip(f"cannot build the corpus here: {e}", allow_module_level=True)

MANIFEST = harness.load_manifest()


@pytest.fixture(scope="module")
def binaries() -> dict:
    return harness.build_all()


def test_manifest_names_every_source_and_expected_output():
    used = {s for p in MANIFEST.values() for s in p.sources}
    on_disk = {p.name for p in harness.PROGRAM_DIR.glob("*.cu")}
    assert on_disk == used, f"sources not in the manifest: {on_disk - used}; " \
                            f"named but missing: {used - on_disk}"
    expected = {e for p in MANIFEST.values() for e in p.expected}
    on_disk = {p.name for p in (harness.PROGRAM_DIR / "expected").glob("*.txt")}
    assert on_disk == expected


def test_corpus_has_thirty_programs_that_end_with_pass():
    distinct = {p.sources for p in MANIFEST.values()}
    assert len(distinct) >= 30
    for program in MANIFEST.values():
        for name, text in program.expected_outputs().items():
            assert text.endswith("\nPASS\n"), name


def test_outputs_match_by_whole_text():
    graphs = MANIFEST["graph_capture"]
    refusal = (harness.PROGRAM_DIR / "expected" / "graph_capture.unsupported.txt").read_text()
    assert graphs.matching_output(refusal) == "graph_capture.unsupported.txt"
    assert graphs.matching_output(refusal.replace("PASS\n", "")) is None
    assert graphs.matching_output(refusal + "PASS\n") is None


def test_alternatives_are_clean_refusals():
    """A second expected output accepts only cudaErrorNotSupported, and says so."""
    for program in MANIFEST.values():
        for name, text in list(program.expected_outputs().items())[1:]:
            assert ": cudaErrorNotSupported\n" in text, name
            assert program.note, program.name


@pytest.mark.parametrize("name", list(MANIFEST))
def test_binary_carries_ptx_and_sm90_sass(binaries, name):
    """compute_80 PTX for each translation unit (compressed, as nvcc 13 does by default), in
    the section a runtime must read it from, and sm_90 SASS among what cudart registers."""
    program = MANIFEST[name]
    entries = harness.fatbin_entries(binaries[name])
    section = "__nv_relfatbin" if program.relocatable else ".nv_fatbin"
    ptx = [e for e in entries if e.kind == "ptx" and e.arch == 80]
    assert ptx == [harness.FatbinEntry("ptx", 80, True, section)] * len(program.sources), entries
    assert harness.FatbinEntry("elf", 90, False, ".nv_fatbin") in entries, entries


def test_cuobjdump_agrees_with_the_fatbin_reader(binaries):
    cuobjdump = harness.cuobjdump_path()
    if cuobjdump is None:
        pytest.skip("the nvidia-cuda-cuobjdump wheel is not installed")
    for name, path in binaries.items():
        listing = subprocess.run([str(cuobjdump), "-all", "-lptx", "-lelf", str(path)],
                                 capture_output=True, text=True, check=True).stdout
        ptx = re.findall(r"^PTX file\s+\d+: .*\.(sm_\d+)\.ptx$", listing, re.MULTILINE)
        elf = re.findall(r"^ELF file\s+\d+: .*\.(sm_\d+)\.cubin$", listing, re.MULTILINE)
        entries = harness.fatbin_entries(path)
        assert sorted(ptx) == sorted(f"sm_{e.arch}" for e in entries if e.kind == "ptx"), name
        assert sorted(elf) == sorted(f"sm_{e.arch}" for e in entries if e.kind == "elf"), name


def _needed_libraries(path) -> list[str]:
    dynamic = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True,
                             check=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[(.+)\]", dynamic)


def test_cudart_is_static_unless_the_manifest_says_shared(binaries):
    for name, path in binaries.items():
        needed = _needed_libraries(path)
        assert ("libcudart.so.13" in needed) == MANIFEST[name].shared_cudart, (name, needed)
        # Static cudart dlopens libcuda.so.1 at run time; nothing links it.
        assert not any(lib.startswith("libcuda.so") for lib in needed), (name, needed)


def test_nvcc_uses_the_wheels_and_no_system_cuda(tmp_path):
    """nvcc's plan (--dryrun) roots it in the wheel, and every CUDA tool it runs by name is
    found there first, even on a machine with /usr/local/cuda and an nvcc on PATH."""
    root = harness.toolkit_root().resolve()
    program = MANIFEST["saxpy_shared_cudart"]
    command = harness.nvcc_command(program, root, tmp_path, "app") + ["--dryrun"]
    (tmp_path / "saxpy.cu").write_text("")
    plan = subprocess.run(command, cwd=tmp_path, env=harness.build_env(root),
                          capture_output=True, text=True, check=True).stderr
    assert "/usr/local/cuda" not in plan
    variables = dict(re.findall(r"^#\$ (\w+)=(.*)$", plan, re.MULTILINE))
    assert Path(variables["CUDA_ROOT"]).resolve() == root
    for tool in ("cicc", "ptxas", "fatbinary", "nvlink", "cudafe++"):
        found = shutil.which(tool, path=variables["PATH"])
        assert found and Path(found).resolve().is_relative_to(root), (tool, found)


def test_a_build_is_cached_and_keyed_by_its_flags(binaries):
    root = harness.toolkit_root()
    version = harness.nvcc_version(root)
    saxpy = MANIFEST["saxpy"]
    shared = MANIFEST["saxpy_shared_cudart"]
    assert harness.build_key(saxpy, root, version) != harness.build_key(shared, root, version)
    assert harness.build_key(saxpy, root, version) != harness.build_key(saxpy, root, "other")
    before = binaries["saxpy"].stat().st_mtime_ns
    assert harness.build("saxpy") == binaries["saxpy"]
    assert binaries["saxpy"].stat().st_mtime_ns == before


def test_the_shared_cudart_link_is_made_once_by_parallel_builds(tmp_path, monkeypatch):
    # Builds run in threads of one process; each made the link under a name of the process
    # alone, and one thread's rename took the other's file away (a cold CI run failed so).
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setenv("PTXPORT_CACHE_DIR", str(tmp_path))
    root = tmp_path / "toolkit"
    (root / "lib").mkdir(parents=True)
    (root / "lib" / "libcudart.so.13").write_bytes(b"")
    for _attempt in range(20):
        shutil.rmtree(tmp_path / "programs", ignore_errors=True)
        with ThreadPoolExecutor(8) as pool:
            dirs = set(pool.map(lambda _: harness._shared_cudart_link_dir(root), range(16)))
        (link_dir,) = dirs
        assert (link_dir / "libcudart.so").resolve() == (root / "lib" / "libcudart.so.13")
