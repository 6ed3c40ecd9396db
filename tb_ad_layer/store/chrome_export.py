"""A run store's kernels as Chrome trace JSON (Perfetto, chrome://tracing).

Used by ``tb-ad-layer export-trace`` and the plugin's ``api/download/trace.json``. The JSON shape
is written by :mod:`tb_ad_layer.trace.chrome` (one process per GPU and OS process, one thread per
stream, ``X`` events with layer/node/graph ids); this module only turns stored rows back into
:class:`~tb_ad_layer.trace.kernel.Kernel` records, taking process, context and stream ids from
the ``streams`` table.
"""
from __future__ import annotations

import json
import zlib
from typing import Any

from tb_ad_layer.store.reader import RunStore
from tb_ad_layer.trace.chrome import chrome_trace
from tb_ad_layer.trace.kernel import Kernel, ReplayStats


def _stream_ids(info: dict[str, Any] | None, key: str, device: int | None) -> tuple[int, int, int, int]:
    """(device, pid, context, stream id) of a stored stream. A kernel whose stream is missing
    from the ``streams`` table still gets a stable thread of its own (an id derived from its
    key), so nothing is dropped from the export."""
    if info is not None:
        return (info["device"] if info["device"] is not None else (device or 0),
                info["pid"] or 0, info["context"] or 0,
                info["stream_id"] if info["stream_id"] is not None else zlib.crc32(key.encode()) & 0xFFFF)
    return device or 0, 0, 0, zlib.crc32(key.encode()) & 0xFFFF


def stored_kernels(store: RunStore) -> list[Kernel]:
    """The store's kernels as ``Kernel`` records, in start order (times relative to the stored
    replay or forward pass, as stored)."""
    streams = {s["stream"]: s for s in store.streams()}
    out = []
    for (kid, name, short, start, end, device, stream, graph_id, graph_node_id, correlation,
         layer, node, reason, count, median, mn, mx) in store.kernels():
        dev, pid, ctx, sid = _stream_ids(streams.get(stream), stream, device)
        stats = ReplayStats(count, median, mn, mx) if count is not None and median is not None \
            else None
        out.append(Kernel(name=name, short=short, start_ns=start, end_ns=end, device=dev, pid=pid,
                          context=ctx, stream=sid, stream_key=stream, correlation=correlation,
                          graph_id=graph_id, graph_node_id=graph_node_id, index=kid, layer=layer,
                          node=node, unmapped_reason=reason, stats=stats))
    return out


def export_chrome_trace(store: RunStore) -> str:
    """Chrome trace JSON text ``{"traceEvents": [...], "displayTimeUnit": "ns"}`` of the store's
    kernels; ``ts`` 0 is the start of the stored replay, as in the plugin's timeline."""
    doc = chrome_trace(stored_kernels(store), origin_ns=0)
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
