"""One layer as a JSON-ready document: the shape the run store keeps, the API serves, and the
seed-schema exporter and DOT renderer read (see docs/API.md, ``api/layer``).

Trace fields (``kernels``, ``time_us``, ``trace_summary``) are left empty here; the converter
fills them when a trace is given.

:func:`layer_document_text` gives the same document as JSON text, as the run store keeps it.
"""
from __future__ import annotations

import json
from typing import Any, Final

from tb_ad_layer.dump.graph import friendly_op_name
from tb_ad_layer.layers.layered import LayeredGraph

ARGS_SHOWN: Final = 2000  # characters of a node's argument text in a document


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
        out_nodes.append(_node_record(lg, j, inputs, weights))
    return {
        "layer": index, "kind": info.kind, "attention": info.attention,
        "source_file": graph.source.rsplit("/", 1)[-1], "module": graph.module,
        "nodes": out_nodes, "edges": edges,
        "external_inputs": [{"id": e.id, "label": e.label, "kind": e.kind, "shape": e.shape,
                             "dtype": e.dtype, "layer": e.layer} for e in info.external_inputs],
        "group_counts": info.group_counts, "trace_summary": None,
    }


def _node_record(lg: LayeredGraph, j: int, inputs: list[str],
                 weights: list[dict[str, str]]) -> dict[str, Any]:
    node = lg.graph.nodes[j]
    return {
        "id": node.name, "op": node.target or node.kind,
        "label": friendly_op_name(node.target) if node.target else node.kind,
        "node_kind": node.kind, "shape": node.shape, "dtype": node.dtype,
        "group": lg.group[j], "sub_group": lg.sub_group[j], "stream": lg.stream[j],
        "inputs": inputs, "weights": weights, "args": node.args[:ARGS_SHOWN],
        "line": node.line, "kernels": [], "time_us": 0.0,
    }


def dumps(value: Any) -> str:
    """Compact JSON as the store keeps it (non-ASCII text as is)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def layer_document_text(lg: LayeredGraph, index: int) -> str:
    """Layer ``index``'s document as the JSON text the run store keeps."""
    return dumps(layer_document(lg, index))


def outside_nodes(lg: LayeredGraph) -> list[dict[str, Any]]:
    """The nodes outside every layer (embedding, model-level preparation, final norm, lm head),
    as node records of a layer document, with every input kept."""
    graph = lg.graph
    out: list[dict[str, Any]] = []
    for j in outside_members(lg):
        node = graph.nodes[j]
        out.append(_node_record(lg, j, list(node.inputs), [
            {"name": w, "shape": graph.weights[w].shape, "dtype": graph.weights[w].dtype}
            for w in node.weights]))
    return out


def outside_members(lg: LayeredGraph) -> list[int]:
    """Positions of the nodes outside every layer, in graph order."""
    return [j for j, layer in enumerate(lg.layer) if layer is None]


def outside_nodes_text(lg: LayeredGraph) -> str:
    """``outside_nodes(lg)`` as the JSON text the run store keeps."""
    return dumps(outside_nodes(lg))
