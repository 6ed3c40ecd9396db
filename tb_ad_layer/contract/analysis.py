"""Where the time goes: the JSON of ``tb-ad-layer report`` and ``tb-ad-layer diff``, which the
plugin serves too (``api/report``, ``api/diff``), so the command line and the panel read the same
records.

Times are microseconds. Two kinds of time appear, and each field says which: *GPU time* sums
kernels' typical durations (the median over every replay; the sum over a group's nodes of each
node's median kernel time), and *wall time* is read off the stored replay's timeline (spans,
idle gaps, overlap, the critical path). Names from dumps and traces are plain text.
"""
from __future__ import annotations

from typing import Annotated, Literal

from msgspec import Meta

from tb_ad_layer.contract.record import Record

#: Whether a node's achieved rate is limited by arithmetic or by memory traffic.
Bound = Literal["compute", "memory", "communication"]
#: Where a node's symbolic size came from: ``--dim``, the trace's recorded input shapes, or
#: neither.
SizeSource = Literal["dim", "trace", "unknown"]
#: ``diff``'s answer.
Verdict = Literal["regression", "improvement", "unchanged"]


class GroupTime(Record):
    """GPU time of one functional group (norm, mla, moe...; ``unmapped`` for kernels no node
    claimed)."""

    group: str
    gpu_time_us: Annotated[float, Meta(description="Sum over the group's nodes of each node's "
                                                   "median kernel time over the replays.")]


class CategoryTime(Record):
    """GPU time of one category (attention, moe_experts, moe_router, shared_experts, gemm, norm,
    communication, memory...; categories are data, ``--categories FILE`` adds rules)."""

    category: str
    gpu_time_us: float
    share: Annotated[float, Meta(description="Share of the GPU time it is part of (0..1).")]


class StreamIdle(Record):
    """One CUDA stream's busy and idle wall time in the stored replay (of a layer or the step)."""

    stream: Annotated[str, Meta(description="Stream key, e.g. pid1234/dev0/ctx1/s7.")]
    label: Annotated[str, Meta(description="Display name, e.g. 'GPU 0 · stream 7'.")]
    kernel_count: int
    busy_us: Annotated[float, Meta(description="Wall time with at least one of its activities "
                                               "running.")]
    span_us: Annotated[float, Meta(description="Its first start to its last end.")]
    idle_us: Annotated[float, Meta(description="Idle within the span of the layer (or step) it "
                                               "is reported for: that span minus busy_us.")]


class ExposedStretch(Record):
    """Part of a communication kernel with no compute running beside it, for drawing on the
    timeline."""

    kernel_id: Annotated[int, Meta(description="Stored kernel id (api/timeline's id) of the "
                                               "communication kernel.")]
    stream: str
    start_us: float
    end_us: float


class Overlap(Record):
    """Compute and communication on a layer's streams, in the stored replay's wall time."""

    compute_us: Annotated[float, Meta(description="Wall time with compute (anything but "
                                                  "communication and memory operations) "
                                                  "running.")]
    communication_us: Annotated[float, Meta(description="Wall time with communication "
                                                        "running.")]
    hidden_us: Annotated[float, Meta(description="Communication overlapped by compute.")]
    exposed_us: Annotated[float, Meta(description="Communication with no compute beside it: "
                                                  "what it adds to the layer's wall time.")]
    overlap_share: Annotated[float | None, Meta(description="hidden_us / communication_us; "
                                                            "null without communication.")]
    exposed: Annotated[list[ExposedStretch],
                       Meta(description="The stretches of each communication kernel that no "
                                        "compute hides, in time order (communication kernels "
                                        "running together each list the stretch).")]


class PathStep(Record):
    """One kernel on the critical path, for drawing on the timeline."""

    kernel_id: Annotated[int, Meta(description="Stored kernel id (api/timeline's id).")]
    stream: str
    start_us: float
    end_us: float
    wait_us: Annotated[float, Meta(description="Idle wall time between the previous step's end "
                                               "and this start.")]


class CriticalPath(Record):
    """The chain of kernels that sets a layer's wall time: from its last kernel back, each step
    is the kernel that ended last before the current one began, on any of the layer's streams
    (the trace records no dependencies, so the latest predecessor stands for the one waited
    on)."""

    span_us: Annotated[float, Meta(description="The layer's wall time: first start to last end.")]
    busy_us: Annotated[float, Meta(description="Time on the path with a kernel running.")]
    wait_us: Annotated[float, Meta(description="Idle time on the path (span_us - busy_us).")]
    streams: Annotated[dict[str, float], Meta(description="Busy time on the path per stream.")]
    steps: list[PathStep]


