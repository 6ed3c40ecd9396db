"""Real-depth Hugging Face models: published layer counts and layer-type patterns, tiny widths.

The fixtures of :mod:`models` and :mod:`more_models` hold 2-5 layers; what goes wrong at depth
(a shared block named after one of its many users, a model-level slice between two layers, a
KV-sharing layer reading a layer 15 places back, a dense prefix before 58 MoE layers) does not
show there. Every builder here keeps the **number of decoder layers and the per-layer pattern
of a published checkpoint** (sliding / full attention, dense-first MoE, MoE every other layer,
Mamba / attention / MoE hybrids, shared blocks, KV-sharing layers, per-layer inputs) and shrinks
everything else: hidden 64, 4 query heads, 2 KV heads, head dim 16, 8 experts top-2, vocabulary
128. Random init (seed 0), no download, transformers' own code (only DeepSeek-V3 is patched as
AutoDeploy patches it, see :mod:`per_expert_moe`).

Each :class:`DeepSpec` names its ``source``: the checkpoint (or the transformers config default,
which transformers documents as that checkpoint's) the layer count and pattern come from, and
the expected layer kinds as the pattern implies them (checked against the kinds the truth derives
from the module structure).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import transformers

from .models import SEED, patch_deepseek_experts

# Widths every builder shrinks to, applied only where the config class has the field.
TINY: dict[str, Any] = dict(
    vocab_size=128, hidden_size=64, intermediate_size=128, num_attention_heads=4,
    num_key_value_heads=2, head_dim=16, max_position_embeddings=64, use_cache=False,
    pad_token_id=0, bos_token_id=1, eos_token_id=2)
MOE: dict[str, Any] = dict(
    num_experts=8, n_routed_experts=8, num_local_experts=8, moe_num_experts=8,
    num_experts_per_tok=2, moe_topk=2, moe_k=2, top_k_experts=2, num_experts_per_token=2,
    moe_intermediate_size=32, shared_expert_intermediate_size=32,
    moe_shared_expert_intermediate_size=32, n_group=2, topk_group=1)
MLA: dict[str, Any] = dict(q_lora_rank=32, kv_lora_rank=16, qk_rope_head_dim=8,
                           qk_nope_head_dim=16, v_head_dim=16, head_dim=8,  # head_dim: RoPE's
                           num_key_value_heads=4)
LINEAR_ATTN: dict[str, Any] = dict(linear_num_value_heads=4, linear_num_key_heads=2,
                                   linear_key_head_dim=16, linear_value_head_dim=16)
# Widths of newer architectures (sparse-attention indexers, low-rank outputs, sliding-window
# heads, linear-attention heads, hyper-connections, n-gram / per-layer embeddings), applied
# only where the config class has the field AND its default is set (a 0 or None there switches
# a feature off, which the shrinking must not switch on).
WHERE_SET: dict[str, Any] = dict(
    sliding_window=4, index_n_heads=2, index_head_dim=16, index_topk=4, o_lora_rank=16,
    o_groups=2, swa_num_attention_heads=4, swa_num_key_value_heads=2, swa_head_dim=16,
    unpadded_vocab_size=128, linear_head_dim=16, linear_num_heads=4, hc_lowrank=8,
    ple_embed_dim=16, router_hidden_size=32, ffn_hidden_size=128, expert_ffn_hidden_size=32,
    dense_intermediate_size=128, shared_intermediate_size=64, rotary_dim=8, index_block_size=4,
    index_topk_blocks=2, shared_experts_intermediate_size=32, keep_window_size=4,
    zero_expert_num=4, qk_head_dim=24, sliding_window_size=4,
    ngram_vocab_size_base=128, split_ngram_parts=4, vocab_size_per_layer_input=128,
    hidden_size_per_layer_input=8, global_head_dim=32, moe_intermediate_size=32,
    shared_expert_intermediate_size=32, prefix_dense_intermediate_size=128)


@dataclass
class DeepSpec:
    """One real-depth export: the model, where its depth and pattern come from, how to export."""

    name: str
    model: torch.nn.Module
    source: str
    expected_kinds: list[str] | None
    batch: int = 2
    seq: int = 8
    dynamic_seq: bool = True  # False: a Python loop over the sequence fixes its length
    notes: list[str] = field(default_factory=list)
    layers: int | None = None  # decoder blocks, where config.num_hidden_layers counts otherwise


def _defaults(cls: type) -> dict[str, Any]:
    """The config class's defaults by field name (a field without a usable default: None)."""
    names = {f.name: None for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) \
        else {}
    try:
        names.update(cls().to_dict())
    except Exception:  # a config without usable defaults: its dataclass fields only
        pass
    return names


def config(cls_name: str, *, moe: bool = False, mla: bool = False, linear: bool = False,
           **over: Any) -> Any:
    """``cls_name``'s config: published defaults, tiny widths (where the class has the field), ``over``."""
    cls = getattr(transformers, cls_name)
    defaults = _defaults(cls)
    kwargs: dict[str, Any] = {k: v for k, v in TINY.items() if k in defaults}
    kwargs.update({k: v for k, v in WHERE_SET.items() if defaults.get(k)})
    for on, extra in ((moe, MOE), (mla, MLA), (linear, LINEAR_ATTN)):
        if on:
            kwargs.update({k: v for k, v in extra.items() if k in defaults})
    kwargs.update(over)
    return cls(**kwargs)


def build(cls_name: str, cfg: Any, attn: str = "sdpa", dtype: torch.dtype = torch.bfloat16,
          meta: bool = False) -> torch.nn.Module:
    """The model from ``cfg`` (seed 0); MoE experts as transformers' ``batched_mm`` (export
    cannot loop over the experts a batch hits). ``meta``: built on the meta device."""
    torch.manual_seed(SEED)
    cls = getattr(transformers, cls_name)
    kwargs: dict[str, Any] = dict(dtype=dtype, attn_implementation=attn,
                                  experts_implementation="batched_mm")
    if meta:
        with torch.device("meta"):
            model = cls._from_config(cfg, **kwargs)
    else:
        model = cls._from_config(cfg, **kwargs)
    return model.eval()


def repeat(pattern: list[str], n: int) -> list[str]:
    """``pattern`` repeated to ``n`` entries."""
    return [pattern[i % len(pattern)] for i in range(n)]


def swa_types(n: int, every: int, last_full: bool = False) -> list[str]:
    """``every-1`` sliding layers then one full layer, repeated (Gemma 3, OLMo 3, EXAONE 4)."""
    types = ["sliding_attention" if (i + 1) % every else "full_attention" for i in range(n)]
    if last_full:
        types[-1] = "full_attention"
    return types


