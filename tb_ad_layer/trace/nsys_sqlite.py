"""Open an Nsight Systems SQLite export (``nsys export --type sqlite``) as a ``TraceDB``.

The export schema changes between nsys versions (columns added or renamed, tables created only
when something was recorded, graph ids NULL in new exports and 0 in old ones, names as
``StringIds`` references or inline text), so the relations of ``TraceDB`` are temporary views
built from what ``sqlite_master`` and ``PRAGMA table_info`` report. Nothing is read up front but
metadata and small tables; rows whose times or stream ids are not valid integers are left out of
the views and counted.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TypeGuard

from tb_ad_layer.errors import InputError
from tb_ad_layer.trace.kernel import KIND_MEMCPY, KIND_MEMSET, GraphLaunchBlock
from tb_ad_layer.trace.tracedb import (
    DATABASE_ERRORS,
    MAX_VALUE,
    TraceDB,
    database_error_text,
    kernel_name_resolver,
)

KERNEL_TABLE = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY_TABLE = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET_TABLE = "CUPTI_ACTIVITY_KIND_MEMSET"
RUNTIME_TABLE = "CUPTI_ACTIVITY_KIND_RUNTIME"
GRAPH_TRACE_TABLE = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"
NODE_EVENTS_TABLE = "CUDA_GRAPH_NODE_EVENTS"
NVTX_TABLE = "NVTX_EVENTS"
NVTX_RANGE_TYPES = (59, 60)  # push/pop and start/end ranges; 34 (marks) have no duration
RECAPTURE_HINT = ("re-capture with `nsys profile --cuda-graph-trace=node ...` to get the kernels "
                  "inside CUDA graphs")

Progress = Callable[[str], None]


def pid_of(global_pid: int | None) -> int:
    """OS process id packed in an nsys ``globalPid``/``globalTid``."""
    return 0 if global_pid is None else global_pid // 0x1000000 % 0x1000000


def _text(value: bytes) -> str:
    # A damaged page or a truncated name can hold bytes that are not UTF-8: shown replaced,
    # rather than failing the whole trace on one string.
    return value.decode("utf-8", "replace")


def _connect(path: Path) -> sqlite3.Connection:
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.text_factory = _text
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn
    except DATABASE_ERRORS as err:
        raise InputError(f"not a readable SQLite database ({database_error_text(err)})", path=path) from None


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}


def _columns(conn: sqlite3.Connection, table: str) -> dict[str, str]:
    """Column name -> declared type (upper case) of ``table``."""
    return {r[1]: (r[2] or "").upper() for r in conn.execute(f'PRAGMA table_info("{table}")')}


def _meta(conn: sqlite3.Connection, tables: set[str], table: str, suffix: str) -> str | None:
    """Value of the first ``name``/``value`` row of ``table`` whose name ends with ``suffix``."""
    if table not in tables or not {"name", "value"} <= set(_columns(conn, table)):
        return None
    row = conn.execute(f'SELECT value FROM "{table}" WHERE name = ? OR name LIKE ? LIMIT 1',
                       (suffix, "%:" + suffix)).fetchone()
    return None if row is None or row[0] is None else str(row[0])


def _rowid(conn: sqlite3.Connection, table: str) -> str:
    """``rowid`` when ``table`` has one (``WITHOUT ROWID`` tables do not), else a constant."""
    try:
        conn.execute(f'SELECT rowid FROM "{table}" LIMIT 1').fetchall()
        return "rowid"
    except sqlite3.OperationalError:
        return "0"


def _int(col: str, cols: dict[str, str], *, positive: bool = False) -> str:
    """SQL for an id column: its value when it is an integer in range, else NULL (absent: NULL).
    ``positive`` also maps 0 to NULL (old exports write 0 where there is no graph)."""
    if col not in cols:
        return "NULL"
    low = ">" if positive else ">="
    return (f'(CASE WHEN typeof("{col}") = \'integer\' AND "{col}" {low} 0 AND "{col}" <= {MAX_VALUE} '
            f'THEN "{col}" END)')


def _valid(cols: dict[str, str], needed: tuple[str, ...]) -> str:
    """SQL condition: the row's times and stream ids are integers in range."""
    parts = []
    for col in needed:
        if col in cols:
            parts.append(f'typeof("{col}") = \'integer\' AND "{col}" BETWEEN 0 AND {MAX_VALUE}')
    for col in ("contextId", "globalPid"):
        if col in cols:
            parts.append(f'("{col}" IS NULL OR (typeof("{col}") = \'integer\' AND "{col}" >= 0))')
    return " AND ".join(parts) or "1"


