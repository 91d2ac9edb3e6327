"""Whole CUDA programs for the compatibility layer: built with the nvidia-cuda-nvcc wheel's
nvcc (default flags: static cudart), cached on disk by source, flags and nvcc version, and run
under `ptxport run`."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ptxport.cache import cache_path

PROGRAMS = Path(__file__).parent / "programs"
REPOSITORY = Path(__file__).resolve().parents[2]


def _nvcc() -> Path | None:
    from ptxport.runtime.backends.cuda import wheel_ptxas

    ptxas = wheel_ptxas()
    nvcc = ptxas.parent / "nvcc" if ptxas else None
    return nvcc if nvcc and nvcc.is_file() else None


@pytest.fixture(scope="session")
def nvcc() -> Path:
    nvcc = _nvcc()
    if nvcc is None:
        pytest.skip("needs the nvcc of the nvidia-cuda-nvcc wheel (pip install "
                    "'ptxport[test]'), with nvidia-cuda-crt and nvidia-nvvm")
    if not (shutil.which("g++") or shutil.which("c++")):
        pytest.skip("nvcc needs a host C++ compiler (g++)")
    return nvcc


def _version(nvcc: Path) -> str:
    return subprocess.run([str(nvcc), "--version"], capture_output=True, text=True).stdout


def _link_flags(folder: Path) -> list[str]:
    """-L for a libcudart.so naming the runtime wheel's (which ships only libcudart.so.13),
    for `-cudart shared` builds."""
    from ptxport.compat.cli import wheel_cudart_directory

    runtime = wheel_cudart_directory()
    if runtime is None:
        return []
    library = max(Path(runtime).glob("libcudart.so.*"))
    (folder / "libcudart.so").symlink_to(library)
    return [f"-L{folder}"]


@pytest.fixture(scope="session")
def build(nvcc, tmp_path_factory):
    """build(name, *flags, units=(name,)) -> the program made of tests/compat/programs/
    UNIT.cu for each unit, built by nvcc."""
    version = _version(nvcc)

    def build_program(name: str, *flags: str, units: tuple[str, ...] = ()) -> Path:
        sources = [PROGRAMS / f"{unit}.cu" for unit in units or (name,)]
        if not any(flag.startswith("-gencode") for flag in flags):
            flags = ("-arch=sm_80", *flags)
        key = hashlib.sha256("\0".join(
            [*(s.read_text() for s in sources), *flags, version]).encode()).hexdigest()[:24]
        binary = cache_path("compat-programs", key, f".{name}")
        if not binary.exists():
            binary.parent.mkdir(parents=True, exist_ok=True)
            folder = tmp_path_factory.mktemp("nvcc")
            work = folder / name
            env = {**os.environ, "PATH": f"{nvcc.parent}:{os.environ.get('PATH', '')}"}
            result = subprocess.run([str(nvcc), *flags, *_link_flags(folder),
                                     *map(str, sources), "-o", str(work)],
                                    capture_output=True, text=True, env=env)
            assert result.returncode == 0, f"nvcc failed on {name}:\n{result.stderr}"
            os.replace(work, binary)
        return binary

    return build_program


@pytest.fixture(scope="session")
def ptxport_run():
    """ptxport_run(binary, *args, device="cpu", trace=None, env=None) -> the finished
    process; `env`: variables added to the program's environment."""

    def run(binary: Path, *args: str, device: str = "cpu", trace: Path | None = None,
            env: dict[str, str] | None = None):
        command = [sys.executable, "-m", "ptxport.cli", "run", "--device", device]
        if trace is not None:
            command += ["--trace", str(trace)]
        env = {**os.environ, **(env or {}), "PYTHONPATH": os.pathsep.join(
            [str(REPOSITORY), *filter(None, [os.environ.get("PYTHONPATH")])])}
        return subprocess.run([*command, "--", str(binary), *args], capture_output=True,
                              text=True, timeout=300, env=env)

    return run
