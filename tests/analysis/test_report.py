"""``tb-ad-layer report`` on stores with known answers: every figure computed on paper."""
from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from tb_ad_layer.analysis.categories import load_categories
from tb_ad_layer.analysis.commands import open_run
from tb_ad_layer.analysis.report import ReportOptions, parse_dims, report_for_store
from tb_ad_layer.contract.analysis import LayerBreakdown, Report
from tb_ad_layer.errors import InputError
from tb_ad_layer.store.records import HostCallRow, MemcpyRow
from tests.analysis.builder import US, K, L, N, build

X = ("x", "4x7168", "torch.bfloat16")
W = ("model_layers_0_mlp_up_proj_weight", "2048x7168", "torch.bfloat16")
# 2*M*N*K and the bytes of x, the weight and the output, all bf16.
GEMM_FLOPS = 2 * 4 * 2048 * 7168
GEMM_BYTES = (4 * 7168 + 2048 * 7168 + 4 * 2048) * 2


def report(run: Path, **options: object) -> Report:
    store = open_run(str(run))
    try:
        return report_for_store(store, ReportOptions(**options))  # type: ignore[arg-type]
    finally:
        store.close()


def layer(r: Report, index: int) -> LayerBreakdown:
    return next(b for b in r.layers if b.layer == index)


@pytest.fixture
def gemm_run(tmp_path: Path) -> Path:
    nodes = [N("up", "auto_deploy.torch_linear_simple.default", "mlp", inputs=["x"], weights=[W],
               shape="4x2048"),
             N("up_sym", "auto_deploy.torch_linear_simple.default", "mlp", inputs=["xs"],
               weights=[W], shape="s70x2048"),
             N("norm", "auto_deploy.flashinfer_rms_norm.default", "norm", inputs=["x"],
               shape="4x7168")]
    kernels = [K("nvjet_gemm", 0, 10, node="up", median=10, p90=10.2, p99=10.4, max=11),
               K("nvjet_gemm", 10, 20, node="up_sym", median=10, p90=10.2, p99=10.4, max=11),
               K("rms_norm_kernel", 20, 22, node="norm", median=2, p90=2.1, p99=2.2, max=3)]
    return build(tmp_path, "gemm", [L(0, nodes=nodes, externals=[X, ("xs", "s70x7168",
                                                                   "torch.bfloat16")])],
                 kernels, gpu="NVIDIA H100 80GB HBM3")


def test_gemm_flops_and_bytes_are_2mnk_and_its_operands(gemm_run: Path) -> None:
    r = report(gemm_run)
    up = next(x for x in r.roofline if x.node == "up")
    assert up.flops == GEMM_FLOPS and up.bytes == GEMM_BYTES
    assert up.formula == "gemm 2*M*N*K, M=4 N=2048 K=7168"
    # 10 µs: 29.4 MB at 2.94 TB/s, intensity 4 FLOP/byte, far below the H100's ridge.
    assert up.achieved_tbs == pytest.approx(GEMM_BYTES / 10e-6 / 1e12, abs=1e-4)
    assert up.achieved_tflops == pytest.approx(GEMM_FLOPS / 10e-6 / 1e12, abs=1e-4)
    assert up.bound == "memory" and up.peak_share == pytest.approx(GEMM_BYTES / 10e-6 / 3.35e12,
                                                                   abs=1e-4)
    assert r.gpu.name == "NVIDIA H100 80GB HBM3" and r.gpu.source == "trace"
    assert r.gpu.peak_tbs == 3.35 and r.gpu.peak_tflops["bf16"] == 989
    norm = next(x for x in r.roofline if x.node == "norm")
    assert norm.flops is None and norm.bytes == 2 * 4 * 7168 * 2 and norm.bound == "memory"


def test_symbolic_sizes_are_never_guessed(gemm_run: Path) -> None:
    sym = next(x for x in report(gemm_run).roofline if x.node == "up_sym")
    assert sym.flops is None and sym.bound is None
    assert sym.reason == ("symbolic size s70 (the trace records no input shapes (profile with "
                          "record_shapes=True)): pass --dim s70=N")
    assert [(x.symbol, x.value, x.source) for x in sym.sizes] == [("s70", None, "unknown")]
    given = next(x for x in report(gemm_run, dims={"s70": 4}).roofline if x.node == "up_sym")
    assert given.flops == GEMM_FLOPS and given.bytes == GEMM_BYTES and given.reason is None
    assert [(x.symbol, x.value, x.source, x.detail) for x in given.sizes] == [
        ("s70", 4, "dim", "--dim s70=4")]