class LayerBreakdown(Record):
    """One layer's GPU time by group and category, with its streams, overlap and critical path."""

    layer: Annotated[int | None, Meta(description="Layer index; null for the work outside every "
                                                  "layer (embedding, final norm, lm head).")]
    kind: str
    gpu_time_us: Annotated[float, Meta(description="Sum of its activities' median durations, "
                                                   "memory operations included.")]
    memory_us: Annotated[float, Meta(description="GPU time of its memory copies and fills.")]
    span_us: Annotated[float, Meta(description="Wall time in the stored replay.")]
    groups: list[GroupTime]
    categories: list[CategoryTime]
    streams: list[StreamIdle]
    overlap: Overlap
    critical_path: CriticalPath


class KernelTail(Record):
    """A kernel's duration over every replay."""

    kernel_id: int
    kernel: Annotated[str, Meta(description="Short kernel name.")]
    replays: int
    p50_us: float
    p90_us: float
    p99_us: float
    max_us: float


class NodeTail(Record):
    """A node's time over the replays: the sum of its kernels' percentiles (an upper bound of
    the node's own percentile when it launches several kernels)."""

    layer: int | None
    node: str
    replays: int
    p50_us: float
    p90_us: float
    p99_us: float
    max_us: float
    flagged: Annotated[bool, Meta(description="p99 at least 1.5x the median and at least 1 µs "
                                              "above it.")]
    kernels: list[KernelTail]


class GpuPeak(Record):
    """The GPU the figures are measured against."""

    name: Annotated[str | None, Meta(description="As the trace (or --gpu) names it; null when "
                                                 "unknown.")]
    source: Literal["trace", "option", "none"]
    entry: Annotated[str | None, Meta(description="The peak table's entry it matched; null when "
                                                  "none did.")]
    peak_tflops: Annotated[dict[str, float], Meta(description="Dense peak TFLOP/s by dtype "
                                                              "class (bf16, fp16, fp8, fp4, "
                                                              "tf32, fp32).")]
    peak_tbs: Annotated[float | None, Meta(description="Peak memory bandwidth, TB/s.")]


class NodeSize(Record):
    """A symbolic size in a node's shapes (``s70``) and where its value came from."""

    symbol: str
    value: Annotated[int | None, Meta(description="Null when unknown.")]
    source: Annotated[SizeSource, Meta(description="dim: --dim; trace: the input shapes the "
                                                   "trace recorded (record_shapes=True); "
                                                   "unknown: neither (see detail).")]
    detail: Annotated[str, Meta(description="'--dim s70=1024', the op and node that recorded "
                                            "it ('aten::linear at linear (layer 0)'), or why "
                                            "it is unknown.")]


class TraceDim(Record):
    """A symbolic size the trace's recorded input shapes bind for the traced stage."""

    symbol: str
    value: Annotated[int | None, Meta(description="Null when the trace records two values (a "
                                                   "conflict, kept by neither).")]
    source: Annotated[str, Meta(description="The op and node that recorded it, or the "
                                            "conflicting values and where.")]


class NodeRoofline(Record):
    """A node's FLOPs and bytes from its op, shapes and dtypes, and its achieved rates."""

    layer: int | None
    node: str
    op: str
    time_us: Annotated[float, Meta(description="The node's median GPU time.")]
    flops: Annotated[float | None, Meta(description="Null when unknown (see reason) or "
                                                    "counted as bytes only.")]
    bytes: Annotated[float | None, Meta(description="Bytes read and written; null when "
                                                    "unknown.")]
    formula: Annotated[str, Meta(description="How flops and bytes were counted, e.g. "
                                             "'gemm 2*M*N*K, M=4 N=2112 K=7168'.")]
    intensity: Annotated[float | None, Meta(description="FLOPs per byte.")]
    achieved_tflops: float | None
    achieved_tbs: float | None
    bound: Annotated[Bound | None, Meta(description="Null when unknown; communication for "
                                                    "collectives (all-reduce, all-gather, "
                                                    "reduce-scatter), whose bytes are bus bytes.")]
    achieved_bus_gbs: Annotated[float | None, Meta(description="Collectives: bus bandwidth in "
                                                               "GB/s (bus bytes / time, as "
                                                               "nccl-tests' busbw); null "
                                                               "otherwise.")]
    world_size: Annotated[int | None, Meta(description="Collectives: the ranks taking part, "
                                                       "and null when unknown (see reason).")]
    sizes: Annotated[list[NodeSize], Meta(description="The symbolic sizes in the node's shapes "
                                                      "and where each came from.")]
    peak_share: Annotated[float | None, Meta(description="Achieved / peak of the bound resource "
                                                         "(0..1); null without a peak.")]
    reason: Annotated[str | None, Meta(description="Why a figure is unknown, e.g. 'symbolic "
                                                   "size s70: pass --dim s70=N'.")]


