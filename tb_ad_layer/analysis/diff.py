"""``tb-ad-layer diff``: two runs compared per step, layer, group and node, with the noise taken
from the replay statistics, and a verdict CI can gate on.

A side's time is the sum of its kernels' medians over the replays. A node's noise is the sum of
its kernels' spread (p90 - p50; the whole duration of an activity seen in one replay of many,
whose spread is unknown); a layer's or group's adds its nodes' in quadrature, and the two
sides' combine the same way. A change counts when it is beyond the gate (``--gate PCT`` of the
first run's time), beyond :data:`NOISE_FACTOR` times the noise, and at least
:data:`MIN_DELTA_US`: a change a replay-to-replay wobble could make is not a regression.
"""
from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from typing import Literal

from tb_ad_layer.analysis.categories import Categories, load_categories
from tb_ad_layer.analysis.run import Activity, RunData, load_run
from tb_ad_layer.analysis.timeline import us
from tb_ad_layer.contract.analysis import Diff, DiffEntry, Verdict
from tb_ad_layer.errors import InputError
from tb_ad_layer.store.reader import RunStore

#: Default gate, percent.
DEFAULT_GATE_PCT = 5.0
#: A change must exceed this many times the combined noise...
NOISE_FACTOR = 2.0
#: ...and this many µs.
MIN_DELTA_US = 0.1
#: Entries listed at most per list.
MAX_ENTRIES = 200

Level = Literal["step", "layer", "group", "node"]
Key = tuple[Level, int | None, str | None, str | None]


def spread_ns(a: Activity, replays: int) -> float:
    """An activity's replay-to-replay spread (ns): p90 - p50 over the replays; the whole of
    its duration when seen once in a run of ``replays`` > 1. The noise of a sum of activities
    adds its nodes' spreads (a node's kernels move together) in quadrature (:func:`noise_ns`)."""
    if replays > 1 and (a.k.replays or 0) <= 1:
        # Seen once in a run of many replays (an eager copy between replays): its spread
        # is unknown, so the whole of it may be noise.
        return a.typical_ns
    return max(0.0, (a.k.p90_ns if a.k.p90_ns is not None else a.typical_ns) - a.typical_ns)


def noise_ns(acts: Iterable[Activity], replays: int) -> float:
    """The replay noise of the summed typical time of ``acts`` (ns), as :func:`_levels`
    reckons a layer's: each node's spreads summed, the nodes' (and each unmapped activity's)
    in quadrature."""
    per_node: dict[tuple[int | None, str], float] = defaultdict(float)
    var = 0.0
    for a in acts:
        spread = spread_ns(a, replays)
        if a.node is not None:
            per_node[(a.k.layer, a.node.id)] += spread
        else:
            var += spread * spread
    return math.sqrt(var + sum(v * v for v in per_node.values()))


def _levels(data: RunData) -> dict[Key, list[float]]:
    """Key -> [time ns, noise variance ns²]."""
    out: dict[Key, list[float]] = defaultdict(lambda: [0.0, 0.0])
    node_noise: dict[Key, float] = defaultdict(float)
    for a in data.activities:
        layer = a.k.layer
        group: str | None = a.group
        node = a.node.id if a.node is not None else None
        spread = spread_ns(a, data.replays)
        keys: list[Key] = [("step", None, None, None), ("layer", layer, None, None),
                           ("group", layer, group, None)]
        if node is not None:
            keys.append(("node", layer, group, node))
            node_noise[("node", layer, group, node)] += spread
        else:
            # Unmapped kernels have no node: their spread counts in the group as is.
            for key in keys:
                out[key][1] += spread * spread
        for key in keys:
            out[key][0] += a.typical_ns
    for (_, layer, group, node), noise in node_noise.items():
        var = noise * noise
        path: list[Key] = [("step", None, None, None), ("layer", layer, None, None),
                           ("group", layer, group, None), ("node", layer, group, node)]
        for key in path:
            out[key][1] += var
    return out


def _entry(key: Key, a: list[float], b: list[float]) -> DiffEntry:
    level, layer, group, node = key
    delta = b[0] - a[0]
    return DiffEntry(level=level, layer=layer, group=group, node=node, a_us=us(a[0]),
                     b_us=us(b[0]), delta_us=us(delta),
                     delta_pct=round(100.0 * delta / a[0], 3) if a[0] > 0 else None,
                     noise_us=us(math.sqrt(a[1] + b[1])))


def beyond(e: DiffEntry, gate_pct: float) -> bool:
    """Whether a change is beyond the gate, the noise and the minimum."""
    size = abs(e.delta_us)
    pct = abs(e.delta_pct) if e.delta_pct is not None else math.inf
    return size >= MIN_DELTA_US and size > NOISE_FACTOR * e.noise_us and pct > gate_pct


def diff_runs(a: RunData, b: RunData, gate_pct: float = DEFAULT_GATE_PCT) -> Diff:
    """Compare run ``b`` with run ``a`` (the baseline)."""
    la, lb = _levels(a), _levels(b)
    zero = [0.0, 0.0]
    step = _entry(("step", None, None, None), la.get(("step", None, None, None), zero),
                  lb.get(("step", None, None, None), zero))
    order = {"step": 0, "layer": 1, "group": 2, "node": 3}
    regressions: list[DiffEntry] = []
    improvements: list[DiffEntry] = []
    for key in sorted(set(la) & set(lb), key=lambda k: (order[k[0]], k[1] if k[1] is not None
                                                        else -1, k[2] or "", k[3] or "")):
        e = _entry(key, la[key], lb[key])
        if beyond(e, gate_pct):
            (regressions if e.delta_us > 0 else improvements).append(e)
    regressions.sort(key=lambda e: (-e.delta_us, order[e.level]))
    improvements.sort(key=lambda e: (e.delta_us, order[e.level]))
    notes = []
    only_a = sum(1 for k in la if k[0] == "node" and k not in lb)
    only_b = sum(1 for k in lb if k[0] == "node" and k not in la)
    if only_a or only_b:
        notes.append(f"{only_a} node(s) only in {a.run}, {only_b} only in {b.run}: compared "
                     f"through their layers and groups")
    for run in (a, b):
        if run.replays <= 1:
            notes.append(f"{run.run} holds one pass: no replay statistics, so no noise estimate")
    for name, entries in (("regressions", regressions), ("improvements", improvements)):
        if len(entries) > MAX_ENTRIES:
            notes.append(f"{len(entries)} {name}; the largest {MAX_ENTRIES} are listed")
            del entries[MAX_ENTRIES:]
    verdict: Verdict = "regression" if regressions else \
        "improvement" if improvements else "unchanged"
    return Diff(a_run=a.run, b_run=b.run, gate_pct=gate_pct, verdict=verdict, step=step,
                regressions=regressions, improvements=improvements, notes=notes)


def untraced(store: RunStore) -> str | None:
    """Why ``store`` cannot be compared (it has no trace), or None."""
    if store.meta.trace is None:
        return f"run {store.meta.run!r} has no trace: there is no time to compare"
    return None


def diff_stores(a: RunStore, b: RunStore, gate_pct: float = DEFAULT_GATE_PCT,
                categories: Categories | None = None) -> Diff:
    """Load both stores and compare them (the one function the CLI and the plugin call).

    Raises:
        InputError: a run has no trace.
    """
    for store in (a, b):
        reason = untraced(store)
        if reason is not None:
            raise InputError(reason, path=store.path)
    cats = categories if categories is not None else load_categories()
    return diff_runs(load_run(a, cats), load_run(b, cats), gate_pct)
