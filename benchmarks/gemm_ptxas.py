"""Registers, spills and shared memory of the portable GEMM's kernels as ptxas sees them: each
tile configuration's kernel (ptxport/blas/kernels/gemm.cu) compiled by NVRTC, lowered by
ptxport, emitted by ptxport's NVPTX target, then `ptxas -v` from the nvidia-cuda-nvcc wheel.
No GPU needed: this is how a tile is checked for spills before the H100 times it.

    python benchmarks/gemm_ptxas.py [--arch sm_90] [--tiles all|KIND:BMxBNxBK/AxB ...]
        [--dtype float32|bfloat16] [--layout TN] [--keep DIR]

Tiles are named as benchmarks/gemm.py --tiles names them (portable.TileConfig.label).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


def ptxas() -> Path:
    import nvidia

    for root in map(Path, nvidia.__path__):
        for found in root.glob("*/bin/ptxas"):
            return found
    raise SystemExit("ptxas not found: install the nvidia-cuda-nvcc wheel")


def report(config, arch: str, dtype: str, layout: str, keep: Path | None,
           even: bool = True) -> str:
    from ptxport.blas import portable

    in_type = np.dtype(np.float32) if dtype == "float32" else np.dtype("<u2")
    kind = portable._kind(in_type)
    ta, tb = (int(c == "T") for c in layout)
    arch = "sm_90a" if config.wgmma else arch   # (wgmma is sm_90a's only)
    program = portable.program_for(arch, config, ta, tb, kind, kind, True, even)
    ptx = program.compile(f"nvptx:{arch}").code
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(keep or tmp) / f"gemm_{config.label.replace(':', '_').replace('/', '_')}.ptx"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(ptx)
        out = subprocess.run([str(ptxas()), "-v", f"-arch={arch}", str(path), "-o", "/dev/null"],
                             capture_output=True, text=True)
    text = out.stdout + out.stderr
    if out.returncode:
        return f"ptxas failed: {text.strip()[-400:]}"
    regs = re.search(r"Used (\d+) registers", text)
    spill = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", text)
    smem = re.search(r"(\d+) bytes smem", text)
    return (f"{regs.group(1) if regs else '?'} registers, spills {spill.group(1)}/"
            f"{spill.group(2)} B, smem {smem.group(1) if smem else 0} B" if spill else text)


def main() -> None:
    from ptxport.blas import portable

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--dtype", default="both", choices=("float32", "bfloat16", "both"))
    parser.add_argument("--layout", default="TN", choices=("NN", "NT", "TN", "TT"))
    parser.add_argument("--tiles", nargs="+", default=["all"])
    parser.add_argument("--keep", type=Path, help="write the PTX files here")
    parser.add_argument("--edges", action="store_true",
                        help="the variant with edge checks (sizes not whole tiles), not EVEN")
    args = parser.parse_args()
    for dtype in ("float32", "bfloat16") if args.dtype == "both" else (args.dtype,):
        mma = dtype != "float32"
        for config in portable.parse_tiles(args.tiles, mma, args.arch == "sm_90"):
            print(f"{dtype:>9} {args.layout} {config.label:>24}: "
                  f"{report(config, args.arch, dtype, args.layout, args.keep, not args.edges)}",
                  flush=True)


if __name__ == "__main__":
    main()
