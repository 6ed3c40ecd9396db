"""The data layer through its route handlers: every endpoint's answer and every refusal."""
from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import msgspec
import pytest

from tb_ad_layer.contract.document import LayerDocument
from tb_ad_layer.export.seed_json import to_seed_json
from tb_ad_layer.layers.weights import weight_role
from tb_ad_layer.plugin.data import PluginData
from tb_ad_layer.plugin.errors import ApiError
from tb_ad_layer.store.reader import RunStore
from tb_ad_layer.store.schema import SCHEMA_VERSION
from tb_ad_layer.store.writer import store_path
from tests.plugin.conftest import answer, call
from tests.plugin.fake_trace import AUX, MAIN


@pytest.fixture
def data(logdir: Path) -> PluginData:
    return PluginData(logdir)


def refused(status: int, data: PluginData, path: str, **params: object) -> ApiError:
    with pytest.raises(ApiError) as info:
        call(data, path, **params)
    assert info.value.status == status, info.value.message
    assert "\n" not in info.value.message
    return info.value


def test_runs_lists_every_run_with_metadata(data: PluginData) -> None:
    runs = {r["run"]: r for r in call(data, "runs")["runs"]}
    assert list(runs) == ["dsv3", "llama", "traced/decode", "traced/faster"]
    dsv3 = runs["dsv3"]
    assert dsv3["error"] is None and dsv3["model"] == "ad_dsv3"
    assert dsv3["schema_version"] == SCHEMA_VERSION == 7
    assert [s["index"] for s in dsv3["stages"]] == [0, 1, 2, 3] and dsv3["default_stage"] == 3
    assert dsv3["stages"][3] == {"index": 3, "file": "085_compile_compile_model.txt",
                                 "stage": "compile", "transform": "compile_model",
                                 "module": "(root)", "node_count": 219, "doubts": []}
    assert [(row["layer"], row["kind"]) for row in dsv3["layers"]] == [
        (0, "mla+mlp"), (1, "mla+mlp"), (2, "mla+moe"), (3, "mla+moe"), (4, "mla+moe")]
    assert all(row["gpu_time_us"] is None for row in dsv3["layers"]) and dsv3["trace"] is None
    traced = runs["traced/decode"]
    assert traced["trace"]["phase"] == "decode" and traced["trace"]["num_streams"] == 2
    assert all(row["gpu_time_us"] > 0 for row in traced["layers"])


def test_layer_is_the_stored_document_plus_run_and_stage(data: PluginData, logdir: Path) -> None:
    doc = call(data, "layer", run="dsv3", stage=3, layer=2)
    stored = RunStore(store_path(logdir, "dsv3")).layer_doc_text(3, 2)
    assert doc["run"] == "dsv3" and doc["stage"] == 3 and doc["layer"] == 2
    assert doc["rank"] is None  # a run without a trace has no rank
    assert {k: v for k, v in doc.items() if k not in ("run", "stage", "rank")} == json.loads(stored)
    assert call(data, "layer", run="dsv3", layer=2) == doc
    assert call(data, "layer", run="dsv3", stage="last", layer=2) == doc
    assert call(data, "layer", run="dsv3", stage=0, layer=2)["stage"] == 0
    node = doc["nodes"][0]
    for key in ("id", "op", "label", "node_kind", "shape", "dtype", "group", "sub_group",
                "inputs", "weights", "kernels", "time_us"):
        assert key in node
    assert doc["trace_summary"] is None


def test_layer_with_trace_has_kernels_and_summary(data: PluginData) -> None:
    doc = call(data, "layer", run="traced/decode", layer=3)
    with_kernels = [n for n in doc["nodes"] if n["kernels"]]
    assert with_kernels and all(n["time_us"] > 0 for n in with_kernels)
    k = with_kernels[0]["kernels"][0]
    assert set(k) == {"kernel", "name", "duration_us", "replay_duration_us", "stream",
                      "start_us", "stats"}
    assert doc["trace_summary"]["num_streams"] == 2


