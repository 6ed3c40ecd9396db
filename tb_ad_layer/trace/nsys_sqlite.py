"""Read an Nsight Systems SQLite export (``nsys export --type sqlite``) into ``TraceData``.

The export schema changes between nsys versions (columns added or renamed, tables created only
when something was recorded, graph ids NULL in new exports and 0 in old ones, names as
``StringIds`` references or inline text), so every query is built from what ``sqlite_master`` and
``PRAGMA table_info`` report. Kernel rows are read in bulk into ``array`` columns
(``sqlite_bulk``): two million rows take about three seconds and 100 MB.
"""
from __future__ import annotations

import sqlite3
from array import array
from pathlib import Path
from typing import Any, Callable, Iterable

from tb_ad_layer.errors import InputError
from tb_ad_layer.trace.kernel import KIND_KERNEL, KIND_MEMCPY, KIND_MEMSET, GraphLaunchBlock
from tb_ad_layer.trace.names import shorten
from tb_ad_layer.trace.sqlite_bulk import Decoded, read_columns, read_rows
from tb_ad_layer.trace.tracedata import NONE, LaunchTimes, NameInfo, NvtxRange, StreamInfo, TraceData

KERNEL_TABLE = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY_TABLE = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET_TABLE = "CUPTI_ACTIVITY_KIND_MEMSET"
RUNTIME_TABLE = "CUPTI_ACTIVITY_KIND_RUNTIME"
GRAPH_TRACE_TABLE = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"
NVTX_TABLE = "NVTX_EVENTS"
NVTX_RANGE_TYPES = (59, 60)  # push/pop and start/end ranges; 34 (marks) have no duration
RECAPTURE_HINT = ("re-capture with `nsys profile --cuda-graph-trace=node ...` to get the kernels "
                  "inside CUDA graphs")
_BATCH = 50_000
_MEMCPY_LABELS = {
    0: "Unknown", 1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA", 6: "AtoD", 7: "DtoA",
    8: "DtoD", 9: "HtoH", 10: "PtoP", 11: "HtoD (unified)", 12: "DtoH (unified)", 13: "DtoD (unified)",
}

Progress = Callable[[str], None]


def pid_of(global_pid: int | None) -> int:
    """OS process id packed in an nsys ``globalPid``/``globalTid``."""
    return 0 if global_pid is None else global_pid // 0x1000000 % 0x1000000


def _connect(path: Path) -> sqlite3.Connection:
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.DatabaseError as err:
        raise InputError(f"not a readable SQLite database ({err})", path=path) from None


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
    return None if row is None else row[0]


class _NameTable:
    """Interns (full, short, kind) triples to small integer ids shared by all activity tables."""

    def __init__(self) -> None:
        self.names: list[NameInfo] = []
        self._index: dict[tuple[str, str, str], int] = {}

    def add(self, full: str, short_hint: str | None, kind: str = KIND_KERNEL) -> int:
        key = (full, short_hint or "", kind)
        idx = self._index.get(key)
        if idx is None:
            short = short_hint if kind != KIND_KERNEL else shorten(full, short_hint or None)
            idx = len(self.names)
            self.names.append(NameInfo(full=full, short=short or full, kind=kind))
            self._index[key] = idx
        return idx


class _StreamTable:
    """Maps the per-row stream expression to indices into a list of ``StreamInfo``."""

    def __init__(self) -> None:
        self.streams: list[StreamInfo] = []
        self._index: dict[tuple[int, int, int, int], int] = {}

    def add(self, global_pid: int | None, device: int | None, context: int | None, stream: int | None) -> int:
        key = (pid_of(global_pid), device or 0, context or 0, stream or 0)
        idx = self._index.get(key)
        if idx is None:
            idx = len(self.streams)
            self.streams.append(StreamInfo(*key))
            self._index[key] = idx
        return idx


def _col(cols: dict[str, str], name: str, default: str = "NULL") -> str:
    return f'"{name}"' if name in cols else default


