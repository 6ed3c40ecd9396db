"""nsys SQLite exports of several schema versions, opened as a TraceDB."""
from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

from tb_ad_layer.trace.activity import graphs, stream_counts
from tb_ad_layer.trace.kernel import KIND_MEMCPY, KIND_MEMSET
from tb_ad_layer.trace.nsys_sqlite import read_nsys_sqlite
from tests.trace.helpers import FIXTURES


def test_schema_325_graph_ids_names_meta() -> None:
    db = read_nsys_sqlite(FIXTURES / "dsv3_decode.sqlite")
    assert db.schema_version == "3.25.0" and db.graph_trace_mode == "Node"
    everything = db.kernels("1")
    kinds = Counter(k.kind for k in everything)
    assert kinds[KIND_MEMCPY] == 24 and kinds[KIND_MEMSET] == 36  # 2 copies per step, 1 memset per MoE layer
    assert {k.graph_id for k in everything} == {None, 7, 9}
    assert len({k.graph_node_id for k in everything if k.graph_id == 7}) == 178  # kernels of the big graph
    memset_nodes = {k.graph_node_id for k in everything if k.kind == KIND_MEMSET}
    assert len(memset_nodes) == 3 and None not in memset_nodes  # graph memset nodes keep their node ids
    # Graph kernels of one launch share the cudaGraphLaunch correlation id.
    launches = db.graph_launch_correlations()
    assert len(launches) == 24
    assert {k.correlation for k in everything if k.graph_id is not None} <= launches
    k = next(k for k in everything if k.graph_id == 7)
    assert k.stream_key == "pid31337/dev0/ctx1/s7" and k.pid == 31337
    assert k.launch_ns is not None and k.launch_ns < k.start_ns  # the cudaGraphLaunch call
    assert any("&tensorrt_llm::kernels::silu<float>" in k.name for k in everything)
    assert [(g.graph_id, g.nodes, len(g.launches)) for g in graphs(db)] == [(7, 178, 12), (9, 2, 12)]


def test_old_schema_zero_graph_ids_two_processes() -> None:
    db = read_nsys_sqlite(FIXTURES / "dsv3_decode_2gpu_2021.sqlite")
    assert db.schema_version == "2.7.0"
    everything = db.kernels("1")
    assert 0 not in {k.graph_id for k in everything} and 0 not in {k.graph_node_id for k in everything}
    assert {(sc.stream.pid, sc.stream.device) for sc in stream_counts(db)} == {(31337, 0), (31338, 1)}
    per_device = Counter(k.device for k in everything)
    assert per_device[0] == per_device[1]


def test_inline_text_names() -> None:
    db = read_nsys_sqlite(FIXTURES / "dsv3_decode_inline.sqlite")
    shorts = {k.short for k in db.kernels("1")}
    assert "deepseek_v3_topk_kernel" in shorts and "rms_norm_reduce_fusion_kernel" in shorts


def test_missing_optional_tables_and_columns(tmp_path: Path) -> None:
    # A minimal export: no runtime, NVTX, memcpy, META tables; no graph or correlation columns.
    path = tmp_path / "minimal.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
    conn.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INT, end INT, deviceId INT, streamId INT, "
                 "demangledName INT)")
    conn.executemany("INSERT INTO StringIds VALUES (?, ?)", [(1, "void k<int>(int)"), (2, "other")])
    conn.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, 0, 7, ?)",
                     [(i * 10, i * 10 + 5, 1 + i % 2) for i in range(10)])
    conn.commit()
    conn.close()
    db = read_nsys_sqlite(path)
    ks = db.kernels("1")
    assert len(ks) == 10 and db.schema_version is None and db.graph_trace_mode is None
    assert {k.short for k in ks} == {"k", "other"}
    assert ks[0].stream_key == "pid0/dev0/ctx0/s7"
    assert db.ranges() == [] and not db.runtime_names
    assert {k.correlation for k in ks} == {None} and {k.launch_ns for k in ks} == {None}


def test_nvtx_text_from_string_ids() -> None:
    db = read_nsys_sqlite(FIXTURES / "dsv3_prefill.sqlite")
    texts = Counter(r.text for r in db.ranges())
    assert texts["forward step 0"] == 1 and texts["prepare_inputs"] == 3


def _export(path: Path, ddl: str, rows: list[tuple]) -> Path:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
    conn.executemany("INSERT INTO StringIds VALUES (?, ?)", [(1, "void gemm<float>(float*)"), (2, "gemm")])
    conn.execute(ddl)
    conn.executemany(f"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES ({','.join('?' * len(rows[0]))})", rows)
    conn.commit()
    conn.close()
    return path


def test_table_without_rowid(tmp_path: Path) -> None:
    ddl = (
        "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INT, end INT, deviceId INT, streamId INT, "
        "correlationId INT, globalPid INT, demangledName INT, shortName INT, PRIMARY KEY (start, streamId)) "
        "WITHOUT ROWID"
    )
    rows = [(i * 10, i * 10 + 4, 0, 7, i, 5 << 24, 1, 2) for i in range(50)]
    db = read_nsys_sqlite(_export(tmp_path / "norowid.sqlite", ddl, rows))
    ks = db.kernels("1")
    assert len(ks) == 50 and ks[0].short == "gemm"
    assert sorted(k.correlation for k in ks) == list(range(50)) and ks[0].pid == 5


_LOOSE = (
    "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, streamId, correlationId, globalPid, "
    "demangledName, shortName, graphId, graphNodeId)"
)


def test_rows_with_bad_times_or_ids_are_skipped_and_counted(tmp_path: Path) -> None:
    good = [(i * 10, i * 10 + 4, 0, 7, i, 0, 1, 2, None, None) for i in range(5)]
    bad = [(1, "soon", 0, 7, 90, 0, 1, 2, None, None),          # text where a time belongs
           (float("inf"), 5, 0, 7, 91, 0, 1, 2, None, None),    # Infinity (SQLite stores it as REAL)
           (1.5e30, 2e30, 0, 7, 92, 0, 1, 2, None, None),       # beyond 64 bits: a REAL
           (-5, 3, 0, 7, 93, 0, 1, 2, None, None),              # negative time
           (10, 20, None, 7, 94, 0, 1, 2, None, None),          # no device
           (10, 20, 0, "s7", 95, 0, 1, 2, None, None)]          # stream id as text
    path = _export(tmp_path / "bad.sqlite", _LOOSE, good + bad)
    db = read_nsys_sqlite(path)
    assert [k.correlation for k in db.kernels("1")] == [0, 1, 2, 3, 4]
    assert sum(sc.kernels for sc in stream_counts(db)) == 5
    assert db.skipped == {"kernels": 6}
    assert any("skipped 6 kernel row(s)" in w for w in db.warnings)


def test_bad_ids_become_missing(tmp_path: Path) -> None:
    rows = [(0, 4, 0, 7, "x", 0, 1, 2, 1.5, "node"),      # correlation, graph ids of the wrong type
            (10, 14, 0, 7, 3, 0, 99, 77, -4, 2 ** 62),     # name ids pointing nowhere, negative graph id
            (20, 24, 0, 7, 4, 0, None, None, None, None)]  # no name at all
    db = read_nsys_sqlite(_export(tmp_path / "ids.sqlite", _LOOSE, rows))
    ks = db.kernels("1")
    assert [(k.correlation, k.graph_id, k.graph_node_id) for k in ks] == [(None, None, None), (3, None, None),
                                                                       (4, None, None)]
    assert ks[1].name == "<unknown kernel name #99>" and ks[2].name == "<unnamed kernel>"
