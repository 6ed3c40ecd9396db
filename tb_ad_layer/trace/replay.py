"""Choose the kernels to show: one CUDA-graph replay (decode) or one eager forward pass (prefill).

Decode: the busiest graph (most kernels per replay, or the ``graph_id`` asked for) is replayed
many times. One replay is the set of kernels sharing one ``cudaGraphLaunch`` correlation id; a
replay is complete when it covers every distinct ``graphNodeId`` of the graph. Every replay's durations are
aggregated per graph node (per position in the replay when the trace has no node ids) into
``ReplayStats``. The replay shown is the complete one whose total kernel time is closest to the
median.

Prefill: kernels outside graphs; ``passes`` locates one forward pass among them.
"""
from __future__ import annotations

import operator
import statistics
from array import array
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from itertools import compress, groupby
from typing import Iterable, Sequence

from tb_ad_layer.errors import InputError
from tb_ad_layer.trace.kernel import KIND_KERNEL, GraphLaunchBlock, Kernel, ReplayStats
from tb_ad_layer.trace.nsys_sqlite import RECAPTURE_HINT
from tb_ad_layer.trace.passes import pass_by_gaps, pass_by_nvtx
from tb_ad_layer.trace.tracedata import NONE, TraceData

PHASES = ("decode", "prefill")


