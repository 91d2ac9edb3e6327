"""Does ptxport's texture sampler fetch what an NVIDIA GPU's texture unit fetches?

Every case of tests/texture_reference.py (1D/2D/3D x 9 channel formats x address mode x
filter mode x normalized coordinates; 360 cases of 96 fetches each, and 7 cube map cases:
4 formats x point/linear) runs three ways:
- natively: a CUDA array and texture object made with the CUDA driver (cuda-bindings'
  cuArray3DCreate, cuMemcpy3D, cuTexObjectCreate), read by the test kernels compiled by
  ptxport's NVPTX target (which keeps the tex instructions) on cuda:0;
- through ptxport on `--device` (default cpu): its own arrays and texture objects
  (ptxport.runtime.textures), the kernels' tex lowered to the sampler (passes/textures.py);
- in the numpy model (tests/texture_reference.py) the tests hold ptxport to.
It prints a summary first (per format and dimension, how many cases agree bit for bit in all
channels and in the format's own; per category of filter, address mode, coordinates and
format kind, how many cases and fetches differ), then a few example fetches per category with
their coordinates and each channel as GPU|model (floats, ulps apart), all within about 10 KB;
it writes benchmarks/results/texture_check.json and every GPU fetch to
benchmarks/results/texture_check_gpu.npz (for fitting the model to).

Two steps on two machines, as benchmarks/gpu_check.py (the GPU machine has neither NVRTC nor
a ptxas for NVRTC 13.5's PTX):

    python benchmarks/texture_check.py build [--out build/texture_check]
        here: the kernels' PTX (NVRTC), and ptxport's NVPTX output of it assembled into the
        cubin cache that the cuda backend reads (<out>/cache)
    python benchmarks/texture_check.py run [--build build/texture_check] [--device cpu]
                                           [--seed N]
        on the GPU machine (numpy, llvmlite, cuda-bindings, a driver); exits 1 on a mismatch;
        --seed N draws other texels and coordinates than the recorded ones (0)
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import texture_reference as ref  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "texture_check.json"
ARCH = "sm_90"
ADDRESS_MODES = {"wrap": 0, "clamp": 1, "mirror": 2, "border": 3}   # CUaddress_mode


def _check(result):
    from cuda.bindings import driver

    err, *rest = result if isinstance(result, tuple) else (result,)
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"CUDA driver: {err}")
    return rest[0] if len(rest) == 1 else rest


def _array_format(fmt):
    from cuda.bindings import driver

    f = driver.CUarray_format
    dtype = np.dtype(fmt[1])
    return {"f4": f.CU_AD_FORMAT_FLOAT, "f2": f.CU_AD_FORMAT_HALF,
            "u1": f.CU_AD_FORMAT_UNSIGNED_INT8, "i1": f.CU_AD_FORMAT_SIGNED_INT8,
            "u2": f.CU_AD_FORMAT_UNSIGNED_INT16, "i2": f.CU_AD_FORMAT_SIGNED_INT16,
            "u4": f.CU_AD_FORMAT_UNSIGNED_INT32, "i4": f.CU_AD_FORMAT_SIGNED_INT32,
            }[f"{dtype.kind}{dtype.itemsize}"]


def native_texture(dims, fmt, data, mode, filt, normalized):
    """(texture object, array) made by the CUDA driver with the case's settings."""
    from cuda.bindings import driver

    width, height, depth = (ref.SIZES[dims] + (0, 0))[:3]
    desc = driver.CUDA_ARRAY3D_DESCRIPTOR()
    desc.Width, desc.Height, desc.Depth = width, height, depth
    desc.Format, desc.NumChannels, desc.Flags = _array_format(fmt), fmt[2], 0
    array = _check(driver.cuArray3DCreate(desc))
    texel = np.dtype(fmt[1]).itemsize * fmt[2]
    host = np.ascontiguousarray(data)
    copy = driver.CUDA_MEMCPY3D()
    copy.srcMemoryType = driver.CUmemorytype.CU_MEMORYTYPE_HOST
    copy.srcHost = host.ctypes.data
    copy.srcPitch, copy.srcHeight = width * texel, max(height, 1)
    copy.dstMemoryType = driver.CUmemorytype.CU_MEMORYTYPE_ARRAY
    copy.dstArray = array
    copy.WidthInBytes, copy.Height, copy.Depth = width * texel, max(height, 1), max(depth, 1)
    _check(driver.cuMemcpy3D(copy))
    resource = driver.CUDA_RESOURCE_DESC()
    resource.resType = driver.CUresourcetype.CU_RESOURCE_TYPE_ARRAY
    resource.res.array.hArray = array
    tex = driver.CUDA_TEXTURE_DESC()
    tex.addressMode = [driver.CUaddress_mode(ADDRESS_MODES[mode])] * 3
    tex.filterMode = driver.CUfilter_mode(0 if filt == "point" else 1)
    integer = np.dtype(fmt[1]).kind != "f" and fmt[3] == "element_type"
    tex.flags = (0x1 if integer else 0) | (0x2 if normalized else 0)
    tex.borderColor = list(ref.BORDER if ref.is_float_result(fmt) else (0.0,) * 4)
    return int(_check(driver.cuTexObjectCreate(resource, tex, None))), array


