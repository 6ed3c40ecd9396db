"""The doubts about a layering through the API: a stage's in the run listing, a layer's in its
layer response, both checked against the contract and what the store holds."""
from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from tb_ad_layer.contract.api import LayerResponse, RunInfo, decode_runs
from tb_ad_layer.convert import convert
from tb_ad_layer.options import ConvertOptions
from tb_ad_layer.plugin.data import PluginData
from tests.conftest import DUMPS
from tests.doubtful import gap_dump, oversized_dump
from tests.plugin.conftest import BASE, answer, call, make_client


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """runs ``oversized`` (a gap and an oversized layer 10), ``gap`` (a gap only, every stage)
    and ``plain`` (no doubt)."""
    root = tmp_path_factory.mktemp("doubts")
    scratch = root / "dumps"
    convert(ConvertOptions(oversized_dump(scratch), root / "logs", run="oversized"))
    gap = gap_dump(scratch)
    (gap / "002_post_export_cleanup_noop_slice.txt").write_bytes(
        (DUMPS / "llama" / "002_post_export_cleanup_noop_slice.txt").read_bytes())
    convert(ConvertOptions(gap, root / "logs", run="gap", stages=("all",)))
    convert(ConvertOptions(DUMPS / "ad_llama", root / "logs", run="plain"))
    return root / "logs"


@pytest.fixture
def data(logdir: Path) -> PluginData:
    return PluginData(logdir)


def runs(data: PluginData) -> dict[str, RunInfo]:
    listing = decode_runs(answer(data, "runs").body)
    return {r.run: r for r in listing.runs if isinstance(r, RunInfo)}


def test_the_run_listing_carries_each_stages_doubts(data: PluginData) -> None:
    listed = runs(data)
    (stage,) = listed["oversized"].stages
    assert [(d.kind, d.layer) for d in stage.doubts] == [("index_gap", None),
                                                          ("oversized_layer", 10)]
    assert stage.doubts[0].message == "no layers 11-15 (5 missing): layers 0-10, 16-60 found"
    assert stage.doubts[1].message.startswith("layer 10 has ")
    # Every stage has its own: the export stage of `gap` has the gap; the copied clean-up stage
    # (an untouched export, which names every weight after its module) is layered from its own
    # graph, right, without the export's layers.
    gap = listed["gap"].stages
    assert [[d.kind for d in s.doubts] for s in gap] == [["index_gap"], []]
    assert [s.doubts for s in listed["plain"].stages] == [[]]


def test_the_layer_response_carries_the_layers_doubts(data: PluginData) -> None:
    doc = msgspec.json.decode(answer(data, "layer", run="oversized", layer=10).body,
                              type=LayerResponse)
    stage_doubts = runs(data)["oversized"].stages[0].doubts
    assert doc.doubts == [stage_doubts[1]] and doc.doubts[0].layer == 10
    assert call(data, "layer", run="oversized", layer=9)["doubts"] == []
    # A doubt about the whole stage is in no layer's response.
    assert call(data, "layer", run="gap", stage=0, layer=0)["doubts"] == []
    assert call(data, "layer", run="gap", stage=0, layer=5)["doubts"] == []


def test_doubts_are_served_as_text_through_tensorboard(logdir: Path) -> None:
    client, _ = make_client(logdir)
    r = client.get(f"{BASE}/api/runs")
    assert r.status_code == 200
    body = r.get_data(as_text=True)
    assert '"doubts":[{"kind":"index_gap","layer":null,"message":"no layers 11-15' in body
