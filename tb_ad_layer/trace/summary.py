"""Per-layer ``trace_summary`` and per-node ``kernels`` records, built as the contract's records
(:class:`~tb_ad_layer.contract.document.TraceSummary`, :class:`~tb_ad_layer.contract.document.NodeKernel`):
what the layer documents store, made once here and never reshaped on the way.

Times are microseconds, rounded to the nanosecond. ``duration_us`` of a kernel is its typical
duration: the median over all replays when the trace has several, else its own duration in the
shown replay/pass (``replay_duration_us``, which with ``start_us`` places it on the timeline).
``start_us`` is relative to ``origin_ns``, the start of the shown replay/pass.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from tb_ad_layer.contract.cli import SequenceKernel
from tb_ad_layer.contract.document import (
    KernelStats,
    NodeKernel,
    StreamFigures,
    TraceSummary,
    UnmappedKernel,
)
from tb_ad_layer.trace.kernel import KIND_KERNEL, KIND_MEMCPY, KIND_MEMSET, Kernel

UNMAPPED_GROUP = "unmapped"


def _us(ns: float) -> float:
    return round(ns / 1000.0, 3)


def busy_ns(intervals: Iterable[tuple[int, int]]) -> int:
    """Length of the union of [start, end) intervals: overlapping kernels count once."""
    total = 0
    cur_start = cur_end = None
    for s, e in sorted(intervals):
        e = max(s, e)
        if cur_end is None or s > cur_end:
            if cur_end is not None:
                total += cur_end - cur_start  # type: ignore[operator]
            cur_start, cur_end = s, e
        else:
            cur_end = max(cur_end, e)
    if cur_end is not None:
        total += cur_end - cur_start  # type: ignore[operator]
    return total


def kernel_stats(k: Kernel) -> KernelStats | None:
    """A kernel's duration statistics over the replays, in µs; None for a single replay."""
    if k.stats is None:
        return None
    return KernelStats(count=k.stats.count, median_us=_us(k.stats.median_ns),
                       min_us=_us(k.stats.min_ns), max_us=_us(k.stats.max_ns))


def kernel_record(k: Kernel, origin_ns: int) -> NodeKernel:
    """One entry of a node's ``kernels`` list."""
    return NodeKernel(kernel=k.short, name=k.name, duration_us=_us(k.typical_ns),
                      replay_duration_us=_us(k.duration_ns), stream=k.stream_key,
                      start_us=_us(k.start_ns - origin_ns), stats=kernel_stats(k))


def sequence_kernel(k: Kernel, origin_ns: int) -> SequenceKernel:
    """One activity of a ``tb-ad-layer kernels`` sequence: its node record, plus its kind and
    the node it was mapped to."""
    return SequenceKernel(kernel=k.short, name=k.name, duration_us=_us(k.typical_ns),
                          replay_duration_us=_us(k.duration_ns), stream=k.stream_key,
                          start_us=_us(k.start_ns - origin_ns), stats=kernel_stats(k),
                          kind=k.kind, node=k.node)


def node_trace_kernels(kernels: Iterable[Kernel], origin_ns: int) -> dict[str, list[NodeKernel]]:
    """Node name -> its kernels' records, in start order (unmapped kernels are left out)."""
    out: dict[str, list[NodeKernel]] = defaultdict(list)
    for k in sorted(kernels, key=lambda k: (k.start_ns, k.index)):
        if k.node is not None:
            out[k.node].append(kernel_record(k, origin_ns))
    return dict(out)


def stream_figures(kernels: Sequence[Kernel]) -> list[StreamFigures]:
    """Per stream: kernel count, busy time (union), span (first start to last end), idle gaps."""
    by_stream: dict[str, list[Kernel]] = defaultdict(list)
    for k in kernels:
        by_stream[k.stream_key].append(k)
    out = []
    for key in sorted(by_stream, key=lambda s: (-len(by_stream[s]), s)):  # busiest stream first
        ks = by_stream[key]
        busy = busy_ns((k.start_ns, k.end_ns) for k in ks)
        span = max(k.end_ns for k in ks) - min(k.start_ns for k in ks)
        out.append(StreamFigures(stream=key,
                                 kernel_count=sum(1 for k in ks if k.kind == KIND_KERNEL),
                                 busy_us=_us(busy), span_us=_us(span),
                                 gaps_us=_us(max(0, span - busy))))
    return out


def layer_summary(kernels: Sequence[Kernel], node_group: Mapping[str, str],
                  origin_ns: int) -> TraceSummary:
    """``trace_summary`` of one layer.

    ``total_duration_us`` sums the typical durations of all its GPU activities (kernels and
    copies); ``kernel_count`` counts kernels only, ``memcpy_count``/``memset_count`` the copies
    and fills; ``span_us`` is its wall time across streams; ``groups`` splits the total by the
    mapped nodes' groups (``unmapped`` for the rest); ``unmapped`` lists what found no node.
    """
    groups: dict[str, float] = defaultdict(float)
    unmapped = []
    for k in sorted(kernels, key=lambda k: (k.start_ns, k.index)):
        group = node_group.get(k.node, "other") if k.node is not None else UNMAPPED_GROUP
        groups[group] += k.typical_ns
        if k.node is None:
            unmapped.append(UnmappedKernel(kernel=k.short, name=k.name,
                                           duration_us=_us(k.typical_ns), stream=k.stream_key,
                                           start_us=_us(k.start_ns - origin_ns),
                                           reason=k.unmapped_reason or "unmapped"))
    start = min((k.start_ns for k in kernels), default=origin_ns)
    end = max((k.end_ns for k in kernels), default=origin_ns)
    return TraceSummary(
        total_duration_us=_us(sum(k.typical_ns for k in kernels)),
        kernel_count=sum(1 for k in kernels if k.kind == KIND_KERNEL),
        memcpy_count=sum(1 for k in kernels if k.kind == KIND_MEMCPY),
        memset_count=sum(1 for k in kernels if k.kind == KIND_MEMSET),
        num_streams=len({k.stream_key for k in kernels}),
        start_us=_us(start - origin_ns),
        span_us=_us(end - start),
        groups={g: _us(v) for g, v in sorted(groups.items(), key=lambda kv: -kv[1])},
        streams=stream_figures(kernels) if kernels else [],
        unmapped=unmapped,
    )