def _stream_expr(conn: sqlite3.Connection, tables: Iterable[str], streams: _StreamTable) -> tuple[str, dict[int, int]]:
    """One integer SQL expression identifying a stream per row, and its value -> stream index map.

    Fetching one packed integer instead of four columns saves about a second per million rows.
    Each table may lack ``globalPid``/``contextId``; those count as 0.
    """
    combos: set[tuple[int | None, int | None, int | None, int | None]] = set()
    for table in tables:
        cols = _columns(conn, table)
        sql = (f'SELECT DISTINCT {_col(cols, "globalPid", "0")}, {_col(cols, "deviceId", "0")}, '
               f'{_col(cols, "contextId", "0")}, {_col(cols, "streamId", "0")} FROM "{table}"')
        combos.update(conn.execute(sql).fetchall())
    gpids = sorted({c[0] or 0 for c in combos})
    max_dev = max([c[1] or 0 for c in combos] + [0]) + 1
    max_ctx = max([c[2] or 0 for c in combos] + [0]) + 1
    max_stream = max([c[3] or 0 for c in combos] + [0]) + 1
    if min([min(c[1] or 0, c[2] or 0, c[3] or 0) for c in combos] + [0]) < 0 or \
            len(gpids) * max_dev * max_ctx * max_stream >= 2 ** 62 or len(gpids) > 512:
        raise OverflowError
    case = "CASE COALESCE(globalPid, 0) " + " ".join(f"WHEN {g} THEN {i}" for i, g in enumerate(gpids)) + " END" \
        if len(gpids) > 1 else "0"
    expr = (f"((({case}) * {max_dev} + COALESCE(deviceId, 0)) * {max_ctx} + COALESCE(contextId, 0))"
            f" * {max_stream} + COALESCE(streamId, 0)")
    value_to_index: dict[int, int] = {}
    for gp, dev, ctx, st in combos:
        value = ((gpids.index(gp or 0) * max_dev + (dev or 0)) * max_ctx + (ctx or 0)) * max_stream + (st or 0)
        value_to_index[value] = streams.add(gp, dev, ctx, st)
    return expr, value_to_index


def _table_stream_expr(cols: dict[str, str], base: str) -> str:
    """Adapt the packed stream expression to a table lacking globalPid or contextId columns."""
    expr = base
    if "globalPid" not in cols:
        expr = expr.replace("COALESCE(globalPid, 0)", "0")
    if "contextId" not in cols:
        expr = expr.replace("COALESCE(contextId, 0)", "0")
    return expr


class _NameKeys(dict):
    """Packed (full id << 32 | short id) -> name index, resolving ``StringIds`` on first sight.

    Resolving lazily spares a full-table DISTINCT scan; a trace has only thousands of names.
    """

    def __init__(self, conn: sqlite3.Connection, names: _NameTable, bits: int) -> None:
        super().__init__()
        self._conn = conn
        self._names = names
        self._bits = bits

    def _text(self, sid: int) -> str | None:
        if not sid:
            return None
        row = self._conn.execute("SELECT value FROM StringIds WHERE id = ?", (sid,)).fetchone()
        return None if row is None else row[0]

    def __missing__(self, key: int) -> int:
        full_id, short_id = key >> self._bits, key & ((1 << self._bits) - 1)
        full = self._text(full_id) or f"<unknown kernel name #{full_id}>"
        idx = self[key] = self._names.add(full, self._text(short_id))
        return idx


def _kernel_names(conn: sqlite3.Connection, cols: dict[str, str], tables: set[str],
                  names: _NameTable) -> tuple[str, Callable[[Any], int], int | None]:
    """SQL expression for the per-row name key, the key -> name index function, and the bits of
    one string id (None for text keys).

    With ``StringIds`` the key is an integer ``full id << bits | short id``; inline text names
    give a text key.

    Names are either ``StringIds`` references (all exports since ~2020) or inline text.
    """
    full_col = next((c for c in ("demangledName", "name", "mangledName", "shortName") if c in cols), None)
    if full_col is None:
        raise InputError(f"{KERNEL_TABLE} has no kernel name column (demangledName/shortName)",
                         field=KERNEL_TABLE)
    short_col = "shortName" if "shortName" in cols and full_col != "shortName" else None
    sample = conn.execute(f'SELECT typeof("{full_col}") FROM {KERNEL_TABLE} LIMIT 1').fetchone()
    inline = "TEXT" in cols[full_col] or (sample is not None and sample[0] == "text") or "StringIds" not in tables
    if inline:
        def from_text(value: Any) -> int:
            full, _, short = str(value).partition("\x01")
            return names.add(full, short or None)
        expr = f'"{full_col}"' + (f' || char(1) || COALESCE("{short_col}", \'\')' if short_col else "")
        return expr, from_text, None
    short_expr = f'COALESCE("{short_col}", 0)' if short_col else "0"
    max_id = conn.execute("SELECT max(id) FROM StringIds").fetchone()[0] or 0
    bits = max(1, int(max_id).bit_length())
    return f'("{full_col}" << {bits}) | {short_expr}', _NameKeys(conn, names, bits).__getitem__, bits


