"""Find the per-layer period of a main-stream kernel sequence, from repetition alone.

A *cut* marks one anchor kernel per layer: a family occurring once per layer (``count == L``, or
k*L, or L+1/L+2 with extras in the prologue/epilogue). Segments between anchors of layers of the
same kind ("dense", "moe") run the same kernels, so the cut whose segments agree best with each
kind's consensus is the layer structure. The anchor usually sits mid-layer (attention), so the
cut is then rotated back by the offset ``t`` that makes the first and last layers and every kind
transition agree with the consensus: a too-large ``t`` drags prologue kernels into layer 0, a
too-small one pushes epilogue kernels into the last layer.

Sequences here are kernel family names of the main stream; positions are indices into them.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Callable, Sequence

from tb_ad_layer.trace.kernel import Kernel

#: Below this mean similarity to the kind consensus, a cut is not a layer structure.
MIN_CONSISTENCY = 0.6
#: Inferred layer structures must explain this share of segments with at most three patterns.
MIN_INFERRED_COVERAGE = 0.8
#: A layer "agrees" with its kind at this similarity; this share of layers must agree.
_SIMILAR = 0.8
MIN_SIMILAR_SHARE = 0.8
#: No layer of an accepted cut may be less similar than this to its kind.
_MIN_LAYER_SIMILARITY = 0.5
_MAX_KIND_CHANGES = 4
#: Each layer's graph fit must reach this share of the best layer's fit.
EVEN_FIT = 0.75
_OFFSET_TOLERANCE = 0.05
_MAX_FITTED_OFFSETS = 12

#: ``layer_fit(j, kernels)``: how many of these main-stream kernels the graph's j-th layer can launch.
LayerFit = Callable[[int, Sequence[Kernel]], int]


@dataclass
class Cut:
    anchors: list[int]
    family: str
    kinds: list[str]
    consistency: float


def similarity(a: tuple[str, ...], b: tuple[str, ...]) -> float:
    """Similarity of two family sequences in 0..1 (1 when equal)."""
    if a == b:
        return 1.0
    if not a or not b:
        return 0.0
    return SequenceMatcher(None, a, b, autojunk=False).ratio()


def segments(seq: list[str], anchors: list[int], offset: int) -> list[tuple[str, ...]]:
    """Segments between consecutive cut points (the last layer is left out: its end is unknown)."""
    cuts = [a - offset for a in anchors]
    return [tuple(seq[cuts[j]:cuts[j + 1]]) for j in range(len(cuts) - 1)]


def consensus(segs: list[tuple[str, ...]], kinds: list[str]) -> dict[str, tuple[str, ...]]:
    """Most common segment per kind; interior layers first, because edges hold prologue/epilogue."""
    out: dict[str, tuple[str, ...]] = {}
    for kind in dict.fromkeys(kinds):
        idx = [j for j in range(len(segs)) if kinds[j] == kind]
        interior = [j for j in idx if j > 0] or idx
        if interior:
            out[kind] = Counter(segs[j] for j in interior).most_common(1)[0][0]
    return out


def score_cut(seq: list[str], anchors: list[int], kinds: list[str], offset: int) -> tuple[float, list[float]]:
    """Mean similarity of every layer (the last one included) to its kind consensus at ``offset``."""
    segs = segments(seq, anchors, offset)
    cons = consensus(segs, kinds[:len(segs)])
    last_kind = kinds[-1]
    ref_last = cons.get(last_kind) or (max(cons.values(), key=len) if cons else ())
    start_last = anchors[-1] - offset
    segs.append(tuple(seq[start_last:start_last + len(ref_last)]) if ref_last else tuple(seq[start_last:]))
    sims = [similarity(s, cons.get(kinds[j], ref_last)) for j, s in enumerate(segs)]
    return (sum(sims) / len(sims) if sims else 0.0), sims


def candidate_anchor_sets(positions: list[int], n_layers: int) -> list[list[int]]:
    """Subsets of a family's occurrences that could mark ``n_layers`` layer starts."""
    c = len(positions)
    out: list[list[int]] = []
    for k in (1, 2, 3):
        if c == k * n_layers:
            out += [positions[j::k] for j in range(k)]
        elif c == k * n_layers + 1:
            out += [positions[:-1][j::k] for j in range(k)] + [positions[1:][j::k] for j in range(k)]
        elif c == k * n_layers + 2:
            out += [positions[1:-1][j::k] for j in range(k)]
    return [a for a in out if len(a) == n_layers]


