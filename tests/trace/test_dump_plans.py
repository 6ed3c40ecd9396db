"""End to end on traces generated from every FX-dump fixture (tests/fixtures/dumps), per kernel.

Every stage with a ``<stem>.truth.json`` (20 real Hugging Face architectures, both export stages,
and AutoDeploy's late stages) becomes a plan and a generated trace whose stream layout follows
AutoDeploy's CUDA-graph captures: per-layer stream sets, a stream carrying one layer's tail and
the next one's head, shared experts and MLA's KV path on an aux stream the export's graph does
not mark, stream ids in no order and new ones in every replay, jitter, several replays, eager
copies and fills between them. Each trace is ingested in both formats with the converter's own
view of its dump stage, and each kernel's layer and node is checked against the generator's
truth, beside seed 000's stream grouping on the same replay.
"""
from __future__ import annotations

import zlib
from pathlib import Path

import pytest

from tb_ad_layer.convert import load_stage, resolve_inputs
from tb_ad_layer.options import TraceChoice
from tb_ad_layer.trace.graph_nodes import ModelNodes
from tb_ad_layer.trace.ingest import ingest_trace
from tb_ad_layer.trace_attach import model_nodes
from tests.trace.accuracy import DUMPS, agreement, baseline_agreement
from tests.trace.helpers import load_truth, make_traces, model_from_truth

TRUTHS = sorted(DUMPS.glob("*/*.truth.json"))
IDS = [f"{p.parent.name}/{p.name.split('.')[0]}" for p in TRUTHS]
#: Share of layer kernels that must land on their own node in every trace.
NODE_BAR = 0.95


def _converter_view(truth_path: Path) -> ModelNodes:
    stem = truth_path.name[: -len(".truth.json")]
    stage = next(s for s in resolve_inputs(truth_path.parent, ["all"]) if s.path.stem == stem)
    return model_nodes(load_stage(stage).lg)


@pytest.mark.parametrize("truth_path", TRUTHS, ids=IDS)
@pytest.mark.parametrize("phase", ["decode", "prefill"])
def test_every_dump_fixture_through_the_converter(truth_path: Path, phase: str, tmp_path: Path) -> None:
    mt = make_traces()
    expected = _converter_view(truth_path)
    seed = zlib.crc32(str(truth_path.relative_to(DUMPS)).encode()) % 1000
    paths = mt.generate(
        tmp_path,
        "t",
        mt.plan_from_truth(truth_path),
        mt.Options(
            phase=phase,
            layout="per-layer",
            replays=4,
            passes=2,
            seed=seed,
            jitter=0.15,
            reshuffle_streams=True,
        ),
        ("sqlite", "torch"),
    )
    truth = load_truth(paths["truth"])
    outside_nodes = {n.name for n in [*expected.before, *expected.after]}
    for fmt in ("sqlite", "torch"):
        result = ingest_trace(paths[fmt], expected, choice=TraceChoice(phase=phase))
        assert result.info.layers_found == len(expected.layers) == truth["num_layers"], fmt
        got = agreement(truth, result.kernels)
        assert got.layer_share == 1.0, (fmt, got.misses)
        assert got.node_share >= NODE_BAR, (fmt, got.node_share, got.misses)
        # Model-level kernels (embedding, final norm, lm head, gathers) on the nodes outside layers.
        assert got.outside_kernels > 0 and got.outside_share == 1.0, fmt
        assert result.info.outside_time_us > 0
        assert any(k.node in outside_nodes for k in result.kernels if k.layer is None)
        _, seed_grouping = baseline_agreement(truth, result.kernels, expected)
        assert got.node_share > seed_grouping.node_share and got.layer_share > seed_grouping.layer_share


@pytest.mark.parametrize("truth_path", TRUTHS, ids=IDS)
@pytest.mark.parametrize("layout", ["single", "main-aux"])
def test_other_stream_layouts_map_every_kernel(truth_path: Path, layout: str, tmp_path: Path) -> None:
    # One stream for the whole graph (SGLang/vLLM decode), or one main and one aux stream for
    # every layer; the plan's own view of the graph (aux nodes named), every kernel on its node.
    mt = make_traces()
    paths = mt.generate(tmp_path, "t", mt.plan_from_truth(truth_path),
                        mt.Options(layout=layout, replays=3, seed=3, jitter=0.1))
    truth = load_truth(paths["truth"])
    result = ingest_trace(paths["sqlite"], model_from_truth(truth))
    assert result.info.layers_found == truth["num_layers"]
    got = agreement(truth, result.kernels)
    assert got.layer_share == got.node_share == got.outside_share == 1.0, got.misses
