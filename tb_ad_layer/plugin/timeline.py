"""Per-stream kernel timeline with level-of-detail merging (``api/timeline``).

The stored replay holds at most tens of thousands of kernels, so a run's kernels are loaded once
per store version into per-stream arrays sorted by start, and every window query is two
bisections per stream. A stream with more than ``max_items`` kernels in the window is answered
with fixed-width buckets (count and busy time each) instead, so a zoomed-out view of a whole
forward pass stays a few hundred kilobytes whatever the trace size.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from tb_ad_layer.store.reader import RunStore

DEFAULT_MAX_ITEMS = 4000
MAX_MAX_ITEMS = 100_000

#: One kernel as the timeline needs it: (id, short, name, start_ns, end_ns, layer, node).
KernelTuple = tuple[int, str, str, int, int, "int | None", "str | None"]


def _us(ns: float) -> float:
    return round(ns / 1000.0, 3)


@dataclass(slots=True)
class Lane:
    """One stream's kernels (of one layer, or all), sorted by start."""

    stream: str
    label: str
    device: int | None
    kernels: list[KernelTuple] = field(default_factory=list)
    starts: list[int] = field(default_factory=list)
    #: Running maximum of end times: monotone even when kernels overlap, so the first kernel
    #: that can reach into a window is found by bisection.
    max_ends: list[int] = field(default_factory=list)

    def add(self, k: KernelTuple) -> None:
        self.kernels.append(k)
        self.starts.append(k[3])
        self.max_ends.append(max(k[4], self.max_ends[-1]) if self.max_ends else k[4])

    def window(self, a: int, b: int) -> list[KernelTuple]:
        """Kernels overlapping ``[a, b]`` (ns), in start order."""
        lo = bisect_left(self.max_ends, a)
        hi = bisect_right(self.starts, b)
        return [k for k in self.kernels[lo:hi] if k[4] >= a]


class KernelIndex:
    """A run's stored kernels, grouped per stream, built once per store version."""

    def __init__(self, streams: Sequence[dict[str, Any]], rows: Iterable[tuple]) -> None:
        self._stream_info = {s["stream"]: s for s in streams}
        self._order = [s["stream"] for s in streams]
        self._all: list[tuple[KernelTuple, str, int | None]] = []
        names: dict[str, str] = {}
        for kid, name, short, start, end, stream, layer, node, device in rows:
            # Kernel names repeat thousands of times; keep one string object per name.
            name = names.setdefault(name, name)
            short = names.setdefault(short, short)
            self._all.append(((kid, short, name, start, end, layer, node), stream, device))
        self._lanes: dict[int | None, list[Lane]] = {}

    @classmethod
    def from_store(cls, store: RunStore) -> "KernelIndex":
        rows = store.query("SELECT id, name, short, start_ns, end_ns, stream, layer, node, device "
                           "FROM kernels ORDER BY start_ns, id")
        return cls(store.streams(), rows)

    @property
    def kernel_count(self) -> int:
        return len(self._all)

    def lanes(self, layer: int | None) -> list[Lane]:
        """Lanes of one layer's kernels (or all), in the streams table's order; a stream with no
        kernel in the selection has no lane, so lanes stay put while the window moves."""
        cached = self._lanes.get(layer)
        if cached is not None:
            return cached
        by_stream: dict[str, Lane] = {}
        for k, stream, device in self._all:
            if layer is not None and k[5] != layer:
                continue
            lane = by_stream.get(stream)
            if lane is None:
                info = self._stream_info.get(stream)
                lane = by_stream[stream] = Lane(
                    stream, info["label"] if info else stream,
                    info["device"] if info else device)
            lane.add(k)
        rank = {s: i for i, s in enumerate(self._order)}
        lanes = sorted(by_stream.values(), key=lambda l: (rank.get(l.stream, len(rank)), l.stream))
        self._lanes[layer] = lanes
        return lanes


def _union(intervals: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Merge sorted-by-start intervals: overlapping kernels count once in busy time."""
    out: list[list[int]] = []
    for s, e in intervals:
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1][1] = e
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def _buckets(kernels: Sequence[KernelTuple], busy: list[tuple[int, int]], a: int, b: int,
             count: int) -> list[dict[str, Any]]:
    """``count`` fixed-width buckets over ``[a, b]``; only non-empty ones are returned."""
    width = (b - a) / count if b > a else 1.0
    counts = [0] * count
    busy_ns = [0.0] * count
    for k in kernels:
        i = min(count - 1, int((max(k[3], a) - a) / width))
        counts[i] += 1
    for s, e in busy:
        i = min(count - 1, int((s - a) / width))
        while s < e and i < count:
            edge = a + (i + 1) * width
            part = min(e, edge) - s
            busy_ns[i] += part
            s += part
            i += 1
    return [{"start_us": _us(a + i * width), "end_us": _us(a + (i + 1) * width),
             "count": counts[i], "busy_us": _us(busy_ns[i])}
            for i in range(count) if counts[i] or busy_ns[i] > 0]


def timeline(index: KernelIndex, layer: int | None, start_us: float | None,
             end_us: float | None, max_items: int = DEFAULT_MAX_ITEMS) -> dict[str, Any]:
    """The ``api/timeline`` body for a validated request (see docs/API.md)."""
    lanes = index.lanes(layer)
    if start_us is None:
        a = min((l.starts[0] for l in lanes), default=0)
    else:
        a = round(start_us * 1000)
    if end_us is None:
        b = max((l.max_ends[-1] for l in lanes), default=a)
    else:
        b = round(end_us * 1000)
    b = max(a, b)
    span = b - a
    any_lod = False
    streams = []
    for lane in lanes:
        ks = lane.window(a, b)
        busy = _union((max(k[3], a), min(k[4], b)) for k in ks)
        busy_total = sum(e - s for s, e in busy)
        entry: dict[str, Any] = {
            "stream": lane.stream, "label": lane.label, "device": lane.device,
            "busy_us": _us(busy_total),
            "busy_share": round(busy_total / span, 4) if span > 0 else 0.0,
            "kernel_count": len(ks), "kernels": [], "buckets": [],
        }
        if len(ks) > max_items:
            any_lod = True
            entry["buckets"] = _buckets(ks, busy, a, b, max_items)
        else:
            entry["kernels"] = [
                {"id": k[0], "kernel": k[1], "name": k[2], "start_us": _us(k[3]),
                 "duration_us": _us(max(0, k[4] - k[3])), "layer": k[5], "node": k[6]}
                for k in ks]
        streams.append(entry)
    return {"start_us": _us(a), "end_us": _us(b), "lod": any_lod, "streams": streams}
