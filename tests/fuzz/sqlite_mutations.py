"""Mutations of Nsight Systems SQLite exports: damage to the file's pages, and a schema or values
that break what the export promises.

Every mutation changes a copy of the export in place and returns a few words saying what it did.
The tables and columns the reader uses are picked far more often than the others, so that the
damage lands where it matters. Rows are picked here, by the case's random source, never by
SQLite's ``random()``, so that a case is the same on every run.
"""
from __future__ import annotations

import random
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.fuzz.json_mutations import giant_text

SqliteMutation = Callable[[random.Random, Path], str]

#: Tables and columns the reader reads, in the export's spelling.
USED = {
    "CUPTI_ACTIVITY_KIND_KERNEL": ["start", "end", "deviceId", "streamId", "contextId", "globalPid",
                                   "correlationId", "demangledName", "shortName", "graphId",
                                   "graphNodeId"],
    "CUPTI_ACTIVITY_KIND_RUNTIME": ["start", "end", "globalTid", "correlationId", "nameId"],
    "CUPTI_ACTIVITY_KIND_MEMCPY": ["start", "end", "deviceId", "streamId", "copyKind", "correlationId"],
    "CUPTI_ACTIVITY_KIND_MEMSET": ["start", "end", "deviceId", "streamId", "correlationId"],
    "CUPTI_ACTIVITY_KIND_GRAPH_TRACE": ["start", "end", "deviceId", "streamId", "graphId", "correlationId"],
    "CUDA_GRAPH_NODE_EVENTS": ["start", "graphNodeId", "originalGraphNodeId"],
    "NVTX_EVENTS": ["start", "end", "eventType", "text", "textId", "globalTid"],
    "StringIds": ["id", "value"],
    "META_DATA_EXPORT": ["name", "value"],
    "META_DATA_CAPTURE": ["name", "value"],
}
#: Values no export holds: NULL, the ends of 64 bits, negatives, reals (NaN is stored as NULL),
#: infinities, numbers beyond 64 bits (stored as REAL or as TEXT), text and blobs.
ODD_VALUES: list[Any] = [None, (1 << 63) - 1, -(1 << 63), -1, 0, 1.5, 1e308, float("inf"), float("-inf"),
                         1e30, str(1 << 70), "9" * 5000, "NaN", "", "kernel", b"\x00\xff", -0.0]


def page_size(data: bytes) -> int:
    """The page size an SQLite header declares (bytes 16-17; 1 means 65536)."""
    if len(data) < 100 or not data.startswith(b"SQLite format 3\x00"):
        return 4096
    size = int.from_bytes(data[16:18], "big")
    return 65536 if size == 1 else max(size, 512)


