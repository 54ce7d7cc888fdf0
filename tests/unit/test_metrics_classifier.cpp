#include "metrics/intervals.hpp"
#include "metrics/kernel_classifier.hpp"
#include "metrics/reference_patterns.hpp"
#include "metrics/reference_sampling.hpp"

#include <catch2/catch.hpp>
#include <random>
#include <regex>
#include <string>
#include <vector>

using namespace harness::metrics;

TEST_CASE("the classifier knows the communication families by their symbols", "[metrics]") {
    CHECK(classify_kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)") == CommFamily::nccl);
    CHECK(classify_kernel("ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclWorkElem)") == CommFamily::nccl);
    CHECK(classify_kernel("void ncclDevKernel_Generic<2>(ncclDevComm*)") == CommFamily::nccl);
    CHECK(classify_kernel("rcclGenericKernel") == CommFamily::nccl);
    CHECK(classify_kernel("void mscclpp::allreduce7<__half>(int*)") == CommFamily::msccl);
    CHECK(classify_kernel("mscclKernel_Sum_float_LL128(int)") == CommFamily::msccl);
    CHECK(classify_kernel("void dpsk::ep::internode::dispatch<false, 8, true, 8>(int4*)") == CommFamily::deepep);
    CHECK(classify_kernel("void deep_ep::intranode::combine<__nv_bfloat16, 8>(int4*)") == CommFamily::deepep);
    CHECK(classify_kernel("void deep_ep::internode_ll::dispatch<false>(void*)") == CommFamily::deepep);
    CHECK(classify_kernel("nvshmemi_transfer_rma_kernel(void*)") == CommFamily::nvshmem);
    CHECK(classify_kernel("void vllm::cross_device_reduce_2stage<__nv_bfloat16, 8>(vllm::RankData*)") == CommFamily::custom_allreduce);
    CHECK(classify_kernel("void sglang::cross_device_reduce_1stage<float, 4>(sglang::RankData*)") == CommFamily::custom_allreduce);
    CHECK(classify_kernel("void c10d::symmetric_memory::one_shot_all_reduce_kernel<float>(float*)") == CommFamily::symmetric_memory);
}

TEST_CASE("compute kernels whose names contain collective words stay compute", "[metrics]") {
    const char* compute[] = {
        "void cutlass::device_kernel<flash::FlashAttnBwd<flash::CollectiveMainloopBwd<2, cute::tuple<cute::C<1> > > > >(int)",
        "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::collective::CollectiveMma<int> > >(int)",
        "void at::native::(anonymous namespace)::broadcast_vectorized_kernel<float>(float const*)",
        "void dpsk::ep::cuda::get_dispatch_layout<256, 32, 8>(long const*)",
        "void deep_ep::layout::get_dispatch_layout<256, 32, 8>(long const*)",
        "void at::native::reduce_kernel<512, 1>(float*)",
        "sendrecv_like_compute_named_kernel",
    };
    for (const char* name : compute) {
        CAPTURE(name);
        CHECK(classify_kernel(name) == CommFamily::none);
    }
}

TEST_CASE("host operators: gloo and c10d are communication, aten:: is compute", "[metrics]") {
    CHECK(host_role("gloo:all_reduce") == HostRole::communication);
    CHECK(host_role("c10d::allreduce_") == HostRole::communication);
    CHECK(host_role("record_param_comms") == HostRole::communication);
    CHECK(host_role("nccl:all_reduce") == HostRole::communication);
    CHECK(host_role("aten::mm") == HostRole::compute);
    CHECK(host_role("Optimizer.step#AdamW.step") == HostRole::other);
    CHECK(host_role("DistributedDataParallel.forward") == HostRole::other);
}

TEST_CASE("XLA collectives and their start/done halves", "[metrics]") {
    const XlaCollective start = classify_xla_op("all-gather-start.3");
    CHECK(start.collective);
    CHECK(start.kind == "all-gather");
    CHECK(start.phase == XlaPhase::start);
    CHECK(classify_xla_op("all-gather-done.7").phase == XlaPhase::done);
    CHECK(classify_xla_op("%collective-permute-done.2").kind == "collective-permute");
    CHECK(classify_xla_op("reduce-scatter.12").phase == XlaPhase::whole);
    CHECK(classify_xla_op("all-to-all.1").collective);
    CHECK(classify_xla_op("recv-done.4").kind == "recv");
    CHECK_FALSE(classify_xla_op("broadcast.3").collective);
    CHECK_FALSE(classify_xla_op("fusion.12").collective);
    CHECK_FALSE(classify_xla_op("sendable-fusion").collective);
}

