"""Per-stream kernel timeline with level-of-detail merging (``api/timeline``).

A run's stored replay holds thousands to tens of thousands of kernels. They are loaded per
selection (one layer, through the ``(layer, start_ns)`` index, or all) into per-stream lanes
sorted by start, once per store version, so a window query is two bisections per stream. A
stream with more than ``max_items`` kernels in the window is answered with fixed-width buckets
(count and busy time each) instead, so a zoomed-out view of a whole forward pass stays small
whatever the trace size.

Panning asks for a new window at every step, so the answer is assembled from each kernel's JSON
text, encoded once per lane, rather than re-encoding thousands of objects per request.
"""
from __future__ import annotations

import json
import threading
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any, Callable, Iterable, Sequence

from tb_ad_layer.store.reader import RunStore

DEFAULT_MAX_ITEMS = 4000
MAX_MAX_ITEMS = 100_000

#: One kernel as the timeline needs it: (id, short, name, start_ns, end_ns, layer, node).
KernelTuple = tuple[int, str, str, int, int, "int | None", "str | None"]
#: A stored row as fetched: (id, name, short, start_ns, end_ns, stream, layer, node, device).
Row = tuple[int, str, str, int, int, str, "int | None", "str | None", "int | None"]


def _us(ns: float) -> float:
    return round(ns / 1000.0, 3)


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


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
    _json: list[str] | None = None
    _json_lock: threading.Lock = field(default_factory=threading.Lock)

    def window(self, a: int, b: int) -> list[int]:
        """Positions of the kernels overlapping ``[a, b]`` (ns), in start order."""
        lo = bisect_left(self.max_ends, a)
        hi = bisect_right(self.starts, b)
        ks = self.kernels
        return [i for i in range(lo, hi) if ks[i][4] >= a]

    def kernel_json(self) -> list[str]:
        """Each kernel's API object as JSON text, built on first use. Under a lock: fifty
        clients panning at once would otherwise all encode the same ten thousand kernels."""
        if self._json is not None:
            return self._json
        with self._json_lock:
            if self._json is None:
                self._json = [
                    _dumps({"id": k[0], "kernel": k[1], "name": k[2], "start_us": _us(k[3]),
                            "duration_us": _us(max(0, k[4] - k[3])), "layer": k[5],
                            "node": k[6]})
                    for k in self.kernels]
        return self._json


class KernelIndex:
    """A run's stored kernels as lanes, per layer selection, built once per store version."""

    def __init__(self, streams: Sequence[dict[str, Any]],
                 fetch: Callable[[int | None], Iterable[Row]]) -> None:
        self._stream_info = {s["stream"]: s for s in streams}
        self._rank = {s["stream"]: i for i, s in enumerate(streams)}
        self._fetch = fetch
        self._lanes: dict[int | None, list[Lane]] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_store(cls, store: RunStore) -> "KernelIndex":
        def fetch(layer: int | None) -> list[Row]:
            sql = "SELECT id, name, short, start_ns, end_ns, stream, layer, node, device FROM kernels"
            if layer is None:
                return store.query(sql + " ORDER BY start_ns, id")
            return store.query(sql + " WHERE layer=? ORDER BY start_ns, id", (layer,))
        return cls(store.streams(), fetch)

    @classmethod
    def from_rows(cls, streams: Sequence[dict[str, Any]], rows: Iterable[Row]) -> "KernelIndex":
        """An index over rows in memory (sorted by start), for tests and tools."""
        data = list(rows)
        return cls(streams, lambda layer: [r for r in data if layer is None or r[6] == layer])

    def lanes(self, layer: int | None) -> list[Lane]:
        """Lanes of one layer's kernels (or all), in the streams table's order. A stream with no
        kernel in the selection has no lane; lanes stay put while the window moves."""
        cached = self._lanes.get(layer)
        if cached is not None:
            return cached
        with self._lock:  # one build per selection, even when 50 clients ask at once
            cached = self._lanes.get(layer)
            if cached is not None:
                return cached
            by_stream: dict[str, list[KernelTuple]] = {}
            devices: dict[str, int | None] = {}
            names: dict[str, str] = {}
            intern = names.setdefault
            for kid, name, short, start, end, stream, klayer, node, device in self._fetch(layer):
                ks = by_stream.get(stream)
                if ks is None:
                    ks = by_stream[stream] = []
                    devices[stream] = device
                # Kernel names repeat thousands of times; keep one string object per name.
                ks.append((kid, intern(short, short), intern(name, name), start, end, klayer,
                           node))
            built = []
            for stream, ks in by_stream.items():
                info = self._stream_info.get(stream)
                built.append(Lane(stream, info["label"] if info else stream,
                                  info["device"] if info else devices[stream], ks,
                                  [k[3] for k in ks], list(accumulate((k[4] for k in ks), max))))
            rank = self._rank
            lanes = sorted(built, key=lambda l: (rank.get(l.stream, len(rank)), l.stream))
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


