"""Entry points used by the converter and the ``tb-ad-layer kernels`` command.

``ingest_trace``: read a trace, choose one replay (decode) or forward pass (prefill), split it
into layers (the graph's when given), map kernels to FX nodes, and summarise.
``kernel_sequences``: the per-layer kernel sequences of a trace (seed 000 phase 5), with the
layers inferred and a stated confidence when no graph is given.
"""
from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from tb_ad_layer.contract.api import StreamTotal, TraceInfo
from tb_ad_layer.contract.cli import KernelSequences, LayerSequence, SequenceSegmentation
from tb_ad_layer.contract.document import NodeKernel, TraceSummary
from tb_ad_layer.errors import InputError
from tb_ad_layer.options import AUTO_CHOICE, TraceChoice
from tb_ad_layer.trace.activity import stream_counts
from tb_ad_layer.trace.annotations import annotated_layers
from tb_ad_layer.trace.graph_nodes import KernelMatcher, LayerNodes, ModelNodes
from tb_ad_layer.trace.host import HostActivity, read_host
from tb_ad_layer.trace.kernel import KIND_KERNEL, KIND_MEMCPY, KIND_MEMSET, GraphLaunchBlock, Kernel
from tb_ad_layer.trace.kernel_map import KernelMap, load_kernel_map
from tb_ad_layer.trace.mapping import REASON_OUTSIDE, map_kernels
from tb_ad_layer.trace.no_layers import no_layers_reason
from tb_ad_layer.trace.reader import read_trace
from tb_ad_layer.trace.replay import Selection, select
from tb_ad_layer.trace.segment import Segmentation, segment_layers
from tb_ad_layer.trace.shapes import LaunchOp, launch_ops
from tb_ad_layer.trace.summary import layer_summary, node_trace_kernels, sequence_kernel, stream_figures
from tb_ad_layer.trace.tracedb import TraceDB

Progress = Callable[[str], None]
# Below this share of mapped layer kernels, the trace does not describe this graph.
MIN_MAPPED_SHARE = 0.5
#: Inferred layers below this confidence are reported as no structure (exit status 2)...
MIN_INFERRED_CONFIDENCE = 0.5
#: ...and below this one they are shown with a low-confidence warning: repetition seen only two
#: or three times, layer kinds that occur once, or layers that do not open with a norm.
CONFIDENT = 0.9
_STREAM_LINES = 12
#: Unmapped kernels of the activities outside every layer kept in the run's trace record.
OUTSIDE_UNMAPPED_SHOWN = 20


@dataclass
class TraceResult:
    """Everything the converter stores about a trace.

    ``kernels``: the shown replay/pass (kernels, copies and fills, each with its ``kind``) in
    replay order, each with ``layer``/``node``/``unmapped_reason``/``stats``.
    ``graph_launches``: whole-graph blocks (graph-mode captures). ``layer_summaries``: layer index
    -> ``trace_summary``. ``outside_summary``: the same figures for the activities outside every
    layer (embedding, final norm, lm head, sampling...), None without a segmentation.
    ``node_kernels``: node name -> its ``kernels`` records (nodes outside layers included).
    ``origin_ns``: start of the shown replay/pass, the zero of every ``start_us``. ``info``: the
    run's ``trace`` record, as stored. ``no_layers``: why no layer was found, None when some
    were. Every record is the contract's, as the run store keeps it.
    """

    kernels: list[Kernel]
    graph_launches: list[GraphLaunchBlock]
    layer_summaries: dict[int, TraceSummary]
    node_kernels: dict[str, list[NodeKernel]]
    warnings: list[str]
    info: TraceInfo
    origin_ns: int = 0
    segmentation: Segmentation | None = field(default=None, repr=False)
    outside_summary: TraceSummary | None = None
    no_layers: str | None = None
    #: Runtime calls, synchronisations, copy details and GPU names around the shown replay/pass.
    host: HostActivity | None = field(default=None, repr=False)
    #: Correlation id -> the ops (with their recorded input dims) around the call that launched
    #: the mapped kernels of that id, innermost first; None when the trace recorded no input
    #: shapes (:func:`tb_ad_layer.trace.shapes.launch_ops`).
    launch_ops: dict[int, tuple[LaunchOp, ...]] | None = field(default=None, repr=False)


