"""Every payload of the plugin's JSON API (docs/API.md), one Struct per shape.

The plugin builds its answers from these records and encodes them with
:func:`~tb_ad_layer.contract.record.encode`; the layer document itself is
:mod:`tb_ad_layer.contract.document`. Times are microseconds (float) unless a field says
otherwise; names from dumps and traces are plain text.
"""
from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from tb_ad_layer.contract.document import LayerDocument, LayeringDoubt, TraceSummary
from tb_ad_layer.contract.record import Record

# -- api/runs ---------------------------------------------------------------------------------


class StageInfo(Record):
    """One converted transform stage of a run, in pipeline order."""

    index: Annotated[int, Meta(description="Stage index, the value of the stage parameter.")]
    file: Annotated[str, Meta(description="Dump file name, e.g. 085_compile_compile_model.txt.")]
    stage: Annotated[str, Meta(description="Pipeline stage from the dump header, e.g. export.")]
    transform: str
    module: Annotated[str, Meta(description="GraphModule section that was converted.")]
    node_count: int
    doubts: Annotated[list[LayeringDoubt], Meta(description="Why the layers found in this "
                                                            "stage may be wrong: the stage's "
                                                            "doubts (layer null), then each "
                                                            "layer's; empty when nothing looks "
                                                            "implausible.")]


class LayerRow(Record):
    """One layer of a run's default stage."""

    layer: int
    kind: str
    attention: Annotated[str | None, Meta(description="mla, attention, or null.")]
    node_count: int
    gpu_time_us: Annotated[float | None, Meta(description="The layer's GPU time: the sum of "
                                                          "its kernels' durations (kernels no "
                                                          "node claimed included); null "
                                                          "without a trace.")]
    same_as: Annotated[int | None, Meta(description="The first earlier layer of the stage with "
                                                    "the same graph (ops, groups, shapes, "
                                                    "wiring; names aside); null when none.")] = None


class StreamTotal(Record):
    """What one stream of the trace holds, before any replay or pass is chosen."""

    device: int
    stream: int
    process: int | None
    kernels: int
    memcpy: int
    memset: int


class TraceInfo(Record):
    """What the converter recorded about a run's trace."""

    source: Annotated[str, Meta(description="The trace file given to the converter.")]
    read_from: Annotated[str, Meta(description="The file actually read (the .sqlite export of "
                                               "an .nsys-rep).")]
    format: Annotated[str, Meta(description="Trace format, e.g. nsys-sqlite, "
                                            "torch-profiler.")]
    phase: Annotated[str, Meta(description="decode (a CUDA graph replay) or prefill (an eager "
                                           "forward pass).")]
    schema_version: Annotated[str | None, Meta(description="Version of the trace's export "
                                                           "schema, when it says.")]
    graph_trace_mode: Annotated[str | None, Meta(description="How nsys traced CUDA graphs "
                                                             "(node or graph), when known.")]
    graph_id: Annotated[int | None, Meta(description="CUDA graph whose replay is stored.")]
    graph_node_count: int | None
    replays: Annotated[int, Meta(description="Replays (or passes) the statistics cover.")]
    devices: list[int]
    device: Annotated[int, Meta(description="The GPU whose kernels are stored.")]
    step: Annotated[int | None, Meta(description="Profiler step the pass or replays were taken "
                                                 "from; null when the trace has no steps.")]
    method: Annotated[str, Meta(description="How the replay or pass was cut.")]
    pick: Annotated[str, Meta(description="What was picked and why, in words.")]
    num_streams: int
    kernel_count: Annotated[int, Meta(description="Kernels of the stored replay or pass "
                                                  "(copies and fills not counted).")]
    memcpy_count: int
    memset_count: int
    stream_totals: Annotated[list[StreamTotal], Meta(description="Per device and stream, the "
                                                                 "whole trace's counts.")]
    layers_found: Annotated[int, Meta(description="Layers found in the kernel sequence.")]
    segmentation: Annotated[str | None, Meta(description="What marked the layers (capture-time "
                                                         "NVTX, module annotations, alignment to "
                                                         "the graph, repetition).")]
    confidence: Annotated[float | None, Meta(description="How well the layer cuts are "
                                                         "supported (0-1).")]
    segmentation_detail: str | None
    mapped_share: Annotated[float | None, Meta(description="Share of the layers' kernels "
                                                           "mapped to a node (0-1); null when "
                                                           "nothing could be mapped.")]
    outside_time_us: Annotated[float | None, Meta(description="GPU time of the activities "
                                                              "outside every layer (embedding, "
                                                              "final norm, lm head, "
                                                              "sampling).")]
    outside_kernel_count: int | None
    outside_mapped_share: Annotated[float | None, Meta(description="Share of those kernels "
                                                                   "mapped to a node outside "
                                                                   "the layers.")]
    warnings: list[str]
    unmapped: Annotated[dict[str, int], Meta(description="Unmapped kernels per reason (the "
                                                         "ten most common).")]
    graph_launch_blocks: Annotated[int, Meta(description="Whole CUDA graph launches stored "
                                                         "without per-kernel data.")]
    outside_summary: Annotated[TraceSummary | None, Meta(description="The figures of a layer's "
                                                                     "trace summary, for the "
                                                                     "activities outside every "
                                                                     "layer.")] = None


