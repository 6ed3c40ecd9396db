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
from tests.plugin.conftest import call

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
    trace = store.meta.trace
    assert trace is not None and trace.phase == "decode" and trace.replays == 20
    assert trace.mapped_share is not None and trace.mapped_share > 0.8
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
    stats = k["stats"]
    assert stats["count"] == 20 and stats["min_us"] <= stats["median_us"] <= stats["max_us"]
    assert len(store.streams()) >= 2  # main + aux
    assert (store.layers(3)[0].gpu_time_us or 0) > 0
    assert store.layers(0)[0].gpu_time_us is None  # the trace maps onto the last stage only


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
    assert "the graph has 3 layers (3 attention+mlp)" in err and "same model" in err
    assert len(err.splitlines()) == 1
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
    assert [layer["kind"] for layer in data["layers"]] == ["mla+mlp", "mla+mlp", "mla+moe", "mla+moe",
                                                           "mla+moe"]
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


@pytest.fixture(scope="module")
def per_layer_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("streams")
    subprocess.run([sys.executable, str(REPO / "tools" / "make_traces.py"), "--out", str(out),
                    "--name", "dsv3", "--plan-from", str(TRUTH), "--replays", "8",
                    "--layout", "per-layer", "--reshuffle-streams", "--format", "sqlite"],
                   check=True, capture_output=True)
    return out / "dsv3.sqlite"


def test_convert_per_layer_streams_and_outside_time(tmp_path: Path, per_layer_trace: Path, capsys) -> None:
    from tb_ad_layer.plugin.data import PluginData

    assert main(["convert", str(DUMPS / "ad_dsv3"), "--logdir", str(tmp_path), "--run", "d",
                 "--trace", str(per_layer_trace)]) == 0
    err = capsys.readouterr().err
    assert "split into 5 layers by graph-alignment" in err
    assert "device 0 stream 7:" in err and "outside layers:" in err
    store = RunStore(store_path(tmp_path, "d"))
    trace = store.meta.trace
    assert trace is not None and trace.outside_summary is not None
    assert trace.mapped_share == 1.0 and trace.layers_found == 5 and trace.segmentation == "graph-alignment"
    assert trace.outside_time_us and trace.outside_time_us > 0 and trace.outside_mapped_share == 1.0
    assert trace.outside_summary.kernel_count == trace.outside_kernel_count
    truth = json.loads(TRUTH.read_text())["nodes"]
    rows = store.kernels()
    assert all(truth[r.node]["layer"] == r.layer for r in rows if r.node is not None)
    # Model-level kernels (embedding, final norm, lm head, gather) sit on the nodes outside layers.
    outside = store.nodes(0, -1)
    timed = {n["id"]: n["time_us"] for n in outside if n["kernels"]}
    # (the final norm is fused with the last layer's residual add: that node is the last layer's)
    assert set(timed) == {"embedding", "torch_linear_simple_default_3",
                          "trtllm_dist_all_gather_default"}
    assert all(t > 0 for t in timed.values())
    assert sum(timed.values()) == pytest.approx(trace.outside_time_us, rel=0.05)
    overview = call(PluginData(tmp_path), "overview", run="d")
    assert overview["outside_gpu_time_us"] == trace.outside_time_us


def test_inspect_command(per_layer_trace: Path, capsys) -> None:
    assert main(["inspect", str(per_layer_trace)]) == 0
    out = capsys.readouterr().out
    assert "graph 7: 154 nodes, 8 launches of 154 kernels" in out
    assert "convert would pick: decode replay" in out and "stream 7 (pid 31337, context 1)" in out
    assert main(["inspect", str(per_layer_trace), "--json", "--graph-id", "9"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["pick"]["graph_id"] == 9 and doc["capture_mode"] == "node"
    streams = {s["stream"] for d in doc["devices"] for s in d["streams"]}
    assert len(streams) > 8  # every layer on its own streams
    assert main(["inspect", str(per_layer_trace), "--step", "3"]) == 0
    assert "profiler step 3 is not in the trace" in capsys.readouterr().out


def test_kernels_without_dump_infers_and_says_how_sure(tmp_path: Path, per_layer_trace: Path, capsys) -> None:
    out = tmp_path / "k.json"
    assert main(["kernels", str(per_layer_trace), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    data = json.loads(out.read_text())
    seg = data["segmentation"]
    assert data["num_layers"] == 5 and seg["method"] == "repetition" and seg["inferred"] is True
    assert f"5 layers by repetition, confidence {seg['confidence']:.2f}" in err
    layer = data["layers"][2]
    assert set(layer) >= {"layer", "kernel_count", "kernels"} and layer["layer"] == 2
    assert set(layer["kernels"][0]) >= {"name", "duration_us", "stream", "start_us", "kind"}
    assert layer["kernel_count"] == sum(1 for k in layer["kernels"] if k["kind"] == "kernel")
