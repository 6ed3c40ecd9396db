"""Write a layer document as seed-schema layer JSON (``<dump_stem>_layer<N>.json``).

Schema (seed 000): ``layer``, ``source_file``, ``nodes[id, op, shape, dtype, group, sub_group?,
inputs, weight_inputs[name, shape, dtype], trace_kernels?[kernel, duration_us]]``,
``edges[from, to]``, ``external_inputs[id, label, shape]``, ``trace_summary?[total_duration_us,
kernel_count, num_streams]``. Extra fields written by this tool are additive. The converter
reads the same schema back (:mod:`tb_ad_layer.layers.seed_json`).
"""
from __future__ import annotations

import json
from typing import Any

import msgspec

from tb_ad_layer.contract.document import LayerDocument


def to_seed_json(doc: LayerDocument) -> dict[str, Any]:
    """A layer document (:class:`~tb_ad_layer.contract.document.LayerDocument`) in the seed
    schema, as plain JSON values."""
    nodes = []
    for n in doc.nodes:
        item: dict[str, Any] = {"id": n.id, "op": n.op, "shape": n.shape, "dtype": n.dtype,
                                "group": n.group}
        if n.sub_group:
            item["sub_group"] = n.sub_group
        item["inputs"] = list(n.inputs)
        item["weight_inputs"] = [{"name": w.name, "shape": w.shape, "dtype": w.dtype}
                                 for w in n.weights]
        if n.kernels:
            item["trace_kernels"] = [
                {"kernel": k.kernel, "duration_us": round(k.duration_us, 3), "name": k.name,
                 "stream": k.stream}
                for k in n.kernels]
        nodes.append(item)
    out: dict[str, Any] = {
        "layer": doc.layer, "source_file": doc.source_file, "nodes": nodes,
        "edges": [{"from": e.from_, "to": e.to} for e in doc.edges],
        "external_inputs": [{"id": e.id, "label": e.label, "shape": e.shape}
                            for e in doc.external_inputs],
    }
    if doc.trace_summary is not None:
        out["trace_summary"] = msgspec.to_builtins(doc.trace_summary)
    return out


def seed_json_text(doc: LayerDocument) -> str:
    """:func:`to_seed_json` as the indented JSON text ``extract`` and the plugin's download
    write."""
    return json.dumps(to_seed_json(doc), indent=2, ensure_ascii=False) + "\n"
