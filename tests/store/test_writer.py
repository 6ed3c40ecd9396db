"""The run store writer and reader: every node stored once, documents as the reference builds
them, and a failed write leaving no store behind."""
from __future__ import annotations

import hashlib
import json
import sqlite3
import zlib
from pathlib import Path

import msgspec
import pytest

from tb_ad_layer.convert import convert, stage_documents, store_stage
from tb_ad_layer.dump.reader import parse_dump
from tb_ad_layer.layers.document import layer_document_text, layer_record, outside_nodes_text
from tb_ad_layer.layers.layered import layer_graph
from tb_ad_layer.options import ConvertOptions
from tb_ad_layer.store.reader import RunStore
from tb_ad_layer.store.writer import StoreWriter, store_path
from tests.conftest import DUMPS

DSV3 = DUMPS / "ad_dsv3"


def test_every_node_stored_once_and_documents_as_the_reference(tmp_path: Path) -> None:
    last = sorted(DSV3.glob("*.txt"))[-1]
    convert(ConvertOptions(last, tmp_path, run="r"))
    store = RunStore(store_path(tmp_path, "r"))
    lg = layer_graph(parse_dump(last).select())
    nodes = store.nodes(0)
    assert [n["id"] for n in nodes] == [n.name for n in lg.graph.nodes]  # graph order
    assert [n["layer"] for n in nodes] == lg.layer
    assert store.outside_count(0) == len(store.nodes(0, -1)) == lg.layer.count(None) > 0
    for index in lg.layers:
        assert store.layer_doc_text(0, index) == layer_document_text(lg, index)
    outside = [{k: v for k, v in n.items() if k != "layer"} for n in store.nodes(0, -1)]
    assert outside == json.loads(outside_nodes_text(lg))
    conn = sqlite3.connect(store.path)
    assert {t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")} \
        == {"meta", "files", "stages", "layers", "outside", "docs", "streams", "kernels", "ranks",
            "rank_layers"}
    # Rows name their documents by hash; each document is stored once, compressed, with the
    # layer row's source file left out of it.
    assert {t for (t,) in conn.execute("SELECT typeof(doc) FROM layers")} == {"text"}
    assert {t for (t,) in conn.execute("SELECT typeof(nodes) FROM outside")} == {"text"}
    stored = dict(conn.execute("SELECT hash, data FROM docs"))
    assert len(stored) == len(set(stored)) == len(lg.layers) + 1
    for hash_, data in stored.items():
        text = zlib.decompress(data)
        assert hashlib.sha256(text).hexdigest() == hash_
    for source_file, hash_ in conn.execute("SELECT source_file, doc FROM layers"):
        assert source_file == last.name
        assert json.loads(zlib.decompress(stored[hash_]))["source_file"] == ""
    conn.close()


def test_a_document_stored_before_is_stored_once(tmp_path: Path) -> None:
    """The same stage twice, and a document repeated within a stage: one ``docs`` row each,
    every ``layers`` row reading back its own document (with its own source file)."""
    last = sorted(DSV3.glob("*.txt"))[-1]
    lg = layer_graph(parse_dump(last).select())
    final = store_path(tmp_path, "r")
    with StoreWriter(final) as w:
        for name in ("a.txt", "b.txt"):
            idx = w.add_stage(file=name, order_no=idx_of(name), stage="s", transform=name,
                              module=lg.graph.module, modules=[lg.graph.module],
                              node_count=len(lg.graph.nodes), call_count=lg.graph.call_count,
                              layer_count=len(lg.layers), doubts=[], outside=[])
            docs = list(stage_documents(lg))
            w.add_layers(idx, [msgspec.structs.replace(d, source_file=name) for d in docs])
        for key, value in (("run", "r"), ("model", "m"), ("source_dir", str(last.parent)),
                           ("converter_version", "0"), ("created", "2026-01-01T00:00:00Z"),
                           ("trace", None)):
            w.set_meta(key, value)
        w.commit()
    conn = sqlite3.connect(final)
    assert conn.execute("SELECT COUNT(*) FROM docs").fetchone()[0] == len(lg.layers) + 1
    conn.close()
    store = RunStore(final)
    for idx, name in enumerate(("a.txt", "b.txt")):
        for index in lg.layers:
            doc = store.layer_document(idx, index)
            assert doc == msgspec.structs.replace(layer_record(lg, index), source_file=name)


def idx_of(name: str) -> int:
    return ord(name[0]) - ord("a")


def test_failed_write_leaves_no_store(tmp_path: Path) -> None:
    lg = layer_graph(parse_dump(sorted(DSV3.glob("*.txt"))[-1]).select())
    final = store_path(tmp_path, "r")
    with pytest.raises(sqlite3.IntegrityError):
        with StoreWriter(final) as w:
            idx = store_stage(w, lg, file="f.txt", order_no=0, stage="s", transform="t",
                              modules=[lg.graph.module])
            w.add_layers(idx, stage_documents(lg))  # the same (stage, layer) rows again
            w.commit()
    assert not final.exists() and not list(final.parent.glob(".*tmp*"))
