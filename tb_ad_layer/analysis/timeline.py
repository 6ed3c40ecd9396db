"""Wall-time figures of a set of activities in the stored replay: busy and idle per stream,
compute/communication overlap, and the critical path across streams.

These read start and end times of the stored replay (one real replay, the one closest to the
median), not the medians: overlap and waiting exist only on a timeline.
"""
from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable, Sequence

from tb_ad_layer.analysis.categories import COMMUNICATION
from tb_ad_layer.analysis.run import Activity
from tb_ad_layer.contract.analysis import CriticalPath, ExposedStretch, Overlap, PathStep, StreamIdle


def us(ns: float) -> float:
    """ns -> µs rounded to the nanosecond, as every figure of the report."""
    return round(ns / 1000.0, 3)


def merge(intervals: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """The union of [start, end) intervals as sorted disjoint intervals."""
    out: list[tuple[int, int]] = []
    for s, e in sorted(intervals):
        e = max(s, e)
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out


def length(merged: Sequence[tuple[int, int]]) -> int:
    """Total length of disjoint intervals."""
    return sum(e - s for s, e in merged)


def intersection(a: Sequence[tuple[int, int]], b: Sequence[tuple[int, int]]) -> int:
    """Length of the intersection of two sorted disjoint interval lists."""
    i = j = total = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if hi > lo:
            total += hi - lo
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def difference(a: tuple[int, int], b: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The parts of interval ``a`` outside the sorted disjoint intervals ``b``."""
    lo, hi = a
    out: list[tuple[int, int]] = []
    i = max(0, bisect.bisect_right(b, (lo, lo)) - 1)
    while i < len(b) and b[i][0] < hi:
        s, e = b[i]
        if e > lo:
            if s > lo:
                out.append((lo, s))
            lo = max(lo, e)
        i += 1
    if hi > lo:
        out.append((lo, hi))
    return out


def span(acts: Sequence[Activity]) -> tuple[int, int]:
    """First start and last end of ``acts`` (0, 0 when empty)."""
    if not acts:
        return 0, 0
    return min(a.k.start_ns for a in acts), max(a.k.end_ns for a in acts)


def stream_idle(acts: Sequence[Activity], labels: dict[str, str]) -> list[StreamIdle]:
    """Per stream of ``acts``: busy, own span, and idle within the span of all of ``acts``;
    busiest first."""
    lo, hi = span(acts)
    by_stream: dict[str, list[Activity]] = defaultdict(list)
    for a in acts:
        by_stream[a.k.stream].append(a)
    out = []
    for key, items in by_stream.items():
        busy = length(merge((a.k.start_ns, a.k.end_ns) for a in items))
        s0, s1 = span(items)
        out.append(StreamIdle(stream=key, label=labels.get(key, key),
                              kernel_count=sum(1 for a in items if not a.memory),
                              busy_us=us(busy), span_us=us(s1 - s0), idle_us=us(hi - lo - busy)))
    out.sort(key=lambda s: (-s.busy_us, s.stream))
    return out


def overlap(acts: Sequence[Activity]) -> Overlap:
    """Compute and communication wall time, and how much of the communication compute hides."""
    comm = merge((a.k.start_ns, a.k.end_ns) for a in acts if a.category == COMMUNICATION)
    compute = merge((a.k.start_ns, a.k.end_ns) for a in acts
                    if a.category != COMMUNICATION and not a.memory)
    comm_ns = length(comm)
    hidden = intersection(comm, compute)
    exposed = sorted(
        (ExposedStretch(kernel_id=a.k.id, stream=a.k.stream, start_us=us(s), end_us=us(e))
         for a in acts if a.category == COMMUNICATION
         for s, e in difference((a.k.start_ns, a.k.end_ns), compute)),
        key=lambda x: (x.start_us, x.kernel_id))
    return Overlap(compute_us=us(length(compute)), communication_us=us(comm_ns),
                   hidden_us=us(hidden), exposed_us=us(comm_ns - hidden),
                   overlap_share=round(hidden / comm_ns, 4) if comm_ns else None,
                   exposed=exposed)


def critical_path(acts: Sequence[Activity]) -> CriticalPath:
    """From the activity that ends last, back through the activity that ended last before each
    one began, on any stream: the chain that sets the wall time (the trace records no
    dependencies, so the latest predecessor stands for the one waited on)."""
    lo, hi = span(acts)
    if not acts:
        return CriticalPath(span_us=0.0, busy_us=0.0, wait_us=0.0, streams={}, steps=[])
    ordered = sorted(acts, key=lambda a: (a.k.end_ns, a.k.end_ns - a.k.start_ns, a.k.id))
    ends = [a.k.end_ns for a in ordered]
    path = [ordered[-1]]
    while True:
        cur = path[-1]
        i = bisect.bisect_right(ends, cur.k.start_ns) - 1
        if i < 0:
            break
        path.append(ordered[i])
    path.reverse()
    steps = []
    busy: dict[str, int] = defaultdict(int)
    prev = lo
    total = 0
    for a in path:
        d = max(0, a.k.end_ns - a.k.start_ns)
        busy[a.k.stream] += d
        total += d
        steps.append(PathStep(kernel_id=a.k.id, stream=a.k.stream, start_us=us(a.k.start_ns),
                              end_us=us(a.k.end_ns), wait_us=us(max(0, a.k.start_ns - prev))))
        prev = a.k.end_ns
    return CriticalPath(span_us=us(hi - lo), busy_us=us(total), wait_us=us(hi - lo - total),
                        streams={k: us(v) for k, v in sorted(busy.items(), key=lambda kv: -kv[1])},
                        steps=steps)
