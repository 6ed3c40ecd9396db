#!/usr/bin/env python3
"""Generate realistic GPU traces of LLM inference for a model plan, with ground truth.

Writes nsys-schema SQLite exports (``StringIds``, ``CUPTI_ACTIVITY_KIND_KERNEL`` with graph ids,
``CUPTI_ACTIVITY_KIND_RUNTIME`` with ``cudaGraphLaunch``/``cudaLaunchKernel`` rows, memcpy/memset
noise, ``NVTX_EVENTS`` for prefill, ``META_DATA_EXPORT``/``META_DATA_CAPTURE``, optional
``CUDA_GRAPH_NODE_EVENTS``) and PyTorch profiler Chrome-trace JSON, plus ``<name>.truth.json``:
the layer and FX node of every kernel of replay/pass 0 (all passes for prefill).

A plan is a list of layers (kind + ordered ``(node id, op target, stream)``), built in code
(DeepSeek-V3-like: dense layers first, then MoE layers with shared experts and the KV branch on an
aux stream) or read from a ``<stem>.truth.json`` beside an FX dump (``--plan-from``). A truth that
names no streams (an export stage) gets AutoDeploy's multi-stream layout: shared experts and MLA's
KV projection path on the layer's aux stream, starting with their block and joined where the
dump's dataflow first reads them. Every op that launches a kernel gets one with the name PyTorch
or TensorRT-LLM gives it (``rsqrt_kernel_cuda``, ``MulFunctor``, ``GeluCUDAKernelImpl``,
``nvjet``...).

Examples::

    python tools/make_traces.py --out tests/fixtures/traces --name dsv3_decode --layers 5 --dense 2 \\
        --replays 12
    python tools/make_traces.py --out /tmp --name big --layers 61 --dense 3 --target-rows 2000000
    python tools/make_traces.py --out /tmp --name p --phase prefill --passes 3 --format both
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import random
import re
import sqlite3
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

# --------------------------------------------------------------------------------------------
# Plans
# --------------------------------------------------------------------------------------------


@dataclass
class PlanNode:
    """One FX node: id, op target, stream ("main"/"aux"), layer (None: model level), group."""

    id: str
    op: str
    stream: str = "main"
    layer: int | None = None
    group: str = "other"
    sub_group: str | None = None
    join: bool = False  # waits for the aux stream before running
    fork: str | None = None  # aux nodes: the main node after whose start the aux run may begin
    fork_done: bool = False  # aux nodes: ... after whose end (it computes the run's input)


@dataclass
class PlanLayer:
    index: int
    kind: str
    nodes: list[PlanNode]


@dataclass
class Plan:
    model: str
    prologue: list[PlanNode]
    layers: list[PlanLayer]
    epilogue: list[PlanNode]

    def all_nodes(self) -> Iterator[tuple[int | None, PlanNode]]:
        for n in self.prologue:
            yield None, n
        for layer in self.layers:
            for n in layer.nodes:
                yield layer.index, n
        for n in self.epilogue:
            yield None, n


class _Namer:
    """FX-style unique node names: ``add``, ``add_1``, ``add_2``..."""

    def __init__(self) -> None:
        self.count: dict[str, int] = {}

    def __call__(self, base: str) -> str:
        n = self.count.get(base, 0)
        self.count[base] = n + 1
        return base if n == 0 else f"{base}_{n}"


def dsv3_plan(num_layers: int = 5, dense_layers: int = 2, unknown_kernel: bool = False) -> Plan:
    """A DeepSeek-V3-like decode plan (MLA attention, fp8 linears, MoE + shared experts on aux)."""
    name = _Namer()

    def node(op: str, base: str, group: str, sub: str | None = None, stream: str = "main",
             layer: int | None = None, join: bool = False) -> PlanNode:
        return PlanNode(name(base), op, stream, layer, group, sub, join)

    AD = "auto_deploy."
    prologue = [node("aten.embedding.default", "embedding", "other")]
    layers = []
    for li in range(num_layers):
        kind = "dense" if li < dense_layers else "moe"
        n = [
            node(AD + "flashinfer_rms_norm.default", "flashinfer_rms_norm_default", "norm", None, layer=li),
            node(
                AD + "finegrained_fp8_linear.default",
                "finegrained_fp8_linear_default",
                "mla",
                "q_branch",
                layer=li,
            ),
            node(
                AD + "flashinfer_rms_norm.default", "flashinfer_rms_norm_default", "mla", "q_branch", layer=li
            ),
            node(
                AD + "finegrained_fp8_linear.default",
                "finegrained_fp8_linear_default",
                "mla",
                "q_branch",
                layer=li,
            ),
            node("aten.view.default", "view", "mla", "q_branch", layer=li),
            node(
                AD + "finegrained_fp8_linear.default",
                "finegrained_fp8_linear_default",
                "mla",
                "kv_branch",
                "aux",
                li,
            ),
            node("aten.split_with_sizes.default", "split_with_sizes", "mla", "kv_branch", "aux", li),
            node("<built-in function getitem>", "getitem", "mla", "kv_branch", "aux", li),
            node(
                AD + "flashinfer_rms_norm.default",
                "flashinfer_rms_norm_default",
                "mla",
                "kv_branch",
                "aux",
                li,
            ),
            node(
                AD + "triton_rope_on_interleaved_qk_inputs.default",
                "triton_rope_on_interleaved_qk_inputs_default",
                "mla",
                "rope",
                layer=li,
                join=True,
            ),
            node(
                AD + "flashinfer_mla_with_cache.default",
                "flashinfer_mla_with_cache_default",
                "mla",
                None,
                layer=li,
            ),
            node(
                AD + "finegrained_fp8_linear.default", "finegrained_fp8_linear_default", "mla", None, layer=li
            ),
            node(
                AD + "trtllm_dist_all_reduce.default", "trtllm_dist_all_reduce_default", "mla", None, layer=li
            ),
            node(
                AD + "flashinfer_fused_add_rms_norm.default",
                "flashinfer_fused_add_rms_norm_default",
                "norm",
                None,
                layer=li,
            ),
        ]
        if kind == "dense":
            n += [
                node(
                    AD + "fused_finegrained_fp8_swiglu_mlp.default",
                    "fused_finegrained_fp8_swiglu_mlp_default",
                    "mlp",
                    None,
                    layer=li,
                ),
                node(
                    AD + "trtllm_dist_all_reduce.default",
                    "trtllm_dist_all_reduce_default",
                    "mlp",
                    None,
                    layer=li,
                ),
                node("aten.add.Tensor", "add", "mlp", None, layer=li),
            ]
        else:
            n += [
                node("trtllm.dsv3_router_gemm_op.default", "dsv3_router_gemm_op_default", "moe", "moe_router",
                     layer=li),
                node("trtllm.noaux_tc_op.default", "noaux_tc_op_default", "moe", "moe_router", layer=li),
                node("<built-in function getitem>", "getitem", "moe", "moe_router", layer=li),
                node("<built-in function getitem>", "getitem", "moe", "moe_router", layer=li),
                node("aten.mul.Tensor", "mul", "moe", "moe_router", layer=li),
                node("aten._to_copy.default", "_to_copy", "moe", "moe_router", layer=li),
            ]
            if unknown_kernel:
                n.append(node("auto_deploy.mystery_op.default", "mystery_op_default", "moe", "moe_router",
                              layer=li))
            n += [
                node(
                    AD + "trtllm_moe_fused.default",
                    "trtllm_moe_fused_default",
                    "moe",
                    "moe_experts",
                    layer=li,
                ),
                node(
                    AD + "fused_finegrained_fp8_swiglu_mlp.default",
                    "fused_finegrained_fp8_swiglu_mlp_default",
                    "moe",
                    "shared_experts",
                    "aux",
                    li,
                ),
                node("aten.add.Tensor", "add", "moe", None, layer=li, join=True),
                node(
                    AD + "trtllm_dist_all_reduce.default",
                    "trtllm_dist_all_reduce_default",
                    "moe",
                    None,
                    layer=li,
                ),
                node("aten.add.Tensor", "add", "moe", None, layer=li),
            ]
        layers.append(PlanLayer(li, kind, n))
    epilogue = [
        node(AD + "flashinfer_rms_norm.default", "flashinfer_rms_norm_default", "norm"),
        node(AD + "torch_linear_simple.default", "torch_linear_simple_default", "other"),
        node("aten._to_copy.default", "_to_copy", "other"),
    ]
    return Plan("deepseek_v3_synthetic", prologue, layers, epilogue)


_DUMP_LINE = re.compile(r"^%(\S+) = ([^(]+)\(")
_REF = re.compile(r"%(\w+)")
#: Modules that AutoDeploy's multi-stream transforms move to an aux stream: the shared experts
#: beside the routed ones (``multi_stream_moe``) and MLA's KV projection path beside the query
#: path (``multi_stream_mla_attn``). Matched on the module path below the decoder layer.
_AUX_MODULES = re.compile(
    r"(^|\.)(shared_experts?|shared_expert_gate|kv_a_proj_with_mqa|kv_a_layernorm|kv_b_proj)"
    r"(\.|$)"
)
_LAYER_PATH = re.compile(r"(^|\.)layers\.\d+\.")


def plan_from_truth(truth_path: Path, dump_path: Path | None = None, aux_modules: bool = True) -> Plan:
    """Plan from a ``<stem>.truth.json`` (and the dump beside it for op targets, node order and
    dataflow).

    Truth format: ``{"model", "num_layers", "layer_kinds": {"0": "attention+mlp"}, "nodes": {"<id>":
    {"layer": int|null, "group", "module", "sub_group": optional, "stream": "main"|"aux" optional,
    "op": optional}}}``. Where the truth names no streams and ``aux_modules`` is set, the nodes of
    the modules AutoDeploy runs on an aux stream (``_AUX_MODULES``) go there: each such run
    may start once its block's first node has started, and the first main node reading its
    output waits for it.
    """
    truth = json.loads(truth_path.read_text(encoding="utf-8"))
    if dump_path is None:
        stem = (
            truth_path.name[: -len(".truth.json")]
            if truth_path.name.endswith(".truth.json")
            else truth_path.stem
        )
        candidate = truth_path.with_name(truth.get("dump") or f"{stem}.txt")
        dump_path = candidate if candidate.is_file() else None
    ops: dict[str, str] = {}
    refs: dict[str, set[str]] = {}
    order: list[str] = []
    if dump_path is not None:
        for line in dump_path.read_text(encoding="utf-8").splitlines():
            m = _DUMP_LINE.match(line)
            if m:
                ops[m.group(1)] = m.group(2).strip()
                refs[m.group(1)] = set(_REF.findall(line[m.end():]))
                order.append(m.group(1))
    nodes: dict[str, Any] = truth["nodes"]
    ids = [i for i in order if i in nodes] + [i for i in nodes if i not in ops]
    kinds = {int(k): v for k, v in truth.get("layer_kinds", {}).items()}
    num_layers = int(truth.get("num_layers", len(kinds)))
    layers = [PlanLayer(i, kinds.get(i, "dense"), []) for i in range(num_layers)]
    prologue, epilogue = [], []
    seen_layer = False
    named_streams = any(info.get("stream") for info in nodes.values())
    for nid in ids:
        info = nodes[nid]
        op = info.get("op") or ops.get(nid)
        if not op:
            continue  # placeholders and outputs launch nothing
        sub = info.get("sub_group")
        layer = info.get("layer")
        stream = info.get("stream") or ("aux" if sub and "aux" in sub else "main")
        module = info.get("module") or ""
        if not named_streams and aux_modules and layer is not None:
            below = _LAYER_PATH.split(module)[-1]
            if _AUX_MODULES.search(below):
                stream = "aux"
        pn = PlanNode(nid, op, stream, layer, info.get("group") or "other", sub)
        if layer is None:
            (epilogue if seen_layer else prologue).append(pn)
        elif 0 <= int(layer) < num_layers:
            seen_layer = True
            layers[int(layer)].nodes.append(pn)
    for layer in layers:
        if named_streams or not refs:
            _infer_joins(layer.nodes)
        else:
            _dataflow_joins(layer.nodes, refs)
    return Plan(truth.get("model", truth_path.stem), prologue, layers, epilogue)


def _dataflow_joins(nodes: list[PlanNode], refs: dict[str, set[str]]) -> None:
    """Forks and joins of the aux runs of one layer from the dump's dataflow: a run may start
    once the main node that computes its input has finished (a CUDA graph's aux stream waits for
    the event recorded after it; views and getitems launch nothing, so the wait is on the
    kernel-launching node before them), else once the first main node of its group has started
    (the block's input is ready then); the first kernel-launching main node at or after the
    first main reader of the run's output waits for it (or the layer's last main node)."""
    first_of_group: dict[str, str] = {}
    by_id = {n.id: n for n in nodes}
    for n in nodes:
        if n.stream == "main":
            first_of_group.setdefault(n.group, n.id)
    run: set[str] = set()
    pending = False
    last_main: PlanNode | None = None
    for n in nodes:
        if n.stream != "main":
            if not run:
                producer = _producer(n, by_id, refs)
                if producer is not None:
                    n.fork, n.fork_done = producer, True
                else:
                    n.fork = first_of_group.get(n.group)
            run.add(n.id)
            continue
        if kernels_for(n.op, ""):
            last_main = n
        if run and refs.get(n.id, set()) & run:
            pending = True
            run = set()
        if pending and kernels_for(n.op, ""):
            n.join = True
            pending = False
    if (pending or run) and last_main is not None:
        last_main.join = True


def _producer(node: PlanNode, by_id: dict[str, PlanNode], refs: dict[str, set[str]]) -> str | None:
    """The latest kernel-launching main node of the layer whose result ``node`` reads, through
    nodes that launch nothing (getitem, split, views); None if it reads none."""
    order = {nid: k for k, nid in enumerate(by_id)}
    best: str | None = None
    todo = list(refs.get(node.id, ()))
    seen: set[str] = set()
    while todo:
        nid = todo.pop()
        if nid in seen or nid not in by_id:
            continue
        seen.add(nid)
        src = by_id[nid]
        if src.stream != "main":
            continue
        if kernels_for(src.op, ""):
            if best is None or order[nid] > order[best]:
                best = nid
        else:
            todo.extend(refs.get(nid, ()))
    return best


_JOIN_OPS = re.compile(r"attention|mla|rope|add|moe|all_reduce|allreduce|cat")


def _infer_joins(nodes: list[PlanNode]) -> None:
    """Mark where the main stream waits for each aux run: the first consuming-looking main node
    after the run, else the layer's last main node (aux work never outlives its layer)."""
    pending = False
    last_main = None
    for n in nodes:
        if n.stream != "main":
            pending = True
            continue
        last_main = n
        if pending and _JOIN_OPS.search(n.op) and kernels_for(n.op, ""):
            n.join = True
            pending = False
    if pending and last_main is not None:
        last_main.join = True