def test_gpu_option_overrides_the_trace_and_an_unknown_one_is_refused(gemm_run: Path) -> None:
    r = report(gemm_run, gpu="B200")
    assert r.gpu.source == "option" and r.gpu.peak_tbs == 8.0
    with pytest.raises(InputError, match="not in the GPU table"):
        report(gemm_run, gpu="Voodoo 3")
    assert parse_dims(["s70=1024", "kv_len=8"]) == {"s70": 1024, "kv_len": 8}
    with pytest.raises(InputError, match="expected NAME=N"):
        parse_dims(["s70"])


@pytest.fixture
def moe_run(tmp_path: Path) -> Path:
    nodes = [N("router", "trtllm.noaux_tc_op.default", "moe", "moe_router"),
             N("experts", "auto_deploy.trtllm_moe_fused", "moe", "moe_experts"),
             N("shared", "auto_deploy.torch_linear_simple.default", "moe", "shared_experts"),
             N("ar", "auto_deploy.trtllm_dist_all_reduce.default", "moe"),
             N("attn", "auto_deploy.flashinfer_mla_with_cache.default", "mla")]
    kernels = [K("fmhaSm100", 0, 12, node="attn", median=12),
               K("deepseek_v3_topk", 12, 14, node="router", median=2),
               # shared experts on stream B beside the routed experts on A
               K("nvjet_gemm", 14, 20, node="shared", stream="B", median=6),
               K("bmm_E4m3", 14, 30, node="experts", median=16),
               # compute [0, 30) on A, communication [20, 45) on B: 10 µs hidden, 15 exposed
               K("ncclDevKernel_AllReduce_Sum_bf16", 20, 45, node="ar", stream="B", median=25),
               K("[CUDA memcpy DtoD]", 45, 46, node=None, median=1)]
    return build(tmp_path, "moe", [L(0, "mla+moe", nodes)], kernels)


def test_breakdown_by_group_and_category_with_memory_apart(moe_run: Path) -> None:
    r = report(moe_run)
    b = layer(r, 0)
    assert b.kind == "mla+moe" and b.gpu_time_us == 62.0 and b.memory_us == 1.0
    assert {g.group: g.gpu_time_us for g in b.groups} == {"moe": 49.0, "mla": 12.0,
                                                          "unmapped": 1.0}
    assert {c.category: c.gpu_time_us for c in b.categories} == {
        "communication": 25.0, "moe_experts": 16.0, "attention": 12.0, "shared_experts": 6.0,
        "moe_router": 2.0, "memory": 1.0}
    assert r.step.gpu_time_us == 62.0 and r.step.memory_us == 1.0
    assert r.step.kernel_count == 5 and r.step.memory_op_count == 1
    assert r.step.span_us == 46.0 and r.step.idle_us == 0.0
    a, bb = sorted(b.streams, key=lambda s: s.stream)
    assert (a.busy_us, a.idle_us) == (31.0, 15.0) and (bb.busy_us, bb.idle_us) == (31.0, 15.0)


def test_overlap_hidden_and_exposed_communication(moe_run: Path) -> None:
    o = layer(report(moe_run), 0).overlap
    assert (o.compute_us, o.communication_us, o.hidden_us, o.exposed_us) == (30.0, 25.0, 10.0,
                                                                             15.0)
    assert o.overlap_share == 0.4
    # the all-reduce [20, 45) is hidden while compute runs on A until 30: exposed from 30 to 45
    ar = next(s for s in layer(report(moe_run), 0).critical_path.steps if s.start_us == 20.0)
    assert [(x.kernel_id, x.stream, x.start_us, x.end_us) for x in o.exposed] == [
        (ar.kernel_id, ar.stream, 30.0, 45.0)]
    f = next(f for f in report(moe_run).findings if f.kind == "exposed_communication")
    assert f.time_at_stake_us == 15.0 and f.layer == 0


def test_critical_path_follows_the_latest_predecessor(moe_run: Path) -> None:
    cp = layer(report(moe_run), 0).critical_path
    # memcpy [45,46) <- all-reduce [20,45) <- shared experts [14,20) <- topk [12,14) <- fmha [0,12)
    assert [(s.start_us, s.end_us) for s in cp.steps] == [(0, 12), (12, 14), (14, 20), (20, 45),
                                                         (45, 46)]
    assert cp.span_us == 46.0 and cp.busy_us == 46.0 and cp.wait_us == 0.0


