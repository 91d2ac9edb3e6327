"""Is ptxport's NVPTX output right and as fast as NVIDIA's own code? (issue 4's GPU check)

For every case of tests/kernel_cases (every corpus kernel), on the case's inputs:
  (a) the corpus's own PTX (NVRTC, sm_90) on cuda:0: NVIDIA's code generation, the oracle;
  (b) ptxport's PTX (ptxport.codegen.targets.nvptx) made from it, on cuda:0;
  (c) the CPU device.
(b) and (c) are judged against (a)'s outputs with the case's own comparison (integers bit for
bit, floats within the case's tolerances); (a) is judged against the case's numpy reference
too. Then (a) and (b) are timed: the median of 30 launches, each between two CUDA events and
started from the same inputs (restored by device copies outside the events), queued behind a
kernel that holds the stream until all are queued (so the host's time between launches is
not measured), compilation excluded; the table gives native throughput over ptxport's
(time of (a) / time of (b)) per kernel and the geometric mean. Goals (issue 4): every
kernel correct on both; the geometric mean at least 0.95.

Two steps on two machines:

    python benchmarks/gpu_check.py build [--out build/gpu_check]
        here (NVRTC, the nvidia-cuda-nvcc wheel's ptxas, llvmlite; no GPU): the corpus's PTX,
        ptxport's PTX made from it, and both assembled into cubins, in the cubin cache that
        the cuda backend reads (<out>/cache), since the GPU machine has neither NVRTC nor a
        ptxas recent enough for NVRTC 13.5's PTX
    python benchmarks/gpu_check.py run [--build build/gpu_check] [--json PATH] [--no-cpu]
        on the GPU machine (numpy, llvmlite, cuda-bindings and a driver): prints the table and
        writes JSON (default benchmarks/results/gpu_check.json); exits 1 unless every kernel
        is correct on every column that ran

Everything goes through ptxport's public API (Program, Device, launch) and its cuda backend,
whose `ptx_source` picks (a) or (b); only the timing loop calls the driver itself. A kernel
fault leaves a CUDA context unusable, so `run` runs the cases in a worker process that it
restarts after a fault (and after a case that hangs), going on with the next case.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from kernel_cases import CASES, KernelCase, case_seed, compare_outputs, copy_args  # noqa: E402
from kernel_cases.runtime import buffers_and_params, run_on_device  # noqa: E402

ARCH = "sm_90"
CASE_TIMEOUT_S = 240   # a case with no progress for this long is taken as hung
REPEATS = 30           # timed launches per kernel and column, in ROUNDS batches
ROUNDS = 3
WARMUP = 3


# build: here, with the wheels ------------------------------------------------------------------

@contextlib.contextmanager
def _cache_dir(path: Path):
    """ptxport's cache root moved to `path` for the block (the cubin cache travels; the NVRTC
    cache stays where it was)."""
    before = os.environ.get("PTXPORT_CACHE_DIR")
    os.environ["PTXPORT_CACHE_DIR"] = str(path)
    try:
        yield
    finally:
        if before is None:
            del os.environ["PTXPORT_CACHE_DIR"]
        else:
            os.environ["PTXPORT_CACHE_DIR"] = before


def build(out: Path) -> int:
    from corpus import corpus_ptx, corpus_sources
    from ptxport import Program, ProgramOptions
    from ptxport.runtime.backends.cuda import assemble

    try:
        from ptxport.codegen.targets.nvptx import compile_module
    except ModuleNotFoundError:
        compile_module = None
        print("ptxport.codegen.targets.nvptx is not there: column (b) is left out")
    for folder in ("ptx", "nvptx"):
        (out / folder).mkdir(parents=True, exist_ok=True)
    report: dict[str, dict] = {}
    for source in corpus_sources():
        entry = report[source.name] = {}
        ptx = corpus_ptx(source, ARCH)
        (out / "ptx" / f"{source.stem}.ptx").write_text(ptx)
        with _cache_dir(out / "cache"):
            assemble(ptx, ARCH, source.stem)
        if compile_module is None:
            entry["ptxport"] = "the NVPTX target is not there"
            continue
        try:
            module = Program(ptx, "ptx", ProgramOptions(name=source.name)).compile().module
            ours = compile_module(module, ARCH)
            (out / "nvptx" / f"{source.stem}.ptx").write_text(ours)
            with _cache_dir(out / "cache"):
                assemble(ours, ARCH, f"{source.stem}.ptxport")
            entry["ptxport"] = "ok"
        except Exception as e:  # reported per file; the run step says the same per kernel
            entry["ptxport"] = f"{type(e).__name__}: {e}"
        print(f"{source.name:28} ptxport: {entry['ptxport'][:100]}", flush=True)
    (out / "build.json").write_text(json.dumps({"arch": ARCH, "files": report}, indent=1))
    failed = sum(v.get("ptxport") != "ok" for v in report.values())
    print(f"{len(report)} files in {out}; ptxport's PTX failed for {failed}")
    return 0


# run: on the GPU machine -------------------------------------------------------------------------

class Columns:
    """The programs of one worker: per corpus file, one ObjectCode per column."""

    def __init__(self, build_dir: Path, with_cpu: bool):
        from ptxport import Device
        from ptxport.runtime import backends

        self.build_dir, self.with_cpu = build_dir, with_cpu
        self.gpu = Device("cuda:0")
        self.cpu = Device("cpu") if with_cpu else None
        self.backend = backends.get("cuda")
        self.gate = None  # the CudaKernelBinary of GATE_PTX, once loaded
        self._objects: dict[tuple[str, str], object] = {}

    def kernel(self, column: str, case: KernelCase):
        """(device, Kernel) of `case` in `column` ("native", "ptxport", "cpu"), compiled for
        that device (the backend's ptx_source is read when a kernel is first compiled)."""
        from ptxport import Program, ProgramOptions

        key = (column, case.file)
        if key not in self._objects:
            ptx = (self.build_dir / "ptx" / f"{Path(case.file).stem}.ptx").read_text()
            self._objects[key] = Program(ptx, "ptx", ProgramOptions(name=case.file)).compile()
        kernel = self._objects[key].get_kernel(case.kernel)
        device = self.cpu if column == "cpu" else self.gpu
        if column != "cpu":
            self.backend.ptx_source = column
        kernel._binary(device)
        return device, kernel


# Holds a stream for `duration` ns (the %globaltimer), so that the launches queued behind it
# run back to back, without the host's time between them in the timed spans.
GATE_PTX = """
.version 7.8
.target sm_80
.address_size 64

.visible .entry hold_stream(
	.param .u64 hold_stream_param_0
)
{
	.reg .pred 	%p<2>;
	.reg .b64 	%rd<5>;

	ld.param.u64 	%rd1, [hold_stream_param_0];
	mov.u64 	%rd2, %globaltimer;
$L__wait:
	mov.u64 	%rd3, %globaltimer;
	sub.s64 	%rd4, %rd3, %rd2;
	setp.lt.u64 	%p1, %rd4, %rd1;
	@%p1 bra 	$L__wait;
	ret;
}
"""
ENQUEUE_NS = 150_000   # generous host time to queue one timed launch (restores included)


class KernelTimer:
    """Times one kernel of one column: each launch between two CUDA events, from the case's
    inputs (restored by device copies outside the events), queued behind a gate kernel so
    that only the GPU's time is measured."""

    def __init__(self, columns: Columns, kernel, case: KernelCase, args):
        from ptxport import Program
        from ptxport.runtime.launch import pack_arguments

        device, self.case = columns.gpu, case
        stream = device.create_stream()
        self.buffers, params = buffers_and_params(device, stream, args)
        self.pristine = {i: buf.copy_to(stream=stream) for i, buf in self.buffers.items()}
        stream.sync()
        self.packed, _ = pack_arguments(kernel, tuple(params), device)
        self.binary = kernel._binary(device)
        if columns.gate is None:
            columns.backend.ptx_source = "native"
            gate = Program(GATE_PTX, "ptx").compile().get_kernel("hold_stream")
            columns.gate = gate._binary(device)
        self.gate = columns.gate
        self.stream = columns.backend.stream(0)

    def batch(self, count: int) -> list[float]:
        """`count` launches' times in microseconds."""
        from cuda.bindings import driver

        from ptxport.runtime.backends.cuda import _check

        events = [_check(driver.cuEventCreate(0), "cuEventCreate") for _ in range(2 * count)]
        try:
            hold = np.uint64(ENQUEUE_NS * (count + 2)).tobytes()
            self.gate.launch(0, (1, 1, 1), (1, 1, 1), 0, hold, self.stream)
            for start, end in zip(events[::2], events[1::2], strict=True):
                for i, buf in self.buffers.items():
                    if buf.size:
                        _check(driver.cuMemcpyDtoDAsync(buf.handle, self.pristine[i].handle,
                                                        buf.size, self.stream), "restore")
                _check(driver.cuEventRecord(start, self.stream), "cuEventRecord")
                self.binary.launch(0, self.case.grid, self.case.block, self.case.shared_bytes,
                                   self.packed, self.stream)
                _check(driver.cuEventRecord(end, self.stream), "cuEventRecord")
            _check(driver.cuStreamSynchronize(self.stream),
                   f"kernel {self.case.kernel} failed while timed")
            return [1000.0 * _check(driver.cuEventElapsedTime(start, end), "cuEventElapsedTime")
                    for start, end in zip(events[::2], events[1::2], strict=True)]
        finally:
            for event in events:
                driver.cuEventDestroy(event)

    def close(self) -> None:
        for buf in (*self.buffers.values(), *self.pristine.values()):
            buf.close()


def _judge(case: KernelCase, args, got, expected) -> str:
    """"pass", or why not (the case's own comparison of `got` against `expected`)."""
    try:
        if case.check is not None:
            case.check(copy_args(args), got, expected)
        else:
            compare_outputs(case, args, got, expected)
        return "pass"
    except AssertionError as e:
        return f"FAIL: {e}"


def check_case(columns: Columns, case: KernelCase) -> dict:
    """One case's row: (a) against numpy, (b) and (c) against (a)."""
    args = case.make_args(np.random.default_rng(case_seed(case)))
    reference = case.reference(copy_args(args))
    row = {"file": case.file, "kernel": case.kernel}
    outputs = {}
    for column in ("native", "ptxport", "cpu"):
        if column == "cpu" and not columns.with_cpu:
            row[column] = "not run (--no-cpu)"
            continue
        try:
            device, kernel = columns.kernel(column, case)
            outputs[column] = run_on_device(device, kernel, case, copy_args(args))
        except Exception as e:
            row[column] = f"ERROR: {type(e).__name__}: {e}"
            if _context_lost(e):
                row["context_lost"] = True
                return row
    if "native" not in outputs:  # nothing to judge against but numpy
        row["reference"] = row.get("native", "ERROR")
        if "cpu" in outputs:
            row["cpu"] = _judge(case, args, outputs["cpu"], reference) + " (against numpy)"
        return row
    row["reference"] = _judge(case, args, outputs["native"], reference)
    native = {i: outputs["native"][i] for i in reference if i in outputs["native"]}
    for column in ("ptxport", "cpu"):
        if column in outputs:
            row[column] = _judge(case, args, outputs[column], native)
    return row


def _context_lost(error: BaseException) -> bool:
    return "context is now unusable" in str(error)


def time_case(columns: Columns, case: KernelCase) -> dict:
    """The median launch time of (a) and (b), in batches taken in turn (so that a change of
    clocks touches both alike)."""
    args = case.make_args(np.random.default_rng(case_seed(case)))
    timers = {column: KernelTimer(columns, columns.kernel(column, case)[1], case,
                                  copy_args(args))
              for column in ("native", "ptxport")}
    try:
        for timer in timers.values():
            timer.batch(WARMUP)
        times = {column: [] for column in timers}
        for _ in range(ROUNDS):
            for column, timer in timers.items():
                times[column] += timer.batch(REPEATS // ROUNDS)
    finally:
        for timer in timers.values():
            timer.close()
    return {"file": case.file, "kernel": case.kernel,
            "native_us": float(np.median(times["native"])),
            "ptxport_us": float(np.median(times["ptxport"])), "launches": len(times["native"])}


def worker(build_dir: Path, phase: str, start: int, rows_path: Path, with_cpu: bool,
           skip: set[int]) -> int:
    """Run the cases from `start` on, one JSON line each (a line {"starting": i} first, so
    that the parent knows which case hung); exit 3 when the GPU context was lost."""
    os.environ["PTXPORT_CACHE_DIR"] = str(build_dir / "cache")
    columns = Columns(build_dir, with_cpu)
    with rows_path.open("a") as rows:
        for index in range(start, len(CASES)):
            if index in skip:
                continue
            rows.write(json.dumps({"starting": index}) + "\n")
            rows.flush()
            case = CASES[index]
            began = time.perf_counter()
            try:
                row = (check_case if phase == "check" else time_case)(columns, case)
            except Exception as e:
                row = {"file": case.file, "kernel": case.kernel,
                       "error": f"{type(e).__name__}: {e}",
                       "traceback": traceback.format_exc(limit=4),
                       "context_lost": _context_lost(e)}
            row.update(index=index, phase=phase, seconds=time.perf_counter() - began)
            rows.write(json.dumps(row) + "\n")
            rows.flush()
            if row.get("context_lost"):
                return 3
    return 0


def _read_rows(path: Path) -> tuple[dict[int, dict], int | None]:
    """The finished rows by case index, and the case started last without a row."""
    rows, started = {}, None
    if path.exists():
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            if "starting" in entry:
                started = entry["starting"]
            else:
                rows[entry["index"]] = entry
                started = None if started == entry["index"] else started
    return rows, started


def _line_count(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def _phase(build_dir: Path, phase: str, rows_path: Path, with_cpu: bool,
           skip: set[int]) -> dict[int, dict]:
    """Run one phase over every case through restartable workers (their output, printf
    included, goes to a .log beside `rows_path`)."""
    log_path = rows_path.with_suffix(".log")
    start = 0
    while start < len(CASES):
        command = [sys.executable, __file__, "worker", "--build", str(build_dir), "--phase",
                   phase, "--start", str(start), "--rows", str(rows_path),
                   "--skip", ",".join(map(str, sorted(skip)))]
        if not with_cpu:
            command.append("--no-cpu")
        lines_before = _line_count(rows_path)
        with log_path.open("a") as log:  # kernels' printf output goes there too
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        seen, last_change = -1, time.monotonic()
        while process.poll() is None:
            time.sleep(0.5)
            size = rows_path.stat().st_size if rows_path.exists() else 0
            if size != seen:
                seen, last_change = size, time.monotonic()
            elif time.monotonic() - last_change > CASE_TIMEOUT_S:
                process.kill()
                process.wait()
        if process.returncode != 0 and _line_count(rows_path) == lines_before:
            raise RuntimeError(f"the {phase} worker failed before its first case "
                               f"(exit {process.returncode}); see {log_path}")
        rows, hung = _read_rows(rows_path)
        if hung is not None:  # killed, or died without a row: record it and go on after it
            case = CASES[hung]
            with rows_path.open("a") as f:
                f.write(json.dumps({"index": hung, "phase": phase, "file": case.file,
                                    "kernel": case.kernel, "context_lost": True,
                                    "error": f"the worker stopped (exit {process.returncode}) "
                                             "or hung during this case"}) + "\n")
            rows[hung] = {"index": hung}
        done = [i for i in rows if i >= start]
        if process.returncode == 0 and hung is None:
            break
        start = max(done) + 1 if done else start + 1
    return _read_rows(rows_path)[0]


def _status(text: str | None) -> str:
    if text is None:
        return "-"
    if text.endswith("(against numpy)"):
        return text.split(":", 1)[0].split()[0] + "*"
    return text.split(":", 1)[0]


def run(build_dir: Path, json_path: Path, with_cpu: bool) -> int:
    from cuda.bindings import driver

    from ptxport import Device

    gpu = Device("cuda:0")
    version = driver.cuDriverGetVersion()[1]
    device = f"{gpu.name} (sm_{gpu.arch}, {gpu.properties.multiprocessor_count} SMs), CUDA " \
             f"driver {version // 1000}.{version % 1000 // 10}"
    build_info = json.loads((build_dir / "build.json").read_text())
    print(f"device: {device}; {len(CASES)} cases", flush=True)
    scratch = json_path.with_suffix(".rows")
    checks_path, times_path = scratch.with_name("check.jsonl"), scratch.with_name("time.jsonl")
    json_path.parent.mkdir(parents=True, exist_ok=True)
    for path in (checks_path, times_path):
        path.unlink(missing_ok=True)
        path.with_suffix(".log").unlink(missing_ok=True)
    checks = _phase(build_dir, "check", checks_path, with_cpu, set())
    # Timing only where both GPU columns ran correctly (module state such as device globals
    # was judged before any timing launch changed it).
    timed = {i for i, row in checks.items()
             if row.get("reference") == "pass" and row.get("ptxport") == "pass"}
    times = _phase(build_dir, "time", times_path, with_cpu, set(range(len(CASES))) - timed)
    rows = []
    for index, case in enumerate(CASES):
        check, timing = checks.get(index, {}), times.get(index, {})
        row = {"file": case.file, "kernel": case.kernel,
               "reference": check.get("reference", check.get("error", "not run")),
               "ptxport": check.get("ptxport", check.get("error", "not run")),
               "cpu": check.get("cpu", check.get("error", "not run")),
               "native_us": timing.get("native_us"), "ptxport_us": timing.get("ptxport_us"),
               "timing_error": timing.get("error")}
        if row["native_us"] and row["ptxport_us"]:
            row["throughput"] = row["native_us"] / row["ptxport_us"]
        rows.append(row)
    return _report(rows, device, build_info, json_path, with_cpu)


def _report(rows: list[dict], device: str, build_info: dict, json_path: Path,
            with_cpu: bool) -> int:
    print(f"\n{'kernel':40} {'(a) ref':8} {'(b) ptx':8} {'(c) cpu':8} {'(a) us':>9} "
          f"{'(b) us':>9} {'(a)/(b)':>8}")
    for row in rows:
        name = row["kernel"] if len(row["kernel"]) <= 40 else row["kernel"][:37] + "..."
        a_us = f"{row['native_us']:.1f}" if row["native_us"] else "-"
        b_us = f"{row['ptxport_us']:.1f}" if row["ptxport_us"] else "-"
        ratio = f"{row['throughput']:.3f}" if "throughput" in row else "-"
        print(f"{name:40} {_status(row['reference']):8} {_status(row['ptxport']):8} "
              f"{_status(row['cpu']):8} {a_us:>9} {b_us:>9} {ratio:>8}")
    ratios = [row["throughput"] for row in rows if "throughput" in row]
    geomean = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else None
    counts = {column: sum(row[column] == "pass" for row in rows)
              for column in ("reference", "ptxport", "cpu")}
    print("(* judged against the numpy reference: (a) did not run)")
    print(f"\ndevice: {device}")
    print(f"(a) native vs numpy: {counts['reference']}/{len(rows)} pass")
    print(f"(b) ptxport vs (a):  {counts['ptxport']}/{len(rows)} pass")
    print("(c) cpu vs (a):      " + (f"{counts['cpu']}/{len(rows)} pass" if with_cpu
                                      else "not run (--no-cpu)"))
    if geomean is not None:
        print(f"throughput of (b) relative to (a), geometric mean over {len(ratios)} kernels: "
              f"{geomean:.3f} (goal >= 0.95)")
    for row in rows:
        for column in ("reference", "ptxport", "cpu"):
            if row[column] != "pass" and not row[column].startswith("not run"):
                print(f"\n{column} {row['file']}:{row['kernel']}: {row[column][:1500]}")
        if row["timing_error"]:
            print(f"\ntiming {row['file']}:{row['kernel']}: {row['timing_error'][:1500]}")
    json_path.write_text(json.dumps({
        "device": device, "arch": build_info["arch"], "cases": len(rows), "passed": counts,
        "throughput_geomean": geomean, "timed_kernels": len(ratios), "rows": rows,
        "build": build_info["files"]}, indent=1))
    print(f"\nwrote {json_path}")
    every = counts["reference"] == counts["ptxport"] == len(rows) and (
        not with_cpu or counts["cpu"] == len(rows))
    return 0 if every else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    build_cmd = sub.add_parser("build", help="PTX and cubins for the GPU machine (no GPU)")
    build_cmd.add_argument("--out", type=Path, default=ROOT / "build" / "gpu_check")
    run_cmd = sub.add_parser("run", help="run, compare and time every case on cuda:0")
    run_cmd.add_argument("--build", type=Path, default=ROOT / "build" / "gpu_check")
    run_cmd.add_argument("--json", type=Path,
                         default=ROOT / "benchmarks" / "results" / "gpu_check.json")
    run_cmd.add_argument("--no-cpu", action="store_true", help="leave out column (c)")
    work = sub.add_parser("worker", help="(internal) run cases in a child process")
    work.add_argument("--build", type=Path, required=True)
    work.add_argument("--phase", choices=("check", "time"), required=True)
    work.add_argument("--start", type=int, required=True)
    work.add_argument("--rows", type=Path, required=True)
    work.add_argument("--skip", default="")
    work.add_argument("--no-cpu", action="store_true")
    options = parser.parse_args()
    if options.command == "build":
        sys.exit(build(options.out))
    if options.command == "run":
        sys.exit(run(options.build, options.json, not options.no_cpu))
    skip = {int(i) for i in options.skip.split(",") if i}
    sys.exit(worker(options.build, options.phase, options.start, options.rows,
                    not options.no_cpu, skip))


if __name__ == "__main__":
    main()
