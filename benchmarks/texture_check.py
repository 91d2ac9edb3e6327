"""Does ptxport's texture sampler fetch what an NVIDIA GPU's texture unit fetches?

Every case of tests/texture_reference.py (1D/2D/3D x 9 channel formats x address mode x
filter mode x normalized coordinates; 760 cases of 96 fetches each) runs three ways:
- natively: a CUDA array and texture object made with the CUDA driver (cuda-bindings'
  cuArray3DCreate, cuMemcpy3D, cuTexObjectCreate), read by the test kernels compiled by
  ptxport's NVPTX target (which keeps the tex instructions) on cuda:0;
- through ptxport on `--device` (default cpu): its own arrays and texture objects
  (ptxport.runtime.textures), the kernels' tex lowered to the sampler (passes/textures.py);
- in the numpy model (tests/texture_reference.py) the tests hold ptxport to.
It prints, per format and dimension, how many cases agree bit for bit, the first mismatches
(channels beyond the format's are counted apart: what CUDA returns there is a convention the
model assumes), and writes benchmarks/results/texture_check.json.

Two steps on two machines, as benchmarks/gpu_check.py (the GPU machine has neither NVRTC nor
a ptxas for NVRTC 13.5's PTX):

    python benchmarks/texture_check.py build [--out build/texture_check]
        here: the kernels' PTX (NVRTC), and ptxport's NVPTX output of it assembled into the
        cubin cache that the cuda backend reads (<out>/cache)
    python benchmarks/texture_check.py run [--build build/texture_check] [--device cpu]
        on the GPU machine (numpy, llvmlite, cuda-bindings, a driver); exits 1 on a mismatch
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


def compare(name, got, want, channels):
    """None when equal, else a line saying where and how they differ."""
    bad = np.nonzero((got[:, :channels] != want[:, :channels]).any(axis=1))[0]
    extra = np.nonzero((got[:, channels:] != want[:, channels:]).any(axis=1))[0]
    if not len(bad) and not len(extra):
        return None
    where = bad[0] if len(bad) else extra[0]
    return (f"{name}: {len(bad)} fetches differ ({len(extra)} only in channels beyond the "
            f"format's); first at {where}: {got[where].tolist()} vs {want[where].tolist()}")


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


def run(build_dir: Path, device: str, show: int) -> int:
    os.environ["PTXPORT_CACHE_DIR"] = str(build_dir / "cache")
    from ptxport import Device, Program

    cuda, other = Device("cuda:0"), Device(device)
    kernels = Program((build_dir / "kernels.ptx").read_text(), "ptx").compile("native")
    tally = collections.defaultdict(lambda: [0, 0, 0, 0])
    lines = []
    for case in ref.cases():
        dims, fmt, mode, filt, normalized = case
        native = run_native(cuda, kernels, case)
        ported, model = ref.run_on_ptxport(other, kernels, *case)
        row = tally[(fmt[0], dims)]
        row[0] += 1
        label = f"{dims}D {fmt[0]} {mode} {filt} normalized={normalized}"
        for k, (name, got, want) in enumerate((("GPU vs model", native, model),
                                               ("GPU vs ptxport", native, ported))):
            problem = compare(name, got, want, fmt[2])
            if problem is None:
                row[1 + k] += 1
            else:
                lines.append(f"{label}: {problem}")
        row[3] += int(compare("", native[:, :fmt[2]], model[:, :fmt[2]], fmt[2]) is None)
    print(f"{'format':12} {'dims':>4} {'cases':>6} {'GPU=model':>10} {'GPU=ptxport':>12} "
          f"{'(format channels only)':>22}")
    for (name, dims), (cases, model, ported, channels) in sorted(tally.items()):
        print(f"{name:12} {dims:>4} {cases:>6} {model:>10} {ported:>12} {channels:>22}")
    for line in lines[:show]:
        print(line)
    print(f"{len(lines)} mismatches in all")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"tally": {f"{n} {d}D": v for (n, d), v in tally.items()},
                                   "mismatches": lines}, indent=1))
    return 0 if not lines else 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    steps = parser.add_subparsers(dest="step", required=True)
    step = steps.add_parser("build")
    step.add_argument("--out", type=Path, default=ROOT / "build" / "texture_check")
    step = steps.add_parser("run")
    step.add_argument("--build", type=Path, default=ROOT / "build" / "texture_check")
    step.add_argument("--device", default="cpu", help="the ptxport device to compare")
    step.add_argument("--show", type=int, default=10, help="mismatches to print")
    args = parser.parse_args(argv)
    if args.step == "build":
        return build(args.out)
    return run(args.build, args.device, args.show)


if __name__ == "__main__":
    sys.exit(main())
