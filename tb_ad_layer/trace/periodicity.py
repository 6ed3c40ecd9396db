"""Find decoder layers in a kernel sequence from repetition alone (no graph, no annotations).

A *cut* marks one anchor kernel per layer: a family occurring once per layer (``count == L``, or
k*L, or L+1/L+2 with extras in the prologue or epilogue). The kernels between two anchors are
compared as multisets of families, so that kernels of concurrent streams landing on either
side of each other from one layer to the next do not break the pattern. Segments group into at
most three patterns (layer kinds: dense and MoE, sliding and full attention); a cut whose
patterns share little (an attention half and an MLP half of one layer, cut by a family that
occurs twice per layer) is a half-layer cut, and a cut with more layers wins over one with
fewer when both are consistent (a kernel occurring every other layer is no boundary).

The anchor usually sits mid-layer; the cut is then rotated back to where layers start: a layer
begins with its own input norm, and the first and last layers must look like the others.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from tb_ad_layer.trace.align import lcs_length

#: Segments this similar to a pattern belong to it.
SIMILAR = 0.85
#: Patterns of one cut sharing less than this are two halves of a layer, not two layer kinds.
KIND_SIMILARITY = 0.5
#: Patterns a cut cycles through are layer kinds (not parts of one layer) above this similarity.
ALTERNATING_SIMILARITY = 0.8
#: A layer structure explains at least this share of its segments with its patterns.
MIN_COVERAGE = 0.8
_MAX_PATTERNS = 3
_MIN_LAYER_KERNELS = 3
#: Kernels of the layer pattern left before the first or after the last layer, as a share of a
#: layer, that show a rotation cut through a layer.
_STRAY_SHARE = 0.25
#: Repetition is evidence only when the pattern is seen at least this often.
_MIN_LAYERS = 3


def multiset_similarity(a: Counter[str], b: Counter[str]) -> float:
    """Shared kernels over the larger size (1 when equal, 0 when disjoint)."""
    na, nb = sum(a.values()), sum(b.values())
    if not na or not nb:
        return 1.0 if na == nb else 0.0
    shared = sum(min(n, b[k]) for k, n in a.items() if k in b)
    return shared / max(na, nb)


def _candidate_anchor_sets(positions: list[int]) -> list[list[int]]:
    """Subsets of a family's occurrences that could mark one layer each."""
    c = len(positions)
    out: list[list[int]] = []
    for k in (1, 2, 3):
        for drop_front, drop_back in ((0, 0), (1, 0), (0, 1), (1, 1)):
            body = positions[drop_front:c - drop_back]
            if len(body) % k:
                continue
            for j in range(k):
                sub = body[j::k]
                if len(sub) >= _MIN_LAYERS:
                    out.append(sub)
    unique = {tuple(a) for a in out}
    return [list(a) for a in sorted(unique)]


def _cluster(segs: list[Counter[str]]) -> tuple[list[int], list[Counter[str]]]:
    """Clusters of segments: segments that recur exactly are patterns of their own (sliding and
    full attention layers differ by one kernel); the others join the most similar pattern, or
    form clusters greedily. Returns each segment's cluster and the clusters' representatives."""
    exact = Counter(tuple(sorted(s.items())) for s in segs)
    reps: list[Counter[str]] = [Counter(dict(key)) for key, n in exact.most_common(_MAX_PATTERNS) if n >= 2]
    labels: list[int] = []
    for s in segs:
        best, best_sim = -1, 0.0
        for i, r in enumerate(reps):
            sim = multiset_similarity(s, r)
            if sim > best_sim:
                best, best_sim = i, sim
        if best >= 0 and best_sim >= SIMILAR:
            labels.append(best)
        else:
            reps.append(s)
            labels.append(len(reps) - 1)
    return labels, reps


class _Candidate:
    __slots__ = ("anchors", "kinds", "patterns", "coverage", "halves", "fit", "ambiguous")

    def __init__(self, anchors: list[int], kinds: list[int], patterns: list[Counter[str]], coverage: float,
                 halves: bool, fit: float) -> None:
        self.anchors = anchors
        self.kinds = kinds
        self.patterns = patterns
        self.coverage = coverage
        self.halves = halves
        self.fit = fit
        self.ambiguous = False  # set by ``_rotate``: another start fits as well

    def key(self) -> tuple[float, int, int, int, float]:
        """Rank: most segments explained, no parts of layers, most layers, then the fewest
        patterns and the segments closest to them (a cut starting in the prologue makes a
        pattern of its own)."""
        return (round(self.coverage, 2), 0 if self.halves else 1, len(self.anchors), -len(self.patterns),
                round(self.fit, 3))


