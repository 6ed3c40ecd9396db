"""The JSON that the command line writes for people and scripts: ``tb-ad-layer inspect --json``
(:class:`InspectReport`) and ``tb-ad-layer kernels`` (:class:`KernelSequences`).

docs/API.md ("Command-line JSON") describes it for people; tests decode the output of
``inspect --json`` and ``kernels`` on real traces with these records, so the two cannot drift
apart. The commands build these records and nothing else, so what they print is the contract.
"""
from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from tb_ad_layer.contract.document import NodeKernel, StreamFigures
from tb_ad_layer.contract.record import Record


class InspectStream(Record):
    """What one CUDA stream of one device holds, counted before anything is chosen."""

    stream: int
    process: Annotated[int | None, Meta(description="OS process id (nsys); null for profiler "
                                                    "traces.")]
    context: int | None
    kernels: Annotated[int, Meta(description="Kernels only: copies and fills are counted apart.")]
    memcpy: int
    memset: int


class InspectDevice(Record):
    """One device and its streams."""

    device: int
    streams: list[InspectStream]


class InspectGraph(Record):
    """One CUDA graph, or one kernels-per-launch size of it when its launches differ."""

    graph_id: Annotated[int | None, Meta(description="Null for graphs found only by launch "
                                                     "correlation.")]
    nodes: int
    launches: int
    kernels_per_launch: Annotated[int, Meta(description="0 for graph-mode captures, which "
                                                        "record whole launches only.")]


class InspectPick(Record):
    """What ``convert`` would analyse, and why; or ``error`` when nothing can be picked."""

    phase: Literal["decode", "prefill"] | None
    device: int | None
    graph_id: int | None
    replay: Annotated[int | None, Meta(description="Launch correlation id of the chosen "
                                                   "replay (decode).")]
    pass_: str | None = msgspec.field(name="pass")  # how the forward pass was cut (prefill)
    step: int | None
    replays: int
    kernels: int
    method: str | None
    reason: str | None
    error: str | None


class InspectReport(Record):
    """``tb-ad-layer inspect TRACE --json``."""

    format: Annotated[str, Meta(description="nsys-sqlite or torch-profiler.")]
    schema: Annotated[str | None, Meta(description="Export schema or profiler schemaVersion.")]
    capture_mode: Literal["graph", "node"] | None
    devices: list[InspectDevice]
    graphs: list[InspectGraph]
    nvtx_ranges: int
    profiler_steps: int
    pick: InspectPick


# -- tb-ad-layer kernels ----------------------------------------------------------------------


class SequenceKernel(NodeKernel):
    """One GPU activity of a layer's sequence: a node's kernel record, plus what it is and the
    node it was mapped to."""

    kind: Annotated[str, Meta(description="kernel, memcpy or memset.")]
    node: Annotated[str | None, Meta(description="Id of the node it was mapped to; null when "
                                                 "unmapped or without --dump.")]


class LayerSequence(Record):
    """One layer's activities in start order, with its figures."""

    layer: int
    kind: Annotated[str | None, Meta(description="The layer's kind, when the segmentation "
                                                 "names one.")]
    kernel_count: int
    memcpy_count: int
    memset_count: int
    total_duration_us: float
    num_streams: int
    streams: list[StreamFigures]
    kernels: list[SequenceKernel]


class SequenceSegmentation(Record):
    """How the layers were found; every field null when the trace was not segmented."""

    method: str | None
    confidence: float | None
    detail: str | None
    inferred: Annotated[bool | None, Meta(description="Whether the layers were inferred from "
                                                      "repetition.")]


class KernelSequences(Record):
    """``tb-ad-layer kernels TRACE``: per-layer kernel sequences of one replay or pass."""

    source: str
    format: str
    phase: str
    graph_id: int | None
    replays: int
    device: int
    step: int | None
    pick: str
    num_layers: int
    segmentation: SequenceSegmentation
    warnings: list[str]
    layers: list[LayerSequence]
    outside: Annotated[list[SequenceKernel], Meta(description="Activities outside every "
                                                              "layer; empty when one layer "
                                                              "was asked for.")]
