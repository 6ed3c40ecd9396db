"""Layer membership, groups and kinds against ground truth, for every node of every fixture.

Real-model truth comes from ``node.meta["nn_module_stack"]`` of torch.export (tools/
make_model_dumps.py); AutoDeploy-style truth from the generator that wrote the dump
(tools/make_ad_dump.py). Membership must match exactly; groups must agree with the module that
computed each node (see :mod:`tests.layers.module_groups`) on at least 98% of the nodes that a
submodule computed.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tb_ad_layer.dump.reader import parse_dump
from tb_ad_layer.layers.layered import layer_graph
from tb_ad_layer.layers.vocabulary import OTHER
from tests.conftest import DUMPS
from tests.layers.kinds import is_kind
from tests.layers.module_groups import expected_group, layer_blocks, unnamed_blocks

FILES = sorted(DUMPS.glob("*/*.txt"))
GROUP_AGREEMENT = 0.98

# Kinds of the fixtures whose truth predates the mixer+FFN vocabulary (and module classes).
KINDS = {
    "llama": {0: "attention+mlp", 1: "attention+mlp", 2: "attention+mlp"},
    "qwen_moe": {0: "attention+moe", 1: "attention+moe", 2: "attention+moe"},
    "deepseek_v3": {0: "mla+mlp", 1: "mla+moe", 2: "mla+moe", 3: "mla+moe"},
    "nemotron_h": {0: "mamba", 1: "mlp", 2: "mamba", 3: "attention", 4: "moe"},
    "qwen3_next": {0: "gdn+moe", 1: "gdn+moe", 2: "attention+moe"},
}


def _rel(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"




def _truth(path: Path) -> dict:
    return json.loads(path.with_suffix(".truth.json").read_text())


@pytest.mark.parametrize("path", FILES, ids=_rel)
def test_membership_matches_truth(path: Path) -> None:
    truth = _truth(path)
    nodes = truth["nodes"]
    lg = layer_graph(parse_dump(path).select())
    assert {n.name for n in lg.graph.nodes if n.kind != "output"} == set(nodes)
    wrong = [(n.name, nodes[n.name]["layer"], lg.layer[n.index]) for n in lg.graph.nodes
             if n.kind != "output" and nodes[n.name]["layer"] != lg.layer[n.index]]
    assert wrong == []
    assert set(lg.layers) == {int(k) for k in truth["layer_kinds"]}


@pytest.mark.parametrize("path", FILES, ids=_rel)
def test_layer_kinds(path: Path) -> None:
    truth = _truth(path)
    lg = layer_graph(parse_dump(path).select())
    got = {i: info.kind for i, info in lg.layers.items()}
    want = {int(k): v for k, v in truth["layer_kinds"].items()}
    first = next(iter(truth["nodes"].values()))
    if path.parent.name in KINDS and not any("class" in key for key in first):
        want = KINDS[path.parent.name]  # truth written before the mixer+FFN kinds
    assert all(is_kind(v) for v in want.values()), want
    assert got == want


@pytest.mark.parametrize("path", sorted(DUMPS.glob("ad_*/*.txt")), ids=_rel)
def test_groups_on_ad_graphs(path: Path) -> None:
    """Groups agree with the generator's truth; streams exactly."""
    truth = _truth(path)["nodes"]
    lg = layer_graph(parse_dump(path).select())
    members = [n for n in lg.graph.nodes if lg.layer[n.index] is not None]
    agree = sum(truth[n.name]["group"] == lg.group[n.index] for n in members)
    assert agree / len(members) >= GROUP_AGREEMENT, f"{agree}/{len(members)}"
    assert all(truth[n.name]["stream"] == lg.stream[n.index] for n in members)


@pytest.mark.parametrize("path", [p for p in FILES if not p.parent.name.startswith("ad_")],
                         ids=_rel)
def test_groups_follow_module_paths(path: Path) -> None:
    whole = _truth(path)
    truth = whole["nodes"]
    lg = layer_graph(parse_dump(path).select())
    modules = [v.get("module") or "" for v in truth.values()]
    blocks = layer_blocks(modules)
    mla = any("kv_a_proj" in m for m in modules)
    unnamed = tuple(b + "." for b in unnamed_blocks(
        truth, whole.get("layers_module", "model.layers"), set(lg.graph.weights)))

    def want(info: dict) -> str | None:
        # Truth written with module classes gives the group its module structure implies
        # (``other`` for a block of no group); older truth gives the path only.
        if "class" not in info:
            return expected_group(info.get("module"), blocks, mla)
        if info["group"] is None and unnamed \
                and ((info.get("module") or "") + ".").startswith(unnamed):
            return OTHER
        return info["group"]

    pairs = [(want(truth[n.name]), lg.group[n.index])
             for n in lg.graph.nodes if n.name in truth and truth[n.name]["layer"] is not None]
    judged = [(want, got) for want, got in pairs if want is not None]
    agree = sum(want == got for want, got in judged)
    assert len(judged) > 0.7 * len(pairs)
    assert agree / len(judged) >= GROUP_AGREEMENT, f"{agree}/{len(judged)}"