@pytest.mark.parametrize("args, status, known", [
    (("nope", None, 1), 404, ["dsv3", "llama", "traced/decode", "traced/faster"]),
    ((None, None, 1), 400, ["dsv3", "llama", "traced/decode", "traced/faster"]),
    (("dsv3", None, None), 400, [0, 1, 2, 3, 4]),
    (("dsv3", None, "x"), 400, [0, 1, 2, 3, 4]),
    (("dsv3", None, "1.5"), 400, [0, 1, 2, 3, 4]),
    (("dsv3", None, "99"), 404, [0, 1, 2, 3, 4]),
    (("dsv3", None, "-1"), 404, [0, 1, 2, 3, 4]),
    (("dsv3", "9", 1), 404, [0, 1, 2, 3]),
    (("dsv3", "first", 1), 400, [0, 1, 2, 3]),
    (("dsv3", "1e3", 1), 400, [0, 1, 2, 3]),
    (("dsv3", "99999999999999999999", 1), 400, [0, 1, 2, 3]),
])
def test_layer_refusals_name_what_exists(data: PluginData, args: tuple, status: int,
                                         known: list) -> None:
    err = refused(status, data, "layer", **dict(zip(("run", "stage", "layer"), args, strict=False)))
    assert err.known == known and err.body().error == err.message


@pytest.mark.parametrize("run", ["../dsv3", "/dsv3", "dsv3/", "./dsv3", "dsv3/plugins/ad_layer",
                                 "dsv3/plugins/ad_layer/run.sqlite", "traced", "traced%2Fdecode",
                                 "traced\\decode", "DSV3", "dsv3\x00", str(Path("/etc"))])
def test_run_names_are_only_matched_never_resolved(data: PluginData, run: str) -> None:
    refused(404, data, "layer", run=run, layer=1)


def test_overview(data: PluginData) -> None:
    plain = call(data, "overview", run="dsv3")
    assert plain["stage"] == 3 and [row["layer"] for row in plain["layers"]] == [0, 1, 2, 3, 4]
    assert plain["none_node_count"] > 0
    assert plain["layers"][2]["groups"] == {} and plain["layers"][2]["group_counts"]["moe"] > 0
    traced = call(data, "overview", run="traced/decode")
    layer = traced["layers"][3]
    assert layer["gpu_time_us"] > 0 and layer["groups"]["moe"] > 0
    assert abs(sum(layer["groups"].values()) - layer["gpu_time_us"]) < 0.01
    assert call(data, "overview", run="dsv3", stage=0)["stage"] == 0
    refused(404, data, "overview", run="dsv3", stage="4")


def test_stages_diff_one_layer_through_the_pipeline(data: PluginData, logdir: Path) -> None:
    out = call(data, "stages", run="dsv3", layer="3")
    stages = out["stages"]
    assert [s["index"] for s in stages] == [0, 1, 2, 3]
    assert stages[0]["added"] == stages[0]["removed"] == stages[0]["changed"] == []
    store = RunStore(store_path(logdir, "dsv3"))
    for prev, cur in pairwise(stages):
        a = {n["id"]: n for n in store.nodes(prev["index"], 3)}
        b = {n["id"]: n for n in store.nodes(cur["index"], 3)}
        assert cur["node_count"] == len(b)
        assert set(cur["added"]) == set(b) - set(a)
        assert set(cur["removed"]) == set(a) - set(b)
        expect = {k for k in set(a) & set(b) if any(a[k][f] != b[k][f] for f in
                                                     ("op", "shape", "dtype", "inputs"))}
        assert set(cur["changed"]) == expect
    assert any(s["added"] or s["removed"] for s in stages[1:])
    refused(400, data, "stages", run="dsv3")
    refused(404, data, "stages", run="dsv3", layer="17")


def test_timeline_one_layer(data: PluginData) -> None:
    out = call(data, "timeline", run="traced/decode", layer="3")
    assert out["lod"] is False and out["layer"] == 3
    lanes = {s["stream"]: s for s in out["streams"]}
    assert list(lanes) == [MAIN, AUX]
    assert lanes[MAIN]["label"] == "GPU 0 · stream 7" and lanes[MAIN]["device"] == 0
    kernels = [k for s in out["streams"] for k in s["kernels"]]
    assert kernels and all(k["layer"] == 3 for k in kernels)
    assert {"id", "kernel", "name", "start_us", "duration_us", "layer", "node"} <= set(kernels[0])
    assert min(k["start_us"] for k in kernels) == out["start_us"]
    assert max(k["start_us"] + k["duration_us"] for k in kernels) == pytest.approx(out["end_us"])
    for lane in out["streams"]:
        starts = [k["start_us"] for k in lane["kernels"]]
        assert starts == sorted(starts)
        assert 0 < lane["busy_share"] <= 1 and lane["buckets"] == []
    doc = call(data, "layer", run="traced/decode", layer=3)
    assert len(kernels) == doc["trace_summary"]["kernel_count"]


