"""The host side of the stored replay or pass: CUDA runtime calls, synchronisations, memory copies
with their direction and memory kinds, and the GPU names, read from whatever the trace holds.

``tb-ad-layer report`` explains GPU idle gaps by host calls (a synchronisation, a launch that
arrived late), counts launches per step and splits copies by direction and pinned/pageable
memory; the converter stores these rows beside the kernels (tables ``host_calls``, ``memcpy``,
``gpus``). Sources: nsys ``CUPTI_ACTIVITY_KIND_RUNTIME``, ``_SYNCHRONIZATION`` and ``_MEMCPY``
(``bytes``, ``copyKind``, ``srcKind``, ``dstKind``) and ``TARGET_INFO_GPU``; profiler
``cuda_runtime`` events, ``gpu_memcpy`` events (``Memcpy DtoH (Device -> Pinned)``, ``args.bytes``)
and ``deviceProperties``. A table the trace lacks gives no rows, and None says "not recorded" to
the store, which then leaves its table out.
"""
from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field

from tb_ad_layer.trace.kernel import KIND_MEMCPY, Kernel, stream_key
from tb_ad_layer.trace.tracedb import DATABASE_ERRORS, TraceDB, copy_label

RUNTIME_TABLE = "CUPTI_ACTIVITY_KIND_RUNTIME"
SYNC_TABLE = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
MEMCPY_TABLE = "CUPTI_ACTIVITY_KIND_MEMCPY"
GPU_TABLE = "TARGET_INFO_GPU"
CUDA_DEVICE_TABLE = "TARGET_INFO_CUDA_DEVICE"
#: ``host_calls.kind`` values.
KIND_RUNTIME = "runtime"
KIND_SYNC = "sync"
#: CUDA API names that block the host until the GPU (or a stream, or an event) is done.
SYNC_NAME = re.compile(r"Synchronize|cuStreamQuery$", re.IGNORECASE)
#: nsys memory kinds (``ENUM_CUDA_MEM_KIND``) and synchronisation types (``ENUM_CUPTI_SYNC_TYPE``;
#: type 2, a stream waiting on an event, blocks a stream, not the host, and is left out).
_MEM_KINDS = {0: "Pageable", 1: "Pinned", 2: "Device", 3: "Array", 4: "Managed",
              5: "Device Static", 6: "Managed Static", 7: "Unknown"}
_SYNC_TYPES = {1: "cudaEventSynchronize", 3: "cudaStreamSynchronize", 4: "cudaDeviceSynchronize"}
_PROFILER_COPY = re.compile(r"Memcpy\s+(\w+)\s*(?:\((\w[\w ]*?)\s*->\s*(\w[\w ]*?)\))?")
_NSYS_COPY = re.compile(r"\[CUDA memcpy ([^\]]+)\]")
_VERSION_SUFFIX = re.compile(r"_v\d+$")


#: ``(start, end, tid, correlation, name, kind)`` of one host call.
HostCall = tuple[int, int, "int | None", "int | None", str, str]
#: ``(start, end, stream key, correlation, direction, bytes, src kind, dst kind)`` of one copy.
HostCopy = tuple[int, int, "str | None", "int | None", str, "int | None", "str | None", "str | None"]


@dataclass
class HostActivity:
    """Host rows around the stored replay, times in ns on the trace's clock (not yet relative).

    ``calls``: ``(start, end, tid, correlation, name, kind)``; None when the trace records no
    runtime API calls. ``copies``: ``(start, end, stream key, correlation, direction, bytes,
    src kind, dst kind)``; None when it records no copy details. ``gpus``: device -> GPU name.
    """

    calls: list[HostCall] | None = None
    copies: list[HostCopy] | None = None
    gpus: dict[int, str] = field(default_factory=dict)


def _window(kernels: Sequence[Kernel]) -> tuple[int, int] | None:
    """From the earliest host launch (or kernel start) to the last kernel end."""
    if not kernels:
        return None
    lo = min(min(k.start_ns for k in kernels),
             min((k.launch_ns for k in kernels if k.launch_ns is not None), default=1 << 62))
    return lo, max(k.end_ns for k in kernels)


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table','view')")}


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}


def read_host(db: TraceDB, kernels: Sequence[Kernel]) -> HostActivity:
    """The host activity around ``kernels`` (the stored replay or pass). Damage in the host
    tables is not fatal: the kernels are what the conversion is for, so what cannot be read is
    left out."""
    window = _window(kernels)
    out = HostActivity()
    try:
        if db.format == "nsys-sqlite":
            _nsys(db, kernels, window, out)
        else:
            _profiler(db, kernels, window, out)
    except DATABASE_ERRORS:
        return HostActivity()
    return out


def _direction(label: str) -> str:
    m = _NSYS_COPY.search(label) or _PROFILER_COPY.search(label)
    return m[1].split()[0] if m else "Unknown"