def family_positions(seq: list[str]) -> dict[str, list[int]]:
    positions: dict[str, list[int]] = {}
    for i, fam in enumerate(seq):
        positions.setdefault(fam, []).append(i)
    return positions


def fit_cuts(seq: list[str], kinds: list[str]) -> list[Cut]:
    """Anchor sets that could hold the given layer kinds, best first (empty when none fits)."""
    n = len(kinds)
    cuts = []
    for fam, pos in family_positions(seq).items():
        for anchors in candidate_anchor_sets(pos, n):
            score, _ = score_cut(seq, anchors, kinds, 0)
            cuts.append(Cut(anchors, fam, list(kinds), score))
    cuts.sort(key=lambda c: -c.consistency)
    return cuts


def infer_cut(seq: list[str]) -> Cut | None:
    """Layer structure from repetition alone: consistent segments, fewest patterns, most layers."""
    best: tuple[tuple[float, int, int], Cut] | None = None
    for fam, pos in family_positions(seq).items():
        if len(pos) < 3:
            continue
        subsets = {tuple(pos), tuple(pos[1:]), tuple(pos[:-1]), tuple(pos[1:-1])}
        for sub in subsets:
            anchors = list(sub)
            if len(anchors) < 3:
                continue
            segs = segments(seq, anchors, 0)
            if sum(map(len, segs)) / len(segs) < 2:
                continue
            common = [s for s, c in Counter(segs).most_common(3) if c >= 2 or len(segs) <= 3]
            label_of = {s: chr(ord("A") + i) for i, s in enumerate(sorted(common, key=segs.index))}
            labels = [label_of.get(s) for s in segs]
            coverage = sum(1 for lab in labels if lab is not None) / len(segs)
            changes = sum(1 for a, b in zip(labels, labels[1:]) if a != b)
            # Kinds come in blocks (dense first, then MoE); alternation means two anchors per layer.
            if coverage < MIN_INFERRED_COVERAGE or changes > min(_MAX_KIND_CHANGES, 2 * (len(label_of) - 1)):
                continue
            # Unmatched segments take the label of the most similar pattern.
            kinds = [lab or max(label_of.items(), key=lambda kv: similarity(segs[j], kv[0]))[1]
                     for j, lab in enumerate(labels)]
            last_prefix = tuple(seq[anchors[-1]:])
            kinds.append(max(label_of.items(),
                             key=lambda kv: similarity(last_prefix[:len(kv[0])], kv[0]))[1])
            key = (round(coverage, 2), len(anchors), -anchors[0])
            if best is None or key > best[0]:
                best = (key, Cut(anchors, fam, kinds, coverage))
    return None if best is None else best[1]


def best_offset(seq: list[str], cut: Cut, is_start: list[bool] | None, main_ks: list[Kernel],
                 layer_fit: LayerFit | None) -> tuple[int, float]:
    """Rotation of the cut (main-stream kernels before the anchor) that best explains the edges.

    Repetition alone leaves near-ties: the final norm of the epilogue often repeats a layer's
    opening kernels, and layer 0 may open with a plain norm where later layers open with a fused
    residual+norm. With ``layer_fit`` (how many of a layer's kernels the graph's layer can
    launch), offsets within ``_OFFSET_TOLERANCE`` of the best score are decided by the fit of the
    edge layers and kind transitions. Then the offset whose layer starts look like layer starts
    wins, then the earliest start (the prologue, an embedding, rarely repeats a layer's tail).
    """
    gaps = [b - a for a, b in zip(cut.anchors, cut.anchors[1:])]
    limit = max(min([cut.anchors[0]] + [g - 1 for g in gaps]), 0)
    scored = []
    for t in range(0, limit + 1):
        score, _ = score_cut(seq, cut.anchors, cut.kinds, t)
        hint = sum(1 for a in cut.anchors if is_start[a - t]) if is_start else 0
        scored.append((score, hint, t))
    top = max(s for s, _, _ in scored)
    tolerance = _OFFSET_TOLERANCE if layer_fit is not None else 1e-9
    near = [x for x in scored if x[0] >= top - tolerance]
    # Fitting costs a small alignment per layer; the best-scoring dozen offsets are plenty.
    near = sorted(near, key=lambda x: (x[0], x[1], x[2]), reverse=True)[:_MAX_FITTED_OFFSETS]
    if layer_fit is not None and len(near) > 1:
        sample = edge_layers(cut.kinds)

        def fit(t: int) -> int:
            starts, end_last = layer_bounds(seq, cut, t)
            bounds = starts + [end_last]
            return sum(layer_fit(j, main_ks[bounds[j]:bounds[j + 1]]) for j in sample)

        fits = {t: fit(t) for _, _, t in near}
        score, _, t = max(near, key=lambda x: (fits[x[2]], x[1], x[2]))
    else:
        score, _, t = max(near, key=lambda x: (x[0], x[1], x[2]))
    return t, score


