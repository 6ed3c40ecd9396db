"""Dataflow through ops that write their results into their arguments.

AutoDeploy's ``fuse_add_rms_norm`` replaces layer N's residual add and layer N+1's input norm by
``flashinfer_fused_add_rms_norm_inplace(x, residual, weight, eps)``, which returns nothing: it
writes the norm into ``x`` and the sum into ``residual``, and the nodes after it read those two
tensors (DESIGN.md, "Later stages"). The printed edges then lead to whichever node first
allocated the tensor (layer N+1's attention reads layer N's o_proj output, a MLP reads the
embedding), not to the values they carry. Membership follows the values: a read of a tensor
after an op wrote into it is a read of that op.

Which arguments an op writes: every node argument of an op whose name ends in ``_inplace``
(AutoDeploy's convention), the first of an ATen in-place op (``add_``, ``copy_``).
"""
from __future__ import annotations

import re

from tb_ad_layer.dump.graph import CALL, Graph, friendly_op_name

_ATEN_INPLACE = re.compile(r"^aten\.\w*[^_]_\.")
# Ops whose result shares its input's storage: a write into it is a write into its input.
_VIEW_OPS = re.compile(r"slice|select|narrow|view|_unsafe_view|alias|as_strided|transpose|t|"
                       r"permute|unsqueeze|squeeze|expand|unflatten|diagonal|detach")


def value_topology(graph: Graph) -> tuple[list[list[int]], list[list[int]], list[bool]]:
    """``(inputs, consumers, writes)``: the first two as :meth:`Graph.topology` gives them, with
    every read of a tensor that an earlier op wrote into redirected to that op (the graph's own
    topology when no op writes into its arguments); ``writes[j]``, whether node ``j`` writes
    into an argument."""
    inputs, consumers = graph.topology()
    writes: dict[str, int] = {}
    writers: list[int] = []
    for node in graph.nodes:
        if node.kind != CALL:
            continue
        found = writes.get(node.target)
        if found is None:
            found = writes[node.target] = _written_args(node.target)
        if found:
            writers.append(node.index)
    written = [False] * len(graph.nodes)
    if not writers:
        return inputs, consumers, written
    for j in writers:
        written[j] = True
    # The node that last wrote into each tensor (by the node that allocated it, and by each
    # view of it the write went through: ``copy_(slice(key_states), k_pe)`` writes key_states).
    holder: dict[int, int] = {}
    out_inputs: list[list[int]] = []
    nodes = graph.nodes
    views: dict[str, bool] = {}
    for j, ins in enumerate(inputs):
        out_inputs.append([holder.get(i, i) for i in ins] if holder else ins)
        node = nodes[j]
        if node.kind != CALL:
            continue
        count = writes[node.target]
        if not count:
            continue
        for i in ins if count < 0 else ins[:count]:
            while True:
                holder[i] = j
                target = nodes[i].target
                is_view = views.get(target)
                if is_view is None:
                    is_view = views[target] = _VIEW_OPS.fullmatch(friendly_op_name(target)) is not None
                if nodes[i].kind != CALL or not is_view or not inputs[i]:
                    break
                i = inputs[i][0]
    out_consumers: list[list[int]] = [[] for _ in nodes]
    for j, ins in enumerate(out_inputs):
        for i in ins:
            out_consumers[i].append(j)
    return out_inputs, out_consumers, written


def _written_args(target: str) -> int:
    """How many leading node arguments ``target`` writes into: -1 for all, 0 for none."""
    head = target.split("(", 1)[0]
    if head.endswith("_inplace") or "_inplace." in head:
        return -1
    return 1 if _ATEN_INPLACE.match(head) else 0
