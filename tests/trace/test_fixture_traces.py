"""The committed per-layer-stream and module-annotated fixtures (tests/fixtures/traces), per node."""
from __future__ import annotations

import pytest

from tb_ad_layer.trace.activity import stream_counts
from tb_ad_layer.trace.ingest import ingest_trace, kernel_sequences
from tb_ad_layer.trace.reader import read_trace
from tests.trace.accuracy import agreement, baseline_agreement, dump_model
from tests.trace.helpers import FIXTURES, load_truth


@pytest.mark.parametrize("name", ["ad_dsv3_decode_streams.sqlite", "ad_dsv3_decode_streams.pt.trace.json.gz"])
def test_per_layer_streams_map_every_kernel_to_its_node(name: str) -> None:
    truth = load_truth(FIXTURES / "ad_dsv3_decode_streams.truth.json")
    _, model = dump_model("dsv3_mla_moe")
    result = ingest_trace(FIXTURES / name, model)
    assert result.info.segmentation == "graph-alignment" and result.info.layers_found == 5
    assert result.info.step == 105 and result.info.replays == 6
    got = agreement(truth, result.kernels)
    assert got.layer_share == got.node_share == got.outside_share == 1.0, got.misses
    layers, seed = baseline_agreement(truth, result.kernels, model)
    assert seed.layer_share < 0.95 and seed.node_share < got.node_share
    # No stream carries every layer: the busiest one holds one layer and the next one's head.
    db = read_trace(FIXTURES / name)
    busiest = max(stream_counts(db), key=lambda sc: sc.kernels)
    per_layer = {k.layer for k in result.kernels if k.stream == busiest.stream.stream and k.layer is not None}
    assert len(per_layer) <= 2


@pytest.mark.parametrize(
    "name, method",
    [
        ("qwen3_next_prefill_modules.pt.trace.json.gz", "module-annotations"),
        ("qwen3_next_prefill_modules.sqlite", "nvtx-ranges"),
    ],
)
def test_annotated_eager_passes(name: str, method: str) -> None:
    truth = load_truth(FIXTURES / "qwen3_next_prefill_modules.truth.json")
    seq = kernel_sequences(FIXTURES / name)
    assert (
        seq.segmentation.method == method
        and seq.num_layers == truth["num_layers"] == 2
        and seq.step == 101
    )
    _, model = dump_model("qwen3_next_gdn")
    result = ingest_trace(FIXTURES / name, model)
    got = agreement(truth, result.kernels)
    assert got.layer_share == 1.0 and got.node_share >= 0.99, got.misses
