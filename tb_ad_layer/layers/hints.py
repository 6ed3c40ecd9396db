"""What the names in a graph say about each node's layer, before dataflow checks it.

Three kinds of names carry module paths (DESIGN.md):

- weights and buffers, the dotted parameter path with ``.`` replaced by ``_``
  (``model_layers_5_mlp_gate_weight``): a node that reads layer N's weight was computed with
  layer N's module, unless dataflow proves otherwise (a block whose weights several layers share);
- the target of a ``call_module`` node (``model.layers.0.self_attn.q_proj``, from
  ``torch.fx.symbolic_trace``), which FX also uses, with ``.`` as ``_``, for the node's name;
- node names that newer AutoDeploy versions derive from the module that made the node
  (``model_layers_0_self_attn_kv_b_proj_torch_linear_simple_3``).

A value computed from weights alone (``to(norm_weight)``, ``norm_weight + 1.0``, a stack of
expert weights) is *weight-only*: it carries its weights' hint to the op that applies it to
activations, and belongs wherever that op belongs.
"""
from __future__ import annotations

import re
from typing import final

from tb_ad_layer.dump.graph import CALL, Graph
from tb_ad_layer.layers.weights import MAX_LAYER_INDEX, MODEL_LEVEL, is_buffer_like

NO_HINT = -1
PARAM = -2  # a model-level parameter (embedding, final norm, lm head)

_LAYER_PATH = re.compile(r"(?:^|\.)(?:layers|layer|h|blocks)\.(\d+)(?=\.|$)")
_NAME_LAYER = re.compile(r"(?:^|_)layers_(\d+)_")


def node_hints(graph: Graph, weight_layers: list[tuple[int, ...]], weight_only: list[bool]
               ) -> tuple[list[int], list[int]]:
    """``(hint, name_layer)`` parallel to ``graph.nodes``.

    ``hint[j]`` is the layer the weights (or the called submodule) of node ``j`` name,
    :data:`PARAM` for a model-level parameter, :data:`NO_HINT` otherwise; weight-only nodes pass
    theirs on to their consumers. ``name_layer[j]`` is the layer the node's own name gives, or
    :data:`NO_HINT`.

    ``weight_layers[j]`` is the layer of each of node ``j``'s weights
    (:func:`~tb_ad_layer.layers.weights.node_weight_facts`); ``weight_only`` is
    :func:`weight_only_nodes` of the graph.
    """
    nodes = graph.nodes
    n = len(nodes)
    inputs = graph.topology()[0]
    hint = [NO_HINT] * n
    name_layer = [NO_HINT] * n
    # Per distinct target, whether it can be a submodule path at all (most are op names).
    module_like: dict[str, bool] = {}
    tally = _Tally()
    for node in nodes:
        j = node.index
        if node.kind != CALL:
            continue
        tally.clear()
        param = False
        own = weight_layers[j]
        if own:
            t = 0
            for layer in own:
                if layer >= 0:
                    tally.add(layer)
                elif layer == MODEL_LEVEL and not is_buffer_like(node.weights[t]):
                    param = True
                t += 1
        for i in inputs[j]:
            if weight_only[i]:
                h = hint[i]
                if h >= 0:
                    tally.add(h)
                elif h == PARAM:
                    param = True
        target = node.target
        maybe_module = module_like.get(target)
        if maybe_module is None:
            maybe_module = module_like[target] = _module_like(target)
        if maybe_module:
            module = _called_module(node.name, target)
            if module is not None:
                m = _LAYER_PATH.search(module)
                if m is not None:
                    layer = _small(m.group(1))
                    if layer >= 0:
                        tally.add(layer)
                else:
                    param = True
        voted = tally.winner()
        if voted != NO_HINT:
            hint[j] = voted
        elif param:
            hint[j] = PARAM
        name = node.name
        if "layers_" in name:  # what _NAME_LAYER needs; few names have it
            m2 = _NAME_LAYER.search(name)
            if m2 is not None:
                name_layer[j] = _small(m2.group(1))
    return hint, name_layer


