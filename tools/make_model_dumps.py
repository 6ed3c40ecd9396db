#!/usr/bin/env python3
"""Generate AutoDeploy-style FX graph dump fixtures from tiny, randomly initialised HF models.

Dev-only tool: neither torch nor transformers is a runtime dependency of tb_ad_layer.
Versions used to produce the committed fixtures in tests/fixtures/dumps/:

    torch==2.13.0 (CPU wheel)      transformers==5.23.0

    pip install torch==2.13.0 transformers==5.23.0
    python tools/make_model_dumps.py --out tests/fixtures/dumps

What it does, per model:

1. builds a tiny model from a config with ``transformers`` (no weight download, fixed seed),
2. exports it with ``torch.export.export(model, (input_ids,), strict=False)`` and takes
   ``ep.module()`` (unlifted GraphModule: parameters and buffers are ``get_attr`` nodes),
3. writes ``001_export_export_to_gm.txt`` (the exported graph as is) and
   ``002_post_export_cleanup_noop_removal.txt`` (after a real, simple FX pass that drops the
   ``_guards_fn`` module call, ``aten._assert_*`` nodes and no-op alias/clone/view/reshape/
   to/contiguous/full-slice nodes), in the exact text format of TensorRT-LLM AutoDeploy's
   graph writer (``dump_ssa_with_meta``, reproduced in ``write_dump`` below),
4. writes the ground truth derived from ``node.meta["nn_module_stack"]``: ``ground_truth.json``
   (first stage) and ``<stem>.truth.json`` for every stage,
5. re-reads every dump and checks that each line has one of the documented line shapes.

Models (``--models`` picks a subset):

- ``llama``: LlamaForCausalLM, dense GQA (4 q heads, 2 kv heads), 3 layers, float32, exported
  with dynamic batch/seq dims (``torch.export.Dim``), so shapes read ``s72xs70x64`` and the graph
  has ``aten.sym_size.int`` nodes whose value is a ``SymInt``.
- ``qwen_moe``: Qwen2MoeForCausalLM, 4 experts, top-2, shared expert with sigmoid gate, 3 MoE
  layers, bfloat16, dynamic batch/seq, ``output_router_logits=True`` (so the output line lists
  aux loss, logits and per-layer router logits). Experts use transformers' own export-friendly
  ``experts_implementation="batched_mm"`` (the default "eager" loop over hit experts is
  data-dependent and cannot be exported). Its second stage prints ``output(%a, ...)``, the
  other spelling of the output line.
- ``deepseek_v3``: DeepseekV3ForCausalLM, MLA (q_lora_rank, kv_lora_rank, rope/nope head dims),
  ``first_k_dense_replace=1`` (layer 0 dense, 1-3 MoE), 8 routed experts, top-2, n_group=2,
  topk_group=1, one shared expert, bfloat16, static 2x4 input.
  PATCH: the routed experts of each MoE layer are re-laid out per expert
  (``mlp.experts.<e>.{gate,up,down}_proj.weight``, the DeepSeek checkpoint naming) and call a
  stand-in custom op ``auto_deploy::torch_moe(x, selected_experts, routing_weights,
  w1_list, w2_list, w3_list)`` defined in this script, the way AutoDeploy's export patches
  present MoE. Its lists of expert weights exercise "weights inside list args". The router,
  shared experts, MLA and everything else is transformers' code unchanged; the patched model
  is checked to give the same logits as the unpatched one.
- ``nemotron_h``: NemotronHForCausalLM, hybrid blocks mamba, mlp, mamba, attention, moe
  (layer kinds ssm, dense, ssm, attention, moe), bfloat16, static input; transformers' pure
  torch Mamba2 path (no mamba_ssm / causal_conv1d kernels).
- ``qwen3_next``: Qwen3NextForCausalLM, gated-delta-net linear attention + full attention
  (layer_types linear, linear, full), MoE MLP with shared expert, bfloat16, static input.
  PATCH: the torch reference ``torch_chunk_gated_delta_rule`` is called with chunk_size=4
  instead of 64, because its inner Python loop over the chunk is unrolled by export (a 64-wide
  chunk gives thousands of slice/select/copy nodes and multi-MB dumps).

Layer kinds in the ground truth: "dense" (attention + dense MLP), "moe" (attention + MoE),
and, for the hybrid models whose blocks hold one mixer each, "ssm", "gdn", "attention",
"dense" (MLP-only block), "moe" (MoE-only block).

Note on the header: like the real writer, each GraphModule section starts with a newline, so
``# GraphModules found: 1`` is followed by two blank lines before the ``=`` rule.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch
import torch.nn as nn
import transformers

TORCH_VERSION_USED = "2.13.0"
TRANSFORMERS_VERSION_USED = "5.23.0"

SEED = 0
NOTES_MD = """# notes

