"""Run stores with known answers, written directly: every node, kernel and host call is placed
by hand, so each figure of the report can be computed on paper."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from tb_ad_layer.contract.document import LayerDocument
from tb_ad_layer.store.records import (
    GpuRow,
    HostCallRow,
    KernelRow,
    MemcpyRow,
    StreamRow,
    TraceDimRow,
)
from tb_ad_layer.store.writer import StoreWriter, store_path

US = 1000  # ns


@dataclass
class N:
    """A node: id, op, group, sub-group, output shape and dtype, inputs, weights."""

    id: str
    op: str
    group: str = "other"
    sub_group: str | None = None
    shape: str = "4x16"
    dtype: str = "torch.bfloat16"
    inputs: list[str] = field(default_factory=list)
    weights: list[tuple[str, str, str]] = field(default_factory=list)
    args: str = ""


@dataclass
class K:
    """A kernel of the stored replay (µs), mapped to (layer, node), with replay statistics."""

    short: str
    start: float
    end: float
    layer: int | None = 0
    node: str | None = None
    stream: str = "A"
    median: float | None = None
    p90: float | None = None
    p99: float | None = None
    max: float | None = None
    replays: int | None = None
    correlation: int | None = None
    name: str | None = None


@dataclass
class L:
    """A layer: index, kind, nodes, external inputs ``(id, shape, dtype)``."""

    index: int
    kind: str = "attention+mlp"
    nodes: list[N] = field(default_factory=list)
    externals: list[tuple[str, str, str]] = field(default_factory=list)


def _node(n: N, line: int) -> dict[str, Any]:
    return {"id": n.id, "op": n.op, "label": n.op.split(".")[-1], "node_kind": "call",
            "shape": n.shape, "dtype": n.dtype, "group": n.group, "sub_group": n.sub_group,
            "stream": "main", "inputs": n.inputs,
            "weights": [{"name": a, "shape": b, "dtype": c, "role": a} for a, b, c in n.weights],
            "args": n.args, "line": line, "kernels": [], "time_us": 0.0}


def trace_meta(replays: int, devices: Sequence[int] = (0,)) -> dict[str, Any]:
    return {"source": "made.sqlite", "read_from": "made.sqlite", "format": "nsys-sqlite",
            "phase": "decode", "schema_version": "3.25.0", "graph_trace_mode": "Node",
            "graph_id": 1, "graph_node_count": 1, "replays": replays, "devices": list(devices),
            "device": 0, "step": None, "method": "graph-node-ids", "pick": "made by hand",
            "num_streams": 2, "kernel_count": 1, "memcpy_count": 0, "memset_count": 0,
            "stream_totals": [], "layers_found": 1, "segmentation": "graph-alignment",
            "confidence": 1.0, "segmentation_detail": None, "mapped_share": 1.0,
            "outside_time_us": None, "outside_kernel_count": None, "outside_mapped_share": None,
            "warnings": [], "unmapped": {}, "graph_launch_blocks": 0}


def stream_key(name: str) -> str:
    return f"pid1/dev0/ctx1/s{ord(name[0])}" if not name.startswith("pid") else name


def build(logdir: Path, run: str, layers: Sequence[L], kernels: Sequence[K], *,
          replays: int = 20, host_calls: Sequence[HostCallRow] | None = None,
          memcpy: Sequence[MemcpyRow] | None = None, gpu: str | None = None,
          devices: Sequence[int] = (0,), trace_dims: Sequence[TraceDimRow] | None = None) -> Path:
    """Write run ``run`` under ``logdir``; return its run directory. ``devices``: the GPUs the
    trace records; ``trace_dims``: the sizes its recorded shapes bound (None: it recorded
    none)."""
    path = store_path(logdir, run)
    with StoreWriter(path) as w:
        count = sum(len(x.nodes) for x in layers)
        w.conn.execute("INSERT INTO stages VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                       (0, "085_compile_compile_model.txt", 85, "compile", "compile_model",
                        "(root)", "[]", count, count, len(layers), "[]"))
        w.conn.execute("INSERT INTO outside VALUES (0, 0, '[]')")
        docs = []
        for x in layers:
            nodes = [_node(n, i + 1) for i, n in enumerate(x.nodes)]
            docs.append({"layer": x.index, "kind": x.kind, "attention": None,
                         "source_file": "085_compile_compile_model.txt", "module": "(root)",
                         "nodes": nodes, "edges": [],
                         "external_inputs": [{"id": i, "label": i, "kind": "residual", "shape": s,
                                              "dtype": d, "layer": None}
                                             for i, s, d in x.externals],
                         "group_counts": {}, "trace_summary": None, "doubts": []})
        w.add_layers(0, [msgspec.convert(d, LayerDocument) for d in docs])
        streams = sorted({stream_key(k.stream) for k in kernels})
        w.add_streams(StreamRow(s, f"GPU 0 · stream {s.rsplit('s', 1)[1]}", 0, 1, 1,
                                int(s.rsplit("s", 1)[1])) for s in streams)
        rows = []
        for k in kernels:
            def ns(v: float | None) -> float | None:
                return None if v is None else v * US
            rows.append(KernelRow(k.name or k.short, k.short, round(k.start * US),
                                  round(k.end * US), 0, stream_key(k.stream), 1, None,
                                  k.correlation, k.layer, k.node,
                                  None if k.node else "no matching op",
                                  k.replays if k.replays is not None else
                                  (replays if k.median is not None else None),
                                  ns(k.median), None,
                                  round(k.max * US) if k.max is not None else None,
                                  ns(k.p90), ns(k.p99)))
        w.add_kernels(rows)
        if host_calls is not None:
            w.add_host_calls(host_calls)
        if memcpy is not None:
            w.add_memcpy(memcpy)
        if gpu is not None:
            w.add_gpus([GpuRow(0, gpu)])
        if trace_dims is not None:
            w.add_trace_dims(trace_dims)
        for key, value in (("run", run), ("model", "made"), ("source_dir", "/made"),
                           ("converter_version", "0"), ("created", "2026-01-01T00:00:00Z"),
                           ("trace", trace_meta(replays, devices))):
            w.set_meta(key, value)
        w.commit()
    return logdir / run