def native_cube(fmt, data, filt):
    """(texture object, array) of a cube map (CUDA_ARRAY3D_CUBEMAP, 6 faces) made by the
    CUDA driver, clamped, normalized coordinates."""
    from cuda.bindings import driver

    desc = driver.CUDA_ARRAY3D_DESCRIPTOR()
    desc.Width = desc.Height = ref.CUBE_SIZE
    desc.Depth = 6
    desc.Format, desc.NumChannels, desc.Flags = _array_format(fmt), fmt[2], 0x4
    array = _check(driver.cuArray3DCreate(desc))
    row = np.dtype(fmt[1]).itemsize * fmt[2] * ref.CUBE_SIZE
    host = np.ascontiguousarray(data)
    copy = driver.CUDA_MEMCPY3D()
    copy.srcMemoryType = driver.CUmemorytype.CU_MEMORYTYPE_HOST
    copy.srcHost = host.ctypes.data
    copy.srcPitch, copy.srcHeight = row, ref.CUBE_SIZE
    copy.dstMemoryType = driver.CUmemorytype.CU_MEMORYTYPE_ARRAY
    copy.dstArray = array
    copy.WidthInBytes, copy.Height, copy.Depth = row, ref.CUBE_SIZE, 6
    _check(driver.cuMemcpy3D(copy))
    resource = driver.CUDA_RESOURCE_DESC()
    resource.resType = driver.CUresourcetype.CU_RESOURCE_TYPE_ARRAY
    resource.res.array.hArray = array
    tex = driver.CUDA_TEXTURE_DESC()
    tex.addressMode = [driver.CUaddress_mode(ADDRESS_MODES["clamp"])] * 3
    tex.filterMode = driver.CUfilter_mode(0 if filt == "point" else 1)
    integer = np.dtype(fmt[1]).kind != "f" and fmt[3] == "element_type"
    tex.flags = (0x1 if integer else 0) | 0x2
    return int(_check(driver.cuTexObjectCreate(resource, tex, None))), array


def run_cubes(cuda, other, kernels) -> tuple[dict, int]:
    """Every cube map case natively, through ptxport on `other` and in the model: the GPU's
    fetches by key, and how many cases differ (printed one line each)."""
    from cuda.bindings import driver

    fetched, failing = {}, 0
    for fmt, filt in ref.cube_cases():
        data = ref.cube_texels(fmt)
        texture, array = native_cube(fmt, data, filt)
        try:
            native = ref.launch_fetch(cuda, kernels, "c", fmt, texture, ref.cube_directions())
        finally:
            _check(driver.cuTexObjectDestroy(driver.CUtexObject(texture)))
            _check(driver.cuArrayDestroy(array))
        ported, model = ref.run_cube_on_ptxport(other, kernels, fmt, filt)
        gpu_bad = int((native != model).any(axis=1).sum())
        ported_bad = int((ported != model).any(axis=1).sum())
        failing += int(gpu_bad > 0 or ported_bad > 0)
        first = np.nonzero((native != model).any(axis=1))[0]
        example = (f", first #{first[0]}: GPU {native[first[0]].tolist()} model "
                   f"{model[first[0]].tolist()}" if len(first) else "")
        print(f"cube {fmt[0]} {filt}: GPU vs model {gpu_bad}/{len(native)} differ, ptxport vs "
              f"model {ported_bad}{example}"[:200])
        fetched[f"cube {fmt[0]} {filt}"] = native
    return fetched, failing