def _timed(progress: Progress | None, what: str, t0: float) -> float:
    now = time.perf_counter()
    if progress is not None:
        progress(f"{what} in {now - t0:.2f} s")
    return now


def stream_totals(db: TraceDB) -> list[StreamTotal]:
    """Per device and stream: kernels, memcpy and memset counts (``inspect`` counts the same)."""
    return [StreamTotal(device=sc.stream.device, stream=sc.stream.stream, process=sc.stream.pid,
                        kernels=sc.kernels, memcpy=sc.memcpy, memset=sc.memset)
            for sc in stream_counts(db)]


def _report_totals(db: TraceDB, progress: Progress | None) -> None:
    if progress is None:
        return
    totals = stream_totals(db)
    kernels = sum(t.kernels for t in totals)
    copies = sum(t.memcpy for t in totals)
    fills = sum(t.memset for t in totals)
    progress(f"{db.source.name}: {kernels:,} kernels, {copies:,} memcpy, {fills:,} memset on "
             f"{len({t.device for t in totals})} device(s), {len(totals)} stream(s)")
    ranked = sorted(totals, key=lambda t: (-t.kernels, t.device, t.stream))
    for t in ranked[:_STREAM_LINES]:
        progress(f"  device {t.device} stream {t.stream}: {t.kernels:,} kernels, "
                 f"{t.memcpy:,} memcpy, {t.memset:,} memset")
    if len(ranked) > _STREAM_LINES:
        rest = ranked[_STREAM_LINES:]
        progress(f"  ... {len(rest)} more stream(s) with {sum(t.kernels for t in rest):,} kernels")


@dataclass(frozen=True, slots=True)
class _Outside:
    """What was found of the activities outside every layer."""

    time_us: float | None = None
    kernel_count: int | None = None
    mapped_share: float | None = None
    summary: TraceSummary | None = None


def _info(path: Path | str, db: TraceDB, sel: Selection, seg: Segmentation | None,
          mapped_share: float | None, outside: _Outside, warnings: list[str]) -> TraceInfo:
    """The run's ``trace`` record: what was read, picked, found and mapped."""
    kinds = [k.kind for k in sel.kernels]
    totals = stream_totals(db)
    summary = outside.summary
    if summary is not None:
        summary = msgspec.structs.replace(summary,
                                          unmapped=summary.unmapped[:OUTSIDE_UNMAPPED_SHOWN])
    return TraceInfo(
        source=str(path), read_from=str(db.source), format=db.format, phase=sel.phase,
        schema_version=db.schema_version, graph_trace_mode=db.graph_trace_mode,
        graph_id=sel.graph_id, graph_node_count=sel.graph_node_count, replays=sel.replays,
        devices=sorted({t.device for t in totals}), device=sel.device,
        step=sel.step.number if sel.step is not None else None, method=sel.method,
        pick=sel.reason, num_streams=len({k.stream_key for k in sel.kernels}),
        kernel_count=kinds.count(KIND_KERNEL), memcpy_count=kinds.count(KIND_MEMCPY),
        memset_count=kinds.count(KIND_MEMSET), stream_totals=totals,
        layers_found=len(seg.layers) if seg else 0, segmentation=seg.method if seg else None,
        confidence=seg.confidence if seg else None,
        segmentation_detail=seg.detail if seg else None, mapped_share=mapped_share,
        outside_time_us=outside.time_us, outside_kernel_count=outside.kernel_count,
        outside_mapped_share=outside.mapped_share, warnings=list(warnings),
        unmapped=dict(Counter(k.unmapped_reason for k in sel.kernels
                              if k.unmapped_reason).most_common(10)),
        graph_launch_blocks=len(sel.launches), outside_summary=summary)


def _expected(layers: Sequence[LayerNodes] | ModelNodes | None) -> ModelNodes | None:
    if layers is None or isinstance(layers, ModelNodes):
        return layers
    return ModelNodes(list(layers))


