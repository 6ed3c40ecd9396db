"""Put a trace onto a converted stage: map its kernels to the stage's nodes, fill the layer
documents' ``kernels``/``time_us``/``trace_summary``, and store kernels and streams in the run store.

This is pipeline glue (like :mod:`tb_ad_layer.convert`): it knows layers, traces and the store.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tb_ad_layer.layers.document import outside_nodes
from tb_ad_layer.layers.layered import LayeredGraph
from tb_ad_layer.options import TraceOptions
from tb_ad_layer.progress import Progress
from tb_ad_layer.store.records import KernelRow, StreamRow
from tb_ad_layer.store.writer import StoreWriter
from tb_ad_layer.trace.graph_nodes import LayerNodes, ModelNodes
from tb_ad_layer.trace.ingest import TraceResult, ingest_trace
from tb_ad_layer.trace.kernel_map import load_kernel_map, provenance_op, with_provenance

GRAPH_BLOCK_REASON = ("whole CUDA graph launch: capture with nsys --cuda-graph-trace=node for "
                      "per-kernel data")


@dataclass(slots=True, frozen=True)
class _Node:
    """What kernel mapping needs of a node."""

    name: str
    op: str
    group: str
    sub_group: str | None
    stream: str


def _node(lg: LayeredGraph, j: int) -> _Node:
    n = lg.graph.nodes[j]
    names = lg.graph.kernel_names.get(n.name)
    op = provenance_op(names) if names else n.target
    return _Node(n.name, op, lg.group[j], lg.sub_group[j], lg.stream[j])


def layer_nodes(lg: LayeredGraph) -> list[LayerNodes]:
    """The graph's layers in model order, with their call nodes in topological order."""
    out = []
    for index in sorted(lg.layers):
        info = lg.layers[index]
        nodes = [_node(lg, j) for j in info.members if lg.graph.nodes[j].kind == "call"]
        out.append(LayerNodes(index=index, kind=info.kind, nodes=nodes))
    return out


def model_nodes(lg: LayeredGraph) -> ModelNodes:
    """The layers plus the call nodes outside every layer that come before the first layer's
    nodes (embedding, metadata) and after the last layer's (final norm, lm head, gathers), in
    graph order, and those the graph places amid a layer's nodes (keyed by the layer's position)."""
    layers = layer_nodes(lg)
    if not lg.layers:
        return ModelNodes(layers)
    # The first layer's first node and the last layer's last node bound the layers (a stray node
    # of layer 0 placed at the end of the graph does not make the final norm "between layers").
    first = min(lg.layers[min(lg.layers)].members)
    last = max(lg.layers[max(lg.layers)].members)
    calls = [j for j, layer in enumerate(lg.layer) if layer is None and lg.graph.nodes[j].kind == "call"]
    starts = sorted((min(info.members), index) for index, info in lg.layers.items())
    between: dict[int, list[_Node]] = {}
    for j in calls:
        if first < j < last:
            # Amid the layer whose nodes started last before it.
            owner = max((i for i, (pos, _) in enumerate(starts) if pos < j), default=0)
            between.setdefault(owner, []).append(_node(lg, j))
    return ModelNodes(layers, before=[_node(lg, j) for j in calls if j < first],
                      after=[_node(lg, j) for j in calls if j > last], between=between)


def _stream_label(key: str, device: int, stream: int, pid: int, pids: int) -> str:
    label = f"GPU {device} \u00b7 stream {stream}"
    return f"{label} (pid {pid})" if pids > 1 else label


