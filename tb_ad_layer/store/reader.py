"""Read a run store (see :mod:`tb_ad_layer.store.schema`): typed records, checked as they are read.

A :class:`RunStore` holds one read-only SQLite connection. Because the writer replaces the file
by rename, an open connection keeps reading the store it opened even while a new one lands; a
caller that wants the new one opens it again (the plugin does so when the file's identity
changes).

Every method returns contract records (:mod:`tb_ad_layer.contract`) or store records
(:mod:`tb_ad_layer.store.records`), and checks what it read against them: a store that is valid
SQLite but lacks a table or column, holds a value of the wrong type, or a JSON field that does
not decode to its record raises :class:`StoreDamagedError`, whose message names what is wrong
and the command that rebuilds the store. Nothing damaged is ever returned.
"""
from __future__ import annotations

import functools
import json
import os
import re
import shlex
import sqlite3
import threading
import zlib
from operator import attrgetter
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import msgspec

from tb_ad_layer.contract.api import TraceInfo
from tb_ad_layer.contract.document import LayerDocument, LayeringDoubt, OutsideNodes, TraceSummary
from tb_ad_layer.contract.record import encode
from tb_ad_layer.errors import InputError
from tb_ad_layer.metadata import STORE_DIR
from tb_ad_layer.store.encoding import decode_doc
from tb_ad_layer.store.records import (
    FileRecord,
    GpuRow,
    HostCallRow,
    KernelSpan,
    KernelTiming,
    LayerRecord,
    MemcpyRow,
    RankLayerRow,
    RankRecord,
    StageRecord,
    StoredKernel,
    StoreMeta,
    StreamRow,
    TraceDimRow,
)
from tb_ad_layer.store.schema import DDL, SCHEMA_VERSION

#: A store record type (a NamedTuple of :mod:`tb_ad_layer.store.records`).
Row = TypeVar("Row", bound=tuple[Any, ...])
#: What a JSON column decodes to.
Decoded = TypeVar("Decoded")

_LAYER_DOCUMENT = msgspec.json.Decoder(LayerDocument)
_OUTSIDE_NODES = msgspec.json.Decoder(OutsideNodes)
_MODULES = msgspec.json.Decoder(list[str])
_DOUBTS = msgspec.json.Decoder(list[LayeringDoubt])
_GROUP_COUNTS = msgspec.json.Decoder(dict[str, int])
_TRACE_INFO = msgspec.json.Decoder(TraceInfo)
_AT_ROW = re.compile(r"\$\[(\d+)\]\[(\d+)\]")


class _SummaryOnly(msgspec.Struct):
    """The trace summary of a layer document, read without building its nodes."""

    trace_summary: TraceSummary | None


_TRACE_SUMMARY = msgspec.json.Decoder(_SummaryOnly)


class StoreVersionError(InputError):
    """The store was written by a converter with another schema version."""


class StoreDamagedError(InputError):
    """The store is valid SQLite but does not hold what its schema version promises."""


class OutsideError(InputError):
    """The store's real path is outside the directory it must be read from."""


@functools.lru_cache(maxsize=1)
def expected_columns() -> dict[str, tuple[str, ...]]:
    """Table -> column names, as the schema's DDL creates them."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.executescript(DDL)
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {t: tuple(r[1] for r in conn.execute(f"PRAGMA table_info({t})")) for t in tables}
    finally:
        conn.close()


def is_inside(path: str, root: str) -> bool:
    """Whether real path ``path`` is ``root`` or below it (both already resolved)."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


