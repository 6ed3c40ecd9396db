"""Pure pieces: timeline merging, node matching, gzip negotiation, parameter parsing."""
from __future__ import annotations

from itertools import pairwise

import msgspec
import pytest
from werkzeug.test import EnvironBuilder
from werkzeug.wrappers import Request

from tb_ad_layer.contract.api import CompareSide
from tb_ad_layer.contract.document import ExternalInput, LayerDocument, LayerNode, Weight
from tb_ad_layer.layers.weights import weight_role
from tb_ad_layer.plugin.compare import compare_docs, match_nodes
from tb_ad_layer.plugin.data import parse_float, parse_int
from tb_ad_layer.plugin.errors import ApiError
from tb_ad_layer.plugin.responses import accepts_gzip, safe_filename
from tb_ad_layer.plugin.timeline import KernelIndex
from tb_ad_layer.plugin.timeline import timeline as timeline_answer
from tb_ad_layer.store.records import KernelSpan, StreamRow

STREAMS = [StreamRow("s1", "GPU 0 · stream 1", 0, 1, 1, 1),
           StreamRow("s2", "GPU 0 · stream 2", 0, 1, 1, 2)]


def index(rows: list[tuple]) -> KernelIndex:
    """rows: (id, start_ns, end_ns, stream, layer)."""
    return KernelIndex.from_rows(STREAMS, [KernelSpan(st, i, f"k{i}", f"k{i}", s, e, 0, layer,
                                                      f"n{i}") for i, s, e, st, layer in rows])


def timeline(idx: KernelIndex, layer: int | None, start_us: float | None,
             end_us: float | None, max_items: int = 4000) -> dict:
    return msgspec.to_builtins(timeline_answer(idx, "r", layer, start_us, end_us, max_items))


def test_timeline_overlaps_count_once_and_long_kernels_reach_into_windows() -> None:
    idx = index([(1, 0, 10_000, "s1", 0), (2, 2_000, 4_000, "s1", 0),
                 (3, 20_000, 21_000, "s1", 1), (4, 0, 50_000, "s2", 1)])
    out = timeline(idx, None, None, None)
    s1 = out["streams"][0]
    assert s1["busy_us"] == 11.0 and s1["kernel_count"] == 3
    assert out["start_us"] == 0 and out["end_us"] == 50.0
    # A window after kernel 1's start but inside it still shows kernel 1.
    win = timeline(idx, None, 5.0, 6.0)
    assert [k["id"] for k in win["streams"][0]["kernels"]] == [1]
    assert [k["id"] for k in win["streams"][1]["kernels"]] == [4]
    assert win["streams"][0]["busy_us"] == 1.0 and win["streams"][0]["busy_share"] == 1.0
    # Per layer, lanes hold only that layer's kernels and keep stream order.
    one = timeline(idx, 1, None, None)
    assert [s["stream"] for s in one["streams"]] == ["s1", "s2"]
    assert [k["id"] for k in one["streams"][0]["kernels"]] == [3]
    assert timeline(idx, 7, None, None)["streams"] == []


def test_timeline_buckets_conserve_count_and_busy_time() -> None:
    rows = [(i, i * 1000, i * 1000 + 600, "s1", 0) for i in range(1000)]
    rows.append((5000, 100, 999_000, "s2", 0))
    out = timeline(index(rows), None, None, None, max_items=50)
    s1, s2 = out["streams"]
    assert out["lod"] is True and s1["kernels"] == [] and len(s1["buckets"]) == 50
    assert sum(b["count"] for b in s1["buckets"]) == 1000
    assert sum(b["busy_us"] for b in s1["buckets"]) == pytest.approx(600.0, abs=0.05)
    assert s2["kernels"] and s2["buckets"] == []  # one kernel: below the limit
    edges = [(b["start_us"], b["end_us"]) for b in s1["buckets"]]
    assert all(a[1] == pytest.approx(b[0], abs=0.002) for a, b in pairwise(edges))


def test_timeline_empty_window_and_zero_width() -> None:
    idx = index([(1, 1000, 2000, "s1", 0)] * 3)
    out = timeline(idx, None, 1.5, 1.5, max_items=1)
    assert out["lod"] is True and out["streams"][0]["buckets"][0]["count"] == 3
    assert timeline(idx, None, 10.0, 20.0)["streams"][0]["kernels"] == []


