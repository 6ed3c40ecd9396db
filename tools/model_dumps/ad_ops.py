"""Stand-ins for the AutoDeploy custom ops that the later stages print, under AutoDeploy's names.

Every op is registered in the ``auto_deploy`` namespace with the schema AutoDeploy gives it, so
that ``str(target)`` prints as the real graph prints it (``auto_deploy.torch_rmsnorm.default``,
or the bare packet ``auto_deploy.flashinfer_rms_norm`` where a transform inserts the packet) and
FX names the nodes as it names AutoDeploy's (``torch_rmsnorm_default_3``). Only the fake
(meta) implementations matter here: the graphs are never run, their shapes are propagated.

Schemas, from TensorRT-LLM ``tensorrt_llm/_torch/auto_deploy/custom_ops/``:

- ``torch_linear_simple(input, weight, bias)`` (``export/library/linear.py`` @ 30d2c50c
  patches ``F.linear`` into it during export);
- ``torch_attention_sdpa(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)``
  (``export/library/sdpa.py`` @ 9496bfa2 patches ``F.scaled_dot_product_attention``);
- ``torch_attention(query, key, value, attn_mask, dropout_p, is_causal, scale, sinks,
  sliding_window, logit_cap, layout)``;
- ``torch_rmsnorm(input, weight, eps)`` / ``flashinfer_rms_norm(input, weight, eps)``
  (``transform/library/rms_norm.py``);
- ``flashinfer_fused_add_rms_norm_inplace(x, residual, weight, eps) -> None``, mutating ``x``
  and ``residual`` (``custom_ops/flashinfer_fused_add_rms_norm.py`` @ 7e8677bd);
- ``trtllm_moe_fused(x, selected_experts, routing_weights, w3_w1_stacked, w2_stacked, *,
  is_gated_mlp, act_fn)`` (``transform/library/fused_moe.py``);
- ``flashinfer_attention_prepare_metadata(...) -> (batch_indices, positions)`` and
  ``flashinfer_attention_mha_with_cache(q, k, v, <8 standard metadata>, <2 extra metadata>,
  kv_cache, scale, sliding_window, k_scale, v_scale, read_cache_only)``
  (``custom_ops/attention/flashinfer_attention.py`` @ 0b769194).
"""

from __future__ import annotations

import torch

from .per_expert_moe import register_torch_moe

_DONE = False


def register_ad_ops() -> None:
    """Define the ops once per process (``torch_moe`` comes from :mod:`per_expert_moe`)."""
    global _DONE
    if _DONE:
        return
    register_torch_moe()
    lib = torch.library.Library("auto_deploy", "FRAGMENT")  # noqa: F841 (kept alive below)
    _LIBS.append(lib)

    def define(schema: str, fake) -> None:
        name = schema.split("(", 1)[0]
        lib.define(schema)
        torch.library.register_fake(f"auto_deploy::{name}", fake, lib=lib)

    define("torch_linear_simple(Tensor input, Tensor weight, Tensor? bias) -> Tensor",
           lambda x, w, b: x.new_empty((*x.shape[:-1], w.shape[0])))
    define("torch_attention_sdpa(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, "
           "float dropout_p=0.0, bool is_causal=False, float? scale=None, "
           "bool enable_gqa=False) -> Tensor",
           lambda q, k, v, m=None, d=0.0, c=False, s=None, g=False:
           q.new_empty((*q.shape[:-1], v.shape[-1])))

    def _attn_fake(q, k, v, m=None, d=0.0, c=True, s=None, sinks=None, sw=None, cap=None,
                   layout="bnsd"):
        return q.new_empty((*q.shape[:-1], v.shape[-1]))

    define("torch_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, "
           "float dropout_p=0.0, bool is_causal=True, float? scale=None, Tensor? sinks=None, "
           "int? sliding_window=None, float? logit_cap=None, str layout=\"bnsd\") -> Tensor",
           _attn_fake)
    define("torch_rmsnorm(Tensor input, Tensor weight, float eps) -> Tensor",
           lambda x, w, e: torch.empty_like(x))
    define("flashinfer_rms_norm(Tensor input, Tensor weight, float eps) -> Tensor",
           lambda x, w, e: torch.empty_like(x))
    define("flashinfer_fused_add_rms_norm_inplace(Tensor(a!) x, Tensor(b!) residual, "
           "Tensor weight, float eps) -> ()", lambda x, r, w, e: None)
    define("trtllm_moe_fused(Tensor x, Tensor selected_experts, Tensor routing_weights, "
           "Tensor w3_w1_stacked_weight, Tensor w2_stacked_weight, *, bool is_gated_mlp=True, "
           "int act_fn=0) -> Tensor", lambda x, s, r, a, b, is_gated_mlp=True, act_fn=0:
           torch.empty_like(x))

    def _prep_fake(position_ids, batch_info_host, cu_seqlen, seq_len_with_cache):
        n = position_ids.shape[0] * position_ids.shape[1]
        return (position_ids.new_empty((n,), dtype=torch.int32),
                position_ids.new_empty((n,), dtype=torch.int32))

    define("flashinfer_attention_prepare_metadata(Tensor position_ids, Tensor batch_info_host, "
           "Tensor cu_seqlen, Tensor seq_len_with_cache) -> (Tensor, Tensor)", _prep_fake)

    def _mha_fake(q, k, v, *rest):
        return torch.empty_like(q.contiguous())

    define("flashinfer_attention_mha_with_cache(Tensor q, Tensor k, Tensor v, "
           "Tensor batch_info_host, Tensor cu_seqlen_host, Tensor cu_num_pages, "
           "Tensor cu_num_pages_host, Tensor cache_loc, Tensor last_page_len, "
           "Tensor last_page_len_host, Tensor seq_len_with_cache_host, "
           "Tensor flashinfer_batch_indices, Tensor flashinfer_positions, Tensor kv_cache, "
           "float? scale, int? sliding_window, float k_scale, float v_scale, "
           "bool read_cache_only=False) -> Tensor", _mha_fake)
    _DONE = True


_LIBS: list[torch.library.Library] = []
