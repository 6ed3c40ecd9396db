"""Multi-stage AutoDeploy dumps of full-depth models, with per-node truth at every stage.

Per model: the export the way AutoDeploy exports (:mod:`ad_export`, with AutoDeploy's export
patches of ``F.linear`` and ``F.scaled_dot_product_attention`` into ``torch_linear_simple`` and
``torch_attention_sdpa``, and for MoE models its per-expert ``torch_moe`` patch), then the
transforms of :mod:`ad_transforms` in the order and with the dump counters of AutoDeploy's
``config/default.yaml`` (TensorRT-LLM @ 0034d905: 66 dumps, ``build_model`` writes none because
it makes no GraphModule). A dump is written for the export, for every transform that changed the
graph, and for the final ``compile_model``; the numbers are the real ones.

Truth (``<stem>.truth.json.gz`` beside ``<stem>.txt.gz``): the export's ``nn_module_stack``
truth (:mod:`truth`) is stored in each node's ``meta["ad_truth"]`` and travels with the node
(FX keeps a node, its name and its meta until a transform replaces it). A node a transform
inserts takes the truth of the node it replaces; a fused node replacing nodes of one module
family (fuse_gemms) takes their layer and group and their common module path; the in-place
add + norm node takes the add's truth (layer N's residual output feeding layer N+1's norm, or
the last layer's when the norm is the final norm); ``getitem`` nodes take their producer's;
new placeholders (caches, batch metadata) and the metadata-preparation op are model-level
(all null).
"""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
import transformers
from torch import fx

from . import ad_export
from . import ad_transforms as T
from .ad_ops import register_ad_ops
from .dump_check import check_dump
from .models import MAMBA2, SEED, TINY
from .per_expert_moe import split_experts
from .truth import TruthMaker, decoder_layers_path, format_truth, layer_kind
from .writer import dump_file_name, dump_text

# config/default.yaml @ 0034d905 (TensorRT-LLM), in order, after build_model (no dump).
DEFAULT_YAML: list[tuple[str, str]] = [
    ("export", "export_to_gm"),
    ("post_export", "cleanup_noop_slice"), ("post_export", "cleanup_noop_add"),
    ("post_export", "cleanup_input_constraints"),
    *[("pattern_matcher", t) for t in (
        "match_moe_pattern", "match_dense_moe_pattern", "match_bmm_moe_pattern",
        "match_repeat_kv", "match_eager_attention", "match_sdpa_to_torch_attention",
        "match_grouped_attention", "match_attention_layout", "match_rope_pattern",
        "match_rope_layout", "match_rmsnorm_pattern", "match_l2norm_pattern",
        "eliminate_redundant_transposes", "optimize_rope", "quantize_int4_linear_from_config",
        "quantize_int4_gptq_linear_from_config", "quantize_fp8_linear_from_config",
        "quantize_nvfp4_linear_from_config", "quantize_finegrained_fp8_linear_from_config",
        "quantize_finegrained_fp8_moe", "quantize_fp8_bmm_from_config", "quantize_fp8_from_graph",
        "quantize_nvfp4_from_graph", "match_swiglu_pattern", "match_nvfp4_swiglu_pattern",
        "quantize_fp8_moe", "quantize_nvfp4_moe", "quantize_mxfp4_moe",
        "detect_hidden_states_for_capture")],
    ("sharding", "detect_sharding"), ("sharding", "sharding_transform_executor"),
    ("weight_load", "load_weights"), ("weight_load", "move_inputs_to_device"),
    *[("post_load_fusion", t) for t in (
        "fuse_gemms", "fuse_fp4_gemms", "fuse_fp8_gemms", "fuse_fp8_linear", "fuse_nvfp4_linear",
        "fuse_nvfp4_swiglu", "fuse_finegrained_fp8_linear", "fuse_moe", "fuse_fp8_moe",
        "fuse_finegrained_fp8_moe", "fuse_allreduce_residual_rmsnorm", "fuse_rmsnorm",
        "fuse_l2norm", "fuse_swiglu", "fuse_add_rms_norm", "gather_logits_before_lm_head")],
    ("visualize", "visualize_namespace"),
    *[("cache_init", t) for t in (
        "insert_cached_attention", "insert_cached_mla_attention", "insert_cached_ssm_attention",
        "insert_cached_causal_conv", "insert_cached_delta_rule", "insert_cached_residual_add",
        "initialize_cache", "resize_kv_cache")],
    *[("compile", t) for t in ("fuse_causal_conv_activation", "multi_stream_moe",
                               "multi_stream_mla_attn", "compile_model")],
]
COUNTER = {t: i for i, (_, t) in enumerate(DEFAULT_YAML, 1)}
STAGE = {t: s for s, t in DEFAULT_YAML}
assert len(DEFAULT_YAML) == 66


