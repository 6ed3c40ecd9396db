"""What a trace holds, counted in SQL: activities per stream, CUDA graphs and their launches.

Each count is one pass over the trace's rows inside SQLite and is memoised on the ``TraceDB``, so
the inventory, the device choice and the replay choice share it.
"""
from __future__ import annotations

from dataclasses import dataclass

from tb_ad_layer.trace.kernel import KIND_KERNEL, KIND_MEMCPY, KIND_MEMSET
from tb_ad_layer.trace.tracedb import StreamInfo, TraceDB


@dataclass(slots=True)
class StreamCount:
    """Activities of one stream."""

    stream: StreamInfo
    kernels: int = 0
    memcpy: int = 0
    memset: int = 0


@dataclass(slots=True)
class Launch:
    """One launch of a CUDA graph: its correlation id, kernels, summed kernel time, first start."""

    correlation: int
    kernels: int
    nodes: int
    busy_ns: int
    start_ns: int


@dataclass(slots=True)
class GraphInfo:
    """One CUDA graph on one device: its distinct kernel nodes and its launches.

    ``graph_id`` is None for profiler traces without graph ids, where the launches found by
    correlation id stand for the graph. ``nodes`` is None when the trace has no node ids.
    """

    device: int
    graph_id: int | None
    nodes: int | None
    launches: list[Launch]

    @property
    def kernels(self) -> int:
        return sum(launch.kernels for launch in self.launches)


def stream_counts(db: TraceDB) -> list[StreamCount]:
    """Kernels, copies and fills per stream, sorted by device then stream. The same scan counts
    the kernel rows left out for bad values (``db.skipped``, with a warning)."""
    got = db.memo.get("stream_counts")
    if got is None:
        by_key: dict[tuple[int, int, int, int], StreamCount] = {}
        bad = 0
        kernel_rows = db.memo.get("kernels_per_stream") or db.rows(
            "SELECT ok, pid, dev, ctx, st, count(*) FROM k_all GROUP BY ok, pid, dev, ctx, st")
        rows = [(ok, pid, dev, ctx, st, KIND_KERNEL, n) for ok, pid, dev, ctx, st, n in kernel_rows]
        rows += [(1, pid, dev, ctx, st, kind, n) for pid, dev, ctx, st, kind, n in db.rows(
            "SELECT pid, dev, ctx, st, kind, count(*) FROM cp GROUP BY pid, dev, ctx, st, kind")]
        for ok, pid, dev, ctx, st, kind, n in rows:
            if not ok:
                bad += n
                continue
            info = db.stream(pid, dev, ctx, st)
            sc = by_key.setdefault((info.pid, info.device, info.context, info.stream), StreamCount(info))
            if kind == KIND_KERNEL:
                sc.kernels += n
            elif kind == KIND_MEMCPY:
                sc.memcpy += n
            elif kind == KIND_MEMSET:
                sc.memset += n
        if bad:
            db.skipped["kernels"] = bad
            db.warnings.append(
                f"{db.source.name}: skipped {bad:,} kernel row(s) whose start/end or device/stream "
                f"ids are missing, not integers or out of range"
            )
        got = db.memo["stream_counts"] = sorted(
            by_key.values(), key=lambda c: (c.stream.device, c.stream.stream, c.stream.pid, c.stream.context)
        )
    return list(got)


def device_kernel_counts(db: TraceDB) -> dict[int, int]:
    """Device -> activity rows (kernels, copies, fills); graph-mode launch blocks count 0."""
    out: dict[int, int] = {}
    for sc in stream_counts(db):
        out[sc.stream.device] = out.get(sc.stream.device, 0) + sc.kernels + sc.memcpy + sc.memset
    for block in db.graph_launches:
        out.setdefault(block.device, 0)
    return out


def graphs(db: TraceDB, device: int | None = None) -> list[GraphInfo]:
    """The CUDA graphs that ran kernels (all devices, or one), with every launch."""
    got = db.memo.get("graphs")
    if got is None:
        got = db.memo["graphs"] = _graphs_by_id(db) + _graphs_by_launch(db)
    return [g for g in got if device is None or g.device == device]


