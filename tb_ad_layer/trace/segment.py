"""Split one replay or forward pass into decoder layers, without model-specific kernel names.

The busiest stream ("main") carries every layer's skeleton, so its sequence of kernel family
names repeats once per layer. An *anchor* family that occurs once per layer (``count == L``, or
k*L, or L+1 with one extra in the prologue/epilogue) cuts that sequence into per-layer segments;
the anchor whose segments agree best with the per-kind consensus wins (layers of one kind, e.g.
"dense" or "moe", run the same kernels). The anchor usually sits mid-layer (attention), so the
cut is then rotated back by the offset ``t`` that makes the first and last layers and every
kind transition agree with the consensus: a too-large ``t`` drags prologue kernels into layer 0,
a too-small one pushes epilogue kernels into the last layer.

Kernels on other streams (and copies) are assigned by time: layer j owns [start of its first
main-stream kernel, start of layer j+1's). An aux stream whose work spans a boundary (layer N's
shared experts, then layer N+1's KV branch) is thus split at the boundary, kernel by kernel.

Without graph information the layer count is inferred: the anchor family with consistent
segments and the most layers wins, and kinds are named by pattern (``A``, ``B``...).
"""
from __future__ import annotations

import bisect
from collections import Counter
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Callable, Sequence

from tb_ad_layer.errors import InputError
from tb_ad_layer.trace.kernel import KIND_KERNEL, Kernel

#: Below this mean similarity to the kind consensus, a cut is not a layer structure.
MIN_CONSISTENCY = 0.6
#: Inferred layer structures must explain this share of segments with at most three patterns.
MIN_INFERRED_COVERAGE = 0.8
_MAX_KIND_CHANGES = 4


@dataclass
class Segmentation:
    """Per-layer kernels of one replay/pass.

    ``layers[j]`` are the kernels of the j-th layer in trace order (sorted by start), ``kinds[j]``
    its kind (given, or an inferred pattern label), ``outside`` the kernels before the first or
    after the last layer. ``anchor`` is the family that marked the layers, ``offset`` the number of
    main-stream kernels of a layer before its anchor, ``consistency`` the mean similarity (0..1)
    of each layer's main-stream family sequence to its kind's consensus.
    """

    layers: list[list[Kernel]] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    outside: list[Kernel] = field(default_factory=list)
    main_stream: str | None = None
    anchor: str | None = None
    offset: int = 0
    consistency: float = 0.0
    inferred: bool = False
    boundaries_ns: list[int] = field(default_factory=list)


@dataclass
class _Cut:
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


def main_stream_of(kernels: Sequence[Kernel]) -> str | None:
    """Stream with the most kernels (ties: the one starting first)."""
    counts: Counter[str] = Counter()
    first: dict[str, int] = {}
    for k in kernels:
        if k.kind == KIND_KERNEL:
            counts[k.stream_key] += 1
            first.setdefault(k.stream_key, k.start_ns)
    if not counts:
        return None
    return min(counts, key=lambda s: (-counts[s], first[s], s))


def _segments(seq: list[str], anchors: list[int], offset: int) -> list[tuple[str, ...]]:
    """Segments between consecutive cut points (the last layer is left out: its end is unknown)."""
    cuts = [a - offset for a in anchors]
    return [tuple(seq[cuts[j]:cuts[j + 1]]) for j in range(len(cuts) - 1)]


def _consensus(segs: list[tuple[str, ...]], kinds: list[str]) -> dict[str, tuple[str, ...]]:
    """Most common segment per kind; interior layers first, because edges hold prologue/epilogue."""
    out: dict[str, tuple[str, ...]] = {}
    for kind in dict.fromkeys(kinds):
        idx = [j for j in range(len(segs)) if kinds[j] == kind]
        interior = [j for j in idx if j > 0] or idx
        if interior:
            out[kind] = Counter(segs[j] for j in interior).most_common(1)[0][0]
    return out


def _score(seq: list[str], anchors: list[int], kinds: list[str], offset: int) -> tuple[float, list[float]]:
    """Mean similarity of every layer (the last one included) to its kind consensus at ``offset``."""
    segs = _segments(seq, anchors, offset)
    cons = _consensus(segs, kinds[:len(segs)])
    last_kind = kinds[-1]
    ref_last = cons.get(last_kind) or (max(cons.values(), key=len) if cons else ())
    start_last = anchors[-1] - offset
    segs.append(tuple(seq[start_last:start_last + len(ref_last)]) if ref_last else tuple(seq[start_last:]))
    sims = [similarity(s, cons.get(kinds[j], ref_last)) for j, s in enumerate(segs)]
    return (sum(sims) / len(sims) if sims else 0.0), sims


def _candidate_anchor_sets(positions: list[int], n_layers: int) -> list[list[int]]:
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


def _family_positions(seq: list[str]) -> dict[str, list[int]]:
    positions: dict[str, list[int]] = {}
    for i, fam in enumerate(seq):
        positions.setdefault(fam, []).append(i)
    return positions


def _fit(seq: list[str], kinds: list[str]) -> _Cut | None:
    """Best anchor set for the given layer kinds, or None when no family fits the count."""
    n = len(kinds)
    best: _Cut | None = None
    for fam, pos in _family_positions(seq).items():
        for anchors in _candidate_anchor_sets(pos, n):
            score, _ = _score(seq, anchors, kinds, 0)
            if best is None or score > best.consistency + 1e-9:
                best = _Cut(anchors, fam, list(kinds), score)
    return best


