// The default classifier against real kernel names, one family per test: each name below is the
// symbol a library's source defines (file and commit in docs/kernel-families.md), demangled the way
// Kineto writes it, and each family has a near miss: a compute kernel whose name looks alike.
#include "metrics/kernel_classifier.hpp"

#include <catch2/catch.hpp>

using namespace harness::metrics;

namespace {

void check_all(std::initializer_list<const char*> names, CommFamily expected) {
    for (const char* name : names) {
        CAPTURE(name);
        CHECK(classify_kernel(name) == expected);
    }
}

} // namespace

TEST_CASE("NCCL and RCCL kernels of every generation", "[kernel_families]") {
    check_all(
        {
            // NVIDIA/nccl src/device/generate.py:278 and common.h:435 (2.19+; RCCL's common.cu too).
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
            "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
            "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)",
            "ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)",
            // 2.9-2.18: src/include/collectives.h NCCL_KERN_NAME (v2.18.5-1:30).
            "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
            // Before 2.9: coll##Kernel_##op##_##dtype (v2.7.8-1 src/include/collectives.h:16).
            "ncclAllReduceRingLLKernel_sum_f32(ncclColl)",
            "ncclSendRecvKernel_copy_i8(ncclColl)",
            // Symmetric kernels, 2.27+: src/device/symmetric/generate.py:156.
            "ncclSymkDevKernel_AllReduce_AGxLLMC_R_sum_bf16(ncclSymkDevWorkArgs4K)",
            "ncclSymkDevKernel_AllGather_LL(ncclSymkDevWorkArgs4K)",
        },
        CommFamily::nccl);
    // Near misses: NCCL's one-rank local reduce (onerank.cu:16) moves no data between ranks; a
    // lower-case "nccl" helper is not an NCCL entry point.
    check_all({"void oneRankReduce<FuncSum<float> >(void*, void*, unsigned long, unsigned long)", "ncclx_pack_tensor_kernel(float*)",
               "void my::ncclKernelLikeGemm<float>(float*)"},
              CommFamily::none);
}

TEST_CASE("PyTorch symmetric memory kernels in any namespace spelling", "[kernel_families]") {
    // torch/csrc/distributed/c10d/symm_mem/CUDASymmetricMemoryOps.cu: all in `namespace {`.
    check_all(
        {
            // The B200 vLLM tensor-parallel all-reduce of issue 14 (the exact Kineto name).
            "void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(c10::BFloat16*, unsigned long, "
            "unsigned int**, unsigned long, unsigned long)",
            "void <unnamed>::multimem_all_reduce_kernel<c10::BFloat16, (int)16>(c10::BFloat16*, unsigned long)",
            "void (anonymous namespace)::multimem_one_shot_all_reduce_kernel<float, 16>(float*, float*, unsigned long)",
            "void (anonymous namespace)::multimem_all_gather_kernel<16>(char*, char*, unsigned long)",
            "void (anonymous namespace)::one_shot_all_reduce_kernel<c10::BFloat16, 16, 8>(c10::BFloat16**, c10::BFloat16*)",
            "void (anonymous namespace)::two_shot_all_reduce_kernel<float, 16, 4, true, false>(float**, float*)",
            "void (anonymous namespace)::two_shot_all_reduce_kernel_inplace<c10::BFloat16, 16, 2>(c10::BFloat16**, "
            "unsigned long, unsigned long, unsigned int**, unsigned long, unsigned long)",
            "multimem_all_reduce_kernel", // a trace that kept only the bare name
            "void c10d::symmetric_memory::one_shot_all_reduce_kernel<float>(float*)",
        },
        CommFamily::symmetric_memory);
    // Near misses: the names are matched whole, so reductions and scatters of ATen stay compute.
    check_all(
        {
            "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float> > >(float*)",
            "void at::native::(anonymous namespace)::multimem_all_reduce_kernel_stats<float>(float*)",
            "void (anonymous namespace)::two_shot_reduce_kernel<float>(float*)",
            "triton_poi_fused_add_all_reduce_4",
            "void at::native::_scatter_gather_elementwise_kernel<128, 8>(int, at::native::ReduceAdd)",
        },
        CommFamily::none);
}

