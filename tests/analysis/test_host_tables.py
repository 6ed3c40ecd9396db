"""What the converter stores for the analysis: p90/p99 per kernel from every replay, and the host
tables of real traces (nsys runtime, synchronisation and copy rows; profiler runtime events,
copies and device properties), absent where a trace lacks them."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import msgspec
import pytest

from tb_ad_layer.cli import main
from tb_ad_layer.contract.analysis import Report
from tb_ad_layer.options import TraceChoice
from tb_ad_layer.store.writer import store_path
from tb_ad_layer.trace.ingest import ingest_trace
from tests.conftest import DUMPS, REPO, SHARED_TRACES

TRACES = REPO / "tests" / "fixtures" / "traces"

def test_convert_stores_tails_and_host_rows_and_report_reads_them(
        tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    assert main(["convert", str(DUMPS / "ad_dsv3"), "--logdir", str(tmp_path), "--run", "d", "-q",
                 "--trace", str(TRACES / "ad_dsv3_decode_streams.sqlite")]) == 0
    conn = sqlite3.connect(store_path(tmp_path, "d"))
    try:
        rows = conn.execute("SELECT count, median_ns, p90_ns, p99_ns, max_ns FROM kernels "
                            "WHERE count IS NOT NULL").fetchall()
        assert rows and all(c == 6 and m <= p90 <= p99 <= mx for c, m, p90, p99, mx in rows)
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert {"host_calls", "memcpy"} <= tables and "gpus" not in tables  # no TARGET_INFO_GPU
        names = {r[0] for r in conn.execute("SELECT name FROM host_calls")}
        assert "cudaGraphLaunch" in names
    finally:
        conn.close()
    capsysbinary.readouterr()
    assert main(["report", str(tmp_path / "d"), "--format", "json"]) == 0
    r = msgspec.json.decode(capsysbinary.readouterr().out, type=Report)
    assert r.step.replays == 6 and len(r.layers) == 5 and r.host.runtime_recorded
    assert r.host.graph_launches and r.gpu.name is None
    assert abs(sum(b.gpu_time_us for b in r.layers) + (r.outside.gpu_time_us if r.outside else 0)
               - r.step.gpu_time_us) < 0.01
    assert sum(g.gpu_time_us for g in r.layers[2].groups) == pytest.approx(
        r.layers[2].gpu_time_us, abs=0.01)


def test_nsys_runtime_sync_and_copy_rows_of_a_real_trace() -> None:
    host = ingest_trace(SHARED_TRACES / "h100_2gpu_1s.sqlite", None, choice=TraceChoice(device=0)).host
    assert host is not None and host.calls is not None and host.copies is not None
    names = {c[4] for c in host.calls}
    assert {"cudaLaunchKernel", "cudaMemcpyAsync"} <= names  # the _v7000 suffix dropped
    assert any(c[5] == "sync" for c in host.calls)
    kinds = {(c[4], c[6], c[7]) for c in host.copies}
    assert ("HtoD", "Pageable", "Device") in kinds or ("HtoD", "Pinned", "Device") in kinds
    assert all(isinstance(c[5], int) and c[5] > 0 for c in host.copies)
    assert host.gpus == {}  # this export has no TARGET_INFO_GPU


def test_nsys_gpu_name_from_target_info() -> None:
    host = ingest_trace(SHARED_TRACES / "nsight-2025.5.2.sqlite", None).host
    assert host is not None and host.gpus == {0: "NVIDIA GeForce RTX 3060"}


@pytest.mark.parametrize(("name", "gpu", "copy"), [
    ("h100_qwen1.5_0.5b_hf_eager.trace.json.gz", "NVIDIA H100 80GB HBM3",
     ("DtoH", 1, "Device", "Pinned")),
    ("b300_r1_distill_sglang_decode.trace.json.gz", "NVIDIA B300 SXM6 AC",
     ("DtoD", 128, "Device", "Device")),  # the one copy inside the stored replay
])
def test_profiler_runtime_events_copies_and_device_name(name: str, gpu: str,
                                                        copy: tuple[str, int, str, str]) -> None:
    host = ingest_trace(SHARED_TRACES / name, None).host
    assert host is not None and host.gpus == {0: gpu}
    assert host.calls and any(c[4].startswith("cudaLaunchKernel") for c in host.calls)
    assert host.copies and copy in {(c[4], c[5], c[6], c[7]) for c in host.copies}