# --------------------------------------------------------------------------------------------
# Kernel families (real Hopper/Blackwell LLM inference kernel names)
# --------------------------------------------------------------------------------------------

Spec = tuple[str, str, float]  # full demangled name, nsys shortName, base duration (us)

_QUANT: Spec = (
    "void tensorrt_llm::kernels::fp8_blockscale_gemm::scale_1x128_kernel<__nv_bfloat16, __nv_fp8_e4m3, "
    "128>(__nv_fp8_e4m3*, float*, __nv_bfloat16 const*, int, int, int)",
    "scale_1x128_kernel",
    1.6,
)
_PACK: Spec = (
    "void deep_gemm::pack_fp32_to_ue8m0_kernel<128u, 4u>(float const*, int*, unsigned int, unsigned int)",
    "pack_fp32_to_ue8m0_kernel",
    1.2,
)


def _deep_gemm(n: int, k: int, us: float) -> Spec:
    return (
        f"void deep_gemm::sm100_fp8_gemm_1d1d_impl<(cute::UMMA::Major)0, (cute::UMMA::Major)0, 128u, {n}u, "
        f"{k}u, 64u, 128u, 1u, 8u, 128u, 128u, 1u, 6u, 6u, 3u, true, (deep_gemm::GemmType)0, false, "
        "cutlass::bfloat16_t>(int*, unsigned int, unsigned int, unsigned int, CUtensorMap, CUtensorMap, "
        "CUtensorMap, CUtensorMap)",
        "sm100_fp8_gemm_1d1d_impl",
        us,
    )


def _elementwise(functor: str, vec: int = 4, arity: int = 3) -> Spec:
    return (
        f"void at::native::vectorized_elementwise_kernel<{vec}, at::native::{functor}<c10::BFloat16>, "
        f"std::array<char*, {arity}ul> >(int, at::native::{functor}<c10::BFloat16>, std::array<char*, "
        f"{arity}ul>)",
        "vectorized_elementwise_kernel",
        1.1,
    )


def _unary(fn: str, lam: str = "float", us: float = 1.1) -> Spec:
    """An at::native unary/lambda kernel as PyTorch names it (``rsqrt_kernel_cuda(...)::{lambda...}``)."""
    body = (f"at::native::{fn}(at::TensorIteratorBase&)::{{lambda()#1}}::operator()() const::{{lambda()#4}}::"
            f"operator()() const::{{lambda({lam})#1}}")
    return (
        f"void at::native::vectorized_elementwise_kernel<4, {body}, std::array<char*, 2ul> >(int, {body}, "
        "std::array<char*, 2ul>)",
        "vectorized_elementwise_kernel",
        us,
    )


def _binary(functor: str, us: float = 1.2) -> Spec:
    """An at::native BinaryFunctor kernel (``binary_internal::MulFunctor<float>``...)."""
    f = (
        "at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, "
        f"at::native::binary_internal::{functor}<float> >"
    )
    return (f"void at::native::vectorized_elementwise_kernel<4, {f}, std::array<char*, 3ul> >(int, {f}, "
            "std::array<char*, 3ul>)", "vectorized_elementwise_kernel", us)


def _reduce(ops: str, us: float = 2.2) -> Spec:
    r = (f"at::native::ReduceOp<float, at::native::{ops}<float, float, float, float>, unsigned int, "
         "c10::BFloat16, 4, 4>")
    return (f"void at::native::reduce_kernel<512, 1, {r} >({r})", "reduce_kernel", us)


_COPY: Spec = (
    "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda("
    "at::TensorIteratorBase&)"
    "::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, "
    "std::array<char*, 2ul>, 4, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, "
    "unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> >(int, "
    "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::"
    "{lambda()#7}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul>, TrivialOffsetCalculator<1, "
    "unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, "
    "at::native::memory::StoreWithCast<1>)",
    "unrolled_elementwise_kernel",
    1.3,
)
_NVJET = ("nvjet_tst_128x64_64x8_1x2_h_bz_splitK_TNT", "nvjet_tst_128x64_64x8_1x2_h_bz_splitK_TNT", 6.0)
_SPLITK = (
    "void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16, float, __nv_bfloat16, true, "
    "false, false>(cublasLt::cublasSplitKParams<float>, float const*, __nv_bfloat16 const*, "
    "__nv_bfloat16*, float const*, float const*, __nv_bfloat16 const*, float const*, __nv_bfloat16*, "
    "void*, long, float*, int*)",
    "splitKreduce_kernel",
    1.5,
)
_RMS = (
    "void tensorrt_llm::kernels::rms_norm_reduce_fusion_kernel<__nv_bfloat16, 8, "
    "true>(tensorrt_llm::kernels::RMSNormParams<__nv_bfloat16>)",
    "rms_norm_reduce_fusion_kernel",
    2.4,
)
_ALLREDUCE = ("ncclSymkDevKernel_AllReduce_RSxLDMC_AGxSTMC_sum_bf16(ncclSymkDevWorkArgs4K)",
              "ncclSymkDevKernel_AllReduce_RSxLDMC_AGxSTMC_sum_bf16", 8.5)
