"""Read a run store (see :mod:`tb_ad_layer.store.schema`).

A :class:`RunStore` holds one read-only SQLite connection. Because the writer replaces the file
by rename, an open connection keeps reading the store it opened even while a new one lands; a
caller that wants the new one opens it again (the plugin's data layer does so when the file's
mtime/inode changes).
"""
from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

from tb_ad_layer.errors import InputError
from tb_ad_layer.store.schema import SCHEMA_VERSION


class StoreVersionError(InputError):
    """The store was written by a converter with another schema version."""


class RunStore:
    """Read access to one run store file. Thread-safe (one lock around the connection)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self._conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True,
                                         check_same_thread=False)
            rows = self._conn.execute("SELECT key, value FROM meta").fetchall()
        except sqlite3.Error as e:
            raise InputError(f"not a readable tb-ad-layer run store ({e})", path=self.path) from None
        self._lock = threading.Lock()
        self.meta: dict[str, Any] = {k: json.loads(v) for k, v in rows}
        version = self.meta.get("schema_version")
        if version != SCHEMA_VERSION:
            self._conn.close()
            newer = isinstance(version, int) and version > SCHEMA_VERSION
            raise StoreVersionError(
                f"run store schema version {version} is {'newer' if newer else 'older'} than "
                f"this tb-ad-layer reads ({SCHEMA_VERSION}); "
                + ("upgrade tb-ad-layer" if newer else "convert the run again"),
                path=self.path)

    def close(self) -> None:
        self._conn.close()

    def query(self, sql: str, params: tuple = ()) -> list[tuple]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    def stages(self) -> list[dict[str, Any]]:
        rows = self.query("SELECT idx, file, order_no, stage, transform, module, modules, "
                          "node_count, call_count, layer_count FROM stages ORDER BY idx")
        return [{"index": r[0], "file": r[1], "order": r[2], "stage": r[3], "transform": r[4],
                 "module": r[5], "modules": json.loads(r[6]), "node_count": r[7],
                 "call_count": r[8], "layer_count": r[9]} for r in rows]

    def layers(self, stage: int) -> list[dict[str, Any]]:
        rows = self.query("SELECT layer, kind, attention, node_count, gpu_time_us, group_counts "
                          "FROM layers WHERE stage=? ORDER BY layer", (stage,))
        return [{"layer": r[0], "kind": r[1], "attention": r[2], "node_count": r[3],
                 "gpu_time_us": r[4], "group_counts": json.loads(r[5])} for r in rows]

    def layer_doc_text(self, stage: int, layer: int) -> str | None:
        """The stored layer document as JSON text (served as is, without re-encoding)."""
        rows = self.query("SELECT doc FROM layers WHERE stage=? AND layer=?", (stage, layer))
        return rows[0][0] if rows else None

    def layer_doc(self, stage: int, layer: int) -> dict[str, Any] | None:
        text = self.layer_doc_text(stage, layer)
        return json.loads(text) if text is not None else None

    def nodes(self, stage: int, layer: int | None = None) -> list[dict[str, Any]]:
        """Node records of a stage in graph order: all of them, one layer's (its document's),
        or with ``layer=-1`` those outside every layer. Each record is shaped like a layer
        document's node plus ``layer`` (None outside layers)."""
        out: list[dict[str, Any]] = []
        if layer is None or layer < 0:
            rows = self.query("SELECT nodes FROM outside WHERE stage=?", (stage,))
            for r in rows:
                out.extend(dict(n, layer=None) for n in json.loads(r[0]))
        if layer is None or layer >= 0:
            sql = "SELECT layer, doc FROM layers WHERE stage=?"
            params: tuple = (stage,)
            if layer is not None:
                sql += " AND layer=?"
                params += (layer,)
            for index, doc in self.query(sql, params):
                out.extend(dict(n, layer=index) for n in json.loads(doc)["nodes"])
        if layer is None:
            out.sort(key=lambda n: n["line"])
        return out

    def outside_count(self, stage: int) -> int:
        """How many nodes of ``stage`` are outside every layer."""
        rows = self.query("SELECT node_count FROM outside WHERE stage=?", (stage,))
        return rows[0][0] if rows else 0

    def kernel_count(self) -> int:
        return self.query("SELECT COUNT(*) FROM kernels")[0][0]

    def streams(self) -> list[dict[str, Any]]:
        rows = self.query("SELECT key, label, device, pid, context, stream FROM streams "
                          "ORDER BY device, pid, context, stream")
        return [{"stream": r[0], "label": r[1], "device": r[2], "pid": r[3], "context": r[4],
                 "stream_id": r[5]} for r in rows]

    def kernels(self, layer: int | None = None, start_ns: int | None = None,
                end_ns: int | None = None) -> list[tuple]:
        """Kernel rows ``(id, name, short, start_ns, end_ns, device, stream, graph_id,
        graph_node_id, correlation, layer, node, reason, count, median_ns, min_ns, max_ns)``
        in start order, optionally of one layer and overlapping a time window."""
        sql = "SELECT * FROM kernels WHERE 1=1"
        params: tuple = ()
        if layer is not None:
            sql += " AND layer=?"
            params += (layer,)
        if start_ns is not None:
            sql += " AND end_ns>=?"
            params += (start_ns,)
        if end_ns is not None:
            sql += " AND start_ns<=?"
            params += (end_ns,)
        return self.query(sql + " ORDER BY start_ns", params)
