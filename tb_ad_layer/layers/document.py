"""One layer as a JSON-ready document: the shape the run store keeps, the API serves, and the
seed-schema exporter and DOT renderer read (see docs/API.md, ``api/layer``).

Trace fields (``kernels``, ``time_us``, ``trace_summary``) are left empty here; the converter
fills them when a trace is given.
"""
from __future__ import annotations

from typing import Any

from tb_ad_layer.dump.graph import friendly_op_name
from tb_ad_layer.layers.layered import LayeredGraph


def layer_document(lg: LayeredGraph, index: int) -> dict[str, Any]:
    """The document of layer ``index`` of ``lg`` (nodes, edges, external inputs)."""
    info = lg.layers[index]
    graph = lg.graph
    nodes = graph.nodes
    ext = {e.id: e for e in info.external_inputs}
    allowed = {nodes[j].name for j in info.members}
    allowed.update(ext)
    out_nodes: list[dict[str, Any]] = []
    edges: list[dict[str, Any]] = []
    for j in info.members:
        node = nodes[j]
        inputs = [i for i in node.inputs if i in allowed]
        weights = []
        for w in node.weights:
            if w in ext:
                inputs.append(w)
                continue
            wt = graph.weights[w]
            weights.append({"name": w, "shape": wt.shape, "dtype": wt.dtype})
        for i in inputs:
            src = graph.by_name.get(i)
            shape = src.shape if src is not None else ext[i].shape
            edges.append({"from": i, "to": node.name, "shape": shape})
        out_nodes.append({
            "id": node.name, "op": node.target or node.kind,
            "label": friendly_op_name(node.target) if node.target else node.kind,
            "node_kind": node.kind, "shape": node.shape, "dtype": node.dtype,
            "group": lg.group[j], "sub_group": lg.sub_group[j], "stream": lg.stream[j],
            "inputs": inputs, "weights": weights, "args": node.args[:2000],
            "line": node.line, "kernels": [], "time_us": 0.0,
        })
    return {
        "layer": index, "kind": info.kind, "attention": info.attention,
        "source_file": graph.source.rsplit("/", 1)[-1], "module": graph.module,
        "nodes": out_nodes, "edges": edges,
        "external_inputs": [{"id": e.id, "label": e.label, "kind": e.kind, "shape": e.shape,
                             "dtype": e.dtype, "layer": e.layer} for e in info.external_inputs],
        "group_counts": info.group_counts, "trace_summary": None,
    }
