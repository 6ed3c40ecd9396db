"""Stores that are valid SQLite but damaged (a broken JSON field, a missing table, a wrong or
missing column, a value of the wrong type): every answer is JSON, the damage is a 409 that says
what is damaged and how to rebuild the store, the same every time (never a 500, never "retry"),
a 200 is always valid JSON of the contract, and a rebuilt store is served again."""
from __future__ import annotations

import json
import os
import sqlite3
import zlib
from collections.abc import Callable
from pathlib import Path

import msgspec
import pytest
from werkzeug.test import Client

from tb_ad_layer.contract.api import LayerResponse, decode_runs
from tb_ad_layer.store.writer import store_path
from tests.conftest import DUMPS
from tests.plugin.conftest import BASE, make_client
from tests.plugin.fake_trace import convert_with_trace

RUN = "r"
URLS = {
    "runs": "api/runs",
    "layer": f"api/layer?run={RUN}&layer=2",
    "other_layer": f"api/layer?run={RUN}&layer=3",
    "overview": f"api/overview?run={RUN}",
    "stages": f"api/stages?run={RUN}&layer=2",
    "timeline": f"api/timeline?run={RUN}&layer=2",
    "compare": f"api/compare?a_run={RUN}&a_layer=2&b_layer=3",
    "download": f"api/download/layer.json?run={RUN}&layer=2",
    "trace": f"api/download/trace.json?run={RUN}",
}


def damage(path: Path, *statements: str) -> None:
    conn = sqlite3.connect(path)
    for sql in statements:
        conn.execute(sql)
    conn.commit()
    conn.close()
    moved(path)


def moved(path: Path) -> None:
    """A later mtime: an edit in place within the file system's timestamp granularity would
    otherwise keep the file's identity, and the plugin would rightly keep serving its cache."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


def doc_of(path: Path, layer: int) -> str:
    """The JSON of ``layer``'s stored document (compressed in ``docs``)."""
    conn = sqlite3.connect(path)
    try:
        data = conn.execute("SELECT d.data FROM layers l JOIN docs d ON d.hash = l.doc "
                            "WHERE l.layer=?", (layer,)).fetchone()[0]
        return zlib.decompress(data).decode("utf-8")
    finally:
        conn.close()


def set_doc(path: Path, layer: int, text: str) -> None:
    """Store ``text`` as ``layer``'s document, compressed as the writer stores it."""
    data = zlib.compress(text.encode("utf-8")).hex()
    damage(path, f"UPDATE docs SET data=X'{data}' WHERE hash=(SELECT doc FROM layers "
                 f"WHERE layer={layer})")


