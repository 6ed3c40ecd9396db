"""Tails: each node's and kernel's p50/p90/p99/max over every replay, and which nodes' p99 is far
above their median.

A node's percentile is the sum of its kernels' percentiles: exact for a node of one kernel, an
upper bound for several (their slow replays need not coincide). Kernels of a single pass have no
spread: every percentile is their own duration.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from tb_ad_layer.analysis.run import Activity
from tb_ad_layer.analysis.timeline import us
from tb_ad_layer.contract.analysis import KernelTail, NodeTail

#: A node is flagged when its p99 is at least this many times its median...
TAIL_RATIO = 1.5
#: ...and at least this far above it (µs): a 2 µs kernel that once took 3.5 µs is not news.
TAIL_MIN_US = 1.0


def kernel_tail(a: Activity) -> KernelTail:
    """One kernel's percentiles (its own duration when the run has one pass)."""
    k = a.k
    own = float(max(0, k.end_ns - k.start_ns))
    p50 = a.typical_ns
    return KernelTail(kernel_id=k.id, kernel=k.short, replays=k.replays or 1, p50_us=us(p50),
                      p90_us=us(k.p90_ns if k.p90_ns is not None else p50),
                      p99_us=us(k.p99_ns if k.p99_ns is not None else p50),
                      max_us=us(k.max_ns if k.max_ns is not None else own))


def flagged(p50_us: float, p99_us: float, replays: int) -> bool:
    """The flag rule: p99 >= TAIL_RATIO x p50 and p99 - p50 >= TAIL_MIN_US, over 2+ replays."""
    return replays > 1 and p99_us >= TAIL_RATIO * p50_us and p99_us - p50_us >= TAIL_MIN_US


def node_tails(acts: Sequence[Activity]) -> list[NodeTail]:
    """Per node with kernels, largest p99 - p50 first."""
    by_node: dict[tuple[int | None, str], list[Activity]] = defaultdict(list)
    for a in acts:
        if a.node is not None:
            by_node[(a.node.layer, a.node.id)].append(a)
    out = []
    for (layer, node), items in by_node.items():
        ks = [kernel_tail(a) for a in items]
        replays = min(k.replays for k in ks)
        p50 = round(sum(k.p50_us for k in ks), 3)
        p99 = round(sum(k.p99_us for k in ks), 3)
        out.append(NodeTail(layer=layer, node=node, replays=replays, p50_us=p50,
                            p90_us=round(sum(k.p90_us for k in ks), 3), p99_us=p99,
                            max_us=round(sum(k.max_us for k in ks), 3),
                            flagged=flagged(p50, p99, replays), kernels=ks))
    out.sort(key=lambda t: (-(t.p99_us - t.p50_us), t.layer if t.layer is not None else -1, t.node))
    return out
