# ruff: noqa: E501  (the graph below is printed as torch.compile logs it: one line per node)
"""Reading one logged FX graph: inputs that are parameters become dump-style weights, every
statement the code printer writes becomes one node."""
from __future__ import annotations

from tb_ad_layer.compile_log.fx_code import aot_input_indices, parse_graph, weight_name
from tb_ad_layer.compile_log.records import _records
from tb_ad_layer.dump.graph import CALL, OUTPUT, PLACEHOLDER

DYNAMO = '''class GraphModule(torch.nn.Module):
    def forward(self, L_x_: "f32[2, s0, 64][64*s0, 64, 1]cpu", L_self_modules_model_modules_layers_modules_0_modules_mlp_modules_up_proj_parameters_weight_: "f32[128, 64][64, 1]cpu", L_self_modules_model_modules_layers_modules_0_modules_mixer_parameters_A_log_: "f32[8][1]cpu"):
        l_x_ = L_x_
        l_self_modules_model_modules_layers_modules_0_modules_mlp_modules_up_proj_parameters_weight_ = L_self_modules_model_modules_layers_modules_0_modules_mlp_modules_up_proj_parameters_weight_
        l_self_modules_model_modules_layers_modules_0_modules_mixer_parameters_A_log_ = L_self_modules_model_modules_layers_modules_0_modules_mixer_parameters_A_log_

         # File: model.py:1 in forward, code: y = self.up(x)
        linear: "f32[2, s0, 128][128*s0, 128, 1]cpu" = torch._C._nn.linear(l_x_, l_self_modules_model_modules_layers_modules_0_modules_mlp_modules_up_proj_parameters_weight_, None);  l_x_ = None
        size = linear.size(1)
        getitem: "f32[2, 1, 128][128*s0, 128, 1]cpu" = linear[(slice(None, None, None), slice(None, 1, None))]
        neg: "f32[8][1]cpu" = -l_self_modules_model_modules_layers_modules_0_modules_mixer_parameters_A_log_
        getitem[(slice(None, None, None), 0)] = neg;  setitem = getitem
        linear /= 2;  div: "f32[2, s0, 128][128*s0, 128, 1]cpu" = linear
        sym: "Sym(s0)" = size + 1
        return (div, getitem, neg)
'''


def test_weight_names_follow_the_dump_convention() -> None:
    assert weight_name("l_self_modules_model_modules_layers_modules_0_modules_self_attn_modules_"
                       "q_proj_parameters_weight_") == "model_layers_0_self_attn_q_proj_weight"
    assert weight_name("l_m_modules_layers_modules_2_modules_mlp_parameters_bias_") == \
        "layers_2_mlp_bias"
    assert weight_name("g_orig_self_modules_gate_proj_parameters_weight_") == "gate_proj_weight"
    assert weight_name("l_self_buffers_inv_freq_") == "inv_freq"
    assert weight_name("l_args_0_") is None
    assert weight_name("l_hidden_states_") is None


def test_dynamo_graph_nodes_and_weights() -> None:
    g = parse_graph(DYNAMO, module="[0/1] dynamo_output_graph", source="log", prefix="[0/1] ")
    by = g.by_name
    assert [n.name for n in g.nodes] == ["[0/1] l_x_", "[0/1] linear", "[0/1] size",
                                         "[0/1] getitem", "[0/1] neg", "[0/1] setitem",
                                         "[0/1] div", "[0/1] sym", "[0/1] output"]
    assert by["[0/1] l_x_"].kind == PLACEHOLDER and by["[0/1] l_x_"].shape == "2xs0x64"
    lin = by["[0/1] linear"]
    assert lin.kind == CALL and lin.target == "<built-in function linear>"
    assert lin.weights == ("model_layers_0_mlp_up_proj_weight",)
    assert lin.inputs == ("[0/1] l_x_",) and lin.dtype == "torch.float32"
    assert by["[0/1] size"].target == "size"
    # A subscript of a tensor is a slice; getitem reads a result of a multi-output op.
    assert by["[0/1] getitem"].target == "<built-in function slice>"
    # FX lower-cases a dump's weight names: A_log prints a_log, which the Mamba rules read.
    assert by["[0/1] neg"].weights == ("model_layers_0_mixer_a_log",)
    # In-place ops: the node is the one named after the ';'.
    setitem = by["[0/1] setitem"]
    assert setitem.target == "<built-in function setitem>"
    assert setitem.inputs == ("[0/1] getitem", "[0/1] neg") and setitem.shape == "2x1x128"
    div = by["[0/1] div"]
    assert div.target == "<built-in function itruediv>" and div.inputs == ("[0/1] linear",)
    assert by["[0/1] sym"].dtype == "SymInt" and by["[0/1] sym"].shape == "scalar"
    out = by["[0/1] output"]
    assert out.kind == OUTPUT and set(out.inputs) == {"[0/1] div", "[0/1] getitem", "[0/1] neg"}


def test_aot_graph_inputs_take_the_dynamo_names() -> None:
    aot = '''class <lambda>(torch.nn.Module):
    def forward(
        self,
        primals_1: "f32[128, 64][64, 1]cpu",  # PlainAOTInput(idx=1)
        primals_2: "f32[2, 8, 64][512, 64, 1]cpu",  # PlainAOTInput(idx=0)
    ):
        permute: "f32[64, 128][1, 64]cpu" = torch.ops.aten.permute.default(primals_1, [1, 0])
        mm: "f32[2, 8, 128][1024, 128, 1]cpu" = torch.ops.aten.mm.default(primals_2, permute)
        return (mm,)
'''
    assert aot_input_indices(aot) == {"primals_1": 1, "primals_2": 0}
    names = ["l_x_", "l_self_modules_layers_modules_3_modules_up_parameters_weight_"]
    g = parse_graph(aot, module="aot", source="log", input_names=names)
    assert [n.name for n in g.nodes] == ["primals_2", "permute", "mm", "output"]
    assert g.by_name["permute"].weights == ("layers_3_up_weight",)
    assert g.by_name["mm"].target == "aten.mm.default"


def test_log_records_and_attempts() -> None:
    text = (
        'V1127 23:10:44.411000 1 torch/_dynamo/output_graph.py:1] {"dynamo_output_graph": {}, '
        '"frame_id": 1, "frame_compile_id": 2, "attempt": 1, "has_payload": "x"}\n'
        "\tclass GraphModule(torch.nn.Module):\n"
        "\t    def forward(self):\n"
        "\t        return ()\n"
        '[rank0]:V1127 23:10:45.000000 1 x.py:2] {"artifact": {"name": "recompile_reasons", '
        '"encoding": "json"}, "frame_id": 1, "frame_compile_id": 3, "attempt": 0}\n')
    recs = list(_records("log", iter(text.splitlines(keepends=True))))  # type: ignore[arg-type]
    assert [r.event for r in recs] == ["dynamo_output_graph", "artifact"]
    assert recs[0].compile_id == "1/2" and recs[0].attempt == 1
    assert recs[0].payload.startswith("class GraphModule") and recs[0].payload_line == 2
    assert recs[1].artifact == "recompile_reasons" and recs[1].payload == ""
