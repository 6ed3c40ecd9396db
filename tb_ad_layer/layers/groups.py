"""Group and sub-group of each node inside its layer (norm, attention/MLA, MoE, MLP, Mamba, GDN).

A node that consumes a layer weight is classified by the weight's role (``self_attn_q_a_proj``
-> MLA, Q branch); an op without weights by its target (``noaux_tc_op`` -> MoE router). Roles
say which module a weight belongs to, so:

- a norm is the group of the module it sits in: per-head q/k norms (``q_norm``,
  ``query_layernorm``, ``k_layernorm``) and any ``self_attn.*norm`` are attention, a norm
  inside the MLP (``mlp.ffn_sub_norm``) is the MLP's, a mixer's own norm the mixer's; every
  other norm module (``ln_attn``, ``router_norm``) is a norm, whatever else its path names;
- a router-named weight is a MoE router only when its block holds experts, and then every
  feed-forward weight of that block is an expert's (:mod:`~tb_ad_layer.layers.moe_blocks`); a
  shared MLP inside the MoE block is its shared expert; experts and routers inside an attention
  module (a mixture of attention heads) are attention;
- a layer weight that no rule names belongs to the module it sits in: the group the layer's
  other weights under the same module path name (``mixer_x_proj`` beside ``mixer_in_proj``:
  Mamba), else ``other`` (an RG-LRU or short-convolution block, Zamba's ``linear``), which
  stops its neighbours' groups (the norm before it) from spreading into it;
- a generic ATen op's name says what it computes, not which module ran it: ``aten.topk`` takes
  its group from its neighbours (a router's top-k, or an attention's), as a custom op's name
  (``torch_moe_router``, ``noaux_tc``) does not need to.

The rest (views, getitems, casts, routing arithmetic) take their group from the nodes they feed and
their sub-group from the node they come from when that one is in the same group, so routing
arithmetic between the router and the experts stays with the router. Nodes between
``begin_aux_stream_passthrough`` and ``end_aux_stream_passthrough`` form the ``aux_stream``
sub-group when they have no finer one, and every node between them is marked as running on the
``aux`` CUDA stream (a shared-experts branch stays ``shared_experts``, on stream ``aux``).
"""
from __future__ import annotations

import re
from functools import lru_cache

from tb_ad_layer.dump.graph import CALL, Graph, Node
from tb_ad_layer.layers.hints import applied_sources
from tb_ad_layer.layers.membership import NO_LAYER
from tb_ad_layer.layers.moe_blocks import block_of, in_block, moe_blocks
from tb_ad_layer.layers.subgroups import mark_mixer_stages, mark_rope
from tb_ad_layer.layers.vocabulary import (
    ATTENTION,
    AUX_STREAM,
    GDN,
    MAMBA,
    MLA,
    MLP,
    MOE,
    MOE_EXPERTS,
    MOE_ROUTER,
    NORM,
    OTHER,
)

# MLA is its latent KV (a query LoRA alone, DeepSeek-V4's q_a_proj beside a plain kv_proj, is not).
_MLA_WEIGHTS = re.compile(r"kv_a_proj|kv_b_proj|kv_a_layernorm|fused_qkv_a")
_MLA_OPS = re.compile(r"mla", re.IGNORECASE)

