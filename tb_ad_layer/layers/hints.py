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
from collections.abc import Mapping

from tb_ad_layer.dump.graph import CALL, Graph
from tb_ad_layer.layers.weights import MAX_LAYER_INDEX, is_buffer_like

NO_HINT = -1
PARAM = -2  # a model-level parameter (embedding, final norm, lm head)

_LAYER_PATH = re.compile(r"(?:^|\.)(?:layers|layer|h|blocks)\.(\d+)(?=\.|$)")
_NAME_LAYER = re.compile(r"(?:^|_)layers_(\d+)_")
_SUFFIX = re.compile(r"_\d+$")


def node_hints(graph: Graph, weight_layer: Mapping[str, int | None]
               ) -> tuple[list[int], list[bool], list[int]]:
    """``(hint, weight_only, name_layer)`` parallel to ``graph.nodes``.

    ``hint[j]`` is the layer the weights (or the called submodule) of node ``j`` name,
    :data:`PARAM` for a model-level parameter, :data:`NO_HINT` otherwise; weight-only nodes pass
    theirs on to their consumers. ``name_layer[j]`` is the layer the node's own name gives, or
    :data:`NO_HINT`.
    """
    nodes = graph.nodes
    n = len(nodes)
    inputs = graph.topology()[0]
    hint = [NO_HINT] * n
    weight_only = weight_only_nodes(graph)
    name_layer = [NO_HINT] * n
    for node in nodes:
        j = node.index
        if node.kind != CALL:
            continue
        votes: dict[int, int] = {}
        param = False
        for w in node.weights:
            layer = weight_layer.get(w)
            if layer is not None:
                votes[layer] = votes.get(layer, 0) + 1
            elif not is_buffer_like(w):
                param = True
        for i in inputs[j]:
            if weight_only[i]:
                h = hint[i]
                if h >= 0:
                    votes[h] = votes.get(h, 0) + 1
                elif h == PARAM:
                    param = True
        module = _called_module(node.name, node.target)
        if module is not None:
            m = _LAYER_PATH.search(module)
            if m is not None:
                layer = _small(m.group(1))
                if layer >= 0:
                    votes[layer] = votes.get(layer, 0) + 1
            else:
                param = True
        if votes:
            hint[j] = _majority(votes)
        elif param:
            hint[j] = PARAM
        m2 = _NAME_LAYER.search(node.name)
        if m2 is not None:
            name_layer[j] = _small(m2.group(1))
    return hint, weight_only, name_layer


def weight_only_nodes(graph: Graph) -> list[bool]:
    """Per node, whether it computes from weights alone (it reads weights or weight-only nodes,
    and nothing else)."""
    inputs = graph.topology()[0]
    out = [False] * len(graph.nodes)
    for node in graph.nodes:
        j = node.index
        if node.kind != CALL or not (node.weights or inputs[j]):
            continue
        only = True
        for i in inputs[j]:
            if not out[i]:
                only = False
                break
        out[j] = only
    return out


def applied_weights(graph: Graph, weight_only: list[bool]) -> list[tuple[str, ...]]:
    """Per node, the weights it applies: its own and those of the weight-only values it reads
    (``mul(x, to(norm_weight))`` applies ``norm_weight``)."""
    inputs = graph.topology()[0]
    out: list[tuple[str, ...]] = [node.weights for node in graph.nodes]
    for node in graph.nodes:
        j = node.index
        extra: list[str] = []
        for i in inputs[j]:
            if weight_only[i]:
                extra.extend(out[i])
        if extra:
            out[j] = tuple(dict.fromkeys(node.weights + tuple(extra)))
    return out


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


def _called_module(name: str, target: str) -> str | None:
    """The submodule path a ``call_module`` node calls: its target is a dotted path and FX named
    the node after it (``%model_layers_0_mlp = model.layers.0.mlp(...)``)."""
    if "." not in target or " " in target or "(" in target or "<" in target:
        return None
    base = _SUFFIX.sub("", name) if name[-1:].isdigit() else name
    flat = target.replace(".", "_")
    if name == flat or base == flat:
        return target
    return None
