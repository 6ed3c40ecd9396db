"""Tiny Hugging Face models, one builder per fixture: config, dtype, inputs and patches.

Every builder makes a small model from a config with ``transformers`` (random init, seed 0, no
download) and says how AutoDeploy would export it. ``expected_kinds`` is what the layer kinds
derived from the module stacks must come out as (a check on the derivation, not its source).
Only ``deepseek_v3`` is patched, the way AutoDeploy's own export patch does (see
:mod:`per_expert_moe`); every other model runs transformers' code unchanged, including the
pure-torch Mamba / Mamba2 / gated-delta-rule paths.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import transformers

from .per_expert_moe import split_experts

SEED = 0
TINY: dict[str, Any] = dict(vocab_size=128, hidden_size=64, intermediate_size=128,
                            num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                            max_position_embeddings=64, use_cache=False)
MAMBA2: dict[str, Any] = dict(mamba_n_heads=8, mamba_d_head=16, mamba_d_state=16,
                              mamba_n_groups=1, mamba_chunk_size=4)


@dataclass
class Spec:
    """One fixture: the model and how it is exported."""

    name: str
    model: torch.nn.Module
    expected_kinds: list[str]
    batch: int = 2
    seq: int = 8
    dynamic_seq: bool = True  # False: a Python loop over the sequence fixes its length
    notes: list[str] = field(default_factory=list)


def _build(cls_name: str, cfg: Any, dtype: torch.dtype, attn: str = "sdpa",
           **kwargs: Any) -> torch.nn.Module:
    torch.manual_seed(SEED)
    cls = getattr(transformers, cls_name)
    if "experts_implementation" not in kwargs and _has_stacked_experts(cfg):
        kwargs["experts_implementation"] = "batched_mm"
    model = cls._from_config(cfg, dtype=dtype, attn_implementation=attn, **kwargs)
    return model.eval()


def _has_stacked_experts(cfg: Any) -> bool:
    return any(getattr(cfg, k, None) for k in ("num_experts", "n_routed_experts",
                                                "num_local_experts"))


def _tiny(**over: Any) -> dict[str, Any]:
    out = dict(TINY)
    out.update(over)
    return out


def llama() -> Spec:
    cfg = transformers.LlamaConfig(**_tiny(num_hidden_layers=3))
    return Spec("llama", _build("LlamaForCausalLM", cfg, torch.float32), ["attention+mlp"] * 3,
                notes=["float32"])


def qwen3() -> Spec:
    cfg = transformers.Qwen3Config(**_tiny(num_hidden_layers=2))
    return Spec("qwen3", _build("Qwen3ForCausalLM", cfg, torch.bfloat16), ["attention+mlp"] * 2,
                notes=["per-head q/k RMSNorm"])


def phi3() -> Spec:
    cfg = transformers.Phi3Config(**_tiny(num_hidden_layers=2, original_max_position_embeddings=64,
                                          pad_token_id=0))
    return Spec("phi3", _build("Phi3ForCausalLM", cfg, torch.bfloat16), ["attention+mlp"] * 2,
                notes=["fused qkv_proj and gate_up_proj split by slicing"])


def gemma2() -> Spec:
    cfg = transformers.Gemma2Config(**_tiny(num_hidden_layers=2, sliding_window=4))
    return Spec("gemma2", _build("Gemma2ForCausalLM", cfg, torch.bfloat16, attn="eager"),
                ["attention+mlp"] * 2,
                notes=["sliding + global layers", "eager attention (transformers refuses sdpa)",
                       "logit soft-capping (tanh)"])


def gemma3() -> Spec:
    types = ["sliding_attention", "sliding_attention", "full_attention"]
    cfg = transformers.Gemma3TextConfig(**_tiny(num_hidden_layers=3, sliding_window=4,
                                                layer_types=types))
    return Spec("gemma3", _build("Gemma3ForCausalLM", cfg, torch.bfloat16), ["attention+mlp"] * 3,
                notes=["2 sliding-window layers then a global one", "q/k norms, 4 norms per layer"])


def cohere2() -> Spec:
    types = ["sliding_attention", "full_attention"]
    cfg = transformers.Cohere2Config(**_tiny(num_hidden_layers=2, sliding_window=4,
                                             layer_types=types))
    return Spec("cohere2", _build("Cohere2ForCausalLM", cfg, torch.bfloat16), ["attention+mlp"] * 2,
                notes=["parallel attention and MLP on one LayerNorm", "sliding + global"])


def qwen_moe() -> Spec:
    cfg = transformers.Qwen2MoeConfig(**_tiny(
        num_hidden_layers=3, moe_intermediate_size=32, shared_expert_intermediate_size=64,
        num_experts=4, num_experts_per_tok=2, mlp_only_layers=[0], output_router_logits=True))
    return Spec("qwen_moe", _build("Qwen2MoeForCausalLM", cfg, torch.bfloat16),
                ["attention+mlp", "attention+moe", "attention+moe"],
                notes=["dense first layer (mlp_only_layers)", "shared expert + sigmoid gate",
                       "output_router_logits: aux loss outside every layer, output of 5 values"])


def deepseek_v3() -> Spec:
    cfg = transformers.DeepseekV3Config(**_tiny(
        head_dim=8, num_hidden_layers=4, num_key_value_heads=4, moe_intermediate_size=32,
        n_shared_experts=1, n_routed_experts=8, num_experts_per_tok=2, n_group=2, topk_group=1,
        q_lora_rank=32, kv_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=16,
        v_head_dim=16, first_k_dense_replace=1))
    model = _build("DeepseekV3ForCausalLM", cfg, torch.bfloat16)
    patch_deepseek_experts(model, check_logits=True)
    return Spec("deepseek_v3", model, ["mla+mlp"] + ["mla+moe"] * 3,
                notes=["PATCH (AutoDeploy's deepseek export patch): routed experts as one "
                       "auto_deploy.torch_moe op over per-expert weight lists",
                       "first_k_dense_replace=1, grouped top-k routing with correction bias"])


def patch_deepseek_experts(model: torch.nn.Module, check_logits: bool) -> None:
    """Per-expert experts in every MoE layer (AutoDeploy's patch); optionally check the logits."""
    layers = model.model.layers  # type: ignore[union-attr]
    with torch.no_grad():
        for layer in layers:
            gate = getattr(layer.mlp, "gate", None)
            if gate is not None and hasattr(gate, "e_score_correction_bias"):
                # a non-zero bias, so that the routing really depends on it
                n = gate.e_score_correction_bias.shape[0]
                if gate.e_score_correction_bias.device.type != "meta":
                    gate.e_score_correction_bias.copy_(torch.linspace(-0.1, 0.1, n))
    ids = torch.randint(0, model.config.vocab_size, (2, 4), generator=torch.Generator().manual_seed(SEED))
    ref = model(ids).logits.float() if check_logits else None
    for layer in layers:
        if hasattr(layer.mlp, "experts"):
            layer.mlp.experts = split_experts(layer.mlp.experts)
    if ref is not None:
        got = model(ids).logits.float()
        err = (got - ref).abs().max().item()
        if err > 0.05 * max(1.0, ref.abs().max().item()):
            raise AssertionError(f"per-expert patch changed the logits by {err}")


def glm4_moe() -> Spec:
    cfg = transformers.Glm4MoeConfig(**_tiny(
        num_hidden_layers=3, moe_intermediate_size=32, n_shared_experts=1, n_routed_experts=8,
        num_experts_per_tok=2, n_group=2, topk_group=1, first_k_dense_replace=1,
        use_qk_norm=True, num_mtp_layers=0))
    return Spec("glm4_moe", _build("Glm4MoeForCausalLM", cfg, torch.bfloat16),
                ["attention+mlp", "attention+moe", "attention+moe"],
                notes=["dense first layer (first_k_dense_replace=1)", "shared expert",
                       "partial rotary"])


def mixtral() -> Spec:
    cfg = transformers.MixtralConfig(**_tiny(num_hidden_layers=2, num_local_experts=4,
                                             num_experts_per_tok=2))
    return Spec("mixtral", _build("MixtralForCausalLM", cfg, torch.bfloat16), ["attention+moe"] * 2,
                notes=["MoE without shared expert"])


def llama4() -> Spec:
    cfg = transformers.Llama4TextConfig(**_tiny(
        num_hidden_layers=4, intermediate_size_mlp=128, num_local_experts=4,
        num_experts_per_tok=1, interleave_moe_layer_step=2))
    return Spec("llama4", _build("Llama4ForCausalLM", cfg, torch.bfloat16),
                ["attention+mlp", "attention+moe"] * 2,
                notes=["MoE every second layer (interleave_moe_layer_step=2)",
                       "shared expert, sigmoid router", "NoPE layer every 4th"])


def gpt_oss() -> Spec:
    cfg = transformers.GptOssConfig(**_tiny(num_hidden_layers=2, num_local_experts=4,
                                            num_experts_per_tok=2, sliding_window=4))
    return Spec("gpt_oss", _build("GptOssForCausalLM", cfg, torch.bfloat16, attn="eager"),
                ["attention+moe"] * 2,
                notes=["sliding + full attention with sinks", "eager attention (no sdpa)",
                       "router + clamped SwiGLU experts with biases"])


def jamba() -> Spec:
    cfg = transformers.JambaConfig(**_tiny(
        num_hidden_layers=4, attn_layer_period=4, attn_layer_offset=1, expert_layer_period=2,
        expert_layer_offset=0, num_experts=4, num_experts_per_tok=2, mamba_d_state=8,
        mamba_dt_rank=8))
    return Spec("jamba", _build("JambaForCausalLM", cfg, torch.bfloat16),
                ["mamba+moe", "attention+mlp", "mamba+moe", "mamba+mlp"], seq=5, dynamic_seq=False,
                notes=["Mamba1 + attention, MoE every second layer",
                       "static sequence: the Mamba1 scan is a Python loop over time steps"])


def falcon_mamba() -> Spec:
    cfg = transformers.FalconMambaConfig(vocab_size=128, hidden_size=64, state_size=8,
                                         num_hidden_layers=2, use_cache=False, use_mambapy=False)
    return Spec("falcon_mamba", _build("FalconMambaForCausalLM", cfg, torch.bfloat16, attn="eager"),
                ["mamba"] * 2, seq=5, dynamic_seq=False,
                notes=["attention-free Mamba1, layers under backbone.layers",
                       "static sequence: the Mamba1 scan is a Python loop over time steps",
                       "position_ids is taken but unused"])


def nemotron_h() -> Spec:
    types = ["mamba", "mlp", "mamba", "attention", "moe"]
    cfg = transformers.NemotronHConfig(**_tiny(
        layers_block_type=types, num_hidden_layers=len(types), mamba_num_heads=4,
        mamba_head_dim=16, ssm_state_size=16, n_groups=1, conv_kernel=4, chunk_size=4,
        n_routed_experts=4, n_shared_experts=1, num_experts_per_tok=2, moe_intermediate_size=32,
        moe_shared_expert_intermediate_size=32))
    return Spec("nemotron_h", _build("NemotronHForCausalLM", cfg, torch.bfloat16),
                ["mamba", "mlp", "mamba", "attention", "moe"],
                notes=["one mixer or FFN per block", "Mamba2 chunk padding (chunk 4)"])


def bamba() -> Spec:
    cfg = transformers.BambaConfig(**_tiny(num_hidden_layers=3, attn_layer_indices=[1], **MAMBA2))
    return Spec("bamba", _build("BambaForCausalLM", cfg, torch.bfloat16),
                ["mamba+mlp", "attention+mlp", "mamba+mlp"],
                notes=["Mamba2 + attention", "Mamba2 chunk padding (chunk 4)"])


def granite_moe_hybrid() -> Spec:
    cfg = transformers.GraniteMoeHybridConfig(**_tiny(
        num_hidden_layers=2, layer_types=["mamba", "attention"], num_local_experts=4,
        num_experts_per_tok=2, shared_intermediate_size=64, **MAMBA2))
    return Spec("granite_moe_hybrid", _build("GraniteMoeHybridForCausalLM", cfg, torch.bfloat16),
                ["mamba+moe", "attention+moe"],
                notes=["Mamba2 + attention, MoE with shared MLP", "Mamba2 chunk padding (chunk 4)"])


def zamba2() -> Spec:
    cfg = transformers.Zamba2Config(**_tiny(
        num_hidden_layers=4, layers_block_type=["mamba", "hybrid", "mamba", "hybrid"],
        mamba_d_state=16, n_mamba_heads=8, chunk_size=4, num_mem_blocks=1, mamba_ngroups=1,
        adapter_rank=8))
    return Spec("zamba2", _build("Zamba2ForCausalLM", cfg, torch.bfloat16),
                ["mamba", "attention+mamba+mlp", "mamba", "attention+mamba+mlp"],
                notes=["one shared transformer block used by layers 1 and 3: layer 3 reads "
                       "layer 1's weights (model_layers_1_shared_transformer_*)",
                       "Mamba2 chunk padding (chunk 4)"])


def falcon_h1() -> Spec:
    cfg = transformers.FalconH1Config(**_tiny(num_hidden_layers=2, mamba_d_ssm=128, **MAMBA2))
    return Spec("falcon_h1", _build("FalconH1ForCausalLM", cfg, torch.bfloat16),
                ["attention+mamba+mlp"] * 2,
                notes=["parallel hybrid: attention and Mamba2 side by side on one norm",
                       "Mamba2 chunk padding (chunk 4)", "muP multipliers"])


def qwen3_next() -> Spec:
    cfg = transformers.Qwen3NextConfig(**_tiny(
        num_hidden_layers=2, layer_types=["linear_attention", "full_attention"],
        linear_num_value_heads=4, linear_num_key_heads=2, linear_key_head_dim=16,
        linear_value_head_dim=16, linear_conv_kernel_dim=4, num_experts=4, num_experts_per_tok=2,
        moe_intermediate_size=32, shared_expert_intermediate_size=32, mlp_only_layers=[1]))
    return Spec("qwen3_next", _build("Qwen3NextForCausalLM", cfg, torch.bfloat16),
                ["gdn+moe", "attention+mlp"],
                notes=["gated delta net with the real chunk size 64: the delta-rule loop "
                       "unrolled (about 1,000 nodes in layer 0)", "MoE with shared expert, "
                       "dense second layer (mlp_only_layers)"])


BUILDERS: dict[str, Callable[[], Spec]] = {
    "llama": llama, "qwen3": qwen3, "phi3": phi3, "gemma2": gemma2, "gemma3": gemma3,
    "cohere2": cohere2, "qwen_moe": qwen_moe, "deepseek_v3": deepseek_v3, "glm4_moe": glm4_moe,
    "mixtral": mixtral, "llama4": llama4, "gpt_oss": gpt_oss, "jamba": jamba,
    "falcon_mamba": falcon_mamba, "nemotron_h": nemotron_h, "bamba": bamba,
    "granite_moe_hybrid": granite_moe_hybrid, "zamba2": zamba2, "falcon_h1": falcon_h1,
    "qwen3_next": qwen3_next,
}