def _kinds_from(types: list[str], table: dict[str, str]) -> list[str]:
    return [table[t] for t in types]


# --------------------------------------------------------------------------------------------
# Gemma family: sliding/full patterns, KV-sharing layers, per-layer inputs
# --------------------------------------------------------------------------------------------

def _gemma3(name: str, n: int, checkpoint: str) -> DeepSpec:
    cfg = config("Gemma3TextConfig", num_hidden_layers=n, sliding_window=4,
                 layer_types=swa_types(n, 6))
    return DeepSpec(name, build("Gemma3ForCausalLM", cfg), f"{checkpoint}: {n} layers, "
                    "sliding_window_pattern 6 (5 sliding, 1 global)", ["attention+mlp"] * n,
                    notes=["two RoPE tables (local and global)", "q/k norms, 4 norms per layer"])


def gemma3_1b() -> DeepSpec:
    return _gemma3("gemma3_1b", 26, "google/gemma-3-1b-pt")


def gemma3_4b() -> DeepSpec:
    return _gemma3("gemma3_4b", 34, "google/gemma-3-4b-pt (text model)")


def gemma3_12b() -> DeepSpec:
    return _gemma3("gemma3_12b", 48, "google/gemma-3-12b-pt (text model)")


def _gemma4(name: str, n: int, every: int, kv_shared: int, checkpoint: str, *,
            ple: bool, moe: bool = False, k_eq_v: bool = False,
            double_wide: bool = False) -> DeepSpec:
    over: dict[str, Any] = dict(
        num_hidden_layers=n, sliding_window=4, layer_types=swa_types(n, every, last_full=True),
        num_kv_shared_layers=kv_shared, hidden_size_per_layer_input=8 if ple else 0,
        vocab_size_per_layer_input=128, global_head_dim=32, attention_k_eq_v=k_eq_v,
        use_double_wide_mlp=double_wide)
    if k_eq_v:
        over["num_global_key_value_heads"] = 1
    if moe:
        over.update(enable_moe_block=True, num_experts=8, top_k_experts=2,
                    moe_intermediate_size=32)
    cfg = config("Gemma4TextConfig", **over)
    notes = [f"{every - 1} sliding : 1 full, last layer full",
             "full layers: head_dim 2x the sliding layers' (global_head_dim)"]
    if kv_shared:
        notes.append(f"last {kv_shared} layers reuse the K/V of the last non-shared sliding / "
                     "full layer (shared_kv_states); no k/v projections of their own")
    if ple:
        notes.append("per-layer inputs: one packed embedding + projection at model level, "
                     "sliced per layer in the model loop (per_layer_inputs[:, :, i, :])")
    if moe:
        notes.append("MoE block beside the dense MLP (router and experts owned by the decoder "
                     "layer itself)")
    if k_eq_v:
        notes.append("full layers: keys are values (attention_k_eq_v)")
    kind = "attention+moe" if moe else "attention+mlp"
    return DeepSpec(name, build("Gemma4ForCausalLM", cfg), checkpoint, [kind] * n, notes=notes)


def gemma4_e2b() -> DeepSpec:
    return _gemma4("gemma4_e2b", 35, 5, 20, "google/gemma-4-E2B (text model): 35 layers, 4 "
                   "sliding : 1 full, num_kv_shared_layers 20, per-layer inputs (256), "
                   "double-wide MLP in the KV-shared layers", ple=True, double_wide=True)


def gemma4_e4b() -> DeepSpec:
    return _gemma4("gemma4_e4b", 42, 6, 18, "google/gemma-4-E4B (text model): 42 layers, 5 "
                   "sliding : 1 full, KV shared across the last 18 layers, per-layer inputs",
                   ple=True)


def gemma4_26b_a4b() -> DeepSpec:
    return _gemma4("gemma4_26b_a4b", 30, 6, 0, "google/gemma-4-26B-A4B (text model): 30 layers "
                   "(transformers' Gemma4TextConfig default), 5 sliding : 1 full, MoE block "
                   "(128 experts top-8) beside the dense MLP in every layer, K=V in full layers",
                   ple=False, moe=True, k_eq_v=True)


def gemma4_31b() -> DeepSpec:
    return _gemma4("gemma4_31b", 60, 6, 0, "google/gemma-4-31B (text model): 60 layers, 5 "
                   "sliding : 1 full, K=V in full layers, no per-layer inputs", ple=False,
                   k_eq_v=True)


# --------------------------------------------------------------------------------------------
# Hybrids: Mamba / attention / MoE patterns, shared blocks
# --------------------------------------------------------------------------------------------

def zamba2_2_7b() -> DeepSpec:
    cfg = config("Zamba2Config", num_hidden_layers=54, mamba_d_state=16, n_mamba_heads=8,
                 mamba_ngroups=1, num_mem_blocks=2, adapter_rank=8)
    types = cfg.layers_block_type
    kinds = ["attention+mamba+mlp" if t == "hybrid" else "mamba" for t in types]
    hybrid = [i for i, t in enumerate(types) if t == "hybrid"]
    return DeepSpec("zamba2_2_7b", build("Zamba2ForCausalLM", cfg),
                    "Zyphra/Zamba2-2.7B: 54 layers, num_mem_blocks 2 (transformers' Zamba2Config "
                    "default layout)", kinds,
                    notes=[f"hybrid layers {hybrid}: two shared transformer blocks used "
                           "alternately (ABAB...), with per-use LoRA adapters"])


def nemotron_h_8b() -> DeepSpec:
    pattern = "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-"
    return _nemotron_h("nemotron_h_8b", pattern, "nvidia/Nemotron-H-8B-Base-8K: 52 layers, "
                       f"hybrid_override_pattern {pattern}")


def nemotron_3_nano() -> DeepSpec:
    pattern = "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME"
    return _nemotron_h("nemotron_3_nano", pattern, "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B: 52 "
                       f"layers, hybrid_override_pattern {pattern} (E = MoE block)")


def _nemotron_h(name: str, pattern: str, source: str) -> DeepSpec:
    table = {"M": "mamba", "-": "mlp", "*": "attention", "E": "moe"}
    cfg = config("NemotronHConfig", moe=True, hybrid_override_pattern=pattern,
                 num_hidden_layers=len(pattern), mamba_num_heads=8, mamba_head_dim=16,
                 ssm_state_size=16, n_groups=1, n_shared_experts=1)
    return DeepSpec(name, build("NemotronHForCausalLM", cfg), source,
                    [table[c] for c in pattern],
                    notes=["one mixer or FFN per block", "Mamba2 chunk padding"])