def run_native(cuda, kernels, case):
    from cuda.bindings import driver

    dims, fmt, mode, filt, normalized = case
    texture, array = native_texture(dims, fmt, ref.texels(dims, fmt), mode, filt, normalized)
    try:
        return ref.launch_fetch(cuda, kernels, dims, fmt, texture,
                                ref.coordinates(dims, normalized))
    finally:
        _check(driver.cuTexObjectDestroy(driver.CUtexObject(texture)))
        _check(driver.cuArrayDestroy(array))


def differing(got, want, channels):
    """Indices of fetches that differ in the format's channels, and of those that differ only
    in the channels beyond it."""
    bad = (got[:, :channels] != want[:, :channels]).any(axis=1)
    extra = (got[:, channels:] != want[:, channels:]).any(axis=1) & ~bad
    return np.nonzero(bad)[0], np.nonzero(extra)[0]


def _float_text(bits, floats):
    if not floats:
        return str(int(bits))
    value = np.array([bits], np.uint32).view(np.float32)[0]
    return f"{float(value):.9g}"


def describe(case, index, coords, got, want):
    """One mismatching fetch: where, the coordinates, and each channel as the GPU and the
    model give it (floats as values, with their distance in ulps)."""
    dims, fmt, *_ = case
    floats = ref.is_float_result(fmt)
    where = ",".join(f"{float(c):.9g}" for c in coords[index][:dims])
    parts = []
    for c in range(4):
        g, w = got[index, c], want[index, c]
        if g == w:
            parts.append(_float_text(g, floats))
            continue
        apart = int(np.int64(g.view(np.int32)) - np.int64(w.view(np.int32)))
        ulps = f" {apart:+d}ulp" if floats and (g ^ w) >> 31 == 0 and abs(apart) < 1000 else ""
        parts.append(f"{_float_text(g, floats)}|{_float_text(w, floats)}{ulps}")
    return f"  {dims}D {fmt[0]} #{index} at ({where}): GPU|model " + " ".join(parts)


def build(out: Path) -> int:
    from ptxport import Program
    from ptxport.codegen.targets.nvptx import compile_module
    from ptxport.frontends.nvrtc import NvrtcOptions, compile_to_ptx
    from ptxport.runtime.backends.cuda import assemble

    out.mkdir(parents=True, exist_ok=True)
    ptx = compile_to_ptx(ref.KERNELS, "texture_check.cu", NvrtcOptions(arch=ARCH))
    (out / "kernels.ptx").write_text(ptx)
    ours = compile_module(Program(ptx, "ptx").compile().module, ARCH)
    os.environ["PTXPORT_CACHE_DIR"] = str(out / "cache")
    assemble(ours, ARCH, "texture_check")
    print(f"kernels and their cubin in {out}")
    return 0


def _category(case):
    dims, fmt, mode, filt, normalized = case
    dtype = np.dtype(fmt[1])
    kind = (f"f{dtype.itemsize * 8}" if dtype.kind == "f" else
            f"{'u' if dtype.kind == 'u' else 's'}norm" if fmt[3] == "normalized_float" else
            "int")
    return f"{filt} {mode} {'norm' if normalized else 'texel'} {kind}"


BUDGET = 10_500      # characters of output: the GPU machine's answer keeps the last 12 KB


def _tally(results):
    tally = collections.defaultdict(lambda: [0, 0, 0, 0])
    categories = collections.defaultdict(lambda: [0, 0, 0, 0, []])
    for case, coords, native, ported, model in results:
        dims, fmt = case[:2]
        bad, extra = differing(native, model, fmt[2])
        row = tally[(fmt[0], dims)]
        cat = categories[_category(case)]
        row[0] += 1
        row[1] += int(not len(bad) and not len(extra))
        row[2] += int(not len(bad))
        row[3] += int(np.array_equal(ported, model))
        cat[0] += 1
        cat[1] += int(bool(len(bad) or len(extra)))
        cat[2] += len(bad)
        cat[3] += len(extra)
        cat[4].extend(describe(case, k, coords, native, model)[:200]
                      for k in (bad[:2] if len(bad) else extra[:1]))
    return tally, categories


