"""Find the blocks of each layer that route tokens to experts (the MoE blocks), by their weights.

A weight named like a router (``mlp.gate``, ``mlp.router``, ``feed_forward.expert_bias``) routes
to experts only when its block also holds expert weights: weights under an ``experts`` module, or
3-D weights that stack one matrix per expert (``input_linear``: experts x out x in). Other
modules are called routers too (Gemma 3n's AltUp ``modality_router`` mixes residual streams), and
they are no MoE. Conversely, every feed-forward weight of a MoE block is an expert's, whatever
its own name says (JetMoE's ``mlp.input_linear`` beside ``mlp.router``).

A block is named by the part of the weight role before the router's word: ``mlp_gate_weight``
and ``mlp_experts_0_up_proj_weight`` are both in block ``mlp`` of their layer.
"""
from __future__ import annotations

import re
from collections.abc import Callable

from tb_ad_layer.dump.graph import CALL, Graph, Weight

_ROUTER_WORD = re.compile(r"(?:^|_)(?:gate|router|expert_bias|e_score)")
_STATIC_3D = re.compile(r"\d+x\d+x\d+")
# What a weight's role says about it (moe_blocks).
_ROUTER, _EXPERT, _BY_SHAPE = 1, 2, 3


def block_of(role: str) -> str:
    """The block a router-named weight belongs to: its role before the router's word."""
    m = _ROUTER_WORD.search(role)
    return role[:m.start()] if m is not None else role


def in_block(role: str, block: str) -> bool:
    """Whether ``role`` lies inside ``block`` (an empty block name is the layer itself)."""
    return not block or role.startswith(block + "_")


def _shape(weights: dict[str, Weight], name: str) -> str:
    weight = weights.get(name)
    return weight.shape if weight is not None else "?"


def _is_expert_weight(role: str, shape: str) -> bool:
    return "experts" in role or _STATIC_3D.fullmatch(shape) is not None


def moe_blocks(graph: Graph, layers: list[int], sources: list[tuple[int, ...]],
               weight_roles: list[tuple[str, ...]], weight_layers: list[tuple[int, ...]],
               is_router: Callable[[str], bool]
               ) -> tuple[dict[int, list[str]], dict[int, set[str]]]:
    """``(blocks, layer_roles)``: per layer, the names of its MoE blocks, and the roles of the
    layer weights its calls apply (one pass over the applied weights gives both).

    Args:
        graph: the graph.
        layers: per node, its layer index or a negative value outside layers.
        sources: per node, the nodes whose weights it applies (its own and those of weight-only
            values: :func:`~tb_ad_layer.layers.hints.applied_sources`).
        weight_roles, weight_layers: per node, the role (its path inside its layer) and layer
            of each of its own weights (:func:`~tb_ad_layer.layers.weights.node_weight_facts`).
        is_router: whether a role names a router weight.

    ``layer_roles`` has an entry for every layer with a call that applies weights, empty where
    they are all model-level.
    """
    routers: dict[int, set[str]] = {}
    # Expert weights that layer_roles does not hold (model-level ones, and those only their
    # shape calls an expert's): the roles that say "expert" are found there at the end, which
    # spares a second table of every expert weight of every layer.
    experts: dict[int, set[str]] = {}
    layer_roles: dict[int, set[str]] = {}
    nodes = graph.nodes
    shapes = graph.weights
    # What each role seen says (a MoE dump repeats every expert's roles in every layer):
    # a router's, an expert's by its name, or an expert's only if its weight is 3-D.
    role_kind: dict[str, int] = {}
    for node in nodes:
        j = node.index
        layer = layers[j]
        applied = sources[j]
        if not applied or node.kind != CALL or layer < 0:
            continue
        found = layer_roles.get(layer)
        if found is None:
            found = layer_roles[layer] = set()
        for k in applied:
            if k != j and layers[k] == layer:
                continue  # a weight-only value of this layer: its own weights are counted at k
            t = 0
            roles = weight_roles[k]
            for weight_layer in weight_layers[k]:
                role = roles[t]
                kind = role_kind.get(role)
                if kind is None:
                    kind = role_kind[role] = (_ROUTER if is_router(role) else
                                              _EXPERT if "experts" in role else _BY_SHAPE)
                named = weight_layer >= 0
                if named:
                    found.add(role)
                if kind == _ROUTER:
                    layer_routers = routers.get(layer)
                    if layer_routers is None:
                        layer_routers = routers[layer] = set()
                    layer_routers.add(block_of(role))
                elif (kind == _EXPERT and not named) or (
                        kind == _BY_SHAPE
                        and _is_expert_weight(role, _shape(shapes, nodes[k].weights[t]))):
                    layer_experts = experts.get(layer)
                    if layer_experts is None:
                        layer_experts = experts[layer] = set()
                    layer_experts.add(role)
                t += 1
    out: dict[int, list[str]] = {}
    no_roles: set[str] = set()
    for layer, blocks in routers.items():
        extra = experts.get(layer, no_roles)
        named_roles = layer_roles.get(layer, no_roles)
        kept = [b for b in sorted(blocks)
                if any(in_block(r, b) for r in extra)
                or any(role_kind[r] == _EXPERT and in_block(r, b) for r in named_roles)]
        if kept:
            out[layer] = kept
    return out, layer_roles