_ACT = (
    "void tensorrt_llm::kernels::act_and_mul_kernel<__nv_bfloat16, &tensorrt_llm::kernels::silu<float>, true>"
    "(__nv_fp8_e4m3*, float*, __nv_bfloat16 const*, int)",
    "act_and_mul_kernel",
    2.6,
)
_ROUTING = (
    "void moe::dev::routing::routingDeepSeek::routingIndicesClusterKernel<"
    "moe::dev::routing::routingDeepSeek::KernelParams<__nv_bfloat16, float, 8, 256, true> >"
    "(moe::dev::routing::routingDeepSeek::KernelParams<__nv_bfloat16, float, 8, 256, true>)",
    "routingIndicesClusterKernel",
    4.0,
)
_BMM1 = (
    "bmm_E4m3_E4m3E4m3_Fp32_t128x8x128u2_s6_et64x8_m64x8x32_cga1x1x1_16dp256b_TN_transOut_schedS_bN_sm100a",
    "bmm_E4m3_E4m3E4m3_Fp32_t128x8x128u2_s6_et64x8_m64x8x32_cga1x1x1_16dp256b_TN_transOut_schedS_bN_sm100a",
    24.0,
)
_MOE_ACT = (
    "void moe::dev::activation::activationDeepSeekKernel<moe::dev::activation::KernelParams<__nv_fp8_e4m3, "
    "float, true> >(moe::dev::activation::KernelParams<__nv_fp8_e4m3, float, true>)",
    "activationDeepSeekKernel",
    3.0,
)
_BMM2 = (
    "bmm_Bfloat16_E4m3E4m3_Fp32_t128x8x128u2_s6_et64x8_m64x8x32_cga1x1x1_16dp256b_TN_transOut_schedS_bN_sm100a",
    "bmm_Bfloat16_E4m3E4m3_Fp32_t128x8x128u2_s6_et64x8_m64x8x32_cga1x1x1_16dp256b_TN_transOut_schedS_bN_sm100a",
    13.0,
)
_FINALIZE = (
    "void moe::dev::finalize::finalizeKernelVecLoad<moe::dev::finalize::KernelParams<__nv_bfloat16, "
    "__nv_bfloat16, float, false> >(moe::dev::finalize::KernelParams<__nv_bfloat16, __nv_bfloat16, float, "
    "false>)",
    "finalizeKernelVecLoad",
    4.0,
)
_MYSTERY = ("void acme::secret::mystery_kernel<7, true>(acme::secret::Params<float>&)", "mystery_kernel", 2.0)

