"""Does ptxport's reading of wgmma match an H100? (issue 19, item 3)

The hand-written wgmma kernels of tests/codegen/wgmma_cases.py (every swizzle mode, K- and
MN-major operands, A in registers, bf16, tf32, f16 accumulators, scale-d, negated inputs) run
  (a) natively on cuda:0 (the kernel's own PTX, sm_90a): NVIDIA's tensor cores, the oracle;
  (b) through ptxport's NVPTX target (wgmma passed through as inline PTX) on cuda:0;
  (c) on ptxport's cpu device (codegen/targets/cpu/gang/wgmma.py);
each against the expected registers that wgmma_cases.py computes in numpy from the PTX ISA's
descriptor and fragment rules (inputs are small multiples of powers of two: every sum is exact,
so all must agree bit for bit). A failure in (a) means the rules in wgmma_cases.py (and so the
CPU lowering built on the same reading) are wrong.

Two steps on two machines, as benchmarks/gpu_check.py:

    python benchmarks/wgmma_gpu_check.py build [--out build/wgmma_gpu_check]
        here (the nvidia-cuda-nvcc wheel's ptxas, llvmlite; no GPU): both PTX texts of every
        case assembled for sm_90a into the cubin cache the cuda backend reads (<out>/cache)
    python benchmarks/wgmma_gpu_check.py run [--build build/wgmma_gpu_check] [--no-cpu]
        on the GPU machine: prints one line per case and column; exits 1 unless all agree
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "codegen"))
sys.path.insert(0, str(ROOT))

import wgmma_cases as wc  # noqa: E402


def build(out: Path) -> int:
    from ptxport import Program
    from ptxport.codegen.targets.nvptx import compile_module
    from ptxport.runtime.backends.cuda import assemble

    os.environ["PTXPORT_CACHE_DIR"] = str(out / "cache")
    for case in wc.cases():
        ptx = wc.ptx(case)
        assemble(ptx, "sm_90a", case.name)
        ours = compile_module(Program(ptx, "ptx").compile().module, "sm_90")
        assemble(ours, "sm_90a", f"{case.name}.ptxport")
        print(f"{case.name}: assembled (native and ptxport)", flush=True)
    return 0


def _launch(device, kernel, case: wc.Case, args: dict) -> np.ndarray:
    from ptxport import LaunchConfig, launch

    stream = device.default_stream
    buffers = []
    for name in ("image", "out", "ain"):
        host = np.ascontiguousarray(args[name])
        buffer = device.allocate(host.nbytes, stream=stream)
        buffer.copy_from(host.reshape(-1).view(np.uint8), stream=stream)
        buffers.append(buffer)
    image, out, ain = buffers
    launch(stream, LaunchConfig(grid=1, block=wc.THREADS), kernel, image,
           np.uint32(args["image"].size), out, np.uint64(args["desc_a"]),
           np.uint64(args["desc_b"]), ain, np.uint32(args["scale_d"]))
    result = np.empty_like(args["out"])
    out.copy_to(result.reshape(-1).view(np.uint8), stream=stream)
    stream.sync()
    return result


def run(build_dir: Path, with_cpu: bool) -> int:
    from ptxport import Device, Program
    from ptxport.runtime.backends import get

    os.environ["PTXPORT_CACHE_DIR"] = str(build_dir / "cache")
    gpu = Device("cuda:0")
    columns = ["native", "ptxport"] + (["cpu"] if with_cpu else [])
    failures = 0
    for case in wc.cases():
        args = wc.arguments(case)
        for column in columns:
            device = Device("cpu") if column == "cpu" else gpu
            if column != "cpu":
                get("cuda").ptx_source = column
            try:
                kernel = Program(wc.ptx(case), "ptx").compile().get_kernel("wgmma_test")
                got = _launch(device, kernel, case, args)
                wrong = int(np.count_nonzero(got != args["want"]))
                verdict = "ok" if wrong == 0 else f"{wrong} of {got.size} registers differ"
            except Exception as e:  # reported per case and column
                verdict = f"{type(e).__name__}: {e}"
            failures += verdict != "ok"
            print(f"{case.name:40} {column:8} {verdict[:160]}", flush=True)
    print(f"{failures} failures")
    return 1 if failures else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="step", required=True)
    b = sub.add_parser("build")
    b.add_argument("--out", type=Path, default=ROOT / "build" / "wgmma_gpu_check")
    r = sub.add_parser("run")
    r.add_argument("--build", type=Path, default=ROOT / "build" / "wgmma_gpu_check")
    r.add_argument("--no-cpu", action="store_true")
    args = parser.parse_args()
    if args.step == "build":
        sys.exit(build(args.out))
    sys.exit(run(args.build, not args.no_cpu))


if __name__ == "__main__":
    main()
