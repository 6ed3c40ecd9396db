"""Hand-checked layers: exact membership, groups, external inputs and edges."""
from __future__ import annotations

from pathlib import Path

from tb_ad_layer.contract.document import Weight
from tb_ad_layer.dump.reader import parse_dump
from tb_ad_layer.layers.document import layer_record
from tb_ad_layer.layers.layered import layer_graph
from tests.conftest import DUMPS, write_dump

# Two layers with MoE routing arithmetic whose name suffixes point at the wrong layer (sub_1,
# eq_1 are layer 0's; sub, eq are layer 1's), a residual boundary where layer 0's residual add
# is fused with layer 1's input norm (fused_1: layer 0's, "layer 0 residual output"), RoPE prep
# shared by both layers, a KV cache and batch metadata, and the last layer's residual add fused
# with the final norm (final: layer 1's).
TRAP = """
%input_ids : 2x4 : torch.int64
%position_ids : 2x4 : torch.int64
%cache_loc : 8 : torch.int32
%kv_cache_0 : 8x64 : torch.bfloat16
%kv_cache_1 : 8x64 : torch.bfloat16
%embedding = aten.embedding.default(%model_embed_tokens_weight : 128x16 : torch.bfloat16, %input_ids : 2x4 : torch.int64) : 2x4x16 : torch.bfloat16
%cos = aten.index.Tensor(%_ad_rotary_cos_sin_0 : 64x16 : torch.float32, [position_ids]) : 2x4x16 : torch.float32
%norm_0 = auto_deploy.flashinfer_rms_norm.default(%embedding : 2x4x16 : torch.bfloat16, %model_layers_0_input_layernorm_weight : 16 : torch.bfloat16, 1e-06) : 2x4x16 : torch.bfloat16
%q_0 = auto_deploy.torch_linear_simple.default(%norm_0 : 2x4x16 : torch.bfloat16, %model_layers_0_self_attn_q_proj_weight : 16x16 : torch.bfloat16, None) : 2x4x16 : torch.bfloat16
%rope_0 = auto_deploy.triton_rope_on_interleaved_qk_inputs.default(%q_0 : 2x4x16 : torch.bfloat16, %cos : 2x4x16 : torch.float32) : 2x4x16 : torch.bfloat16
%attn_0 = auto_deploy.flashinfer_attention_with_cache.default(%rope_0 : 2x4x16 : torch.bfloat16, %kv_cache_0 : 8x64 : torch.bfloat16, %cache_loc : 8 : torch.int32) : 2x4x16 : torch.bfloat16
%o_0 = auto_deploy.torch_linear_simple.default(%attn_0 : 2x4x16 : torch.bfloat16, %model_layers_0_self_attn_o_proj_weight : 16x16 : torch.bfloat16, None) : 2x4x16 : torch.bfloat16
%fused_0 = auto_deploy.flashinfer_fused_add_rms_norm.default(%o_0 : 2x4x16 : torch.bfloat16, %embedding : 2x4x16 : torch.bfloat16, %model_layers_0_post_attention_layernorm_weight : 16 : torch.bfloat16, 1e-06) : (2x4x16, 2x4x16) : (torch.bfloat16, torch.bfloat16)
%getitem = <built-in function getitem>(%fused_0 : ? : tuple, 0) : 2x4x16 : torch.bfloat16
%getitem_1 = <built-in function getitem>(%fused_0 : ? : tuple, 1) : 2x4x16 : torch.bfloat16
%router_0 = trtllm.dsv3_router_gemm_op.default(%getitem : 2x4x16 : torch.bfloat16, %model_layers_0_mlp_gate_weight : 4x16 : torch.bfloat16) : 8x4 : torch.float32
%topk_0 = trtllm.noaux_tc_op.default(%router_0 : 8x4 : torch.float32, %model_layers_0_mlp_gate_e_score_correction_bias : 4 : torch.bfloat16, 2) : (8x2, 8x2) : (torch.bfloat16, torch.int32)
%getitem_2 = <built-in function getitem>(%topk_0 : ? : tuple, 1) : 8x2 : torch.int32
%sub_1 = aten.sub.Tensor(%getitem_2 : 8x2 : torch.int32, 2) : 8x2 : torch.int32
%eq_1 = aten.eq.Scalar(%sub_1 : 8x2 : torch.int32, 0) : 8x2 : torch.bool
%moe_0 = auto_deploy.trtllm_moe_fused.default(%getitem : 2x4x16 : torch.bfloat16, %eq_1 : 8x2 : torch.bool, %model_layers_0_mlp_experts_w3_w1 : 4x32x16 : torch.bfloat16) : 2x4x16 : torch.bfloat16
%fused_1 = auto_deploy.flashinfer_fused_add_rms_norm.default(%moe_0 : 2x4x16 : torch.bfloat16, %getitem_1 : 2x4x16 : torch.bfloat16, %model_layers_1_input_layernorm_weight : 16 : torch.bfloat16, 1e-06) : (2x4x16, 2x4x16) : (torch.bfloat16, torch.bfloat16)
%getitem_3 = <built-in function getitem>(%fused_1 : ? : tuple, 0) : 2x4x16 : torch.bfloat16
%getitem_4 = <built-in function getitem>(%fused_1 : ? : tuple, 1) : 2x4x16 : torch.bfloat16
%q_1 = auto_deploy.torch_linear_simple.default(%getitem_3 : 2x4x16 : torch.bfloat16, %model_layers_1_self_attn_q_proj_weight : 16x16 : torch.bfloat16, None) : 2x4x16 : torch.bfloat16
%rope_1 = auto_deploy.triton_rope_on_interleaved_qk_inputs.default(%q_1 : 2x4x16 : torch.bfloat16, %cos : 2x4x16 : torch.float32) : 2x4x16 : torch.bfloat16
%attn_1 = auto_deploy.flashinfer_attention_with_cache.default(%rope_1 : 2x4x16 : torch.bfloat16, %kv_cache_1 : 8x64 : torch.bfloat16, %cache_loc : 8 : torch.int32) : 2x4x16 : torch.bfloat16
%o_1 = auto_deploy.torch_linear_simple.default(%attn_1 : 2x4x16 : torch.bfloat16, %model_layers_1_self_attn_o_proj_weight : 16x16 : torch.bfloat16, None) : 2x4x16 : torch.bfloat16
%fused_2 = auto_deploy.flashinfer_fused_add_rms_norm.default(%o_1 : 2x4x16 : torch.bfloat16, %getitem_4 : 2x4x16 : torch.bfloat16, %model_layers_1_post_attention_layernorm_weight : 16 : torch.bfloat16, 1e-06) : (2x4x16, 2x4x16) : (torch.bfloat16, torch.bfloat16)
%getitem_5 = <built-in function getitem>(%fused_2 : ? : tuple, 0) : 2x4x16 : torch.bfloat16
%getitem_6 = <built-in function getitem>(%fused_2 : ? : tuple, 1) : 2x4x16 : torch.bfloat16
%router_1 = trtllm.dsv3_router_gemm_op.default(%getitem_5 : 2x4x16 : torch.bfloat16, %model_layers_1_mlp_gate_weight : 4x16 : torch.bfloat16) : 8x4 : torch.float32
%topk_1 = trtllm.noaux_tc_op.default(%router_1 : 8x4 : torch.float32, %model_layers_1_mlp_gate_e_score_correction_bias : 4 : torch.bfloat16, 2) : (8x2, 8x2) : (torch.bfloat16, torch.int32)
%getitem_7 = <built-in function getitem>(%topk_1 : ? : tuple, 1) : 8x2 : torch.int32
%sub = aten.sub.Tensor(%getitem_7 : 8x2 : torch.int32, 2) : 8x2 : torch.int32
%eq = aten.eq.Scalar(%sub : 8x2 : torch.int32, 0) : 8x2 : torch.bool
%moe_1 = auto_deploy.trtllm_moe_fused.default(%getitem_5 : 2x4x16 : torch.bfloat16, %eq : 8x2 : torch.bool, %model_layers_1_mlp_experts_w3_w1 : 4x32x16 : torch.bfloat16) : 2x4x16 : torch.bfloat16
%final = auto_deploy.flashinfer_fused_add_rms_norm.default(%moe_1 : 2x4x16 : torch.bfloat16, %getitem_6 : 2x4x16 : torch.bfloat16, %model_norm_weight : 16 : torch.bfloat16, 1e-06) : (2x4x16, 2x4x16) : (torch.bfloat16, torch.bfloat16)
%getitem_8 = <built-in function getitem>(%final : ? : tuple, 0) : 2x4x16 : torch.bfloat16
%logits = aten.mm.default(%getitem_8 : 2x4x16 : torch.bfloat16, %lm_head_weight : 16x128 : torch.bfloat16) : 2x4x128 : torch.float32
output %logits
"""

