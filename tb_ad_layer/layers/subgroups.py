"""Mark the sub-groups that dataflow defines inside a group: RoPE, and Mamba and GDN stages.

Inside attention, RoPE; inside Mamba and gated-delta-net mixers, the stages of the mixer.

- ``rope``: the attention ops that apply the rotary tables to q and k: those that read a RoPE
  table (the model's cos/sin, or a RoPE buffer), the rotate-half slices, negations and
  concatenations that feed only them, and the adds and concatenations that join their results.
- Mamba mixers (``mamba_metadata``, ``mamba_ssm``, ``mamba_gated_norm``) and gated delta nets
  (``gdn_conv1d``, ``gdn_gating``, ``gdn_delta_rule``): a few anchors are known by their weights
  (``conv1d``, ``a_log``, ``dt_bias``, ``d``, the mixer's own ``norm``) or by their op
  (``causal_conv1d``, ``ssm``/``selective_scan``, ``gated_delta_rule``, ``rmsnorm_gated``,
  ``*_metadata``). The mixer's data then flows in stages, input projection -> convolution and
  gating -> the scan or delta rule -> gated norm -> output projection, so every other node of
  the mixer takes the latest stage among its inputs, and a node that reads both the convolution
  and the gating is the scan or delta rule itself. The gated norm's statistics and gate, which
  precede its weight, are the normalisation steps that lead only to it. SymInt arithmetic inside
  the mixer (chunk padding on the sequence length) is ``mamba_metadata`` in a Mamba mixer and
  part of the delta rule in a gated delta net, whose chunking it serves.
"""
from __future__ import annotations

import re
from functools import lru_cache

from tb_ad_layer.dump.graph import Graph
from tb_ad_layer.layers.vocabulary import (
    ATTENTION,
    GDN,
    GDN_CONV1D,
    GDN_DELTA_RULE,
    GDN_GATING,
    MAMBA,
    MAMBA_GATED_NORM,
    MAMBA_METADATA,
    MAMBA_SSM,
    ROPE,
)

_ROPE_WEIGHT = re.compile(r"rotary|rope|cos|sin|inv_freq|freqs", re.I)
_ROTATE_OPS = frozenset({"slice", "neg", "cat", "split", "split_with_sizes", "chunk", "getitem",
                         "narrow", "unbind", "select"})
_JOIN_OPS = frozenset({"add", "add_", "sub", "cat", "stack", "iadd"})

# Stages of a mixer, in dataflow order.
_NONE, _CONV, _GATING, _CORE, _NORM = 0, 1, 1, 2, 3
_NORM_STEPS = frozenset({"to", "_to_copy", "float", "type_as", "pow", "mean", "var", "add",
                         "rsqrt", "sqrt", "mul", "div", "silu", "sigmoid", "square", "sub"})
_OP_STAGES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"metadata", re.I), "metadata"),
    (re.compile(r"rms_?norm_?gated|gated_?rms|norm_gated", re.I), "norm"),
    (re.compile(r"causal_conv|conv1d|convolution", re.I), "conv"),
    (re.compile(r"gdn_gating|gating", re.I), "gating"),
    (re.compile(r"gated_delta|delta_rule|chunk_gated|fla_", re.I), "core"),
    (re.compile(r"ssm|selective_scan|chunk_scan|ssd|state_passing", re.I), "core"),
]
_RANK: dict[str, int] = {"": _NONE, "weighted": _NONE, "metadata": _NONE, "conv": _CONV,
                         "gating": _GATING, "core": _CORE, "norm": _NORM}
# The sub-group of each stage, in a Mamba mixer and in a gated delta net.
_MAMBA_SUBS: dict[str, str | None] = {"metadata": MAMBA_METADATA, "conv": MAMBA_SSM,
                                      "gating": MAMBA_SSM, "core": MAMBA_SSM,
                                      "norm": MAMBA_GATED_NORM}
_GDN_SUBS: dict[str, str | None] = {"metadata": GDN_DELTA_RULE, "conv": GDN_CONV1D,
                                    "gating": GDN_GATING, "core": GDN_DELTA_RULE, "norm": None}
_WEIGHT_STAGES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"conv1d", re.I), "conv"),
    (re.compile(r"(?:^|_)(?:a_log|dt_bias)(?:_|$)", re.I), "gating"),
    (re.compile(r"(?:mixer|linear_attn|mamba)_(?:d)(?:_|$)", re.I), "core"),
    (re.compile(r"(?:mixer|linear_attn|mamba)_norm", re.I), "norm"),
]


