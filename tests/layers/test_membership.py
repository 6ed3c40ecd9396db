"""Layer membership against ground truth, for every node of every committed fixture.

Real-model truth comes from ``node.meta["nn_module_stack"]`` of torch.export (tools/
make_model_dumps.py); AutoDeploy-style truth from the generator that wrote the dump
(tools/make_ad_dump.py).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tb_ad_layer.dump.reader import parse_dump
from tb_ad_layer.layers.layered import layer_graph
from tests.conftest import DUMPS

FILES = sorted(DUMPS.glob("*/*.txt"))

# Known, understood disagreements, by file: (most mismatches allowed, why).
KNOWN = {
    # Raw exports keep no-op casts (`to(float32)` on a float32 tensor) that alias the residual,
    # so the residual stream and the norm's cast are one node; its module is the norm's.
    "llama/001_export_export_to_gm.txt": (4, "no-op alias casts at layer entries"),
    "nemotron_h/001_export_export_to_gm.txt": (21, "no-op alias casts at layer entries"),
    "qwen3_next/001_export_export_to_gm.txt": (10, "no-op alias casts; final norm behind alias"),
    # The router load-balancing loss is computed outside every module from all layers' router
    # logits (output_router_logits=True); its per-layer softmax/topk follow their layer here.
    "qwen_moe/001_export_export_to_gm.txt": (68, "aux loss, alias casts, dead mask code"),
    "qwen_moe/002_post_export_cleanup_noop_removal.txt": (13, "router aux-loss ops, a SymInt"),
}


def _rel(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


@pytest.mark.parametrize("path", FILES, ids=_rel)
def test_membership_matches_truth(path: Path) -> None:
    truth = json.loads(path.with_suffix(".truth.json").read_text())["nodes"]
    lg = layer_graph(parse_dump(path).select())
    wrong = [(n.name, truth[n.name]["layer"], lg.layer[n.index])
             for n in lg.graph.nodes if n.kind != "output"
             and truth[n.name]["layer"] != lg.layer[n.index]]
    limit, why = KNOWN.get(_rel(path), (0, ""))
    assert len(wrong) <= limit, f"{len(wrong)} nodes disagree ({why or 'none expected'}): {wrong[:10]}"
    assert set(lg.layers) == {int(k) for k in json.loads(
        path.with_suffix(".truth.json").read_text())["layer_kinds"]}


def test_cleaned_stages_exact_everywhere() -> None:
    exact = [p for p in FILES if _rel(p) not in KNOWN]
    assert len(exact) >= 10  # every AD-style stage and the cleaned real-model stages


@pytest.mark.parametrize("path", sorted(DUMPS.glob("ad_*/*.txt")), ids=_rel)
def test_groups_on_ad_graphs(path: Path) -> None:
    """Groups agree with the generator's truth on nearly every layer node; streams exactly."""
    truth = json.loads(path.with_suffix(".truth.json").read_text())["nodes"]
    lg = layer_graph(parse_dump(path).select())
    members = [n for n in lg.graph.nodes if lg.layer[n.index] is not None]
    agree = sum(truth[n.name]["group"] == lg.group[n.index] for n in members)
    assert agree / len(members) >= 0.93
    assert all(truth[n.name]["stream"] == lg.stream[n.index] for n in members)


def test_layer_kinds() -> None:
    kinds = {}
    for model in ("llama", "deepseek_v3", "nemotron_h", "ad_dsv3"):
        path = sorted((DUMPS / model).glob("*.txt"))[-1]
        kinds[model] = {i: info.kind for i, info in layer_graph(parse_dump(path).select()).layers.items()}
    assert kinds["llama"] == {0: "dense", 1: "dense", 2: "dense"}
    assert kinds["deepseek_v3"] == {0: "dense", 1: "moe", 2: "moe", 3: "moe"}
    assert kinds["nemotron_h"] == {0: "ssm", 1: "mlp", 2: "ssm", 3: "attention", 4: "moe"}
    assert kinds["ad_dsv3"] == {0: "dense", 1: "dense", 2: "moe", 3: "moe", 4: "moe"}