def ingest_trace(
    path: Path | str,
    layers: Sequence[LayerNodes] | ModelNodes | None,
    *,
    choice: TraceChoice = AUTO_CHOICE,
    kernel_map: KernelMap | None = None,
    progress: Progress | None = None,
) -> TraceResult:
    """Read ``path`` and annotate the graph's layers (``layers``: the layers in model order, or a
    ``ModelNodes`` with the nodes outside them too) with its kernels.

    ``choice``: the phase, device, graph and profiler step to use (what it leaves None is
    detected, as ``tb-ad-layer inspect`` explains). ``layers=None`` finds
    layers from the trace alone and maps nothing. Raises ``InputError`` for bad input, a phase,
    device, graph or step the trace does not hold, a graph the trace cannot fit, or a graph with
    layers and a trace in which no layer is found (a ``--cuda-graph-trace=graph`` capture, no
    kernels: the message says which). Without ``layers``, a trace without layers is a result
    whose ``no_layers`` says why.
    """
    t0 = time.perf_counter()
    db = read_trace(path, progress)
    try:
        _report_totals(db, progress)
        t1 = _timed(progress, "counted activities per stream", t0)
        sel = select(db, choice)
        if progress is not None:
            kernel_count = sum(1 for k in sel.kernels if k.kind == KIND_KERNEL)
            what = "replay" if sel.phase == "decode" else "pass"
            progress(f"picked {sel.phase} {what}: {kernel_count:,} kernels on device {sel.device}; "
                     f"{sel.reason}")
        t1 = _timed(progress, "picked and aggregated", t1)
        expected = _expected(layers)
        kmap = kernel_map or load_kernel_map()
        matcher = KernelMatcher(kmap)
        warnings = list(db.warnings) + sel.warnings
        if db.unknown_names:
            ids = ", ".join(str(n) for n in sorted(db.unknown_names, key=str)[:5])
            warnings.append(f"{db.source.name}: {len(db.unknown_names)} kernel name id(s) point nowhere in "
                            f"StringIds ({ids}); those kernels are shown as <unknown kernel name #id>")
        kernels = sel.kernels
        origin = min((k.start_ns for k in kernels), default=0)
        seg: Segmentation | None = None
        node_group: dict[str, str] = {}
        mapped_share: float | None = None
        outside_summary: TraceSummary | None = None
        if sel.graph_mode_capture or not kernels:
            for k in kernels:
                k.unmapped_reason = REASON_OUTSIDE
        else:
            found = annotated_layers(db, kernels)
            try:
                seg = segment_layers(kernels, expected, matcher, found, warnings)
            except InputError as err:
                if err.path is not None:
                    raise
                # Segmentation sees kernels, not files: the message names the trace here.
                raise InputError(err.message, path=path, field=err.field) from None
            t1 = _timed(progress, f"split into {len(seg.layers)} layers by {seg.method} ({seg.detail})", t1)
            if expected is not None:
                for layer in expected.layers:
                    node_group.update({n.name: n.group for n in layer.nodes})
                node_group.update({n.name: n.group for n in list(expected.before) + list(expected.after)})
                mapping = map_kernels(expected, seg, matcher)
                mapped_share = round(mapping.mapped_share, 4)
                _timed(progress, f"mapped {mapped_share:.1%} of layer kernels to nodes", t1)
                if mapped_share < MIN_MAPPED_SHARE:
                    # Forced onto the wrong graph, segmentation still finds *some* cut; storing
                    # that would show kernels on the wrong nodes. Refuse and say what was seen.
                    kinds = expected.kinds
                    kinds_text = ", ".join(f"{kinds.count(k)} {k}" for k in sorted(set(kinds)))
                    raise InputError(
                        f"only {mapped_share:.0%} of the trace's layer kernels match the ops of the "
                        f"graph's {len(expected.layers)} layers ({kinds_text}); the trace looks like another "
                        f"model, stage or rank (check --device, --graph-id, --phase, or extend the "
                        f"table with --kernel-map)", path=path)
            else:
                for j, ks in enumerate(seg.layers):
                    for k in ks:
                        k.layer = j
                for k in seg.outside:
                    k.unmapped_reason = REASON_OUTSIDE
            outside_summary = layer_summary(seg.outside, node_group, origin)
        no_layers = no_layers_reason(sel, seg, MIN_INFERRED_CONFIDENCE)
        if no_layers is not None and expected is not None and expected.layers:
            # Stored, a result without the graph's layers would read as an answer.
            raise InputError(no_layers, path=path, field="layers")
        summaries: dict[int, TraceSummary] = {}
        if seg is not None:
            indices = [layer.index for layer in expected.layers] if expected is not None \
                else list(range(len(seg.layers)))
            for idx, ks in zip(indices, seg.layers, strict=True):
                summaries[idx] = layer_summary(ks, node_group, origin)
        outside = _Outside()
        if outside_summary is not None and seg is not None:
            outside_kernels = [k for k in seg.outside if k.kind == KIND_KERNEL]
            share = None
            if expected is not None and outside_kernels:
                share = round(sum(1 for k in outside_kernels if k.node is not None)
                              / len(outside_kernels), 4)
            outside = _Outside(time_us=outside_summary.total_duration_us,
                               kernel_count=len(outside_kernels), mapped_share=share,
                               summary=outside_summary)
        return TraceResult(kernels=kernels, graph_launches=sel.launches, layer_summaries=summaries,
                           node_kernels=node_trace_kernels(kernels, origin), warnings=warnings,
                           info=_info(path, db, sel, seg, mapped_share, outside, warnings),
                           origin_ns=origin, segmentation=seg, outside_summary=outside_summary,
                           no_layers=no_layers, host=read_host(db, kernels),
                           launch_ops=launch_ops(db, kernels) if expected is not None else None)
    finally:
        db.close()


