"""Put a trace onto a converted stage: map its kernels to the stage's nodes, store kernels and
streams in the run store, and hand the converter what the stage's documents take of it (the
nodes' kernels and each layer's summary, :class:`~tb_ad_layer.convert.MappedTrace`).

This is pipeline glue (like :mod:`tb_ad_layer.convert`): it knows layers, traces and the store.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from tb_ad_layer.convert import MappedTrace, TraceAttacher
from tb_ad_layer.layers.layered import LayeredGraph
from tb_ad_layer.options import TraceOptions
from tb_ad_layer.progress import Progress
from tb_ad_layer.store.records import (
    GpuRow,
    HostCallRow,
    KernelRow,
    MemcpyRow,
    StreamRow,
    TraceDimRow,
)
from tb_ad_layer.store.writer import StoreWriter
from tb_ad_layer.trace.graph_nodes import LayerNodes, ModelNodes
from tb_ad_layer.trace.ingest import TraceResult, ingest_trace
from tb_ad_layer.trace.kernel import GraphLaunchBlock, Kernel
from tb_ad_layer.trace.kernel_map import load_kernel_map, provenance_op, with_provenance
from tb_ad_layer.trace.shapes import Binding, bind_node, collect

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


def kernel_rows(kernels: Sequence[Kernel], launches: Sequence[GraphLaunchBlock],
                origin_ns: int) -> Iterator[KernelRow]:
    """The rows the run store keeps of a trace's activities, in start order, then of its whole
    CUDA graph launches; times relative to ``origin_ns`` (the stored replay or pass's start;
    without kernels, the first launch's)."""
    for k in sorted(kernels, key=lambda k: k.start_ns):
        s = k.stats
        yield KernelRow(k.name, k.short, k.start_ns - origin_ns, k.end_ns - origin_ns, k.device,
                        k.stream_key, k.graph_id, k.graph_node_id, k.correlation, k.layer,
                        k.node, k.unmapped_reason, s.count if s else None,
                        s.median_ns if s else None, s.min_ns if s else None,
                        s.max_ns if s else None, s.p90_ns if s else None,
                        s.p99_ns if s else None)
    launch_origin = min((b.start_ns for b in launches), default=origin_ns) \
        if not kernels else origin_ns
    for b in launches:
        yield KernelRow(f"CUDA graph {b.graph_id if b.graph_id is not None else '?'} launch",
                        "cudaGraphLaunch", b.start_ns - launch_origin, b.end_ns - launch_origin,
                        b.device, b.stream_key, b.graph_id, None, b.correlation, None, None,
                        GRAPH_BLOCK_REASON, None, None, None, None, None, None)


def stream_rows(kernels: Sequence[Kernel], launches: Sequence[GraphLaunchBlock]) -> list[StreamRow]:
    """The rows the run store keeps of the streams of a trace's activities, labelled for
    people."""
    keys: dict[str, tuple[int, int, int, int]] = {}
    for k in kernels:
        keys.setdefault(k.stream_key, (k.device, k.pid, k.context, k.stream))
    for b in launches:
        keys.setdefault(b.stream_key, (b.device, b.pid, b.context, b.stream))
    pids = len({v[1] for v in keys.values()})
    return [StreamRow(key, _stream_label(key, d, s, p, pids), d, p, c, s)
            for key, (d, p, c, s) in keys.items()]


def trace_dims(lg: LayeredGraph, result: TraceResult) -> list[TraceDimRow] | None:
    """The stage's symbolic sizes that the trace's recorded input shapes bind: for each node
    with mapped kernels whose launching op of the node's own name was recorded with its input
    dims, its operands' symbols by position (:func:`tb_ad_layer.trace.shapes.bind_node`); a
    symbol recorded with two values is a conflict, bound to neither. None when the trace
    recorded no shapes."""
    ops = result.launch_ops
    if ops is None:
        return None
    by_name = lg.graph.by_name
    seen: set[str] = set()
    bindings: list[tuple[str, Binding]] = []
    for k in result.kernels:
        if k.node is None or k.correlation is None or k.node in seen:
            continue
        chain = ops.get(k.correlation)
        node = by_name.get(k.node)
        if chain is None or node is None:
            continue
        binding = bind_node(node.target, node.args, chain)
        if binding is not None:
            seen.add(k.node)
            where = k.node if k.layer is None else f"{k.node} (layer {k.layer})"
            bindings.append((where, binding))
    dims = collect(bindings)
    rows = [TraceDimRow(sym, v, where) for sym, (v, where) in dims.bound.items()]
    rows += [TraceDimRow(sym, None, why) for sym, why in dims.conflicts.items()]
    return sorted(rows)


def attach_trace(result: TraceResult, writer: StoreWriter | None,
                 progress: Progress, lg: LayeredGraph | None = None) -> MappedTrace:
    """Report how ``result`` mapped; store its kernels and streams when ``writer`` is given,
    and, given the stage ``lg`` it mapped onto, the symbolic sizes its recorded shapes bind.

    Returns what the stage's documents take of the trace, with the run's ``trace`` record.
    """
    per_layer: dict[int, list[int]] = {}
    for k in result.kernels:
        if k.layer is not None:
            counts = per_layer.setdefault(k.layer, [0, 0])
            counts[1] += 1
            counts[0] += k.node is not None
    if per_layer:
        shares = " ".join(f"{layer}:{m / t:.0%}" for layer, (m, t) in sorted(per_layer.items()))
        progress(f"mapped share per layer: {shares}")
    info = result.info
    if info.outside_kernel_count:
        share = info.outside_mapped_share
        progress(f"outside layers: {info.outside_kernel_count:,} kernels, "
                 f"{info.outside_time_us or 0.0:,.1f} us"
                 + (f", {share:.0%} on the nodes outside the layers" if share is not None else ""))
    for w in result.warnings:
        progress.warn(w)
    if writer is not None:
        writer.add_streams(stream_rows(result.kernels, result.graph_launches))
        writer.add_kernels(kernel_rows(result.kernels, result.graph_launches, result.origin_ns))
        _store_host(result, writer)
        dims = trace_dims(lg, result) if lg is not None else None
        if dims is not None:
            writer.add_trace_dims(dims)
            bound = ", ".join(f"{d.symbol}={d.value}" for d in dims if d.value is not None)
            clash = [d.symbol for d in dims if d.value is None]
            progress(f"sizes from the trace's recorded shapes: {bound or 'none bound'}"
                     + (f"; conflicting, left unbound: {', '.join(clash)}" if clash else ""))
        writer.add_file(info.source, "trace")
    return MappedTrace(info=info, node_kernels=result.node_kernels,
                       summaries=result.layer_summaries)


def _store_host(result: TraceResult, writer: StoreWriter) -> None:
    """Store the host rows around the shown replay on the kernels' origin; a kind of row the
    trace does not record leaves its table out."""
    host, origin = result.host, result.origin_ns
    if host is None:
        return
    if host.calls is not None:
        writer.add_host_calls(HostCallRow(s - origin, e - origin, t, c, n, kind)
                              for s, e, t, c, n, kind in host.calls)
    if host.copies is not None:
        writer.add_memcpy(MemcpyRow(s - origin, e - origin, st, c, d, b, sk, dk)
                          for s, e, st, c, d, b, sk, dk in host.copies)
    if host.gpus:
        writer.add_gpus(GpuRow(d, n) for d, n in sorted(host.gpus.items()))


def trace_attacher(options: TraceOptions, progress: Progress) -> TraceAttacher:
    """The ``attach_trace`` callback for :func:`tb_ad_layer.convert.convert`: reads the trace
    ``options`` name when called. The kernel map is read here, so a bad ``--kernel-map`` fails
    before anything is converted."""
    kmap = load_kernel_map(options.kernel_map)

    def attach(lg: LayeredGraph, writer: StoreWriter | None) -> MappedTrace:
        progress(f"reading trace {options.path}")
        result = ingest_trace(options.path, model_nodes(lg), choice=options.choice,
                              kernel_map=with_provenance(kmap, lg.graph.kernel_names),
                              progress=progress)
        return attach_trace(result, writer, progress, lg)

    return attach
