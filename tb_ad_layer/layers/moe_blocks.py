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

from tb_ad_layer.dump.graph import CALL, Graph

_ROUTER_WORD = re.compile(r"(?:^|_)(?:gate|router|expert_bias|e_score)")
_STATIC_3D = re.compile(r"\d+x\d+x\d+")


def block_of(role: str) -> str:
    """The block a router-named weight belongs to: its role before the router's word."""
    m = _ROUTER_WORD.search(role)
    return role[:m.start()] if m is not None else role


def in_block(role: str, block: str) -> bool:
    """Whether ``role`` lies inside ``block`` (an empty block name is the layer itself)."""
    return not block or role.startswith(block + "_")


def _is_expert_weight(role: str, shape: str) -> bool:
    return "experts" in role or _STATIC_3D.fullmatch(shape) is not None


def moe_blocks(graph: Graph, layers: list[int], weights: list[tuple[str, ...]],
               roles: dict[str, str], is_router: Callable[[str], bool]
               ) -> dict[int, list[str]]:
    """Per layer, the names of its MoE blocks.

    Args:
        graph: the graph.
        layers: per node, its layer index or a negative value outside layers.
        weights: per node, the weights it applies (its own and those of weight-only values).
        roles: the role of every weight (its path inside its layer).
        is_router: whether a role names a router weight.
    """
    routers: dict[int, set[str]] = {}
    experts: dict[int, set[str]] = {}
    shapes = graph.weights
    # is_router of each role seen: a MoE dump repeats every expert's roles in every layer.
    router_role: dict[str, bool] = {}
    for node in graph.nodes:
        j = node.index
        layer = layers[j]
        applied = weights[j]
        if not applied or node.kind != CALL or layer < 0:
            continue
        for w in applied:
            role = roles[w]
            routes = router_role.get(role)
            if routes is None:
                routes = router_role[role] = is_router(role)
            if routes:
                blocks = routers.get(layer)
                if blocks is None:
                    blocks = routers[layer] = set()
                blocks.add(block_of(role))
            elif "experts" in role or _is_expert_weight(role, shapes[w].shape if w in shapes
                                                        else "?"):
                found = experts.get(layer)
                if found is None:
                    found = experts[layer] = set()
                found.add(role)
    out: dict[int, list[str]] = {}
    for layer, blocks in routers.items():
        found = experts.get(layer, set())
        kept = [b for b in sorted(blocks) if any(in_block(r, b) for r in found)]
        if kept:
            out[layer] = kept
    return out
