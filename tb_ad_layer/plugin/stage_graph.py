"""The skeleton of a whole stage: its layers as boxes, the runs of repeating layers folded, the
nodes outside every layer split into the part before the layers and the part after, and the
values many layers read (shared inputs) listed once each with their readers.

The panel draws 38,000 nodes of a 48-layer model as a few dozen boxes from this answer; a layer's
own nodes are loaded only when it is opened. Computed from the stored layer documents and
outside nodes, once per stage and run store (the data layer caches it).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from tb_ad_layer.contract.api import (
    StageFold,
    StageGraphResponse,
    StageLayer,
    StageNode,
    StageSharedInput,
)
from tb_ad_layer.contract.document import LayerDocument
from tb_ad_layer.plugin.identical import identical_layers
from tb_ad_layer.store.records import LayerRecord

#: The longest block of layers a fold repeats (Jamba: 8 layers of which 1 attention).
MAX_PERIOD = 8
#: External inputs of these kinds carry the residual stream: into the first layer they are the
#: chain's entry, not a shared input.
_STREAM_KINDS = frozenset({"residual", "layer_output", "model", "embedding"})


def fold_runs(layers: Sequence[int], same_as: Mapping[int, int]) -> list[StageFold]:
    """The runs of repeating layers that leave the fewest boxes to draw.

    A fold of period p covers ``count`` >= 2 consecutive blocks of p layers where every layer
    is identical to the one p places before it (both name the same first layer in ``same_as``).
    Chosen by dynamic programming over the layers (at most 48-128 of them, MAX_PERIOD periods):
    each layer left alone is one box and each fold one box; then the most layers folded; then
    blocks that start at a multiple of their length (Qwen3-Next's layers 4-47 as (gdn, gdn,
    gdn, attention) x 11, not 1-44 as (gdn, gdn, attention, gdn)); then the longer fold first.
    """
    n = len(layers)
    cls = [same_as.get(x, x) for x in layers]
    # Consecutive layer indexes only: a gap in the numbering breaks a run.
    consecutive = [i > 0 and layers[i] == layers[i - 1] + 1 for i in range(n)]
    # From layer i on: (boxes, -layers folded, folds not starting at a multiple of their period).
    best: list[tuple[int, int, int]] = [(0, 0, 0)] * (n + 1)
    choice: list[tuple[int, int] | None] = [None] * (n + 1)
    for i in range(n - 1, -1, -1):
        best[i] = (best[i + 1][0] + 1, *best[i + 1][1:])
        choice[i] = None
        key = (*best[i], 0)
        for p in range(1, MAX_PERIOD + 1):
            if i + 2 * p > n or not all(consecutive[j] for j in range(i + 1, i + p)):
                continue
            end = i + p   # first layer past the run of repeats
            while end < n and consecutive[end] and cls[end] == cls[end - p]:
                end += 1
            blocks = (end - i) // p
            for count in range(blocks, 1, -1):
                stop = i + count * p
                cand = (best[stop][0] + 1, best[stop][1] - count * p,
                        best[stop][2] + (layers[i] % p != 0))
                # On a tie, the longer fold here: the blocks, then the tail.
                if (*cand, -count * p) < key:
                    best[i], key = cand, (*cand, -count * p)
                    choice[i] = (p, count)
    out: list[StageFold] = []
    i = 0
    while i < n:
        c = choice[i]
        if c is None:
            i += 1
            continue
        p, count = c
        out.append(StageFold(first=layers[i], last=layers[i + p * count - 1], period=p,
                             count=count))
        i += p * count
    return out


def _stage_node(n: Mapping[str, Any]) -> StageNode:
    return StageNode(id=n["id"], label=n["label"], op=n["op"], node_kind=n["node_kind"],
                     shape=n["shape"], weights=[w["name"] for w in n["weights"]],
                     time_us=float(n["time_us"]))


def shared_inputs(docs: Sequence[tuple[int, LayerDocument]]) -> list[StageSharedInput]:
    """The inputs that would otherwise be drawn as long edges: every model-level value a layer
    reads (but the residual stream into the first layer) and every value of an earlier layer
    that is not the reader's predecessor. In order of first reader, then graph order."""
    order = [layer for layer, _ in docs]
    prev = {layer: order[i - 1] if i else None for i, layer in enumerate(order)}
    first = order[0] if order else None
    found: dict[str, StageSharedInput] = {}
    for layer, doc in docs:
        for e in doc.external_inputs:
            if e.layer is None:
                if layer == first and e.kind in _STREAM_KINDS:
                    continue  # the embedding into layer 0: the chain's entry
            elif e.layer == prev[layer] or e.layer == layer:
                continue      # the chain of layers itself
            s = found.get(e.id)
            if s is None:
                found[e.id] = StageSharedInput(id=e.id, kind=e.kind, label=e.label,
                                               shape=e.shape, source=e.layer, layers=[layer])
            elif s.layers[-1] != layer:
                s.layers.append(layer)
    return list(found.values())


class StageSummary(NamedTuple):
    """What the whole-stage graph needs of the stage's layer documents: read once per stage
    (the documents are most of the cost), kept small."""

    same_as: dict[int, int]            #: identical layers (:mod:`.identical`)
    shared: list[StageSharedInput]
    doubtful: frozenset[int]           #: layers the converter doubts
    start_line: int | None             #: dump line of the first layer's first node


def summarize(docs: Sequence[tuple[int, LayerDocument]]) -> StageSummary:
    """The summary of a stage from its layer documents."""
    starts = [d.nodes[0].line for _, d in docs if d.nodes]
    return StageSummary(same_as=identical_layers(docs), shared=shared_inputs(docs),
                        doubtful=frozenset(layer for layer, d in docs if d.doubts),
                        start_line=min(starts) if starts else None)


def stage_graph(run: str, stage: int, rows: Iterable[LayerRecord], summary: StageSummary,
                outside: Sequence[Mapping[str, Any]],
                group_times: Mapping[int, Mapping[str, float]],
                outside_gpu_time_us: float | None) -> StageGraphResponse:
    """The whole-stage skeleton of one stage (see the module docstring).

    ``outside`` are the stage's nodes outside every layer (RunStore.nodes(stage, -1)); those
    before the first line of the first layer are the input part, the others the output part.
    """
    reads: dict[int, list[str]] = {}
    for s in summary.shared:
        for layer in s.layers:
            reads.setdefault(layer, []).append(s.id)
    layers = [StageLayer(layer=r.layer, kind=r.kind, attention=r.attention,
                         node_count=r.node_count, gpu_time_us=r.gpu_time_us,
                         same_as=summary.same_as.get(r.layer), group_counts=r.group_counts,
                         groups=dict(group_times.get(r.layer, {})),
                         shared=reads.get(r.layer, []), doubtful=r.layer in summary.doubtful)
              for r in rows]
    start = summary.start_line
    before = [_stage_node(n) for n in outside if start is not None and n["line"] < start]
    after = [_stage_node(n) for n in outside if start is None or n["line"] >= start]
    return StageGraphResponse(run=run, stage=stage, layers=layers,
                              folds=fold_runs([x.layer for x in layers], summary.same_as),
                              before=before, after=after, shared=summary.shared,
                              outside_gpu_time_us=outside_gpu_time_us)
