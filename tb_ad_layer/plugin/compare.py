"""Compare two layer documents node by node (``api/compare``).

Node ids are useless across layers and runs (``mm_3`` in layer 3 is ``mm_117`` in layer 40), so
nodes are matched by what they are: op target plus the roles of their weights with the layer
index removed (each weight's ``role``, stored by the converter: ``model_layers_3_mlp_gate_weight``
and ``model_layers_40_mlp_gate_weight`` are both ``mlp_gate_weight``), then by position among nodes
of that kind. A second pass pairs what is left by op target and position alone, which catches
ops whose weights were renamed or fused by a transform.

A matched pair is ``changed`` when its op, shape, dtype, weight shapes/dtypes or input wiring
(inputs mapped through the matching; external inputs by kind) differ, else ``same``.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Sequence

from tb_ad_layer.contract.api import (
    Change,
    CompareCounts,
    CompareMatch,
    CompareResponse,
    CompareSide,
    Delta,
    GroupDelta,
)
from tb_ad_layer.contract.document import LayerDocument, LayerNode

#: A node's input in the other side's terms: a matched node id, an external input's kind, or
#: an unmatched node's own id.
Wire = tuple[str, str]


def _roles(node: LayerNode) -> tuple[str, ...]:
    return tuple(sorted(w.role for w in node.weights))


def _pair(a_nodes: Sequence[LayerNode], b_nodes: Sequence[LayerNode],
          key: Callable[[LayerNode], Hashable], pairs: dict[str, str]) -> None:
    """Pair unmatched nodes with equal ``key(node)`` in order of appearance."""
    b_by_key: dict[Hashable, list[LayerNode]] = defaultdict(list)
    taken_b = set(pairs.values())
    for n in b_nodes:
        if n.id not in taken_b:
            b_by_key[key(n)].append(n)
    used: dict[Hashable, int] = defaultdict(int)
    for n in a_nodes:
        if n.id in pairs:
            continue
        k = key(n)
        candidates = b_by_key.get(k)
        if candidates and used[k] < len(candidates):
            pairs[n.id] = candidates[used[k]].id
            used[k] += 1


def match_nodes(a_nodes: Sequence[LayerNode], b_nodes: Sequence[LayerNode]) -> dict[str, str]:
    """Node id in A -> matched node id in B (one to one)."""
    pairs: dict[str, str] = {}
    _pair(a_nodes, b_nodes, lambda n: (n.op, _roles(n)), pairs)
    _pair(a_nodes, b_nodes, lambda n: n.op, pairs)
    return pairs


def _wiring(node: LayerNode, rename: dict[str, str], ext_kind: dict[str, str]) -> list[Wire]:
    """A node's inputs in B's terms: matched node ids, or ``("external", kind)``."""
    out: list[Wire] = []
    for i in node.inputs:
        if i in ext_kind:
            out.append(("external", ext_kind[i]))
        elif i in rename:
            out.append(("node", rename[i]))
        else:
            out.append(("unmatched", i))
    return out


def _weights(node: LayerNode) -> list[tuple[str, str, str]]:
    return sorted((w.role, w.shape, w.dtype) for w in node.weights)


def _changes(a: LayerNode, b: LayerNode, rename: dict[str, str], a_ext: dict[str, str],
             b_ext: dict[str, str]) -> list[Change]:
    """What differs between two matched nodes (empty: same)."""
    out: list[Change] = []
    if a.op != b.op:
        out.append("op")
    if a.shape != b.shape:
        out.append("shape")
    if a.dtype != b.dtype:
        out.append("dtype")
    if _weights(a) != _weights(b):
        out.append("weights")
    identity = {v: v for v in rename.values()}
    if _wiring(a, rename, a_ext) != _wiring(b, identity, b_ext):
        out.append("inputs")
    return out


def _delta(a_us: float, b_us: float) -> Delta:
    delta = b_us - a_us
    return Delta(a_us=round(a_us, 3), b_us=round(b_us, 3), delta_us=round(delta, 3),
                 delta_pct=round(100.0 * delta / a_us, 1) if a_us > 0 else None)


def layer_time_us(doc: LayerDocument) -> float:
    """A layer's GPU time: the trace summary's total (which includes kernels no node claimed),
    else the sum of node times (0 without a trace)."""
    if doc.trace_summary is not None:
        return float(doc.trace_summary.total_duration_us)
    return float(sum(n.time_us for n in doc.nodes))


def _external_kinds(doc: LayerDocument) -> dict[str, str]:
    return {e.id: e.kind or e.label for e in doc.external_inputs}


def compare_docs(a: CompareSide, doc_a: LayerDocument, b: CompareSide,
                 doc_b: LayerDocument) -> CompareResponse:
    """The ``api/compare`` answer for layer ``a`` (document ``doc_a``) against ``b``."""
    a_nodes, b_nodes = doc_a.nodes, doc_b.nodes
    pairs = match_nodes(a_nodes, b_nodes)
    b_by_id = {n.id: n for n in b_nodes}
    a_ext, b_ext = _external_kinds(doc_a), _external_kinds(doc_b)
    matches = []
    same = changed = 0
    for na in a_nodes:
        b_id = pairs.get(na.id)
        if b_id is None:
            continue
        nb = b_by_id[b_id]
        changes = _changes(na, nb, pairs, a_ext, b_ext)
        if changes:
            changed += 1
        else:
            same += 1
        a_t, b_t = float(na.time_us), float(nb.time_us)
        matches.append(CompareMatch(a=na.id, b=b_id, status="changed" if changes else "same",
                                    changes=changes, op=na.op, group=na.group,
                                    a_time_us=round(a_t, 3), b_time_us=round(b_t, 3),
                                    delta_us=round(b_t - a_t, 3)))
    matched_b = set(pairs.values())
    only_a = [n.id for n in a_nodes if n.id not in pairs]
    only_b = [n.id for n in b_nodes if n.id not in matched_b]

    group_a: dict[str, float] = defaultdict(float)
    group_b: dict[str, float] = defaultdict(float)
    for n in a_nodes:
        group_a[n.group] += float(n.time_us)
    for n in b_nodes:
        group_b[n.group] += float(n.time_us)
    names = sorted(set(group_a) | set(group_b),
                   key=lambda g: (-max(group_a.get(g, 0.0), group_b.get(g, 0.0)), g))
    groups = []
    for g in names:
        d = _delta(group_a.get(g, 0.0), group_b.get(g, 0.0))
        groups.append(GroupDelta(group=g, a_us=d.a_us, b_us=d.b_us, delta_us=d.delta_us,
                                 delta_pct=d.delta_pct))
    return CompareResponse(
        a=a, b=b, matches=matches, only_a=only_a, only_b=only_b,
        counts=CompareCounts(same=same, changed=changed, only_a=len(only_a),
                             only_b=len(only_b)),
        groups=groups, layer=_delta(layer_time_us(doc_a), layer_time_us(doc_b)))
