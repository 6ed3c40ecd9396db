"""Read a PyTorch profiler (Kineto) Chrome-trace JSON (``.json``, ``.json.gz``, ``.pt.trace.json.gz``).

GPU kernels are ``ph: "X"``, ``cat: "kernel"`` events with ``pid`` = device, ``tid`` = stream and
``ts``/``dur`` in microseconds; ``args`` hold ``device``, ``stream``, ``context``, ``correlation``
and, in PyTorch builds from 2026 on, ``graph id``/``graph node id``. Kernels replayed from a CUDA
graph share the correlation id of the ``cudaGraphLaunch`` runtime event. Copies and fills are
``gpu_memcpy``/``gpu_memset`` events; ``user_annotation`` events are the ranges of
``record_function`` (``ProfilerStep#N``...), and ``python_function`` events named
``nn.Module: <Class>_N`` are module ranges (traces recorded ``with_modules``). ``cpu_op`` events
recorded with ``Input Dims`` (``record_shapes=True``) are kept for binding the graph's symbolic
sizes (:mod:`tb_ad_layer.trace.shapes`).

The events go into an in-memory ``TraceDB``. A value that cannot be a time or an id (a string,
NaN, Infinity, a number beyond 64 bits or negative) makes its event skipped, and the skips are
counted in a warning naming the first one; ids that are only descriptive (correlation, graph ids)
are dropped instead.
"""
from __future__ import annotations

import gzip
import json
import math
import sqlite3
import time
import zlib
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tb_ad_layer.errors import InputError
from tb_ad_layer.trace.kernel import KIND_KERNEL, KIND_MEMCPY, KIND_MEMSET
from tb_ad_layer.trace.names import shorten
from tb_ad_layer.trace.shapes import CPU_OPS, Dims, argument_dims
from tb_ad_layer.trace.tracedb import MAX_VALUE, NameInfo, TraceDB

_GPU_CATS = {"kernel": KIND_KERNEL, "gpu_memcpy": KIND_MEMCPY, "gpu_memset": KIND_MEMSET}
_RUNTIME_CATS = {"cuda_runtime", "cuda_driver", "runtime", "hip_runtime"}
MODULE_PREFIX = "nn.Module: "
_MAX_US = MAX_VALUE / 1000.0
LOW_32_BITS = 0xFFFFFFFF
#: ``TraceDB.memo`` key: graph node id -> the annotation its kernels carry (see
#: :func:`kernel_annotation`).
NODE_ANNOTATIONS = "node_annotations"
#: Kernel args that PyTorch's CUDA-graph kernel annotations write
#: (``torch.cuda._annotate_cuda_graph_trace``: a ``mark_kernels`` string becomes
#: ``annotation``, a dict its own keys), most specific first.
_ANNOTATION_KEYS = ("module_fqn", "fqn", "module", "annotation", "scope", "name")


def kernel_annotation(args: dict[str, Any]) -> str | None:
    """The module or layer annotation a CUDA-graph kernel carries in its args, as one text: a
    ``layer`` value (``"3"`` -> ``layer 3``) first, else the first of the module-path keys
    (``model.layers.3.mlp``); None when it carries none."""
    layer = args.get("layer")
    if isinstance(layer, (str, int)) and not isinstance(layer, bool) and str(layer).strip():
        text = str(layer).strip()
        return f"layer {text}" if text.isdigit() else text[:500]
    for key in _ANNOTATION_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()[:500]
    return None

_DDL = """
CREATE TABLE k (s INTEGER, e INTEGER, pid INTEGER, dev INTEGER, ctx INTEGER, st INTEGER, nm INTEGER,
                ns INTEGER, c INTEGER, g INTEGER, n INTEGER, i INTEGER);
CREATE TABLE cp (s INTEGER, e INTEGER, pid INTEGER, dev INTEGER, ctx INTEGER, st INTEGER, kind TEXT, nm TEXT,
                 c INTEGER, g INTEGER, n INTEGER, i INTEGER);
CREATE TABLE rt (s INTEGER, e INTEGER, pid INTEGER, tid INTEGER, c INTEGER, nm TEXT);
CREATE TABLE rg (s INTEGER, e INTEGER, text TEXT, tid INTEGER, src TEXT);
CREATE TABLE gne (s INTEGER, tid INTEGER, node INTEGER, orig INTEGER);
CREATE VIEW k_all AS SELECT 1 AS ok, * FROM k;
"""

Progress = Callable[[str], None]