Not a graph dump: only files named `NNN_<stage>_<transform>.txt` are dumps. This file, the
`*.truth.json` files and `ground_truth.json` sit beside them and must be ignored by dump readers.
"""
EXPORT_STAGE = ("export", "export_to_gm")
CLEANUP_STAGE = ("post_export", "cleanup_noop_removal")


# --------------------------------------------------------------------------------------------
# The dump writer: the same output as TensorRT-LLM AutoDeploy's graph writer.
# --------------------------------------------------------------------------------------------


def _get_dtype_or_type(val: Any) -> Any:
    if hasattr(val, "dtype"):
        return val.dtype
    return type(val).__name__


def _get_shape_str(val: Any) -> str:
    if hasattr(val, "shape"):
        dims = [str(int(d)) if str(d).isdigit() else str(d) for d in val.shape]
        return "x".join(dims) if dims else "scalar"
    return "?"


def _get_shape_dtype_str(val: Any) -> str:
    return f"{_get_shape_str(val)} : {_get_dtype_or_type(val)}"


def _node_line(node: torch.fx.Node, output_parens: bool) -> Optional[str]:
    if node.op == "placeholder":
        if "val" in node.meta:
            shape_dtype = _get_shape_dtype_str(node.meta["val"])
        else:
            shape_dtype = "? : unknown"
        return f"%{node.name} : {shape_dtype}"
    if node.op in ("call_function", "call_method", "call_module"):
        input_vars = []
        for arg in node.args:
            if hasattr(arg, "name"):
                if hasattr(arg, "meta") and "val" in arg.meta:
                    input_vars.append(f"%{arg.name} : {_get_shape_dtype_str(arg.meta['val'])}")
                else:
                    input_vars.append(f"%{arg.name} : ? : unknown")
            else:
                input_vars.append(str(arg))
        if "val" in node.meta:
            out_val = node.meta["val"]
            if isinstance(out_val, (tuple, list)):
                shapes, dtypes = [], []
                for v in out_val:
                    if v is not None:
                        shapes.append(_get_shape_str(v))
                        dtypes.append(str(_get_dtype_or_type(v)))
                    else:
                        shapes.append("?")
                        dtypes.append("None")
                out_info = f"({', '.join(shapes)}) : ({', '.join(dtypes)})"
            else:
                out_info = _get_shape_dtype_str(out_val)
        else:
            out_info = "? : N/A"
        target = str(node.target)
        if callable(node.target) and " at 0x" in target:
            # plain Python functions print as `<function sym_float at 0x7f...>`; pin the address
            # so regenerated fixtures are byte-identical
            target = re.sub(r" at 0x[0-9a-f]+>", " at 0x7f0000000000>", target)
        return f"%{node.name} = {target}({', '.join(input_vars)}) : {out_info}"
    if node.op == "output":
        outputs = node.args[0] if isinstance(node.args[0], (tuple, list)) else [node.args[0]]
        output_vars = [f"%{o.name}" if hasattr(o, "name") else str(o) for o in outputs]
        if output_parens:
            return f"output({', '.join(output_vars)})"
        return f"output {', '.join(output_vars)}"
    return None  # get_attr: weights/buffers only appear as references


def write_dump(path: Path, gm: torch.fx.GraphModule, stage: str, transform: str,
               output_parens: bool = False) -> None:
    lines = [
        f"# Transform: {transform}\n",
        f"# Stage: {stage}\n",
        "# GraphModules found: 1\n\n",
        f"\n{'=' * 80}\n",
        "# GraphModule: (root)\n",
        f"{'=' * 80}\n\n",
    ]
    for node in gm.graph.nodes:
        line = _node_line(node, output_parens)
        if line is not None:
            lines.append(line + "\n")
    path.write_text("".join(lines))


# --------------------------------------------------------------------------------------------
# Ground truth from nn_module_stack
# --------------------------------------------------------------------------------------------

_LAYER_RE = re.compile(r"^model\.layers\.(\d+)(?:\.|$)")


def normalize_module_path(path: str) -> Optional[str]:
    """`L['self'].model.layers[0].mlp` / `L__self___model_...` / `model.layers.0.mlp` -> dotted."""
    p = path.strip()
    if not p or p.startswith("_empty_nn_module_stack"):
        return None
    for prefix in ("L['self'].", "L[\"self\"].", "L['self']", "self."):
        if p.startswith(prefix):
            p = p[len(prefix):]
    p = re.sub(r"\[['\"]?([^\]'\"]+)['\"]?\]", r".\1", p)  # [0] / ['key'] -> .0 / .key
    p = re.sub(r"\.{2,}", ".", p).strip(".")
    p = re.sub(r"^_modules\.|\._modules\.", ".", p).strip(".")
    return p or None


def innermost_module(node: torch.fx.Node) -> Optional[str]:
    stack = node.meta.get("nn_module_stack")
    if not stack:
        return None
    path, _type = list(stack.values())[-1]
    return normalize_module_path(str(path))


def ground_truth(gm: torch.fx.GraphModule, model: str, layer_kinds: Dict[int, str],
                 dump_name: str) -> Dict[str, Any]:
    nodes: Dict[str, Dict[str, Any]] = {}
    for node in gm.graph.nodes:
        if node.op in ("get_attr", "output"):
            continue
        # `_guards_fn` (export's input-guard module call) inherits a neighbour's stack; it is
        # no model code, so it belongs to no module.
        is_guard = node.op == "call_module" and str(node.target) == "_guards_fn"
        module = None if is_guard else innermost_module(node)
        layer = None
        if module is not None:
            m = _LAYER_RE.match(module)
            if m:
                layer = int(m.group(1))
        nodes[node.name] = {"layer": layer, "module": module}
    return {
        "model": model,
        "dump": dump_name,
        "num_layers": len(layer_kinds),
        "layer_kinds": {str(k): v for k, v in sorted(layer_kinds.items())},
        "nodes": nodes,
    }


def format_truth(truth: Dict[str, Any]) -> str:
    """JSON with one node per line (graph order), so diffs and greps stay readable."""
    head = {k: v for k, v in truth.items() if k != "nodes"}
    out = ["{"]
    for k, v in head.items():
        out.append(f" {json.dumps(k)}: {json.dumps(v)},")
    out.append(' "nodes": {')
    items = list(truth["nodes"].items())
    for i, (name, info) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        out.append(f"  {json.dumps(name)}: {json.dumps(info)}{comma}")
    out.append(" }")
    out.append("}")
    text = "\n".join(out) + "\n"
    assert json.loads(text) == truth
    return text


# --------------------------------------------------------------------------------------------
# Stage 2: a real, simple cleanup pass
# --------------------------------------------------------------------------------------------

_aten = torch.ops.aten
_ALWAYS_DROP = {
    _aten._assert_tensor_metadata.default,
    _aten._assert_scalar.default,
    _aten.sym_constrain_range_for_size.default,
}
_ALIAS_LIKE = {_aten.alias.default, _aten.clone.default, _aten.contiguous.default,
               _aten.detach.default, _aten.lift_fresh_copy.default}
_SHAPE_NOOPS = {_aten.view.default, _aten.reshape.default, _aten._unsafe_view.default,
                _aten.expand.default}
_DTYPE_NOOPS = {_aten.to.dtype, _aten.to.dtype_layout, _aten.to.device, _aten._to_copy.default,
                _aten.type_as.default}


def _same_meta(a: torch.fx.Node, b: torch.fx.Node) -> bool:
    va, vb = a.meta.get("val"), b.meta.get("val")
    if not isinstance(va, torch.Tensor) or not isinstance(vb, torch.Tensor):
        return False
    return (va.dtype == vb.dtype and va.device == vb.device and len(va.shape) == len(vb.shape)
            and all(str(x) == str(y) for x, y in zip(va.shape, vb.shape)))


def _is_noop_slice(node: torch.fx.Node) -> bool:
    if node.target != _aten.slice.Tensor:
        return False
    args = list(node.args) + [None] * (5 - len(node.args))
    start, end, step = args[2], args[3], args[4]
    return ((start in (None, 0)) and (end is None or (isinstance(end, int) and end >= 2 ** 62))
            and step in (None, 1))


def cleanup_noop_removal(gm: torch.fx.GraphModule) -> Tuple[torch.fx.GraphModule, int]:
    graph = gm.graph
    removed = 0
    for node in list(graph.nodes):
        if node.op == "call_module" and str(node.target) == "_guards_fn":
            graph.erase_node(node)
            removed += 1
            continue
        if node.op != "call_function":
            continue
        if node.target in _ALWAYS_DROP and not node.users:
            graph.erase_node(node)
            removed += 1
            continue
        src = node.args[0] if node.args else None
        if not isinstance(src, torch.fx.Node):
            continue
        noop = False
        if node.target in _ALIAS_LIKE or node.target in _SHAPE_NOOPS or node.target in _DTYPE_NOOPS:
            noop = _same_meta(src, node)
        elif _is_noop_slice(node):
            noop = _same_meta(src, node)
        if noop and src.op != "get_attr":
            node.replace_all_uses_with(src)
            graph.erase_node(node)
            removed += 1
    if hasattr(gm, "_guards_fn"):
        delattr(gm, "_guards_fn")
    graph.lint()
    gm.recompile()
    return gm, removed


# --------------------------------------------------------------------------------------------
# DeepSeek-V3 patch: per-expert weights + stand-in auto_deploy::torch_moe op
# --------------------------------------------------------------------------------------------

_TORCH_MOE = None


def _register_torch_moe():
    global _TORCH_MOE
    if _TORCH_MOE is not None:
        return _TORCH_MOE

    @torch.library.custom_op("auto_deploy::torch_moe", mutates_args=())
    def torch_moe(x: torch.Tensor, selected_experts: torch.Tensor, routing_weights: torch.Tensor,
                  w1_weight: List[torch.Tensor], w2_weight: List[torch.Tensor],
                  w3_weight: List[torch.Tensor]) -> torch.Tensor:
        """Reference unfused gated-MLP MoE: w1 = gate, w2 = down, w3 = up (per expert)."""
        out = torch.zeros_like(x)
        for e in range(len(w1_weight)):
            hit = selected_experts == e  # [tokens, top_k]
            weight = (routing_weights * hit.to(routing_weights.dtype)).sum(-1, keepdim=True)
            h = torch.nn.functional.silu(x @ w1_weight[e].t()) * (x @ w3_weight[e].t())
            out = out + (h @ w2_weight[e].t()) * weight.to(x.dtype)
        return out

    @torch_moe.register_fake
    def _(x, selected_experts, routing_weights, w1_weight, w2_weight, w3_weight):
        return torch.empty_like(x)

    _TORCH_MOE = torch_moe
    return torch_moe


class _ExpertMLP(nn.Module):
    def __init__(self, hidden: int, inter: int, dtype: torch.dtype):
        super().__init__()
        self.gate_proj = nn.Linear(hidden, inter, bias=False, dtype=dtype)
        self.up_proj = nn.Linear(hidden, inter, bias=False, dtype=dtype)
        self.down_proj = nn.Linear(inter, hidden, bias=False, dtype=dtype)


class PerExpertMoEExperts(nn.ModuleList):
    """Drop-in for transformers' fused-3D experts: same call signature, per-expert weights."""

    @classmethod
    def from_fused(cls, fused: nn.Module) -> "PerExpertMoEExperts":
        gate_up, down = fused.gate_up_proj.data, fused.down_proj.data  # [E, 2I, H], [E, H, I]
        n_exp, two_inter, hidden = gate_up.shape
        inter = two_inter // 2
        mods = []
        for e in range(n_exp):
            mlp = _ExpertMLP(hidden, inter, gate_up.dtype)
            mlp.gate_proj.weight.data.copy_(gate_up[e, :inter])
            mlp.up_proj.weight.data.copy_(gate_up[e, inter:])
            mlp.down_proj.weight.data.copy_(down[e])
            mods.append(mlp)
        return cls(mods)

    def forward(self, hidden_states, top_k_index, top_k_weights):
        return torch.ops.auto_deploy.torch_moe(
            hidden_states, top_k_index, top_k_weights,
            [e.gate_proj.weight for e in self],
            [e.down_proj.weight for e in self],
            [e.up_proj.weight for e in self],
        )


