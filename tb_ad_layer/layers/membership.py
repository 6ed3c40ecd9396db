"""Decide which decoder layer computed each node of a graph, for all layers at once.

The rules are seed 000's, made algorithmic, and tested against what the model's own
``nn_module_stack`` records on real exported models. All passes are linear in nodes + edges:

1. **Forward (derivation).** A node that consumes a layer-N weight is a *seed* of N. A node that
   consumes a model-level *parameter* (embedding, final norm, lm head) is a seed of "no layer".
   Every other node *derives from* the highest layer among its inputs (none if no input does).
2. **Reverse (ownership by consumers).** A non-seed node whose consumers all belong to one layer
   X, and that derives from no layer or from X itself, belongs to X: per-layer work on
   model-level inputs (slicing RoPE tables beside q/k, layer 0's input-norm statistics on the
   embedding). Model-level preparation that only X reads (a mask in a hybrid model) runs before
   the layer loop, so it belongs to X only when it comes after everything earlier layers and the
   model-level preparation computed. A node read by several layers keeps what it derives from.
   A node that derives from layer M and feeds only a later X is a *candidate* for X.
3. **Forward (entries).** Layer X's *entry* is its residual stream: the latest node of an
   earlier layer that X reads on two paths, one ending at X's seeds (norm statistics) and one
   not (the skip connection). Candidates reached from the entry through candidates are X's
   preamble; the other candidates are the tail of the layer they derive from, so the residual
   add that ends layer M stays in M, and an MoE output feeding a fused add+norm seeded by X
   stays in M. After the last layer there is no skip connection: the final norm's preamble is
   the chain of normalisation arithmetic right before the model-level norm weight.
4. **Sinks** (asserts, in-place updates, which nothing consumes) join the layer of the next use
   of what they read, since they are emitted beside it; a ``getitem`` goes with the op it reads.

Generic arithmetic (``sub_1``, ``eq_1``) lands where its dataflow says; name suffixes are never read.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Final, Mapping

from tb_ad_layer.dump.graph import CALL, OUTPUT, PLACEHOLDER, Graph, friendly_op_name
from tb_ad_layer.layers.weights import is_buffer_like, weight_layers

NO_LAYER: Final = -1
_UNSET: Final = -2

# Elementwise steps of an RMSNorm/LayerNorm written out in aten ops (HF's final norm).
_NORM_STEPS: Final = re.compile(
    r"(?:_to_copy|to|pow|mean|var|var_mean|add|sub|mul|div|rsqrt|sqrt|"
    r"reciprocal|type_as|float|square|getitem)_?")


def assign_layers(graph: Graph, weight_layer: Mapping[str, int | None] | None = None
                  ) -> list[int]:
    """Return, parallel to ``graph.nodes``, each node's layer index or :data:`NO_LAYER`.

    ``weight_layer`` is :func:`~tb_ad_layer.layers.weights.weight_layers` of the graph's
    weights, when the caller has it already.
    """
    if weight_layer is None:
        weight_layer = weight_layers(graph.weights)
    return _Membership(graph, weight_layer).run()


class _Membership:
    """The per-node arrays of one assignment run (indices are node positions)."""

    def __init__(self, graph: Graph, weight_layer: Mapping[str, int | None]) -> None:
        self.nodes = graph.nodes
        self.weight_layer = weight_layer
        n = self.n = len(graph.nodes)
        self.inputs, self.consumers = graph.topology()
        self.seed = [_UNSET] * n
        self.derived = [_UNSET] * n
        self.owner = [_UNSET] * n
        self.candidate = [False] * n
        self.floating = [False] * n

    def run(self) -> list[int]:
        self._derive()
        starts = self._seed_span_starts()
        self._own_by_consumers(starts)
        # Second look with the model-level boundary known: single-layer prep before it is
        # model-level (see pass 2 in the module docstring).
        refined = self._model_prep_ends(starts)
        if refined != starts:
            self.owner = [_UNSET] * self.n
            self.candidate = [False] * self.n
            self.floating = [False] * self.n
            self._own_by_consumers(refined)
        if any(self.candidate):
            self._resolve_candidates()
        self._resolve_sinks()
        # A getitem only extracts an output of a multi-output op: it goes where that op went.
        for node in self.nodes:
            if node.op_name == "getitem" and self.inputs[node.index]:
                self.owner[node.index] = self.owner[self.inputs[node.index][0]]
        return self.owner

    # -- pass 1 -------------------------------------------------------------------------------
    def _derive(self) -> None:
        seed, derived = self.seed, self.derived
        layer_of = self.weight_layer.__getitem__
        for node in self.nodes:
            j = node.index
            if node.kind in (PLACEHOLDER, OUTPUT):
                seed[j] = NO_LAYER
                continue
            d = _UNSET
            for i in self.inputs[j]:
                if derived[i] > d:
                    d = derived[i]
            owned = [layer for w in node.weights if (layer := layer_of(w)) is not None]
            if len(owned) == 1:
                seed[j] = derived[j] = owned[0]
            elif owned:
                counts = Counter(owned).most_common()
                top = counts[0][1]
                seed[j] = derived[j] = min(layer for layer, c in counts if c == top)
            elif node.weights and (d == _UNSET or not all(is_buffer_like(w) for w in node.weights)):
                # A model-level parameter (embedding, final norm, lm head), or a model-level
                # buffer read by model-level preparation (RoPE tables). A buffer read inside a
                # layer's computation (layer N's rope op reading a RoPE cache) is not.
                seed[j] = NO_LAYER
            else:
                derived[j] = d

    def _seed_span_starts(self) -> dict[int, int]:
        """For each layer X, the position of the last seed of any earlier layer (-1 if none)."""
        last: dict[int, int] = {}
        for j, s in enumerate(self.seed):
            if s >= 0:
                last[s] = j
        out: dict[int, int] = {}
        running = -1
        for layer in sorted(last):
            out[layer] = running
            running = max(running, last[layer])
        return out

    def _model_prep_ends(self, starts: dict[int, int]) -> dict[int, int]:
        """Move each layer's start past the model-level nodes computed before its first seed."""
        first: dict[int, int] = {}
        for j, s in enumerate(self.seed):
            if s >= 0 and s not in first:
                first[s] = j
        out = dict(starts)
        last_model = -1
        order = sorted(first.items(), key=lambda kv: kv[1])
        k = 0
        for j in range(self.n):
            while k < len(order) and order[k][1] <= j:
                layer = order[k][0]
                out[layer] = max(out[layer], last_model)
                k += 1
            if self.owner[j] == NO_LAYER and not self.floating[j] \
                    and self.nodes[j].kind not in (PLACEHOLDER, OUTPUT):
                last_model = j
        return out

    # -- pass 2 -------------------------------------------------------------------------------
    def _own_by_consumers(self, starts: dict[int, int]) -> None:
        nodes, seed, derived, owner = self.nodes, self.seed, self.derived, self.owner
        floating, candidate = self.floating, self.candidate
        for j in range(self.n - 1, -1, -1):
            if seed[j] != _UNSET:
                owner[j] = seed[j]
                continue
            d = derived[j]
            targets = {owner[c] for c in self.consumers[j]
                       if not floating[c] and nodes[c].kind != OUTPUT}
            if not targets:
                floating[j] = True
                owner[j] = d if d >= 0 else NO_LAYER
                continue
            if len(targets) != 1:
                owner[j] = d if d >= 0 else NO_LAYER
                continue
            x = targets.pop()
            if d < 0:
                owner[j] = x if x == NO_LAYER or j > starts.get(x, -1) else NO_LAYER
            elif d == x:
                owner[j] = x
            elif x == NO_LAYER or d < x:
                owner[j] = x
                candidate[j] = True
            else:
                owner[j] = d

    # -- pass 3 -------------------------------------------------------------------------------
    def _resolve_candidates(self) -> None:
        n, nodes = self.n, self.nodes
        owner, derived, candidate = self.owner, self.derived, self.candidate
        floating, consumers = self.floating, self.consumers
        target = list(owner)
        live = [[c for c in consumers[j] if not floating[c] and nodes[c].kind != OUTPUT]
                for j in range(n)]
        # exit[c]: the first node outside the candidates that candidate c flows into (the
        # earliest, as a representative). Two consumers of a node with different exits are two
        # paths into the layer: the norm and the skip connection.
        exit_ = list(range(n))
        for j in range(n - 1, -1, -1):
            if candidate[j]:
                exit_[j] = min((exit_[c] if candidate[c] else c for c in live[j]), default=j)
        entry: dict[int, int] = {}
        for i in range(n):
            d = derived[i]
            if d < 0:
                continue
            exits: dict[int, int] = {}
            for c in live[i]:
                if derived[c] > d:
                    # c mixes i with work of a later layer (the skip connection's add): it is
                    # inside that layer whatever it feeds afterwards.
                    t, e = derived[c], c
                else:
                    t = target[c]
                    e = exit_[c] if candidate[c] else c
                if t <= d:
                    continue
                if exits.setdefault(t, e) != e and i > entry.get(t, -1):
                    entry[t] = i
        norm_chain = [False] * n
        for j in range(n - 1, -1, -1):
            if candidate[j] and target[j] == NO_LAYER and _NORM_STEPS.fullmatch(nodes[j].op_name):
                norm_chain[j] = all(norm_chain[c] or (not candidate[c] and target[c] == NO_LAYER)
                                    for c in live[j])
        for j in range(n):
            if not candidate[j]:
                continue
            x = target[j]
            if x == NO_LAYER:
                outside = [i for i in self.inputs[j]
                           if derived[i] >= 0 and not (candidate[i] and owner[i] == NO_LAYER)]
                accepted = norm_chain[j] and len(outside) <= 1
            else:
                gate = entry.get(x, -1)
                accepted = j != gate and all(
                    (derived[i] < 0 and owner[i] in (x, NO_LAYER))
                    or (candidate[i] and owner[i] == x) or i == gate
                    for i in self.inputs[j])
            if not accepted:
                candidate[j] = False
                owner[j] = derived[j]

    # -- pass 4 -------------------------------------------------------------------------------
    def _resolve_sinks(self) -> None:
        owner, floating, inputs, consumers = self.owner, self.floating, self.inputs, self.consumers
        for j in range(self.n):
            if not floating[j] or consumers[j]:
                continue
            best = -1
            for i in inputs[j]:
                for c in consumers[i]:
                    if c > j and not floating[c] and (best < 0 or c < best):
                        best = c
            if best >= 0:
                owner[j] = owner[best]
            else:
                for i in inputs[j]:
                    if owner[i] >= 0 and not floating[i]:
                        owner[j] = owner[i]
                        break
        # What feeds only sinks (dead code, a buffer filled in place) joins its consumers.
        for j in range(self.n - 1, -1, -1):
            if floating[j] and consumers[j]:
                for c in consumers[j]:
                    if owner[c] >= 0:
                        owner[j] = owner[c]
                        break
                else:
                    owner[j] = owner[consumers[j][0]]
