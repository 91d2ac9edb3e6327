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
    """

    gang: bool = True
    full_mask_copies: bool = True
    if_convert: bool = True
    hoist_checks: bool = True

    def key(self) -> dict[str, bool]:
        """The choices as plain data, for cache keys."""
        return asdict(self)
