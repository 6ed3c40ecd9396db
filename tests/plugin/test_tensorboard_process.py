"""A real ``tensorboard`` process over a generated logdir: the plugin is found through its entry
point, listed with our module path, and every endpoint answers, also under ``--path_prefix``,
with the legacy loader and ``--bind_all``."""
from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.tensorboard_process import http_get, running_tensorboard

BASE = "/data/plugin/ad_layer"


def fetch(port: int, path: str, timeout: float = 20.0) -> tuple[int, bytes]:
    status, body, _ = http_get(port, path, timeout)
    return status, body


@contextmanager
def tensorboard(logdir: Path, tmp_path: Path, *flags: str, prefix: str = "") -> Iterator[int]:
    """Start TensorBoard, wait until it answers, yield its port; always stop it."""
    with running_tensorboard(logdir, tmp_path, *flags, prefix=prefix) as tb:
        yield tb.port


def poll_json(port: int, path: str, ok: Any, deadline_s: float = 60.0) -> Any:
    """GET ``path`` until ``ok(body)`` holds (TensorBoard loads event files in the background)."""
    deadline = time.monotonic() + deadline_s
    while True:
        status, body = fetch(port, path)
        data = json.loads(body) if status == 200 else None
        if data is not None and ok(data):
            return data
        if time.monotonic() > deadline:
            raise AssertionError(f"{path}: {status} {body[:300]!r}")
        time.sleep(0.5)


@pytest.mark.parametrize("flags, prefix", [
    ((), ""),
    ((), "/tb"),  # running_tensorboard adds --path_prefix
    (("--load_fast=false", "--bind_all"), ""),
], ids=["default", "path_prefix", "legacy_loader_bind_all"])
def test_real_tensorboard_serves_the_plugin(logdir: Path, tmp_path: Path, flags: tuple[str, ...],
                                            prefix: str) -> None:
    with tensorboard(logdir, tmp_path, *flags, prefix=prefix) as port:
        listing = json.loads(fetch(port, f"{prefix}/data/plugins_listing")[1])
        entry = listing["ad_layer"]
        assert entry["enabled"] is True and entry["tab_name"] == "AD Layers"
        assert entry["loading_mechanism"] == {"type": "IFRAME",
                                              "module_path": f"{prefix}{BASE}/index.js"}
        status, js = fetch(port, f"{prefix}{BASE}/index.js")
        assert status == 200 and b"render" in js
        run = quote("traced/decode", safe="")
        for url in ["api/runs", f"api/layer?run={run}&layer=3", "api/layer?run=dsv3&stage=0&layer=1",
                    "api/overview?run=dsv3", "api/stages?run=dsv3&layer=2",
                    f"api/timeline?run={run}&layer=3", f"api/timeline?run={run}&max_items=10",
                    f"api/compare?a_run={run}&a_layer=2&b_run=traced/faster&b_layer=4",
                    "api/download/layer.json?run=dsv3&layer=3",
                    "api/download/layer.dot?run=dsv3&layer=3",
                    f"api/download/trace.json?run={run}"]:
            status, body = fetch(port, f"{prefix}{BASE}/{url}")
            assert status == 200, (url, body[:300])
        status, body = fetch(port, f"{prefix}{BASE}/api/layer?run=..%2Fdsv3&layer=1")
        assert status == 404 and json.loads(body)["known"][0] == "dsv3"
        runs = json.loads(fetch(port, f"{prefix}{BASE}/api/runs")[1])["runs"]
        assert [r["run"] for r in runs] == ["dsv3", "llama", "traced/decode", "traced/faster"]
        # Without event files (convert writes them only with --events), no tab before ours has
        # data: TensorBoard, which opens the first enabled tab, opens AD Layers.
        assert not list(logdir.rglob("events.out.tfevents.*"))
        enabled = [name for name, e in listing.items() if e["enabled"]]
        assert enabled[0] == "ad_layer", enabled


def test_real_tensorboard_without_runs_lists_the_plugin_inactive(tmp_path: Path) -> None:
    empty = tmp_path / "logs"
    (empty / "other_run" / "plugins" / "profile").mkdir(parents=True)
    with tensorboard(empty, tmp_path) as port:
        listing = json.loads(fetch(port, "/data/plugins_listing")[1])
        assert listing["ad_layer"]["enabled"] is False
        assert json.loads(fetch(port, f"{BASE}/api/runs")[1]) == {"runs": []}
