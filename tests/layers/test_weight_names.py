"""Weight names: the per-graph table gives what the per-name functions give."""
from __future__ import annotations

from tb_ad_layer.layers.weights import layer_of_weight, weight_layers, weight_role, weight_table

NAMES = [
    "model_layers_5_self_attn_q_a_proj_weight", "model.layers.12.mlp.experts.3.w1.weight",
    "transformer_h_0_attn_c_attn_weight", "blocks_7_norm_weight", "model_layers_5",
    "fused_gate_up_5_weight", "_fused_qkv_3_weight", "fused_7", "fused_gate_up_x5_weight",
    "model_layers_5x_weight", "model_embed_tokens_weight", "lm_head_weight", "model_norm_weight",
    "_ad_position_ids_buffer", "layer_3_w", "xlayers_3_w", "model_layers_٣_w",
    "model_layers_3_mlp_layers_4_w", "fused__5_w", "", "model.layers.5._.mlp_w", "h_2",
    "model_layers_7", "model_layers_7_", "model_h_1x_h_2_w",
]


def test_table_matches_the_per_name_functions() -> None:
    layers, roles = weight_table(NAMES)
    assert list(layers) == list(roles) == list(dict.fromkeys(NAMES))
    for name in NAMES:
        assert layers[name] == layer_of_weight(name), name
        assert roles[name] == weight_role(name), name
    assert weight_layers(NAMES) == layers
    assert layers["fused_gate_up_5_weight"] == 5
    assert roles["fused_gate_up_5_weight"] == "fused_gate_up_N_weight"
    assert layers["model_layers_5x_weight"] is None and layers["model_layers_٣_w"] == 3