# ----------------------------------------------------------------------------------------------
# models at their real depth (tiny widths, few experts)
# ----------------------------------------------------------------------------------------------

@dataclass
class StageSpec:
    name: str
    title: str
    build: Callable[[], torch.nn.Module]
    moe_patch: bool = False  # AutoDeploy's per-expert torch_moe export patch
    shared_kv: Callable[[Any], dict[int, int]] | None = None
    on_meta: bool = True  # export on meta (AutoDeploy); False: with real CPU tensors
    notes: list[str] = field(default_factory=list)


def _w(**over: Any) -> dict[str, Any]:
    out = dict(TINY)
    out.update(over)
    return out


def _build(cls_name: str, cfg: Any, attn: str = "sdpa") -> torch.nn.Module:
    torch.manual_seed(SEED)
    kwargs: dict[str, Any] = {}
    if any(getattr(cfg, k, None) for k in ("num_experts", "n_routed_experts", "num_local_experts")):
        kwargs["experts_implementation"] = "batched_mm"
    cls = getattr(transformers, cls_name)
    return cls._from_config(cfg, dtype=torch.bfloat16, attn_implementation=attn, **kwargs).eval()


def llama3_8b() -> torch.nn.Module:
    return _build("LlamaForCausalLM", transformers.LlamaConfig(**_w(num_hidden_layers=32)))


def qwen3_8b() -> torch.nn.Module:
    return _build("Qwen3ForCausalLM", transformers.Qwen3Config(**_w(num_hidden_layers=36)))


def deepseek_v3() -> torch.nn.Module:
    cfg = transformers.DeepseekV3Config(**_w(
        head_dim=8, num_hidden_layers=61, num_key_value_heads=4, moe_intermediate_size=32,
        n_shared_experts=1, n_routed_experts=8, num_experts_per_tok=2, n_group=2, topk_group=1,
        q_lora_rank=32, kv_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=16,
        v_head_dim=16, first_k_dense_replace=3))
    return _build("DeepseekV3ForCausalLM", cfg)


def glm4_5() -> torch.nn.Module:
    cfg = transformers.Glm4MoeConfig(**_w(
        num_hidden_layers=92, moe_intermediate_size=32, n_shared_experts=1, n_routed_experts=8,
        num_experts_per_tok=2, n_group=1, topk_group=1, first_k_dense_replace=3,
        use_qk_norm=True, num_mtp_layers=0))
    return _build("Glm4MoeForCausalLM", cfg)


def llama4_maverick() -> torch.nn.Module:
    cfg = transformers.Llama4TextConfig(**_w(
        num_hidden_layers=48, intermediate_size_mlp=128, num_local_experts=4,
        num_experts_per_tok=1, interleave_moe_layer_step=2))
    return _build("Llama4ForCausalLM", cfg)


def mixtral_8x7b() -> torch.nn.Module:
    cfg = transformers.MixtralConfig(**_w(num_hidden_layers=32, num_local_experts=8,
                                          num_experts_per_tok=2))
    return _build("MixtralForCausalLM", cfg)


def qwen3_moe_30b() -> torch.nn.Module:
    cfg = transformers.Qwen3MoeConfig(**_w(num_hidden_layers=48, num_experts=8,
                                           num_experts_per_tok=2, moe_intermediate_size=32))
    return _build("Qwen3MoeForCausalLM", cfg)


def gpt_oss_20b() -> torch.nn.Module:
    types = ["sliding_attention", "full_attention"] * 12
    cfg = transformers.GptOssConfig(**_w(num_hidden_layers=24, layer_types=types,
                                         num_local_experts=4, num_experts_per_tok=2,
                                         sliding_window=4))
    return _build("GptOssForCausalLM", cfg, attn="eager")