# --------------------------------------------------------------------------------------------
# Model builders
# --------------------------------------------------------------------------------------------


class Spec:
    def __init__(self, name: str, model: nn.Module, layer_kinds: Dict[int, str],
                 dynamic: bool, batch: int = 2, seq: int = 4, output_parens_stage2: bool = False):
        self.name, self.model, self.layer_kinds = name, model, layer_kinds
        self.dynamic, self.batch, self.seq = dynamic, batch, seq
        self.output_parens_stage2 = output_parens_stage2


def _from_config(cls, cfg, dtype, **kw):
    torch.manual_seed(SEED)
    model = cls._from_config(cfg, dtype=dtype, **kw)
    return model.eval()


def build_llama() -> Spec:
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=3,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                      use_cache=False)
    model = _from_config(LlamaForCausalLM, cfg, torch.float32, attn_implementation="sdpa")
    return Spec("llama", model, {i: "dense" for i in range(3)}, dynamic=True)


def build_qwen_moe() -> Spec:
    from transformers import Qwen2MoeConfig, Qwen2MoeForCausalLM

    cfg = Qwen2MoeConfig(vocab_size=128, hidden_size=64, intermediate_size=128,
                         moe_intermediate_size=32, shared_expert_intermediate_size=64,
                         num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
                         num_experts=4, num_experts_per_tok=2, decoder_sparse_step=1,
                         max_position_embeddings=64, use_cache=False, output_router_logits=True)
    model = _from_config(Qwen2MoeForCausalLM, cfg, torch.bfloat16, attn_implementation="sdpa",
                         experts_implementation="batched_mm")
    return Spec("qwen_moe", model, {i: "moe" for i in range(3)}, dynamic=True,
                output_parens_stage2=True)


