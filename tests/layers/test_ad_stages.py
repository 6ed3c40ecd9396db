"""Layers of every stage AutoDeploy writes, at real depth, against the truth carried from
``nn_module_stack`` through faithful re-implementations of its transforms
(tests/fixtures/ad_stages/, tools/make_ad_stages.py).

The final stage names fused weights by counters, writes residual sums and norms into its
arguments in place, and inserts caches and metadata: read alone, its layers must come from the
graph; read in its directory, from the export stage's layers carried through the node names.
Both must agree with the truth on every node.
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tb_ad_layer.convert import load_history, load_stage, resolve_inputs
from tb_ad_layer.layers.layered import LayeredGraph, stage_history
from tb_ad_layer.progress import Progress
from tests.conftest import REPO

ROOT = REPO / "tests" / "fixtures" / "ad_stages"
MODELS = sorted(p.name for p in ROOT.iterdir() if p.is_dir()) if ROOT.is_dir() else []


@pytest.fixture(scope="module")
def unpacked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each model's stages as a dump directory (the fixtures are committed compressed)."""
    out: dict[str, Path] = {}
    base = tmp_path_factory.mktemp("ad_stages")
    for model in MODELS:
        d = out[model] = base / model
        d.mkdir()
        for gz in sorted((ROOT / model).glob("*.gz")):
            (d / gz.name[:-len(".gz")]).write_bytes(gzip.decompress(gz.read_bytes()))
    return out


def _wrong(lg: LayeredGraph, dump: Path) -> list[tuple[str, int | None, int | None]]:
    truth = json.loads(dump.with_suffix(".truth.json").read_text())["nodes"]
    wrong = [(n.name, truth[n.name]["layer"], lg.layer[n.index]) for n in lg.graph.nodes
             if n.kind != "output" and truth[n.name]["layer"] != lg.layer[n.index]]
    assert {n.name for n in lg.graph.nodes if n.kind != "output"} == set(truth)
    return wrong


@pytest.mark.parametrize("model", MODELS)
def test_every_stage_alone(model: str, unpacked: dict[str, Path]) -> None:
    for stage in resolve_inputs(unpacked[model], ["all"]):
        lg = load_stage(stage).lg
        assert _wrong(lg, stage.path)[:10] == [], stage.path.name
        assert lg.doubts == [], stage.path.name


@pytest.mark.parametrize("model", MODELS)
def test_final_stage_from_its_history(model: str, unpacked: dict[str, Path]) -> None:
    final = resolve_inputs(unpacked[model])[-1]
    history = load_history(unpacked[model], final, Progress(quiet=True))
    assert history is not None and history.source == "001_export_export_to_gm.txt"
    lg = load_stage(final, None, history).lg
    assert _wrong(lg, final.path)[:10] == [] and lg.doubts == []


@pytest.mark.parametrize("model", MODELS)
def test_every_stage_carried_from_the_one_before(model: str, unpacked: dict[str, Path]) -> None:
    # As `convert --stages all` layers them: each stage with the layers of the one before.
    history = None
    for stage in resolve_inputs(unpacked[model], ["all"]):
        lg = load_stage(stage, None, history).lg
        assert _wrong(lg, stage.path)[:10] == [], stage.path.name
        history = stage_history(lg)


def test_shared_blocks_named_after_their_last_user(tmp_path: Path,
                                                   unpacked: dict[str, Path]) -> None:
    # Zamba2-2.7B's two shared transformer blocks serve layers 6, 18, 30, 42, 51 and 12, 24,
    # 36, 47. The export here names their tied weights after the first user; another torch
    # version can keep the last one's name (DESIGN.md: model_layers_51_shared_transformer_*).
    # Either way each use belongs to the layer that calls it, in every stage.
    d = tmp_path / "zamba2_last"
    d.mkdir()
    for src in sorted(unpacked["zamba2_2_7b"].iterdir()):
        text = src.read_text()
        if src.name.endswith(".txt"):
            text = text.replace("model_layers_6_shared_transformer_",
                                "model_layers_51_shared_transformer_")
            text = text.replace("model_layers_12_shared_transformer_",
                                "model_layers_47_shared_transformer_")
        (d / src.name).write_text(text)
    stages = resolve_inputs(d, ["all"])
    assert "model_layers_51_shared_transformer_" in stages[-1].path.read_text()
    for stage in (stages[0], stages[-1]):
        lg = load_stage(stage).lg
        assert _wrong(lg, stage.path)[:10] == [] and lg.doubts == [], stage.path.name
    final = stages[-1]
    lg = load_stage(final, None, load_history(d, final, Progress(quiet=True))).lg
    assert _wrong(lg, final.path)[:10] == []
