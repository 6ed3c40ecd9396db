"""The real traces in ../shared/traces, with the figures their README gives, through the CLI."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import msgspec
import pytest

from tb_ad_layer.cli import main
from tb_ad_layer.contract.cli import InspectReport
from tb_ad_layer.errors import InputError
from tb_ad_layer.options import TraceChoice
from tb_ad_layer.trace.ingest import ingest_trace, kernel_sequences
from tb_ad_layer.trace.kernel import KIND_KERNEL
from tb_ad_layer.trace.reader import read_trace
from tb_ad_layer.trace.replay import select
from tests.conftest import DUMPS
from tests.trace.helpers import B300, H100, HF_QWEN, HTA, NSIGHT_GRAPH

GRAPH_MODE_ERROR = ("no layer found: the trace was captured with --cuda-graph-trace=graph, so the kernels of "
                    "its 2 CUDA graph launch(es) on device 0 are not in it (only 3 kernel(s) outside CUDA "
                    "graphs); re-capture with `nsys profile --cuda-graph-trace=node ...`")
INSPECT_KEYS = [
    "format",
    "schema",
    "capture_mode",
    "devices",
    "graphs",
    "nvtx_ranges",
    "profiler_steps",
    "pick",
]


def inspect_json(path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["inspect", str(path), "--json", *args]) == 0
    out = capsys.readouterr().out
    doc = json.loads(out)
    assert list(doc) == INSPECT_KEYS
    msgspec.json.decode(out, type=InspectReport)  # exactly the documented shape, every field typed
    return doc


def per_stream(doc: dict[str, Any]) -> dict[tuple[int, int], tuple[int, int, int]]:
    return {(d["device"], s["stream"]): (s["kernels"], s["memcpy"], s["memset"])
            for d in doc["devices"] for s in d["streams"]}


def test_h100_two_gpus_eager(capsys: pytest.CaptureFixture[str]) -> None:
    doc = inspect_json(H100, capsys)
    assert doc["format"] == "nsys-sqlite" and doc["schema"] == "3.25.0" and doc["capture_mode"] == "graph"
    assert per_stream(doc) == {(0, 7): (1721, 452, 11), (1, 15): (1721, 452, 11)}
    assert [[(s["process"], s["context"]) for s in d["streams"]] for d in doc["devices"]] == [
        [(111, 1)],
        [(112, 2)],
    ]
    assert doc["graphs"] == [] and doc["profiler_steps"] == 0 and doc["nvtx_ranges"] == 16782
    assert doc["pick"]["phase"] == "prefill" and doc["pick"]["device"] == 0 and doc["pick"]["error"] is None


def test_h100_fsdp_hooks_are_not_forward_passes() -> None:
    db = read_trace(H100)
    assert sum(1 for r in db.ranges() if r.text.startswith("FSDP::pre_forward")) > 100
    sel = select(db)
    # Every FSDP::pre_forward hook mentions "forward", yet no forward pass is cut by one.
    assert sel.method == "idle-gaps" and not sel.method.startswith("nvtx:FSDP")
    with pytest.raises(InputError, match="--phase prefill"):
        select(db, TraceChoice(phase="decode"))
    with pytest.raises(InputError, match=r"device 5 is not in the trace \(devices: 0, 1\)"):
        select(db, TraceChoice(device=5))


def test_h100_layers_inferred_from_repetition() -> None:
    for device, stream in ((0, "/s7"), (1, "/s15")):
        seq = kernel_sequences(H100, choice=TraceChoice(device=device))
        assert seq.phase == "prefill" and seq.segmentation.method == "repetition"
        assert seq.num_layers == 24 and seq.segmentation.confidence >= 0.95
        assert all(s.stream.endswith(stream) for layer in seq.layers for s in layer.streams)


def test_nsight_graph_mode_capture_is_recognised(capsys: pytest.CaptureFixture[str]) -> None:
    doc = inspect_json(NSIGHT_GRAPH, capsys)
    assert doc["schema"] == "3.24.0" and doc["capture_mode"] == "graph"
    assert per_stream(doc) == {(0, 13): (3, 1, 0)}
    assert doc["graphs"] == [{"graph_id": 1, "nodes": 0, "launches": 2, "kernels_per_launch": 0}]
    result = ingest_trace(NSIGHT_GRAPH, None)
    assert result.info.phase == "prefill" and len(result.graph_launches) == 2
    assert [k.short for k in result.kernels if k.kind == KIND_KERNEL] == ["add_one"] * 3
    assert any("nsys profile --cuda-graph-trace=node" in w for w in result.warnings)
    assert result.no_layers is not None and result.no_layers.startswith(GRAPH_MODE_ERROR)
    with pytest.raises(InputError, match="--cuda-graph-trace=node"):
        ingest_trace(NSIGHT_GRAPH, None, choice=TraceChoice(phase="decode"))


def test_nsight_graph_mode_kernels_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "k.json"
    assert main(["kernels", str(NSIGHT_GRAPH), "-q", "-o", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.strip().splitlines()) == 1
    assert GRAPH_MODE_ERROR in captured.err and str(NSIGHT_GRAPH) in captured.err
    assert not out.exists()
    assert main(["kernels", str(NSIGHT_GRAPH)]) == 2  # to stdout: nothing printed either
    captured = capsys.readouterr()
    assert captured.out == "" and GRAPH_MODE_ERROR in captured.err.splitlines()[-1]
    assert "warning" not in captured.err
    with pytest.raises(InputError, match="no layer found"):
        kernel_sequences(NSIGHT_GRAPH)


def test_nsight_graph_mode_convert_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["convert", str(DUMPS / "ad_dsv3"), "--logdir", str(tmp_path / "logs"), "--run", "d", "-q",
                 "--trace", str(NSIGHT_GRAPH)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and GRAPH_MODE_ERROR in err
    assert not (tmp_path / "logs").exists()
    out = tmp_path / "l3.json"
    assert main(["extract", str(DUMPS / "ad_dsv3"), "--layer", "3", "-o", str(out), "-q",
                 "--trace", str(NSIGHT_GRAPH)]) == 2
    assert GRAPH_MODE_ERROR in capsys.readouterr().err and not out.exists()


def test_hta_profiler_trace_with_graph_launches(capsys: pytest.CaptureFixture[str]) -> None:
    doc = inspect_json(HTA, capsys)
    assert doc["format"] == "torch-profiler" and doc["capture_mode"] is None
    kernels = {key: v[0] for key, v in per_stream(doc).items()}
    assert sum(kernels.values()) == 6080 and kernels[(0, 7)] == 5705
    assert len([n for n in kernels.values() if n]) == 5 and {d for d, _ in kernels} == {0}
    assert [(g["graph_id"], g["launches"], g["kernels_per_launch"]) for g in doc["graphs"]] == \
        [(None, 5, 8), (None, 30, 2), (None, 35, 1)]
    assert sum(g["launches"] for g in doc["graphs"]) == 70
    assert doc["profiler_steps"] == 5
    pick = doc["pick"]
    assert pick["phase"] == "decode" and pick["kernels"] == 8 and pick["replays"] == 5 and pick["step"] == 554


def test_hta_steps_and_ddp_wrapper() -> None:
    db = read_trace(HTA)
    assert any(r.text == "DistributedDataParallel.forward" for r in db.ranges())
    prefill = select(db, TraceChoice(phase="prefill"))
    assert prefill.step is not None and prefill.step.number == 554 and "last complete" in prefill.reason
    assert prefill.method == "nvtx:## forward ##"  # never the DDP wrapper's range
    chosen = select(db, TraceChoice(phase="prefill", step=551))
    assert chosen.step is not None and chosen.step.number == 551
    with pytest.raises(
        InputError, match=r"profiler step 7 is not in the trace \(steps: 550, 551, 552, 553, 554\)"
    ):
        select(db, TraceChoice(phase="prefill", step=7))


def test_hta_kernels_without_structure_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "k.json"
    assert main(["kernels", str(HTA), "-q", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "no layer structure found" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_b300_sglang_decode(capsys: pytest.CaptureFixture[str]) -> None:
    doc = inspect_json(B300, capsys)
    assert per_stream(doc) == {(0, 13): (368, 3, 0), (0, 29): (25, 1, 0)}
    assert doc["graphs"] == [{"graph_id": None, "nodes": 356, "launches": 1, "kernels_per_launch": 356}]
    seq = kernel_sequences(B300)
    assert seq.phase == "decode" and seq.segmentation.method == "repetition"
    assert seq.num_layers == 32 and seq.segmentation.confidence >= 0.95
    assert [layer.kernel_count for layer in seq.layers] == [11] * 32
    # A layer begins with its own input norm: RMSNorm in layer 0, the fused add+RMSNorm after.
    assert "RMSNormKernel" in seq.layers[0].kernels[0].name
    assert all("FusedAddRMSNorm" in layer.kernels[0].name for layer in seq.layers[1:])
    assert all("splitKreduce" in layer.kernels[-1].name for layer in seq.layers)
    outside = [k for k in seq.outside if k.kind == KIND_KERNEL]
    assert [k.kernel for k in outside][0].startswith("indexSelect")  # the embedding, before layer 0
    after = outside[1:]
    assert (
        len(after) == 3 and "FusedAddRMSNorm" in after[0].name and after[1].kernel.startswith("nvjet")
    )
    assert "copy" in after[2].name


def test_hf_qwen_eager_module_annotations(capsys: pytest.CaptureFixture[str]) -> None:
    doc = inspect_json(HF_QWEN, capsys)
    assert per_stream(doc) == {(0, 7): (1465, 1, 241)}
    assert doc["profiler_steps"] == 1 and doc["pick"]["step"] == 6 and doc["pick"]["phase"] == "prefill"
    seq = kernel_sequences(HF_QWEN)
    assert seq.segmentation.method == "module-annotations" and seq.segmentation.confidence == 1.0
    assert seq.num_layers == 24 and [layer.kernel_count for layer in seq.layers] == [42] * 24
    assert {layer.kind for layer in seq.layers} == {"Qwen2DecoderLayer"}
    outside_step = sum(1 for k in seq.outside if k.kind == KIND_KERNEL)
    # The other 457 kernels: those of step 6 outside the layers, and those launched before it.
    before_step = 1465 - sum(1 for k in select(read_trace(HF_QWEN)).kernels if k.kind == KIND_KERNEL)
    assert outside_step + before_step == 457


def test_memcpy_memset_are_not_kernels() -> None:
    seq = kernel_sequences(HF_QWEN)
    layer = seq.layers[0]
    kinds = Counter(k.kind for k in layer.kernels)
    assert kinds["kernel"] == layer.kernel_count == 42
    assert kinds["memset"] == layer.memset_count > 0
