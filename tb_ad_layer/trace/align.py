"""Order-preserving alignment of kernels to kernel slots (a longest common subsequence).

Kernels come in launch order; slots are the kernel-map slots of FX nodes in graph order; kernel
``i`` may fill slot ``j`` when ``masks[i]`` has bit ``j`` set. The alignment pairs as many
kernels with slots as possible while keeping both orders. It runs bit-parallel (one row of the
dynamic programme is one Python integer, updated in a few big-integer operations; Hyyrö's
formulation), so aligning a whole 61-layer replay (thousands of kernels against thousands of
slots) takes milliseconds instead of the seconds a cell-by-cell table needs.

Row ``i`` of the programme is kept as ``V_i``: bit ``j`` of ``V_i`` is 0 exactly where the LCS of
the first ``i`` kernels and the first ``j + 1`` slots is one more than with the first ``j`` slots,
so ``LCS(i, j) = j - popcount(V_i & (2**j - 1))``.
"""
from __future__ import annotations

from collections.abc import Sequence

#: Tie rules of the traceback: ``EARLY`` gives each kernel the earliest slot an optimal alignment
#: allows, ``LATE`` the latest.
EARLY = "early"
LATE = "late"


def _rows(masks: Sequence[int], m: int) -> list[int]:
    full = (1 << m) - 1
    v = full
    rows = [v]
    for mask in masks:
        u = v & mask
        v = ((v + u) | (v - u)) & full
        rows.append(v)
    return rows


def lcs_length(masks: Sequence[int], m: int) -> int:
    """Length of the longest order-preserving matching of ``len(masks)`` kernels to ``m`` slots."""
    if not masks or m <= 0:
        return 0
    full = (1 << m) - 1
    v = full
    for mask in masks:
        u = v & mask
        v = ((v + u) | (v - u)) & full
    return m - v.bit_count()


def lcs_pairs(masks: Sequence[int], m: int, prefer: str = EARLY) -> list[tuple[int, int]]:
    """The matched ``(kernel, slot)`` pairs of a longest order-preserving matching, in order."""
    n = len(masks)
    if not n or m <= 0:
        return []
    rows = _rows(masks, m)

    def score(i: int, j: int) -> int:
        return j - (rows[i] & ((1 << j) - 1)).bit_count()

    pairs: list[tuple[int, int]] = []
    i, j = n, m
    d = score(i, j)
    while i > 0 and j > 0 and d > 0:
        if prefer == LATE and (masks[i - 1] >> (j - 1)) & 1 and score(i - 1, j - 1) == d - 1:
            pairs.append((i - 1, j - 1))
            i -= 1
            j -= 1
            d -= 1
            continue
        left = score(i, j - 1)
        if left == d:
            j -= 1
            continue
        up = score(i - 1, j)
        if up == d:
            i -= 1
            continue
        pairs.append((i - 1, j - 1))
        i -= 1
        j -= 1
        d -= 1
    pairs.reverse()
    return pairs
