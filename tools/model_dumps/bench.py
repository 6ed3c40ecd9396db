"""Full-size dumps for the converter benchmark: a 61-layer DeepSeek-V3 and a 48-layer Qwen3-Next.

Both are built on the ``meta`` device with the published model dimensions (no weights exist, so
any size is cheap) and exported like the fixtures (:mod:`ad_export`), with a dynamic batch and
sequence:

- ``dsv3_61l``: DeepseekV3ForCausalLM, 61 layers, MLA, layers 0-2 dense and 3-60 MoE with 256
  routed experts (top-8, 8 groups) and one shared expert; routed experts as AutoDeploy presents
  them (per-expert weight lists into ``auto_deploy.torch_moe``, :mod:`per_expert_moe`);
- ``qwen3_next_48l``: Qwen3NextForCausalLM (80B-A3B dimensions), 48 layers, three gated-delta-net
  layers to one attention layer, MoE with 512 experts and a shared expert; the gated delta rule
  runs with its real chunk size (64), so each GDN layer is about 1,000 nodes.

Each directory gets ``001_export_export_to_gm.txt.gz`` and
``002_post_export_cleanup_noop_slice.txt.gz`` (gzip with a zero timestamp, so reruns are
byte-identical).
"""

from __future__ import annotations

import gzip
import io
from collections.abc import Callable
from pathlib import Path

import torch
import transformers

from . import ad_export
from .dump_check import check_dump
from .models import patch_deepseek_experts
from .writer import dump_file_name, dump_text


def _on_meta(cls_name: str, cfg: object) -> torch.nn.Module:
    cls = getattr(transformers, cls_name)
    with torch.device("meta"):
        model = cls._from_config(cfg, dtype=torch.bfloat16, attn_implementation="sdpa",
                                 experts_implementation="batched_mm")
    return model.eval()


def dsv3_61l() -> torch.nn.Module:
    cfg = transformers.DeepseekV3Config(
        vocab_size=129280, hidden_size=7168, intermediate_size=18432, moe_intermediate_size=2048,
        num_hidden_layers=61, num_attention_heads=128, num_key_value_heads=128,
        n_shared_experts=1, n_routed_experts=256, num_experts_per_tok=8, n_group=8, topk_group=4,
        q_lora_rank=1536, kv_lora_rank=512, qk_rope_head_dim=64, qk_nope_head_dim=128,
        v_head_dim=128, head_dim=64, first_k_dense_replace=3, max_position_embeddings=4096,
        use_cache=False)
    model = _on_meta("DeepseekV3ForCausalLM", cfg)
    patch_deepseek_experts(model, check_logits=False)
    return model


def qwen3_next_48l() -> torch.nn.Module:
    types = ["linear_attention", "linear_attention", "linear_attention", "full_attention"] * 12
    cfg = transformers.Qwen3NextConfig(
        vocab_size=151936, hidden_size=2048, intermediate_size=5120, num_hidden_layers=48,
        layer_types=types, num_attention_heads=16, num_key_value_heads=2, head_dim=256,
        linear_num_value_heads=32, linear_num_key_heads=16, linear_key_head_dim=128,
        linear_value_head_dim=128, linear_conv_kernel_dim=4, num_experts=512,
        num_experts_per_tok=10, moe_intermediate_size=512, shared_expert_intermediate_size=512,
        max_position_embeddings=4096, use_cache=False)
    return _on_meta("Qwen3NextForCausalLM", cfg)


BENCH: dict[str, Callable[[], torch.nn.Module]] = {"dsv3_61l": dsv3_61l,
                                                   "qwen3_next_48l": qwen3_next_48l}


def _write_gz(path: Path, text: str) -> None:
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
        gz.write(text.encode("utf-8"))
    path.write_bytes(buf.getvalue())


def make_bench(name: str, out_root: Path) -> list[tuple[str, int, int, int]]:
    """Write one benchmark directory; returns (file, text bytes, gzip bytes, nodes) per stage."""
    model = BENCH[name]()
    out_dir = out_root / name
    out_dir.mkdir(parents=True, exist_ok=True)
    inputs = ad_export.example_inputs(2, 8, int(model.config.vocab_size), seed=0)  # type: ignore[union-attr]
    gm = ad_export.export_to_gm(model, inputs)
    rows = []
    for counter, (stage, transform) in enumerate([("export", "export_to_gm"),
                                                  ("post_export", "cleanup_noop_slice")], 1):
        if counter == 2:
            ad_export.cleanup_noop_slice(gm)
        file_name = dump_file_name(counter, stage, transform)
        text = dump_text(gm, stage, transform)
        nodes = sum(len(s.nodes) for s in check_dump(file_name, text))
        path = out_dir / f"{file_name}.gz"
        _write_gz(path, text)
        rows.append((f"{name}/{path.name}", len(text.encode("utf-8")), path.stat().st_size, nodes))
    return rows
