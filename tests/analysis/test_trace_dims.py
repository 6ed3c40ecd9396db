"""Symbolic sizes from the trace's own shapes, end to end: the Qwen3-Next export (``s44 x s70``
activations) converted with its generated eager prefill trace, into which the ops that launched
two linears' kernels are written as a profiler records them with ``record_shapes=True`` (a
``cpu_op`` with ``Input Dims`` around the launch call) or as ``emit_nvtx(record_shapes=True)``
names them in Nsight Systems (``aten::linear, seq = N, op_id = M, sizes = [[...], ...]``).

``linear`` (layer 0) reads ``type_as : s44xs70x64`` with a 192x64 weight: recorded as
[[2, 7, 64], [192, 64], []] it binds s44 = 2 and s70 = 7, and its FLOPs are 2*M*N*K =
2*(2*7)*192*64 = 344,064."""
from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import msgspec
import pytest

from tb_ad_layer.cli import main
from tb_ad_layer.contract.analysis import NodeRoofline, Report
from tests.conftest import DUMPS, REPO

FIXTURES = REPO / "tests" / "fixtures" / "traces"
PROFILER = FIXTURES / "qwen3_next_prefill_modules.pt.trace.json.gz"
NSYS = FIXTURES / "qwen3_next_prefill_modules.sqlite"
TRUTH = FIXTURES / "qwen3_next_prefill_modules.truth.json"
LINEAR = (0, "linear", [[2, 7, 64], [192, 64], []])          # binds s44=2, s70=7
LINEAR_FLOPS = 2 * (2 * 7) * 192 * 64
# layer 1's k projection: type_as_2 : s44xs70x64 by a 32x64 weight, recorded with s70 = 9
K_PROJ_9 = (1, "linear_9", [[2, 9, 64], [32, 64], []])


def _launches(ops: list[tuple[int, str, list[list[int]]]]) -> dict[int, list[list[int]]]:
    """Correlation id of every kernel of the named nodes (every pass) -> the dims to record."""
    truth = json.loads(TRUTH.read_text())
    want = {(layer, node): dims for layer, node, dims in ops}
    return {k["correlation"]: want[(k["layer"], k["node"])] for k in truth["kernels"]
            if (k["layer"], k["node"]) in want}


def profiler_trace(out: Path, ops: list[tuple[int, str, list[list[int]]]]) -> Path:
    """The generated profiler trace with an ``aten::linear`` cpu_op around each launch call of
    ``ops``' kernels, as Kineto writes it (External id shared with the launch)."""
    doc = json.loads(gzip.decompress(PROFILER.read_bytes()))
    launches = _launches(ops)
    added: list[dict[str, Any]] = []
    for ev in doc["traceEvents"]:
        dims = launches.get(ev.get("args", {}).get("correlation")) \
            if ev.get("cat") == "cuda_runtime" else None
        if dims is not None:
            added.append({"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": ev["pid"],
                          "tid": ev["tid"], "ts": round(ev["ts"] - 1, 3),
                          "dur": round(ev["dur"] + 2, 3),
                          "args": {"External id": ev["args"]["External id"], "Input Dims": dims,
                                   "Input type": ["c10::BFloat16" if d else "" for d in dims],
                                   "Concrete Inputs": ["" if d else "None" for d in dims]}})
    assert added
    doc["traceEvents"] += added
    out.write_bytes(gzip.compress(json.dumps(doc).encode()))
    return out


def nsys_trace(out: Path, ops: list[tuple[int, str, list[list[int]]]]) -> Path:
    """The generated nsys export with an ``emit_nvtx`` range of ``aten::linear`` and its sizes
    around each launch call of ``ops``' kernels."""
    shutil.copy(NSYS, out)
    launches = _launches(ops)
    conn = sqlite3.connect(out)
    rows = conn.execute('SELECT "start", "end", globalTid, correlationId FROM '
                        "CUPTI_ACTIVITY_KIND_RUNTIME").fetchall()
    added = [(s - 1000, e + 1000, 59, f"aten::linear, seq = {i}, op_id = {c}, sizes = "
              f"{json.dumps(launches[c])}, input_op_ids = [(0, 0), (0, 0)]", tid)
             for i, (s, e, tid, c) in enumerate(rows) if c in launches]
    assert added
    conn.executemany('INSERT INTO NVTX_EVENTS ("start", "end", eventType, text, globalTid) '
                     "VALUES (?, ?, ?, ?, ?)", added)
    conn.commit()
    conn.close()
    return out


