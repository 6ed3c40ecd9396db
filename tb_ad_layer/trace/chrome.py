"""Write kernels as Chrome trace JSON, which Perfetto and chrome://tracing open.

One trace process per (device, OS process), one thread per CUDA stream, named by ``M``
metadata events; kernels are complete (``X``) events with µs ``ts``/``dur`` and their layer,
node and graph ids in ``args``.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from tb_ad_layer.trace.kernel import GraphLaunchBlock, Kernel


def _us(ns: int) -> float:
    return round(ns / 1000.0, 3)


def chrome_trace(kernels: Sequence[Kernel], launches: Iterable[GraphLaunchBlock] = (),
                 origin_ns: int | None = None, main_stream: str | None = None) -> dict[str, Any]:
    """The trace document; times are relative to ``origin_ns`` (default: first kernel start)."""
    launches = list(launches)
    starts = [k.start_ns for k in kernels] + [b.start_ns for b in launches]
    origin = origin_ns if origin_ns is not None else (min(starts) if starts else 0)
    procs: dict[tuple[int, int], int] = {}
    threads: dict[tuple[int, int], str] = {}
    records = [(k.device, k.pid, k.stream, k.stream_key) for k in kernels] + \
        [(b.device, b.pid, b.stream, b.stream_key) for b in launches]
    for device, pid, stream, key in sorted(set(records)):
        tp = procs.setdefault((device, pid), len(procs) + 1)
        threads[(tp, stream)] = key
    events: list[dict[str, Any]] = []
    for (device, pid), tp in procs.items():
        events.append({"ph": "M", "name": "process_name", "pid": tp, "tid": 0,
                       "args": {"name": f"GPU {device} (pid {pid})"}})
        events.append(
            {"ph": "M", "name": "process_sort_index", "pid": tp, "tid": 0, "args": {"sort_index": tp}}
        )
    for (tp, stream), key in threads.items():
        label = f"stream {stream}" + (" (main)" if key == main_stream else "")
        events.append({"ph": "M", "name": "thread_name", "pid": tp, "tid": stream, "args": {"name": label}})
        events.append({"ph": "M", "name": "thread_sort_index", "pid": tp, "tid": stream,
                       "args": {"sort_index": stream}})
    for k in kernels:
        args: dict[str, Any] = {"name": k.name, "stream": k.stream_key, "layer": k.layer, "node": k.node,
                                "correlation": k.correlation, "graph_id": k.graph_id,
                                "graph_node_id": k.graph_node_id, "eager": k.eager}
        if k.unmapped_reason:
            args["unmapped_reason"] = k.unmapped_reason
        if k.stats is not None:
            args["median_us"] = _us(int(k.stats.median_ns))
            args["replays"] = k.stats.count
        events.append(
            {
                "ph": "X",
                "name": k.short,
                "cat": k.kind,
                "ts": _us(k.start_ns - origin),
                "dur": _us(k.duration_ns),
                "pid": procs[(k.device, k.pid)],
                "tid": k.stream,
                "args": args,
            }
        )
    for b in launches:
        events.append(
            {
                "ph": "X",
                "name": f"CUDA graph {b.graph_id}",
                "cat": "cuda_graph",
                "ts": _us(b.start_ns - origin),
                "dur": _us(b.duration_ns),
                "pid": procs[(b.device, b.pid)],
                "tid": b.stream,
                "args": {
                    "graph_id": b.graph_id,
                    "graph_exec_id": b.graph_exec_id,
                    "correlation": b.correlation,
                },
            }
        )
    return {"traceEvents": events, "displayTimeUnit": "ns"}


def write_chrome_trace(path: str | Path, kernels: Sequence[Kernel], launches: Iterable[GraphLaunchBlock] = (),
                       origin_ns: int | None = None, main_stream: str | None = None) -> None:
    """Write ``chrome_trace(...)`` to ``path`` as compact UTF-8 JSON."""
    doc = chrome_trace(kernels, launches, origin_ns, main_stream)
    Path(path).write_text(json.dumps(doc, separators=(",", ":")), encoding="utf-8")