TEST_CASE("DeepEP v1, v2 legacy and v2 elastic kernels", "[kernel_families]") {
    check_all(
        {
            "void deep_ep::intranode::dispatch<8, 768, 6144>(int4*, float*)",          // v1
            "void deep_ep::internode_ll::combine<false>(void*, void const*)",          // v1
            "void deep_ep::legacy::intranode::notify_dispatch<8>(int const*, int*)",   // csrc/kernels/legacy/intranode.cu:26
            "void deep_ep::legacy::internode::dispatch<false, 8, 512>(int4*, float*)", // legacy/internode.cu:452
            "void deep_ep::legacy::internode_ll::clean_low_latency_buffer<256>(int*, int, int*)", // legacy/internode_ll.cu:72
            "void deep_ep::elastic::dispatch_impl<false, 8, 1024>(void*, void*)",      // deep_ep/include/deep_ep/impls/dispatch.cuh:31
            "void deep_ep::elastic::pp_send_impl<4>(ncclDevComm, ncclWindow_vidmem*)", // impls/pp_send_recv.cuh:118
            "void dpsk::ep::internode::combine<false, 8>(int4*, float*)",              // DeepSeek's public trace
        },
        CommFamily::deepep);
    // Near misses: the layout kernels count tokens on the local GPU (legacy/layout.cu:11).
    check_all({"void deep_ep::legacy::layout::get_dispatch_layout<256, 32, 8>(long const*)",
               "void dpsk::ep::cuda::get_dispatch_layout<256, 32, 8>(long const*)",
               "void my_moe::intranode_dispatch_permute<8>(int*)"},
              CommFamily::none);
}

TEST_CASE("MSCCL and MSCCL++ kernels", "[kernel_families]") {
    check_all(
        {
            "void mscclpp::collective::allreduceNvlsPacket<__nv_bfloat16>(__nv_bfloat16 const*, __nv_bfloat16*)", // src/ext/collectives
            "void mscclpp::executionKernel<float, false>(int, float*, float*)", // src/core/include/execution_kernel.hpp:801
            "mscclKernel_Sum_float_LL128(int)",                                 // MSCCL in RCCL
        },
        CommFamily::msccl);
    check_all(
        {"void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::collective::CollectiveMma<int> > >(int)"},
        CommFamily::none);
}

TEST_CASE("NVSHMEM kernels", "[kernel_families]") {
    check_all({"nvshmemi_transfer_rma_kernel(void*)", "void nvshmemi_proxy_progress_kernel(int)"}, CommFamily::nvshmem);
    check_all({"void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float> >(int, float*)"}, CommFamily::none);
}

TEST_CASE("vLLM, SGLang and TensorRT-LLM custom all-reduce", "[kernel_families]") {
    check_all(
        {
            "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, "
            "__nv_bfloat16*, int, int)",
            "void vllm::cross_device_reduce_2stage<__half, 4>(vllm::RankData*)",
            "void sglang::cross_device_reduce_1stage<float, 4>(sglang::RankData*)",
            // sgl-kernel/csrc/allreduce/mscclpp_allreduce.cuh: MSCCL++ channels, sglang:: name.
            "void sglang::allreduce_1shotLL_1node<__nv_bfloat16>(mscclpp::MemoryChannelDeviceHandle*)",
            // sgl-kernel/csrc/allreduce/trt_reduce_internal.cu (from TensorRT-LLM).
            "void trt_llm::oneShotAllReduceKernel<__nv_bfloat16, 8, true>(trt_llm::AllReduceParams)",
            "void trt_llm::twoShotAllReduceKernel<float, 4, false>(trt_llm::AllReduceParams)",
            "void quickreduce::allreduce_prototype_twoshot<quickreduce::CodecFP<__half> >(__half const*)",
        },
        CommFamily::custom_allreduce);
    check_all({"void sglang::warp_decode::gemv<8>(float*)", "void vllm::rms_norm_kernel<c10::BFloat16>(c10::BFloat16*)"},
              CommFamily::none);
}

TEST_CASE("collective words in compute kernels stay compute", "[kernel_families]") {
    check_all(
        {
            "void cutlass::device_kernel<flash::FlashAttnBwd<flash::CollectiveMainloopBwd<2, cute::tuple<cute::C<1> > > > >(int)",
            "void cutlass::device_kernel<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<2> > >(int)",
            "void cutlass::Kernel2<cutlass_80_tensorop_s16816gemm_relu_bf16_64x64_32x6_tn_align8>(Params)",
            "void cutlass::reduction::kernel::ReduceSplitK<cutlass::MatrixShape<4, 64> >(Params)",
            "void at::native::(anonymous namespace)::broadcast_vectorized_kernel<float>(float const*)",
            "void at::native::reduce_kernel<512, 1>(float*)",
            "all_reduce_stats_kernel",
        },
        CommFamily::none);
}
