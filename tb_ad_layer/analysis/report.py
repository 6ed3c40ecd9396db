"""``tb-ad-layer report``: one step of a run, where its time goes, with findings ranked by the
time at stake. The plugin's ``api/report`` serves the same record."""
from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from tb_ad_layer.analysis.categories import Categories, load_categories
from tb_ad_layer.analysis.gpus import Peak, known_gpus, lookup
from tb_ad_layer.analysis.host import host_side
from tb_ad_layer.analysis.ranks import load_ranks, rank_times, stragglers
from tb_ad_layer.analysis.roofline import node_roofline
from tb_ad_layer.analysis.run import Activity, Node, RunData, load_run
from tb_ad_layer.analysis.sizes import stage_sizes
from tb_ad_layer.analysis.tails import node_tails
from tb_ad_layer.analysis.timeline import (
    critical_path,
    length,
    merge,
    overlap,
    span,
    stream_idle,
    us,
)
from tb_ad_layer.contract.analysis import (
    CategoryTime,
    Finding,
    GroupTime,
    HostSide,
    LayerBreakdown,
    NodeRoofline,
    NodeTail,
    Report,
    StepSummary,
)
from tb_ad_layer.errors import InputError
from tb_ad_layer.store.reader import RunStore

#: Findings listed at most; roofline findings at most (the rest are in ``roofline``).
MAX_FINDINGS = 25
MAX_ROOFLINE_FINDINGS = 10
#: Beyond this many layers with the same finding, it is reported once for the model.
MAX_LAYER_FINDINGS = 3
#: A node achieving less than this share of the peak of its bound resource is a finding.
LOW_PEAK_SHARE = 0.5
_DIM = re.compile(r"([A-Za-z_][A-Za-z_0-9]*)=([0-9]+)")


@dataclass(frozen=True)
class ReportOptions:
    """``--dim`` sizes, ``--gpu`` name and ``--categories`` file."""

    dims: Mapping[str, int] = field(default_factory=dict)
    gpu: str | None = None
    categories: str | Path | None = None


def parse_dims(values: Sequence[str]) -> dict[str, int]:
    """``["s70=1024", "kv_len=4096"]`` -> ``{"s70": 1024, "kv_len": 4096}``.

    Raises:
        InputError: a value that is not NAME=INTEGER.
    """
    out = {}
    for v in values:
        m = _DIM.fullmatch(v.strip())
        if m is None:
            raise InputError(f"--dim {v!r}: expected NAME=N, e.g. s70=1024", field="dim")
        out[m[1]] = int(m[2])
    return out


def _times(acts: Sequence[Activity], key: str) -> dict[str, float]:
    out: dict[str, float] = defaultdict(float)
    for a in acts:
        out[a.group if key == "group" else a.category] += a.typical_ns
    return out


def groups_of(acts: Sequence[Activity]) -> list[GroupTime]:
    """GPU time per group, largest first."""
    return [GroupTime(group=g, gpu_time_us=us(t))
            for g, t in sorted(_times(acts, "group").items(), key=lambda kv: (-kv[1], kv[0]))]


def categories_of(acts: Sequence[Activity]) -> list[CategoryTime]:
    """GPU time per category with its share, largest first."""
    total = sum(a.typical_ns for a in acts)
    return [CategoryTime(category=c, gpu_time_us=us(t), share=round(t / total, 4) if total else 0.0)
            for c, t in sorted(_times(acts, "category").items(), key=lambda kv: (-kv[1], kv[0]))]


def breakdown(layer: int | None, kind: str, acts: Sequence[Activity],
              labels: dict[str, str]) -> LayerBreakdown:
    """One layer's (or the outside work's) figures."""
    lo, hi = span(acts)
    return LayerBreakdown(
        layer=layer, kind=kind, gpu_time_us=us(sum(a.typical_ns for a in acts)),
        memory_us=us(sum(a.typical_ns for a in acts if a.memory)), span_us=us(hi - lo),
        groups=groups_of(acts), categories=categories_of(acts), streams=stream_idle(acts, labels),
        overlap=overlap(acts), critical_path=critical_path(acts))


def _peak(data: RunData, gpu: str | None) -> Peak:
    if gpu is not None:
        peak = lookup(gpu, "option")
        if peak.entry is None:
            raise InputError(f"--gpu {gpu!r} is not in the GPU table (known: "
                             f"{', '.join(known_gpus())})", field="gpu")
        return peak
    devices = {int(m[1]) for key in data.stream_labels for m in [re.search(r"/dev(\d+)/", key)]
               if m is not None}
    row = next((g for g in data.gpus if g.device in devices), data.gpus[0] if data.gpus else None)
    return lookup(row.name, "trace") if row is not None else Peak()


