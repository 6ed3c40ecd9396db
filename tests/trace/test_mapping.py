"""Kernels mapped to FX nodes, checked against the generator's ground truth per node."""
from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from tb_ad_layer.trace.ingest import ingest_trace
from tb_ad_layer.trace.kernel_map import load_kernel_map
from tb_ad_layer.trace.mapping import LayerNodes
from tests.trace.helpers import FIXTURES, expected, expected_outcome, layers_from_truth, load_truth


@pytest.mark.parametrize("trace, truth", [
    ("dsv3_decode.sqlite", "dsv3_decode.truth.json"),
    ("dsv3_prefill.sqlite", "dsv3_prefill.truth.json"),
    ("dsv3_prefill.pt.trace.json.gz", "dsv3_prefill.truth.json"),
    ("dsv3_decode_2gpu_2021.sqlite", "dsv3_decode_2gpu_2021.truth.json"),
    ("dsv3_decode_inline.sqlite", "dsv3_decode_inline.truth.json"),
    ("dsv3_decode_nodeids.pt.trace.json.gz", "dsv3_decode_nodeids.truth.json"),
])
def test_every_kernel_maps_to_its_ground_truth_node(trace: str, truth: str) -> None:
    gt = load_truth(FIXTURES / truth)
    result = ingest_trace(FIXTURES / trace, layers_from_truth(gt))
    checked = 0
    for k in result.kernels:
        rec = expected(gt, k)
        assert rec is not None, k
        assert (k.layer, k.node) == expected_outcome(rec), (k.short, k.stream_key, k.unmapped_reason)
        checked += 1
    assert checked == len(result.kernels) > 100
    assert result.info.mapped_share == pytest.approx(
        1.0 - sum(1 for r in gt["kernels"] if r["short"] == "mystery_kernel" and r["pass"] in (0, 1)
                  and (gt["phase"] == "decode") == (r["pass"] == 0)) / max(1, len(
            [k for k in result.kernels if k.layer is not None and k.kind == "kernel"])), abs=1e-3)


def test_profiler_trace_without_node_ids_maps_same_multiset() -> None:
    gt = load_truth(FIXTURES / "dsv3_decode.truth.json")
    result = ingest_trace(FIXTURES / "dsv3_decode.pt.trace.json.gz", layers_from_truth(gt))
    # Profiler spelling differs from nsys short names, so compare (layer, node, kind) multisets.
    got = Counter((k.layer, k.node, k.kind) for k in result.kernels)
    want = Counter(expected_outcome(r) + (r["kind"],) for r in gt["kernels"])
    assert got == want


def test_nodes_without_stream_hints_still_map(generate: Callable[..., dict[str, Path]]) -> None:
    gt = load_truth(FIXTURES / "dsv3_decode.truth.json")
    result = ingest_trace(FIXTURES / "dsv3_decode.sqlite", layers_from_truth(gt, with_streams=False))
    for k in result.kernels:
        assert (k.layer, k.node) == expected_outcome(expected(gt, k))


def test_unmapped_reasons() -> None:
    gt = load_truth(FIXTURES / "dsv3_decode.truth.json")
    layers = layers_from_truth(gt)
    # Drop the fused MoE node of layer 2 and one of the fp8 linears of layer 3.
    layers[2].nodes = [n for n in layers[2].nodes if "trtllm_moe_fused" not in n.op]
    q_b = [n for n in layers[3].nodes if "finegrained_fp8_linear" in n.op][1]
    layers[3].nodes = [n for n in layers[3].nodes if n is not q_b]
    result = ingest_trace(FIXTURES / "dsv3_decode.sqlite", layers)
    reasons = {(k.layer, k.short, k.unmapped_reason) for k in result.kernels if k.node is None}
    assert (2, "mystery_kernel", "no kernel-map row matches kernel family mystery_kernel") in reasons
    assert (2, "[CUDA memset]", "memcpy/memset") in reasons
    assert (None, "indexSelectLargeIndex", "outside any layer") in reasons
    assert (
        2,
        "finalizeKernelVecLoad",
        "no op in layer matches kernel family finalizeKernelVecLoad",
    ) in reasons
    assert (3, "scale_1x128_kernel", "more scale_1x128_kernel kernels than matching ops in layer") in reasons
    summary = result.layer_summaries[2]
    assert {u.reason for u in summary.unmapped} >= {
        "memcpy/memset",
        "no kernel-map row matches kernel family mystery_kernel",
    }
    assert all("<" not in u.kernel or u.kernel.startswith(("vectorized", "unrolled"))
               for u in summary.unmapped)


def test_user_kernel_map_rows_take_precedence(tmp_path: Path) -> None:
    user = tmp_path / "map.json"
    user.write_text(json.dumps([{"op": "mystery_op", "kernels": ["mystery_kernel"], "note": "our own op"}]))
    gt = load_truth(FIXTURES / "dsv3_decode.truth.json")
    result = ingest_trace(FIXTURES / "dsv3_decode.sqlite", layers_from_truth(gt),
                          kernel_map=load_kernel_map(user))
    mystery = [k for k in result.kernels if k.short == "mystery_kernel"]
    assert len(mystery) == 3 and all(k.node and k.node.startswith("mystery_op_default") for k in mystery)
    assert result.info.mapped_share == 1.0


def test_layer_indices_follow_the_graph() -> None:
    gt = load_truth(FIXTURES / "dsv3_decode.truth.json")
    layers = [LayerNodes(layer.index + 10, layer.kind, layer.nodes) for layer in layers_from_truth(gt)]
    result = ingest_trace(FIXTURES / "dsv3_decode.sqlite", layers)
    assert sorted(result.layer_summaries) == [10, 11, 12, 13, 14]
    assert {k.layer for k in result.kernels} == {None, 10, 11, 12, 13, 14}