def _buckets(starts: Iterable[int], busy: list[tuple[int, int]], a: int, b: int,
             count: int) -> list[dict[str, Any]]:
    """``count`` fixed-width buckets over ``[a, b]``; only non-empty ones are returned. A kernel
    counts in the bucket where it starts (clipped to the window); busy time is split exactly."""
    width = (b - a) / count if b > a else 1.0
    counts = [0] * count
    busy_ns = [0.0] * count
    for s in starts:
        counts[min(count - 1, int((max(s, a) - a) / width))] += 1
    for s, e in busy:
        i = min(count - 1, int((s - a) / width))
        while s < e and i < count:
            part = min(e, a + (i + 1) * width) - s
            busy_ns[i] += part
            s += part
            i += 1
    return [{"start_us": _us(a + i * width), "end_us": _us(a + (i + 1) * width),
             "count": counts[i], "busy_us": _us(busy_ns[i])}
            for i in range(count) if counts[i] or busy_ns[i] > 0]


def timeline_json(index: KernelIndex, layer: int | None, start_us: float | None,
                  end_us: float | None, max_items: int = DEFAULT_MAX_ITEMS,
                  head: dict[str, Any] | None = None) -> str:
    """The ``api/timeline`` body as JSON text for a validated request (see docs/API.md);
    ``head`` holds extra top-level fields (run, layer). The window defaults to the extent of
    the selected kernels."""
    lanes = index.lanes(layer)
    a = round(start_us * 1000) if start_us is not None else \
        min((l.starts[0] for l in lanes), default=0)
    b = round(end_us * 1000) if end_us is not None else \
        max((l.max_ends[-1] for l in lanes), default=a)
    b = max(a, b)
    span = b - a
    any_lod = False
    parts = []
    for lane in lanes:
        pos = lane.window(a, b)
        ks = lane.kernels
        busy = _union((max(ks[i][3], a), min(ks[i][4], b)) for i in pos)
        busy_total = sum(e - s for s, e in busy)
        entry: dict[str, Any] = {
            "stream": lane.stream, "label": lane.label, "device": lane.device,
            "busy_us": _us(busy_total),
            "busy_share": round(busy_total / span, 4) if span > 0 else 0.0,
            "kernel_count": len(pos), "buckets": [],
        }
        if len(pos) > max_items:
            any_lod = True
            entry["buckets"] = _buckets((ks[i][3] for i in pos), busy, a, b, max_items)
            entry["kernels"] = []
            parts.append(_dumps(entry))
        else:
            texts = lane.kernel_json()
            parts.append(_dumps(entry)[:-1] + ',"kernels":[' + ",".join(texts[i] for i in pos)
                         + "]}")
    top = {**(head or {}), "start_us": _us(a), "end_us": _us(b), "lod": any_lod}
    return _dumps(top)[:-1] + ',"streams":[' + ",".join(parts) + "]}"


def timeline(index: KernelIndex, layer: int | None, start_us: float | None,
             end_us: float | None, max_items: int = DEFAULT_MAX_ITEMS) -> dict[str, Any]:
    """:func:`timeline_json` decoded."""
    return json.loads(timeline_json(index, layer, start_us, end_us, max_items))
