"""Ground truth of a dump from torch.export's ``node.meta["nn_module_stack"]``.

For every printed node (placeholders and calls, in graph order) the truth records:

- ``layer``: the decoder layer whose module computed the node: the index ``N`` of the stack
  entry whose path is ``<layers>.N``, where ``<layers>`` is the model's ModuleList of
  ``num_hidden_layers`` decoder blocks (``model.layers``, ``backbone.layers``); null when no
  stack entry is a decoder layer (placeholders, embedding, rotary tables, masks, final norm,
  lm head). The outermost such entry counts, so a block that several layers share still
  belongs to the layer that called it.
- ``module`` / ``class``: the innermost module's dotted path and class name (null, null without
  a stack).
- ``group``: what the outermost *classified* module below the decoder layer is (below the
  model root for nodes outside layers): ``gdn``, ``mamba``, ``mla``, ``attention``, ``moe``,
  ``mlp`` or ``norm``; null when no module on the path is one of these (the residual adds and
  casts a decoder layer computes itself, Zamba's ``linear`` between shared block and Mamba).

Modules are classified by what they are made of, not by model name (see :func:`classify`).
Each layer's kind is built from the groups of its nodes: its mixers among ``attention``,
``mla``, ``mamba``, ``gdn`` (in that order), then its FFN (``moe`` over ``mlp``), joined by
``+`` (``attention+mlp``, ``mla+moe``, ``attention+mamba+mlp``, ``mamba``, ``moe``).
"""

from __future__ import annotations

import json
import re
from typing import Any

import torch
from torch import fx

MIXERS = ("attention", "mla", "mamba", "gdn")
FFNS = ("mlp", "moe")
GROUPS = MIXERS + FFNS + ("norm",)
_ATTN_CHILDREN = ("q_proj", "qkv_proj", "query_key_value", "c_attn", "Wqkv", "q_a_proj",
                  "q_b_proj", "kv_proj")
_MLA_CHILDREN = ("kv_a_proj_with_mqa", "kv_b_proj")
_MLP_CHILDREN = ("gate_proj", "up_proj", "down_proj", "gate_up_proj", "fc1", "fc2", "c_fc",
                 "w1", "w2", "w3", "dense_h_to_4h", "input_linear", "output_linear", "fc_in",
                 "fc_out")


def classify(module: torch.nn.Module) -> str | None:
    """The group a module stands for, from its class name and its direct children/parameters.

    - ``gdn``: a class named ``*DeltaNet*``;
    - ``mamba``: a module that owns an ``A_log`` parameter (every Mamba1/Mamba2 mixer does);
    - ``mla`` / ``attention``: a module with a query projection child (``q_proj``, ``qkv_proj``,
      ``q_a_proj``, ...) or a joint key/value projection (``kv_proj``: JetMoE's attention, whose
      query projections are experts), ``mla`` when it also has a latent KV projection
      (``kv_a_proj_with_mqa``);
    - ``moe``: a module with an ``experts`` or ``router`` child, or a child whose class is named
      ``*Experts``;
    - ``mlp``: a module with feed-forward projections (``gate_proj``/``up_proj``/``down_proj``,
      ``input_linear``/``output_linear``, ``fc1``/``fc2``, ``fc_in``/``fc_out``, ...);
    - ``norm``: a class named ``*Norm*``.
    """
    cls = type(module).__name__
    children = dict(module.named_children())
    if "deltanet" in cls.lower():
        return "gdn"
    if "A_log" in module._parameters:
        return "mamba"
    if any(c in children for c in _ATTN_CHILDREN):
        return "mla" if any(c in children for c in _MLA_CHILDREN) else "attention"
    if "experts" in children or "router" in children or any(
            type(c).__name__.endswith("Experts") for c in children.values()):
        return "moe"
    if any(c in children for c in _MLP_CHILDREN):
        return "mlp"
    if "norm" in cls.lower():
        return "norm"
    return None


