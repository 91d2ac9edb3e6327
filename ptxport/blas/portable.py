"""ptxport's portable GEMM: kernels/gemm.cu, compiled by ptxport for the stream's device, with
a tile shape chosen per device by a small autotuner whose choice is cached.

Two kernels come from the one source (see its header): a SIMT kernel for every element type
(f32, f64, and f16/bf16 widened to f32) and a tensor-core kernel for f16/bf16 inputs with
f32 accumulation (mma.sync.m16n8k16), used where the target lowers mma.sync: NVIDIA GPUs
(ptxport's NVPTX) and the CPU target (in a slow resolver: correctness, not speed); SPIR-V
(opencl) runs the SIMT kernel for 16-bit data. Each (kernel, transposes, types, tile shape,
vectorisation) is one NVRTC compilation (on opencl, transposes are a kernel argument instead:
each OpenCL compile costs seconds), made once per process and cached on disk by
ptxport's compiler caches.

The autotuner times each candidate tile shape on a square problem the first time a (GPU,
kernel, accumulator type, size class, transposes) is used (1024^3, 2048^3, 4096^3 or
8192^3: the one nearest in C's area, as small problems want smaller tiles to fill the GPU):
after about 100 ms of warm-up launches, the median of five groups of about 20 ms, and the
first candidate within 2% of the fastest is kept (near-ties go the same way every time) in
$PTXPORT_CACHE_DIR/blas/autotune.json (else ~/.cache/ptxport/...), keyed by the device's
backend and name. On cpu devices a third kernel of the same source replaces the SIMT one:
the lanes kernel (kernels/gemm_lanes.cuh), shaped for the CPU target's warp gangs, tuned
per size class and worker count at a bounded depth (cpu_tune_size, cpu_tune_depth); opencl
devices take the first candidate untuned (see tuned_config).
"""

from __future__ import annotations

import functools
import json
import math
import os
import weakref
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from ptxport.cache import cache_path
from ptxport.errors import InvalidValueError
from ptxport.runtime.device import Device
from ptxport.runtime.launch import LaunchConfig, launch
from ptxport.runtime.memory import Buffer
from ptxport.runtime.program import Kernel, Program
from ptxport.runtime.program_options import ProgramOptions
from ptxport.runtime.stream import Stream

__all__ = ["MMA_CANDIDATES", "SIMT_CANDIDATES", "TileConfig", "candidates", "cpu_tune_depth",
           "cpu_tune_size", "gemm", "gemm_launch", "kernel_for", "parse_tiles", "program_for",
           "tile_for", "time_tile", "tune_size", "tuned_config"]

KERNELS = Path(__file__).resolve().parent / "kernels"
SOURCE = KERNELS / "gemm.cu"
MMA_SOURCE = KERNELS / "gemm_mma.cuh"      # the tensor-core kernels, appended to gemm.cu
WGMMA_SOURCE = KERNELS / "gemm_wgmma.cu"   # the warpgroup kernel, appended after it


def kernel_source(path: Path, *tail: Path) -> str:
    """A kernel file of kernels/ with the element-type helpers both share (elements.cuh) in
    front and the files `tail` after it (gemm_lanes.cuh for the lanes kernel); `#line` keeps
    each file's own line numbers in messages and line tables."""
    return (KERNELS / "elements.cuh").read_text() + "".join(
        f'#line 1 "{part.name}"\n' + part.read_text() for part in (path, *tail))
# uint16: bfloat16 bits; int8 in with int32 out: cuBLAS's 32I compute (SIMT kernel)
_KINDS = {"float32": 0, "float64": 1, "float16": 2, "uint16": 3, "int8": 4, "int32": 5}
# backends whose devices are tuned, and the square sizes tuned at (see tune_size); cpu
# devices tune the lanes kernel per size class too (cpu_tune_size), at a bounded depth
_TUNED_BACKENDS = ("cuda", "hip", "cpu")
_TUNE_SIZES = (1024, 2048, 4096, 8192)
_CPU_TUNE_SIZES = (256, 512, 1024, 2048, 4096)
# part of the autotuner's keys: choices made for an earlier version of the kernels (whose
# tiles may no longer be candidates, or no longer the fastest) are not reused
_KERNELS_VERSION = "gemm6"
# the same for the lanes kernel and its candidates (the kernel's name in the key)
_LANES_VERSION = "lanes7"
# backends whose kernels take the transposes as an argument: one compile for all four pairs
_RUNTIME_TRANSPOSES = ("opencl",)
# the options a tile's label may end in, by kernel (TileConfig.kind; TileConfig's flags)
_OPTIONS = {"simt": ("ahead", "warp", "cpasync"), "mma": ("ahead", "late"), "wgmma": ("ahead",)}


