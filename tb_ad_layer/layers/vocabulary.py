"""The names the product gives to parts of a layer: groups, sub-groups and layer kinds.

A layer's kind names its mixers and its feed-forward block, in this order and joined by ``+``:
mixers among ``attention``, ``mla``, ``mamba``, ``gdn``, then ``mlp`` or ``moe``
(``attention+mlp``, ``mla+moe``, ``mamba``, ``gdn+moe``, ``attention+mamba+mlp`` for a parallel
hybrid, ``mlp`` or ``moe`` for a feed-forward-only block); ``other`` when a layer has neither.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Final, cast

from tb_ad_layer.contract.document import GROUPS as GROUPS  # re-exported: the rules' vocabulary
from tb_ad_layer.contract.document import SUB_GROUPS as SUB_GROUPS
from tb_ad_layer.contract.document import Group, SubGroup

# The names are the contract's (``Group``, ``SubGroup``): a name missing there fails the type check.
NORM: Final[Group] = "norm"
ATTENTION: Final[Group] = "attention"
MLA: Final[Group] = "mla"
MOE: Final[Group] = "moe"
MLP: Final[Group] = "mlp"
MAMBA: Final[Group] = "mamba"
GDN: Final[Group] = "gdn"
OTHER: Final[Group] = "other"

ROPE: Final[SubGroup] = "rope"
Q_BRANCH: Final[SubGroup] = "q_branch"
KV_BRANCH: Final[SubGroup] = "kv_branch"
MOE_ROUTER: Final[SubGroup] = "moe_router"
MOE_EXPERTS: Final[SubGroup] = "moe_experts"
SHARED_EXPERTS: Final[SubGroup] = "shared_experts"
MAMBA_METADATA: Final[SubGroup] = "mamba_metadata"
MAMBA_SSM: Final[SubGroup] = "mamba_ssm"
MAMBA_GATED_NORM: Final[SubGroup] = "mamba_gated_norm"
GDN_CONV1D: Final[SubGroup] = "gdn_conv1d"
GDN_GATING: Final[SubGroup] = "gdn_gating"
GDN_DELTA_RULE: Final[SubGroup] = "gdn_delta_rule"
AUX_STREAM: Final[SubGroup] = "aux_stream"

_GROUP_SET: frozenset[str] = frozenset(GROUPS)
_SUB_GROUP_SET: frozenset[str] = frozenset(SUB_GROUPS)


def as_group(name: str) -> Group:
    """``name`` as the contract's :data:`Group`; the rules work on plain strings, and this is
    where they meet the typed records (an unknown name is a bug in the rules, said loudly)."""
    if name not in _GROUP_SET:
        raise ValueError(f"{name!r} is not a group of the contract ({', '.join(GROUPS)})")
    return cast(Group, name)


def as_sub_group(name: str | None) -> SubGroup | None:
    """``name`` as the contract's :data:`SubGroup` (``None`` stays ``None``)."""
    if name is None:
        return None
    if name not in _SUB_GROUP_SET:
        raise ValueError(f"{name!r} is not a sub-group of the contract ({', '.join(SUB_GROUPS)})")
    return cast(SubGroup, name)


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