def weight_only_nodes(graph: Graph, weight_layers: list[tuple[int, ...]]) -> list[bool]:
    """Per node, whether it computes from weights alone (it reads weights or weight-only nodes,
    and nothing else).

    ``weight_layers`` is the layer of each node's weights
    (:func:`~tb_ad_layer.layers.weights.node_weight_facts`): whether a node reads weights is
    read there, in tuples that nodes share, rather than in each node's own tuple of names."""
    inputs = graph.topology()[0]
    out = [False] * len(graph.nodes)
    for node in graph.nodes:
        j = node.index
        if node.kind != CALL or not (weight_layers[j] or inputs[j]):
            continue
        only = True
        for i in inputs[j]:
            if not out[i]:
                only = False
                break
        out[j] = only
    return out


def applied_sources(graph: Graph, weight_only: list[bool], weight_layers: list[tuple[int, ...]]
                    ) -> list[tuple[int, ...]]:
    """Per node, the nodes whose own weights it applies, in order of first appearance: itself
    when it reads weights, then the sources of the weight-only values it reads
    (``mul(x, to(norm_weight))`` applies ``norm_weight`` through ``to``).

    The weights a node applies are those of its sources, in this order (a weight two sources
    read appears twice); the sources of a MoE op that reads one dequantized value per expert
    weight are those dequant nodes, each listed once. A source other than the node itself is a
    weight-only node, and every source is the first of its own sources. ``weight_layers`` (the
    layer of each node's weights, :func:`~tb_ad_layer.layers.weights.node_weight_facts`) says
    which nodes read weights.
    """
    inputs = graph.topology()[0]
    n = len(graph.nodes)
    none: tuple[int, ...] = ()
    out: list[tuple[int, ...]] = [none] * n
    for j in range(n):
        found: list[int] | None = None
        for i in inputs[j]:
            if weight_only[i] and out[i]:
                if found is None:
                    found = [j] if weight_layers[j] else []
                found.extend(out[i])
        if found is not None:
            # Two weight-only values made from one (a weight and its cast) share sources.
            out[j] = tuple(dict.fromkeys(found))
        elif weight_layers[j]:
            out[j] = (j,)
    return out


@final
class _Tally:
    """The layers one node's weights and called submodule name, counted. Most nodes name one
    layer or none, so a dict of votes is made only when a second layer is named; one tally is
    reused for every node."""

    def __init__(self) -> None:
        self.one = NO_HINT
        self.count = 0
        self.votes: dict[int, int] | None = None

    def clear(self) -> None:
        self.one = NO_HINT
        self.count = 0
        self.votes = None

    def add(self, layer: int) -> None:
        votes = self.votes
        if votes is not None:
            votes[layer] = votes.get(layer, 0) + 1
        elif self.one == layer or self.one == NO_HINT:
            self.one = layer
            self.count += 1
        else:
            self.votes = {self.one: self.count, layer: 1}

    def winner(self) -> int:
        """The layer named most (the lowest of a tie), or :data:`NO_HINT`."""
        return _majority(self.votes) if self.votes is not None else self.one


def _majority(votes: dict[int, int]) -> int:
    """The layer most weights name; the lowest of a tie."""
    best = -1
    best_count = 0
    for layer, count in votes.items():
        if count > best_count or (count == best_count and layer < best):
            best, best_count = layer, count
    return best


def _small(digits: str) -> int:
    """A layer index from a name, or :data:`NO_HINT` when it is out of range (a name is only a
    hint, so an absurd one is ignored rather than refused)."""
    if len(digits) > 10 or int(digits) > MAX_LAYER_INDEX:
        return NO_HINT
    return int(digits)


def _module_like(target: str) -> bool:
    """Whether ``target`` can be a submodule path (``model.layers.0.mlp``): dotted, and no
    printed function, partial or other object."""
    return "." in target and " " not in target and "(" not in target and "<" not in target


def _called_module(name: str, target: str) -> str | None:
    """The submodule path a ``call_module`` node calls: its target is a dotted path and FX named
    the node after it (``%model_layers_0_mlp = model.layers.0.mlp(...)``, or ``..._mlp_1`` for
    a second call)."""
    if not _module_like(target):
        return None
    # The flattened target is the name, or the name less a ``_<digits>`` suffix: both start
    # with the target's first part, then ``_`` (cheap to refuse the op nodes with).
    head = target.find(".")
    if len(name) <= head or name[head] != "_" or not name.startswith(target[:head]):
        return None
    flat = target.replace(".", "_")
    if name == flat:
        return target
    size = len(flat)
    if len(name) > size + 1 and name[size] == "_" and name.startswith(flat) \
            and name[size + 1:].isdecimal():
        return target
    return None
