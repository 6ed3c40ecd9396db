"""The run store writer and reader: every node stored once, documents as the reference builds
them, and a failed write leaving no store behind."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tb_ad_layer.convert import convert, stage_documents, store_stage
from tb_ad_layer.dump.reader import parse_dump
from tb_ad_layer.layers.document import layer_document_text, outside_nodes_text
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
        == {"meta", "files", "stages", "layers", "outside", "streams", "kernels"}
    # Documents are handed to SQLite as UTF-8 bytes and stored as text, never as blobs.
    assert {t for (t,) in conn.execute("SELECT typeof(doc) FROM layers")} == {"text"}
    assert {t for (t,) in conn.execute("SELECT typeof(nodes) FROM outside")} == {"text"}
    conn.close()


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
