"""Split one replay or forward pass into decoder layers, without model-specific kernel names.

The busiest stream ("main") carries every layer's skeleton, so its kernel family sequence
repeats once per layer; ``periodicity`` finds that period and where layers start. With the
graph's layer kinds, the cut must hold exactly that many layers, agree with the kinds, and be
explained about evenly by the graph's layers; models whose layers barely repeat (hybrid
SSM/attention stacks) are instead placed by aligning the main stream to all graph layers at
once. Without graph information the layer count is inferred from the repetition.

Kernels on other streams (and copies) are assigned by time: layer j owns [start of its first
main-stream kernel, start of layer j+1's). An aux stream whose work spans a boundary (layer N's
shared experts, then layer N+1's KV branch) is thus split at the boundary, kernel by kernel.
"""
from __future__ import annotations

import bisect
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Sequence

from tb_ad_layer.errors import InputError
from tb_ad_layer.trace.kernel import KIND_KERNEL, Kernel
from tb_ad_layer.trace.periodicity import (EVEN_FIT, LayerFit, acceptable, best_offset, fit_cuts, fits_evenly,
                                           infer_cut, layer_bounds)

_MAX_CANDIDATES = 8
_MIN_ALIGNED = 0.5
_NORMISH = re.compile(r"norm|rms", re.IGNORECASE)

#: ``aligner(main_kernels)``: graph layer position of each main-stream kernel (None: no node).
Aligner = Callable[[Sequence[Kernel]], list[int | None]]


