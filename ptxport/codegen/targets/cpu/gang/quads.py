"""A warp's .v4 access of 32-bit words (W * 4 elements, lane l's element k at 4 * l + k) taken
apart into its four vectors of the lanes, and put together, in two rounds of shuffles of
16-element (512-bit) pieces: 16 two-source shuffles for the 8 pieces instead of the 24 that
LLVM makes of one stride-4 shuffle of the whole 128 elements each way (a Triton softmax with
4 warps a row makes four such accesses per warp and row: its loads, its stores)."""

from __future__ import annotations

from llvmlite import ir as ll

from ptxport.codegen.lower import I32
from ptxport.codegen.targets.cpu.gang.lanes import W

__all__ = ["join_quads", "quads", "split_quads"]

_PIECE = 16         # elements of a 512-bit piece: 4 lanes' 4 words


def quads(element: ll.Type, count: int) -> bool:
    """Whether an access of `count` elements a lane of this type goes by pieces."""
    bits = 32 if isinstance(element, ll.FloatType) else getattr(element, "width", 0)
    return count == 4 and bits == 32 and W == 32


def _shuffle(b, x, y, indices):
    return ll.IRBuilder.shuffle_vector(b, x, y if y is not None else ll.Constant(x.type, None),
                                       ll.Constant(ll.VectorType(I32, len(indices)), indices))


def _halves(values: range | list) -> list:
    """Indices of the 8 lanes from offset o of two 16-element vectors side by side."""
    return list(values) + [_PIECE + i for i in values]


def split_quads(b, wide) -> list:
    """The four vectors of the lanes of a W * 4-element vector."""
    pieces = [_shuffle(b, wide, None, list(range(_PIECE * j, _PIECE * j + _PIECE)))
              for j in range(2 * 4)]
    # round 1: lanes 8p..8p+7 (pieces 2p and 2p+1, lane i's word k at 4i + k): words 0
    # and 1 side by side, and words 2 and 3
    pairs = [[_shuffle(b, pieces[2 * p], pieces[2 * p + 1],
                       [4 * i + k for k in words for i in range(8)]) for words in ((0, 1), (2, 3))]
             for p in range(4)]
    # round 2: word k of lanes 16q..16q+15 from pairs 2q and 2q+1
    out = []
    for k in range(4):
        halves = [_shuffle(b, pairs[2 * q][k // 2], pairs[2 * q + 1][k // 2],
                           _halves(range(8 * (k % 2), 8 * (k % 2) + 8))) for q in range(2)]
        out.append(_shuffle(b, halves[0], halves[1], list(range(W))))
    return out


def join_quads(b, values: list):
    """Four vectors of the lanes as one W * 4-element vector, lane l's word k at 4l + k."""
    halves = [[_shuffle(b, v, None, list(range(_PIECE * q, _PIECE * q + _PIECE)))
               for q in range(2)] for v in values]
    pieces = []
    for p in range(4):
        q, lanes = p // 2, range(8 * (p % 2), 8 * (p % 2) + 8)
        # words 0 and 1 of lanes 8p..8p+7 side by side, and words 2 and 3
        a, c = (_shuffle(b, halves[k][q], halves[k + 1][q], _halves(lanes)) for k in (0, 2))
        for h in range(2):
            pieces.append(_shuffle(b, a, c, [8 * (k % 2) + 4 * h + i + (_PIECE if k > 1 else 0)
                                             for i in range(4) for k in range(4)]))
    while len(pieces) > 1:
        pieces = [_shuffle(b, pieces[i], pieces[i + 1], list(range(2 * pieces[i].type.count)))
                  for i in range(0, len(pieces), 2)]
    return pieces[0]
