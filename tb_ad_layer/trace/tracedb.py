"""The format-neutral content of one trace file, as SQL relations that every later step queries.

A reader turns its file into a ``TraceDB``: an SQLite connection with five relations of the same
shape whatever the format (temporary views over an nsys export's own tables, or tables of an
in-memory database filled from a profiler trace):

``k``   kernels: ``s, e`` (start, end, ns), ``pid, dev, ctx, st`` (the stream), ``nm, ns`` (name
        keys), ``c`` (launch correlation id), ``g, n`` (CUDA graph id and graph node id), ``i``
        (row order); only rows whose times and stream ids are valid (``k_all``: every row, with
        ``ok`` saying whether it is valid)
``cp``  memory copies and fills: the same columns plus ``kind`` (``memcpy`` or ``memset``)
``rt``  CUDA API calls with a correlation id: ``s, e, pid, tid, c, nm``
``rg``  CPU ranges: ``s, e, tid, text, src`` (``nvtx``, ``annotation`` for profiler user
        annotations, ``module`` for ``nn.Module: <Class>_N`` ranges)
``gne`` CUDA graph node creation events: ``s, tid, node, orig`` (``orig``: the node it was cloned
        from, None for a node created during stream capture)

Missing ids are NULL. Keeping the rows in SQLite rather than Python objects is what lets a
trace of millions of kernels be read, aggregated per graph node and cut in a few seconds and a
few tens of megabytes: only the chosen replay or pass becomes ``Kernel`` objects.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tb_ad_layer.errors import InputError
from tb_ad_layer.trace.kernel import KIND_KERNEL, KIND_MEMSET, GraphLaunchBlock, Kernel, stream_key
from tb_ad_layer.trace.names import shorten

#: CUDA (and HIP: ROCm profiler traces replay graphs the same way) API calls that replay a
#: whole graph.
GRAPH_LAUNCH_PREFIXES = ("cudaGraphLaunch", "cuGraphLaunch", "hipGraphLaunch")
#: How a kernel whose name id points nowhere is shown (followed by the id and ``>``).
UNKNOWN_NAME = "<unknown kernel name #"
#: Largest time or id accepted (ns); beyond it a value is damage, not a measurement.
MAX_VALUE = (1 << 62) - 1
#: What reading a damaged database raises: SQLite's errors, and UnicodeDecodeError when SQLite's
#: own message quotes damaged schema text that is not UTF-8.
DATABASE_ERRORS = (sqlite3.DatabaseError, UnicodeDecodeError)


def database_error_text(err: Exception) -> str:
    """SQLite's message of ``err``, also when it quotes bytes that are not UTF-8."""
    if isinstance(err, UnicodeDecodeError) and isinstance(err.object, bytes):
        return err.object.decode("utf-8", "replace")
    return str(err)


@dataclass(slots=True, frozen=True)
class StreamInfo:
    """One CUDA stream: (OS process id, device, context, stream id)."""

    pid: int
    device: int
    context: int
    stream: int

    @property
    def key(self) -> str:
        """Text id, e.g. ``pid1234/dev0/ctx1/s7``."""
        return stream_key(self.pid, self.device, self.context, self.stream)


@dataclass(slots=True, frozen=True)
class NameInfo:
    """A distinct activity name: full demangled text, short family name, kind."""

    full: str
    short: str
    kind: str = KIND_KERNEL


@dataclass(slots=True, frozen=True)
class CpuRange:
    """A CPU-side range (NVTX push/pop or start/end, profiler annotation, module), in ns."""

    start_ns: int
    end_ns: int
    text: str
    tid: int = 0
    src: str = "nvtx"


#: ``name_resolver(nm, ns)``: the NameInfo of a kernel's name keys (full, short).
NameResolver = Callable[[Any, Any], NameInfo]


