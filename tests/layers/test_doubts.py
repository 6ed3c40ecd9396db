"""Doubts about a layering: silent on every real export, and saying what is implausible when a
broken weight naming gives layers with a gap or a layer that swallowed its neighbours."""
from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

from tb_ad_layer.contract.document import LayeringDoubt
from tb_ad_layer.convert import load_stage, resolve_inputs
from tb_ad_layer.dump.reader import parse_dump
from tb_ad_layer.layers.document import layer_record
from tb_ad_layer.layers.doubts import index_gap, layering_doubts
from tb_ad_layer.layers.history import StageHistory
from tb_ad_layer.layers.layered import LayeredGraph, LayerInfo, layer_graph, stage_history
from tests.conftest import DUMPS, REPO
from tests.doubtful import MERGED, gap_dump, oversized_dump

REAL_WRITER = REPO.parent / "shared" / "dumps" / "real_writer"
BENCH_DATA = REPO / "bench" / "data"

# Every real export we have: the model fixtures, the dumps TensorRT-LLM's own writer printed,
# and the full-size exports of the benchmarks (61 and 48 layers: enough layers of one kind for
# the median to say something).
DUMP_DIRS = sorted(p for p in DUMPS.iterdir() if p.is_dir()) + (
    sorted(p for p in REAL_WRITER.iterdir() if p.is_dir()) if REAL_WRITER.is_dir() else [])
BENCH_DUMPS = sorted(BENCH_DATA.glob("*/*.txt.gz"))


