"""The older writer layouts still on disk, and stage counters past 999."""
from __future__ import annotations

from pathlib import Path

from tb_ad_layer.dump.reader import parse_dump
from tb_ad_layer.dump.stages import discover_stages, select_stages
from tb_ad_layer.layers.layered import layer_graph

# What the writer printed before banners and shapes: a header, then one graph, dtypes only.
# (A backslash ending a line here continues the same node line.)
OLDEST = """# Transform: export_to_gm
# Stage: export

%input_ids : torch.int64
%embedding = aten.embedding.default(%model_embed_tokens_weight, %input_ids) : torch.bfloat16
%norm_0 = auto_deploy.torch_rmsnorm.default(%embedding, %model_layers_0_input_layernorm_weight, \
1e-06) : torch.bfloat16
%q_0 = auto_deploy.torch_linear_simple.default(%norm_0, %model_layers_0_self_attn_q_proj_weight, \
None) : torch.bfloat16
%add_0 = aten.add.Tensor(%embedding, %q_0) : torch.bfloat16
%norm_1 = auto_deploy.torch_rmsnorm.default(%add_0, %model_layers_1_input_layernorm_weight, \
1e-06) : torch.bfloat16
%up_1 = auto_deploy.torch_linear_simple.default(%norm_1, %model_layers_1_mlp_up_proj_weight, \
None) : torch.bfloat16
%add_1 = aten.add.Tensor(%add_0, %up_1) : torch.bfloat16
%split = aten.split.Tensor(%add_1, 2) : tuple
%getitem = <built-in function getitem>(%split, 0) : torch.bfloat16
%to = aten.to.dtype(%add_1, torch.float32) : torch.float32
%final = auto_deploy.torch_rmsnorm.default(%to, %model_norm_weight, 1e-06) : torch.bfloat16
output %final, %getitem
"""

# The next one: shapes as today, still no banners and no '# GraphModules found'.
NO_BANNER = """# Transform: export_to_gm
# Stage: export

%x : 2xs27x4 : torch.float32
%cat = aten.cat.default([x, x], 1) : 2x2*s27x4 : torch.float32
%pad = aten.pad.default(%x : 2xs27x4 : torch.float32, [0, 0, 0, 3]) : 2xs27 + 3x4 : torch.float32
output %cat, %pad
"""


def test_oldest_layout_dtype_only(tmp_path: Path) -> None:
    p = tmp_path / "001_export_export_to_gm.txt"
    p.write_text(OLDEST)
    dump = parse_dump(p)
    assert dump.module_names() == ["(root)"] and dump.stage == "export"
    g = dump.select()
    assert (g.node("input_ids").shape, g.node("input_ids").dtype) == ("?", "torch.int64")
    emb = g.node("embedding")
    assert (emb.shape, emb.dtype) == ("?", "torch.bfloat16")
    assert emb.inputs == ("input_ids",) and emb.weights == ("model_embed_tokens_weight",)
    assert g.node("getitem").inputs == ("split",) and g.node("split").dtype == "tuple"
    lg = layer_graph(g)
    assert {n.name: lg.layer[n.index] for n in g.nodes if n.kind == "call"} == {
        "embedding": None, "norm_0": 0, "q_0": 0, "add_0": 0, "norm_1": 1, "up_1": 1,
        "add_1": 1, "split": 1, "getitem": 1, "to": None, "final": None}


def test_layout_without_banners(tmp_path: Path) -> None:
    p = tmp_path / "001_export_export_to_gm.txt"
    p.write_text(NO_BANNER)
    g = parse_dump(p).select()
    assert g.node("pad").shape == "2xs27 + 3x4"
    assert g.node("cat").inputs == ("x",) and g.outputs == ("cat", "pad")


def test_counters_past_999_are_ordered_by_value(tmp_path: Path) -> None:
    for name in ("998_a_b.txt", "999_a_c.txt", "1000_a_d.txt", "1001_a_e.txt"):
        (tmp_path / name).write_text(NO_BANNER)
    stages = discover_stages(tmp_path)
    assert [s.path.name for s in stages] == ["998_a_b.txt", "999_a_c.txt", "1000_a_d.txt",
                                             "1001_a_e.txt"]
    assert select_stages(stages, None)[0].path.name == "1001_a_e.txt"
    assert select_stages(stages, ["1000"])[0].order == 1000