@dataclass
class Segmentation:
    """Per-layer kernels of one replay/pass.

    ``layers[j]`` are the kernels of the j-th layer in trace order (sorted by start), ``kinds[j]``
    its kind (given, or an inferred pattern label), ``outside`` the kernels before the first or
    after the last layer. ``anchor`` is the family that marked the layers (None when the layers
    were placed by graph alignment), ``offset`` the number of main-stream kernels of a layer
    before its anchor, ``consistency`` the mean similarity (0..1) of each layer's main-stream
    family sequence to its kind's consensus (for an alignment: the share of aligned kernels).
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


def _assign(kernels: list[Kernel], main_ks: list[Kernel], starts: list[int], end_last: int,
            seg: Segmentation) -> None:
    """Fill ``seg.layers``/``seg.outside``: main-stream kernels by index (layer j holds main-stream
    indices ``starts[j]`` up to the next start, the last one up to ``end_last``), the rest by time."""
    n = len(starts)
    bounds = starts + [end_last]
    boundary_ns = [main_ks[b].start_ns for b in starts]
    end_ns = max(k.end_ns for k in main_ks[starts[-1]:end_last]) if end_last > starts[-1] else boundary_ns[-1]
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


def _verifiable(kinds: Sequence[str]) -> bool:
    """Repetition can vouch for a cut only when most layers share their kind with another layer."""
    counts = Counter(kinds)
    return sum(c for c in counts.values() if c >= 2) * 2 >= len(kinds)


def _from_alignment(labels: Sequence[int | None], n_layers: int) -> tuple[list[int], int] | None:
    """Layer starts and end from per-main-kernel layer labels of a graph alignment.

    Unlabelled kernels between two layers go with the earlier one; before the first or after the
    last labelled kernel they are prologue/epilogue. None when a layer got no kernel.
    """
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for i, lab in enumerate(labels):
        if lab is not None:
            first.setdefault(lab, i)
            last[lab] = i
    if len(first) != n_layers:
        return None
    starts = [first[j] for j in range(n_layers)]
    if starts != sorted(starts):
        return None
    return starts, last[n_layers - 1] + 1


def _alignment_credible(labels: Sequence[int | None], starts: list[int], end_last: int, total: int) -> bool:
    """An alignment places the graph's layers when most kernels align, every layer is about as
    densely explained as the best one (a graph layer stretched over several trace layers is not),
    and what no layer took is shorter than a layer."""
    bounds = starts + [end_last]
    lengths = [b - a for a, b in zip(bounds, bounds[1:])]
    density = [sum(1 for x in labels[a:b] if x is not None) / max(1, b - a) for a, b in zip(bounds, bounds[1:])]
    aligned = sum(1 for x in labels if x is not None)
    return (aligned >= _MIN_ALIGNED * len(labels) and min(density) >= EVEN_FIT * max(density)
            and starts[0] + total - end_last < max(lengths))


def _mismatch(seq: list[str], layer_kinds: Sequence[str]) -> InputError:
    found = infer_cut(seq)
    kinds = ", ".join(f"{c} {k}" for k, c in Counter(layer_kinds).items())
    if found is not None and len(found.anchors) == len(layer_kinds):
        what = (f"the trace's {len(found.anchors)} repeating layers do not run the kernels the graph's "
                f"layers ({kinds}) launch")
    else:
        shown = f"{len(found.anchors)} repeating layers" if found else "no repeating per-layer kernel pattern"
        what = f"the trace shows {shown} but the graph has {len(layer_kinds)} layers ({kinds})"
    return InputError(f"{what}; check that trace and dump come from the same model and rank", field="layers")


def segment_layers(kernels: Sequence[Kernel], layer_kinds: Sequence[str] | None = None, *,
                   is_layer_start: Callable[[Kernel], bool] | None = None,
                   layer_fit: LayerFit | None = None, aligner: Aligner | None = None) -> Segmentation:
    """Split ``kernels`` (one replay or pass) into layers.

    ``layer_kinds`` lists the graph's layers in order by kind (``["dense", "dense", "moe", ...]``);
    None infers the count from the trace. ``is_layer_start`` flags kernels that can open a layer
    (e.g. the first node's kernel family; default: norm kernels), used to break ties of the rotation;
    ``layer_fit(j, kernels)`` scores a rotation by how many main-stream kernels the graph's j-th
    layer can launch. ``aligner(main_kernels)`` labels main-stream kernels with graph layer
    positions by aligning them to every layer's nodes at once: the fallback for models whose
    layers barely repeat (hybrid SSM/attention stacks), when repetition cannot place the cut.

    Raises ``InputError`` stating both numbers when the trace cannot hold the graph's layers.
    """
    ks = sorted(kernels, key=lambda k: (k.start_ns, k.stream_key, k.index))
    seg = Segmentation(main_stream=main_stream_of(ks), inferred=layer_kinds is None)
    main_ks = [k for k in ks if k.stream_key == seg.main_stream and k.kind == KIND_KERNEL]
    seq = [k.short for k in main_ks]
    if layer_kinds is not None and len(layer_kinds) == 0 or not main_ks:
        seg.outside = ks
        if layer_kinds:
            raise _mismatch(seq, layer_kinds)
        return seg
    if layer_kinds is not None and len(layer_kinds) == 1:
        seg.layers, seg.kinds, seg.consistency = [ks], list(layer_kinds), 1.0
        seg.boundaries_ns = [ks[0].start_ns, max(k.end_ns for k in ks)]
        return seg
    # Layers open with a norm in nearly every decoder; this breaks ties where the final norm of the
    # epilogue looks like a layer's head.
    start_test = is_layer_start or (lambda k: _NORMISH.search(k.short) is not None)
    flags = [start_test(k) for k in main_ks]
    if layer_kinds is None:
        cut = infer_cut(seq)
        if cut is None:
            seg.outside = ks
            return seg
        seg.offset, seg.consistency = best_offset(seq, cut, flags, main_ks, None)
        seg.anchor, seg.kinds = cut.family, list(cut.kinds)
        _assign(ks, main_ks, *layer_bounds(seq, cut, seg.offset), seg)
        return seg
    kinds = list(layer_kinds)
    if _verifiable(kinds):
        for cut in fit_cuts(seq, kinds)[:_MAX_CANDIDATES]:
            offset, score = best_offset(seq, cut, flags, main_ks, layer_fit)
            if not acceptable(seq, cut, offset) or not fits_evenly(seq, cut, offset, main_ks, layer_fit):
                continue
            seg.offset, seg.consistency, seg.anchor, seg.kinds = offset, score, cut.family, kinds
            _assign(ks, main_ks, *layer_bounds(seq, cut, offset), seg)
            return seg
    if aligner is not None:
        labels = aligner(main_ks)
        placed = _from_alignment(labels, len(kinds))
        if placed is not None and _alignment_credible(labels, *placed, len(seq)):
            starts, end_last = placed
            seg.kinds, seg.anchor = kinds, None
            seg.consistency = sum(1 for x in labels[starts[0]:end_last] if x is not None) / max(1, end_last - starts[0])
            _assign(ks, main_ks, starts, end_last, seg)
            return seg
    raise _mismatch(seq, kinds)
