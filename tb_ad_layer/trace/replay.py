"""Choose the kernels to show: one CUDA-graph replay (decode) or one eager forward pass (prefill).

Decode: the busiest graph (most kernels per replay, or the ``graph_id`` asked for) is replayed
many times. One replay is the set of kernels sharing one ``cudaGraphLaunch`` correlation id; a
replay is complete when it covers every distinct ``graphNodeId`` of the graph. The replay shown is
the complete one whose wall time is closest to the median, and every replay's durations are
aggregated per graph node (per position in the replay when the trace has no node ids) into
``ReplayStats``.

Prefill: kernels outside graphs. One forward pass is located by NVTX ranges whose text names a
forward/prefill step when present, else by idle gaps on the busiest stream.
"""
from __future__ import annotations

import bisect
import operator
import re
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from tb_ad_layer.errors import InputError
from tb_ad_layer.trace.kernel import KIND_KERNEL, GraphLaunchBlock, Kernel, ReplayStats
from tb_ad_layer.trace.nsys_sqlite import RECAPTURE_HINT
from tb_ad_layer.trace.tracedata import NONE, TraceData

PHASES = ("decode", "prefill")
_PASS_WORDS = re.compile(r"forward|prefill|context|generat|step|iteration|infer|model|execute", re.I)
_DIGITS = re.compile(r"\d+")
_MIN_PASS_KERNELS = 8
_PASS_COVERAGE = 0.5


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


def _stats(durations: list[int]) -> ReplayStats:
    return ReplayStats(count=len(durations), median_ns=float(statistics.median(durations)),
                       min_ns=min(durations), max_ns=max(durations))


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


def _graph_rows(td: TraceData, rows: Sequence[int]) -> list[int]:
    gid = td.graph_id
    if isinstance(rows, range) and len(rows) == len(td):
        return [i for i, g in enumerate(gid) if g != NONE]
    return [i for i in rows if gid[i] != NONE]


def _launch_groups(td: TraceData, rows: Sequence[int]) -> dict[int, list[int]]:
    """Correlation id -> rows, for rows replayed from a graph launch (no graph ids needed)."""
    corr = td.correlation
    launch = td.graph_launch_correlations
    groups: dict[int, list[int]] = defaultdict(list)
    if launch:
        for i in rows:
            c = corr[i]
            if c in launch:
                groups[c].append(i)
        return groups
    # No runtime table: eager launches have one kernel per correlation, graph launches several.
    counts = Counter(corr[i] for i in rows if td.graph_id[i] != NONE)
    for i in rows:
        c = corr[i]
        if c != NONE and counts.get(c, 0) > 1:
            groups[c].append(i)
    return groups


def _span(td: TraceData, group: Iterable[int]) -> int:
    g = list(group)
    return max(td.end[i] for i in g) - min(td.start[i] for i in g)


def _representative(td: TraceData, groups: list[list[int]]) -> list[int]:
    """The group whose wall span is closest to the median span (earliest on ties)."""
    spans = [_span(td, g) for g in groups]
    med = statistics.median(spans)
    best = min(range(len(groups)), key=lambda j: (abs(spans[j] - med), min(td.start[i] for i in groups[j])))
    return groups[best]


def _with_companions(td: TraceData, group: list[int], rows: Sequence[int]) -> list[int]:
    """Add memcpy/memset rows launched by the same graph launch (same correlation id)."""
    corrs = {td.correlation[i] for i in group} - {NONE}
    have = set(group)
    extra = [i for i in rows if td.correlation[i] in corrs and i not in have]
    return group + extra


def _decode_by_node_ids(td: TraceData, rows: Sequence[int], graph_rows: list[int],
                        graph_id: int | None, sel: Selection) -> Selection | None:
    """Cut a replay with graphNodeIds; None when the chosen graph has no node ids."""
    gid, gnid, corr = td.graph_id, td.graph_node_id, td.correlation
    is_kernel = _is_kernel_row(td)
    name = td.name
    # Copies can carry graph node ids too (profiler traces); a replay's size counts kernels only.
    graph_rows = [i for i in graph_rows if is_kernel[name[i]]]
    nodes_per_graph: dict[int, set[int]] = defaultdict(set)
    rows_per_graph: Counter[int] = Counter()
    for g, n in set(zip(map(gid.__getitem__, graph_rows), map(gnid.__getitem__, graph_rows))):
        if n != NONE:
            nodes_per_graph[g].add(n)
    rows_per_graph.update(map(gid.__getitem__, graph_rows))
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
    sel.graph_id = chosen
    sel.graph_node_count = len(node_set)
    g_rows = [i for i in graph_rows if gid[i] == chosen]
    groups: dict[int, list[int]] = defaultdict(list)
    if any(corr[i] != NONE for i in g_rows[:1000]):
        for i in g_rows:
            groups[corr[i]].append(i)
        sel.method = "graph-node-ids"
    else:
        # No correlation ids: a replay ends when a node id comes round again.
        g_rows.sort(key=td.start.__getitem__)
        seen: set[int] = set()
        replay = 0
        for i in g_rows:
            if gnid[i] in seen:
                replay += 1
                seen = set()
            seen.add(gnid[i])
            groups[replay].append(i)
        sel.method = "graph-node-ids (time order)"
    size = len(node_set)
    complete = [grp for grp in groups.values()
                if len(grp) == size and len(set(map(gnid.__getitem__, grp))) == size]
    if not complete:
        sel.warnings.append(f"graph {chosen}: no replay covers all {size} graph nodes; showing the largest")
        complete = [max(groups.values(), key=len)]
    durations: dict[int, list[int]] = defaultdict(list)
    for grp in complete:
        for i, d in zip(grp, map(operator.sub, map(td.end.__getitem__, grp), map(td.start.__getitem__, grp))):
            durations[gnid[i]].append(max(0, d))
    stats = {n: _stats(ds) for n, ds in durations.items()}
    chosen_rows = _with_companions(td, _representative(td, complete), rows)
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
    chosen = _representative(td, replays)
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