LAYER0 = ["norm_0", "q_0", "rope_0", "attn_0", "o_0", "fused_0", "getitem", "getitem_1",
          "router_0", "topk_0", "getitem_2", "sub_1", "eq_1", "moe_0", "fused_1", "getitem_3",
          "getitem_4"]
LAYER1 = ["q_1", "rope_1", "attn_1", "o_1", "fused_2", "getitem_5", "getitem_6", "router_1",
          "topk_1", "getitem_7", "sub", "eq", "moe_1", "final", "getitem_8"]


def _trap(tmp_path: Path):
    return layer_graph(parse_dump(write_dump(tmp_path / "085_compile_compile_model.txt", TRAP)).select())


def test_membership_exact(tmp_path: Path) -> None:
    lg = _trap(tmp_path)
    got = {i: [lg.graph.nodes[j].name for j in info.members] for i, info in lg.layers.items()}
    assert got == {0: LAYER0, 1: LAYER1}
    outside = {n.name for n in lg.graph.nodes if lg.layer[n.index] is None}
    assert {"embedding", "cos", "logits", "kv_cache_0"} <= outside


def test_groups_exact(tmp_path: Path) -> None:
    lg = _trap(tmp_path)
    g = {n.name: (lg.group[n.index], lg.sub_group[n.index]) for n in lg.graph.nodes
         if lg.layer[n.index] in (0, 1)}
    assert g["fused_1"] == ("norm", None)
    assert g["q_1"] == ("attention", "q_branch")
    assert g["rope_1"] == ("attention", "rope")
    assert g["attn_1"] == ("attention", None)
    assert g["router_1"] == ("moe", "moe_router")
    assert g["topk_1"] == ("moe", "moe_router")
    # Routing arithmetic after the router stays with the router, whatever its suffix says.
    assert g["sub"] == ("moe", "moe_router") and g["eq"] == ("moe", "moe_router")
    assert g["moe_1"] == ("moe", "moe_experts")
    assert lg.layers[1].kind == "attention+moe" and lg.layers[1].attention == "attention"