MAMBA2: dict[str, Any] = dict(mamba_n_heads=8, mamba_d_head=16, mamba_d_state=16,
                              mamba_n_groups=1)


def bamba_9b() -> DeepSpec:
    cfg = config("BambaConfig", num_hidden_layers=32, attn_layer_indices=[9, 18, 27], **MAMBA2)
    kinds = ["attention+mlp" if i in (9, 18, 27) else "mamba+mlp" for i in range(32)]
    return DeepSpec("bamba_9b", build("BambaForCausalLM", cfg),
                    "ibm-ai-platform/Bamba-9B: 32 layers, attn_layer_indices [9, 18, 27]", kinds)


def jamba_mini() -> DeepSpec:
    cfg = config("JambaConfig", moe=True, num_hidden_layers=32, attn_layer_period=8,
                 attn_layer_offset=4, expert_layer_period=2, expert_layer_offset=1,
                 mamba_d_state=8, mamba_dt_rank=8)
    kinds = [("attention" if i % 8 == 4 else "mamba") + ("+moe" if i % 2 == 1 else "+mlp")
             for i in range(32)]
    return DeepSpec("jamba_mini", build("JambaForCausalLM", cfg),
                    "ai21labs/AI21-Jamba-Mini-1.5 (and Jamba-v0.1): 32 layers, attention every "
                    "8th from 4, MoE every 2nd from 1", kinds, seq=5, dynamic_seq=False,
                    notes=["static sequence: the Mamba1 scan is a Python loop over time steps"])


def falcon_h1_7b() -> DeepSpec:
    cfg = config("FalconH1Config", num_hidden_layers=44, mamba_d_ssm=128, **MAMBA2)
    return DeepSpec("falcon_h1_7b", build("FalconH1ForCausalLM", cfg),
                    "tiiuae/Falcon-H1-7B-Base: 44 layers, attention and Mamba2 in parallel in "
                    "every layer", ["attention+mamba+mlp"] * 44)


def granite_4_h_small() -> DeepSpec:
    types = ["attention" if i % 10 == 5 else "mamba" for i in range(40)]
    cfg = config("GraniteMoeHybridConfig", moe=True, num_hidden_layers=40, layer_types=types,
                 shared_intermediate_size=64, **MAMBA2)
    return DeepSpec("granite_4_h_small", build("GraniteMoeHybridForCausalLM", cfg),
                    "ibm-granite/granite-4.0-h-small: 40 layers, attention at 5, 15, 25, 35, "
                    "MoE with a shared MLP in every layer",
                    [("attention" if t == "attention" else "mamba") + "+moe" for t in types])


def qwen3_next_80b() -> DeepSpec:
    types = repeat(["linear_attention"] * 3 + ["full_attention"], 48)
    cfg = config("Qwen3NextConfig", moe=True, linear=True, num_hidden_layers=48,
                 layer_types=types, linear_conv_kernel_dim=4)
    return DeepSpec("qwen3_next_80b", build("Qwen3NextForCausalLM", cfg),
                    "Qwen/Qwen3-Next-80B-A3B: 48 layers, 3 gated-delta-net : 1 gated attention, "
                    "MoE with shared expert everywhere",
                    _kinds_from(types, {"linear_attention": "gdn+moe",
                                        "full_attention": "attention+moe"}),
                    notes=["the delta rule with its real chunk size 64: ~1,000 nodes per GDN layer"])


# --------------------------------------------------------------------------------------------
# MoE patterns
# --------------------------------------------------------------------------------------------

def llama4_maverick() -> DeepSpec:
    cfg = config("Llama4TextConfig", moe=True, num_hidden_layers=48, intermediate_size_mlp=128,
                 interleave_moe_layer_step=2, attention_chunk_size=4)
    kinds = ["attention+moe" if i % 2 == 1 else "attention+mlp" for i in range(48)]
    return DeepSpec("llama4_maverick", build("Llama4ForCausalLM", cfg),
                    "meta-llama/Llama-4-Maverick-17B-128E: 48 layers, MoE every 2nd layer "
                    "(interleave_moe_layer_step 2), NoPE every 4th layer, chunked attention",
                    kinds)


def llama4_scout() -> DeepSpec:
    cfg = config("Llama4TextConfig", moe=True, num_hidden_layers=48, intermediate_size_mlp=128,
                 interleave_moe_layer_step=1, attention_chunk_size=4)
    return DeepSpec("llama4_scout", build("Llama4ForCausalLM", cfg),
                    "meta-llama/Llama-4-Scout-17B-16E: 48 layers, MoE in every layer, NoPE "
                    "every 4th layer, chunked attention", ["attention+moe"] * 48)


def deepseek_v3_61() -> DeepSpec:
    cfg = config("DeepseekV3Config", moe=True, mla=True, num_hidden_layers=61,
                 num_key_value_heads=4, head_dim=8, n_shared_experts=1,
                 first_k_dense_replace=3)
    model = build("DeepseekV3ForCausalLM", cfg)
    patch_deepseek_experts(model, check_logits=False)
    return DeepSpec("deepseek_v3_61", model, "deepseek-ai/DeepSeek-V3: 61 layers, "
                    "first_k_dense_replace 3", ["mla+mlp"] * 3 + ["mla+moe"] * 58,
                    notes=["PATCH (AutoDeploy's DeepSeek export patch): routed experts as one "
                           "auto_deploy.torch_moe op over per-expert weight lists"])


def glm4_5_air() -> DeepSpec:
    cfg = config("Glm4MoeConfig", moe=True, num_hidden_layers=46, n_shared_experts=1,
                 first_k_dense_replace=1, use_qk_norm=False, num_mtp_layers=0)
    return DeepSpec("glm4_5_air", build("Glm4MoeForCausalLM", cfg),
                    "zai-org/GLM-4.5-Air: 46 layers, first_k_dense_replace 1",
                    ["attention+mlp"] + ["attention+moe"] * 45)


def _gpt_oss(name: str, n: int, checkpoint: str) -> DeepSpec:
    cfg = config("GptOssConfig", moe=True, num_hidden_layers=n, sliding_window=4,
                 layer_types=repeat(["sliding_attention", "full_attention"], n))
    return DeepSpec(name, build("GptOssForCausalLM", cfg, attn="eager"),
                    f"{checkpoint}: {n} layers, sliding and full attention alternating",
                    ["attention+moe"] * n, notes=["attention sinks", "eager attention"])