def sequence_similarity(a: Sequence[str], b: Sequence[str]) -> float:
    """Longest common subsequence over the longer length (1 when equal, 0 when disjoint): like
    ``multiset_similarity``, but kernels must come in the same order."""
    if not a or not b:
        return 1.0 if len(a) == len(b) else 0.0
    where: dict[str, int] = {}
    for j, fam in enumerate(b):
        where[fam] = where.get(fam, 0) | (1 << j)
    return lcs_length([where.get(fam, 0) for fam in a], len(b)) / max(len(a), len(b))


_PERIODS = (2, 3, 4)


def _cycling_parts(kinds: list[int], parts: list[Sequence[str]]) -> bool:
    """Whether the segments cycle through patterns (ABAB..., ABBABB..., or ABA when that is all
    there is) whose kernel sequences differ more than layer kinds do: parts of one layer cut by
    a family occurring several times per layer. Alternating layer kinds (sliding and full
    attention) run the same kernels in the same order but for one or two; parts of a layer
    (attention, then MLP) share kernel families (norms, GEMMs) in another order. Kinds in
    blocks (dense, then MoE) do not cycle. ``parts[k]``: one segment of kind ``k``."""
    for period in _PERIODS:
        span = min(len(kinds), 2 * period)
        if span < period + 1:
            continue
        for a in range(len(kinds) - span + 1):
            run = kinds[a:a + span]
            if len(set(run[:period])) >= 2 and all(run[i] == run[i - period] for i in range(period, span)):
                seqs = [parts[k] for k in sorted(set(run[:period]))]
                if any(sequence_similarity(x, y) < ALTERNATING_SIMILARITY
                       for i, x in enumerate(seqs) for y in seqs[i + 1:]):
                    return True
    return False


def _evaluate(seq: Sequence[str], anchors: list[int]) -> _Candidate | None:
    segs = [Counter(seq[a:b]) for a, b in pairwise(anchors)]
    if not segs or sum(sum(s.values()) for s in segs) / len(segs) < _MIN_LAYER_KERNELS:
        return None
    labels, reps = _cluster(segs)
    sizes = Counter(labels)
    kept = [c for c, n in sizes.most_common(_MAX_PATTERNS) if n >= 2 or len(segs) <= 3]
    if not kept:
        return None
    coverage = sum(sizes[c] for c in kept) / len(segs)
    # Segments outside the kept patterns take the most similar one.
    kinds = []
    for s, lab in zip(segs, labels, strict=True):
        if lab in kept:
            kinds.append(kept.index(lab))
        else:
            kinds.append(max(range(len(kept)), key=lambda i: multiset_similarity(s, reps[kept[i]])))
    patterns = [reps[c] for c in kept]
    if any(len(p) < 2 for p in patterns):
        return None  # a layer runs several kinds of kernel (norm, GEMMs, attention...)
    bounds = list(pairwise(anchors))
    parts = [seq[slice(*bounds[kinds.index(k)])] if k in kinds else [] for k in range(len(patterns))]
    halves = any(multiset_similarity(patterns[i], patterns[j]) < KIND_SIMILARITY
                 for i in range(len(patterns)) for j in range(i + 1, len(patterns))) or \
        _cycling_parts(kinds, parts)
    fit = sum(multiset_similarity(seg, patterns[k]) for seg, k in zip(segs, kinds, strict=True)) / len(segs)
    # The last layer (after the last anchor) resembles the pattern its prefix matches best.
    kinds.append(kinds[-1])
    return _Candidate(anchors, kinds, patterns, coverage, halves, fit)


