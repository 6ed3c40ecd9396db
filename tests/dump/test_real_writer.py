"""Dumps written by AutoDeploy's own graph writer (../shared/dumps/real_writer): every file
converts through the CLI, every construct it prints is read without loss, and membership matches
the truth torch.export's ``nn_module_stack`` recorded."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tb_ad_layer.dump.reader import parse_dump
from tb_ad_layer.layers.layered import layer_graph
from tb_ad_layer.store.reader import RunStore
from tb_ad_layer.store.writer import store_path
from tests.conftest import REAL_WRITER

REAL = REAL_WRITER
# Without ../shared (a clone on its own) there is nothing to list: the tests skip (conftest).
FOLDERS = sorted(p.name for p in REAL.iterdir() if p.is_dir()) if REAL.is_dir() else []
TRUTH = json.loads((REAL / "nn_module_stack_truth.json").read_text()) if REAL.is_dir() else {}


def _file(folder: str) -> Path:
    return next((REAL / folder).glob("*.txt"))


def _layered(folder: str, module: str | None = None):
    return layer_graph(parse_dump(_file(folder)).select(module))


def test_the_real_writer_folders_are_there() -> None:
    assert REAL.is_dir() and len(FOLDERS) >= 11
    assert {"export_llama3l", "split_root_only", "cond"} <= set(FOLDERS)


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_file_converts_through_the_cli(tmp_path: Path, folder: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "tb_ad_layer.cli", "convert", str(REAL / folder),
                           "--logdir", str(tmp_path), "--run", folder, "-q"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    store = RunStore(store_path(tmp_path, folder))
    assert len(store.stages()) == 1
    nodes = len(parse_dump(_file(folder)).select().nodes)
    stored = sum(len(store.nodes(0, layer.layer)) for layer in store.layers(0))
    assert stored + len(store.nodes(0, -1)) == nodes


@pytest.mark.parametrize("folder", sorted(TRUTH))
def test_membership_matches_nn_module_stack(folder: str) -> None:
    lg = _layered(folder)
    truth = TRUTH[folder]
    got = {n.name: lg.layer[n.index] for n in lg.graph.nodes if n.name in truth}
    assert got == truth
    assert {i: info.kind for i, info in lg.layers.items()} == {i: "attention+mlp" for i in range(3)}


def test_piecewise_split_is_joined_across_its_sections() -> None:
    """The split graph computes what the export computes, op for op, layer for layer."""
    split = _layered("split_root_only")
    export = _layered("export_llama3l")
    truth = TRUTH["export_llama3l"]

    def ops(lg, layers):
        return [(n.target, layers(n)) for n in lg.graph.nodes
                if n.kind == "call" and n.target != "_guards_fn"]

    assert ops(split, lambda n: split.layer[n.index]) == ops(export, lambda n: truth[n.name])
    names = [n.name for n in split.graph.nodes]
    assert "submod_2.add_tensor" in names and len(set(names)) == len(names)
    assert split.graph.node("submod_2.add_tensor").section == "submod_2"
    # Weights that reached a section as placeholders are weights again, not nodes.
    assert "model_layers_1_input_layernorm_weight" in split.graph.weights
    assert "model_layers_1_input_layernorm_weight" not in split.graph.by_name


def test_dual_mode_file_shows_the_monolithic_graph_and_joins_the_split_one() -> None:
    dump = parse_dump(_file("dualmode"))
    assert len(dump.modules) == 9
    mono = layer_graph(dump.select())
    assert mono.graph.module == "monolithic.model"
    split = layer_graph(dump.select("piecewise.split_gm"))
    assert [(n.target, mono.layer[n.index]) for n in mono.graph.nodes if n.kind == "call"] == \
        [(n.target, split.layer[n.index]) for n in split.graph.nodes if n.kind == "call"]


def test_symbolic_shapes_are_kept_verbatim() -> None:
    g = parse_dump(_file("sym_shapes")).select()
    assert g.node("cat").shape == "2xs27 + s94x4"
    assert g.node("slice_1").shape == "2x((s27 + 1)//2)x4"
    assert g.node("slice_2").shape == "2xs27 - 1x4"
    assert g.node("topk").shape == "(2xs27 + s94x2, 2xs27 + s94x2)"
    assert g.node("topk").dtype == "(torch.float32, torch.int64)"
    assert g.node("sum_3").inputs == ("slice_1",)
    g = parse_dump(_file("export_symexpr")).select()
    assert any(" - 1x64" in n.shape for n in g.nodes)


def test_tuples_of_nodes_are_edges_and_reprs_are_constants() -> None:
    g = parse_dump(_file("fx_misc")).select()
    assert g.node("stack").inputs == ("mul_tensor", "b")
    assert g.node("stack").target.startswith("<built-in method stack of type object at 0x")
    assert g.node("print_1").inputs == ("a",) and g.node("print_1").weights == ()
    assert set(g.weights) == {"model_layers_0_mlp_w"}
    g = parse_dump(_file("symbolic_trace")).select()
    assert g.node("getitem_1").inputs == ("getitem",)
    assert g.node("getitem_1").weights == ("model_rotary_cos_sin",)
    assert "dtype" not in g.weights and "Ellipsis" not in g.weights


def test_cond_branches_are_subgraphs_not_weights() -> None:
    dump = parse_dump(_file("cond"))
    g = dump.select()
    assert g.module == "(root)"
    cond = g.node("cond")
    assert cond.subgraphs == ("true_graph_0", "false_graph_0")
    assert "true_graph_0" not in g.weights and cond.inputs == ("gt", "x")
    assert dump.select("true_graph_0").node("mul").inputs == ("x", "p_w")


def test_dict_output() -> None:
    g = parse_dump(_file("dict_out_symtrace")).select()
    assert g.outputs == ("mul",)


def test_call_module_targets_carry_module_paths() -> None:
    lg = _layered("symbolic_trace")
    q = lg.graph.node("model_layers_1_self_attn_q_proj")
    assert q.target == "model.layers.1.self_attn.q_proj" and q.op_name == "q_proj"
    assert lg.layer[q.index] == 1 and lg.group[q.index] == "attention"
    assert lg.sub_group[q.index] == "q_branch"
    assert lg.layer[lg.graph.node("model_embed_tokens").index] is None
    assert lg.layer[lg.graph.node("float_5").index] == 1      # layer 1's input norm
    assert lg.layer[lg.graph.node("add_4").index] == 0        # layer 0's residual add
    assert lg.group[lg.graph.node("add_4").index] == "mlp"
    assert lg.layer[lg.graph.node("float_13").index] is None  # the final norm