@dataclass(frozen=True)
class TileConfig:
    """A kernel and its tile shape: the block's BM x BN tile of C and its k step BK, and
    either each thread's TM x TN micro-tile (SIMT) or the block's WM x WN warps (mma; with
    `wgmma`, warpgroups of 4 warps) and the depth of its cp.async pipeline."""

    mma: bool
    bm: int
    bn: int
    bk: int
    tm: int = 0
    tn: int = 0
    wm: int = 0
    wn: int = 0
    stages: int = 2
    ahead: bool = False   # fragments read a k-step ahead (gemm.cu's AHEAD)
    late: bool = False    # (mma) copies issued after the first mmas of a k-step (LATE)
    warp: bool = False    # (SIMT) threads laid out in warp tiles (WARPTILE)
    lanes: bool = False   # the lanes kernel for the CPU target (gemm_lanes.cuh): one warp a
    #                       block, bm rows (bm / 32 a lane) x bn columns, tn columns a
    #                       thread, k panels of bk whose loop is unrolled tm times
    wgmma: bool = False   # (mma) sm_90a's warpgroup kernel (gemm_wgmma.cu); wm x wn warpgroups
    cpasync: bool = False  # (SIMT, f32 / f64) tiles copied by cp.async in a ring (ASYNC)
    split: int = 1         # (SIMT) k split this many ways, one block a part (SPLIT)

    @property
    def kind(self) -> str:
        return "wgmma" if self.wgmma else "mma" if self.mma else "simt"

    @property
    def threads(self) -> int:
        if self.lanes:
            return 32
        if self.mma:
            return self.wm * self.wn * (128 if self.wgmma else 32)
        return (self.bm // self.tm) * (self.bn // self.tn)

    @property
    def label(self) -> str:
        """The tile as benchmarks name it: simt:BMxBNxBK/TMxTN[/ahead][/warp][/cpasync][/kS],
        mma:BMxBNxBK/WMxWN/sSTAGES[/ahead][/late], wgmma:BMxBNxBK/WMxWN/sSTAGES[/ahead] or
        lanes:BMxBNxBK/TN/uUNROLL."""
        shape = f"{self.bm}x{self.bn}x{self.bk}"
        if self.lanes:
            return f"lanes:{shape}/{self.tn}/u{self.tm}"
        head = f"{self.kind}:{shape}/{self.wm}x{self.wn}/s{self.stages}" if self.mma else \
            f"simt:{shape}/{self.tm}x{self.tn}"
        return head + "".join(f"/{o}" for o in _OPTIONS[self.kind] if getattr(self, o)) + \
            (f"/k{self.split}" if self.split > 1 else "")

    @classmethod
    def parse(cls, label: str) -> TileConfig:
        """The TileConfig of a label (see `label`)."""
        try:
            kind, _, rest = label.partition(":")
            parts = rest.split("/")
            bm, bn, bk = (int(x) for x in parts[0].split("x"))
            if kind == "lanes" and len(parts) == 3 and bm % 32 == 0 and parts[2][:1] == "u":
                return cls(False, bm, bn, bk, tm=int(parts[2][1:]), tn=int(parts[1]),
                           lanes=True)
            x, y = (int(v) for v in parts[1].split("x"))
            mma = kind in ("mma", "wgmma")
            stages = int(parts[2].removeprefix("s")) if mma and len(parts) > 2 else 3
            options = parts[3:] if mma else parts[2:]
            split = 1
            if not mma and options and options[-1][:1] == "k" and options[-1][1:].isdigit():
                split = int(options.pop()[1:])
            if kind in _OPTIONS and len(set(options)) == len(options) and \
                    set(options) <= set(_OPTIONS[kind]):
                flags = {o: True for o in options}
                return cls(True, bm, bn, bk, wm=x, wn=y, stages=stages, wgmma=kind == "wgmma",
                           **flags) if mma else cls(False, bm, bn, bk, x, y, **flags,
                                                    split=max(split, 1))
        except (IndexError, ValueError):
            pass
        raise InvalidValueError(f"tile {label!r} is not "
                                f"simt:BMxBNxBK/TMxTN[/ahead][/warp][/cpasync][/kS], "
                                f"mma:BMxBNxBK/WMxWN/sSTAGES[/ahead][/late], "
                                f"wgmma:BMxBNxBK/WMxWN/sSTAGES[/ahead] or "
                                f"lanes:BMxBNxBK/TN/uUNROLL (BM: 32, 64, ...)")

    def dynamic_shared(self) -> int:
        """Bytes of dynamic shared memory a launch needs: the mma kernel's pipeline stages
        (16-bit A and B tiles; wgmma's 1024 more to align them to its swizzle's pattern), none
        for the SIMT kernel (static tiles)."""
        if not self.mma:
            return 0
        return self.stages * (self.bm + self.bn) * self.bk * 2 + (1024 if self.wgmma else 0)

    def static_shared(self, acc_bytes: int) -> int:
        """The SIMT kernel's shared tiles (two buffers, three for cp.async with BK <= 8;
        padded rows) with accumulators of `acc_bytes`; the lanes kernel's panels of A and B
        and its partial sums of C (in dynamic shared memory: gemm_launch)."""
        if self.lanes:
            return (self.bk * self.bm + self.bn * self.bk + self.bn * self.bm) * acc_bytes
        sub_m, sub_n = (4 if x % 4 == 0 else 1 for x in (self.tm, self.tn))
        buffers = 3 if self.cpasync and self.bk <= 8 else 2
        return buffers * self.bk * (self.bm + sub_m + self.bn + sub_n) * acc_bytes


# 48 KiB: the static shared memory every CUDA device gives a block (and OpenCL devices
# commonly): SIMT tiles above it for the accumulator type are not candidates
_STATIC_SHARED = 48 * 1024
# Candidates, from H100 sweeps (benchmarks/gemm.py --tiles, and two of 23-27 SIMT shapes on
# 2026-11-26; numbers in docs/blas.md). SIMT, f32, against cuBLAS with TF32 off: 128 x 128 x 8
# tiles of 128 threads with 8 x 16 a thread (232 registers, warp tiles or not within 1%) led
# from 2048 up (0.92-0.94), the same split two ways along k at 1024 (0.96; 64 tiles alone
# fill half the GPU: 0.54 unsplit); 8 x 8 a thread (two blocks an SM), the earlier choice,
# 0.87-0.90, 64 x 64 x 8 with 4 x 4 (1024's earlier choice) 0.70 against a warmed-up cuBLAS.
# Measured slower: three and four parts of k, 8 x 8 split (0.86 at 1024), 16 x 8 a thread,
# fragments ahead, BK = 16, cp.async rings (/cpasync: 0.74-0.81 from 2048 up), 128 x 64,
# 64 x 128, 256 x 128 and 128 x 256 tiles (0.68-0.86), block groups of 4 or 16 rows (as 8).
# mma: 128 x 128 x 32 with 2 x 2 warps and
# four stages (two blocks an SM; fragments ahead or not, within 1%) and 128 x 256 x 64 with
# fragments ahead led from 2048 up (0.54-0.62), 64 x 64 tiles at 1024; more stages, BK = 64
# with 2 x 2 warps, 256 x 128 and 128 x 256 x 32 tiles measured slower. The first of each is
# what cpu and opencl devices take untuned.
SIMT_CANDIDATES = (TileConfig(False, 64, 64, 8, 4, 4),
                   TileConfig(False, 128, 128, 8, 8, 16, warp=True),
                   TileConfig(False, 128, 128, 8, 8, 8, warp=True),
                   TileConfig(False, 128, 128, 8, 8, 16, warp=True, split=2))
MMA_CANDIDATES = (TileConfig(True, 128, 128, 32, wm=2, wn=4, stages=3),
                  TileConfig(True, 128, 128, 32, wm=2, wn=2, stages=4),
                  TileConfig(True, 128, 128, 32, wm=2, wn=2, stages=4, ahead=True),
                  TileConfig(True, 128, 256, 64, wm=2, wn=4, stages=3, ahead=True),
                  TileConfig(True, 128, 128, 64, wm=2, wn=4, stages=4, ahead=True),
                  TileConfig(True, 64, 64, 32, wm=2, wn=2, stages=4))
# sm_90's warpgroup kernel (gemm_wgmma.cu), timed before the mma.sync tiles on such devices.
# H100 (benchmarks/gemm.py --gpu, docs/blas.md): two warpgroups of 64 x 256 (128 accumulators
# a thread), four stages, one wgmma group in flight led from 2048 up (0.91-1.04 of cuBLAS),
# 128 x 128 tiles at 1024; three stages (0.77-0.82 with a group in flight, 0.71-0.82 without)
# and 256 x 128 tiles (0.71-0.77) measured slower.
WGMMA_CANDIDATES = (TileConfig(True, 128, 256, 64, wm=2, wn=1, stages=4, ahead=True, wgmma=True),
                    TileConfig(True, 128, 128, 64, wm=2, wn=1, stages=4, ahead=True, wgmma=True),
                    TileConfig(True, 128, 256, 64, wm=2, wn=1, stages=3, ahead=True, wgmma=True))


# The lanes kernel's candidates (the SIMT kernel's on cpu devices), f32 NN. On the GPU
# machine's 16-core Xeon (Sapphire Rapids: two 512-bit FMA units a core, four cycles an FMA,
# so at least 8 accumulators in flight), wall time, OPENBLAS_NUM_THREADS = workers
# (benchmarks/gemm.py --kernel-only, 2026-11-26): 64-row tiles with 4 columns a thread (16
# vector accumulators) led at every size, 0.40-0.44 of OpenBLAS on one worker (512-2048) and
# 0.63-0.72 on 16 (1024-4096); 64 x 32 x 64 with 4 columns 0.36-0.41 and 0.60-0.67; 2 columns
# a thread (8 accumulators) 0.36-0.39 and 0.55-0.65; 3 columns 0.33-0.34 and 0.53-0.59;
# 96-row tiles 0.31-0.32; the k loop unrolled twice 0.32-0.35; 32-row tiles 0.24-0.29 and
# 0.41-0.53. On a 2-core AMD EPYC (Zen 4: one 512-bit FMA a cycle), one worker, CPU time, 64 x
# 64 x 64 with 2 columns led (0.60-0.68 of OpenBLAS; 4 columns 0.55-0.60: spills). 32 x 32 x
# 64 with 4 columns (the one whose panels of doubles fit 48 KiB of static shared memory, and
# the most blocks) made 0.24-0.34: not a candidate since the panels are in dynamic shared
# memory (below). Since the k loop has no spills (session 8), on the EPYC, one worker, CPU
# time, 1024 and 2048: 64 x 64 x 128 with 4 columns 78-85 GFLOP/s, 64 x 64 x 64 69-80 (half
# the partial sums' round trips through shared memory a k step), 128-row tiles with 2
# columns 72-81. Session 9, on an Emerald Rapids core (the GPU host's CPU model; one worker,
# CPU time): the packing of A's and B's panels was about 30% of the time of 64 x 64 x 128
# (its k loops alone: 118-120 GFLOP/s at 1024, the whole 82-87); wider tiles pack A once for
# more columns: 64 x 128 x 128 101-108 and 64 x 256 x 128 106-111 GFLOP/s against 64 x 64 x
# 128's 82-90 at 1024 and 2048 (numpy 120-130). In doubles they pass a cpu block's shared
# memory (candidates() leaves them out), 64 x 128 x 64 not.
LANES_CANDIDATES = (TileConfig(False, 64, 256, 128, 4, 4, lanes=True),
                    TileConfig(False, 64, 128, 128, 4, 4, lanes=True),
                    TileConfig(False, 64, 128, 64, 4, 4, lanes=True),
                    TileConfig(False, 64, 64, 128, 4, 4, lanes=True),
                    TileConfig(False, 64, 64, 64, 4, 4, lanes=True),
                    TileConfig(False, 64, 32, 64, 4, 4, lanes=True))
# the lanes kernel's panels and partial sums are dynamic shared memory (more than CUDA's 48
# KiB of static shared memory for 128-deep panels): at most what cpu devices give a block
_LANES_SHARED = 227 * 1024


def candidates(mma: bool, acc: np.dtype, lanes: bool = False, wgmma: bool = False
               ) -> tuple[TileConfig, ...]:
    """The tile shapes the autotuner times for a kernel and accumulator type (`lanes`: the
    lanes kernel's, which cpu devices take instead of the SIMT kernel; `wgmma`: the device
    runs the warpgroup kernel too)."""
    if mma:
        return WGMMA_CANDIDATES + MMA_CANDIDATES if wgmma else MMA_CANDIDATES
    if lanes:
        return tuple(c for c in LANES_CANDIDATES
                     if c.static_shared(acc.itemsize) <= _LANES_SHARED)
    return tuple(c for c in SIMT_CANDIDATES if c.static_shared(acc.itemsize) <= _STATIC_SHARED)


def parse_tiles(labels: list[str], mma: bool, wgmma: bool = False) -> list[TileConfig]:
    """TileConfigs from labels for one kernel, as benchmarks take them ("all": its
    candidates, with `wgmma` the warpgroup kernel's too); labels of the other kernel, and of
    the warpgroup kernel without `wgmma`, are left out."""
    tiles: list[TileConfig] = []
    for label in labels:
        for config in candidates(mma, np.dtype(np.float32), wgmma=wgmma) if label == "all" else \
                (TileConfig.parse(label),):
            if config.mma == mma and (wgmma or not config.wgmma) and config not in tiles:
                tiles.append(config)
    return tiles


def _kind(dtype: np.dtype) -> int:
    return _KINDS[dtype.name]


def _uses_mma(device: Device, in_type: np.dtype) -> bool:
    """The tensor-core kernel for 16-bit inputs where the target lowers mma.sync."""
    if in_type.itemsize != 2:
        return False
    if device.backend == "cuda":
        return tuple(device.compute_capability) >= (8, 0)
    return device.backend == "cpu"


def _uses_wgmma(device: Device) -> bool:
    """The warpgroup kernel among the candidates: NVIDIA's sm_90 (wgmma is sm_90a's only)."""
    return device.backend == "cuda" and tuple(device.compute_capability) == (9, 0)


def program_for(arch: str, config: TileConfig, ta: int, tb: int, in_kind: int, out_kind: int,
                vec: bool, even: bool = False, unroll: bool = True) -> Program:
    """The Program of one kernel variant (its macros: see gemm.cu's header); ta/tb 0 or 1 fix
    a transpose at compile time, -1 leaves it to the kernel's `trans` argument; `even`: the
    problem is whole tiles (with `vec`), no edge checks; `unroll` 0: the wgmma kernel's
    k-steps rolled (gemm_wgmma.cu's UNROLL_K, for the CPU target)."""
    kernel = 2 if config.wgmma else int(config.mma)
    macros = {"GEMM_MMA": kernel, "TRANS_A": int(ta), "TRANS_B": int(tb),
              "IN_KIND": in_kind, "OUT_KIND": out_kind, "VEC": int(vec), "BM": config.bm,
              "BN": config.bn, "BK": config.bk, "TM": config.tm or 1, "TN": config.tn or 1,
              "WM": config.wm or 1, "WN": config.wn or 1, "STAGES": config.stages,
              "AHEAD": int(config.ahead), "LATE": int(config.late),
              "WARPTILE": int(config.warp), "EVEN": int(even), "ASYNC": int(config.cpasync),
              "GEMM_LANES": int(config.lanes)}
    if config.split > 1:
        macros["SPLIT"] = config.split
    if config.wgmma:
        macros["UNROLL_K"] = int(unroll)
    options = ProgramOptions(arch=arch, define_macro=[(k, str(v)) for k, v in macros.items()],
                             name="ptxport_gemm.cu")
    tail = (KERNELS / "gemm_lanes.cuh",) if config.lanes else \
        (MMA_SOURCE, WGMMA_SOURCE) if config.wgmma else (MMA_SOURCE,) if config.mma else ()
    return Program(kernel_source(SOURCE, *tail), "c++", options)


@functools.cache
def kernel_for(arch: str, config: TileConfig, ta: int, tb: int, in_kind: int, out_kind: int,
               vec: bool, even: bool = False, unroll: bool = True) -> Kernel:
    """The compiled kernel of one variant (NVRTC's PTX, which ptxport lowers per device at
    first launch)."""
    return program_for(arch, config, ta, tb, in_kind, out_kind, vec, even, unroll).compile() \
        .get_kernel("ptxport_gemm")


def _arch(device: Device, config: TileConfig) -> str:
    """NVRTC's architecture: the device's; sm_90a for the warpgroup kernel (wgmma is in
    no other), sm_80 for mma.sync elsewhere than on cuda devices."""
    if config.wgmma:
        return "sm_90a"
    return "sm_80" if config.mma and device.backend != "cuda" else f"sm_{device.arch}"


def _address(pointer: Buffer | np.uint64) -> int:
    return pointer.handle if isinstance(pointer, Buffer) else int(pointer)


def _aligned(problem, pointers: tuple[Buffer | np.uint64, ...], elements: int) -> bool:
    """16-byte vector loads are safe: leading dimensions, batch strides and addresses are
    multiples of 16 bytes (`elements` of the type)."""
    return all(v % elements == 0 for v in (*problem.lds[:2], *problem.strides[:2])) and \
        all(_address(p) % 16 == 0 for p in pointers)


def _even(problem, config: TileConfig) -> bool:
    """The problem is whole tiles of `config` (gemm.cu's EVEN)."""
    return problem.m % config.bm == 0 and problem.n % config.bn == 0 and \
        problem.k % config.bk == 0


def _splits(k: int, config: TileConfig) -> bool:
    """Every one of the config's `split` parts of k holds at least one k-step."""
    steps = -(-k // config.bk)
    return (config.split - 1) * -(-steps // config.split) < steps


# per stream: the split-k workspace (partial sums) and its tiles' counters (kept at zero
# between launches by the kernel), grown as needed; the launches of one stream run one after
# the other, those of two streams may overlap, so each stream has its own
_WORKSPACES: weakref.WeakKeyDictionary[Stream, tuple[Buffer, Buffer]] = \
    weakref.WeakKeyDictionary()


def _split_workspace(stream: Stream, tiles: int, config: TileConfig,
                     acc: np.dtype) -> tuple[Buffer, Buffer]:
    """The workspace and the counters for `tiles` tiles of `config` (gemm.cu's SPLIT) for
    launches on `stream`; new ones are zeroed in the stream's order, old ones freed in it."""
    size = tiles * config.split * config.bm * config.bn * acc.itemsize
    have = _WORKSPACES.get(stream)
    if have is None or have[0].size < size or have[1].size < tiles * 4:
        if have is not None:
            size, tiles = max(size, have[0].size), max(tiles, have[1].size // 4)
            for buf in have:
                buf.close(stream)
        device = stream.device
        have = (device.allocate(size, stream=stream), device.allocate(tiles * 4, stream=stream))
        have[1].fill(0, 4, stream=stream)
        stream.sync()   # (zeroed before launches queued elsewhere: the benchmarks' own)
        _WORKSPACES[stream] = have
    return have


def gemm_launch(device: Device, config: TileConfig, problem, a: Buffer | np.uint64,
                b: Buffer | np.uint64, c: Buffer | np.uint64, in_type: np.dtype,
                out_type: np.dtype, alpha: float, beta: float, stream: Stream | None = None
                ) -> tuple[Kernel, LaunchConfig, tuple]:
    """What launch_gemm queues for `problem` (ptxport.blas._Gemm, checked) on `device`: the
    kernel of `config`, its launch configuration and its arguments. The matrices are
    Buffers, or device addresses (np.uint64) that ptxport.compat passes. A split k's
    workspace is `stream`'s (default: the device's default stream)."""
    if config.split > 1 and not _splits(problem.k, config):
        config = replace(config, split=1)
    vec = _aligned(problem, (a, b), 8) if config.mma else \
        in_type == np.float32 and _aligned(problem, (a, b), 4)
    # transposes as a kernel argument where each variant is a slow compile (opencl)
    ta, tb = (-1, -1) if device.backend in _RUNTIME_TRANSPOSES else \
        (int(problem.ta), int(problem.tb))
    # the lanes kernel has no vector loads (it packs): EVEN alone drops its edge checks
    even = _even(problem, config) if config.lanes else vec and _even(problem, config)
    kernel = kernel_for(_arch(device, config), config, ta, tb, _kind(in_type),
                        _kind(out_type), vec and not config.lanes, even,
                        device.backend != "cpu")
    scalar = np.float64 if in_type == np.float64 else np.int32 if in_type == np.int8 else \
        np.float32
    grid = (-(-problem.m // config.bm), -(-problem.n // config.bn),
            problem.batch * config.split)
    (lda, ldb, ldc), (sa, sb, sc) = problem.lds, problem.strides
    i32, i64 = np.int32, np.int64
    args = (i32(problem.m), i32(problem.n), i32(problem.k), scalar(alpha), a, i32(lda),
            i64(sa), b, i32(ldb), i64(sb), scalar(beta), c, i32(ldc), i64(sc),
            i32(int(problem.ta) | int(problem.tb) << 1))
    if config.split > 1:
        args += _split_workspace(stream or device.default_stream,
                                 grid[0] * grid[1] * problem.batch, config,
                                 np.dtype(scalar))
    shared = config.static_shared(np.dtype(scalar).itemsize) if config.lanes else \
        config.dynamic_shared()
    return kernel, LaunchConfig(grid=grid, block=config.threads, shmem_size=shared), args


def launch_gemm(stream: Stream, config: TileConfig, problem, a: Buffer | np.uint64,
                b: Buffer | np.uint64, c: Buffer | np.uint64, in_type: np.dtype,
                out_type: np.dtype, alpha: float, beta: float) -> None:
    """Queue the kernel of `config` for `problem` (ptxport.blas._Gemm, checked) on `stream`;
    the matrices are Buffers, or device addresses (np.uint64) that ptxport.compat passes."""
    kernel, launch_config, args = gemm_launch(stream.device, config, problem, a, b, c, in_type,
                                              out_type, alpha, beta, stream)
    launch(stream, launch_config, kernel, *args)


def gemm(stream: Stream, problem, a: Buffer, b: Buffer, c: Buffer, in_type: np.dtype,
         out_type: np.dtype, alpha: float, beta: float,
         config: TileConfig | None = None) -> None:
    """C = alpha op(A) op(B) + beta C on the stream's device with the portable kernels; the
    tile shape is `config`, else the tuned one for the device."""
    if config is None:
        config = tile_for(stream.device, problem, in_type, out_type)
    launch_gemm(stream, config, problem, a, b, c, in_type, out_type, alpha, beta)


def tile_for(device: Device, problem, in_type: np.dtype, out_type: np.dtype) -> TileConfig:
    """The tuned tile for `problem` (ptxport.blas._Gemm) on `device`: that of its size class
    (tune_size; on cpu devices the lanes kernel's cpu_tune_size, for the device's workers)
    and its transposes."""
    mma = _uses_mma(device, in_type)
    layout = "NT"[int(problem.ta)] + "NT"[int(problem.tb)]
    size = cpu_tune_size(problem.m, problem.n, problem.batch) if \
        device.backend == "cpu" and not mma else tune_size(problem.m, problem.n, problem.batch)
    return tuned_config(device, mma, in_type, out_type, size, layout)


# -- the autotuner ----------------------------------------------------------------------------

def _tune_file() -> Path:
    return cache_path("blas", "autotune", ".json")


def _load() -> dict:
    try:
        return json.loads(_tune_file().read_text())
    except (OSError, ValueError):
        return {}


def _save(key: str, config: TileConfig) -> None:
    path = _tune_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    table = _load()
    table[key] = asdict(config)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(table, indent=1, sort_keys=True))
    os.replace(tmp, path)


def tune_size(m: int, n: int, batch: int = 1) -> int:
    """The square size whose tuned tile a problem of m x n (x batch) C takes: the tuning size
    nearest in C's area. A small C is few blocks of a big tile, too few to fill a GPU, so
    small and large problems are tuned apart."""
    area = max(m * n * batch, 1)
    return min(_TUNE_SIZES, key=lambda s: abs(math.log(area / (s * s))))


# cpu devices (the lanes kernel): classes by C's area as on GPUs, from 256^2 up, since a
# grid's blocks shared by many workers (the number of tiles against the workers, and how they
# share the caches) decide between tiles that one worker runs alike; no class above the size
# where every candidate gives each worker _CPU_MANY_BLOCKS blocks (one worker: 512). The tuning
# GEMM is size x size x depth, its depth cut so that one launch is about _CPU_TUNE_FLOP a
# worker (a few ms): the inner loops are those of a full-depth GEMM, fewer panels of them.
_CPU_MANY_BLOCKS = 64
_CPU_TUNE_FLOP = 5e8
# the tile those blocks are counted in (64 x 64: the candidates' before the 64 x 256 and 64 x
# 128 ones, whose classes would reach past the sizes whose tuning GEMM keeps one 128-deep
# panel within _CPU_TUNE_FLOP a worker)
_CPU_CLASS_TILE = 64 * 64


def _cpu_workers() -> int:
    from ptxport.runtime.backends.cpu.executor import worker_count

    return worker_count()


def cpu_tune_size(m: int, n: int, batch: int = 1, workers: int | None = None) -> int:
    """The square size (one of _CPU_TUNE_SIZES) whose tuned lanes tile a problem of m x n
    (x batch) C takes on a cpu device with `workers` workers (None: the executor's count
    now): the nearest in C's area, at most the first size where tiles of _CPU_CLASS_TILE
    make _CPU_MANY_BLOCKS blocks a worker."""
    workers = workers or _cpu_workers()
    area = max(m * n * batch, 1)
    size = min(_CPU_TUNE_SIZES, key=lambda s: abs(math.log(area / (s * s))))
    enough = next((s for s in _CPU_TUNE_SIZES
                   if s * s >= _CPU_MANY_BLOCKS * workers * _CPU_CLASS_TILE),
                  _CPU_TUNE_SIZES[-1])
    return min(size, enough)


def cpu_tune_depth(size: int, workers: int) -> int:
    """k of the cpu tuning GEMM at `size` for `workers` workers: `size`, cut to about
    _CPU_TUNE_FLOP a worker a launch, in whole 128-deep panels (every candidate's BK
    divides 128), one at least."""
    depth = int(_CPU_TUNE_FLOP * workers / (2 * size * size)) // 128 * 128
    return min(size, max(depth, 128))


def tuned_config(device: Device, mma: bool, in_type: np.dtype, out_type: np.dtype,
                 size: int = 2048, layout: str = "NN") -> TileConfig:
    """The fastest candidate tile shape on `device` for this kernel and its accumulator
    (f32 or f64; 16-bit data share f32's choice) at the tuning size `size` (one of
    _TUNE_SIZES: see tune_size) and the transposes `layout` (op(A) op(B): "NN", "TN", ...),
    timed on first use and cached on disk. cpu devices take the lanes kernel (gemm_lanes.cuh)
    instead of the SIMT kernel, tuned per class of cpu_tune_size (`size` is taken to it) and
    worker count at a bounded depth (cpu_tune_depth), and the mma kernel's first candidate
    untuned; opencl devices the first candidate, untuned: there each
    candidate's compile (the OpenCL runtime's, seconds) costs more than tuning gains at the
    sizes they run."""
    if not mma:
        in_type = out_type = np.dtype(np.float64 if in_type == np.float64 else np.float32)
    lanes = device.backend == "cpu" and not mma
    tiles = candidates(mma, in_type, lanes, mma and _uses_wgmma(device))
    if device.backend not in _TUNED_BACKENDS or device.backend == "cpu" and mma:
        return tiles[0]
    depth, workers = None, ""
    if lanes:   # (the class's size, its depth and the workers: part of the key)
        count = _cpu_workers()
        size = cpu_tune_size(size, size, 1, count)
        depth, workers = cpu_tune_depth(size, count), f"|w{count}"
    kernel = _LANES_VERSION if lanes else "mma" if mma else "simt"
    key = f"{_KERNELS_VERSION}|{device.backend}|{device.name}|{kernel}|" \
          f"{in_type.name}|{out_type.name}|{size}|{layout}{workers}"
    cached = _load().get(key)
    if cached is not None:
        return TileConfig(**cached)
    times = [time_tile(device, cfg, in_type, out_type, size, layout, depth) for cfg in tiles]
    if lanes:   # a second pass, each candidate's faster time kept: on a cpu the first pass's
        # timings are moved by what else the host does (measured: picks 10-15% off the best)
        times = [min(ms, time_tile(device, cfg, in_type, out_type, size, layout, depth))
                 for cfg, ms in zip(tiles, times, strict=True)]
    # the first candidate within _TIE of the fastest: near-ties (within the timing's noise)
    # go to the same tile on every tuning, in the candidates' order
    tie = _CPU_TIE if lanes else _TIE
    best = next(cfg for cfg, ms in zip(tiles, times, strict=True) if ms <= min(times) * tie)
    _save(key, best)
    return best


# How much slower than the fastest the tuner's pick, the first such candidate, may time. On
# cpu devices more: on the 16-core host one tile's time moved by 10-15% between runs while the
# lanes candidates' first then (64 x 64 x 64, 4 columns; now second, behind its 128-deep
# panels) was the fastest or within 15% of it at every size at 1 and 16 workers
# (docs/blas.md); with 2%, noise picked tiles 20% slower.
_TIE, _CPU_TIE = 1.02, 1.10

# the autotuner's timing: launches before timing for about WARM_MS (the GPU's clocks up,
# caches and the compile done), then GROUPS groups of launches of about GROUP_MS each; on
# cpu devices (launches of a few ms at the tuning depth, no clocks to raise) shorter
_WARM_MS, _GROUP_MS, _GROUPS = 100.0, 20.0, 5
_CPU_WARM_MS, _CPU_GROUP_MS, _CPU_GROUPS = 20.0, 10.0, 3


def time_tile(device: Device, config: TileConfig, in_type: np.dtype, out_type: np.dtype,
              size: int, layout: str = "NN", depth: int | None = None) -> float:
    """Milliseconds one size x size x depth GEMM (depth None: size) in `layout` takes with
    `config` on `device`: the median over groups of launches timed between events, after a
    warm-up (ptxport.blas.timing; on cuda devices the GPU's time alone)."""
    from ptxport.blas import _Gemm, timing

    k = depth or size
    ta, tb = layout[0] == "T", layout[1] == "T"
    stream = device.create_stream()
    # on cpu devices A and B apart, as a program's are: one buffer for both halved the
    # memory the tuning GEMM touches, which then stayed in a core's L2 cache as the
    # problems tuned for do not (elsewhere one buffer, A and B both)
    a = device.allocate(size * k * in_type.itemsize, stream=stream)
    b = device.allocate(size * k * in_type.itemsize, stream=stream) \
        if device.backend == "cpu" else a
    c = device.allocate(size * size * out_type.itemsize, stream=stream)
    for buffer in {id(a): a, id(b): b}.values():
        buffer.fill(0x3C, 1, stream=stream)   # 0.0115 in f32 and bf16: ordinary values
    problem = _Gemm(ta, tb, size, size, k, (k if ta else size, size if tb else k, size),
                    (0, 0, 0), 1)
    kernel, config_, args = gemm_launch(device, config, problem, a, b, c, in_type, out_type,
                                        1.0, 0.0, stream)
    launch(stream, config_, kernel, *args)   # compiles and loads it, untimed
    stream.sync()
    timed = timing.direct(device, config_, kernel, args) or \
        timing.through_stream(stream, config_, kernel, args)
    ms, _ = timing.median_ms(timed, *((_CPU_WARM_MS, _CPU_GROUP_MS, _CPU_GROUPS)
                                      if device.backend == "cpu" else
                                      (_WARM_MS, _GROUP_MS, _GROUPS)))
    for buffer in {id(a): a, id(b): b, id(c): c}.values():
        buffer.close(stream)
    stream.sync()
    return ms
