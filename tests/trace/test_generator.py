"""tools/make_traces.py: plans from FX-dump ground truth, CLI, determinism."""
from __future__ import annotations

import json
from pathlib import Path

from tb_ad_layer.trace.ingest import ingest_trace
from tests.trace.helpers import REPO, expected, expected_outcome, layers_from_truth, load_truth, make_traces

DUMP = """# Transform: fuse_moe
# Stage: post_load_fusion
# GraphModules found: 1

================================================================================
# GraphModule: (root)
================================================================================

%input_ids : 2x4 : torch.int64
{lines}output %out
"""


def _tiny_dump(tmp_path: Path, layers: int = 3) -> Path:
    lines = ["%embedding = aten.embedding.default(%w : 8x4 : torch.bfloat16, %input_ids : 2x4 : torch.int64) "
             ": 2x4x4 : torch.bfloat16"]
    nodes: dict[str, dict] = {"input_ids": {"layer": None, "group": "other", "sub_group": None},
                              "embedding": {"layer": None, "group": "other", "sub_group": None}}
    for i in range(layers):
        for name, target, group, sub, stream in [
            (f"rms_norm_{i}", "auto_deploy.flashinfer_rms_norm.default", "norm", None, "main"),
            (f"linear_{i}", "auto_deploy.torch_linear_simple.default", "attention", "q_branch", "main"),
            (f"kv_{i}", "auto_deploy.torch_linear_simple.default", "attention", "kv_branch", "aux"),
            (f"attn_{i}", "auto_deploy.torch_attention.default", "attention", None, "main"),
            (f"view_{i}", "aten.view.default", "attention", None, "main"),
            (f"add_{i}", "aten.add.Tensor", "mlp", None, "main"),
        ]:
            lines.append(f"%{name} = {target}(%x : 2x4 : torch.bfloat16) : 2x4 : torch.bfloat16")
            nodes[name] = {"layer": i, "group": group, "sub_group": sub, "stream": stream}
    lines.append(
        "%norm = auto_deploy.flashinfer_rms_norm.default(%x : 2x4 : torch.bfloat16) : 2x4 : torch.bfloat16"
    )
    nodes["norm"] = {"layer": None, "group": "norm", "sub_group": None}
    dump = tmp_path / "007_post_load_fusion_fuse_moe.txt"
    dump.write_text(DUMP.format(lines="\n".join(lines) + "\n"))
    truth = tmp_path / "007_post_load_fusion_fuse_moe.truth.json"
    truth.write_text(json.dumps({"model": "tiny", "num_layers": layers,
                                 "layer_kinds": {str(i): "dense" for i in range(layers)}, "nodes": nodes}))
    return truth


def test_plan_from_truth_reads_ops_from_the_dump(tmp_path: Path) -> None:
    mt = make_traces()
    plan = mt.plan_from_truth(_tiny_dump(tmp_path))
    assert [n.id for n in plan.prologue] == ["embedding"] and [n.id for n in plan.epilogue] == ["norm"]
    assert len(plan.layers) == 3 and [n.id for n in plan.layers[1].nodes][:2] == ["rms_norm_1", "linear_1"]
    assert plan.layers[0].nodes[2].stream == "aux" and plan.layers[0].nodes[1].op.startswith(
        "auto_deploy.torch_linear"
    )


def test_cli_from_truth_round_trip(tmp_path: Path) -> None:
    mt = make_traces()
    truth_in = _tiny_dump(tmp_path)
    out = tmp_path / "out"
    assert mt.main(["--out", str(out), "--name", "tiny", "--plan-from", str(truth_in), "--replays", "4",
                    "--format", "both"]) == 0
    gt = load_truth(out / "tiny.truth.json")
    for name in ("tiny.sqlite", "tiny.pt.trace.json.gz"):
        result = ingest_trace(out / name, layers_from_truth(gt))
        assert result.info.layers_found == 3 and result.info.mapped_share == 1.0
        if name.endswith(".sqlite"):
            for k in result.kernels:
                assert (k.layer, k.node) == expected_outcome(expected(gt, k))


def test_generated_names_are_realistic_and_deterministic(tmp_path: Path) -> None:
    mt = make_traces()
    plan = mt.dsv3_plan(4, 1)
    a = mt.simulate(plan, mt.Options(replays=2, seed=3))
    b = mt.simulate(plan, mt.Options(replays=2, seed=3))
    assert [(r.start, r.full) for r in a.rows] == [(r.start, r.full) for r in b.rows]
    names = {r.full for r in a.rows}
    assert any("<" in n and ">" in n and "&" in n for n in names)
    assert any(n.startswith("fused_kernel_") for n in names)
    assert {r.stream for r in a.rows} == {7, 23}
    assert len({r.correlation for r in a.rows if r.graph_id == 7}) == 2


def test_shared_dump_fixtures_when_present() -> None:
    # Another engineer writes FX dumps with ground truth here; use them once they exist.
    mt = make_traces()
    for truth in sorted((REPO / "tests" / "fixtures" / "dumps").glob("*/*.truth.json"))[:4]:
        plan = mt.plan_from_truth(truth)
        assert plan.layers and all(layer.nodes for layer in plan.layers), truth


def test_export_plans_put_shared_experts_and_the_kv_path_on_an_aux_stream(tmp_path: Path) -> None:
    # An export's truth names no streams: AutoDeploy's multi-stream transforms decide. Shared
    # experts run beside the routed ones, once the node computing their input has finished
    # (here the post-attention norm's last op: the aux stream waits for its event); the first
    # main node reading their output waits for them.
    mt = make_traces()
    dumps = REPO / "tests" / "fixtures" / "dumps"
    truth = json.loads((dumps / "qwen_moe" / "002_post_export_cleanup_noop_slice.truth.json").read_text())[
        "nodes"
    ]
    plan = mt.plan_from_truth(dumps / "qwen_moe" / "002_post_export_cleanup_noop_slice.truth.json")
    moe = plan.layers[1].nodes
    aux = [n for n in moe if n.stream == "aux"]
    assert aux and all("shared_expert" in truth[n.id]["module"] for n in aux)
    assert all(n.stream == "main" for n in moe if "shared_expert" not in (truth[n.id]["module"] or ""))
    assert aux[0].fork == "mul_29" and aux[0].fork_done
    assert truth["mul_29"]["module"] == "model.layers.1.post_attention_layernorm"
    joins = [n for n in moe if n.join]
    assert [n.op for n in joins] == ["aten.sigmoid.default"]  # reads the shared expert gate
    assert all(not n.join for n in plan.layers[0].nodes)  # the dense layer has no aux stream
    mla = (
        mt.plan_from_truth(dumps / "deepseek_v3" / "002_post_export_cleanup_noop_slice.truth.json")
        .layers[0]
        .nodes
    )
    assert {truth_module.split(".")[-1] for truth_module in
            (json.loads((dumps / "deepseek_v3" / "002_post_export_cleanup_noop_slice.truth.json").read_text())
             ["nodes"][n.id]["module"] for n in mla if n.stream == "aux")} == \
        {"kv_a_proj_with_mqa", "kv_a_layernorm", "kv_b_proj"}
    # In the trace, the aux kernels run beside the main stream's, in time.
    trace = mt.simulate(plan, mt.Options(replays=1, layout="main-aux", seed=1))
    aux_rows = [r for r in trace.rows if r.stream == 23]
    main_rows = [r for r in trace.rows if r.stream == 7 and r.layer == 1]
    assert aux_rows and any(a.start < m.end and m.start < a.end for a in aux_rows for m in main_rows)
