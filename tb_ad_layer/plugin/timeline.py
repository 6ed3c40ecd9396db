"""Per-stream kernel timeline with level-of-detail merging (``api/timeline``).

A run's stored replay holds thousands to tens of thousands of kernels. They are loaded per
selection (one layer, through the ``(layer, start_ns)`` index, or all) into per-stream lanes
sorted by start, once per store version, so a window query is two bisections per stream. A
stream with more than ``max_items`` kernels in the window is answered with fixed-width buckets
(count and busy time each) instead, so a zoomed-out view of a whole forward pass stays small
whatever the trace size.

A lane keeps its kernels as columns (one list per field, transposed from the stored rows
without a Python loop), and a window's answer builds the API records of only the kernels it
returns: a store that was just replaced is ready to answer its first window in milliseconds.
"""
from __future__ import annotations

import threading
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import accumulate, groupby
from operator import attrgetter

from tb_ad_layer.contract.api import TimelineBucket, TimelineKernel, TimelineResponse, TimelineStream
from tb_ad_layer.store.reader import RunStore
from tb_ad_layer.store.records import KernelSpan, StreamRow

DEFAULT_MAX_ITEMS = 4000
MAX_MAX_ITEMS = 100_000


def _us(ns: float) -> float:
    return round(ns / 1000.0, 3)


@dataclass(slots=True)
class Lane:
    """One stream's kernels (of one layer, or all), sorted by start, as columns."""

    stream: str
    label: str
    device: int | None
    ids: list[int]
    shorts: list[str]
    names: list[str]
    starts_ns: list[int]
    ends_ns: list[int]
    layers: list[int | None]
    nodes: list[str | None]
    #: Running maximum of end times: monotone even when kernels overlap, so the first kernel
    #: that can reach into a window is found by bisection.
    max_ends_ns: list[int]

    @classmethod
    def of(cls, spans: Sequence[KernelSpan], label: str, device: int | None) -> Lane:
        """The lane of one stream's spans (in start order)."""
        _, ids, shorts, names, starts_ns, ends_ns, _, layers, nodes = (
            list(c) for c in zip(*spans, strict=True))
        return cls(spans[0].stream, label, device, ids, shorts, names, starts_ns, ends_ns, layers,
                   nodes, list(accumulate(ends_ns, max)))

    def window(self, start_ns: int, end_ns: int) -> list[int]:
        """Positions of the kernels overlapping ``[start_ns, end_ns]``, in start order."""
        lo = bisect_left(self.max_ends_ns, start_ns)
        hi = bisect_right(self.starts_ns, end_ns)
        ends_ns = self.ends_ns
        return [i for i in range(lo, hi) if ends_ns[i] >= start_ns]

    def kernel(self, i: int) -> TimelineKernel:
        """The API record of the kernel at position ``i``."""
        start_ns, end_ns = self.starts_ns[i], self.ends_ns[i]
        return TimelineKernel(id=self.ids[i], kernel=self.shorts[i], name=self.names[i],
                              start_us=_us(start_ns), duration_us=_us(max(0, end_ns - start_ns)),
                              layer=self.layers[i], node=self.nodes[i])


class KernelIndex:
    """A run's stored kernels as lanes, per layer selection, built once per store version."""

    def __init__(self, streams: Sequence[StreamRow],
                 fetch: Callable[[int | None], Iterable[KernelSpan]]) -> None:
        self._stream_info = {s.key: s for s in streams}
        self._rank = {s.key: i for i, s in enumerate(streams)}
        self._fetch = fetch
        self._lanes: dict[int | None, list[Lane]] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_store(cls, store: RunStore, rank: int | None = None) -> KernelIndex:
        """An index over a run store's kernels of ``rank`` (default: the first), read per
        selection when first asked for."""
        return cls(store.streams(rank), lambda layer: store.kernel_spans(layer, rank))

    @classmethod
    def from_rows(cls, streams: Sequence[StreamRow],
                  rows: Iterable[KernelSpan]) -> KernelIndex:
        """An index over spans in memory, for tests and tools."""
        data = sorted(rows, key=lambda r: (r.stream, r.start_ns, r.id))
        return cls(streams, lambda layer: [r for r in data if layer is None or r.layer == layer])

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
            built = []
            for key, group in groupby(self._fetch(layer), key=attrgetter("stream")):
                spans = list(group)
                info = self._stream_info.get(key)
                built.append(Lane.of(spans, info.label if info is not None else key,
                                     info.device if info is not None else spans[0].device))
            rank = self._rank
            lanes = sorted(built, key=lambda lane: (rank.get(lane.stream, len(rank)), lane.stream))
            self._lanes[layer] = lanes
            return lanes