def _pid_expr(cols: dict[str, str], col: str = "globalPid") -> str:
    return f'(COALESCE("{col}", 0) / 16777216 % 16777216)' if col in cols else "0"


_TIMES_AND_STREAM = ("start", "end", "deviceId", "streamId")


def _kernel_view(
    conn: sqlite3.Connection, tables: set[str], path: Path, warnings: list[str]
) -> tuple[list[tuple[int, ...]], list[tuple[int, int | None, int | None, int, int, int]]] | None:
    """Create ``k_all``/``k``; returns, when every value is valid, the kernel counts per stream
    (``ok, pid, dev, ctx, st, count``) and per launch (``dev, g, c, count, busy ns, first
    start``) that the opening scan made."""
    cols = _columns(conn, KERNEL_TABLE)
    missing = [c for c in _TIMES_AND_STREAM if c not in cols]
    if missing:
        raise InputError(f"{KERNEL_TABLE} lacks column(s) {', '.join(missing)}", path=path,
                         field=f"{KERNEL_TABLE}.{missing[0]}")
    full = next((c for c in ("demangledName", "name", "mangledName", "shortName") if c in cols), None)
    if full is None:
        raise InputError(f"{KERNEL_TABLE} has no kernel name column (demangledName/shortName)", path=path,
                         field=KERNEL_TABLE)
    short = "shortName" if "shortName" in cols and full != "shortName" else None
    # One scan, in the trace's own order (correlation ids grow with time, so SQLite's sorter
    # gets nearly sorted rows), counts the kernels per stream and per graph launch, which the
    # inventory, the device choice and the replay choice need; a first pass that stops at the
    # first bad value finds out whether any value breaks the schema's promises (the stream
    # columns are checked in Python on the few groups). Damaged traces take the slower scan that
    # counts the bad rows.
    pid_col = '"globalPid"' if "globalPid" in cols else "NULL"
    ctx_col = '"contextId"' if "contextId" in cols else "NULL"
    times_bad = " OR ".join(f"typeof(\"{t}\") != 'integer' OR \"{t}\" < 0 OR \"{t}\" > {MAX_VALUE}"
                            for t in ("start", "end"))
    ids_bad = " OR ".join(f"(\"{c}\" IS NOT NULL AND (typeof(\"{c}\") != 'integer' OR \"{c}\" < 0 OR "
                          f"\"{c}\" > {MAX_VALUE}))" for c in ("correlationId", "graphId", "graphNodeId")
                          if c in cols) or "0"
    corr_col = '"correlationId"' if "correlationId" in cols else "NULL"
    graph_col = '"graphId"' if "graphId" in cols else "NULL"
    per_launch: dict[tuple[int, int | None, int | None], list[int]] | None = None
    if (
        conn.execute(f"SELECT 1 FROM {KERNEL_TABLE} WHERE {times_bad} OR {ids_bad} LIMIT 1").fetchone()
        is None
    ):
        per_key: dict[tuple[object, object, object, object], int] = {}
        per_launch = {}
        # Per launch: kernels, busy ns, first start, in the shape ``activity`` reads from ``k``
        # (graph id 0 of old exports is no graph); rows are folded as they come.
        for c, g, dev, gpid, ctx, st, n, busy, start in conn.execute(
                f'SELECT {corr_col}, {graph_col}, deviceId, {pid_col}, {ctx_col}, streamId, count(*), '
                f'sum(max("end" - "start", 0)), min("start") FROM {KERNEL_TABLE} GROUP BY 1, 2, 3, 4, 5, 6'):
            per_key[(gpid, dev, ctx, st)] = per_key.get((gpid, dev, ctx, st), 0) + n
            key = (dev, g or None, c)
            got = per_launch.get(key)
            if got is None:
                per_launch[key] = [n, busy, start]
            else:
                got[0] += n
                got[1] += busy
                got[2] = min(got[2], start)
        groups = [(gpid, dev, ctx, st, n, 0, 0) for (gpid, dev, ctx, st), n in per_key.items()]
    else:
        groups = conn.execute(
            f"SELECT {pid_col}, deviceId, {ctx_col}, streamId, count(*), sum({times_bad}), "
            f"sum(NOT ({times_bad}) AND ({ids_bad})) FROM {KERNEL_TABLE} GROUP BY 1, 2, 3, 4").fetchall()
    clean = per_launch is not None
    bad_ids = 0
    per_stream: list[tuple[int, ...]] = []
    for gpid, dev, ctx, st, n, bad_times, bad_id in groups:
        keys_ok = False
        # globalPid packs the process id in its upper bits: any non-negative 64-bit value.
        if _id_ok(dev) and _id_ok(st) and (ctx is None or _id_ok(ctx)) and \
                (gpid is None or (isinstance(gpid, int) and gpid >= 0)):
            keys_ok = True
            bad_ids += bad_id
            per_stream.append((1, pid_of(gpid), dev, ctx or 0, st, n))
        if not keys_ok or bad_times or bad_id:
            # The per-stream counts are then read from the checked view instead.
            clean = False
    if bad_ids:
        warnings.append(f"{path.name}: {bad_ids:,} kernel row(s) with correlation or graph ids that are "
                        f"not integers in range: those ids ignored")
    if clean:
        # Every value is what the schema promises (the usual case): plain columns, which SQLite
        # reads about twice as fast as the checked expressions below.
        ok, ctx, c, g, n = ("1", 'COALESCE("contextId", 0)' if "contextId" in cols else "0",
                            _plain("correlationId", cols), _plain("graphId", cols, True),
                            _plain("graphNodeId", cols, True))
    else:
        ok, ctx = f"({_valid(cols, _TIMES_AND_STREAM)})", f'COALESCE({_int("contextId", cols)}, 0)'
        c, g, n = _int("correlationId", cols), _int("graphId", cols, positive=True), \
            _int("graphNodeId", cols, positive=True)
    # ``k_all`` keeps every row with ``ok`` saying whether its times and stream ids are valid, so
    # that the one scan counting activities per stream also counts the rows left out.
    conn.execute(
        f'CREATE TEMP VIEW k_all AS SELECT {ok} AS ok, "start" AS s, "end" AS e, {_pid_expr(cols)} AS pid, '
        f'deviceId AS dev, {ctx} AS ctx, streamId AS st, "{full}" AS nm, '
        f'{f"{chr(34)}{short}{chr(34)}" if short else "NULL"} AS ns, {c} AS c, {g} AS g, {n} AS n, '
        f'{_rowid(conn, KERNEL_TABLE)} AS i FROM {KERNEL_TABLE}')
    conn.execute(
        "CREATE TEMP VIEW k AS SELECT s, e, pid, dev, ctx, st, nm, ns, c, g, n, i FROM k_all WHERE ok"
    )
    if not clean or per_launch is None:
        return None
    return per_stream, [(dev, g, c, n, busy, start) for (dev, g, c), (n, busy, start) in per_launch.items()]


