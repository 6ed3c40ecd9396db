"""Splitting a replay or pass into layers across all its streams, without kernel-name hashes."""
from __future__ import annotations

from collections import Counter

import pytest

from tb_ad_layer.errors import InputError
from tb_ad_layer.trace.graph_nodes import KernelMatcher, LayerNodes, ModelNodes
from tb_ad_layer.trace.kernel import Kernel
from tb_ad_layer.trace.kernel_map import load_kernel_map
from tb_ad_layer.trace.reader import read_trace
from tb_ad_layer.trace.replay import select
from tb_ad_layer.trace.segment import segment_by_repetition, segment_layers
from tests.trace.helpers import FIXTURES, Node, expected, load_truth, model_from_truth

MATCHER = KernelMatcher(load_kernel_map())


def _kernel(short: str, start: int, end: int, stream: int = 7, index: int = 0) -> Kernel:
    return Kernel(name=f"void {short}<int>(int)", short=short, start_ns=start, end_ns=end, device=0, pid=1,
                  context=1, stream=stream, stream_key=f"pid1/dev0/ctx1/s{stream}", index=index)


def _sequence(names: list[str], stream: int = 7) -> list[Kernel]:
    return [_kernel(s, i * 10, i * 10 + 4, stream, i) for i, s in enumerate(names)]


def test_graph_alignment_matches_ground_truth_including_aux_streams() -> None:
    truth = load_truth(FIXTURES / "dsv3_decode.truth.json")
    sel = select(read_trace(FIXTURES / "dsv3_decode.sqlite"))
    seg = segment_layers(sel.kernels, model_from_truth(truth), MATCHER)
    assert seg.method == "graph-alignment" and len(seg.layers) == 5
    for j, layer in enumerate(seg.layers):
        for k in layer:
            assert expected(truth, k)["layer"] == j, (j, k.short, k.stream_key)
    assert {expected(truth, k)["layer"] for k in seg.outside} == {None}
    # The aux stream's work spans every layer boundary, yet each kernel lands in its own layer.
    aux_layers = Counter(
        j for j, layer in enumerate(seg.layers) for k in layer if k.stream_key.endswith("/s23")
    )
    assert aux_layers == {0: 4, 1: 4, 2: 11, 3: 11, 4: 11}


def _attention_layer(index: int) -> LayerNodes:
    nodes = [Node(f"norm_{index}", "auto_deploy.flashinfer_rms_norm.default", "norm", None),
             Node(f"qkv_{index}", "auto_deploy.torch_linear_simple.default", "attention", None),
             Node(f"attn_{index}", "auto_deploy.flashinfer_attention_with_cache.default", "attention", None),
             Node(f"o_{index}", "auto_deploy.torch_linear_simple.default", "attention", None),
             Node(f"mlp_{index}", "auto_deploy.fused_swiglu_mlp.default", "mlp", None)]
    return LayerNodes(index, "attention+mlp", nodes)


def test_a_stream_carrying_one_layers_tail_and_the_next_ones_head() -> None:
    # Layer 0 on stream 11, layer 1 on stream 12; stream 11 also runs layer 1's norm and QKV GEMM,
    # and the MLP's activation of each layer runs on an aux stream. No stream carries every layer.
    layer = [
        "rms_norm",
        "nvjet_gemm",
        "fmha",
        "nvjet_gemm",
        "fp8_quant",
        "deep_gemm",
        "act_and_mul",
        "fp8_quant",
        "deep_gemm",
    ]
    streams = [[11] * 9, [11, 11, 12, 12, 12, 12, 13, 12, 12]]
    ks = [_kernel("embedding_index", 0, 4, 7, 0)]
    t = 10
    for j in range(2):
        for name, stream in zip(layer, streams[j], strict=True):
            ks.append(_kernel(name, t, t + 4, stream, len(ks)))
            t += 10
    ks.append(_kernel("rms_norm", t, t + 4, 12, len(ks)))
    model = ModelNodes([_attention_layer(0), _attention_layer(1)])
    seg = segment_layers(ks, model, MATCHER)
    assert [[k.short for k in layer_ks] for layer_ks in seg.layers] == [layer, layer]
    assert {k.stream for k in seg.layers[1]} == {11, 12, 13}
    assert [k.short for k in seg.outside] == ["embedding_index", "rms_norm"]