# (pattern on the weight role, group, sub_group); first match wins, so specific before general.
_WEIGHT_RULES: list[tuple[re.Pattern[str], str, str | None]] = [
    # A layer norm of the decoder layer, even inside a block wrapper (mamba_decoder's); MLA's
    # q_a/kv_a layernorms are attention branches.
    (re.compile(r"q_a_layernorm"), ATTENTION, "q_branch"),
    (re.compile(r"kv_a_layernorm"), ATTENTION, "kv_branch"),
    # Norms inside the attention or feed-forward module (per-head q/k norms, a linear
    # attention's output norm, BitNet's sub-norms) are that module's. (``attn_norm``,
    # ``ffn_norm`` and ``mlp_norm`` alone are layer norms in some models, so a child of
    # ``attn``/``mlp`` must say more than ``norm``.)
    (re.compile(r"(?:^|_)(?:q|query)_(?:layer)?norm"), ATTENTION, "q_branch"),
    (re.compile(r"(?:^|_)(?:k|key)_(?:layer)?norm"), ATTENTION, "kv_branch"),
    (re.compile(r"^(?:(?:self_attn|self_attention)_\w*|attn_\w+)norm"), ATTENTION, None),
    (re.compile(r"^(?:mlp|feed_forward)_\w+norm"), MLP, None),
    # A mixer's norms of its own internal tensors (Jamba's dt/B/C layernorms) are the mixer's.
    (re.compile(r"(?:^|_)(?:mamba|mixer|ssm)_[a-z]{1,2}_layernorm"), MAMBA, None),
    (re.compile(r"layernorm(?:_weight|_bias)?$"), NORM, None),
    # Mixers next: their own gated norms (mixer.norm, linear_attn.norm) are part of the mixer.
    (re.compile(r"linear_attn|gated_delta", re.I), GDN, None),
    (re.compile(r"mixer_(?:a_log|d|dt_bias|conv1d|in_proj|out_proj|norm)(?:_|$)|mamba|ssm", re.I),
     MAMBA, None),
    # Any other norm module of the layer (input_layernorm, pre_ff_layernorm, ffn_norm, ln_1,
    # Falcon's ln_attn/ln_mlp, a norm on a router's input): a norm whatever its path names.
    # (``\w*norm`` covers ``\w*layernorm``.)
    (re.compile(r"(?:^|_)(?:\w*norm|ln(?:_[a-z0-9]+)?)(?:_weight|_bias|_scale)?$"), NORM, None),
    # An attention module's own experts and router (a mixture of attention heads) are attention.
    (re.compile(r"^(?:self_attn|self_attention|attn)_\w*(?:experts|router)"), ATTENTION, None),
    # A shared MLP inside the MoE block (``mlp.shared_mlp``) is its shared expert.
    (re.compile(r"shared_experts?_gate(?!_proj)|shared_expert|(?<=_)shared_mlp"), MOE,
     "shared_experts"),
    (re.compile(r"experts"), MOE, "moe_experts"),
    # The router: the FFN block's ``gate`` (not a gate projection), and the per-expert score
    # biases that steer its choice.
    (re.compile(r"(?:^|_)(?:mlp|moe|mixer|feed_forward|ffn|block_sparse_moe)_gate_"
                r"(?!(?:up_)?proj)|_gate_e_score|router|expert_bias|e_score_correction"),
     MOE, "moe_router"),
    # Experts stacked by AutoDeploy's MoE fusions: fused_moe_w3_w1_stacked_{k},
    # quant_moe_*, finegrained_fp8_moe_fc1_stacked_{k}, nvfp4_moe_* (fused_moe.py).
    (re.compile(r"(?:^|_)moe_(?:w\d|fc\d)|_stacked(?:_|$)"), MOE, "moe_experts"),
    (re.compile(r"q_a_proj|q_b_proj|q_proj|wq"), ATTENTION, "q_branch"),
    (re.compile(r"kv_a_proj|kv_b_proj|k_proj|v_proj|kv_proj|wkv"), ATTENTION, "kv_branch"),
    (re.compile(r"self_attn|attention|attn|mixer_o_proj|qkv"), ATTENTION, None),
    (re.compile(r"mlp|ffn|feed_forward|gate_up|up_proj|down_proj|gate_proj|w1|w2|w3"), MLP, None),
]

# The same rules for ASCII roles (every real one): there ``\w`` and case folding mean what they
# mean in Unicode text, without the Unicode tables the matcher reads for every character otherwise.
_WEIGHT_RULES_ASCII: list[tuple[re.Pattern[str], str, str | None]] = [
    (re.compile(pat.pattern, (pat.flags & ~re.UNICODE) | re.ASCII), group, sub)
    for pat, group, sub in _WEIGHT_RULES]

