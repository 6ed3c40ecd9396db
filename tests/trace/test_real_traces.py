"""The three real traces in ../shared/traces, with the figures their README gives."""
from __future__ import annotations

from collections import Counter

import pytest

from tb_ad_layer.errors import InputError
from tb_ad_layer.trace.ingest import ingest_trace, kernel_sequences
from tb_ad_layer.trace.kernel import KIND_KERNEL
from tb_ad_layer.trace.reader import read_trace
from tb_ad_layer.trace.replay import select
from tests.trace.helpers import H100, HTA, NSIGHT_GRAPH


def kernel_counts(td) -> Counter:
    return Counter((td.streams[s].device, td.streams[s].stream) for s, n in zip(td.stream, td.name)
                   if td.names[n].kind == KIND_KERNEL)


def test_h100_two_gpus_eager() -> None:
    td = read_trace(H100)
    assert td.format == "nsys-sqlite"
    assert td.schema_version == "3.25.0"
    assert td.graph_trace_mode == "Graph"
    assert kernel_counts(td) == {(0, 7): 1721, (1, 15): 1721}
    assert sum(kernel_counts(td).values()) == 3442
    assert {s.pid for s in td.streams} == {111, 112}
    assert [s.key for s in sorted(td.streams, key=lambda s: s.device)] == ["pid111/dev0/ctx1/s7",
                                                                           "pid112/dev1/ctx2/s15"]
    assert td.devices == [0, 1]
    assert td.graph_id.count(-1) == len(td)  # eager: no graph ids at all
    assert not td.graph_launches and not td.warnings
    nvtx = td.nvtx
    assert len(nvtx) == 16782
    assert sum(1 for r in nvtx if r.text.startswith("aten::")) > 1000


def test_h100_phase_detection_and_devices() -> None:
    td = read_trace(H100)
    sel = select(td)
    assert sel.phase == "prefill" and sel.device == 0
    assert all(k.device == 0 and k.graph_id is None for k in sel.kernels)
    assert select(td, device=1).kernels[0].stream_key == "pid112/dev1/ctx2/s15"
    with pytest.raises(InputError, match="--phase prefill"):
        select(td, "decode")
    with pytest.raises(InputError, match=r"device 5 is not in the trace \(devices: 0, 1\)"):
        select(td, device=5)


def test_h100_layers_inferred_from_repetition() -> None:
    # The window holds a T5-style encoder forward pass: 24 blocks (NVTX encoder.block.0..23).
    for device in (0, 1):
        seq = kernel_sequences(H100, device=device)
        assert seq["phase"] == "prefill"
        assert seq["num_layers"] == 24
        counts = [layer["kernel_count"] for layer in seq["layers"]]
        assert Counter(counts).most_common(1)[0] == (78, 23)
        assert all(s["stream"].endswith("/s7" if device == 0 else "/s15")
                   for layer in seq["layers"] for s in layer["streams"])


def test_nsight_graph_mode_capture_is_recognised() -> None:
    td = read_trace(NSIGHT_GRAPH)
    assert td.schema_version == "3.24.0"
    assert td.graph_trace_mode == "Graph"
    assert kernel_counts(td) == {(0, 13): 3}
    assert td.graph_id.count(-1) == len(td)  # NULL graph ids
    assert len(td.graph_launches) == 2
    assert {b.graph_id for b in td.graph_launches} == {1}
    assert [b.stream_key for b in td.graph_launches] == ["pid945961/dev0/ctx1/s13"] * 2
    assert any("--cuda-graph-trace=node" in w for w in td.warnings)
    result = ingest_trace(NSIGHT_GRAPH, None)
    assert result.meta["phase"] == "prefill"
    assert len(result.graph_launches) == 2
    assert [k.short for k in result.kernels if k.kind == KIND_KERNEL] == ["add_one"] * 3
    assert any("nsys profile --cuda-graph-trace=node" in w for w in result.warnings)
    with pytest.raises(InputError, match="--cuda-graph-trace=node"):
        ingest_trace(NSIGHT_GRAPH, None, phase="decode")


def test_hta_profiler_trace_with_graph_launches() -> None:
    td = read_trace(HTA)
    assert td.format == "torch-profiler"
    counts = kernel_counts(td)
    assert sum(counts.values()) == 6080
    assert len(counts) == 5 and {d for d, _ in counts} == {0}
    assert counts[(0, 7)] == 5705
    assert len(td.graph_launch_correlations) == 70
    assert td.graph_node_id.count(-1) == len(td)  # no graph node ids
    per_launch = Counter(c for c, n in zip(td.correlation, td.name)
                         if c in td.graph_launch_correlations and td.names[n].kind == KIND_KERNEL)
    assert len(per_launch) == 70
    assert set(per_launch.values()) == {1, 2, 8}


def test_hta_decode_replay_is_one_launch() -> None:
    sel = select(read_trace(HTA))
    assert sel.phase == "decode" and sel.method == "launch-correlation"
    kernels = [k for k in sel.kernels if k.kind == KIND_KERNEL]
    assert len(kernels) == 8 and sel.graph_node_count == 8
    assert len({k.correlation for k in sel.kernels}) == 1
    assert sel.replays == 5  # the 8-kernel graph is launched 5 times
    assert all(k.stats is not None and k.stats.count == 5 for k in kernels)
    assert all(k.stats.min_ns <= k.stats.median_ns <= k.stats.max_ns for k in kernels)
    assert any(k.short.startswith("cutlass::Kernel<cutlass_80_tensorop_s1688gemm") for k in kernels)
    td = read_trace(HTA)
    prefill = select(td, "prefill")
    assert prefill.method.startswith("nvtx:ProfilerStep")
    assert prefill.kernels and not any(k.correlation in td.graph_launch_correlations for k in prefill.kernels)


def test_h100_segmentation_with_graph_layer_counts() -> None:
    from tb_ad_layer.trace.segment import segment_layers

    sel = select(read_trace(H100))
    seg = segment_layers(sel.kernels, ["dense"] * 24)
    assert len(seg.layers) == 24 and seg.consistency > 0.95
    with pytest.raises(InputError, match="trace shows 24 repeating layers but the graph has 30 layers"):
        segment_layers(sel.kernels, ["dense"] * 30)
