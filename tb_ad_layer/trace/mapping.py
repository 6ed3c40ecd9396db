"""Map each layer's kernels (and the kernels outside the layers) to the FX nodes that launched them.

Nodes come in graph order; each offers the slots of its op's kernel-map row (fp8 linear =
quantise + pack + GEMM), in launch order. Every stream executes its kernels in launch order, which
is graph order, while different streams interleave freely in time. So kernels are matched stream
by stream, each stream's kernels to free slots preserving both orders (a longest common
subsequence, ``align``; a greedy "next node that accepts it" degenerates when one node is
missing). The streams of the layer's main chain (streams that never overlap a busier one) go
first, in time order, onto the main-stream nodes; streams running beside them (aux streams)
then go onto the aux nodes (``stream == "aux"`` or a sub-group naming an aux stream). Leftovers
get a second chance on any free slot, then an ``unmapped_reason``. Kernels before the first layer
map to the graph's nodes before it (embedding, metadata), kernels after the last layer to the
nodes after it (final norm, lm head, gathers).
"""
from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field

from tb_ad_layer.trace.align import lcs_length, lcs_pairs
from tb_ad_layer.trace.graph_nodes import (
    KernelMatcher,
    LayerNodes,
    MappableNode,
    ModelNodes,
    SlotTable,
    is_aux_node,
)
from tb_ad_layer.trace.kernel import KIND_KERNEL, Kernel
from tb_ad_layer.trace.kernel_map import KernelMap, MapRow
from tb_ad_layer.trace.segment import Segmentation

REASON_OUTSIDE = "outside any layer"
REASON_COPY = "memcpy/memset"

__all__ = ["LayerMapping", "LayerNodes", "MappableNode", "MappingResult", "ModelNodes", "REASON_COPY",
           "REASON_OUTSIDE", "is_aux_node", "map_kernels", "map_layer"]


@dataclass
class LayerMapping:
    """How well one layer's kernels were mapped (kernel-kind activities only)."""

    index: int
    kernel_count: int
    mapped_count: int

    @property
    def mapped_share(self) -> float:
        """Mapped kernels / kernels; 1.0 for a layer without kernels."""
        return self.mapped_count / self.kernel_count if self.kernel_count else 1.0


@dataclass
class MappingResult:
    """Per-layer mapping figures, the share over all layers, and the outside kernels' figures."""

    layers: list[LayerMapping] = field(default_factory=list)
    outside_count: int = 0
    outside_mapped: int = 0

    @property
    def mapped_share(self) -> float:
        total = sum(m.kernel_count for m in self.layers)
        return sum(m.mapped_count for m in self.layers) / total if total else 1.0


def _main_chain(kernels: Sequence[Kernel]) -> set[str]:
    """Streams of the main chain: those that never run beside a busier stream. A stream whose
    kernels overlap in time with a stream holding more kernels runs beside it (an aux stream)."""
    spans: dict[str, list[tuple[int, int]]] = {}
    for k in kernels:
        spans.setdefault(k.stream_key, []).append((k.start_ns, k.end_ns))
    size = {s: len(v) for s, v in spans.items()}
    main = set(spans)
    keys = sorted(spans)
    for a in keys:
        for b in keys:
            if a == b or (size[b], b) <= (size[a], a):
                continue
            if _overlap(spans[a], spans[b]):
                main.discard(a)
                break
    return main