_OP_RULES: list[tuple[re.Pattern[str], str, str | None]] = [
    (re.compile(r"rope|rotary", re.I), ATTENTION, "rope"),
    (re.compile(r"noaux|(?<!aten\.)topk|router|routing", re.I), MOE, "moe_router"),
    (re.compile(r"moe|expert", re.I), MOE, "moe_experts"),
    (re.compile(r"mla|attention|sdpa|flash_attn|fmha|mha|_attn", re.I), ATTENTION, None),
    (re.compile(r"mamba|ssm|selective_scan|causal_conv", re.I), MAMBA, None),
    (re.compile(r"gated_delta|gdn|fla_|chunk_gated", re.I), GDN, None),
    (re.compile(r"rms_?norm|layer_?norm", re.I), NORM, None),
    (re.compile(r"swiglu|silu_and_mul|gelu_and_mul|act_and_mul|mlp", re.I), MLP, None),
]


_ATTENTION_KERNEL = re.compile(r"mla_with_cache|torch_mla|attention|sdpa|flash_attn|fmha", re.I)


@lru_cache(maxsize=1 << 14)
def _classify_target(target: str) -> tuple[str | None, str | None]:
    for pat, group, sub in _OP_RULES:
        if pat.search(target):
            return group, sub
    return None, None


@lru_cache(maxsize=1 << 16)
def _classify_role(role: str) -> tuple[str | None, str | None]:
    for pat, group, sub in _WEIGHT_RULES_ASCII if role.isascii() else _WEIGHT_RULES:
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


def _role_group(role: str, moe: list[str]) -> tuple[str | None, str | None]:
    """Group and sub-group a layer weight's role names, given its layer's MoE blocks."""
    group, sub = _classify_role(role)
    if sub == MOE_ROUTER and block_of(role) not in moe:
        return None, None  # a router of no experts (AltUp's): it names no group
    if group == MLP and any(b and in_block(role, b) for b in moe):
        return MOE, MOE_EXPERTS
    return group, sub


def _classify_direct(target: str, applied: tuple[int, ...], weight_roles: list[tuple[str, ...]],
                     weight_layers: list[tuple[int, ...]], moe: list[str],
                     siblings: dict[str, str],
                     role_groups: dict[str, tuple[str | None, str | None]]
                     ) -> tuple[str | None, str | None]:
    """Group and sub-group from the weights a node applies (else its target).

    ``applied`` names the nodes whose weights the node applies
    (:func:`~tb_ad_layer.layers.hints.applied_sources`), ``weight_roles`` and ``weight_layers``
    the role and layer of each node's weights; ``moe`` names the MoE blocks of its layer
    (:func:`~tb_ad_layer.layers.moe_blocks.moe_blocks`) and ``siblings`` the groups of its
    layer's module paths (:func:`_sibling_groups`): a layer weight that no rule names takes the
    group of the module it sits in, else ``other``. ``role_groups`` keeps the
    :func:`_role_group` of each role seen under the same MoE blocks (filled here).
    """
    if not applied:
        return _classify_op(target)
    if _is_attention_kernel(target):
        # The attention kernel reads both branches' weights (MLA's kv_b): it is neither branch.
        return ATTENTION, None
    unnamed = ""
    # Module-path names first: a transform-made name (fused_weight_3, a fused SwiGLU's
    # gate_up) says less than the shared expert's down_proj it is applied beside.
    for named in (True, False):
        for k in applied:
            t = 0
            roles = weight_roles[k]
            for layer in weight_layers[k]:
                role = roles[t]
                t += 1
                if (layer >= 0) != named:
                    continue
                known = role_groups.get(role)
                if known is None:
                    known = role_groups[role] = _role_group(role, moe)
                group, sub = known
                if group is not None:
                    if group == NORM and _classify_target(target)[1] == "rope":
                        return _classify_target(target)
                    return group, sub
                if named and not unnamed:
                    unnamed = role  # a layer weight of a module no rule names
    group, sub = _classify_target(target)
    if group is None and unnamed:
        return _enclosing_group(unnamed, siblings), None
    return group, sub


def _enclosing_group(role: str, siblings: dict[str, str]) -> str:
    """The group of the innermost module path of ``role`` that names one, else ``other``."""
    end = role.rfind("_")
    while end > 0:
        found = siblings.get(role[:end])
        if found is not None:
            return OTHER if found == _MIXED else found
        end = role.rfind("_", 0, end)
    return OTHER


