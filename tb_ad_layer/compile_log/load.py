"""A TORCH_TRACE directory, read and layered: the stages ``convert`` and ``extract`` show.

Each kind of compiled graph is one stage (:mod:`tb_ad_layer.compile_log.torch_trace`), layered
by the rules every dump goes through, graph by graph (each compiled graph is a model of its
own: a recompiled frame's graphs read the same weights, and must not sway each other), then
joined. Node names differ between kinds, so no stage carries another's layers; each is layered
from its own weights, which the Dynamo graph's input names give every kind (an AOT input
``primals_3`` is the Dynamo input at its position).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from tb_ad_layer.compile_log.torch_trace import (
    DYNAMO,
    TorchTrace,
    join_graphs,
    read_torch_trace,
    stage_parts,
    unlayered_graphs,
)
from tb_ad_layer.contract.document import LayeringDoubt
from tb_ad_layer.dump.graph import CALL, OUTPUT, PLACEHOLDER, Graph
from tb_ad_layer.errors import InputError
from tb_ad_layer.layers.doubts import layering_doubts
from tb_ad_layer.layers.layered import LayeredGraph, LayerInfo, layer_graph
from tb_ad_layer.layers.vocabulary import layer_kind

#: The doubt kind of a compiled graph that serves several layers.
SHARED_GRAPH: Final = "shared_graph"


@dataclass(slots=True)
class LoadedTrace:
    """The stages of a TORCH_TRACE directory in stage order (:data:`KINDS`), their kinds, and
    what the log records about compilation (:meth:`TorchTrace.summary`)."""

    trace: TorchTrace
    kinds: list[str] = field(default_factory=list)
    stages: list[LayeredGraph] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        return self.trace.summary()


def layer_stage(tt: TorchTrace, kind: str) -> LayeredGraph:
    """One kind's graphs, each layered on its own and then joined: a recompiled frame's graphs
    read the same weights, and a graph's layers must not depend on another's; a layer that a
    graph break split keeps its nodes from both graphs. The joined stage's doubts are made
    again, plus one per compiled graph that serves several layers."""
    parts = stage_parts(tt, kind)
    layered: list[LayeredGraph | None] = []
    for part in parts:
        try:
            layered.append(_handed_on_outside(_stream_input_chains(layer_graph(part))))
        except InputError as e:
            tt.warnings.append(f"graph {part.module} is left without layers: {e.message}")
            layered.append(None)
    sizes = [len(p.nodes) for p in parts]
    graph = join_graphs(tt, kind, parts)
    lg = _merge(graph, layered, sizes)
    lg.doubts = layering_doubts(lg)
    for cid, calls in unlayered_graphs(graph, lg.layer):
        lg.doubts.append(LayeringDoubt(
            kind=SHARED_GRAPH, layer=None,
            message=f"compiled graph [{cid}] ({calls} calls) reads one decoder layer's "
                    f"parameters without a layer index: a graph break inside a layer made it "
                    f"a frame of its own, run for several layers; its nodes are left outside "
                    f"every layer"))
    return lg


_FLOAT = ("torch.float", "torch.bfloat16", "torch.half")


def _stream_input_chains(lg: LayeredGraph) -> LayeredGraph:
    """Give layer N the work it does on a graph input before its first weight: a frame resumed
    after a graph break between layers starts with layer N's input norm on the hidden states
    the previous frame handed over (``l_h_``), where a whole model's graph would have them from
    layer N-1. A node computed from the graph's inputs alone (a float one among them), reading
    no weight, all of whose users are layer N's nodes or such nodes for N, is layer N's."""
    graph = lg.graph
    nodes = graph.nodes
    by_name = graph.by_name
    consumers = graph.consumers()
    pure = [False] * len(nodes)
    float_root = [False] * len(nodes)
    for node in nodes:
        j = node.index
        if node.kind == PLACEHOLDER:
            pure[j] = True
            float_root[j] = node.dtype.startswith(_FLOAT)
        elif node.kind == CALL and lg.layer[j] is None and not node.weights and node.inputs:
            ins = [by_name[i].index for i in node.inputs]
            pure[j] = all(pure[i] for i in ins)
            float_root[j] = any(float_root[i] for i in ins)
    changed = False
    for node in reversed(nodes):
        j = node.index
        if node.kind != CALL or not pure[j] or not float_root[j] or lg.layer[j] is not None:
            continue
        users = {lg.layer[by_name[u].index] if by_name[u].kind == CALL else -1
                 for u in consumers.get(node.name, [])}
        if len(users) != 1:
            continue
        layer = users.pop()
        if layer is None or layer < 0 or layer not in lg.layers:
            continue
        lg.layer[j] = layer
        info = lg.layers[layer]
        info.members.append(j)
        group = lg.group[j]
        info.group_counts[group] = info.group_counts.get(group, 0) + 1
        changed = True
    if changed:
        for info in lg.layers.values():
            info.members.sort()
    return lg


def _handed_on_outside(lg: LayeredGraph) -> LayeredGraph:
    """Leave outside every layer the values a graph computes from model-level values only to
    hand them on or to drop them (no user but the graph's output): a graph that a graph break
    ends returns the model's attention mask or position table to the frame that resumes, and
    Dynamo keeps a mask that attention then ignores, where a dump's graph would have used them
    in the next layer."""
    graph = lg.graph
    consumers = graph.consumers()
    by_name = graph.by_name
    moved: list[int] = []
    for node in graph.nodes:
        layer = lg.layer[node.index]
        if layer is None or node.kind != CALL or node.weights or not node.inputs:
            continue  # (a call of constants only, ``_log_api_usage_once``, stays where it ran)
        users = consumers.get(node.name, [])
        if any(by_name[u].kind != OUTPUT for u in users):
            continue
        if all(lg.layer[by_name[i].index] is None for i in node.inputs):
            moved.append(node.index)
    _place_constant_calls(lg, consumers)
    for j in moved:
        layer = lg.layer[j]
        lg.layer[j] = None
        if layer is None or layer not in lg.layers:
            continue
        info = lg.layers[layer]
        info.members.remove(j)
        group = lg.group[j]
        if info.group_counts.get(group, 0) > 0:
            info.group_counts[group] -= 1
    return lg


def _place_constant_calls(lg: LayeredGraph, consumers: dict[str, list[str]]) -> None:
    """A call of constants whose result nothing reads (``torch._C._log_api_usage_once(...)``,
    which ``F.silu`` makes inside a Mamba mixer) has no dataflow to place it by: it ran where
    the code that logged it ran, between two nodes of one layer, and belongs to that layer."""
    nodes = lg.graph.nodes
    calls = [n.index for n in nodes if n.kind == CALL]
    for k, j in enumerate(calls):
        node = nodes[j]
        if lg.layer[j] is not None or node.inputs or node.weights or consumers.get(node.name):
            continue
        if "_vmap_decrement_nesting" in node.target:
            continue  # closing a vmap: Dynamo emits it on leaving, outside the module's code
        before = next((lg.layer[i] for i in reversed(calls[:k]) if nodes[i].inputs), None)
        after = next((lg.layer[i] for i in calls[k + 1:] if nodes[i].inputs), None)
        if before is not None and before == after and before in lg.layers:
            lg.layer[j] = before
            info = lg.layers[before]
            info.members.append(j)
            info.members.sort()
            group = lg.group[j]
            info.group_counts[group] = info.group_counts.get(group, 0) + 1


def _merge(graph: Graph, parts: list[LayeredGraph | None], sizes: list[int]) -> LayeredGraph:
    layer: list[int | None] = []
    group: list[str] = []
    sub_group: list[str | None] = []
    stream: list[str] = []
    infos: dict[int, LayerInfo] = {}
    base = 0
    for lg, size in zip(parts, sizes, strict=True):
        if lg is None:
            layer += [None] * size
            group += ["other"] * size
            sub_group += [None] * size
            stream += [""] * size
            base += size
            continue
        layer += lg.layer
        group += lg.group
        sub_group += lg.sub_group
        stream += lg.stream
        for index, info in lg.layers.items():
            have = infos.get(index)
            members = [base + j for j in info.members]
            if have is None:
                infos[index] = LayerInfo(index=index, kind=info.kind, attention=info.attention,
                                         members=members, group_counts=dict(info.group_counts),
                                         external_inputs=list(info.external_inputs))
                continue
            have.members += members
            for g, n in info.group_counts.items():
                have.group_counts[g] = have.group_counts.get(g, 0) + n
            have.kind = layer_kind(g for g, n in have.group_counts.items() if n > 0)
            have.attention = have.attention or info.attention
            known = {x.id for x in have.external_inputs}
            have.external_inputs += [x for x in info.external_inputs if x.id not in known]
        base += size
    return LayeredGraph(graph=graph, layer=layer, group=group, sub_group=sub_group,
                        stream=stream, layers={i: infos[i] for i in sorted(infos)})


def load_torch_trace(path: str | Path, kinds: list[str] | None = None) -> LoadedTrace:
    """Read and layer the stages of a TORCH_TRACE directory: ``kinds`` (default: every kind
    the log holds, Dynamo first).

    Raises:
        InputError: no structured log, no graph, or a graph that cannot be read.
    """
    tt = read_torch_trace(path)
    out = LoadedTrace(tt)
    for kind in tt.kinds:
        if kinds is not None and kind not in kinds:
            continue
        out.kinds.append(kind)
        out.stages.append(layer_stage(tt, kind))
    return out


def default_kind(tt: TorchTrace) -> str:
    """The stage ``extract`` shows by default: the Dynamo graph, where module paths name the
    layers (the others are named by it)."""
    return DYNAMO if DYNAMO in tt.kinds else tt.kinds[-1]
