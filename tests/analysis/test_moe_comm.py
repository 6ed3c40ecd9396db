"""The roofline of fused MoE ops and collectives on stores with known answers, every figure
computed on paper; and the stage's sizes, ``--dim`` over the trace's."""
from __future__ import annotations

from pathlib import Path

import pytest

from tb_ad_layer.contract.analysis import NodeRoofline
from tb_ad_layer.store.records import TraceDimRow
from tests.analysis.builder import K, L, N, build
from tests.analysis.test_report import report

BF16, FP8 = "torch.bfloat16", "torch.float8_e4m3fn"
# AutoDeploy's ad_dsv3 compile stage: trtllm_moe_fused(x fp8 [8, 512], selected_experts int32
# [8, 4], routing_weights bf16 [8, 4], w3_w1 [E=4, 2I=512, H=512], w2 [4, H=512, I=256]).
W31 = ("fused_moe_w3_w1_stacked_0", "4x512x512", FP8)
W2 = ("fused_moe_w2_stacked_0", "4x512x256", FP8)
# One expert: 2*H*I*3 = 2*512*256*3; every token runs top_k = 4 of them.
MOE_FLOPS = 8 * 4 * (2 * 512 * 512 + 2 * 512 * 256)
# All 4 experts touched (8 tokens x 4 >= 4): every weight byte, plus x, the routing and the
# bf16 output.
MOE_BYTES = (4 * 512 * 512 + 4 * 512 * 256) + 8 * 512 + 8 * 4 * 4 + 8 * 4 * 2 + 8 * 512 * 2
H = ("h", "4x7168", BF16)        # 57,344 bytes
H_BYTES = 4 * 7168 * 2


def roof(run: Path, name: str, **options: object) -> NodeRoofline:
    return next(x for x in report(run, **options).roofline if x.node == name)


@pytest.fixture
def moe_run(tmp_path: Path) -> Path:
    externals = [("to", "8x512", FP8), ("sub", "8x4", "torch.int32"), ("mul_70", "8x4", BF16),
                 ("x1", "1x512", BF16), ("sel1", "1x4", "torch.int32"), ("rw1", "1x4", BF16),
                 ("xl", "4x512", BF16), ("sell", "4x4", "torch.int64"), ("rwl", "4x4", BF16)]
    experts = [(f"model_layers_2_mlp_experts_{e}_{p}_proj_weight", "?", "unknown")
               for e in range(4) for p in ("gate", "up", "down")]
    nodes = [N("trtllm_moe_fused", "auto_deploy.trtllm_moe_fused", "moe", "moe_experts",
               inputs=["to", "sub", "mul_70"], weights=[W31, W2], shape="8x512"),
             # one decode token over 8 experts: at most top_k = 4 of them are read
             N("decode_moe", "auto_deploy.triton_moe_fused.default", "moe", "moe_experts",
               inputs=["x1", "sel1", "rw1"],
               weights=[("w31", "8x512x512", BF16), ("w2", "8x512x256", BF16)], shape="1x512"),
             # torch_moe's per-expert weights come in lists, which the dump prints no shape for
             N("torch_moe", "auto_deploy.torch_moe.default", "moe", "moe_experts",
               inputs=["xl", "sell", "rwl"], weights=experts, shape="4x512"),
             N("align", "auto_deploy.moe_align_block_size.default", "moe", "moe_router",
               inputs=["sub"], shape="8x4", dtype="torch.int32")]
    kernels = [K("moe_gemm", 0, 10, node="trtllm_moe_fused", median=10),
               K("fused_moe_kernel", 10, 14, node="decode_moe", median=4),
               K("index_add", 14, 20, node="torch_moe", median=6),
               K("moe_align", 20, 21, node="align", median=1)]
    return build(tmp_path, "moe", [L(0, "mla+moe", nodes, externals)], kernels,
                 gpu="NVIDIA H100 80GB HBM3")