def truncate_pages(rng: random.Random, path: Path) -> str:
    """Cut the file at a page boundary, or inside a page."""
    data = path.read_bytes()
    size = page_size(data)
    pages = max(1, len(data) // size)
    cut = rng.randrange(1, pages) * size if pages > 1 else rng.randrange(len(data))
    if rng.random() < 0.3:
        cut = min(len(data) - 1, cut + rng.randrange(size))
    path.write_bytes(data[:cut])
    return f"cut at byte {cut:,} of {len(data):,} ({size}-byte pages)"


def flip_in_pages(rng: random.Random, path: Path) -> str:
    """Overwrite bytes inside a few pages (the first page, with the schema, now and then)."""
    buf = bytearray(path.read_bytes())
    size = page_size(bytes(buf))
    pages = max(1, len(buf) // size)
    chosen = sorted({0 if rng.random() < 0.15 else rng.randrange(pages) for _ in range(rng.randint(1, 4))})
    n = 0
    for page in chosen:
        for _ in range(rng.randint(1, 16)):
            # Past the 100-byte file header on page 0: damage the schema, not the magic.
            low = page * size + (100 if page == 0 else 0)
            p = rng.randrange(low, min(len(buf), (page + 1) * size))
            buf[p] = rng.randrange(256) if rng.random() < 0.5 else buf[p] ^ (1 << rng.randrange(8))
            n += 1
    path.write_bytes(bytes(buf))
    return f"{n} byte(s) overwritten in page(s) {chosen}"


def _tables(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')]


def _pick_table(rng: random.Random, conn: sqlite3.Connection) -> str:
    tables = _tables(conn)
    used = [t for t in tables if t in USED]
    return rng.choice(used) if used and rng.random() < 0.9 else rng.choice(tables)


def _pick_column(rng: random.Random, conn: sqlite3.Connection, table: str) -> str:
    cols = _columns(conn, table)
    used = [c for c in USED.get(table, []) if c in cols]
    return rng.choice(used) if used and rng.random() < 0.9 else rng.choice(cols)


def _schema_change(path: Path, change: Callable[[sqlite3.Connection], str]) -> str:
    conn = sqlite3.connect(path)
    try:
        what = change(conn)
        conn.commit()
        return what
    finally:
        conn.close()


def drop_table(rng: random.Random, path: Path) -> str:
    """Drop a table the reader uses (or now and then another)."""
    def change(conn: sqlite3.Connection) -> str:
        table = _pick_table(rng, conn)
        conn.execute(f'DROP TABLE "{table}"')
        return f"table {table} dropped"
    return _schema_change(path, change)


def rename_column(rng: random.Random, path: Path) -> str:
    """Rename a column, as a later nsys might."""
    def change(conn: sqlite3.Connection) -> str:
        table = _pick_table(rng, conn)
        col = _pick_column(rng, conn, table)
        new = rng.choice([col + "_v2", col.lower(), col.upper() + "X", "x" + col])
        if new in _columns(conn, table) or new == col:
            new = col + "_renamed"
        conn.execute(f'ALTER TABLE "{table}" RENAME COLUMN "{col}" TO "{new}"')
        return f"column {table}.{col} renamed {new}"
    return _schema_change(path, change)


def odd_values(rng: random.Random, path: Path) -> str:
    """Write one odd value into a column: into a few rows, or into every row."""
    def change(conn: sqlite3.Connection) -> str:
        table = _pick_table(rng, conn)
        col = _pick_column(rng, conn, table)
        value = rng.choice(ODD_VALUES)
        rowids = [r[0] for r in conn.execute(f'SELECT rowid FROM "{table}"')]
        if not rowids:
            return f"table {table} is empty; nothing written"
        picked = rowids if rng.random() < 0.25 else rng.sample(rowids, min(len(rowids), rng.randint(1, 5)))
        conn.executemany(f'UPDATE "{table}" SET "{col}" = ? WHERE rowid = ?', [(value, r) for r in picked])
        return f"{table}.{col} = {value!r:.30} in {len(picked)} of {len(rowids)} row(s)"
    return _schema_change(path, change)


ID_COLUMNS = (("CUPTI_ACTIVITY_KIND_KERNEL", ("demangledName", "shortName", "mangledName")),
               ("CUPTI_ACTIVITY_KIND_RUNTIME", ("nameId",)), ("NVTX_EVENTS", ("textId",)))


def dangling_ids(rng: random.Random, path: Path) -> str:
    """String ids that point nowhere: the strings some kernels name deleted, or kernel, runtime
    and NVTX name ids moved past every string."""
    def change(conn: sqlite3.Connection) -> str:
        tables = _tables(conn)
        pairs = [(t, c) for t, cols in ID_COLUMNS if t in tables for c in cols if c in _columns(conn, t)
                 and conn.execute(f'SELECT 1 FROM "{t}" WHERE typeof("{c}") = \'integer\' '
                                  'LIMIT 1').fetchone()]
        if not pairs:
            return "no string id column; nothing changed"
        table, col = rng.choice(pairs)
        if "StringIds" in tables and rng.random() < 0.4:
            used = [r[0] for r in conn.execute(f'SELECT DISTINCT "{col}" FROM "{table}" '
                                               f'WHERE typeof("{col}") = \'integer\' ORDER BY 1')]
            gone = rng.sample(used, min(len(used), rng.randint(1, 20)))
            conn.executemany("DELETE FROM StringIds WHERE id = ?", [(i,) for i in gone])
            return f"{len(gone)} StringIds row(s) that {table}.{col} uses deleted"
        shift = rng.choice([10 ** 6, 1 << 40, 1 << 62])
        every = rng.randint(1, 5)
        # Every k-th row, counted from the first, so that a small table gets one too.
        conn.execute(f'UPDATE "{table}" SET "{col}" = "{col}" + ? WHERE typeof("{col}") = \'integer\' AND '
                     f'(rowid - (SELECT min(rowid) FROM "{table}")) % ? = 0', (shift, every))
        return f"{table}.{col} moved by {shift}"
    return _schema_change(path, change)


def broken_view(rng: random.Random, path: Path) -> str:
    """Replace a table the reader uses by a view whose query fails when it is read."""
    def change(conn: sqlite3.Connection) -> str:
        table = _pick_table(rng, conn)
        conn.execute(f'DROP TABLE "{table}"')
        conn.execute("PRAGMA legacy_alter_table = ON")
        conn.execute(f'CREATE VIEW "{table}" AS SELECT * FROM "{table}_gone"')
        return f"table {table} replaced by a view of a missing table"
    try:
        return _schema_change(path, change)
    except sqlite3.Error:
        return drop_table(rng, path)


def giant_string(rng: random.Random, path: Path) -> str:
    """A kernel name of hundreds of kilobytes, in StringIds or inline."""
    def change(conn: sqlite3.Connection) -> str:
        tables = _tables(conn)
        kernel = "CUPTI_ACTIVITY_KIND_KERNEL"
        if kernel not in tables:
            return "no kernel table; nothing changed"
        cols = _columns(conn, kernel)
        col = next((c for c in ("demangledName", "shortName") if c in cols), None)
        row = conn.execute(f'SELECT "{col}" FROM {kernel} ORDER BY rowid LIMIT 1 OFFSET ?',
                           (rng.randrange(50),)).fetchone() if col else None
        if row is None:
            return "no kernel name; nothing changed"
        name = giant_text(rng).decode()
        if isinstance(row[0], int) and "StringIds" in tables:
            conn.execute("UPDATE StringIds SET value = ? WHERE id = ?", (name, row[0]))
        else:
            conn.execute(f'UPDATE {kernel} SET "{col}" = ? WHERE "{col}" = ?', (name, row[0]))
        return f"a kernel name ({col}) of {len(name):,} characters ({name[:12]!r}...)"
    return _schema_change(path, change)


SQLITE_MUTATIONS: dict[str, SqliteMutation] = {
    "truncate_pages": truncate_pages, "flip_in_pages": flip_in_pages, "drop_table": drop_table,
    "rename_column": rename_column, "odd_values": odd_values, "dangling_ids": dangling_ids,
    "broken_view": broken_view, "giant_string": giant_string,
}
