"""The whole-stage skeleton (api/stage_graph): folds of repeating layers, the nodes before and
after the layers, and the shared inputs listed once instead of one edge per reader."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import msgspec
from werkzeug.test import Client

from tb_ad_layer.contract.api import StageFold, StageGraphResponse
from tb_ad_layer.convert import convert
from tb_ad_layer.options import ConvertOptions
from tb_ad_layer.plugin.stage_graph import fold_runs
from tests.conftest import REPO
from tests.plugin.conftest import make_client

BASE = "/data/plugin/ad_layer/api"
QWEN = REPO / "tests" / "fixtures" / "deep_exports" / "qwen3_next_80b"


def test_one_layer_repeated_is_one_fold() -> None:
    layers = list(range(10))
    same = {i: 1 for i in range(2, 10)}
    assert fold_runs(layers, same) == [StageFold(first=1, last=9, period=1, count=9)]


def test_a_block_of_layers_repeated_is_one_fold_and_a_tail_stays_apart() -> None:
    # (a, a, b) x 3, then a, a: the blocks fold, the two layers after them fold on their own.
    kinds = "aab" * 3 + "aa"
    first = {"a": 0, "b": 2}
    same = {i: first[k] for i, k in enumerate(kinds) if i != first[k]}
    assert fold_runs(list(range(len(kinds))), same) == [
        StageFold(first=0, last=8, period=3, count=3), StageFold(first=9, last=10, period=1, count=2)]


def test_different_layers_and_gaps_are_never_folded() -> None:
    assert fold_runs([0, 1, 2, 3], {}) == []
    # Layer 2 is missing: 1 and 3 are identical but not consecutive.
    assert fold_runs([0, 1, 3], {3: 1}) == []
    assert fold_runs([0, 1, 3, 4], {3: 1, 4: 1}) == [StageFold(first=3, last=4, period=1, count=2)]


def test_the_whole_stage_of_a_real_depth_export(tmp_path: Path) -> None:
    # Qwen3-Next, 48 layers, 38,723 nodes: layer 0, then three gated-delta-net layers and a
    # full-attention one, twelve times.
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    name = "001_export_export_to_gm.txt"
    (dumps / name).write_bytes(gzip.decompress((QWEN / f"{name}.gz").read_bytes()))
    convert(ConvertOptions(dumps, tmp_path, run="q"))
    client, _ = make_client(tmp_path)
    body = client.get(f"{BASE}/stage_graph?run=q").get_data()
    g = msgspec.json.decode(body, type=StageGraphResponse)
    assert len(body) < 64_000  # a skeleton, not the 38,723 nodes
    assert [x.layer for x in g.layers] == list(range(48))
    assert sum(x.node_count for x in g.layers) + len(g.before) + len(g.after) > 38_000
    # Four boxes for 48 layers: 0, 1-2, 3, and (gdn, gdn, gdn, attention) x 11.
    assert g.folds == [StageFold(first=1, last=2, period=1, count=2),
                       StageFold(first=4, last=47, period=4, count=11)]
    kinds = {x.layer: x.kind for x in g.layers}
    assert [kinds[i] for i in range(4, 8)] == ["gdn+moe"] * 3 + ["attention+moe"]
    # The input part holds the inputs, the embedding and the RoPE and mask set-up; the output
    # part the final norm and the lm head.
    before = {n.id: n for n in g.before}
    assert {"input_ids", "position_ids", "embedding"} <= set(before)
    assert "model_embed_tokens_weight" in before["embedding"].weights
    after_weights = {w for n in g.after for w in n.weights}
    assert {"model_norm_weight", "lm_head_weight"} <= after_weights
    assert g.after[-1].node_kind == "output"
    # Shared inputs: each listed once with all its readers; the RoPE tables and the mask reach
    # the 12 attention layers only, the values computed by layer 0 most later layers.
    shared = {s.id: s for s in g.shared}
    attn = [x.layer for x in g.layers if x.attention == "attention"]
    rope = [s for s in g.shared if s.kind == "rope"]
    assert len(rope) == 2 and all(s.layers == attn and s.source is None for s in rope)
    from_layer0 = [s for s in g.shared if s.source == 0]
    assert from_layer0 and all(min(s.layers) >= 2 for s in from_layer0)
    for x in g.layers:
        for sid in x.shared:
            assert x.layer in shared[sid].layers
    # The embedding flows into layer 0 along the chain, not as a shared input.
    assert "embedding" not in shared
    # Without the bundling, each reader would be a long edge across the canvas.
    assert sum(len(s.layers) for s in g.shared) > 150


def test_a_small_stage_and_its_overview_agree(client: Client) -> None:
    g = json.loads(client.get(f"{BASE}/stage_graph?run=traced/decode").get_data(as_text=True))
    o = json.loads(client.get(f"{BASE}/overview?run=traced/decode").get_data(as_text=True))
    assert g["stage"] == o["stage"]
    assert [(x["layer"], x["node_count"], x["gpu_time_us"], x["same_as"], x["groups"])
            for x in g["layers"]] == [(x["layer"], x["node_count"], x["gpu_time_us"],
                                       x["same_as"], x["groups"]) for x in o["layers"]]
    assert len(g["before"]) + len(g["after"]) == o["none_node_count"]
    assert g["outside_gpu_time_us"] == o["outside_gpu_time_us"]
