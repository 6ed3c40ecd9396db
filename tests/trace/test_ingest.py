"""The converter's entry points: ingest_trace, kernel_sequences, Chrome trace output."""
from __future__ import annotations

import json

import msgspec
import pytest

from tb_ad_layer.errors import InputError
from tb_ad_layer.export.chrome import chrome_trace
from tb_ad_layer.options import TraceChoice
from tb_ad_layer.store.records import StoredKernel
from tb_ad_layer.trace.graph_nodes import LayerNodes, ModelNodes
from tb_ad_layer.trace.ingest import ingest_trace, kernel_sequences
from tb_ad_layer.trace.kernel import GraphLaunchBlock, Kernel
from tb_ad_layer.trace.summary import busy_ns
from tb_ad_layer.trace_attach import GRAPH_BLOCK_REASON, kernel_rows, stream_rows
from tests.trace.helpers import FIXTURES, layers_from_truth, load_truth


@pytest.fixture(scope="module")
def decode():
    truth = load_truth(FIXTURES / "dsv3_decode.truth.json")
    messages: list[str] = []
    result = ingest_trace(FIXTURES / "dsv3_decode.sqlite", layers_from_truth(truth), progress=messages.append)
    return truth, result, messages


def test_meta(decode) -> None:
    _, result, messages = decode
    m = result.info
    assert m.format == "nsys-sqlite" and m.phase == "decode" and m.schema_version == "3.25.0"
    assert m.graph_id == 7 and m.replays == 12 and m.devices == [0] and m.device == 0
    # Kernels are kernels: the three graph memsets ride along but are counted apart.
    assert m.num_streams == 2 and m.kernel_count == 178 and m.memset_count == 3
    assert len(result.kernels) == 181
    assert m.layers_found == 5 and m.segmentation == "graph-alignment"
    assert 0.98 < m.mapped_share < 1.0  # the three unknown kernels
    assert m.source.endswith("dsv3_decode.sqlite")
    assert msgspec.to_builtins(m.stream_totals) == [
        {"device": 0, "stream": 7, "process": 31337, "kernels": 1680, "memcpy": 24, "memset": 36},
        {"device": 0, "stream": 23, "process": 31337, "kernels": 492, "memcpy": 0, "memset": 0}]
    assert "  device 0 stream 7: 1,680 kernels, 24 memcpy, 36 memset" in [
        msg.split("] ", 1)[-1] for msg in messages
    ]
    assert any("mapped" in msg for msg in messages)
    assert result.origin_ns == min(k.start_ns for k in result.kernels)


def test_layer_summaries(decode) -> None:
    truth, result, _ = decode
    assert sorted(result.layer_summaries) == [0, 1, 2, 3, 4]
    s0, s2 = result.layer_summaries[0], result.layer_summaries[2]
    assert s0.kernel_count == 28 and s2.kernel_count == 39 and s0.num_streams == 2
    assert s2.memset_count == 1
    assert set(s0.groups) == {"norm", "mla", "mlp"}
    assert set(s2.groups) == {"norm", "mla", "moe", "unmapped"}
    assert s2.total_duration_us == pytest.approx(sum(s2.groups.values()), abs=0.01)
    for stream in s2.streams:
        assert stream.busy_us <= stream.span_us and stream.gaps_us == pytest.approx(
            stream.span_us - stream.busy_us, abs=0.002)
    assert [u.kernel for u in s2.unmapped] == ["[CUDA memset]", "mystery_kernel"] or \
        sorted(u.kernel for u in s2.unmapped) == ["[CUDA memset]", "mystery_kernel"]


def test_node_trace_kernels(decode) -> None:
    _, result, _ = decode
    recs = result.node_kernels["trtllm_moe_fused_default"]
    assert [r.kernel for r in recs] == ["routingIndicesClusterKernel",
                                           recs[1].kernel, "activationDeepSeekKernel", recs[3].kernel,
                                           "finalizeKernelVecLoad"]
    for r in recs:
        assert r.stats.count == 12 and r.duration_us == r.stats.median_us
        assert r.stats.min_us <= r.stats.median_us <= r.stats.max_us
        assert (
            r.stream == "pid31337/dev0/ctx1/s7"
            and r.start_us >= 0
            and r.name.startswith(("void", "bmm"))
        )
    fp8 = result.node_kernels["finegrained_fp8_linear_default"]
    assert [r.kernel for r in fp8] == [
        "scale_1x128_kernel",
        "pack_fp32_to_ue8m0_kernel",
        "sm100_fp8_gemm_1d1d_impl",
    ]
    assert "view" not in result.node_kernels  # views launch nothing


