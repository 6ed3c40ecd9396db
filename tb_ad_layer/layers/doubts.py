"""Doubts about a layering: evidence that the layers found in a graph are implausible.

A layering that looks wrong is said to be doubtful instead of being shown as if it were right
(the converter warns, the run store keeps the doubts, the panel shows them). Each check looks
at the layers :func:`~tb_ad_layer.layers.layered.layer_graph` found, never at what a model
should have, and must stay silent on a correct layering: every model export of
``tests/fixtures/dumps/`` and ``../shared/dumps/real_writer/`` gives no doubt
(``tests/layers/test_doubts.py``).

Checks:

- ``index_gap``: layer indices with a gap (layers 0-2 and 4-6 found: no layer 3). A decoder
  stack numbers its layers without gaps, so a missing index means a layer's nodes went to
  others, or to no layer. Missing indices before the first layer found are not a gap (a
  pipeline stage may start anywhere).
- ``oversized_layer``: a layer with more than :data:`OVERSIZED_FACTOR` times the median node
  count of the layers of its kind, where there are at least :data:`MIN_LAYERS_OF_KIND` of
  them: a layer that swallowed its neighbours' nodes (or the model's) is far larger than its
  siblings, while layers of one kind differ by a few percent (layer 0 of a Mamba or
  gated-delta-net stack carries the chunk-padding arithmetic, about 0.4 % more).

- ``history`` (found by :func:`~tb_ad_layer.layers.layered.layer_graph`): the earlier stage
  this one would carry its layers from gives the nodes that read layer weights other layers
  than those weights name: it is not used, and the stage is layered from its own graph.
- ``layer_count``: a stage read with its history (the export stage whose layers it carries)
  has a different number of layers than that stage: transforms fuse and insert nodes but never
  add or remove a decoder layer.

Linear in the number of layers (their indices come sorted from ``layer_graph``; a sort of
sorted input is one pass), typed plainly: the module is compiled with mypyc.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Final

from tb_ad_layer.contract.document import LayeringDoubt
from tb_ad_layer.layers.history import StageHistory

if TYPE_CHECKING:
    from tb_ad_layer.layers.layered import LayeredGraph

INDEX_GAP: Final = "index_gap"
LAYER_COUNT: Final = "layer_count"
#: Set by :func:`~tb_ad_layer.layers.layered.layer_graph`: the earlier stage's layers disagree
#: with this stage's weight names, so they were not carried.
HISTORY: Final = "history"
OVERSIZED_LAYER: Final = "oversized_layer"

#: How many times the median node count of its kind a layer must exceed to be doubtful.
OVERSIZED_FACTOR: Final = 3.0
#: The fewest layers of one kind whose median is trusted (with two, neither is the odd one).
MIN_LAYERS_OF_KIND: Final = 3
#: Runs of indices a message names before it says how many more there are (a message is one
#: line, whatever the weight names held).
RUNS_NAMED: Final = 8


def layering_doubts(lg: LayeredGraph, history: StageHistory | None = None) -> list[LayeringDoubt]:
    """The doubts about ``lg``'s layers: the whole stage's first (``layer`` None), then each
    layer's, by layer index. Empty when nothing looks implausible. ``history`` is the earlier
    stage ``lg`` carried its layers from, if any."""
    indexes = sorted(lg.layers)
    doubts: list[LayeringDoubt] = []
    gap = index_gap(indexes)
    if gap is not None:
        doubts.append(gap)
    if history is not None and history.layer_count != len(indexes):
        doubts.append(LayeringDoubt(
            kind=LAYER_COUNT, layer=None,
            message=f"{len(indexes):,} layers found, but {history.source}, whose layers this "
                    f"stage carries, has {history.layer_count:,}"))
    doubts.extend(oversized_layers(lg, indexes))
    return doubts


def index_gap(indexes: list[int]) -> LayeringDoubt | None:
    """The doubt about gaps between the sorted layer ``indexes``, or None without a gap: one
    doubt for the stage, naming the missing indices and those found."""
    missing: list[tuple[int, int]] = []
    for k in range(1, len(indexes)):
        prev, cur = indexes[k - 1], indexes[k]
        if cur > prev + 1:
            missing.append((prev + 1, cur - 1))
    if not missing:
        return None
    count = sum(last - first + 1 for first, last in missing)
    found = _ranges(_runs(indexes))
    what = f"no layer {_ranges(missing)}" if count == 1 \
        else f"no layers {_ranges(missing)} ({count:,} missing)"
    return LayeringDoubt(kind=INDEX_GAP, layer=None, message=f"{what}: layers {found} found")


def oversized_layers(lg: LayeredGraph, indexes: list[int]) -> list[LayeringDoubt]:
    """A doubt for each layer of ``lg`` (in the order of ``indexes``) with more than
    :data:`OVERSIZED_FACTOR` times the median node count of the layers of its kind."""
    counts: dict[str, list[int]] = {}
    for index in indexes:
        info = lg.layers[index]
        of_kind = counts.get(info.kind)
        if of_kind is None:
            of_kind = counts[info.kind] = []
        of_kind.append(info.node_count)
    medians: dict[str, float] = {}
    for kind, sizes in counts.items():
        if len(sizes) >= MIN_LAYERS_OF_KIND:
            medians[kind] = _median(sizes)
    doubts: list[LayeringDoubt] = []
    for index in indexes:
        info = lg.layers[index]
        median = medians.get(info.kind)
        if median is None or median <= 0:
            continue
        nodes = info.node_count
        if nodes > OVERSIZED_FACTOR * median:
            doubts.append(LayeringDoubt(
                kind=OVERSIZED_LAYER, layer=index,
                message=f"layer {index} has {nodes:,} nodes, {nodes / median:.1f}x the median "
                        f"of {info.kind} layers ({_number(median)})"))
    return doubts


def _median(values: list[int]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    if len(ordered) % 2:
        return float(ordered[mid])
    return (ordered[mid - 1] + ordered[mid]) / 2


def _number(value: float) -> str:
    """``705`` or ``704.5``, with thousands separators."""
    return f"{value:,.0f}" if value == int(value) else f"{value:,.1f}"


def _runs(indexes: list[int]) -> list[tuple[int, int]]:
    """Sorted distinct integers as (first, last) runs of consecutive values."""
    runs: list[tuple[int, int]] = []
    for index in indexes:
        if runs and runs[-1][1] + 1 == index:
            runs[-1] = (runs[-1][0], index)
        else:
            runs.append((index, index))
    return runs


def _ranges(runs: list[tuple[int, int]]) -> str:
    """``[(0, 2), (5, 5)]`` -> ``"0-2, 5"``; past :data:`RUNS_NAMED` runs, how many more."""
    text = ", ".join(f"{first}" if first == last else f"{first}-{last}"
                     for first, last in runs[:RUNS_NAMED])
    if len(runs) > RUNS_NAMED:
        text += f" and {len(runs) - RUNS_NAMED:,} more ranges"
    return text
