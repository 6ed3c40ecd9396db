"""Map each layer's kernels to the FX nodes that launched them.

Nodes of a layer come in graph (topological) order. Each node offers the slots of its op's
kernel-map row (fp8 linear = quantise + pack + GEMM), in launch order. Kernels, in start order,
are assigned to slots preserving both orders, maximising the number of kernels placed (a longest
common subsequence; the greedy "next node that accepts it" degenerates when one node is missing:
every later kernel shifts one node ahead). Main-stream kernels are matched against main-stream
nodes and aux-stream kernels against aux-stream nodes (``stream == "aux"`` or a sub-group naming
an aux stream), separately, because the two streams interleave in time but each follows graph
order. Leftovers get a second chance on any node, then an ``unmapped_reason``.
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

    __slots__ = ("node", "row", "free", "taken", "main_taken")

    def __init__(self, node: MappableNode, row: MapRow) -> None:
        self.node = node
        self.row = row
        self.free = [True] * len(row.kernel_res)
        self.taken = 0
        self.main_taken = 0


class _Matcher:
    """Caches regex verdicts: the same kernel names recur in every layer."""

    def __init__(self) -> None:
        self._cache: dict[tuple[int, int, str, str, str], bool] = {}

    def accepts(self, slots: _Slots, j: int, k: Kernel) -> bool:
        key = (id(slots.row), j, k.short, k.name, k.kind)
        ok = self._cache.get(key)
        if ok is None:
            ok = self._cache[key] = _accepts_kind(slots.row, j, k)
        return ok


def _accepts_kind(row: MapRow, slot: int, k: Kernel) -> bool:
    # Copies/fills only go to rows that name them explicitly.
    if k.kind != KIND_KERNEL and not any(w in row.kernels[slot].lower() for w in ("memcpy", "memset")):
        return False
    return row.slot_accepts(slot, k.short, k.name)


def _take(slots: _Slots, j: int, k: Kernel, main: bool) -> None:
    slots.free[j] = False
    slots.taken += 1
    slots.main_taken += main
    k.node = slots.node.name
    k.unmapped_reason = None


def _align(kernels: list[Kernel], cands: list[_Slots], matcher: _Matcher, main: bool = False) -> list[Kernel]:
    """Order-preserving assignment of ``kernels`` to the free slots of ``cands``; returns the rest.

    The nodes' slots, in graph order and, within a node, in the row's order, form one sequence;
    the assignment is the longest common subsequence of kernels and accepting slots. Unlike a
    greedy walk, one missing node or stray kernel cannot drag every later kernel one node ahead.
    Among equally long assignments, kernels go to the earliest slots.
    """
    flat = [(s, j) for s in cands for j, free in enumerate(s.free) if free]
    if not kernels or not flat:
        return list(kernels)
    matched = dict(_lcs_pairs([[matcher.accepts(s, j, k) for s, j in flat] for k in kernels]))
    left: list[Kernel] = []
    for i, k in enumerate(kernels):
        if i in matched:
            slots, slot = flat[matched[i]]
            _take(slots, slot, k, main)
        else:
            left.append(k)
    return left


def _lcs_pairs(accepts: list[list[bool]]) -> list[tuple[int, int]]:
    """Longest order-preserving matching of kernels (rows) to slots (columns) where
    ``accepts[i][j]``; returns ``(kernel, slot)`` pairs. Ties go to the earliest slots."""
    n = len(accepts)
    m = len(accepts[0]) if n else 0
    table = [[0] * (m + 1)]
    for i in range(n):
        prev, row, acc = table[-1], [0] * (m + 1), accepts[i]
        for j in range(m):
            best = prev[j + 1] if prev[j + 1] > row[j] else row[j]
            if acc[j] and prev[j] + 1 > best:
                best = prev[j] + 1
            row[j + 1] = best
        table.append(row)
    pairs: list[tuple[int, int]] = []
    i, j = n, m
    while i > 0 and j > 0:
        if table[i][j - 1] == table[i][j]:
            j -= 1  # leave this slot free: pushes matches to earlier slots
        elif accepts[i - 1][j - 1] and table[i - 1][j - 1] + 1 == table[i][j]:
            pairs.append((i - 1, j - 1))
            i -= 1
            j -= 1
        else:
            i -= 1
    pairs.reverse()
    return pairs


def _lcs_length(kernels: Sequence[Kernel], cands: list[_Slots], matcher: _Matcher) -> int:
    """Length of the order-preserving assignment ``_align`` would make, without making it."""
    flat = [(s, j) for s in cands for j in range(len(s.free))]
    if not kernels or not flat:
        return 0
    prev = [0] * (len(flat) + 1)
    for k in kernels:
        row = [0] * (len(flat) + 1)
        for j, (s, slot) in enumerate(flat):
            best = prev[j + 1] if prev[j + 1] > row[j] else row[j]
            if prev[j] + 1 > best and matcher.accepts(s, slot, k):
                best = prev[j] + 1
            row[j + 1] = best
        prev = row
    return prev[-1]


class LayerFitter:
    """``segment_layers``' ``layer_fit``: how many of a stretch of main-stream kernels the j-th
    graph layer's main-stream nodes can launch, in order (nothing is assigned)."""

    def __init__(self, layers: Sequence[LayerNodes], kmap: KernelMap) -> None:
        self._matcher = _Matcher()
        self._slots: list[list[_Slots]] = []
        for layer in layers:
            rows = [(n, kmap.row_for_op(n.op)) for n in layer.nodes]
            main = [_Slots(n, r) for n, r in rows if r is not None and not is_aux_node(n)]
            self._slots.append(main or [_Slots(n, r) for n, r in rows if r is not None])

    def __call__(self, j: int, kernels: Sequence[Kernel]) -> int:
        return _lcs_length([k for k in kernels if k.kind == KIND_KERNEL], self._slots[j], self._matcher)


