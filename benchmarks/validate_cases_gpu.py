"""Do the whole-kernel references (tests/kernel_cases) agree with an NVIDIA GPU?

Runs every case of tests/kernel_cases natively through the CUDA driver and compares with its
numpy reference through run_case. The kernels are the corpus's own PTX (NVRTC, sm_90)
assembled by the nvidia-cuda-nvcc wheel's ptxas into cubins, so the GPU runs exactly the PTX
that ptxport reads; a driver older than that NVRTC cannot JIT its PTX, but loads its cubins.
The two steps run on different machines:

    python benchmarks/validate_cases_gpu.py build [--out build/gpu_cases]
        (here: NVRTC and ptxas wheels, no GPU) writes one .cubin and one .ptx per corpus file
    python benchmarks/validate_cases_gpu.py run [--cubins build/gpu_cases] [--json PATH]
            [--save PATH.npz]
        (on the GPU machine: numpy and libcuda only) launches every case, prints a table
        (kernel, pass/fail, max abs and ulp error) and writes JSON; exits 1 on any failure.
        --save keeps every case's arguments and the GPU's outputs
    python benchmarks/validate_cases_gpu.py compare PATH.npz [--json PATH]
        judges saved GPU outputs against the references again, here, without a GPU (for
        working on references between GPU runs); the same table and exit status

`run` falls back to compiling a file with the machine's nvcc when its cubin is missing or
does not load. The driver is called through ctypes (cuModuleLoadData, cuLaunchKernel), which
passes structs by value as their bytes, as the cases give them.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from kernel_cases import CASES, Arg, KernelCase, run_case  # noqa: E402

KERNEL_DIR = ROOT / "tests" / "kernels"
ARCH = "sm_90"


# build: PTX -> cubin, on the machine with the wheels ----------------------------------------------

def build(out_dir: Path) -> None:
    from corpus import corpus_ptx, corpus_sources, ptxas_path

    ptxas = ptxas_path()
    if ptxas is None:
        sys.exit("no ptxas: pip install nvidia-cuda-nvcc")
    out_dir.mkdir(parents=True, exist_ok=True)
    for source in corpus_sources():
        ptx = corpus_ptx(source, ARCH)
        ptx_file = out_dir / f"{source.stem}.ptx"
        ptx_file.write_text(ptx)
        subprocess.run([str(ptxas), f"-arch={ARCH}", str(ptx_file), "-o",
                        str(out_dir / f"{source.stem}.cubin")], check=True)
    print(f"{len(corpus_sources())} cubins for {ARCH} in {out_dir}")


# run: the CUDA driver through ctypes --------------------------------------------------------------

class Driver:
    """The few CUDA driver entry points a launch needs, on device 0's primary context."""

    def __init__(self) -> None:
        self.lib = ctypes.CDLL("libcuda.so.1")
        self._call("cuInit", 0)
        device = ctypes.c_int()
        self._call("cuDeviceGet", ctypes.byref(device), 0)
        name = ctypes.create_string_buffer(256)
        self._call("cuDeviceGetName", name, 256, device)
        self.name = name.value.decode()
        version = ctypes.c_int()
        self._call("cuDriverGetVersion", ctypes.byref(version))
        self.version = f"{version.value // 1000}.{version.value % 1000 // 10}"
        self.context = ctypes.c_void_p()
        self._call("cuDevicePrimaryCtxRetain", ctypes.byref(self.context), device)
        self._call("cuCtxSetCurrent", self.context)

    def _call(self, function: str, *args) -> None:
        result = getattr(self.lib, function)(*args)
        if result != 0:
            message = ctypes.c_char_p()
            self.lib.cuGetErrorName(result, ctypes.byref(message))
            raise RuntimeError(f"{function} failed: {message.value.decode()} ({result})")

    def load(self, image: bytes) -> ctypes.c_void_p:
        module = ctypes.c_void_p()
        self._call("cuModuleLoadData", ctypes.byref(module), ctypes.c_char_p(image))
        return module

    def unload(self, module: ctypes.c_void_p) -> None:
        self._call("cuModuleUnload", module)

    def function(self, module: ctypes.c_void_p, name: str) -> ctypes.c_void_p:
        handle = ctypes.c_void_p()
        self._call("cuModuleGetFunction", ctypes.byref(handle), module, name.encode())
        return handle

    def alloc(self, nbytes: int) -> int:
        pointer = ctypes.c_uint64()
        self._call("cuMemAlloc_v2", ctypes.byref(pointer), ctypes.c_size_t(max(nbytes, 1)))
        return pointer.value

    def free(self, pointer: int) -> None:
        self._call("cuMemFree_v2", ctypes.c_uint64(pointer))

    def upload(self, pointer: int, host: np.ndarray) -> None:
        host = np.ascontiguousarray(host)
        self._call("cuMemcpyHtoD_v2", ctypes.c_uint64(pointer), host.ctypes.data_as(
            ctypes.c_void_p), ctypes.c_size_t(host.nbytes))

    def download(self, pointer: int, host: np.ndarray) -> None:
        self._call("cuMemcpyDtoH_v2", host.ctypes.data_as(ctypes.c_void_p),
                   ctypes.c_uint64(pointer), ctypes.c_size_t(host.nbytes))

    def launch(self, function, grid, block, shared_bytes: int, params: list[bytes]) -> None:
        buffers = [ctypes.create_string_buffer(p, len(p)) for p in params]
        pointers = (ctypes.c_void_p * max(len(buffers), 1))(
            *[ctypes.cast(b, ctypes.c_void_p) for b in buffers])
        self._call("cuLaunchKernel", function, *(ctypes.c_uint(v) for v in grid),
                   *(ctypes.c_uint(v) for v in block), ctypes.c_uint(shared_bytes), None,
                   pointers, None)
        self._call("cuCtxSynchronize")


