"""Baseline: the per-layer stream grouping that seed 000's trace step describes, rebuilt here.

Seed 000 (phase 5) extracts one replay as the first execution of every graph node, groups its
kernels by stream and assigns streams to layers: every stream that runs an attention kernel
(``fmha``, MLA RoPE) is one layer's main stream, in order of its first kernel; every other stream
joins the layer whose attention stream's midpoint is nearest its own; a first stream without
attention opens layer 0. Whole streams go to one layer, so a stream that carries one layer's
tail and the next one's head is cut wrong, and a single-stream replay is one layer.

This is a yardstick for the product's segmentation (``bench/bench_trace.py`` and the trace
tests measure both on the same replays), not product code: it keys on kernel names the seed's
script knows.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

from tb_ad_layer.trace.kernel import KIND_KERNEL, Kernel

_ATTENTION = ("fmha", "applymlarope", "mla_rope")


def stream_grouping_layers(kernels: Sequence[Kernel]) -> list[list[Kernel]]:
    """The replay's kernels split into layers the way seed 000's script does."""
    by_stream: dict[str, list[Kernel]] = {}
    for k in sorted(kernels, key=lambda k: k.start_ns):
        if k.kind == KIND_KERNEL:
            by_stream.setdefault(k.stream_key, []).append(k)
    if not by_stream:
        return []
    first = {s: ks[0].start_ns for s, ks in by_stream.items()}
    span = {s: (ks[0].start_ns + max(k.end_ns for k in ks)) // 2 for s, ks in by_stream.items()}
    ordered = sorted(by_stream, key=lambda s: first[s])
    attention = [s for s in ordered if any(w in k.name.lower() for k in by_stream[s] for w in _ATTENTION)]
    if not attention:
        return [[k for s in ordered for k in by_stream[s]]]
    groups: list[list[str]] = [[s] for s in attention]
    for s in ordered:
        if s in attention:
            continue
        best = min(range(len(groups)), key=lambda g: min(abs(span[s] - span[a]) for a in groups[g]))
        groups[best].append(s)
    if ordered[0] not in attention:
        for g in groups:
            if ordered[0] in g and g is not groups[0]:
                g.remove(ordered[0])
                groups.insert(0, [ordered[0]])
                break
    return [sorted((k for s in g for k in by_stream[s]), key=lambda k: k.start_ns) for g in groups if g]


def first_replay_query(path: Path, graph_id: int) -> int:
    """The seed's replay extraction: one SQL query taking each graph node's first execution
    (``MIN(start)`` per ``graphNodeId``) with its name; returns the rows read."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT gn.graphNodeId, k.start, k.end, s.value, k.streamId "
            "FROM (SELECT graphNodeId, MIN(start) AS first_start FROM CUPTI_ACTIVITY_KIND_KERNEL "
            "WHERE graphId = ? GROUP BY graphNodeId) gn "
            "JOIN CUPTI_ACTIVITY_KIND_KERNEL k "
            "ON k.graphNodeId = gn.graphNodeId AND k.start = gn.first_start "
            "JOIN StringIds s ON k.demangledName = s.id WHERE k.graphId = ? ORDER BY k.start",
            (graph_id, graph_id)).fetchall()
    finally:
        conn.close()
    return len(rows)
