"""Real torch.compile logs (TORCH_TRACE) of tiny Hugging Face models, made on CPU with torch
2.13 by ``tools/make_torch_trace.py`` (the commands are in its docstring):

- ``llama_inductor``: Llama, 3 layers, compiled whole by Inductor with provenance tracking, run
  twice (the second run, on a longer sequence, recompiles: ``[0/1]``);
- ``qwen_moe_break``: Qwen2-MoE, 3 layers (a dense one, then MoE), with a graph break before
  decoder layer 1 (a forward pre-hook calling ``torch._dynamo.graph_break()``), compiled with
  ``aot_eager``; transformers' own hooks break it further. Each decoder layer then runs as a
  frame compiled on its own (its ``self`` is the layer: parameter names hold no index), so no
  node has a layer, in the truth as here;
- ``llama_loop_break``: Llama, 3 layers, its decoder loop written out as a serving engine's
  model runner does, with a graph break between layers 1 and 2: the frame resumed after it
  names its parameters from its locals (``l_body_modules_layers_modules_2_...``) and starts with
  layer 2's input norm on the hidden states handed over (``l_h_``).

Each ``truth.json`` holds, per compile id and Dynamo graph node, the decoder layer that
``node.meta["nn_module_stack"]`` names (recorded by the compile backend itself).
"""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tb_ad_layer.cli import main
from tb_ad_layer.compile_log.load import SHARED_GRAPH, load_torch_trace
from tb_ad_layer.compile_log.records import is_torch_trace
from tb_ad_layer.compile_log.torch_trace import AOT, DYNAMO, POST_GRAD, read_torch_trace
from tb_ad_layer.trace.kernel_map import load_kernel_map, provenance_op, with_provenance

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "torch_trace"
INDUCTOR = FIXTURES / "llama_inductor"
BREAK = FIXTURES / "qwen_moe_break"
LOOP = FIXTURES / "llama_loop_break"