def gpt_oss_20b() -> DeepSpec:
    return _gpt_oss("gpt_oss_20b", 24, "openai/gpt-oss-20b")


def gpt_oss_120b() -> DeepSpec:
    return _gpt_oss("gpt_oss_120b", 36, "openai/gpt-oss-120b")


def qwen3_30b_a3b() -> DeepSpec:
    cfg = config("Qwen3MoeConfig", moe=True, num_hidden_layers=48)
    return DeepSpec("qwen3_30b_a3b", build("Qwen3MoeForCausalLM", cfg),
                    "Qwen/Qwen3-30B-A3B: 48 layers, MoE in every layer", ["attention+moe"] * 48)


def mixtral_8x7b() -> DeepSpec:
    cfg = config("MixtralConfig", moe=True, num_hidden_layers=32)
    return DeepSpec("mixtral_8x7b", build("MixtralForCausalLM", cfg),
                    "mistralai/Mixtral-8x7B-v0.1: 32 layers", ["attention+moe"] * 32)


def ernie4_5_21b_a3b() -> DeepSpec:
    cfg = config("Ernie4_5_MoeConfig", moe=True, num_hidden_layers=28, moe_num_shared_experts=2,
                 moe_layer_start_index=1, moe_layer_interval=1)
    return DeepSpec("ernie4_5_21b_a3b", build("Ernie4_5_MoeForCausalLM", cfg),
                    "baidu/ERNIE-4.5-21B-A3B-PT: 28 layers, moe_layer_start_index 1",
                    ["attention+mlp"] + ["attention+moe"] * 27)


def hunyuan_a13b() -> DeepSpec:
    cfg = config("HunYuanMoEV1Config", moe=True, num_hidden_layers=32)
    return DeepSpec("hunyuan_a13b", build("HunYuanMoEV1ForCausalLM", cfg),
                    "tencent/Hunyuan-A13B-Instruct: 32 layers, MoE with shared MLP everywhere",
                    ["attention+moe"] * 32)


def minimax_m2_62() -> DeepSpec:
    cfg = config("MiniMaxM2Config", moe=True, num_hidden_layers=62)
    return DeepSpec("minimax_m2_62", build("MiniMaxM2ForCausalLM", cfg),
                    "MiniMaxAI/MiniMax-M2: 62 layers", ["attention+moe"] * 62)


# --------------------------------------------------------------------------------------------
# Dense patterns: sliding/full, NoPE layers, short convolutions
# --------------------------------------------------------------------------------------------

def olmo3_7b() -> DeepSpec:
    cfg = config("Olmo3Config", num_hidden_layers=32, sliding_window=4,
                 layer_types=swa_types(32, 4))
    return DeepSpec("olmo3_7b", build("Olmo3ForCausalLM", cfg),
                    "allenai/Olmo-3-1025-7B: 32 layers, 3 sliding : 1 full",
                    ["attention+mlp"] * 32)


def exaone4_32b() -> DeepSpec:
    cfg = config("Exaone4Config", num_hidden_layers=64, sliding_window=4,
                 sliding_window_pattern=4)
    return DeepSpec("exaone4_32b", build("Exaone4ForCausalLM", cfg),
                    "LGAI-EXAONE/EXAONE-4.0-32B: 64 layers, 3 sliding : 1 global (global layers "
                    "without RoPE)", ["attention+mlp"] * 64)


def smollm3_3b() -> DeepSpec:
    cfg = config("SmolLM3Config", num_hidden_layers=36, no_rope_layer_interval=4)
    return DeepSpec("smollm3_3b", build("SmolLM3ForCausalLM", cfg),
                    "HuggingFaceTB/SmolLM3-3B: 36 layers, every 4th layer without RoPE",
                    ["attention+mlp"] * 36)


def lfm2_1_2b() -> DeepSpec:
    attn = {2, 5, 8, 10, 12, 14}
    types = ["full_attention" if i in attn else "conv" for i in range(16)]
    cfg = config("Lfm2Config", num_hidden_layers=16, layer_types=types,
                 block_auto_adjust_ff_dim=False)
    return DeepSpec("lfm2_1_2b", build("Lfm2ForCausalLM", cfg),
                    "LiquidAI/LFM2-1.2B: 16 layers, attention at 2, 5, 8, 10, 12, 14, gated "
                    "short convolutions elsewhere",
                    ["attention+mlp" if t == "full_attention" else "mlp" for t in types])


# --------------------------------------------------------------------------------------------
# Architectures of transformers 5.23 not among the fixtures, at their configs' default depth
# --------------------------------------------------------------------------------------------

def _generic(name: str, cfg_cls: str, model_cls: str, checkpoint: str, *, moe: bool = False,
             mla: bool = False, linear: bool = False, attn: str = "sdpa",
             kinds: list[str] | None = None, seq: int = 8, dynamic_seq: bool = True,
             notes: tuple[str, ...] = (), layers_attr: str = "num_hidden_layers",
             **over: Any) -> DeepSpec:
    """A model at the depth and pattern of ``cfg_cls``'s defaults, which transformers documents
    as ``checkpoint``'s (``over`` where a field must change to build tiny). ``layers_attr``: the
    config field that counts the decoder blocks."""
    cfg = config(cfg_cls, moe=moe, mla=mla, linear=linear, **over)
    n = getattr(cfg, layers_attr)
    return DeepSpec(name, build(model_cls, cfg, attn=attn),
                    f"{checkpoint}: {n} layers (transformers 5.23 {cfg_cls} defaults, documented "
                    "as this checkpoint's)", kinds, seq=seq, dynamic_seq=dynamic_seq,
                    notes=list(notes), layers=n)