@dataclass
class Selection:
    """The chosen kernels (sorted by start) and how they were found.

    ``replays`` counts the complete replays aggregated into the stats (1 for a prefill pass);
    ``method`` says how the replay or pass was cut (``graph-node-ids``, ``launch-correlation``,
    ``nvtx:<text>``, ``idle-gaps``, ``whole-trace``).
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
    graph_mode_capture: bool = False


def _stats(durations: Iterable[int]) -> ReplayStats:
    ordered = sorted(durations)
    if ordered[0] < 0:  # end before start: a clock glitch counts as zero
        ordered = [max(0, d) for d in ordered]
    n = len(ordered)
    median = ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2
    return ReplayStats(count=n, median_ns=float(median), min_ns=ordered[0], max_ns=ordered[-1])


def choose_device(td: TraceData, device: int | None) -> int:
    """``device`` if the trace has it, else the device with the most activity rows."""
    per_device: Counter[int] = Counter()
    for s_idx, count in Counter(td.stream).items():
        per_device[td.streams[s_idx].device] += count
    for block in td.graph_launches:
        per_device.setdefault(block.device, 0)
    if device is not None:
        if device not in per_device:
            raise InputError(f"device {device} is not in the trace (devices: "
                             f"{', '.join(map(str, sorted(per_device))) or 'none'})", path=td.source, field="device")
        return device
    if not per_device:
        return 0
    return max(sorted(per_device), key=lambda d: per_device[d])


def _device_rows(td: TraceData, device: int) -> range | list[int]:
    wanted = {i for i, s in enumerate(td.streams) if s.device == device}
    if len(wanted) == len(td.streams):
        return range(len(td))
    return [i for i, s in enumerate(td.stream) if s in wanted]


def _is_kernel_row(td: TraceData) -> list[bool]:
    """Per name index: True for kernels (memcpy/memset are not graph nodes we count)."""
    return [n.kind == KIND_KERNEL for n in td.names]


def _column(td: TraceData, col: array, rows: Sequence[int]) -> Iterable[int]:
    """Values of ``col`` over ``rows``, iterated in C when ``rows`` is the whole table."""
    return iter(col) if _whole(td, rows) else map(col.__getitem__, rows)


def _whole(td: TraceData, rows: Sequence[int]) -> bool:
    return isinstance(rows, range) and len(rows) == len(td)


def _has_graph_rows(td: TraceData, rows: Sequence[int]) -> bool:
    if _whole(td, rows):
        return td.graph_id.count(NONE) != len(td)
    return any(td.graph_id[i] != NONE for i in rows)


def _launch_groups(td: TraceData, rows: Sequence[int]) -> dict[int, list[int]]:
    """Correlation id -> rows, for rows replayed from a graph launch (no graph ids needed)."""
    corr = td.correlation
    launch = td.graph_launch_correlations
    groups: dict[int, list[int]] = defaultdict(list)
    if launch:
        for i in compress(rows, map(launch.__contains__, _column(td, corr, rows))):
            groups[corr[i]].append(i)
        return groups
    # No runtime table: eager launches have one kernel per correlation, graph launches several.
    counts = Counter(corr[i] for i in rows if td.graph_id[i] != NONE)
    for i in rows:
        c = corr[i]
        if c != NONE and counts.get(c, 0) > 1:
            groups[c].append(i)
    return groups


def _representative(totals: Sequence[int]) -> int:
    """Index of the replay whose total kernel time is closest to the median (earliest on ties;
    replays come in launch order), so one slow warm-up replay is never the one shown."""
    med = statistics.median(totals)
    return min(range(len(totals)), key=lambda j: (abs(totals[j] - med), j))


def _durations(td: TraceData, group: Sequence[int]) -> list[int]:
    return list(map(operator.sub, map(td.end.__getitem__, group), map(td.start.__getitem__, group)))


def _with_companions(td: TraceData, group: list[int], rows: Sequence[int]) -> list[int]:
    """Add memcpy/memset rows launched by the same graph launch (same correlation id)."""
    corrs = {td.correlation[i] for i in group} - {NONE}
    have = set(group)
    hits = compress(rows, map(corrs.__contains__, _column(td, td.correlation, rows)))
    return group + [i for i in hits if i not in have]


def _replays_by_correlation(td: TraceData, g_rows: array) -> list[list[int]]:
    # Correlation ids grow with time, so this sort mostly merges runs (fast on time-ordered tables).
    order = sorted(g_rows, key=td.correlation.__getitem__)
    return [list(grp) for _, grp in groupby(order, key=td.correlation.__getitem__)]


def _replays_by_time(td: TraceData, g_rows: array) -> list[list[int]]:
    """Without correlation ids, a replay ends when a graph node id comes round again."""
    groups: list[list[int]] = [[]]
    seen: set[int] = set()
    for i in sorted(g_rows, key=td.start.__getitem__):
        n = td.graph_node_id[i]
        if n in seen:
            groups.append([])
            seen = set()
        seen.add(n)
        groups[-1].append(i)
    return groups


def _decode_by_node_ids(td: TraceData, rows: Sequence[int], graph_id: int | None,
                        sel: Selection) -> Selection | None:
    """Cut a replay with graphNodeIds; None when the chosen graph has no node ids.

    Every step iterates in C (``compress``, ``sorted``, ``groupby``, ``zip``) because a decode
    trace holds millions of rows.
    """
    gid, gnid, name = td.graph_id, td.graph_node_id, td.name
    is_kernel = _is_kernel_row(td)
    triples = set(zip(_column(td, gid, rows), _column(td, gnid, rows), _column(td, name, rows)))
    nodes_per_graph: dict[int, set[int]] = defaultdict(set)
    copies_in_graphs = False
    for g, n, nm in triples:
        if g == NONE:
            continue
        if not is_kernel[nm]:
            copies_in_graphs = True  # profiler traces give graph ids to copies too
        elif n != NONE:
            nodes_per_graph[g].add(n)
    rows_per_graph = Counter(_column(td, gid, rows))
    rows_per_graph.pop(NONE, None)
    if graph_id is not None:
        if graph_id not in rows_per_graph:
            raise InputError(f"graph id {graph_id} is not in the trace (graph ids: "
                             f"{', '.join(map(str, sorted(rows_per_graph)))})", path=td.source, field="graph_id")
        chosen = graph_id
    else:
        chosen = max(sorted(rows_per_graph), key=lambda g: (len(nodes_per_graph.get(g, ())), rows_per_graph[g]))
    node_set = nodes_per_graph.get(chosen, set())
    if not node_set:
        return None
    size = len(node_set)
    sel.graph_id = chosen
    sel.graph_node_count = size
    g_rows = array("i", compress(rows, map(chosen.__eq__, _column(td, gid, rows))))
    if copies_in_graphs:
        g_rows = array("i", (i for i in g_rows if is_kernel[name[i]]))
    if any(td.correlation[i] != NONE for i in g_rows[:1000]):
        groups = _replays_by_correlation(td, g_rows)
        sel.method = "graph-node-ids"
    else:
        groups = _replays_by_time(td, g_rows)
        sel.method = "graph-node-ids (time order)"
    del g_rows
    complete = [grp for grp in groups if len(grp) == size]
    for grp in complete:
        grp.sort(key=gnid.__getitem__)
    reference = tuple(sorted(node_set))
    complete = [grp for grp in complete if tuple(map(gnid.__getitem__, grp)) == reference]
    if not complete:
        sel.warnings.append(f"graph {chosen}: no replay covers all {size} graph nodes; showing the largest")
        complete = [max(groups, key=len)]
        complete[0].sort(key=gnid.__getitem__)
    del groups
    stats: dict[int, ReplayStats] = {}
    durations = [_durations(td, grp) for grp in complete]
    if len(complete) > 1 or len(complete[0]) == size:
        # Each complete replay is sorted by node id, so column k of every replay is node k.
        for node, ds in zip(map(gnid.__getitem__, complete[0]), zip(*durations)):
            stats[node] = _stats(ds)
    chosen_rows = _with_companions(td, complete[_representative(list(map(sum, durations)))], rows)
    del durations
    kernels = td.kernels(chosen_rows)
    for k in kernels:
        if k.graph_node_id is not None and k.kind == KIND_KERNEL:
            k.stats = stats.get(k.graph_node_id)
    sel.kernels = kernels
    sel.replays = len(complete)
    return sel


def _decode_by_launch(td: TraceData, rows: Sequence[int], graph_id: int | None, sel: Selection) -> Selection:
    """Cut a replay as the kernels of one graph launch; stats per position in the replay."""
    groups = _launch_groups(td, rows)
    if graph_id is not None:
        groups = {c: g for c, g in groups.items() if any(td.graph_id[i] == graph_id for i in g)}
        if not groups:
            raise InputError(f"graph id {graph_id} is not in the trace", path=td.source, field="graph_id")
    is_kernel = _is_kernel_row(td)
    by_signature: dict[tuple[int, ...], list[list[int]]] = defaultdict(list)
    for grp in groups.values():
        grp = [i for i in grp if is_kernel[td.name[i]]]
        if not grp:
            continue
        grp.sort(key=lambda i: (td.start[i], td.stream[i], i))
        by_signature[tuple(sorted(td.name[i] for i in grp))].append(grp)
    if not by_signature:
        raise InputError("the trace's CUDA graph launches ran no kernels", path=td.source)
    signature = max(by_signature, key=lambda s: (len(s), len(by_signature[s])))
    replays = by_signature[signature]
    per_position: list[list[int]] = [[] for _ in signature]
    for grp in replays:
        for pos, i in enumerate(grp):
            per_position[pos].append(max(0, td.end[i] - td.start[i]))
    chosen = replays[_representative([sum(_durations(td, grp)) for grp in replays])]
    pos_of = {i: pos for pos, i in enumerate(chosen)}
    kernels = td.kernels(_with_companions(td, list(chosen), rows))
    for k in kernels:
        pos = pos_of.get(k.index)
        if pos is not None:
            k.stats = _stats(per_position[pos])
    gids = {td.graph_id[i] for i in chosen} - {NONE}
    sel.graph_id = gids.pop() if len(gids) == 1 else None
    sel.graph_node_count = len(signature)
    sel.kernels = kernels
    sel.replays = len(replays)
    sel.method = "launch-correlation"
    return sel


def _eager_rows(td: TraceData, rows: Sequence[int]) -> list[int]:
    groups = _launch_groups(td, rows)
    in_graph = {i for g in groups.values() for i in g}
    gid = td.graph_id
    return [i for i in rows if gid[i] == NONE and i not in in_graph]


def select(td: TraceData, phase: str | None = None, device: int | None = None,
           graph_id: int | None = None) -> Selection:
    """Pick the replay (decode) or forward pass (prefill) to show; ``phase=None`` auto-detects.

    Raises ``InputError`` for an unknown phase, ``phase="decode"`` on a trace without CUDA graph
    kernels (suggesting ``--phase prefill``, or re-capturing for graph-mode captures), an absent
    device or graph id, or a trace with no kernels to show.
    """
    if phase is not None and phase not in PHASES:
        raise InputError(f"unknown phase {phase!r}; use one of {', '.join(PHASES)}", field="phase")
    if not len(td) and not td.graph_launches:
        raise InputError("trace has no GPU kernels (the kernel table is empty)", path=td.source)
    dev = choose_device(td, device)
    rows = _device_rows(td, dev)
    launches = [b for b in td.graph_launches if b.device == dev]
    has_graph_rows = _has_graph_rows(td, rows)
    has_launch_kernels = has_graph_rows or bool(_launch_groups(td, rows))
    graph_mode = bool(launches) and not has_launch_kernels
    sel = Selection(kernels=[], phase="decode", device=dev, launches=launches, graph_mode_capture=graph_mode)
    if phase is None:
        phase = "decode" if has_launch_kernels else "prefill"
    if phase == "decode":
        if graph_mode:
            raise InputError(f"decode needs the kernels inside CUDA graphs, but this trace was captured with "
                             f"--cuda-graph-trace=graph ({len(launches)} graph launches without kernels); "
                             f"{RECAPTURE_HINT}", path=td.source, field="phase")
        if not has_launch_kernels:
            raise InputError("trace has no CUDA graph replays (no kernels with graph ids or sharing a "
                             "cudaGraphLaunch correlation id), so there is no decode replay to cut; "
                             "use --phase prefill", path=td.source, field="phase")
        result = _decode_by_node_ids(td, rows, graph_id, sel) if has_graph_rows else None
        return result if result is not None else _decode_by_launch(td, rows, graph_id, sel)
    sel.phase = "prefill"
    eager = _eager_rows(td, rows)
    if not eager:
        if not launches:
            raise InputError("trace has no kernels outside CUDA graphs on device "
                             f"{dev}; use --phase decode", path=td.source, field="phase")
        sel.method = "whole-trace"
        return sel
    found = pass_by_nvtx(td, eager)
    chosen, sel.method = found if found is not None else pass_by_gaps(td, eager)
    sel.kernels = td.kernels(chosen)
    for k in sel.kernels:
        k.eager = True
    return sel