def kernel_sequences(path: Path | str, layer: int | None = None, *,
                     choice: TraceChoice = AUTO_CHOICE,
                     layers: Sequence[LayerNodes] | ModelNodes | None = None,
                     progress: Progress | None = None) -> KernelSequences:
    """Per-layer kernel sequences of one replay/pass: the graph's layers when ``layers`` is given,
    else the trace's own layer ranges, else layers inferred from repetition with their
    confidence.

    Returns the ``tb-ad-layer kernels`` record (:class:`~tb_ad_layer.contract.cli.KernelSequences`);
    ``layer`` keeps only that layer. Raises ``InputError`` when the trace has no such layer, or
    no layer at all (the message says why).
    """
    result = ingest_trace(path, layers, choice=choice, progress=progress)
    seg = result.segmentation
    origin = result.origin_ns
    found = seg.layers if seg else []
    if result.no_layers is not None:
        raise InputError(result.no_layers, path=path, field="layers")
    warnings = list(result.warnings)
    if layers is None and seg is not None and seg.inferred and found and seg.confidence < CONFIDENT:
        warnings.append(
            f"low confidence ({seg.confidence:.2f}) in the {len(found)} layers inferred from "
            f"repetition (a pattern seen two or three times can be pairs or halves of layers); pass "
            f"--dump with the model's graph dump to cut the trace by the graph's layers"
        )
    if layer is not None and not 0 <= layer < len(found):
        raise InputError(f"layer {layer} is not in the trace: {len(found)} layers found "
                         f"(0..{max(len(found) - 1, 0)})", path=path, field="layer")
    indices = sorted(result.layer_summaries) if layers is not None else list(range(len(found)))
    out_layers = []
    for j, ks in enumerate(found):
        if layer is not None and j != layer:
            continue
        summary = result.layer_summaries.get(indices[j] if j < len(indices) else j)
        kinds = [k.kind for k in ks]
        out_layers.append(LayerSequence(
            layer=indices[j] if j < len(indices) else j,
            kind=seg.kinds[j] if seg and j < len(seg.kinds) else None,
            kernel_count=kinds.count(KIND_KERNEL),
            memcpy_count=kinds.count(KIND_MEMCPY),
            memset_count=kinds.count(KIND_MEMSET),
            total_duration_us=summary.total_duration_us if summary is not None else 0.0,
            num_streams=summary.num_streams if summary is not None else 0,
            streams=stream_figures(ks) if ks else [],
            kernels=[sequence_kernel(k, origin) for k in ks]))
    outside = seg.outside if seg else result.kernels
    info = result.info
    return KernelSequences(
        source=info.source, format=info.format, phase=info.phase, graph_id=info.graph_id,
        replays=info.replays, device=info.device, step=info.step, pick=info.pick,
        num_layers=len(found),
        segmentation=SequenceSegmentation(method=seg.method if seg else None,
                                          confidence=seg.confidence if seg else None,
                                          detail=seg.detail if seg else None,
                                          inferred=seg.inferred if seg else None),
        warnings=warnings, layers=out_layers,
        outside=[sequence_kernel(k, origin) for k in outside] if layer is None else [])