def stored_chrome_trace(kernels: list[Kernel], launches: list[GraphLaunchBlock],
                        origin_ns: int) -> dict:
    """The Chrome trace of activities as the run store keeps them and exports them."""
    rows = [StoredKernel(i, *row) for i, row in enumerate(kernel_rows(kernels, launches, origin_ns), 1)]
    return chrome_trace(rows, stream_rows(kernels, launches))


def test_chrome_trace(decode) -> None:
    _, result, _ = decode
    doc = json.loads(json.dumps(stored_chrome_trace(result.kernels, result.graph_launches,
                                                    result.origin_ns)))
    assert doc["displayTimeUnit"] == "ns"
    meta = [e for e in doc["traceEvents"] if e["ph"] == "M"]
    assert {e["args"]["name"] for e in meta if e["name"] == "process_name"} == {"GPU 0 (pid 31337)"}
    assert {e["args"]["name"] for e in meta if e["name"] == "thread_name"} == {"stream 7", "stream 23"}
    events = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert len(events) == 181 and min(e["ts"] for e in events) == 0
    moe = next(e for e in events if e["args"]["node"] == "trtllm_moe_fused_default")
    assert moe["args"]["layer"] == 2 and moe["args"]["graph_id"] == 7 and moe["args"]["replays"] == 12
    assert any("&" in e["args"]["name"] and "<" in e["args"]["name"] for e in events)


def test_chrome_trace_graph_blocks() -> None:
    # Whole-graph blocks reach a run only with a graph without layers: with layers, a graph-mode
    # capture is refused (test_graph_mode_with_layers_is_refused).
    result = ingest_trace(FIXTURES / "dsv3_graphmode.sqlite", ModelNodes([]))
    doc = stored_chrome_trace(result.kernels, result.graph_launches, result.origin_ns)
    blocks = [e for e in doc["traceEvents"] if e.get("name") == "cudaGraphLaunch"]
    assert len(blocks) == 4 and all(b["args"]["graph_id"] == 7 for b in blocks)
    assert all(b["args"]["unmapped_reason"] == GRAPH_BLOCK_REASON for b in blocks)


def test_graph_mode_with_layers_is_refused() -> None:
    truth = load_truth(FIXTURES / "dsv3_graphmode.truth.json")
    with pytest.raises(
        InputError,
        match=r"no layer found: the trace was captured with --cuda-graph-trace=graph, "
        r"so the kernels of its 4 CUDA graph launch\(es\) on device 0 are not in it "
        r"\(only 4 kernel\(s\) outside CUDA graphs\); re-capture with",
    ):
        ingest_trace(FIXTURES / "dsv3_graphmode.sqlite", layers_from_truth(truth))


def test_graph_without_layers_gives_no_layers() -> None:
    path = FIXTURES / "dsv3_decode.sqlite"
    # A graph with no decoder layers: the trace maps onto the nodes outside layers; the kernels
    # command has no layers to show and says why.
    result = ingest_trace(path, ModelNodes([]))
    assert result.segmentation is not None and result.segmentation.layers == []
    assert result.no_layers is not None and "the graph has no decoder layers" in result.no_layers
    with pytest.raises(InputError, match=r"no layer found in the decode replay \(\d+ kernels on device 0\): "
                                         r"the graph has no decoder layers"):
        kernel_sequences(path, layers=ModelNodes([]))