def _rotate(
    seq: Sequence[str], is_start: Sequence[bool], cand: _Candidate
) -> tuple[list[int], list[int], float]:
    """Cut positions (layer starts, then the end of the last layer) after rotating the anchors
    back to the layers' first kernels, each layer's pattern, and the mean similarity of every
    layer to its pattern.

    The anchor sits at the same place in every layer of one kind but not across kinds (a dense
    layer's activation comes earlier than a MoE layer's), so each kind gets its own rotation.
    """
    anchors = cand.anchors
    lengths = [sum(p.values()) for p in cand.patterns]
    families = set().union(*cand.patterns)
    kinds = list(cand.kinds)
    bounds: list[int] = []
    # Twice: the kinds of the anchor segments label the layers roughly (a segment mixes the end of
    # one layer with the start of the next); after one rotation each layer's own kind is known.
    for _ in range(2):
        rotation, cand.ambiguous = _rotations(seq, is_start, anchors, kinds, cand.patterns, lengths, families)
        starts = _starts(anchors, kinds, rotation)
        _settle_transitions(seq, is_start, anchors, kinds, rotation, starts, cand.patterns)
        _settle_first(seq, is_start, anchors, starts, cand.patterns)
        # The last layer takes the pattern its own kernels resemble most.
        last = max(range(len(cand.patterns)), key=lambda i: (multiset_similarity(
            Counter(seq[starts[-1]:starts[-1] + lengths[i]]), cand.patterns[i]), -i))
        bounds = starts + [min(len(seq), starts[-1] + lengths[last])]
        kinds = [max(range(len(cand.patterns)), key=lambda i: (multiset_similarity(
            Counter(seq[bounds[j]:bounds[j + 1]]), cand.patterns[i]), -i)) for j in range(len(starts))]
    sims = [multiset_similarity(Counter(seq[bounds[j]:bounds[j + 1]]), cand.patterns[kinds[j]])
            for j in range(len(kinds))]
    return bounds, kinds, sum(sims) / len(sims)


def _rotations(
    seq: Sequence[str],
    is_start: Sequence[bool],
    anchors: list[int],
    kinds: list[int],
    patterns: list[Counter[str]],
    lengths: list[int],
    families: set[str],
) -> tuple[dict[int, int], bool]:
    """Per kind, how many kernels before its anchor a layer starts, and whether some kind has
    another start that fits as well (every criterion equal, similarity within a few percent):
    a layer whose first block could as well end the previous one (a shared attention block
    before a Mamba mixer)."""
    ambiguous = False
    by_kind: dict[int, list[int]] = {}
    for j, kind in enumerate(kinds):
        by_kind.setdefault(kind, []).append(j)
    rotation: dict[int, int] = {}
    for kind, every in by_kind.items():
        # Judge a kind by the layers inside its blocks: at a change of kind, which layer the
        # anchor segment stands for is uncertain.
        # The first and last layers may legitimately differ (a plain norm before the first
        # layer's attention, the final norm after the last), so they only count when nothing
        # else does.
        inner = [j for j in every if 0 < j < len(kinds) - 1 and kinds[j - 1] == kind and kinds[j + 1] == kind]
        js = inner or every
        # A layer starts after the previous layer's anchor; the first layer is clamped to the
        # sequence start by ``_starts`` instead of bounding every layer of its kind.
        gaps = [anchors[j] - anchors[j - 1] - 1 for j in every if j]
        limit = max(0, min(gaps) if gaps else anchors[0])
        best: tuple[tuple[float, int, int, int, int, float, int], int] | None = None
        keys: list[tuple[float, int, int, int, int, float, int]] = []
        layouts: dict[int, list[int]] = {}
        edges: dict[int, tuple[float, int, int, int, int]] = {}
        for t in range(limit + 1):
            # Kinds not settled yet rotate alike, so that their layers do not distort this one's.
            starts = _starts(anchors, kinds, {**{k: t for k in by_kind}, **rotation, kind: t})
            bounds = starts + [min(len(seq), starts[-1] + lengths[kinds[-1]])]
            norm = sum(1 for j in every if is_start[starts[j]]) / len(every)
            sims = [multiset_similarity(Counter(seq[bounds[j]:bounds[j + 1]]), patterns[kind]) for j in js]
            left_over = sum(1 for f in seq[:bounds[0]] if f in families) + \
                sum(1 for f in seq[bounds[-1]:] if f in families)
            # A layer begins with its own input norm; then the model's final norm stays after
            # the last layer (a final norm and lm head look like a layer's input norm and first
            # projection, so a cut one such piece late fits as well); then the last layer ends within the
            # replay (starting a layer late pushes the last one into the final norm and lm
            # head, and past the end); then no big piece of a layer left outside (a final norm
            # and lm head are fine, half a layer is not), and the fewest layer kernels outside
            # (a first layer started at its second norm leaves its input norm behind); then the
            # best-fitting layers; then the earliest start.
            overrun = int(starts[-1] + lengths[kinds[-1]] > len(seq))
            stray = int(left_over >= _STRAY_SHARE * min(lengths))
            final_norm = int(any(is_start[i] for i in range(bounds[-1], len(seq))))
            key = (
                round(norm, 2),
                final_norm,
                -overrun,
                -stray,
                -left_over,
                round(sum(sims) / len(sims), 3),
                t,
            )
            keys.append(key)
            layouts[t] = bounds
            # The same edge criteria with the last layer as long as the others of its kind cut
            # this way: the anchor segment's length favours the rotation the patterns came from.
            edges[t] = (round(norm, 2), *_edges(seq, is_start, families, starts,
                                                _cut_length(starts, kinds, kinds[-1], lengths[kinds[-1]]),
                                                min(lengths)))
            if best is None or key > best[0]:
                best = (key, t)
        assert best is not None
        rotation[kind] = best[1]
        top = best[0]
        if not ambiguous:
            # Another start fits as well when it ties on every criterion, or ties on the edges
            # once the last layer is as long as its kind's others and its layers' first block
            # (input norm to the next norm) runs the mixer (attention, SSM scan) more often than
            # the chosen start's: a layer runs its mixer right after its input norm, its MLP
            # after a second norm. Judged by how alike the kind's layers are to each other (the
            # patterns come from the anchors, which favour the cut they were taken from).
            mine = _consistency(seq, layouts[top[6]], js)
            first = _mixer_first(seq, is_start, layouts[top[6]], every)
            ambiguous = any(
                (k[:5] == top[:5] or edges[k[6]] == edges[top[6]]
                 and _mixer_first(seq, is_start, layouts[k[6]], every) > first)
                and k[6] != top[6] and _consistency(seq, layouts[k[6]], js) >= mine - _SAME_FIT
                for k in keys
            )
    return rotation, ambiguous