def _world(data: RunData, dims: Mapping[str, int]) -> tuple[int | None, str]:
    """The ranks a collective spans when its shapes do not say: ``--dim world_size=N``, else
    the GPUs a multi-GPU trace records; None (and why) otherwise."""
    if "world_size" in dims:
        return dims["world_size"], "--dim world_size"
    if data.trace_devices > 1:
        return data.trace_devices, f"the trace's {data.trace_devices} GPUs"
    if data.trace_devices == 1:
        return None, "the trace records one GPU"
    return None, "the run has no trace"


def _where(layer: int | None) -> str:
    return f"layer {layer}" if layer is not None else "outside the layers"


def findings(layers: Sequence[LayerBreakdown], report_tails: Sequence[NodeTail],
             roofline: Sequence[NodeRoofline], host: HostSide) -> list[Finding]:
    """Everything worth a look, largest time at stake first."""
    out: list[Finding] = []
    for t in report_tails:
        if t.flagged:
            out.append(Finding(kind="tail", layer=t.layer, node=t.node,
                               time_at_stake_us=round(t.p99_us - t.p50_us, 3),
                               message=f"{t.node} ({_where(t.layer)}): p99 {t.p99_us:g} µs is "
                                       f"{t.p99_us / t.p50_us if t.p50_us else 0:.1f}x its median "
                                       f"{t.p50_us:g} µs over {t.replays} replays"))
    exposed = sorted((b for b in layers if b.overlap.exposed_us > 0),
                     key=lambda b: -b.overlap.exposed_us)
    if len(exposed) > MAX_LAYER_FINDINGS:
        # The same finding in every layer is one finding about the model, not sixty.
        total = round(sum(b.overlap.exposed_us for b in exposed), 3)
        comm = sum(b.overlap.communication_us for b in exposed)
        worst = ", ".join(f"{b.layer}: {b.overlap.exposed_us:g} µs"
                          for b in exposed[:MAX_LAYER_FINDINGS])
        out.append(Finding(kind="exposed_communication", layer=None, node=None,
                           time_at_stake_us=total,
                           message=f"{len(exposed)} layers: {total:g} µs of {comm:g} µs "
                                   f"communication is not hidden behind compute (largest: "
                                   f"layer {worst})"))
        exposed = []
    for b in exposed:
        out.append(Finding(kind="exposed_communication", layer=b.layer, node=None,
                           time_at_stake_us=b.overlap.exposed_us,
                           message=f"{_where(b.layer)}: {b.overlap.exposed_us:g} µs of "
                                   f"{b.overlap.communication_us:g} µs communication is not "
                                   f"hidden behind compute"))
    unexplained = 0.0
    for g in host.gaps:
        if g.cause == "unexplained":
            unexplained += g.duration_us
            continue
        what = "a host synchronisation" if g.cause == "sync" else "a launch that arrived late"
        out.append(Finding(kind="host_gap", layer=g.layer, node=g.node,
                           time_at_stake_us=g.duration_us,
                           message=f"GPU idle {g.duration_us:g} µs at {g.start_us:g} µs, waiting "
                                   f"for {what} ({g.call})"
                                   + (f" before {g.node}" if g.node else "")))
    if unexplained > 0:
        out.append(Finding(kind="idle", layer=None, node=None,
                           time_at_stake_us=round(unexplained, 3),
                           message=f"GPU idle {unexplained:g} µs in the step that no recorded "
                                   f"host call explains"
                                   + ("" if host.runtime_recorded else
                                      " (the trace holds no CUDA runtime rows)")))
    for c in host.copies or []:
        if c.pageable:
            out.append(Finding(kind="pageable_copy", layer=None, node=None,
                               time_at_stake_us=c.time_us,
                               message=f"{c.count} {c.direction} cop{'y' if c.count == 1 else 'ies'} "
                                       f"({c.src_kind} -> {c.dst_kind}) from pageable memory: "
                                       f"{c.time_us:g} µs, synchronous and staged; pin the host "
                                       f"buffer"))
    slow = [r for r in roofline if r.bound is not None and r.peak_share is not None
            and r.peak_share < LOW_PEAK_SHARE and r.time_us >= 1.0]
    slow.sort(key=lambda r: -(r.time_us * (1 - (r.peak_share or 0))))
    for r in slow[:MAX_ROOFLINE_FINDINGS]:
        share = r.peak_share or 0.0
        rate = f"{r.achieved_tflops:g} TFLOP/s" if r.bound == "compute" else \
            f"{r.achieved_tbs:g} TB/s"
        out.append(Finding(kind=f"{r.bound}_bound", layer=r.layer, node=r.node,
                           time_at_stake_us=round(r.time_us * (1 - share), 3),
                           message=f"{r.node} ({_where(r.layer)}, {r.time_us:g} µs) is "
                                   f"{r.bound}-bound at {rate}, {share:.0%} of the GPU's peak"))
    out.sort(key=lambda f: (-f.time_at_stake_us, f.kind,
                            f.layer if f.layer is not None else -1, f.node or ""))
    return out[:MAX_FINDINGS]