#: (op regex, kernels). The first match decides; ops matching nothing launch no kernel.
#: ``None``: a unary kernel named after the op (``neg_kernel_cuda``).
FAMILIES: list[tuple[str, list[Spec] | None]] = [
    (
        r"flashinfer_mla_with_cache|mla_with_cache|torch_mla",
        [
            (
                "fmhaSm100fKernel_QkvE4m3OBfloat16H576HV512HVPerCta256PagedKvDenseP64MultiCtasKvCgaVarSeqQ8Kv128StaticSwapsAbForGen",
                "fmhaSm100fKernel_QkvE4m3OBfloat16H576HV512HVPerCta256PagedKvDenseP64MultiCtasKv"
                "CgaVarSeqQ8Kv128StaticSwapsAbForGen",
                18.0,
            )
        ],
    ),
    (
        r"attention|sdpa|scaled_dot_product",
        [
            (
                "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, "
                "false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t> >, "
                "false, true, false, false, true, true, false, false>(flash::Flash_fwd_params)",
                "flash_fwd_splitkv_kernel",
                15.0,
            )
        ],
    ),
    (
        r"fused_finegrained_fp8_swiglu_mlp|fused_swiglu_mlp",
        [_QUANT, _PACK, _deep_gemm(4096, 7168, 9.0), _ACT, _QUANT, _PACK, _deep_gemm(7168, 2048, 7.0)],
    ),
    (r"finegrained_fp8_linear", [_QUANT, _PACK, _deep_gemm(1536, 7168, 6.5)]),
    (
        r"dsv3_router_gemm",
        [
            (
                "void tensorrt_llm::kernels::dsv3MinLatencyKernels::router_gemm_kernel<__nv_bfloat16, "
                "128, 8, 256, 7168>(float*, __nv_bfloat16 const*, __nv_bfloat16 const*)",
                "router_gemm_kernel",
                3.2,
            )
        ],
    ),
    (r"torch_linear_simple|aten\.(mm|linear|addmm|matmul|bmm|baddbmm)\.", [_NVJET, _SPLITK]),
    (
        r"fused_allreduce_residual_rmsnorm",
        [
            (
                "void tensorrt_llm::kernels::ar_fusion::allreduce_fusion_kernel_oneshot_lamport<"
                "(tensorrt_llm::kernels::AllReduceFusionPattern)1, __nv_bfloat16, 8, true, false>"
                "(tensorrt_llm::kernels::ar_fusion::AllReduceFusionParams<__nv_bfloat16>)",
                "allreduce_fusion_kernel_oneshot_lamport",
                9.0,
            )
        ],
    ),
    (r"fused_add_rms_norm", [("fused_kernel_@add_rms_norm", "fused_kernel_@add_rms_norm", 2.8)]),
    (r"rms_norm|rmsnorm", [_RMS]),
    (r"mlir_fused", [("fused_kernel_@mlir", "fused_kernel_@mlir", 2.9)]),
    (r"trtllm_moe_fused|moe_fused", [_ROUTING, _BMM1, _MOE_ACT, _BMM2, _FINALIZE]),
    (
        r"noaux_tc_op",
        [
            (
                "void tensorrt_llm::kernels::deepseek_v3_topk_kernel<__nv_bfloat16, float, 256, 8, 4>(float "
                "const*, __nv_bfloat16 const*, float*, int*, int, int, int, int, float)",
                "deepseek_v3_topk_kernel",
                3.5,
            )
        ],
    ),
    (r"all_reduce|allreduce", [_ALLREDUCE]),
    (
        r"all_gather",
        [
            (
                "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                "ncclDevKernel_AllGather_RING_LL",
                7.0,
            )
        ],
    ),
    (r"rope|rotary", [("mla_rope_assign_qkv", "mla_rope_assign_qkv", 2.2)]),
    (r"mystery_op", [_MYSTERY]),
    (
        r"aten\.embedding",
        [
            (
                "void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, unsigned "
                "int, 2, 2, -2, true>(at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, at::cuda::"
                "detail::TensorInfo<c10::BFloat16 const, unsigned int>, at::cuda::detail::TensorInfo<long "
                "const, unsigned int>, int, int, unsigned int, unsigned int, long)",
                "indexSelectLargeIndex",
                2.0,
            )
        ],
    ),
    (
        r"aten\.(cat|concatenate|stack)\.",
        [
            (
                "void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::(anonymous "
                "namespace)::OpaqueType<2u>, unsigned int, 3, 128, 1>(at::native::(anonymous namespace)::"
                "OpaqueType<2u>*, at::native::(anonymous namespace)::CatArrInputTensorMetadata<at::native"
                "::(anonymous namespace)::OpaqueType<2u>, unsigned int, 128, 1>, at::native::(anonymous "
                "namespace)::TensorSizeStride<unsigned int, 4u>, int, unsigned int)",
                "CatArrayBatchedCopy",
                1.5,
            )
        ],
    ),
    (
        r"aten\.(fill|zeros|zero|full|ones|new_zeros|new_ones|new_full|zeros_like|ones_like|full_like|eye)[._]",
        [_elementwise("FillFunctor", 4, 1)],
    ),
    (
        r"aten\.(conv1d|convolution)\.",
        [
            (
                "void at::native::(anonymous namespace)::conv_depthwise2d_forward_kernel<0, "
                "c10::BFloat16, int>(at::GenericPackedTensorAccessor<c10::BFloat16 const, 4ul, "
                "at::DefaultPtrTraits, int>, int, int, int, int, int, int, int, int, int, int)",
                "conv_depthwise2d_forward_kernel",
                2.5,
            )
        ],
    ),
    (
        r"aten\.cumsum\.",
        [
            (
                "void at_cuda_detail::cub::DeviceScanKernel<at_cuda_detail::cub::DeviceScanPolicy<float>"
                "::Policy900, float const*, float*, at_cuda_detail::cub::ScanTileState<float, true>, "
                "std::plus<float>, at_cuda_detail::cub::NullType, int>(float const*, float*, int)",
                "DeviceScanKernel",
                2.0,
            )
        ],
    ),
    (r"aten\.einsum\.", [_NVJET, _SPLITK]),
    (
        r"aten\.arange\.",
        [
            (
                "void (anonymous namespace)::elementwise_kernel_with_index<int, at::native::arange_cuda_out"
                "(c10::Scalar const&, c10::Scalar const&, c10::Scalar const&, at::Tensor&)::{lambda()#1}::"
                "operator()() const::{lambda()#2}::operator()() const::{lambda(long)#1}>(int, int, long)",
                "elementwise_kernel_with_index",
                1.0,
            )
        ],
    ),
    (
        r"aten\.(tril|triu)\.",
        [
            (
                "void at::native::triu_tril_kernel<c10::BFloat16, int, false, 4, true>(at::cuda::"
                "detail::TensorInfo<c10::BFloat16, int>, at::cuda::detail::TensorInfo<c10::BFloat16 "
                "const, int>, long, long)",
                "triu_tril_kernel",
                1.2,
            )
        ],
    ),
    # constant_pad_nd fills the output, then copies the input into its middle.
    (r"aten\.(pad|constant_pad_nd)\.", [_elementwise("FillFunctor", 4, 1), _COPY]),
    (r"aten\.(repeat_interleave|repeat)\.", [_COPY]),
    (
        r"aten\.histc\.",
        [
            (
                "void at::cuda::detail::kernelHistogram1D<float, float, long, 1, 2, -1, (at::cuda::detail::"
                "CUDAHistogramMemoryType)0, at::native::(anonymous namespace)::histogramdd_cuda_kernel"
                "(...)::{lambda(float)#1}>(at::cuda::detail::TensorInfo<float, long>, ...)",
                "kernelHistogram1D",
                2.0,
            )
        ],
    ),
    (r"auto_deploy\.torch_moe\.", [_ROUTING, _BMM1, _MOE_ACT, _BMM2, _FINALIZE]),
    (r"aten\.(_to_copy|to|copy_?|clone|contiguous|type_as)\.", [_COPY]),
    (r"aten\.(add_?|sub|rsub|diff)\.", [_elementwise("CUDAFunctor_add")]),
    (r"aten\.(mul|multiply)_?\.", [_binary("MulFunctor")]),
    (r"aten\.div_?\.", [_binary("DivFunctor")]),
    (r"aten\.(floordiv|floor_divide)\.", [_unary("div_floor_kernel_cuda", "long")]),
    (
        r"aten\.(pow|square)\.",
        [
            (
                "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::"
                "pow_tensor_scalar_kernel_impl<float, float>(at::TensorIteratorBase&, float)::{lambda("
                "float)#1}, std::array<char*, 2ul> >(int, at::native::(anonymous namespace)::"
                "pow_tensor_scalar_kernel_impl<float, float>(at::TensorIteratorBase&, float)::{lambda("
                "float)#1}, std::array<char*, 2ul>)",
                "vectorized_elementwise_kernel",
                1.1,
            )
        ],
    ),
    (r"aten\.gelu\.", [_unary("GeluCUDAKernelImpl", "c10::BFloat16", 1.4)]),
    (r"aten\.silu\.", [_unary("silu_kernel", "c10::BFloat16", 1.3)]),
    (r"aten\.relu\.", [_unary("clamp_min_scalar_kernel_impl", "c10::BFloat16")]),
    (r"aten\.(eq|ne)\.", [_elementwise("CompareEqFunctor")]),
    (r"aten\.(lt|gt|le|ge)\.", [_elementwise("CompareFunctor")]),
    (r"aten\.(__and__|bitwise_and|logical_and)\.", [_elementwise("BitwiseAndFunctor")]),
    (r"aten\.(__or__|bitwise_or|logical_or)\.", [_elementwise("BitwiseOrFunctor")]),
    (r"aten\.where\.", [_unary("where_kernel_impl", "bool, c10::BFloat16, c10::BFloat16")]),
    (r"aten\.masked_fill_?\.", [_unary("masked_fill_kernel", "c10::BFloat16, bool")]),
    (r"aten\.clamp\.", [_unary("clamp_scalar_kernel_impl")]),
    (r"aten\.softplus\.", [_unary("softplus_kernel")]),
    (r"aten\.polar\.", [_unary("polar_kernel", "float, float")]),
    (
        r"aten\.(neg|rsqrt|sqrt|exp|expm1|log1p|log|sigmoid|tanh|cos|sin|abs|reciprocal|floor|bitwise_not|logical_not)\.",
        None,
    ),
    (
        r"aten\.(layer_norm|native_layer_norm)\.",
        [
            (
                "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, "
                "float>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, "
                "float*, float*, c10::BFloat16*)",
                "vectorized_layer_norm_kernel",
                2.0,
            )
        ],
    ),
    (
        r"aten\.(sort|argsort)\.",
        [
            (
                "void at::native::bitonicSortKVInPlace<2, -1, 16, 16, float, long, at::native::GTOp<float, "
                "true>, unsigned int>(at::cuda::detail::TensorInfo<float, unsigned int>, unsigned int, "
                "unsigned int, unsigned int, unsigned int, at::cuda::detail::TensorInfo<long, unsigned "
                "int>, unsigned int, at::native::GTOp<float, true>)",
                "bitonicSortKVInPlace",
                3.0,
            )
        ],
    ),
    (r"aten\.(sum)\.", [_reduce("func_wrapper_t")]),
    (r"aten\.(mean|var_mean|var)\.", [_reduce("MeanOps")]),
    (r"aten\.(amax|max|amin|min)\.", [_reduce("MaxOps")]),
    (
        r"aten\.(_softmax|softmax)\.",
        [
            (
                "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, "
                "float, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float "
                "const*, int)",
                "cunn_SoftMaxForward",
                2.4,
            )
        ],
    ),
    (
        r"aten\.topk\.",
        [
            (
                "void at::native::sbtopk::gatherTopK<float, unsigned int, 2, "
                "false>(at::cuda::detail::TensorInfo<float const, unsigned int>, unsigned int, unsigned "
                "int, bool, unsigned int, unsigned int, at::cuda::detail::TensorInfo<float, unsigned int>, "
                "unsigned int, at::cuda::detail::TensorInfo<long, unsigned int>, unsigned int, unsigned "
                "int*)",
                "gatherTopK",
                4.0,
            )
        ],
    ),
    (
        r"aten\.(gather|scatter|scatter_add)_?\.",
        [
            (
                "void at::native::_scatter_gather_elementwise_kernel<128, 8, "
                "at::native::_cuda_scatter_gather_internal_kernel<true, "
                "c10::BFloat16>::operator()<at::native::ReduceAdd>(at::TensorIterator&, long, long, long, "
                "at::native::ReduceAdd const&)::{lambda(int)#1}>(int, "
                "at::native::_cuda_scatter_gather_internal_kernel<true, "
                "c10::BFloat16>::operator()<at::native::ReduceAdd>(at::TensorIterator&, long, long, long, "
                "at::native::ReduceAdd const&)::{lambda(int)#1})",
                "_scatter_gather_elementwise_kernel",
                1.8,
            )
        ],
    ),
    (
        r"aten\.(index|index_put|index_select|index_copy|index_add)_?\.",
        [
            (
                "void at::native::index_elementwise_kernel<128, 4, "
                "at::native::gpu_index_kernel<at::native::index_kernel_impl<at::native::OpaqueType<2> "
                ">(at::TensorIteratorBase&, c10::ArrayRef<long>, "
                "c10::ArrayRef<long>)::{lambda(char*, char const*, long)#1}>(at::TensorIteratorBase&, "
                "c10::ArrayRef<long>, c10::ArrayRef<long>, "
                "at::native::index_kernel_impl<at::native::OpaqueType<2> >(at::TensorIteratorBase&, "
                "c10::ArrayRef<long>, c10::ArrayRef<long>)::{lambda(char*, char const*, long)#1} "
                "const&)::{lambda(int)#1}>(long, "
                "at::native::gpu_index_kernel<at::native::index_kernel_impl<at::native::OpaqueType<2> "
                ">(at::TensorIteratorBase&, c10::ArrayRef<long>, "
                "c10::ArrayRef<long>)::{lambda(char*, char const*, long)#1}>(at::TensorIteratorBase&, "
                "c10::ArrayRef<long>, c10::ArrayRef<long>, "
                "at::native::index_kernel_impl<at::native::OpaqueType<2> >(at::TensorIteratorBase&, "
                "c10::ArrayRef<long>, c10::ArrayRef<long>)::{lambda(char*, char const*, long)#1} "
                "const&)::{lambda(int)#1})",
                "index_elementwise_kernel",
                1.8,
            )
        ],
    ),
]
_FAMILY_RES = [(re.compile(p), specs) for p, specs in FAMILIES]
_ATEN_OP = re.compile(r"aten\.(\w+?)_?\.")
#: ATen ops that only make a new view or read metadata: PyTorch launches no kernel for them. Every
#: other ATen op computes something on the GPU and launches at least one kernel, so an op missing
#: from ``FAMILIES`` gets a unary kernel named after it rather than none (PyTorch's own naming).
NO_KERNEL_ATEN = frozenset(
    {
        "view",
        "_unsafe_view",
        "reshape",
        "expand",
        "expand_as",
        "broadcast_to",
        "permute",
        "transpose",
        "t",
        "numpy_T",
        "unsqueeze",
        "squeeze",
        "slice",
        "select",
        "narrow",
        "split",
        "split_with_sizes",
        "chunk",
        "unbind",
        "unflatten",
        "flatten",
        "alias",
        "detach",
        "view_as",
        "view_as_real",
        "view_as_complex",
        "as_strided",
        "movedim",
        "diagonal",
        "unfold",
        "sym_size",
        "sym_numel",
        "sym_stride",
        "_assert_tensor_metadata",
        "_assert_scalar",
        "sym_constrain_range_for_size",
        "dropout",
        "empty",
        "new_empty",
        "empty_like",
        "lift_fresh",
        "item",
        "_local_scalar_dense",
    }
)
_SAMPLING = [
    (
        "void tensorrt_llm::kernels::topKPerRowDecode<1024, false>(float const*, int const*, int*, int, "
        "int, int)",
        "topKPerRowDecode",
        3.0,
    ),
    (
        "void "
        "tensorrt_llm::kernels::samplingTopKKernels<float>(tensorrt_llm::kernels::TopKSamplingKernelParams<float>)",
        "samplingTopKKernels",
        4.0,
    ),
]


def kernels_for(op: str, salt: str) -> list[Spec]:
    """Kernels one node with target ``op`` launches; hash-named MLIR kernels get a per-op hash."""
    for pat, family in _FAMILY_RES:
        if pat.search(op):
            if family is None:
                # Unary math: PyTorch names the kernel after the op (``rsqrt_kernel_cuda``).
                m = _ATEN_OP.search(op)
                family = [_unary(f"{m.group(1) if m else 'unary'}_kernel_cuda")]
            specs = family
            out = []
            for full, short, us in specs:
                if "@" in full:
                    digest = hashlib.sha1(f"{salt}:{op}:{full}".encode()).hexdigest()[:16]
                    full = short = f"fused_kernel_{digest}"
                out.append((full, short, us))
            return out
    m = _ATEN_OP.search(op)
    if m is None or m.group(1) in NO_KERNEL_ATEN:
        return []
    return [_unary(f"{m.group(1)}_kernel_cuda")]


# --------------------------------------------------------------------------------------------
# Simulation
# --------------------------------------------------------------------------------------------

#: Stream layouts of a CUDA-graph replay:
#: ``main-aux``: one main and one aux stream for every layer (a capture replayed as captured);
#: ``single``: everything on one stream (SGLang/vLLM decode graphs);
#: ``per-layer``: AutoDeploy decode as nsys shows it: every layer runs on its own set of streams
#: (attention, MoE/MLP from the post-attention norm on, aux), the MoE stream of layer N also
#: carries the head of layer N+1 (its input norm and first projection: the first two nodes, or
#: only the projection where the norm was fused into layer N's last node), dense layers keep
#: attention and MLP on one stream, the launch stream runs the embedding and layer 0, and the
#: stream ids follow no order.
LAYOUTS = ("main-aux", "single", "per-layer")