NEMOTRON_NANO_9B_V2 = "M-M-M-MM-M-M-M*-M-M-M*-M-M-M-M*-M-M-M-M*-M-MM-M-M-M-M-M-"


def nemotron_h() -> torch.nn.Module:
    kinds = {"M": "mamba", "*": "attention", "-": "mlp"}
    types = [kinds[c] for c in NEMOTRON_NANO_9B_V2]
    cfg = transformers.NemotronHConfig(**_w(
        layers_block_type=types, num_hidden_layers=len(types), mamba_num_heads=4,
        mamba_head_dim=16, ssm_state_size=16, n_groups=1, conv_kernel=4, chunk_size=4))
    return _build("NemotronHForCausalLM", cfg)


def bamba_9b() -> torch.nn.Module:
    cfg = transformers.BambaConfig(**_w(num_hidden_layers=32, attn_layer_indices=[9, 18, 27],
                                        **MAMBA2))
    return _build("BambaForCausalLM", cfg)


ZAMBA2_2_7B_HYBRID = [6, 12, 18, 24, 30, 36, 42, 47, 51]


def zamba2_2_7b() -> torch.nn.Module:
    """Zyphra/Zamba2-2.7B's layout: 54 layers, hybrid (shared transformer + Mamba2) at
    ``ZAMBA2_2_7B_HYBRID``, two shared blocks used in turn (``num_mem_blocks=2``: block 0 by
    6, 18, 30, 42, 51, block 1 by 12, 24, 36, 47), LoRA adapters on the shared MLP's gate/up
    projection (always on in transformers' Zamba2MLP; one per hybrid layer, in the block that
    layer uses), none on the shared attention (``use_shared_attention_adapter=False``), no RoPE
    in the shared attention (``use_mem_rope=False``), as many K/V heads as query heads."""
    types = ["hybrid" if i in ZAMBA2_2_7B_HYBRID else "mamba" for i in range(54)]
    cfg = transformers.Zamba2Config(**_w(
        num_hidden_layers=len(types), layers_block_type=types, num_key_value_heads=4,
        mamba_d_state=16, n_mamba_heads=8, chunk_size=4, mamba_ngroups=1, num_mem_blocks=2,
        use_shared_attention_adapter=False, adapter_rank=8, use_mem_rope=False))
    assert cfg.hybrid_layer_ids == ZAMBA2_2_7B_HYBRID
    return _build("Zamba2ForCausalLM", cfg)


SHARED_NAMING = (
    "Shared weights keep the FIRST user's name: block 0's print as "
    "model_layers_6_shared_transformer_* (read by 6, 18, 30, 42, 51), block 1's as "
    "model_layers_12_shared_transformer_* (read by 12, 24, 36, 47); the per-layer MLP adapters "
    "live in the block's list, so layer 51's adapter prints as "
    "model_layers_6_shared_transformer_feed_forward_gate_up_proj_adapter_list_8_* and layer "
    "47's as model_layers_12_..._adapter_list_7_*: a name read by one layer that is not that "
    "layer's. torch.export lifts a shared tensor once and AutoDeploy's "
    "_deduplicate_params_and_buffers keeps the first get_attr in graph order.")


def gemma3_1b() -> torch.nn.Module:
    types = transformers.Gemma3TextConfig().layer_types  # 26 layers, 5 sliding : 1 global
    cfg = transformers.Gemma3TextConfig(**_w(num_hidden_layers=len(types), layer_types=types,
                                             num_key_value_heads=1, sliding_window=4))
    return _build("Gemma3ForCausalLM", cfg)


def gemma3n_e4b() -> torch.nn.Module:
    # transformers' defaults are google/gemma-3n-E4B's text config: 35 layers (4 sliding : 1
    # full), the last 15 share K/V, 4 AltUp inputs, activation sparsity 0.95 in layers 0-9
    ref = transformers.Gemma3nTextConfig()
    n = ref.num_hidden_layers
    cfg = transformers.Gemma3nTextConfig(**_w(
        num_hidden_layers=n, layer_types=ref.layer_types, sliding_window=4,
        num_kv_shared_layers=ref.num_kv_shared_layers, vocab_size_per_layer_input=128,
        hidden_size_per_layer_input=8, laurel_rank=8, altup_num_inputs=ref.altup_num_inputs,
        activation_sparsity_pattern=ref.activation_sparsity_pattern,
        intermediate_size=[128] * n, pad_token_id=0))
    return _build("Gemma3nForCausalLM", cfg)