def _truth(fixture: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((fixture / "truth.json").read_text())
    return doc


@pytest.mark.parametrize("fixture", [INDUCTOR, BREAK, LOOP], ids=lambda p: p.name)
def test_dynamo_nodes_get_the_layer_of_their_module(fixture: Path) -> None:
    truth = _truth(fixture)
    loaded = load_torch_trace(fixture / "trace", [DYNAMO])
    lg = loaded.stages[0]
    got = {n.name: lg.layer[n.index] for n in lg.graph.nodes}
    wrong = []
    total = 0
    for cid, nodes in truth["graphs"].items():
        for name, layer in nodes.items():
            total += 1
            key = f"[{cid}] {name}"
            if got.get(key, "missing") != layer:
                wrong.append(f"{key}: {got.get(key, 'missing')} (truth {layer})")
    assert total > 250
    assert not wrong, wrong[:10]
    named = {layer for nodes in truth["graphs"].values() for layer in nodes.values()}
    assert sorted(lg.layers) == sorted(named - {None})


def test_inductor_log_stages_recompilation_and_provenance() -> None:
    assert is_torch_trace(INDUCTOR / "trace") and not is_torch_trace(FIXTURES)
    tt = read_torch_trace(INDUCTOR / "trace")
    assert tt.kinds == [DYNAMO, AOT, POST_GRAD]
    assert [g.compile_id for g in tt.graphs[DYNAMO]] == ["0/0", "0/1"]
    assert [r.compile_id for r in tt.recompiles] == ["0/1"]
    assert "size mismatch" in tt.recompiles[0].reasons[0]
    loaded = load_torch_trace(INDUCTOR / "trace")
    kinds = {k: lg for k, lg in zip(loaded.kinds, loaded.stages, strict=True)}
    for lg in kinds.values():
        assert [info.kind for info in lg.layers.values()] == ["attention+mlp"] * 3
        assert not lg.doubts
    post = kinds[POST_GRAD].graph
    # Inductor's provenance names the generated kernels of post-grad nodes.
    assert post.kernel_names
    name, kernels = next(iter(post.kernel_names.items()))
    assert name.startswith("[0/0] ") and all(k.startswith("cpp_fused_") for k in kernels)
    kmap = with_provenance(load_kernel_map(), post.kernel_names)
    row = kmap.row_for_op(provenance_op(kernels))
    assert row is not None and row.note == "Inductor provenance"
    assert row.accepts(kernels[0], kernels[0]) and not row.accepts("nvjet_gemm", "nvjet_gemm")


def test_a_graph_compiled_for_one_layer_is_a_doubt_not_a_guess() -> None:
    tt = read_torch_trace(BREAK / "trace")
    # Ours, and the ones transformers' own hooks cause, each with where and why.
    assert any("make_torch_trace.py" in b.where and "graph_break()" in b.reason for b in tt.breaks)
    assert any("transformers" in b.where for b in tt.breaks)
    assert any(r.compile_id == "0/1" for r in tt.recompiles)
    lg = load_torch_trace(BREAK / "trace", [DYNAMO]).stages[0]
    # Every decoder layer ran as a frame of its own, whose parameters name no layer: the
    # truth has no layer for them either, and no layer is guessed.
    assert not lg.layers and all(x is None for x in lg.layer)
    shared = [d for d in lg.doubts if d.kind == SHARED_GRAPH]
    assert shared and all(d.message.startswith("compiled graph [") for d in shared)


def test_layers_of_graphs_a_break_separates_are_found_together() -> None:
    tt = read_torch_trace(LOOP / "trace")
    assert [b.compile_id for b in tt.breaks] == ["0/0", "0/1"]
    lg = load_torch_trace(LOOP / "trace", [DYNAMO]).stages[0]
    graphs: dict[int, set[str]] = {}
    for node in lg.graph.nodes:
        layer = lg.layer[node.index]
        if layer is not None:
            graphs.setdefault(layer, set()).add(node.name.split("]")[0] + "]")
    assert graphs == {0: {"[0/0]", "[0/1]"}, 1: {"[0/0]", "[0/1]"}, 2: {"[1/0]", "[1/1]"}}
    # Layer 2 opens with its input norm on the hidden states the first frame handed over.
    assert lg.layer[lg.graph.by_name["[1/0] variance"].index] == 2
    assert [info.kind for info in lg.layers.values()] == ["attention+mlp"] * 3 and not lg.doubts


def test_convert_and_extract_a_torch_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                           ) -> None:
    trace = INDUCTOR / "trace"
    assert main(["convert", str(trace), "--logdir", str(tmp_path), "--run", "llama", "-q"]) == 0
    store = tmp_path / "llama" / "plugins" / "ad_layer" / "run.sqlite"
    with sqlite3.connect(store) as conn:
        stages = conn.execute("SELECT file, stage FROM stages ORDER BY rowid").fetchall()
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    assert stages == [("dynamo_output_graph", DYNAMO), ("aot_graph", AOT),
                      ("inductor_post_grad_graph", POST_GRAD)]
    log = json.loads(meta["compile_log"])
    assert log["compile_ids"] == ["0/0", "0/1"] and log["recompilations"][0]["compile_id"] == "0/1"
    out = tmp_path / "l1.json"
    assert main(["extract", str(trace), "--layer", "1", "-o", str(out), "-q"]) == 0
    doc = json.loads(out.read_text())
    ids = [n["id"] for n in doc["nodes"]]
    assert any(i.startswith("[0/0] ") for i in ids) and any(i.startswith("[0/1] ") for i in ids)
    assert any(i.endswith(" linear_4") or " linear" in i for i in ids)
    # Another kind of graph by name.
    assert main(["extract", str(trace), "--layer", "1", "--dump-file", "post_grad", "-o",
                 str(out), "-q"]) == 0
    assert any(n["op"] == "aten.mm.default" for n in json.loads(out.read_text())["nodes"])
    assert main(["extract", str(trace), "--layer", "1", "--dump-file", "nope", "-q"]) == 2
    assert "no stage 'nope'" in capsys.readouterr().err