_MIXED = "mixed"


def _sibling_groups(layer_roles: dict[int, set[str]], moe: dict[int, list[str]]
                    ) -> dict[int, dict[str, str]]:
    """Per layer, the group of every path prefix of its named weights' roles
    (``mixer_in_proj_weight`` -> ``mixer``, ``mixer_in``, ``mixer_in_proj``: mamba), or
    :data:`_MIXED` where the weights under one prefix name several groups. Norms are leaves
    and name no enclosing module.

    ``layer_roles`` holds each layer's named roles, once each (a MoE layer applies one weight
    per expert and projection, each in several nodes), and ``moe`` its MoE blocks
    (:func:`~tb_ad_layer.layers.moe_blocks.moe_blocks` gives both).
    """
    out: dict[int, dict[str, str]] = {}
    # Layers with the same roles and MoE blocks (a model's repeated layers) share one table.
    shared: dict[tuple[tuple[str, ...], frozenset[str]], dict[str, str]] = {}
    no_moe: list[str] = []
    for layer, found in layer_roles.items():
        blocks = moe.get(layer, no_moe)
        key = (tuple(blocks), frozenset(found))
        prefixes = shared.get(key)
        if prefixes is None:
            prefixes = shared[key] = _prefix_groups(found, blocks)
        if prefixes:
            out[layer] = prefixes
    return out


def _prefix_groups(layer_roles: set[str], moe: list[str]) -> dict[str, str]:
    """The group of every path prefix of one layer's roles (:func:`_sibling_groups`), given the
    layer's MoE blocks; the same in any order of the roles."""
    prefixes: dict[str, str] = {}
    for role in layer_roles:
        group = _role_group(role, moe)[0]
        if group is None or group == NORM:
            continue
        # Longest prefix first. A prefix already holding this group, or _MIXED, has had every
        # shorter prefix of it updated with the same groups: nothing changes below it.
        end = role.rfind("_")
        while end > 0:
            key = role[:end]
            had = prefixes.get(key)
            if had is None:
                prefixes[key] = group
            elif had == group or had == _MIXED:
                break
            else:
                prefixes[key] = _MIXED
            end = role.rfind("_", 0, end)
    return prefixes


def _applies_mla_weight(nodes: list[Node], applied: tuple[int, ...]) -> bool:
    """Whether a node applies a weight of MLA's own (``q_a_proj``, ``kv_b_proj``...);
    ``applied`` names the nodes whose weights it applies."""
    for k in applied:
        for w in nodes[k].weights:
            if _MLA_WEIGHTS.search(w):
                return True
    return False


def _is_router_role(role: str) -> bool:
    return _classify_role(role)[1] == MOE_ROUTER


