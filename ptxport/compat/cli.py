"""`ptxport run` and `ptxport env`: run an unmodified CUDA program on a ptxport device.

`run` builds the shim if need be (build.py), puts its directory first on LD_LIBRARY_PATH so
that the program's `dlopen("libcuda.so.1")` finds ptxport's, and a program built with
`-cudart shared` (or one that dlopens libcudart.so.13) ptxport's runtime, and replaces itself with
the program: exit status, stdout and stderr are the program's. `env` prints the same
environment as shell assignments, to run a program without the wrapper.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path

from ptxport.errors import InvalidValueError, PtxportError

__all__ = ["add_commands", "device_names", "environment", "joined_devices", "run_command"]


def add_commands(commands) -> None:
    """Add `run` and `env` to the `ptxport` command's subparsers."""
    run = commands.add_parser(
        "run", help="run an unmodified CUDA program on a ptxport device",
        description="Run a CUDA program (built by nvcc, statically or dynamically linked "
                    "with cudart) with ptxport's libcuda.so.1 found first. Its exit status, "
                    "stdout and stderr are the program's. See docs/compat.md.")
    _device_options(run)
    run.add_argument("program", nargs=argparse.REMAINDER,
                     help="the program and its arguments (after --)")
    env = commands.add_parser(
        "env", help="print the environment that runs CUDA programs on ptxport",
        description="Print, as shell assignments, the environment `ptxport run` gives a "
                    "program, e.g. eval \"$(ptxport env --device cpu)\"; ./app")
    _device_options(env)


def _device_options(parser) -> None:
    parser.add_argument(
        "--device", action="append",
        help="cpu, opencl:N, hip:N or cuda:N (default: the best device present). Several "
             "devices, comma-separated or --device repeated (cpu,opencl:0), are the "
             "program's CUDA devices 0, 1, ... (cudaSetDevice, cudaMemcpyPeer); one device "
             "may be named twice. group:cpu,opencl:0 is one CUDA device whose launches are "
             "split over those devices (docs/multidevice.md)")
    parser.add_argument("--trace", metavar="FILE",
                        help="write every CUDA call, its arguments and result to FILE")


def environment(device: str | None, trace: str | None) -> dict[str, str]:
    """The variables to add to a program's environment (LD_LIBRARY_PATH with ptxport's
    directory first; where ptxport's Python finds its modules, and that Python; the device;
    the trace)."""
    from ptxport.compat.build import shim_directory
    from ptxport.runtime.backends.real_driver import SHIM_DIRECTORY_VARIABLE

    if device:
        for name in device_names(device):
            _check_device(name)
    directory = str(shim_directory())
    path = [directory] + [p for p in os.environ.get("LD_LIBRARY_PATH", "").split(":") if p]
    env = {
        "LD_LIBRARY_PATH": ":".join(path),
        "PTXPORT_PYTHONPATH": os.pathsep.join(p for p in sys.path if p and os.path.exists(p)),
        "PTXPORT_PYTHON": sys.executable,
        SHIM_DIRECTORY_VARIABLE: directory,   # where the cuda device must not load libcuda
    }
    if device:
        env["PTXPORT_DEVICE"] = device
    if trace:
        env["PTXPORT_TRACE"] = os.path.abspath(trace)
    return env


def joined_devices(devices: list[str] | None) -> str | None:
    """One PTXPORT_DEVICE value from the --device options (each may list several)."""
    if not devices:
        return None
    names = [name.strip() for name in devices]
    if len(names) > 1 and any(name.lower().startswith("group:") for name in names):
        raise InvalidValueError("a group (--device group:...) is the program's only device: "
                                "name its members inside it, e.g. --device group:cpu,opencl:0")
    return ",".join(names)


def device_names(device: str) -> list[str]:
    """The names of the devices of a PTXPORT_DEVICE value (a group's members)."""
    text = device.strip()
    if text.lower().startswith("group:"):
        text = text[len("group:"):]
    names = [name.strip() for name in text.split(",")]
    if not all(names):
        raise InvalidValueError(f"--device {device}: an empty device name; write names "
                                "separated by commas, e.g. cpu,opencl:0")
    return names


def _check_device(device: str) -> None:
    """Refuse a device name whose backend cannot run here, before the program starts."""
    from ptxport.errors import BackendUnavailableError
    from ptxport.runtime import backends

    name = device.partition(":")[0].strip().lower()
    ok, why = backends.availability(name)
    if not ok:
        raise BackendUnavailableError(f"--device {device}: {why}")
    if name == "cuda":
        # Inside the shim cuda-bindings must load NVIDIA's driver by path: say now, not from
        # inside the program, when this cuda-bindings cannot.
        from ptxport.runtime.backends.real_driver import bindings_loader

        try:
            bindings_loader()
        except BackendUnavailableError as e:
            raise BackendUnavailableError(f"--device {device}: {e}") from None


def wheel_cudart_directory() -> str | None:
    """The directory of the nvidia-cuda-runtime wheel's libcudart.so (the newest release
    present), or None: what `nvcc -cudart shared` links against. At run time ptxport's own
    libcudart.so.13 (first on LD_LIBRARY_PATH) serves the program."""
    try:
        import nvidia
    except ImportError:
        return None
    found = []
    for root in map(Path, nvidia.__path__):
        for library in (*root.glob("cu[0-9]*/lib/libcudart.so.*"),
                        *root.glob("cuda_runtime/lib/libcudart.so.*")):
            release = library.parent.parent.name[2:]
            found.append((int(release) if release.isdigit() else 12, str(library.parent)))
    return max(found)[1] if found else None


def run_command(args) -> int:
    """`ptxport run`: exec the program, or print why it cannot run and return 2."""
    program = args.program[1:] if args.program[:1] == ["--"] else args.program
    if not program:
        print("ptxport run: name a program to run: ptxport run [--device D] -- ./app args",
              file=sys.stderr)
        return 2
    try:
        env = {**os.environ, **environment(joined_devices(args.device), args.trace)}
    except PtxportError as e:
        print(f"ptxport run: {e}", file=sys.stderr)
        return 2
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execvpe(program[0], program, env)
    except OSError as e:
        print(f"ptxport run: cannot run {program[0]}: {e.strerror}", file=sys.stderr)
        return 127
    return 0  # not reached: exec replaced this process


def env_command(args) -> int:
    """`ptxport env`: print the environment as `export NAME=value` lines."""
    try:
        env = environment(joined_devices(args.device), args.trace)
    except PtxportError as e:
        print(f"ptxport env: {e}", file=sys.stderr)
        return 2
    for name, value in env.items():
        print(f"export {name}={shlex.quote(value)}")
    return 0
