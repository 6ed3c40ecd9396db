"""Build the layer documents of a layered graph: the records the run store keeps, the API
serves, and the seed-schema exporter and DOT renderer read (the shape is
:class:`~tb_ad_layer.contract.document.LayerDocument`'s; see docs/API.md, ``api/layer``).

A document is built once, complete: :func:`layer_record` takes the trace's times of the layer
(:class:`LayerTimes`: its nodes' kernels and its summary) when a trace was mapped onto the
stage, and leaves the trace fields empty (``kernels``, ``time_us`` 0, ``trace_summary`` null)
otherwise; :func:`layer_document_json` encodes a document as the run store keeps it.

Each weight's ``role`` (:func:`~tb_ad_layer.layers.weights.weight_role`) is stored here, at
conversion, so that the plugin reads it instead of deriving it again from the name.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, cast

from tb_ad_layer.contract.document import (
    Edge,
    ExternalInput,
    LayerDocument,
    LayeringDoubt,
    LayerNode,
    NodeKernel,
    NodeKind,
    StreamRole,
    TraceSummary,
    Weight,
)
from tb_ad_layer.contract.record import encode
from tb_ad_layer.dump.graph import Graph, friendly_op_name
from tb_ad_layer.layers.layered import LayeredGraph
from tb_ad_layer.layers.vocabulary import as_group, as_sub_group
from tb_ad_layer.layers.weights import weight_role

ARGS_SHOWN: Final = 2000  # characters of a node's argument text in a document

#: Node id -> the kernels it launched, in start order (the nodes of a whole stage).
NodeKernels = Mapping[str, Sequence[NodeKernel]]
_NO_KERNELS: Final[NodeKernels] = {}


@dataclass(frozen=True, slots=True)
class LayerTimes:
    """What a trace says about one layer: the kernels of the stage's nodes (by node id; a map
    of the whole stage serves every layer) and the layer's summary (None when the trace found
    no such layer)."""

    node_kernels: NodeKernels
    summary: TraceSummary | None


def layer_record(lg: LayeredGraph, index: int, times: LayerTimes | None = None) -> LayerDocument:
    """The document of layer ``index`` of ``lg`` (nodes, edges, external inputs, the doubts
    about it), with ``times`` of a trace when one was mapped onto the stage.

    A node's inputs are the nodes of the layer and the external inputs it reads, in argument
    order; a model-level buffer it reads is one of its inputs, not one of its weights.
    """
    info = lg.layers[index]
    graph = lg.graph
    nodes = graph.nodes
    layer_of = lg.layer
    inputs_idx = graph.topology()[0]
    external = [ExternalInput(id=e.id, label=e.label, kind=e.kind, shape=e.shape,
                              dtype=e.dtype, layer=e.layer) for e in info.external_inputs]
    ext = {e.id: e for e in external}
    records = _Records(lg, times.node_kernels if times is not None else _NO_KERNELS)
    weight_records = graph.weight_records()
    out_nodes: list[LayerNode] = []
    edges: list[Edge] = []
    for j in info.members:
        node = nodes[j]
        to = node.name
        inputs: list[str] = []
        for i in inputs_idx[j]:
            src = nodes[i]
            # Every member of the layer has this layer's index (LayeredGraph's invariant).
            if layer_of[i] == index or src.name in ext:
                inputs.append(src.name)
                edges.append(Edge(from_=src.name, to=to, shape=src.shape))
        weights: list[Weight] = []
        if node.weights:
            wts = weight_records[j]
            roles = records.roles(j, len(wts))
            for k, wt in enumerate(wts):
                w = wt.name
                e = ext.get(w)
                if e is not None:
                    inputs.append(w)
                    edges.append(Edge(from_=w, to=to, shape=e.shape))
                else:
                    weights.append(Weight(name=w, shape=wt.shape, dtype=wt.dtype,
                                          role=roles[k] if roles else weight_role(w)))
        out_nodes.append(records.node(j, inputs, weights))
    return LayerDocument(
        layer=index, kind=info.kind, attention=info.attention,
        source_file=graph.source.rsplit("/", 1)[-1], module=graph.module,
        nodes=out_nodes, edges=edges, external_inputs=external,
        group_counts=info.group_counts,
        trace_summary=times.summary if times is not None else None,
        doubts=layer_doubts(lg, index))


def layer_doubts(lg: LayeredGraph, index: int) -> list[LayeringDoubt]:
    """The doubts of ``lg`` that concern layer ``index``."""
    return [d for d in lg.doubts if d.layer == index]


class _Records:
    """Makes the node and weight records of one graph's documents."""

    def __init__(self, lg: LayeredGraph, node_kernels: NodeKernels) -> None:
        self.lg = lg
        self.graph: Graph = lg.graph
        self.node_kernels = node_kernels

    def roles(self, j: int, count: int) -> tuple[str, ...]:
        """The roles of node ``j``'s ``count`` weights as layering found them (parallel to
        its weight records), or ``()`` where it did not: layering already matched every
        weight name against the layer patterns, which a document would otherwise do again."""
        all_roles = self.lg.weight_roles
        if j < len(all_roles):
            roles = all_roles[j]
            if len(roles) == count:
                return roles
        return ()

    def weight(self, name: str, shape: str, dtype: str) -> Weight:
        return Weight(name=name, shape=shape, dtype=dtype, role=weight_role(name))

    def node(self, j: int, inputs: list[str], weights: list[Weight]) -> LayerNode:
        lg = self.lg
        node = self.graph.nodes[j]
        target = node.target
        if target:
            label = friendly_op_name(target)  # cached per distinct target
            op = target
        else:
            label = op = node.kind
        kernels = self.node_kernels.get(node.name)
        if kernels:
            kernel_list = list(kernels)
            time_us = round(sum(k.duration_us for k in kernel_list), 3)
        else:
            kernel_list, time_us = [], 0.0
        return LayerNode(
            id=node.name, op=op, label=label, node_kind=cast(NodeKind, node.kind),
            shape=node.shape, dtype=node.dtype, group=as_group(lg.group[j]),
            sub_group=as_sub_group(lg.sub_group[j]),
            stream=cast(StreamRole, lg.stream[j]), inputs=inputs, weights=weights,
            args=node.args[:ARGS_SHOWN], line=node.line, kernels=kernel_list, time_us=time_us)