def _launch_time_of(td: TraceData, rows: list[int]) -> list[int]:
    """CPU launch time per row (via correlation id), GPU start time where unknown."""
    lt = td.launch_times
    if lt is None or not len(lt.correlation):
        return [td.start[i] for i in rows]
    corr_arr, start_arr = lt.correlation, lt.start_ns
    out = []
    for i in rows:
        c = td.correlation[i]
        j = bisect.bisect_left(corr_arr, c) if c != NONE else len(corr_arr)
        out.append(start_arr[j] if j < len(corr_arr) and corr_arr[j] == c else td.start[i])
    return out


def _pass_by_nvtx(td: TraceData, rows: list[int]) -> tuple[list[int], str] | None:
    """Rows launched inside the middle complete NVTX forward-pass range, or None."""
    ranges = [r for r in td.nvtx if _PASS_WORDS.search(r.text)]
    if not ranges:
        return None
    times = _launch_time_of(td, rows)
    order = sorted(range(len(rows)), key=times.__getitem__)
    sorted_times = [times[j] for j in order]
    by_text: dict[str, list[tuple[int, int, int]]] = defaultdict(list)
    for r in ranges:
        lo = bisect.bisect_left(sorted_times, r.start_ns)
        hi = bisect.bisect_right(sorted_times, r.end_ns)
        if hi - lo >= _MIN_PASS_KERNELS:
            by_text[_DIGITS.sub("#", r.text)].append((lo, hi, r.start_ns))
    # A forward-pass annotation covers most launches; op-level ranges that merely mention
    # "forward" (FSDP::pre_forward, aten ops) cover a sliver.
    by_text = {t: f for t, f in by_text.items()
               if sum(hi - lo for lo, hi, _ in f) >= _PASS_COVERAGE * len(rows)}
    if not by_text:
        return None
    text = max(sorted(by_text), key=lambda t: statistics.median(hi - lo for lo, hi, _ in by_text[t]))
    found = by_text[text]
    mode = Counter(hi - lo for lo, hi, _ in found).most_common(1)[0][0]
    complete = [f for f in found if f[1] - f[0] == mode]
    lo, hi, _ = complete[len(complete) // 2]
    return [rows[j] for j in order[lo:hi]], f"nvtx:{text}"


def _pass_by_gaps(td: TraceData, rows: list[int]) -> tuple[list[int], str]:
    """Split at long idle gaps of the busiest stream and take the middle typical pass."""
    main = Counter(td.stream[i] for i in rows).most_common(1)[0][0]
    main_rows = sorted((i for i in rows if td.stream[i] == main), key=td.start.__getitem__)
    if len(main_rows) < 2 * _MIN_PASS_KERNELS:
        return rows, "whole-trace"
    gaps = [max(0, td.start[b] - td.end[a]) for a, b in zip(main_rows, main_rows[1:])]
    threshold = max(200_000, 50 * statistics.median(gaps))
    chunks: list[list[int]] = [[main_rows[0]]]
    for gap, i in zip(gaps, main_rows[1:]):
        if gap > threshold:
            chunks.append([])
        chunks[-1].append(i)
    chunks = [c for c in chunks if len(c) >= _MIN_PASS_KERNELS]
    if len(chunks) <= 1:
        return rows, "whole-trace"
    mode = Counter(len(c) for c in chunks).most_common(1)[0]
    typical = [c for c in chunks if len(c) == mode[0]] if mode[1] > 1 else [max(chunks, key=len)]
    chunk = typical[len(typical) // 2]
    lo, hi = td.start[chunk[0]], td.end[chunk[-1]]
    return [i for i in rows if lo <= td.start[i] <= hi], "idle-gaps"


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
    dev = choose_device(td, device)
    rows = _device_rows(td, dev)
    launches = [b for b in td.graph_launches if b.device == dev]
    graph_rows = _graph_rows(td, rows)
    has_launch_kernels = bool(graph_rows) or bool(_launch_groups(td, rows))
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
        result = _decode_by_node_ids(td, rows, graph_rows, graph_id, sel) if graph_rows else None
        return result if result is not None else _decode_by_launch(td, rows, graph_id, sel)
    sel.phase = "prefill"
    eager = _eager_rows(td, rows)
    if not eager:
        if not launches:
            raise InputError("trace has no kernels outside CUDA graphs on device "
                             f"{dev}; use --phase decode", path=td.source, field="phase")
        sel.method = "whole-trace"
        return sel
    found = _pass_by_nvtx(td, eager)
    chosen, sel.method = found if found is not None else _pass_by_gaps(td, eager)
    sel.kernels = td.kernels(chosen)
    return sel