def _id_ok(value: object) -> TypeGuard[int]:
    """Whether a stream column's value is an integer id in range."""
    return isinstance(value, int) and 0 <= value <= MAX_VALUE


def _plain(col: str, cols: dict[str, str], positive: bool = False) -> str:
    """An id column known to hold only integers or NULL (0 as NULL where ``positive``)."""
    if col not in cols:
        return "NULL"
    return f'NULLIF("{col}", 0)' if positive else f'"{col}"'


def _copy_view(conn: sqlite3.Connection, tables: set[str]) -> list[str]:
    """The ``cp`` view over the memcpy/memset tables that have the needed columns; returns them."""
    arms = []
    used = []
    for table, kind in ((MEMCPY_TABLE, KIND_MEMCPY), (MEMSET_TABLE, KIND_MEMSET)):
        if table not in tables:
            continue
        cols = _columns(conn, table)
        if not set(_TIMES_AND_STREAM) <= set(cols):
            continue
        name = _int("copyKind", cols) if kind == KIND_MEMCPY else "NULL"
        arms.append(
            f'SELECT "start" AS s, "end" AS e, {_pid_expr(cols)} AS pid, deviceId AS dev, '
            f"COALESCE({_int('contextId', cols)}, 0) AS ctx, streamId AS st, '{kind}' AS kind, "
            f"{name} AS nm, {_int('correlationId', cols)} AS c, {_int('graphId', cols, positive=True)} AS g, "
            f"{_int('graphNodeId', cols, positive=True)} AS n, {_rowid(conn, table)} AS i FROM {table} "
            f"WHERE {_valid(cols, _TIMES_AND_STREAM)}"
        )
        used.append(table)
    if not arms:
        arms = [
            "SELECT 0 AS s, 0 AS e, 0 AS pid, 0 AS dev, 0 AS ctx, 0 AS st, '' AS kind, NULL AS nm, "
            "NULL AS c, NULL AS g, NULL AS n, 0 AS i WHERE 0"
        ]
    conn.execute("CREATE TEMP VIEW cp AS " + " UNION ALL ".join(arms))
    return used


