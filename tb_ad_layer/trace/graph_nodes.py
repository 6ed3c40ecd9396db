"""The graph side of kernel mapping: FX nodes as mapping sees them, and their kernel slots.

Mapping reads nodes only through ``MappableNode`` (name, op target, group, sub-group, stream),
a read-only protocol: graphs meet traces through it alone. ``ModelNodes`` is the expected
structure of a trace: the decoder layers in model order (``LayerNodes``: index, kind, call nodes
in graph order) and the nodes outside every layer that run before the first layer (embedding,
metadata preparation) or after the last (final norm, lm head, gathers). Layer kinds are
compared for equality only.

``SlotTable`` lays out the kernel-map slots of a sequence of node groups ("regions") in graph
order, and gives each kernel the bit mask of the slots that accept it (see ``align``).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from tb_ad_layer.trace.kernel import KIND_KERNEL, Kernel
from tb_ad_layer.trace.kernel_map import KernelMap, MapRow


class MappableNode(Protocol):
    """What mapping reads of an FX node; it never writes to one."""

    @property
    def name(self) -> str:
        """The node's name in the graph (kernels are stored against it)."""
        ...

    @property
    def op(self) -> str:
        """The op target (``torch.ops.auto_deploy...``), looked up in the kernel map."""
        ...

    @property
    def group(self) -> str:
        """The node's group in its layer (``attention``, ``moe``, ``norm``...)."""
        ...

    @property
    def sub_group(self) -> str | None:
        """The node's sub-group (``shared_experts``, ``kv_branch``...), if any."""
        ...

    @property
    def stream(self) -> str | None:
        """The stream the graph runs the node on (``main``, ``aux``...); None or "" when the
        graph does not say."""
        ...


@dataclass
class LayerNodes:
    """One decoder layer of the graph: its index, kind and call nodes in graph order."""

    index: int
    kind: str
    nodes: Sequence[MappableNode]


@dataclass
class ModelNodes:
    """The expected structure of a replay or pass: layers in model order, and the nodes outside
    every layer that run before the first layer, after the last, and amid layer ``j``'s nodes
    in graph order (``between[j]``: model-level work the graph places among a layer's nodes)."""

    layers: Sequence[LayerNodes]
    before: Sequence[MappableNode] = field(default_factory=list)
    after: Sequence[MappableNode] = field(default_factory=list)
    between: Mapping[int, Sequence[MappableNode]] = field(default_factory=dict)

    @property
    def kinds(self) -> list[str]:
        return [layer.kind for layer in self.layers]


#: Sub-groups that AutoDeploy's multi-stream transforms run on an aux stream: the shared experts
#: beside the routed ones (``multi_stream_moe``) and MLA's KV branch beside the query branch
#: (``multi_stream_mla_attn``). A graph without stream markers (an export stage) does not say
#: so; mapping then tries these nodes for kernels on streams running beside the main chain.
AUX_CANDIDATE_SUB_GROUPS = frozenset({"shared_experts", "kv_branch"})


def is_aux_node(node: MappableNode) -> bool:
    """Whether the node runs on an aux stream (its ``stream``, else an aux sub-group)."""
    stream = node.stream
    if stream:
        return stream.lower() != "main"
    return "aux" in (node.sub_group or "").lower()


class KernelMatcher:
    """Caches which (row, slot) accept a kernel name: the same names recur in every layer."""

    def __init__(self, kmap: KernelMap) -> None:
        self.kmap = kmap
        self._cache: dict[tuple[int, int, str, str, str], bool] = {}

    def accepts(self, row: MapRow, slot: int, k: Kernel) -> bool:
        key = (id(row), slot, k.short, k.name, k.kind)
        ok = self._cache.get(key)
        if ok is None:
            # Copies and fills only go to rows that name them explicitly.
            if k.kind != KIND_KERNEL and not any(
                w in row.kernels[slot].lower() for w in ("memcpy", "memset")
            ):
                ok = False
            else:
                ok = row.slot_accepts(slot, k.short, k.name)
            self._cache[key] = ok
        return ok


class SlotTable:
    """Kernel slots of node regions in graph order.

    Slot ``j`` belongs to ``region[j]`` (the index of the region in the list given), node
    ``node[j]``, kernel-map row ``row[j]`` and slot index ``slot[j]`` within the row.
    """

    def __init__(self, regions: Sequence[Sequence[MappableNode]], matcher: KernelMatcher) -> None:
        self.matcher = matcher
        self.region: list[int] = []
        self.node: list[MappableNode] = []
        self.row: list[MapRow] = []
        self.slot: list[int] = []
        self.aux: list[bool] = []
        self.aux_candidate: list[bool] = []
        kmap = matcher.kmap
        for r, nodes in enumerate(regions):
            for node in nodes:
                row = kmap.row_for_op(node.op)
                if row is None:
                    continue
                aux = is_aux_node(node)
                candidate = (node.sub_group or "") in AUX_CANDIDATE_SUB_GROUPS
                for j in range(len(row.kernel_res)):
                    self.region.append(r)
                    self.node.append(node)
                    self.row.append(row)
                    self.slot.append(j)
                    self.aux.append(aux)
                    self.aux_candidate.append(candidate)
        # One position mask per (row, slot): a kernel's mask is the union of those accepting it.
        self._positions: dict[tuple[int, int], int] = {}
        self._keys: dict[tuple[int, int], tuple[MapRow, int]] = {}
        for j, (row, slot) in enumerate(zip(self.row, self.slot, strict=True)):
            key = (id(row), slot)
            self._positions[key] = self._positions.get(key, 0) | (1 << j)
            self._keys[key] = (row, slot)
        self._masks: dict[tuple[str, str, str], int] = {}
        self._group_masks: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self.region)

    def mask(self, k: Kernel) -> int:
        """Bit mask of the slots that can take ``k``."""
        key = (k.short, k.name, k.kind)
        got = self._masks.get(key)
        if got is None:
            got = 0
            for pos_key, (row, slot) in self._keys.items():
                if self.matcher.accepts(row, slot, k):
                    got |= self._positions[pos_key]
            self._masks[key] = got
        return got

    def region_mask(self, region: int) -> int:
        """Bit mask of the slots of one region."""
        out = 0
        for j, r in enumerate(self.region):
            if r == region:
                out |= 1 << j
        return out

    def aux_mask(self) -> int:
        """Bit mask of the slots of aux-stream nodes."""
        return _bits(self.aux)

    def group_mask(self, group: str) -> int:
        """Bit mask of the slots of nodes of one group (``attention``, ``moe``...)."""
        got = self._group_masks.get(group)
        if got is None:
            got = self._group_masks[group] = _bits([n.group == group for n in self.node])
        return got

    def aux_candidate_mask(self) -> int:
        """Bit mask of the slots of nodes whose sub-group AutoDeploy runs on aux streams
        (``AUX_CANDIDATE_SUB_GROUPS``)."""
        return _bits(self.aux_candidate)


def _bits(flags: Sequence[bool]) -> int:
    out = 0
    for j, flag in enumerate(flags):
        if flag:
            out |= 1 << j
    return out