TEST_CASE("the reference patterns reproduce the CCL-Bench tools' misclassifications", "[metrics]") {
    const std::string fa3 = "void cutlass::device_kernel<flash::FlashAttnBwd<flash::CollectiveMainloopBwd<2> > >(int)";
    const std::string deepep = "void dpsk::ep::internode::combine<false, 8>(int4*, float*)";
    CHECK(reference_is_comm(ReferencePattern::overlap, fa3));
    CHECK_FALSE(reference_is_comm(ReferencePattern::fraction, fa3));
    CHECK_FALSE(reference_is_comm(ReferencePattern::total_time, fa3));
    for (const auto pattern : {ReferencePattern::overlap, ReferencePattern::fraction, ReferencePattern::total_time}) {
        CHECK_FALSE(reference_is_comm(pattern, deepep));
        CHECK(reference_is_comm(pattern, "NCCLDEVKERNEL_AllReduce")); // case-insensitive
    }
    CHECK(reference_is_comm(ReferencePattern::fraction, "my_send_kernel"));
    CHECK_FALSE(reference_is_comm(ReferencePattern::overlap, "my_send_kernel"));
    CHECK(reference_is_comm(ReferencePattern::overlap, "broadcast_kernel"));
    CHECK_FALSE(reference_is_comm(ReferencePattern::xla_overlap, "broadcast.3"));
    CHECK(reference_is_comm(ReferencePattern::total_time, "nccl_x"));
    CHECK_FALSE(reference_is_comm(ReferencePattern::total_time, "x_nccl")); // ^nccl
    CHECK(reference_is_xla_compute("Convolution.2"));
    CHECK_FALSE(reference_is_xla_compute("copy.1"));
    CHECK(reference_sglang_step_for_step_time("scheduler.py(10): run_batch"));
    CHECK_FALSE(reference_sglang_step_for_step_time("run_batch"));
    CHECK(reference_sglang_step_for_overlap("run_batch"));
    CHECK_FALSE(reference_sglang_step_for_overlap("set_prefill_run_batch_start_time"));
}

TEST_CASE("the reference file sample is CPython's random.Random(42).sample", "[metrics]") {
    // Values printed by CPython 3.11: sorted(random.Random(42).sample(range(n), 16)).
    CHECK(reference_file_sample(16).size() == 16);
    CHECK(reference_file_sample(20) == std::vector<std::size_t>{0, 1, 2, 3, 6, 7, 8, 9, 10, 11, 12, 13, 15, 16, 17, 18});
    CHECK(reference_file_sample(64) == std::vector<std::size_t>{1, 2, 5, 6, 8, 14, 15, 17, 27, 34, 37, 43, 47, 56, 61, 63});
    CHECK(reference_file_sample(86) == std::vector<std::size_t>{3, 4, 11, 13, 14, 17, 27, 28, 29, 31, 35, 54, 64, 69, 75, 81});
    CHECK(reference_file_sample(512) ==
          std::vector<std::size_t>{25, 27, 30, 32, 89, 95, 104, 114, 142, 203, 223, 228, 238, 250, 281, 432});
    PythonRandom rng(42);
    CHECK(rng.getrandbits(32) == 2746317213U);
    CHECK(rng.getrandbits(32) == 478163327U);
}

TEST_CASE("intervals merge, measure and intersect like the tools", "[metrics]") {
    const auto merged = merge_intervals({{5, 7}, {0, 2}, {2, 3}, {6, 9}, {10, 10}});
    REQUIRE(merged.size() == 3);
    CHECK(merged[0].start == 0);
    CHECK(merged[0].end == 3); // touching intervals merge
    CHECK(merged[1].end == 9);
    CHECK(total_length(merged) == 7);
    CHECK(intersection_length(merged, merge_intervals({{1, 6}, {8, 20}})) == Approx(2 + 1 + 1));
    CHECK(intersection_length({}, merged) == 0);
}

TEST_CASE("the compiled reference patterns agree with an ECMAScript regex on every name", "[metrics]") {
    // reference_patterns.cpp matches the tools' patterns with its own small matcher; std::regex
    // (what it replaced, and what Python's re does for these ASCII patterns) is the oracle.
    const std::vector<std::string> pieces = {
        "nccl",       "NCCL",  "all",    "_",    "-",    "reduce",   "Reduce", "gather",      "scatter",    "to",
        "broadcast",  "cross", "device", "send", "recv", "sendrecv", "p2p",    "communicate", "collective", "ncclDevKernel",
        "ncclKernel", "x",     "__",     "--",   "a",    "ll",       "_-",     "allreduce",   "ALL-TO-ALL"};
    std::mt19937 random(11);
    std::vector<std::string> names = {"",         "nccl",       "x_nccl",       "all__reduce", "all-_reduce",   "ALL_reduce",
                                      "allreduc", "all-to_all", "cross-device", "crossdevice", "cross__device", "NcClDeVkErNeL_x"};
    for (int k = 0; k < 4000; ++k) {
        std::string name;
        const int count = static_cast<int>(random() % 6);
        for (int p = 0; p < count; ++p) {
            name += pieces[random() % pieces.size()];
        }
        names.push_back(name);
    }
    for (const auto pattern :
         {ReferencePattern::overlap, ReferencePattern::fraction, ReferencePattern::total_time, ReferencePattern::xla_overlap}) {
        const std::regex oracle(pattern_text(pattern), std::regex::ECMAScript | std::regex::icase);
        for (const std::string& name : names) {
            INFO(pattern_text(pattern) << " on \"" << name << "\"");
            REQUIRE(reference_is_comm(pattern, name) == std::regex_search(name, oracle));
        }
    }
}