def test_fused_moe_flops_are_tokens_times_top_k_times_one_experts_matrices(moe_run: Path) -> None:
    r = roof(moe_run, "trtllm_moe_fused")
    assert r.flops == MOE_FLOPS and r.bytes == MOE_BYTES and r.reason is None
    assert r.formula == (
        "moe tokens*top_k*(sum of 2*N*K over one expert's matrices), tokens=8 top_k=4 experts=4 "
        "H=512 per-expert FLOPs=786432 (4x512x512; 4x512x256); weight bytes of 4 of 4 experts "
        "(all experts touched: tokens*top_k >= experts)")
    # 10 µs: 2.52 TFLOP/s over 1.59 MB; intensity 15.9 FLOP/byte, under the H100's fp8 ridge.
    assert r.achieved_tflops == pytest.approx(MOE_FLOPS / 10e-6 / 1e12, abs=1e-4)
    assert r.bound == "memory"


def test_a_decode_token_touches_only_its_top_k_experts(moe_run: Path) -> None:
    r = roof(moe_run, "decode_moe")
    assert r.flops == 1 * 4 * (2 * 512 * 512 + 2 * 512 * 256)
    # half of the 8 experts' bf16 weights, plus x, the routing and the output
    weights = (8 * 512 * 512 + 8 * 512 * 256) * 2
    assert r.bytes == weights * 4 / 8 + 512 * 2 + 4 * 4 + 4 * 2 + 512 * 2
    assert r.formula.endswith("weight bytes of 4 of 8 experts (tokens*top_k experts touched at "
                              "most: tokens*top_k < experts)")


def test_moe_weights_without_shapes_say_so_and_routing_ops_count_bytes(moe_run: Path) -> None:
    r = roof(moe_run, "torch_moe")
    assert r.flops is None and r.bound is None
    assert r.reason == ("MoE experts' weights are passed as a list whose shapes the dump does "
                        "not print")
    align = roof(moe_run, "align")
    assert align.flops is None and align.bytes == 2 * 8 * 4 * 4 and align.bound == "memory"


@pytest.fixture
def comm_run(tmp_path: Path) -> Path:
    externals = [H, ("res", "4x7168", BF16), ("g", "4x1024", BF16), ("rs", "8x1024", BF16)]
    nodes = [N("ar", "auto_deploy.trtllm_dist_all_reduce.default", "other", inputs=["h"],
               shape="4x7168"),
             N("fused_ar", "dist.trtllm_fused_allreduce_residual_rmsnorm.default", "norm",
               inputs=["h", "res"], weights=[("norm_weight", "7168", BF16)],
               shape="(4x7168, 4x7168)", dtype="(torch.bfloat16, torch.bfloat16)"),
             N("ag", "auto_deploy.torch_dist_all_gather.default", "other", inputs=["g"],
               shape="4x4096"),
             N("rsc", "auto_deploy.torch_dist_reduce_scatter.default", "other", inputs=["rs"],
               shape="2x1024")]
    kernels = [K("ncclDevKernel_AllReduce_Sum_bf16", 0, 20, node="ar", median=20),
               K("allreduce_fusion_kernel", 20, 30, node="fused_ar", median=10),
               K("ncclDevKernel_AllGather", 30, 38, node="ag", median=8),
               K("ncclDevKernel_ReduceScatter", 38, 42, node="rsc", median=4)]
    return build(tmp_path, "comm", [L(0, "attention+mlp", nodes, externals)], kernels)


def test_all_reduce_bus_bytes_need_the_world_size(comm_run: Path) -> None:
    # The trace records one GPU: a rank's all-reduce does not say how many ranks there are.
    r = roof(comm_run, "ar")
    assert r.bytes is None and r.bound is None and r.world_size is None
    assert r.reason == ("all-reduce: world size unknown (the trace records one GPU): pass "
                        "--dim world_size=N")
    r = roof(comm_run, "ar", dims={"world_size": 4})
    # ring all-reduce: 2(n-1)/n x S = 1.5 x 57,344 bytes in 20 µs
    assert r.bytes == 1.5 * H_BYTES and r.world_size == 4 and r.bound == "communication"
    assert r.achieved_bus_gbs == pytest.approx(1.5 * H_BYTES / 20e-6 / 1e9, abs=1e-4)
    assert r.achieved_tflops is None and r.flops is None and r.peak_share is None
    assert r.formula == "all-reduce bus bytes 2(n-1)/n x S, n=4 (--dim world_size), S=57344 B of " \
                        "the input"


