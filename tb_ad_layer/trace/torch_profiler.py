"""Read a PyTorch profiler (Kineto) Chrome-trace JSON (``.json``, ``.json.gz``, ``.pt.trace.json.gz``).

GPU kernels are ``ph: "X"``, ``cat: "kernel"`` events with ``pid`` = device, ``tid`` = stream and
``ts``/``dur`` in microseconds; ``args`` hold ``device``, ``stream``, ``context``, ``correlation``
and, in PyTorch builds from 2026 on, ``graph id``/``graph node id``. Kernels replayed from a CUDA
graph share the correlation id of the ``cudaGraphLaunch`` runtime event.
"""
from __future__ import annotations

import gzip
import json
import time
import zlib
from array import array
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from tb_ad_layer.errors import InputError
from tb_ad_layer.trace.kernel import KIND_KERNEL, KIND_MEMCPY, KIND_MEMSET
from tb_ad_layer.trace.names import shorten
from tb_ad_layer.trace.tracedata import NONE, LaunchTimes, NameInfo, NvtxRange, StreamInfo, TraceData

_GPU_CATS = {"kernel": KIND_KERNEL, "gpu_memcpy": KIND_MEMCPY, "gpu_memset": KIND_MEMSET}
_RUNTIME_CATS = {"cuda_runtime", "cuda_driver", "runtime"}
_ANNOTATION_CATS = {"user_annotation"}
_GRAPH_LAUNCH = ("cudaGraphLaunch", "cuGraphLaunch")

Progress = Callable[[str], None]


def _load_json(path: Path) -> Any:
    """Parse the file (gzip or plain); any damage becomes an InputError naming the place."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(2)
        opener = gzip.open if head == b"\x1f\x8b" else open
        with opener(path, "rt", encoding="utf-8") as fh:  # type: ignore[operator]
            return json.load(fh)
    except json.JSONDecodeError as err:
        raise InputError(f"invalid or truncated JSON: {err.msg} (column {err.colno})",
                         path=path, line=err.lineno) from None
    except (EOFError, gzip.BadGzipFile, zlib.error) as err:
        raise InputError(f"truncated or corrupt gzip data ({err})", path=path) from None
    except UnicodeDecodeError as err:
        raise InputError(f"not UTF-8 text at byte {err.start}", path=path) from None
    except OSError as err:
        raise InputError(f"cannot read trace ({err.strerror or err})", path=path) from None


def _ns(value: Any, path: Path, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"expected a number of microseconds, got {value!r}", path=path, field=where)
    return int(round(value * 1000))


def _opt_int(value: Any) -> int:
    """An id from ``args``; absent, null, negative or 0 graph ids -> NONE."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        return NONE
    return int(value)


def read_torch_profiler(path: str | Path, progress: Progress | None = None) -> TraceData:
    """Read GPU activities, graph launches, launch times and annotations of a profiler trace.

    Raises ``InputError`` for invalid/truncated JSON or gzip, a document that is not a Chrome
    trace, or a GPU event whose timing fields are not numbers.
    """
    path = Path(path)
    t0 = time.perf_counter()
    doc = _load_json(path)
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        raise InputError("not a Chrome trace: no 'traceEvents' list", path=path, field="traceEvents")
    data = TraceData(source=path, format="torch-profiler")
    if isinstance(doc, dict) and doc.get("schemaVersion") is not None:
        data.schema_version = str(doc.get("schemaVersion"))
    names: dict[tuple[str, str], int] = {}
    stream_index: dict[tuple[int, int, int], int] = {}
    gpu_rows: list[tuple[int, int, tuple[int, int, int], int, int, int, int]] = []
    launch_corr, launch_start = [], []
    cpu_pids: Counter[int] = Counter()
    annotations: list[NvtxRange] = []
    for i, ev in enumerate(events):
        if not isinstance(ev, dict) or ev.get("ph") != "X":
            continue
        cat = ev.get("cat")
        args = ev.get("args") if isinstance(ev.get("args"), dict) else {}
        kind = _GPU_CATS.get(cat) if isinstance(cat, str) else None
        if kind is not None:
            start = _ns(ev.get("ts"), path, f"traceEvents[{i}].ts")
            dur = _ns(ev.get("dur", 0), path, f"traceEvents[{i}].dur")
            device = _opt_int(args.get("device", ev.get("pid")))
            stream = _opt_int(args.get("stream", ev.get("tid")))
            context = _opt_int(args.get("context", 0))
            full = str(ev.get("name", "?"))
            key = (full, kind)
            idx = names.get(key)
            if idx is None:
                idx = names[key] = len(data.names)
                short = shorten(full) if kind == KIND_KERNEL else full
                data.names.append(NameInfo(full=full, short=short, kind=kind))
            gpu_rows.append((start, start + max(dur, 0), (max(device, 0), max(context, 0), max(stream, 0)), idx,
                             _opt_int(args.get("correlation")), _opt_int(args.get("graph id")),
                             _opt_int(args.get("graph node id"))))
        elif cat in _RUNTIME_CATS:
            name = str(ev.get("name", ""))
            corr = _opt_int(args.get("correlation"))
            if isinstance(ev.get("pid"), int):
                cpu_pids[ev["pid"]] += 1
            if corr != NONE and isinstance(ev.get("ts"), (int, float)):
                launch_corr.append(corr)
                launch_start.append(_ns(ev["ts"], path, f"traceEvents[{i}].ts"))
                if name.startswith(_GRAPH_LAUNCH):
                    data.graph_launch_correlations.add(corr)
        elif cat in _ANNOTATION_CATS and isinstance(ev.get("ts"), (int, float)):
            start = _ns(ev["ts"], path, f"traceEvents[{i}].ts")
            dur = ev.get("dur", 0) if isinstance(ev.get("dur"), (int, float)) else 0
            annotations.append(NvtxRange(start, start + int(round(dur * 1000)), str(ev.get("name", "")),
                                         ev.get("tid", 0) if isinstance(ev.get("tid"), int) else 0))
    # GPU events carry the device as pid; the OS process is the one issuing CUDA calls.
    os_pid = cpu_pids.most_common(1)[0][0] if cpu_pids else 0
    streams: list[int] = []
    for _, _, key, *_ in gpu_rows:
        s_idx = stream_index.get(key)
        if s_idx is None:
            s_idx = stream_index[key] = len(data.streams)
            data.streams.append(StreamInfo(os_pid, *key))
        streams.append(s_idx)
    data.append_rows((r[0] for r in gpu_rows), (r[1] for r in gpu_rows), streams,
                     (r[3] for r in gpu_rows), (r[4] for r in gpu_rows), (r[5] for r in gpu_rows),
                     (r[6] for r in gpu_rows))
    order = sorted(range(len(launch_corr)), key=launch_corr.__getitem__)
    data.launch_loader = lambda: LaunchTimes(array("q", (launch_corr[j] for j in order)),
                                             array("q", (launch_start[j] for j in order)))
    annotations.sort(key=lambda r: r.start_ns)
    data.nvtx_loader = lambda: annotations
    if progress is not None:
        elapsed = time.perf_counter() - t0
        progress(f"read {len(gpu_rows):,} GPU events of {len(events):,} in {elapsed:.2f} s "
                 f"({len(events) / max(elapsed, 1e-9):,.0f} events/s)")
    return data
