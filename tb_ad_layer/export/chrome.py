"""A run store's kernels as Chrome trace JSON, which Perfetto and chrome://tracing open.

Used by ``tb-ad-layer export-trace`` and the plugin's ``api/download/trace.json``. One trace
process per (device, OS process), one thread per CUDA stream, named by ``M`` metadata events;
kernels are complete (``X``) events with µs ``ts``/``dur`` and their layer, node and graph ids in
``args``. Each event is made straight from a stored row: process, context and stream ids come
from the ``streams`` table, times are relative to the stored replay (``ts`` 0 is its start, as in
the plugin's timeline).
"""
from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Sequence
from typing import Any

from tb_ad_layer.store.reader import RunStore
from tb_ad_layer.store.records import StoredKernel, StreamRow

#: The category of every stored activity: the store keeps no kind per row.
CATEGORY = "kernel"


def _us(ns: float) -> float:
    return round(ns / 1000.0, 3)


def _stream_ids(info: StreamRow | None, key: str, device: int | None) -> tuple[int, int, int]:
    """(device, pid, stream id) of a stored stream. A kernel whose stream is missing from the
    ``streams`` table still gets a stable thread of its own (an id derived from its key), so
    nothing is dropped from the export."""
    derived = zlib.crc32(key.encode()) & 0xFFFF
    if info is not None:
        return (info.device if info.device is not None else (device or 0), info.pid or 0,
                info.stream if info.stream is not None else derived)
    return device or 0, 0, derived


def _event(k: StoredKernel, process: int, stream: int) -> dict[str, Any]:
    args: dict[str, Any] = {"name": k.name, "stream": k.stream, "layer": k.layer, "node": k.node,
                            "correlation": k.correlation, "graph_id": k.graph_id,
                            "graph_node_id": k.graph_node_id, "eager": False}
    if k.reason:
        args["unmapped_reason"] = k.reason
    if k.replays is not None and k.median_ns is not None and k.min_ns is not None \
            and k.max_ns is not None:
        args["median_us"] = _us(int(k.median_ns))
        args["replays"] = k.replays
    return {"ph": "X", "name": k.short, "cat": CATEGORY, "ts": _us(k.start_ns),
            "dur": _us(max(0, k.end_ns - k.start_ns)), "pid": process, "tid": stream,
            "args": args}


def chrome_trace(kernels: Sequence[StoredKernel], streams: Iterable[StreamRow]) -> dict[str, Any]:
    """The trace document of stored ``kernels`` (in the order given) on the stored
    ``streams``."""
    by_key = {s.key: s for s in streams}
    ids = [_stream_ids(by_key.get(k.stream), k.stream, k.device) for k in kernels]
    procs: dict[tuple[int, int], int] = {}
    threads: dict[tuple[int, int], str] = {}
    for (device, pid, stream), key in sorted({(i, k.stream) for i, k in zip(ids, kernels,
                                                                            strict=True)}):
        tp = procs.setdefault((device, pid), len(procs) + 1)
        threads[(tp, stream)] = key
    events: list[dict[str, Any]] = []
    for (device, pid), tp in procs.items():
        events.append({"ph": "M", "name": "process_name", "pid": tp, "tid": 0,
                       "args": {"name": f"GPU {device} (pid {pid})"}})
        events.append({"ph": "M", "name": "process_sort_index", "pid": tp, "tid": 0,
                       "args": {"sort_index": tp}})
    for (tp, stream), _key in threads.items():
        events.append({"ph": "M", "name": "thread_name", "pid": tp, "tid": stream,
                       "args": {"name": f"stream {stream}"}})
        events.append({"ph": "M", "name": "thread_sort_index", "pid": tp, "tid": stream,
                       "args": {"sort_index": stream}})
    for (device, pid, stream), k in zip(ids, kernels, strict=True):
        events.append(_event(k, procs[(device, pid)], stream))
    return {"traceEvents": events, "displayTimeUnit": "ns"}


def export_chrome_trace(store: RunStore) -> str:
    """Chrome trace JSON text ``{"traceEvents": [...], "displayTimeUnit": "ns"}`` of the store's
    kernels."""
    doc = chrome_trace(store.kernels(), store.streams())
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
