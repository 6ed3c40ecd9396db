"""Write a run store atomically.

The store is built in a temporary file ``.run.sqlite.tmp-<pid>`` in its final directory and
renamed over the old one only when complete (``os.replace`` is atomic on POSIX), so a reader
sees either the old store or the new one. A failed conversion leaves the old one untouched and
no temporary file behind, whether it fails while creating the store, while filling it or while
moving it into place. A conversion killed outright (SIGKILL, a power cut) cannot clean up; its
temporary file is removed by the next conversion into the same directory, once no process with
its pid is alive.

Hashing files and syncing the store to disk wait on files, not on Python (hashlib, reads and
fsync release the GIL), so they run on a thread of the writer's own: a dump handed to
:meth:`StoreWriter.add_file` before it is parsed is hashed on another core meanwhile, a chunk each
time the converting thread lets the GIL go; the file is synced as documents are written, and the
converter frees its last graph while the final sync runs (:meth:`StoreWriter.commit`).
"""
from __future__ import annotations

import hashlib
import os
import re
import sqlite3
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import Any

from tb_ad_layer.contract.document import LayerDocument, LayeringDoubt, LayerNode
from tb_ad_layer.contract.record import encode
from tb_ad_layer.errors import InputError
from tb_ad_layer.metadata import STORE_DIR, STORE_FILE
from tb_ad_layer.store.encoding import encode_layer, encode_stage
from tb_ad_layer.store.records import (
    EncodedDoc,
    EncodedLayer,
    EncodedStage,
    GpuRow,
    HostCallRow,
    KernelRow,
    MemcpyRow,
    RankRecord,
    StreamRow,
    TraceDimRow,
)
from tb_ad_layer.store.schema import DDL, INDEXES, OPTIONAL_DDL, SCHEMA_VERSION

TMP_PREFIX = f".{STORE_FILE}.tmp-"
_TMP_NAME = re.compile(re.escape(TMP_PREFIX) + r"([1-9][0-9]{0,9})")


def store_path(logdir: str | Path, run: str) -> Path:
    """Where the store of ``run`` lives under ``logdir``."""
    return Path(logdir).joinpath(run, *STORE_DIR, STORE_FILE)


def temp_path(final_path: str | Path, pid: int | None = None) -> Path:
    """The temporary file a conversion by process ``pid`` (default: this one) builds
    ``final_path`` in."""
    return Path(final_path).with_name(f"{TMP_PREFIX}{os.getpid() if pid is None else pid}")


