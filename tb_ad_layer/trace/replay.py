"""Choose the kernels to show: one CUDA-graph replay (decode) or one eager forward pass (prefill).

Decode: the busiest graph (most distinct kernel nodes, or the ``graph_id`` asked for) is replayed
many times. One replay is the set of kernels sharing one ``cudaGraphLaunch`` correlation id; a
replay is complete when it runs every distinct graph node once. Every complete replay's durations
are aggregated per graph node (per position in the replay when the trace has no node ids) into
``ReplayStats``; the aggregation runs inside SQLite, so millions of rows never become Python
objects. The replay shown is the complete one whose total kernel time is closest to the median,
taken from the chosen profiler step when the trace has steps.

Prefill: kernels outside graphs, within the chosen profiler step (the last complete one unless
``step`` says otherwise); ``passes`` locates one forward pass among them.
"""
from __future__ import annotations

import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from tb_ad_layer.errors import InputError
from tb_ad_layer.options import AUTO_CHOICE, PHASES, TraceChoice
from tb_ad_layer.trace.activity import GraphInfo, Launch, device_kernel_counts, graphs
from tb_ad_layer.trace.kernel import KIND_KERNEL, GraphLaunchBlock, Kernel, ReplayStats
from tb_ad_layer.trace.nsys_sqlite import RECAPTURE_HINT
from tb_ad_layer.trace.passes import pass_by_gaps, pass_by_nvtx
from tb_ad_layer.trace.steps import Step, choose_step
from tb_ad_layer.trace.tracedb import TraceDB

#: Share of the eager kernels a forward-pass range holds: most of them, or within one profiler
#: step of training, where backward and optimizer run too, a good part.
PASS_COVERAGE = 0.5
STEP_PASS_COVERAGE = 0.15


@dataclass
class Selection:
    """The chosen kernels (sorted by start, then graph node id) and how they were found.

    ``replays`` counts the complete replays aggregated into the stats (1 for a prefill pass);
    ``method`` says how the replay or pass was cut (``graph-node-ids``, ``launch-correlation``,
    ``nvtx:<text>``, ``profiler-step``, ``idle-gaps``, ``whole-trace``); ``reason`` says in words
    why this one was picked; ``step`` is the profiler step it comes from, if any.
    """

    kernels: list[Kernel]
    phase: str
    device: int
    graph_id: int | None = None
    replays: int = 1
    graph_node_count: int | None = None
    launches: list[GraphLaunchBlock] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    method: str = ""
    reason: str = ""
    graph_mode_capture: bool = False
    step: Step | None = None
    correlation: int | None = None


def _stats(ordered: Sequence[int]) -> ReplayStats:
    n = len(ordered)
    median = ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2
    # Nearest-rank percentiles: the tails the analysis reports (tb_ad_layer.analysis).
    p90 = ordered[max(0, math.ceil(0.9 * n) - 1)]
    p99 = ordered[max(0, math.ceil(0.99 * n) - 1)]
    return ReplayStats(count=n, median_ns=float(median), min_ns=ordered[0], max_ns=ordered[-1],
                       p90_ns=float(p90), p99_ns=float(p99))


def choose_device(db: TraceDB, device: int | None) -> int:
    """``device`` if the trace has it, else the device with the most activity rows."""
    per_device = device_kernel_counts(db)
    if device is not None:
        if device not in per_device:
            raise InputError(
                f"device {device} is not in the trace (devices: "
                f"{', '.join(map(str, sorted(per_device))) or 'none'})",
                path=db.source,
                field="device",
            )
        return device
    if not per_device:
        return 0
    return max(sorted(per_device), key=lambda d: per_device[d])


def _representative(launches: Sequence[Launch], step: Step | None, launch_ns: dict[int, int]) -> Launch:
    """The launch whose total kernel time is closest to the median of all (earliest on ties), so
    that one slow warm-up replay is never the one shown; from ``step`` when it holds one."""
    med = statistics.median(launch.busy_ns for launch in launches)
    pool = list(launches)
    if step is not None:
        inside = [x for x in launches if step.start_ns <= launch_ns.get(x.correlation, -1) <= step.end_ns]
        pool = inside or pool
    return min(pool, key=lambda x: (abs(x.busy_ns - med), x.start_ns))


def _launch_times(db: TraceDB, correlations: Sequence[int]) -> dict[int, int]:
    if not correlations:
        return {}
    out: dict[int, int] = {}
    wanted = set(correlations)
    for c, s in db.rows("SELECT c, min(s) FROM rt WHERE c IN (SELECT c FROM temp.graph_launch) GROUP BY c"):
        if c in wanted:
            out[c] = s
    return out


