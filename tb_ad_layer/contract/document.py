"""The layer document: one decoder layer's nodes, edges and inputs, with its GPU kernels.

The converter stores one document per (stage, layer) in the run store
(``layers.doc``, compact JSON) and the nodes outside every layer as a JSON list of
:class:`LayerNode` (``outside.nodes``). ``api/layer`` serves a document with ``run`` and ``stage``
added (:class:`~tb_ad_layer.contract.api.LayerResponse`); the seed-schema and DOT exports read
it.

Without a trace, every node's ``kernels`` is empty, its ``time_us`` 0 and the document's
``trace_summary`` null. Times are microseconds relative to the start of the stored replay (or
forward pass); names from dumps and traces are plain text, never markup.
"""
from __future__ import annotations

from typing import Annotated, Literal, get_args

import msgspec
from msgspec import Meta

from tb_ad_layer.contract.record import Record

#: What a node is in the FX graph: an operator call, a graph input, or the graph's output.
NodeKind = Literal["call", "placeholder", "output"]
#: The CUDA stream role of a node: ``aux`` between the aux-stream passthrough ops, else ``main``.
StreamRole = Literal["main", "aux"]
#: A node's functional group: the blocks a decoder layer is drawn as. The converter's rules
#: (:mod:`tb_ad_layer.layers.vocabulary`) and the panel (``GROUPS`` in the generated
#: ``contract.ts``) both take their names from here.
Group = Literal["norm", "attention", "mla", "moe", "mlp", "mamba", "gdn", "other"]
GROUPS: tuple[Group, ...] = get_args(Group)
#: The part of a group a node belongs to, when the group has parts.
SubGroup = Literal["q_branch", "kv_branch", "rope", "moe_router", "moe_experts", "shared_experts",
                   "aux_stream", "mamba_metadata", "mamba_ssm", "mamba_gated_norm", "gdn_conv1d",
                   "gdn_gating", "gdn_delta_rule"]
SUB_GROUPS: tuple[SubGroup, ...] = get_args(SubGroup)


class Weight(Record):
    """A parameter or buffer a node reads directly (not through another node)."""

    name: Annotated[str, Meta(description="Weight name as in the dump, e.g. "
                                          "model_layers_5_mlp_gate_weight.")]
    shape: Annotated[str, Meta(description="Shape as printed by the dump, e.g. 256x7168.")]
    dtype: str
    role: Annotated[str, Meta(description="The weight's part in its layer, the same in every "
                                          "layer and run: its name without the layer prefix "
                                          "(mlp_gate_weight), a counter of a transform-made "
                                          "weight as N (fused_weight_N); a model-level name "
                                          "as is. Compare matches nodes by it.")]


class KernelStats(Record):
    """A kernel's duration over every replay of the captured CUDA graph."""

    count: Annotated[int, Meta(description="Replays the kernel was seen in.")]
    median_us: float
    min_us: float
    max_us: float


class NodeKernel(Record):
    """One GPU kernel (or copy) that a node launched, in launch order."""

    kernel: Annotated[str, Meta(description="Short kernel name, e.g. nvjet_gemm.")]
    name: Annotated[str, Meta(description="Full demangled kernel name.")]
    duration_us: Annotated[float, Meta(description="Typical duration: the median over replays "
                                                   "when the trace holds several, else the "
                                                   "stored replay's.")]
    replay_duration_us: Annotated[float, Meta(description="Duration in the stored replay or "
                                                          "forward pass.")]
    stream: Annotated[str, Meta(description="Stream key, e.g. pid1234/dev0/ctx1/s7.")]
    start_us: Annotated[float, Meta(description="Start, relative to the stored replay.")]
    stats: KernelStats | None


class LayerNode(Record):
    """One FX graph node of a layer (or outside every layer), in graph order."""

    id: Annotated[str, Meta(description="Node name in the dump; unique in its graph.")]
    op: Annotated[str, Meta(description="Call target, e.g. aten.mm.default, or the node kind "
                                        "for placeholders and the output.")]
    label: Annotated[str, Meta(description="Friendly op name, e.g. mm.")]
    node_kind: NodeKind
    shape: Annotated[str, Meta(description="Output shape as printed by the dump; a tuple of "
                                           "shapes for several outputs.")]
    dtype: str
    group: Annotated[Group, Meta(description="Functional group: the block of the layer it is "
                                             "drawn in.")]
    sub_group: Annotated[SubGroup | None, Meta(description="Part of the group, e.g. moe_router; "
                                                      "null when none.")]
    stream: StreamRole
    inputs: Annotated[list[str], Meta(description="Ids of the nodes and external inputs it "
                                                  "reads, in argument order.")]
    weights: list[Weight]
    args: Annotated[str, Meta(description="Raw argument text of the dump line, cut short.")]
    line: Annotated[int, Meta(description="Line of the node in the dump file (1-based).")]
    kernels: list[NodeKernel]
    time_us: Annotated[float, Meta(description="Sum of its kernels' duration_us; 0 without "
                                               "kernels.")]