def assign_groups(graph: Graph, layers: list[int], weight_roles: list[tuple[str, ...]],
                  weight_layers: list[tuple[int, ...]], weight_only: list[bool],
                  next_use: list[int], rope_values: list[bool] | None = None,
                  sources: list[tuple[int, ...]] | None = None
                  ) -> tuple[list[str], list[str | None], list[str], dict[int, str]]:
    """Groups and sub-groups parallel to ``graph.nodes``, and each layer's attention flavour.

    Args:
        graph: the graph.
        layers: per node layer index or ``NO_LAYER``, from :func:`assign_layers`.
        weight_roles, weight_layers: per node, the role and layer of each of its weights
            (:func:`~tb_ad_layer.layers.weights.node_weight_facts`).
        weight_only: :func:`~tb_ad_layer.layers.hints.weight_only_nodes` of the graph.
        next_use: :func:`~tb_ad_layer.layers.sinks.next_uses` of the graph.
        rope_values: per node, whether it is a model-level RoPE table (cos/sin); the per-layer
            work on them is sub-group ``rope``.
        sources: :func:`~tb_ad_layer.layers.hints.applied_sources` of the graph, when the
            caller has it.
    Returns:
        ``(groups, sub_groups, streams, attention)``: ``streams`` is ``"aux"`` for nodes in an
        aux-stream region, else ``"main"``; ``attention[layer]`` is ``"mla"`` or
        ``"attention"`` for layers that have attention.
    """
    nodes = graph.nodes
    n = len(nodes)
    inputs_idx, consumers = graph.topology()

    group: list[str | None] = [None] * n
    sub: list[str | None] = [None] * n
    direct = [False] * n
    if sources is None:
        sources = applied_sources(graph, weight_only, weight_layers)
    # Node.op_name, once per node: several passes below read it.
    op_names = [node.op_name for node in nodes]
    moe, layer_roles = moe_blocks(graph, layers, sources, weight_roles, weight_layers,
                                  _is_router_role)
    siblings = _sibling_groups(layer_roles, moe)
    no_moe: list[str] = []
    no_siblings: dict[str, str] = {}
    mla_layers: set[int] = set()
    attn_layers: set[int] = set()
    # Per distinct target, the role its path inside a layer names, if it is one (few are).
    module_roles: dict[str, str] = {}
    role_groups_by_moe: dict[tuple[str, ...], dict[str, tuple[str | None, str | None]]] = {}
    layer_role_groups: dict[int, dict[str, tuple[str | None, str | None]]] = {}
    for node in nodes:
        j = node.index
        if node.kind != CALL or layers[j] == NO_LAYER:
            continue
        target = node.target
        module_role = module_roles.get(target)
        if module_role is None:
            module_role = module_roles[target] = _module_role(target)
        # Only a target that is a module path can name the node's group (node.name is read
        # only then: it is one more object per node to bring into the cache).
        g, s = _classify_module(node.name, target, module_role) if module_role else (None, None)
        if g is None:
            layer = layers[j]
            layer_moe = moe.get(layer, no_moe)
            role_groups = layer_role_groups.get(layer)
            if role_groups is None:
                # A role's group depends on the layer's MoE blocks only: layers with the same
                # blocks (every MoE layer of a model) share one table of them.
                moe_key = tuple(layer_moe)
                role_groups = role_groups_by_moe.get(moe_key)
                if role_groups is None:
                    role_groups = role_groups_by_moe[moe_key] = {}
                layer_role_groups[layer] = role_groups
            g, s = _classify_direct(target, sources[j], weight_roles, weight_layers, layer_moe,
                                    siblings.get(layer, no_siblings), role_groups)
        group[j], sub[j] = g, s
        direct[j] = g is not None
        if layers[j] not in mla_layers and (_is_mla_op(node.target)
                                             or _applies_mla_weight(nodes, sources[j])):
            mla_layers.add(layers[j])
        if g == ATTENTION:
            attn_layers.add(layers[j])

    # A getitem belongs with the multi-output op it reads from.
    for j in range(n):
        if group[j] is None and layers[j] != NO_LAYER and op_names[j] == "getitem" \
                and inputs_idx[j] and layers[inputs_idx[j][0]] == layers[j]:
            src = inputs_idx[j][0]
            group[j], sub[j] = group[src], sub[src]
    _norm_statistics(nodes, op_names, inputs_idx, consumers, layers, group)
    _block_exits(nodes, op_names, inputs_idx, layers, group, sub, direct)
    # Other ops without a class take their consumers' group (reverse pass), else their
    # producers'.
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
    generic_targets: dict[str, bool] = {}  # _is_generic_target, per distinct target
    for j in range(n):
        layer = layers[j]
        node = nodes[j]
        if layer == NO_LAYER or node.kind != CALL:
            continue
        g = group[j]
        if g is None:
            g = OTHER
            for i in inputs_idx[j]:
                if layers[i] == layer and group[i] is not None:
                    g, sub[j] = group[i], sub[i]
                    break
            group[j] = g
            continue
        target = node.target
        generic = generic_targets.get(target)
        if generic is None:
            generic = generic_targets[target] = _is_generic_target(target)
        # The target first: most nodes with weights call a target of their own.
        if generic and not weight_layers[j]:
            # A generic op between two nodes of one group takes the producer's sub-group
            # (routing arithmetic after the router belongs to the router).
            for i in inputs_idx[j]:
                if layers[i] == layer and group[i] == g and sub[i] is not None:
                    sub[j] = sub[i]
                    break

    # An op nothing consumes goes with the next use of its first argument, like its layer.
    for j, nxt in enumerate(next_use):
        if nxt >= 0 and layers[j] != NO_LAYER and layers[nxt] == layers[j] \
                and group[nxt] is not None:
            group[j], sub[j] = group[nxt], sub[nxt]
    mark_rope(graph, op_names, layers, group, sub, rope_values or [False] * n)
    mark_mixer_stages(graph, op_names, layers, group, sub, direct, weight_roles)
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
    attention: dict[int, str] = {layer: (MLA if layer in mla_layers else ATTENTION)
                 for layer in attn_layers | mla_layers}
    return out_groups, sub, streams, attention


