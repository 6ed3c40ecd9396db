"""A TORCH_TRACE directory as stages: every graph torch.compile logged, joined per kind.

One compiled frame logs up to three graphs (DESIGN.md, "Other inputs"): the Dynamo output graph
(``dynamo_output_graph``: torch-level calls, parameters as inputs named after their module
paths), the AOT graph (``aot_inference_graph`` / ``aot_forward_graph``: ATen ops) and
Inductor's post-grad graph (artifact ``inductor_post_grad_graph``). A model with graph breaks
is several frames, a recompiled frame (new shapes, failed guards) several compile ids
``[F/C]``; a retried attempt (``[F/C_A]``) leaves its abandoned graph in the log too, and only
the last attempt of a compile id counts.

A stage here is one kind of graph across all compile ids, in log order, each node named
``[F/C] <name>`` (names repeat across graphs): the layers of a model that graph breaks split
into frames are then found together, by the same rules as a dump's, from the module paths the
parameter inputs carry. What the log says about graph breaks and recompilations is kept, and a
compiled graph whose parameters name no layer although the model has layers (a frame compiled
once and run for every layer, as a graph break inside a decoder layer makes) is a doubt: its
nodes serve several layers, and no layer is guessed for them.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from tb_ad_layer.compile_log.fx_code import aot_input_indices, input_names, parse_graph
from tb_ad_layer.compile_log.records import Record, log_files, read_records
from tb_ad_layer.dump.graph import CALL, Graph, Node
from tb_ad_layer.errors import InputError
from tb_ad_layer.layers.weights import layer_of_weight

DYNAMO: Final = "dynamo"
AOT: Final = "aot"
POST_GRAD: Final = "post_grad"
#: Stage order: the Dynamo graph first (module paths name its layers), Inductor's last (its
#: nodes are what kernels run).
KINDS: Final = (DYNAMO, AOT, POST_GRAD)
TRANSFORMS: Final = {DYNAMO: "dynamo_output_graph", AOT: "aot_graph",
                      POST_GRAD: "inductor_post_grad_graph"}
PROVENANCE: Final = "inductor_provenance_tracking_node_mappings"
_BREAK_AT: Final = re.compile(r"Graph break in user code at (\S+)")
_REASON: Final = re.compile(r"Graph Break Reason:\s*(.*)")


@dataclass(slots=True)
class LoggedGraph:
    """One graph payload of the log: its kind, compile id, attempt and text."""

    kind: str
    compile_id: str
    frame_id: int
    frame_compile_id: int
    attempt: int
    payload: str
    payload_line: int
    source: Path


@dataclass(slots=True)
class GraphBreak:
    """A graph break the log records: where in user code, and why (first line)."""

    compile_id: str
    where: str
    reason: str

    def as_json(self) -> dict[str, str]:
        return {"compile_id": self.compile_id, "where": self.where, "reason": self.reason}


@dataclass(slots=True)
class Recompile:
    """A recompilation: the compile id it made and the guard failures that caused it."""

    compile_id: str
    reasons: list[str]

    def as_json(self) -> dict[str, Any]:
        return {"compile_id": self.compile_id, "reasons": self.reasons}


@dataclass(slots=True)
class TorchTrace:
    """What a TORCH_TRACE directory holds: its graphs per kind (last attempt of each compile
    id, in log order), graph breaks, recompilations, abandoned attempts, provenance mappings
    per compile id, and the log files read."""

    path: Path
    files: list[Path]
    graphs: dict[str, list[LoggedGraph]] = field(default_factory=dict)
    breaks: list[GraphBreak] = field(default_factory=list)
    recompiles: list[Recompile] = field(default_factory=list)
    retried: list[str] = field(default_factory=list)
    provenance: dict[str, dict[str, Any]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def kinds(self) -> list[str]:
        """The graph kinds present, in stage order."""
        return [k for k in KINDS if self.graphs.get(k)]

    def summary(self) -> dict[str, Any]:
        """Compile ids, graph breaks, recompilations and retried attempts, as stored in the
        run's metadata."""
        return {
            "format": "torch-trace",
            "files": [f.name for f in self.files],
            "compile_ids": [g.compile_id for g in self.graphs.get(DYNAMO, [])],
            "graphs": {k: len(v) for k, v in self.graphs.items()},
            "graph_breaks": [b.as_json() for b in self.breaks],
            "recompilations": [r.as_json() for r in self.recompiles],
            "retried_attempts": self.retried,
            "provenance": sorted(self.provenance),
        }

    def lines(self) -> list[str]:
        """The summary as lines for the progress output."""
        ids = ", ".join(f"[{g.compile_id}]" for g in self.graphs.get(DYNAMO, []))
        out = [f"torch.compile log: {len(self.graphs.get(DYNAMO, []))} compiled graph(s) {ids}; "
               f"stages: {', '.join(self.kinds) or 'none'}"]
        for b in self.breaks:
            out.append(f"graph break [{b.compile_id}] at {b.where}: {b.reason}")
        for r in self.recompiles:
            first = r.reasons[0] if r.reasons else "no reason recorded"
            out.append(f"recompilation [{r.compile_id}]: {first}")
        for cid in self.retried:
            out.append(f"attempt retried [{cid}]: the last attempt is used")
        return out