def test_categories_are_data_a_user_file_comes_first(moe_run: Path, tmp_path: Path) -> None:
    extra = tmp_path / "cats.json"
    extra.write_text(json.dumps([{"category": "my_router", "kernel": "topk"}]))
    r = report(moe_run, categories=extra)
    assert "my_router" in {c.category for c in layer(r, 0).categories}
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"category": "x"}]))
    with pytest.raises(InputError, match="needs at least one of"):
        load_categories(bad)


@pytest.fixture
def tail_run(tmp_path: Path) -> Path:
    nodes = [N("steady", "aten.mul.Tensor"), N("jittery", "aten.add.Tensor")]
    kernels = [K("elementwise", 0, 10, node="steady", median=10, p90=10.2, p99=10.5, max=11,
                 replays=100),
               K("elementwise", 10, 20, node="jittery", median=10, p90=12, p99=20, max=31,
                 replays=100)]
    return build(tmp_path, "tails", [L(0, nodes=nodes)], kernels)


def test_tails_flag_p99_far_above_the_median(tail_run: Path) -> None:
    r = report(tail_run)
    jittery, steady = r.tails
    assert (jittery.node, jittery.p50_us, jittery.p90_us, jittery.p99_us, jittery.max_us) == (
        "jittery", 10.0, 12.0, 20.0, 31.0)
    assert jittery.flagged and not steady.flagged and jittery.replays == 100
    assert jittery.kernels[0].p99_us == 20.0
    top = r.findings[0]
    assert top.kind == "tail" and top.node == "jittery" and top.time_at_stake_us == 10.0


@pytest.fixture
def host_run(tmp_path: Path) -> Path:
    nodes = [N("a", "aten.mul.Tensor"), N("b", "aten.add.Tensor"), N("c", "aten.sub.Tensor")]
    kernels = [K("k", 0, 10, node="a", median=10, correlation=1),
               K("k", 50, 60, node="b", median=10, correlation=2),
               K("k", 100, 110, node="c", median=10, correlation=3),
               K("k", 130, 131, node=None, layer=None, median=1, correlation=4)]
    calls = [HostCallRow(-5 * US, -4 * US, 9, 1, "cudaLaunchKernel", "runtime"),
             HostCallRow(-3 * US, -2 * US, 9, 2, "cudaLaunchKernel", "runtime"),
             # the host waits from 12 to 48 µs: the GPU idles 10..50 for it
             HostCallRow(12 * US, 48 * US, 9, 5, "cudaStreamSynchronize", "sync"),
             # launched at 95 µs, after the GPU went idle at 60: a late launch
             HostCallRow(95 * US, 97 * US, 9, 3, "cudaLaunchKernel", "runtime"),
             HostCallRow(98 * US, 99 * US, 9, 4, "cudaGraphLaunch", "runtime")]
    copies = [MemcpyRow(130 * US, 131 * US, None, 4, "HtoD", 4096, "Pageable", "Device"),
              MemcpyRow(131 * US, 132 * US, None, 6, "DtoH", 64, "Device", "Pinned")]
    return build(tmp_path, "host", [L(0, nodes=nodes)], kernels, host_calls=calls,
                 memcpy=copies)


def test_a_host_sync_and_a_late_launch_explain_gaps(host_run: Path) -> None:
    h = report(host_run).host
    assert h.runtime_recorded and h.launches == 4 and h.graph_launches == 1
    assert h.sync_calls == 1 and h.sync_us == 36.0
    sync, late, other = h.gaps
    assert (sync.start_us, sync.duration_us, sync.cause, sync.call, sync.node) == (
        10.0, 40.0, "sync", "cudaStreamSynchronize", "b")
    assert (late.start_us, late.duration_us, late.cause, late.call, late.node) == (
        60.0, 40.0, "late_launch", "cudaLaunchKernel", "c")
    assert (other.duration_us, other.cause) == (20.0, "unexplained")
    assert h.idle_us == 100.0 and h.explained_us == 80.0
    assert sorted((c.direction, c.pageable, c.count, c.bytes) for c in h.copies or []) == [
        ("DtoH", False, 1, 64), ("HtoD", True, 1, 4096)]
    kinds = [f.kind for f in report(host_run).findings]
    assert kinds[:3] == ["host_gap", "host_gap", "idle"] and "pageable_copy" in kinds


def test_tables_a_trace_lacks_are_absent_and_the_rest_is_reported(moe_run: Path) -> None:
    r = report(moe_run)
    assert not r.host.runtime_recorded and r.host.launches is None and r.host.copies is None
    assert any("no CUDA runtime rows" in n for n in r.notes)
    assert any("no peak for the GPU" in n for n in r.notes)
    assert r.layers and r.step.gpu_time_us > 0


