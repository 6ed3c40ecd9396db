"""Chrome trace export of a store, and the TensorBoard event file written per run."""
from __future__ import annotations

import json
from pathlib import Path

from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

from tb_ad_layer.cli import main
from tb_ad_layer.convert import convert
from tb_ad_layer.export.chrome import export_chrome_trace
from tb_ad_layer.options import ConvertOptions
from tb_ad_layer.store.events import EVENTS_SUFFIX, write_run_events
from tb_ad_layer.store.reader import RunStore
from tb_ad_layer.store.writer import store_path
from tests.conftest import DUMPS
from tests.plugin.fake_trace import AUX, MAIN, convert_with_trace


def test_chrome_trace_of_a_store(logdir: Path) -> None:
    store = RunStore(store_path(logdir, "traced/decode"))
    doc = json.loads(export_chrome_trace(store))
    assert doc["displayTimeUnit"] == "ns"
    events = doc["traceEvents"]
    kernels = [e for e in events if e["ph"] == "X"]
    rows = store.kernels()
    assert store.meta.trace is not None
    assert len(kernels) == len(rows) == store.meta.trace.kernel_count
    by_node_id = {r.graph_node_id: r for r in rows}  # the fake trace numbers graph nodes by row
    pids = set()
    for e in kernels:
        assert {"name", "cat", "ts", "dur", "pid", "tid", "args"} <= set(e)
        row = by_node_id[e["args"]["graph_node_id"]]
        assert e["ts"] == round(row.start_ns / 1000, 3)
        assert e["dur"] == round((row.end_ns - row.start_ns) / 1000, 3)
        assert e["args"]["layer"] == row.layer and e["args"]["node"] == row.node
        assert e["args"]["graph_id"] == 7 and e["args"]["stream"] in (MAIN, AUX)
        assert e["tid"] == (7 if e["args"]["stream"] == MAIN else 9)
        pids.add(e["pid"])
    meta = [e for e in events if e["ph"] == "M"]
    assert {e["args"]["name"] for e in meta if e["name"] == "process_name"} == {"GPU 0 (pid 100)"}
    assert {(e["pid"], e["tid"]) for e in meta if e["name"] == "thread_name"} == \
        {(p, 7) for p in pids} | {(p, 9) for p in pids}
    assert any(e["args"].get("unmapped_reason") for e in kernels)


def test_export_trace_cli(logdir: Path, tmp_path: Path) -> None:
    out = tmp_path / "t.json"
    assert main(["export-trace", str(logdir / "traced" / "decode"), "--chrome", str(out),
                 "-q"]) == 0
    assert json.loads(out.read_text())["traceEvents"]
    empty = tmp_path / "e.json"
    assert main(["export-trace", str(logdir / "dsv3"), "--chrome", str(empty), "-q"]) == 0
    assert json.loads(empty.read_text()) == {"traceEvents": [], "displayTimeUnit": "ns"}


def read_events(path: Path) -> list:
    return list(EventFileLoader(str(path)).Load())


def our_event_files(run_dir: Path) -> list[Path]:
    return sorted(run_dir.glob(f"events.out.tfevents.*{EVENTS_SUFFIX}"))


def test_convert_writes_no_event_file_unless_asked(tmp_path: Path) -> None:
    # TensorBoard opens on the first tab with data: without event files, that is AD Layers.
    convert(ConvertOptions(DUMPS / "ad_dsv3", tmp_path, run="r"))
    assert not list((tmp_path / "r").glob("events.out.tfevents.*"))


def test_convert_writes_one_event_file_and_replaces_it(tmp_path: Path) -> None:
    convert(ConvertOptions(DUMPS / "ad_dsv3", tmp_path, run="r", stages=("all",), events=True))
    run_dir = tmp_path / "r"
    files = our_event_files(run_dir)
    assert len(files) == 1
    foreign = run_dir / "events.out.tfevents.1.host.1.0"  # someone else's: left alone
    foreign.write_bytes(b"")
    write_run_events(convert_with_trace(DUMPS / "ad_dsv3", tmp_path, "r"))
    again = our_event_files(run_dir)
    assert len(again) == 1 and foreign.exists()
    assert not [p for p in (run_dir / "plugins" / "ad_layer").iterdir()
                if p.name != "run.sqlite"]  # no temporary file left behind
    events = read_events(again[0])
    assert events[0].file_version == "brain.Event:2"
    values = [(e.step, v) for e in events[1:] for v in e.summary.value]
    text = [v for _, v in values if v.tag == "ad_layer/conversion"]
    assert len(text) == 1 and text[0].metadata.plugin_data.plugin_name == "text"
    md = text[0].tensor.string_val[0].decode()
    assert "**tb-ad-layer run `r`**" in md and "fake_decode.nsys.sqlite" in md
    assert "| 0 | `085_compile_compile_model.txt` | compile / compile_model |" in md
    assert "| 2 | mla+moe | mla |" in md
    counts = {s: v.tensor.float_val[0] for s, v in values if v.tag == "ad_layer/node_count"}
    store = RunStore(store_path(tmp_path, "r"))
    layers = store.layers(0)
    assert counts == {row.layer: row.node_count for row in layers}
    gpu = {s: v.tensor.float_val[0] for s, v in values if v.tag == "ad_layer/gpu_time_us"}
    assert set(gpu) == {0, 1, 2, 3, 4} and all(v > 0 for v in gpu.values())
    assert all(v.metadata.plugin_data.plugin_name == "scalars" for _, v in values
               if v.tag != "ad_layer/conversion")


def test_events_without_trace_have_no_gpu_scalars(tmp_path: Path) -> None:
    convert(ConvertOptions(DUMPS / "ad_llama", tmp_path, run="x"))
    path = write_run_events(store_path(tmp_path, "x"))
    assert our_event_files(tmp_path / "x") == [path]
    tags = {v.tag for e in read_events(path)[1:] for v in e.summary.value}
    assert tags == {"ad_layer/conversion", "ad_layer/node_count"}