def build_deepseek_v3() -> Spec:
    from transformers import DeepseekV3Config, DeepseekV3ForCausalLM

    cfg = DeepseekV3Config(vocab_size=128, hidden_size=64, intermediate_size=128,
                           moe_intermediate_size=32, num_hidden_layers=4, num_attention_heads=4,
                           num_key_value_heads=4, n_shared_experts=1, n_routed_experts=8,
                           num_experts_per_tok=2, n_group=2, topk_group=1, q_lora_rank=32,
                           kv_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=16,
                           v_head_dim=16, first_k_dense_replace=1, max_position_embeddings=64,
                           use_cache=False)
    model = _from_config(DeepseekV3ForCausalLM, cfg, torch.bfloat16, attn_implementation="sdpa",
                         experts_implementation="batched_mm")
    # Non-zero correction bias so the buffer is not trivially zero.
    with torch.no_grad():
        for layer in model.model.layers:
            if hasattr(layer.mlp, "gate") and hasattr(layer.mlp.gate, "e_score_correction_bias"):
                layer.mlp.gate.e_score_correction_bias.copy_(
                    torch.linspace(-0.1, 0.1, cfg.n_routed_experts))
    _register_torch_moe()
    ids = _example_ids(2, 4, cfg.vocab_size)
    with torch.no_grad():
        ref = model(ids).logits.float()
    kinds = {}
    for i, layer in enumerate(model.model.layers):
        if hasattr(layer.mlp, "experts"):
            layer.mlp.experts = PerExpertMoEExperts.from_fused(layer.mlp.experts)
            kinds[i] = "moe"
        else:
            kinds[i] = "dense"
    with torch.no_grad():
        got = model(ids).logits.float()
    err = (got - ref).abs().max().item()
    assert err <= 0.05 * max(1.0, ref.abs().max().item()), f"per-expert patch changed logits ({err})"
    return Spec("deepseek_v3", model, kinds, dynamic=False)