def test_external_inputs_and_edges(tmp_path: Path) -> None:
    lg = _trap(tmp_path)
    ext = {e.id: e.label for e in lg.layers[1].external_inputs}
    assert ext == {"getitem_3": "Layer 0 residual output",
                   "getitem_4": "Layer 0 residual output",
                   "cos": "RoPE cache", "kv_cache_1": "KV cache", "cache_loc": "batch metadata"}
    ext0 = {e.id: e.label for e in lg.layers[0].external_inputs}
    assert ext0 == {"embedding": "token embedding", "cos": "RoPE cache",
                    "kv_cache_0": "KV cache", "cache_loc": "batch metadata"}
    doc = layer_record(lg, 1)
    edges = {(e.from_, e.to) for e in doc.edges}
    assert ("getitem_3", "q_1") in edges and ("getitem_4", "fused_2") in edges
    assert ("getitem_7", "sub") in edges and ("sub", "eq") in edges and ("eq", "moe_1") in edges
    ids = {n.id for n in doc.nodes} | {e.id for e in doc.external_inputs}
    assert all(a in ids and b in ids for a, b in edges)
    assert len(edges) == sum(len(n.inputs) for n in doc.nodes)
    q1 = next(n for n in doc.nodes if n.id == "q_1")
    assert q1.weights == [Weight(name="model_layers_1_self_attn_q_proj_weight", shape="16x16",
                                 dtype="torch.bfloat16", role="self_attn_q_proj_weight")]


def test_ad_dsv3_layer3_against_truth() -> None:
    import json
    path = DUMPS / "ad_dsv3" / "085_compile_compile_model.txt"
    truth = json.loads(path.with_suffix(".truth.json").read_text())["nodes"]
    lg = layer_graph(parse_dump(path).select())
    members = {lg.graph.nodes[j].name for j in lg.layers[3].members}
    assert members == {k for k, v in truth.items() if v["layer"] == 3}
    labels = {e.id: e.label for e in lg.layers[3].external_inputs}
    # layer 2's residual add fused with layer 3's input norm: both outputs are layer 2's
    assert labels["getitem_67"] == "Layer 2 residual output"
    assert labels["getitem_68"] == "Layer 2 residual output"
    assert labels["mla_cache_3"] == "KV cache"
    assert labels["cache_loc"] == "batch metadata"