class HostGap(Record):
    """A stretch of the stored replay with no GPU activity on any stream, and what the host did."""

    start_us: float
    duration_us: float
    cause: Annotated[Literal["sync", "late_launch", "unexplained"],
                     Meta(description="sync: a host synchronisation ran across it; "
                                      "late_launch: the next kernel's launch call began after "
                                      "the GPU had gone idle.")]
    call: Annotated[str | None, Meta(description="The host call that explains it.")]
    layer: Annotated[int | None, Meta(description="Layer of the kernel that ends the gap.")]
    node: str | None


class CopyGroup(Record):
    """Memory copies of one direction and memory kinds."""

    direction: Annotated[str, Meta(description="HtoD, DtoH, DtoD, PtoP...")]
    src_kind: str | None
    dst_kind: str | None
    pageable: Annotated[bool, Meta(description="A host side in pageable memory: the copy is "
                                               "synchronous and staged.")]
    count: int
    bytes: int | None
    time_us: float


class HostSide(Record):
    """What the host did around the step; fields are null when the trace lacks their table."""

    runtime_recorded: Annotated[bool, Meta(description="Whether the trace holds CUDA runtime "
                                                       "API rows.")]
    launches: Annotated[int | None, Meta(description="Kernel and graph launch calls in the "
                                                     "step.")]
    graph_launches: int | None
    sync_calls: int | None
    sync_us: Annotated[float | None, Meta(description="Host time in synchronisations.")]
    gaps: Annotated[list[HostGap], Meta(description="GPU idle gaps of at least 1 µs, longest "
                                                    "first.")]
    idle_us: Annotated[float, Meta(description="GPU idle wall time in the step.")]
    explained_us: Annotated[float, Meta(description="Idle time a host call explains.")]
    copies: Annotated[list[CopyGroup] | None, Meta(description="Null when the trace holds no "
                                                               "copy details.")]


class Finding(Record):
    """One thing worth looking at, ranked by the time at stake."""

    kind: Annotated[str, Meta(description="tail, exposed_communication, host_gap, "
                                          "memory_bound, compute_bound, pageable_copy, idle.")]
    message: str
    layer: int | None
    node: str | None
    time_at_stake_us: Annotated[float, Meta(description="GPU or wall time that fixing it could "
                                                        "save at most, per step.")]


class StepSummary(Record):
    """The whole step (the stored replay or pass)."""

    gpu_time_us: Annotated[float, Meta(description="Sum of every activity's median duration.")]
    memory_us: float
    span_us: Annotated[float, Meta(description="Wall time, first start to last end.")]
    busy_us: Annotated[float, Meta(description="Wall time with any stream busy.")]
    idle_us: Annotated[float, Meta(description="span_us - busy_us: no stream busy.")]
    kernel_count: int
    memory_op_count: int
    replays: Annotated[int, Meta(description="Replays the statistics are over (1 for a pass).")]


class RankLayer(Record):
    """One layer on one rank."""

    layer: int
    gpu_time_us: Annotated[float, Meta(description="GPU time: the sum of the layer's kernels' "
                                                   "median durations over the replays.")]
    compute_us: Annotated[float, Meta(description="gpu_time_us without the communication "
                                                  "kernels (what stragglers are judged on).")]
    noise_us: Annotated[float, Meta(description="Replay noise of compute_us: each node's "
                                                "kernels' spread (p90 - p50) summed, the nodes' "
                                                "in quadrature (as diff reckons it).")]
    communication_us: Annotated[float | None, Meta(
        description="GPU time of the layer's communication kernels (collectives) on this rank: "
                    "with synchronous collectives, mostly the wait for the slowest rank; null "
                    "where the layer has no collective mapped on any rank.")]