GENERIC: dict[str, dict[str, Any]] = {
    # dense
    "arcee_afm_4_5b": dict(cfg_cls="ArceeConfig", model_cls="ArceeForCausalLM",
                           checkpoint="arcee-ai/AFM-4.5B", notes=("ReLU^2 up/down MLP",)),
    "cwm": dict(cfg_cls="CwmConfig", model_cls="CwmForCausalLM", checkpoint="facebook/cwm",
                notes=("1 full : 3 sliding",)),
    "doge_320m": dict(cfg_cls="DogeConfig", model_cls="DogeForCausalLM",
                      checkpoint="SmallDoge/Doge-320M", attn="eager",
                      notes=("dynamic mask attention",)),
    "helium_2b": dict(cfg_cls="HeliumConfig", model_cls="HeliumForCausalLM",
                      checkpoint="kyutai/helium-1-preview"),
    "diffllama": dict(cfg_cls="DiffLlamaConfig", model_cls="DiffLlamaForCausalLM",
                      checkpoint="kajuma/DiffLlama-0.3B-handcut", attn="eager",
                      notes=("differential attention (two softmax maps subtracted)",)),
    "vaultgemma_1b": dict(cfg_cls="VaultGemmaConfig", model_cls="VaultGemmaForCausalLM",
                          checkpoint="google/vaultgemma-1b", attn="eager",
                          notes=("sliding and full attention alternating",)),
    "hyperclovax_14b": dict(cfg_cls="HyperCLOVAXConfig", model_cls="HyperCLOVAXForCausalLM",
                            checkpoint="naver-hyperclovax/HyperCLOVAX-SEED-Think-14B"),
    "ernie4_5_0_3b": dict(cfg_cls="Ernie4_5Config", model_cls="Ernie4_5ForCausalLM",
                          checkpoint="baidu/ERNIE-4.5-0.3B-PT"),
    "stablelm_3b": dict(cfg_cls="StableLmConfig", model_cls="StableLmForCausalLM",
                        checkpoint="stabilityai/stablelm-3b-4e1t"),
    "jais2_8b": dict(cfg_cls="Jais2Config", model_cls="Jais2ForCausalLM",
                     checkpoint="inceptionai/Jais-2-8B-Chat"),
    "nanochat_d32": dict(cfg_cls="NanoChatConfig", model_cls="NanoChatForCausalLM",
                         checkpoint="karpathy/nanochat-d32", num_hidden_layers=32,
                         notes=("32 layers (d32: depth 32; the config default is 12)",
                                "weightless RMSNorms; the model's norm also normalises the "
                                "embedding before layer 0")),
    "granite_swa_2b": dict(cfg_cls="GraniteSWAConfig", model_cls="GraniteSWAForCausalLM",
                           checkpoint="ibm-granite/granite-swash-2b", attn="eager",
                           notes=("1 full : 3 sliding",)),
    "minicpm3_4b": dict(cfg_cls="MiniCPM3Config", model_cls="MiniCPM3ForCausalLM",
                        checkpoint="openbmb/MiniCPM3-4B", mla=True, notes=("MLA, dense",)),
    "youtu_2b": dict(cfg_cls="YoutuConfig", model_cls="YoutuForCausalLM",
                     checkpoint="tencent/Youtu-LLM-2B", mla=True, notes=("MLA, dense",)),
    "lfm3_1_7b": dict(cfg_cls="Lfm3Config", model_cls="Lfm3ForCausalLM",
                      checkpoint="LiquidAI/LFM3-1.7B",
                      notes=("short convolutions, full and sliding attention",)),
    "olmo_hybrid_7b": dict(cfg_cls="OlmoHybridConfig", model_cls="OlmoHybridForCausalLM",
                           checkpoint="allenai/Olmo-Hybrid-7B", linear=True,
                           notes=("3 linear attention (gated delta net) : 1 full",)),
    "qwen3_5_27b": dict(cfg_cls="Qwen3_5TextConfig", model_cls="Qwen3_5ForCausalLM",
                        checkpoint="Qwen/Qwen3.5-27B", linear=True,
                        notes=("3 gated delta net : 1 gated attention, dense",)),
    "gemma4_unified_12b": dict(cfg_cls="Gemma4UnifiedTextConfig",
                               model_cls="Gemma4UnifiedForCausalLM",
                               checkpoint="google/gemma-4-12B-it"),
    "cohere_compass": dict(cfg_cls="CohereCompassTextConfig", model_cls="CohereCompassForCausalLM",
                           checkpoint="CohereLabs/North-Micro-Vision-Instruct",
                           rope_parameters={"full_attention": {"rope_type": "default",
                                                               "rope_theta": 10000.0}}),
    # MoE
    "phimoe_3_5": dict(cfg_cls="PhimoeConfig", model_cls="PhimoeForCausalLM",
                       checkpoint="microsoft/Phi-3.5-MoE-instruct", moe=True),
    "flex_olmo_7x7b": dict(cfg_cls="FlexOlmoConfig", model_cls="FlexOlmoForCausalLM",
                           checkpoint="allenai/FlexOlmo-7x7B-1T", moe=True),
    "solar_open_100b": dict(cfg_cls="SolarOpenConfig", model_cls="SolarOpenForCausalLM",
                            checkpoint="upstage/Solar-Open-100B", moe=True),
    "mellum2_12b": dict(cfg_cls="MellumConfig", model_cls="MellumForCausalLM",
                        checkpoint="JetBrains/Mellum2-12B-A2.5B-Base", moe=True),
    "granitemoe_swa_3b": dict(cfg_cls="GraniteMoeSWAConfig", model_cls="GraniteMoeSWAForCausalLM",
                              checkpoint="ibm-granite/granite-swash-3b-a600m", moe=True,
                              attn="eager"),
    "granitemoeshared": dict(cfg_cls="GraniteMoeSharedConfig",
                             model_cls="GraniteMoeSharedForCausalLM",
                             checkpoint="ibm-granite/granite-speech-3.2-8b (language model)",
                             moe=True, shared_intermediate_size=64),
    "cohere2_moe": dict(cfg_cls="Cohere2MoeConfig", model_cls="Cohere2MoeForCausalLM",
                        checkpoint="CohereLabs/command-a-plus-05-2026", moe=True,
                        notes=("3 sliding : 1 full, parallel attention and MoE",)),
    "exaone_moe_236b": dict(cfg_cls="ExaoneMoeConfig", model_cls="ExaoneMoeForCausalLM",
                            checkpoint="LGAI-EXAONE/K-EXAONE-236B-A23B", moe=True,
                            notes=("3 sliding : 1 full, dense first layer",)),
    "mistral4_119b": dict(cfg_cls="Mistral4Config", model_cls="Mistral4ForCausalLM",
                          checkpoint="mistralai/Mistral-Small-4-119B-2603", moe=True, mla=True,
                          head_dim=8),
    "laguna_xs2": dict(cfg_cls="LagunaConfig", model_cls="LagunaForCausalLM",
                       checkpoint="poolside/laguna-XS.2", moe=True,
                       num_attention_heads_per_layer=[4] * 40,
                       notes=("dense first layer, per-layer head counts",)),
    "mimo_v2_flash": dict(cfg_cls="MiMoV2FlashConfig", model_cls="MiMoV2FlashForCausalLM",
                          checkpoint="XiaomiMiMo/MiMo-V2-Flash", moe=True, attn="eager",
                          notes=("1 full : 5 sliding (4 after the first), dense first layer",)),
    "kolibri1": dict(cfg_cls="Kolibri1Config", model_cls="Kolibri1ForCausalLM",
                     checkpoint="Aleph-Alpha/Kolibri-1", moe=True,
                     notes=("4 sliding : 1 full",)),
    "flint": dict(cfg_cls="FlintConfig", model_cls="FlintForCausalLM",
                  checkpoint="RecursiveSI/flint", moe=True, attn="eager",
                  notes=("dense layers 0-1 (mlp_only_layers), 3 sliding : 1 full",)),
    "hy_v3": dict(cfg_cls="HYV3Config", model_cls="HYV3ForCausalLM",
                  checkpoint="tencent/Hy3-preview", moe=True, notes=("dense first layer",)),
    "zaya1_8b": dict(cfg_cls="ZayaConfig", model_cls="ZayaForCausalLM",
                     checkpoint="Zyphra/ZAYA1-8B", moe=True,
                     num_experts_per_tok=1, notes=("top-1 routing (the only one ZAYA supports)",)),
    "minimax_m3": dict(cfg_cls="MiniMaxM3VLTextConfig", model_cls="MiniMaxM3VLForCausalLM",
                       checkpoint="MiniMaxAI/MiniMax-M3 (text model)", moe=True),
    # MLA / sparse attention + MoE
    "deepseek_v32_exp": dict(cfg_cls="DeepseekV32Config", model_cls="DeepseekV32ForCausalLM",
                             checkpoint="deepseek-ai/DeepSeek-V3.2-Exp", moe=True, mla=True,
                             notes=("DSA indexer, first 3 layers dense",)),
    "glm5": dict(cfg_cls="GlmMoeDsaConfig", model_cls="GlmMoeDsaForCausalLM",
                 checkpoint="zai-org/GLM-5", moe=True, mla=True,
                 notes=("DSA indexer, first 3 layers dense",)),
    "axk1": dict(cfg_cls="AXK1Config", model_cls="AXK1ForCausalLM", checkpoint="skt/A.X-K1",
                 moe=True, mla=True, notes=("MLA, dense first layer",)),
    "axk2": dict(cfg_cls="AXK2Config", model_cls="AXK2ForCausalLM", checkpoint="skt/A.X-K2",
                 moe=True, mla=True, notes=("MLA with indexer, dense first layer",)),
    "hy_v4": dict(cfg_cls="HYV4Config", model_cls="HYV4ForCausalLM",
                  checkpoint="tencent/Hy4-preview", moe=True, mla=True, attn="eager"),
    "deepseek_v4_flash": dict(cfg_cls="DeepseekV4Config", model_cls="DeepseekV4ForCausalLM",
                              checkpoint="deepseek-ai/DeepSeek-V4-Flash-Base", moe=True,
                              mla=True, attn="eager"),
    "dots3_note": dict(cfg_cls="Dots3NoteTextConfig", model_cls="Dots3NoteForCausalLM",
                       checkpoint="dots-studio/dots3-note-prev", moe=True, mla=True,
                       num_key_value_heads=4, head_dim=24, swa_num_attention_heads=4,
                       swa_num_key_value_heads=4, swa_q_lora_rank=32, swa_kv_lora_rank=16,
                       swa_head_dim=24, swa_qk_nope_head_dim=16, swa_v_head_dim=16,
                       notes=("DSA-indexed MLA layers 0, 1 and every 4th from 5, sliding-window "
                              "MLA elsewhere (per-layer config), dense first layer",)),
    # hybrids
    "kimi_linear_48b": dict(cfg_cls="KimiLinearConfig", model_cls="KimiLinearForCausalLM",
                            checkpoint="moonshotai/Kimi-Linear-48B-A3B-Instruct", moe=True,
                            mla=True, linear=True,
                            notes=("3 KDA linear attention : 1 MLA, dense first layer",)),
    "ling_3_flash": dict(cfg_cls="BailingHybridConfig", model_cls="BailingHybridForCausalLM",
                         checkpoint="inclusionAI/Ling-3.0-Flash", moe=True, mla=True,
                         linear=True, num_expert_group=2,
                         notes=("5 linear attention : 1 MLA, first 2 layers dense",)),
    "inkling": dict(cfg_cls="InklingTextConfig", model_cls="InklingForCausalLM",
                    checkpoint="thinkingmachines/Inkling", moe=True, mla=True),
    "inkling2_small": dict(cfg_cls="Inkling2TextConfig", model_cls="Inkling2ForCausalLM",
                           checkpoint="thinkingmachines/Inkling-2-Small-MXFP8", moe=True,
                           mla=True, attn="eager"),
}


