"""Read the seed-schema layer JSON (``<dump_stem>_layer<N>.json``): hand-made, or written by
this tool (:mod:`tb_ad_layer.export.seed_json`) or another, back into a
:class:`~tb_ad_layer.layers.layered.LayeredGraph`.

Schema (seed 000): ``layer``, ``source_file``, ``nodes[id, op, shape, dtype, group, sub_group?,
inputs, weight_inputs[name, shape, dtype], trace_kernels?[kernel, duration_us]]``,
``edges[from, to]``, ``external_inputs[id, label, shape]``, ``trace_summary?[total_duration_us,
kernel_count, num_streams]``. Extra fields written by this tool are additive.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tb_ad_layer.dump.graph import CALL, PLACEHOLDER, Graph, Node, Weight
from tb_ad_layer.errors import InputError
from tb_ad_layer.layers.external import ExternalInput
from tb_ad_layer.layers.layered import LayeredGraph, LayerInfo, _layer_kind
from tb_ad_layer.layers.vocabulary import GROUPS, SUB_GROUPS


def _require(obj: dict[str, Any], key: str, typ: type, path: Path, where: str) -> Any:
    if key not in obj:
        raise InputError(f"missing field {key!r}", path=path, field=where)
    if not isinstance(obj[key], typ):
        raise InputError(f"field {key!r} must be {typ.__name__}", path=path, field=where)
    return obj[key]


def read_seed_json(path: str | Path) -> LayeredGraph:
    """Load a seed-schema layer JSON as a one-layer :class:`LayeredGraph`.

    External inputs become placeholders; weights become graph weights; groups are taken as given.
    """
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except OSError as e:
        raise InputError(f"cannot read file: {e.strerror or e}", path=p) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        line = getattr(e, "lineno", None)
        raise InputError(f"not valid JSON: {getattr(e, 'msg', e)}", path=p, line=line) from None
    if not isinstance(data, dict):
        raise InputError("expected a JSON object with 'layer' and 'nodes'", path=p)
    layer = _require(data, "layer", int, p, "layer")
    raw_nodes = _require(data, "nodes", list, p, "nodes")
    graph = Graph(module="(seed json)", source=str(p))
    layers: list[int | None] = []
    groups: list[str] = []
    subs: list[str | None] = []
    ext_infos: list[ExternalInput] = []
    for entry in data.get("external_inputs", []) or []:
        if not isinstance(entry, dict):
            raise InputError("external input must be an object", path=p, field="external_inputs")
        eid = _require(entry, "id", str, p, "external_inputs[].id")
        graph.nodes.append(Node(eid, PLACEHOLDER, "", str(entry.get("shape", "?")), "unknown",
                                (), (), "", 0, len(graph.nodes)))
        layers.append(None)
        groups.append("other")
        subs.append(None)
        ext_infos.append(ExternalInput(eid, str(entry.get("label", "external input")), "model",
                                       str(entry.get("shape", "?")), "unknown", None))
    members: list[int] = []
    known = {n.name for n in graph.nodes}
    for k, n in enumerate(raw_nodes):
        where = f"nodes[{k}]"
        if not isinstance(n, dict):
            raise InputError("node must be an object", path=p, field=where)
        nid = _require(n, "id", str, p, where + ".id")
        if nid in known:
            raise InputError(f"duplicate node id {nid!r}", path=p, field=where + ".id")
        group = n.get("group", "other")
        if group not in GROUPS:
            raise InputError(f"unknown group {group!r} (expected one of {', '.join(GROUPS)})",
                             path=p, field=where + ".group")
        sub_group = n.get("sub_group")
        if sub_group is not None and sub_group not in SUB_GROUPS:
            raise InputError(f"unknown sub_group {sub_group!r} (expected null or one of "
                             f"{', '.join(SUB_GROUPS)})", path=p, field=where + ".sub_group")
        wnames = []
        for w in n.get("weight_inputs", []) or []:
            name = _require(w, "name", str, p, where + ".weight_inputs[].name")
            graph.weights.setdefault(name, Weight(name, str(w.get("shape", "?")),
                                                  str(w.get("dtype", "unknown"))))
            wnames.append(name)
        inputs = tuple(n.get("inputs", []) or [])
        graph.nodes.append(Node(nid, CALL, str(n.get("op", "")), str(n.get("shape", "?")),
                                str(n.get("dtype", "unknown")), inputs, tuple(wnames), "", 0,
                                len(graph.nodes)))
        known.add(nid)
        members.append(len(graph.nodes) - 1)
        layers.append(layer)
        groups.append(group)
        subs.append(sub_group)
    for j in members:
        for i in graph.nodes[j].inputs:
            if i not in known:
                raise InputError(f"node {graph.nodes[j].name!r} lists unknown input {i!r}",
                                 path=p, field="nodes[].inputs")
    from collections import Counter
    counts = Counter(groups[j] for j in members)
    info = LayerInfo(index=layer, kind=_layer_kind(counts),
                     attention="mla" if counts.get("mla") else
                     ("attention" if counts.get("attention") else None),
                     members=members, group_counts=dict(counts), external_inputs=ext_infos)
    return LayeredGraph(graph=graph, layer=layers, group=groups, sub_group=subs,
                        stream=["aux" if s == "aux_stream" else "main" for s in subs],
                        layers={layer: info})