class RankTime(Record):
    """One rank of a multi-GPU run with its GPU time, whole and per layer."""

    rank: int
    device: int | None
    trace: Annotated[str, Meta(description="The trace file the rank was read from.")]
    gpu_time_us: Annotated[float, Meta(description="GPU time of the step on this rank (layers "
                                                   "and the work outside them).")]
    communication_us: Annotated[float | None, Meta(
        description="GPU time of its communication kernels; null when none is mapped.")]
    layers: list[RankLayer]


class Straggler(Record):
    """A rank slower than the others at a layer beyond their replay noise."""

    rank: int
    layer: int
    excess_us: Annotated[float, Meta(description="compute_us minus the median of the other "
                                                 "ranks' compute_us at that layer.")]
    compute_us: float
    others_us: Annotated[float, Meta(description="Median compute_us of the other ranks.")]
    noise_us: Annotated[float, Meta(description="Combined noise: the rank's and the median of "
                                                "the others', in quadrature.")]


class Report(Record):
    """``tb-ad-layer report RUN --format json`` and ``api/report``."""

    run: str
    stage: int
    phase: str | None
    step: StepSummary
    categories: list[CategoryTime]
    groups: list[GroupTime]
    streams: list[StreamIdle]
    layers: list[LayerBreakdown]
    outside: Annotated[LayerBreakdown | None, Meta(description="Work outside every layer.")]
    tails: Annotated[list[NodeTail], Meta(description="Per node, largest p99 - p50 first.")]
    gpu: GpuPeak
    roofline: Annotated[list[NodeRoofline], Meta(description="Per node with GPU time, "
                                                             "longest first.")]
    dims: Annotated[dict[str, int], Meta(description="Symbolic sizes given (--dim); they take "
                                                     "precedence over the trace's.")]
    trace_dims: Annotated[list[TraceDim] | None, Meta(description="Symbolic sizes the trace's "
                                                                  "recorded input shapes bind; "
                                                                  "null when it recorded none.")]
    host: HostSide
    findings: list[Finding]
    notes: Annotated[list[str], Meta(description="What could not be reported, and why.")]
    ranks: Annotated[list[RankTime], Meta(description="Every rank of a multi-GPU run; empty "
                                                      "for a one-rank run.")]
    stragglers: Annotated[list[Straggler], Meta(description="Ranks slower than the others at "
                                                            "a layer beyond the replay noise, "
                                                            "largest excess first; empty for a "
                                                            "one-rank run.")]


class RanksResponse(Record):
    """``api/ranks``: every rank of a run with its GPU time per layer, the stragglers and the
    communication per rank (the same figures as ``report``'s ``ranks`` and ``stragglers``)."""

    run: str
    stage: Annotated[int, Meta(description="The traced stage (the ranks' kernels are on it).")]
    default_rank: Annotated[int, Meta(description="The rank the layer documents and api/layer "
                                                  "without rank= show: the first.")]
    layers: Annotated[list[int], Meta(description="The layer indexes, in order.")]
    ranks: list[RankTime]
    stragglers: list[Straggler]
    rule: Annotated[str, Meta(description="The straggler rule, in words.")]


class DiffEntry(Record):
    """One step, layer, group or node compared between two runs."""

    level: Literal["step", "layer", "group", "node"]
    layer: int | None
    group: str | None
    node: str | None
    a_us: float
    b_us: float
    delta_us: Annotated[float, Meta(description="b_us - a_us.")]
    delta_pct: Annotated[float | None, Meta(description="delta_us / a_us in percent; null when "
                                                        "a_us is 0.")]
    noise_us: Annotated[float, Meta(description="Replay-to-replay spread of the two sides "
                                                "(p90 - p50, combined): a change within it is "
                                                "noise.")]


class Diff(Record):
    """``tb-ad-layer diff RUN_A RUN_B --format json`` and ``api/diff``."""

    a_run: str
    b_run: str
    gate_pct: Annotated[float, Meta(description="A change counts when beyond this percentage "
                                                "and beyond the noise.")]
    verdict: Verdict
    step: DiffEntry
    regressions: Annotated[list[DiffEntry], Meta(description="Slower beyond gate and noise, "
                                                             "largest first.")]
    improvements: list[DiffEntry]
    notes: list[str]
