"""Where an op that nothing consumes belongs: beside the next use of its first argument.

Asserts (``_assert_tensor_metadata(x)``), in-place cache updates and dead code are emitted where
the code that reads their first argument runs (the asserted value, the cache updated in place),
so they belong with the next node that uses that argument.
"""
from __future__ import annotations

from tb_ad_layer.dump.graph import OUTPUT, Graph


def next_uses(graph: Graph) -> list[int]:
    """Per node nothing consumes, the position of the next node (one that is consumed, or the
    output's producer) that reads the same first argument; -1 where there is none, and for
    nodes that are consumed."""
    nodes = graph.nodes
    inputs, consumers = graph.topology()
    n = len(nodes)
    out = [-1] * n
    for i in range(n):
        later = -1
        cs = consumers[i]
        for t in range(len(cs) - 1, -1, -1):
            c = cs[t]
            if nodes[c].kind == OUTPUT:
                continue
            if consumers[c]:
                later = c
            elif inputs[c][0] == i:
                out[c] = later
    return out