class Edge(Record):
    """A data dependency inside the layer: ``from`` (a node or an external input) feeds ``to``."""

    from_: str = msgspec.field(name="from")
    to: str
    shape: Annotated[str, Meta(description="Shape of the value passed.")]


class ExternalInput(Record):
    """A value the layer reads but does not compute (the previous layer's residual output, KV
    cache and batch metadata placeholders, model-level RoPE tables, masks and buffers)."""

    id: str
    label: Annotated[str, Meta(description="Display text, e.g. 'Layer 4 residual output'.")]
    kind: Annotated[str, Meta(description="What it is, e.g. residual, layer_output, kv_cache, "
                                          "batch_metadata, rope, mask.")]
    shape: str
    dtype: str
    layer: Annotated[int | None, Meta(description="Layer that computed it; null for "
                                                  "model-level values.")]


class StreamFigures(Record):
    """One stream's share of a layer's kernels."""

    stream: str
    kernel_count: int
    busy_us: Annotated[float, Meta(description="Time with at least one kernel running.")]
    span_us: Annotated[float, Meta(description="First kernel start to last kernel end.")]
    gaps_us: Annotated[float, Meta(description="span_us minus busy_us.")]


class UnmappedKernel(Record):
    """A kernel of the layer that no node claimed, and why."""

    kernel: str
    name: str
    duration_us: float
    stream: str
    start_us: float
    reason: str


class TraceSummary(Record):
    """A layer's GPU time from the trace."""

    total_duration_us: Annotated[float, Meta(description="Sum of the typical durations of all "
                                                         "the layer's GPU activities, "
                                                         "unmapped ones included.")]
    kernel_count: Annotated[int, Meta(description="Kernels (copies and fills not counted).")]
    num_streams: int
    start_us: Annotated[float, Meta(description="First kernel start, relative to the stored "
                                                "replay.")]
    span_us: Annotated[float, Meta(description="Wall time of the layer across streams.")]
    groups: Annotated[dict[str, float], Meta(description="total_duration_us split by the "
                                                         "mapped nodes' groups; 'unmapped' "
                                                         "for the rest.")]
    streams: list[StreamFigures]
    unmapped: list[UnmappedKernel]
    memcpy_count: Annotated[int, Meta(description="Memory copies among the activities.")] = 0
    memset_count: Annotated[int, Meta(description="Memory fills among the activities.")] = 0


class LayeringDoubt(Record):
    """Evidence that the layers found in a stage may be wrong: the converter says so rather
    than show an implausible layering as if it were right."""

    kind: Annotated[str, Meta(description="What is implausible, e.g. index_gap (layer "
                                          "indices with a gap), oversized_layer (far more "
                                          "nodes than the layers of its kind), layer_count, "
                                          "unordered.")]
    layer: Annotated[int | None, Meta(description="The layer it concerns; null for the whole "
                                                  "stage.")]
    message: Annotated[str, Meta(description="One line naming the evidence, e.g. 'layer 12 has "
                                             "6,413 nodes, 9.1x the median of attention+mamba "
                                             "layers (705)'.")]


class LayerDocument(Record):
    """One decoder layer of one transform stage, as the run store keeps it."""

    layer: Annotated[int, Meta(description="Layer index (from the weight names).")]
    kind: Annotated[str, Meta(description="Layer kind: its mixers then its feed-forward "
                                          "block, joined by '+' (attention+mlp, mla+moe, "
                                          "mamba, gdn+moe, attention+mamba+mlp, mlp).")]
    attention: Annotated[str | None, Meta(description="mla, attention, or null when the layer "
                                                      "has none.")]
    source_file: Annotated[str, Meta(description="Dump file the stage was read from.")]
    module: Annotated[str, Meta(description="GraphModule section of the dump, e.g. (root).")]
    nodes: list[LayerNode]
    edges: list[Edge]
    external_inputs: list[ExternalInput]
    group_counts: Annotated[dict[str, int], Meta(description="Nodes per group.")]
    trace_summary: Annotated[TraceSummary | None, Meta(description="null without a trace.")]
    doubts: Annotated[list[LayeringDoubt], Meta(description="Why this layer's nodes may be "
                                                            "assigned wrongly; empty when "
                                                            "nothing looks implausible.")]


#: The ``outside.nodes`` column: nodes outside every layer, with every input kept.
OutsideNodes = list[LayerNode]