def _graph_exprs(cols: dict[str, str]) -> tuple[str, str]:
    # Old exports write 0 where there is no graph, new ones NULL: both become NONE.
    gid = 'COALESCE(NULLIF("graphId", 0), -1)' if "graphId" in cols else "-1"
    gnid = 'COALESCE(NULLIF("graphNodeId", 0), -1)' if "graphNodeId" in cols else "-1"
    return gid, gnid


def _read_kernels(conn: sqlite3.Connection, tables: set[str], data: TraceData, names: _NameTable,
                  stream_map: dict[int, int], stream_expr: str, progress: Progress | None) -> None:
    cols = _columns(conn, KERNEL_TABLE)
    for needed in ("start", "end"):
        if needed not in cols:
            raise InputError(f"{KERNEL_TABLE} has no '{needed}' column", field=f"{KERNEL_TABLE}.{needed}")
    name_expr, name_of, bits = _kernel_names(conn, cols, tables, names)
    gid, gnid = _graph_exprs(cols)
    corr = f'COALESCE({_col(cols, "correlationId", "-1")}, -1)'
    total = conn.execute(f"SELECT count(*) FROM {KERNEL_TABLE}").fetchone()[0]
    stream_sql = _table_stream_expr(cols, stream_expr)
    start, end = 'COALESCE("start", 0)', 'COALESCE("end", "start", 0)'
    stream_bits = max(stream_map, default=0).bit_length()
    if bits is not None and stream_bits + 2 * bits <= 62:
        # One integer carries both stream and name: one value less per row.
        shift = 2 * bits
        mask = (1 << shift) - 1
        stream_of = Decoded(lambda key: stream_map[key >> shift]).__getitem__
        name_packed = Decoded(lambda key: name_of(key & mask)).__getitem__
        key = f"({stream_sql}) << {shift} | ({name_expr})"
        got = read_columns(conn, KERNEL_TABLE, [start, end, key, corr, gid, gnid], progress, "kernel", total)
        if got is not None:
            s_col, e_col, k_col, c_col, g_col, n_col = got
            data.append_rows(s_col, e_col, map(stream_of, k_col), map(name_packed, k_col), c_col, g_col, n_col)
            return
        sql = f"SELECT {start}, {end}, {key}, {corr}, {gid}, {gnid} FROM {KERNEL_TABLE}"
        read_rows(conn, sql, data, stream_of, name_packed, progress, "kernel", total, packed=True)
    else:
        sql = f"SELECT {start}, {end}, {stream_sql}, {name_expr}, {corr}, {gid}, {gnid} FROM {KERNEL_TABLE}"
        read_rows(conn, sql, data, stream_map.__getitem__, name_of, progress, "kernel", total)


def _read_copies(conn: sqlite3.Connection, table: str, kind: str, data: TraceData, names: _NameTable,
                 stream_map: dict[int, int], stream_expr: str, progress: Progress | None) -> None:
    """Append memcpy/memset rows, named like nsys shows them (``[CUDA memcpy DtoD]``)."""
    cols = _columns(conn, table)
    if not {"start", "end"} <= set(cols):
        return
    name_col = _col(cols, "copyKind", "0") if kind == KIND_MEMCPY else "0"
    if kind == KIND_MEMCPY:
        def name_of(value: object) -> int:
            label = _MEMCPY_LABELS.get(int(value or 0), f"kind {value}")  # type: ignore[arg-type]
            return names.add(f"[CUDA memcpy {label}]", f"[CUDA memcpy {label}]", KIND_MEMCPY)
    else:
        def name_of(value: object) -> int:
            return names.add("[CUDA memset]", "[CUDA memset]", KIND_MEMSET)
    gid, gnid = _graph_exprs(cols)
    sql = (f'SELECT COALESCE("start", 0), COALESCE("end", "start", 0), {_table_stream_expr(cols, stream_expr)}, '
           f'{name_col}, COALESCE({_col(cols, "correlationId", "-1")}, -1), {gid}, {gnid} FROM "{table}"')
    total = conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]
    read_rows(conn, sql, data, stream_map.__getitem__, name_of, progress, kind, total)