def test_layer_count_mismatch_states_both_numbers() -> None:
    truth = load_truth(FIXTURES / "dsv3_decode.truth.json")
    sel = select(read_trace(FIXTURES / "dsv3_decode.sqlite"))
    model = model_from_truth(truth)
    fewer = ModelNodes(model.layers[:3])
    with pytest.raises(InputError, match=r"trace shows 5 repeating layers but the graph has 3 layers"):
        segment_layers(sel.kernels, fewer, MATCHER)
    nothing = [_kernel("a", 0, 5), _kernel("b", 10, 15)]
    with pytest.raises(InputError, match="no repeating per-layer kernel pattern but the graph has 2 layers"):
        segment_layers(nothing, ModelNodes([_attention_layer(0), _attention_layer(1)]), MATCHER)


def test_inferred_layer_count_and_kinds() -> None:
    sel = select(read_trace(FIXTURES / "dsv3_decode.sqlite"))
    seg = segment_layers(sel.kernels)
    assert seg.inferred and seg.method == "repetition" and len(seg.layers) == 5
    assert seg.kinds == ["A", "A", "B", "B", "B"]  # 2 dense, then 3 MoE
    assert 0.8 <= seg.confidence < 0.9  # the dense pattern is seen twice only


def test_repetition_starts_layers_at_their_input_norm() -> None:
    # SGLang-style single-stream replay: layer 0 opens with a plain RMSNorm, later layers with the
    # fused add+RMSNorm that also ends the previous layer's MLP; the epilogue repeats that norm.
    body = [
        "qkv_gemm",
        "rope",
        "store_kv",
        "fmha",
        "o_gemm",
        "fused_add_rmsnorm",
        "gate_up_gemm",
        "act_and_mul",
        "down_gemm",
        "splitKreduce",
    ]
    names = ["embedding"] + ["rmsnorm"] + body
    for _ in range(5):
        names += ["fused_add_rmsnorm"] + body
    names += ["fused_add_rmsnorm", "lm_head_gemm", "copy"]
    seg = segment_layers(_sequence(names))
    assert len(seg.layers) == 6
    assert [k.short for k in seg.layers[0]] == ["rmsnorm"] + body
    assert all([k.short for k in layer] == ["fused_add_rmsnorm"] + body for layer in seg.layers[1:])
    assert [k.short for k in seg.before] == ["embedding"]
    assert [k.short for k in seg.after] == ["fused_add_rmsnorm", "lm_head_gemm", "copy"]


def test_alternating_layer_types_are_one_layer_each() -> None:
    # Sliding and full attention alternate: each attention kernel occurs every other layer, which
    # is no boundary; 8 layers, not 4.
    sliding = ["rmsnorm", "qkv_gemm", "fmha_sliding", "o_gemm", "rmsnorm", "up_gemm", "act", "down_gemm"]
    full = ["rmsnorm", "qkv_gemm", "fmha_full", "o_gemm", "rmsnorm", "up_gemm", "act", "down_gemm"]
    names = ["embedding"] + (sliding + full) * 4 + ["rmsnorm", "lm_head"]
    seg = segment_layers(_sequence(names))
    assert len(seg.layers) == 8 and seg.kinds == ["A", "B"] * 4
    assert [k.short for k in seg.layers[1]] == full


def test_half_layers_are_not_layers() -> None:
    # A norm twice per layer splits attention from MLP: those halves share nothing but the norm.
    layer = ["rmsnorm", "qkv_gemm", "rope", "fmha", "o_gemm", "rmsnorm", "up_gemm", "act", "down_gemm"]
    seg = segment_layers(_sequence(["embedding"] + layer * 6 + ["rmsnorm", "lm_head"]))
    assert len(seg.layers) == 6 and {len(x) for x in seg.layers} == {9}


