"""Choosing one CUDA-graph replay (decode) or one eager forward pass (prefill)."""
from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from tb_ad_layer.errors import InputError
from tb_ad_layer.options import TraceChoice
from tb_ad_layer.trace.kernel import KIND_KERNEL
from tb_ad_layer.trace.reader import read_trace
from tb_ad_layer.trace.replay import select
from tests.trace.helpers import FIXTURES, load_truth


def test_busiest_graph_one_complete_replay_with_stats() -> None:
    td = read_trace(FIXTURES / "dsv3_decode.sqlite")
    sel = select(td)
    assert sel.phase == "decode" and sel.graph_id == 7 and sel.method == "graph-node-ids"
    kernels = [k for k in sel.kernels if k.kind == KIND_KERNEL]
    assert len(kernels) == sel.graph_node_count == 178
    assert len({k.graph_node_id for k in kernels}) == 178
    assert len({k.correlation for k in sel.kernels}) == 1  # one launch
    assert Counter(k.kind for k in sel.kernels)["memset"] == 3  # graph memsets ride with their launch
    assert sel.replays == 12
    for k in kernels:
        assert k.stats is not None and k.stats.count == 12
        assert k.stats.min_ns <= k.stats.median_ns <= k.stats.max_ns
    # The stats really aggregate every replay of that graph node.
    node = kernels[10].graph_node_id
    durations = sorted(k.duration_ns for k in td.kernels("a.g = 7 AND a.n = ?", (node,), copies=False))
    assert len(durations) == 12 and kernels[10].stats.median_ns == statistics.median(durations)
    assert sorted(k.start_ns for k in sel.kernels) == [k.start_ns for k in sel.kernels]


def test_explicit_graph_id_and_unknown_graph_id() -> None:
    td = read_trace(FIXTURES / "dsv3_decode.sqlite")
    sampling = select(td, TraceChoice(phase="decode", graph_id=9))
    assert sampling.graph_id == 9 and len(sampling.kernels) == 2 and sampling.replays == 12
    with pytest.raises(InputError, match=r"graph id 3 is not in the trace \(graph ids: 7, 9\)"):
        select(td, TraceChoice(phase="decode", graph_id=3))


def test_decode_without_node_ids_uses_launch_correlation() -> None:
    sel = select(read_trace(FIXTURES / "dsv3_decode.pt.trace.json.gz"))
    assert sel.method == "launch-correlation" and sel.replays == 12
    assert len([k for k in sel.kernels if k.kind == KIND_KERNEL]) == 178
    assert all(k.stats is not None and k.stats.count == 12 for k in sel.kernels if k.kind == KIND_KERNEL)


def test_profiler_graph_node_ids() -> None:
    sel = select(read_trace(FIXTURES / "dsv3_decode_nodeids.pt.trace.json.gz"))
    assert sel.method == "graph-node-ids" and sel.replays == 5 and not sel.warnings


def test_two_devices_choose_and_pick(generate: Callable[..., dict[str, Path]]) -> None:
    td = read_trace(FIXTURES / "dsv3_decode_2gpu_2021.sqlite")
    d0, d1 = select(td, TraceChoice(device=0)), select(td, TraceChoice(device=1))
    assert {k.device for k in d0.kernels} == {0} and {k.device for k in d1.kernels} == {1}
    assert d0.replays == d1.replays == 6
    assert [k.short for k in d0.kernels] == [k.short for k in d1.kernels]
    assert select(td).device == 0  # equally busy: the first


def test_decode_on_eager_trace_is_an_input_error() -> None:
    td = read_trace(FIXTURES / "dsv3_prefill.sqlite")
    with pytest.raises(InputError, match="no CUDA graph replays.*--phase prefill"):
        select(td, TraceChoice(phase="decode"))
    with pytest.raises(InputError, match="unknown phase"):
        select(td, TraceChoice(phase="warmup"))