def gemma3n_shared_kv(model: Any) -> dict[int, int]:
    """Gemma 3n: each of the last ``num_kv_shared_layers`` layers reads the K/V of the last
    earlier layer of its attention type (transformers' ``kv_shared_layer_index``)."""
    cfg = model.config
    first_shared = cfg.num_hidden_layers - cfg.num_kv_shared_layers
    out = {}
    for i in range(first_shared, cfg.num_hidden_layers):
        kind = cfg.layer_types[i]
        out[i] = max(j for j in range(first_shared) if cfg.layer_types[j] == kind)
    return out


SPECS: dict[str, StageSpec] = {s.name: s for s in [
    StageSpec("llama3_1_8b", "Llama-3.1-8B (LlamaForCausalLM)", llama3_8b),
    StageSpec("qwen3_8b", "Qwen3-8B (Qwen3ForCausalLM)", qwen3_8b),
    StageSpec("deepseek_v3", "DeepSeek-V3 (DeepseekV3ForCausalLM)", deepseek_v3, moe_patch=True,
              notes=["first_k_dense_replace=3: fused_moe_*_stacked_0 is layer 3's;",
                     "fuse_gemms fuses q_a_proj with kv_a_proj_with_mqa (and gate/up of the 3 dense "
                     "layers); MLA goes the sdpa path (no torch_mla), so its cache is kv_cache_<i>."]),
    StageSpec("glm4_5", "GLM-4.5 (Glm4MoeForCausalLM)", glm4_5, moe_patch=True,
              notes=["92 layers, first_k_dense_replace=3, q/k norms."]),
    StageSpec("llama4_maverick", "Llama 4 Maverick (Llama4ForCausalLM, text)", llama4_maverick,
              notes=["MoE every other layer (interleave_moe_layer_step=2); its bmm experts stay "
                     "as exported (AutoDeploy's match_bmm_moe_pattern is not reproduced), and its "
                     "RMSNorm does not match the re-implemented pattern, so no fused add+norm."]),
    StageSpec("mixtral_8x7b", "Mixtral-8x7B (MixtralForCausalLM)", mixtral_8x7b, moe_patch=True),
    StageSpec("qwen3_moe_30b", "Qwen3-30B-A3B (Qwen3MoeForCausalLM)", qwen3_moe_30b,
              moe_patch=True),
    StageSpec("gpt_oss_20b", "gpt-oss-20b (GptOssForCausalLM)", gpt_oss_20b,
              notes=["eager attention with sinks (match_eager_attention not reproduced: no "
                     "torch_attention, no cache); experts with biases stay as exported."]),
    StageSpec("nemotron_h", "NVIDIA-Nemotron-Nano-9B-v2 layout (NemotronHForCausalLM)",
              nemotron_h, notes=["hybrid_override_pattern " + NEMOTRON_NANO_9B_V2 + " (56 "
                                 "blocks, attention at 14, 21, 30, 39); Mamba mixers stay as "
                                 "exported (no SSM / causal-conv cache insertion)."]),
    StageSpec("bamba_9b", "Bamba-9B (BambaForCausalLM)", bamba_9b,
              notes=["attention at 9, 18, 27: their caches are kv_cache_0/1/2; Mamba2 mixers "
                     "stay as exported."]),
    StageSpec("zamba2_2_7b", "Zamba2-2.7B layout (Zamba2ForCausalLM)", zamba2_2_7b,
              notes=["Zyphra/Zamba2-2.7B's layout: 54 layers, hybrid (shared transformer block + "
                     "Mamba2) at 6, 12, 18, 24, 30, 36, 42, 47, 51, num_mem_blocks=2 (shared "
                     "block 0 used by 6, 18, 30, 42, 51, block 1 by 12, 24, 36, 47), a LoRA "
                     "adapter on the shared MLP's gate/up projection per hybrid layer (rank 8 "
                     "here, 128 in the checkpoint), no shared-attention adapters, no RoPE in "
                     "the shared attention; Mamba2 mixers stay as exported.", SHARED_NAMING]),
    StageSpec("gemma3_1b", "Gemma-3-1B (Gemma3ForCausalLM)", gemma3_1b,
              notes=["26 layers, 5 sliding-window : 1 global (global at 5, 11, 17, 23), one K/V "
                     "head as in the 1B; Gemma's RMSNorm (x * (1 + w), q/k norms included) does "
                     "not match the re-implemented RMSNorm pattern, so its norms stay as "
                     "exported (no 015/049/052)."]),
    StageSpec("gemma3n_e4b", "Gemma-3n-E4B text (Gemma3nForCausalLM)", gemma3n_e4b,
              shared_kv=gemma3n_shared_kv, on_meta=False,
              notes=["transformers' default Gemma 3n text config, which is E4B's: 35 layers, 4 "
                     "sliding : 1 global (global at 4, 9, ..., 34), 4 AltUp inputs, activation "
                     "sparsity 0.95 (Gaussian top-k) in layers 0-9; the last 15 (20-34) reuse "
                     "the K/V cache of the last earlier layer of their kind (18 sliding, 19 "
                     "global; read_cache_only=True, the source layer's kv_cache_<i>, so 20 "
                     "caches for 35 attention ops); without a cache at export their own k/v "
                     "projections still run. Its RMSNorm does not match the re-implemented pattern (no 015/049/052). Exported with real CPU tensors, not on meta "
                     "(the Gaussian top-k's torch.tensor(..., device=meta) fails under "
                     "torch.export), so device arguments print cpu."]),
]}


