"""Put a trace onto a converted stage: map its kernels to the stage's nodes, store kernels and
streams in the run store, and hand the converter what the stage's documents take of it (the
nodes' kernels and each layer's summary, :class:`~tb_ad_layer.convert.MappedTrace`). A
multi-GPU run's traces (one per rank, or every device of one trace) are each mapped onto the same
stage and stored as the run's ranks (:func:`trace_attacher`).

This is pipeline glue (like :mod:`tb_ad_layer.convert`): it knows layers, traces and the store.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

from tb_ad_layer.contract.api import TraceInfo
from tb_ad_layer.convert import MappedTrace, TraceAttacher
from tb_ad_layer.errors import InputError
from tb_ad_layer.layers.layered import LayeredGraph
from tb_ad_layer.options import TraceChoice, TraceOptions
from tb_ad_layer.progress import Progress
from tb_ad_layer.stage_pool import StagePool, run_in_process
from tb_ad_layer.store.records import (
    GpuRow,
    HostCallRow,
    KernelRow,
    MemcpyRow,
    RankRecord,
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
                origin_ns: int, rank: int = 0) -> Iterator[KernelRow]:
    """The rows the run store keeps of a trace's activities on ``rank``, in start order, then
    of its whole CUDA graph launches; times relative to ``origin_ns`` (the stored replay or
    pass's start; without kernels, the first launch's)."""
    for k in sorted(kernels, key=lambda k: k.start_ns):
        s = k.stats
        yield KernelRow(k.name, k.short, k.start_ns - origin_ns, k.end_ns - origin_ns, k.device,
                        k.stream_key, k.graph_id, k.graph_node_id, k.correlation, k.layer,
                        k.node, k.unmapped_reason, s.count if s else None,
                        s.median_ns if s else None, s.min_ns if s else None,
                        s.max_ns if s else None, s.p90_ns if s else None,
                        s.p99_ns if s else None, rank)
    launch_origin = min((b.start_ns for b in launches), default=origin_ns) \
        if not kernels else origin_ns
    for b in launches:
        yield KernelRow(f"CUDA graph {b.graph_id if b.graph_id is not None else '?'} launch",
                        "cudaGraphLaunch", b.start_ns - launch_origin, b.end_ns - launch_origin,
                        b.device, b.stream_key, b.graph_id, None, b.correlation, None, None,
                        GRAPH_BLOCK_REASON, None, None, None, None, None, None, rank)


def stream_rows(kernels: Sequence[Kernel], launches: Sequence[GraphLaunchBlock],
                rank: int = 0) -> list[StreamRow]:
    """The rows the run store keeps of the streams of a trace's activities on ``rank``,
    labelled for people."""
    keys: dict[str, tuple[int, int, int, int]] = {}
    for k in kernels:
        keys.setdefault(k.stream_key, (k.device, k.pid, k.context, k.stream))
    for b in launches:
        keys.setdefault(b.stream_key, (b.device, b.pid, b.context, b.stream))
    pids = len({v[1] for v in keys.values()})
    return [StreamRow(key, _stream_label(key, d, s, p, pids), d, p, c, s, rank)
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


def attach_trace(result: TraceResult, writer: StoreWriter | None, progress: Progress,
                 lg: LayeredGraph | None = None, rank: int = 0,
                 first: bool = True) -> MappedTrace:
    """Report how ``result`` mapped; store its kernels and streams as ``rank``'s when
    ``writer`` is given (with the host rows when it is the ``first`` rank: the analysis of the
    host side reads the first rank's), and, for the first rank, given the stage ``lg`` it mapped
    onto, the symbolic sizes its recorded shapes bind.

    Returns what the stage's documents take of the trace, with the rank's ``trace`` record.
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
        writer.add_streams(stream_rows(result.kernels, result.graph_launches, rank))
        writer.add_kernels(kernel_rows(result.kernels, result.graph_launches, result.origin_ns,
                                       rank))
        if first:
            _store_host(result, writer)
            dims = trace_dims(lg, result) if lg is not None else None
            if dims is not None:
                writer.add_trace_dims(dims)
                bound = ", ".join(f"{d.symbol}={d.value}" for d in dims if d.value is not None)
                clash = [d.symbol for d in dims if d.value is None]
                progress(f"sizes from the trace's recorded shapes: {bound or 'none bound'}"
                         + (f"; conflicting, left unbound: {', '.join(clash)}" if clash else ""))
        elif result.host is not None and result.host.gpus:
            writer.add_gpus(GpuRow(d, n) for d, n in sorted(result.host.gpus.items()))
        gpu_time = sum(s.total_duration_us for s in result.layer_summaries.values()) \
            + (info.outside_time_us or 0.0)
        writer.add_rank(RankRecord(rank, info.device, info.source, info.replays,
                                   info.kernel_count,
                                   round(gpu_time, 3) if result.layer_summaries else None, info))
    return MappedTrace(info=info, node_kernels=result.node_kernels,
                       summaries=result.layer_summaries, rank=rank)


#: Ranks of one run run the same layers: a rank whose layers hold more or fewer kernels than
#: the first rank's by more than this share runs another model (or stage, or step).
SAME_MODEL_TOLERANCE = 0.2


def _check_same_model(results: Sequence[TraceResult], traces: Sequence[TraceOptions]) -> None:
    """Refuse ranks that do not run the same model: mapping onto the graph alone can fit a
    small model's kernels onto a larger graph's layers, but a run's ranks launch the same
    kernels per layer (tensor and expert parallel ranks alike), so their counts must agree."""
    def count(r: TraceResult) -> int:
        return sum(s.kernel_count for s in r.layer_summaries.values())
    base = count(results[0])
    for j, r in enumerate(results[1:], 1):
        n = count(r)
        if base and abs(n - base) > SAME_MODEL_TOLERANCE * base:
            where = f"trace {j + 1} of {len(results)}" if traces else f"device {r.info.device}"
            raise InputError(f"{where} does not look like the same model as the first: "
                             f"{n:,} kernels in its layers against {base:,}; a run's ranks "
                             f"run the same model, stage and step",
                             path=Path(r.info.source), field="--trace")


def rank_numbers(devices: Sequence[int]) -> list[int]:
    """The rank of each trace (or device of a trace), in order: its device, or its position
    when two of them name the same device (processes that each see their GPU as device 0)."""
    return list(devices) if len(set(devices)) == len(devices) else list(range(len(devices)))


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


def _none() -> None:
    return None


def _ignore(value: Any) -> None:
    pass


def rank_devices(info: TraceInfo) -> list[int]:
    """The devices of a trace that ran kernels: its ranks under ``--device all``."""
    return sorted({t.device for t in info.stream_totals if t.kernels > 0})


class RankTask(NamedTuple):
    """One rank's trace to read and map, as plain values (it crosses processes): the trace, the
    part of it to use, the kernel map file, the graph's nodes, the kernels a compiler recorded
    per node, and what the progress lines and errors call it (empty for a lone trace)."""

    path: str
    choice: TraceChoice
    kernel_map: str | None
    nodes: ModelNodes
    kernel_names: dict[str, tuple[str, ...]]
    label: str


def ingest_rank(task: RankTask, fetch: Callable[[], Any], publish: Callable[[Any], None],
                progress: Progress) -> TraceResult:
    """Read and map one rank's trace (a :class:`~tb_ad_layer.stage_pool.StagePool` work
    function: ranks do not chain, so ``fetch`` and ``publish`` are unused). Its errors name
    the rank's ``label``."""
    progress(f"reading trace {task.path}{task.label}")
    kmap = load_kernel_map(Path(task.kernel_map) if task.kernel_map else None)
    try:
        return ingest_trace(task.path, task.nodes, choice=task.choice,
                            kernel_map=with_provenance(kmap, task.kernel_names),
                            progress=progress)
    except InputError as e:
        if not task.label:
            raise
        raise InputError(f"{task.label.strip(' ()')}: {e.message}", path=e.path, line=e.line,
                         field=e.field) from None


#: Traces smaller than this in all are read in this process whatever ``jobs`` says: a worker
#: takes about a second to start.
PARALLEL_MIN_BYTES = 16 << 20


def _ingest_all(tasks: Sequence[RankTask], jobs: int, progress: Progress) -> list[TraceResult]:
    """Every task's result in order: in ``jobs`` worker processes when there are several tasks
    and traces worth a worker's start, else here, one after another (the same results and
    progress lines either way)."""
    size = sum(Path(t.path).stat().st_size for t in tasks if Path(t.path).is_file())
    if jobs <= 1 or len(tasks) <= 1 or size < PARALLEL_MIN_BYTES:
        return list(run_in_process(ingest_rank, tasks, progress))
    with StagePool(ingest_rank, tasks, jobs) as pool:
        return list(pool.results(progress))


def trace_attacher(options: TraceOptions | Sequence[TraceOptions], progress: Progress,
                   all_devices: bool = False, jobs: int = 1) -> TraceAttacher:
    """The ``attach_trace`` callback for :func:`tb_ad_layer.convert.convert`: reads the traces
    ``options`` names when called, one per rank (or, with ``all_devices``, every device of the
    one trace as a rank; :func:`rank_numbers`). The kernel maps are read here, so a bad
    ``--kernel-map`` fails before anything is converted.

    Every rank is mapped onto the same stage: a rank whose kernels do not fit the graph's
    layers fails the conversion with the trace (and device) named, and ranks whose traces hold
    different phases are refused. With ``jobs`` > 1, the ranks' traces are read in worker
    processes (:func:`ingest_rank`)."""
    traces = (options,) if isinstance(options, TraceOptions) else tuple(options)
    if not traces:
        raise ValueError("trace_attacher needs a trace")
    if all_devices and len(traces) != 1:
        raise InputError("--device all takes one trace (its devices are the ranks); give one "
                         "--trace per rank otherwise", field="--device")
    for t in traces:
        load_kernel_map(t.kernel_map)  # a bad kernel map fails before anything is converted

    def task(t: TraceOptions, nodes: ModelNodes, lg: LayeredGraph, device: int | None,
             label: str) -> RankTask:
        choice = t.choice if device is None else replace(t.choice, device=device)
        return RankTask(str(t.path), choice, str(t.kernel_map) if t.kernel_map else None, nodes,
                        dict(lg.graph.kernel_names), label)

    def attach(lg: LayeredGraph, writer: StoreWriter | None) -> MappedTrace:
        nodes = model_nodes(lg)
        results: list[TraceResult] = []
        if all_devices:
            t = traces[0]
            first = ingest_rank(task(t, nodes, lg, None, ""), _none, _ignore, progress)
            devices = rank_devices(first.info) or [first.info.device]
            progress(f"{len(devices)} device(s) with kernels: one rank each")
            rest = [d for d in devices if d != first.info.device]
            more = _ingest_all([task(t, nodes, lg, d, f" (device {d})") for d in rest], jobs,
                               progress)
            by_device = {first.info.device: first, **dict(zip(rest, more, strict=True))}
            results = [by_device[d] for d in devices]
        else:
            multi = len(traces) > 1
            results = _ingest_all([task(t, nodes, lg, None, f" (trace {j + 1} of {len(traces)})"
                                        if multi else "") for j, t in enumerate(traces)],
                                  jobs, progress)
        phases = {r.info.phase for r in results}
        if len(phases) > 1:
            said = ", ".join(f"{r.info.source} device {r.info.device}: {r.info.phase}"
                             for r in results)
            raise InputError(f"the ranks' traces hold different phases ({said}); a run's ranks "
                             f"run the same step: give --phase", field="--trace")
        _check_same_model(results, traces if not all_devices else ())
        ranks = rank_numbers([r.info.device for r in results])
        order = sorted(range(len(results)), key=lambda j: ranks[j])
        mapped: list[MappedTrace] = []
        seen_files: set[str] = set()
        for pos, j in enumerate(order):
            result = results[j]
            if len(results) > 1:
                progress(f"rank {ranks[j]}: device {result.info.device} of "
                         f"{result.info.source}")
            mapped.append(attach_trace(result, writer, progress, lg, ranks[j],
                                       first=pos == 0))
            if writer is not None and result.info.source not in seen_files:
                seen_files.add(result.info.source)
                writer.add_file(result.info.source, "trace")
        return replace(mapped[0], others=tuple(mapped[1:])) if len(mapped) > 1 else mapped[0]

    return attach