def process_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists on this machine (one of another user counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def remove_stale_temp_files(directory: str | Path) -> list[Path]:
    """Remove the temporary stores in ``directory`` whose writing process is gone; return
    them. Those of this process and of live processes are left alone."""
    removed: list[Path] = []
    try:
        entries = list(Path(directory).iterdir())
    except OSError:
        return removed
    for entry in entries:
        m = _TMP_NAME.fullmatch(entry.name)
        if m is None:
            continue
        pid = int(m[1])
        if pid == os.getpid() or process_alive(pid):
            continue
        try:
            entry.unlink()
            removed.append(entry)
        except FileNotFoundError:
            pass  # another conversion removed it first
        except OSError as e:
            raise InputError(f"cannot remove a stale temporary store: {e.strerror or e}",
                             path=entry) from None
    return removed


def file_sha256(path: str | Path) -> tuple[str, int]:
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
            size += len(chunk)
    return h.hexdigest(), size


def _json_text(value: Any) -> str:
    """Compact JSON text as the store keeps it (non-ASCII as is; never NaN or Infinity)."""
    return encode(value).decode("utf-8")


# Document bytes stored between two syncs of the file while it is written: syncing as it grows,
# on the writer's thread, leaves the final sync little to wait for.
_SYNC_EVERY_BYTES = 8 << 20


class StoreWriter:
    """Context manager that builds a run store and moves it into place on success.

    Example::

        with StoreWriter(store_path(logdir, "run1")) as w:
            idx = w.add_stage(...)
            w.commit()

    Raises:
        InputError: the store cannot be created or moved into place (the message names it).
    """

    def __init__(self, final_path: str | Path) -> None:
        self.final_path = Path(final_path)
        self.tmp_path = temp_path(self.final_path)
        self._created_dirs: list[Path] = []
        self._conn: sqlite3.Connection | None = None
        self._committed = False
        self._stage_count = 0
        self._io: ThreadPoolExecutor | None = None
        # Document bytes stored since the last sync was begun, and that sync.
        self._unsynced_bytes = 0
        self._syncing: Future[None] | None = None
        # Files handed to add_file whose row is not written yet: (path, role, its hash).
        self._files: list[tuple[str, str, Future[tuple[str, int]]]] = []
        # The hashes of the documents stored so far (each is stored once).
        self._doc_hashes: set[str] = set()

    def __enter__(self) -> StoreWriter:
        try:
            self._create()
        except BaseException as e:
            self._discard()
            if isinstance(e, (sqlite3.Error, OSError)):
                raise InputError(f"cannot create the run store: {_reason(e)}",
                                 path=self.final_path) from None
            raise
        return self

    def _create(self) -> None:
        missing = []
        d = self.final_path.parent
        while not d.exists():
            missing.append(d)
            d = d.parent
        self._created_dirs = missing  # deepest first
        self.final_path.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temp_files(self.final_path.parent)
        self.tmp_path.unlink(missing_ok=True)
        self._conn = sqlite3.connect(self.tmp_path)
        # Layer documents are hundreds of kilobytes: with 16 KiB pages SQLite writes and reads
        # them in a quarter of the pages (bench: 61 documents of 700 kB written and synced in
        # 38 ms instead of 72 ms with the default 4 KiB, read back in 36 ms instead of 44 ms).
        self._conn.execute("PRAGMA page_size=16384")
        self._conn.execute("PRAGMA journal_mode=OFF")
        self._conn.execute("PRAGMA synchronous=OFF")
        self._conn.executescript(DDL)
        self.set_meta("schema_version", SCHEMA_VERSION)

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if not self._committed:
            self._discard()
        else:
            self._stop_io()
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _stop_io(self) -> None:
        if self._io is not None:
            self._io.shutdown(wait=True, cancel_futures=True)
            self._io = None
        self._files = []

    def _write_files(self) -> None:
        """Write the rows of the files handed to :meth:`add_file`, in the order given."""
        for path, role, digest in self._files:
            try:
                sha, size = digest.result()
            except OSError as e:
                raise InputError(f"cannot read file: {e.strerror or e}", path=path) from None
            self.conn.execute("INSERT INTO files VALUES (?, ?, ?, ?)", (path, sha, size, role))
        self._files = []

    def _discard(self) -> None:
        """Close and remove the unfinished store, and the directories made for it."""
        self._stop_io()
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        self.tmp_path.unlink(missing_ok=True)
        for d in self._created_dirs:
            try:
                d.rmdir()
            except OSError:
                break
        self._created_dirs = []

    @property
    def conn(self) -> sqlite3.Connection:
        assert self._conn is not None, "StoreWriter used outside its 'with' block"
        return self._conn

    def set_meta(self, key: str, value: Any) -> None:
        """Record ``value`` (JSON-encodable: plain values or contract records) under ``key``;
        the keys are :class:`~tb_ad_layer.store.records.StoreMeta`'s fields."""
        self.conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, _json_text(value)))

    def add_file(self, path: str | Path, role: str) -> None:
        """Record ``path``'s SHA-256 and size under ``role`` (``dump``, ``trace``). The file is
        hashed on another thread, meanwhile; a file that cannot be read fails the commit."""
        resolved = str(Path(path).resolve())
        self._files.append((resolved, role, self._thread().submit(file_sha256, resolved)))

    def _thread(self) -> ThreadPoolExecutor:
        """The writer's own thread, for work that waits on files rather than on Python."""
        if self._io is None:
            self._io = ThreadPoolExecutor(max_workers=1, thread_name_prefix="run-store-io")
        return self._io

    def add_stage(self, *, file: str, order_no: int, stage: str, transform: str, module: str,
                  modules: Sequence[str], node_count: int, call_count: int, layer_count: int,
                  doubts: Sequence[LayeringDoubt], outside: Sequence[LayerNode]) -> int:
        """Store a stage (with the doubts about its layering) and its nodes outside every
        layer (``outside``, with their kernels when a trace was mapped onto the stage); return
        its index. The layer documents come separately (:meth:`add_layers`): the store takes
        contract records only, whatever made them."""
        return self.add_encoded_stage(encode_stage(
            file=file, order_no=order_no, stage=stage, transform=transform, module=module,
            modules=modules, node_count=node_count, call_count=call_count,
            layer_count=layer_count, doubts=doubts, outside=outside, layers=()))

    def add_encoded_stage(self, encoded: EncodedStage) -> int:
        """Store a stage encoded by :func:`~tb_ad_layer.store.encoding.encode_stage` (in this
        process or in a conversion worker), with its layers; return its index."""
        idx = self._stage_count
        self._stage_count += 1
        e = encoded
        self.conn.execute("INSERT INTO stages VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                          (idx, e.file, e.order_no, e.stage, e.transform, e.module, e.modules,
                           e.node_count, e.call_count, e.layer_count, e.doubts))
        self.conn.execute("INSERT INTO outside VALUES (?,?,?)",
                          (idx, e.outside_count, self._store_doc(e.outside)))
        self.add_encoded_layers(idx, e.layers)
        return idx

    def add_layers(self, stage: int, docs: Iterable[LayerDocument]) -> None:
        """Store each layer document of ``stage``, with the row that lists it (kind, node
        count, GPU time from its trace summary)."""
        # One at a time: a layer document can be megabytes.
        self.add_encoded_layers(stage, (encode_layer(doc) for doc in docs))

    def add_encoded_layers(self, stage: int, layers: Iterable[EncodedLayer]) -> None:
        """Store the ``layers`` rows of ``stage`` and those of their documents not stored yet."""
        for r in layers:
            self.conn.execute("INSERT INTO layers VALUES (?,?,?,?,?,?,?,?,?)",
                              (stage, r.layer, r.kind, r.attention, r.node_count, r.gpu_time_us,
                               r.group_counts, r.source_file, self._store_doc(r.doc)))

    def _store_doc(self, doc: EncodedDoc) -> str:
        """Insert ``doc`` into ``docs`` unless a document with its hash is stored; return the
        hash. Begins a sync of the file written so far every :data:`_SYNC_EVERY_BYTES` of
        documents, if none is under way."""
        if doc.hash in self._doc_hashes:
            return doc.hash
        if doc.data is None:
            raise ValueError(f"document {doc.hash} was said to be stored before, and is not")
        self._doc_hashes.add(doc.hash)
        self.conn.execute("INSERT INTO docs VALUES (?,?,?)", doc)
        self._unsynced_bytes += len(doc.data)
        if self._unsynced_bytes >= _SYNC_EVERY_BYTES \
                and (self._syncing is None or self._syncing.done()):
            self._unsynced_bytes = 0
            self._syncing = self._thread().submit(_fsync, self.tmp_path, None)
        return doc.hash

    def add_streams(self, rows: Iterable[StreamRow]) -> None:
        """Store the trace's streams (a later row with the same rank and key replaces an
        earlier one)."""
        self.conn.executemany("INSERT OR REPLACE INTO streams VALUES (?,?,?,?,?,?,?)", rows)

    def add_kernels(self, rows: Iterable[KernelRow]) -> None:
        """Store kernels; each gets the next ``id`` (insertion order)."""
        self.conn.executemany(
            "INSERT INTO kernels (name, short, start_ns, end_ns, device, stream, graph_id, "
            "graph_node_id, correlation, layer, node, reason, count, median_ns, min_ns, max_ns,"
            " p90_ns, p99_ns, rank) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", rows)

    def add_rank(self, row: RankRecord) -> None:
        """Store one rank of a traced run (its ``info`` as JSON)."""
        self.conn.execute("INSERT INTO ranks VALUES (?,?,?,?,?,?,?)",
                          row[:6] + (_json_text(row.info),))

    def add_rank_layers(self, rank: int, stage: int, layers: Iterable[EncodedLayer]) -> None:
        """Store ``rank``'s layers of the traced ``stage``: each one's GPU time on that rank
        and its document (stored once, by hash: the first rank's are the ``layers`` rows')."""
        for r in layers:
            self.conn.execute("INSERT INTO rank_layers VALUES (?,?,?,?,?)",
                              (rank, stage, r.layer, r.gpu_time_us, self._store_doc(r.doc)))

    def _add_optional(self, table: str, rows: Iterable[tuple[Any, ...]]) -> None:
        """Insert ``rows`` into optional ``table`` (:data:`OPTIONAL_DDL`), created on first use:
        a trace that lacks such rows leaves the table absent."""
        self.conn.execute(OPTIONAL_DDL[table].replace("CREATE TABLE", "CREATE TABLE IF NOT EXISTS", 1))
        width = OPTIONAL_DDL[table].count(",") + 1
        # A device named by two ranks' traces keeps the first name given.
        verb = "INSERT OR IGNORE" if table == "gpus" else "INSERT"
        self.conn.executemany(f"{verb} INTO {table} VALUES ({','.join('?' * width)})", rows)

    def add_host_calls(self, rows: Iterable[HostCallRow]) -> None:
        """Store CUDA runtime calls and synchronisations (creates ``host_calls``)."""
        self._add_optional("host_calls", rows)

    def add_memcpy(self, rows: Iterable[MemcpyRow]) -> None:
        """Store memory copies with direction, size and memory kinds (creates ``memcpy``)."""
        self._add_optional("memcpy", rows)

    def add_gpus(self, rows: Iterable[GpuRow]) -> None:
        """Store the GPU name of each device (creates ``gpus``)."""
        self._add_optional("gpus", rows)

    def add_trace_dims(self, rows: Iterable[TraceDimRow]) -> None:
        """Store the symbolic sizes the trace binds (creates ``trace_dims``, empty when ``rows``
        is: the trace recorded shapes and bound nothing)."""
        self._add_optional("trace_dims", rows)

    def commit(self, meanwhile: Callable[[], object] | None = None) -> Path:
        """Finish the store and atomically move it into place; return its path.

        Args:
            meanwhile: run on this thread while the store's file is synced to disk on another
                (the converter frees its last graph then): the sync waits on the disk, not on
                this thread.
        """
        c = self.conn
        self._write_files()
        try:
            c.executescript(INDEXES)
            c.commit()
            c.close()
            self._conn = None
            if self._syncing is not None:
                self._syncing.result()
            opened = threading.Event()
            synced = self._thread().submit(_fsync, self.tmp_path, opened)
            if meanwhile is not None:
                # Once the sync has begun: until its thread is inside fsync (which releases
                # the GIL), compiled code running here would keep it from starting at all.
                opened.wait()
                meanwhile()
            synced.result()
            os.replace(self.tmp_path, self.final_path)
        except (sqlite3.Error, OSError) as e:
            raise InputError(f"cannot write the run store: {_reason(e)}",
                             path=self.final_path) from None
        self._committed = True
        return self.final_path


def _fsync(path: Path, opened: threading.Event | None) -> None:
    """Sync ``path`` to disk; set ``opened`` once the file is open (or failed to open)."""
    try:
        f = open(path, "rb+")
    finally:
        if opened is not None:
            opened.set()
    with f:
        os.fsync(f.fileno())


def _reason(e: BaseException) -> str:
    if isinstance(e, OSError) and e.strerror:
        return f"{e.strerror} ({e.filename})" if e.filename else e.strerror
    return str(e)