def patch_moe_experts(model: torch.nn.Module) -> int:
    """AutoDeploy's MoE export patches (``models/patches/``): the stacked experts of every MoE
    block become one ``auto_deploy.torch_moe`` op over per-expert weight lists."""
    n = 0
    for layer in model.model.layers:  # type: ignore[union-attr]
        block = getattr(layer, "mlp", None)
        experts = getattr(block, "experts", None)
        if experts is not None and hasattr(experts, "gate_up_proj"):
            block.experts = split_experts(experts)
            n += 1
    return n


@contextmanager
def export_patches() -> Iterator[None]:
    """AutoDeploy's ``linear`` and ``sdpa`` export patches (export/library/linear.py @ 30d2c50c,
    export/library/sdpa.py @ 9496bfa2)."""
    saved = (F.linear, F.scaled_dot_product_attention)

    def _linear(input, weight, bias=None):  # noqa: A002
        return torch.ops.auto_deploy.torch_linear_simple(input, weight, bias)

    F.linear = _linear
    F.scaled_dot_product_attention = torch.ops.auto_deploy.torch_attention_sdpa
    try:
        yield
    finally:
        F.linear, F.scaled_dot_product_attention = saved


# ----------------------------------------------------------------------------------------------
# writing
# ----------------------------------------------------------------------------------------------

def gz_bytes(text: str) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
        gz.write(text.encode("utf-8"))
    return buf.getvalue()


def graph_of(mod: torch.nn.Module) -> fx.GraphModule:
    return mod if isinstance(mod, fx.GraphModule) else mod._orig_mod  # type: ignore[return-value]


def stage_truth(mod: torch.nn.Module, model: str, arch: str, layers_module: str,
                dump_name: str) -> dict[str, Any]:
    nodes: dict[str, dict[str, Any]] = {}
    for node in graph_of(mod).graph.nodes:
        if node.op in ("get_attr", "output"):
            continue
        if "ad_truth" not in node.meta:
            raise AssertionError(f"{dump_name}: node {node.name} has no truth")
        nodes[node.name] = node.meta["ad_truth"]
    by_layer: dict[int, list[Any]] = {}
    for info in nodes.values():
        if info["layer"] is not None:
            by_layer.setdefault(info["layer"], []).append(info["group"])
    kinds = {str(i): layer_kind(by_layer[i]) for i in sorted(by_layer)}
    return {"model": model, "architecture": arch, "dump": dump_name,
            "layers_module": layers_module, "num_layers": len(kinds), "layer_kinds": kinds,
            "nodes": nodes}


