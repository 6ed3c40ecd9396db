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
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import torch
import torch.nn.functional as F
import transformers
from torch import fx

from . import ad_export
from . import ad_transforms as T
from .ad_ops import register_ad_ops
from .dump_check import check_dump
from .models import SEED
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

W: dict[str, Any] = dict(vocab_size=128, hidden_size=64, intermediate_size=128,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                         max_position_embeddings=64, use_cache=False)
MAMBA2: dict[str, Any] = dict(mamba_n_heads=8, mamba_d_head=16, mamba_d_state=16,
                              mamba_n_groups=1, mamba_chunk_size=4)


@dataclass
class StageSpec:
    name: str
    title: str
    build: Callable[[], torch.nn.Module]
    moe_patch: bool = False  # AutoDeploy's per-expert torch_moe export patch
    shared_kv: Callable[[Any], dict[int, int]] | None = None
    notes: list[str] = field(default_factory=list)


def _w(**over: Any) -> dict[str, Any]:
    out = dict(W)
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


def zamba2_2_7b() -> torch.nn.Module:
    types = transformers.Zamba2Config().layers_block_type  # 54 layers, hybrid 6 12 ... 47 51
    cfg = transformers.Zamba2Config(**_w(
        num_hidden_layers=len(types), layers_block_type=types, mamba_d_state=16,
        n_mamba_heads=8, chunk_size=4, num_mem_blocks=1, mamba_ngroups=1, adapter_rank=8))
    return _build("Zamba2ForCausalLM", cfg)


def gemma3_1b() -> torch.nn.Module:
    types = transformers.Gemma3TextConfig().layer_types  # 26 layers, 5 sliding : 1 global
    cfg = transformers.Gemma3TextConfig(**_w(num_hidden_layers=len(types), layer_types=types,
                                             sliding_window=4))
    return _build("Gemma3ForCausalLM", cfg)


def gemma3n_e4b() -> torch.nn.Module:
    ref = transformers.Gemma3nTextConfig()  # 35 layers, the last 15 share K/V
    n = ref.num_hidden_layers
    cfg = transformers.Gemma3nTextConfig(**_w(
        num_hidden_layers=n, layer_types=ref.layer_types, sliding_window=4,
        num_kv_shared_layers=ref.num_kv_shared_layers, vocab_size_per_layer_input=128,
        hidden_size_per_layer_input=8, laurel_rank=8, altup_num_inputs=2,
        activation_sparsity_pattern=[0.0] * n, intermediate_size=[128] * n, pad_token_id=0))
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
    StageSpec("deepseek_v3", "DeepSeek-V3 (DeepseekV3ForCausalLM)", deepseek_v3, moe_patch=True),
    StageSpec("glm4_5", "GLM-4.5 (Glm4MoeForCausalLM)", glm4_5, moe_patch=True),
    StageSpec("llama4_maverick", "Llama 4 Maverick (Llama4ForCausalLM, text)", llama4_maverick),
    StageSpec("mixtral_8x7b", "Mixtral-8x7B (MixtralForCausalLM)", mixtral_8x7b, moe_patch=True),
    StageSpec("qwen3_moe_30b", "Qwen3-30B-A3B (Qwen3MoeForCausalLM)", qwen3_moe_30b,
              moe_patch=True),
    StageSpec("gpt_oss_20b", "gpt-oss-20b (GptOssForCausalLM)", gpt_oss_20b),
    StageSpec("nemotron_h", "NVIDIA-Nemotron-Nano-9B-v2 layout (NemotronHForCausalLM)",
              nemotron_h),
    StageSpec("bamba_9b", "Bamba-9B (BambaForCausalLM)", bamba_9b),
    StageSpec("zamba2_2_7b", "Zamba2-2.7B layout (Zamba2ForCausalLM)", zamba2_2_7b),
    StageSpec("gemma3_1b", "Gemma-3-1B (Gemma3ForCausalLM)", gemma3_1b),
    StageSpec("gemma3n_e4b", "Gemma-3n-E4B text (Gemma3nForCausalLM)", gemma3n_e4b,
              shared_kv=gemma3n_shared_kv),
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
        gm = ad_export.export_to_gm(model, inputs)
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