def build_nemotron_h() -> Spec:
    from transformers import NemotronHConfig, NemotronHForCausalLM

    types = ["linear_attention", "mlp", "linear_attention", "full_attention", "moe"]
    cfg = NemotronHConfig(vocab_size=128, hidden_size=64, intermediate_size=128,
                          layers_block_type=types, num_hidden_layers=len(types),
                          num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                          mamba_num_heads=4, mamba_head_dim=16, ssm_state_size=16, n_groups=1,
                          conv_kernel=4, chunk_size=4, n_routed_experts=4, n_shared_experts=1,
                          num_experts_per_tok=2, moe_intermediate_size=32,
                          moe_shared_expert_intermediate_size=32, max_position_embeddings=64,
                          use_cache=False, use_mamba_kernels=False)
    model = _from_config(NemotronHForCausalLM, cfg, torch.bfloat16, attn_implementation="sdpa",
                         experts_implementation="batched_mm")
    kind = {"linear_attention": "ssm", "mlp": "dense", "full_attention": "attention", "moe": "moe"}
    return Spec("nemotron_h", model, {i: kind[t] for i, t in enumerate(types)}, dynamic=False)


def build_qwen3_next() -> Spec:
    from transformers import Qwen3NextConfig, Qwen3NextForCausalLM
    from transformers.models.qwen3_next import modeling_qwen3_next as mq

    orig = getattr(mq.torch_chunk_gated_delta_rule, "_tb_ad_orig", mq.torch_chunk_gated_delta_rule)

    def small_chunk(*args, **kwargs):
        kwargs["chunk_size"] = 4
        return orig(*args, **kwargs)

    small_chunk._tb_ad_orig = orig
    mq.torch_chunk_gated_delta_rule = small_chunk

    types = ["linear_attention", "linear_attention", "full_attention"]
    cfg = Qwen3NextConfig(vocab_size=128, hidden_size=64, intermediate_size=128,
                          num_hidden_layers=3, layer_types=types, num_attention_heads=4,
                          num_key_value_heads=2, head_dim=16, linear_num_value_heads=4,
                          linear_num_key_heads=2, linear_key_head_dim=16,
                          linear_value_head_dim=16, linear_conv_kernel_dim=4, num_experts=4,
                          num_experts_per_tok=2, moe_intermediate_size=32,
                          shared_expert_intermediate_size=32, decoder_sparse_step=1,
                          max_position_embeddings=64, use_cache=False)
    model = _from_config(Qwen3NextForCausalLM, cfg, torch.bfloat16, attn_implementation="sdpa",
                         experts_implementation="batched_mm")
    kind = {"linear_attention": "gdn", "full_attention": "attention"}
    return Spec("qwen3_next", model, {i: kind[t] for i, t in enumerate(types)}, dynamic=False)