def test_prefill_pass_from_nvtx() -> None:
    truth = load_truth(FIXTURES / "dsv3_prefill.truth.json")
    td = read_trace(FIXTURES / "dsv3_prefill.sqlite")
    sel = select(td)
    assert sel.phase == "prefill" and sel.method == "nvtx:forward step #"
    passes = {rec["correlation"]: rec["pass"] for rec in truth["kernels"]}
    assert {passes[k.correlation] for k in sel.kernels} == {1}  # the middle of three passes
    assert len(sel.kernels) == sum(1 for rec in truth["kernels"] if rec["pass"] == 1)


def test_prefill_pass_from_idle_gaps(generate: Callable[..., dict[str, Path]]) -> None:
    paths = generate("prefill_nonvtx", layers=4, dense=1, phase="prefill", passes=3, nvtx=False)
    truth = load_truth(paths["truth"])
    sel = select(read_trace(paths["sqlite"]))
    assert sel.method == "idle-gaps"
    passes = {rec["correlation"]: rec["pass"] for rec in truth["kernels"]}
    assert {passes[k.correlation] for k in sel.kernels} == {1}


def test_graph_mode_capture_prefill_keeps_launch_blocks() -> None:
    sel = select(read_trace(FIXTURES / "dsv3_graphmode.sqlite"))
    assert sel.graph_mode_capture and sel.phase == "prefill" and len(sel.launches) == 4
    assert all(k.graph_id is None for k in sel.kernels)


def test_empty_kernel_table(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "empty.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INT, end INT, deviceId INT, streamId INT, "
                 "demangledName TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(InputError, match="no GPU kernels"):
        select(read_trace(path))


def test_profiler_steps_choose_the_replay_and_the_pass(generate: Callable[..., dict[str, Path]]) -> None:
    decode = generate("steps_decode", layers=3, dense=1, replays=6, steps=True)
    db = read_trace(decode["sqlite"])
    sel = select(db)
    assert sel.step is not None and sel.step.number == 105  # ProfilerStep#100..#105: the last complete
    assert sel.step.start_ns <= sel.kernels[0].launch_ns <= sel.step.end_ns
    assert sel.replays == 6  # the statistics still cover every replay
    assert "step 105: the last complete of 6 profiler step(s)" in sel.reason
    assert select(db, TraceChoice(step=102)).step.number == 102
    with pytest.raises(InputError, match=r"profiler step 99 is not in the trace"):
        select(db, TraceChoice(step=99))
    prefill = generate("steps_prefill", layers=3, dense=1, phase="prefill", passes=3, steps=True,
                       formats=("sqlite", "torch"))
    truth = load_truth(prefill["truth"])
    passes = {rec["correlation"]: rec["pass"] for rec in truth["kernels"]}
    for fmt in ("sqlite", "torch"):
        db = read_trace(prefill[fmt])
        assert {passes[k.correlation] for k in select(db).kernels} == {2}
        assert {passes[k.correlation] for k in select(db, TraceChoice(step=100)).kernels} == {0}


def test_fsdp_hooks_are_never_forward_passes(generate: Callable[..., dict[str, Path]]) -> None:
    # Hook ranges mentioning "forward" around every layer and every pass, and no forward-pass
    # annotation: the passes are found by idle gaps, never by a wrapper's range.
    paths = generate("hooks", layers=4, dense=1, phase="prefill", passes=3, nvtx=False, hooks=True)
    truth = load_truth(paths["truth"])
    db = read_trace(paths["sqlite"])
    assert sum(1 for r in db.ranges() if r.text.startswith("FSDP::pre_forward")) == 12
    assert sum(1 for r in db.ranges() if r.text == "DistributedDataParallel.forward") == 3
    sel = select(db)
    assert sel.method == "idle-gaps"
    passes = {rec["correlation"]: rec["pass"] for rec in truth["kernels"]}
    assert {passes[k.correlation] for k in sel.kernels} == {1}
