"""The host side of the step: GPU idle gaps and the host calls that explain them (a
synchronisation running across the gap, a launch that began after the GPU had gone idle),
launches per step, time in synchronisations, and copies by direction and pinned/pageable memory.

Reads the store's ``host_calls`` and ``memcpy`` tables; where the trace lacked them the figures
are null and the gaps are still listed, unexplained.
"""
from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from typing import Literal

from tb_ad_layer.analysis.run import Activity, RunData
from tb_ad_layer.analysis.timeline import merge, span, us
from tb_ad_layer.contract.analysis import CopyGroup, HostGap, HostSide

#: Idle gaps shorter than this (ns) are launch jitter, not findings.
MIN_GAP_NS = 1000
_LAUNCH = re.compile(r"Launch", re.IGNORECASE)
_GRAPH_LAUNCH = re.compile(r"GraphLaunch", re.IGNORECASE)


def host_side(data: RunData, acts: Sequence[Activity]) -> HostSide:
    """The host figures of the step made of ``acts``."""
    lo, hi = span(acts)
    busy = merge((a.k.start_ns, a.k.end_ns) for a in acts)
    gaps_ns = [(busy[i][1], busy[i + 1][0]) for i in range(len(busy) - 1)]
    idle = sum(e - s for s, e in gaps_ns)
    calls = data.host_calls
    by_start = sorted(acts, key=lambda a: (a.k.start_ns, a.k.id))
    first_at: dict[int, Activity] = {}
    for a in by_start:
        first_at.setdefault(a.k.start_ns, a)
    launch_of: dict[int, tuple[int, str]] = {}
    syncs: list[tuple[int, int, str]] = []
    if calls is not None:
        for c in calls:
            if c.kind == "sync":
                syncs.append((c.start_ns, c.end_ns, c.name))
            elif c.correlation is not None and c.correlation not in launch_of:
                launch_of[c.correlation] = (c.start_ns, c.name)
    gaps = []
    explained = 0
    for g0, g1 in gaps_ns:
        if g1 - g0 < MIN_GAP_NS:
            continue
        nxt = first_at.get(g1)
        cause: Literal["sync", "late_launch", "unexplained"] = "unexplained"
        call = None
        sync = next((s for s in syncs if s[0] < g1 and s[1] > g0), None)
        if sync is not None:
            cause, call = "sync", sync[2]
        elif nxt is not None and nxt.k.correlation is not None \
                and nxt.k.correlation in launch_of and launch_of[nxt.k.correlation][0] > g0:
            cause, call = "late_launch", launch_of[nxt.k.correlation][1]
        if cause != "unexplained":
            explained += g1 - g0
        node = nxt.node if nxt is not None else None
        gaps.append(HostGap(start_us=us(g0), duration_us=us(g1 - g0), cause=cause,
                            call=call, layer=node.layer if node else (nxt.k.layer if nxt else None),
                            node=node.id if node else None))
    gaps.sort(key=lambda g: (-g.duration_us, g.start_us))
    launches = graph_launches = sync_calls = None
    sync_us = None
    if calls is not None:
        inside = [c for c in calls if c.start_ns <= hi and c.end_ns >= lo - (hi - lo)]
        launches = sum(1 for c in calls if c.kind == "runtime" and _LAUNCH.search(c.name))
        graph_launches = sum(1 for c in calls if _GRAPH_LAUNCH.search(c.name))
        sync_calls = sum(1 for c in inside if c.kind == "sync")
        sync_us = us(sum(c.end_ns - c.start_ns for c in inside if c.kind == "sync"))
    copies = None
    if data.memcpy is not None:
        groups: dict[tuple[str, str | None, str | None], list[int]] = defaultdict(lambda: [0, 0, 0, 1])
        for m in data.memcpy:
            g = groups[(m.direction, m.src_kind, m.dst_kind)]
            g[0] += 1
            if m.bytes is None:
                g[3] = 0
            else:
                g[1] += m.bytes
            g[2] += max(0, m.end_ns - m.start_ns)
        copies = [CopyGroup(direction=d, src_kind=s, dst_kind=t,
                            pageable="Pageable" in (s or "") or "Pageable" in (t or ""),
                            count=v[0], bytes=v[1] if v[3] else None, time_us=us(v[2]))
                  for (d, s, t), v in groups.items()]
        copies.sort(key=lambda c: (-c.time_us, c.direction))
    return HostSide(runtime_recorded=calls is not None, launches=launches,
                    graph_launches=graph_launches, sync_calls=sync_calls, sync_us=sync_us,
                    gaps=gaps, idle_us=us(idle), explained_us=us(explained), copies=copies)
