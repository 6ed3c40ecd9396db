"""Run discovery: runs added, replaced and removed under a live plugin; links; bad stores."""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import threading
from pathlib import Path

import pytest

from tb_ad_layer.convert import convert
from tb_ad_layer.options import ConvertOptions
from tb_ad_layer.plugin.data import PluginData
from tb_ad_layer.plugin.discovery import RunDiscovery
from tb_ad_layer.plugin.errors import ApiError
from tb_ad_layer.store.writer import store_path
from tests.conftest import DUMPS
from tests.plugin.conftest import BASE, call, make_client
from tests.plugin.fake_trace import convert_with_trace


class FakeClock:
    def __init__(self) -> None:
        self.now_s = 1000.0

    def __call__(self) -> float:
        return self.now_s


def names(data: PluginData) -> list[str]:
    return [r["run"] for r in call(data, "runs")["runs"]]


def test_runs_added_at_any_depth_and_rescans_throttled(tmp_path: Path) -> None:
    clock = FakeClock()
    disc = RunDiscovery(tmp_path, rescan_interval_s=2.0, clock_s=clock)
    assert disc.run_names() == [] and disc.has_runs() is False
    convert(ConvertOptions(DUMPS / "ad_llama", tmp_path, run="a/b/c/deep"))
    convert(ConvertOptions(DUMPS / "ad_llama", tmp_path, run="top"))
    assert disc.run_names() == []  # within the interval: the old answer, no disk walk
    clock.now_s += 2.5
    assert disc.run_names() == ["a/b/c/deep", "top"] and disc.has_runs()


def test_logdir_itself_as_a_run(tmp_path: Path) -> None:
    convert(ConvertOptions(DUMPS / "ad_llama", tmp_path, run="x"))
    data = PluginData(tmp_path / "x")
    assert names(data) == ["."]
    assert call(data, "layer", run=".", layer=0)["run"] == "."


def test_replaced_store_is_served_fresh_at_once(tmp_path: Path) -> None:
    convert(ConvertOptions(DUMPS / "ad_llama", tmp_path, run="r"))
    data = PluginData(tmp_path, rescan_interval_s=3600)
    client, _ = make_client(tmp_path, data=data)
    first = client.get(f"{BASE}/api/layer?run=r&layer=1")
    assert json.loads(first.get_data())["source_file"] == "085_compile_compile_model.txt"
    assert [row["kind"] for row in call(data, "runs")["runs"][0]["layers"]] == ["attention+mlp"] * 3
    convert(ConvertOptions(DUMPS / "ad_dsv3", tmp_path, run="r", stages=("all",)))  # same name, new file
    assert len(call(data, "runs")["runs"][0]["stages"]) == 4
    second = client.get(f"{BASE}/api/layer?run=r&layer=1")
    assert second.status_code == 200 and second.get_data() != first.get_data()
    assert json.loads(second.get_data())["attention"] == "mla"
    assert client.get(f"{BASE}/api/layer?run=r&layer=4").status_code == 200


def test_removed_run_disappears(tmp_path: Path) -> None:
    clock = FakeClock()
    convert(ConvertOptions(DUMPS / "ad_llama", tmp_path, run="gone"))
    convert(ConvertOptions(DUMPS / "ad_llama", tmp_path, run="stays"))
    data = PluginData(tmp_path)
    data.discovery = RunDiscovery(tmp_path, clock_s=clock)
    assert names(data) == ["gone", "stays"]
    call(data, "layer", run="gone", layer=0)
    shutil.rmtree(tmp_path / "gone")
    with pytest.raises(ApiError) as info:  # noticed at once through the stat, no rescan
        call(data, "layer", run="gone", layer=0)
    assert info.value.status == 404 and info.value.known == ["stays"]
    assert names(data) == ["stays"]
    clock.now_s += 5
    assert data.discovery.run_names() == ["stays"]


def test_links_out_of_the_logdir_are_not_followed(tmp_path: Path) -> None:
    logdir, outside = tmp_path / "logdir", tmp_path / "outside"
    convert(ConvertOptions(DUMPS / "ad_llama", logdir, run="real"))
    convert(ConvertOptions(DUMPS / "ad_llama", outside, run="secret"))
    shutil.copytree(logdir / "real", logdir / ".hidden_not")      # hidden directories skipped
    os.symlink(outside, logdir / "link_out")                       # directory link out
    os.symlink(outside / "secret", logdir / "secret_run")          # run directory link out
    store_only = logdir / "fake" / "plugins" / "ad_layer"
    store_only.mkdir(parents=True)
    os.symlink(store_path(outside, "secret"), store_only / "run.sqlite")  # store file link out
    os.symlink(logdir / "real", logdir / "alias")                  # link inside: seen once
    os.symlink(logdir, logdir / "real" / "loop")                   # a loop must terminate
    os.symlink("/", logdir / "root")
    data = PluginData(logdir)
    assert names(data) == ["real"]
    for run in ("link_out/secret", "secret_run", "fake", "alias", "root", ".hidden_not"):
        with pytest.raises(ApiError):
            call(data, "layer", run=run, layer=0)


def test_link_inside_the_logdir_is_followed(tmp_path: Path) -> None:
    logdir = tmp_path / "logdir"
    convert(ConvertOptions(DUMPS / "ad_llama", logdir / "store_area", run="x"))
    (logdir / "group").mkdir()
    os.symlink(logdir / "store_area" / "x", logdir / "group" / "linked")
    assert sorted(names(PluginData(logdir))) in (["group/linked"], ["store_area/x"])