def node(nid: str, op: str, weights: tuple[str, ...] = (), inputs: tuple[str, ...] = (),
         shape: str = "2x8", group: str = "mla", time_us: float = 0.0) -> LayerNode:
    return LayerNode(id=nid, op=op, label=op, node_kind="call", shape=shape,
                     dtype="torch.bfloat16", group=group, sub_group=None, stream="main",
                     inputs=list(inputs), args="", line=0, kernels=[], time_us=time_us,
                     weights=[Weight(name=w, shape="8x8", dtype="torch.bfloat16",
                                     role=weight_role(w))
                              for w in weights])


def doc(nodes: list[LayerNode], external: tuple[str, ...] = ()) -> LayerDocument:
    return LayerDocument(layer=0, kind="moe", attention="mla", source_file="f.txt",
                         module="(root)", nodes=nodes, edges=[], external_inputs=[
                             ExternalInput(id=e, label="residual", kind="residual", shape="2x8",
                                           dtype="torch.bfloat16", layer=None)
                             for e in external],
                         group_counts={}, trace_summary=None, doubts=[])


def compare(a: LayerDocument, b: LayerDocument) -> dict:
    side = CompareSide(run="r", stage=0, layer=0, time_us=0.0)
    return msgspec.to_builtins(compare_docs(side, a, side, b))


def test_matching_uses_weight_roles_then_position() -> None:
    a = [node("mm_1", "aten.mm", ("model_layers_3_q_proj_weight",)),
         node("mm_2", "aten.mm", ("model_layers_3_k_proj_weight",)),
         node("add_1", "aten.add", inputs=("mm_1", "mm_2")),
         node("add_2", "aten.add", inputs=("add_1",))]
    b = [node("mm_9", "aten.mm", ("model_layers_40_k_proj_weight",)),
         node("mm_8", "aten.mm", ("model_layers_40_q_proj_weight",)),
         node("add_5", "aten.add", inputs=("mm_8", "mm_9")),
         node("relu", "aten.relu")]
    assert match_nodes(a, b) == {"mm_1": "mm_8", "mm_2": "mm_9", "add_1": "add_5"}
    out = compare(doc(a), doc(b))
    assert out["only_a"] == ["add_2"] and out["only_b"] == ["relu"]
    assert {m["a"]: m["status"] for m in out["matches"]} == {
        "mm_1": "same", "mm_2": "same", "add_1": "same"}


def test_changed_nodes_and_deltas() -> None:
    a = [node("x", "aten.mm", ("layers_1_w",), group="moe", time_us=10.0),
         node("y", "aten.add", inputs=("x", "res"), group="moe", time_us=2.0)]
    b = [node("x", "aten.mm", ("layers_2_w",), shape="4x8", group="moe", time_us=8.0),
         node("y", "aten.add", inputs=("res", "x"), group="moe", time_us=2.0)]
    out = compare(doc(a, ("res",)), doc(b, ("res",)))
    changes = {m["a"]: m["changes"] for m in out["matches"]}
    assert changes == {"x": ["shape"], "y": ["inputs"]}
    assert out["counts"] == {"same": 0, "changed": 2, "only_a": 0, "only_b": 0}
    assert out["groups"] == [{"group": "moe", "a_us": 12.0, "b_us": 10.0, "delta_us": -2.0,
                              "delta_pct": -16.7}]
    assert out["layer"]["delta_pct"] == -16.7
    zero = compare(doc([]), doc([]))
    assert zero["layer"] == {"a_us": 0.0, "b_us": 0.0, "delta_us": 0.0, "delta_pct": None}


@pytest.mark.parametrize("header, ok", [
    ("gzip", True), ("gzip, deflate, br", True), ("br;q=1.0, gzip;q=0.8", True), ("*", True),
    ("GZIP", True), ("x-gzip", True), ("gzip;q=0", False), ("gzip;q=0.0", False),
    ("identity", False), ("", False), ("gzipper", False), ("deflate", False),
])
def test_accepts_gzip(header: str, ok: bool) -> None:
    req = Request(EnvironBuilder(headers={"Accept-Encoding": header}).get_environ())
    assert accepts_gzip(req) is ok


def test_parsers_and_filenames() -> None:
    assert parse_int("12", "layer", []) == 12 and parse_int(3, "layer", []) == 3
    for bad in ("", None, " 1", "1 ", "0x1", "1.0", "+1", "١", True):
        with pytest.raises(ApiError):
            parse_int(bad, "layer", [])
    assert parse_float("1.5e2", "x") == 150.0 and parse_float(None, "x") is None
    assert parse_float("-.5", "x") == -0.5
    for bad in ("nan", "inf", "-Infinity", "1e999", "1,5", "0x10", "1_000"):
        with pytest.raises(ApiError):
            parse_float(bad, "x")
    assert safe_filename('a"b\r\nc<d>.json') == "a_b_c_d_.json"
    assert safe_filename("../..") == "download"