def test_a_multi_gpu_trace_gives_the_world_size(tmp_path: Path) -> None:
    nodes = [N("ar", "auto_deploy.torch_dist_all_reduce.default", "other", inputs=["h"],
               shape="4x7168")]
    run = build(tmp_path, "two", [L(0, "attention+mlp", nodes, [H])],
                [K("ncclDevKernel_AllReduce_Sum_bf16", 0, 20, node="ar", median=20)],
                devices=[0, 1])
    r = roof(run, "ar")
    assert r.world_size == 2 and r.bytes == 1.0 * H_BYTES
    assert "n=2 (the trace's 2 GPUs)" in r.formula


def test_fused_all_reduce_gather_and_scatter(comm_run: Path) -> None:
    fused = roof(comm_run, "fused_ar", dims={"world_size": 2})
    assert fused.bytes == H_BYTES and fused.achieved_bus_gbs == pytest.approx(
        H_BYTES / 10e-6 / 1e9, abs=1e-4)
    assert fused.formula.endswith("(the fused residual add and norm not counted)")
    # all-gather: n = output / input = 4, (n-1)/n of the gathered 32,768 bytes
    ag = roof(comm_run, "ag")
    assert ag.world_size == 4 and ag.bytes == 0.75 * 4 * 4096 * 2
    assert "n=4 (the ratio of its output to its input)" in ag.formula
    # reduce-scatter: n = input / output = 4, (n-1)/n of the 16,384 input bytes
    rsc = roof(comm_run, "rsc")
    assert rsc.world_size == 4 and rsc.bytes == 0.75 * 8 * 1024 * 2


def test_dim_takes_precedence_over_the_trace_and_each_size_says_where(tmp_path: Path) -> None:
    w = ("model_layers_0_mlp_up_proj_weight", "2048x7168", BF16)
    nodes = [N("up", "auto_deploy.torch_linear_simple.default", "mlp", inputs=["xs"],
               weights=[w], shape="s70xs3x2048")]
    rows = [TraceDimRow("s3", 2, "auto_deploy::torch_linear_simple at up (layer 0)"),
            TraceDimRow("s70", 4, "auto_deploy::torch_linear_simple at up (layer 0)")]
    run = build(tmp_path, "sym", [L(0, nodes=nodes, externals=[("xs", "s70xs3x7168", BF16)])],
                [K("nvjet_gemm", 0, 10, node="up", median=10)], trace_dims=rows)
    r = report(run, dims={"s70": 8})
    up = next(x for x in r.roofline if x.node == "up")
    assert up.flops == 2 * (8 * 2) * 2048 * 7168
    assert [(s.symbol, s.value, s.source, s.detail) for s in up.sizes] == [
        ("s70", 8, "dim", "--dim s70=8"),
        ("s3", 2, "trace", "auto_deploy::torch_linear_simple at up (layer 0)")]
    assert [(d.symbol, d.value) for d in r.trace_dims or []] == [("s3", 2), ("s70", 4)]
    assert r.dims == {"s70": 8}


def test_per_expert_weights_with_shapes_count_one_expert(tmp_path: Path) -> None:
    # Two experts, each a gate and up [I=32, H=64] and a down [64, 32]: 2*H*I*3 per expert.
    weights = [(f"model_layers_2_mlp_experts_{e}_{p}_proj_weight", s, BF16)
               for e in range(2) for p, s in (("gate", "32x64"), ("up", "32x64"),
                                              ("down", "64x32"))]
    nodes = [N("moe", "auto_deploy.torch_moe.default", "moe", "moe_experts",
               inputs=["x", "sel", "rw"], weights=weights, shape="4x64")]
    externals = [("x", "4x64", BF16), ("sel", "4x2", "torch.int64"), ("rw", "4x2", BF16)]
    run = build(tmp_path, "listed", [L(0, "attention+moe", nodes, externals)],
                [K("index_add", 0, 5, node="moe", median=5)])
    r = roof(run, "moe")
    assert r.flops == 4 * 2 * (2 * 64 * 32 * 3)
    assert r.bytes == 6 * 32 * 64 * 2 + 4 * 64 * 2 + 4 * 2 * 8 + 4 * 2 * 2 + 4 * 64 * 2