def build_report(data: RunData, options: ReportOptions) -> Report:
    """The report of a loaded run."""
    acts = data.activities
    by_layer: dict[int | None, list[Activity]] = defaultdict(list)
    for a in acts:
        by_layer[a.k.layer].append(a)
    labels = data.stream_labels
    layers = [breakdown(layer, data.kinds.get(layer, "other"), by_layer.get(layer, []), labels)
              for layer in sorted(set(data.kinds) | {k for k in by_layer if k is not None})]
    outside = breakdown(None, "outside", by_layer[None], labels) if by_layer.get(None) else None
    lo, hi = span(acts)
    busy = length(merge((a.k.start_ns, a.k.end_ns) for a in acts))
    step = StepSummary(gpu_time_us=us(sum(a.typical_ns for a in acts)),
                       memory_us=us(sum(a.typical_ns for a in acts if a.memory)),
                       span_us=us(hi - lo), busy_us=us(busy), idle_us=us(hi - lo - busy),
                       kernel_count=sum(1 for a in acts if not a.memory),
                       memory_op_count=sum(1 for a in acts if a.memory), replays=data.replays)
    tails = node_tails(acts)
    peak = _peak(data, options.gpu)
    node_time: dict[tuple[int | None, str], float] = defaultdict(float)
    node_of: dict[tuple[int | None, str], Node] = {}
    for a in acts:
        if a.node is not None:
            key = (a.node.layer, a.node.id)
            node_time[key] += a.typical_ns
            node_of[key] = a.node
    sizes = stage_sizes(options.dims, data.trace_dims)
    world, world_from = _world(data, options.dims)
    values = sizes.values
    roofline = [node_roofline(node_of[key], t, values, peak, sizes.node_sizes(node_of[key]),
                              world, world_from)
                for key, t in node_time.items() if t > 0]
    roofline.sort(key=lambda r: (-r.time_us, r.layer if r.layer is not None else -1, r.node))
    host = host_side(data, acts)
    notes = list(data.notes)
    if peak.tbs is None:
        notes.append("no peak for the GPU" + (f" {peak.name!r}" if peak.name else
                                              " (the trace names none)")
                     + ": pass --gpu NAME for roofline shares and bounds")
    if data.host_calls is None:
        notes.append("the trace holds no CUDA runtime rows: idle gaps are not explained")
    if data.memcpy is None:
        notes.append("the trace holds no copy details: copies are not split by direction")
    return Report(run=data.run, stage=data.stage, phase=data.phase, step=step,
                  categories=categories_of(acts), groups=groups_of(acts),
                  streams=stream_idle(acts, labels), layers=layers, outside=outside, tails=tails,
                  gpu=peak.record(), roofline=roofline, dims=dict(sorted(options.dims.items())),
                  trace_dims=sizes.records(),
                  host=host, findings=findings(layers, tails, roofline, host), notes=notes,
                  ranks=[], stragglers=[])


def report_for_store(store: RunStore, options: ReportOptions,
                     categories: Categories | None = None) -> Report:
    """Load ``store`` and build its report (the one function the CLI and the plugin call): the
    first rank's figures, and for a multi-GPU run every rank's GPU time and the stragglers
    (:mod:`tb_ad_layer.analysis.ranks`)."""
    cats = categories if categories is not None else load_categories(options.categories)
    if len(store.ranks()) < 2:
        return build_report(load_run(store, cats), options)
    runs = load_ranks(store, cats)
    report = build_report(runs[store.default_rank()], options)
    times = rank_times(store, runs)
    return msgspec.structs.replace(report, ranks=times, stragglers=stragglers(times))