def make_stages(spec: StageSpec, out_root: Path, log: Callable[[str], None] = print
                ) -> list[dict[str, Any]]:
    register_ad_ops()
    out_dir = out_root / spec.name
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in sorted(out_dir.glob("[0-9][0-9][0-9]*_*")):
        old.unlink()
    model = spec.build()
    arch = type(model).__name__
    n_layers = int(model.config.num_hidden_layers)  # type: ignore[union-attr]
    layers_path = decoder_layers_path(model, n_layers)
    maker = TruthMaker(model, layers_path)
    shared_kv = spec.shared_kv(model) if spec.shared_kv else None
    if spec.moe_patch:
        patched = patch_moe_experts(model)
        maker = TruthMaker(model, layers_path)
        log(f"  {spec.name}: {patched} MoE blocks as torch_moe")
    inputs = ad_export.example_inputs(2, 8, int(model.config.vocab_size), seed=0)  # type: ignore
    with export_patches():
        gm = ad_export.export_to_gm(model, inputs, on_meta=spec.on_meta)
    for node in gm.graph.nodes:
        if node.op not in ("get_attr", "output"):
            node.meta["ad_truth"] = maker.node_truth(node)
    rows: list[dict[str, Any]] = []

    def write(transform: str, mod: torch.nn.Module, matches: int) -> None:
        counter, stage = COUNTER[transform], STAGE[transform]
        name = dump_file_name(counter, stage, transform)
        text = dump_text(mod, stage, transform)
        sections = check_dump(name, text)
        truth = stage_truth(mod, spec.name, arch, layers_path, name + ".gz")
        nodes = [n for s in sections for n in s.nodes]
        if nodes != list(truth["nodes"]):
            raise AssertionError(f"{name}: the truth does not name exactly the dump's nodes")
        stem = name[:-len(".txt")]
        (out_dir / f"{name}.gz").write_bytes(gz_bytes(text))
        (out_dir / f"{stem}.truth.json.gz").write_bytes(gz_bytes(format_truth(truth)))
        rows.append({"file": f"{name}.gz", "nodes": len(nodes), "matches": matches,
                     "text_bytes": len(text.encode()),
                     "gz_bytes": (out_dir / f"{name}.gz").stat().st_size
                     + (out_dir / f"{stem}.truth.json.gz").stat().st_size,
                     "sections": [s.name for s in sections],
                     "weights": len(sections[-1].weights)})
        log(f"  {name:<58} nodes={len(nodes):<6} matches={matches}")

    write("export_to_gm", gm, 0)
    steps: list[tuple[str, Callable[[fx.GraphModule], int]]] = [
        ("cleanup_noop_slice", ad_export.cleanup_noop_slice),
        ("cleanup_noop_add", ad_export.cleanup_noop_add),
        ("match_sdpa_to_torch_attention", T.match_sdpa_to_torch_attention),
        ("match_grouped_attention", T.match_grouped_attention),
        ("match_attention_layout", T.match_attention_layout),
        ("match_rmsnorm_pattern", T.match_rmsnorm_pattern),
        ("eliminate_redundant_transposes", T.eliminate_redundant_transposes),
        ("fuse_gemms", T.fuse_gemms),
        ("fuse_moe", T.fuse_moe),
        ("fuse_rmsnorm", T.fuse_rmsnorm),
        ("fuse_add_rms_norm", T.fuse_add_rms_norm),
        ("insert_cached_attention", lambda g: T.insert_cached_attention(g, shared_kv)),
    ]
    for transform, fn in steps:
        matches = fn(gm)
        if matches:
            T.clean(gm)
            write(transform, gm, matches)
    write("compile_model", T.compile_model(gm), 1)
    return rows


def truth_text(path: Path) -> dict[str, Any]:
    return json.loads(gzip.decompress(path.read_bytes()).decode("utf-8"))


# ----------------------------------------------------------------------------------------------
# README of the fixture directory
# ----------------------------------------------------------------------------------------------

