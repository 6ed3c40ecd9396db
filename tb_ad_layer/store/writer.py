"""Write a run store atomically.

The store is built in a temporary file in its final directory and renamed over the old one only
when complete (``os.replace`` is atomic on POSIX), so a reader sees either the old store or the
new one, and a failed conversion leaves the old one untouched and no temporary file behind.
"""
from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path
from types import TracebackType
from typing import Any, Iterable, Sequence

from tb_ad_layer.layers.document import dumps, layer_document_text, outside_nodes_text
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
        # Layer documents are hundreds of kilobytes: with 16 KiB pages SQLite writes and reads
        # them in a quarter of the pages (bench: 61 documents of 700 kB written and synced in
        # 38 ms instead of 72 ms with the default 4 KiB, read back in 36 ms instead of 44 ms).
        self._conn.execute("PRAGMA page_size=16384")
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
        self.conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, dumps(value)))

    def add_file(self, path: str | Path, role: str) -> str:
        digest, size = file_sha256(path)
        self.conn.execute("INSERT INTO files VALUES (?, ?, ?, ?)",
                          (str(Path(path).resolve()), digest, size, role))
        return digest

    def add_stage(self, *, file: str, order_no: int, stage: str, transform: str,
                  modules: Sequence[str], lg: LayeredGraph) -> int:
        """Store a stage and its nodes outside every layer; return its index. The layer
        documents come separately (:meth:`add_layers`, or :meth:`add_layer_docs` once a trace
        has been mapped onto them)."""
        idx = self._stage_count
        self._stage_count += 1
        graph = lg.graph
        self.conn.execute("INSERT INTO stages VALUES (?,?,?,?,?,?,?,?,?,?)",
                          (idx, file, order_no, stage, transform, graph.module,
                           dumps(list(modules)), len(graph.nodes), graph.call_count,
                           len(lg.layers)))
        self.conn.execute("INSERT INTO outside VALUES (?,?,?)",
                          (idx, lg.layer.count(None), outside_nodes_text(lg)))
        return idx

    def add_layers(self, stage: int, lg: LayeredGraph) -> None:
        """Store every layer document of ``lg`` as is (no trace), one at a time: a layer
        document can be megabytes."""
        for index in sorted(lg.layers):
            info = lg.layers[index]
            self.conn.execute("INSERT INTO layers VALUES (?,?,?,?,?,?,?,?)",
                              (stage, index, info.kind, info.attention, info.node_count, None,
                               dumps(info.group_counts), layer_document_text(lg, index)))

    def add_layer_docs(self, stage: int, docs: Iterable[dict[str, Any]]) -> None:
        """Store each layer document of ``stage`` (see :mod:`tb_ad_layer.layers.document`)."""
        for doc in docs:  # one at a time: a layer document can be megabytes
            summary = doc.get("trace_summary")
            gpu = summary.get("total_duration_us") if summary else None
            self.conn.execute("INSERT INTO layers VALUES (?,?,?,?,?,?,?,?)",
                              (stage, doc["layer"], doc["kind"], doc.get("attention"),
                               len(doc["nodes"]), gpu, dumps(doc.get("group_counts", {})),
                               dumps(doc)))

    def set_outside_nodes(self, stage: int, nodes: list[dict[str, Any]]) -> None:
        """Replace the stored nodes outside every layer of ``stage`` (with their kernels once a
        trace has been mapped onto them)."""
        self.conn.execute("UPDATE outside SET nodes=? WHERE stage=?", (dumps(nodes), stage))

    @property
    def last_stage(self) -> int:
        """Index of the stage stored last."""
        return self._stage_count - 1

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