def _runtime_view(conn: sqlite3.Connection, tables: set[str]) -> None:
    cols = _columns(conn, RUNTIME_TABLE) if RUNTIME_TABLE in tables else {}
    if {"start", "end", "correlationId", "nameId"} <= set(cols):
        tid = '"globalTid"' if "globalTid" in cols else "0"
        conn.execute(
            f'CREATE TEMP VIEW rt AS SELECT "start" AS s, "end" AS e, {_pid_expr(cols, "globalTid")} AS pid, '
            f"{tid} AS tid, {_int('correlationId', cols)} AS c, nameId AS nm FROM {RUNTIME_TABLE} "
            f"WHERE {_valid(cols, ('start', 'end'))} AND {_int('correlationId', cols)} IS NOT NULL"
        )
    else:
        conn.execute(
            "CREATE TEMP VIEW rt AS SELECT 0 AS s, 0 AS e, 0 AS pid, 0 AS tid, 0 AS c, 0 AS nm WHERE 0"
        )


def _range_view(conn: sqlite3.Connection, tables: set[str]) -> None:
    cols = _columns(conn, NVTX_TABLE) if NVTX_TABLE in tables else {}
    if {"start", "end", "eventType"} <= set(cols):
        text = "n.text" if "text" in cols else "NULL"
        join = ""
        if "textId" in cols and "StringIds" in tables:
            text = f"COALESCE({text}, s.value)"
            join = "LEFT JOIN StringIds s ON s.id = n.textId"
        tid = "n.globalTid" if "globalTid" in cols else "0"
        types = ",".join(str(t) for t in NVTX_RANGE_TYPES)
        conn.execute(
            f'CREATE TEMP VIEW rg AS SELECT n."start" AS s, n."end" AS e, CAST({text} AS TEXT) AS text, '
            f"{tid} AS tid, 'nvtx' AS src FROM {NVTX_TABLE} n {join} WHERE n.eventType IN ({types}) "
            f"AND typeof(n.\"start\") = 'integer' AND typeof(n.\"end\") = 'integer' "
            f'AND n."end" >= n."start" AND n."start" >= 0'
        )
    else:
        conn.execute("CREATE TEMP VIEW rg AS SELECT 0 AS s, 0 AS e, '' AS text, 0 AS tid, '' AS src WHERE 0")


def _node_events_view(conn: sqlite3.Connection, tables: set[str]) -> bool:
    cols = _columns(conn, NODE_EVENTS_TABLE) if NODE_EVENTS_TABLE in tables else {}
    if {"start", "graphNodeId"} <= set(cols):
        tid = '"globalTid"' if "globalTid" in cols else "0"
        conn.execute(
            f'CREATE TEMP VIEW gne AS SELECT "start" AS s, {tid} AS tid, '
            f'{_int("graphNodeId", cols)} AS node, '
            f'{_int("originalGraphNodeId", cols, positive=True)} AS orig '
            f"FROM {NODE_EVENTS_TABLE} WHERE typeof(\"start\") = 'integer'"
        )
        return True
    conn.execute("CREATE TEMP VIEW gne AS SELECT 0 AS s, 0 AS tid, 0 AS node, NULL AS orig WHERE 0")
    return False


def _read_graph_launches(conn: sqlite3.Connection, tables: set[str]) -> list[GraphLaunchBlock]:
    if GRAPH_TRACE_TABLE not in tables:
        return []
    cols = _columns(conn, GRAPH_TRACE_TABLE)
    if not {"start", "end"} <= set(cols):
        return []
    sql = (
        f'SELECT "start", "end", {_int("deviceId", cols)}, {_int("contextId", cols)}, '
        f"{_int('streamId', cols)}, {_pid_expr(cols)}, {_int('correlationId', cols)}, "
        f"{_int('graphId', cols)}, {_int('graphExecId', cols)} "
        f'FROM {GRAPH_TRACE_TABLE} WHERE {_valid(cols, ("start", "end"))} ORDER BY "start"'
    )
    out = []
    for start, end, dev, ctx, stream, pid, corr, gid, gexec in conn.execute(sql):
        key = f"pid{pid}/dev{dev or 0}/ctx{ctx or 0}/s{stream or 0}"
        out.append(GraphLaunchBlock(start_ns=start, end_ns=end, device=dev or 0, pid=pid, context=ctx or 0,
                                    stream=stream or 0, stream_key=key, correlation=corr, graph_id=gid,
                                    graph_exec_id=gexec))
    return out


