"""Decide which decoder layer computed each node of a graph, for all layers at once.

Membership means what the model's own code means (``nn_module_stack``): layer N's node is one
that layer N's module computed. The rules follow from facts that hold for any decoder-only
model, in every stage AutoDeploy dumps; all passes are linear in nodes + edges.

1. **Names are hints, dataflow checks them** (:mod:`tb_ad_layer.layers.hints`). A node that
   applies layer N's weights is a *seed* of N, but only if it reads nothing computed by a later
   layer: layers run in order, so layer N's code never consumes layer N+1's results. A block
   whose weights several layers share (Zamba's shared transformer) is named after its first
   user; its later uses fail this check and follow the layer that calls them. A node applying a
   model-level parameter is a seed of the model's *preparation* (the embedding) when it reads no
   layer's results, and of the model's *final* part (final norm, lm head) when it reads them
   and feeds no layer.
2. **Between the seeds of one layer, everything is that layer's** (its *core*): a node that
   descends from a layer-N seed and feeds one (``src == low == N`` below).
3. **Between two layers, the boundary is the residual stream.** The nodes that come after
   region A's seeds and feed region B's first (the *gap*: A's residual add and MoE combine, B's
   unfused input norm) split where everything later reads A's work through one value, the
   layer's output: the residual add ends A, and the norm statistics on it start B. A dtype cast
   or view of that value opens B (a block-opening cast), unless the cast changes the dtype and
   is read again a whole block later (A's own closing ``.to(dtype)``: the stream B carries on);
   other elementwise work on it before B's norm (an embedding scale) stays in A. Sizes (SymInt
   values such as ``batch * seq`` that layer A computed and B reuses) carry no data and never
   count as a value read across the boundary. Region A can be the preparation (the embedding
   ends it) and B the final norm. When B reads several of A's values, no single one separates
   them: the preparation hands the first layer several (Gemma 3n: the stacked AltUp streams
   and that layer's slice of the per-layer inputs), a layer reuses the keys and values of the layer
   before (Gemma 3n/4). Then B starts, after A's last seed, at the latest point where the
   fewest of A's values are still to be read (a cast or view of them already opens B).
   Before a layer, model-level work can run in the model's own code (Gemma 4 slices the hidden
   states, masks and per-layer inputs before its first KV-sharing layer; DeepSeek-V4 builds a
   second RoPE table after the embedding): work that reads no seed and that later layers read
   too. Each layer's code is one run of lines, so B has not begun before that work, and the
   gap's nodes from A's output up to it (its views and slices included) are the model's.
4. **Work that reads no seed's result is placed by position** (masks, RoPE tables, SymInt
   arithmetic on the sequence length): FX order is execution order, so each layer's own code is
   a contiguous run of lines. Such a node inside layer N's run of lines is N's (per-layer RoPE
   slicing, chunk-padding arithmetic computed once in layer 0 and reused later); before the
   first layer it is model-level preparation, even when one layer alone reads it. So is a value
   that passes over a whole layer between what it reads and what reads it (a residual kept in
   fp32 beside the layer's norm, the embedding kept aside for a later block): it is no
   boundary, and its run of lines says whose code made it, within what dataflow allows.
5. **Work that feeds no seed** (returned values, router logits for an auxiliary loss) belongs to
   the layer whose results it reads, unless it runs after the final norm has started (model-level
   post-processing); an op nothing consumes (an assert, an in-place cache update) is emitted
   beside the next use of what it reads and goes with that use.
6. **A fused residual add and norm belongs to the layer whose residual it adds.**
   ``fuse_add_rms_norm`` (and the all-reduce variant) replaces layer N's residual add and layer
   N+1's input norm with one op that applies N+1's norm weight (or the model's final norm after
   the last layer): that op is layer N's ("layer N residual output"), the same everywhere, and
   layer N+1 reads it as an external input. The in-place variant returns nothing; the nodes that
   read the tensors it mutates read its results (:mod:`~tb_ad_layer.layers.mutation`).
7. A ``getitem`` goes with the op it reads; a value computed from weights alone goes with the op
   that applies it, except one made from buffers alone (a RoPE table), placed by position. A
   node whose own name carries a layer path takes that layer when dataflow allows it (the layer
   lies between what the node reads and what reads it).

Generic arithmetic (``sub_1``, ``eq_1``) lands where its dataflow says; name suffixes are never
read.
"""
from __future__ import annotations

