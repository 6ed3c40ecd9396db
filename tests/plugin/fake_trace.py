"""Trace-bearing run stores for plugin tests and the plugin benchmark.

Real trace ingestion is another module's job; the plugin only reads what the store holds. So
this builds that content directly: ``convert(..., attach_trace=fake_attacher(...))`` runs the
real converter and lets the attacher write ``streams`` and ``kernels`` rows through the
``StoreWriter`` and return each node's ``kernels`` and each layer's ``trace_summary`` (which the
converter builds the documents with) the way docs/API.md describes, deterministically.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tb_ad_layer.contract.api import StreamTotal, TraceInfo
from tb_ad_layer.contract.document import (
    KernelStats,
    NodeKernel,
    StreamFigures,
    TraceSummary,
    UnmappedKernel,
)
from tb_ad_layer.convert import MappedTrace, convert
from tb_ad_layer.layers.document import layer_record
from tb_ad_layer.layers.layered import LayeredGraph
from tb_ad_layer.options import ConvertOptions
from tb_ad_layer.store.records import KernelRow, StreamRow
from tb_ad_layer.store.writer import StoreWriter, store_path

MAIN = "pid100/dev0/ctx1/s7"
AUX = "pid100/dev0/ctx1/s9"
STREAMS = [StreamRow(MAIN, "GPU 0 · stream 7", 0, 100, 1, 7),
           StreamRow(AUX, "GPU 0 · stream 9 (aux)", 0, 100, 1, 9)]
SKIP_OPS = ("<built-in function getitem>", "placeholder", "output")


def _us(ns: float) -> float:
    return round(ns / 1000.0, 3)


def fake_attacher(kernels_per_node: int = 2, scale: float = 1.0, replays: int = 100,
                  extra_per_layer: int = 0) -> Callable[..., MappedTrace]:
    """An ``attach_trace(lg, writer)`` that invents a decode replay: ``kernels_per_node``
    kernels per call node on the main stream, every 4th node's kernels on an aux stream
    overlapping the main one, one unmapped ``FillFunctor`` per layer, plus ``extra_per_layer``
    more unmapped kernels (to make timelines dense). Durations are multiplied by ``scale``."""

    def attach(lg: LayeredGraph, writer: StoreWriter | None) -> MappedTrace:
        rows: list[KernelRow] = []
        node_kernels: dict[str, list[NodeKernel]] = {}
        summaries: dict[int, TraceSummary] = {}
        t = 0
        mapped = 0
        layers = sorted(lg.layers)
        for layer in layers:
            doc = layer_record(lg, layer)
            layer_kernels: list[tuple[int, int, str, str, float, str | None]] = []
            groups: dict[str, float] = {}
            for i, node in enumerate(doc.nodes):
                if node.op in SKIP_OPS or node.node_kind != "call":
                    continue
                aux = i % 4 == 3
                stream = AUX if aux else MAIN
                start = t
                for j in range(kernels_per_node):
                    dur = int((800 + (i * 37 + j * 101) % 1500) * scale)
                    short = f"{node.label}_k{j}"
                    name = f"void {short}<cutlass::bfloat16_t, 128>(Params<&x>)"
                    rows.append(KernelRow(name, short, start, start + dur, 0, stream, 7,
                                          len(rows), 5000 + layer, layer, node.id, None,
                                          replays, dur, dur - 50, dur + 400))
                    node_kernels.setdefault(node.id, []).append(NodeKernel(
                        kernel=short, name=name, duration_us=_us(dur),
                        replay_duration_us=_us(dur), stream=stream, start_us=_us(start),
                        stats=KernelStats(count=replays, median_us=_us(dur),
                                          min_us=_us(dur - 50), max_us=_us(dur + 400))))
                    layer_kernels.append((start, start + dur, stream, short, dur, node.id))
                    groups[node.group] = groups.get(node.group, 0.0) + dur
                    mapped += 1
                    start += dur + 150
                if not aux:
                    t = start
            for _ in range(1 + extra_per_layer):
                dur = 700
                rows.append(KernelRow("void at::native::FillFunctor<float>()", "FillFunctor", t,
                                      t + dur, 0, MAIN, 7, len(rows), 5000 + layer, layer, None,
                                      "no matching op", replays, dur, dur, dur))
                layer_kernels.append((t, t + dur, MAIN, "FillFunctor", dur, None))
                groups["unmapped"] = groups.get("unmapped", 0.0) + dur
                t += dur + 100
            total = sum(k[4] for k in layer_kernels)
            start_l = min(k[0] for k in layer_kernels)
            end_l = max(k[1] for k in layer_kernels)
            streams = []
            for key in (MAIN, AUX):
                ks = [k for k in layer_kernels if k[2] == key]
                if ks:
                    busy = sum(k[1] - k[0] for k in ks)
                    span = max(k[1] for k in ks) - min(k[0] for k in ks)
                    streams.append(StreamFigures(stream=key, kernel_count=len(ks),
                                                 busy_us=_us(busy), span_us=_us(span),
                                                 gaps_us=_us(span - busy)))
            summaries[layer] = TraceSummary(
                total_duration_us=_us(total), kernel_count=len(layer_kernels),
                num_streams=len(streams), start_us=_us(start_l),
                span_us=_us(end_l - start_l),
                groups={g: _us(v) for g, v in groups.items()}, streams=streams,
                unmapped=[UnmappedKernel(kernel=k[3], name="void at::native::FillFunctor<float>()",
                                         duration_us=_us(k[4]), stream=k[2],
                                         start_us=_us(k[0]), reason="no matching op")
                          for k in layer_kernels if k[5] is None])
            t += 2000
        if writer is not None:
            writer.add_streams(STREAMS)
            writer.add_kernels(rows)
        info = TraceInfo(
            source="fake_decode.nsys.sqlite", read_from="fake_decode.nsys.sqlite",
            format="nsys-sqlite", phase="decode", schema_version="3.11",
            graph_trace_mode="node", graph_id=7, graph_node_count=len(rows),
            replays=replays, devices=[0], device=0, step=None,
            method="graph-node-ids", pick="graph 7: the only CUDA graph",
            num_streams=2, kernel_count=len(rows), memcpy_count=0, memset_count=0,
            stream_totals=[StreamTotal(device=0, stream=s.stream or 0, process=s.pid,
                                       kernels=sum(1 for r in rows if r.stream == s.key),
                                       memcpy=0, memset=0) for s in STREAMS],
            layers_found=len(layers), segmentation="graph-alignment",
            confidence=1.0, segmentation_detail=None,
            mapped_share=round(mapped / len(rows), 3) if rows else 0.0,
            outside_time_us=None, outside_kernel_count=None, outside_mapped_share=None,
            warnings=[], unmapped={"no matching op": len(layers) * (1 + extra_per_layer)},
            graph_launch_blocks=0)
        return MappedTrace(info=info, node_kernels=node_kernels, summaries=summaries)

    return attach


def convert_with_trace(dump_dir: Path, logdir: Path, run: str, **kwargs: Any) -> Path:
    """Convert ``dump_dir``'s last stage into run ``run`` with a fake trace; return the store."""
    convert(ConvertOptions(dump_dir, logdir, run=run), attach_trace=fake_attacher(**kwargs))
    return store_path(logdir, run)
