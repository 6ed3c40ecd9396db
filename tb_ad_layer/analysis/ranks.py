"""Every rank of a multi-GPU run side by side: GPU time per rank and layer, the stragglers, and
the communication per rank and layer where collectives are mapped.

One source for ``tb-ad-layer report`` (``ranks``, ``stragglers``) and the plugin's
``api/ranks``.

The straggler rule: at each layer, a rank's *compute time* (its kernels' median durations over
the replays, communication kernels left out) is compared with the median of the other ranks'.
It is a straggler when the excess is more than :data:`~tb_ad_layer.analysis.diff.NOISE_FACTOR`
times the combined replay noise (the rank's and the median of the others', in quadrature;
each one reckoned as ``diff`` does: a node's kernels' p90 - p50 summed, the nodes' in
quadrature), more than :data:`~tb_ad_layer.analysis.diff.DEFAULT_GATE_PCT` percent of the
others' median, and at least :data:`~tb_ad_layer.analysis.diff.MIN_DELTA_US`. Communication is
left out because a synchronous collective absorbs the wait: the ranks that are not slow spend
the straggler's excess waiting in their all-reduce, so whole layer times even out; that wait
is what ``communication_us`` shows per rank.
"""
from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence

from tb_ad_layer.analysis.categories import Categories, load_categories
from tb_ad_layer.analysis.diff import DEFAULT_GATE_PCT, MIN_DELTA_US, NOISE_FACTOR, noise_ns
from tb_ad_layer.analysis.run import Activity, RunData, load_run
from tb_ad_layer.analysis.timeline import us
from tb_ad_layer.contract.analysis import RankLayer, RanksResponse, RankTime, Straggler
from tb_ad_layer.store.reader import RunStore

#: The category of collectives (analysis/categories.json).
COMMUNICATION = "communication"

RULE = (f"a rank is a straggler at a layer when its compute time (GPU time without "
        f"communication kernels) exceeds the median of the other ranks' by more than "
        f"{NOISE_FACTOR:g} times the combined replay noise (p90 - p50 per node, in quadrature), "
        f"more than {DEFAULT_GATE_PCT:g} % and at least {MIN_DELTA_US:g} µs")


def load_ranks(store: RunStore, categories: Categories) -> dict[int, RunData]:
    """Each rank's run data, by rank; empty for a run without a trace. The nodes are read once,
    for the first rank, and shared."""
    out: dict[int, RunData] = {}
    known = None
    for r in store.ranks():
        data = load_run(store, categories, r.rank, known)
        known = data.nodes
        out[r.rank] = data
    return out


def _rank_layers(data: RunData, comm_layers: set[int]) -> list[RankLayer]:
    by_layer: dict[int, list[Activity]] = defaultdict(list)
    for a in data.activities:
        if a.k.layer is not None:
            by_layer[a.k.layer].append(a)
    out = []
    for layer in sorted(set(data.kinds) | set(by_layer)):
        acts = by_layer.get(layer, [])
        compute = [a for a in acts if a.category != COMMUNICATION]
        comm = sum(a.typical_ns for a in acts if a.category == COMMUNICATION)
        out.append(RankLayer(layer=layer, gpu_time_us=us(sum(a.typical_ns for a in acts)),
                             compute_us=us(sum(a.typical_ns for a in compute)),
                             noise_us=us(noise_ns(compute, data.replays)),
                             communication_us=us(comm) if layer in comm_layers else None))
    return out


def rank_times(store: RunStore, runs: dict[int, RunData]) -> list[RankTime]:
    """Every rank with its GPU time, whole and per layer, by rank."""
    comm_layers = {a.k.layer for d in runs.values() for a in d.activities
                   if a.category == COMMUNICATION and a.k.layer is not None}
    out = []
    for r in store.ranks():
        data = runs[r.rank]
        comm = [a.typical_ns for a in data.activities if a.category == COMMUNICATION]
        out.append(RankTime(rank=r.rank, device=r.device, trace=r.trace,
                            gpu_time_us=us(sum(a.typical_ns for a in data.activities)),
                            communication_us=us(sum(comm)) if comm else None,
                            layers=_rank_layers(data, comm_layers)))
    return out


def stragglers(ranks: Sequence[RankTime]) -> list[Straggler]:
    """The ranks slower than the others at a layer beyond their replay noise (the module's
    rule), largest excess first; none with fewer than two ranks."""
    if len(ranks) < 2:
        return []
    at: dict[int, list[tuple[int, RankLayer]]] = defaultdict(list)
    for r in ranks:
        for row in r.layers:
            at[row.layer].append((r.rank, row))
    out = []
    for layer, entries in at.items():
        for rank, mine in entries:
            others = [o for k, o in entries if k != rank]
            if not others:
                continue
            median = statistics.median(o.compute_us for o in others)
            other_noise = statistics.median(o.noise_us for o in others)
            noise = (mine.noise_us ** 2 + other_noise ** 2) ** 0.5
            excess = mine.compute_us - median
            if excess >= MIN_DELTA_US and excess > NOISE_FACTOR * noise \
                    and (median <= 0 or 100.0 * excess / median > DEFAULT_GATE_PCT):
                out.append(Straggler(rank=rank, layer=layer, excess_us=round(excess, 3),
                                     compute_us=mine.compute_us, others_us=round(median, 3),
                                     noise_us=round(noise, 3)))
    out.sort(key=lambda s: (-s.excess_us, s.layer, s.rank))
    return out


def ranks_for_store(store: RunStore, categories: Categories | None = None,
                    runs: dict[int, RunData] | None = None) -> RanksResponse:
    """``api/ranks``'s answer for ``store`` (``runs``: its ranks loaded already)."""
    cats = categories if categories is not None else load_categories()
    loaded = runs if runs is not None else load_ranks(store, cats)
    times = rank_times(store, loaded) if loaded else []
    stages = store.stages()
    stage = stages[-1].idx if stages else 0
    return RanksResponse(run=store.meta.run, stage=stage, default_rank=store.default_rank(),
                         layers=[r.layer for r in store.layers(stage)], ranks=times,
                         stragglers=stragglers(times), rule=RULE)
