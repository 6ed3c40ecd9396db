"""Weight names: the per-node facts give what the per-name functions give."""
from __future__ import annotations

from tb_ad_layer.layers.weights import (
    MODEL_LEVEL,
    UNNAMED,
    is_transform_made,
    layer_of_weight,
    node_weight_facts,
    weight_role,
)

NAMES = [
    "model_layers_5_self_attn_q_a_proj_weight", "model.layers.12.mlp.experts.3.w1.weight",
    "transformer_h_0_attn_c_attn_weight", "blocks_7_norm_weight", "model_layers_5",
    "fused_gate_up_5_weight", "_fused_qkv_3_weight", "fused_7", "fused_gate_up_x5_weight",
    "model_layers_5x_weight", "model_embed_tokens_weight", "lm_head_weight", "model_norm_weight",
    "_ad_position_ids_buffer", "layer_3_w", "xlayers_3_w", "model_layers_٣_w",
    "model_layers_3_mlp_layers_4_w", "fused__5_w", "", "model.layers.5._.mlp_w", "h_2",
    "model_layers_7", "model_layers_7_", "model_h_1x_h_2_w",
    # Registered by AutoDeploy's transforms under counters (fusion.py, fused_moe.py).
    "fused_weight_0", "fused_weight_12_weight_scale", "fused_moe_w3_w1_stacked_3",
    "fused_moe_w2_stacked_0", "bmm_moe_w1_expert_0_7", "dsv3_router_weight_3",
    "finegrained_fp8_moe_fc1_scale_stacked_2", "_ad_rotary_cos_sin_0",
]
# One layer's names one after another, and names that share some of their text.
RUN = [
    "model_layers_5_mlp_w", "model_layers_5_mlp_w_scale", "model_layers_5", "model_layers_5_",
    "model_layers_5__x", "model_layers_5._x", "model_layers_55_x", "model_layers_5_layers_6_w",
    "model.layers.5.mlp_w", "model_layers_5_٣", "x_h_2_h_3", "x_h_2_", "x_h_2", "layers_5\n",
    "layers_5\nx", "layers_5\n_w", "layers_2147483647_w", "layers_2147483647_x",
]


def test_node_facts_match_the_per_name_functions() -> None:
    # Nodes with no weight, one, and several (a name read by two nodes is read twice).
    nodes = [(), (NAMES[0],), tuple(NAMES), (NAMES[5], NAMES[0]), tuple(RUN),
             tuple(reversed(RUN))]
    layers, roles = node_weight_facts(nodes)
    assert len(layers) == len(roles) == len(nodes)
    for names, node_layers, node_roles in zip(nodes, layers, roles, strict=True):
        assert len(node_layers) == len(node_roles) == len(names)
        for name, layer, role in zip(names, node_layers, node_roles, strict=True):
            expected = layer_of_weight(name)
            if expected is not None:
                assert layer == expected, name
            else:
                assert layer == (UNNAMED if is_transform_made(name) else MODEL_LEVEL), name
            assert role == weight_role(name), name
            if layer != UNNAMED:  # a transform-made name without a counter is its own role
                assert (role != name) == (layer != MODEL_LEVEL), name
    by_name = dict(zip(NAMES, zip(layers[2], roles[2], strict=True), strict=True))
    # A counter in a fused weight's name is never a layer, in the old names and the real ones.
    assert by_name["fused_gate_up_5_weight"] == (UNNAMED, "fused_gate_up_N_weight")
    assert by_name["fused_weight_12_weight_scale"] == (UNNAMED, "fused_weight_N_weight_scale")
    assert by_name["fused_moe_w3_w1_stacked_3"] == (UNNAMED, "fused_moe_w3_w1_stacked_N")
    assert by_name["bmm_moe_w1_expert_0_7"] == (UNNAMED, "bmm_moe_w1_expert_N_N")
    assert by_name["dsv3_router_weight_3"] == (UNNAMED, "dsv3_router_weight_N")
    assert by_name["finegrained_fp8_moe_fc1_scale_stacked_2"][0] == UNNAMED
    assert by_name["_ad_rotary_cos_sin_0"][0] == MODEL_LEVEL  # a model-level buffer
    assert by_name["model_layers_5x_weight"][0] == MODEL_LEVEL
    assert by_name["model_layers_٣_w"][0] == 3
    # Every layer's copy of a role is one string.
    assert roles[1][0] is roles[3][1]


def test_documents_give_each_weight_the_role_of_its_name() -> None:
    # Layering hands its weight roles to the documents; a graph layered elsewhere (a seed
    # JSON) has none, and its documents derive them from the names: the same documents.
    from dataclasses import replace
    from pathlib import Path

    from tb_ad_layer.dump.reader import parse_dump
    from tb_ad_layer.layers.document import layer_record, outside_records
    from tb_ad_layer.layers.layered import layer_graph

    dump = Path(__file__).parents[1] / "fixtures" / "dumps" / "ad_dsv3" / "001_export_export_to_gm.txt"
    lg = layer_graph(parse_dump(dump).select())
    bare = replace(lg, weight_roles=[])
    weights = 0
    for index in lg.layers:
        doc = layer_record(lg, index)
        assert doc == layer_record(bare, index)
        for node in doc.nodes:
            for w in node.weights:
                assert w.role == weight_role(w.name), w.name
                weights += 1
    outside = outside_records(lg)
    assert outside == outside_records(bare)
    assert any(w.role == w.name for node in outside for w in node.weights)
    assert weights > 100