class GraphAligner:
    """``segment_layers``' ``aligner``: labels main-stream kernels with the position of the graph
    layer they align to, aligning the whole stream to all layers' main-stream nodes in order.

    The alignment costs kernels x slots steps; above ``MAX_CELLS`` it labels nothing (about two
    seconds of work is the most a fallback may take).
    """

    MAX_CELLS = 2_000_000

    def __init__(self, layers: Sequence[LayerNodes], kmap: KernelMap) -> None:
        self._matcher = _Matcher()
        self._flat: list[tuple[int, _Slots, int]] = []
        for pos, layer in enumerate(layers):
            rows = [(n, kmap.row_for_op(n.op)) for n in layer.nodes]
            main = [_Slots(n, r) for n, r in rows if r is not None and not is_aux_node(n)]
            for slots in main or [_Slots(n, r) for n, r in rows if r is not None]:
                self._flat.extend((pos, slots, j) for j in range(len(slots.free)))

    def __call__(self, kernels: Sequence[Kernel]) -> list[int | None]:
        flat, n, m = self._flat, len(kernels), len(self._flat)
        labels: list[int | None] = [None] * n
        if not n or not m or n * m > self.MAX_CELLS:
            return labels
        accepts = [[self._matcher.accepts(s, j, k) for _, s, j in flat] for k in kernels]
        for i, j in _lcs_pairs(accepts):
            labels[i] = flat[j][0]
        return labels


def _any_free(kernels: list[Kernel], cands: list[_Slots], matcher: _Matcher) -> list[Kernel]:
    """Last resort, in any order: the first node with a free slot accepting each kernel."""
    left = []
    for k in kernels:
        hit = next(((s, j) for s in cands for j, free in enumerate(s.free) if free and matcher.accepts(s, j, k)),
                   None)
        if hit is None:
            left.append(k)
        else:
            _take(hit[0], hit[1], k, False)
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
    everything = _in_graph_order(layer.nodes, main + aux)
    ordered = sorted(kernels, key=lambda k: (k.start_ns, k.index))
    for k in ordered:
        k.layer, k.node, k.unmapped_reason = layer.index, None, None
    on_main = [k for k in ordered if k.stream_key == main_stream]
    on_aux = [k for k in ordered if k.stream_key != main_stream]
    left = _align(on_main, main or everything, matcher, main=True)
    # Without aux-stream hints in the graph, aux kernels belong to nodes the main stream did not use
    # (else the shared experts' GEMMs would fill the MoE node's spare GEMM slot).
    left += _align(on_aux, aux or [s for s in everything if s.main_taken == 0], matcher)
    # Second chance across streams: the graph may not say which nodes run on aux streams.
    left = _align(sorted(left, key=lambda k: (k.start_ns, k.index)), everything, matcher)
    left = _any_free(left, everything, matcher)
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
