"""Damaged values in traces: a one-line error naming the file and what is wrong, or the rows
skipped with a printed count; never a traceback."""
from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tb_ad_layer.cli import main
from tb_ad_layer.trace.ingest import ingest_trace
from tb_ad_layer.trace.torch_profiler import read_torch_profiler
from tests.trace.helpers import FIXTURES


def _event(i: int, **over: Any) -> dict[str, Any]:
    ev: dict[str, Any] = {"ph": "X", "cat": "kernel", "name": f"void gemm_{i % 3}<float>(float*)", "pid": 0,
                          "tid": 7, "ts": 100.0 + 10 * i, "dur": 4.0,
                          "args": {"device": 0, "stream": 7, "correlation": 1000 + i}}
    ev.update(over)
    return ev


def _write(path: Path, events: list[Any]) -> Path:
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    return code, out.out, out.err


@pytest.mark.parametrize("field, value", [
    ("ts", float("nan")), ("ts", float("inf")), ("dur", float("-inf")), ("ts", 1e300), ("ts", -5.0),
    ("ts", 2 ** 70), ("dur", "4"),
])
def test_bad_times_skip_the_event_with_a_count(tmp_path: Path, field: str, value: Any,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    events = [_event(i) for i in range(6)] + [_event(6, **{field: value})]
    # json.dumps writes NaN/Infinity the way Python's json (and some profilers) do.
    path = _write(tmp_path / "t.json", events)
    db = read_torch_profiler(path)
    assert len(db.kernels("1")) == 6
    assert db.skipped == {"GPU event(s) skipped for a bad ts/dur": 1}
    code, out, err = _run(["inspect", str(path), "--json"], capsys)
    assert code == 0 and json.loads(out)["devices"][0]["streams"][0]["kernels"] == 6
    assert f"1 GPU event(s) skipped for a bad ts/dur (first: traceEvents[6].{field}" in err


@pytest.mark.parametrize("key, value", [("device", 2 ** 64), ("stream", -1), ("stream", float("nan")),
                                        ("device", "zero")])
def test_bad_device_or_stream_ids_skip_the_event(tmp_path: Path, key: str, value: Any) -> None:
    bad = _event(6)
    bad["args"][key] = value
    db = read_torch_profiler(_write(tmp_path / "t.json", [_event(i) for i in range(6)] + [bad]))
    assert len(db.kernels("1")) == 6 and db.skipped == {"GPU event(s) skipped for a bad device/stream id": 1}


@pytest.mark.parametrize("key, value", [("correlation", 2 ** 80), ("graph id", float("inf")),
                                        ("graph node id", -3), ("correlation", 1.5)])
def test_bad_descriptive_ids_are_dropped(tmp_path: Path, key: str, value: Any) -> None:
    bad = _event(6)
    bad["args"][key] = value
    db = read_torch_profiler(_write(tmp_path / "t.json", [_event(i) for i in range(6)] + [bad]))
    ks = db.kernels("1")
    assert len(ks) == 7 and db.skipped == {"id(s) ignored for a bad value": 1}
    assert ks[-1].graph_id is None and (key != "correlation" or ks[-1].correlation is None)


def test_json_nested_100000_deep(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"traceEvents": ' + "[" * 100_000 + "]" * 100_000 + "}")
    for command in (["inspect", str(path)], ["kernels", str(path), "-q"]):
        code, _, err = _run(command, capsys)
        assert code == 2 and len(err.strip().splitlines()) == 1
        assert str(path) in err and "nested too deeply" in err


def test_number_beyond_any_integer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "huge.json"
    path.write_text('{"traceEvents": [{"ph": "X", "cat": "kernel", "ts": ' + "9" * 5000 + ', "dur": 1}]}')
    code, _, err = _run(["inspect", str(path)], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and str(path) in err


def test_gzip_of_nan_trace_through_convert_kernels(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = json.loads(gzip.decompress((FIXTURES / "dsv3_decode.pt.trace.json.gz").read_bytes()))
    kernels = [e for e in doc["traceEvents"] if e.get("cat") == "kernel"]
    kernels[0]["dur"] = float("nan")
    kernels[1]["args"]["correlation"] = 2 ** 70
    path = tmp_path / "nan.pt.trace.json.gz"
    path.write_bytes(gzip.compress(json.dumps(doc).encode()))
    code, out, err = _run(["kernels", str(path), "-o", str(tmp_path / "k.json")], capsys)
    assert code == 0 and "skipped for a bad ts/dur" in err and "ignored for a bad value" in err


def _nsys(path: Path, names: list[tuple[int, str]], kernels: list[tuple[Any, ...]]) -> Path:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
    conn.executemany("INSERT INTO StringIds VALUES (?, ?)", names)
    conn.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, streamId, correlationId, "
                 "globalPid, demangledName, shortName, graphId, graphNodeId)")
    conn.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?,?,?,?,?,?,?,?,?,?)", kernels)
    conn.execute(
        "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INT, end INT, globalTid INT, correlationId INT, "
        "nameId INT)"
    )
    conn.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?,?,?,?,?)",
                     [(1, 2, 0, 7, 424242), (3, 4, 0, 8, 77)])  # name ids that point nowhere
    conn.execute("CREATE TABLE NVTX_EVENTS (start INT, end INT, eventType INT, text TEXT, textId INT, "
                 "globalTid INT)")
    conn.execute("INSERT INTO NVTX_EVENTS VALUES (0, 100, 59, NULL, 999, 0)")  # text id pointing nowhere
    conn.commit()
    conn.close()
    return path


def test_nsys_string_ids_pointing_nowhere(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [(i * 10, i * 10 + 5, 0, 7, i, 0, 5 if i % 2 else 31337, 31338, None, None) for i in range(8)]
    path = _nsys(tmp_path / "ids.sqlite", [(5, "void gemm<float>(float*)")], rows)
    code, out, err = _run(["inspect", str(path), "--json"], capsys)
    assert code == 0 and json.loads(out)["devices"][0]["streams"][0]["kernels"] == 8
    code, out, err = _run(["kernels", str(path), "-q"], capsys)
    assert code == 2 and "no layer structure" in err  # read fine; it just holds no layers
    result = ingest_trace(path, None)
    assert {k.name for k in result.kernels} == {"void gemm<float>(float*)", "<unknown kernel name #31337>"}
    assert any("1 kernel name id(s) point nowhere in StringIds (31337)" in w for w in result.warnings)


def test_nsys_out_of_range_values(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [(i * 10, i * 10 + 5, 0, 7, i, 0, 5, 5, None, None) for i in range(6)]
    rows += [(float("nan"), 5, 0, 7, 50, 0, 5, 5, None, None), (1e40, 2e40, 0, 7, 51, 0, 5, 5, None, None),
             (5, 9, 0, 7, 1e30, 2 ** 63 - 1, 5, 5, 1e30, "x")]
    path = _nsys(tmp_path / "range.sqlite", [(5, "void gemm<float>(float*)")], rows)
    code, out, err = _run(["inspect", str(path), "--json"], capsys)
    assert code == 0
    assert json.loads(out)["devices"][0]["streams"][0]["kernels"] == 6
    assert "skipped 2 kernel row(s)" in err and "1 kernel row(s) with correlation or graph ids" in err
