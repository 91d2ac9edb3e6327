"""Textures on cuda:0 through ptxport's own runtime, and mipmap levels: two GPU questions.

1. Do ptxport's texture objects on cuda devices (ptxport.runtime.textures' Array and
   TextureObject, which on cuda devices are the driver's own: runtime/backends/
   cuda_textures.py) fetch what objects made with the CUDA driver directly fetch? Every case
   of tests/texture_reference.py and its cube maps, read by the same kernels (ptxport's NVPTX
   target) on cuda:0; the two must agree bit for bit.
2. Mipmapped textures: what the texture units fetch at levels of detail between and beyond
   the levels (tex2DLod and tex2DGrad; point or linear texture and mipmap filtering), against
   ptxport's sampler on --device (fitted to the first recording,
   benchmarks/data/texture_mipmap_h100.npz: every tex2DLod fetch agrees, and every tex2DGrad
   fetch but 2 per linear mipmap case; --seed N draws other texels, coordinates and levels
   of detail, to check the fit on fetches it was not made from; docs/textures.md). Counted
   apart: fetches at whole levels of detail (CUDA defines them), and the others. ptxport's
   MipmappedArray on cuda:0 must equal the driver's.

    python benchmarks/texture_check.py build [--out build/texture_check]       (here)
    python benchmarks/texture_cuda_check.py [--build build/texture_check] [--device cpu]
                                            [--seed N]
                                                                                (GPU machine)
Prints a table; writes benchmarks/results/texture_cuda_check.json and every mipmap fetch of
the GPU to benchmarks/results/texture_mipmap_gpu.npz (what the fit was made from);
exits 1 when ptxport's objects on cuda:0 differ from the driver's anywhere.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import texture_check as check  # noqa: E402
import texture_reference as ref  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "texture_cuda_check.json"


def objects_on_cuda(cuda, kernels) -> tuple[int, int, list[str]]:
    """Question 1: (cases, cases that differ, the first few that differ)."""
    differ, examples, total = 0, [], 0
    for case in ref.cases():
        native = check.run_native(cuda, kernels, case)
        ours, _ = ref.run_on_ptxport(cuda, kernels, *case)
        total += 1
        if not np.array_equal(native, ours):
            differ += 1
            examples.append(f"{case[0]}D {case[1][0]} {case[2]} {case[3]} norm={case[4]}")
    for fmt, filt in ref.cube_cases():
        data = ref.cube_texels(fmt)
        texture, array = check.native_cube(fmt, data, filt)
        native = ref.launch_fetch(cuda, kernels, "c", fmt, texture, ref.cube_directions())
        _destroy(texture, array)
        ours, _ = ref.run_cube_on_ptxport(cuda, kernels, fmt, filt)
        total += 1
        if not np.array_equal(native, ours):
            differ += 1
            examples.append(f"cube {fmt[0]} {filt}")
    return total, differ, examples[:5]


def _destroy(texture: int, array) -> None:
    from cuda.bindings import driver

    check._check(driver.cuTexObjectDestroy(driver.CUtexObject(texture)))
    check._check(driver.cuArrayDestroy(array))


def native_mipmap(levels: list[np.ndarray], filt: str, mip_filter: str):
    """(texture, mipmapped array) made by the CUDA driver."""
    from cuda.bindings import driver

    desc = driver.CUDA_ARRAY3D_DESCRIPTOR()
    desc.Width, desc.Height = ref.MIP_SIZE
    desc.Depth, desc.Format, desc.NumChannels, desc.Flags = 0, check._array_format(
        ref.MIP_FORMAT), 4, 0
    mipmap = check._check(driver.cuMipmappedArrayCreate(desc, ref.MIP_LEVELS))
    for k, data in enumerate(levels):
        array = check._check(driver.cuMipmappedArrayGetLevel(mipmap, k))
        copy = driver.CUDA_MEMCPY3D()
        copy.srcMemoryType = driver.CUmemorytype.CU_MEMORYTYPE_HOST
        copy.srcHost = data.ctypes.data
        copy.srcPitch, copy.srcHeight = data.shape[1] * 16, data.shape[0]
        copy.dstMemoryType = driver.CUmemorytype.CU_MEMORYTYPE_ARRAY
        copy.dstArray = array
        copy.WidthInBytes, copy.Height, copy.Depth = data.shape[1] * 16, data.shape[0], 1
        check._check(driver.cuMemcpy3D(copy))
    resource = driver.CUDA_RESOURCE_DESC()
    resource.resType = driver.CUresourcetype.CU_RESOURCE_TYPE_MIPMAPPED_ARRAY
    resource.res.mipmap.hMipmappedArray = mipmap
    tex = driver.CUDA_TEXTURE_DESC()
    tex.addressMode = [driver.CUaddress_mode(1)] * 3
    tex.filterMode = driver.CUfilter_mode(ref.FILTER_MODES.index(filt))
    tex.mipmapFilterMode = driver.CUfilter_mode(ref.FILTER_MODES.index(mip_filter))
    tex.flags = 0x2
    tex.maxMipmapLevelClamp = float(ref.MIP_LEVELS - 1)
    return int(check._check(driver.cuTexObjectCreate(resource, tex, None))), mipmap


def mipmaps(cuda, other, kernels) -> tuple[list[dict], dict]:
    """Question 2: one row per (kernel, filter, mipmap filter), and the GPU's fetches."""
    from cuda.bindings import driver

    levels, rows, fetched = ref.mip_texels(), [], {}
    for kernel, filt, mip_filter in itertools.product(("flod", "fgrad"), ref.FILTER_MODES,
                                                      ref.FILTER_MODES):
        coords = ref.mip_coordinates(kernel)
        texture, mipmap = native_mipmap(levels, filt, mip_filter)
        native = ref.launch_fetch(cuda, kernels, kernel, ref.MIP_FORMAT, texture, coords)
        check._check(driver.cuTexObjectDestroy(driver.CUtexObject(texture)))
        check._check(driver.cuMipmappedArrayDestroy(mipmap))
        results = {}
        for name, device in (("sampler", other), ("cuda", cuda)):
            results[name] = ref.run_mipmap_on_ptxport(device, kernels, kernel, filt,
                                                      mip_filter)
        lods = coords[:, 2] if kernel == "flod" else np.log2(coords[:, 2] * ref.MIP_SIZE[0])
        whole = (np.isin(np.round(lods, 6), ref.WHOLE_LODS) | (lods >= ref.MIP_LEVELS - 1)
                 | (lods <= 0))
        bad = (native != results["sampler"]).any(axis=1)
        first = np.nonzero(bad & ~whole)[0]
        rows.append({"kernel": kernel, "filter": filt, "mipmap_filter": mip_filter,
                     "fetches": len(coords),
                     "sampler_differs_whole_lod": int((bad & whole).sum()),
                     "sampler_differs_between": int((bad & ~whole).sum()),
                     "between": int((~whole).sum()),
                     "cuda_objects_differ": int((native != results["cuda"]).any(axis=1).sum()),
                     "example": "" if not len(first) else
                     f"lod {lods[first[0]]:.4f}: GPU {native[first[0]].view(np.float32)[:2]} "
                     f"sampler {results['sampler'][first[0]].view(np.float32)[:2]}"})
        fetched[f"{kernel} {filt} {mip_filter}"] = native
    return rows, fetched


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", type=Path, default=ROOT / "build" / "texture_check")
    parser.add_argument("--device", default="cpu", help="the device of ptxport's sampler")
    parser.add_argument("--dump", type=Path,
                        default=RESULTS.with_name("texture_mipmap_gpu.npz"))
    parser.add_argument("--seed", type=int, default=0,
                        help="draw other texels, coordinates and levels of detail (0: the "
                             "recorded ones)")
    args = parser.parse_args(argv)
    ref.SEED = args.seed
    os.environ["PTXPORT_CACHE_DIR"] = str(args.build / "cache")
    from cuda.bindings import driver

    from ptxport import Device, Program

    cuda, other = Device("cuda:0"), Device(args.device)
    kernels = Program((args.build / "kernels.ptx").read_text(), "ptx").compile("native")
    check._check(driver.cuInit(0))
    check._check(driver.cuCtxSetCurrent(check._check(driver.cuDevicePrimaryCtxRetain(
        check._check(driver.cuDeviceGet(0))))))
    total, differ, examples = objects_on_cuda(cuda, kernels)
    print(f"1. ptxport's texture objects on cuda:0 vs the driver's: {differ} of {total} "
          f"cases differ {examples}")
    rows, fetched = mipmaps(cuda, other, kernels)
    print(f"2. mipmaps, {ref.MIP_SIZE[0]}x{ref.MIP_SIZE[1]} f32x4, {ref.MIP_LEVELS} levels: GPU vs "
          f"ptxport's sampler on {args.device} (fetches differing at whole / other levels of "
          "detail), and ptxport's MipmappedArray on cuda:0 vs the driver's")
    print(f"{'kernel':6} {'filter':6} {'mip':6} {'whole':>7} {'between':>9} {'cuda':>5}  example")
    for r in rows:
        print(f"{r['kernel']:6} {r['filter']:6} {r['mipmap_filter']:6} "
              f"{r['sampler_differs_whole_lod']:>7} "
              f"{r['sampler_differs_between']:>4}/{r['between']:<4} "
              f"{r['cuda_objects_differ']:>5}  {r['example']}"[:160])
    args.dump.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.dump, seed=np.int64(args.seed), **fetched)
    RESULTS.write_text(json.dumps({"objects_on_cuda": {"cases": total, "differ": differ,
                                                       "examples": examples},
                                   "mipmaps": rows}, indent=1) + "\n")
    print(f"wrote {RESULTS} and {args.dump}")
    cuda_bad = differ + sum(r["cuda_objects_differ"] for r in rows)
    return 1 if cuda_bad else 0


if __name__ == "__main__":
    sys.exit(main())