_BLOCKS = frozenset({ATTENTION, MLA, MOE, MLP, MAMBA, GDN})
_ADD_OPS = frozenset({"add", "add_", "iadd", "residual_add"})
_SCALAR_TYPES = frozenset({"SymInt", "SymFloat", "SymBool", "int", "float", "bool"})
_CAST_OPS = frozenset({"to", "_to_copy", "type_as", "float", "half", "bfloat16"})
_MODULE_PATH = re.compile(r"(?:^|\.)(?:layers|layer|h|blocks)\.\d+\.(.+)$")


def _module_role(target: str) -> str:
    """The role that a submodule path inside a layer names (``model.layers.0.self_attn.q_proj``
    -> ``self_attn_q_proj``), or "" when ``target`` is no such path."""
    m = _MODULE_PATH.search(target)
    return m.group(1).replace(".", "_") if m is not None else ""


def _classify_module(name: str, target: str, module_role: str) -> tuple[str | None, str | None]:
    """A ``call_module`` node (``model.layers.0.self_attn.q_proj``, named after its path) is
    classified by its path inside the layer, ``module_role`` (:func:`_module_role` of its
    target), as a weight of that module would be."""
    if not module_role:
        return None, None
    flat = target.replace(".", "_")
    if name != flat and name.rstrip("0123456789_") != flat:
        return None, None
    return _classify_role(module_role)


_NORM_STEPS = frozenset({"to", "_to_copy", "float", "type_as", "pow", "mean", "var", "add",
                         "sub", "rsqrt", "sqrt", "mul", "div", "reciprocal", "square"})


def _norm_statistics(nodes: list[Node], op_names: list[str], inputs_idx: list[list[int]],
                     consumers: list[list[int]], layers: list[int],
                     group: list[str | None]) -> None:
    """The statistics of an unfused norm (cast, pow, mean, eps add, rsqrt, scaling) lead only to
    the op applying the norm's weight: they are the norm's, even when they read a block's output
    (a post-block norm before the residual add). A residual add, which adds two tensors, is
    not a statistic."""
    for j in range(len(nodes) - 1, -1, -1):
        if group[j] is not None or layers[j] == NO_LAYER:
            continue
        op = op_names[j]
        if op not in _NORM_STEPS:
            continue
        if op in ("add", "sub") and sum(
                1 for i in inputs_idx[j] if nodes[i].dtype not in _SCALAR_TYPES) > 1:
            continue
        users = [c for c in consumers[j] if consumers[c] and layers[c] == layers[j]]
        if users and all(group[c] == NORM for c in users):
            group[j] = NORM