def _mixer_first(seq: Sequence[str], is_start: Sequence[bool], bounds: list[int], js: list[int]) -> float:
    """Share of layers ``js`` (cut at ``bounds``) whose first block runs a mixer kernel."""
    got = [j for j in js if j + 1 < len(bounds)]
    if not got:
        return 0.0
    hits = sum(1 for j in got
               if any(_MIXER.search(f) for f in _first_block(seq, is_start, bounds[j], bounds[j + 1])))
    return hits / len(got)


#: Rotations whose layers fit their patterns within this much fit as well.
_SAME_FIT = 0.03


def _consistency(seq: Sequence[str], bounds: list[int], js: list[int]) -> float:
    """Mean similarity of layers ``js`` (cut at ``bounds``) to the middle one of them."""
    layers = [Counter(seq[bounds[j]:bounds[j + 1]]) for j in js if j + 1 < len(bounds)]
    if not layers:
        return 0.0
    middle = layers[len(layers) // 2]
    return sum(multiset_similarity(layer, middle) for layer in layers) / len(layers)


def _settle_transitions(seq: Sequence[str], is_start: Sequence[bool], anchors: list[int], kinds: list[int],
                        rotation: dict[int, int], starts: list[int], patterns: list[Counter[str]]) -> None:
    """Where the kind changes, the layer may be of either kind: its start takes the rotation of
    the kind that opens it with a norm and makes the two layers around it fit their patterns best."""
    for j in range(1, len(starts)):
        if kinds[j] == kinds[j - 1]:
            continue
        end = starts[j + 1] if j + 1 < len(starts) else len(seq)
        options = []
        for kind in (kinds[j - 1], kinds[j]):
            start = anchors[j] - rotation[kind]
            if not starts[j - 1] < start < end:
                continue
            fit = max(multiset_similarity(Counter(seq[starts[j - 1]:start]), p) for p in patterns) + \
                max(multiset_similarity(Counter(seq[start:end]), p) for p in patterns)
            options.append((is_start[start], round(fit, 3), start))
        if options:
            starts[j] = max(options)[2]


def _settle_first(seq: Sequence[str], is_start: Sequence[bool], anchors: list[int], starts: list[int],
                  patterns: list[Counter[str]]) -> None:
    """A first layer unlike every pattern (a lone dense layer before MoE ones, which no rotation
    of the others fits) starts at the first norm before its anchor, when one exists."""
    end = starts[1] if len(starts) > 1 else len(seq)
    layer = Counter(seq[starts[0]:end])
    if is_start[starts[0]] and max(multiset_similarity(layer, p) for p in patterns) >= SIMILAR:
        return
    first = next((i for i in range(anchors[0] + 1) if is_start[i]), None)
    if first is not None and first < end:
        starts[0] = first


def _edges(seq: Sequence[str], is_start: Sequence[bool], families: set[str], starts: list[int],
           last_length: int, shortest: int) -> tuple[int, int, int, int]:
    """How layers starting at ``starts`` (the last one ``last_length`` long) meet the replay's
    edges, better when larger: the final norm stays after the last layer, the last layer ends
    within the replay, no big piece of a layer is left outside (``_STRAY_SHARE`` of the
    ``shortest`` layer), and the fewest layer kernels (``families``) outside."""
    end = min(len(seq), starts[-1] + last_length)
    left_over = sum(1 for f in seq[:starts[0]] if f in families) + sum(1 for f in seq[end:] if f in families)
    overrun = int(starts[-1] + last_length > len(seq))
    stray = int(left_over >= _STRAY_SHARE * shortest)
    final_norm = int(any(is_start[i] for i in range(end, len(seq))))
    return final_norm, -overrun, -stray, -left_over


def _cut_length(starts: list[int], kinds: list[int], kind: int, default: int) -> int:
    """The usual length (the median) of the layers of ``kind`` between ``starts``, or
    ``default`` when none lies between two starts."""
    got = sorted(starts[j + 1] - starts[j] for j in range(len(starts) - 1) if kinds[j] == kind)
    return got[len(got) // 2] if got else default


def _starts(anchors: list[int], kinds: list[int], rotation: dict[int, int]) -> list[int]:
    """Layer starts: each anchor moved back by its kind's rotation, never before the previous
    layer's start."""
    out: list[int] = []
    for a, kind in zip(anchors, kinds, strict=True):
        start = a - rotation.get(kind, 0)
        out.append(max(start, out[-1] + 1) if out else max(start, 0))
    return out


@dataclass
class Inferred:
    """Layers inferred from repetition.

    ``cuts``: each layer's first index, then the end of the last layer; ``kinds``: a label per
    layer (``A``, ``B``... in order of first appearance); ``similarity``: mean similarity of the
    layers to their patterns; ``halves``: the best cut still cycles through parts of a layer
    (nothing finer than it was consistent); ``merged``: the layers are such cycles of parts
    joined, seen too few times to be cut by their own anchor; ``maybe_pairs``: a finer cut
    cycles through parts that could be layers of their own (alternating kinds), so each layer
    found may be two; ``ambiguous_start``: layers of some kind could start at another norm as
    well (their first block could end the previous layer); ``off_period``: ``(period, cycle)``
    when the kernels repeat every ``period`` kernels but the layers' kinds cycle over ``cycle``
    and the cuts do not repeat with the kernels (``shorter_period``); ``head_outside``: the
    kernels before the first layer end the way the layers do (``head_left_out``).
    """

    cuts: list[int]
    kinds: list[str]
    similarity: float
    halves: bool = False
    merged: bool = False
    maybe_pairs: bool = False
    ambiguous_start: bool = False
    off_period: tuple[int, int] | None = None
    head_outside: bool = False

    def kind_counts(self) -> list[int]:
        """How often each layer's kind occurs, per layer."""
        counts = Counter(self.kinds)
        return [counts[k] for k in self.kinds]


def _cycle_period(kinds: list[int]) -> int | None:
    """The shortest period with which labels cycle through two or more patterns throughout
    (the last label, a guess, excluded)."""
    body = kinds[:-1]
    for period in _PERIODS:
        if len(body) > period and len(set(body[:period])) >= 2 and \
                all(body[i] == body[i - period] for i in range(period, len(body))):
            return period
    return None


def _merged(seq: Sequence[str], cand: _Candidate) -> _Candidate | None:
    """The candidate whose layers are ``cand``'s cycle of parts joined (every period-th anchor),
    when that cycle runs through the whole sequence; the joined layers are seen at least twice."""
    period = _cycle_period(cand.kinds)
    if period is None:
        return None
    best: _Candidate | None = None
    for phase in range(period):
        anchors = cand.anchors[phase::period]
        if len(anchors) < 2:
            continue
        got = _evaluate(seq, anchors)
        if got is not None and not got.halves and (best is None or got.coverage > best.coverage):
            best = got
    return best


def _finer_key(cand: _Candidate) -> tuple[float, int, float]:
    return (round(cand.coverage, 2), len(cand.anchors), round(cand.fit, 3))


#: Kernel families of a layer's mixer: attention (FlashAttention, FMHA, XQA...) and SSM scans.
_MIXER = re.compile(r"fmha|flash|attention|attn|xqa|mmha|selective_scan|ssm_|mamba|chunk_scan|state_passing|"
                    r"delta_rule|gated_delta|recurrent", re.IGNORECASE)


def _one_mixer_each(seq: Sequence[str], cand: _Candidate) -> bool:
    """Whether every part of a cycling cut runs exactly one mixer kernel (attention or scan):
    halves of a layer put the mixer in one part only."""
    period = _cycle_period(cand.kinds)
    if period is None:
        return False
    bounds = list(pairwise(cand.anchors))[:period]
    return len(bounds) == period and all(
        sum(1 for f in seq[a:b] if _MIXER.search(f)) == 1 for a, b in bounds)


def _alternating_layers(seq: Sequence[str], is_start: Sequence[bool], cand: _Candidate) -> bool:
    """Whether the parts a cut cycles through could be whole layers of alternating kinds rather
    than parts of one layer. Layers of alternating kinds (dense and MoE, with and without RoPE) each
    hold two norms at least (input and post-attention) and each run their mixer once: a kernel
    family that occurs once in every part, away from the norms. The attention and MLP halves of
    a layer fail one or the other (one norm each, or sandwich norms with nothing but the norm and
    its residual add in common). Single-block layers (Mamba, MLP and attention blocks of their
    own, as in NemotronH) fail too: repetition cannot tell them from halves. Kernel names alone
    do not say which kernel is the mixer, so a part passing this test is a possibility only."""
    period = _cycle_period(cand.kinds)
    if period is None:
        return False
    bounds = list(pairwise(cand.anchors))[:period]
    if len(bounds) < period:
        return False
    common: set[str] | None = None
    for a, b in bounds:
        starts = [i for i in range(a, b) if is_start[i]]
        if len(starts) < 2:
            return False
        near = {j for i in starts for j in (i - 1, i, i + 1)}
        counts = Counter(seq[a:b])
        once = {f for i, f in enumerate(seq[a:b], start=a) if counts[f] == 1 and i not in near}
        common = once if common is None else common & once
    return bool(common)


#: Kernels before the first layer that make a layer of their own: from a norm on, at least this
#: share of the first layer's length.
_LEAD_SHARE = 0.5


def _first_block(seq: Sequence[str], is_start: Sequence[bool], a: int, b: int) -> list[str]:
    """``seq[a:b]`` up to its second norm: a layer's input norm and mixer (attention)."""
    second = next((i for i in range(a + 1, b) if is_start[i]), b)
    return list(seq[a:second])


def _leading_layer(seq: Sequence[str], is_start: Sequence[bool], cuts: list[int]) -> int | None:
    """Where a layer the anchors missed starts before the first layer: the earliest norm before
    it from which the kernels up to the first layer open with the first layer's own first block
    (a dense layer runs a MoE layer's attention, then a smaller MLP) and are not too few for a
    layer; None when there is none. Model-level work before the layers (embedding, RoPE
    tables, masks) opens with no norm, or with another block."""
    if len(cuts) < 2:
        return None
    first = _first_block(seq, is_start, cuts[0], cuts[1])
    for s in range(cuts[0]):
        if not is_start[s]:
            continue
        if cuts[0] - s < _LEAD_SHARE * (cuts[1] - cuts[0]):
            return None
        if sequence_similarity(_first_block(seq, is_start, s, cuts[0]), first) >= ALTERNATING_SIMILARITY:
            return s
    return None


#: A last layer shorter than this share of its pattern was cut short by the end of the replay.
_COMPLETE_SHARE = 0.75


def _truncated_last(cuts: list[int], kinds: list[int], cand: _Candidate) -> bool:
    length = sum(cand.patterns[kinds[-1]].values())
    return cuts[-1] - cuts[-2] < _COMPLETE_SHARE * length


def _truncated_first(cuts: list[int], kinds: list[int], cand: _Candidate) -> bool:
    """The first layer was pushed against the start of the replay (its start clamped to the first
    kernel) and is too short for its kind: its anchor is a prologue kernel (an index or copy
    kernel of the embedding or mask code that also runs once per layer), not a layer's."""
    length = sum(cand.patterns[kinds[0]].values())
    return cuts[0] == 0 and cuts[1] - cuts[0] < _COMPLETE_SHARE * length


#: Layer kinds repeat with a period when at least this share of layers match the layer a period on.
_KIND_PERIOD_SHARE = 0.9
#: A shorter period explains the sequence as well when its kernels match within this share.
_SAME_MATCH = 0.02


def _kind_period(kinds: Sequence[int]) -> int:
    """The shortest period (in layers) with which the layer kinds repeat, the edge layers left
    out: 1 for one kind, or for kinds in blocks (dense, then MoE); 2 for alternating kinds."""
    body = kinds[1:-1]
    for p in range(1, len(body) // 2 + 1):
        pairs = len(body) - p
        if sum(1 for i in range(pairs) if body[i] == body[i + p]) >= _KIND_PERIOD_SHARE * pairs:
            return p
    return len(body)


def _match_share(seq: Sequence[str], lo: int, hi: int, shift: int) -> float:
    """Share of the kernels of ``seq[lo:hi - shift]`` equal to the kernel ``shift`` places on."""
    n = hi - shift - lo
    if n <= 0:
        return 0.0
    return sum(1 for i in range(lo, hi - shift) if seq[i] == seq[i + shift]) / n


def shorter_period(seq: Sequence[str], cuts: Sequence[int], kinds: Sequence[int]) -> tuple[int, int] | None:
    """``(period, cycle)`` in kernels when the layers' kernels repeat with a period that is a
    whole fraction of the cut's cycle (the kernels of one cycle of layer kinds) and the cut does
    not repeat with it; None otherwise.

    A replay repeats with the model's own cycle of layers (one layer; sliding and full attention;
    two recurrent layers and an attention one). A cut whose kinds cycle over twice that has
    found layers that do not recur where the kernels do: pieces of layers joined in one place
    and split in another, which repetition cannot support."""
    n = len(cuts) - 1
    p = _kind_period(kinds)
    if n < 2 * p + 1:
        return None
    spans = sorted(cuts[j + p] - cuts[j] for j in range(n - p + 1))
    cycle = spans[len(spans) // 2]
    lo, hi = cuts[0], cuts[-1]
    own = _match_share(seq, lo, hi, cycle)
    inner = set(cuts[1:-1])
    for m in (2, 3, 4):
        period = cycle // m
        if period * m != cycle or hi - lo < 2 * period:
            continue
        if _match_share(seq, lo, hi, period) < own - _SAME_MATCH:
            continue
        # A cut that repeats with the shorter period as well (its kinds mislabelled) is fine.
        moved = [c for c in cuts[1:-1] if c + period < hi]
        if any(not any(c + period + d in inner for d in (-1, 0, 1)) for c in moved):
            return period, cycle
    return None


def head_left_out(
    seq: Sequence[str], is_start: Sequence[bool], cuts: Sequence[int], kinds: Sequence[int]
) -> bool:
    """Whether the kernels just before the first layer repeat the last block (its last norm to
    its end) of the inner layers of some kind, in order: those layers end with the next
    layer's first kernels (its input norm and more), and the first layer's were left before it.
    The work before the first layer (embedding, masks, RoPE tables) does not end the way a
    layer does."""
    n = len(cuts) - 1
    for kind in sorted(set(kinds)):
        js = [j for j in range(1, n - 1) if kinds[j] == kind]
        if not js:
            continue
        j = js[len(js) // 2]
        last = next((i for i in range(cuts[j + 1] - 1, cuts[j], -1) if is_start[i]), None)
        if last is None:
            continue
        tail = list(seq[last:cuts[j + 1]])
        lo = cuts[0] - len(tail)
        if len(tail) >= _MIN_LAYER_KERNELS and lo >= 0 and \
                sequence_similarity(list(seq[lo:cuts[0]]), tail) >= ALTERNATING_SIMILARITY:
            return True
    return False


def infer_layers(seq: Sequence[str], is_start: Sequence[bool]) -> Inferred | None:
    """Layers of a family sequence from repetition; None when nothing repeats."""
    positions: dict[str, list[int]] = {}
    for i, fam in enumerate(seq):
        positions.setdefault(fam, []).append(i)
    best: _Candidate | None = None
    mixed: _Candidate | None = None
    cycling: _Candidate | None = None
    seen: set[tuple[int, ...]] = set()
    for fam in sorted(positions):
        pos = positions[fam]
        if len(pos) < 2:
            continue
        for anchors in _candidate_anchor_sets(pos):
            key = tuple(anchors)
            if key in seen:
                continue
            seen.add(key)
            cand = _evaluate(seq, anchors)
            if cand is None or cand.coverage < MIN_COVERAGE:
                continue
            if best is None or cand.key() > best.key():
                best = cand
            if cand.halves and (mixed is None or _finer_key(cand) > _finer_key(mixed)) and \
                    _one_mixer_each(seq, cand):
                mixed = cand
            elif cand.halves and (cycling is None or _finer_key(cand) > _finer_key(cycling)) and \
                    _alternating_layers(seq, is_start, cand):
                cycling = cand
    if best is None:
        return None
    maybe_pairs = False
    if mixed is not None and len(mixed.anchors) > len(best.anchors):
        # Every part of the finer cut runs one attention (or SSM) kernel: they are layers of
        # alternating kinds (dense and MoE, sliding and global attention), not halves.
        best = mixed
        best.halves = False
    elif cycling is not None and len(cycling.anchors) > len(best.anchors):
        # The parts could each be a layer: repetition cannot tell one layer from two.
        maybe_pairs = True
    merged = False
    if best.halves:
        joined = _merged(seq, best)
        if joined is not None and joined.coverage >= MIN_COVERAGE:
            best, merged = joined, True
    cuts, kinds, score = _rotate(seq, is_start, best)
    while len(best.anchors) > 2 and _truncated_last(cuts, kinds, best):
        # The last anchor sits in the epilogue (the final norm looks like a layer's first
        # kernels): too few kernels follow it for a layer of its kind, so it opens none.
        shorter = _evaluate(seq, best.anchors[:-1])
        if shorter is None:
            break
        best = shorter
        cuts, kinds, score = _rotate(seq, is_start, best)
    while len(best.anchors) > 2 and _truncated_first(cuts, kinds, best):
        later = _evaluate(seq, best.anchors[1:])
        if later is None:
            break
        best = later
        cuts, kinds, score = _rotate(seq, is_start, best)
    lead = _leading_layer(seq, is_start, cuts)
    if lead is not None:
        # A first layer of a kind of its own (a lone dense layer before MoE ones) holds no
        # anchor: found before the first layer, it becomes layer 0.
        first = Counter(seq[lead:cuts[0]])
        like = max(range(len(best.patterns)), key=lambda i: multiset_similarity(first, best.patterns[i]))
        kind = like if multiset_similarity(first, best.patterns[like]) >= SIMILAR else len(best.patterns)
        cuts = [lead] + cuts
        kinds = [kind] + kinds
    order = list(dict.fromkeys(kinds))  # letters in order of first appearance
    names = [chr(ord("A") + order.index(k)) for k in kinds]
    return Inferred(cuts, names, score, halves=best.halves, merged=merged, maybe_pairs=maybe_pairs,
                    ambiguous_start=best.ambiguous, off_period=shorter_period(seq, cuts, kinds),
                    head_outside=head_left_out(seq, is_start, cuts, kinds))