import re
from bisect import bisect_left

from tb_ad_layer.dump.graph import OUTPUT, PLACEHOLDER, Graph, friendly_op_name
from tb_ad_layer.layers.hints import NO_HINT, PARAM, node_hints
from tb_ad_layer.layers.history import CARRIED_OUTSIDE
from tb_ad_layer.layers.mutation import value_topology
from tb_ad_layer.layers.weights import MAX_LAYER_INDEX

NO_LAYER = -1

# Regions, in execution order: model-level preparation, layers 0..N, the model's final part.
_FREE = -3            # src of a node that descends from no seed
_PREP = -2
_FINAL = MAX_LAYER_INDEX + 1
_NOTHING = _FINAL + 1  # low of a node that feeds no seed
_UNSET = -4

# Ops that only re-type or re-view a value: at a layer boundary they open the next block.
# Types of values that size or scale an op rather than carry the data a layer passes on.
_SCALAR_TYPES = frozenset({"SymInt", "SymFloat", "SymBool", "int", "float", "bool"})

# A residual add fused with the next block's norm (flashinfer_fused_add_rms_norm_inplace,
# trtllm_fused_allreduce_residual_rmsnorm).
_ADD_NORM = re.compile(r"(?:add|residual)_?(?:rms_?|layer_?)?norm", re.IGNORECASE)

# Lines between two reads of a value beyond which they are not one op's (a norm's statistics
# and scaling read its opening cast within a few lines of each other).
_BLOCK_SPAN = 16

# Ops that pick part of a value (the model's loop slicing the hidden states between layers).
_INDEXING = re.compile(r"slice|select|narrow|index_select")

_ALIAS_OPS = re.compile(r"_?to(?:_copy)?|type_as|float|half|bfloat16|double|contiguous|clone|"
                        r"alias|view|_unsafe_view|reshape|expand|detach|lift_fresh_copy")


def assign_layers(graph: Graph, weight_layers: list[tuple[int, ...]], weight_only: list[bool],
                  next_use: list[int], carried: list[int] | None = None) -> list[int]:
    """Return, parallel to ``graph.nodes``, each node's layer index or :data:`NO_LAYER`.

    ``weight_layers`` is the layer of each node's weights (the first part of
    :func:`~tb_ad_layer.layers.weights.node_weight_facts`, shared weights withheld by
    :func:`~tb_ad_layer.layers.shared_weights.vouched_layers`), ``weight_only``
    :func:`~tb_ad_layer.layers.hints.weight_only_nodes` and ``next_use``
    :func:`~tb_ad_layer.layers.sinks.next_uses` of the graph; ``carried`` the layer each node
    had in the stage before (:func:`~tb_ad_layer.layers.history.carried_layers`), which takes
    the place of what its weights name.
    """
    return _Membership(graph, weight_layers, weight_only, next_use, carried).run()


