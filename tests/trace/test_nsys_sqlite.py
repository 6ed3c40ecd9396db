"""nsys SQLite exports of several schema versions."""
from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from tb_ad_layer.errors import InputError
from tb_ad_layer.trace.kernel import KIND_MEMCPY, KIND_MEMSET
from tb_ad_layer.trace.nsys_sqlite import read_nsys_sqlite
from tests.trace.helpers import FIXTURES


def test_schema_325_graph_ids_names_meta() -> None:
    messages: list[str] = []
    td = read_nsys_sqlite(FIXTURES / "dsv3_decode.sqlite", messages.append)
    assert td.schema_version == "3.25.0" and td.graph_trace_mode == "Node"
    assert any("kernel rows" in m and "rows/s" in m for m in messages)
    kinds = Counter(td.names[n].kind for n in td.name)
    assert kinds[KIND_MEMCPY] == 24 and kinds[KIND_MEMSET] == 36  # 2 copies per step, 1 memset per MoE layer
    assert set(td.graph_id) == {-1, 7, 9}
    assert len({n for g, n in zip(td.graph_id, td.graph_node_id) if g == 7}) == 178  # kernels of the big graph
    memset_nodes = {n for n, nm in zip(td.graph_node_id, td.name) if td.names[nm].kind == KIND_MEMSET}
    assert len(memset_nodes) == 3 and -1 not in memset_nodes  # graph memset nodes keep their node ids
    # Graph kernels of one launch share the cudaGraphLaunch correlation id.
    assert len(td.graph_launch_correlations) == 24
    assert {c for c, g in zip(td.correlation, td.graph_id) if g != -1} <= td.graph_launch_correlations
    k = td.kernel(next(i for i, g in enumerate(td.graph_id) if g == 7))
    assert k.stream_key == "pid31337/dev0/ctx1/s7" and k.pid == 31337
    assert any("&tensorrt_llm::kernels::silu<float>" in n.full for n in td.names)
    assert td.launch_times is not None and len(td.launch_times.correlation) > 0


def test_old_schema_zero_graph_ids_two_processes() -> None:
    td = read_nsys_sqlite(FIXTURES / "dsv3_decode_2gpu_2021.sqlite")
    assert td.schema_version == "2.7.0"
    assert 0 not in set(td.graph_id) and 0 not in set(td.graph_node_id)  # 0 normalised to None
    assert {(s.pid, s.device) for s in td.streams} == {(31337, 0), (31338, 1)}
    per_device = Counter(td.streams[s].device for s in td.stream)
    assert per_device[0] == per_device[1]


def test_inline_text_names() -> None:
    td = read_nsys_sqlite(FIXTURES / "dsv3_decode_inline.sqlite")
    shorts = {n.short for n in td.names}
    assert "deepseek_v3_topk_kernel" in shorts and "rms_norm_reduce_fusion_kernel" in shorts
    assert not any(n.kind != "kernel" for n in td.names)


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
    td = read_nsys_sqlite(path)
    assert len(td) == 10 and td.schema_version is None and td.graph_trace_mode is None
    assert {n.short for n in td.names} == {"k", "other"}
    assert td.streams[0].key == "pid0/dev0/ctx0/s7"
    assert td.nvtx == [] and td.launch_times is not None and len(td.launch_times.correlation) == 0
    assert set(td.correlation) == {-1}


def test_nvtx_text_from_string_ids() -> None:
    td = read_nsys_sqlite(FIXTURES / "dsv3_prefill.sqlite")
    texts = Counter(r.text for r in td.nvtx)
    assert texts["forward step 0"] == 1 and texts["prepare_inputs"] == 3


def _export(path: Path, ddl: str, rows: list[tuple]) -> Path:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
    conn.executemany("INSERT INTO StringIds VALUES (?, ?)", [(1, "void gemm<float>(float*)"), (2, "gemm")])
    conn.execute(ddl)
    conn.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
    conn.commit()
    conn.close()
    return path


def test_table_without_rowid_uses_row_reads(tmp_path: Path) -> None:
    ddl = ("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INT, end INT, deviceId INT, streamId INT, "
           "correlationId INT, globalPid INT, demangledName INT, shortName INT, PRIMARY KEY (start, streamId)) "
           "WITHOUT ROWID")
    rows = [(i * 10, i * 10 + 4, 0, 7, i, 5 << 24, 1, 2) for i in range(50)]
    td = read_nsys_sqlite(_export(tmp_path / "norowid.sqlite", ddl, rows))
    assert len(td) == 50 and td.names[td.name[0]].short == "gemm"
    assert sorted(td.correlation) == list(range(50)) and td.streams[0].pid == 5


def test_wrong_value_types_are_input_errors(tmp_path: Path) -> None:
    ddl = ("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, streamId, correlationId, globalPid, "
           "demangledName INT, shortName INT)")
    path = _export(tmp_path / "bad.sqlite", ddl, [(1, "soon", 0, 7, 1, 0, 1, 2)])
    with pytest.raises(InputError, match="corrupt"):
        read_nsys_sqlite(path)