def test_kernel_sequences() -> None:
    seq = kernel_sequences(FIXTURES / "dsv3_decode.sqlite")
    assert seq.num_layers == 5 and seq.phase == "decode" and seq.graph_id == 7
    assert [layer.kind for layer in seq.layers] == ["A", "A", "B", "B", "B"]
    assert [layer.kernel_count for layer in seq.layers] == [28, 28, 39, 39, 39]
    assert [layer.memset_count for layer in seq.layers] == [0, 0, 1, 1, 1]
    # Five layers of two kinds, the dense one seen twice: a right cut, but repetition seen that
    # rarely could be pairs or halves of layers too, and the warning says so.
    assert seq.segmentation.method == "repetition" and 0.8 <= seq.segmentation.confidence < 0.9
    assert any(w.startswith("low confidence (0.8") and "--dump" in w for w in seq.warnings)
    first = seq.layers[0].kernels[0]
    assert set(msgspec.to_builtins(first)) >= {"kernel", "name", "kind", "duration_us", "stream",
                                               "start_us", "stats"}
    assert [k.kernel for k in seq.outside][:1] == ["indexSelectLargeIndex"]
    one = kernel_sequences(FIXTURES / "dsv3_decode.sqlite", layer=3)
    assert [layer.layer for layer in one.layers] == [3] and one.outside == []
    with pytest.raises(InputError, match=r"layer 9 is not in the trace: 5 layers found \(0..4\)"):
        kernel_sequences(FIXTURES / "dsv3_decode.sqlite", layer=9)


def test_prefill_ingest_and_phase_errors() -> None:
    truth = load_truth(FIXTURES / "dsv3_prefill.truth.json")
    result = ingest_trace(FIXTURES / "dsv3_prefill.sqlite", layers_from_truth(truth),
                          choice=TraceChoice(phase="prefill"))
    assert result.info.phase == "prefill" and result.info.replays == 1
    assert result.info.mapped_share == 1.0
    assert all(k.stats is None for k in result.kernels)
    with pytest.raises(InputError, match="--phase prefill"):
        ingest_trace(FIXTURES / "dsv3_prefill.sqlite", layers_from_truth(truth),
                     choice=TraceChoice(phase="decode"))


def test_layer_count_mismatch_through_ingest() -> None:
    truth = load_truth(FIXTURES / "dsv3_decode.truth.json")
    layers = layers_from_truth(truth)[:3]
    with pytest.raises(InputError, match="trace shows 5 repeating layers but the graph has 3 layers"):
        ingest_trace(FIXTURES / "dsv3_decode.sqlite", layers)
    more = layers_from_truth(truth) + [LayerNodes(5 + i, layer.kind, layer.nodes) for i, layer in
                                       enumerate(layers_from_truth(truth)[2:])]
    with pytest.raises(InputError, match="trace shows 5 repeating layers but the graph has 8 layers"):
        ingest_trace(FIXTURES / "dsv3_decode.sqlite", more)


def test_busy_time_merges_overlaps() -> None:
    assert busy_ns([(0, 10), (5, 15), (20, 20), (30, 40)]) == 25
    assert busy_ns([]) == 0


def test_kernel_sequences_of_profiler_graph_trace() -> None:
    from tests.trace.helpers import HTA

    messages: list[str] = []
    result = ingest_trace(HTA, None, progress=messages.append)
    assert result.info.phase == "decode" and result.info.replays == 5
    assert result.info.kernel_count == 8 and result.info.memset_count == 12
    assert result.info.layers_found == 0  # eight GEMMs hold no layer structure
    assert result.no_layers == (
        "no layer structure found in the decode replay (8 kernels on device 0; no "
        "repeating per-layer kernel pattern and no layer ranges); pass --dump with the "
        "model's graph dump to cut it by the graph's layers"
    )
    assert any("GPU events" in m for m in messages)
    with pytest.raises(InputError, match="no layer structure found"):
        kernel_sequences(HTA)


def test_two_device_chrome_trace() -> None:
    from tb_ad_layer.trace.reader import read_trace
    from tb_ad_layer.trace.replay import select

    td = read_trace(FIXTURES / "dsv3_decode_2gpu_2021.sqlite")
    kernels = select(td, TraceChoice(device=0)).kernels + select(td, TraceChoice(device=1)).kernels
    doc = stored_chrome_trace(kernels, [], min(k.start_ns for k in kernels))
    procs = {e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"}
    assert procs == {"GPU 0 (pid 31337)", "GPU 1 (pid 31338)"}
    assert len({(e["pid"], e["tid"]) for e in doc["traceEvents"] if e["ph"] == "X"}) == 4