def layer_document_json(lg: LayeredGraph, index: int) -> bytes:
    """Layer ``index``'s document without a trace as the JSON the run store keeps, UTF-8
    encoded."""
    return encode(layer_record(lg, index))


def layer_document_text(lg: LayeredGraph, index: int) -> str:
    """Layer ``index``'s document as the JSON text the run store keeps."""
    return layer_document_json(lg, index).decode("utf-8")


def outside_records(lg: LayeredGraph, node_kernels: NodeKernels | None = None) -> list[LayerNode]:
    """The nodes outside every layer (embedding, model-level preparation, final norm, lm head),
    as node records of a layer document, with every input kept, and their kernels in
    ``node_kernels`` when a trace was mapped onto the stage."""
    graph = lg.graph
    records = _Records(lg, node_kernels if node_kernels is not None else _NO_KERNELS)
    weight_records = graph.weight_records()
    out: list[LayerNode] = []
    for j in outside_members(lg):
        node = graph.nodes[j]
        wts = weight_records[j]
        roles = records.roles(j, len(wts))
        out.append(records.node(j, list(node.inputs),
                                [Weight(name=wt.name, shape=wt.shape, dtype=wt.dtype,
                                        role=roles[k] if roles else weight_role(wt.name))
                                 for k, wt in enumerate(wts)]))
    return out


def outside_members(lg: LayeredGraph) -> list[int]:
    """Positions of the nodes outside every layer, in graph order."""
    return [j for j, layer in enumerate(lg.layer) if layer is None]


def outside_nodes_json(lg: LayeredGraph) -> bytes:
    """``outside_records(lg)`` (no trace) as the JSON the run store keeps, UTF-8 encoded."""
    return encode(outside_records(lg))


def outside_nodes_text(lg: LayeredGraph) -> str:
    """``outside_records(lg)`` (no trace) as the JSON text the run store keeps."""
    return outside_nodes_json(lg).decode("utf-8")
