"""The portable GEMM on an NVIDIA GPU against cuBLAS (benchmarks/gemm.py --gpu; issue 17).

For each precision (FP32: the SIMT kernel, cuBLAS with TF32 off; BF16: the mma.sync kernel,
bf16 in and out, f32 accumulate), layout TN (op(A) = A^T, as llm.c calls it) and size n:

- cuBLAS (through torch, else cupy), the faster of two measurements;
- each tile of --tiles (or the autotuner's choice) through ptxport's NVPTX route: NVRTC's
  PTX, read by ptxport, lowered and emitted again by ptxport's NVPTX target;
- with --native, the SAME kernel variant (gemm.cu, same macros, same NVRTC PTX) loaded as
  NVRTC wrote it (the cuda backend's ptx_source "native": the driver's JIT or ptxas, no
  ptxport in between): the ratio ptxport/native is what ptxport's re-lowering costs or gains;
- at the end, per precision and size, the best tile measured and the tile gemm() picks
  (ptxport.blas.portable.tuned_config, tuned on first use, cached) with its speed.

Kernel times are GPU times: launches queued straight on the device's CUDA stream
(ptxport's runtime waits for each launch, which at small sizes adds the host's time between
kernels), after a warm-up of about --warm-ms (clocks up), as the median over 7 groups of
launches of about 25 ms each, between CUDA events; cuBLAS is timed the same way. Where the
host took nearly as long to queue the launches as the GPU to run them (kernels of a few
microseconds: BF16 at 1024), the GPU may have idled between them: such figures are marked
"*host-bound" (a lower bound on the kernel's speed).
"""

from __future__ import annotations

import functools
import traceback

import numpy as np

TF = 1e9   # flop per ms in a TFLOP/s
_WARM_MS, _GROUP_MS, _GROUPS = 300.0, 25.0, 7


def in_type(dtype: str) -> np.dtype:
    return np.dtype(np.float32) if dtype == "float32" else np.dtype("<u2")


# measurements where the host took at least this share of the GPU's time to queue the
# launches: the GPU may have waited for them (small kernels), marked "*" in the table
_HOST_BOUND = 0.8
host_bound: set[str] = set()


def _median_groups(run, record, what: str) -> float:
    """GPU ms of one launch by ptxport.blas.timing.median_ms; `what` goes to host_bound
    when queueing the launches took the host nearly as long as the GPU ran them."""
    from ptxport.blas import timing

    ms, host = timing.median_ms((run, record), _WARM_MS, _GROUP_MS, _GROUPS)
    if host >= _HOST_BOUND * ms:
        host_bound.add(what)
    return ms


def vendor_ms(n: int, dtype: str) -> tuple[str, float]:
    """cuBLAS through torch (else cupy): C = A^T B, n x n x n, GPU time (see module doc)."""
    try:
        import torch

        torch.backends.cuda.matmul.allow_tf32 = False   # FP32 means FP32 (no TF32)
        kind = torch.float32 if dtype == "float32" else torch.bfloat16
        a = torch.randn(n, n, device="cuda", dtype=kind)
        b = torch.randn(n, n, device="cuda", dtype=kind)
        out = torch.empty(n, n, device="cuda", dtype=kind)

        def record():
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

            def stop() -> float:
                e.record()
                e.synchronize()
                return s.elapsed_time(e)
            return s.record, stop
        ms = _median_groups(lambda: torch.matmul(a.t(), b, out=out), record,
                            f"cuBLAS {dtype} {n}")
        a = b = out = None
        torch.cuda.empty_cache()
        return "torch", ms
    except ImportError:
        import cupy

        kind = cupy.float32 if dtype == "float32" else cupy.dtype("bfloat16")
        a = cupy.random.standard_normal((n, n)).astype(kind)
        b = cupy.random.standard_normal((n, n)).astype(kind)

        def record():
            s, e = cupy.cuda.Event(), cupy.cuda.Event()

            def stop() -> float:
                e.record()
                e.synchronize()
                return cupy.cuda.get_elapsed_time(s, e)
            return s.record, stop
        return "cupy", _median_groups(lambda: cupy.matmul(a.T, b), record,
                                      f"cuBLAS {dtype} {n}")


def _buffers(device, n: int, kind: np.dtype, values=None):
    stream = device.create_stream()
    bufs = [device.allocate(n * n * kind.itemsize, stream=stream) for _ in range(3)]
    for i, buf in enumerate(bufs[:2]):
        if values is None:   # bytes 0x3c: 0.0115 in f32 and bf16 (not zeros, which may run
            buf.fill(0x3C, 1, stream=stream)   # cooler on tensor cores)
        else:
            buf.copy_from(values[i], stream=stream)
    stream.sync()
    return stream, bufs


