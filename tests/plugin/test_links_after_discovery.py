"""A discovered run whose store, or any directory on the way to it, is replaced by a link after
discovery: a link out of the logdir is never followed, at any step between the scan and the
read; a link that stays inside is."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from werkzeug.test import Client

from tb_ad_layer.convert import convert
from tb_ad_layer.options import ConvertOptions
from tb_ad_layer.plugin.data import PluginData
from tb_ad_layer.plugin.errors import ApiError
from tb_ad_layer.store.writer import store_path
from tests.conftest import DUMPS
from tests.plugin.conftest import BASE, make_client

RUN = "group/r"
#: Every place on the way from the logdir to the store, as a path relative to the logdir.
PLACES = ["group", "group/r", "group/r/plugins", "group/r/plugins/ad_layer",
          "group/r/plugins/ad_layer/run.sqlite"]


@pytest.fixture
def trees(tmp_path: Path) -> tuple[Path, Path]:
    """``logdir`` with run group/r (a Llama dump) and, outside it, ``outside`` with the same
    layout holding another model's store (DeepSeek-V3: other layer kinds, other source)."""
    logdir, outside = tmp_path / "logdir", tmp_path / "outside"
    convert(ConvertOptions(DUMPS / "ad_llama", logdir, run=RUN))
    convert(ConvertOptions(DUMPS / "ad_dsv3", outside, run=RUN))
    return logdir, outside


def swap_for_link(logdir: Path, place: str, target: Path, aside: Path) -> None:
    """Move ``logdir/place`` away (it is kept, as an attacker would) and put a link there."""
    aside.mkdir(exist_ok=True)
    shutil.move(str(logdir / place), str(aside / Path(place).name))
    os.symlink(target, logdir / place)


def assert_outside_never_served(client: Client, outside: Path) -> None:
    secret = str(outside)
    for url in (f"api/layer?run={RUN}&layer=0", f"api/overview?run={RUN}",
                f"api/stages?run={RUN}&layer=0", f"api/download/layer.json?run={RUN}&layer=0"):
        r = client.get(f"{BASE}/{url}")
        body = r.get_data(as_text=True)
        assert r.status_code == 404, (url, r.status_code, body[:200])
        assert "ad_dsv3" not in body and "mla" not in body and secret not in body
    runs = client.get(f"{BASE}/api/runs")
    assert runs.status_code == 200
    body = runs.get_data(as_text=True)
    assert json.loads(body) == {"runs": []}
    assert "ad_dsv3" not in body and secret not in body


@pytest.mark.parametrize("place", PLACES)
def test_link_out_after_discovery_is_never_read(trees: tuple[Path, Path], tmp_path: Path,
                                                place: str) -> None:
    logdir, outside = trees
    data = PluginData(logdir, rescan_interval_s=3600)  # no rescan will notice: every open must
    client, _ = make_client(logdir, data=data)
    first = client.get(f"{BASE}/api/layer?run={RUN}&layer=0")  # discovered, opened, cached
    assert first.status_code == 200 and json.loads(first.get_data())["kind"] == "attention+mlp"
    assert client.get(f"{BASE}/api/overview?run={RUN}").status_code == 200
    swap_for_link(logdir, place, outside / place, tmp_path / "aside")
    assert_outside_never_served(client, outside)
    data.discovery.rescan(force=True)
    assert_outside_never_served(client, outside)


@pytest.mark.parametrize("place", PLACES)
def test_link_out_between_lookup_and_open_is_refused(trees: tuple[Path, Path], tmp_path: Path,
                                                     place: str) -> None:
    """The store is looked up (its path checked) before the swap and opened after it: the open
    itself refuses what SQLite resolved to outside the logdir."""
    logdir, outside = trees
    data = PluginData(logdir, rescan_interval_s=3600)
    handle = data.discovery.get(RUN)  # looked up, not opened yet
    swap_for_link(logdir, place, outside / place, tmp_path / "aside")
    with pytest.raises(ApiError) as info:
        handle.store()
    assert info.value.status == 409 and "outside the logdir" in info.value.message
    assert "ad_dsv3" not in info.value.message


def test_link_that_stays_inside_is_followed(trees: tuple[Path, Path], tmp_path: Path) -> None:
    """Replacing a store by a link to another store inside the logdir is not refused."""
    logdir, _ = trees
    convert(ConvertOptions(DUMPS / "ad_dsv3", logdir, run="other", stages=("all",)))
    data = PluginData(logdir, rescan_interval_s=3600)
    client, _ = make_client(logdir, data=data)
    assert json.loads(client.get(f"{BASE}/api/layer?run={RUN}&layer=2").get_data())["kind"] \
        == "attention+mlp"
    swap_for_link(logdir, "group/r/plugins/ad_layer/run.sqlite", store_path(logdir, "other"),
                  tmp_path / "aside")
    r = client.get(f"{BASE}/api/layer?run={RUN}&layer=2")
    assert r.status_code == 200 and json.loads(r.get_data())["kind"] == "mla+moe"