class RunStore:
    """Read access to one run store file. Thread-safe (one lock around the connection).

    Args:
        path: the store file.
        within: when given, a directory the store's real path must lie under. It is checked
            on the path SQLite itself opened (after following every link), before anything is
            read, so a store swapped for a link to elsewhere is never read.
    Raises:
        InputError: not a run store, or outside ``within``; :class:`StoreVersionError` for
            another schema version; :class:`StoreDamagedError` for a damaged one.
    """

    def __init__(self, path: str | Path, *, within: str | Path | None = None) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._meta: StoreMeta | None = None
        self._json_functions = True  # until SQLite says it has none
        self._ranks: list[RankRecord] | None = None
        try:
            self._conn = sqlite3.connect(f"file:{_uri_path(self.path)}?mode=ro", uri=True,
                                         check_same_thread=False)
        except sqlite3.Error as e:
            raise InputError(f"not a readable tb-ad-layer run store ({e})", path=self.path) from None
        try:
            if within is not None:
                self._check_within(os.path.realpath(within))
            self.meta = self._read_meta()
        except BaseException:
            self._conn.close()
            raise

    def close(self) -> None:
        """Close the SQLite connection."""
        self._conn.close()

    # -- opening --------------------------------------------------------------------------

    def _check_within(self, root: str) -> None:
        """Refuse a store whose opened file is not under ``root``. SQLite resolves every link
        of the path before it opens the file, and ``database_list`` names what it opened; the
        name is also resolved here, for SQLite versions that open a path as given."""
        try:
            opened = self._conn.execute("PRAGMA database_list").fetchall()[0][2]
        except sqlite3.Error as e:
            raise InputError(f"not a readable tb-ad-layer run store ({e})", path=self.path) from None
        if not opened or not is_inside(opened, root) \
                or not is_inside(os.path.realpath(opened), root):
            raise OutsideError("the run store is a link to a file outside the logdir; it is "
                               "not read", path=self.path)

    def _read_meta(self) -> StoreMeta:
        try:
            rows = self._conn.execute("SELECT key, value FROM meta").fetchall()
        except sqlite3.DatabaseError as e:
            if "no such table" in str(e) or "no such column" in str(e):
                raise self._damaged(str(e)) from None
            raise InputError(f"not a readable tb-ad-layer run store ({e})", path=self.path) from None
        raw: dict[str, Any] = {}
        for key, value in rows:
            try:
                raw[key] = json.loads(value)
            except (TypeError, ValueError) as e:
                raise self._damaged(f"meta {key!r} is not JSON ({e})") from None
        version = raw.get("schema_version")
        if version != SCHEMA_VERSION:
            newer = isinstance(version, int) and version > SCHEMA_VERSION
            raise StoreVersionError(
                f"run store schema version {version} is {'newer' if newer else 'older'} than "
                f"this tb-ad-layer reads ({SCHEMA_VERSION}); "
                + ("upgrade tb-ad-layer" if newer else "convert the run again"), path=self.path)
        try:
            meta = msgspec.convert(raw, StoreMeta)
        except msgspec.ValidationError as e:
            raise self._damaged(f"meta: {e}") from None
        self._meta = meta
        self._check_tables()
        return meta

    def _check_tables(self) -> None:
        have = {name: tuple(r[1] for r in self._fetch(f"PRAGMA table_info({name})", (), name))
                for name in expected_columns()}
        for table, columns in expected_columns().items():
            if not have[table]:
                raise self._damaged(f"table {table} is missing")
            missing = [c for c in columns if c not in have[table]]
            if missing:
                raise self._damaged(f"table {table} has no column {', '.join(missing)}")

    # -- damage ---------------------------------------------------------------------------

    def rebuild_command(self) -> str:
        """The ``tb-ad-layer convert`` command that writes this store again, as far as the
        store still says how it was made (placeholders in capitals otherwise)."""
        run_dir = self.path.parent.parent.parent \
            if (self.path.parent.name, self.path.parent.parent.name) == STORE_DIR[::-1] \
            else self.path.parent
        meta = self._meta
        # The run's name as converted, if the store still sits where that name puts it (runs
        # can be moved, or nested); else the name of its directory.
        run, logdir = run_dir.name, run_dir.parent
        if meta is not None:
            parts = Path(meta.run).parts
            if 0 < len(parts) < len(run_dir.parts) and run_dir.parts[-len(parts):] == parts:
                run, logdir = meta.run, run_dir.parents[len(parts) - 1]
        words = ["tb-ad-layer", "convert", meta.source_dir if meta is not None else "DUMP_DIR",
                 "--logdir", str(logdir), "--run", run]
        if meta is not None and meta.trace is not None:
            traces = self._rank_traces()
            if len(traces) > 1 and len(set(traces)) == 1:
                words += ["--trace", traces[0], "--device", "all"]
            else:
                for trace in traces or [meta.trace.source]:
                    words += ["--trace", trace]
            words += ["--phase", meta.trace.phase]
        return " ".join(w if w.isupper() else shlex.quote(w) for w in words)

    def _rank_traces(self) -> list[str]:
        """Each rank's trace file, as far as the ``ranks`` table can still be read."""
        try:
            with self._lock:
                rows = self._conn.execute("SELECT trace FROM ranks ORDER BY rank").fetchall()
        except sqlite3.Error:
            return []
        return [r[0] for r in rows if isinstance(r[0], str)]

    def _damaged(self, detail: str) -> StoreDamagedError:
        return StoreDamagedError(f"run store is damaged ({detail}); rebuild it with: "
                                 f"{self.rebuild_command()}", path=self.path)

    def _fetch(self, sql: str, params: tuple[Any, ...], what: str) -> list[Any]:
        with self._lock:
            try:
                return self._conn.execute(sql, params).fetchall()
            except sqlite3.Error as e:
                raise self._damaged(f"{what}: {e}") from None

    def _records(self, rows: list[Any], record: type[Row], what: str) -> list[Row]:
        """``rows`` checked against ``record``'s field types."""
        try:
            # One conversion for the whole list: a C loop, not one call per row.
            checked: list[Row] = msgspec.convert(rows, list[record])  # type: ignore[valid-type]
            return checked
        except msgspec.ValidationError as e:
            raise self._damaged(f"{what}: {_at_row(str(e), record)}") from None

    def _json_rows(self, columns: str, source: str, params: tuple[Any, ...],
                   record: type[Row], what: str) -> list[Row]:
        """``SELECT columns FROM source`` as records, in no particular order.

        Many rows are fetched as one JSON array that SQLite builds, and decoded in one go:
        fetching them row by row releases and re-takes the GIL at every row, which under fifty
        busy request threads stretches a 30 ms read into half a second (each row waits for a
        thread switch). Without SQLite's JSON functions, rows are fetched one by one.
        """
        if self._json_functions:
            sql = f"SELECT json_group_array(json_array({columns})) FROM {source}"
            with self._lock:
                try:
                    text = self._conn.execute(sql, params).fetchone()[0]
                except sqlite3.OperationalError as e:
                    if "no such function" not in str(e):
                        raise self._damaged(f"{what}: {e}") from None
                    self._json_functions = False
                except sqlite3.Error as e:
                    raise self._damaged(f"{what}: {e}") from None
            if self._json_functions:
                try:
                    return msgspec.json.decode(text, type=list[record])  # type: ignore[valid-type]
                except (msgspec.ValidationError, msgspec.DecodeError) as e:
                    raise self._damaged(f"{what}: {_at_row(str(e), record)}") from None
        return self._records(self._fetch(f"SELECT {columns} FROM {source}", params, what),
                             record, what)

    def _json(self, decoder: msgspec.json.Decoder[Decoded], text: object,
              what: str) -> Decoded:
        if not isinstance(text, (str, bytes)):
            raise self._damaged(f"{what} is not JSON text")
        try:
            return decoder.decode(text)
        except (msgspec.ValidationError, msgspec.DecodeError) as e:
            raise self._damaged(f"{what}: {e}") from None

    # -- reading --------------------------------------------------------------------------

    def stages(self) -> list[StageRecord]:
        """Every converted stage, with the doubts about its layering, in pipeline order."""
        rows = self._fetch("SELECT idx, file, order_no, stage, transform, module, modules, "
                           "node_count, call_count, layer_count, doubts FROM stages ORDER BY idx",
                           (), "stages")
        decoded = [r[:6] + (self._json(_MODULES, r[6], f"stages.modules of stage {r[0]}"),)
                   + r[7:10] + (self._json(_DOUBTS, r[10], f"stages.doubts of stage {r[0]}"),)
                   for r in rows]
        return self._records(decoded, StageRecord, "stages")

    def layers(self, stage: int) -> list[LayerRecord]:
        """The layers of ``stage`` (without their documents), by index."""
        rows = self._fetch("SELECT layer, kind, attention, node_count, gpu_time_us, "
                           "group_counts FROM layers WHERE stage=? ORDER BY layer", (stage,),
                           "layers")
        decoded = [r[:5] + (self._json(_GROUP_COUNTS, r[5],
                                       f"layers.group_counts of stage {stage} layer {r[0]}"),)
                   for r in rows]
        return self._records(decoded, LayerRecord, "layers")

    def layer_indexes(self) -> list[int]:
        """Every layer index found in any stage, sorted."""
        rows = self._fetch("SELECT DISTINCT layer FROM layers ORDER BY layer", (), "layers")
        return [r.layer for r in self._records(rows, _LayerIndex, "layers")]

    def _stored_json(self, sql: str, params: tuple[Any, ...], what: str) -> list[tuple[Any, bytes]]:
        """``sql``'s rows of (a value, a stored document's data), the data decompressed into the
        document's JSON; checked as it is read."""
        out: list[tuple[Any, bytes]] = []
        for value, data in self._fetch(sql, params, what):
            if not isinstance(data, bytes):
                raise self._damaged(f"{what} is not a stored document")
            try:
                out.append((value, decode_doc(data)))
            except zlib.error as e:
                raise self._damaged(f"{what}: {e}") from None
        return out

    def _layer_json(self, stage: int, layer: int,
                    rank: int | None = None) -> tuple[str, bytes] | None:
        """(``source_file``, the stored document's JSON) of (``stage``, ``layer``); with
        ``rank``, the document with that rank's kernels where the stage was traced."""
        if rank is not None and rank != self.default_rank():
            rows = self._stored_json(
                "SELECT l.source_file, d.data FROM rank_layers r JOIN layers l ON "
                "l.stage = r.stage AND l.layer = r.layer LEFT JOIN docs d ON d.hash = r.doc "
                "WHERE r.rank=? AND r.stage=? AND r.layer=?", (rank, stage, layer),
                f"rank_layers.doc of rank {rank} stage {stage} layer {layer}")
            if rows:
                return self._source_and_json(rows[0], stage, layer)
        rows = self._stored_json("SELECT l.source_file, d.data FROM layers l LEFT JOIN docs d "
                                 "ON d.hash = l.doc WHERE l.stage=? AND l.layer=?",
                                 (stage, layer), f"layers.doc of stage {stage} layer {layer}")
        if not rows:
            return None
        return self._source_and_json(rows[0], stage, layer)

    def _source_and_json(self, row: tuple[Any, bytes], stage: int,
                         layer: int) -> tuple[str, bytes]:
        source_file, json = row
        if not isinstance(source_file, str):
            raise self._damaged(f"layers.source_file of stage {stage} layer {layer} is not text")
        return source_file, json

    def layer_doc_text(self, stage: int, layer: int) -> str | None:
        """The layer document as JSON text (what :meth:`layer_document` returns, encoded)."""
        doc = self.layer_document(stage, layer)
        return encode(doc).decode("utf-8") if doc is not None else None

    def layer_document(self, stage: int, layer: int,
                       rank: int | None = None) -> LayerDocument | None:
        """The layer document of (``stage``, ``layer``), checked against the contract; None
        when there is no such layer. ``rank``: the document with that rank's kernels (for the
        traced stage; every other stage's documents hold no kernels, and are the same for every
        rank); None or the first rank: the ``layers`` row's."""
        stored = self._layer_json(stage, layer, rank)
        if stored is None:
            return None
        doc = self._json(_LAYER_DOCUMENT, stored[1], f"layers.doc of stage {stage} layer {layer}")
        doc.source_file = stored[0]
        return doc

    def layer_doc(self, stage: int, layer: int) -> dict[str, Any] | None:
        """:meth:`layer_document` as plain JSON values (dicts and lists)."""
        doc = self.layer_document(stage, layer)
        return msgspec.to_builtins(doc) if doc is not None else None

    def group_times(self, stage: int) -> dict[int, dict[str, float]]:
        """GPU time per group (``trace_summary.groups``) of every layer of ``stage`` that has
        a trace summary, read without building the documents' nodes."""
        out: dict[int, dict[str, float]] = {}
        for r in self.layers(stage):
            stored = self._layer_json(stage, r.layer) if r.gpu_time_us is not None else None
            if stored is not None:
                summary = self._json(_TRACE_SUMMARY, stored[1],
                                     f"layers.doc of stage {stage} layer {r.layer}").trace_summary
                if summary is not None:
                    out[r.layer] = summary.groups
        return out

    def nodes(self, stage: int, layer: int | None = None) -> list[dict[str, Any]]:
        """Node records of a stage in graph order: all of them, one layer's (its document's),
        or with ``layer=-1`` those outside every layer. Each record is shaped like a layer
        document's node (as plain JSON values) plus ``layer`` (None outside layers)."""
        out: list[dict[str, Any]] = []
        if layer is None or layer < 0:
            for _, text in self._stored_json("SELECT o.stage, d.data FROM outside o LEFT JOIN "
                                             "docs d ON d.hash = o.nodes WHERE o.stage=?",
                                             (stage,), f"outside.nodes of stage {stage}"):
                nodes = self._json(_OUTSIDE_NODES, text, f"outside.nodes of stage {stage}")
                out.extend(dict(msgspec.to_builtins(n), layer=None) for n in nodes)
        if layer is None or layer >= 0:
            indexes = [layer] if layer is not None else [r.layer for r in self.layers(stage)]
            for index in indexes:
                doc = self.layer_document(stage, index)
                if doc is not None:
                    out.extend(dict(msgspec.to_builtins(n), layer=index) for n in doc.nodes)
        if layer is None:
            out.sort(key=lambda n: n["line"])
        return out

    def outside_count(self, stage: int) -> int:
        """How many nodes of ``stage`` are outside every layer."""
        rows = self._fetch("SELECT node_count FROM outside WHERE stage=?", (stage,), "outside")
        counts = self._records(rows, _Count, "outside")
        return counts[0].value if counts else 0

    def kernel_count(self) -> int:
        """How many kernel rows the store holds."""
        rows = self._fetch("SELECT COUNT(*) FROM kernels", (), "kernels")
        return int(rows[0][0])

    # -- ranks ----------------------------------------------------------------------------

    def ranks(self) -> list[RankRecord]:
        """Every rank of the run, by number; empty for a run without a trace."""
        if self._ranks is None:
            rows = self._fetch("SELECT rank, device, trace, replays, kernel_count, gpu_time_us, "
                               "info FROM ranks ORDER BY rank", (), "ranks")
            decoded = [r[:6] + (self._json(_TRACE_INFO, r[6], f"ranks.info of rank {r[0]}"),)
                       for r in rows]
            self._ranks = self._records(decoded, RankRecord, "ranks")
        return self._ranks

    def default_rank(self) -> int:
        """The rank read when none is asked for: the first (lowest); 0 without a trace."""
        ranks = self.ranks()
        return ranks[0].rank if ranks else 0

    def _rank(self, rank: int | None) -> int:
        return self.default_rank() if rank is None else rank

    def rank_layers(self, stage: int) -> list[RankLayerRow]:
        """Every rank's GPU time per layer of ``stage`` (the traced one has them), by rank
        then layer."""
        rows = self._fetch("SELECT rank, layer, gpu_time_us FROM rank_layers WHERE stage=? "
                           "ORDER BY rank, layer", (stage,), "rank_layers")
        return self._records(rows, RankLayerRow, "rank_layers")

    def streams(self, rank: int | None = None) -> list[StreamRow]:
        """The streams of ``rank`` (default: the first), by device, process, context and
        stream id."""
        rows = self._fetch("SELECT key, label, device, pid, context, stream, rank FROM streams "
                           "WHERE rank=? ORDER BY device, pid, context, stream",
                           (self._rank(rank),), "streams")
        return self._records(rows, StreamRow, "streams")

    def kernels(self, layer: int | None = None, start_ns: int | None = None,
                end_ns: int | None = None, rank: int | None = None) -> list[StoredKernel]:
        """Stored kernels of ``rank`` (default: the first) in start order (then id),
        optionally of one layer and overlapping a time window (ns)."""
        sql = ("SELECT id, name, short, start_ns, end_ns, device, stream, graph_id, "
               "graph_node_id, correlation, layer, node, reason, count, median_ns, min_ns, "
               "max_ns, p90_ns, p99_ns, rank FROM kernels WHERE rank=?")
        params: tuple[Any, ...] = (self._rank(rank),)
        if layer is not None:
            sql += " AND layer=?"
            params += (layer,)
        if start_ns is not None:
            sql += " AND end_ns>=?"
            params += (start_ns,)
        if end_ns is not None:
            sql += " AND start_ns<=?"
            params += (end_ns,)
        rows = self._fetch(sql + " ORDER BY start_ns, id", params, "kernels")
        return self._records(rows, StoredKernel, "kernels")

    def kernel_spans(self, layer: int | None = None, rank: int | None = None) -> list[KernelSpan]:
        """What a timeline needs of the stored kernels of ``rank`` (default: the first; of one
        layer, or all), grouped by stream and in start order (then id) within a stream."""
        columns = "stream, id, short, name, start_ns, end_ns, device, layer, node"
        where, params = (" WHERE rank=?", (self._rank(rank),)) if layer is None \
            else (" WHERE rank=? AND layer=?", (self._rank(rank), layer))
        spans = self._json_rows(columns, "kernels" + where, params, KernelSpan, "kernels")
        spans.sort(key=attrgetter("stream", "start_ns", "id"))
        return spans

    def kernel_timings(self, rank: int | None = None) -> list[KernelTiming]:
        """Every stored kernel of ``rank`` (default: the first) with its mapping and its
        statistics over the replays, in start order (then id): what the analysis
        (``tb-ad-layer report``) reads."""
        columns = ("id, short, name, start_ns, end_ns, stream, correlation, layer, node, reason, "
                   "count, median_ns, min_ns, max_ns, p90_ns, p99_ns")
        rows = self._json_rows(columns, "kernels WHERE rank=?", (self._rank(rank),),
                               KernelTiming, "kernels")
        rows.sort(key=attrgetter("start_ns", "id"))
        return rows

    def has_table(self, table: str) -> bool:
        """Whether the store holds ``table`` (the optional tables exist only when the trace
        held their rows)."""
        rows = self._fetch("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (table,),
                           "sqlite_master")
        return bool(rows)

    def host_calls(self) -> list[HostCallRow] | None:
        """The CUDA runtime calls and synchronisations around the stored replay, in start
        order; None when the trace recorded none (no ``host_calls`` table)."""
        if not self.has_table("host_calls"):
            return None
        rows = self._fetch("SELECT start_ns, end_ns, tid, correlation, name, kind FROM host_calls "
                           "ORDER BY start_ns, end_ns", (), "host_calls")
        return self._records(rows, HostCallRow, "host_calls")

    def memcpy(self) -> list[MemcpyRow] | None:
        """The memory copies of the stored replay with direction, bytes and memory kinds;
        None when the trace recorded none (no ``memcpy`` table)."""
        if not self.has_table("memcpy"):
            return None
        rows = self._fetch("SELECT start_ns, end_ns, stream, correlation, direction, bytes, "
                           "src_kind, dst_kind FROM memcpy ORDER BY start_ns", (), "memcpy")
        return self._records(rows, MemcpyRow, "memcpy")

    def gpus(self) -> list[GpuRow]:
        """The GPU name of each device the trace names; empty when it names none."""
        if not self.has_table("gpus"):
            return []
        rows = self._fetch("SELECT device, name FROM gpus ORDER BY device", (), "gpus")
        return self._records(rows, GpuRow, "gpus")

    def trace_dims(self) -> list[TraceDimRow] | None:
        """The symbolic sizes the trace's recorded input shapes bind; None when the trace
        recorded no shapes (no ``trace_dims`` table)."""
        if not self.has_table("trace_dims"):
            return None
        rows = self._fetch("SELECT symbol, value, source FROM trace_dims ORDER BY symbol", (),
                           "trace_dims")
        return self._records(rows, TraceDimRow, "trace_dims")

    def files(self) -> list[FileRecord]:
        """The conversion's input files (dumps, trace) with their hashes."""
        rows = self._fetch("SELECT path, sha256, size, role FROM files", (), "files")
        return self._records(rows, FileRecord, "files")


class _LayerIndex(NamedTuple):
    layer: int


class _Count(NamedTuple):
    value: int


def _at_row(message: str, record: type[tuple[Any, ...]]) -> str:
    """A msgspec error about ``$[row][column]`` of a list of ``record`` with the column named."""
    fields: tuple[str, ...] = getattr(record, "_fields", ())

    def name(m: re.Match[str]) -> str:
        column = int(m[2])
        return f"row {int(m[1]) + 1}, column {fields[column] if column < len(fields) else column}"
    return _AT_ROW.sub(name, message)


def _uri_path(path: Path) -> str:
    """``path`` for a ``file:`` URI: characters URIs reserve are percent-encoded."""
    return str(path).replace("%", "%25").replace("?", "%3f").replace("#", "%23")
