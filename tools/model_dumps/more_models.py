"""More tiny Hugging Face models: architectures whose structure the first set does not show.

Same conventions as :mod:`models` (config only, random init, seed 0, no download, transformers'
code unchanged). What they add:

- parallel attention and MLP residuals: GPT-NeoX, Falcon (both decoder architectures), Phi,
  GPT-J, Cohere;
- LayerNorm models with biases, learned or ALiBi positions and other layer lists: GPT-2 and
  GPT-BigCode (``transformer.h``), BLOOM, MPT (``transformer.blocks``), StarCoder2, Persimmon,
  Nemotron;
- post-norms and sub-norms: OLMo2, OLMo3, GLM-4, EXAONE 4, BitNet, AFMoE;
- MoE variants: OLMoE, GraniteMoE (multipliers), Qwen3-MoE with a dense middle layer, ERNIE 4.5
  MoE, HunYuan MoE (shared MLP inside the MoE block), MiniMax-M2, dots.llm1, JetMoE (mixture of
  attention heads), DeepSeek-V2-Lite (MLA without query LoRA), GLM-4-MoE-Lite (MLA);
- layers without RoPE (SmolLM3), short-convolution hybrids (LFM2, LFM2-MoE), RG-LRU recurrence
  (RecurrentGemma), Mamba1 and Mamba2 alone, Zamba (v1) with its shared attention block,
  lightning attention (MiniMax), gated delta nets with gated attention (Qwen3.5-MoE), Gemma (v1)
  and Gemma 3n (AltUp streams, LAuReL, per-layer inputs, shared KV).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import transformers

from .models import Spec, _build, _tiny


def gpt_neox() -> Spec:
    cfg = transformers.GPTNeoXConfig(vocab_size=128, hidden_size=64, num_hidden_layers=3,
                                     num_attention_heads=4, intermediate_size=128,
                                     max_position_embeddings=64, use_cache=False)
    return Spec("gpt_neox", _build("GPTNeoXForCausalLM", cfg, torch.float32),
                ["attention+mlp"] * 3,
                notes=["parallel residual: attention and MLP read the layer input, one add each",
                       "fused query_key_value, partial rotary (0.25), LayerNorm with bias",
                       "layers under gpt_neox.layers", "float32"])


def falcon() -> Spec:
    cfg = transformers.FalconConfig(vocab_size=128, hidden_size=64, num_hidden_layers=3,
                                    num_attention_heads=4, num_kv_heads=2,
                                    new_decoder_architecture=True, num_ln_in_parallel_attn=2,
                                    parallel_attn=True, bias=False, alibi=False,
                                    max_position_embeddings=64, use_cache=False)
    return Spec("falcon", _build("FalconForCausalLM", cfg, torch.bfloat16),
                ["attention+mlp"] * 3,
                notes=["new decoder architecture: ln_attn and ln_mlp both read the layer input",
                       "parallel attention and MLP, layers under transformer.h"])


def gpt2() -> Spec:
    cfg = transformers.GPT2Config(vocab_size=128, n_positions=64, n_embd=64, n_layer=3,
                                  n_head=4, use_cache=False)
    return Spec("gpt2", _build("GPT2LMHeadModel", cfg, torch.float32, attn="eager"),
                ["attention+mlp"] * 3,
                notes=["Conv1D projections (addmm), learned absolute positions",
                       "layers under transformer.h, ln_1/ln_2 with bias", "eager attention",
                       "float32"])


def starcoder2() -> Spec:
    cfg = transformers.Starcoder2Config(**_tiny(num_hidden_layers=2, sliding_window=4))
    return Spec("starcoder2", _build("Starcoder2ForCausalLM", cfg, torch.bfloat16),
                ["attention+mlp"] * 2,
                notes=["LayerNorm with bias, c_fc/c_proj GELU MLP with biases",
                       "sliding window"])


def olmo2() -> Spec:
    cfg = transformers.Olmo2Config(**_tiny(num_hidden_layers=3))
    return Spec("olmo2", _build("Olmo2ForCausalLM", cfg, torch.bfloat16), ["attention+mlp"] * 3,
                notes=["post-norms: each block's output is normed before its residual add, "
                       "no input norm", "q/k RMSNorm over the whole projection"])


def olmoe() -> Spec:
    cfg = transformers.OlmoeConfig(**_tiny(num_hidden_layers=2, num_experts=4,
                                           num_experts_per_tok=2))
    return Spec("olmoe", _build("OlmoeForCausalLM", cfg, torch.bfloat16), ["attention+moe"] * 2,
                notes=["MoE without shared expert", "q/k RMSNorm over the whole projection"])


def granitemoe() -> Spec:
    cfg = transformers.GraniteMoeConfig(**_tiny(
        num_hidden_layers=2, num_local_experts=4, num_experts_per_tok=2,
        embedding_multiplier=12.0, residual_multiplier=0.22, attention_multiplier=0.0078125,
        logits_scaling=8.0))
    return Spec("granitemoe", _build("GraniteMoeForCausalLM", cfg, torch.bfloat16),
                ["attention+moe"] * 2,
                notes=["embedding, residual, attention and logits multipliers",
                       "experts as input_linear/output_linear"])


def deepseek_v2_lite() -> Spec:
    cfg = transformers.DeepseekV2Config(**_tiny(
        num_hidden_layers=3, num_key_value_heads=4, head_dim=8, q_lora_rank=None,
        kv_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16,
        n_routed_experts=4, n_shared_experts=2, num_experts_per_tok=2,
        moe_intermediate_size=32, first_k_dense_replace=1, topk_method="greedy", n_group=1,
        topk_group=1))
    return Spec("deepseek_v2_lite", _build("DeepseekV2ForCausalLM", cfg, torch.bfloat16),
                ["mla+mlp", "mla+moe", "mla+moe"],
                notes=["MLA without query LoRA (q_proj), complex-number RoPE",
                       "dense first layer, 2 shared experts, greedy top-k"])


def qwen3_moe() -> Spec:
    cfg = transformers.Qwen3MoeConfig(**_tiny(num_hidden_layers=3, num_experts=4,
                                              num_experts_per_tok=2, moe_intermediate_size=32,
                                              mlp_only_layers=[1]))
    return Spec("qwen3_moe", _build("Qwen3MoeForCausalLM", cfg, torch.bfloat16),
                ["attention+moe", "attention+mlp", "attention+moe"],
                notes=["dense middle layer (mlp_only_layers=[1])", "per-head q/k RMSNorm"])


def ernie4_5_moe() -> Spec:
    cfg = transformers.Ernie4_5_MoeConfig(**_tiny(
        num_hidden_layers=3, moe_num_experts=4, moe_k=2, moe_num_shared_experts=1,
        moe_intermediate_size=32, moe_layer_start_index=1, moe_layer_interval=1))
    return Spec("ernie4_5_moe", _build("Ernie4_5_MoeForCausalLM", cfg, torch.bfloat16),
                ["attention+mlp", "attention+moe", "attention+moe"],
                notes=["MoE from layer 1 on, shared expert, router correction bias"])


def hunyuan_moe() -> Spec:
    cfg = transformers.HunYuanMoEV1Config(**_tiny(num_hidden_layers=2, num_experts=4,
                                                  moe_topk=2))
    return Spec("hunyuan_moe", _build("HunYuanMoEV1ForCausalLM", cfg, torch.bfloat16),
                ["attention+moe"] * 2,
                notes=["q/k norms after RoPE", "shared MLP beside the routed experts"])


def smollm3() -> Spec:
    cfg = transformers.SmolLM3Config(**_tiny(num_hidden_layers=4, no_rope_layer_interval=2,
                                                pad_token_id=0))
    return Spec("smollm3", _build("SmolLM3ForCausalLM", cfg, torch.bfloat16),
                ["attention+mlp"] * 4,
                notes=["every second layer without RoPE (no_rope_layer_interval=2)"])


def exaone4() -> Spec:
    cfg = transformers.Exaone4Config(**_tiny(num_hidden_layers=4, sliding_window=4,
                                             sliding_window_pattern=4))
    return Spec("exaone4", _build("Exaone4ForCausalLM", cfg, torch.bfloat16),
                ["attention+mlp"] * 4,
                notes=["post-norms, q/k norms", "3 sliding-window layers then a global one "
                       "(the global one without RoPE)"])


def lfm2() -> Spec:
    types = ["conv", "full_attention", "conv"]
    cfg = transformers.Lfm2Config(**_tiny(num_hidden_layers=3, layer_types=types,
                                          block_auto_adjust_ff_dim=False))
    return Spec("lfm2", _build("Lfm2ForCausalLM", cfg, torch.bfloat16),
                ["mlp", "attention+mlp", "mlp"],
                notes=["gated short-convolution layers beside an attention layer (the "
                       "convolution block has no group of its own)", "w1/w2/w3 feed-forward"])


def mamba2() -> Spec:
    cfg = transformers.Mamba2Config(vocab_size=128, hidden_size=64, num_heads=8, head_dim=16,
                                    state_size=16, n_groups=1, num_hidden_layers=2,
                                    chunk_size=4, use_cache=False)
    return Spec("mamba2", _build("Mamba2ForCausalLM", cfg, torch.bfloat16, attn="eager"),
                ["mamba"] * 2,
                notes=["attention-free Mamba2, layers under backbone.layers",
                       "residual kept in float32 beside the norm",
                       "Mamba2 chunk padding (chunk 4)", "position_ids is taken but unused"])


def zamba() -> Spec:
    cfg = transformers.ZambaConfig(**_tiny(
        num_hidden_layers=5, attention_head_dim=32, attn_layer_period=2, attn_layer_offset=1,
        n_mamba_heads=2, mamba_d_state=8, mamba_dt_rank=8, use_mamba_kernels=False))
    return Spec("zamba", _build("ZambaForCausalLM", cfg, torch.bfloat16),
                ["mamba", "mamba", "attention+mamba+mlp", "mamba", "attention+mamba+mlp"], seq=5,
                dynamic_seq=False,
                notes=["one shared attention block (on the concatenated embedding) used by "
                       "layers 2 and 4", "static sequence: the Mamba1 scan is a Python loop"])


def gemma() -> Spec:
    cfg = transformers.GemmaConfig(**_tiny(num_hidden_layers=2))
    return Spec("gemma", _build("GemmaForCausalLM", cfg, torch.bfloat16), ["attention+mlp"] * 2,
                notes=["embedding scaled by sqrt(hidden)", "(1 + weight) RMSNorm",
                       "GELU-tanh gated MLP"])


def glm4() -> Spec:
    cfg = transformers.Glm4Config(**_tiny(num_hidden_layers=2, pad_token_id=0))
    return Spec("glm4", _build("Glm4ForCausalLM", cfg, torch.bfloat16), ["attention+mlp"] * 2,
                notes=["post-norms after attention and MLP besides the pre-norms",
                       "fused gate_up_proj, partial interleaved rotary"])


def minimax() -> Spec:
    cfg = transformers.MiniMaxConfig(**_tiny(
        num_hidden_layers=2, layer_types=["linear_attention", "full_attention"],
        num_local_experts=4, num_experts_per_tok=2, block_size=4))
    return Spec("minimax", _build("MiniMaxForCausalLM", cfg, torch.bfloat16),
                ["attention+moe"] * 2, seq=8, dynamic_seq=False,
                notes=["lightning (linear) attention layer then a full-attention layer",
                       "residual scaling factors (alpha/beta)",
                       "static sequence: the lightning attention loops over blocks"])


def phi() -> Spec:
    cfg = transformers.PhiConfig(**_tiny(num_hidden_layers=2))
    return Spec("phi", _build("PhiForCausalLM", cfg, torch.bfloat16), ["attention+mlp"] * 2,
                notes=["parallel attention and MLP on one LayerNorm, fc1/fc2 MLP",
                       "partial rotary (0.5), final_layernorm, lm_head with bias"])


def bloom() -> Spec:
    cfg = transformers.BloomConfig(vocab_size=128, hidden_size=64, n_layer=2, n_head=4,
                                   use_cache=False)
    return Spec("bloom", _build("BloomForCausalLM", cfg, torch.bfloat16, attn="eager"),
                ["attention+mlp"] * 2,
                notes=["ALiBi position bias instead of RoPE", "embedding LayerNorm",
                       "layers under transformer.h", "eager attention"])


def mpt() -> Spec:
    cfg = transformers.MptConfig(d_model=64, n_heads=4, n_layers=2, expansion_ratio=2,
                                 max_seq_len=64, vocab_size=128, use_cache=False)
    return Spec("mpt", _build("MptForCausalLM", cfg, torch.bfloat16, attn="eager"),
                ["attention+mlp"] * 2,
                notes=["ALiBi, fused Wqkv, LayerNorm without bias",
                       "layers under transformer.blocks", "eager attention"])


def gptj() -> Spec:
    cfg = transformers.GPTJConfig(vocab_size=128, n_positions=64, n_embd=64, n_layer=2,
                                  n_head=4, rotary_dim=8, use_cache=False)
    return Spec("gptj", _build("GPTJForCausalLM", cfg, torch.bfloat16, attn="eager"),
                ["attention+mlp"] * 2,
                notes=["parallel attention and fc_in/fc_out MLP on one ln_1",
                       "interleaved partial rotary (rotary_dim 8)", "eager attention"])


def gpt_bigcode() -> Spec:
    cfg = transformers.GPTBigCodeConfig(vocab_size=128, n_positions=64, n_embd=64, n_layer=2,
                                        n_head=4, multi_query=True, use_cache=False)
    return Spec("gpt_bigcode", _build("GPTBigCodeForCausalLM", cfg, torch.bfloat16),
                ["attention+mlp"] * 2,
                notes=["multi-query attention from one c_attn, learned positions",
                       "layers under transformer.h"])


def recurrent_gemma() -> Spec:
    cfg = transformers.RecurrentGemmaConfig(
        num_hidden_layers=3, vocab_size=128, hidden_size=64, intermediate_size=128,
        num_attention_heads=4, num_key_value_heads=1, lru_width=64, attention_window_size=8,
        conv1d_width=4, use_cache=False, pad_token_id=0)
    return Spec("recurrent_gemma", _build("RecurrentGemmaForCausalLM", cfg, torch.bfloat16),
                ["mlp", "mlp", "attention+mlp"], seq=5, dynamic_seq=False,
                notes=["two RG-LRU recurrent blocks (no group of their own) then local "
                       "attention", "static sequence: the recurrence is a loop over time"])


def jetmoe() -> Spec:
    cfg = transformers.JetMoeConfig(vocab_size=128, hidden_size=64, num_hidden_layers=2,
                                    num_key_value_heads=2, kv_channels=16,
                                    intermediate_size=64, max_position_embeddings=64,
                                    num_local_experts=4, num_experts_per_tok=2, use_cache=False)
    return Spec("jetmoe", _build("JetMoeForCausalLM", cfg, torch.bfloat16, attn="eager"),
                ["attention+moe"] * 2,
                notes=["mixture of attention heads (query experts and a router inside the "
                       "attention) and MoE MLP"])


def nemotron() -> Spec:
    cfg = transformers.NemotronConfig(**_tiny(num_hidden_layers=2))
    return Spec("nemotron", _build("NemotronForCausalLM", cfg, torch.bfloat16),
                ["attention+mlp"] * 2,
                notes=["LayerNorm1P ((1 + weight), with bias)", "squared-ReLU up/down MLP",
                       "partial rotary"])


def persimmon() -> Spec:
    cfg = transformers.PersimmonConfig(vocab_size=128, hidden_size=64, intermediate_size=128,
                                       num_hidden_layers=2, num_attention_heads=4,
                                       max_position_embeddings=64, use_cache=False,
                                       qk_layernorm=True, pad_token_id=0)
    return Spec("persimmon", _build("PersimmonForCausalLM", cfg, torch.bfloat16, attn="eager"),
                ["attention+mlp"] * 2,
                notes=["fused query_key_value, q/k LayerNorms, squared-ReLU MLP"])


def lfm2_moe() -> Spec:
    types = ["conv", "full_attention", "conv"]
    cfg = transformers.Lfm2MoeConfig(vocab_size=128, hidden_size=64, intermediate_size=128,
                                     moe_intermediate_size=32, num_hidden_layers=3,
                                     num_attention_heads=4, num_key_value_heads=2,
                                     num_dense_layers=1, num_experts=4, num_experts_per_tok=2,
                                     layer_types=types, max_position_embeddings=64,
                                     use_cache=False)
    return Spec("lfm2_moe", _build("Lfm2MoeForCausalLM", cfg, torch.bfloat16),
                ["mlp", "attention+moe", "moe"],
                notes=["short-convolution and attention layers, dense first layer, "
                       "sigmoid router with expert bias"])


def afmoe() -> Spec:
    cfg = transformers.AfmoeConfig(**_tiny(
        num_hidden_layers=3, num_dense_layers=1, moe_intermediate_size=32, num_experts=4,
        num_experts_per_tok=2, num_shared_experts=1, global_attn_every_n_layers=2,
        sliding_window=4))
    return Spec("afmoe", _build("AfmoeForCausalLM", cfg, torch.bfloat16),
                ["attention+mlp", "attention+moe", "attention+moe"],
                notes=["gated attention output, sliding + global layers", "dense first layer, "
                       "shared expert, pre- and post-norms around both blocks"])


def glm4_moe_lite() -> Spec:
    cfg = transformers.Glm4MoeLiteConfig(**_tiny(
        num_hidden_layers=3, num_key_value_heads=4, moe_intermediate_size=32,
        n_shared_experts=1, n_routed_experts=4, num_experts_per_tok=2, kv_lora_rank=16,
        q_lora_rank=32, qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16, n_group=1,
        topk_group=1, mlp_layer_types=["dense", "sparse", "sparse"]))
    return Spec("glm4_moe_lite", _build("Glm4MoeLiteForCausalLM", cfg, torch.bfloat16),
                ["mla+mlp", "mla+moe", "mla+moe"],
                notes=["MLA with query LoRA and GLM-style MoE, dense first layer"])


def gemma3n() -> Spec:
    types = ["sliding_attention", "full_attention", "sliding_attention", "full_attention"]
    cfg = transformers.Gemma3nTextConfig(**_tiny(
        num_hidden_layers=4, layer_types=types, sliding_window=4, num_kv_shared_layers=2,
        vocab_size_per_layer_input=128, hidden_size_per_layer_input=8, laurel_rank=8,
        altup_num_inputs=2, activation_sparsity_pattern=[0.0] * 4,
        intermediate_size=[128] * 4, pad_token_id=0))
    return Spec("gemma3n", _build("Gemma3nForCausalLM", cfg, torch.bfloat16, attn="eager"),
                ["attention+mlp"] * 4,
                notes=["AltUp streams (predict/correct around each layer), LAuReL residual, "
                       "per-layer input embeddings", "last 2 layers reuse earlier layers' "
                       "keys and values", "no activation sparsity (its threshold tensor cannot be "
                       "made on meta)"])

def qwen3_5_moe() -> Spec:
    cfg = transformers.Qwen3_5MoeTextConfig(**_tiny(
        num_hidden_layers=2, layer_types=["linear_attention", "full_attention"],
        linear_num_value_heads=4, linear_num_key_heads=2, linear_key_head_dim=16,
        linear_value_head_dim=16, linear_conv_kernel_dim=4, num_experts=4, num_experts_per_tok=2,
        moe_intermediate_size=32, shared_expert_intermediate_size=32, pad_token_id=0))
    return Spec("qwen3_5_moe", _build("Qwen3_5MoeForCausalLM", cfg, torch.bfloat16),
                ["gdn+moe", "attention+moe"],
                notes=["gated delta net and gated full attention, MoE with shared expert "
                       "in every layer"])


def olmo3() -> Spec:
    types = ["sliding_attention", "full_attention"]
    cfg = transformers.Olmo3Config(**_tiny(num_hidden_layers=2, sliding_window=4,
                                           layer_types=types, pad_token_id=0))
    return Spec("olmo3", _build("Olmo3ForCausalLM", cfg, torch.bfloat16), ["attention+mlp"] * 2,
                notes=["post-norms, q/k norms", "sliding + full attention"])


def seed_oss() -> Spec:
    cfg = transformers.SeedOssConfig(**_tiny(num_hidden_layers=2, pad_token_id=0))
    return Spec("seed_oss", _build("SeedOssForCausalLM", cfg, torch.bfloat16),
                ["attention+mlp"] * 2, notes=["q/k/v biases, o_proj without bias"])


def apertus() -> Spec:
    cfg = transformers.ApertusConfig(**_tiny(num_hidden_layers=2, pad_token_id=0))
    return Spec("apertus", _build("ApertusForCausalLM", cfg, torch.bfloat16),
                ["attention+mlp"] * 2,
                notes=["xIELU activation with learned parameters, up/down MLP without gate",
                       "q/k norms, attention_layernorm / feedforward_layernorm"])


def hunyuan_dense() -> Spec:
    cfg = transformers.HunYuanDenseV1Config(**_tiny(num_hidden_layers=2, pad_token_id=0))
    return Spec("hunyuan_dense", _build("HunYuanDenseV1ForCausalLM", cfg, torch.bfloat16),
                ["attention+mlp"] * 2, notes=["q/k norms after RoPE"])


def bitnet() -> Spec:
    cfg = transformers.BitNetConfig(**_tiny(num_hidden_layers=2, pad_token_id=0))
    return Spec("bitnet", _build("BitNetForCausalLM", cfg, torch.bfloat16),
                ["attention+mlp"] * 2,
                notes=["sub-norms inside attention (attn_sub_norm) and MLP (ffn_sub_norm)",
                       "squared-ReLU gated MLP"])


def cohere() -> Spec:
    cfg = transformers.CohereConfig(**_tiny(num_hidden_layers=2, use_qk_norm=True,
                                            pad_token_id=0))
    return Spec("cohere", _build("CohereForCausalLM", cfg, torch.bfloat16),
                ["attention+mlp"] * 2,
                notes=["parallel attention and MLP on one LayerNorm", "per-head q/k LayerNorms",
                       "interleaved rotary", "logit scale"])


def mamba() -> Spec:
    cfg = transformers.MambaConfig(vocab_size=128, hidden_size=64, state_size=8,
                                   num_hidden_layers=2, use_cache=False, use_mambapy=False)
    return Spec("mamba", _build("MambaForCausalLM", cfg, torch.bfloat16, attn="eager"),
                ["mamba"] * 2, seq=5, dynamic_seq=False,
                notes=["attention-free Mamba1 without Falcon-Mamba's B/C/dt norms",
                       "static sequence: the scan is a Python loop over time steps"])


def minimax_m2() -> Spec:
    cfg = transformers.MiniMaxM2Config(**_tiny(num_hidden_layers=2, num_local_experts=4,
                                               num_experts_per_tok=2, pad_token_id=0))
    return Spec("minimax_m2", _build("MiniMaxM2ForCausalLM", cfg, torch.bfloat16),
                ["attention+moe"] * 2,
                notes=["sigmoid router with score-correction bias", "q/k norms over all heads",
                       "partial rotary"])


def falcon_7b() -> Spec:
    cfg = transformers.FalconConfig(vocab_size=128, hidden_size=64, num_hidden_layers=2,
                                    num_attention_heads=4, multi_query=True,
                                    new_decoder_architecture=False, parallel_attn=True,
                                    bias=False, alibi=False, max_position_embeddings=64,
                                    use_cache=False)
    return Spec("falcon_7b", _build("FalconForCausalLM", cfg, torch.bfloat16),
                ["attention+mlp"] * 2,
                notes=["one input_layernorm feeds parallel attention and MLP",
                       "multi-query attention"])


def dots1() -> Spec:
    cfg = transformers.Dots1Config(**_tiny(
        num_hidden_layers=3, moe_intermediate_size=32, n_shared_experts=1, n_routed_experts=4,
        num_experts_per_tok=2, n_group=1, topk_group=1, first_k_dense_replace=1,
        pad_token_id=0))
    return Spec("dots1", _build("Dots1ForCausalLM", cfg, torch.bfloat16),
                ["attention+mlp", "attention+moe", "attention+moe"],
                notes=["dense first layer, shared expert, q/k norms"])


MORE_BUILDERS: dict[str, Callable[[], Spec]] = {
    "gpt_neox": gpt_neox, "falcon": falcon, "gpt2": gpt2, "starcoder2": starcoder2,
    "olmo2": olmo2, "olmoe": olmoe, "granitemoe": granitemoe,
    "deepseek_v2_lite": deepseek_v2_lite, "qwen3_moe": qwen3_moe, "ernie4_5_moe": ernie4_5_moe,
    "hunyuan_moe": hunyuan_moe, "smollm3": smollm3, "exaone4": exaone4, "lfm2": lfm2,
    "mamba2": mamba2, "zamba": zamba, "gemma": gemma, "glm4": glm4, "minimax": minimax,
    "phi": phi, "bloom": bloom, "mpt": mpt, "gptj": gptj, "gpt_bigcode": gpt_bigcode,
    "recurrent_gemma": recurrent_gemma, "jetmoe": jetmoe, "nemotron": nemotron,
    "persimmon": persimmon, "lfm2_moe": lfm2_moe, "afmoe": afmoe,
    "glm4_moe_lite": glm4_moe_lite, "gemma3n": gemma3n, "qwen3_5_moe": qwen3_5_moe,
    "olmo3": olmo3, "seed_oss": seed_oss, "apertus": apertus, "hunyuan_dense": hunyuan_dense,
    "bitnet": bitnet, "cohere": cohere, "mamba": mamba, "minimax_m2": minimax_m2,
    "falcon_7b": falcon_7b, "dots1": dots1,
}