class RunInfo(Record):
    """A run whose store can be read."""

    run: Annotated[str, Meta(description="Run name: its path relative to the logdir, "
                                         "/-separated; '.' for the logdir itself.")]
    error: None
    model: str
    source_dir: Annotated[str, Meta(description="The dump directory that was converted.")]
    created: Annotated[str, Meta(description="Conversion time, ISO 8601 UTC.")]
    converter_version: str
    schema_version: Annotated[int, Meta(description="Run store schema version.")]
    stages: list[StageInfo]
    default_stage: Annotated[int, Meta(description="Index of the last stage.")]
    layers: Annotated[list[LayerRow], Meta(description="Layers of the default stage.")]
    trace: Annotated[TraceInfo | None, Meta(description="null when the run has no trace.")]
    ranks: Annotated[list[int], Meta(description="The ranks (GPUs) of a traced run, first "
                                                 "(the default of rank=) first; more than one "
                                                 "for a multi-GPU run; empty without a "
                                                 "trace.")]


class UnreadableRun(Record):
    """A run whose store cannot be read (another schema version, not a run store, damaged)."""

    run: str
    error: Annotated[str, Meta(description="Why, and how to fix it.")]


class RunsResponse(Record):
    """``api/runs``: every run under the logdir, sorted by name."""

    runs: list[RunInfo | UnreadableRun]


# -- api/layer --------------------------------------------------------------------------------


class LayerResponse(LayerDocument):
    """``api/layer``: the stored layer document, plus where it comes from."""

    run: str
    stage: int
    rank: Annotated[int | None, Meta(description="The rank whose kernels the document "
                                                 "holds; null for a run without a trace.")]


# -- api/overview -----------------------------------------------------------------------------


class OverviewLayer(Record):
    """One layer of a stage, with its GPU time per group."""

    layer: int
    kind: str
    attention: str | None
    node_count: int
    gpu_time_us: Annotated[float | None, Meta(description="null without a trace.")]
    groups: Annotated[dict[str, float], Meta(description="GPU time per group ('unmapped' for "
                                                         "kernels no node claimed); empty "
                                                         "without a trace.")]
    group_counts: Annotated[dict[str, int], Meta(description="Nodes per group.")]
    same_as: Annotated[int | None, Meta(description="The first earlier layer of the stage with "
                                                    "the same graph; null when none.")] = None


class OverviewResponse(Record):
    """``api/overview``: every layer of one stage."""

    run: str
    stage: int
    layers: list[OverviewLayer]
    none_node_count: Annotated[int, Meta(description="Nodes outside every layer (embedding, "
                                                     "final norm, lm head).")]
    outside_gpu_time_us: Annotated[float | None, Meta(description="GPU time outside every "
                                                                  "layer; null except on the "
                                                                  "stage the trace was mapped "
                                                                  "onto.")] = None


# -- api/stage_graph --------------------------------------------------------------------------