def test_per_layer_stream_sets_without_a_graph() -> None:
    # Each layer on its own pair of streams, the aux stream racing the main one differently in
    # every layer: the pattern is a multiset per layer, and the streams agree with the cut.
    main = [
        "rmsnorm",
        "q_gemm",
        "rope",
        "fmha",
        "o_gemm",
        "rmsnorm",
        "router",
        "topk",
        "moe_gemm1",
        "moe_act",
        "moe_gemm2",
        "finalize",
    ]
    aux = ["kv_gemm", "kv_norm", "shared_gemm1", "shared_act", "shared_gemm2"]
    ks = [_kernel("embedding", 0, 4, 7, 0)]
    t = 10
    for j in range(6):
        s_main, s_aux = 100 + 2 * j, 101 + 2 * j
        starts = []
        for name in main:
            ks.append(_kernel(name, t, t + 8, s_main, len(ks)))
            starts.append(t)
            t += 10
        for i, name in enumerate(aux):
            at = starts[1 + 2 * i] + (3 if j % 2 else -3)
            ks.append(_kernel(name, at, at + 6, s_aux, len(ks)))
    ks.append(_kernel("rmsnorm", t, t + 4, 7, len(ks)))
    ks.append(_kernel("lm_head", t + 10, t + 14, 7, len(ks)))
    seg = segment_layers(ks)
    assert len(seg.layers) == 6
    assert all(Counter(k.short for k in layer) == Counter(main + aux) for layer in seg.layers)
    assert "streams lie within one layer" in seg.detail and seg.confidence > 0.9


def test_nothing_repeats() -> None:
    seg = segment_layers(_sequence(["a", "b", "c", "d", "e", "f", "g"]))
    assert seg.layers == [] and len(seg.outside) == 7 and "no repeating" in seg.detail
    assert segment_by_repetition(_sequence(["gemm"] * 12)) is None  # one kernel kind is no layer


#: The kernels of a dense layer and of a MoE layer (router, top-k, two grouped GEMMs around the
#: activation, finalize), as one stream runs them.
_DENSE = ["rmsnorm", "qkv_gemm", "rope", "fmha", "o_gemm", "rmsnorm", "up_gemm", "act", "down_gemm"]
_MOE = ["rmsnorm", "qkv_gemm", "rope", "fmha", "o_gemm", "rmsnorm",
        "router", "topk", "moe_gemm1", "moe_act", "moe_gemm2", "finalize"]


def test_dense_and_moe_layers_alternating_are_one_layer_each() -> None:
    # Interleaved MoE (Llama 4): dense and MoE layers alternate, each with its own attention
    # kernel; the MoE-only kernels occur every other layer, which is no boundary.
    moe = _MOE + ["shared_up", "shared_act", "shared_down"]
    seg = segment_layers(_sequence(["embedding"] + (_DENSE + moe) * 12 + ["rmsnorm", "lm_head"]))
    assert len(seg.layers) == 24 and seg.kinds == ["A", "B"] * 12
    assert [len(layer) for layer in seg.layers[:2]] == [9, 15] and seg.confidence > 0.9


def test_a_lone_dense_first_layer_is_layer_0() -> None:
    # DeepSeek-style: one dense layer, then MoE layers; no MoE kernel marks the dense one.
    seg = segment_layers(_sequence(["embedding", "rope_cache"] + _DENSE + _MOE * 10 + ["rmsnorm", "lm_head"]))
    assert len(seg.layers) == 11 and [k.short for k in seg.layers[0]] == _DENSE
    assert seg.kinds == ["A"] + ["B"] * 10 and [k.short for k in seg.before] == ["embedding", "rope_cache"]


def test_sandwich_norms_do_not_split_layers() -> None:
    # Gemma's four norms per layer: the attention and MLP blocks share a norm and a residual add,
    # not an attention kernel; they are halves, and the layer stays whole.
    layer = ["rmsnorm", "qkv_gemm", "rope", "fmha", "o_gemm", "rmsnorm", "add", "rmsnorm", "up_gemm", "act",
             "down_gemm", "rmsnorm", "add"]
    seg = segment_layers(_sequence(["embedding"] + layer * 20 + ["rmsnorm", "lm_head"]))
    assert len(seg.layers) == 20 and {len(x) for x in seg.layers} == {13}