def _infer(seq: list[str]) -> _Cut | None:
    """Layer structure from repetition alone: consistent segments, fewest patterns, most layers."""
    best: tuple[tuple[float, int, int], _Cut] | None = None
    for fam, pos in _family_positions(seq).items():
        if len(pos) < 3:
            continue
        subsets = {tuple(pos), tuple(pos[1:]), tuple(pos[:-1]), tuple(pos[1:-1])}
        for sub in subsets:
            anchors = list(sub)
            if len(anchors) < 3:
                continue
            segs = _segments(seq, anchors, 0)
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
                best = (key, _Cut(anchors, fam, kinds, coverage))
    return None if best is None else best[1]


def _best_offset(seq: list[str], cut: _Cut, is_start: list[bool] | None) -> tuple[int, float]:
    """Rotation of the cut (main-stream kernels before the anchor) that best explains the edges."""
    gaps = [b - a for a, b in zip(cut.anchors, cut.anchors[1:])]
    limit = min([cut.anchors[0]] + [g - 1 for g in gaps])
    best = (-1.0, -1, 0)
    best_score = cut.consistency
    for t in range(0, max(limit, 0) + 1):
        score, _ = _score(seq, cut.anchors, cut.kinds, t)
        hint = sum(1 for a in cut.anchors if is_start and is_start[a - t]) if is_start else 0
        key = (round(score, 6), hint, -t)
        if key > best:
            best = key
            best_score = score
    return -best[2], best_score


def _assign(kernels: list[Kernel], main_ks: list[Kernel], cut: _Cut, offset: int,
            seq_len: int, seg: Segmentation) -> None:
    """Fill ``seg.layers``/``seg.outside``: main-stream kernels by index, the rest by time."""
    n = len(cut.anchors)
    starts = [a - offset for a in cut.anchors]
    segs = _segments([k.short for k in main_ks], cut.anchors, offset)
    cons = _consensus(segs, cut.kinds[:len(segs)])
    ref_last = cons.get(cut.kinds[-1]) or (max(cons.values(), key=len) if cons else ())
    end_last = min(seq_len, starts[-1] + len(ref_last)) if ref_last else seq_len
    bounds = starts + [end_last]
    boundary_ns = [main_ks[b].start_ns for b in starts]
    end_ns = main_ks[end_last - 1].end_ns if end_last > 0 else boundary_ns[-1]
    seg.boundaries_ns = boundary_ns + [end_ns]
    seg.layers = [[] for _ in range(n)]
    main_index = {id(k): i for i, k in enumerate(main_ks)}
    for k in kernels:
        i = main_index.get(id(k))
        if i is not None:
            j = bisect.bisect_right(bounds, i) - 1
            in_layer = 0 <= j < n
        else:
            j = bisect.bisect_right(boundary_ns, k.start_ns) - 1
            in_layer = j >= 0 and k.start_ns < end_ns
        if in_layer:
            seg.layers[j].append(k)
        else:
            seg.outside.append(k)


def segment_layers(kernels: Sequence[Kernel], layer_kinds: Sequence[str] | None = None, *,
                   is_layer_start: Callable[[Kernel], bool] | None = None) -> Segmentation:
    """Split ``kernels`` (one replay or pass) into layers.

    ``layer_kinds`` lists the graph's layers in order by kind (``["dense", "dense", "moe", ...]``);
    None infers the count from the trace. ``is_layer_start`` optionally flags kernels that can open
    a layer (e.g. the first node's kernel family), used to break ties of the rotation.

    Raises ``InputError`` stating both numbers when the trace's repeating structure cannot hold
    the graph's layer count.
    """
    ks = sorted(kernels, key=lambda k: (k.start_ns, k.stream_key, k.index))
    seg = Segmentation(main_stream=main_stream_of(ks), inferred=layer_kinds is None)
    main_ks = [k for k in ks if k.stream_key == seg.main_stream and k.kind == KIND_KERNEL]
    seq = [k.short for k in main_ks]
    if layer_kinds is not None and len(layer_kinds) == 0:
        seg.outside = ks
        return seg
    if layer_kinds is not None and len(layer_kinds) == 1 and main_ks:
        seg.layers, seg.kinds, seg.consistency = [ks], list(layer_kinds), 1.0
        seg.boundaries_ns = [ks[0].start_ns, max(k.end_ns for k in ks)]
        return seg
    cut = _fit(seq, list(layer_kinds)) if layer_kinds is not None else _infer(seq)
    if layer_kinds is not None and (cut is None or cut.consistency < MIN_CONSISTENCY):
        found = _infer(seq)
        shown = f"{len(found.anchors)} repeating layers" if found else "no repeating per-layer kernel pattern"
        raise InputError(f"the trace shows {shown} but the graph has {len(layer_kinds)} layers "
                         f"({', '.join(f'{c} {k}' for k, c in Counter(layer_kinds).items())}); check that "
                         "trace and dump come from the same model and rank", field="layers")
    if cut is None:
        seg.outside = ks
        return seg
    flags = [is_layer_start(k) for k in main_ks] if is_layer_start is not None else None
    seg.offset, seg.consistency = _best_offset(seq, cut, flags)
    seg.anchor = cut.family
    seg.kinds = list(cut.kinds)
    _assign(ks, main_ks, cut, seg.offset, len(seq), seg)
    return seg