class _Membership:
    """The per-node arrays of one assignment run (indices are node positions)."""

    def __init__(self, graph: Graph, weight_layers: list[tuple[int, ...]],
                 weight_only: list[bool], next_use: list[int], carried: list[int] | None
                 ) -> None:
        self.nodes = graph.nodes
        n = self.n = len(graph.nodes)
        # Values, not printed edges: a read of a tensor an op wrote into is a read of that op.
        self.inputs, self.consumers, self.writes = value_topology(graph)
        self.weight_only = weight_only
        self.hint, self.name_layer = node_hints(graph, weight_layers, weight_only)
        self.carried = carried
        if carried is not None:
            hint = self.hint
            for j in range(n):
                if carried[j] >= 0 and not weight_only[j]:
                    hint[j] = carried[j]
        self.is_output = [node.kind == OUTPUT for node in graph.nodes]
        add_norm: dict[str, bool] = {}
        self.add_norm = [False] * n
        for node in graph.nodes:
            if node.kind == "call":
                found = add_norm.get(node.target)
                if found is None:
                    found = add_norm[node.target] = _ADD_NORM.search(node.target) is not None
                self.add_norm[node.index] = found
        self.seed = [_UNSET] * n
        self.src = [_FREE] * n
        self.low = [_NOTHING] * n
        self.owner = [_UNSET] * n
        self.next_use = next_use
        self.skipping = [False] * n
        self._last_readers: list[int] | None = None
        # Each region's seed positions, in order (region -> positions).
        self.seeds_of: dict[int, list[int]] = {}
        # Values that cannot carry a layer's output across a boundary: weights and sizes.
        self.no_data = [self.weight_only[j] or node.dtype in _SCALAR_TYPES
                        for j, node in enumerate(graph.nodes)]

    def run(self) -> list[int]:
        self._forward()
        self._final_seeds()
        self._backward()
        gaps = self._classify()
        for j in range(self.n):
            r = self.seed[j]
            if r != _UNSET:
                found = self.seeds_of.get(r)
                if found is None:
                    found = self.seeds_of[r] = []
                found.append(j)
        readers = self._gap_readers(gaps)
        for pair, members in gaps.items():
            self._split_gap(pair[0], pair[1], members, readers.get(pair, []))
        self._by_position()
        self._sinks()
        self._followers()
        self._name_hints()
        self._carried_outside()
        return [o if 0 <= o < _FINAL else NO_LAYER for o in self.owner]

    def _carried_outside(self) -> None:
        """A node that was outside every layer in the stage before stays outside (model-level
        work computed between two layers), unless it lies inside one layer's own dataflow,
        where the name must have passed to another node."""
        carried = self.carried
        if carried is None:
            return
        owner, src, low, seed = self.owner, self.src, self.low, self.seed
        for j in range(self.n):
            if carried[j] != CARRIED_OUTSIDE or seed[j] >= 0:
                continue
            if not (src[j] >= 0 and src[j] == low[j]):
                owner[j] = _PREP

    # -- rule 1: seeds and what each node descends from ------------------------------------------
    def _forward(self) -> None:
        src, seed, hint = self.src, self.seed, self.hint
        weight_only, add_norm = self.weight_only, self.add_norm
        for node in self.nodes:
            j = node.index
            if node.kind != "call" or weight_only[j]:
                continue
            s = _FREE
            for i in self.inputs[j]:
                if not weight_only[i] and src[i] > s:
                    s = src[i]
            h = hint[j]
            if add_norm[j] and s >= 0 and (h < 0 or s < h):
                seed[j] = s  # rule 6: it ends layer s
            elif h >= 0:
                if s <= h:
                    seed[j] = s = h
            elif h == PARAM and s <= _PREP:
                seed[j] = s = _PREP
            src[j] = s

    def _final_seeds(self) -> None:
        """Model-level parameters applied after the layers, to values no layer reads."""
        src, seed, hint = self.src, self.seed, self.hint
        candidates = [j for j in range(self.n)
                      if hint[j] == PARAM and seed[j] == _UNSET and src[j] >= 0
                      and not self.weight_only[j]]
        if not candidates:
            return
        # What a candidate feeds is decided by the nodes after it: the pass stops at the first
        # (the model's final norm and head come last).
        feeds = self._lows(include_final=False, stop=candidates[0])
        found = False
        for j in candidates:
            if feeds[j] == _NOTHING:
                seed[j] = src[j] = _FINAL
                found = True
        if found:
            for node in self.nodes:
                j = node.index
                if seed[j] == _FINAL or self.weight_only[j] or node.kind != "call":
                    continue
                for i in self.inputs[j]:
                    if src[i] == _FINAL and not self.weight_only[i]:
                        src[j] = _FINAL
                        break

    def _backward(self) -> None:
        self.low = self._lows(include_final=True)

    def _lows(self, include_final: bool, stop: int = 0) -> list[int]:
        """Per node from ``stop`` on, the earliest region among the seeds it feeds
        (:data:`_NOTHING` if none, and before ``stop``)."""
        seed, consumers, is_output = self.seed, self.consumers, self.is_output
        low = [_NOTHING] * self.n
        for j in range(self.n - 1, stop - 1, -1):
            best = _NOTHING
            for c in consumers[j]:
                if is_output[c]:
                    continue
                s = seed[c]
                v = s if s >= 0 and (include_final or s != _FINAL) else low[c]
                if v < best:
                    best = v
            low[j] = best
        return low

    # -- rules 2 and 3: core and gap ------------------------------------------------------------
    def _classify(self) -> dict[tuple[int, int], list[int]]:
        """Owners of seeds and core nodes; the gap nodes of every pair of regions, in order."""
        owner, seed, src, low = self.owner, self.seed, self.src, self.low
        gaps: dict[tuple[int, int], list[int]] = {}
        regions = sorted({x for x in seed if x != _UNSET} | {_PREP})
        after = {regions[k]: regions[k + 1] for k in range(len(regions) - 1)}
        for node in self.nodes:
            j = node.index
            if node.kind == PLACEHOLDER or node.kind == OUTPUT:
                owner[j] = _PREP
                continue
            if self.weight_only[j]:
                continue
            if seed[j] != _UNSET:
                owner[j] = seed[j]
                continue
            s, lo = src[j], low[j]
            if s == _FREE or lo == _NOTHING:
                continue
            if s >= lo:
                owner[j] = s
            elif after.get(s, _NOTHING) < lo:
                # Passed over a whole region (the residual kept in fp32 beside a layer's norm,
                # the embedding kept for a later block): not a boundary; placed by position.
                self.skipping[j] = True
            else:
                gaps.setdefault((s, lo), []).append(j)
        return gaps

    def _gap_readers(self, gaps: dict[tuple[int, int], list[int]]
                     ) -> dict[tuple[int, int], list[int]]:
        """For each gap (A, B), B's seeds and core nodes that read A's values, in order."""
        out: dict[tuple[int, int], list[int]] = {}
        owner, src = self.owner, self.src
        for j in range(self.n):
            b = owner[j]
            if b < _PREP or self.is_output[j]:
                continue
            last_pair = (_UNSET, _UNSET)
            for i in self.inputs[j]:
                a = src[i]
                pair = (a, b)
                if a < b and pair != last_pair and pair in gaps and not self.no_data[i]:
                    out.setdefault(pair, []).append(j)
                    last_pair = pair
        return out

    def _split_gap(self, a: int, b: int, members: list[int], b_readers: list[int]) -> None:
        """Split the gap between regions ``a`` and ``b`` at the value A's output passes through."""
        src, inputs, nodes = self.src, self.inputs, self.nodes
        in_gap = set(members)
        # Readers of A's values: the gap itself and B's own nodes that read them. The boundary
        # lies before B's first own node.
        first_b = b_readers[0] if b_readers else _NOTHING
        readers = sorted(set(members).union(b_readers))
        # Candidate cuts: the gap's nodes and the A-side values they read from outside it.
        candidates: set[int] = set(members)
        no_data = self.no_data
        for w in readers:
            for i in inputs[w]:
                if src[i] == a and i not in in_gap and not no_data[i]:
                    candidates.add(i)
        order = sorted(candidates, reverse=True)
        valid: list[int] = []
        min_gap = _NOTHING
        one = -1
        many = False
        k = len(readers) - 1
        for v in order:
            while k >= 0 and readers[k] > v:
                w = readers[k]
                for i in inputs[w]:
                    if src[i] != a or no_data[i]:
                        continue
                    if i in in_gap:
                        if i < min_gap:
                            min_gap = i
                    elif one == -1:
                        one = i
                    elif one != i:
                        many = True
                k -= 1
            if v < first_b and min_gap >= v and not many and (one == -1 or one == v):
                valid.append(v)
        if not valid:
            # B also reads other values of A than its output: the preparation hands the first
            # layer several (Gemma 3n's AltUp streams), a layer reuses an earlier one's keys and
            # values (Gemma 3n/4). The boundary is where the fewest of A's values are still read.
            cut = self._narrowest_handover(sorted(candidates), readers, first_b, a,
                                           self._last_seed(a, first_b))
            self._assign_split(a, b, members, cut, first_b)
            return
        valid.reverse()
        cut = valid[0]
        for v in valid[1:]:
            # A's output runs on through the ops it alone feeds, and through writes into it
            # (Gemma 3n's AltUp correction copies into the stacked streams in place).
            if v in in_gap and (self.writes[v] or (
                    self._sole_use(cut) == v
                    and (_ALIAS_OPS.fullmatch(friendly_op_name(nodes[v].target)) is None
                         or (a >= 0 and self._carries(v))))):
                cut = v
            else:
                break
        self._assign_split(a, b, members, cut, first_b)

    def _assign_split(self, a: int, b: int, members: list[int], cut: int, first_b: int) -> None:
        """Give a gap's nodes up to ``cut`` to region ``a``, the rest to ``b``; but when B is a
        layer, the gap's nodes before model-level work that precedes B's first own node are the
        model's (Gemma 4's loop slicing the hidden states before a layer, DeepSeek-V4's second
        RoPE table after the embedding): B's code is one run of lines, so it has not begun where
        the model's code still runs."""
        owner = self.owner
        begins = cut
        if a >= _PREP and 0 <= b < _FINAL:
            src, weight_only, nodes = self.src, self.weight_only, self.nodes
            for j in range(cut + 1, min(first_b, self.n)):
                if src[j] == _FREE and not weight_only[j] and nodes[j].kind == "call" \
                        and self._last_reader(j) > b:
                    begins = j
            if begins > cut:
                # A's code ended at its output; views and slices of it are the model's.
                in_gap = set(members)
                while cut in in_gap:
                    data = [i for i in self.inputs[cut] if not self.no_data[i]]
                    op = friendly_op_name(nodes[cut].target)
                    if len(data) != 1 or (_ALIAS_OPS.fullmatch(op) is None
                                          and _INDEXING.fullmatch(op) is None):
                        break
                    cut = data[0]
        for j in members:
            owner[j] = a if j <= cut else b if j > begins else _PREP

    def _last_reader(self, j: int) -> int:
        """The latest layer that reads the value of ``j`` (through nodes that descend from no
        seed), among the nodes placed so far; -1 if none. Model-level work between two layers
        prepares values for the layers after them, while a layer's own work on a model-level
        value (its RoPE slices) is read by that layer alone."""
        last = self._last_readers
        if last is None:
            owner, src, consumers = self.owner, self.src, self.consumers
            last = self._last_readers = [-1] * self.n
            for k in range(self.n - 1, -1, -1):
                best = -1
                for c in consumers[k]:
                    o = owner[c]
                    v = o if 0 <= o < _FINAL else last[c] if src[c] == _FREE else -1
                    if v > best:
                        best = v
                last[k] = best
        return last[j]

    def _last_seed(self, region: int, before: int) -> int:
        """The last position before ``before`` that a seed of ``region`` holds, or -1."""
        seeds = self.seeds_of.get(region, [])
        k = bisect_left(seeds, before)
        return seeds[k - 1] if k > 0 else -1

    def _narrowest_handover(self, candidates: list[int], readers: list[int], first_b: int,
                            a: int, start: int) -> int:
        """The cut from ``start`` on after which the fewest of region ``a``'s values are still
        read, the latest such cut that is not a cast or view; ``start`` when none lies before
        ``first_b``.

        ``candidates`` and ``readers`` are sorted positions; a value ``u`` is handed over at a
        cut ``v`` when ``u <= v`` and a reader after ``v`` reads it.
        """
        inputs, src, no_data, nodes = self.inputs, self.src, self.no_data, self.nodes
        last_read: dict[int, int] = {}
        for w in readers:
            for i in inputs[w]:
                if src[i] == a and not no_data[i] and w > i:
                    last_read[i] = w
        ends = sorted(last_read[u] for u in candidates if last_read.get(u, -1) > u)
        best, best_count = start, _NOTHING
        open_count = 0
        e = 0
        for v in candidates:
            if v >= first_b:
                break
            if last_read.get(v, -1) > v:
                open_count += 1
            while e < len(ends) and ends[e] <= v:
                open_count -= 1
                e += 1
            if v < start:
                continue
            if open_count < best_count or (
                    open_count == best_count
                    and _ALIAS_OPS.fullmatch(friendly_op_name(nodes[v].target)) is None):
                best, best_count = v, open_count
        return best

    def _carries(self, j: int) -> bool:
        """Whether the cast ``j`` of A's output changes its dtype and is read a whole block apart
        (A's output handed on in the model's dtype: A's own closing cast, HY-V4's and
        Inkling's ``(residual + h).to(dtype)``), rather than within one op (a norm's opening
        cast). A cast to the dtype a value already has is the value itself (export lets the
        next block's residual add read the norm's no-op cast)."""
        data = [i for i in self.inputs[j] if not self.no_data[i]]
        if len(data) != 1 or self.nodes[data[0]].dtype == self.nodes[j].dtype:
            return False
        first = last = -1
        for c in self.consumers[j]:
            if self.is_output[c] or self.no_data[c]:
                continue
            if first < 0:
                first = c
            last = c
        # The residual stream is read where the next block starts and again where it adds its
        # result, a whole block later; a norm reads its opening cast twice within a few lines.
        return first >= 0 and last - first > _BLOCK_SPAN

    def _sole_use(self, j: int) -> int:
        """The one node that uses ``j``'s value (asserts aside), or -1."""
        found = -1
        for c in self.consumers[j]:
            if self.is_output[c] or not self.consumers[c]:
                continue
            if found >= 0:
                return -1
            found = c
        return found

    # -- rules 4 and 5: by position ---------------------------------------------------------------
    def _by_position(self) -> None:
        """Place free and tail nodes by the layer whose run of lines holds them."""
        owner, src, consumers = self.owner, self.src, self.consumers
        n = self.n
        first: dict[int, int] = {}
        last: dict[int, int] = {}
        for j in range(n):
            o = owner[j]
            if o >= 0 and o != _UNSET:
                if o not in first:
                    first[o] = j
                last[o] = j
        final_start = first.get(_FINAL, _NOTHING)
        spans = sorted((first[x], last[x], x) for x in first if x < _FINAL)
        # The latest-starting span still open at each position: a stack over spans in order.
        active: list[int] = []
        k = 0
        for j in range(n):
            while k < len(spans) and spans[k][0] <= j:
                active.append(k)
                k += 1
            while active and spans[active[-1]][1] < j:
                active.pop()
            if owner[j] != _UNSET or not consumers[j]:
                continue
            if self.weight_only[j] and self.hint[j] != NO_HINT:
                continue  # a layer's or the model's weights, prepared for the op applying them
            inside = spans[active[-1]][2] if active else _UNSET
            s = src[j]
            if self.skipping[j]:
                x = inside if inside != _UNSET else s
                owner[j] = min(max(x, s), self.low[j])
                continue
            if s >= 0:
                # Feeds no seed: its layer's own tail, unless the model's output computation
                # has already started (model-level post-processing of layer values).
                owner[j] = s if s == _FINAL or j < final_start else _FINAL
                continue
            if j >= final_start:
                owner[j] = _FINAL
            elif inside != _UNSET:
                owner[j] = inside
            else:
                owner[j] = _PREP

    def _sinks(self) -> None:
        """An op nothing consumes goes with the next use of its first argument (see
        :mod:`tb_ad_layer.layers.sinks`), else with that argument."""
        owner, inputs, consumers = self.owner, self.inputs, self.consumers
        for j in range(self.n):
            if owner[j] != _UNSET or consumers[j] or self.weight_only[j]:
                continue
            nxt = self.next_use[j]
            if nxt >= 0 and owner[nxt] != _UNSET:
                owner[j] = owner[nxt]
                continue
            first = inputs[j][0] if inputs[j] else -1
            owner[j] = owner[first] if first >= 0 and owner[first] != _UNSET else _PREP

    # -- rule 7 ---------------------------------------------------------------------------------
    def _followers(self) -> None:
        owner, inputs, consumers = self.owner, self.inputs, self.consumers
        for node in self.nodes:
            j = node.index
            if inputs[j] and not self.weight_only[j] and \
                    node.target == "<built-in function getitem>":
                owner[j] = owner[inputs[j][0]]
        for j in range(self.n - 1, -1, -1):
            if not self.weight_only[j] or owner[j] != _UNSET:
                continue
            o = _UNSET
            for c in consumers[j]:
                if not self.is_output[c] and owner[c] != _UNSET:
                    o = owner[c]
                    break
            if o == _UNSET:
                h = self.hint[j]
                o = h if h >= 0 else _PREP
            owner[j] = o
        for j in range(self.n):
            if owner[j] == _UNSET:
                owner[j] = _PREP

    def _name_hints(self) -> None:
        owner, src, low, seed = self.owner, self.src, self.low, self.seed
        for j in range(self.n):
            layer = self.name_layer[j]
            if layer == NO_HINT or seed[j] != _UNSET or owner[j] == layer:
                continue
            if src[j] <= layer <= low[j]:
                owner[j] = layer
