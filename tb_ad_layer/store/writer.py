"""Write a run store atomically.

The store is built in a temporary file in its final directory and renamed over the old one only
when complete (``os.replace`` is atomic on POSIX), so a reader sees either the old store or the
new one, and a failed conversion leaves the old one untouched and no temporary file behind.
"""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from pathlib import Path
from types import TracebackType
from typing import Any, Iterable, Sequence

from tb_ad_layer.layers.layered import LayeredGraph
from tb_ad_layer.store.schema import DDL, INDEXES, SCHEMA_VERSION, STORE_DIR, STORE_FILE


def store_path(logdir: str | Path, run: str) -> Path:
    """Where the store of ``run`` lives under ``logdir``."""
    return Path(logdir).joinpath(run, *STORE_DIR, STORE_FILE)


def file_sha256(path: str | Path) -> tuple[str, int]:
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
            size += len(chunk)
    return h.hexdigest(), size


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class StoreWriter:
    """Context manager that builds a run store and moves it into place on success.

    Example::

        with StoreWriter(store_path(logdir, "run1")) as w:
            idx = w.add_stage(...)
            w.commit()
    """

    def __init__(self, final_path: str | Path) -> None:
        self.final_path = Path(final_path)
        self.tmp_path = self.final_path.with_name(f".{STORE_FILE}.tmp-{os.getpid()}")
        self._created_dirs: list[Path] = []
        self._conn: sqlite3.Connection | None = None
        self._committed = False
        self._stage_count = 0

    def __enter__(self) -> "StoreWriter":
        missing = []
        d = self.final_path.parent
        while not d.exists():
            missing.append(d)
            d = d.parent
        self.final_path.parent.mkdir(parents=True, exist_ok=True)
        self._created_dirs = missing  # deepest first
        if self.tmp_path.exists():
            self.tmp_path.unlink()
        self._conn = sqlite3.connect(self.tmp_path)
        self._conn.execute("PRAGMA journal_mode=OFF")
        self._conn.execute("PRAGMA synchronous=OFF")
        self._conn.executescript(DDL)
        self.set_meta("schema_version", SCHEMA_VERSION)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if not self._committed:
            self.tmp_path.unlink(missing_ok=True)
            for d in self._created_dirs:
                try:
                    d.rmdir()
                except OSError:
                    break

    @property
    def conn(self) -> sqlite3.Connection:
        assert self._conn is not None, "StoreWriter used outside its 'with' block"
        return self._conn

    def set_meta(self, key: str, value: Any) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, _dumps(value)))

    def add_file(self, path: str | Path, role: str) -> str:
        digest, size = file_sha256(path)
        self.conn.execute("INSERT INTO files VALUES (?, ?, ?, ?)",
                          (str(Path(path).resolve()), digest, size, role))
        return digest

    def add_stage(self, *, file: str, order_no: int, stage: str, transform: str,
                  modules: Sequence[str], lg: LayeredGraph) -> int:
        """Store a stage's nodes and weights; return its index. Layer documents come separately
        (:meth:`add_layer_docs`) because a trace may still be mapped onto them."""
        idx = self._stage_count
        self._stage_count += 1
        graph = lg.graph
        c = self.conn
        c.execute("INSERT INTO stages VALUES (?,?,?,?,?,?,?,?,?,?)",
                  (idx, file, order_no, stage, transform, graph.module, _dumps(list(modules)),
                   len(graph.nodes), graph.call_count, len(lg.layers)))
        layer, group, sub = lg.layer, lg.group, lg.sub_group
        c.executemany("INSERT INTO nodes VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", (
            (idx, n.index, n.name, n.kind, n.target, n.shape, n.dtype, layer[n.index],
             group[n.index], sub[n.index], ",".join(n.inputs), ",".join(n.weights), n.line)
            for n in graph.nodes))
        weight_layer = lg.weight_layer
        c.executemany("INSERT INTO weights VALUES (?,?,?,?,?)", (
            (idx, w.name, w.shape, w.dtype, weight_layer[w.name])
            for w in graph.weights.values()))
        return idx

    def add_layer_docs(self, stage: int, docs: Iterable[dict[str, Any]]) -> None:
        """Store each layer document of ``stage`` (see :mod:`tb_ad_layer.layers.document`)."""
        for doc in docs:  # one at a time: a layer document can be megabytes
            summary = doc.get("trace_summary")
            gpu = summary.get("total_duration_us") if summary else None
            self.conn.execute("INSERT INTO layers VALUES (?,?,?,?,?,?,?,?)",
                              (stage, doc["layer"], doc["kind"], doc.get("attention"),
                               len(doc["nodes"]), gpu, _dumps(doc.get("group_counts", {})),
                               _dumps(doc)))

    def add_streams(self, rows: Iterable[tuple[str, str, int | None, int | None, int | None,
                                               int | None]]) -> None:
        self.conn.executemany("INSERT OR REPLACE INTO streams VALUES (?,?,?,?,?,?)", rows)

    def add_kernels(self, rows: Iterable[tuple]) -> None:
        """Rows in ``kernels`` column order, without ``id`` (assigned in insertion order)."""
        self.conn.executemany(
            "INSERT INTO kernels (name, short, start_ns, end_ns, device, stream, graph_id, "
            "graph_node_id, correlation, layer, node, reason, count, median_ns, min_ns, max_ns)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", rows)

    def commit(self) -> Path:
        """Finish the store and atomically move it into place; return its path."""
        c = self.conn
        c.executescript(INDEXES)
        c.commit()
        c.close()
        self._conn = None
        with open(self.tmp_path, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(self.tmp_path, self.final_path)
        self._committed = True
        return self.final_path