def _load_json(path: Path) -> Any:
    """Parse the file (gzip or plain); any damage becomes an InputError naming the place."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(2)
        opener = gzip.open if head == b"\x1f\x8b" else open
        with opener(path, "rt", encoding="utf-8") as fh:
            return json.load(fh)
    except json.JSONDecodeError as err:
        raise InputError(f"invalid or truncated JSON: {err.msg} (column {err.colno})",
                         path=path, line=err.lineno) from None
    except RecursionError:
        raise InputError("JSON nested too deeply to be a profiler trace", path=path) from None
    except (EOFError, gzip.BadGzipFile, zlib.error) as err:
        raise InputError(f"truncated or corrupt gzip data ({err})", path=path) from None
    except UnicodeDecodeError as err:
        raise InputError(f"not UTF-8 text at byte {err.start}", path=path) from None
    except ValueError:
        # Python's json refuses to convert an integer of more than 4,300 digits (its message
        # is advice to Python programmers, not to the user).
        raise InputError("unreadable JSON value: a number thousands of digits long", path=path) from None
    except OSError as err:
        raise InputError(f"cannot read trace ({err.strerror or err})", path=path) from None


class _Skips:
    """Counts events left out (or ids dropped) for bad values, remembering the first of each."""

    def __init__(self) -> None:
        self.count: Counter[str] = Counter()
        self.first: dict[str, str] = {}

    def add(self, what: str, where: str, value: Any) -> None:
        self.count[what] += 1
        if what not in self.first:
            text = repr(value)
            self.first[what] = f"{where} = {text[:40]}"


def _time_ns(value: Any) -> int | None:
    """Microseconds -> ns, or None when not a finite number in range."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if not 0 <= value <= _MAX_US:
        return None
    return int(round(value * 1000))


