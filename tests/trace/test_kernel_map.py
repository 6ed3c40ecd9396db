"""The kernel map: data covering the design table, user files merged and validated."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tb_ad_layer.errors import InputError
from tb_ad_layer.trace.kernel_map import BUILTIN_PATH, load_kernel_map

# The DESIGN.md table, row by row: FX op target -> kernel names (spelled as in traces).
TABLE = [
    ("auto_deploy.flashinfer_mla_with_cache.default", ["fmhaSm100fKernel_QkvE4m3OBfloat16H576HV512"]),
    (
        "auto_deploy.finegrained_fp8_linear.default",
        ["fp8_blockscale_quantize_kernel", "pack_fp32_to_ue8m0", "deep_gemm_fp8_kernel"],
    ),
    ("auto_deploy.torch_linear_simple.default", ["nvjet_gemm_tst_64x8", "splitKreduce_kernel"]),
    ("auto_deploy.flashinfer_rms_norm.default", ["rms_norm_reduce_fusion"]),
    ("auto_deploy.flashinfer_fused_add_rms_norm.default", ["fused_kernel_a5fe00112233"]),
    ("auto_deploy.mlir_fused.default", ["fused_kernel_1984deadbeef"]),
    ("auto_deploy.mlir_fused.default", ["fused_kernel_2e06cafe0000"]),
    (
        "auto_deploy.trtllm_moe_fused.default",
        [
            "bmm_E4m3_E4m3E4m3_Fp32_t128",
            "moe_activation_deepseek",
            "bmm_Bfloat16_E4m3E4m3_Fp32",
            "moe_finalize",
        ],
    ),
    ("trtllm.noaux_tc_op.default", ["deepseek_v3_topk"]),
    ("auto_deploy.fused_swiglu_mlp.default", ["deep_gemm_fp8", "deep_gemm_fp8", "act_and_mul"]),
    (
        "auto_deploy.fused_finegrained_fp8_swiglu_mlp.default",
        ["deep_gemm_fp8", "deep_gemm_fp8", "act_and_mul"],
    ),
    ("auto_deploy.trtllm_dist_all_reduce.default", ["nccl_allreduce_symk"]),
    ("auto_deploy.trtllm_dist_all_reduce.default", ["symm_mem_allreduce"]),
    ("auto_deploy.symm_mem_all_gather.default", ["symm_mem_allgather"]),
    ("auto_deploy.symm_mem_all_gather.default", ["nccl_allgather"]),
    ("auto_deploy.triton_rope_on_interleaved_qk_inputs.default", ["mla_rope_assign_qkv"]),
    # Generic families.
    ("aten.mm.default", ["nvjet_tst_128x64_64x8_1x2_h_bz_TNT"]),
    ("auto_deploy.torch_attention.default", ["fmhaSm90Kernel_QkvBfloat16"]),
    ("auto_deploy.torch_attention.default", ["flash_fwd_splitkv_kernel"]),
    ("auto_deploy.trtllm_dist_all_reduce.default", ["ncclDevKernel_AllReduce_Sum_bf16_RING_LL"]),
    ("auto_deploy.trtllm_dist_all_reduce.default", ["multimem_all_reduce_kernel"]),
    ("auto_deploy.rope.default", ["applyMLARopeAndAssignQKVKernelGeneration"]),
    ("auto_deploy.trtllm_moe_fused.default", ["routingIndicesClusterKernel", "finalizeKernelVecLoad"]),
    ("aten.zeros.default", ["vectorized_elementwise_kernel<FillFunctor>"]),
    ("aten.cat.default", ["CatArrayBatchedCopy"]),
    ("aten.mul.Tensor", ["vectorized_elementwise_kernel<MulFunctor>"]),
    ("aten.add.Tensor", ["triton_poi_fused_add_0"]),
    ("aten.mean.dim", ["reduce_kernel<MeanOps>"]),
    ("aten.silu.default", ["act_and_mul_kernel"]),
]


@pytest.mark.parametrize("op, kernels", TABLE)
def test_builtin_rows_cover_the_design_table(op: str, kernels: list[str]) -> None:
    row = load_kernel_map().row_for_op(op)
    assert row is not None, op
    free = list(range(len(row.kernel_res)))
    for kernel in kernels:
        slot = next((j for j in free if row.slot_accepts(j, kernel, kernel)), None)
        assert slot is not None, (op, kernel, row.op)
        free.remove(slot)


def test_no_specific_hashes_and_view_ops_launch_nothing() -> None:
    text = BUILTIN_PATH.read_text()
    assert not re.search(r"fused_kernel_[0-9a-f]{3,}", text)
    kmap = load_kernel_map()
    for op in (
        "aten.view.default",
        "aten.reshape.default",
        "<built-in function getitem>",
        "aten.unsqueeze.default",
        "aten.permute.default",
        "aten.split_with_sizes.default",
        "aten.t.default",
    ):
        assert kmap.row_for_op(op) is None, op


@pytest.mark.parametrize("content, field", [
    ("{", None),
    ('{"op": "x"}', "rows"),
    ('[{"kernels": ["a"]}]', "[0].op"),
    ('[{"op": "x", "kernels": "a"}]', "[0].kernels"),
    ('[{"op": "x", "kernels": []}]', "[0].kernels"),
    ('[{"op": "x", "kernels": ["a", "(unclosed"]}]', "[0].kernels[1]"),
    ('[{"op": "x", "kernels": ["a"], "note": 3}]', "[0].note"),
    ('[{"op": "x", "kernels": ["a"], "oops": 1}]', "[0].oops"),
    ('["row"]', "[0]"),
])
def test_bad_user_kernel_map(tmp_path: Path, content: str, field: str | None) -> None:
    path = tmp_path / "map.json"
    path.write_text(content)
    with pytest.raises(InputError) as err:
        load_kernel_map(path)
    assert err.value.field == field and err.value.path == str(path)
    if field is None:
        assert err.value.line == 1


def test_user_rows_first_and_object_form(tmp_path: Path) -> None:
    path = tmp_path / "map.json"
    path.write_text(json.dumps({"rows": [{"op": "finegrained_fp8_linear", "kernels": ["my_gemm"]}]}))
    kmap = load_kernel_map(path)
    row = kmap.row_for_op("auto_deploy.finegrained_fp8_linear.default")
    assert row.kernels == ("my_gemm",) and row.source == str(path)
    assert kmap.as_json()[0] == {"op": "finegrained_fp8_linear", "kernels": ["my_gemm"], "note": ""}
    with pytest.raises(InputError, match="cannot read"):
        load_kernel_map(tmp_path / "missing.json")