#: The launch columns of a kernel row (grid, block, shared memory sizes...), in the order nsys
#: exports them: the same for every generated kernel and read by nothing here. The 2021 export
#: layout (``schema="2021"``, ``_OLD_LAUNCH``) has fewer of them than the later ones (``_LAUNCH``).
_OLD_LAUNCH = (128, 132, 1, 1, 256, 1, 1, 0, 49152, 0, 0, 0)
_LAUNCH = (1, 1, 128, 132, 1, 1, 256, 1, 1, 0, 49152, 0, 0, 0, 233472)


@dataclass
class Options:
    phase: str = "decode"
    replays: int = 12
    passes: int = 3
    devices: int = 1
    seed: int = 0
    jitter: float = 0.06
    graph_id: int = 7
    sampling_graph_id: int = 9
    memcpy_noise: bool = True
    nvtx: bool = True
    schema: str = "3.25"
    graph_mode: bool = False
    graph_node_events: bool = True
    torch_graph_ids: bool = False
    salt: str = "ad"
    layout: str = "main-aux"
    reshuffle_streams: bool = False
    capture_nvtx: bool = False
    modules: bool = False
    layer_nvtx: bool = False
    hooks: bool = False
    steps: bool = False
    class_per_kind: bool = False
    #: Planted per-rank slowdowns: (device, layer, scale, jitter): that device's kernels of
    #: that layer take ``scale`` times as long, spread by ``jitter`` instead of ``jitter``
    #: above (a straggler: scale > 1 with a small jitter; a noisy rank: a large jitter).
    slow: tuple[tuple[int, int, float, float], ...] = ()


@dataclass
class Template:
    """One activity of the model plan, with its place in the plan."""

    full: str
    short: str
    base_us: float
    stream: str
    layer: int | None
    node: str | None
    join: bool
    kind: str = "kernel"
    group: str = "other"
    seq: int = 0
    node_index: int = -1
    fork_index: int = -1  # aux: node index of the main node after whose start the run may begin
    fork_done: bool = False  # aux: ... after whose end


def build_templates(plan: Plan, opts: Options) -> list[Template]:
    """All activities of one forward pass in launch order (graph node order)."""
    out: list[Template] = []
    index_of = {node.id: index for index, (_, node) in enumerate(plan.all_nodes())}
    for index, (layer, node) in enumerate(plan.all_nodes()):
        specs = kernels_for(node.op, opts.salt)
        fork = index_of.get(node.fork, -1) if node.fork is not None else -1
        if opts.memcpy_noise and opts.phase == "decode" and "moe_fused" in node.op and node.layer is not None:
            # MoE workspace zeroing: a memset node inside the graph, owned by no FX node.
            out.append(
                Template(
                    "[CUDA memset]",
                    "[CUDA memset]",
                    0.9,
                    node.stream,
                    layer,
                    None,
                    False,
                    "memset",
                    node.group,
                    node_index=index,
                )
            )
        for j, (full, short, us) in enumerate(specs):
            out.append(Template(full, short, us, node.stream, layer, node.id, node.join and j == 0, "kernel",
                                node.group, node_index=index, fork_index=fork,
                                fork_done=node.fork_done))
    for seq, tpl in enumerate(out):
        tpl.seq = seq
    return out


@dataclass
class Row:
    """One generated activity row."""

    start: int
    end: int
    device: int
    stream: int
    correlation: int
    full: str
    short: str
    graph_id: int | None
    graph_node_id: int | None
    kind: str = "kernel"
    layer: int | None = None
    node: str | None = None
    replay: int | None = None
    seq: int = -1


@dataclass
class Trace:
    rows: list[Row] = field(default_factory=list)
    runtime: list[tuple[int, int, int, int, str]] = field(default_factory=list)  # start, end, tid, corr, name
    nvtx: list[tuple[int, int, str, int]] = field(default_factory=list)  # start, end, text, tid
    modules: list[tuple[int, int, str, int]] = field(default_factory=list)  # nn.Module ranges (profiler only)
    # start, end, device, stream, correlation, graph id
    graph_launches: list[tuple[int, int, int, int, int, int]] = field(default_factory=list)
    # CUDA_GRAPH_NODE_EVENTS: start, tid, graph node id, original graph node id (None at capture)
    node_events: list[tuple[int, int, int, int | None]] = field(default_factory=list)


_MAIN_STREAM, _AUX_STREAM, _HOST_STREAM = 7, 23, 13
_NODE_BASE = 0x10000
_CAPTURE_BASE = 0x40000
_CPU_TID = 4242
_STEP_BASE = 100


def _stream_ids(device: int) -> dict[str, int]:
    off = 8 * device
    return {"main": _MAIN_STREAM + off, "aux": _AUX_STREAM + off, "host": _HOST_STREAM + off}


def _norm_like(tpl: Template, op: str) -> bool:
    return tpl.group == "norm" or re.search(r"norm|rms", op) is not None