def _id(value: Any) -> int | None:
    """An integer id in range (an integral float counts), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        if not math.isfinite(value) or value != int(value):
            return None
        value = int(value)
    if not isinstance(value, int) or not 0 <= value <= MAX_VALUE:
        return None
    return value


def _gpu_names(doc: Any) -> dict[int, str]:
    """Device -> GPU name from the trace's ``deviceProperties`` (what the roofline's peak is
    looked up by)."""
    props = doc.get("deviceProperties") if isinstance(doc, dict) else None
    out: dict[int, str] = {}
    for p in props if isinstance(props, list) else []:
        if isinstance(p, dict) and isinstance(p.get("name"), str):
            device = _id(p.get("id", len(out)))
            if device is not None:
                out[device] = p["name"][:200]
    return out


def read_torch_profiler(path: str | Path, progress: Progress | None = None) -> TraceDB:
    """Read GPU activities, CUDA calls, annotations and module ranges of a profiler trace.

    Raises ``InputError`` for invalid, truncated or too deeply nested JSON or gzip, and for a
    document that is not a Chrome trace.
    """
    path = Path(path)
    t0 = time.perf_counter()
    doc = _load_json(path)
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        raise InputError("not a Chrome trace: no 'traceEvents' list", path=path, field="traceEvents")
    conn = sqlite3.connect(":memory:")
    conn.executescript(_DDL)
    names: list[NameInfo] = []
    name_index: dict[tuple[str, str], int] = {}
    kernels: list[tuple[Any, ...]] = []
    copies: list[tuple[Any, ...]] = []
    runtime: list[tuple[Any, ...]] = []
    ranges: list[tuple[Any, ...]] = []
    cpu_pids: Counter[int] = Counter()
    runtime_names: dict[str, str] = {}
    copy_bytes: dict[int, int] = {}  # event index -> bytes of a copy (the host-side analysis)
    skips = _Skips()
    node_notes: dict[int, str] = {}
    # Ops recorded with their input dims (record_shapes=True): what binds a graph's symbolic
    # sizes (:mod:`tb_ad_layer.trace.shapes`).
    cpu_ops: list[tuple[int, int, int, str, tuple[Dims, ...]]] = []
    for i, ev in enumerate(events):
        if not isinstance(ev, dict) or ev.get("ph") != "X":
            continue
        cat = ev.get("cat")
        if not isinstance(cat, str):
            continue
        raw_args = ev.get("args")
        args: dict[str, Any] = raw_args if isinstance(raw_args, dict) else {}
        kind = _GPU_CATS.get(cat)
        where = f"traceEvents[{i}]"
        if kind is not None:
            start = _time_ns(ev.get("ts"))
            dur = _time_ns(ev.get("dur", 0))
            if start is None or dur is None:
                field = "ts" if start is None else "dur"
                skips.add("GPU event(s) skipped for a bad ts/dur", f"{where}.{field}", ev.get(field))
                continue
            device = _id(args.get("device", ev.get("pid")))
            stream = _id(args.get("stream", ev.get("tid")))
            if device is None or stream is None:
                field = "device" if device is None else "stream"
                skips.add("GPU event(s) skipped for a bad device/stream id", f"{where}.args.{field}",
                          args.get(field, ev.get("pid" if field == "device" else "tid")))
                continue
            context = _id(args.get("context", 0)) or 0
            ids = []
            for key in ("correlation", "graph id", "graph node id"):
                raw = args.get(key)
                got = _id(raw) if raw is not None else None
                if raw is not None and got is None:
                    skips.add("id(s) ignored for a bad value", f"{where}.args.{key}", raw)
                ids.append(got)
            corr, gid, gnid = ids
            gid = gid or None
            gnid = gnid if gid is not None else None
            if gnid is not None and gnid > LOW_32_BITS:
                # Recent CUPTI packs the graph id into the upper 32 bits (PyTorch #191119).
                gnid &= LOW_32_BITS
            note = kernel_annotation(args) if kind == KIND_KERNEL else None
            if note is not None and gnid is not None:
                node_notes[gnid] = note
            full = str(ev.get("name", "?"))
            end = min(start + dur, MAX_VALUE)
            if kind == KIND_KERNEL:
                idx = name_index.get((full, kind))
                if idx is None:
                    idx = name_index[(full, kind)] = len(names)
                    names.append(NameInfo(full=full, short=shorten(full), kind=kind))
                kernels.append((start, end, device, context, stream, idx, corr, gid, gnid, i))
            else:
                copies.append((start, end, device, context, stream, kind, full, corr, gid, gnid, i))
                size = _id(args.get("bytes"))
                if size is not None:
                    copy_bytes[i] = size
        elif cat in _RUNTIME_CATS:
            start = _time_ns(ev.get("ts"))
            dur = _time_ns(ev.get("dur", 0))
            corr = _id(args.get("correlation"))
            pid = _id(ev.get("pid"))
            if pid is not None:
                cpu_pids[pid] += 1
            if start is None or dur is None or corr is None:
                continue
            name = str(ev.get("name", ""))
            runtime_names.setdefault(name, name)
            runtime.append((start, start + dur, _id(ev.get("tid")) or 0, corr, name))
        elif cat == "cpu_op":
            dims = argument_dims(args.get("Input Dims"))
            start = _time_ns(ev.get("ts"))
            dur = _time_ns(ev.get("dur", 0))
            if dims is not None and any(d is not None for d in dims) and start is not None \
                    and dur is not None:
                cpu_ops.append((_id(ev.get("tid")) or 0, start, min(start + dur, MAX_VALUE),
                                str(ev.get("name", ""))[:200], dims))
        elif cat == "user_annotation" or (cat == "python_function"
                                          and str(ev.get("name", "")).startswith(MODULE_PREFIX)):
            start = _time_ns(ev.get("ts"))
            dur = _time_ns(ev.get("dur", 0))
            if start is None or dur is None:
                skips.add("CPU range(s) skipped for a bad ts/dur", f"{where}.ts", ev.get("ts"))
                continue
            src = "annotation" if cat == "user_annotation" else "module"
            ranges.append(
                (start, min(start + dur, MAX_VALUE), str(ev.get("name", "")), _id(ev.get("tid")) or 0, src)
            )
    # GPU events carry the device as pid; the OS process is the one issuing CUDA calls.
    os_pid = cpu_pids.most_common(1)[0][0] if cpu_pids else 0
    conn.executemany(
        "INSERT INTO k VALUES (?,?,?,?,?,?,?,NULL,?,?,?,?)",
        ((s, e, os_pid, d, c, st, nm, co, g, n, i) for s, e, d, c, st, nm, co, g, n, i in kernels),
    )
    conn.executemany(
        "INSERT INTO cp VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
        ((s, e, os_pid, d, c, st, kd, nm, co, g, n, i) for s, e, d, c, st, kd, nm, co, g, n, i in copies),
    )
    conn.executemany("INSERT INTO rt VALUES (?,?,?,?,?,?)",
                     ((s, e, os_pid, tid, c, nm) for s, e, tid, c, nm in runtime))
    conn.executemany("INSERT INTO rg VALUES (?,?,?,?,?)", ranges)
    db = TraceDB(source=path, format="torch-profiler", conn=conn,
                 name_resolver=lambda nm, ns: names[nm] if isinstance(nm, int) and 0 <= nm < len(names)
                 else NameInfo("<unnamed kernel>", "<unnamed kernel>"))
    if isinstance(doc, dict) and doc.get("schemaVersion") is not None:
        db.schema_version = str(doc.get("schemaVersion"))[:40]
    db.runtime_names = runtime_names
    db.memo["copy_bytes"] = copy_bytes
    db.memo["gpu_names"] = _gpu_names(doc)
    if cpu_ops:
        db.memo[CPU_OPS] = cpu_ops
    if node_notes:
        db.memo[NODE_ANNOTATIONS] = node_notes
    for what, n in skips.count.items():
        db.skipped[what] = n
        db.warnings.append(f"{path.name}: {n:,} {what} (first: {skips.first[what]})")
    if progress is not None:
        elapsed = time.perf_counter() - t0
        progress(f"read {len(kernels) + len(copies):,} GPU events of {len(events):,} in {elapsed:.2f} s")
    return db
