"""Split one replay or pass into decoder layers, across all its streams.

Kernels are taken in replay order (start time, then graph node id) over every stream at once: a
stream may carry one layer, one layer's tail and the next one's head, or the whole model, as the
driver chose, so no stream is assumed to carry every layer. Because each layer's input norm
waits for the previous layer's output, layer boundaries are cuts of that order.

The cuts come, in order of authority, from:

1. the trace's own layer ranges (``annotations``: capture-time NVTX, module annotations, NVTX
   ranges per layer);
2. the graph (``ModelNodes``: layers in order with their nodes, and the nodes outside them):
   the whole replay is aligned to the kernel-map slots of every node in graph order
   (``align``); layer ``j`` starts at the first kernel aligned to one of its nodes, so a layer
   begins with its own input norm, and layers of alternating kinds are placed one by one;
3. without either, repetition (``periodicity``): the per-layer kernel pattern, rotated so that
   layers start at a norm, with a stated confidence.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from tb_ad_layer.errors import InputError
from tb_ad_layer.trace.align import LATE, lcs_pairs
from tb_ad_layer.trace.annotations import AnnotatedLayers
from tb_ad_layer.trace.graph_nodes import KernelMatcher, MappableNode, ModelNodes, SlotTable
from tb_ad_layer.trace.kernel import KIND_KERNEL, Kernel
from tb_ad_layer.trace.periodicity import infer_layers, sequence_similarity

GRAPH_ALIGNMENT = "graph-alignment"
REPETITION = "repetition"
#: An alignment places the graph's layers when it explains this share of the span's kernels...
_MIN_ALIGNED = 0.5
#: ...and every layer is explained at least this share as densely as the best one.
_EVEN_DENSITY = 0.75
#: Kernels that open a layer: norms, all-reduces fused with the residual add and the next norm,
#: and AutoDeploy's hash-named MLIR fusions (``fused_kernel_<hash>``), which fuse the residual
#: add with the next RMSNorm (input_layernorm, post_attention_layernorm).
_NORMISH = re.compile(r"norm|rms|allreduce_fusion|ar_fusion|fused_kernel_[0-9a-f]{8}", re.IGNORECASE)


@dataclass
class Segmentation:
    """Per-layer kernels of one replay/pass.

    ``layers[j]`` holds the kernels of the j-th layer in replay order, ``kinds[j]`` its kind (the
    graph's, an annotation class, or an inferred pattern label), ``before``/``after`` the kernels
    outside every layer. ``method`` says where the cuts came from (``capture-nvtx``,
    ``module-annotations``, ``nvtx-ranges``, ``graph-alignment``, ``repetition``);
    ``confidence`` (0..1) how well the cuts are supported, ``detail`` says so in words.
    """

    layers: list[list[Kernel]] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    before: list[Kernel] = field(default_factory=list)
    after: list[Kernel] = field(default_factory=list)
    method: str = ""
    confidence: float = 0.0
    detail: str = ""
    inferred: bool = False
    boundaries_ns: list[int] = field(default_factory=list)

    @property
    def outside(self) -> list[Kernel]:
        """Kernels before the first and after the last layer."""
        return self.before + self.after


def replay_order(kernels: Sequence[Kernel]) -> list[Kernel]:
    """Kernels sorted by start time, then graph node id, then reader order."""
    return sorted(
        kernels,
        key=lambda k: (k.start_ns, k.graph_node_id if k.graph_node_id is not None else 1 << 62, k.index),
    )


def _from_cuts(ks: list[Kernel], cuts: list[int], seg: Segmentation) -> Segmentation:
    """Fill ``seg`` from cut positions: layer j is ``ks[cuts[j]:cuts[j + 1]]``."""
    n = len(cuts) - 1
    seg.before = ks[:cuts[0]]
    seg.layers = [ks[cuts[j]:cuts[j + 1]] for j in range(n)]
    seg.after = ks[cuts[-1]:]
    seg.boundaries_ns = [layer[0].start_ns for layer in seg.layers if layer]
    if seg.layers and seg.layers[-1]:
        seg.boundaries_ns.append(max(k.end_ns for k in seg.layers[-1]))
    return seg


def segment_by_labels(kernels: Sequence[Kernel], found: AnnotatedLayers) -> Segmentation:
    """Layers from annotation labels: a kernel goes to the layer whose range holds its CPU point;
    kernels without a label go with their neighbours on the same stream when both sides agree,
    else outside."""
    order = replay_order(kernels)
    position = {id(k): i for i, k in enumerate(kernels)}
    labels = [found.labels[position[id(k)]] for k in order]
    seg = Segmentation(kinds=list(found.kinds), method=found.source, confidence=1.0)
    per_stream: dict[str, list[int]] = {}
    for i, k in enumerate(order):
        per_stream.setdefault(k.stream_key, []).append(i)
    filled = list(labels)
    for idxs in per_stream.values():
        for pos, i in enumerate(idxs):
            if labels[i] is not None:
                continue
            prev = next((labels[j] for j in reversed(idxs[:pos]) if labels[j] is not None), None)
            nxt = next((labels[j] for j in idxs[pos + 1:] if labels[j] is not None), None)
            if prev is not None and prev == nxt:
                filled[i] = prev
    seg.layers = [[] for _ in found.kinds]
    first_layer = min((i for i, lab in enumerate(filled) if lab is not None), default=len(order))
    for i, (k, lab) in enumerate(zip(order, filled, strict=True)):
        if lab is not None:
            seg.layers[lab].append(k)
        elif i < first_layer:
            seg.before.append(k)
        else:
            seg.after.append(k)
    labelled = sum(1 for lab in labels if lab is not None)
    seg.detail = (f"{len(found.kinds)} layer ranges ({found.source}) hold {labelled:,} of {len(order):,} "
                  f"activities")
    seg.boundaries_ns = [min(k.start_ns for k in layer) for layer in seg.layers if layer]
    return seg


def segment_by_graph(kernels: Sequence[Kernel], expected: ModelNodes, matcher: KernelMatcher) -> Segmentation:
    """Cut the replay where the graph's layers start, by aligning it to every node's kernel slots.

    Raises ``InputError`` when the alignment cannot place the graph's layers (another model,
    stage or rank), stating what the trace shows.
    """
    ks = replay_order(kernels)
    n_layers = len(expected.layers)
    kinds = expected.kinds
    # Regions in graph order: before, layer 0, the outside nodes amid layer 0, layer 1, ..., after.
    # ``layer_of_region`` is the layer index of a layer region, -1 for the others.
    regions: list[Sequence[MappableNode]] = [expected.before]
    layer_of_region = [-1]
    for j, layer in enumerate(expected.layers):
        regions += [layer.nodes, expected.between.get(j, ())]
        layer_of_region += [j, -1]
    regions.append(expected.after)
    layer_of_region.append(-1)
    after_region = len(regions) - 1
    table = SlotTable(regions, matcher)
    seg = Segmentation(kinds=list(kinds), method=GRAPH_ALIGNMENT)
    if n_layers == 0:
        seg.after = ks
        return seg
    masks = [table.mask(k) if k.kind == KIND_KERNEL else 0 for k in ks]
    pairs = lcs_pairs(masks, len(table), LATE)
    region_of = [-1] * len(ks)
    for i, j in pairs:
        region_of[i] = table.region[j]
    layer_of = [layer_of_region[r] if r >= 0 else -1 for r in region_of]
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for i, j in enumerate(layer_of):
        if j >= 0:
            first.setdefault(j, i)
            last[j] = i
    missing = [j for j in range(n_layers) if j not in first]
    if missing:
        raise _mismatch(ks, kinds, f"no kernel of the trace matches layer {missing[0]}'s ops")
    cuts = [first[j] for j in range(n_layers)]
    aux_slots = table.aux_candidate_mask()
    if aux_slots:
        # Shared experts and MLA's KV path may run on an aux stream, beside the main chain and
        # out of its order: their slots left empty at a layer's end would take the next layer's
        # head (a GEMM, when the layer before ends with a fused residual add and norm). A layer
        # starts no later than the main chain alone says.
        main_first: dict[int, int] = {}
        for i, j in lcs_pairs([m & ~aux_slots for m in masks], len(table), LATE):
            index = layer_of_region[table.region[j]]
            if index >= 0:
                main_first.setdefault(index, i)
        if len(main_first) == n_layers:
            cuts = [min(cuts[j], main_first[j]) for j in range(n_layers)]
    for j in range(1, n_layers):
        cuts[j] = max(cuts[j], cuts[j - 1])
    end = next((i for i, r in enumerate(region_of) if r == after_region), None)
    if end is None or end < last[n_layers - 1]:
        end = last[n_layers - 1] + 1
    cuts.append(end)
    _trim_edges(cuts, kinds, bool(expected.before), bool(expected.after))
    _from_cuts(ks, cuts, seg)
    # Kernels of the outside nodes amid a layer count as explained, not as the layer's.
    counted = [sum(1 for i in range(cuts[j], cuts[j + 1]) if ks[i].kind == KIND_KERNEL
                   and not (region_of[i] >= 0 and layer_of[i] < 0)) for j in range(n_layers)]
    aligned = [sum(1 for i in range(cuts[j], cuts[j + 1]) if layer_of[i] == j) for j in range(n_layers)]
    density = [a / c if c else 0.0 for a, c in zip(aligned, counted, strict=True)]
    total = sum(counted)
    share = sum(aligned) / total if total else 0.0
    # How sure: of the kernels the alignment placed in a layer, the share the cuts keep there.
    placed = [(i, j) for i, j in enumerate(layer_of) if j >= 0]
    kept = sum(1 for i, j in placed if cuts[j] <= i < cuts[j + 1])
    seg.confidence = round(kept / len(placed), 4) if placed else 0.0
    seg.detail = (f"{sum(aligned):,} of {total:,} layer kernels aligned to the graph's {n_layers} layers "
                  f"(least dense layer {min(density):.0%})")
    if share < _MIN_ALIGNED or min(density) < _EVEN_DENSITY * max(density):
        raise _mismatch(ks, kinds, f"only {share:.0%} of the trace's kernels line up with the graph's layers")
    # Kernels outside the layers that no outside node took but the layers' ops launch: a layer's
    # worth of them is a layer the graph does not have.
    layer_slots = 0
    for r, j in enumerate(layer_of_region):
        if j >= 0:
            layer_slots |= table.region_mask(r)
    outside = [i for i in list(range(cuts[0])) + list(range(cuts[-1], len(ks)))
               if ks[i].kind == KIND_KERNEL and region_of[i] < 0 and masks[i] & layer_slots]
    if len(outside) >= 0.5 * min(counted):
        raise _mismatch(
            ks, kinds, f"{len(outside)} kernels of the layers' kinds run outside the graph's layers"
        )
    return seg


def _trim_edges(cuts: list[int], kinds: Sequence[str], have_before: bool, have_after: bool) -> None:
    """Without the graph's nodes before the first or after the last layer, nothing bounds the
    edge layers: the embedding or the final norm and lm head can fill spare slots of layer 0 or of
    the last layer. A layer of a kind that occurs elsewhere runs as many activities as its peers,
    so an edge layer longer than all of them is cut back to their median length."""
    n = len(kinds)
    lengths = [cuts[j + 1] - cuts[j] for j in range(n)]
    for edge, bounded in ((n - 1, have_after), (0, have_before)):
        peers = sorted(lengths[j] for j in range(1, n - 1) if kinds[j] == kinds[edge])
        if bounded or not peers or lengths[edge] <= peers[-1]:
            continue
        median = peers[len(peers) // 2]
        if edge == n - 1:
            cuts[n] = cuts[n - 1] + median
        else:
            cuts[0] = cuts[1] - median


def _kinds_text(kinds: Sequence[str]) -> str:
    counts = Counter(kinds)
    return ", ".join(f"{n} {k}" for k, n in counts.items())


def _mismatch(ks: list[Kernel], kinds: Sequence[str], why: str) -> InputError:
    found = segment_by_repetition(ks)
    shown = (f"the trace shows {len(found.layers)} repeating layers" if found is not None
             else "the trace shows no repeating per-layer kernel pattern")
    return InputError(
        f"{shown} but the graph has {len(kinds)} layers ({_kinds_text(kinds)}): {why}; check that "
        f"trace and dump come from the same model and rank",
        field="layers",
    )


#: Confidence left to a cut whose layers may each be two layers of alternating kinds...
_MAYBE_PAIRS = 0.7
#: ...and to one whose layers could as well start at another norm.
_AMBIGUOUS_START = 0.8
#: ...and to one whose layers do not recur with the kernels (pieces of layers joined), or end
#: the way the kernels before the first layer do (each holds the next one's head).
_OFF_PERIOD = 0.5


def _support(counts: Sequence[int]) -> float:
    """How much repetition backs a cut: a layer whose kind occurs ``m`` times is a repeating
    unit with weight ``1 - 2**-m`` (one sighting 0.5, two 0.75, five 0.97), averaged over
    the layers. Two or three layers of a kind can be halves or pairs of real layers as well."""
    return sum(1.0 - 0.5 ** m for m in counts) / len(counts) if counts else 0.0


def _stream_major(layer: Sequence[Kernel]) -> list[str]:
    """A layer's kernel families stream by stream (streams in the order they start, each in
    time order): streams running beside each other interleave differently from one layer to
    the next, while each stream keeps its own order."""
    by_stream: dict[str, list[str]] = {}
    for k in layer:
        if k.kind == KIND_KERNEL:
            by_stream.setdefault(k.stream_key, []).append(k.short)
    return [fam for fams in by_stream.values() for fam in fams]


def _order_similarity(layers: Sequence[Sequence[str]], kinds: Sequence[str]) -> float:
    """Mean similarity, kernel order included (``sequence_similarity``), of each layer to the
    middle layer of its kind. Layers of one kind run their kernels in one order (streams running
    beside each other swap a few); two pieces of different layers cut as one layer (an attention
    block with the next layer's Mamba mixer) hold the right kernels in the wrong order."""
    by_kind: dict[str, list[int]] = {}
    for j, kind in enumerate(kinds):
        by_kind.setdefault(kind, []).append(j)
    total = 0.0
    for js in by_kind.values():
        middle = layers[js[len(js) // 2]]
        total += sum(sequence_similarity(layers[j], middle) for j in js)
    return total / len(layers) if layers else 0.0


def segment_by_repetition(kernels: Sequence[Kernel]) -> Segmentation | None:
    """Layers from the repeating kernel pattern alone, or None when nothing repeats.

    ``confidence`` multiplies what backs the cut: the layers' similarity to their patterns, how
    often each pattern repeats (``_support``), the share of layers that open with a norm, the
    share of streams that lie within one layer (per-layer stream sets), and halves: a cut
    that still cycles through parts of a layer (no finer consistent cut) is worth half, one
    whose layers may each be two layers of alternating kinds 0.7, one whose layers could as
    well start at another norm 0.8, one whose layers do not recur with the kernels (the kernels
    repeat with a whole fraction of the layers' cycle) or end the way the kernels before the
    first layer do 0.5.
    """
    ks = replay_order(kernels)
    main = [k for k in ks if k.kind == KIND_KERNEL]
    if len(main) < 6:
        return None
    starts = norm_starts([k.short for k in main])
    found = infer_layers([k.short for k in main], starts)
    if found is None:
        return None
    cuts_main = found.cuts
    position = {id(k): i for i, k in enumerate(ks)}
    cuts = [position[id(main[c])] if c < len(main) else len(ks) for c in cuts_main[:-1]]
    end_main = cuts_main[-1]
    cuts.append(position[id(main[end_main])] if end_main < len(main) else len(ks))
    seg = Segmentation(kinds=found.kinds, method=REPETITION, inferred=True)
    _from_cuts(ks, cuts, seg)
    agree = _stream_agreement(seg)
    # Where no layer opens with a norm kernel (eager norms run as pow/mean/rsqrt), repetition
    # alone leaves the exact start of a layer open by a kernel or two.
    normed = sum(1 for c in cuts_main[:-1] if c < len(main) and starts[c]) / (len(cuts_main) - 1)
    support = _support(found.kind_counts())
    ordered = _order_similarity([_stream_major(layer) for layer in seg.layers], found.kinds)
    similarity = min(found.similarity, ordered)
    confidence = similarity * support * (agree if agree is not None else 1.0) * (0.6 + 0.4 * normed)
    if found.halves:
        confidence *= 0.5
    elif found.maybe_pairs:
        confidence *= _MAYBE_PAIRS
    if found.ambiguous_start:
        confidence *= _AMBIGUOUS_START
    if found.off_period is not None or found.head_outside:
        confidence *= _OFF_PERIOD
    seg.confidence = round(confidence, 4)
    patterns = len(set(found.kinds))
    least = min(found.kind_counts())
    seg.detail = (
        f"{len(seg.layers)} layers from the repeating kernel pattern ({patterns} layer "
        f"pattern{'s' if patterns > 1 else ''}, the rarest seen {least} time{'s' if least > 1 else ''}, "
        f"mean similarity {similarity:.0%}, {normed:.0%} of layers open with a norm kernel)"
    )
    if agree is not None:
        seg.detail += f"; {agree:.0%} of the streams lie within one layer or one layer boundary"
    if found.halves:
        seg.detail += "; the layers cycle through patterns that look like parts of one layer"
    elif found.merged:
        seg.detail += "; each layer joins a cycle of patterns that look like its parts"
    elif found.maybe_pairs:
        seg.detail += ("; each layer may also be two layers of alternating kinds (a finer cut cycles through "
                       "parts that each hold two norms and a kernel of their own)")
    if found.ambiguous_start:
        seg.detail += (
            "; some layers could as well start at another norm (their first block ending the layer before)"
        )
    if found.off_period is not None:
        period, cycle = found.off_period
        seg.detail += (f"; the kernels repeat every {period} kernels but the layers found repeat every "
                       f"{cycle}: they join pieces of layers that repetition does not support")
    if found.head_outside:
        seg.detail += ("; the kernels before the first layer end the way the layers do: each layer may end "
                       "with the next one's first kernels")
    return seg


_POW = re.compile(r"pow", re.IGNORECASE)
_MEAN = re.compile(r"mean|reduce", re.IGNORECASE)
_COPY = re.compile(r"copy|to_copy|convert", re.IGNORECASE)


def norm_starts(families: Sequence[str]) -> list[bool]:
    """Per kernel, whether it can open a layer's input norm: a norm kernel, or the first kernel of
    a norm computed op by op (``x.pow(2).mean(...)``: the pow, or the cast just before it)."""
    out = [_NORMISH.search(f) is not None for f in families]
    for i in range(len(families) - 1):
        if _POW.search(families[i]) and _MEAN.search(families[i + 1]):
            j = i - 1 if i > 0 and _COPY.search(families[i - 1]) else i
            out[j] = True
    return out


def _stream_agreement(seg: Segmentation) -> float | None:
    """Share of streams whose kernels lie within one layer or two adjacent ones, when the replay
    spreads over many streams (per-layer stream sets); None for one or two streams."""
    layers_of: dict[str, set[int]] = {}
    for j, layer in enumerate(seg.layers):
        for k in layer:
            layers_of.setdefault(k.stream_key, set()).add(j)
    if len(layers_of) < 4:
        return None
    ok = sum(1 for js in layers_of.values() if max(js) - min(js) <= 1)
    return ok / len(layers_of)


def segment_layers(kernels: Sequence[Kernel], expected: ModelNodes | None = None,
                   matcher: KernelMatcher | None = None, annotated: AnnotatedLayers | None = None,
                   warnings: list[str] | None = None) -> Segmentation:
    """Split ``kernels`` (one replay or pass) into layers; see the module docstring for the order
    of authority. With ``expected``, annotations are used only when they hold as many layers as
    the graph. Raises ``InputError`` when the graph's layers cannot be placed. Without
    ``expected`` or annotations and without any repetition, returns a Segmentation with no
    layers."""
    if annotated is not None and (expected is None or annotated.count == len(expected.layers)):
        seg = segment_by_labels(kernels, annotated)
        if expected is not None:
            seg.kinds = expected.kinds
        return seg
    if annotated is not None and warnings is not None and expected is not None:
        warnings.append(
            f"the trace's {annotated.count} layer ranges ({annotated.source}) do not match the graph's "
            f"{len(expected.layers)} layers; aligning to the graph instead"
        )
    if expected is not None:
        if matcher is None:
            raise ValueError("segment_layers needs a KernelMatcher with the graph")
        return segment_by_graph(kernels, expected, matcher)
    found = segment_by_repetition(kernels)
    if found is None:
        return Segmentation(after=replay_order(kernels), method=REPETITION, inferred=True,
                            detail="no repeating per-layer kernel pattern")
    return found
