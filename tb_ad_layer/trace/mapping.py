"""Map each layer's kernels to the FX nodes that launched them.

Nodes of a layer come in graph (topological) order. Kernels are walked in start order; each goes
to the next node whose op's kernel-map row has a free slot accepting it (a node takes as many
kernels as its row has slots: fp8 linear = quantise + pack + GEMM). Main-stream kernels are
matched against main-stream nodes and aux-stream kernels against aux-stream nodes (``stream ==
"aux"`` or a sub-group naming an aux stream), each with its own cursor, because the two streams
interleave in time but each follows graph order. A kernel no node ahead accepts may still go to
an earlier node with a free slot (streams reorder slightly). Every kernel ends with a node or
with ``unmapped_reason``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence, runtime_checkable

from tb_ad_layer.trace.kernel import KIND_KERNEL, Kernel
from tb_ad_layer.trace.kernel_map import KernelMap, MapRow
from tb_ad_layer.trace.segment import Segmentation

REASON_OUTSIDE = "outside any layer"
REASON_COPY = "memcpy/memset"


@runtime_checkable
class MappableNode(Protocol):
    """What mapping needs of an FX node; an optional ``stream`` attribute ("main"/"aux") is used too."""

    name: str
    op: str
    group: str
    sub_group: str | None


@dataclass
class LayerNodes:
    """One decoder layer of the graph: its index, kind (``dense``/``moe``...) and nodes in topo order."""

    index: int
    kind: str
    nodes: Sequence[MappableNode]


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
    """Per-layer mapping figures and the share over all layers."""

    layers: list[LayerMapping] = field(default_factory=list)

    @property
    def mapped_share(self) -> float:
        total = sum(m.kernel_count for m in self.layers)
        return sum(m.mapped_count for m in self.layers) / total if total else 1.0


def is_aux_node(node: MappableNode) -> bool:
    """Whether the node runs on an aux stream (explicit ``stream`` attribute or an aux sub-group)."""
    stream = getattr(node, "stream", None)
    if isinstance(stream, str) and stream:
        return stream.lower() != "main"
    return "aux" in (node.sub_group or "").lower()


class _Slots:
    """Free kernel slots of one node."""

    __slots__ = ("node", "row", "free", "taken")

    def __init__(self, node: MappableNode, row: MapRow) -> None:
        self.node = node
        self.row = row
        self.free = [True] * len(row.kernel_res)
        self.taken = 0


class _Matcher:
    """Caches regex verdicts: the same kernel names recur in every layer."""

    def __init__(self) -> None:
        self._cache: dict[tuple[int, int, str, str], bool] = {}

    def slot_for(self, slots: _Slots, k: Kernel) -> int | None:
        for j, free in enumerate(slots.free):
            if not free:
                continue
            key = (id(slots.row), j, k.short, k.name)
            ok = self._cache.get(key)
            if ok is None:
                ok = self._cache[key] = _accepts_kind(slots.row, j, k)
            if ok:
                return j
        return None


def _accepts_kind(row: MapRow, slot: int, k: Kernel) -> bool:
    # Copies/fills only go to rows that name them explicitly.
    if k.kind != KIND_KERNEL and not any(w in row.kernels[slot].lower() for w in ("memcpy", "memset")):
        return False
    return row.slot_accepts(slot, k.short, k.name)


def _walk(kernels: list[Kernel], cands: list[_Slots], matcher: _Matcher) -> list[Kernel]:
    """Greedy in-order assignment of ``kernels`` to ``cands``; returns the kernels left over."""
    left: list[Kernel] = []
    cursor = 0
    for k in kernels:
        hit = None
        for q in range(cursor, len(cands)):
            j = matcher.slot_for(cands[q], k)
            if j is not None:
                hit = (q, j)
                break
        if hit is None:
            for q in range(min(cursor, len(cands)) - 1, -1, -1):
                j = matcher.slot_for(cands[q], k)
                if j is not None:
                    hit = (q, j)
                    break
        else:
            cursor = hit[0]
        if hit is None:
            left.append(k)
            continue
        slots = cands[hit[0]]
        slots.free[hit[1]] = False
        slots.taken += 1
        k.node = slots.node.name
        k.unmapped_reason = None
    return left


def _reason(k: Kernel, layer_rows: list[MapRow], kmap: KernelMap) -> str:
    if k.kind != KIND_KERNEL:
        return REASON_COPY
    if not kmap.any_row_accepts(k.short, k.name):
        return f"no kernel-map row matches kernel family {k.short}"
    if not any(r.accepts(k.short, k.name) for r in layer_rows):
        return f"no op in layer matches kernel family {k.short}"
    return f"more {k.short} kernels than matching ops in layer"


def map_layer(layer: LayerNodes, kernels: Sequence[Kernel], main_stream: str | None, kmap: KernelMap,
              matcher: _Matcher | None = None) -> LayerMapping:
    """Map one layer's kernels (any order) to its nodes; sets ``layer``/``node``/``unmapped_reason``."""
    matcher = matcher or _Matcher()
    main: list[_Slots] = []
    aux: list[_Slots] = []
    for node in layer.nodes:
        row = kmap.row_for_op(node.op)
        if row is not None:
            (aux if is_aux_node(node) else main).append(_Slots(node, row))
    everything = [s for s in _in_graph_order(layer.nodes, main + aux)]
    ordered = sorted(kernels, key=lambda k: (k.start_ns, k.index))
    for k in ordered:
        k.layer, k.node, k.unmapped_reason = layer.index, None, None
    on_main = [k for k in ordered if k.stream_key == main_stream]
    on_aux = [k for k in ordered if k.stream_key != main_stream]
    left = _walk(on_main, main or everything, matcher) + _walk(on_aux, aux or everything, matcher)
    # Second chance across streams: the graph may not say which nodes run on aux streams.
    left = _walk(sorted(left, key=lambda k: (k.start_ns, k.index)), everything, matcher)
    rows = [s.row for s in everything]
    for k in left:
        k.unmapped_reason = _reason(k, rows, kmap)
    counted = [k for k in ordered if k.kind == KIND_KERNEL]
    return LayerMapping(index=layer.index, kernel_count=len(counted),
                        mapped_count=sum(1 for k in counted if k.node is not None))


def _in_graph_order(nodes: Sequence[MappableNode], slots: list[_Slots]) -> list[_Slots]:
    pos = {id(n): i for i, n in enumerate(nodes)}
    return sorted(slots, key=lambda s: pos[id(s.node)])


def map_kernels(layers: Sequence[LayerNodes], seg: Segmentation, kmap: KernelMap) -> MappingResult:
    """Map every segmented layer (``seg.layers[j]`` <-> ``layers[j]``, both in model order).

    Kernels outside every layer get ``unmapped_reason = "outside any layer"``.
    """
    matcher = _Matcher()
    result = MappingResult()
    for layer, kernels in zip(layers, seg.layers):
        result.layers.append(map_layer(layer, kernels, seg.main_stream, kmap, matcher))
    for k in seg.outside:
        k.layer, k.node, k.unmapped_reason = None, None, REASON_OUTSIDE
    return result
