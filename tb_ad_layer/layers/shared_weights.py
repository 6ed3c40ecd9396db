"""Which layer names in weight names vouch for membership, and which name a block that several
layers share.

A decoder layer's weights are applied once, by that layer. A weight applied at several places
belongs to a block that several layers call (Zamba2's shared transformer blocks, cross-layer
sharing): export keeps one name for it, after the first or the last layer that uses it
(``model_layers_51_shared_transformer_*`` is applied by layers 6, 18, 30, 42 and 51), so its
layer number says nothing about the layers that apply it elsewhere. The same goes for every
weight of that block, including the ones applied once (Zamba2's per-use LoRA adapters live in
the shared block, under the same name): the block is the longest module path that the shared
weights of that layer name have in common, and every weight under it is shared.

Shared weights still say which module computed a node (its group); only their layer is
withheld, and the node gets its layer from where it sits in the graph.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right

from tb_ad_layer.dump.graph import CALL, Graph
from tb_ad_layer.layers.weights import UNNAMED


def vouched_layers(graph: Graph, weight_layers: list[tuple[int, ...]],
                   weight_roles: list[tuple[str, ...]], weight_only: list[bool],
                   sources: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """``weight_layers`` with the layer of every shared weight replaced by :data:`UNNAMED`.

    A weight is shared when the nodes that apply it are apart: between two of them, a node
    applies a weight of another layer that nothing else applies. Several uses inside one layer
    (an unrolled scan reading ``A_log`` at every step) are not sharing.

    ``weight_layers`` and ``weight_roles`` are :func:`~tb_ad_layer.layers.weights.node_weight_facts`
    of the graph, ``weight_only`` :func:`~tb_ad_layer.layers.hints.weight_only_nodes` and
    ``sources`` :func:`~tb_ad_layer.layers.hints.applied_sources`. O(n log n) in nodes, linear
    in weight references; returns ``weight_layers`` itself when nothing is shared.
    """
    nodes = graph.nodes
    if not _applied_twice(graph, weight_layers, weight_only):
        return weight_layers
    # Per layer weight: how many nodes apply it (directly, or through a cast or view of it),
    # the first and last of them, and its layer and role.
    uses: dict[str, int] = {}
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    facts: dict[str, tuple[int, str]] = {}
    seen: set[str] = set()
    appliers: list[int] = []
    for node in nodes:
        j = node.index
        applied = sources[j]
        if not applied or weight_only[j] or node.kind != CALL:
            continue
        appliers.append(j)
        seen.clear()
        for k in applied:
            names = nodes[k].weights
            roles = weight_roles[k]
            t = 0
            for layer in weight_layers[k]:
                if layer >= 0:
                    name = names[t]
                    if name not in seen:
                        seen.add(name)
                        count = uses.get(name, 0)
                        if count == 0:
                            first[name] = j
                            facts[name] = (layer, roles[t])
                        uses[name] = count + 1
                        last[name] = j
                t += 1
    repeated = [name for name, count in uses.items() if count > 1]
    if not repeated:
        return weight_layers
    # The nodes that apply a weight nobody else applies, in graph order, with its layer; and
    # how many times that layer changes up to each of them.
    unique_at: list[int] = []
    unique_layer: list[int] = []
    for j in appliers:
        for k in sources[j]:
            names = nodes[k].weights
            found = -1
            t = 0
            for layer in weight_layers[k]:
                if layer >= 0 and uses[names[t]] == 1:
                    found = layer
                    break
                t += 1
            if found >= 0:
                unique_at.append(j)
                unique_layer.append(found)
                break
    changes = [0] * len(unique_layer)
    for u in range(1, len(unique_layer)):
        changes[u] = changes[u - 1] + (unique_layer[u] != unique_layer[u - 1])
    shared_roles: dict[int, set[str]] = {}
    for name in repeated:
        layer, role = facts[name]
        lo = bisect_right(unique_at, first[name])
        hi = bisect_left(unique_at, last[name]) - 1
        if lo > hi:
            continue
        if changes[hi] != changes[lo] or unique_layer[lo] != layer:
            found_roles = shared_roles.get(layer)
            if found_roles is None:
                found_roles = shared_roles[layer] = set()
            found_roles.add(role)
    if not shared_roles:
        return weight_layers
    blocks = {layer: _block_prefix(roles) for layer, roles in shared_roles.items()}
    out: list[tuple[int, ...]] = []
    memo: dict[tuple[tuple[int, ...], tuple[str, ...]], tuple[int, ...]] = {}
    for j in range(len(nodes)):
        layers = weight_layers[j]
        if not layers:
            out.append(layers)
            continue
        roles = weight_roles[j]
        key = (layers, roles)
        kept = memo.get(key)
        if kept is None:
            kept = memo[key] = tuple(
                UNNAMED if layer >= 0 and _is_shared(roles[t], blocks.get(layer)) else layer
                for t, layer in enumerate(layers))
        out.append(kept)
    return out


def _applied_twice(graph: Graph, weight_layers: list[tuple[int, ...]],
                   weight_only: list[bool]) -> bool:
    """Whether any weight can be applied by two nodes: a name referenced twice, or a value made
    from weights alone that two nodes read. Most graphs have neither (every weight read once),
    and then nothing is shared."""
    references = 0
    for layers in weight_layers:
        references += len(layers)
    if references != len(graph.weights):
        return True
    consumers = graph.topology()[1]
    for j, only in enumerate(weight_only):
        if only and len(consumers[j]) > 1:
            return True
    return False


def _block_prefix(roles: set[str]) -> tuple[str, frozenset[str]]:
    """The module path that a layer name's shared weights have in common (``shared_transformer_``),
    or ``""`` when they have none or there is only one; and the shared roles themselves."""
    if len(roles) < 2:
        return "", frozenset(roles)
    ordered = sorted(roles)
    first, last = ordered[0], ordered[-1]
    n = 0
    while n < len(first) and n < len(last) and first[n] == last[n]:
        n += 1
    # Whole path components only: "shared_transformer_" of "..._self_attn" and "..._mlp".
    cut = first.rfind("_", 0, n) + 1 if n < len(first) else n
    return first[:cut], frozenset(roles)


def _is_shared(role: str, block: tuple[str, frozenset[str]] | None) -> bool:
    if block is None:
        return False
    prefix, roles = block
    return role in roles or (bool(prefix) and role.startswith(prefix))