def test_timeline_window_and_lod(data: PluginData) -> None:
    whole = call(data, "timeline", run="traced/decode")
    assert {k["layer"] for s in whole["streams"] for k in s["kernels"]} == {0, 1, 2, 3, 4}
    mid = round((whole["start_us"] + whole["end_us"]) / 2, 3)  # a whole ns, as the API counts
    part = call(data, "timeline", run="traced/decode", start_us=mid, end_us=mid + 20)
    assert part["start_us"] == pytest.approx(mid) and part["end_us"] == pytest.approx(mid + 20)
    for lane in part["streams"]:
        for k in lane["kernels"]:
            assert k["start_us"] <= mid + 20 and k["start_us"] + k["duration_us"] >= mid
    n_main = next(s for s in whole["streams"] if s["stream"] == MAIN)["kernel_count"]
    lod = call(data, "timeline", run="traced/decode", max_items=10)
    assert lod["lod"] is True
    main = next(s for s in lod["streams"] if s["stream"] == MAIN)
    assert main["kernels"] == [] and 0 < len(main["buckets"]) <= 10
    assert sum(b["count"] for b in main["buckets"]) == n_main
    assert sum(b["busy_us"] for b in main["buckets"]) == pytest.approx(main["busy_us"], abs=0.01)
    width = main["buckets"][0]["end_us"] - main["buckets"][0]["start_us"]
    assert all(b["end_us"] - b["start_us"] == pytest.approx(width, abs=0.002)
               for b in main["buckets"])


def test_timeline_without_trace_is_empty(data: PluginData) -> None:
    out = call(data, "timeline", run="dsv3", layer="1")
    assert out["streams"] == [] and out["lod"] is False


@pytest.mark.parametrize("args, status", [
    (("traced/decode", "9"), 404), (("traced/decode", "x"), 400),
    (("traced/decode", None, "abc"), 400), (("traced/decode", None, "nan"), 400),
    (("traced/decode", None, "inf"), 400), (("traced/decode", None, "1e999"), 400),
    (("traced/decode", None, "10", "5"), 400), (("traced/decode", None, None, None, "0"), 400),
    (("traced/decode", None, None, None, "x"), 400),
    (("traced/decode", None, None, None, "1000001"), 400), (("nope",), 404),
])
def test_timeline_refusals(data: PluginData, args: tuple, status: int) -> None:
    refused(status, data, "timeline",
            **dict(zip(("run", "layer", "start_us", "end_us", "max_items"), args, strict=False)))


def test_compare_same_layer_with_itself(data: PluginData) -> None:
    out = call(data, "compare", a_run="dsv3", a_layer=3, b_run="dsv3", b_layer=3)
    assert out["counts"]["changed"] == out["counts"]["only_a"] == out["counts"]["only_b"] == 0
    assert all(m["a"] == m["b"] and m["status"] == "same" for m in out["matches"])


def test_compare_matches_across_layers_by_weight_role(data: PluginData) -> None:
    # Two MoE layers before the last (whose fused add+norm applies the final norm's weight).
    out = call(data, "compare", a_run="dsv3", a_layer=2, b_run="dsv3", b_layer=3)
    doc2 = call(data, "layer", run="dsv3", layer=2)
    assert out["a"] == {"run": "dsv3", "stage": 3, "layer": 2, "time_us": 0.0}
    by_a = {m["a"]: m["b"] for m in out["matches"]}
    nodes4 = {n["id"]: n for n in call(data, "layer", run="dsv3", layer=3)["nodes"]}
    for n in doc2["nodes"]:
        if n["weights"] and n["id"] in by_a:
            # Stored at conversion: the converter's rule, which the compare reads.
            assert all(w["role"] == weight_role(w["name"]) for w in n["weights"])
            roles = sorted(w["role"] for w in n["weights"])
            other = sorted(w["role"] for w in nodes4[by_a[n["id"]]]["weights"])
            assert roles == other and roles != sorted(w["name"] for w in n["weights"])
    assert out["counts"]["same"] + out["counts"]["changed"] == len(out["matches"])
    assert len(out["matches"]) + out["counts"]["only_a"] == len(doc2["nodes"])
    assert len(out["matches"]) >= 40


def test_compare_dense_against_moe_reports_unmatched(data: PluginData) -> None:
    out = call(data, "compare", a_run="dsv3", a_layer=1, b_layer=3)
    assert out["b"]["run"] == "dsv3"  # b_run defaults to a_run
    assert out["only_b"] and out["counts"]["only_b"] == len(out["only_b"])