def _union(intervals_ns: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Merge intervals sorted by start: overlapping kernels count once in busy time."""
    out: list[list[int]] = []
    for start_ns, end_ns in intervals_ns:
        if out and start_ns <= out[-1][1]:
            if end_ns > out[-1][1]:
                out[-1][1] = end_ns
        else:
            out.append([start_ns, end_ns])
    return [(start_ns, end_ns) for start_ns, end_ns in out]


def _buckets(kernel_starts_ns: Iterable[int], busy_ns: list[tuple[int, int]], start_ns: int,
             end_ns: int, count: int) -> list[TimelineBucket]:
    """``count`` fixed-width buckets over the window ``[start_ns, end_ns]``; only non-empty ones
    are returned. A kernel counts in the bucket where it starts (clipped to the window); busy
    time is split exactly."""
    width_ns = (end_ns - start_ns) / count if end_ns > start_ns else 1.0
    counts = [0] * count
    bucket_busy_ns = [0.0] * count
    for kernel_start_ns in kernel_starts_ns:
        counts[min(count - 1, int((max(kernel_start_ns, start_ns) - start_ns) / width_ns))] += 1
    for busy_start_ns, busy_end_ns in busy_ns:
        t_ns = float(busy_start_ns)
        i = min(count - 1, int((t_ns - start_ns) / width_ns))
        while t_ns < busy_end_ns and i < count:
            part_ns = min(busy_end_ns, start_ns + (i + 1) * width_ns) - t_ns
            bucket_busy_ns[i] += part_ns
            t_ns += part_ns
            i += 1
    return [TimelineBucket(start_us=_us(start_ns + i * width_ns),
                           end_us=_us(start_ns + (i + 1) * width_ns),
                           count=counts[i], busy_us=_us(bucket_busy_ns[i]))
            for i in range(count) if counts[i] or bucket_busy_ns[i] > 0]


def timeline(index: KernelIndex, run: str, layer: int | None, start_us: float | None,
             end_us: float | None, max_items: int = DEFAULT_MAX_ITEMS,
             rank: int | None = None) -> TimelineResponse:
    """The ``api/timeline`` answer for a validated request (see docs/API.md): ``index`` holds
    ``rank``'s kernels. The window defaults to the extent of the selected kernels."""
    lanes = index.lanes(layer)
    a_ns = round(start_us * 1000) if start_us is not None else \
        min((lane.starts_ns[0] for lane in lanes), default=0)
    b_ns = round(end_us * 1000) if end_us is not None else \
        max((lane.max_ends_ns[-1] for lane in lanes), default=a_ns)
    b_ns = max(a_ns, b_ns)
    span_ns = b_ns - a_ns
    any_lod = False
    streams = []
    for lane in lanes:
        pos = lane.window(a_ns, b_ns)
        starts_ns, ends_ns = lane.starts_ns, lane.ends_ns
        busy_ns = _union((max(starts_ns[i], a_ns), min(ends_ns[i], b_ns)) for i in pos)
        busy_total_ns = sum(end - start for start, end in busy_ns)
        kernels: list[TimelineKernel] = []
        buckets: list[TimelineBucket] = []
        if len(pos) > max_items:
            any_lod = True
            buckets = _buckets((starts_ns[i] for i in pos), busy_ns, a_ns, b_ns, max_items)
        else:
            kernels = [lane.kernel(i) for i in pos]
        streams.append(TimelineStream(
            stream=lane.stream, label=lane.label, device=lane.device, busy_us=_us(busy_total_ns),
            busy_share=round(busy_total_ns / span_ns, 4) if span_ns > 0 else 0.0,
            kernel_count=len(pos), kernels=kernels, buckets=buckets))
    return TimelineResponse(run=run, layer=layer, rank=rank, start_us=_us(a_ns), end_us=_us(b_ns),
                            lod=any_lod, streams=streams)
