"""Carry each node's layer from one transform stage to the next.

A dump directory holds every stage from export on. At export, module paths are reliable (every
weight is named after its module, and ``nn_module_stack`` agrees); later transforms register
fused weights and caches under running counters and insert nodes named after their targets.
torch.fx keeps a node's name from stage to stage unless a transform replaces the node, so the
layer a node had in the stage before is the best evidence of its layer now; the nodes a
transform inserted take the layer of the nodes around them (the membership rules place them,
with the carried layers as seeds). Carried layers are hints like weight names: dataflow checks
them, so a name that a later stage gave to another node cannot pull it out of place.
"""
from __future__ import annotations

from dataclasses import dataclass

from tb_ad_layer.dump.graph import CALL, Graph
from tb_ad_layer.layers.weights import is_transform_made

#: The node was outside every layer in the stage before (embedding, RoPE tables, final norm).
CARRIED_OUTSIDE = -1
#: No node of that name in the stage before (a transform inserted it).
NOT_CARRIED = -2


@dataclass(frozen=True, slots=True)
class StageHistory:
    """The layers of an earlier stage's call nodes, by node name.

    ``layers`` maps a node name to its layer index, or :data:`CARRIED_OUTSIDE`; ``source`` is
    the dump file they come from and ``layer_count`` how many layers it had.
    """

    source: str
    layers: dict[str, int]
    layer_count: int


def needs_history(graph: Graph) -> bool:
    """Whether ``graph`` is a stage whose own names may not say its layers: it holds weights a
    transform registered under counters (``fused_weight_0``) or ops that write their results
    into their arguments (the in-place fused add+norm). The export and its clean-ups name every
    weight after its module and need no earlier stage."""
    for name in graph.weights:
        if is_transform_made(name):
            return True
    for node in graph.nodes:
        if node.kind == CALL and "_inplace" in node.target:
            return True
    return False


def carried_layers(graph: Graph, history: StageHistory | None) -> list[int] | None:
    """Per node of ``graph``, the layer its name had in ``history`` (:data:`CARRIED_OUTSIDE`,
    :data:`NOT_CARRIED`); None without a history or when no call node's name is found there
    (the graph was traced anew, or the history is another model's)."""
    if history is None:
        return None
    known = history.layers
    out = [NOT_CARRIED] * len(graph.nodes)
    found = False
    for node in graph.nodes:
        if node.kind != CALL:
            continue
        layer = known.get(node.name)
        if layer is not None:
            out[node.index] = layer
            found = True
    return out if found else None


def disagreement(carried: list[int], vouched: list[tuple[int, ...]]) -> tuple[int, int]:
    """``(differ, compared)``: of the nodes whose own weights name a layer (``vouched``, the
    layer of each node's weights with shared ones withheld) and that carry one, how many carry
    another. Both stages of one model name the same weights, so a history that disagrees with
    the weight names is another model's, or a damaged one."""
    differ = compared = 0
    for j, layer in enumerate(carried):
        if layer < 0:
            continue
        for named in vouched[j]:
            if named >= 0:
                compared += 1
                if named != layer:
                    differ += 1
                break
    return differ, compared
