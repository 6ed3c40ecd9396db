"""End to end on a generated nsys trace: a synchronisation planted across a GPU idle gap of the
stored replay is stored by ``convert`` and explains the gap in ``report``, and the GPU name the
export records is the one the roofline measures against."""
from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import msgspec
import pytest

from tb_ad_layer.cli import main
from tb_ad_layer.contract.analysis import Report
from tests.conftest import DUMPS, REPO

TRACE = REPO / "tests" / "fixtures" / "traces" / "ad_dsv3_decode_streams.sqlite"


def _convert_and_report(trace: Path, logdir: Path, run: str,
                        capsysbinary: pytest.CaptureFixture[bytes]) -> Report:
    assert main(["convert", str(DUMPS / "ad_dsv3"), "--logdir", str(logdir), "--run", run, "-q",
                 "--trace", str(trace)]) == 0
    capsysbinary.readouterr()
    assert main(["report", str(logdir / run), "--format", "json"]) == 0
    return msgspec.json.decode(capsysbinary.readouterr().out, type=Report)


def test_a_planted_sync_explains_the_gap_it_spans(tmp_path: Path,
                                                  capsysbinary: pytest.CaptureFixture[bytes]
                                                  ) -> None:
    before = _convert_and_report(TRACE, tmp_path, "before", capsysbinary)
    gap = before.host.gaps[0]
    assert gap.cause == "unexplained"
    # The stored replay's zero on the trace's clock, from its graph launch.
    store = sqlite3.connect(tmp_path / "before" / "plugins" / "ad_layer" / "run.sqlite")
    rel, corr = store.execute("SELECT start_ns, correlation FROM host_calls WHERE "
                              "name = 'cudaGraphLaunch' ORDER BY start_ns DESC").fetchone()
    store.close()
    trace = tmp_path / "planted.sqlite"
    shutil.copy(TRACE, trace)
    conn = sqlite3.connect(trace)
    absolute = conn.execute('SELECT "start" FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE '
                            "correlationId = ?", (corr,)).fetchone()[0]
    origin = absolute - rel
    pid = conn.execute("SELECT globalPid FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 1").fetchone()[0]
    start = origin + round(gap.start_us * 1000) - 200
    end = origin + round((gap.start_us + gap.duration_us) * 1000) + 200
    conn.executescript("""
        CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INTEGER, end INTEGER,
            deviceId INTEGER, contextId INTEGER, streamId INTEGER, correlationId INTEGER,
            globalPid INTEGER, syncType INTEGER, eventId INTEGER);
        CREATE TABLE TARGET_INFO_GPU (id INTEGER, name TEXT);
        INSERT INTO TARGET_INFO_GPU VALUES (0, 'NVIDIA H200');""")
    conn.execute("INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES (?, ?, 0, 1, 7, "
                 "999999, ?, 3, NULL)", (start, end, pid))
    conn.commit()
    conn.close()
    after = _convert_and_report(trace, tmp_path, "after", capsysbinary)
    explained = next(g for g in after.host.gaps if g.start_us == gap.start_us)
    assert (explained.cause, explained.call, explained.duration_us) == (
        "sync", "cudaStreamSynchronize", gap.duration_us)
    assert after.host.sync_calls == 1 and after.host.explained_us == gap.duration_us
    assert any(f.kind == "host_gap" and f.time_at_stake_us == gap.duration_us
               for f in after.findings)
    assert after.gpu.name == "NVIDIA H200" and after.gpu.source == "trace"
    assert after.gpu.peak_tbs == 4.8
    # Everything else is the same run.
    assert after.step == before.step and after.layers == before.layers