# Architectures of transformers 5.23 left out, and why.
NOT_EXPORTED: dict[str, str] = {
    "longcat_flash": "LongcatFlashForCausalLM's experts loop over the experts a batch hits "
                     "(`for expert_idx_tensor in expert_hit: int(...item())`) and have no "
                     "`batched_mm` implementation: export refuses the data-dependent loop",
    "qwen4_exp": "Qwen4ExpForCausalLM's QSA indexer loops in Python over batch and query "
                 "positions and selects keys with torch.nonzero: export cannot guard on the "
                 "data-dependent block count",
    "rwkv": "RwkvForCausalLM's blocks hold a time-mix and a channel-mix (key / value / "
            "receptance), neither a mixer nor an FFN of the layer-kind vocabulary, so no layer "
            "kind can be derived",
    "xlstm": "xLSTMForCausalLM's blocks (mLSTM cell and gated feed-forward, layers under "
             "backbone.blocks) hold neither a mixer nor an FFN of the layer-kind vocabulary, so "
             "no layer kind can be derived",
    "hrm_text": "HrmTextForCausalLM runs two 16-layer stacks in cycles (num_hidden_layers 128 "
                "counts cache slots, no ModuleList holds 128 decoder layers): a layer as "
                "nn_module_stack names it is applied several times, so the truth's layer-per-node "
                "does not describe the model",
}


def _generic_builder(name: str) -> Callable[[], DeepSpec]:
    def builder() -> DeepSpec:
        return _generic(name, **GENERIC[name])
    builder.__name__ = name
    return builder


