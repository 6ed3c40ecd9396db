"""Entry points used by the converter and the ``tb-ad-layer kernels`` command.

``ingest_trace``: read a trace, choose one replay (decode) or forward pass (prefill), split it
into the graph's layers, map kernels to FX nodes, and summarise. ``kernel_sequences``: the same
without a graph, giving per-layer kernel sequences (seed 000 phase 5).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from tb_ad_layer.errors import InputError
from tb_ad_layer.trace.kernel import GraphLaunchBlock, Kernel
from tb_ad_layer.trace.kernel_map import KernelMap, load_kernel_map
from tb_ad_layer.trace.mapping import (REASON_OUTSIDE, GraphAligner, LayerFitter, LayerNodes, is_aux_node,
                                       map_kernels)
from tb_ad_layer.trace.reader import read_trace
from tb_ad_layer.trace.replay import Selection, select
from tb_ad_layer.trace.segment import Segmentation, segment_layers
from tb_ad_layer.trace.summary import kernel_record, layer_summary, node_trace_kernels, stream_figures
from tb_ad_layer.trace.tracedata import TraceData

Progress = Callable[[str], None]
# Below this share of mapped layer kernels, the trace does not describe this graph.
MIN_MAPPED_SHARE = 0.5


@dataclass
class TraceResult:
    """Everything the converter stores about a trace.

    ``kernels``: the shown replay/pass, sorted by start, each with ``layer``/``node``/
    ``unmapped_reason``/``stats``. ``graph_launches``: whole-graph blocks (graph-mode captures).
    ``layer_summaries``: layer index -> ``trace_summary``. ``node_kernels``: node name ->
    ``trace_kernels`` records. ``origin_ns``: start of the shown replay/pass, the zero of every
    ``start_us``. ``meta`` keys: source, read_from, format, phase, schema_version, graph_id,
    replays, devices, device, num_streams, mapped_share, kernel_count, method, main_stream,
    graph_trace_mode, graph_node_count, layers_found, anchor, consistency.
    """

    kernels: list[Kernel]
    graph_launches: list[GraphLaunchBlock]
    layer_summaries: dict[int, dict[str, Any]]
    node_kernels: dict[str, list[dict[str, Any]]]
    warnings: list[str]
    meta: dict[str, Any]
    origin_ns: int = 0
    segmentation: Segmentation | None = field(default=None, repr=False)


def _timed(progress: Progress | None, what: str, t0: float) -> float:
    now = time.perf_counter()
    if progress is not None:
        progress(f"{what} in {now - t0:.2f} s")
    return now


def _start_hint(layers: Sequence[LayerNodes], kmap: KernelMap) -> Callable[[Kernel], bool]:
    """Flags kernels that the first kernel-launching main-stream node of a layer could launch."""
    rows = []
    for layer in layers:
        for node in layer.nodes:
            row = kmap.row_for_op(node.op)
            if row is not None and not is_aux_node(node):
                rows.append(row)
                break
    unique = list({id(r): r for r in rows}.values())
    return lambda k: any(r.accepts(k.short, k.name) for r in unique)


def _meta(td: TraceData, sel: Selection, seg: Segmentation | None) -> dict[str, Any]:
    return {
        "source": str(td.source), "format": td.format, "phase": sel.phase, "schema_version": td.schema_version,
        "graph_id": sel.graph_id, "replays": sel.replays, "devices": td.devices, "device": sel.device,
        "num_streams": len({k.stream_key for k in sel.kernels}), "mapped_share": None,
        "kernel_count": len(sel.kernels), "method": sel.method,
        "main_stream": seg.main_stream if seg else None, "graph_trace_mode": td.graph_trace_mode,
        "graph_node_count": sel.graph_node_count,
        "layers_found": len(seg.layers) if seg else 0, "anchor": seg.anchor if seg else None,
        "consistency": round(seg.consistency, 4) if seg else None,
    }


def _select(path: Path | str, phase: str | None, device: int | None, graph_id: int | None,
            progress: Progress | None) -> tuple[TraceData, Selection]:
    t0 = time.perf_counter()
    td = read_trace(path, progress)
    t1 = _timed(progress, f"read {len(td):,} GPU activity rows", t0)
    sel = select(td, phase, device, graph_id)
    _timed(progress, f"picked {sel.phase} {'replay' if sel.phase == 'decode' else 'pass'} "
                     f"({len(sel.kernels):,} kernels, {sel.replays:,} replays, {sel.method})", t1)
    return td, sel


def ingest_trace(path: Path | str, layers: Sequence[LayerNodes] | None, *, phase: str | None = None,
                 device: int | None = None, graph_id: int | None = None, kernel_map: KernelMap | None = None,
                 progress: Progress | None = None) -> TraceResult:
    """Read ``path`` and annotate ``layers`` (graph layers in model order) with its kernels.

    ``phase``: "decode" (a CUDA-graph replay), "prefill" (an eager pass) or None (auto).
    ``layers=None`` segments by repetition only and maps nothing. Raises ``InputError`` for bad
    input, a phase the trace cannot give, or a layer count the trace cannot fit.
    """
    td, sel = _select(path, phase, device, graph_id, progress)
    kmap = kernel_map or load_kernel_map()
    warnings = list(td.warnings) + sel.warnings
    kernels = sel.kernels
    origin = min((k.start_ns for k in kernels), default=0)
    t0 = time.perf_counter()
    seg: Segmentation | None = None
    node_group: dict[str, str] = {}
    mapped_share: float | None = None
    if sel.graph_mode_capture or not kernels:
        for k in kernels:
            k.unmapped_reason = REASON_OUTSIDE
        if layers:
            warnings.append("no per-kernel data to map onto the graph's layers")
    else:
        kinds = [layer.kind for layer in layers] if layers is not None else None
        seg = segment_layers(kernels, kinds, is_layer_start=_start_hint(layers, kmap) if layers else None,
                             layer_fit=LayerFitter(layers, kmap) if layers else None,
                             aligner=GraphAligner(layers, kmap) if layers else None)
        t0 = _timed(progress, f"split into {len(seg.layers)} layers (anchor {seg.anchor}, "
                              f"consistency {seg.consistency:.2f})", t0)
        if layers is not None:
            for layer in layers:
                node_group.update({n.name: n.group for n in layer.nodes})
            mapping = map_kernels(layers, seg, kmap)
            mapped_share = round(mapping.mapped_share, 4)
            _timed(progress, f"mapped {mapped_share:.1%} of layer kernels to nodes", t0)
            if mapped_share < MIN_MAPPED_SHARE:
                # Forced onto the wrong graph, segmentation still finds *some* anchor; storing
                # that would show kernels on the wrong nodes. Refuse and say what was seen.
                kinds_text = ", ".join(f"{n} {k}" for k, n in sorted(
                    {k: kinds.count(k) for k in set(kinds)}.items())) if kinds else "?"
                raise InputError(
                    f"only {mapped_share:.0%} of the trace's layer kernels match the ops of the "
                    f"graph's {len(layers)} layers ({kinds_text}); the trace looks like another "
                    f"model, stage or rank (check --device, --graph-id, --phase, or extend the "
                    f"table with --kernel-map)", path=path)
        else:
            for j, ks in enumerate(seg.layers):
                for k in ks:
                    k.layer = j
            for k in seg.outside:
                k.unmapped_reason = REASON_OUTSIDE
    summaries: dict[int, dict[str, Any]] = {}
    if seg is not None:
        indices = [layer.index for layer in layers] if layers is not None else list(range(len(seg.layers)))
        for idx, ks in zip(indices, seg.layers):
            summaries[idx] = layer_summary(ks, node_group, origin)
    meta = _meta(td, sel, seg)
    meta["source"] = str(path)
    meta["read_from"] = str(td.source)  # the .sqlite export when ``path`` is an .nsys-rep
    meta["mapped_share"] = mapped_share
    return TraceResult(kernels=kernels, graph_launches=sel.launches, layer_summaries=summaries,
                       node_kernels=node_trace_kernels(kernels, origin), warnings=warnings, meta=meta,
                       origin_ns=origin, segmentation=seg)


def kernel_sequences(path: Path | str, layer: int | None = None, *, phase: str | None = None,
                     device: int | None = None, graph_id: int | None = None,
                     layers: Sequence[LayerNodes] | None = None,
                     progress: Progress | None = None) -> dict[str, Any]:
    """Per-layer kernel sequences of one replay/pass, with layers inferred from repetition, or
    taken from ``layers`` (a graph's layers) when given: repetition alone cannot tell how many
    layers a mixed dense/MoE pattern holds.

    Returns ``{"source", "format", "phase", "graph_id", "replays", "device", "main_stream",
    "num_layers", "warnings", "layers": [{"layer", "kind", "kernel_count", "total_duration_us",
    "num_streams", "streams": [{stream, busy_us, ...}], "kernels": [{kernel, name, duration_us,
    replay_duration_us, stream, start_us, stats}]}], "outside": [...]}``; ``layer`` keeps only
    that layer (InputError when the trace has no such layer).
    """
    result = ingest_trace(path, layers, phase=phase, device=device, graph_id=graph_id,
                          progress=progress)
    seg = result.segmentation
    origin = result.origin_ns
    found = seg.layers if seg else []
    if layer is not None and not 0 <= layer < len(found):
        raise InputError(f"layer {layer} is not in the trace: {len(found)} layers found "
                         f"(0..{max(len(found) - 1, 0)})", path=path, field="layer")
    out_layers = []
    for j, ks in enumerate(found):
        if layer is not None and j != layer:
            continue
        ordered = sorted(ks, key=lambda k: (k.start_ns, k.index))
        summary = result.layer_summaries.get(j, {})
        out_layers.append({
            "layer": j, "kind": seg.kinds[j] if seg else None, "kernel_count": len(ordered),
            "total_duration_us": summary.get("total_duration_us", 0.0), "num_streams": summary.get("num_streams", 0),
            "streams": stream_figures(ordered) if ordered else [],
            "kernels": [kernel_record(k, origin) for k in ordered],
        })
    outside = seg.outside if seg else result.kernels
    m = result.meta
    return {
        "source": m["source"], "format": m["format"], "phase": m["phase"], "graph_id": m["graph_id"],
        "replays": m["replays"], "device": m["device"], "main_stream": m["main_stream"],
        "num_layers": len(found), "warnings": result.warnings, "layers": out_layers,
        "outside": [kernel_record(k, origin) for k in sorted(outside, key=lambda k: (k.start_ns, k.index))]
        if layer is None else [],
    }
