"""Kernel family names from demangled C++ names."""
from __future__ import annotations

import pytest

from tb_ad_layer.trace.names import shorten


@pytest.mark.parametrize(
    "full, short",
    [
        (
            "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x128_32x3_nn_align4>"
            "(cutlass_80_tensorop_s1688gemm_256x128_32x3_nn_align4::Params)",
            "cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x128_32x3_nn_align4>",
        ),
        (
            "void at::native::vectorized_elementwise_kernel<(int)4, at::native::FillFunctor<float>, "
            "std::array<char *, (unsigned long)1>>(int, T2, T3)",
            "vectorized_elementwise_kernel<FillFunctor>",
        ),
        (
            "void at::native::elementwise_kernel<(int)128, (int)2, void at::native::gpu_kernel_impl_nocast<"
            "at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float>>>"
            "(at::TensorIteratorBase &, const T1 &)::[lambda(int) (instance 1)]>(int, T3)",
            "elementwise_kernel<MulFunctor>",
        ),
        (
            "void at::native::reduce_kernel<(int)512, (int)1, at::native::ReduceOp<float, "
            "at::native::MeanOps<float, float, float, float>, unsigned int, float, (int)4, (int)4>>(T3)",
            "reduce_kernel<MeanOps>",
        ),
        (
            "void at::native::(anonymous namespace)::CatArrayBatchedCopy<"
            "at::native::(anonymous namespace)::OpaqueType<2u>, unsigned int, 3, 128, 1>"
            "(at::native::(anonymous namespace)::OpaqueType<2u>*, unsigned int)",
            "CatArrayBatchedCopy",
        ),
        (
            "void tensorrt_llm::kernels::act_and_mul_kernel<__nv_bfloat16, "
            "&tensorrt_llm::kernels::silu<float>, true>"
            "(__nv_fp8_e4m3*, float*, __nv_bfloat16 const*, int)",
            "act_and_mul_kernel",
        ),
        ("nvjet_tst_128x64_64x8_1x2_h_bz_splitK_TNT", "nvjet_tst_128x64_64x8_1x2_h_bz_splitK_TNT"),
        ("triton_poi_fused_add_mul_0", "triton_poi_fused_add_mul_0"),
        ("add_one(const float *, float *, int)", "add_one"),
        (
            "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
            "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
        ),
        (
            "void cutlass::device_kernel<flash::FlashAttnFwdSm90<cute::tuple<>>>("
            "flash::FlashAttnFwdSm90<cute::tuple<>>::Params)",
            "cutlass::device_kernel<FlashAttnFwdSm90>",
        ),
    ],
)
def test_shorten(full: str, short: str) -> None:
    assert shorten(full) == short


def test_trace_short_name_preferred_unless_generic() -> None:
    full = "void moe::dev::finalize::finalizeKernelVecLoad<moe::dev::finalize::KernelParams<float>>(P)"
    assert shorten(full, "finalizeKernelVecLoad") == "finalizeKernelVecLoad"
    fill = ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
            "std::array<char*, 1ul> >(int)")
    assert shorten(fill, "vectorized_elementwise_kernel") == "vectorized_elementwise_kernel<FillFunctor>"


def test_shorten_never_empty_and_bounded() -> None:
    assert shorten("") == "?"
    assert shorten("", "x") == "x"
    assert len(shorten("void f<" + "a" * 500 + ">()")) <= 120
    assert shorten("weird<<>>(((") != ""