def layer_lanes(
    plan: Plan, templates: list[Template], opts: Options, rng: random.Random, device: int
) -> list[int]:
    """The stream id of every template under ``opts.layout`` (see ``LAYOUTS``)."""
    base = _stream_ids(device)
    if opts.layout == "single":
        return [base["main"]] * len(templates)
    if opts.layout == "main-aux":
        return [base["main"] if t.stream == "main" else base["aux"] for t in templates]
    if opts.layout != "per-layer":
        raise ValueError(f"unknown layout {opts.layout!r}; use one of {', '.join(LAYOUTS)}")
    ops = [n.op for _, n in plan.all_nodes()]
    pool = rng.sample(range(20 + 4000 * device, 4000 * (device + 1)), 3 * len(plan.layers) + 4)
    lanes = [base["main"]] * len(templates)
    by_layer: dict[int, list[Template]] = {}
    for t in templates:
        if t.layer is not None:
            by_layer.setdefault(t.layer, []).append(t)
    prev_ffn = base["main"]
    for li, layer in enumerate(plan.layers):
        ts = by_layer.get(layer.index, [])
        attn, ffn, aux = pool[3 * li], pool[3 * li + 1], pool[3 * li + 2]
        if li == 0:
            attn = base["main"]  # the launch stream runs the embedding and layer 0's attention
        if "moe" not in layer.kind:
            ffn = attn
        main = [t for t in ts if t.stream == "main"]
        # The head that runs on the previous layer's FFN stream: the layer's input norm and its
        # first projection. Where the input norm was fused with the previous layer's residual
        # add (that fused node ends the previous layer, on its FFN stream already), the
        # projection alone.
        head_nodes: list[int] = []
        head_size = 2
        for t in main:
            if t.kind == "kernel" and t.node_index not in head_nodes:
                if len(head_nodes) == head_size:
                    break
                if not head_nodes and not _norm_like(t, ops[t.node_index]):
                    head_size = 1
                head_nodes.append(t.node_index)
        # The FFN stream starts at the norm that opens the FFN block (post-attention norm).
        body = [t for t in main if t.kind == "kernel" and t.node_index not in head_nodes]
        ffn_at = next((i for i, t in enumerate(body) if t.group in ("moe", "mlp")), None)
        if ffn_at is not None:
            while ffn_at > 0 and _norm_like(body[ffn_at - 1], ops[body[ffn_at - 1].node_index]):
                ffn_at -= 1
            split = body[ffn_at].seq
        else:
            norms = [t for t in body if _norm_like(t, ops[t.node_index])]
            split = norms[0].seq if norms else (main[len(main) // 2].seq if main else 0)
        for t in ts:
            if t.stream != "main":
                lanes[t.seq] = aux
            elif t.node_index in head_nodes and li > 0:
                lanes[t.seq] = prev_ffn
            elif t.seq < split:
                lanes[t.seq] = attn
            else:
                lanes[t.seq] = ffn
        prev_ffn = ffn
    epilogue = [t for t in templates if t.layer is None and t.seq > max((t.seq for t in templates
                                                                        if t.layer is not None), default=-1)]
    if epilogue:
        # the final norm runs where the last layer ended, the rest on the launch stream; a final
        # norm fused into the last layer's residual add ended that layer (on its FFN stream)
        first = epilogue[0].node_index
        head = first if _norm_like(epilogue[0], ops[first]) else None
        for t in epilogue:
            lanes[t.seq] = prev_ffn if t.node_index == head else base["main"]
    return lanes


def simulate(plan: Plan, opts: Options, device: int = 0) -> Trace:
    """Timestamps for every activity of every replay (decode) or pass (prefill) on one device."""
    rng = random.Random(opts.seed * 1000 + device)
    templates = build_templates(plan, opts)
    streams = _stream_ids(device)
    lanes = layer_lanes(plan, templates, opts, rng, device)
    trace = Trace()
    t = 1_000_000_000 + device * 3_000
    corr = 1000
    scale = 1.0 if opts.phase == "decode" else 6.0
    cpu_tid = _CPU_TID + device

    slow = {layer: (scale, jitter) for d, layer, scale, jitter in opts.slow if d == device}

    def run_pass(t0: int, replay: int, eager: bool) -> int:
        nonlocal corr
        cursor = {"main": t0, "aux": t0}
        fork = None
        prev = "main"
        launch_corr = corr
        main_starts: list[tuple[int, int]] = []  # (node index, start) of the main stream's kernels
        main_ends: dict[int, int] = {}  # node index -> end of its last main-stream kernel
        for tpl in templates:
            factor, jitter = slow.get(tpl.layer, (1.0, opts.jitter))
            dur = max(300, int(tpl.base_us * scale * factor * 1000 * rng.gauss(1.0, jitter)))
            # One stream runs its kernels one after another: the single layout has no aux chain.
            stream = "main" if opts.layout == "single" else (tpl.stream if tpl.stream in cursor else "aux")
            if stream == "aux" and (fork is None or prev != "aux"):
                # Each aux run forks from the main stream where it stands, or, when the run's
                # input is ready earlier (its block's first node), from there.
                fork = cursor["main"]
                if tpl.fork_index >= 0 and tpl.fork_done and tpl.fork_index in main_ends:
                    fork = main_ends[tpl.fork_index]
                elif tpl.fork_index >= 0:
                    fork = next((at for index, at in main_starts if index >= tpl.fork_index), fork)
            prev = stream
            if stream == "main" and tpl.join:
                cursor["main"] = max(cursor["main"], cursor["aux"])
                fork = None
            start = max(cursor[stream], fork or 0) if stream == "aux" else cursor[stream]
            end = start + dur
            if stream == "main":
                main_starts.append((tpl.node_index, start))
                main_ends[tpl.node_index] = end
            gap = int(rng.uniform(600, 1500)) if not eager else int(rng.uniform(2000, 6000))
            cursor[stream] = end + gap
            if eager:
                corr += 1
                c = corr
                name = "cudaMemsetAsync_v3020" if tpl.kind == "memset" else "cudaLaunchKernel_v7000"
                trace.runtime.append((start - 20_000, start - 15_000, cpu_tid, c, name))
            else:
                c = launch_corr
            trace.rows.append(Row(start, end, device, lanes[tpl.seq], c, tpl.full, tpl.short,
                                  None if eager else opts.graph_id, None if eager else _NODE_BASE + tpl.seq,
                                  tpl.kind, tpl.layer, tpl.node, replay, tpl.seq))
        return max(cursor.values())

    if opts.phase == "decode":
        if opts.graph_node_events:
            _capture(plan, templates, opts, trace, t - 80_000_000, cpu_tid)
        for r in range(opts.replays):
            if opts.reshuffle_streams and r:
                lanes = layer_lanes(plan, templates, opts, rng, device)
            step_start = t - 60_000
            # Eager step preparation: input ids upload and a buffer fill.
            if opts.memcpy_noise:
                corr += 1
                trace.runtime.append((t - 30_000, t - 25_000, cpu_tid, corr, "cudaMemcpyAsync_v3020"))
                trace.rows.append(Row(t, t + 1_800, device, streams["main"], corr, "[CUDA memcpy HtoD]",
                                      "[CUDA memcpy HtoD]", None, None, "memcpy"))
                t += 4_000
            corr += 1
            fill = _elementwise("FillFunctor", 4, 1)
            trace.runtime.append((t - 20_000, t - 15_000, cpu_tid, corr, "cudaLaunchKernel_v7000"))
            trace.rows.append(Row(t, t + 1_100, device, streams["main"], corr, fill[0], fill[1], None, None))
            t += 3_000
            corr += 1
            trace.runtime.append((t - 40_000, t - 30_000, cpu_tid, corr, "cudaGraphLaunch_v10000"))
            start = t
            t = run_pass(t, r, eager=False)
            trace.graph_launches.append((start, t, device, streams["main"], corr, opts.graph_id))
            # Sampling graph: a second, small graph replayed once per step.
            corr += 1
            trace.runtime.append((t - 10_000, t - 5_000, cpu_tid, corr, "cudaGraphLaunch_v10000"))
            for j, (full, short, us) in enumerate(_SAMPLING):
                d = int(us * 1000 * rng.gauss(1.0, opts.jitter))
                trace.rows.append(
                    Row(
                        t,
                        t + d,
                        device,
                        streams["main"],
                        corr,
                        full,
                        short,
                        opts.sampling_graph_id,
                        0x90000 + j,
                    )
                )
                t += d + 800
            if opts.memcpy_noise:
                corr += 1
                trace.runtime.append((t - 5_000, t - 1_000, cpu_tid, corr, "cudaMemcpyAsync_v3020"))
                trace.rows.append(Row(t, t + 1_500, device, streams["main"], corr, "[CUDA memcpy DtoH]",
                                      "[CUDA memcpy DtoH]", None, None, "memcpy"))
            if opts.steps:
                trace.nvtx.append((step_start, t, f"ProfilerStep#{_STEP_BASE + r}", cpu_tid))
            t += 60_000 + int(rng.uniform(0, 20_000))
    else:
        for p in range(opts.passes):
            start = t
            first_row = len(trace.rows)
            t = run_pass(t, p, eager=True)
            if opts.nvtx:
                trace.nvtx.append((start - 40_000, t - 10_000, f"forward step {p}", cpu_tid))
                trace.nvtx.append((start - 38_000, start - 30_000, "prepare_inputs", cpu_tid))
            if opts.hooks:
                # A distributed wrapper's range around the whole forward: a hook, not a pass.
                trace.nvtx.append((start - 39_000, t - 11_000, "DistributedDataParallel.forward", cpu_tid))
            if opts.steps:
                trace.nvtx.append((start - 45_000, t - 5_000, f"ProfilerStep#{_STEP_BASE + p}", cpu_tid))
            _eager_annotations(plan, templates, trace.rows[first_row:], opts, trace, cpu_tid)
            t += 3_000_000 + int(rng.uniform(0, 500_000))
    return trace


def _capture(plan: Plan, templates: list[Template], opts: Options, trace: Trace, t0: int, tid: int) -> None:
    """Stream capture of the graph before the replays: one node creation event per kernel node at
    capture time, one per instantiated node pointing back to it, and (``capture_nvtx``) the NVTX
    ranges open during capture: the model's forward, one per decoder layer, one per FX node."""
    step = 3_000
    node_time = {}
    for tpl in templates:
        cap = t0 + tpl.seq * step
        node_time[tpl.seq] = cap
        trace.node_events.append((cap, tid, _CAPTURE_BASE + tpl.seq, None))
    inst = t0 + len(templates) * step + 5_000_000
    for tpl in templates:
        trace.node_events.append((inst + tpl.seq, tid, _NODE_BASE + tpl.seq, _CAPTURE_BASE + tpl.seq))
    if not opts.capture_nvtx:
        return
    end = t0 + len(templates) * step
    trace.nvtx.append((t0 - 10_000, end + 10_000, "CUDA graph capture: forward", tid))
    by_layer: dict[int, list[int]] = {}
    by_node: dict[int, list[int]] = {}
    for tpl in templates:
        if tpl.layer is not None:
            by_layer.setdefault(tpl.layer, []).append(node_time[tpl.seq])
        by_node.setdefault(tpl.node_index, []).append(node_time[tpl.seq])
    for layer, times in sorted(by_layer.items()):
        trace.nvtx.append((min(times) - 1_000, max(times) + 1_000, f"model.layers.{layer}", tid))
    nodes = list(plan.all_nodes())
    for index, times in sorted(by_node.items()):
        op = nodes[index][1].op.split(".")[-2] if "." in nodes[index][1].op else nodes[index][1].op
        trace.nvtx.append((min(times) - 500, max(times) + 500, op, tid))


_MODULE_CLASSES = {
    "norm": "RMSNorm",
    "attention": "Attention",
    "mla": "MLAttention",
    "moe": "MoE",
    "mlp": "MLP",
    "mamba": "Mamba2Mixer",
    "gdn": "GatedDeltaNet",
}


def _eager_annotations(plan: Plan, templates: list[Template], rows: list[Row], opts: Options, trace: Trace,
                       tid: int) -> None:
    """Module ranges (``nn.Module: <Class>_N``, profiler ``with_modules``), per-layer NVTX ranges and
    distributed-wrapper hook ranges around the CPU launches of one eager pass."""
    if not (opts.modules or opts.layer_nvtx or opts.hooks):
        return
    launch: dict[int, int] = {}
    for s, _, _, c, _ in trace.runtime:
        launch[c] = s
    times_by_layer: dict[int, list[int]] = {}
    groups: list[tuple[int | None, str, int]] = []  # (layer, group, launch time) in order
    for r in rows:
        at = launch.get(r.correlation, r.start)
        if r.layer is not None:
            times_by_layer.setdefault(r.layer, []).append(at)
        groups.append((r.layer, templates[r.seq].group, at))
    counters: dict[str, int] = {}

    def instance(cls: str) -> str:
        n = counters.get(cls, 0)
        counters[cls] = n + 1
        return f"nn.Module: {cls}_{n}"

    kinds = {layer.index: layer.kind for layer in plan.layers}
    if opts.modules:
        all_times = [at for _, _, at in groups]
        trace.modules.append((min(all_times) - 5_000, max(all_times) + 5_000, instance("Model"), tid))
        # Sub-module runs of one group inside a layer, and the model-level modules outside.
        run: list[tuple[int | None, str, int]] = []
        for item in groups + [(-2, "", 0)]:
            if run and (item[0] != run[0][0] or item[1] != run[0][1]):
                layer, group, _ = run[0]
                cls = (
                    _MODULE_CLASSES.get(group)
                    if layer is not None
                    else ("RMSNorm" if group == "norm" else "Linear")
                )
                if cls is not None:
                    trace.modules.append((run[0][2] - 300, run[-1][2] + 300, instance(cls), tid))
                run = []
            run.append(item)
        for layer, times in sorted(times_by_layer.items()):
            cls = (
                f"{kinds[layer].replace('+', '_').title().replace('_', '')}DecoderLayer"
                if opts.class_per_kind
                else "DecoderLayer"
            )
            trace.modules.append((min(times) - 800, max(times) + 800, instance(cls), tid))
    for layer, times in sorted(times_by_layer.items()):
        if opts.layer_nvtx:
            trace.nvtx.append((min(times) - 800, max(times) + 800, f"model.layers.{layer}", tid))
        if opts.hooks:
            trace.nvtx.append((min(times) - 2_000, min(times) - 1_200,
                               f"FSDP::pre_forward (model.layers.{layer}), op_id = {1000 + layer}", tid))


# --------------------------------------------------------------------------------------------
# Writers
# --------------------------------------------------------------------------------------------

_KERNEL_DDL_325 = (
    "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (\n"
    "    start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, "
    "contextId INTEGER NOT NULL,\n"
    "    greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,\n"
    "    demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER, "
    "launchType INTEGER,\n"
    "    cacheConfig INTEGER, registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, "
    "gridY INTEGER NOT NULL,\n"
    "    gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, "
    "blockZ INTEGER NOT NULL,\n"
    "    staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL, "
    "localMemoryPerThread INTEGER NOT NULL,\n"
    "    localMemoryTotal INTEGER NOT NULL, gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER, "
    "graphNodeId INTEGER,\n"
    "    sharedMemoryLimitConfig INTEGER, graphId INTEGER)"
)
# 2021-era exports: every column NOT NULL, 0 where there is no graph, no mangledName/greenContextId.
_KERNEL_DDL_OLD = (
        "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (\n"
        "    start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, "
        "contextId INTEGER NOT NULL,\n"
        "    streamId INTEGER NOT NULL, correlationId INTEGER NOT NULL, globalPid INTEGER NOT NULL,\n"
        "    demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, "
        "registersPerThread INTEGER NOT NULL,\n"
        "    gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL, "
        "blockX INTEGER NOT NULL,\n"
        "    blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL, staticSharedMemory INTEGER NOT NULL,\n"
        "    dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT NULL, "
        "localMemoryTotal INTEGER NOT NULL,\n"
        "    gridId INTEGER NOT NULL, graphNodeId INTEGER NOT NULL, graphId INTEGER NOT NULL)"
    )
_KERNEL_DDL_INLINE = """CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (
    start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL,
    streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, demangledName TEXT NOT NULL,
    shortName TEXT NOT NULL, graphNodeId INTEGER, graphId INTEGER)"""
_OTHER_DDL = [
    "CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE META_DATA_EXPORT (name TEXT NOT NULL, value TEXT)",
    "CREATE TABLE META_DATA_CAPTURE (name TEXT NOT NULL, value TEXT)",
    """CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,
        eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL,
        returnValue INTEGER NOT NULL, callchainId INTEGER)""",
    (
        "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL,\n"
        "        deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER, "
        "streamId INTEGER NOT NULL,\n"
        "        correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL, "
        "copyKind INTEGER NOT NULL,\n"
        "        deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER, srcDeviceId INTEGER, "
        "srcContextId INTEGER,\n"
        "        dstDeviceId INTEGER, dstContextId INTEGER, migrationCause INTEGER, graphNodeId INTEGER,\n"
        "        virtualAddress INTEGER, copyCount INTEGER)"
    ),
    (
        "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL,\n"
        "        deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER, "
        "streamId INTEGER NOT NULL,\n"
        "        correlationId INTEGER, globalPid INTEGER, value INTEGER NOT NULL, "
        "bytes INTEGER NOT NULL,\n"
        "        graphNodeId INTEGER, memKind INTEGER)"
    ),
]
_NVTX_DDL = (
        "CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,\n"
        "    rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, "
        "endGlobalTid INTEGER,\n"
        "    textId INTEGER, domainId INTEGER, uint64Value INTEGER, int64Value INTEGER, doubleValue REAL,\n"
        "    uint32Value INTEGER, int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, "
        "jsonText TEXT, binaryData TEXT)"
    )
_GRAPH_TRACE_DDL = (
        "CREATE TABLE CUPTI_ACTIVITY_KIND_GRAPH_TRACE (start INTEGER NOT NULL, end INTEGER NOT NULL,\n"
        "    deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER, "
        "streamId INTEGER NOT NULL,\n"
        "    correlationId INTEGER, globalPid INTEGER, graphId INTEGER NOT NULL, "
        "graphExecId INTEGER NOT NULL)"
    )
_GRAPH_NODE_DDL = """CREATE TABLE CUDA_GRAPH_NODE_EVENTS (start INTEGER NOT NULL, end INTEGER NOT NULL,
    eventClass INTEGER NOT NULL, globalTid INTEGER, nameId INTEGER NOT NULL, graphNodeId INTEGER NOT NULL,
    originalGraphNodeId INTEGER)"""
_SCHEMA_VERSIONS = {"3.25": ("3.25.0", "2026.2.1.210"), "3.24": ("3.24.0", "2025.5.2.266"),
                    "3.28": ("3.28.1", "2026.4.0.100"), "2021": ("2.7.0", "2021.3.1.54"),
                    "inline": ("3.25.0", "2026.2.1.210")}
_PID = 31337


def _copy_head(r: Any) -> tuple[int, ...]:
    """The leading columns that nsys's memcpy and memset rows share: start, end, device, context,
    stream, correlation id, global pid."""
    return (r.start, r.end, r.device, 1 + r.device, r.stream, r.correlation, _global_pid(r.device))


def _global_pid(device: int) -> int:
    return ((_PID + device) << 24)


def _global_tid(device: int, tid: int) -> int:
    return _global_pid(device) | tid


class _Strings:
    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def __call__(self, value: str) -> int:
        if value not in self.ids:
            self.ids[value] = len(self.ids) + 1
        return self.ids[value]


def write_nsys_sqlite(path: Path, traces: list[Trace], opts: Options) -> None:
    """Write an nsys-like SQLite export of ``traces`` (one per device)."""
    if path.exists():
        path.unlink()
    conn = sqlite3.connect(path)
    strings = _Strings()
    schema = opts.schema
    old = schema == "2021"
    inline = schema == "inline"
    with conn:
        conn.execute(_KERNEL_DDL_OLD if old else _KERNEL_DDL_INLINE if inline else _KERNEL_DDL_325)
        for ddl in _OTHER_DDL:
            conn.execute(ddl)
        version, product = _SCHEMA_VERSIONS[schema]
        meta = [
            ("EXPORT_PRODUCT_NAME", "NVIDIA Nsight Systems"),
            ("EXPORT_PRODUCT_VERSION", product),
            ("EXPORT_SCHEMA_VERSION", version),
            ("EXPORT_SCHEMA_VERSION_MAJOR", version.split(".")[0]),
            ("EXPORT_SCHEMA_VERSION_MINOR", version.split(".")[1]),
            ("EXPORT_PARAM_EXPORT_TYPE", "SQLite"),
            ("DERIVED_BY", "tools/make_traces.py"),
        ]
        conn.executemany("INSERT INTO META_DATA_EXPORT VALUES (?, ?)", meta)
        mode = "Graph" if opts.graph_mode else "Node"
        conn.executemany("INSERT INTO META_DATA_CAPTURE VALUES (?, ?)",
                         [("CAPTURE_EVENT_TYPE", "Cuda"), ("CAPTURE_EVENT_TYPE", "NvtxEvents"),
                          ("CUDA_GRAPH_TRACE_OPTIONS:MODE", mode),
                          ("PROCESS_0:COMMAND", "python3 -m tensorrt_llm._torch.auto_deploy.bench")])
        if schema == "3.28":
            conn.execute(
                "CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT, "
                "busLocation TEXT, totalMemory INTEGER, smCount INTEGER, chipName TEXT)"
            )
            conn.executemany("INSERT INTO TARGET_INFO_GPU VALUES (?, ?, ?, ?, ?, ?, ?)",
                             [(1, d, "NVIDIA B200", f"0000:{0x18 + d:02x}:00.0", 192 << 30, 148, "GB100")
                              for d in range(len(traces))])

        def kernel_rows() -> Iterator[tuple[Any, ...]]:
            for tr in traces:
                for r in tr.rows:
                    if r.kind != "kernel":
                        continue
                    if opts.graph_mode and r.graph_id is not None:
                        continue
                    gid = r.graph_id if r.graph_id is not None else (0 if old else None)
                    gnid = r.graph_node_id if r.graph_node_id is not None else (0 if old else None)
                    ctx = 1 + r.device
                    if inline:
                        yield (r.start, r.end, r.device, ctx, r.stream, r.correlation, _global_pid(r.device),
                               r.full, r.short, gnid, gid)
                    elif old:
                        yield (r.start, r.end, r.device, ctx, r.stream, r.correlation, _global_pid(r.device),
                               strings(r.full), strings(r.short), *_OLD_LAUNCH, gnid, gid)
                    else:
                        yield (r.start, r.end, r.device, ctx, 0, r.stream, r.correlation,
                               _global_pid(r.device), strings(r.full), strings(r.short),
                               strings("_Z" + r.short), *_LAUNCH, gnid, 0, gid)

        width = 11 if inline else 23 if old else 29
        conn.executemany(
            f"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES ({','.join('?' * width)})", kernel_rows()
        )
        copies = [r for tr in traces for r in tr.rows if r.kind != "kernel"
                  and not (opts.graph_mode and r.graph_node_id is not None)]
        conn.executemany(
            "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?, ?, ?, ?, 0, ?, ?, ?, 4096, ?, NULL, 0, 2, "
            "NULL, NULL, ?, ?, NULL, NULL, NULL, 1)",
            [(*_copy_head(r), 1 if "HtoD" in r.full else 2, r.device, 1 + r.device)
             for r in copies if r.kind == "memcpy"],
        )
        conn.executemany(
            "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (?, ?, ?, ?, 0, ?, ?, ?, 0, 65536, ?, 2)",
            [(*_copy_head(r), r.graph_node_id) for r in copies if r.kind == "memset"],
        )
        runtime = []
        for device, tr in enumerate(traces):
            for s, e, tid, c, name in tr.runtime:
                runtime.append((s, e, 1, _global_tid(device, tid), c, strings(name), 0, None))
        conn.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, ?, ?, ?, ?, ?, ?)", runtime)
        if opts.graph_mode:
            conn.execute(_GRAPH_TRACE_DDL)
            conn.executemany(
                "INSERT INTO CUPTI_ACTIVITY_KIND_GRAPH_TRACE VALUES (?, ?, ?, ?, 0, ?, ?, ?, ?, ?)",
                [
                    (s, e, d, 1 + d, st, c, _global_pid(d), gid, gid + 1)
                    for tr in traces
                    for s, e, d, st, c, gid in tr.graph_launches
                ],
            )
        elif opts.graph_node_events and any(tr.node_events for tr in traces):
            conn.execute(_GRAPH_NODE_DDL)
            conn.executemany("INSERT INTO CUDA_GRAPH_NODE_EVENTS VALUES (?, ?, 94, ?, ?, ?, ?)",
                             [(s, s, _global_tid(device, tid), strings("Graph Node Creation"), node, orig)
                              for device, tr in enumerate(traces) for s, tid, node, orig in tr.node_events])
        if any(tr.nvtx for tr in traces):
            conn.execute(_NVTX_DDL)
            nvtx = []
            for device, tr in enumerate(traces):
                for s, e, text, tid in tr.nvtx:
                    # Registered strings (textId) for pass ranges, inline text for the others.
                    registered = text.startswith("forward")
                    nvtx.append(
                        (
                            s,
                            e,
                            59,
                            None,
                            None,
                            None,
                            None if registered else text,
                            _global_tid(device, tid),
                            None,
                            strings(text) if registered else None,
                        )
                        + (None,) * 10
                    )
            conn.executemany(f"INSERT INTO NVTX_EVENTS VALUES ({','.join('?' * 20)})", nvtx)
        conn.executemany("INSERT INTO StringIds VALUES (?, ?)", [(i, v) for v, i in strings.ids.items()])
    conn.close()


def _us(ns: int) -> float:
    return round(ns / 1000.0, 3)


def write_torch_json(path: Path, traces: list[Trace], opts: Options) -> None:
    """Write a PyTorch profiler (Kineto) Chrome trace; gzip when the name ends with ``.gz``."""
    events: list[dict[str, Any]] = []
    base = min((r.start for tr in traces for r in tr.rows), default=0) - 1_000_000
    for device, tr in enumerate(traces):
        pid = _PID + device
        events.append({"name": "process_name", "ph": "M", "ts": 0, "pid": pid, "tid": 0,
                       "args": {"name": f"python3 rank {device}"}})
        events.append({"name": "process_name", "ph": "M", "ts": 0, "pid": device, "tid": 0,
                       "args": {"name": f"python3 rank {device}"}})
        events.append({"name": "process_labels", "ph": "M", "ts": 0, "pid": device, "tid": 0,
                       "args": {"labels": f"GPU {device}"}})
        for stream in sorted({r.stream for r in tr.rows}):
            events.append({"name": "thread_name", "ph": "M", "ts": 0, "pid": device, "tid": stream,
                           "args": {"name": f"stream {stream} "}})
        for s, e, tid, c, name in tr.runtime:
            events.append(
                {
                    "ph": "X",
                    "cat": "cuda_runtime",
                    "name": name.split("_v")[0],
                    "pid": pid,
                    "tid": tid,
                    "ts": _us(s - base),
                    "dur": _us(e - s),
                    "args": {"External id": c, "correlation": c},
                }
            )
        for s, e, text, tid in tr.nvtx:
            events.append({"ph": "X", "cat": "user_annotation", "name": text, "pid": pid, "tid": tid,
                           "ts": _us(s - base), "dur": _us(e - s), "args": {}})
        for s, e, text, tid in tr.modules:
            events.append({"ph": "X", "cat": "python_function", "name": text, "pid": pid, "tid": tid,
                           "ts": _us(s - base), "dur": _us(e - s), "args": {"Python module id": 0}})
        for r in tr.rows:
            cat = {"kernel": "kernel", "memcpy": "gpu_memcpy", "memset": "gpu_memset"}[r.kind]
            name = r.full if r.kind == "kernel" else ("Memset (Device)" if r.kind == "memset"
                                                      else f"Memcpy {r.full.split()[-1].rstrip(']')}")
            args: dict[str, Any] = {"External id": r.correlation, "device": r.device, "context": 1,
                                    "stream": r.stream, "correlation": r.correlation}
            if opts.torch_graph_ids and r.graph_id is not None:
                args["graph id"] = r.graph_id
                args["graph node id"] = r.graph_node_id
            events.append({"ph": "X", "cat": cat, "name": name, "pid": r.device, "tid": r.stream,
                           "ts": _us(r.start - base), "dur": _us(r.end - r.start), "args": args})
    doc = {
        "schemaVersion": 1,
        "deviceProperties": [{"id": d, "name": "NVIDIA H200"} for d in range(len(traces))],
        "traceEvents": events,
        "displayTimeUnit": "ms",
    }
    data = json.dumps(doc, separators=(",", ":")).encode()
    if path.name.endswith(".gz"):
        path.write_bytes(gzip.compress(data, mtime=0))
    else:
        path.write_bytes(data)


def write_truth(path: Path, plan: Plan, traces: list[Trace], opts: Options) -> None:
    """Ground truth on device 0: the plan's layers and outside nodes; per kernel of replay 0
    (every pass for prefill) its layer and node; and, for traces without graph node ids, the
    activities of every replay in start order (``replay_order``: correlation id -> template
    seqs), so that any replay's kernels can be told apart."""
    rows = [r for r in traces[0].rows if r.replay is not None and (opts.phase == "prefill" or r.replay == 0)]
    order: dict[str, list[int]] = {}
    if opts.phase == "decode" and opts.replays * len(rows) <= 400_000:
        per: dict[int, list[Row]] = {}
        for r in traces[0].rows:
            if r.replay is not None:
                per.setdefault(r.correlation, []).append(r)
        order = {str(c): [r.seq for r in sorted(rs, key=lambda r: r.start)] for c, rs in per.items()}
    doc = {
        "model": plan.model,
        "phase": opts.phase,
        "graph_id": opts.graph_id if opts.phase == "decode" else None,
        "layout": opts.layout,
        "num_layers": len(plan.layers),
        "layer_kinds": {str(layer.index): layer.kind for layer in plan.layers},
        "replays": opts.replays if opts.phase == "decode" else opts.passes,
        "layers": [
            {
                "index": layer.index,
                "kind": layer.kind,
                "nodes": [
                    {"id": n.id, "op": n.op, "group": n.group, "sub_group": n.sub_group, "stream": n.stream}
                    for n in layer.nodes
                ],
            }
            for layer in plan.layers
        ],
        "outside": {
            "before": [
                {"id": n.id, "op": n.op, "group": n.group, "sub_group": n.sub_group, "stream": n.stream}
                for n in plan.prologue
            ],
            "after": [
                {"id": n.id, "op": n.op, "group": n.group, "sub_group": n.sub_group, "stream": n.stream}
                for n in plan.epilogue
            ],
        },
        "kernels": [
            {
                "seq": r.seq,
                "pass": r.replay,
                "correlation": r.correlation,
                "graph_node_id": r.graph_node_id,
                "short": r.short,
                "kind": r.kind,
                "stream": r.stream,
                "layer": r.layer,
                "node": r.node,
            }
            for r in rows
        ],
        "replay_order": order,
    }
    path.write_text(json.dumps(doc, indent=None, separators=(",", ":")), encoding="utf-8")


def generate(out_dir: Path, name: str, plan: Plan, opts: Options,
             formats: tuple[str, ...] = ("sqlite",)) -> dict[str, Path]:
    """Simulate and write the requested formats plus ``<name>.truth.json``; returns the paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    traces = [simulate(plan, opts, d) for d in range(opts.devices)]
    paths: dict[str, Path] = {}
    if "sqlite" in formats:
        paths["sqlite"] = out_dir / f"{name}.sqlite"
        write_nsys_sqlite(paths["sqlite"], traces, opts)
    if "torch" in formats:
        paths["torch"] = out_dir / f"{name}.pt.trace.json.gz"
        write_torch_json(paths["torch"], traces, opts)
    paths["truth"] = out_dir / f"{name}.truth.json"
    write_truth(paths["truth"], plan, traces, opts)
    return paths


def replays_for_rows(plan: Plan, opts: Options, target_rows: int) -> int:
    """Replays needed for about ``target_rows`` kernel rows per device."""
    per_replay = len([t for t in build_templates(plan, opts) if t.kind == "kernel"]) + 1 + len(_SAMPLING)
    return max(1, target_rows // per_replay)


def _slow(text: str) -> tuple[int, int, float, float]:
    parts = text.split(":")
    jitter = float(parts[3]) if len(parts) > 3 else Options.jitter
    return int(parts[0]), int(parts[1]), float(parts[2]), jitter


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="output directory")
    ap.add_argument("--name", required=True, help="file stem of the outputs")
    ap.add_argument("--phase", choices=("decode", "prefill"), default="decode")
    ap.add_argument("--layers", type=int, default=5, help="decoder layers (built-in plan)")
    ap.add_argument("--dense", type=int, default=2, help="leading dense layers (built-in plan)")
    ap.add_argument("--plan-from", type=Path, help="<stem>.truth.json beside an FX dump")
    ap.add_argument("--replays", type=int, default=12)
    ap.add_argument("--target-rows", type=int, help="choose --replays to reach about this many kernel rows")
    ap.add_argument("--passes", type=int, default=3, help="prefill forward passes")
    ap.add_argument("--devices", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--schema", choices=sorted(_SCHEMA_VERSIONS), default="3.25")
    ap.add_argument("--graph-mode", action="store_true", help="emulate --cuda-graph-trace=graph")
    ap.add_argument("--no-nvtx", action="store_true")
    ap.add_argument("--no-noise", action="store_true", help="no memcpy/memset rows")
    ap.add_argument("--unknown-kernel", action="store_true", help="one unknown kernel per MoE layer")
    ap.add_argument("--torch-graph-ids", action="store_true", help="write 'graph id'/'graph node id' args")
    ap.add_argument("--format", choices=("sqlite", "torch", "both"), default="sqlite")
    ap.add_argument("--layout", choices=LAYOUTS, default="main-aux", help="stream layout of a decode replay")
    ap.add_argument("--reshuffle-streams", action="store_true", help="new stream ids in every replay")
    ap.add_argument("--capture-nvtx", action="store_true",
                    help="NVTX ranges per layer during graph capture (CUDA_GRAPH_NODE_EVENTS lead to them)")
    ap.add_argument(
        "--modules", action="store_true", help="nn.Module ranges in eager passes (profiler traces)"
    )
    ap.add_argument("--layer-nvtx", action="store_true", help="NVTX ranges per layer in eager passes")
    ap.add_argument("--hooks", action="store_true", help="FSDP::pre_forward hook ranges before each layer")
    ap.add_argument("--steps", action="store_true", help="ProfilerStep#N ranges around each replay or pass")
    ap.add_argument("--slow", action="append", default=[], metavar="DEVICE:LAYER:SCALE[:JITTER]",
                    help="plant a slower (or noisier) layer on one device; repeatable")
    args = ap.parse_args(argv)
    args.slow = tuple(_slow(text) for text in args.slow)
    plan = plan_from_truth(args.plan_from) if args.plan_from else dsv3_plan(args.layers, args.dense,
                                                                           args.unknown_kernel)
    # Every option named alike on the command line is taken from it; two are said negatively.
    same = {f.name: getattr(args, f.name) for f in fields(Options) if hasattr(args, f.name)}
    opts = Options(**same, nvtx=not args.no_nvtx, memcpy_noise=not args.no_noise)
    if args.target_rows:
        opts.replays = replays_for_rows(plan, opts, args.target_rows)
    formats = ("sqlite", "torch") if args.format == "both" else (args.format,)
    paths = generate(args.out, args.name, plan, opts, formats)
    for kind, p in paths.items():
        print(f"{kind}: {p} ({p.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