@functools.cache
def _native_kernel(device, variant: tuple):
    """The kernel of `variant` (portable.program_for's arguments: the macros of the ptxport
    route's kernel) whose binary is NVRTC's PTX as written."""
    from ptxport.blas import portable

    native = portable.program_for(*variant).compile().get_kernel("ptxport_gemm")
    backend = device._backend
    saved, backend.ptx_source = backend.ptx_source, "native"
    try:
        native._binary(device)   # compiled (loaded) now, under the native source
    finally:
        backend.ptx_source = saved
    return native


def kernel_ms(device, config, n: int, dtype: str, native: bool = False) -> float:
    """GPU ms of the portable GEMM, TN, tile `config`, launched straight on the device's
    CUDA stream (ptxport's route, or with `native` the NVRTC PTX as written)."""
    from ptxport.blas import _Gemm, portable, timing

    kind = in_type(dtype)
    stream, (a, b, c) = _buffers(device, n, kind)
    problem = _Gemm(True, False, n, n, n, (n, n, n), (0, 0, 0), 1)
    kernel, launch_config, args = portable.gemm_launch(device, config, problem, a, b, c, kind,
                                                       kind, 1.0, 0.0)
    portable.launch_gemm(stream, config, problem, a, b, c, kind, kind, 1.0, 0.0)
    stream.sync()   # the ptxport route compiled, loaded and checked by ptxport's launch
    if native:
        vec = config.mma and portable._aligned(problem, (a, b), 8) or \
            not config.mma and portable._aligned(problem, (a, b), 4)
        k = portable._kind(kind)
        kernel = _native_kernel(device, (portable._arch(device, config), config, 1, 0, k,
                                         k, vec, vec and portable._even(problem, config)))
    run, record = timing.direct(device, launch_config, kernel, args)
    ms = _median_groups(run, record,
                        f"{'native' if native else 'ptxport'} {dtype} {n} {config.label}")
    for buf in (a, b, c):
        buf.close(stream)
    stream.sync()
    return ms


def check(device, config, n: int, dtype: str) -> float:
    """Max relative error of the portable GEMM (ptxport's route) against numpy (f64) at n,
    TN."""
    from ptxport.blas import _Gemm, portable

    rng = np.random.default_rng(0)
    a = rng.integers(-8, 9, (n, n)).astype(np.float32) / 8
    b = rng.integers(-8, 9, (n, n)).astype(np.float32) / 8
    kind = in_type(dtype)

    def stored(x: np.ndarray) -> np.ndarray:
        x = np.ascontiguousarray(x).ravel()
        return x if dtype == "float32" else (x.view(np.uint32) >> 16).astype(np.uint16)

    stream, bufs = _buffers(device, n, kind, (stored(a), stored(b)))
    portable.launch_gemm(stream, config, _Gemm(True, False, n, n, n, (n, n, n), (0, 0, 0), 1),
                         *bufs, kind, kind, 1.0, 0.0)
    got = np.empty(n * n, kind)
    bufs[2].copy_to(got, stream=stream)
    stream.sync()
    for buf in bufs:
        buf.close(stream)
    if dtype != "float32":
        got = (got.astype(np.uint32) << 16).view(np.float32)
    # column-major: A stored k x m is a.T's row-major bytes; C(i,j) = sum_p A(p,i) B(p,j)
    want = (a.astype(np.float64) @ b.T.astype(np.float64)).T
    got = got.reshape(n, n)
    return float(np.max(np.abs(got - want)) / max(1.0, np.max(np.abs(want))))


def gpu(sizes: list[int], tiles: list[str] | None, dtypes: tuple[str, ...],
        native: bool) -> dict:
    from ptxport import Device
    from ptxport.blas import portable

    device = Device("cuda:0")
    report = {"device": device.name, "rows": [], "errors": [], "picks": []}
    print(f"{device.name}; GPU times, medians of {_GROUPS} groups of ~{_GROUP_MS:g} ms after "
          f"~{_WARM_MS:g} ms warm-up")
    print(f"{'dtype':>9} {'n':>5} {'cuBLAS TF/s':>12} {'ptxport TF/s':>13} {'ratio':>6}"
          + (f" {'native TF/s':>12} {'ratio':>6} {'ptx/nat':>7}" if native else "") + "  tile")
    for dtype in dtypes:
        vendor = {}
        for n in sizes:
            try:   # the faster of two runs: cuBLAS's first run of a size, warm-up and all,
                #    measured up to 20% slow at 1024 on the H100 (2026-11-26)
                vendor[n] = min(vendor_ms(n, dtype), vendor_ms(n, dtype), key=lambda v: v[1])
            except Exception:
                report["errors"].append(f"cuBLAS {dtype} n={n}: {traceback.format_exc(limit=3)}")
        mma = portable._uses_mma(device, in_type(dtype))
        for config in portable.parse_tiles(tiles or [], mma, portable._uses_wgmma(device)):
            _tile_rows(device, config, dtype, sizes, sizes[0], vendor, report, native)
        _picks(device, dtype, sizes, vendor, report)
    return report


