"""The bit-parallel alignment against a plain dynamic programme."""
from __future__ import annotations

import random
from itertools import pairwise

from tb_ad_layer.trace.align import EARLY, LATE, lcs_length, lcs_pairs


def _table_lcs(accepts: list[list[bool]]) -> int:
    n, m = len(accepts), len(accepts[0])
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n):
        for j in range(m):
            table[i + 1][j + 1] = max(
                table[i][j + 1], table[i + 1][j], table[i][j] + 1 if accepts[i][j] else 0
            )
    return table[n][m]


def test_matches_the_dynamic_programme_on_random_cases() -> None:
    rng = random.Random(3)
    for _ in range(400):
        n, m = rng.randint(1, 14), rng.randint(1, 14)
        accepts = [[rng.random() < 0.3 for _ in range(m)] for _ in range(n)]
        masks = [sum(1 << j for j in range(m) if accepts[i][j]) for i in range(n)]
        best = _table_lcs(accepts)
        assert lcs_length(masks, m) == best
        for prefer in (EARLY, LATE):
            pairs = lcs_pairs(masks, m, prefer)
            assert len(pairs) == best
            assert all(accepts[i][j] for i, j in pairs)
            assert all(a[0] < b[0] and a[1] < b[1] for a, b in pairwise(pairs))


def test_tie_rules() -> None:
    # One kernel, two slots that both take it.
    assert lcs_pairs([0b11], 2, EARLY) == [(0, 0)]
    assert lcs_pairs([0b11], 2, LATE) == [(0, 1)]
    assert lcs_pairs([], 3) == [] and lcs_length([0b1], 0) == 0


def test_thousands_of_kernels_and_slots() -> None:
    # A 61-layer replay aligned to its graph: every kernel pairs with its own slot.
    pattern = [1, 2, 3, 2, 4, 5, 2, 6]
    kernels = pattern * 500
    masks = [0] * len(kernels)
    positions: dict[int, int] = {}
    for j, fam in enumerate(kernels):
        positions[fam] = positions.get(fam, 0) | (1 << j)
    masks = [positions[f] for f in kernels]
    pairs = lcs_pairs(masks, len(kernels))
    assert pairs == [(i, i) for i in range(len(kernels))]