BUILDERS: Dict[str, Callable[[], Spec]] = {
    "llama": build_llama,
    "qwen_moe": build_qwen_moe,
    "deepseek_v3": build_deepseek_v3,
    "nemotron_h": build_nemotron_h,
    "qwen3_next": build_qwen3_next,
}


def _example_ids(batch: int, seq: int, vocab: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(SEED)
    return torch.randint(0, vocab, (batch, seq), generator=g)


def export_model(spec: Spec) -> torch.fx.GraphModule:
    vocab = spec.model.config.vocab_size
    ids = _example_ids(spec.batch, spec.seq, vocab)
    dynamic_shapes = None
    if spec.dynamic:
        batch = torch.export.Dim("batch", min=1, max=64)
        seq = torch.export.Dim("seq", min=2, max=64)
        dynamic_shapes = ({0: batch, 1: seq},)
    with torch.no_grad():
        ep = torch.export.export(spec.model, (ids,), strict=False, dynamic_shapes=dynamic_shapes)
    return ep.module()


# --------------------------------------------------------------------------------------------
# Self-check: every line of a dump has one of the documented shapes
# --------------------------------------------------------------------------------------------

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_DIM = r"(?:\d+|[A-Za-z0-9_*+\-/ ]+)"
_SHAPE = rf"(?:\?|scalar|{_DIM}(?:x{_DIM})*)"
_DTYPE = r"(?:torch\.[a-z0-9_]+|[A-Za-z_][A-Za-z0-9_]*|N/A)"
_SHAPE_DTYPE_RE = re.compile(rf"^({_SHAPE}) : ({_DTYPE})$")
_MULTI_RE = re.compile(rf"^\(({_SHAPE}(?:, {_SHAPE})*)\) : \(({_DTYPE}(?:, {_DTYPE})*)\)$")
_PLACEHOLDER_RE = re.compile(rf"^%({_NAME}) : (.+)$")
_CALL_HEAD_RE = re.compile(rf"^%({_NAME}) = ([^(]+)\(")
_OUTPUT_RE = re.compile(rf"^output(?: |\()(%?{_NAME}|None)?(?:, (%?{_NAME}|None))*\)?$")
_REF_RE = re.compile(rf"^%({_NAME}) : (.+)$")


def _split_top(s: str) -> List[str]:
    parts, depth, cur, quote = [], 0, [], None
    i = 0
    while i < len(s):
        ch = s[i]
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
            cur.append(ch)
        elif ch in "([{":
            depth += 1
            cur.append(ch)
        elif ch in ")]}":
            depth -= 1
            cur.append(ch)
        elif ch == "," and depth == 0 and s[i + 1:i + 2] == " ":
            parts.append("".join(cur))
            cur = []
            i += 1
        else:
            cur.append(ch)
        i += 1
    if cur or parts:
        parts.append("".join(cur))
    return parts


def _check_out_info(info: str, where: str) -> None:
    if info == "? : N/A":
        return
    if _SHAPE_DTYPE_RE.match(info) or _MULTI_RE.match(info):
        return
    raise AssertionError(f"{where}: bad shape/dtype {info!r}")


def check_dump(path: Path, weight_names: set) -> Dict[str, Any]:
    lines = path.read_text().split("\n")
    assert lines[-1] == "", f"{path}: no trailing newline"
    lines = lines[:-1]
    assert lines[0].startswith("# Transform: ") and lines[1].startswith("# Stage: "), path
    assert f"{lines[1][len('# Stage: '):]}_{lines[0][len('# Transform: '):]}" == \
        path.stem.split("_", 1)[1], f"{path}: header does not match the file name"
    assert lines[2] == "# GraphModules found: 1" and lines[3] == "" and lines[4] == ""
    assert lines[5] == "=" * 80 and lines[6] == "# GraphModule: (root)" and lines[7] == "=" * 80
    assert lines[8] == ""
    defined: set = set()
    order: List[str] = []
    refs_weights: set = set()
    n_nodes = 0
    saw_output = False
    for lineno, line in enumerate(lines[9:], start=10):
        where = f"{path.name}:{lineno}"
        assert not saw_output, f"{where}: line after output"
        if line.startswith("output"):
            m = _OUTPUT_RE.match(line)
            assert m, f"{where}: bad output line"
            for ref in re.findall(rf"%({_NAME})", line):
                assert ref in defined, f"{where}: output of undefined %{ref}"
            saw_output = True
            continue
        head = _CALL_HEAD_RE.match(line)
        if head:
            name = head.group(1)
            # find the ')' closing the arg list
            start = head.end()
            depth, quote, i = 1, None, start
            while i < len(line) and depth:
                ch = line[i]
                if quote:
                    quote = None if ch == quote else quote
                elif ch in "'\"":
                    quote = ch
                elif ch in "([{":
                    depth += 1
                elif ch in ")]}":
                    depth -= 1
                i += 1
            assert depth == 0, f"{where}: unbalanced args"
            args_s, rest = line[start:i - 1], line[i:]
            assert rest.startswith(" : "), f"{where}: no ' : ' after args"
            _check_out_info(rest[3:], where)
            for arg in (_split_top(args_s) if args_s else []):
                if arg.startswith("%"):
                    m = _REF_RE.match(arg)
                    assert m, f"{where}: bad ref {arg!r}"
                    ref = m.group(1)
                    sd = m.group(2)
                    assert _SHAPE_DTYPE_RE.match(sd), f"{where}: bad ref shape/dtype {arg!r}"
                    if ref not in defined:
                        assert ref in weight_names, f"{where}: %{ref} neither defined nor a weight"
                        refs_weights.add(ref)
                else:
                    assert "%" not in arg, f"{where}: '%' inside a literal arg {arg!r}"
                    if arg.startswith(("[", "(")):
                        for ref in re.findall(rf"(?<![\w.'\"])({_NAME})(?![\w.'\"(])", arg):
                            if ref in ("None", "True", "False", "inf", "nan"):
                                continue
                            assert ref in defined or ref in weight_names, \
                                f"{where}: {ref!r} in a list arg is neither defined nor a weight"
                            if ref not in defined:
                                refs_weights.add(ref)
            assert name not in defined, f"{where}: %{name} defined twice"
            defined.add(name)
            order.append(name)
            n_nodes += 1
            continue
        m = _PLACEHOLDER_RE.match(line)
        assert m and _SHAPE_DTYPE_RE.match(m.group(2)), f"{where}: unrecognised line {line[:120]!r}"
        defined.add(m.group(1))
        order.append(m.group(1))
        n_nodes += 1
    assert saw_output, f"{path}: no output line"
    return {"nodes": n_nodes, "weights": len(refs_weights), "order": order}


# --------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------


def _weight_names(gm: torch.fx.GraphModule) -> set:
    names = set()
    for n in gm.graph.nodes:
        if n.op == "get_attr":
            # torch's node naming lowercases (e.g. `A_log` -> `a_log`); dumps print node names
            assert n.name.lower() == str(n.target).replace(".", "_").lower(), (n.name, n.target)
            names.add(n.name)
    return names


def _assert_no_named_literals(gm: torch.fx.GraphModule) -> None:
    for n in gm.graph.nodes:
        for a in n.args:
            if hasattr(a, "name") and not isinstance(a, torch.fx.Node):
                raise AssertionError(f"{n.name}: non-node arg with a .name attribute: {a!r}")


def make_model(name: str, out_root: Path) -> List[Dict[str, Any]]:
    spec = BUILDERS[name]()
    out_dir = out_root / name
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in list(out_dir.glob("[0-9][0-9][0-9]_*.txt")) + list(out_dir.glob("*.truth.json")):
        old.unlink()

    gm = export_model(spec)
    weights = _weight_names(gm)
    _assert_no_named_literals(gm)
    stages = []

    stem1 = f"001_{EXPORT_STAGE[0]}_{EXPORT_STAGE[1]}"
    write_dump(out_dir / f"{stem1}.txt", gm, *EXPORT_STAGE)
    truth1 = ground_truth(gm, name, spec.layer_kinds, f"{stem1}.txt")
    stages.append((stem1, truth1))

    gm, removed = cleanup_noop_removal(gm)
    stem2 = f"002_{CLEANUP_STAGE[0]}_{CLEANUP_STAGE[1]}"
    write_dump(out_dir / f"{stem2}.txt", gm, *CLEANUP_STAGE,
               output_parens=spec.output_parens_stage2)
    stages.append((stem2, ground_truth(gm, name, spec.layer_kinds, f"{stem2}.txt")))

    (out_dir / "ground_truth.json").write_text(format_truth(truth1))
    if name == "llama":  # a non-dump file: readers must ignore anything not named NNN_*.txt
        (out_dir / "notes.md").write_text(NOTES_MD)
    report = []
    for stem, truth in stages:
        (out_dir / f"{stem}.truth.json").write_text(format_truth(truth))
        path = out_dir / f"{stem}.txt"
        stats = check_dump(path, weights)
        assert stats["order"] == list(truth["nodes"]), f"{path}: truth nodes != dump nodes"
        layers = sorted({v["layer"] for v in truth["nodes"].values() if v["layer"] is not None})
        assert layers == sorted(spec.layer_kinds), (path, layers, spec.layer_kinds)
        report.append({"file": f"{name}/{path.name}", "bytes": path.stat().st_size,
                       "nodes": stats["nodes"], "weight_refs": stats["weights"],
                       "layers": layers, "removed": removed if stem == stem2 else 0})
    return report


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("tests/fixtures/dumps"))
    ap.add_argument("--models", nargs="*", default=list(BUILDERS), choices=list(BUILDERS))
    args = ap.parse_args(argv)

    print(f"torch {torch.__version__} (fixtures made with {TORCH_VERSION_USED}), "
          f"transformers {transformers.__version__} (fixtures made with "
          f"{TRANSFORMERS_VERSION_USED})")
    failed = []
    for name in args.models:
        try:
            rows = make_model(name, args.out)
        except Exception as exc:  # keep going: report which model could not be exported
            failed.append(name)
            print(f"{name}: FAILED: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}")
            continue
        for r in rows:
            print(f"{r['file']:<60} {r['bytes']:>8} B  nodes={r['nodes']:<5} "
                  f"weight_refs={r['weight_refs']:<4} layers={r['layers']}"
                  + (f"  (removed {r['removed']} no-op nodes)" if r["removed"] else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