def _decode_by_node_ids(db: TraceDB, graph: GraphInfo, sel: Selection) -> Selection:
    if any(launch.correlation == -1 for launch in graph.launches):
        sel.graph_id = graph.graph_id
        sel.graph_node_count = graph.nodes
        return _decode_by_time(db, graph, sel)
    # One scan gives the graph's distinct nodes and, per node, every launch's duration.
    per_node = db.rows("SELECT n, json_group_array(c), json_group_array(max(e - s, 0)) FROM k "
                       "WHERE dev = ? AND g = ? GROUP BY n", (sel.device, graph.graph_id))
    size = sum(1 for n, _, _ in per_node if n is not None)
    sel.graph_id = graph.graph_id
    sel.graph_node_count = size
    complete = [x for x in graph.launches if x.kernels == size]
    if not complete:
        biggest = max(graph.launches, key=lambda x: x.kernels)
        sel.warnings.append(
            f"graph {graph.graph_id}: no replay runs all {size} graph nodes; showing the largest "
            f"({biggest.kernels} kernels)"
        )
        complete = [biggest]
    keep = {x.correlation for x in complete}
    every = len(keep) == len(graph.launches)
    stats: dict[int, ReplayStats] = {}
    for node, corr_text, dur_text in per_node:
        durations = json.loads(dur_text)
        if not every:
            durations = [d for c, d in zip(json.loads(corr_text), durations, strict=True) if c in keep]
        if node is not None and durations:
            durations.sort()
            stats[node] = _stats(durations)
    del per_node
    db.graph_launch_table()
    chosen = _representative(complete, sel.step, _launch_times(db, [x.correlation for x in complete]))
    kernels = db.kernels("a.dev = ? AND a.c = ?", (sel.device, chosen.correlation))
    for k in kernels:
        if k.graph_node_id is not None and k.kind == KIND_KERNEL:
            k.stats = stats.get(k.graph_node_id)
    sel.kernels = kernels
    sel.correlation = chosen.correlation
    sel.replays = len(complete)
    sel.method = "graph-node-ids"
    return sel