def _read_graph_launches(conn: sqlite3.Connection, tables: set[str]) -> list[GraphLaunchBlock]:
    if GRAPH_TRACE_TABLE not in tables:
        return []
    cols = _columns(conn, GRAPH_TRACE_TABLE)
    sql = (f'SELECT "start", "end", {_col(cols, "deviceId", "0")}, {_col(cols, "contextId", "0")}, '
           f'{_col(cols, "streamId", "0")}, {_col(cols, "globalPid", "0")}, {_col(cols, "correlationId")}, '
           f'{_col(cols, "graphId")}, {_col(cols, "graphExecId")} FROM {GRAPH_TRACE_TABLE} ORDER BY "start"')
    out = []
    for start, end, dev, ctx, stream, gpid, corr, gid, gexec in conn.execute(sql):
        pid = pid_of(gpid)
        info = StreamInfo(pid, dev or 0, ctx or 0, stream or 0)
        out.append(GraphLaunchBlock(start_ns=start, end_ns=end, device=info.device, pid=pid,
                                    context=info.context, stream=info.stream, stream_key=info.key,
                                    correlation=corr, graph_id=gid, graph_exec_id=gexec))
    return out


def _runtime_name_ids(conn: sqlite3.Connection, tables: set[str], like: tuple[str, ...]) -> list[int]:
    """``StringIds`` ids of runtime API names matching any of the LIKE patterns."""
    if RUNTIME_TABLE not in tables or "StringIds" not in tables:
        return []
    if "nameId" not in _columns(conn, RUNTIME_TABLE):
        return []
    where = " OR ".join("value LIKE ?" for _ in like)
    return [r[0] for r in conn.execute(
        f"SELECT id FROM StringIds WHERE id IN (SELECT DISTINCT nameId FROM {RUNTIME_TABLE}) AND ({where})", like)]


def _read_graph_launch_correlations(conn: sqlite3.Connection, tables: set[str]) -> set[int]:
    ids = _runtime_name_ids(conn, tables, ("cudaGraphLaunch%", "cuGraphLaunch%"))
    if not ids or "correlationId" not in _columns(conn, RUNTIME_TABLE):
        return set()
    marks = ",".join("?" * len(ids))
    return {r[0] for r in conn.execute(
        f"SELECT correlationId FROM {RUNTIME_TABLE} WHERE nameId IN ({marks}) AND correlationId IS NOT NULL", ids)}


def _guarded(path: Path, load: Callable[[], Any]) -> Callable[[], Any]:
    """``load`` with database damage reported as InputError (loaders run long after reading)."""
    def run() -> Any:
        try:
            return load()
        except (sqlite3.DatabaseError, TypeError, ValueError) as err:
            raise InputError(f"corrupt or unreadable nsys export ({err})", path=path) from None
    return run


def _launch_loader(path: Path) -> Callable[[], LaunchTimes]:
    """Loader of CPU launch times (kernel, graph, copy launches) sorted by correlation id."""
    def load() -> LaunchTimes:
        conn = _connect(path)
        try:
            tables = _tables(conn)
            ids = _runtime_name_ids(conn, tables, ("%Launch%", "%Memcpy%", "%Memset%"))
            corr, start = array("q"), array("q")
            if ids and "correlationId" in _columns(conn, RUNTIME_TABLE):
                marks = ",".join("?" * len(ids))
                cur = conn.execute(f'SELECT correlationId, "start" FROM {RUNTIME_TABLE} WHERE nameId IN ({marks}) '
                                   "AND correlationId IS NOT NULL ORDER BY correlationId", ids)
                while True:
                    batch = cur.fetchmany(_BATCH)
                    if not batch:
                        break
                    c, s = zip(*batch)
                    corr.extend(c)
                    start.extend(s)
            return LaunchTimes(corr, start)
        finally:
            conn.close()
    return load