class StageNode(Record):
    """A node outside every layer, as the whole-stage graph draws it."""

    id: str
    label: str
    op: str
    node_kind: str
    shape: str
    weights: Annotated[list[str], Meta(description="Names of the weights it reads, e.g. "
                                                   "lm_head_weight.")]
    time_us: Annotated[float, Meta(description="GPU time of its kernels; 0 without a trace.")]


class StageLayer(Record):
    """One layer as a box of the whole-stage graph."""

    layer: int
    kind: str
    attention: str | None
    node_count: int
    gpu_time_us: Annotated[float | None, Meta(description="null without a trace.")]
    same_as: Annotated[int | None, Meta(description="The first earlier layer of the stage with "
                                                    "the same graph; null when none.")]
    group_counts: Annotated[dict[str, int], Meta(description="Nodes per group.")]
    groups: Annotated[dict[str, float], Meta(description="GPU time per group; empty without a "
                                                         "trace.")]
    shared: Annotated[list[str], Meta(description="Ids of the shared inputs it reads (see "
                                                  "StageGraphResponse.shared).")]
    doubtful: Annotated[bool, Meta(description="The converter doubts this layer's nodes.")]


class StageFold(Record):
    """A run of consecutive layers that repeat: ``count`` blocks of ``period`` layers, each
    block's layers identical to the first block's (same_as), from ``first`` to ``last``."""

    first: int
    last: int
    period: Annotated[int, Meta(description="Layers per block: 1 for a run of one layer "
                                            "repeated, 4 for (gdn, gdn, gdn, attention).")]
    count: Annotated[int, Meta(description="Blocks: (last - first + 1) / period, at least 2.")]


class StageSharedInput(Record):
    """A value that many layers read without it flowing along the chain of layers: a model-level
    value (position ids, RoPE tables, masks, shape values, KV caches and batch metadata) or
    a value computed by an earlier layer that is not the reader's predecessor."""

    id: str
    kind: Annotated[str, Meta(description="rope, mask, shape, kv_cache, batch_metadata, "
                                          "position, model, residual...")]
    label: str
    shape: str
    source: Annotated[int | None, Meta(description="The layer that computes it; null for a "
                                                   "value of the stage's input part.")]
    layers: Annotated[list[int], Meta(description="The layers that read it, in order.")]


class StageGraphResponse(Record):
    """``api/stage_graph``: the skeleton of one whole stage, for a graph of collapsed layers."""

    run: str
    stage: int
    layers: list[StageLayer]
    folds: Annotated[list[StageFold], Meta(description="Runs of repeating layers, in order, "
                                                       "not overlapping.")]
    before: Annotated[list[StageNode], Meta(description="Nodes outside every layer that come "
                                                        "before the first layer (inputs, "
                                                        "embedding, RoPE and mask set-up).")]
    after: Annotated[list[StageNode], Meta(description="The other nodes outside every layer "
                                                       "(final norm, lm head, output).")]
    shared: list[StageSharedInput]
    outside_gpu_time_us: Annotated[float | None, Meta(description="As in api/overview.")] = None


# -- api/stages -------------------------------------------------------------------------------


class StageDiff(Record):
    """One layer in one stage, against the same layer in the previous stage (nodes matched by
    id; the first stage's lists are empty)."""

    index: int
    file: str
    stage: str
    transform: str
    node_count: Annotated[int, Meta(description="Nodes of the layer in this stage.")]
    added: list[str]
    removed: list[str]
    changed: Annotated[list[str], Meta(description="Same id, different op, shape, dtype or "
                                                   "inputs.")]


class StagesResponse(Record):
    """``api/stages``: one layer through every stage, in pipeline order."""

    run: str
    layer: int
    stages: list[StageDiff]


# -- api/timeline -----------------------------------------------------------------------------


class TimelineKernel(Record):
    """One kernel on a stream, with the node it was mapped to."""

    id: Annotated[int, Meta(description="Kernel id in the run store.")]
    kernel: Annotated[str, Meta(description="Short kernel name.")]
    name: Annotated[str, Meta(description="Full demangled kernel name.")]
    start_us: float
    duration_us: float
    layer: int | None
    node: Annotated[str | None, Meta(description="Id of the node it was mapped to; null when "
                                                 "unmapped.")]