def report(results, show):
    """The summary first (per format and dimensions, then per category), then up to `show`
    example fetches per category, as many as BUDGET leaves room for."""
    tally, categories = _tally(results)
    out = ["cases where the GPU equals the model (all 4 channels / the format's channels), "
           "and ptxport the model; per format, dims 1 2 3"]
    for name in sorted({name for name, _ in tally}):
        cells = [tally[(name, d)] for d in (1, 2, 3)]
        out.append(f"{name:11} " + "  ".join(f"{c[1]:>2}/{c[2]:>2}/{c[0]:>2} ptx={c[3]:>2}"
                                           for c in cells))
    out.append("per category: cases with a mismatch / cases; fetches differing in the "
               "format's channels; fetches differing only beyond them")
    for name, (cases, failing, bad, extra, _) in sorted(categories.items()):
        if failing:
            out.append(f"  {name:26} {failing:>3}/{cases:<3} fetches {bad:>4} beyond {extra:>4}")
    failing = sum(c[1] for c in categories.values())
    ported_bad = sum(c[0] - c[3] for c in tally.values())
    last = (f"{failing} of {len(results)} cases differ from the GPU; ptxport differs from the "
            f"model in {ported_bad}")
    room = BUDGET - sum(len(line) + 1 for line in out) - len(last)
    examples = [(name, c[4]) for name, c in sorted(categories.items()) if c[4]]
    while show > 1 and sum(len(line) + 1 for _, e in examples for line in e[:show]) > room:
        show -= 1
    for name, lines in examples:
        block = [f"{name}: {len(lines)} examples, first {min(show, len(lines))}"] + lines[:show]
        room -= sum(len(line) + 1 for line in block)
        if room < 100:
            out.append("(no room for more examples: --show, or the .npz)")
            break
        out.extend(block)
    print("\n".join(out + [last]))
    return tally, failing, ported_bad


def run(build_dir: Path, device: str, show: int, dump: Path, seed: int = 0) -> int:
    os.environ["PTXPORT_CACHE_DIR"] = str(build_dir / "cache")
    ref.SEED = seed
    from cuda.bindings import driver

    from ptxport import Device, Program

    cuda, other = Device("cuda:0"), Device(device)
    kernels = Program((build_dir / "kernels.ptx").read_text(), "ptx").compile("native")
    # The arrays and texture objects below are made through the driver directly, in the
    # device's primary context (the one ptxport's cuda backend uses).
    _check(driver.cuInit(0))
    _check(driver.cuCtxSetCurrent(_check(driver.cuDevicePrimaryCtxRetain(_check(
        driver.cuDeviceGet(0))))))
    results = []
    for case in ref.cases():
        native = run_native(cuda, kernels, case)
        ported, model = ref.run_on_ptxport(other, kernels, *case)
        results.append((case, ref.coordinates(case[0], case[4]), native, ported, model))
    tally, failing, ported_bad = report(results, show)
    cubes, cube_failing = run_cubes(cuda, other, kernels)
    failing += cube_failing
    # every fetch the GPU made, for fitting a formula to them (tests/texture_reference.py
    # regenerates the texels and coordinates)
    dump.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(dump, seed=np.int64(seed), **cubes, **{
        f"{c[0]}D {c[1][0]} {c[2]} {c[3]} {int(c[4])}": native
        for c, _, native, _, _ in results})
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({
        "tally": {f"{n} {d}D": v for (n, d), v in tally.items()},
        "failing_cases": failing, "ptxport_vs_model": ported_bad}, indent=1))
    print(f"GPU fetches in {dump}")
    return 0 if not failing and not ported_bad else 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    steps = parser.add_subparsers(dest="step", required=True)
    step = steps.add_parser("build")
    step.add_argument("--out", type=Path, default=ROOT / "build" / "texture_check")
    step = steps.add_parser("run")
    step.add_argument("--build", type=Path, default=ROOT / "build" / "texture_check")
    step.add_argument("--device", default="cpu", help="the ptxport device to compare")
    step.add_argument("--show", type=int, default=3,
                      help="example fetches to print per category")
    step.add_argument("--dump", type=Path, default=RESULTS.with_name("texture_check_gpu.npz"),
                      help="where to write every GPU fetch")
    step.add_argument("--seed", type=int, default=0,
                      help="draw other texels and coordinates (0: the recorded ones)")
    args = parser.parse_args(argv)
    if args.step == "build":
        return build(args.out)
    return run(args.build, args.device, args.show, args.dump, args.seed)


if __name__ == "__main__":
    sys.exit(main())
