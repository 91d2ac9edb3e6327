"""What the CPU code generator may do, chosen by the caller (part of every kernel image's key)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

__all__ = ["CpuOptions"]


@dataclass(frozen=True)
class CpuOptions:
    """Code generation choices for the CPU target.

    Parameters
    ----------
    gang : bool
        Run kernels the warp-gang path takes as warp gangs (gang/); False runs every kernel
        thread by thread (the scalar path), e.g. to compare the two.
    full_mask_copies : bool
        Lower each gang code segment twice, once for a full execution mask (a constant) and
        once for any other; False lowers it once (to measure what the copies gain).
    if_convert : bool
        Run short divergent `if`s as guarded instructions (passes/if_convert.py) in warp
        gangs; False keeps every branch (to measure what the conversion gains).
    hoist_checks : bool
        Check the shared-memory accesses of counted one-block loops once before the loop
        (passes/hoist_checks.py) in warp gangs; False checks each at every iteration.
    hoist_global_checks : bool
        Test the range of each global access of a counted loop (barriers inside allowed)
        once at the loop's entry (passes/hoist_global_checks.py) in warp gangs, the
        accesses skipping their own checks where it held; False checks each at every
        iteration (a tiled GEMM's tile loads).
    block_checks : bool
        Test the range each global access whose address is affine in the thread index can
        reach over the block's threads once a block (passes/block_checks.py) in warp
        gangs (the block's verdict a byte of run_blocks' block copy), the warps skipping
        their own checks where it held; False checks each warp's (docs/
        cpu-target-measurements.md, "Session 15: stencil18", "Session 16: stencil19").
    interleave_passes : int
        In warp gangs, a warp returns to the block's round loop every this many passes of
        a loop whose body has no barrier, warp operation or call (gang/interleave.py), so
        that the block's warps run such loops (grid-stride loops) interleaved, K passes at
        a time, rather than one warp's whole loop after another's; 0: never. Loops that
        are not grid- or block-stride ones yield every 64 times this many passes, and
        only where their way out may depend on memory (a spin on a flag).
        The default, 4, was the best of 1, 2, 4 and 8 on the GPU host's Xeon
        (reduce_shared 30-45% faster on one core and 16, reduce_warp 5-10%, histogram and
        saxpy within the noise; softmax's row loops 3-15% slower, hence the 64:
        docs/cpu-target-measurements.md, "Interleaved warps").
    skip_idle_warps : bool
        In warp gangs' uniform rounds, end a round at the first warp that a test of
        threadIdx.x leaves idle where every later warp would be idle too and run the same
        memoryless code up to the next barrier (gang/idle_warps.py); False resumes every
        warp (to measure what it gains).
    opaque_window_bases : bool
        In warp gangs, address a shared-memory window's loads (gang/windows.py) from one
        register that LLVM cannot see through, not as window + lane index + constant: an
        indexed memory operand costs the Xeons' cores an extra uop in FMAs with a broadcast
        operand (gemm's k loop); False leaves the addressing to LLVM.
    strided_gathers : bool
        On hosts with AVX-512, load and store shared-memory lanes one stride apart whose
        stride is not one span access (8 elements and more: a tree's busy levels), under
        the full mask, as one gather or scatter (gang/strided.py); False goes lane by lane.
    row_load_prefetches, row_store_prefetches : bool
        In warp gangs, a global load (store) outside loops in a block 16 threads wide (a 2D
        stencil's loads of `in`, its store to `out`) prefetches the rows of the warp 3 on
        (gang/streams.py); False (the default for both): no software prefetch there. On
        the GPU host (16 vCPUs) the stencil 2048^2 took 0.876 of the time with both off on
        16 workers and 0.73 on one, against 0.95 and 0.88 with both on (session 17, the
        median of 10 and 6 alternated rounds: docs/cpu-target-measurements.md); the hardware
        prefetchers follow its rows, and the instructions cost more (middle block, NVRTC
        13.0: 1,848 with both, 1,648 with none).
    first_round : bool or None
        In warp gangs, give a block's first round a loop of its own, with its own copy of
        the gang function: every warp fresh, without a look at its status (gang/rounds.py).
        None (the default): only where a block's rounds are few but more than one
        (barriers, none on a loop, and no loop that yields; gang/build.py), where it pays;
        elsewhere the copy costs object code and compile time (gemm's 88 -> 115 KB) for no
        time measured. True: always; False: never (to measure what it gains).
    """

    gang: bool = True
    full_mask_copies: bool = True
    if_convert: bool = True
    hoist_checks: bool = True
    hoist_global_checks: bool = True
    block_checks: bool = True
    interleave_passes: int = 4
    skip_idle_warps: bool = True
    opaque_window_bases: bool = True
    strided_gathers: bool = True
    row_load_prefetches: bool = False
    row_store_prefetches: bool = False
    first_round: bool | None = None

    def key(self) -> dict[str, bool | int | None]:
        """The choices as plain data, for cache keys."""
        return asdict(self)