@pytest.mark.parametrize("dump_dir", DUMP_DIRS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_doubt_on_a_real_export(dump_dir: Path) -> None:
    for stage in resolve_inputs(dump_dir, ["all"]):
        lg = load_stage(stage).lg
        assert lg.doubts == [], f"{stage.path}: {lg.doubts}"
        assert all(layer_record(lg, i).doubts == [] for i in lg.layers)


@pytest.mark.parametrize("dump", BENCH_DUMPS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_doubt_on_a_full_size_export(dump: Path, tmp_path: Path) -> None:
    text = tmp_path / dump.name[:-len(".gz")]
    with gzip.open(dump, "rb") as f:
        text.write_bytes(f.read())
    lg = layer_graph(parse_dump(text).select())
    assert len(lg.layers) >= 48 and lg.doubts == []


def test_a_gap_in_the_layer_indices_is_a_doubt_about_the_stage(tmp_path: Path) -> None:
    lg = load_stage(resolve_inputs(gap_dump(tmp_path))[-1]).lg
    assert 0 in lg.layers and 5 in lg.layers and 1 not in lg.layers
    gaps = [d for d in lg.doubts if d.kind == "index_gap"]
    assert len(gaps) == 1 and gaps[0].layer is None, lg.doubts
    # The missing indices and the layers found, on one line.
    assert re.fullmatch(r"no layers 1(-|, )\S.* found", gaps[0].message), gaps[0].message
    assert "\n" not in gaps[0].message
    # A stage's doubt is in no layer's document.
    assert all(layer_record(lg, i).doubts == [] for i in lg.layers)


def test_a_layer_that_took_its_neighbours_nodes_is_a_doubt_about_that_layer(tmp_path: Path) -> None:
    lg = load_stage(resolve_inputs(oversized_dump(tmp_path))[-1]).lg
    assert [i for i in MERGED if i in lg.layers] == []
    kinds = [(d.kind, d.layer) for d in lg.doubts]
    assert kinds == [("index_gap", None), ("oversized_layer", 10)], lg.doubts
    assert lg.doubts[0].message == "no layers 11-15 (5 missing): layers 0-10, 16-60 found"
    m = re.fullmatch(r"layer 10 has ([\d,]+) nodes, ([\d.]+)x the median of mla\+moe layers "
                     r"\(([\d,]+)\)", lg.doubts[1].message)
    assert m, lg.doubts[1].message
    nodes, median = int(m[1].replace(",", "")), int(m[3].replace(",", ""))
    assert nodes == lg.layers[10].node_count and nodes > 3 * median
    assert float(m[2]) == pytest.approx(nodes / median, abs=0.05)
    # The layer's own document carries its doubt; its neighbours' carry none.
    assert layer_record(lg, 10).doubts == [lg.doubts[1]]
    assert layer_record(lg, 9).doubts == [] and layer_record(lg, 16).doubts == []


@pytest.mark.parametrize(("indexes", "message"), [
    ([0, 1, 2, 4, 5, 6], "no layer 3: layers 0-2, 4-6 found"),
    ([0, 2, 5], "no layers 1, 3-4 (3 missing): layers 0, 2, 5 found"),
    ([0, 2_000_000_000], "no layers 1-1999999999 (1,999,999,999 missing): layers 0, 2000000000 found"),
    (list(range(0, 40, 2)), "no layers 1, 3, 5, 7, 9, 11, 13, 15 and 11 more ranges (19 missing): "
                            "layers 0, 2, 4, 6, 8, 10, 12, 14 and 12 more ranges found"),
])
def test_gap_messages_name_the_evidence_on_one_line(indexes: list[int], message: str) -> None:
    assert index_gap(indexes) == LayeringDoubt(kind="index_gap", layer=None, message=message)


@pytest.mark.parametrize("indexes", [[], [0], [0, 1, 2], [30, 31, 32]])
def test_no_gap(indexes: list[int]) -> None:
    # Layers that start past 0 have no gap: a pipeline stage may hold layers 30-59.
    assert index_gap(indexes) is None


def _with_sizes(sizes: dict[int, tuple[str, int]]) -> LayeredGraph:
    """A layered graph whose layers have the kinds and node counts of ``sizes``."""
    dump = DUMPS / "llama" / "001_export_export_to_gm.txt"
    lg = layer_graph(parse_dump(dump).select())
    lg.layers = {i: LayerInfo(index=i, kind=kind, attention=None, members=list(range(n)),
                              group_counts={}, external_inputs=[])
                 for i, (kind, n) in sizes.items()}
    return lg


def test_oversized_is_more_than_three_times_the_median_of_its_kind() -> None:
    # Layer 4 has exactly three times the median of the Mamba layers: not more.
    lg = _with_sizes({0: ("mamba", 100), 1: ("mamba", 301), 2: ("mamba", 100),
                      3: ("attention+mlp", 900), 4: ("mamba", 300), 5: ("attention+mlp", 60),
                      6: ("attention+mlp", 60), 7: ("mamba", 100)})
    assert layering_doubts(lg) == [
        LayeringDoubt(kind="oversized_layer", layer=1,
                      message="layer 1 has 301 nodes, 3.0x the median of mamba layers (100)"),
        LayeringDoubt(kind="oversized_layer", layer=3,
                      message="layer 3 has 900 nodes, 15.0x the median of attention+mlp layers (60)")]


def test_no_median_of_fewer_than_three_layers_of_a_kind() -> None:
    lg = _with_sizes({0: ("mamba", 100), 1: ("mamba", 1000), 2: ("attention+mlp", 60),
                      3: ("attention+mlp", 60), 4: ("attention+mlp", 60)})
    assert layering_doubts(lg) == []


def test_median_of_an_even_count_is_between_the_middle_two() -> None:
    lg = _with_sizes({0: ("gdn+moe", 100), 1: ("gdn+moe", 101), 2: ("gdn+moe", 50),
                      3: ("gdn+moe", 302)})
    assert layering_doubts(lg) == [LayeringDoubt(
        kind="oversized_layer", layer=3,
        message="layer 3 has 302 nodes, 3.0x the median of gdn+moe layers (100.5)")]


def test_a_layer_count_unlike_the_history_is_a_doubt_about_the_stage() -> None:
    # A stage layered with the export stage's layers as its history finds the same layers; one
    # that finds another count is not to be trusted, and says what it was compared with.
    stages = resolve_inputs(DUMPS / "ad_dsv3", ["all"])
    export = load_stage(stages[0]).lg
    history = stage_history(export)
    assert layering_doubts(export, history) == []
    fewer = StageHistory(source=history.source, layers=history.layers, layer_count=4)
    doubts = layering_doubts(load_stage(stages[-1], None, history).lg, fewer)
    assert [(d.kind, d.layer) for d in doubts] == [("layer_count", None)]
    assert doubts[0].message == ("5 layers found, but 001_export_export_to_gm.txt, whose layers "
                                 "this stage carries, has 4")
