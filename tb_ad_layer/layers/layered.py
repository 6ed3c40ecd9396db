"""A graph with every node assigned to a layer, group and sub-group: the converter's main product."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tb_ad_layer.contract.document import LayeringDoubt
from tb_ad_layer.dump.graph import CALL, Graph, Node
from tb_ad_layer.errors import InputError
from tb_ad_layer.layers.doubts import HISTORY, layering_doubts
from tb_ad_layer.layers.external import ROPE, ExternalInput, external_inputs, model_buffers, model_level_kinds
from tb_ad_layer.layers.groups import assign_groups
from tb_ad_layer.layers.hints import applied_sources, weight_only_nodes
from tb_ad_layer.layers.history import CARRIED_OUTSIDE, StageHistory, carried_layers, disagreement
from tb_ad_layer.layers.membership import NO_LAYER, assign_layers
from tb_ad_layer.layers.shared_weights import vouched_layers
from tb_ad_layer.layers.sinks import next_uses
from tb_ad_layer.layers.vocabulary import layer_kind
from tb_ad_layer.layers.weights import UNNAMED, layer_of_weight, node_weight_facts

# A history is refused when more than one weight-reading node in this many disagrees with it
# (a name FX gave to another node after a transform replaced the first: a few at most).
_MAX_DISAGREEMENT = 100


@dataclass(slots=True)
class LayerInfo:
    """Summary of one decoder layer.

    ``kind`` names its mixers and feed-forward block (``attention+mlp``, ``mla+moe``,
    ``mamba``, ``gdn+moe``, ``attention+mamba+mlp``; see :mod:`tb_ad_layer.layers.vocabulary`).
    """

    index: int
    kind: str
    attention: str | None
    members: list[int]
    group_counts: dict[str, int]
    external_inputs: list[ExternalInput]

    @property
    def node_count(self) -> int:
        return len(self.members)


@dataclass(slots=True)
class LayeredGraph:
    """A :class:`Graph` plus per-node ``layer`` (None outside layers), ``group``, ``sub_group``
    and ``stream``, a summary of each layer, and the doubts about those layers (evidence that
    they are implausible, :mod:`tb_ad_layer.layers.doubts`: the stage's first, then each
    layer's)."""

    graph: Graph
    layer: list[int | None]
    group: list[str]
    sub_group: list[str | None]
    stream: list[str]
    layers: dict[int, LayerInfo] = field(default_factory=dict)
    doubts: list[LayeringDoubt] = field(default_factory=list)
    #: Per node, the :func:`~tb_ad_layer.layers.weights.weight_role` of each of its weights
    #: (parallel to ``node.weights``), as layering found them; empty where the graph was not
    #: layered here (a seed-schema JSON), and the documents then derive them from the names.
    weight_roles: list[tuple[str, ...]] = field(default_factory=list)

    def layer_nodes(self, index: int) -> list[Node]:
        return [self.graph.nodes[j] for j in self.layers[index].members]


def _layer_kind(groups: Mapping[str, int]) -> str:
    return layer_kind(g for g, count in groups.items() if count > 0)


def layer_graph(graph: Graph, history: StageHistory | None = None) -> LayeredGraph:
    """Assign every node of ``graph`` to a layer, group and sub-group; summarise each layer;
    say what about the layers found is doubtful.

    ``history`` holds the layers of an earlier stage of the same model (:func:`stage_history`),
    whose nodes keep their names in this one: they decide where the graph's own names cannot
    (fused weights named by counters). Linear in the number of nodes and references (O(n log n)
    where weights are shared between layers).
    """
    try:
        weight_layers, weight_roles = node_weight_facts([node.weights for node in graph.nodes])
    except InputError as e:
        raise _weight_name_error(graph, e.message) from None
    weight_only = weight_only_nodes(graph, weight_layers)
    sources = applied_sources(graph, weight_only, weight_layers)
    next_use = next_uses(graph)
    vouched = vouched_layers(graph, weight_layers, weight_roles, weight_only, sources)
    carried = carried_layers(graph, history)
    refused: LayeringDoubt | None = None
    if carried is not None and history is not None:
        differ, compared = disagreement(carried, vouched)
        if differ * _MAX_DISAGREEMENT > compared:
            refused = LayeringDoubt(
                kind=HISTORY, layer=None,
                message=f"{history.source}, the stage this one carries its layers from, gives "
                        f"{differ:,} of {compared:,} weight-reading nodes another layer than "
                        f"their weights name: its layers are not used")
            carried = history = None
    owners = assign_layers(graph, vouched, weight_only, next_use, carried)
    kinds = model_level_kinds(graph, owners)
    groups, subs, streams, attention = assign_groups(graph, owners, weight_roles, weight_layers,
                                                     weight_only, next_use,
                                                     [k == ROPE for k in kinds], sources)
    members, calls = _members_and_calls(graph, owners, groups)
    if not members:
        _refuse_unordered(graph, weight_layers)
    buffers = model_buffers(graph, weight_layers)
    infos: dict[int, LayerInfo] = {}
    for index in sorted(members):
        js = members[index]
        counts = calls.get(index, {})
        infos[index] = LayerInfo(
            index=index, kind=_layer_kind(counts), attention=attention.get(index),
            members=js, group_counts=dict(counts),
            external_inputs=external_inputs(graph, owners, index, js, kinds, buffers,
                                           weight_layers))
    lg = LayeredGraph(graph=graph, layer=[None if o == NO_LAYER else o for o in owners],
                      group=groups, sub_group=subs, stream=streams, layers=infos,
                      weight_roles=weight_roles)
    lg.doubts = layering_doubts(lg, history)
    if refused is not None:
        lg.doubts.insert(0, refused)
    return lg


def stage_history(lg: LayeredGraph) -> StageHistory:
    """The layers of ``lg``'s call nodes by name, for the stages after it (:func:`layer_graph`)."""
    layers: dict[str, int] = {}
    for node in lg.graph.nodes:
        if node.kind == CALL:
            layer = lg.layer[node.index]
            layers[node.name] = CARRIED_OUTSIDE if layer is None else layer
    return StageHistory(source=Path(lg.graph.source).name, layers=layers,
                        layer_count=len(lg.layers))


def _refuse_unordered(graph: Graph, weight_layers: list[tuple[int, ...]]) -> None:
    """Refuse a graph that found no layer although it is a transformed model: its weights are
    named by transform counters only (``fused_weight_0``), and no earlier stage was given to
    carry layers from. Graphs without such weights (a small model, a torch.cond branch) simply
    have no layers."""
    for node in graph.nodes:
        t = 0
        for layer in weight_layers[node.index]:
            if layer == UNNAMED:
                name = node.weights[t]
                raise InputError(
                    f"no weight of this stage names a decoder layer (its weights are named by "
                    f"transform counters, such as {name!r}), so its layers cannot be ordered "
                    f"from this file alone: convert the dump directory, whose export stage "
                    f"names them", path=graph.source)
            t += 1


def _weight_name_error(graph: Graph, message: str) -> InputError:
    """The refusal of the first weight name of ``graph`` (in first-reference order) whose layer
    index is out of range (``message``, one such refusal, when none is found there), with the
    line of the first weight the message names."""
    for weight in graph.weights.values():
        try:
            layer_of_weight(weight.name)
        except InputError as e:
            message = e.message
            break
    bad = next((w for w in graph.weights.values() if w.name in message), None)
    return InputError(message, path=graph.source,
                      line=bad.line if bad is not None and bad.line else None)


def _members_and_calls(graph: Graph, owners: list[int], groups: list[str]
                       ) -> tuple[dict[int, list[int]], dict[int, dict[str, int]]]:
    """Each layer's node positions, and how many of its calls each group has (in order of first
    appearance)."""
    members: dict[int, list[int]] = {}
    calls: dict[int, dict[str, int]] = {}
    nodes = graph.nodes
    for j, owner in enumerate(owners):
        if owner == NO_LAYER:
            continue
        js = members.get(owner)
        if js is None:
            js = members[owner] = []
        js.append(j)
        if nodes[j].kind == CALL:
            counts = calls.get(owner)
            if counts is None:
                counts = calls[owner] = {}
            group = groups[j]
            counts[group] = counts.get(group, 0) + 1
    return members, calls