def _tile_rows(device, config, dtype: str, sizes: list[int], check_n: int, vendor: dict,
               report: dict, native: bool) -> None:
    """One tile configuration at each of `sizes`, next to cuBLAS (and its native build),
    after a correctness check at check_n."""
    tile = config.label
    try:
        err = check(device, config, check_n, dtype)
        report.setdefault("checks", {})[f"{dtype} {tile} n={check_n}"] = err
        print(f"check {dtype} {tile} n={check_n}: max rel err {err:.2e}", flush=True)
    except Exception:
        report["errors"].append(f"check {dtype} {tile}: {traceback.format_exc(limit=3)}")
        print(f"check {dtype} {tile} failed: {report['errors'][-1].splitlines()[-1]}")
    for n in sizes:
        row = {"dtype": dtype, "n": n, "tile": tile}
        try:
            row["ptxport_ms"] = kernel_ms(device, config, n, dtype)
            if native:
                row["native_ms"] = kernel_ms(device, config, n, dtype, native=True)
        except Exception:
            report["errors"].append(f"{dtype} {tile} n={n}: {traceback.format_exc(limit=3)}")
            print(f"{dtype:>9} {n:5d} failed: {report['errors'][-1].splitlines()[-1]}")
            if "ptxport_ms" not in row:
                continue
        report["rows"].append(row)
        print(_line(row, vendor, native), flush=True)


def _line(row: dict, vendor: dict, native: bool) -> str:
    n, flop = row["n"], 2 * row["n"] ** 3 / TF
    ref = vendor[n][1] if n in vendor else float("nan")
    row["ratio"] = ref / row["ptxport_ms"]
    text = f"{row['dtype']:>9} {n:5d} {flop / ref:12.1f} {flop / row['ptxport_ms']:13.1f} " \
           f"{row['ratio']:6.2f}"
    if native:
        nat = row.get("native_ms", float("nan"))
        text += f" {flop / nat:12.1f} {ref / nat:6.2f} {nat / row['ptxport_ms']:7.2f}"
    marks = [who for who in ("cuBLAS", "ptxport", "native")
             if f"{who} {row['dtype']} {n}" + ("" if who == "cuBLAS" else f" {row['tile']}")
             in host_bound]
    return f"{text}  {row['tile']}" + (f"  *host-bound: {', '.join(marks)}" if marks else "")


def _picks(device, dtype: str, sizes: list[int], vendor: dict, report: dict) -> None:
    """Per size: the best tile measured above, and the tile gemm() takes (the autotuner's,
    tuned now if not cached) with its speed."""
    from ptxport.blas import portable

    kind = in_type(dtype)
    mma = portable._uses_mma(device, kind)
    for n in sizes:
        rows = [r for r in report["rows"] if r["dtype"] == dtype and r["n"] == n]
        best = min(rows, key=lambda r: r["ptxport_ms"]) if rows else None
        try:
            config = portable.tuned_config(device, mma, kind, kind, portable.tune_size(n, n),
                                           "TN")
            ms = kernel_ms(device, config, n, dtype)
        except Exception:
            report["errors"].append(f"pick {dtype} n={n}: {traceback.format_exc(limit=3)}")
            print(f"gemm() pick {dtype} n={n} failed: {report['errors'][-1].splitlines()[-1]}")
            continue
        flop, ref = 2 * n ** 3 / TF, vendor[n][1] if n in vendor else float("nan")
        pick = {"dtype": dtype, "n": n, "gemm_tile": config.label, "gemm_ms": ms,
                "gemm_ratio": ref / ms}
        text = f"{dtype:>9} {n:5d} gemm() picks {config.label:>24}: {flop / ms:7.1f} TF/s " \
               f"ratio {ref / ms:5.2f}"
        if best is not None:
            pick.update(best_tile=best["tile"], best_ms=best["ptxport_ms"],
                        best_ratio=ref / best["ptxport_ms"])
            text += f" | best tile {best['tile']:>24}: {flop / best['ptxport_ms']:7.1f} " \
                    f"TF/s ratio {ref / best['ptxport_ms']:5.2f}"
        report["picks"].append(pick)
        print(text, flush=True)