def _graphs_by_id(db: TraceDB) -> list[GraphInfo]:
    """Graphs with ids and their launches, in one scan. A graph's node count is that of its
    largest launch (a complete replay runs every node once); ``distinct_nodes`` counts exactly."""
    launches: dict[tuple[int, int], list[Launch]] = {}
    untimed: dict[tuple[int, int], int] = {}
    counted = db.memo.get("kernels_per_launch")
    rows = (
        [r for r in counted if r[1] is not None]
        if counted is not None
        else db.rows(
            "SELECT dev, g, c, count(*), sum(max(e - s, 0)), min(s) FROM k WHERE g IS NOT NULL "
            "GROUP BY dev, g, c"
        )
    )
    for dev, g, c, n, busy, start in rows:
        if c is None:
            untimed[(dev, g)] = n
            continue
        launches.setdefault((dev, g), []).append(Launch(c, n, n, busy, start))
    out = []
    for key in sorted(set(launches) | set(untimed)):
        dev, g = key
        ls = sorted(launches.get(key, []), key=lambda launch: launch.start_ns)
        nodes = max((x.kernels for x in ls), default=0)
        if key in untimed:  # no correlation ids: launches are unknown until cut by time
            ls.append(Launch(-1, untimed[key], 0, 0, 0))
            nodes = 0
        out.append(GraphInfo(dev, g, nodes or None, ls))
    return out


def distinct_nodes(db: TraceDB) -> dict[tuple[int, int], int]:
    """(device, graph id) -> distinct kernel graph node ids (one more scan; for the inventory)."""
    got = db.memo.get("distinct_nodes")
    if got is None:
        got = db.memo["distinct_nodes"] = {(dev, g): n for dev, g, n in db.rows(
            "SELECT dev, g, count(DISTINCT n) FROM k WHERE g IS NOT NULL GROUP BY dev, g")}
    return dict(got)


def _graphs_by_launch(db: TraceDB) -> list[GraphInfo]:
    """Graph launches whose kernels carry no graph id: grouped by launch correlation id."""
    table = db.graph_launch_table()
    counted = db.memo.get("kernels_per_launch")
    if counted is not None:
        wanted = db.graph_launch_correlations()
        rows = [
            (dev, c, n, busy, start) for dev, g, c, n, busy, start in counted if g is None and c in wanted
        ]
    else:
        rows = db.rows(f"SELECT dev, c, count(*), sum(max(e - s, 0)), min(s) FROM k WHERE g IS NULL "
                       f"AND c IN (SELECT c FROM {table}) GROUP BY dev, c")
    if not rows and not db.runtime_names:
        # No CUDA API rows at all: eager launches have one kernel each, graph launches several.
        rows = db.rows("SELECT dev, c, count(*), sum(max(e - s, 0)), min(s) FROM k WHERE g IS NULL "
                       "AND c IS NOT NULL GROUP BY dev, c HAVING count(*) > 1")
    per_device: dict[int, list[Launch]] = {}
    for dev, c, n, busy, start in rows:
        per_device.setdefault(dev, []).append(Launch(c, n, n, busy, start))
    return [GraphInfo(dev, None, None, sorted(ls, key=lambda launch: launch.start_ns))
            for dev, ls in sorted(per_device.items())]


def nvtx_summary(db: TraceDB, top: int = 5) -> tuple[int, list[tuple[str, int]]]:
    """Number of NVTX ranges and profiler annotations, and the most frequent texts (digits
    written as ``#`` so that ``layer 3`` and ``layer 4`` count as one)."""
    total = db.value("SELECT count(*) FROM rg WHERE src IN ('nvtx', 'annotation')") or 0
    counts: dict[str, int] = {}
    for text, n in db.rows("SELECT text, count(*) FROM rg WHERE src IN ('nvtx', 'annotation') GROUP BY text"):
        key = _digits_as_hash(text or "")
        counts[key] = counts.get(key, 0) + n
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
    return total, ranked


def _digits_as_hash(text: str) -> str:
    out = []
    prev_digit = False
    for ch in text:
        if ch.isdigit():
            if not prev_digit:
                out.append("#")
            prev_digit = True
        else:
            out.append(ch)
            prev_digit = False
    return "".join(out)