class TimelineBucket(Record):
    """Kernels of one stream merged over a slice of the window (level of detail)."""

    start_us: float
    end_us: float
    count: Annotated[int, Meta(description="Kernels starting in the slice.")]
    busy_us: Annotated[float, Meta(description="Time in the slice with a kernel running.")]


class TimelineStream(Record):
    """One stream's kernels in the window: ``kernels``, or ``buckets`` when more than
    ``max_items``."""

    stream: Annotated[str, Meta(description="Stream key, e.g. pid1234/dev0/ctx1/s7.")]
    label: Annotated[str, Meta(description="Display name, e.g. 'GPU 0 · stream 7'.")]
    device: int | None
    busy_us: float
    busy_share: Annotated[float, Meta(description="busy_us over the window's length (0-1).")]
    kernel_count: Annotated[int, Meta(description="Kernels overlapping the window.")]
    kernels: list[TimelineKernel]
    buckets: list[TimelineBucket]


class TimelineResponse(Record):
    """``api/timeline``: kernels of one layer (or all) per stream in a time window."""

    run: str
    layer: Annotated[int | None, Meta(description="The layer asked for; null for all "
                                                  "kernels.")]
    start_us: float
    end_us: float
    lod: Annotated[bool, Meta(description="Whether any stream is answered with buckets.")]
    streams: list[TimelineStream]
    rank: Annotated[int | None, Meta(description="The rank whose kernels these are; null for "
                                                 "a run without a trace.")]


# -- api/compare ------------------------------------------------------------------------------

#: What differs between two matched nodes.
Change = Literal["op", "shape", "dtype", "weights", "inputs"]


class CompareSide(Record):
    """One side of a comparison."""

    run: str
    stage: int
    layer: int
    time_us: Annotated[float, Meta(description="The layer's GPU time (0 without a trace).")]


class CompareMatch(Record):
    """A node of A and the node of B it was matched with."""

    a: str
    b: str
    status: Literal["same", "changed"]
    changes: list[Change]
    op: str
    group: str
    a_time_us: float
    b_time_us: float
    delta_us: float


class CompareCounts(Record):
    same: int
    changed: int
    only_a: int
    only_b: int


class Delta(Record):
    """B's time against A's."""

    a_us: float
    b_us: float
    delta_us: float
    delta_pct: Annotated[float | None, Meta(description="null when A's time is 0.")]


class GroupDelta(Delta):
    """One group's time in A and B."""

    group: str


class CompareResponse(Record):
    """``api/compare``: layer A against layer B, node by node."""

    a: CompareSide
    b: CompareSide
    matches: list[CompareMatch]
    only_a: list[str]
    only_b: list[str]
    counts: CompareCounts
    groups: Annotated[list[GroupDelta], Meta(description="Slowest group first.")]
    layer: Delta


# -- errors -----------------------------------------------------------------------------------


class ErrorBody(Record):
    """The body of every error response."""

    error: Annotated[str, Meta(description="One line saying what is wrong.")]
    known: Annotated[list[str | int], Meta(description="The values that do exist (runs, stages, "
                                                       "layers, downloads), when that helps.")]


# -- decoding ---------------------------------------------------------------------------------


class _RunsRaw(msgspec.Struct, forbid_unknown_fields=True):
    runs: list[msgspec.Raw]


def decode_runs(data: bytes | str) -> RunsResponse:
    """Decode and validate an ``api/runs`` body (its entries are one of two records, which
    msgspec cannot tell apart by itself).

    Raises:
        msgspec.ValidationError, msgspec.DecodeError: the body does not match the contract.
    """
    raw = msgspec.json.decode(data, type=_RunsRaw)
    runs: list[RunInfo | UnreadableRun] = []
    for i, entry in enumerate(raw.runs):
        try:
            runs.append(msgspec.json.decode(entry, type=UnreadableRun))
        except msgspec.ValidationError:
            try:
                runs.append(msgspec.json.decode(entry, type=RunInfo))
            except msgspec.ValidationError as e:
                raise msgspec.ValidationError(f"{e} (in runs[{i}])") from None
    return RunsResponse(runs=runs)