def mark_rope(graph: Graph, op_names: list[str], layers: list[int], group: list[str | None],
              sub: list[str | None], rope_values: list[bool]) -> None:
    """Mark the attention ops that apply RoPE as sub-group ``rope`` (``op_names``:
    :attr:`~tb_ad_layer.dump.graph.Node.op_name` of every node)."""
    nodes = graph.nodes
    # The attention nodes, in order (every node of a group is a call inside a layer): the
    # passes below visit only them.
    attention = [j for j, g in enumerate(group) if g == ATTENTION]
    if not attention:
        return
    inputs, consumers = graph.topology()
    rope = [False] * len(nodes)
    for j in attention:
        node = nodes[j]
        if sub[j] == ROPE or any(rope_values[i] for i in inputs[j]) \
                or any(_ROPE_WEIGHT.search(w) for w in node.weights):
            rope[j] = True
            continue
        if op_names[j] not in _JOIN_OPS:
            continue
        # A join of the layer's rotated halves: every input from the layer is RoPE.
        joins = False
        for i in inputs[j]:
            if layers[i] == layers[j]:
                joins = rope[i]
                if not joins:
                    break
        rope[j] = joins
    for j in reversed(attention):
        if rope[j] or op_names[j] not in _ROTATE_OPS:
            continue
        users = [c for c in consumers[j] if layers[c] == layers[j]]
        if users and all(rope[c] for c in users):
            rope[j] = True
    for j in attention:
        if rope[j]:
            sub[j] = ROPE


@lru_cache(maxsize=1 << 12)
def _op_stage(target: str) -> str:
    for pat, stage in _OP_STAGES:
        if pat.search(target):
            return stage
    return ""


def _weight_stage(roles: tuple[str, ...]) -> str:
    for role in roles:
        for pat, stage in _WEIGHT_STAGES:
            if pat.search(role):
                return stage
    return ""


def mark_mixer_stages(graph: Graph, op_names: list[str], layers: list[int],
                      group: list[str | None], sub: list[str | None], direct: list[bool],
                      weight_roles: list[tuple[str, ...]]) -> None:
    """Give the nodes of Mamba and gated-delta-net mixers their stage sub-groups
    (``op_names``: :attr:`~tb_ad_layer.dump.graph.Node.op_name` of every node;
    ``weight_roles``: per node, the role of each of its weights)."""
    nodes = graph.nodes
    # The mixers' nodes, in order (every node of a group is a call inside a layer): the passes
    # below visit only them.
    mixer = [j for j, g in enumerate(group) if g == MAMBA or g == GDN]
    if not mixer:
        return
    inputs, consumers = graph.topology()
    stage = [""] * len(nodes)
    for j in mixer:
        node = nodes[j]
        stage[j] = _weight_stage(weight_roles[j]) or _op_stage(node.target)
        if not stage[j] and direct[j] and node.weights:
            stage[j] = "weighted"  # the input and output projections: no stage of their own
    # The gated norm's statistics and gate: normalisation steps that lead only to it.
    for j in reversed(mixer):
        if stage[j] or op_names[j] not in _NORM_STEPS:
            continue
        users = [c for c in consumers[j] if layers[c] == layers[j]]
        if users and all(stage[c] == "norm" for c in users):
            stage[j] = "norm"
    for j in mixer:
        if stage[j]:
            continue
        # The latest stage among the inputs from the same mixer (the scan or delta rule when
        # they hold both the convolution and the gating), counted without building sets.
        layer = layers[j]
        any_same = conv = gating = False
        best = ""
        best_rank = _NONE
        for i in inputs[j]:
            if layers[i] != layer or group[i] not in (MAMBA, GDN):
                continue
            any_same = True
            s = stage[i]
            if s == "conv":
                conv = True
            elif s == "gating":
                gating = True
            if s != "weighted" and s != "metadata" and _RANK[s] > best_rank:
                best, best_rank = s, _RANK[s]
        if not any_same or nodes[j].dtype in ("SymInt", "SymFloat", "SymBool"):
            stage[j] = "metadata"
        elif conv and gating:
            stage[j] = "core"
        else:
            stage[j] = best
    # What the input projection hands only to the gating (beta = sigmoid(b)) is gating too.
    for j in reversed(mixer):
        if stage[j] != "" or group[j] != GDN:
            continue
        users = [c for c in consumers[j] if layers[c] == layers[j]]
        if users and all(stage[c] in ("gating", "core") for c in users) \
                and any(stage[c] == "gating" for c in users):
            stage[j] = "gating"
    for j in mixer:
        s = stage[j]
        if not s or s == "weighted":
            continue
        sub[j] = _MAMBA_SUBS[s] if group[j] == MAMBA else _GDN_SUBS[s]