README_HEAD = """# Multi-stage AutoDeploy dump fixtures (full-depth models)

Written by `tools/make_ad_stages.py` (do not edit by hand). Each directory is an
`AD_DUMP_GRAPHS_DIR`-style dump directory of one Hugging Face architecture at its **real layer
count and layer-type pattern** (tiny widths: hidden 64, 4 query / 2 KV heads unless the model's notes say
otherwise, 4-8 experts; bf16),
exported the way AutoDeploy's `export_to_gm` exports (with its `linear`, `sdpa` and, for the MoE
models marked below, per-expert `torch_moe` export patches) and taken through re-implementations
of AutoDeploy's transforms (`tools/model_dumps/ad_transforms.py`, each citing the TensorRT-LLM
file and commit it follows), in the order of TensorRT-LLM's `config/default.yaml` @ 0034d905
(66 dumps; `build_model` writes none). Only the stages where the graph changed are written, plus
the export and the final `066_compile_compile_model`; the counters are the real ones, so gaps
are transforms that matched nothing (their dumps would repeat the previous one).

Files per stage: `NNN_<stage>_<transform>.txt.gz` (the dump, in the exact text of AutoDeploy's
graph writer, gzip without timestamp) and `NNN_<stage>_<transform>.truth.json.gz` (the truth
format of `tests/fixtures/dumps/README.md`: per printed node its `layer`, `module`, `class`,
`group`). Read them with `tools/model_dumps/stage_check.py` (standard library only):
`iter_stages(dir)` yields (path, text, truth) per stage; `check_stage_dir(dir)` checks every line
and that each truth names exactly its dump's nodes.

## How truth is carried

At export, each node's truth comes from `nn_module_stack` (`tools/model_dumps/truth.py`). It is
kept in the node's `meta` and travels with the node: FX keeps a node, its name and its meta
until a transform replaces it. Then:

- a node a transform inserts takes the truth of the node it replaces (`torch_attention`,
  `torch_rmsnorm` -> `flashinfer_rms_norm`, `trtllm_moe_fused` and its `aten.to`, the
  layout transposes, `flashinfer_attention_mha_with_cache`);
- a fused GEMM (`fuse_gemms`: the fused linear, `split_output`, its `getitem`s) takes the layer
  and group of the linears it fuses, module = their common module path, class null;
- `flashinfer_fused_add_rms_norm_inplace`, which replaces layer N's residual add and layer N+1's
  input norm, takes the add's truth: layer N (its residual output feeding layer N+1); where it
  replaces the last layer's add and the final norm, the last layer; where add and norm are in
  one layer (the post-attention norm), that layer;
- `getitem` of a multi-output node: its producer's truth;
- new placeholders (`kv_cache_<i>`, batch metadata) and the metadata-preparation op with its
  `getitem`s: model-level (all null);
- after `fuse_add_rms_norm` the norm's users read the add's first operand and the sum's users
  read its second (both mutated in place), exactly as AutoDeploy's replacement leaves them, so
  a node's inputs can come from an earlier layer's nodes without that changing its truth.

## Transforms reproduced (the dumps they write)

| counter | transform | what it leaves |
| --- | --- | --- |
| 001 | export_to_gm | `torch_linear_simple`, `torch_attention_sdpa`, `torch_moe` (patched MoE) |
| 002 / 003 | cleanup_noop_slice / cleanup_noop_add | no-op slices / zero adds removed |
| 010 | match_sdpa_to_torch_attention | `auto_deploy.torch_attention.default(q, k, v, mask, dropout, causal, scale, None, None, None, 'bnsd')` |
| 011 | match_grouped_attention | repeat_kv chains before K/V folded away (GQA) |
| 012 | match_attention_layout | `transpose.int` of q/k/v into bsnd, layout `'bsnd'`, output transposed back |
| 015 | match_rmsnorm_pattern | `auto_deploy.torch_rmsnorm.default(x, weight, eps)` |
| 017 | eliminate_redundant_transposes | transpose pairs removed |
| 038 | fuse_gemms (switched on) | `fused_weight_<idx>` (idx counts fused groups), fused linear, `split_output`, `getitem`s |
| 045 | fuse_moe | `fused_moe_w3_w1_stacked_<k>` / `fused_moe_w2_stacked_<k>` (k counts MoE ops), `aten.to`, `auto_deploy.trtllm_moe_fused` (packets) |
| 049 | fuse_rmsnorm | `auto_deploy.flashinfer_rms_norm` (packet) |
| 052 | fuse_add_rms_norm | `auto_deploy.flashinfer_fused_add_rms_norm_inplace.default(x, residual, weight, eps)` -> None |
| 055 | insert_cached_attention | metadata placeholders, `flashinfer_attention_prepare_metadata` + 2 `getitem`s, `kv_cache_<i>` (i counts attention ops), `flashinfer_attention_mha_with_cache.default` |
| 066 | compile_model | torch-compile backend: the graph under `# GraphModule: _orig_mod` |

Not reproduced (those parts of the graph stay as exported): RoPE matching, MLA (`torch_mla`;
DeepSeek-V3's attention goes the sdpa path), the Llama-4 bmm MoE matcher, gpt-oss's and
Nemotron-H's experts (not gated-MLP per-expert lists), Mamba/SSM, causal-conv and delta-rule
cache insertion, eager-attention matching (gpt-oss, whose attention stays eager and uncached),
Gemma's RMSNorm variants (Gemma-3, Gemma-3n: their norms stay as exported).

## Models

"""