def _set_schema_version(path: Path, version: int) -> None:
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value=? WHERE key='schema_version'", (json.dumps(version),))
    conn.commit()
    conn.close()


def test_other_schema_version_and_corrupt_store_are_listed_not_fatal(tmp_path: Path) -> None:
    convert(ConvertOptions(DUMPS / "ad_llama", tmp_path, run="good"))
    convert(ConvertOptions(DUMPS / "ad_llama", tmp_path, run="newer"))
    convert(ConvertOptions(DUMPS / "ad_llama", tmp_path, run="older"))
    _set_schema_version(store_path(tmp_path, "newer"), 99)
    _set_schema_version(store_path(tmp_path, "older"), 0)
    junk = store_path(tmp_path, "junk")
    junk.parent.mkdir(parents=True)
    junk.write_bytes(b"this is not sqlite" * 100)
    client, _ = make_client(tmp_path)
    runs = {r["run"]: r for r in json.loads(client.get(f"{BASE}/api/runs").get_data())["runs"]}
    assert list(runs) == ["good", "junk", "newer", "older"]
    assert runs["good"]["error"] is None
    assert "newer" in runs["newer"]["error"] and "upgrade tb-ad-layer" in runs["newer"]["error"]
    assert "convert the run again" in runs["older"]["error"]
    assert "not a readable" in runs["junk"]["error"]
    for run in ("newer", "junk"):
        r = client.get(f"{BASE}/api/layer?run={run}&layer=0")
        assert r.status_code == 409
        assert "cannot be read" in json.loads(r.get_data())["error"]
    assert client.get(f"{BASE}/api/layer?run=good&layer=0").status_code == 200
    # A fixed store (re-converted) is picked up without restart.
    convert(ConvertOptions(DUMPS / "ad_llama", tmp_path, run="newer"))
    assert client.get(f"{BASE}/api/layer?run=newer&layer=0").status_code == 200


def test_store_replaced_while_being_read_never_fails(tmp_path: Path) -> None:
    convert_with_trace(DUMPS / "ad_dsv3", tmp_path, "live")
    _, plugin = make_client(tmp_path)
    from tensorboard.backend import application
    from werkzeug.test import Client
    app = application.TensorBoardWSGI([plugin])
    urls = [f"{BASE}/api/layer?run=live&layer=1", f"{BASE}/api/overview?run=live",
            f"{BASE}/api/timeline?run=live&layer=1", f"{BASE}/api/stages?run=live&layer=1",
            f"{BASE}/api/compare?a_run=live&a_layer=1&b_layer=2", f"{BASE}/api/runs",
            f"{BASE}/api/download/layer.json?run=live&layer=1"]
    statuses: list[int] = []
    stop = threading.Event()

    def reader() -> None:
        c = Client(app)
        i = 0
        while not stop.is_set():
            statuses.append(c.get(urls[i % len(urls)]).status_code)
            i += 1

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    try:
        for k in range(12):
            if k % 2:
                convert(ConvertOptions(DUMPS / "ad_dsv3", tmp_path, run="live"))
            else:
                convert_with_trace(DUMPS / "ad_dsv3", tmp_path, "live", scale=1 + k / 10)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert len(statuses) > 50 and set(statuses) == {200}


def test_store_rewritten_in_place_is_an_error_not_a_crash(tmp_path: Path) -> None:
    convert(ConvertOptions(DUMPS / "ad_dsv3", tmp_path, run="r", stages=("all",)))
    client, _ = make_client(tmp_path)
    assert client.get(f"{BASE}/api/layer?run=r&layer=1").status_code == 200
    path = store_path(tmp_path, "r")
    size = path.stat().st_size
    with open(path, "r+b") as f:  # same inode, new content: what a plain `cp` over it does
        f.seek(0)
        f.write(os.urandom(size))
    for url in ("api/layer?run=r&layer=1", "api/layer?run=r&layer=2&stage=0",
                "api/overview?run=r", "api/stages?run=r&layer=1", "api/runs"):
        r = client.get(f"{BASE}/{url}")
        assert r.status_code in (200, 409), (url, r.status_code)
        body = json.loads(r.get_data())
        assert "error" in body or "runs" in body
    convert(ConvertOptions(DUMPS / "ad_dsv3", tmp_path, run="r", stages=("all",)))
    assert client.get(f"{BASE}/api/layer?run=r&layer=1").status_code == 200


def test_store_damaged_under_an_open_connection_says_how_to_rebuild(tmp_path: Path) -> None:
    convert(ConvertOptions(DUMPS / "ad_dsv3", tmp_path, run="r", stages=("all",)))
    client, _ = make_client(tmp_path)
    assert client.get(f"{BASE}/api/layer?run=r&layer=1").status_code == 200
    path = store_path(tmp_path, "r")
    st = path.stat()
    with open(path, "r+b") as f:
        f.write(os.urandom(st.st_size))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # identity unchanged: no reopen
    for url in ("api/layer?run=r&layer=2", "api/overview?run=r&stage=0") * 2:
        r = client.get(f"{BASE}/{url}")
        assert r.status_code == 409  # the same answer every time: retrying cannot help
        error = json.loads(r.get_data())["error"]
        assert "damaged" in error and "rebuild it with: tb-ad-layer convert" in error
        assert "retry" not in error
    convert(ConvertOptions(DUMPS / "ad_dsv3", tmp_path, run="r"))
    assert client.get(f"{BASE}/api/layer?run=r&layer=2").status_code == 200