DEEP_BUILDERS: dict[str, Callable[[], DeepSpec]] = {
    "gemma3_1b": gemma3_1b, "gemma3_4b": gemma3_4b, "gemma3_12b": gemma3_12b,
    "gemma4_e2b": gemma4_e2b, "gemma4_e4b": gemma4_e4b, "gemma4_26b_a4b": gemma4_26b_a4b,
    "gemma4_31b": gemma4_31b,
    "zamba2_2_7b": zamba2_2_7b, "nemotron_h_8b": nemotron_h_8b,
    "nemotron_3_nano": nemotron_3_nano, "bamba_9b": bamba_9b, "jamba_mini": jamba_mini,
    "falcon_h1_7b": falcon_h1_7b, "granite_4_h_small": granite_4_h_small,
    "qwen3_next_80b": qwen3_next_80b,
    "llama4_maverick": llama4_maverick, "llama4_scout": llama4_scout,
    "deepseek_v3_61": deepseek_v3_61, "glm4_5_air": glm4_5_air, "gpt_oss_20b": gpt_oss_20b,
    "gpt_oss_120b": gpt_oss_120b, "qwen3_30b_a3b": qwen3_30b_a3b, "mixtral_8x7b": mixtral_8x7b,
    "ernie4_5_21b_a3b": ernie4_5_21b_a3b, "hunyuan_a13b": hunyuan_a13b,
    "minimax_m2_62": minimax_m2_62,
    "olmo3_7b": olmo3_7b, "exaone4_32b": exaone4_32b, "smollm3_3b": smollm3_3b,
    "lfm2_1_2b": lfm2_1_2b,
}
DEEP_BUILDERS.update({name: _generic_builder(name) for name in GENERIC})


# --------------------------------------------------------------------------------------------
# Architectures of the shallow fixtures, at real depth
# --------------------------------------------------------------------------------------------

def _gemma3n(name: str, n: int, kv_shared: int, checkpoint: str) -> DeepSpec:
    cfg = config("Gemma3nTextConfig", num_hidden_layers=n, sliding_window=4,
                 layer_types=swa_types(n, 5), num_kv_shared_layers=kv_shared,
                 vocab_size_per_layer_input=128, hidden_size_per_layer_input=8, laurel_rank=8,
                 activation_sparsity_pattern=[0.0] * n, intermediate_size=[128] * n)
    return DeepSpec(name, build("Gemma3nForCausalLM", cfg, attn="eager"),
                    f"{checkpoint}: {n} layers, 4 sliding : 1 full, last {kv_shared} layers "
                    "reuse earlier layers' K/V", ["attention+mlp"] * n,
                    notes=["AltUp streams (4), LAuReL, per-layer inputs", "no activation "
                           "sparsity (its threshold tensor cannot be made on meta)"])


def gemma3n_e2b() -> DeepSpec:
    return _gemma3n("gemma3n_e2b", 30, 10, "google/gemma-3n-E2B")


def gemma3n_e4b() -> DeepSpec:
    return _gemma3n("gemma3n_e4b", 35, 15, "google/gemma-3n-E4B (transformers' "
                    "Gemma3nTextConfig default)")


def gemma2_2b() -> DeepSpec:
    cfg = config("Gemma2Config", num_hidden_layers=26, sliding_window=4)
    return DeepSpec("gemma2_2b", build("Gemma2ForCausalLM", cfg, attn="eager"),
                    "google/gemma-2-2b: 26 layers, sliding and global alternating",
                    ["attention+mlp"] * 26, notes=["logit soft-capping", "eager attention"])


def cohere2_r7b() -> DeepSpec:
    cfg = config("Cohere2Config", num_hidden_layers=32, sliding_window=4,
                 layer_types=swa_types(32, 4))
    return DeepSpec("cohere2_r7b", build("Cohere2ForCausalLM", cfg),
                    "CohereLabs/c4ai-command-r7b-12-2024: 32 layers, 3 sliding : 1 global "
                    "(global layers without RoPE)", ["attention+mlp"] * 32)


def qwen3_5_35b_a3b() -> DeepSpec:
    types = repeat(["linear_attention"] * 3 + ["full_attention"], 40)
    cfg = config("Qwen3_5MoeTextConfig", moe=True, linear=True, num_hidden_layers=40,
                 layer_types=types, linear_conv_kernel_dim=4)
    return DeepSpec("qwen3_5_35b_a3b", build("Qwen3_5MoeForCausalLM", cfg),
                    "Qwen/Qwen3.5-35B-A3B: 40 layers, 3 gated-delta-net : 1 gated attention, MoE "
                    "with shared expert everywhere",
                    _kinds_from(types, {"linear_attention": "gdn+moe",
                                        "full_attention": "attention+moe"}))


def dots1_142b() -> DeepSpec:
    cfg = config("Dots1Config", moe=True, num_hidden_layers=62, n_shared_experts=2,
                 first_k_dense_replace=1, n_group=1, topk_group=1)
    return DeepSpec("dots1_142b", build("Dots1ForCausalLM", cfg),
                    "rednote-hilab/dots.llm1.base: 62 layers, first_k_dense_replace 1",
                    ["attention+mlp"] + ["attention+moe"] * 61)


def deepseek_v2_lite_27() -> DeepSpec:
    cfg = config("DeepseekV2Config", moe=True, mla=True, num_hidden_layers=27,
                 num_key_value_heads=4, head_dim=8, q_lora_rank=None, n_shared_experts=2,
                 first_k_dense_replace=1, topk_method="greedy", n_group=1, topk_group=1)
    return DeepSpec("deepseek_v2_lite_27", build("DeepseekV2ForCausalLM", cfg),
                    "deepseek-ai/DeepSeek-V2-Lite: 27 layers, first_k_dense_replace 1, MLA "
                    "without query LoRA", ["mla+mlp"] + ["mla+moe"] * 26)


def glm4_7_flash() -> DeepSpec:
    cfg = config("Glm4MoeLiteConfig", moe=True, mla=True, num_key_value_heads=4,
                 n_group=1, topk_group=1)
    n = cfg.num_hidden_layers
    return DeepSpec("glm4_7_flash", build("Glm4MoeLiteForCausalLM", cfg),
                    f"zai-org/GLM-4.7-Flash: {n} layers (transformers' Glm4MoeLiteConfig "
                    "default), MLA, dense first layer", ["mla+mlp"] + ["mla+moe"] * (n - 1))


def afmoe_trinity() -> DeepSpec:
    cfg = config("AfmoeConfig", moe=True, num_shared_experts=1)
    n = cfg.num_hidden_layers
    dense = cfg.num_dense_layers
    return DeepSpec("afmoe_trinity", build("AfmoeForCausalLM", cfg),
                    f"arcee-ai/Trinity-Mini: {n} layers, {dense} dense first, 3 sliding : 1 "
                    "global (transformers' AfmoeConfig defaults)",
                    ["attention+mlp"] * dense + ["attention+moe"] * (n - dense))