def attach_trace(
    result: TraceResult,
    docs: list[dict[str, Any]],
    writer: StoreWriter | None,
    progress: Progress,
    lg: LayeredGraph | None = None,
) -> dict[str, Any]:
    """Fill ``docs`` from ``result``; store kernels and streams when ``writer`` is given, and
    (with ``lg``) the kernels of the nodes outside every layer.

    Returns the trace metadata recorded in the run store (``meta.trace``).
    """
    origin = result.origin_ns
    for doc in docs:
        for node in doc["nodes"]:
            ks = result.node_kernels.get(node["id"], [])
            node["kernels"] = ks
            node["time_us"] = round(sum(k["duration_us"] for k in ks), 3)
        doc["trace_summary"] = result.layer_summaries.get(doc["layer"])
    per_layer: dict[int, list[int]] = {}
    for k in result.kernels:
        if k.layer is not None:
            counts = per_layer.setdefault(k.layer, [0, 0])
            counts[1] += 1
            counts[0] += k.node is not None
    if per_layer:
        shares = " ".join(f"{layer}:{m / t:.0%}" for layer, (m, t) in sorted(per_layer.items()))
        progress(f"mapped share per layer: {shares}")
    m = result.meta
    if m.get("outside_kernel_count"):
        share = m.get("outside_mapped_share")
        progress(f"outside layers: {m['outside_kernel_count']:,} kernels, {m['outside_time_us']:,.1f} us"
                 + (f", {share:.0%} on the nodes outside the layers" if share is not None else ""))
    for w in result.warnings:
        progress.warn(w)
    if writer is not None:
        keys: dict[str, tuple[int, int, int, int]] = {}
        for k in result.kernels:
            keys.setdefault(k.stream_key, (k.device, k.pid, k.context, k.stream))
        for b in result.graph_launches:
            keys.setdefault(b.stream_key, (b.device, b.pid, b.context, b.stream))
        pids = len({v[1] for v in keys.values()})
        writer.add_streams(StreamRow(key, _stream_label(key, d, s, p, pids), d, p, c, s)
                           for key, (d, p, c, s) in keys.items())
        writer.add_kernels(
            KernelRow(k.name, k.short, k.start_ns - origin, k.end_ns - origin, k.device,
                      k.stream_key, k.graph_id, k.graph_node_id, k.correlation, k.layer, k.node,
                      k.unmapped_reason, k.stats.count if k.stats else None,
                      k.stats.median_ns if k.stats else None,
                      k.stats.min_ns if k.stats else None, k.stats.max_ns if k.stats else None)
            for k in sorted(result.kernels, key=lambda k: k.start_ns))
        launch_origin = min((b.start_ns for b in result.graph_launches), default=origin) \
            if not result.kernels else origin
        writer.add_kernels(
            KernelRow(f"CUDA graph {b.graph_id if b.graph_id is not None else '?'} launch",
                      "cudaGraphLaunch", b.start_ns - launch_origin, b.end_ns - launch_origin,
                      b.device, b.stream_key, b.graph_id, None, b.correlation, None, None,
                      GRAPH_BLOCK_REASON, None, None, None, None)
            for b in result.graph_launches)
        writer.add_file(result.meta["source"], "trace")
        if lg is not None:
            writer.set_outside_nodes(writer.last_stage, _outside_records(lg, result))
    meta = dict(result.meta)
    meta["warnings"] = list(result.warnings)
    meta["unmapped"] = dict(Counter(k.unmapped_reason for k in result.kernels
                                    if k.unmapped_reason).most_common(10))
    meta["graph_launch_blocks"] = len(result.graph_launches)
    if result.outside_summary is not None:
        summary = dict(result.outside_summary)
        summary["unmapped"] = summary["unmapped"][:20]
        meta["outside_summary"] = summary
    return meta


def _outside_records(lg: LayeredGraph, result: TraceResult) -> list[dict[str, Any]]:
    """The stage's nodes outside every layer, as stored, with their kernels and time."""
    nodes = outside_nodes(lg)
    for node in nodes:
        ks = result.node_kernels.get(node["id"], [])
        node["kernels"] = ks
        node["time_us"] = round(sum(k["duration_us"] for k in ks), 3)
    return nodes


#: Puts a trace onto a converted stage: ``(lg, docs, writer) -> meta.trace``.
TraceAttacher = Callable[[LayeredGraph, list[dict[str, Any]], StoreWriter | None], dict[str, Any]]


def trace_attacher(options: TraceOptions, progress: Progress) -> TraceAttacher:
    """The ``attach_trace`` callback for :func:`tb_ad_layer.convert.convert`: reads the trace
    ``options`` name when called. The kernel map is read here, so a bad ``--kernel-map`` fails
    before anything is converted."""
    kmap = load_kernel_map(options.kernel_map)

    def attach(lg: LayeredGraph, docs: list[dict[str, Any]],
               writer: StoreWriter | None) -> dict[str, Any]:
        progress(f"reading trace {options.path}")
        result = ingest_trace(options.path, model_nodes(lg), phase=options.phase,
                              device=options.device, graph_id=options.graph_id, step=options.step,
                              kernel_map=with_provenance(kmap, lg.graph.kernel_names),
                              progress=progress)
        return attach_trace(result, docs, writer, progress, lg)

    return attach
