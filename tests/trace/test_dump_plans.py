"""End to end on traces generated from the FX-dump fixtures (tests/fixtures/dumps), per kernel.

Every stage with a ``<stem>.truth.json`` becomes a plan and a generated trace whose stream layout
follows AutoDeploy's CUDA-graph captures (per-layer stream sets, a stream carrying one layer's
tail and the next one's head, aux streams, stream ids in no order); each kernel's layer and node
is checked against the truth. The model kinds (dense, MLA with dense first layers then MoE, MoE,
Mamba hybrid, gated delta net) are also run through the converter's own view of their dump, in
both trace formats, and compared with seed 000's stream grouping on the same replay.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tb_ad_layer.trace.ingest import ingest_trace
from tests.trace.accuracy import MODEL_DUMPS, agreement, baseline_agreement, dump_model, generate_from_dump
from tests.trace.helpers import REPO, load_truth, make_traces, model_from_truth

TRUTHS = sorted((REPO / "tests" / "fixtures" / "dumps").glob("*/*.truth.json"))


@pytest.mark.parametrize("truth_path", TRUTHS, ids=[f"{p.parent.name}/{p.name.split('.')[0]}" for p in TRUTHS])
@pytest.mark.parametrize("phase", ["decode", "prefill"])
def test_generated_trace_maps_like_the_dump_truth(truth_path: Path, phase: str, tmp_path: Path) -> None:
    mt = make_traces()
    plan = mt.plan_from_truth(truth_path)
    paths = mt.generate(tmp_path, "t", plan, mt.Options(phase=phase, replays=3, passes=2, layout="per-layer"))
    gt = load_truth(paths["truth"])
    result = ingest_trace(paths["sqlite"], model_from_truth(gt), phase=phase)
    assert result.meta["layers_found"] == gt["num_layers"]
    got = agreement(gt, result.kernels)
    assert got.layer_share == 1.0, got.misses
    assert got.node_share == 1.0, got.misses
    assert got.outside_share == 1.0


@pytest.mark.parametrize("fmt", ["sqlite", "torch"])
@pytest.mark.parametrize("name", sorted(MODEL_DUMPS))
def test_model_kinds_through_the_converter(name: str, fmt: str, tmp_path: Path) -> None:
    _, expected = dump_model(name)
    paths = generate_from_dump(tmp_path, name, ("sqlite", "torch"), layout="per-layer", replays=5, seed=7,
                               jitter=0.15, reshuffle_streams=True)
    truth = load_truth(paths["truth"])
    result = ingest_trace(paths[fmt], expected)
    assert result.meta["layers_found"] == len(expected.layers) == truth["num_layers"]
    got = agreement(truth, result.kernels)
    assert got.layer_share == 1.0, got.misses
    assert got.node_share >= 0.95, got.misses
    found, seed = baseline_agreement(truth, result.kernels, expected)
    assert got.node_share > seed.node_share and got.layer_share > seed.layer_share
    # Model-level kernels (embedding, final norm, lm head) land on the nodes outside the layers.
    assert result.meta["outside_kernel_count"] > 0 and result.meta["outside_time_us"] > 0
    outside_nodes = {n.name for n in list(expected.before) + list(expected.after)}
    assert any(k.node in outside_nodes for k in result.kernels if k.layer is None)