def _overlap(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> bool:
    i = j = 0
    a = sorted(a)
    b = sorted(b)
    while i < len(a) and j < len(b):
        if a[i][0] < b[j][1] and b[j][0] < a[i][1]:
            return True
        if a[i][1] <= b[j][1]:
            i += 1
        else:
            j += 1
    return False


class _Assigner:
    """Free slots of one slot table and the assignments made so far (kernel id -> slot); nothing
    is written to the kernels until ``apply``, so that two plans can be compared."""

    def __init__(self, table: SlotTable) -> None:
        self.table = table
        self.free = (1 << len(table)) - 1
        self.slot_of: dict[int, int] = {}

    def align(self, kernels: list[Kernel], allowed: int | list[int]) -> list[Kernel]:
        """Order-preserving assignment of ``kernels`` to free ``allowed`` slots (one mask for all,
        or one per kernel); returns the rest."""
        if not kernels:
            return []
        per = allowed if isinstance(allowed, list) else [allowed] * len(kernels)
        masks = [self.table.mask(k) & self.free & a for k, a in zip(kernels, per, strict=True)]
        if not any(masks):
            return list(kernels)
        matched = dict(lcs_pairs(masks, len(self.table)))
        left = []
        for i, k in enumerate(kernels):
            j = matched.get(i)
            if j is None:
                left.append(k)
            else:
                self.take(k, j)
        return left

    def fit(self, kernels: list[Kernel], allowed: int) -> int:
        return lcs_length([self.table.mask(k) & self.free & allowed for k in kernels], len(self.table))

    def take(self, k: Kernel, j: int) -> None:
        self.free &= ~(1 << j)
        self.slot_of[id(k)] = j

    def any_free(self, kernels: list[Kernel]) -> list[Kernel]:
        """Last resort, in any order: the first free slot accepting each kernel."""
        left = []
        for k in kernels:
            mask = self.table.mask(k) & self.free
            if mask:
                self.take(k, (mask & -mask).bit_length() - 1)
            else:
                left.append(k)
        return left

    def apply(self, kernels: Sequence[Kernel]) -> list[Kernel]:
        """Write the assignments onto ``kernels`` (``node``, ``unmapped_reason``); returns the
        unassigned ones."""
        left = []
        for k in kernels:
            j = self.slot_of.get(id(k))
            if j is None:
                left.append(k)
            else:
                k.node = self.table.node[j].name
                k.unmapped_reason = None
        return left


def _assign(table: SlotTable, sequences: list[tuple[bool, list[Kernel]]], aux: int) -> _Assigner:
    """The plan for a graph that marks its aux-stream nodes (``aux``, or none): the main chain
    onto the slots outside ``aux`` and the streams beside it onto ``aux`` (each where it fits
    better), leftovers anywhere free."""
    assigner = _Assigner(table)
    everything = (1 << len(table)) - 1
    main = everything & ~aux
    chained = any(in_chain for in_chain, _ in sequences)
    beside = len(sequences) > 1 or not chained
    left: list[Kernel] = []
    for in_chain, ks in sequences:
        if not aux or not main or not beside:
            # Without streams beside the main chain, aux nodes ran on it too, in graph order.
            allowed = everything
        elif in_chain:
            allowed = main if assigner.fit(ks, main) >= assigner.fit(ks, aux) else aux
        else:
            allowed = aux if assigner.fit(ks, aux) >= assigner.fit(ks, main) else main
        left += assigner.align(ks, allowed)
    return _second_chance(assigner, left)


def _assign_beside_first(table: SlotTable, sequences: list[tuple[bool, list[Kernel]]], candidates: int,
                         plain: _Assigner) -> _Assigner:
    """The plan for a graph without aux markers: the streams beside the main chain first onto
    the aux candidates (the nodes that usually run there), then the main chain onto every slot
    still free, so that candidate nodes the aux streams did not run stay open to it.

    A kernel beside the main chain belongs to the block (attention, MoE...) the main chain runs
    when it starts: its candidates are narrowed to that block's, as ``plain`` placed the main
    chain (which node of a block can be off there, the block rarely is).
    """
    assigner = _Assigner(table)
    everything = (1 << len(table)) - 1
    timeline = sorted((k.start_ns, table.node[plain.slot_of[id(k)]].group) for in_chain, ks in sequences
                      if in_chain for k in ks if id(k) in plain.slot_of)
    starts = [t for t, _ in timeline]
    left: list[Kernel] = []
    for in_chain, ks in sorted(sequences, key=lambda item: item[0]):
        if in_chain:
            left += assigner.align(ks, everything)
            continue
        allowed = []
        for k in ks:
            at = bisect_right(starts, k.start_ns) - 1
            narrowed = candidates & table.group_mask(timeline[at][1]) if at >= 0 else 0
            allowed.append(narrowed if narrowed & table.mask(k) else candidates)
        left += assigner.align(ks, allowed)
    return _second_chance(assigner, left)


def _second_chance(assigner: _Assigner, left: list[Kernel]) -> _Assigner:
    """Leftovers across streams in time order onto any free slot (the graph may not say which
    nodes run on aux streams), then anywhere at all."""
    everything = (1 << len(assigner.table)) - 1
    left = assigner.align(sorted(left, key=lambda k: (k.start_ns, k.index)), everything)
    assigner.any_free(left)
    return assigner


def map_nodes(
    nodes: Sequence[MappableNode], kernels: Sequence[Kernel], matcher: KernelMatcher
) -> list[Kernel]:
    """Map ``kernels`` (one layer's, or those outside the layers) onto ``nodes``; sets ``node`` and
    clears ``unmapped_reason`` of each mapped kernel; returns the unmapped ones.

    When the graph marks no aux-stream nodes but the kernels run on streams beside the main
    chain, the nodes of the sub-groups AutoDeploy moves to aux streams are tried for those
    streams too; that plan is kept unless plain graph order maps more kernels.
    """
    table = SlotTable([nodes], matcher)
    by_stream: dict[str, list[Kernel]] = {}
    for k in sorted(kernels, key=lambda k: (k.start_ns, k.index)):
        k.node = None
        by_stream.setdefault(k.stream_key, []).append(k)
    chain = _main_chain([k for k in kernels if k.kind == KIND_KERNEL])
    # The main chain is serial (its streams never overlap), so its kernels in time order are in
    # graph order and align as one sequence; each aux stream aligns on its own.
    sequences: list[tuple[bool, list[Kernel]]] = []
    chained = sorted((k for s in chain for k in by_stream[s]), key=lambda k: (k.start_ns, k.index))
    if chained:
        sequences.append((True, chained))
    first = {s: ks[0].start_ns for s, ks in by_stream.items()}
    for s in sorted((s for s in by_stream if s not in chain), key=lambda s: (first[s], s)):
        sequences.append((False, by_stream[s]))
    aux = table.aux_mask()
    best = _assign(table, sequences, aux)
    candidates = table.aux_candidate_mask()
    if not aux and candidates and len(sequences) > 1:
        hinted = _assign_beside_first(table, sequences, candidates, best)
        if len(hinted.slot_of) >= len(best.slot_of):
            best = hinted
    return best.apply(kernels)


def _reason(k: Kernel, rows: list[MapRow], kmap: KernelMap) -> str:
    if k.kind != KIND_KERNEL:
        return REASON_COPY
    if not kmap.any_row_accepts(k.short, k.name):
        return f"no kernel-map row matches kernel family {k.short}"
    if not any(kmap.row_accepts(r, k.short, k.name) for r in rows):
        return f"no op in layer matches kernel family {k.short}"
    return f"more {k.short} kernels than matching ops in layer"


def map_layer(layer: LayerNodes, kernels: Sequence[Kernel], matcher: KernelMatcher) -> LayerMapping:
    """Map one layer's kernels (any order) to its nodes; sets ``layer``/``node``/``unmapped_reason``."""
    for k in kernels:
        k.layer, k.node, k.unmapped_reason = layer.index, None, None
    left = map_nodes(layer.nodes, kernels, matcher)
    kmap = matcher.kmap
    rows = [r for r in (kmap.row_for_op(n.op) for n in layer.nodes) if r is not None]
    for k in left:
        k.unmapped_reason = _reason(k, rows, kmap)
    counted = [k for k in kernels if k.kind == KIND_KERNEL]
    return LayerMapping(index=layer.index, kernel_count=len(counted),
                        mapped_count=sum(1 for k in counted if k.node is not None))


def map_kernels(expected: ModelNodes, seg: Segmentation, matcher: KernelMatcher) -> MappingResult:
    """Map every segmented layer (``seg.layers[j]`` <-> ``expected.layers[j]``, both in model
    order) and the kernels outside the layers onto the nodes outside them.

    A layer's kernels that its own nodes do not launch may come from the outside nodes amid it
    (``expected.between``); those get ``layer = None``. Kernels outside the layers that no outside
    node launches keep ``unmapped_reason = "outside any layer"``.
    """
    result = MappingResult()
    last = len(expected.layers) - 1
    for j, (layer, kernels) in enumerate(zip(expected.layers, seg.layers, strict=True)):
        mapping = map_layer(layer, kernels, matcher)
        amid = expected.between.get(j, ())
        if amid:
            left = [k for k in kernels if k.node is None]
            rest = set(map(id, map_nodes(amid, left, matcher)))
            for k in left:
                if id(k) not in rest:
                    k.layer, k.unmapped_reason = None, None
            counted = [k for k in kernels if k.kind == KIND_KERNEL and k.layer is not None]
            mapping = LayerMapping(layer.index, len(counted), sum(1 for k in counted if k.node is not None))
        result.layers.append(mapping)
    tail = list(expected.between.get(last, ())) + list(expected.after)
    for part, nodes in ((seg.before, list(expected.before)), (seg.after, tail)):
        for k in part:
            k.layer, k.node, k.unmapped_reason = None, None, None
        unplaced = set(map(id, map_nodes(nodes, part, matcher))) if nodes else set(map(id, part))
        for k in part:
            if id(k) in unplaced:
                k.unmapped_reason = REASON_OUTSIDE
        counted = [k for k in part if k.kind == KIND_KERNEL]
        result.outside_count += len(counted)
        result.outside_mapped += sum(1 for k in counted if k.node is not None)
    return result
