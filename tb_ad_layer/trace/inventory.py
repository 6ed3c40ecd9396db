"""``tb-ad-layer inspect``: what a trace holds, before anything is chosen, and what would be chosen.

The inventory counts everything per device and stream (kernels apart from copies and fills), the
CUDA graphs with their nodes, launches and kernels per launch, the NVTX ranges and profiler steps,
and names the phase, graph, replay or pass and step that ``convert`` would pick, and why.
"""
from __future__ import annotations

from typing import Literal, cast

from tb_ad_layer.contract.cli import InspectDevice, InspectGraph, InspectPick, InspectReport, InspectStream
from tb_ad_layer.errors import InputError
from tb_ad_layer.options import AUTO_CHOICE, Phase, TraceChoice
from tb_ad_layer.trace.activity import distinct_nodes, graphs, nvtx_summary, stream_counts
from tb_ad_layer.trace.replay import select
from tb_ad_layer.trace.steps import profiler_steps
from tb_ad_layer.trace.tracedb import TraceDB

CaptureMode = Literal["graph", "node"]


def capture_mode(db: TraceDB) -> CaptureMode | None:
    """``graph`` or ``node`` for nsys captures that record ``--cuda-graph-trace``, else None."""
    mode = (db.graph_trace_mode or "").strip().lower()
    return cast(CaptureMode, mode) if mode in ("graph", "node") else None


def inventory(db: TraceDB, choice: TraceChoice = AUTO_CHOICE) -> InspectReport:
    """The inventory (``inspect --json``, see docs/API.md), with what ``choice`` picks."""
    devices: dict[int, list[InspectStream]] = {}
    nsys = db.format == "nsys-sqlite"
    for sc in stream_counts(db):
        s = sc.stream
        devices.setdefault(s.device, []).append(InspectStream(
            stream=s.stream, process=s.pid if nsys else None, context=s.context,
            kernels=sc.kernels, memcpy=sc.memcpy, memset=sc.memset))
    out_graphs: list[InspectGraph] = []
    exact = distinct_nodes(db)
    for g in graphs(db):
        by_size: dict[int, int] = {}
        for launch in g.launches:
            by_size[launch.kernels] = by_size.get(launch.kernels, 0) + 1
        for size in sorted(by_size, reverse=True):
            nodes = exact.get((g.device, g.graph_id), g.nodes) if g.graph_id is not None else None
            out_graphs.append(InspectGraph(graph_id=g.graph_id,
                                           nodes=nodes if nodes is not None else size,
                                           launches=by_size[size], kernels_per_launch=size))
    blocks: dict[int | None, int] = {}
    for b in db.graph_launches:
        blocks[b.graph_id] = blocks.get(b.graph_id, 0) + 1
    known = {g.graph_id for g in out_graphs}
    for gid in sorted(blocks, key=lambda x: -1 if x is None else x):
        if gid not in known or gid is None:
            out_graphs.append(InspectGraph(graph_id=gid, nodes=0, launches=blocks[gid],
                                           kernels_per_launch=0))
    total, _ = nvtx_summary(db)
    return InspectReport(
        format=db.format, schema=db.schema_version, capture_mode=capture_mode(db),
        devices=[InspectDevice(device=d, streams=devices[d]) for d in sorted(devices)],
        graphs=out_graphs, nvtx_ranges=total, profiler_steps=len(profiler_steps(db)),
        pick=pick(db, choice))


def pick(db: TraceDB, choice: TraceChoice = AUTO_CHOICE) -> InspectPick:
    """What ``convert`` would analyse: phase, device, graph, replay or pass, step, and why; or
    ``error`` when nothing can be picked."""
    try:
        sel = select(db, choice)
    except InputError as err:
        return InspectPick(phase=None, device=None, graph_id=None, replay=None, pass_=None,
                           step=None, replays=0, kernels=0, method=None, reason=None,
                           error=err.message)
    kernels = sum(1 for k in sel.kernels if k.kind == "kernel")
    return InspectPick(phase=cast(Phase, sel.phase), device=sel.device, graph_id=sel.graph_id,
                       replay=sel.correlation if sel.phase == "decode" else None,
                       pass_=sel.method if sel.phase == "prefill" else None,
                       step=sel.step.number if sel.step is not None else None,
                       replays=sel.replays, kernels=kernels, method=sel.method,
                       reason=sel.reason, error=None)


def inventory_text(db: TraceDB, inv: InspectReport) -> str:
    """The inventory as lines for a terminal."""
    lines = [f"{db.source.name}: {inv.format}, schema {inv.schema or 'unknown'}, "
             f"CUDA graph capture mode {inv.capture_mode or 'not recorded'}"]
    for dev in inv.devices:
        lines.append(f"device {dev.device}:")
        for s in dev.streams:
            who = [f"pid {s.process}"] if s.process is not None else []
            who.append(f"context {s.context}")
            lines.append(f"  stream {s.stream} ({', '.join(who)}): {s.kernels:,} kernels, "
                         f"{s.memcpy:,} memcpy, {s.memset:,} memset")
    if inv.graphs:
        lines.append("CUDA graphs:")
        for g in inv.graphs:
            gid = g.graph_id if g.graph_id is not None else "(no id, by launch correlation)"
            lines.append(f"  graph {gid}: {g.nodes:,} nodes, {g.launches:,} launches of "
                         f"{g.kernels_per_launch:,} kernels")
    else:
        lines.append("CUDA graphs: none with kernels")
    total, top = nvtx_summary(db)
    most = ", ".join(f"{t!r} x{n:,}" for t, n in top)
    lines.append(f"NVTX ranges and annotations: {total:,}" + (f" (most frequent: {most})" if most else ""))
    steps = profiler_steps(db)
    if steps:
        listed = ", ".join(f"{s.number}{'' if s.complete else ' (incomplete)'}" for s in steps[:12])
        more = f", ... ({len(steps)} in all)" if len(steps) > 12 else ""
        lines.append(f"profiler steps: {listed}{more}")
    else:
        lines.append("profiler steps: none")
    p = inv.pick
    if p.error:
        lines.append(f"convert would pick: nothing ({p.error})")
    else:
        what = (
            f"replay {p.replay} of graph {p.graph_id}"
            if p.phase == "decode"
            else f"pass ({p.pass_})"
        )
        lines.append(
            f"convert would pick: {p.phase} {what} on device {p.device}, {p.kernels:,} kernels; "
            f"{p.reason}"
        )
    return "\n".join(lines) + "\n"