def decoder_layers_path(model: torch.nn.Module, num_layers: int) -> str:
    """Path of the ModuleList holding the ``num_layers`` decoder blocks."""
    found = [name for name, mod in model.named_modules()
             if isinstance(mod, torch.nn.ModuleList) and len(mod) == num_layers
             and name.rsplit(".", 1)[-1] in ("layers", "h", "blocks")]
    if len(found) != 1:
        raise RuntimeError(f"cannot tell the decoder layers apart: {found}")
    return found[0]


def _class_name(t: object) -> str:
    """``transformers.models.llama.modeling_llama.LlamaMLP`` (or the class itself) -> ``LlamaMLP``."""
    if isinstance(t, type):
        return t.__name__
    return str(t).rsplit(".", 1)[-1]


class TruthMaker:
    """Derives each node's truth from its module stack, for one model."""

    def __init__(self, model: torch.nn.Module, layers_path: str) -> None:
        self.layers_path = layers_path
        self._layer_re = re.compile(re.escape(layers_path) + r"\.(\d+)$")
        self._groups: dict[str, str | None] = {
            name: classify(mod) for name, mod in model.named_modules(remove_duplicate=False)}

    def node_truth(self, node: fx.Node) -> dict[str, Any]:
        stack = node.meta.get("nn_module_stack") or {}
        # `_guards_fn` (export's input-guard call) copies a neighbour's stack; no model code.
        if node.op == "call_module" and str(node.target) == "_guards_fn":
            stack = {}
        # torch marks nodes it created without a module (``sym_size``) with a placeholder entry
        paths: list[tuple[str, str]] = [(str(p), _class_name(t)) for p, t in stack.values()
                                        if not str(p).startswith("_empty_nn_module_stack")]
        layer: int | None = None
        below = 0
        for i, (path, _) in enumerate(paths):
            m = self._layer_re.match(path)
            if m:
                layer, below = int(m.group(1)), i + 1
                break
        group = None
        for path, _ in paths[below:]:
            group = self._groups.get(path)
            if group is not None:
                break
        module, cls = (paths[-1][0] or None, paths[-1][1]) if paths else (None, None)
        return {"layer": layer, "module": module, "class": cls, "group": group}


def layer_kind(groups: list[str | None]) -> str:
    """``mixers+ffn`` from the groups of one layer's nodes (see the module docstring)."""
    present = set(groups)
    parts = [g for g in MIXERS if g in present]
    if "moe" in present:
        parts.append("moe")
    elif "mlp" in present:
        parts.append("mlp")
    if not parts:
        raise RuntimeError("a decoder layer with neither mixer nor FFN")
    return "+".join(parts)


def graph_truth(gm: fx.GraphModule, maker: TruthMaker, model: str, architecture: str,
                dump_name: str) -> dict[str, Any]:
    """The truth of one dump: every printed node of ``gm``, and each layer's kind."""
    nodes: dict[str, dict[str, Any]] = {}
    for node in gm.graph.nodes:
        if node.op in ("get_attr", "output"):
            continue
        nodes[node.name] = maker.node_truth(node)
    by_layer: dict[int, list[str | None]] = {}
    for info in nodes.values():
        if info["layer"] is not None:
            by_layer.setdefault(info["layer"], []).append(info["group"])
    kinds = {str(i): layer_kind(by_layer[i]) for i in sorted(by_layer)}
    return {"model": model, "architecture": architecture, "dump": dump_name,
            "layers_module": maker.layers_path, "num_layers": len(kinds),
            "layer_kinds": kinds, "nodes": nodes}


def format_truth(truth: dict[str, Any]) -> str:
    """JSON with one node per line (graph order), so that diffs and greps stay readable."""
    out = ["{"]
    for key, value in truth.items():
        if key != "nodes":
            out.append(f" {json.dumps(key)}: {json.dumps(value)},")
    out.append(' "nodes": {')
    items = list(truth["nodes"].items())
    for i, (name, info) in enumerate(items):
        out.append(f"  {json.dumps(name)}: {json.dumps(info)}{',' if i < len(items) - 1 else ''}")
    out.append(" }")
    out.append("}")
    text = "\n".join(out) + "\n"
    if json.loads(text) != truth:
        raise AssertionError("truth JSON does not round-trip")
    return text