def edge_layers(kinds: list[str]) -> list[int]:
    """Layers whose content moves when the cut rotates: first, last, both sides of every kind
    change, and one interior layer per kind."""
    n = len(kinds)
    picked = {0, n - 1}
    for j in range(1, n):
        if kinds[j] != kinds[j - 1]:
            picked.update((j - 1, j))
    for kind in set(kinds):
        interior = [j for j in range(1, n - 1) if kinds[j] == kind]
        if interior:
            picked.add(interior[len(interior) // 2])
    return sorted(picked)


def layer_bounds(seq: list[str], cut: Cut, offset: int) -> tuple[list[int], int]:
    """Main-stream index where each layer starts, and the end of the last layer.

    The last layer is as long as its kind's consensus, because nothing after it marks its end.
    """
    starts = [a - offset for a in cut.anchors]
    cons = consensus(segments(seq, cut.anchors, offset), cut.kinds[:len(cut.anchors) - 1])
    ref_last = cons.get(cut.kinds[-1]) or (max(cons.values(), key=len) if cons else ())
    end_last = min(len(seq), starts[-1] + len(ref_last)) if ref_last else len(seq)
    return starts, end_last


def acceptable(seq: list[str], cut: Cut, offset: int) -> bool:
    """Whether a cut is the graph's layer structure.

    Every layer must resemble its kind's consensus and most must match it closely; kinds the graph
    tells apart must run different kernels; and neither the prologue nor the epilogue may look
    like one more layer, else the count is wrong.
    """
    score, sims = score_cut(seq, cut.anchors, cut.kinds, offset)
    if score < MIN_CONSISTENCY or min(sims) < _MIN_LAYER_SIMILARITY or \
            sum(1 for x in sims if x >= _SIMILAR) < MIN_SIMILAR_SHARE * len(sims):
        return False
    cons = consensus(segments(seq, cut.anchors, offset), cut.kinds[:len(cut.anchors) - 1])
    if len(cons) > 1 and len(set(cons.values())) == 1:
        return False
    starts, end_last = layer_bounds(seq, cut, offset)
    prologue, epilogue = tuple(seq[:starts[0]]), tuple(seq[end_last:])
    for ref in set(cons.values()):
        for part in (prologue[-len(ref):], epilogue[:len(ref)]):
            if len(part) >= _SIMILAR * len(ref) and similarity(part, ref) >= _SIMILAR:
                return False
    return True


def fits_evenly(seq: list[str], cut: Cut, offset: int, main_ks: list[Kernel], layer_fit: LayerFit | None) -> bool:
    """Whether the graph explains every layer of the cut about as well as its best layer.

    A kernel map may miss some families, lowering every layer's share alike; but trace layers
    cut against the wrong graph layers (a 3-layer graph against a 5-layer trace) leave some
    layers mostly unexplained while others fit.
    """
    if layer_fit is None:
        return True
    starts, end_last = layer_bounds(seq, cut, offset)
    bounds = starts + [end_last]
    picked = sorted(set(edge_layers(cut.kinds)) | set(range(0, len(starts), max(1, len(starts) // 8))))
    shares = [layer_fit(j, main_ks[bounds[j]:bounds[j + 1]]) / max(1, bounds[j + 1] - bounds[j]) for j in picked]
    return min(shares) >= EVEN_FIT * max(shares)