def _block_exits(nodes: list[Node], op_names: list[str], inputs_idx: list[list[int]],
                 layers: list[int],
                 group: list[str | None], sub: list[str | None], direct: list[bool]) -> None:
    """What a block does with its output before the next block starts belongs to that block:
    the all-reduce after ``o_proj``, casts and views of the output, the combine of routed and
    shared experts, and the residual add, which closes the block (its users belong to the next
    block, found by the reverse pass). A norm's own output cast is the norm's.

    The residual read by the add is an input from outside the layer, a norm's, a closed block's,
    or a value computed before the block's first own op (the layer's input, cast).
    """
    # Per layer, the first node each group names directly.
    first_direct: dict[int, dict[str, int]] = {}
    for node in nodes:
        j = node.index
        g = group[j]
        if direct[j] and g is not None:
            firsts = first_direct.get(layers[j])
            if firsts is None:
                firsts = first_direct[layers[j]] = {}
            if g not in firsts:
                firsts[g] = j
    closes = [False] * len(nodes)
    for node in nodes:
        j = node.index
        if group[j] is not None or layers[j] == NO_LAYER or node.kind != CALL:
            continue
        op = op_names[j]
        data = inputs_idx[j][:1] if op == "type_as" else inputs_idx[j]
        block: str | None = None
        producer = -1
        mixed = False
        unknown: list[int] = []
        residual = False
        tensors = 0
        for i in data:
            if nodes[i].dtype in _SCALAR_TYPES:
                continue  # sizes and scalars shape the op; they are not the data it combines
            tensors += 1
            g = group[i]
            if layers[i] != layers[j]:
                residual = True
            elif g is None:
                unknown.append(i)  # not known yet: an add waits for it, other ops go on
            elif g not in _BLOCKS or closes[i]:
                if g == NORM and not closes[i] and tensors == 1 and op in _CAST_OPS:
                    block, producer = NORM, i
                else:
                    residual = True
            elif block is None:
                block, producer = g, i
            elif g != block:
                mixed = True
        if block is None or mixed:
            continue
        if unknown and op in _ADD_OPS:
            start = first_direct.get(layers[j], {}).get(block, -1)
            if any(i > start for i in unknown):
                continue
            residual = True
        if block == NORM:
            if tensors != 1:
                continue
            group[j] = NORM
            continue
        if residual:
            if op not in _ADD_OPS:
                continue
            closes[j] = True
            group[j] = block
            continue
        group[j] = block
        if tensors == 1:
            sub[j] = sub[producer]


_GENERIC = re.compile(r"^(?:aten|<built-in|operator)|^[a-z_]+$")


def _is_generic_target(target: str) -> bool:
    """Whether an op without weights that calls ``target`` is generic arithmetic (ATen,
    Python operators), which says nothing about the block it serves."""
    return _GENERIC.match(target) is not None and "moe" not in target


# What an op target says about aux-stream regions (bits of _aux_flags).
_BEGINS, _ENDS, _MARKER, _WAITS = 1, 2, 4, 8


def _aux_flags(target: str) -> int:
    """:data:`_BEGINS`, :data:`_ENDS`, :data:`_MARKER`, :data:`_WAITS`: what ``target`` says
    about aux-stream regions."""
    flags = 0
    if "aux_stream" in target:
        flags |= _MARKER
        if "begin_aux_stream" in target:
            flags |= _BEGINS
        if "end_aux_stream" in target:
            flags |= _ENDS
        if "wait_aux_stream" in target:
            flags |= _WAITS
    return flags


def _mark_aux_regions(nodes: list[Node], inputs_idx: list[list[int]], consumers: list[list[int]],
                      layers: list[int], sub: list[str | None]) -> list[str]:
    """Streams per node: ``aux`` from a ``begin_aux_stream`` op to its ``end_aux_stream`` op."""
    n = len(nodes)
    streams = ["main"] * n
    flags = [0] * n
    per_target: dict[str, int] = {}  # a graph has few distinct targets
    begins_any = False
    for j, node in enumerate(nodes):
        target = node.target
        f = per_target.get(target)
        if f is None:
            f = per_target[target] = _aux_flags(target)
        flags[j] = f
        if f & _BEGINS:
            begins_any = True
    if not begins_any:
        return streams
    after = [False] * n
    for j in range(n):
        f = flags[j]
        if f & _BEGINS:
            after[j] = True
        elif not f & _ENDS:
            for i in inputs_idx[j]:
                if after[i]:
                    after[j] = True
                    break
    before = [False] * n
    for j in range(n - 1, -1, -1):
        f = flags[j]
        if f & _ENDS:
            before[j] = True
        elif not f & _BEGINS:
            for c in consumers[j]:
                if before[c]:
                    before[j] = True
                    break
    for j in range(n):
        f = flags[j]
        marker = f & _MARKER != 0
        if (after[j] and before[j]) or marker:
            if not f & _WAITS:
                streams[j] = "aux"
            if layers[j] != NO_LAYER and (marker or sub[j] is None):
                sub[j] = AUX_STREAM
    return streams
