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

from tb_ad_layer.store.reader import RunStore
from tb_ad_layer.store.records import StreamRow
from tb_ad_layer.trace.chrome import chrome_trace
from tb_ad_layer.trace.kernel import Kernel, ReplayStats


def _stream_ids(info: StreamRow | None, key: str, device: int | None) -> tuple[int, int, int, int]:
    """(device, pid, context, stream id) of a stored stream. A kernel whose stream is missing
    from the ``streams`` table still gets a stable thread of its own (an id derived from its
    key), so nothing is dropped from the export."""
    derived = zlib.crc32(key.encode()) & 0xFFFF
    if info is not None:
        return (info.device if info.device is not None else (device or 0),
                info.pid or 0, info.context or 0,
                info.stream if info.stream is not None else derived)
    return device or 0, 0, 0, derived


def stored_kernels(store: RunStore) -> list[Kernel]:
    """The store's kernels as ``Kernel`` records, in start order (times relative to the stored
    replay or forward pass, as stored)."""
    streams = {s.key: s for s in store.streams()}
    out = []
    for k in store.kernels():
        dev, pid, ctx, sid = _stream_ids(streams.get(k.stream), k.stream, k.device)
        stats = None
        if k.replays is not None and k.median_ns is not None and k.min_ns is not None \
                and k.max_ns is not None:
            stats = ReplayStats(k.replays, k.median_ns, k.min_ns, k.max_ns)
        out.append(Kernel(name=k.name, short=k.short, start_ns=k.start_ns, end_ns=k.end_ns,
                          device=dev, pid=pid, context=ctx, stream=sid, stream_key=k.stream,
                          correlation=k.correlation, graph_id=k.graph_id,
                          graph_node_id=k.graph_node_id, index=k.id, layer=k.layer,
                          node=k.node, unmapped_reason=k.reason, stats=stats))
    return out


def export_chrome_trace(store: RunStore) -> str:
    """Chrome trace JSON text ``{"traceEvents": [...], "displayTimeUnit": "ns"}`` of the store's
    kernels; ``ts`` 0 is the start of the stored replay, as in the plugin's timeline."""
    doc = chrome_trace(stored_kernels(store), origin_ns=0)
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
