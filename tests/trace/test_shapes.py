"""The input shapes a trace recorded for the ops that launched its kernels, and the sizes they bind:
emit_nvtx range texts, the nesting of ops around a launch call, binding by position with every
literal size checked, conflicts; and, on the real traces, what each one records."""
from __future__ import annotations

from tb_ad_layer.trace.ingest import AUTO_CHOICE
from tb_ad_layer.trace.reader import read_trace
from tb_ad_layer.trace.replay import select
from tb_ad_layer.trace.shapes import (
    CPU_OPS,
    Binding,
    LaunchOp,
    _Thread,
    bind_node,
    collect,
    launch_ops,
    nvtx_op,
    op_names,
    operand_shapes,
)
from tests.trace.helpers import B300, H100, HF_QWEN

LINEAR_ARGS = ("%type_as : s44xs70x64 : torch.bfloat16, "
               "%model_layers_0_linear_attn_in_proj_qkvz_weight : 192x64 : torch.bfloat16")


def test_emit_nvtx_range_texts_give_the_op_and_its_sizes() -> None:
    text = ("aten::linear, seq = 3, op_id = 7, sizes = [[2, 7, 64], [192, 64], []], "
            "input_op_ids = [(0, 0), (0, 0)]")
    assert nvtx_op(text) == LaunchOp("aten::linear", ((2, 7, 64), (192, 64), None))
    assert nvtx_op("aten::view, op_id = 314290") is None          # recorded without shapes
    assert nvtx_op("aten::mm, sizes = [[2, 7") is None             # cut short
    assert nvtx_op("model.layers.3") is None


def test_graph_targets_name_their_profiler_ops() -> None:
    assert op_names("aten.linear.default") == {"aten::linear"}
    assert op_names("torch.ops.aten.mm.default") == {"aten::mm"}
    assert op_names("auto_deploy.trtllm_moe_fused") == {"auto_deploy::trtllm_moe_fused"}
    assert op_names("<built-in function getitem>") == frozenset()
    assert operand_shapes(LINEAR_ARGS) == [["s44", "s70", "64"], ["192", "64"]]


def test_the_ops_around_a_launch_are_its_callers_innermost_first() -> None:
    a, b, c = LaunchOp("outer", ()), LaunchOp("first", ()), LaunchOp("second", ())
    thread = _Thread([(0, 100, a), (10, 20, b), (30, 40, c)])
    assert thread.around(35) == (c, a)
    assert thread.around(50) == (a,)        # after both children: only the outer op spans it
    assert thread.around(150) == ()


def test_only_the_nodes_own_op_with_agreeing_sizes_binds() -> None:
    linear = LaunchOp("aten::linear", ((2, 7, 64), (192, 64), None))
    mm = LaunchOp("aten::mm", ((14, 64), (64, 192)))
    assert bind_node("aten.linear.default", LINEAR_ARGS, (mm, linear)) == \
        Binding({"s44": 2, "s70": 7}, "aten::linear")
    # Another op's dims never bind, whatever they hold.
    assert bind_node("aten.linear.default", LINEAR_ARGS, (mm,)) is None
    # A literal size that differs (a transposed weight) means other tensors: nothing is bound.
    assert bind_node("aten.linear.default", LINEAR_ARGS,
                     (LaunchOp("aten::linear", ((2, 7, 64), (64, 192), None)),)) is None
    # The same symbol twice must read the same value.
    square = "%x : s0xs0 : torch.float32"
    assert bind_node("aten.relu.default", square, (LaunchOp("aten::relu", ((3, 4),)),)) is None
    assert bind_node("aten.relu.default", square, (LaunchOp("aten::relu", ((3, 3),)),)) == \
        Binding({"s0": 3}, "aten::relu")


def test_a_symbol_recorded_with_two_values_is_a_conflict() -> None:
    dims = collect([("linear (layer 0)", Binding({"s44": 2, "s70": 7}, "aten::linear")),
                    ("linear_9 (layer 1)", Binding({"s44": 2, "s70": 9}, "aten::linear"))])
    assert dims.bound == {"s44": (2, "aten::linear at linear (layer 0)")}
    assert dims.conflicts == {"s70": "the trace records s70 as 7 (aten::linear at linear "
                                     "(layer 0)); 9 (aten::linear at linear_9 (layer 1))"}


def _chains(path: object) -> tuple[int, dict[int, tuple[LaunchOp, ...]] | None, list[int]]:
    db = read_trace(path)  # type: ignore[arg-type]
    try:
        kernels = select(db, AUTO_CHOICE).kernels
        for k in kernels:
            k.node = "n"     # as if every kernel were mapped
        return len(db.memo.get(CPU_OPS, ())), launch_ops(db, kernels), \
            [k.correlation or 0 for k in kernels]
    finally:
        db.close()


def test_a_real_eager_trace_records_the_linear_around_each_gemm() -> None:
    recorded, chains, _ = _chains(HF_QWEN)
    assert recorded > 3000 and chains
    addmm = next(c for c in chains.values() if c[0].name == "aten::addmm")
    # Qwen1.5-0.5B's q projection on a batch of 16 prompts of 559 tokens, hidden size 1024.
    assert addmm[1] == LaunchOp("aten::linear", ((16, 559, 1024), (1024, 1024), (1024,)))
    args = ("%x : s0xs1x1024 : torch.bfloat16, %w : 1024x1024 : torch.bfloat16, "
            "%b : 1024 : torch.bfloat16")
    assert bind_node("aten.linear.default", args, addmm) == \
        Binding({"s0": 16, "s1": 559}, "aten::linear")


def test_graph_replays_and_traces_without_shapes_bind_nothing() -> None:
    # The B300 decode step is one CUDA graph replay: its ops ran at capture, not around the
    # launch, so no kernel has a recorded op (shapes recorded: an empty answer, not None).
    recorded, chains, _ = _chains(B300)
    assert recorded > 0 and chains == {}
    # The nsys export's NVTX ranges carry op names without sizes.
    recorded, chains, _ = _chains(H100)
    assert recorded == 0 and chains is None
