"""The group a node should have, derived from the module path ``nn_module_stack`` recorded for it.

Groups follow the module that computed the node: the path inside the decoder layer names it
(``self_attn`` -> attention, or MLA when the model's attention has ``q_a_proj``/``kv_a_proj``;
``mlp`` -> MoE when that block routes to experts, else MLP; ``mixer`` -> whatever that block
holds; ``linear_attn`` -> gated delta net; the layer's own norms -> norm). Code of the decoder
layer itself (residual adds, block-opening casts) has no submodule to name its group, so it is
left out of the comparison and checked by hand-made cases instead. A block of the layer that owns
weights but holds no module of any group (RecurrentGemma's RG-LRU block, LFM2's short
convolution, Zamba's ``linear``) is ``other``: the vocabulary has no name for it, and no
neighbour's group may be lent to it.
"""
from __future__ import annotations

import re

_LAYER = re.compile(r"^(.*?(?:layers|layer|h|blocks))\.(\d+)(?:\.(.*))?$")
_NORMS = re.compile(r"^(?:input_layernorm|post_attention_layernorm|pre_feedforward_layernorm|"
                    r"post_feedforward_layernorm|norm|ln_\d|layernorm|attention_norm|ffn_norm|"
                    r"pre_mixer_norm|post_mixer_norm|pre_ff_norm)$")


def _inner(module: str) -> tuple[str, str] | None:
    m = _LAYER.match(module)
    if m is None:
        return None
    return m.group(2), m.group(3) or ""


def layer_blocks(modules: list[str]) -> dict[str, set[str]]:
    """For each layer (by index text), the submodule paths its nodes name."""
    out: dict[str, set[str]] = {}
    for module in modules:
        found = _inner(module)
        if found is not None:
            out.setdefault(found[0], set()).add(found[1])
    return out


def expected_group(module: str | None, blocks: dict[str, set[str]], mla: bool) -> str | None:
    """The group for a node computed by ``module``; None when no submodule names it."""
    if not module:
        return None
    found = _inner(module)
    if found is None or not found[1]:
        return None
    layer, path = found
    parts = path.split(".")
    while parts and parts[0] in ("shared_transformer", "mamba_decoder", "feed_forward_block"):
        parts = parts[1:]
    if not parts:
        return None
    head = parts[0]
    mine = blocks.get(layer, set())
    if _NORMS.match(head):
        return "norm"
    if head in ("self_attn", "attention", "attn", "self_attention"):
        return "mla" if mla else "attention"
    if head in ("linear_attn", "gated_delta_net"):
        return "gdn"
    if head in ("mamba", "ssm"):
        return "mamba"
    if head in ("mlp", "feed_forward", "block_sparse_moe", "moe", "ffn", "mixer"):
        inside = {p.split(".", 1)[1].split(".")[0] for p in mine
                  if p.startswith(head + ".") and "." in p}
        if inside & {"experts", "gate", "router", "shared_expert", "shared_experts"}:
            return "moe"
        if head == "mixer":
            if inside & {"q_proj", "k_proj", "v_proj", "o_proj"}:
                return "attention"
            if inside & {"in_proj", "conv1d", "out_proj", "act"} or not inside - {"norm"}:
                return "mamba"
        return "mlp"
    return None


def unnamed_blocks(truth: dict[str, dict[str, object]], layers_module: str,
                   weights: set[str]) -> list[str]:
    """Module paths of the layer blocks (direct children of a decoder layer) that own weights and
    hold no node of any group, from a truth file written with module classes."""
    named: set[str] = set()
    seen: set[str] = set()
    for info in truth.values():
        block = _block_path(info.get("module"), layers_module)
        if block is None:
            continue
        seen.add(block)
        if info.get("group") is not None:
            named.add(block)
    out = []
    for block in sorted(seen - named):
        flat = block.replace(".", "_") + "_"
        if any(w.startswith(flat) for w in weights):
            out.append(block)
    return out


def _block_path(module: object, layers_module: str) -> str | None:
    """``model.layers.3.conv.in_proj`` -> ``model.layers.3.conv`` (None outside layer blocks)."""
    if not isinstance(module, str) or not module.startswith(layers_module + "."):
        return None
    parts = module[len(layers_module) + 1:].split(".")
    if len(parts) < 2:
        return None
    return f"{layers_module}.{parts[0]}.{parts[1]}"