def _decode_by_time(db: TraceDB, graph: GraphInfo, sel: Selection) -> Selection:
    """Without correlation ids, a replay ends when a graph node id comes round again."""
    rows = db.rows(
        "SELECT s, n, i FROM k WHERE dev = ? AND g = ? ORDER BY s, n", (sel.device, graph.graph_id)
    )
    groups: list[list[tuple[int, int, int]]] = [[]]
    seen: set[int] = set()
    for row in rows:
        if row[1] in seen:
            groups.append([])
            seen = set()
        seen.add(row[1])
        groups[-1].append(row)
    size = graph.nodes or 0
    complete = [grp for grp in groups if len(grp) == size] or [max(groups, key=len)]
    first = complete[len(complete) // 2]
    lo, hi = first[0][0], first[-1][0]
    kernels = db.kernels(
        "a.dev = ? AND a.g = ? AND a.s BETWEEN ? AND ?", (sel.device, graph.graph_id, lo, hi), copies=False
    )
    per_node: dict[int, list[int]] = {}
    for grp in complete:
        for _start, n, i in grp:
            per_node.setdefault(n, []).append(i)
    durations = {i: max(0, e - s) for s, e, i in db.rows("SELECT s, e, i FROM k WHERE dev = ? AND g = ?",
                                                         (sel.device, graph.graph_id))}
    for k in kernels:
        if k.graph_node_id in per_node:
            k.stats = _stats(sorted(durations[i] for i in per_node[k.graph_node_id]))
    sel.kernels = kernels
    sel.replays = len(complete)
    sel.method = "graph-node-ids (time order)"
    return sel


def _decode_by_launch(db: TraceDB, graph: GraphInfo, sel: Selection) -> Selection:
    """Cut a replay as the kernels of one graph launch; stats per position in the replay."""
    by_size: dict[int, list[Launch]] = {}
    for launch in graph.launches:
        by_size.setdefault(launch.kernels, []).append(launch)
    # The busiest graph: most kernels per launch, then most launches.
    size = max(by_size, key=lambda n: (n, len(by_size[n])))
    launches = by_size[size]
    db.graph_launch_table()
    chosen = _representative(launches, sel.step, _launch_times(db, [x.correlation for x in launches]))
    per_position: list[list[int]] = [[] for _ in range(size)]
    marks = ",".join("?" * len(launches))
    replays: dict[int, list[tuple[int, int, int]]] = {}
    for c, s, e, i in db.rows(f"SELECT c, s, e, i FROM k WHERE dev = ? AND c IN ({marks})",
                              (sel.device, *[x.correlation for x in launches])):
        replays.setdefault(c, []).append((s, i, max(0, e - s)))
    for grp in replays.values():
        grp.sort()
        for pos, (_, _, d) in enumerate(grp[:size]):
            per_position[pos].append(d)
    kernels = db.kernels("a.dev = ? AND a.c = ?", (sel.device, chosen.correlation))
    position = 0
    for k in kernels:
        if k.kind == KIND_KERNEL and position < size:
            k.stats = _stats(sorted(per_position[position]))
            position += 1
    gids = {k.graph_id for k in kernels} - {None}
    sel.graph_id = gids.pop() if len(gids) == 1 else None
    sel.graph_node_count = size
    sel.kernels = kernels
    sel.correlation = chosen.correlation
    sel.replays = len(launches)
    sel.method = "launch-correlation"
    return sel


def _busiest(found: list[GraphInfo], graph_id: int | None, db: TraceDB) -> GraphInfo:
    if graph_id is not None:
        match = [g for g in found if g.graph_id == graph_id]
        if not match:
            have = ", ".join(str(g.graph_id) for g in found if g.graph_id is not None) or "none"
            raise InputError(f"graph id {graph_id} is not in the trace (graph ids: {have})", path=db.source,
                             field="graph_id")
        return match[0]
    return max(found, key=lambda g: (g.nodes or max((x.kernels for x in g.launches), default=0), g.kernels))


def select(db: TraceDB, choice: TraceChoice = AUTO_CHOICE) -> Selection:
    """Pick the replay (decode) or forward pass (prefill) to show, as ``choice`` says; what it
    leaves ``None`` is detected (a phase by the graphs found).

    Raises ``InputError`` for an unknown phase, ``phase="decode"`` on a trace without CUDA graph
    kernels (suggesting ``--phase prefill``, or re-capturing for graph-mode captures), an absent
    device, graph id or step, or a trace with no kernels to show.
    """
    phase: str | None = choice.phase
    device, graph_id, step = choice.device, choice.graph_id, choice.step
    if phase is not None and phase not in PHASES:
        raise InputError(f"unknown phase {phase!r}; use one of {', '.join(PHASES)}", field="phase")
    per_device = device_kernel_counts(db)
    if not any(per_device.values()) and not db.graph_launches:
        raise InputError("trace has no GPU kernels (the kernel table is empty)", path=db.source)
    dev = choose_device(db, device)
    launches = [b for b in db.graph_launches if b.device == dev]
    found = [g for g in graphs(db, dev) if g.launches]
    graph_mode = bool(launches) and not found
    chosen_step, step_reason = choose_step(db, step)
    sel = Selection(kernels=[], phase="decode", device=dev, launches=launches, graph_mode_capture=graph_mode,
                    step=chosen_step)
    if phase is None:
        phase = "decode" if found else "prefill"
    if phase == "decode":
        if graph_mode:
            raise InputError(f"decode needs the kernels inside CUDA graphs, but this trace was captured with "
                             f"--cuda-graph-trace=graph ({len(launches)} graph launches without kernels); "
                             f"{RECAPTURE_HINT}", path=db.source, field="phase")
        if not found:
            raise InputError("trace has no CUDA graph replays (no kernels with graph ids or sharing a "
                             "cudaGraphLaunch/hipGraphLaunch correlation id), so there is no decode "
                             "replay to cut; "
                             "use --phase prefill", path=db.source, field="phase")
        graph = _busiest(found, graph_id, db)
        if graph.nodes:
            _decode_by_node_ids(db, graph, sel)
        else:
            _decode_by_launch(db, graph, sel)
        where = f", {step_reason}" if chosen_step is not None else ""
        sel.reason = (f"graph {sel.graph_id if sel.graph_id is not None else '(no id)'}: the busiest of "
                      f"{len(found)} graph(s) on device {dev} ({sel.graph_node_count} kernels per replay); "
                      f"replay {sel.correlation} is the complete one closest to the median time of "
                      f"{sel.replays}{where}")
        return sel
    sel.phase = "prefill"
    where = "a.dev = ? AND a.g IS NULL AND (a.c IS NULL OR a.c NOT IN (SELECT c FROM temp.graph_launch))"
    params: tuple[int, ...] = (dev,)
    db.graph_launch_table()
    if chosen_step is not None:
        where += " AND r.s BETWEEN ? AND ?"
        params += (chosen_step.start_ns, chosen_step.end_ns)
    eager = db.kernels(where, params)
    if not eager:
        if not launches:
            within = f" in profiler step {chosen_step.number}" if chosen_step is not None else ""
            raise InputError(
                f"trace has no kernels outside CUDA graphs on device {dev}{within}; use --phase decode",
                path=db.source,
                field="phase",
            )
        sel.method = "whole-trace"
        sel.reason = "graph-mode capture: only whole-graph launch blocks"
        return sel
    found_pass = pass_by_nvtx(db, eager, STEP_PASS_COVERAGE if chosen_step is not None else PASS_COVERAGE)
    if found_pass is not None:
        chosen, sel.method = found_pass
    elif chosen_step is not None:
        chosen, sel.method = eager, "profiler-step"
    else:
        chosen, sel.method = pass_by_gaps(eager)
    for k in chosen:
        k.eager = True
    sel.kernels = chosen
    sel.reason = (f"{step_reason}; " if chosen_step is not None else "") + f"pass cut by {sel.method}"
    return sel