def olmoe_1b_7b() -> DeepSpec:
    cfg = config("OlmoeConfig", moe=True, num_hidden_layers=16)
    return DeepSpec("olmoe_1b_7b", build("OlmoeForCausalLM", cfg),
                    "allenai/OLMoE-1B-7B-0924: 16 layers", ["attention+moe"] * 16)


def granitemoe_3b() -> DeepSpec:
    cfg = config("GraniteMoeConfig", moe=True, num_hidden_layers=32)
    return DeepSpec("granitemoe_3b", build("GraniteMoeForCausalLM", cfg),
                    "ibm-granite/granite-3.0-3b-a800m-base: 32 layers", ["attention+moe"] * 32)


def jetmoe_8b() -> DeepSpec:
    cfg = transformers.JetMoeConfig(vocab_size=128, hidden_size=64, num_hidden_layers=24,
                                    num_key_value_heads=2, kv_channels=16, intermediate_size=64,
                                    max_position_embeddings=64, num_local_experts=8,
                                    num_experts_per_tok=2, use_cache=False)
    return DeepSpec("jetmoe_8b", build("JetMoeForCausalLM", cfg, attn="eager"),
                    "jetmoe/jetmoe-8b: 24 layers, mixture of attention heads and MoE MLP",
                    ["attention+moe"] * 24)


def mamba2_codestral() -> DeepSpec:
    cfg = transformers.Mamba2Config(vocab_size=128, hidden_size=64, num_heads=8, head_dim=16,
                                    state_size=16, n_groups=1, num_hidden_layers=64,
                                    use_cache=False)
    return DeepSpec("mamba2_codestral", build("Mamba2ForCausalLM", cfg, attn="eager"),
                    "mistralai/Mamba-Codestral-7B-v0.1: 64 Mamba2 layers", ["mamba"] * 64)


def falcon_mamba_7b() -> DeepSpec:
    cfg = transformers.FalconMambaConfig(vocab_size=128, hidden_size=64, state_size=8,
                                         num_hidden_layers=64, use_cache=False,
                                         use_mambapy=False)
    return DeepSpec("falcon_mamba_7b", build("FalconMambaForCausalLM", cfg, attn="eager"),
                    "tiiuae/falcon-mamba-7b: 64 Mamba1 layers", ["mamba"] * 64, seq=5,
                    dynamic_seq=False,
                    notes=["static sequence: the Mamba1 scan is a Python loop over time steps"])


def recurrent_gemma_2b() -> DeepSpec:
    cfg = transformers.RecurrentGemmaConfig(
        num_hidden_layers=26, vocab_size=128, hidden_size=64, intermediate_size=128,
        num_attention_heads=4, num_key_value_heads=1, lru_width=64, attention_window_size=8,
        conv1d_width=4, use_cache=False, pad_token_id=0)
    kinds = ["attention+mlp" if i % 3 == 2 else "mlp" for i in range(26)]
    return DeepSpec("recurrent_gemma_2b", build("RecurrentGemmaForCausalLM", cfg),
                    "google/recurrentgemma-2b: 26 layers, (recurrent, recurrent, attention) "
                    "repeated", kinds, seq=5, dynamic_seq=False,
                    notes=["static sequence: the RG-LRU recurrence is a loop over time"])


def zamba_7b() -> DeepSpec:
    cfg = config("ZambaConfig", num_hidden_layers=76, attention_head_dim=32,
                 attention_hidden_size=128,
                 n_mamba_heads=2, mamba_d_state=8, mamba_dt_rank=8, use_mamba_kernels=False)
    kinds = ["attention+mamba+mlp" if t == "hybrid" else "mamba"
             for t in cfg.layers_block_type]
    return DeepSpec("zamba_7b", build("ZambaForCausalLM", cfg), "Zyphra/Zamba-7B-v1: 76 layers, "
                    "one shared attention block every 6th layer from 4 (transformers' ZambaConfig "
                    "default layout)", kinds, seq=5, dynamic_seq=False,
                    notes=["static sequence: the Mamba1 scan is a Python loop"])


def minimax_text_01() -> DeepSpec:
    types = repeat(["linear_attention"] * 7 + ["full_attention"], 80)
    cfg = config("MiniMaxConfig", moe=True, num_hidden_layers=80, layer_types=types,
                 block_size=4)
    return DeepSpec("minimax_text_01", build("MiniMaxForCausalLM", cfg),
                    "MiniMaxAI/MiniMax-Text-01: 80 layers, 7 lightning attention : 1 softmax "
                    "attention, MoE everywhere", ["attention+moe"] * 80, dynamic_seq=False,
                    notes=["static sequence: the lightning attention loops over blocks"])


def llama3_1_8b() -> DeepSpec:
    cfg = config("LlamaConfig", num_hidden_layers=32)
    return DeepSpec("llama3_1_8b", build("LlamaForCausalLM", cfg),
                    "meta-llama/Llama-3.1-8B: 32 layers", ["attention+mlp"] * 32)


def seed_oss_36b() -> DeepSpec:
    cfg = config("SeedOssConfig", num_hidden_layers=64)
    return DeepSpec("seed_oss_36b", build("SeedOssForCausalLM", cfg),
                    "ByteDance-Seed/Seed-OSS-36B-Base: 64 layers", ["attention+mlp"] * 64)


def apertus_8b() -> DeepSpec:
    cfg = config("ApertusConfig", num_hidden_layers=32)
    return DeepSpec("apertus_8b", build("ApertusForCausalLM", cfg),
                    "swiss-ai/Apertus-8B-2509: 32 layers", ["attention+mlp"] * 32)


DEEP_BUILDERS.update({
    "gemma3n_e2b": gemma3n_e2b, "gemma3n_e4b": gemma3n_e4b, "gemma2_2b": gemma2_2b,
    "cohere2_r7b": cohere2_r7b, "qwen3_5_35b_a3b": qwen3_5_35b_a3b, "dots1_142b": dots1_142b,
    "deepseek_v2_lite_27": deepseek_v2_lite_27, "glm4_7_flash": glm4_7_flash,
    "afmoe_trinity": afmoe_trinity, "olmoe_1b_7b": olmoe_1b_7b, "granitemoe_3b": granitemoe_3b,
    "jetmoe_8b": jetmoe_8b, "mamba2_codestral": mamba2_codestral,
    "falcon_mamba_7b": falcon_mamba_7b, "recurrent_gemma_2b": recurrent_gemma_2b,
    "zamba_7b": zamba_7b, "minimax_text_01": minimax_text_01, "llama3_1_8b": llama3_1_8b,
    "seed_oss_36b": seed_oss_36b, "apertus_8b": apertus_8b,
})
