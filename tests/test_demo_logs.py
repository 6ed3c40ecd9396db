"""demo_logs/ is what tools/make_demo.py makes: regenerate it and compare store contents."""
from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

DEMO = REPO / "demo_logs"
RUNS = {"dsv3_decode", "dsv3_prefill", "dsv3_decode_unfused", "dsv3_tp4", "llama_decode",
        "llama_torch_compile",
        "qwen3_export_model"}


def fingerprint(logdir: Path) -> dict[str, object]:
    """Everything a store holds except where its inputs lay (a scratch dir) and when it was made."""
    out: dict[str, object] = {}
    for store in sorted(logdir.glob("*/plugins/ad_layer/run.sqlite")):
        run = store.parents[2].name
        con = sqlite3.connect(store)
        meta = {k: json.loads(v) for k, v in con.execute("SELECT key, value FROM meta")}
        meta.pop("source_dir")
        for key in ("source", "read_from"):
            if meta.get("trace") and meta["trace"].get(key):
                meta["trace"][key] = Path(meta["trace"][key]).name
        out[run] = {
            "meta": meta,
            "files": sorted(con.execute("SELECT sha256, size, role FROM files").fetchall()),
            **{t: con.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall()
               for t in ("stages", "outside", "layers", "streams", "kernels", "rank_layers")},
            # Where a rank's trace lay is a scratch path: its row without it.
            "ranks": con.execute("SELECT rank, device, replays, kernel_count, gpu_time_us "
                                 "FROM ranks ORDER BY rank").fetchall(),
            "events": len(list((logdir / run).glob("events.out.tfevents.*"))),
        }
        con.close()
    return out


def test_demo_runs_present() -> None:
    runs = {p.parents[2].name for p in DEMO.glob("*/plugins/ad_layer/run.sqlite")}
    assert runs == RUNS
    con = sqlite3.connect(DEMO / "dsv3_decode" / "plugins" / "ad_layer" / "run.sqlite")
    assert con.execute("SELECT COUNT(*) FROM stages").fetchone()[0] >= 4  # every stage
    assert con.execute("SELECT COUNT(*) FROM kernels WHERE node IS NOT NULL").fetchone()[0] > 100


def test_demo_logs_are_current(tmp_path: Path) -> None:
    subprocess.run([sys.executable, str(REPO / "tools" / "make_demo.py"), "--out",
                    str(tmp_path / "demo")], check=True, cwd=REPO, capture_output=True)
    fresh, committed = fingerprint(tmp_path / "demo"), fingerprint(DEMO)
    assert fresh.keys() == committed.keys()
    for run in fresh:
        for part in fresh[run]:
            assert fresh[run][part] == committed[run][part], (
                f"demo_logs/{run} is stale ({part} differs): run `python tools/make_demo.py`")