def test_compare_time_deltas(data: PluginData) -> None:
    out = call(data, "compare", a_run="traced/decode", a_layer=3, b_run="traced/faster",
               b_layer=3)
    assert out["counts"]["changed"] == 0 and out["counts"]["only_a"] == 0
    assert out["layer"]["delta_us"] < 0 and -11 < out["layer"]["delta_pct"] < -9
    assert out["a"]["time_us"] == out["layer"]["a_us"]
    moe = next(g for g in out["groups"] if g["group"] == "moe")
    assert moe["delta_us"] == pytest.approx(moe["b_us"] - moe["a_us"], abs=0.002)
    timed = [m for m in out["matches"] if m["a_time_us"] > 0]
    assert timed and all(m["delta_us"] < 0 for m in timed)


def test_compare_different_stage(data: PluginData) -> None:
    out = call(data, "compare", a_run="dsv3", a_stage=0, a_layer=3, b_run="dsv3", b_stage=3,
               b_layer=3)
    assert out["a"]["stage"] == 0 and out["b"]["stage"] == 3
    assert out["counts"]["only_a"] > 0  # unfused export graph has more nodes


@pytest.mark.parametrize("kwargs, status", [
    ({"a_run": None, "a_layer": 1, "b_layer": 1}, 400),
    ({"a_run": "nope", "a_layer": 1, "b_layer": 1}, 404),
    ({"a_run": "dsv3", "a_layer": 1, "b_run": "nope", "b_layer": 1}, 404),
    ({"a_run": "dsv3", "a_layer": None, "b_layer": 1}, 400),
    ({"a_run": "dsv3", "a_layer": 1, "b_layer": "x"}, 400),
    ({"a_run": "dsv3", "a_layer": 1, "b_layer": 7}, 404),
    ({"a_run": "dsv3", "a_stage": "8", "a_layer": 1, "b_layer": 1}, 404),
    ({"a_run": "dsv3", "a_layer": 1, "b_stage": "y", "b_layer": 1}, 400),
])
def test_compare_refusals(data: PluginData, kwargs: dict, status: int) -> None:
    refused(status, data, "compare", **kwargs)


def test_downloads(data: PluginData) -> None:
    seed = answer(data, "download/layer.json", run="dsv3", layer=3)
    assert seed.filename == "085_compile_compile_model_layer3.json"
    body = json.loads(seed.body)
    doc = call(data, "layer", run="dsv3", layer=3)
    stored = msgspec.convert({k: v for k, v in doc.items() if k not in ("run", "stage", "rank")},
                             LayerDocument)
    assert body == json.loads(json.dumps(to_seed_json(stored)))
    dot = answer(data, "download/layer.dot", run="dsv3", stage=0, layer=3)
    assert dot.filename == "001_export_export_to_gm_layer3.dot"
    assert dot.body.startswith(b"digraph layer_3 {")
    trace = answer(data, "download/trace.json", run="traced/decode")
    assert trace.filename == "traced_decode.trace.json"
    events = json.loads(trace.body)["traceEvents"]
    traced = call(data, "runs")["runs"][2]
    assert sum(e["ph"] == "X" for e in events) == traced["trace"]["kernel_count"]
    refused(404, data, "download/trace.json", run="dsv3")
    refused(400, data, "download/layer.json", run="dsv3")
    refused(404, data, "download/layer.dot", run="nope", layer=3)


def test_payloads_are_cached_per_store_version(data: PluginData) -> None:
    a = answer(data, "layer", run="dsv3", layer=2)
    assert answer(data, "layer", run="dsv3", layer=2) is a
    assert a.gzipped() is a.gzipped() and a.etag.startswith('"')


def test_concurrent_cold_requests_compute_and_compress_once(
        logdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gzip
    import threading
    import time as _time

    from tb_ad_layer.plugin import responses
    data = PluginData(logdir)
    reads: list[tuple] = []
    original = RunStore.layer_document

    def slow(self: RunStore, stage: int, layer: int, rank: int | None = None):
        reads.append((stage, layer))
        _time.sleep(0.05)
        return original(self, stage, layer, rank)
    monkeypatch.setattr(RunStore, "layer_document", slow)
    results = []
    threads = [threading.Thread(target=lambda: results.append(
        answer(data, "layer", run="traced/decode", layer=3))) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(reads) == 1 and len(results) == 20 and all(r is results[0] for r in results)
    compressions = []
    compress = gzip.compress

    def counted(body: bytes, compresslevel: int, mtime: int) -> bytes:
        compressions.append(compresslevel)
        _time.sleep(0.05)
        return compress(body, compresslevel=compresslevel, mtime=mtime)
    monkeypatch.setattr(responses.gzip, "compress", counted)
    zipped = []
    threads = [threading.Thread(target=lambda: zipped.append(results[0].gzipped(6)))
               for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert compressions == [6] and all(z is zipped[0] for z in zipped)