def test_json_decodes_as_the_contract(moe_run: Path) -> None:
    from tb_ad_layer.contract.record import encode

    r = report(moe_run)
    again = msgspec.json.decode(encode(r), type=Report)
    assert again == r
    first = r.layers[0]
    assert {"layer", "kind", "gpu_time_us", "groups", "categories"} <= set(
        msgspec.structs.asdict(first))


def test_attention_from_heads_head_size_and_kv_length(tmp_path: Path) -> None:
    q = ("q", "1x32x4x128", "torch.bfloat16")  # bsnd: B=1, S=32, H=4, D=128
    k = ("k", "1x32x2x128", "torch.bfloat16")  # H_kv=2, S_kv=32 from the k input
    v = ("v", "1x32x2x128", "torch.bfloat16")
    cache = ("kv_cache_0", "100x64x2x128", "torch.bfloat16")
    nodes = [N("sdpa", "auto_deploy.torch_attention.default", "attention", inputs=["q", "k", "v"],
               shape="1x32x4x128", args="%q, %k, %v, None, 0.0, True, bsnd"),
             N("cached", "auto_deploy.flashinfer_attention_mha_with_cache.default", "attention",
               inputs=["q", "k", "v", "kv_cache_0"], shape="1x32x4x128", args="bsnd")]
    kernels = [K("fmha", 0, 4, node="sdpa", median=4), K("fmha", 4, 8, node="cached", median=4)]
    run = build(tmp_path, "attn", [L(0, nodes=nodes, externals=[q, k, v, cache])], kernels)
    sdpa = next(x for x in report(run).roofline if x.node == "sdpa")
    assert sdpa.flops == 4 * 1 * 4 * 32 * 32 * 128
    assert sdpa.bytes == (2 * 32 * 4 * 128 + 2 * 32 * 2 * 128) * 2
    cached = next(x for x in report(run).roofline if x.node == "cached")
    assert cached.flops is None and "--dim kv_len=N" in (cached.reason or "")
    given = next(x for x in report(run, dims={"kv_len": 4096}).roofline if x.node == "cached")
    assert given.flops == 4 * 1 * 4 * 32 * 4096 * 128 and "S_kv=4096" in given.formula


def test_the_analysis_reads_the_run_store_only() -> None:
    import subprocess
    import sys

    code = ("import sys, tb_ad_layer.analysis.commands, tb_ad_layer.analysis.report, "
            "tb_ad_layer.analysis.diff; print(sorted(m for m in sys.modules if m.startswith("
            "('tb_ad_layer.dump', 'tb_ad_layer.layers', 'tb_ad_layer.trace'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_markdown_names_the_findings(moe_run: Path) -> None:
    from tb_ad_layer.analysis.markdown import report_markdown

    text = report_markdown(report(moe_run))
    assert text.startswith("# Where the time goes: moe (stage 0, decode)")
    assert "| 1 | 15.0 | exposed_communication | 0 |" in text


def test_a_fused_gated_mlp_is_the_sum_of_its_gemms_with_scales_as_bytes(tmp_path: Path) -> None:
    weights = [("gate_up_weight", "256x512", "torch.float8_e4m3fn"),
               ("down_proj_weight", "512x128", "torch.float8_e4m3fn"),
               ("gate_up_weight_scale", "2x4", "torch.float32")]
    nodes = [N("mlp", "auto_deploy.fused_finegrained_fp8_swiglu_mlp.default", "mlp",
               inputs=["h"], weights=weights, shape="2x4x512")]
    run = build(tmp_path, "mlp", [L(0, nodes=nodes, externals=[("h", "2x4x512",
                                                                 "torch.bfloat16")])],
                [K("deep_gemm_fp8", 0, 10, node="mlp", median=10)], gpu="H200")
    r = next(x for x in report(run).roofline if x.node == "mlp")
    assert r.flops == 2 * 8 * 256 * 512 + 2 * 8 * 512 * 128
    assert r.bytes == 8 * 512 * 2 + 256 * 512 + 512 * 128 + 2 * 4 * 4 + 8 * 512 * 2
    assert r.formula == "2 gemms, sum of 2*M*N*K, M=8 N=256 K=512; N=512 K=128"
    assert r.bound == "memory"  # fp8 intensity 4.2 FLOP/byte, the H200's ridge is 412