@dataclass
class TraceDB:
    """One opened trace: metadata, the SQL relations described above, and name/stream decoding.

    ``format`` is ``nsys-sqlite`` or ``torch-profiler``; ``graph_trace_mode`` the nsys
    ``CUDA_GRAPH_TRACE_OPTIONS:MODE`` (``Graph``/``Node``) when recorded. ``skipped`` counts rows
    left out for bad values, per relation; ``warnings`` say so in words. ``graph_launches`` are
    the whole-graph blocks of graph-mode captures. ``unknown_names`` collects the name ids of
    materialised kernels that point nowhere in ``StringIds``.
    """

    source: Path
    format: str
    conn: sqlite3.Connection
    name_resolver: NameResolver
    schema_version: str | None = None
    graph_trace_mode: str | None = None
    runtime_names: dict[Any, str] = field(default_factory=dict)
    graph_launches: list[GraphLaunchBlock] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    has_node_events: bool = False
    memo: dict[str, Any] = field(default_factory=dict)
    unknown_names: set[Any] = field(default_factory=set)
    _streams: dict[tuple[int, int, int, int], StreamInfo] = field(default_factory=dict)
    _names: dict[tuple[Any, Any, str], NameInfo] = field(default_factory=dict)
    _graph_launch_table: bool = False

    # -- queries ----------------------------------------------------------------------------

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """All rows of ``sql``; database damage becomes an ``InputError`` naming the file."""
        try:
            return self.conn.execute(sql, params).fetchall()
        except DATABASE_ERRORS as err:
            raise InputError(f"corrupt or unreadable trace ({database_error_text(err)})",
                             path=self.source) from None

    def value(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """The first column of the first row of ``sql`` (None when there is no row)."""
        got = self.rows(sql, params)
        return got[0][0] if got else None

    def close(self) -> None:
        self.conn.close()

    # -- decoding ---------------------------------------------------------------------------

    def stream(
        self, pid: int | None, device: int | None, context: int | None, stream: int | None
    ) -> StreamInfo:
        """The StreamInfo of a row's stream columns (missing ones count as 0)."""
        key = (pid or 0, device or 0, context or 0, stream or 0)
        info = self._streams.get(key)
        if info is None:
            info = self._streams[key] = StreamInfo(*key)
        return info

    def name(self, nm: Any, ns: Any = None, kind: str = KIND_KERNEL) -> NameInfo:
        """The NameInfo of a row's name keys."""
        key = (nm, ns, kind)
        info = self._names.get(key)
        if info is None:
            if kind == KIND_KERNEL:
                info = self.name_resolver(nm, ns)
                if info.full.startswith(UNKNOWN_NAME):
                    self.unknown_names.add(nm)
            else:
                label = copy_label(kind, nm, self.format)
                info = NameInfo(label, label, kind)
            self._names[key] = info
        return info

    def graph_launch_correlations(self) -> set[int]:
        """Correlation ids of the ``cudaGraphLaunch`` calls."""
        keys = [k for k, text in self.runtime_names.items() if text.startswith(GRAPH_LAUNCH_PREFIXES)]
        if not keys:
            return set()
        marks = ",".join("?" * len(keys))
        return {r[0] for r in self.rows(f"SELECT c FROM rt WHERE nm IN ({marks}) AND c IS NOT NULL", keys)}

    def graph_launch_table(self) -> str:
        """Name of a temporary table ``(c INTEGER PRIMARY KEY)`` of the graph launch correlation
        ids, built on first use, for joins."""
        if not self._graph_launch_table:
            try:
                self.conn.execute("CREATE TEMP TABLE IF NOT EXISTS graph_launch (c INTEGER PRIMARY KEY)")
                self.conn.executemany("INSERT OR IGNORE INTO graph_launch VALUES (?)",
                                      ((c,) for c in self.graph_launch_correlations()))
            except DATABASE_ERRORS as err:
                raise InputError(f"corrupt or unreadable trace ({database_error_text(err)})",
                                 path=self.source) from None
            self._graph_launch_table = True
        return "temp.graph_launch"

    def kernels(self, where: str, params: Sequence[Any] = (), *, copies: bool = True,
                copy_where: str | None = None, copy_params: Sequence[Any] | None = None) -> list[Kernel]:
        """Materialise the activities matching ``where`` (an SQL condition on the ``k`` columns,
        applied to ``cp`` too unless ``copy_where`` is given), with their CPU launch, sorted by
        start time, then graph node id, then row order."""
        # One launch per activity, even where the API table repeats a correlation id.
        launch = ("LEFT JOIN (SELECT c, pid, min(s) AS s, min(tid) AS tid FROM rt GROUP BY c, pid) r "
                  "ON r.c = a.c AND r.pid = a.pid")
        rows = self.rows(f"SELECT a.s, a.e, a.pid, a.dev, a.ctx, a.st, a.nm, a.ns, a.c, a.g, a.n, a.i, "
                         f"'{KIND_KERNEL}', r.s, r.tid FROM k a {launch} WHERE {where}", params)
        if copies:
            cw = where if copy_where is None else copy_where
            cparams = params if copy_params is None else copy_params
            rows += self.rows(f"SELECT a.s, a.e, a.pid, a.dev, a.ctx, a.st, a.nm, NULL, a.c, a.g, a.n, a.i, "
                              f"a.kind, r.s, r.tid FROM cp a {launch} WHERE {cw}", cparams)
        rows.sort(key=_row_order)
        out: list[Kernel] = []
        for s, e, pid, dev, ctx, st, nm, ns, c, g, n, _index, kind, ls, lt in rows:
            info = self.stream(pid, dev, ctx, st)
            name = self.name(nm, ns, kind)
            out.append(Kernel(name=name.full, short=name.short, start_ns=s, end_ns=e, device=info.device,
                              pid=info.pid, context=info.context, stream=info.stream, stream_key=info.key,
                              correlation=c, graph_id=g, graph_node_id=n, kind=kind, index=len(out),
                              launch_ns=ls, launch_tid=lt))
        return out

    def ranges(self, src: Iterable[str] | None = None) -> list[CpuRange]:
        """CPU ranges (all, or of the given sources), sorted by start."""
        where = ""
        params: list[str] = []
        if src is not None:
            wanted = list(src)
            where = f"WHERE src IN ({','.join('?' * len(wanted))})"
            params = wanted
        return [
            CpuRange(s, e, t or "", tid or 0, sc)
            for s, e, t, tid, sc in self.rows(
                f"SELECT s, e, text, tid, src FROM rg {where} ORDER BY s, e DESC", params
            )
        ]


def _row_order(row: tuple[Any, ...]) -> tuple[int, int, int, int]:
    node = row[10]
    return (row[0], node if node is not None else MAX_VALUE, 0 if row[12] == KIND_KERNEL else 1, row[11])


_MEMCPY_LABELS = {
    0: "Unknown", 1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA", 6: "AtoD", 7: "DtoA",
    8: "DtoD", 9: "HtoH", 10: "PtoP", 11: "HtoD (unified)", 12: "DtoH (unified)", 13: "DtoD (unified)",
}


def copy_label(kind: str, nm: Any, fmt: str) -> str:
    """Display name of a copy or fill: nsys spelling (``[CUDA memcpy DtoD]``) for nsys copy kinds,
    the profiler's own name otherwise."""
    if kind == KIND_MEMSET:
        return nm if isinstance(nm, str) and nm else "[CUDA memset]"
    if isinstance(nm, str) and nm:
        return nm
    if isinstance(nm, int):
        return f"[CUDA memcpy {_MEMCPY_LABELS.get(nm, f'kind {nm}')}]"
    return "[CUDA memcpy]"


def kernel_name_resolver(lookup: Callable[[int], str | None]) -> NameResolver:
    """A resolver for names stored as string ids (``lookup(id)`` gives the text or None) or as
    inline text."""
    def resolve(nm: Any, ns: Any) -> NameInfo:
        full = nm if isinstance(nm, str) else (lookup(nm) if isinstance(nm, int) else None)
        short_hint = ns if isinstance(ns, str) else (lookup(ns) if isinstance(ns, int) else None)
        if full is None:
            full = f"{UNKNOWN_NAME}{nm}>" if nm is not None else "<unnamed kernel>"
        return NameInfo(full, shorten(full, short_hint or None), KIND_KERNEL)
    return resolve