def _kinds_summary(kinds: list[str]) -> str:
    runs: list[str] = []
    i = 0
    while i < len(kinds):
        j = i
        while j + 1 < len(kinds) and kinds[j + 1] == kinds[i]:
            j += 1
        runs.append(f"{i}-{j} {kinds[i]}" if j > i else f"{i} {kinds[i]}")
        i = j + 1
    summary = "; ".join(runs)
    if len(summary) > 160:
        from collections import Counter
        summary = ", ".join(f"{n}x {k}" for k, n in Counter(kinds).items()) + " (see notes)"
    return summary


def write_readme(out_root: Path, command: str, runtime: str) -> None:
    """The fixture directory's README: every directory written through to the final stage,
    and in it every file, with its node count and its size in bytes."""
    from .stage_check import check_stage_dir, stage_files, truth_path
    lines = [README_HEAD]
    lines.append("| directory | model | layers (kinds at export) | stages written "
                 "| nodes export -> final | size (gz) |\n")
    lines.append("| --- | --- | --- | --- | --- | --- |\n")
    total = n_files = 0
    details = []
    for name, spec in SPECS.items():
        d = out_root / name
        if not d.is_dir() or not stage_files(d) or \
                not stage_files(d)[-1].name.startswith(f"{COUNTER['compile_model']:03d}_"):
            continue  # absent, or not written through to the final stage
        rows = check_stage_dir(d)
        files = stage_files(d)
        size = sum(p.stat().st_size + truth_path(p).stat().st_size for p in files)
        total += size
        n_files += 2 * len(files)
        first = json.loads(gzip.decompress(truth_path(files[0]).read_bytes()))
        kinds = [first["layer_kinds"][str(i)] for i in range(first["num_layers"])]
        stages = ", ".join(r["file"].split("_", 1)[0] for r in rows)
        lines.append(f"| `{name}/` | {spec.title} | {len(kinds)}: {_kinds_summary(kinds)} | "
                     f"{stages} | {rows[0]['nodes']} -> {rows[-1]['nodes']} | "
                     f"{size / 1e6:.2f} MB |\n")
        block = [f"### `{name}/` ({2 * len(files)} files, {size:,} bytes)\n\n"]
        if spec.notes:
            block.append(" ".join(spec.notes) + "\n\n")
        block.append("| stage | nodes | `.txt.gz` bytes | `.truth.json.gz` bytes |\n")
        block.append("| --- | --- | --- | --- |\n")
        for path, row in zip(files, rows, strict=True):
            stem = path.name[:-len(".txt.gz")]
            block.append(f"| `{stem}` | {row['nodes']} | {path.stat().st_size:,} | "
                         f"{truth_path(path).stat().st_size:,} |\n")
        details.append("".join(block) + "\n")
    lines.append(f"\nTotal: {n_files} files, {total / 1e6:.2f} MB.\n\n## Files per directory\n\n")
    lines.extend(details)
    lines.append(f"## Regenerate\n\n```\npip install torch==2.13.0 transformers==5.23.0\n"
                 f"{command}\n```\n\nMade with torch 2.13.0 (CPU) and transformers 5.23.0; "
                 f"byte-identical from one run to the next. {runtime}\n\n"
                 "Agreement of the product's layer assignment with this truth, per stage: "
                 "`.venv/bin/python tools/ad_stages_report.py`.\n")
    (out_root / "README.md").write_text("".join(lines), encoding="utf-8")