def _nvtx_loader(path: Path) -> Callable[[], list[NvtxRange]]:
    """Loader of NVTX ranges; text is inline ``text`` or ``StringIds[textId]``."""
    def load() -> list[NvtxRange]:
        conn = _connect(path)
        try:
            tables = _tables(conn)
            if NVTX_TABLE not in tables:
                return []
            cols = _columns(conn, NVTX_TABLE)
            if not {"start", "end", "eventType"} <= set(cols):
                return []
            text = "n.text" if "text" in cols else "NULL"
            join = ""
            if "textId" in cols and "StringIds" in tables:
                text = f"COALESCE({text}, s.value)"
                join = "LEFT JOIN StringIds s ON s.id = n.textId"
            tid = "n.globalTid" if "globalTid" in cols else "0"
            types = ",".join(str(t) for t in NVTX_RANGE_TYPES)
            sql = (f'SELECT n."start", n."end", {text}, {tid} FROM {NVTX_TABLE} n {join} '
                   f'WHERE n.eventType IN ({types}) AND n."end" IS NOT NULL ORDER BY n."start"')
            return [NvtxRange(s, e, t or "", g or 0) for s, e, t, g in conn.execute(sql)]
        finally:
            conn.close()
    return load


def read_nsys_sqlite(path: str | Path, progress: Progress | None = None) -> TraceData:
    """Read kernels, copies, graph launches and metadata of an nsys SQLite export.

    Raises ``InputError`` for a file that is not SQLite, is corrupt, or has no kernel table.
    A graph-mode capture (whole-graph launches, no kernels inside graphs) adds a warning telling
    the user to re-capture with ``--cuda-graph-trace=node``.
    """
    path = Path(path)
    conn = _connect(path)
    try:
        try:
            return _read(conn, path, progress)
        except sqlite3.DatabaseError as err:
            raise InputError(f"corrupt or unreadable nsys export ({err})", path=path) from None
        except (TypeError, ValueError, OverflowError) as err:
            # Values of the wrong type where the schema promises integers.
            raise InputError(f"corrupt values in nsys export ({err})", path=path) from None
    finally:
        conn.close()


def _read(conn: sqlite3.Connection, path: Path, progress: Progress | None) -> TraceData:
    tables = _tables(conn)
    if KERNEL_TABLE not in tables:
        what = "an nsys export" if "StringIds" in tables or "META_DATA_EXPORT" in tables else "a SQLite file"
        extra = (f"; it has {GRAPH_TRACE_TABLE} only, so {RECAPTURE_HINT}" if GRAPH_TRACE_TABLE in tables
                 else "; profile with `nsys profile -t cuda ...` so that CUDA kernels are recorded")
        raise InputError(f"{what} without kernel tables ({KERNEL_TABLE} is missing){extra}",
                         path=path, field=KERNEL_TABLE)
    data = TraceData(source=path, format="nsys-sqlite")
    data.schema_version = _meta(conn, tables, "META_DATA_EXPORT", "EXPORT_SCHEMA_VERSION")
    data.graph_trace_mode = _meta(conn, tables, "META_DATA_CAPTURE", "CUDA_GRAPH_TRACE_OPTIONS:MODE")
    names, streams = _NameTable(), _StreamTable()
    activity = [KERNEL_TABLE] + [t for t in (MEMCPY_TABLE, MEMSET_TABLE) if t in tables]
    activity = [t for t in activity if {"start", "end", "streamId", "deviceId"} <= set(_columns(conn, t))]
    if KERNEL_TABLE not in activity:
        raise InputError(f"{KERNEL_TABLE} lacks start/end/deviceId/streamId columns", path=path,
                         field=KERNEL_TABLE)
    try:
        stream_expr, stream_map = _stream_expr(conn, activity, streams)
    except OverflowError:
        raise InputError("stream ids too large to index", path=path, field=KERNEL_TABLE) from None
    _read_kernels(conn, tables, data, names, stream_map, stream_expr, progress)
    kernel_rows = len(data)
    for table, kind in ((MEMCPY_TABLE, KIND_MEMCPY), (MEMSET_TABLE, KIND_MEMSET)):
        if table in activity:
            _read_copies(conn, table, kind, data, names, stream_map, stream_expr, progress)
    data.names = names.names
    data.streams = streams.streams
    data.graph_launches = _read_graph_launches(conn, tables)
    data.graph_launch_correlations = _read_graph_launch_correlations(conn, tables)
    data.nvtx_loader = _guarded(path, _nvtx_loader(path))
    data.launch_loader = _guarded(path, _launch_loader(path))
    has_graph_kernels = data.graph_id[:kernel_rows].count(NONE) != kernel_rows
    if data.graph_launches and not has_graph_kernels:
        data.warnings.append(
            f"{path.name}: captured with --cuda-graph-trace=graph: {len(data.graph_launches)} CUDA graph "
            f"launch(es) are recorded as whole blocks without their kernels; {RECAPTURE_HINT}")
    return data
