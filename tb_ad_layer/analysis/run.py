"""One run as the analysis sees it: the traced stage's nodes (op, group, shapes) and the stored
kernels with their statistics, categories and typical durations, read once from the run store."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tb_ad_layer.analysis.categories import MEMORY, Categories
from tb_ad_layer.contract.document import LayerNode
from tb_ad_layer.store.reader import RunStore
from tb_ad_layer.store.records import GpuRow, HostCallRow, KernelTiming, MemcpyRow, TraceDimRow

#: The short name the converter gives whole CUDA graph launches of graph-mode captures: blocks,
#: not kernels, so the analysis leaves them out.
GRAPH_BLOCK = "cudaGraphLaunch"
UNMAPPED = "unmapped"


@dataclass(slots=True)
class Node:
    """A node with what the analysis needs of it. ``values``: id -> (shape, dtype) of every
    value its layer document names (nodes and external inputs), for the roofline."""

    layer: int | None
    id: str
    op: str
    group: str
    sub_group: str | None
    shape: str
    dtype: str
    args: str
    inputs: list[str]
    weights: list[tuple[str, str, str]]
    values: dict[str, tuple[str, str]]


@dataclass(slots=True)
class Activity:
    """A stored kernel, copy or fill with its category and typical duration (ns)."""

    k: KernelTiming
    node: Node | None
    category: str
    typical_ns: float
    memory: bool

    @property
    def group(self) -> str:
        """Its node's group, ``unmapped`` without a node."""
        return self.node.group if self.node is not None else UNMAPPED


@dataclass
class RunData:
    """What one run holds for the analysis."""

    run: str
    stage: int
    phase: str | None
    replays: int
    kinds: dict[int, str]
    nodes: dict[tuple[int | None, str], Node]
    activities: list[Activity]
    stream_labels: dict[str, str]
    host_calls: list[HostCallRow] | None
    memcpy: list[MemcpyRow] | None
    gpus: list[GpuRow]
    notes: list[str] = field(default_factory=list)
    #: The symbolic sizes the trace's recorded shapes bind (None: it recorded none).
    trace_dims: list[TraceDimRow] | None = None
    #: The GPUs the trace records (a multi-process trace: every rank's).
    trace_devices: int = 0


def _node(layer: int | None, n: LayerNode | dict[str, Any],
          values: dict[str, tuple[str, str]]) -> Node:
    if isinstance(n, dict):
        return Node(layer, n["id"], n["op"], n["group"], n.get("sub_group"), n["shape"], n["dtype"],
                    n.get("args", ""), list(n["inputs"]),
                    [(w["name"], w["shape"], w["dtype"]) for w in n["weights"]], values)
    return Node(layer, n.id, n.op, n.group, n.sub_group, n.shape, n.dtype, n.args, n.inputs,
                [(w.name, w.shape, w.dtype) for w in n.weights], values)


def load_run(store: RunStore, categories: Categories, rank: int | None = None,
             known: dict[tuple[int | None, str], Node] | None = None) -> RunData:
    """Read the traced stage (the last one: the converter maps the trace onto it) and the stored
    kernels of ``store``'s ``rank`` (default: the first). ``known``: nodes read for another
    rank (every rank maps onto the same stage), not read again."""
    stages = store.stages()
    stage = stages[-1].idx if stages else 0
    trace = store.meta.trace
    ranks = {r.rank: r for r in store.ranks()}
    if rank is not None and rank in ranks and rank != store.default_rank():
        trace = ranks[rank].info
    timings = store.kernel_timings(rank)
    # Only the nodes some kernel names are built: a 61-layer stage has thousands of nodes that
    # launch nothing (views, getitems), and the analysis has nothing to say about them.
    nodes: dict[tuple[int | None, str], Node] = dict(known or {})
    wanted = {(k.layer, k.node) for k in timings if k.node is not None} - nodes.keys()
    kinds: dict[int, str] = {}
    for row in store.layers(stage):
        kinds[row.layer] = row.kind
        if not any(key[0] == row.layer for key in wanted):
            continue
        doc = store.layer_document(stage, row.layer)
        if doc is None:
            continue
        values = {n.id: (n.shape, n.dtype) for n in doc.nodes}
        values.update({x.id: (x.shape, x.dtype) for x in doc.external_inputs})
        for n in doc.nodes:
            if (row.layer, n.id) in wanted:
                nodes[(row.layer, n.id)] = _node(row.layer, n, values)
    if any(key[0] is None for key in wanted):
        outside = store.nodes(stage, -1)
        out_values = {d["id"]: (d["shape"], d["dtype"]) for d in outside}
        for d in outside:
            if (None, d["id"]) in wanted:
                nodes[(None, d["id"])] = _node(None, d, out_values)
    activities = []
    notes = []
    blocks = 0
    replays = 1
    for k in timings:
        if k.short == GRAPH_BLOCK and k.node is None and k.layer is None:
            blocks += 1
            continue
        node = nodes.get((k.layer, k.node)) if k.node is not None else None
        memory = categories.classify(k.short, k.name) == MEMORY
        category = MEMORY if memory else categories.classify(
            k.short, k.name, node.op if node else None, node.group if node else None,
            node.sub_group if node else None)
        typical = k.median_ns if k.median_ns is not None else float(max(0, k.end_ns - k.start_ns))
        replays = max(replays, k.replays or 1)
        activities.append(Activity(k, node, category, typical, memory))
    if blocks:
        notes.append(f"{blocks} whole CUDA graph launch(es) left out: the trace was captured with "
                     f"--cuda-graph-trace=graph and holds no kernels inside graphs")
    if trace is None:
        notes.append("the run has no trace: there is no GPU time to report")
    labels = {s.key: s.label for s in store.streams(rank)}
    return RunData(run=store.meta.run, stage=stage, phase=trace.phase if trace else None,
                   replays=trace.replays if trace and trace.replays else replays, kinds=kinds,
                   nodes=nodes, activities=activities, stream_labels=labels,
                   host_calls=store.host_calls(), memcpy=store.memcpy(), gpus=store.gpus(),
                   notes=notes, trace_dims=store.trace_dims(),
                   trace_devices=len(trace.devices) if trace else 0)