def sql_text(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def with_nan(doc: str) -> str:
    """The document with a NaN where a float is: what ``json.dumps`` writes for float("nan")."""
    return json.dumps(dict(json.loads(doc), nodes=[
        dict(n, time_us=float("nan")) for n in json.loads(doc)["nodes"]]))


def wrong_shape(doc: str) -> str:
    value = json.loads(doc)
    value["nodes"][0]["inputs"] = "not a list"
    return json.dumps(value)


#: Every URL but the Chrome trace download, which reads the kernels only.
ALL_BUT_TRACE = tuple(u for u in URLS if u != "trace")
#: name -> (how to damage the store, the URLs that must answer 409, words the error must hold)
DAMAGES: dict[str, tuple[Callable[[Path], None], tuple[str, ...], tuple[str, ...]]] = {
    "doc_truncated": (lambda p: set_doc(p, 2, doc_of(p, 2)[:-40]),
                      ("layer", "overview", "stages", "compare", "download"),
                      ("layers.doc", "layer 2")),
    "doc_trailing_garbage": (lambda p: set_doc(p, 2, doc_of(p, 2) + "garbage"),
                             ("layer", "overview", "stages", "compare", "download"),
                             ("layers.doc",)),
    "doc_nan": (lambda p: set_doc(p, 2, with_nan(doc_of(p, 2))),
                ("layer", "overview", "stages", "compare", "download"), ("layers.doc",)),
    "doc_wrong_shape": (lambda p: set_doc(p, 2, wrong_shape(doc_of(p, 2))),
                        ("layer", "stages", "compare", "download"), ("inputs",)),
    "doc_not_text": (lambda p: damage(p, "UPDATE layers SET doc=42 WHERE layer=2"),
                     ("layer", "overview", "stages", "compare", "download"),
                     ("layers.doc of stage 0 layer 2",)),
    "group_counts_broken": (lambda p: damage(p, "UPDATE layers SET group_counts='{\"moe\":' "
                                                "WHERE layer=0"),
                            ("runs", "layer", "other_layer", "overview", "timeline", "compare",
                             "download"), ("group_counts",)),
    "modules_broken": (lambda p: damage(p, "UPDATE stages SET modules='[1, 2]'"),
                       ALL_BUT_TRACE, ("stages.modules",)),
    "meta_broken": (lambda p: damage(p, "UPDATE meta SET value='{oops' WHERE key='model'"),
                    tuple(URLS), ("meta", "model")),
    "meta_missing_key": (lambda p: damage(p, "DELETE FROM meta WHERE key='source_dir'"),
                         tuple(URLS), ("source_dir",)),
    "missing_kernels_table": (lambda p: damage(p, "DROP TABLE kernels"), tuple(URLS),
                              ("table kernels is missing",)),
    "missing_layers_table": (lambda p: damage(p, "DROP TABLE layers"), tuple(URLS),
                             ("table layers is missing",)),
    "missing_meta_table": (lambda p: damage(p, "DROP TABLE meta"), tuple(URLS),
                           ("no such table: meta",)),
    "renamed_column": (lambda p: damage(p, "ALTER TABLE layers RENAME COLUMN kind TO sort"),
                       tuple(URLS), ("table layers has no column kind",)),
    "wrong_type_in_stages": (lambda p: damage(p, "UPDATE stages SET node_count='many'"),
                             ALL_BUT_TRACE, ("row 1, column node_count",)),
    "wrong_type_in_kernels": (lambda p: damage(p, "UPDATE kernels SET start_ns='soon' WHERE id="
                                                  "(SELECT MIN(id) FROM kernels WHERE layer=2)"),
                              ("timeline", "trace"), ("kernels", "column start_ns")),
}


@pytest.fixture
def store(tmp_path: Path) -> Path:
    convert_with_trace(DUMPS / "ad_dsv3", tmp_path, RUN)
    return store_path(tmp_path, RUN)


def get(client: Client, name: str) -> tuple[int, str]:
    r = client.get(f"{BASE}/{URLS[name]}")
    return r.status_code, r.get_data(as_text=True)


@pytest.mark.parametrize("kind", DAMAGES)
def test_damaged_store_is_a_json_error_that_says_how_to_rebuild(store: Path, kind: str) -> None:
    how, refused, words = DAMAGES[kind]
    client, _ = make_client(store.parents[3])
    assert all(get(client, name)[0] == 200 for name in URLS)  # healthy, then damaged in place
    how(store)
    for name in URLS:
        for _ in range(2):  # the same answer again: nothing transient to wait for
            status, body = get(client, name)
            if name == "runs":
                runs = decode_runs(body).runs  # valid JSON of the contract either way
                error = runs[0].error
                assert (error is not None) == ("runs" in refused), error
                if error is None:
                    continue
            elif name not in refused:
                assert status == 200, (name, body[:300])
                json.loads(body)
                continue
            else:
                assert status == 409, (name, status, body[:300])
                body_json = json.loads(body)
                assert set(body_json) == {"error", "known"}
                error = body_json["error"]
            assert "\n" not in error and "damaged" in error, error
            assert "rebuild it with: tb-ad-layer convert" in error and "--run r" in error
            assert all(w in error for w in words), (words, error)


@pytest.mark.parametrize("kind", ["doc_nan", "doc_trailing_garbage"])
def test_a_200_layer_is_always_valid_json(store: Path, kind: str) -> None:
    """What the layer endpoint sends is the contract's JSON, never stored text passed through."""
    client, _ = make_client(store.parents[3])
    DAMAGES[kind][0](store)
    status, body = get(client, "other_layer")
    assert status == 200
    msgspec.json.decode(body, type=LayerResponse)
    assert get(client, "layer")[0] == 409


def test_rebuild_command_names_the_inputs(store: Path) -> None:
    damage(store, "DROP TABLE kernels")
    client, _ = make_client(store.parents[3])
    error = json.loads(get(client, "layer")[1])["error"]
    command = error.split("rebuild it with: ", 1)[1]
    assert command == (f"tb-ad-layer convert {(DUMPS / 'ad_dsv3').resolve()} --logdir "
                       f"{store.parents[3]} --run r --trace fake_decode.nsys.sqlite "
                       f"--phase decode")


def test_rebuilt_store_is_served_again(store: Path) -> None:
    client, _ = make_client(store.parents[3])
    damage(store, "DROP TABLE layers")
    assert get(client, "layer")[0] == 409
    convert_with_trace(DUMPS / "ad_dsv3", store.parents[3], RUN)
    assert get(client, "layer")[0] == 200
    assert decode_runs(get(client, "runs")[1]).runs[0].error is None