def _nvcc_cubin(source: Path) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "module.cubin"
        subprocess.run(["nvcc", "-cubin", f"-arch={ARCH}", "-std=c++17", str(source), "-o",
                        str(target)], check=True, capture_output=True, text=True)
        return target.read_bytes()


class Modules:
    """One loaded module per corpus file, kept for all of that file's cases (module globals
    persist between its launches, as they do for any CUDA program)."""

    def __init__(self, driver: Driver, cubin_dir: Path) -> None:
        self.driver, self.cubin_dir = driver, cubin_dir
        self.loaded: dict[str, tuple[ctypes.c_void_p, str]] = {}

    def get(self, file: str) -> tuple[ctypes.c_void_p, str]:
        if file not in self.loaded:
            self.loaded[file] = self._load(file)
        return self.loaded[file]

    def _load(self, file: str) -> tuple[ctypes.c_void_p, str]:
        cubin = self.cubin_dir / (Path(file).stem + ".cubin")
        errors = []
        if cubin.is_file():
            try:
                return self.driver.load(cubin.read_bytes()), "wheel cubin"
            except RuntimeError as error:
                errors.append(f"cubin: {error}")
        try:
            return self.driver.load(_nvcc_cubin(KERNEL_DIR / file)), "nvcc cubin"
        except (RuntimeError, OSError, subprocess.CalledProcessError) as error:
            errors.append(f"nvcc: {getattr(error, 'stderr', '') or error}")
        raise RuntimeError(f"{file}: no module: " + "; ".join(errors))


def make_launcher(driver: Driver, modules: Modules):
    def launcher(case: KernelCase, args: list[Arg]) -> dict[int, np.ndarray]:
        module, _ = modules.get(case.file)
        function = driver.function(module, case.kernel)
        pointers: dict[int, int] = {}
        try:
            for index, arg in enumerate(args):
                if arg.kind in ("in", "out", "inout"):
                    pointers[index] = driver.alloc(arg.value.nbytes)
                    driver.upload(pointers[index], arg.value)
            params = []
            for index, arg in enumerate(args):
                if not arg.passed:
                    continue
                if arg.kind in ("in", "out", "inout"):
                    params.append(np.uint64(pointers[index]).tobytes())
                elif arg.kind == "struct":
                    value = np.array(arg.value, dtype=arg.value.dtype)
                    for member, target in arg.pointers.items():
                        value[member] = pointers[target]
                    params.append(value.tobytes())
                else:
                    params.append(arg.value.tobytes())
            sys.stdout.flush()
            driver.launch(function, case.grid, case.block, case.shared_bytes, params)
            results = {}
            for index, arg in enumerate(args):
                if arg.kind in ("out", "inout"):
                    host = np.empty_like(arg.value)
                    driver.download(pointers[index], host)
                    results[index] = host
            return results
        finally:
            for pointer in pointers.values():
                driver.free(pointer)
    return launcher


def _key(case: KernelCase, what: str) -> str:
    return f"{case.file}|{case.kernel}|{what}"


def _arg_bytes(arg: Arg) -> np.ndarray:
    return np.frombuffer(np.ascontiguousarray(arg.value).tobytes(), dtype=np.uint8)


def recording(launcher, saved: dict[str, np.ndarray]):
    """A launcher that also keeps the arguments it was given and the outputs it returns."""
    def record(case: KernelCase, args: list[Arg]) -> dict[int, np.ndarray]:
        for index, arg in enumerate(args):
            saved[_key(case, f"arg{index}")] = _arg_bytes(arg)
        results = launcher(case, args)
        for index, value in results.items():
            saved[_key(case, f"out{index}")] = value
        return results
    return record


