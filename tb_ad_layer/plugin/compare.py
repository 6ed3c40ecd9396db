"""Compare two layer documents node by node (``api/compare``).

Node ids are useless across layers and runs (``mm_3`` in layer 3 is ``mm_117`` in layer 40), so
nodes are matched by what they are: op target plus the roles of their weights with the layer
index removed (``weight_role``: ``model_layers_3_mlp_gate_weight`` and
``model_layers_40_mlp_gate_weight`` are both ``mlp_gate_weight``), then by position among nodes
of that kind. A second pass pairs what is left by op target and position alone, which catches
ops whose weights were renamed or fused by a transform.

A matched pair is ``changed`` when its shape, dtype, weight shapes/dtypes or input wiring (inputs
mapped through the matching; external inputs by kind) differ, else ``same``.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Hashable, Sequence

from tb_ad_layer.layers.weights import weight_role


def _roles(node: dict[str, Any]) -> tuple[str, ...]:
    return tuple(sorted(weight_role(w["name"]) for w in node.get("weights", ())))


def _pair(a_nodes: Sequence[dict[str, Any]], b_nodes: Sequence[dict[str, Any]],
          key: Any, pairs: dict[str, str]) -> None:
    """Pair unmatched nodes with equal ``key(node)`` in order of appearance."""
    b_by_key: dict[Hashable, list[dict[str, Any]]] = defaultdict(list)
    taken_b = set(pairs.values())
    for n in b_nodes:
        if n["id"] not in taken_b:
            b_by_key[key(n)].append(n)
    used: dict[Hashable, int] = defaultdict(int)
    for n in a_nodes:
        if n["id"] in pairs:
            continue
        k = key(n)
        candidates = b_by_key.get(k)
        if candidates and used[k] < len(candidates):
            pairs[n["id"]] = candidates[used[k]]["id"]
            used[k] += 1


def match_nodes(a_nodes: Sequence[dict[str, Any]],
                b_nodes: Sequence[dict[str, Any]]) -> dict[str, str]:
    """Node id in A -> matched node id in B (one to one)."""
    pairs: dict[str, str] = {}
    _pair(a_nodes, b_nodes, lambda n: (n["op"], _roles(n)), pairs)
    _pair(a_nodes, b_nodes, lambda n: n["op"], pairs)
    return pairs


def _wiring(node: dict[str, Any], rename: dict[str, str], ext_kind: dict[str, str]) -> list[Any]:
    """A node's inputs in B's terms: matched node ids, or ``("external", kind)``."""
    out: list[Any] = []
    for i in node.get("inputs", ()):
        if i in ext_kind:
            out.append(("external", ext_kind[i]))
        else:
            out.append(rename.get(i, ("unmatched", i)))
    return out


def _weights(node: dict[str, Any]) -> list[tuple[str, str, str]]:
    return sorted((weight_role(w["name"]), w.get("shape", ""), w.get("dtype", ""))
                  for w in node.get("weights", ()))


def _changes(a: dict[str, Any], b: dict[str, Any], rename: dict[str, str],
             a_ext: dict[str, str], b_ext: dict[str, str]) -> list[str]:
    """What differs between two matched nodes (empty: same)."""
    out = [f for f in ("op", "shape", "dtype") if a.get(f) != b.get(f)]
    if _weights(a) != _weights(b):
        out.append("weights")
    identity = {v: v for v in rename.values()}
    if _wiring(a, rename, a_ext) != _wiring(b, identity, b_ext):
        out.append("inputs")
    return out


def _delta(a_us: float, b_us: float) -> dict[str, Any]:
    delta = b_us - a_us
    return {"a_us": round(a_us, 3), "b_us": round(b_us, 3), "delta_us": round(delta, 3),
            "delta_pct": round(100.0 * delta / a_us, 1) if a_us > 0 else None}


def layer_time_us(doc: dict[str, Any]) -> float:
    """A layer's GPU time: the trace summary's total (which includes kernels no node claimed),
    else the sum of node times (0 without a trace)."""
    summary = doc.get("trace_summary")
    if summary and summary.get("total_duration_us") is not None:
        return float(summary["total_duration_us"])
    return float(sum(n.get("time_us") or 0.0 for n in doc["nodes"]))


def compare_docs(doc_a: dict[str, Any], doc_b: dict[str, Any]) -> dict[str, Any]:
    """The comparison part of the ``api/compare`` body (``matches`` .. ``layer``)."""
    a_nodes, b_nodes = doc_a["nodes"], doc_b["nodes"]
    pairs = match_nodes(a_nodes, b_nodes)
    b_by_id = {n["id"]: n for n in b_nodes}
    a_ext = {e["id"]: e.get("kind") or e.get("label", "") for e in doc_a.get("external_inputs", ())}
    b_ext = {e["id"]: e.get("kind") or e.get("label", "") for e in doc_b.get("external_inputs", ())}
    matches = []
    counts = {"same": 0, "changed": 0, "only_a": 0, "only_b": 0}
    for a in a_nodes:
        b_id = pairs.get(a["id"])
        if b_id is None:
            continue
        b = b_by_id[b_id]
        changes = _changes(a, b, pairs, a_ext, b_ext)
        status = "changed" if changes else "same"
        counts[status] += 1
        a_t = float(a.get("time_us") or 0.0)
        b_t = float(b.get("time_us") or 0.0)
        matches.append({"a": a["id"], "b": b_id, "status": status, "changes": changes,
                        "op": a["op"], "group": a["group"], "a_time_us": round(a_t, 3),
                        "b_time_us": round(b_t, 3), "delta_us": round(b_t - a_t, 3)})
    matched_b = set(pairs.values())
    only_a = [n["id"] for n in a_nodes if n["id"] not in pairs]
    only_b = [n["id"] for n in b_nodes if n["id"] not in matched_b]
    counts["only_a"], counts["only_b"] = len(only_a), len(only_b)

    group_a: dict[str, float] = defaultdict(float)
    group_b: dict[str, float] = defaultdict(float)
    for n in a_nodes:
        group_a[n["group"]] += float(n.get("time_us") or 0.0)
    for n in b_nodes:
        group_b[n["group"]] += float(n.get("time_us") or 0.0)
    names = sorted(set(group_a) | set(group_b),
                   key=lambda g: (-max(group_a.get(g, 0.0), group_b.get(g, 0.0)), g))
    groups = [{"group": g, **_delta(group_a.get(g, 0.0), group_b.get(g, 0.0))} for g in names]
    return {"matches": matches, "only_a": only_a, "only_b": only_b, "counts": counts,
            "groups": groups, "layer": _delta(layer_time_us(doc_a), layer_time_us(doc_b))}
