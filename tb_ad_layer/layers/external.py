"""Labels for the values that enter a layer from outside it.

A layer's external inputs are the nodes it consumes that it does not own (the previous layer's
residual output, KV-cache and metadata placeholders, model-level RoPE tables and masks) and the
model-level buffers it reads (``_ad_rotary_cos_sin_0``). Model-level values are labelled by what
they are made from, found by one forward pass over the graph.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import compress, repeat
from operator import eq
from typing import Final

from tb_ad_layer.dump.graph import PLACEHOLDER, Graph
from tb_ad_layer.layers.membership import NO_LAYER
from tb_ad_layer.layers.weights import MODEL_LEVEL, is_buffer_like

_KV: Final = re.compile(r"kv_cache|k_cache|v_cache|key_cache|value_cache|mla_cache|past_key|"
                 r"ssm_state|conv_state", re.I)
_KV_WEAK: Final = re.compile(r"cache", re.I)
_META: Final = re.compile(r"batch|seq|cu_|slot|page|cache_loc|input_pos|len|info|meta|offset|"
                   r"num_|host|block_table|indptr|indices|last_page", re.I)
_POS: Final = re.compile(r"position|pos_id", re.I)
_IDS: Final = re.compile(r"input_ids|tokens?$", re.I)
_ROPE: Final = re.compile(r"rotary|rope|cos|sin|inv_freq|freqs", re.I)
_MASK: Final = re.compile(r"mask|causal", re.I)
_EMBED: Final = re.compile(r"embed", re.I)

RESIDUAL, LAYER_OUTPUT, KV_CACHE, METADATA, ROPE, MASK, SHAPE, MODEL = (
    "residual", "layer_output", "kv_cache", "batch_metadata", "rope", "mask", "shape", "model")
_LABELS: Final = {KV_CACHE: "KV cache", METADATA: "batch metadata", ROPE: "RoPE cache",
           MASK: "attention mask", SHAPE: "shape value", "position": "position ids", "input_ids": "input ids",
           "embedding": "token embedding", MODEL: "model-level value", "buffer": "model buffer"}
# When a model-level value is made from several kinds of inputs, the most specific one names it.
_PRIORITY: Final = {ROPE: 6, MASK: 5, "position": 4, METADATA: 3, "embedding": 2, "input_ids": 1,
             SHAPE: 0, MODEL: 0}


@dataclass(slots=True)
class ExternalInput:
    """A value a layer consumes but does not compute."""

    id: str
    label: str
    kind: str
    shape: str
    dtype: str
    layer: int | None = None


def _placeholder_kind(name: str) -> str:
    if _KV.search(name):
        return KV_CACHE
    if _POS.search(name):
        return "position"
    if _IDS.search(name):
        return "input_ids"
    if _META.search(name):
        return METADATA
    if _KV_WEAK.search(name):
        return KV_CACHE
    return MODEL


def model_level_kinds(graph: Graph, layers: list[int]) -> list[str | None]:
    """For every node outside all layers, what it is made from (``rope``, ``kv_cache``, ...)."""
    out: list[str | None] = [None] * len(graph.nodes)
    nodes = graph.nodes
    inputs_idx = graph.topology()[0]
    # Only nodes outside layers are visited; the selection runs in C (a node's inputs come
    # before it, so their kinds are known when it is reached).
    for j in compress(range(len(nodes)), map(eq, layers, repeat(NO_LAYER))):
        node = nodes[j]
        if node.kind == PLACEHOLDER:
            out[j] = _placeholder_kind(node.name)
            continue
        kind = MODEL
        text = node.target + " " + " ".join(node.weights)
        if node.dtype in ("SymInt", "SymFloat", "SymBool"):
            kind = SHAPE
        elif node.dtype == "torch.bool" and "x" in node.shape:
            kind = MASK
        elif _ROPE.search(text):
            kind = ROPE
        elif _MASK.search(text) or _MASK.search(node.name):
            kind = MASK
        elif _EMBED.search(text):
            kind = "embedding"
        else:
            for i in inputs_idx[j]:
                k = out[i]
                if k is not None and _PRIORITY.get(k, 0) > _PRIORITY.get(kind, 0):
                    kind = k
        out[j] = kind
    return out


def model_buffers(graph: Graph, weight_layers: list[tuple[int, ...]]) -> frozenset[str]:
    """Weights that are model-level buffers (RoPE caches...): external inputs, not layer weights.

    ``weight_layers``: per node, the layer of each of its weights
    (:func:`~tb_ad_layer.layers.weights.node_weight_facts`).
    """
    out: set[str] = set()
    nodes = graph.nodes
    for j, layers in enumerate(weight_layers):
        if MODEL_LEVEL not in layers:
            continue
        names = nodes[j].weights
        t = 0
        for layer in layers:
            if layer == MODEL_LEVEL:
                name = names[t]
                if name not in out and is_buffer_like(name):
                    out.add(name)
            t += 1
    return frozenset(out)


def external_inputs(graph: Graph, layers: list[int], layer: int, members: list[int],
                    model_kinds: list[str | None], buffers: frozenset[str],
                    weight_layers: list[tuple[int, ...]]) -> list[ExternalInput]:
    """The external inputs of ``layer`` (whose node indices are ``members``), in first-use order.

    ``buffers`` is :func:`model_buffers` of the graph, computed once for all layers, and
    ``weight_layers`` the layer of each node's weights
    (:func:`~tb_ad_layer.layers.weights.node_weight_facts`)."""
    nodes = graph.nodes
    out: list[ExternalInput] = []
    for source in _sources(graph, layers, layer, members, buffers, weight_layers):
        if isinstance(source, str):  # a model-level buffer
            weight = graph.weights[source]
            kind = ROPE if _ROPE.search(source) else ("buffer" if not _KV.search(source)
                                                      else KV_CACHE)
            out.append(ExternalInput(source, _LABELS.get(kind, "model buffer"),
                                     kind if kind != "buffer" else MODEL,
                                     weight.shape, weight.dtype, None))
            continue
        src = nodes[source]
        owner = layers[source]
        if owner == NO_LAYER:
            kind = model_kinds[source] or MODEL
            out.append(ExternalInput(src.name, _LABELS.get(kind, _LABELS[MODEL]),
                                     kind if kind in (KV_CACHE, METADATA, ROPE, MASK, SHAPE)
                                     else MODEL, src.shape, src.dtype, None))
        else:
            residual = owner < layer
            out.append(ExternalInput(src.name, f"Layer {owner} residual output" if residual
                                     else f"Layer {owner} output",
                                     RESIDUAL if residual else LAYER_OUTPUT,
                                     src.shape, src.dtype, owner))
    return out


def _sources(graph: Graph, layers: list[int], layer: int, members: list[int],
             buffers: frozenset[str], weight_layers: list[tuple[int, ...]]) -> list[int | str]:
    """What ``layer`` reads from outside itself, in first-use order: the position of each node
    computed elsewhere, and the name of each model-level buffer."""
    nodes = graph.nodes
    inputs_idx = graph.topology()[0]
    seen: set[str] = set()
    out: list[int | str] = []
    for j in members:
        for i in inputs_idx[j]:
            if layers[i] == layer:
                continue
            name = nodes[i].name
            if name not in seen:
                seen.add(name)
                out.append(i)
        # A buffer is a model-level weight: only a node with one can read one (most nodes
        # with weights apply layer weights alone, and their names need not be read).
        if not buffers or MODEL_LEVEL not in weight_layers[j]:
            continue
        weights = nodes[j].weights
        if not buffers.isdisjoint(weights):
            for w in weights:
                if w in buffers and w not in seen:
                    seen.add(w)
                    out.append(w)
    return out