def _graph_kind(rec: Record) -> str | None:
    if rec.event == "dynamo_output_graph":
        return DYNAMO
    if rec.event in ("aot_inference_graph", "aot_forward_graph"):
        return AOT
    if rec.artifact == "inductor_post_grad_graph":
        return POST_GRAD
    return None


def read_torch_trace(path: str | Path) -> TorchTrace:
    """Read every log file of a TORCH_TRACE directory (one rank: the lowest; others are named in
    a warning).

    Raises:
        InputError: no structured log in ``path``, or none of its graphs.
    """
    p = Path(path)
    files = log_files(p)
    if not files:
        raise InputError("no torch.compile structured log (dedicated_log_torch_trace_*.log) here",
                         path=p)
    tt = TorchTrace(path=p, files=files)
    chosen: dict[tuple[str, str], LoggedGraph] = {}
    order: list[tuple[str, str]] = []
    used_file: Path | None = None
    for f in files:
        got_graph = False
        for rec in read_records(f):
            kind = _graph_kind(rec)
            if kind is not None and rec.frame_id is not None and rec.payload:
                got_graph = True
                key = (kind, rec.compile_id)
                g = LoggedGraph(kind, rec.compile_id, rec.frame_id, rec.frame_compile_id or 0,
                                rec.attempt, rec.payload, rec.payload_line, f)
                prev = chosen.get(key)
                if prev is None:
                    order.append(key)
                elif rec.attempt >= prev.attempt and kind == DYNAMO and rec.compile_id not in tt.retried:
                    tt.retried.append(rec.compile_id)
                if prev is None or rec.attempt >= prev.attempt:
                    chosen[key] = g
            elif rec.artifact == "dynamo_graph_break_reason":
                where = _BREAK_AT.search(rec.payload)
                reason = _REASON.search(rec.payload)
                text = reason.group(1).strip() if reason else rec.payload.strip().split("\n")[0]
                detail = next((ln.strip() for ln in rec.payload.split("\n")[2:] if ln.strip()), "")
                tt.breaks.append(GraphBreak(rec.compile_id, where.group(1) if where else "?",
                                            (detail or text)[:200]))
            elif rec.artifact == "recompile_reasons":
                tt.recompiles.append(Recompile(rec.compile_id, _recompile_reasons(rec.payload)))
            elif rec.artifact == PROVENANCE and rec.payload:
                try:
                    doc = json.loads(rec.payload)
                except json.JSONDecodeError:
                    tt.warnings.append(f"{f.name}:{rec.line}: damaged provenance mapping ignored")
                    continue
                if isinstance(doc, dict):
                    tt.provenance[rec.compile_id] = doc
        if got_graph:
            if used_file is None:
                used_file = f
            else:
                tt.warnings.append(f"{f.name}: another process's log (another rank?) is not "
                                   f"read; give its file to convert it")
                for key in [k for k in order if chosen[k].source == f]:
                    order.remove(key)
                    del chosen[key]
    for key in order:
        tt.graphs.setdefault(key[0], []).append(chosen[key])
    if not tt.graphs.get(DYNAMO) and not tt.graphs:
        raise InputError("the torch.compile log holds no graph (was the model compiled, and "
                         "TORCH_TRACE set before importing torch?)", path=p)
    return tt


def _recompile_reasons(payload: str) -> list[str]:
    text = payload.strip()
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        doc = text
    items = doc if isinstance(doc, list) else [doc]
    return [str(i).strip().split("\n")[0][:300] for i in items if str(i).strip()]


def stage_parts(tt: TorchTrace, kind: str) -> list[Graph]:
    """Every graph of one kind, in log order, each node named ``[F/C] name``.

    AOT and Inductor graphs name their inputs ``primals_N``/``argN_1``; each is read with the
    Dynamo graph of the same compile id, whose inputs name the parameters by module path.
    """
    dynamo_inputs = {g.compile_id: input_names(g.payload) for g in tt.graphs.get(DYNAMO, [])}
    aot_inputs = {g.compile_id: input_names(g.payload) for g in tt.graphs.get(AOT, [])}
    parts: list[Graph] = []
    for g in tt.graphs.get(kind, []):
        names: list[str] | None = None
        if kind != DYNAMO:
            names = dynamo_inputs.get(g.compile_id)
            if kind == POST_GRAD and names is not None and g.compile_id in aot_inputs:
                # Inductor keeps the AOT graph's inputs, in its order.
                names = _rebind(input_names(g.payload), aot_inputs[g.compile_id], names,
                                tt.graphs.get(AOT, []), g.compile_id)
        prefix = f"[{g.compile_id}] "
        part = parse_graph(g.payload, module=f"[{g.compile_id}] {TRANSFORMS[kind]}",
                           source=str(g.source), prefix=prefix, first_line=g.payload_line,
                           input_names=names, stage=kind, transform=TRANSFORMS[kind])
        if kind == POST_GRAD and g.compile_id in tt.provenance:
            for node, kernels in provenance_kernels(tt.provenance[g.compile_id]).items():
                if prefix + node in part.by_name:
                    part.kernel_names[prefix + node] = kernels
        parts.append(part)
    return parts


