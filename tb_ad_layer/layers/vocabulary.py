"""The names the product gives to parts of a layer: groups, sub-groups and layer kinds.

A layer's kind names its mixers and its feed-forward block, in this order and joined by ``+``:
mixers among ``attention``, ``mla``, ``mamba``, ``gdn``, then ``mlp`` or ``moe``
(``attention+mlp``, ``mla+moe``, ``mamba``, ``gdn+moe``, ``attention+mamba+mlp`` for a parallel
hybrid, ``mlp`` or ``moe`` for a feed-forward-only block); ``other`` when a layer has neither.
"""
from __future__ import annotations

from collections.abc import Iterable

NORM, ATTENTION, MLA, MOE, MLP, MAMBA, GDN, OTHER = (
    "norm", "attention", "mla", "moe", "mlp", "mamba", "gdn", "other")
GROUPS = (NORM, ATTENTION, MLA, MOE, MLP, MAMBA, GDN, OTHER)

ROPE = "rope"
Q_BRANCH, KV_BRANCH = "q_branch", "kv_branch"
MOE_ROUTER, MOE_EXPERTS, SHARED_EXPERTS = "moe_router", "moe_experts", "shared_experts"
MAMBA_METADATA, MAMBA_SSM, MAMBA_GATED_NORM = "mamba_metadata", "mamba_ssm", "mamba_gated_norm"
GDN_CONV1D, GDN_GATING, GDN_DELTA_RULE = "gdn_conv1d", "gdn_gating", "gdn_delta_rule"
AUX_STREAM = "aux_stream"

MIXERS = (ATTENTION, MLA, MAMBA, GDN)
FFNS = (MLP, MOE)
KIND_OTHER = "other"


def layer_kind(groups: Iterable[str]) -> str:
    """The kind of a layer whose blocks are ``groups`` (the groups its own ops compute)."""
    present = set(groups)
    parts = [g for g in MIXERS if g in present]
    if MOE in present:
        parts.append(MOE)
    elif MLP in present:
        parts.append(MLP)
    return "+".join(parts) if parts else KIND_OTHER
