"""Splitting a replay into layers without model-specific kernel names."""
from __future__ import annotations

from collections import Counter

import pytest

from tb_ad_layer.errors import InputError
from tb_ad_layer.trace.kernel import Kernel
from tb_ad_layer.trace.reader import read_trace
from tb_ad_layer.trace.replay import select
from tb_ad_layer.trace.segment import segment_layers
from tests.trace.helpers import FIXTURES, expected, load_truth


def _kernel(short: str, start: int, end: int, stream: int = 7, index: int = 0) -> Kernel:
    return Kernel(name=f"void {short}<int>(int)", short=short, start_ns=start, end_ns=end, device=0, pid=1,
                  context=1, stream=stream, stream_key=f"pid1/dev0/ctx1/s{stream}", index=index)


def _replay(name: str):
    return select(read_trace(FIXTURES / name)), load_truth(FIXTURES / name.split(".")[0].replace(".pt", "")
                                                           .__add__(".truth.json"))


def test_layers_match_ground_truth_including_aux_streams() -> None:
    sel, truth = _replay("dsv3_decode.sqlite")
    kinds = [truth["layer_kinds"][str(i)] for i in range(truth["num_layers"])]
    seg = segment_layers(sel.kernels, kinds)
    assert len(seg.layers) == 5 and seg.kinds == kinds and seg.consistency == 1.0
    assert seg.main_stream == "pid31337/dev0/ctx1/s7"
    for j, layer in enumerate(seg.layers):
        for k in layer:
            assert expected(truth, k)["layer"] == j, (j, k.short, k.stream_key)
    assert {expected(truth, k)["layer"] for k in seg.outside} == {None}
    # The aux stream's work spans every layer boundary, yet each kernel lands in its own layer.
    aux = [k for k in sel.kernels if k.stream_key.endswith("/s23")]
    assert min(k.start_ns for k in aux) < seg.boundaries_ns[1] < max(k.end_ns for k in aux)
    aux_layers = Counter(j for j, layer in enumerate(seg.layers) for k in layer if k.stream_key.endswith("/s23"))
    assert aux_layers == {0: 4, 1: 4, 2: 11, 3: 11, 4: 11}


def test_aux_kernels_split_at_boundary_by_time() -> None:
    # Two layers: main stream A B C | A B C, one aux stream running X in layer 0 then Y in layer 1.
    main = [_kernel(s, t, t + 5, index=i) for i, (s, t) in enumerate(
        [("emb", 0), ("A", 10), ("B", 20), ("C", 30), ("A", 40), ("B", 50), ("C", 60), ("lmhead", 70)])]
    aux = [_kernel("X", 21, 33, stream=9, index=20), _kernel("Y", 41, 48, stream=9, index=21)]
    seg = segment_layers(main + aux, ["dense", "dense"])
    assert [[k.short for k in layer] for layer in seg.layers] == [["A", "B", "X", "C"], ["A", "Y", "B", "C"]]
    assert [k.short for k in seg.outside] == ["emb", "lmhead"]


def test_rotation_puts_layer_start_before_anchor() -> None:
    # The anchor (attention, once per layer) sits mid-layer; the epilogue starts with a norm like a layer does.
    pattern = ["norm", "gemm", "rope", "attn", "gemm2", "add"]
    seq = ["embed"] + pattern * 3 + ["norm", "lmhead"]
    kernels = [_kernel(s, i * 10, i * 10 + 4, index=i) for i, s in enumerate(seq)]
    seg = segment_layers(kernels, ["dense"] * 3)
    assert [[k.short for k in layer] for layer in seg.layers] == [pattern] * 3
    assert [k.short for k in seg.outside] == ["embed", "norm", "lmhead"]
    assert seg.anchor is not None and seg.consistency == 1.0


def test_rotation_when_epilogue_looks_like_a_layer_head() -> None:
    # Only mid-layer families mark layers; shifting the cut by one also explains the edges
    # (the final norm mimics the layer's opening norm), and the norm start breaks the tie.
    pattern = ["norm", "gemm", "attn", "gemm", "norm", "act", "gemm", "add"]
    seq = ["norm", "norm", "norm", "embed"] + pattern * 3 + ["norm", "gemm"]
    kernels = [_kernel(s, i * 10, i * 10 + 4, index=i) for i, s in enumerate(seq)]
    seg = segment_layers(kernels, ["dense"] * 3)
    assert [[k.short for k in layer] for layer in seg.layers] == [pattern] * 3
    assert [k.short for k in seg.outside] == ["norm", "norm", "norm", "embed", "norm", "gemm"]
    hinted = segment_layers(kernels, ["dense"] * 3, is_layer_start=lambda k: k.short == "norm")
    assert [[k.short for k in layer] for layer in hinted.layers] == [pattern] * 3


def test_inferred_layer_count_and_kinds() -> None:
    sel, _ = _replay("dsv3_decode.sqlite")
    seg = segment_layers(sel.kernels, None)
    assert seg.inferred and len(seg.layers) == 5
    assert seg.kinds == ["A", "A", "B", "B", "B"]  # 2 dense, then 3 MoE


def test_layer_count_mismatch_states_both_numbers() -> None:
    sel, _ = _replay("dsv3_decode.sqlite")
    with pytest.raises(InputError,
                       match=r"trace shows 5 repeating layers but the graph has 7 layers \(2 dense, 5 moe\)"):
        segment_layers(sel.kernels, ["dense"] * 2 + ["moe"] * 5)
    with pytest.raises(InputError, match=r"trace shows 5 repeating layers but the graph has 4 layers \(4 moe\)"):
        segment_layers(sel.kernels, ["moe"] * 4)
    with pytest.raises(InputError, match="no repeating per-layer kernel pattern but the graph has 4 layers"):
        segment_layers([_kernel("a", 0, 5), _kernel("b", 10, 15)], ["dense"] * 4)


def test_zero_duration_and_overlapping_kernels() -> None:
    seq = []
    t = 0
    for layer in range(4):
        for s in ("norm", "gemm", "attn", "add"):
            # Zero-length norms, and every gemm overlapping the next kernel on the same stream.
            dur = 0 if s == "norm" else 15 if s == "gemm" else 5
            seq.append(_kernel(s, t, t + dur, index=len(seq)))
            t += 10
    seg = segment_layers(seq, ["dense"] * 4)
    assert [len(layer) for layer in seg.layers] == [4, 4, 4, 4] and not seg.outside
    assert seg.layers[0][0].duration_ns == 0


def test_trivial_layer_counts() -> None:
    ks = [_kernel("a", 0, 5), _kernel("b", 10, 15)]
    assert segment_layers(ks, []).outside == sorted(ks, key=lambda k: k.start_ns)
    one = segment_layers(ks, ["dense"])
    assert [len(layer) for layer in one.layers] == [2]
    nothing = segment_layers(ks, None)
    assert nothing.layers == [] and len(nothing.outside) == 2
