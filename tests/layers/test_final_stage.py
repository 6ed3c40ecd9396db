"""The final stage as AutoDeploy writes it: layers from the graph and its history, never from a
counter.

AutoDeploy's transforms register fused weights under running counters (``fused_weight_{idx}``,
``fused_moe_w3_w1_stacked_{k}``), tied blocks keep one layer's name, and a fused residual add and
norm spans two layers. The fixtures here are rewritten in the test from real exports and the
AutoDeploy-style stages, so each case shows one fact on graphs whose truth is known.
"""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tb_ad_layer.cli import main
from tb_ad_layer.convert import load_history, load_stage, resolve_inputs
from tb_ad_layer.dump.reader import parse_dump
from tb_ad_layer.errors import InputError
from tb_ad_layer.layers.layered import LayeredGraph, layer_graph
from tb_ad_layer.progress import Progress
from tests.conftest import DUMPS

_LAYER_WEIGHT = re.compile(r"%((?:model_)?layers_\d+_\w+)")


def _wrong(lg: LayeredGraph, dump: Path) -> list[tuple[str, int | None, int | None]]:
    truth = json.loads(dump.with_suffix(".truth.json").read_text())["nodes"]
    return [(n.name, truth[n.name]["layer"], lg.layer[n.index]) for n in lg.graph.nodes
            if n.kind != "output" and truth[n.name]["layer"] != lg.layer[n.index]]


def _copy(src: Path, dst: Path, text: str | None = None) -> Path:
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text(src.read_text() if text is None else text)
    truth = src.with_suffix(".truth.json")
    shutil.copy(truth, dst.with_suffix(".truth.json"))
    return dst


def _counters_for_layer_names(text: str) -> str:
    """Every layer-named weight renamed ``fused_weight_{k}`` in order of first reference: a stage
    whose own names say nothing of layers."""
    names: dict[str, str] = {}

    def rename(m: re.Match[str]) -> str:
        return "%" + names.setdefault(m.group(1), f"fused_weight_{len(names)}")
    return _LAYER_WEIGHT.sub(rename, text)


def test_shared_block_named_after_its_last_user(tmp_path: Path) -> None:
    # Zamba2's shared transformer block is read by layers 1 and 3; export can keep the name of
    # either user. Named after the last one, its use in layer 1 must not pull layer 1 into 3.
    src = DUMPS / "zamba2" / "001_export_export_to_gm.txt"
    text = src.read_text().replace("model_layers_1_shared_transformer", "model_layers_3_shared_transformer")
    assert "model_layers_3_shared_transformer" in text
    path = _copy(src, tmp_path / src.name, text)
    lg = layer_graph(parse_dump(path).select())
    assert _wrong(lg, path) == []


def test_counters_alone_are_refused(tmp_path: Path) -> None:
    src = DUMPS / "ad_dsv3" / "085_compile_compile_model.txt"
    path = _copy(src, tmp_path / src.name, _counters_for_layer_names(src.read_text()))
    with pytest.raises(InputError, match="cannot be ordered from this file alone: convert the "
                                         "dump directory"):
        layer_graph(parse_dump(path).select())


def test_cli_refuses_counters_alone_and_writes_nothing(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    src = DUMPS / "ad_dsv3" / "085_compile_compile_model.txt"
    path = _copy(src, tmp_path / "dump" / src.name, _counters_for_layer_names(src.read_text()))
    code = main(["convert", str(path), "--logdir", str(tmp_path / "logs"), "--run", "r", "-q"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "convert the dump directory" in err[0], err
    assert not (tmp_path / "logs").exists()


def test_history_gives_the_layers_counters_hide(tmp_path: Path) -> None:
    # The same stage inside its dump directory: the export stage names every layer, and the
    # nodes that keep their names carry their layers to the final stage; the nodes the
    # transforms inserted are placed between them.
    d = tmp_path / "ad_dsv3"
    for src in sorted((DUMPS / "ad_dsv3").glob("*.txt")):
        text = src.read_text()
        if src.name.startswith("085_"):
            text = _counters_for_layer_names(text)
        _copy(src, d / src.name, text)
    final = resolve_inputs(d)[-1]
    history = load_history(d, final, Progress(quiet=True))
    assert history is not None and history.source == "001_export_export_to_gm.txt"
    lg = load_stage(final, None, history).lg
    assert _wrong(lg, final.path) == []


def test_history_of_a_single_file_is_none(tmp_path: Path) -> None:
    path = DUMPS / "ad_dsv3" / "085_compile_compile_model.txt"
    assert load_history(path, resolve_inputs(path)[-1], Progress(quiet=True)) is None
    first = resolve_inputs(DUMPS / "ad_dsv3", ["all"])[0]
    assert load_history(DUMPS / "ad_dsv3", first, Progress(quiet=True)) is None
