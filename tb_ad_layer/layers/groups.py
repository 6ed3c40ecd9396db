"""Group and sub-group of each node inside its layer (norm, attention/MLA, MoE, MLP, Mamba, GDN).

A node that consumes a layer weight is classified by the weight's role (``self_attn_q_a_proj``
-> MLA, Q branch); an op without weights by its target (``noaux_tc_op`` -> MoE router). The
rest (views, getitems, casts, routing arithmetic) take their group from the nodes they feed and
their sub-group from the node they come from when that one is in the same group, so routing
arithmetic between the router and the experts stays with the router. Nodes between
``begin_aux_stream_passthrough`` and ``end_aux_stream_passthrough`` form the ``aux_stream``
sub-group when they have no finer one, and every node between them is marked as running on the
``aux`` CUDA stream (a shared-experts branch stays ``shared_experts``, on stream ``aux``).
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Final, Mapping

from tb_ad_layer.dump.graph import CALL, Graph, Node, friendly_op_name
from tb_ad_layer.layers.membership import NO_LAYER
from tb_ad_layer.layers.weights import weight_table

NORM, ATTENTION, MLA, MOE, MLP, MAMBA, GDN, OTHER = (
    "norm", "attention", "mla", "moe", "mlp", "mamba", "gdn", "other")
GROUPS = (NORM, ATTENTION, MLA, MOE, MLP, MAMBA, GDN, OTHER)
AUX_STREAM: Final = "aux_stream"



_MLA_WEIGHTS: Final = re.compile(
    r"q_a_proj|kv_a_proj|kv_b_proj|kv_a_layernorm|q_a_layernorm|fused_qkv_a")
_MLA_OPS: Final = re.compile(r"mla", re.IGNORECASE)

# (pattern on the weight role, group, sub_group); first match wins, so specific before general.
_WEIGHT_RULES: Final[list[tuple[re.Pattern[str], str, str | None]]] = [
    # Mixers first: their own gated norms (mixer.norm, linear_attn.norm) are part of the mixer.
    (re.compile(r"linear_attn|gated_delta", re.I), GDN, None),
    (re.compile(r"mixer_(?:a_log|d|dt_bias|conv1d|in_proj|out_proj|norm)(?:_|$)|mamba|ssm", re.I),
     MAMBA, None),
    (re.compile(r"shared_experts?_gate(?!_proj)|shared_expert"), MOE, "shared_experts"),
    (re.compile(r"experts"), MOE, "moe_experts"),
    (re.compile(r"(?:mlp|moe|mixer)_gate_(?:weight|e_score|bias)|_gate_e_score|router|"
                r"block_sparse_moe_gate"), MOE, "moe_router"),
    (re.compile(r"q_a_layernorm|q_a_proj|q_b_proj|q_proj|q_norm|wq"), ATTENTION, "q_branch"),
    (re.compile(r"kv_a_layernorm|kv_a_proj|kv_b_proj|k_proj|v_proj|k_norm|kv_proj|wkv"),
     ATTENTION, "kv_branch"),
    (re.compile(r"(?:^|_)(?:input_layernorm|post_attention_layernorm|pre_feedforward_layernorm|"
                r"post_feedforward_layernorm|ln_\d|norm)(?:_|$)"), NORM, None),
    (re.compile(r"self_attn|attention|attn|mixer_o_proj|qkv"), ATTENTION, None),
    (re.compile(r"mlp|ffn|feed_forward|gate_up|up_proj|down_proj|gate_proj|w1|w2|w3"), MLP, None),
]

_OP_RULES: Final[list[tuple[re.Pattern[str], str, str | None]]] = [
    (re.compile(r"rope|rotary", re.I), ATTENTION, "rope"),
    (re.compile(r"noaux|topk|router|routing", re.I), MOE, "moe_router"),
    (re.compile(r"moe|expert", re.I), MOE, "moe_experts"),
    (re.compile(r"mla|attention|sdpa|flash_attn|fmha|mha|_attn", re.I), ATTENTION, None),
    (re.compile(r"mamba|ssm|selective_scan|causal_conv", re.I), MAMBA, None),
    (re.compile(r"gated_delta|gdn|fla_|chunk_gated", re.I), GDN, None),
    (re.compile(r"rms_?norm|layer_?norm", re.I), NORM, None),
    (re.compile(r"swiglu|silu_and_mul|gelu_and_mul|act_and_mul|mlp", re.I), MLP, None),
]


_ATTENTION_KERNEL: Final = re.compile(
    r"mla_with_cache|torch_mla|attention|sdpa|flash_attn|fmha", re.I)


@lru_cache(maxsize=1 << 14)
def _classify_target(target: str) -> tuple[str | None, str | None]:
    for pat, group, sub in _OP_RULES:
        if pat.search(target):
            return group, sub
    return None, None


@lru_cache(maxsize=1 << 16)
def _classify_role(role: str) -> tuple[str | None, str | None]:
    for pat, group, sub in _WEIGHT_RULES:
        if pat.search(role):
            return group, sub
    return None, None


@lru_cache(maxsize=1 << 14)
def _is_attention_kernel(target: str) -> bool:
    return _ATTENTION_KERNEL.search(target) is not None


@lru_cache(maxsize=1 << 14)
def _is_mla_op(target: str) -> bool:
    return _MLA_OPS.search(target) is not None


@lru_cache(maxsize=1 << 14)
def _classify_op(target: str) -> tuple[str | None, str | None]:
    """:func:`_classify_direct` of an op without weights (most nodes), cached per target."""
    if _is_attention_kernel(target):
        return ATTENTION, None
    return _classify_target(target)


def _classify_direct(target: str, weights: tuple[str, ...],
                     roles: Mapping[str, str]) -> tuple[str | None, str | None]:
    if not weights:
        return _classify_op(target)
    if _is_attention_kernel(target):
        # The attention kernel reads both branches' weights (MLA's kv_b): it is neither branch.
        return ATTENTION, None
    for w in weights:
        group, sub = _classify_role(roles[w])
        if group is not None:
            if group == NORM and _classify_target(target)[1] == "rope":
                break
            return group, sub
    return _classify_target(target)


def assign_groups(graph: Graph, layers: list[int], roles: Mapping[str, str] | None = None
                  ) -> tuple[list[str], list[str | None], list[str], dict[int, str]]:
    """Groups and sub-groups parallel to ``graph.nodes``, and each layer's attention flavour.

    Args:
        graph: the graph.
        layers: per node layer index or ``NO_LAYER``, from :func:`assign_layers`.
        roles: :func:`~tb_ad_layer.layers.weights.weight_role` of every weight of the graph,
            when the caller has it already (:func:`~tb_ad_layer.layers.weights.weight_table`).
    Returns:
        ``(groups, sub_groups, streams, attention)``: ``streams`` is ``"aux"`` for nodes in an
        aux-stream region, else ``"main"``; ``attention[layer]`` is ``"mla"`` or
        ``"attention"`` for layers that have attention.
    """
    nodes = graph.nodes
    n = len(nodes)
    inputs_idx, consumers = graph.topology()
    if roles is None:
        roles = weight_table(graph.weights)[1]

    group: list[str | None] = [None] * n
    sub: list[str | None] = [None] * n
    mla_layers: set[int] = set()
    attn_layers: set[int] = set()
    for node in nodes:
        j = node.index
        if node.kind != CALL or layers[j] == NO_LAYER:
            continue
        g, s = _classify_direct(node.target, node.weights, roles)
        group[j], sub[j] = g, s
        if layers[j] not in mla_layers and (_is_mla_op(node.target)
                                             or any(_MLA_WEIGHTS.search(w) for w in node.weights)):
            mla_layers.add(layers[j])
        if g == ATTENTION:
            attn_layers.add(layers[j])

    # A getitem belongs with the multi-output op it reads from. Other ops without a class take
    # their consumers' group (reverse pass), else their producers'.
    for j in range(n):
        if group[j] is None and layers[j] != NO_LAYER and nodes[j].op_name == "getitem" \
                and inputs_idx[j] and layers[inputs_idx[j][0]] == layers[j]:
            src = inputs_idx[j][0]
            group[j], sub[j] = group[src], sub[src]
    for j in range(n - 1, -1, -1):
        if layers[j] == NO_LAYER or nodes[j].kind != CALL:
            continue
        if group[j] is not None and sub[j] is not None:
            continue
        for c in consumers[j]:
            if group[c] is not None and layers[c] == layers[j] \
                    and (group[j] is None or group[j] == group[c]):
                group[j] = group[c]
                sub[j] = sub[j] or sub[c]
                break
    for j in range(n):
        if layers[j] == NO_LAYER or nodes[j].kind != CALL:
            continue
        same = [i for i in inputs_idx[j] if layers[i] == layers[j] and group[i] is not None]
        if group[j] is None:
            if same:
                group[j], sub[j] = group[same[0]], sub[same[0]]
            else:
                group[j] = OTHER
        elif _is_generic(nodes[j].target, nodes[j].weights):
            # A generic op between two nodes of one group takes the producer's sub-group
            # (routing arithmetic after the router belongs to the router).
            for i in same:
                if group[i] == group[j] and sub[i] is not None:
                    sub[j] = sub[i]
                    break

    streams = _mark_aux_regions(nodes, inputs_idx, consumers, layers, sub)
    out_groups: list[str] = []
    for j in range(n):
        g = group[j]
        if layers[j] == NO_LAYER or g is None:
            out_groups.append(OTHER)
            continue
        if g == ATTENTION and layers[j] in mla_layers:
            g = MLA
        out_groups.append(g)
    attention = {layer: (MLA if layer in mla_layers else ATTENTION)
                 for layer in attn_layers | mla_layers}
    return out_groups, sub, streams, attention


_GENERIC: Final = re.compile(r"^(?:aten|<built-in|operator)|^[a-z_]+$")


def _is_generic(target: str, weights: tuple[str, ...]) -> bool:
    return not weights and bool(_GENERIC.match(target)) and "moe" not in target


@lru_cache(maxsize=1 << 14)
def _aux_flags(target: str) -> tuple[bool, bool, bool, bool]:
    """``(begins, ends, marker, waits)``: what an op target says about aux-stream regions."""
    return ("begin_aux_stream" in target, "end_aux_stream" in target, "aux_stream" in target,
            "wait_aux_stream" in target)


def _mark_aux_regions(nodes: list[Node], inputs_idx: list[list[int]], consumers: list[list[int]],
                      layers: list[int], sub: list[str | None]) -> list[str]:
    """Streams per node: ``aux`` from a ``begin_aux_stream`` op to its ``end_aux_stream`` op."""
    n = len(nodes)
    streams = ["main"] * n
    flags = [_aux_flags(node.target) for node in nodes]
    if not any(f[0] for f in flags):
        return streams
    # map() keeps the per-node "any input/consumer marked" test in C: it runs for every node.
    after = [False] * n
    get_after = after.__getitem__
    for j in range(n):
        begins, ends = flags[j][0], flags[j][1]
        if begins or (not ends and any(map(get_after, inputs_idx[j]))):
            after[j] = True
    before = [False] * n
    get_before = before.__getitem__
    for j in range(n - 1, -1, -1):
        begins, ends = flags[j][0], flags[j][1]
        if ends or (not begins and any(map(get_before, consumers[j]))):
            before[j] = True
    for j in range(n):
        marker, waits = flags[j][2], flags[j][3]
        if (after[j] and before[j]) or marker:
            if not waits:
                streams[j] = "aux"
            if layers[j] != NO_LAYER and (marker or sub[j] is None):
                sub[j] = AUX_STREAM
    return streams

