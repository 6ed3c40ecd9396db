"""Identical layers of a stage: the layers whose graphs are the same as an earlier layer's.

Two layers are identical when their nodes, in graph order, have the same ops, groups, sub-groups,
output shapes and dtypes and read the same things: a node of the layer by its position, an
external input by its kind (so layer 5's residual input matches layer 4's), weights by count and
shape. Node names, lines, kernel times and the addresses in call targets printed as Python
objects do not count. Computed over the stored layer documents
(never the dumps), once per stage and run store; each layer that repeats an earlier one names the
first layer with that graph (``same_as``), as Model Explorer marks identical layers.
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

from tb_ad_layer.contract.document import LayerDocument

#: The address in a call target printed as a Python object (a transform's local function:
#: ``<function ...split_output at 0x7f3b2c1d54c0>``): another object per layer, the same op.
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def layer_signature(doc: LayerDocument) -> str:
    """A digest of the layer's graph with every name left out."""
    pos = {n.id: i for i, n in enumerate(doc.nodes)}
    ext = {e.id: e.kind or e.label for e in doc.external_inputs}
    h = hashlib.blake2b(digest_size=16)
    for n in doc.nodes:
        reads = ",".join(str(pos[i]) if i in pos else f"x:{ext.get(i, '?')}" for i in n.inputs)
        weights = ",".join(w.shape for w in n.weights)
        op = _ADDRESS.sub("", n.op)
        h.update(f"{op}|{n.node_kind}|{n.group}|{n.sub_group}|{n.shape}|{n.dtype}|{reads}|{weights}\n"
                 .encode())
    return h.hexdigest()


def identical_layers(docs: Iterable[tuple[int, LayerDocument]]) -> dict[int, int]:
    """``{layer: first earlier layer with the same graph}`` for every layer that repeats one."""
    first: dict[str, int] = {}
    out: dict[int, int] = {}
    for layer, doc in sorted(docs, key=lambda p: p[0]):
        sig = layer_signature(doc)
        if sig in first:
            out[layer] = first[sig]
        else:
            first[sig] = layer
    return out