def join_graphs(tt: TorchTrace, kind: str, parts: list[Graph]) -> Graph:
    """The parts as one graph (node indices renumbered; the parts' nodes are moved into it)."""
    out = Graph(module=f"torch_compile.{kind}", source=str(tt.path), transform=TRANSFORMS[kind],
                stage=kind)
    for part in parts:
        base = len(out.nodes)
        for node in part.nodes:
            node.index = base + node.index
            out.nodes.append(node)
        for name, w in part.weights.items():
            if name not in out.weights:
                out.weights[name] = w
        out.outputs = out.outputs + part.outputs
        out.kernel_names.update(part.kernel_names)
    return out


def stage_graph(tt: TorchTrace, kind: str) -> Graph:
    """All graphs of one kind joined in log order (:func:`stage_parts`)."""
    return join_graphs(tt, kind, stage_parts(tt, kind))


def _rebind(post_inputs: list[str], aot_names: list[str], dynamo_names: list[str],
            aot_graphs: list[LoggedGraph], compile_id: str) -> list[str]:
    """The Dynamo name of each post-grad input position, through the AOT graph's inputs."""
    aot = next((g for g in aot_graphs if g.compile_id == compile_id), None)
    idx = aot_input_indices(aot.payload) if aot is not None else {}
    out: list[str] = []
    for pos, name in enumerate(post_inputs):
        if name in aot_names:
            j = idx.get(name, aot_names.index(name))
        else:
            j = idx.get(name, pos)
        out.append(dynamo_names[j] if 0 <= j < len(dynamo_names) else name)
    return out


_LIBRARY_CALLS: Final = ("extern_kernels.", "torch.ops.")


def provenance_kernels(mapping: dict[str, Any]) -> dict[str, tuple[str, ...]]:
    """Post-grad node -> the generated kernels Inductor's provenance says it became
    (``postToCppCode`` on CPU, the ``postTo<kernels>`` table of any backend; kernel ids
    ``triton_poi_fused_add_0:3`` lose their ``:N`` instance suffix). Calls into libraries
    (``extern_kernels.mm``) and ATen fallbacks (``torch.ops.aten.cumsum.default``) are left
    out: their kernels carry the library's names, which the kernel map knows."""
    out: dict[str, tuple[str, ...]] = {}
    for key, table in mapping.items():
        if not key.startswith("postTo") or key == "postToPre" or not isinstance(table, dict):
            continue
        for node, kernels in table.items():
            if not isinstance(node, str) or not isinstance(kernels, list):
                continue
            names = list(out.get(node, ()))
            for k in kernels:
                if not isinstance(k, str):
                    continue
                name = re.sub(r":\d+$", "", k)
                if name and not name.startswith(_LIBRARY_CALLS) and name not in names:
                    names.append(name)
            if names:
                out[node] = tuple(names)
    return out


def unlayered_graphs(graph: Graph, layer: list[int | None]) -> list[tuple[str, int]]:
    """Compile ids of graphs that read layer weights named without a layer index
    (``self_attn_q_proj_weight``: a frame whose ``self`` is one decoder layer, compiled once and
    run for several), with their call-node counts."""
    per: dict[str, list[Node]] = {}
    for node in graph.nodes:
        cid = node.name[1:node.name.find("]")] if node.name.startswith("[") else ""
        per.setdefault(cid, []).append(node)
    out: list[tuple[str, int]] = []
    for cid, nodes in per.items():
        weights = {w for n in nodes for w in n.weights}
        if not weights or any(layer_of_weight(w) is not None for w in weights):
            continue
        if any(layer[n.index] is not None for n in nodes):
            continue
        if _reads_block_weights(weights):
            out.append((cid, sum(1 for n in nodes if n.kind == CALL)))
    return out


_BLOCK_PARTS: Final = re.compile(r"(?:^|_)(?:self_attn|attn|attention|mlp|feed_forward|"
                                 r"block_sparse_moe|experts|mixer|input_layernorm|"
                                 r"post_attention_layernorm|q_proj|gate_proj|down_proj)(?:_|$)")


def _reads_block_weights(weights: set[str]) -> bool:
    return any(_BLOCK_PARTS.search(w) for w in weights)