def _runtime_names(conn: sqlite3.Connection, tables: set[str]) -> dict[int, str]:
    """Text of every runtime API name id used (a trace calls a few dozen distinct APIs)."""
    if (
        RUNTIME_TABLE not in tables
        or "nameId" not in _columns(conn, RUNTIME_TABLE)
        or "StringIds" not in tables
    ):
        return {}
    return {i: str(v) for i, v in conn.execute(
        f"SELECT id, value FROM StringIds WHERE id IN (SELECT DISTINCT nameId FROM {RUNTIME_TABLE})")
        if v is not None}


def _string_lookup(conn: sqlite3.Connection, tables: set[str], path: Path) -> Callable[[int], str | None]:
    if "StringIds" not in tables:
        return lambda sid: None

    def lookup(sid: int) -> str | None:
        # Called while kernels are read, long after opening: damage found here is reported here.
        try:
            row = conn.execute("SELECT value FROM StringIds WHERE id = ?", (sid,)).fetchone()
        except DATABASE_ERRORS as err:
            raise InputError(f"corrupt or unreadable nsys export ({database_error_text(err)})",
                             path=path) from None
        return None if row is None or row[0] is None else str(row[0])
    return lookup


def _count_skipped(conn: sqlite3.Connection, db: TraceDB, tables: list[str]) -> None:
    for table in tables:
        cols = _columns(conn, table)
        bad = conn.execute(
            f"SELECT count(*) FROM {table} WHERE NOT ({_valid(cols, _TIMES_AND_STREAM)})"
        ).fetchone()[0]
        if bad:
            db.skipped[table] = bad
            db.warnings.append(
                f"{db.source.name}: skipped {bad:,} {table} row(s) whose start/end or device/stream "
                f"ids are missing, not integers or out of range"
            )


def read_nsys_sqlite(path: str | Path, progress: Progress | None = None) -> TraceDB:
    """Open an nsys SQLite export read-only and describe it as a ``TraceDB``.

    Raises ``InputError`` for a file that is not SQLite, is corrupt, or has no kernel table. A
    graph-mode capture (whole-graph launches, no kernels inside graphs) adds a warning telling
    the user to re-capture with ``--cuda-graph-trace=node``.
    """
    path = Path(path)
    conn = _connect(path)
    try:
        return _open(conn, path, progress)
    except DATABASE_ERRORS as err:
        conn.close()
        raise InputError(f"corrupt or unreadable nsys export ({database_error_text(err)})",
                         path=path) from None
    except InputError:
        conn.close()
        raise


def _open(conn: sqlite3.Connection, path: Path, progress: Progress | None) -> TraceDB:
    tables = _tables(conn)
    if KERNEL_TABLE not in tables:
        what = "an nsys export" if "StringIds" in tables or "META_DATA_EXPORT" in tables else "a SQLite file"
        extra = (f"; it has {GRAPH_TRACE_TABLE} only, so {RECAPTURE_HINT}" if GRAPH_TRACE_TABLE in tables
                 else "; profile with `nsys profile -t cuda ...` so that CUDA kernels are recorded")
        raise InputError(f"{what} without kernel tables ({KERNEL_TABLE} is missing){extra}",
                         path=path, field=KERNEL_TABLE)
    warnings: list[str] = []
    counted = _kernel_view(conn, tables, path, warnings)
    copies = _copy_view(conn, tables)
    _runtime_view(conn, tables)
    _range_view(conn, tables)
    has_events = _node_events_view(conn, tables)
    db = TraceDB(source=path, format="nsys-sqlite", conn=conn,
                 name_resolver=kernel_name_resolver(_string_lookup(conn, tables, path)))
    db.schema_version = _meta(conn, tables, "META_DATA_EXPORT", "EXPORT_SCHEMA_VERSION")
    db.graph_trace_mode = _meta(conn, tables, "META_DATA_CAPTURE", "CUDA_GRAPH_TRACE_OPTIONS:MODE")
    db.runtime_names = _runtime_names(conn, tables)
    db.graph_launches = _read_graph_launches(conn, tables)
    db.has_node_events = has_events
    db.warnings.extend(warnings)
    if counted is not None:
        db.memo["kernels_per_stream"], db.memo["kernels_per_launch"] = counted
    _count_skipped(conn, db, copies)  # kernel rows are counted by the scan per stream
    if db.graph_launches and db.value("SELECT 1 FROM k WHERE g IS NOT NULL LIMIT 1") is None:
        db.warnings.append(
            f"{path.name}: captured with --cuda-graph-trace=graph: {len(db.graph_launches)} CUDA graph "
            f"launch(es) are recorded as whole blocks without their kernels; {RECAPTURE_HINT}")
    if progress is not None:
        progress(f"opened {path.name} (nsys export, schema {db.schema_version or 'unknown'})")
    return db