def _nsys(db: TraceDB, kernels: Sequence[Kernel], window: tuple[int, int] | None,
          out: HostActivity) -> None:
    conn = db.conn
    tables = _tables(conn)
    if GPU_TABLE in tables and {"id", "name"} <= _columns(conn, GPU_TABLE):
        names = {d: str(n) for d, n in conn.execute(f"SELECT id, name FROM {GPU_TABLE}")
                 if isinstance(d, int) and n}
        # Kernels name the CUDA device; TARGET_INFO_CUDA_DEVICE says which GPU id that is.
        cuda = {}
        if CUDA_DEVICE_TABLE in tables and {"gpuId", "cudaId"} <= _columns(conn, CUDA_DEVICE_TABLE):
            cuda = {c: g for g, c in conn.execute(f"SELECT gpuId, cudaId FROM {CUDA_DEVICE_TABLE}")
                    if isinstance(g, int) and isinstance(c, int)}
        out.gpus = {c: names[g] for c, g in cuda.items() if g in names} or names
    if window is None:
        return
    lo, hi = window
    pids = {k.pid for k in kernels}
    if RUNTIME_TABLE in tables and {"start", "end", "globalTid", "correlationId", "nameId"} \
            <= _columns(conn, RUNTIME_TABLE):
        calls: list[HostCall] = []
        for s, e, gtid, c, nm in conn.execute(
                f'SELECT "start", "end", globalTid, correlationId, nameId FROM {RUNTIME_TABLE} '
                f'WHERE "end" >= ? AND "start" <= ? ORDER BY "start"', (lo, hi)):
            if gtid is not None and gtid // 0x1000000 % 0x1000000 not in pids:
                continue
            name = _VERSION_SUFFIX.sub("", db.runtime_names.get(nm, f"api #{nm}"))
            calls.append((s, e, gtid % 0x1000000 if gtid is not None else None, c, name,
                          KIND_SYNC if SYNC_NAME.search(name) else KIND_RUNTIME))
        seen = {c[3] for c in calls if c[3] is not None}
        if SYNC_TABLE in tables and {"start", "end", "syncType", "correlationId", "globalPid"} \
                <= _columns(conn, SYNC_TABLE):
            for s, e, st, c, gpid in conn.execute(
                    f'SELECT "start", "end", syncType, correlationId, globalPid FROM {SYNC_TABLE} '
                    f'WHERE "end" >= ? AND "start" <= ?', (lo, hi)):
                if st in _SYNC_TYPES and c not in seen \
                        and (gpid is None or gpid // 0x1000000 % 0x1000000 in pids):
                    calls.append((s, e, None, c, _SYNC_TYPES[st], KIND_SYNC))
        calls.sort(key=lambda r: (r[0], r[1]))
        out.calls = calls
    cols = _columns(conn, MEMCPY_TABLE) if MEMCPY_TABLE in tables else set()
    if {"start", "end", "bytes", "copyKind", "deviceId", "streamId"} <= cols:
        src = "srcKind" if "srcKind" in cols else "NULL"
        dst = "dstKind" if "dstKind" in cols else "NULL"
        ctx = "contextId" if "contextId" in cols else "0"
        gpid = "globalPid" if "globalPid" in cols else "NULL"
        corr = "correlationId" if "correlationId" in cols else "NULL"
        devices = {k.device for k in kernels}
        copies: list[HostCopy] = []
        for s, e, nbytes, kind, dev, st, sk, dk, cx, gp, c in conn.execute(
                f'SELECT "start", "end", bytes, copyKind, deviceId, streamId, {src}, {dst}, {ctx}, '
                f'{gpid}, {corr} FROM {MEMCPY_TABLE} WHERE "end" >= ? AND "start" <= ? '
                f'ORDER BY "start"', (min(k.start_ns for k in kernels), hi)):
            if dev not in devices:
                continue
            pid = gp // 0x1000000 % 0x1000000 if isinstance(gp, int) else 0
            copies.append((s, e, stream_key(pid, dev or 0, cx or 0, st or 0), c,
                           _direction(copy_label(KIND_MEMCPY, kind, db.format)),
                           nbytes if isinstance(nbytes, int) else None,
                           _MEM_KINDS.get(sk) if isinstance(sk, int) else None,
                           _MEM_KINDS.get(dk) if isinstance(dk, int) else None))
        out.copies = copies


def _profiler(db: TraceDB, kernels: Sequence[Kernel], window: tuple[int, int] | None,
              out: HostActivity) -> None:
    names = db.memo.get("gpu_names")
    if isinstance(names, dict):
        out.gpus = {int(d): str(n) for d, n in names.items()}
    if window is None:
        return
    lo, hi = window
    rows = db.rows("SELECT s, e, tid, c, nm FROM rt WHERE e >= ? AND s <= ? ORDER BY s, e", (lo, hi))
    if db.runtime_names:
        out.calls = [(s, e, t, c, str(nm), KIND_SYNC if SYNC_NAME.search(str(nm)) else KIND_RUNTIME)
                     for s, e, t, c, nm in rows]
    copy_bytes = db.memo.get("copy_bytes")
    if not isinstance(copy_bytes, dict):
        return
    start = min(k.start_ns for k in kernels)
    copies: list[HostCopy] = []
    for s, e, pid, dev, ctx, st, nm, c, i in db.rows(
            "SELECT s, e, pid, dev, ctx, st, nm, c, i FROM cp WHERE kind = ? AND e >= ? AND s <= ? "
            "ORDER BY s", (KIND_MEMCPY, start, hi)):
        m = _PROFILER_COPY.search(str(nm))
        copies.append((s, e, stream_key(pid or 0, dev or 0, ctx or 0, st or 0), c,
                       m[1] if m else "Unknown", copy_bytes.get(i),
                       m[2] if m and m[2] else None, m[3] if m and m[3] else None))
    out.copies = copies
