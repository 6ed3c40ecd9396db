"""Layer boundaries the trace states itself: capture-time NVTX, module annotations, NVTX ranges."""
from __future__ import annotations

from pathlib import Path

import pytest

from tb_ad_layer.trace.annotations import annotated_layers, capture_points
from tb_ad_layer.trace.ingest import ingest_trace, kernel_sequences
from tb_ad_layer.trace.reader import read_trace
from tb_ad_layer.trace.replay import select
from tests.trace.accuracy import agreement, dump_model, generate_from_dump
from tests.trace.helpers import load_truth


def test_capture_time_nvtx_through_graph_node_events(tmp_path: Path) -> None:
    paths = generate_from_dump(tmp_path, "dsv3_mla_moe", layout="per-layer", capture_nvtx=True, replays=4)
    truth = load_truth(paths["truth"])
    db = read_trace(paths["sqlite"])
    sel = select(db)
    points = capture_points(db, sel.kernels)
    # Replayed node -> instantiated node -> captured node: every graph kernel finds its capture time.
    assert all(p is not None for k, p in zip(sel.kernels, points, strict=True) if k.graph_node_id is not None)
    found = annotated_layers(db, sel.kernels)
    assert found is not None and found.source == "capture-nvtx" and found.count == 5
    assert found.kinds == ["model.layers"] * 5
    seq = kernel_sequences(paths["sqlite"])
    assert seq.segmentation.method == "capture-nvtx" and seq.num_layers == 5
    _, model = dump_model("dsv3_mla_moe")
    result = ingest_trace(paths["sqlite"], model)
    assert result.info.segmentation == "capture-nvtx"
    got = agreement(truth, result.kernels)
    assert got.layer_share == 1.0 and got.node_share == 1.0


def test_capture_ranges_that_disagree_with_the_graph_give_way(tmp_path: Path) -> None:
    paths = generate_from_dump(tmp_path, "dsv3_mla_moe", layout="per-layer", capture_nvtx=True, replays=3)
    _, model = dump_model("dsv3_mla_moe")
    model.layers = model.layers[:4]  # a graph of 4 layers against ranges of 5
    with pytest.raises(Exception, match="graph has 4 layers"):
        ingest_trace(paths["sqlite"], model)


@pytest.mark.parametrize("name", ["llama_dense", "nemotron_h_hybrid"])
def test_module_annotations_in_profiler_traces(name: str, tmp_path: Path) -> None:
    # nemotron_h alternates Mamba, MLP, attention and MoE layers, each its own class: they are
    # siblings interleaved in time, so every one is a layer.
    paths = generate_from_dump(tmp_path, name, ("torch",), phase="prefill", passes=3, modules=True,
                               class_per_kind=name == "nemotron_h_hybrid", steps=True)
    truth = load_truth(paths["truth"])
    seq = kernel_sequences(paths["torch"])
    assert seq.segmentation.method == "module-annotations" and seq.step == 102
    assert seq.num_layers == truth["num_layers"]
    if name == "nemotron_h_hybrid":
        assert len({layer.kind for layer in seq.layers}) == len(set(truth["layer_kinds"].values()))
    _, model = dump_model(name)
    result = ingest_trace(paths["torch"], model)
    got = agreement(truth, result.kernels)
    assert got.layer_share == 1.0 and got.node_share >= 0.99


def test_nvtx_layer_ranges_in_eager_nsys_traces(tmp_path: Path) -> None:
    paths = generate_from_dump(
        tmp_path, "qwen3_next_gdn", phase="prefill", passes=2, layer_nvtx=True, hooks=True
    )
    truth = load_truth(paths["truth"])
    db = read_trace(paths["sqlite"])
    found = annotated_layers(db, select(db).kernels)
    assert found is not None and found.source == "nvtx-ranges" and found.count == truth["num_layers"]
    result = ingest_trace(paths["sqlite"], None)
    assert result.info.segmentation == "nvtx-ranges"
    assert agreement(truth, result.kernels).layer_share == 1.0
