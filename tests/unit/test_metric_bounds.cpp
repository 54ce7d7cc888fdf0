// Values no run can have, and traces of another device than the card names (metric_bounds.hpp).
#include "metrics/metric_bounds.hpp"

#include <catch2/catch.hpp>

using namespace harness::metrics;

TEST_CASE("implausible values are the ones outside physical bounds", "[metrics][bounds]") {
    CHECK(implausible_value("mfu", 42).empty());
    CHECK(implausible_value("mfu", 100).empty());
    CHECK_THAT(implausible_value("mfu", 2004), Catch::Contains("2004 % is above 100 %"));
    CHECK_THAT(implausible_value("mfu", -1), Catch::Contains("outside 0..100 %"));
    CHECK_THAT(implausible_value("communication_fraction", 100.5), Catch::Contains("outside 0..100 %"));
    CHECK(implausible_value("compute_comm_overlap", 0).empty());
    CHECK_THAT(implausible_value("avg_step_time", 0), Catch::Contains("no step takes no time"));
    CHECK(implausible_value("avg_step_time", 1e-6).empty());
    CHECK_THAT(implausible_value("straggler", 1.5), Catch::Contains("outside 0..1"));
    CHECK_THAT(implausible_value("collective_volume", -3), Catch::Contains("negative"));
    CHECK(implausible_value("collective_volume", 1e15).empty()); // no bound without a duration
}

TEST_CASE("a device mismatch is said only when the trace names another model", "[metrics][bounds]") {
    // Kineto's deviceProperties names, as real traces write them.
    CHECK(device_mismatch("nvidia_a100", {"NVIDIA A100-SXM4-40GB"}).empty());
    CHECK(device_mismatch("nvidia_a100_80gb", {"NVIDIA A100-PG509-200"}).empty());
    CHECK(device_mismatch("NVIDIA_H100", {"NVIDIA H100 80GB HBM3"}).empty());
    CHECK_THAT(device_mismatch("nvidia_a100", {"Tesla V100-SXM2-16GB"}),
               Catch::Contains("the traces ran on Tesla V100-SXM2-16GB (their deviceProperties), but the card's xpu_spec.model is "
                               "nvidia_a100"));
    // ROCm names an MI250 "AMD Radeon Graphics": nothing to compare, so nothing said.
    CHECK(device_mismatch("amd_mi250", {"AMD Radeon Graphics"}).empty());
    // A card model without a model number, no devices, or a TPU: cannot tell.
    CHECK(device_mismatch("nvidia_dgx_spark", {"NVIDIA GB10"}).empty());
    CHECK(device_mismatch("nvidia_a100", {}).empty());
    CHECK(device_mismatch("tpu_v6e", {"NVIDIA A100-SXM4-40GB"}).empty());
    CHECK(device_mismatch("", {"NVIDIA A100-SXM4-40GB"}).empty());
}