def replaying(saved: dict[str, np.ndarray]):
    """A launcher that answers with saved outputs, after checking that the arguments built
    here are the ones the saved run used."""
    def replay(case: KernelCase, args: list[Arg]) -> dict[int, np.ndarray]:
        for index, arg in enumerate(args):
            key = _key(case, f"arg{index}")
            if key not in saved:
                raise RuntimeError(f"{case.name}: nothing saved for argument {index}")
            if not np.array_equal(saved[key], _arg_bytes(arg)):
                raise RuntimeError(f"{case.name}: argument {index} differs from the saved run's "
                                   "(the case's inputs changed: run it on the GPU again)")
        return {index: saved[_key(case, f"out{index}")] for index, arg in enumerate(args)
                if arg.kind in ("out", "inout") and _key(case, f"out{index}") in saved}
    return replay


def judge(launcher, device: str, json_path: Path | None, modules: Modules | None = None) -> int:
    """Run every case through `launcher`; print the table; 0 if all pass."""
    print(f"device: {device}; {len(CASES)} cases", flush=True)
    rows, failures = [], []
    for case in CASES:
        start = time.perf_counter()
        try:
            report = run_case(case, launcher)
            status, detail = "pass", ""
            max_abs = report.max_abs if case.check is None else None
            max_ulp = report.max_ulp if case.check is None else None
        except AssertionError as error:
            status, detail, max_abs, max_ulp = "FAIL", str(error), None, None
        except RuntimeError as error:
            status, detail, max_abs, max_ulp = "ERROR", str(error), None, None
        seconds = time.perf_counter() - start
        source = modules.loaded.get(case.file, (None, "-"))[1] if modules else "saved"
        rows.append({"file": case.file, "kernel": case.kernel, "status": status,
                     "max_abs": max_abs, "max_ulp": max_ulp, "seconds": seconds,
                     "module": source, "detail": detail})
        if status != "pass":
            failures.append(rows[-1])
    sys.stdout.flush()
    print(f"\n{'kernel':44} {'result':6} {'max abs':>10} {'max ulp':>8}")
    for row in rows:
        name = row["kernel"] if len(row["kernel"]) <= 44 else row["kernel"][:41] + "..."
        err_abs = "-" if row["max_abs"] is None else f"{row['max_abs']:.3g}"
        err_ulp = "-" if row["max_ulp"] is None else f"{row['max_ulp']:.0f}"
        print(f"{name:44} {row['status']:6} {err_abs:>10} {err_ulp:>8}")
    passed = sum(row["status"] == "pass" for row in rows)
    print(f"\n{passed}/{len(rows)} cases pass on {device}")
    for row in failures:
        print(f"\n{row['status']} {row['file']}:{row['kernel']}\n{row['detail']}")
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps({"device": device, "passed": passed, "cases": rows},
                                        indent=1))
    return 0 if not failures else 1


def run(cubin_dir: Path, json_path: Path | None, save: Path | None) -> int:
    driver = Driver()
    modules = Modules(driver, cubin_dir)
    saved: dict[str, np.ndarray] = {}
    launcher = recording(make_launcher(driver, modules), saved)
    status = judge(launcher, f"{driver.name}, driver {driver.version}", json_path, modules)
    if save is not None:
        save.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(save, device=np.array(driver.name), **saved)
    return status


def compare(saved_path: Path, json_path: Path | None) -> int:
    with np.load(saved_path) as archive:
        saved = {key: archive[key] for key in archive.files}
    return judge(replaying(saved), f"{saved['device']} (saved run)", json_path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    build_cmd = sub.add_parser("build", help="assemble the corpus's PTX into cubins (no GPU)")
    build_cmd.add_argument("--out", type=Path, default=ROOT / "build" / "gpu_cases")
    run_cmd = sub.add_parser("run", help="launch every case on the GPU and compare")
    run_cmd.add_argument("--cubins", type=Path, default=ROOT / "build" / "gpu_cases")
    run_cmd.add_argument("--json", type=Path,
                         default=ROOT / "benchmarks" / "results" / "validate_cases_gpu.json")
    run_cmd.add_argument("--save", type=Path, help="keep arguments and outputs (.npz)")
    compare_cmd = sub.add_parser("compare", help="judge a saved run's outputs again, here")
    compare_cmd.add_argument("saved", type=Path)
    compare_cmd.add_argument("--json", type=Path)
    options = parser.parse_args()
    if options.command == "build":
        build(options.out)
    elif options.command == "run":
        sys.exit(run(options.cubins, options.json, options.save))
    else:
        sys.exit(compare(options.saved, options.json))


if __name__ == "__main__":
    main()
