"""Bulk reads of integer columns from SQLite into ``array`` columns of ``TraceData``.

Reading millions of kernel rows is dominated by per-value work in Python, so SQLite does as
much as it can: several ids are packed into one integer, and whole chunks of a column come back
as one JSON array that ``json.loads`` parses in C.
"""
from __future__ import annotations

import json
import sqlite3
import time
from array import array
from typing import Any, Callable

from tb_ad_layer.errors import InputError
from tb_ad_layer.trace.tracedata import TraceData

Progress = Callable[[str], None]
BATCH = 50_000
CHUNK = 200_000
PROGRESS_EVERY = 500_000


class Decoded(dict):
    """Packed key -> decoded value, computed on first sight (a trace has few distinct keys)."""

    def __init__(self, decode: Callable[[int], int]) -> None:
        super().__init__()
        self._decode = decode

    def __missing__(self, key: int) -> int:
        value = self[key] = self._decode(key)
        return value


def read_rows(conn: sqlite3.Connection, sql: str, data: TraceData, stream_of: Callable[[Any], int],
               name_of: Callable[[Any], int], progress: Progress | None, what: str, total: int,
               packed: bool = False) -> None:
    """Run ``sql`` and append its rows to ``data``'s columns.

    Columns: start, end, stream key, name key, corr, gid, gnid; with ``packed`` one key column
    carries both stream and name (one value less per row, which is most of the cost).
    """
    t0 = time.perf_counter()
    done = 0
    next_report = PROGRESS_EVERY
    cur = conn.execute(sql)
    while True:
        batch = cur.fetchmany(BATCH)
        if not batch:
            break
        if packed:
            start, end, key, corr, gid, gnid = zip(*batch)
            data.append_rows(start, end, map(stream_of, key), map(name_of, key), corr, gid, gnid)
        else:
            start, end, stream, name, corr, gid, gnid = zip(*batch)
            data.append_rows(start, end, map(stream_of, stream), map(name_of, name), corr, gid, gnid)
        done += len(batch)
        if progress is not None and done >= next_report:
            rate = done / max(time.perf_counter() - t0, 1e-9)
            progress(f"read {done:,}/{total:,} {what} rows ({rate:,.0f} rows/s)")
            next_report += PROGRESS_EVERY
    if progress is not None and done:
        rate = done / max(time.perf_counter() - t0, 1e-9)
        progress(f"read {done:,} {what} rows in {time.perf_counter() - t0:.2f} s ({rate:,.0f} rows/s)")


def read_columns(conn: sqlite3.Connection, table: str, exprs: list[str], progress: Progress | None,
                  what: str, total: int) -> list[array] | None:
    """Integer columns ``exprs`` of every row of ``table``, or None when the table has no rowid.

    SQLite concatenates each column of a chunk of rows into one JSON array, parsed in C: about
    twice as fast as fetching row tuples and transposing them, which dominates reading millions
    of kernels. Every expression must be a non-NULL integer.
    """
    try:
        conn.execute(f'SELECT rowid FROM "{table}" LIMIT 1').fetchall()
    except sqlite3.OperationalError:
        return None
    aggregates = ", ".join(f"json_group_array(c{i})" for i in range(len(exprs)))
    inner = ", ".join(f"{e} AS c{i}" for i, e in enumerate(exprs))
    sql = (f"SELECT {aggregates}, max(r), count(*) FROM (SELECT rowid AS r, {inner} FROM \"{table}\" "
           f"WHERE rowid > ? ORDER BY rowid LIMIT {CHUNK})")
    cols = [array("q") for _ in exprs]
    last = -(1 << 62)
    t0 = time.perf_counter()
    next_report = PROGRESS_EVERY
    while True:
        row = conn.execute(sql, (last,)).fetchone()
        count = row[-1]
        if not count:
            break
        for col, text in zip(cols, row[:len(exprs)]):
            values = json.loads(text)
            if len(values) != count:
                raise InputError(f"NULL or non-integer values in {table}", field=table)
            col.extend(values)
        last = row[-2]
        if progress is not None and len(cols[0]) >= next_report:
            rate = len(cols[0]) / max(time.perf_counter() - t0, 1e-9)
            progress(f"read {len(cols[0]):,}/{total:,} {what} rows ({rate:,.0f} rows/s)")
            next_report += PROGRESS_EVERY
    if progress is not None and cols[0]:
        elapsed = time.perf_counter() - t0
        rate = len(cols[0]) / max(elapsed, 1e-9)
        progress(f"read {len(cols[0]):,} {what} rows in {elapsed:.2f} s ({rate:,.0f} rows/s)")
    return cols