def convert_and_report(trace: Path, logdir: Path, capsysbinary: pytest.CaptureFixture[bytes],
                       *extra: str) -> Report:
    assert main(["convert", str(DUMPS / "qwen3_next"), "--logdir", str(logdir), "--run", "q",
                 "-q", "--trace", str(trace)]) == 0
    capsysbinary.readouterr()
    assert main(["report", str(logdir / "q"), "--format", "json", *extra]) == 0
    return msgspec.json.decode(capsysbinary.readouterr().out, type=Report)


def node(r: Report, layer: int, name: str) -> NodeRoofline:
    return next(x for x in r.roofline if x.layer == layer and x.node == name)


def test_a_recorded_linear_binds_its_sizes_and_gives_the_flops(
        tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    r = convert_and_report(profiler_trace(tmp_path / "t.json.gz", [LINEAR]), tmp_path,
                           capsysbinary)
    where = "aten::linear at linear (layer 0)"
    assert [(d.symbol, d.value, d.source) for d in r.trace_dims or []] == [
        ("s44", 2, where), ("s70", 7, where)]
    lin = node(r, 0, "linear")
    assert lin.flops == LINEAR_FLOPS and lin.reason is None
    assert lin.formula == "gemm 2*M*N*K, M=14 N=192 K=64"
    assert [(s.symbol, s.value, s.source, s.detail) for s in lin.sizes] == [
        ("s44", 2, "trace", where), ("s70", 7, "trace", where)]
    # The sizes are the stage's: layer 1's gate projection (type_as_5 : s44xs70x64 by a 128x64
    # weight), whose op the trace did not record with shapes, is counted with them too.
    gate = node(r, 1, "linear_12")
    assert gate.flops == 2 * (2 * 7) * 128 * 64
    assert [s.source for s in gate.sizes] == ["trace", "trace"]
    # --dim takes precedence over the trace: M = 2*5.
    given = convert_and_report(profiler_trace(tmp_path / "t2.json.gz", [LINEAR]),
                               tmp_path / "b", capsysbinary, "--dim", "s70=5")
    lin = node(given, 0, "linear")
    assert lin.flops == 2 * (2 * 5) * 192 * 64
    assert [(s.symbol, s.value, s.source) for s in lin.sizes] == [("s44", 2, "trace"),
                                                                   ("s70", 5, "dim")]


def test_emit_nvtx_sizes_in_an_nsys_trace_bind_the_same(
        tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    r = convert_and_report(nsys_trace(tmp_path / "t.sqlite", [LINEAR]), tmp_path, capsysbinary)
    assert [(d.symbol, d.value) for d in r.trace_dims or []] == [("s44", 2), ("s70", 7)]
    assert node(r, 0, "linear").flops == LINEAR_FLOPS


def test_a_symbol_recorded_with_two_values_is_kept_by_neither(
        tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    r = convert_and_report(profiler_trace(tmp_path / "t.json.gz", [LINEAR, K_PROJ_9]), tmp_path,
                           capsysbinary)
    dims = {d.symbol: d for d in r.trace_dims or []}
    assert dims["s44"].value == 2
    assert dims["s70"].value is None
    assert dims["s70"].source == ("the trace records s70 as 7 (aten::linear at linear (layer 0)); "
                                  "9 (aten::linear at linear_9 (layer 1))")
    lin = node(r, 0, "linear")
    assert lin.flops is None and lin.bytes is None
    assert lin.reason == ("symbolic size s70 (the trace records s70 as 7 (aten::linear at linear "
                          "(layer 0)); 9 (aten::linear at linear_9 (layer 1)), so it is left "
                          "unbound): pass --dim s70=N")
    assert [(s.symbol, s.source) for s in lin.sizes] == [("s44", "trace"), ("s70", "unknown")]


def test_a_trace_without_shapes_says_so(tmp_path: Path,
                                        capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    r = convert_and_report(PROFILER, tmp_path, capsysbinary)
    assert r.trace_dims is None
    lin = node(r, 0, "linear")
    assert lin.flops is None
    assert lin.reason == ("symbolic sizes s44, s70 (the trace records no input shapes (profile "
                          "with record_shapes=True)): pass --dim s44=N --dim s70=N")
    assert [(s.symbol, s.value, s.source) for s in lin.sizes] == [("s44", None, "unknown"),
                                                                  ("s70", None, "unknown")]
