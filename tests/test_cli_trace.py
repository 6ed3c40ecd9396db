"""The CLI with traces: convert --trace, extract --trace, kernels, export-trace, and failures."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tb_ad_layer.cli import main
from tb_ad_layer.store.reader import RunStore
from tb_ad_layer.store.writer import store_path
from tests.conftest import DUMPS, REPO

TRUTH = DUMPS / "ad_dsv3" / "085_compile_compile_model.truth.json"


@pytest.fixture(scope="module")
def decode_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("traces")
    subprocess.run([sys.executable, str(REPO / "tools" / "make_traces.py"), "--out", str(out),
                    "--name", "dsv3", "--phase", "decode", "--plan-from", str(TRUTH),
                    "--replays", "20", "--format", "sqlite"], check=True, capture_output=True)
    return out / "dsv3.sqlite"


def test_convert_with_trace(tmp_path: Path, decode_trace: Path, capsys) -> None:
    assert main(["convert", str(DUMPS / "ad_dsv3"), "--logdir", str(tmp_path), "--run", "d",
                 "--stages", "all", "--trace", str(decode_trace), "--phase", "decode"]) == 0
    err = capsys.readouterr().err
    assert "mapped share per layer: 0:" in err
    store = RunStore(store_path(tmp_path, "d"))
    trace = store.meta["trace"]
    assert trace["phase"] == "decode" and trace["replays"] == 20 and trace["mapped_share"] > 0.8
    rows = store.kernels()
    mapped = [r for r in rows if r[11] is not None]
    assert len(mapped) / len(rows) > 0.8
    truth = json.loads(TRUTH.read_text())["nodes"]
    # Kernels land on nodes of the layer the graph says the node is in.
    assert all(truth[r[11]]["layer"] == r[10] for r in mapped)
    doc = store.layer_doc(3, 3)
    assert doc["trace_summary"]["kernel_count"] > 10 and doc["trace_summary"]["num_streams"] >= 1
    timed = [n for n in doc["nodes"] if n["kernels"]]
    assert timed and all(n["time_us"] > 0 for n in timed)
    k = timed[0]["kernels"][0]
    assert k["stats"]["count"] == 20 and k["stats"]["min_us"] <= k["stats"]["median_us"] <= k["stats"]["max_us"]
    assert len(store.streams()) >= 2  # main + aux
    assert store.layers(3)[0]["gpu_time_us"] > 0
    assert store.layers(0)[0]["gpu_time_us"] is None  # the trace maps onto the last stage only


def test_bad_trace_keeps_previous_store(tmp_path: Path, decode_trace: Path, capsys) -> None:
    assert main(["convert", str(DUMPS / "ad_dsv3"), "--logdir", str(tmp_path), "--run", "d",
                 "-q", "--trace", str(decode_trace)]) == 0
    before = store_path(tmp_path, "d").read_bytes()
    bad = tmp_path / "broken.sqlite"
    bad.write_bytes(decode_trace.read_bytes()[:5000])
    assert main(["convert", str(DUMPS / "ad_dsv3"), "--logdir", str(tmp_path), "--run", "d",
                 "-q", "--trace", str(bad)]) == 2
    assert "broken.sqlite" in capsys.readouterr().err
    assert store_path(tmp_path, "d").read_bytes() == before


def test_layer_count_mismatch_writes_nothing(tmp_path: Path, decode_trace: Path, capsys) -> None:
    assert main(["convert", str(DUMPS / "ad_llama"), "--logdir", str(tmp_path), "--run", "x",
                 "-q", "--trace", str(decode_trace)]) == 2
    err = capsys.readouterr().err
    assert "the graph has 3 layers (3 dense)" in err and "same model" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "x").exists()


def test_extract_with_trace(tmp_path: Path, decode_trace: Path) -> None:
    out = tmp_path / "l3.json"
    assert main(["extract", str(DUMPS / "ad_dsv3"), "--layer", "3", "-o", str(out), "-q",
                 "--trace", str(decode_trace)]) == 0
    data = json.loads(out.read_text())
    summary = data["trace_summary"]
    assert {"total_duration_us", "kernel_count", "num_streams"} <= set(summary)
    kernels = [k for n in data["nodes"] for k in n.get("trace_kernels", [])]
    assert len(kernels) >= summary["kernel_count"] * 0.8
    assert all(set(k) >= {"kernel", "duration_us"} for k in kernels)


def test_kernels_command(tmp_path: Path, decode_trace: Path) -> None:
    out = tmp_path / "k.json"
    assert main(["kernels", str(decode_trace), "--dump", str(DUMPS / "ad_dsv3"), "-o", str(out),
                 "-q"]) == 0
    data = json.loads(out.read_text())
    assert [layer["kind"] for layer in data["layers"]] == ["dense", "dense", "moe", "moe", "moe"]
    assert main(["kernels", str(decode_trace), "--dump", str(DUMPS / "ad_dsv3"), "--layer", "9",
                 "-q"]) == 2


def test_export_trace(tmp_path: Path, decode_trace: Path) -> None:
    assert main(["convert", str(DUMPS / "ad_dsv3"), "--logdir", str(tmp_path), "--run", "d",
                 "-q", "--trace", str(decode_trace)]) == 0
    out = tmp_path / "t.json"
    assert main(["export-trace", str(tmp_path / "d"), "--chrome", str(out), "-q"]) == 0
    events = json.loads(out.read_text())["traceEvents"]
    spans = [e for e in events if e["ph"] == "X"]
    assert spans and all(e["dur"] >= 0 and "ts" in e for e in spans)
    assert any(e["ph"] == "M" and e["name"] == "thread_name" for e in events)
    assert main(["export-trace", str(tmp_path / "nope"), "--chrome", str(out), "-q"]) == 2
