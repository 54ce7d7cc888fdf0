#include "card/cluster.hpp"
#include "plan/plan.hpp"
#include "plan/tpu_slices.hpp"
#include "render/render.hpp"
#include "util/home.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <fstream>
#include <sstream>

using namespace harness;

namespace {

std::string read_text(const fs::path& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

void replace_once(std::string& text, const std::string& from, const std::string& to) {
    const auto at = text.find(from);
    REQUIRE(at != std::string::npos);
    text.replace(at, from.size(), to);
}

/// The DeepSeek MaxText reference card resized to `chips` (tp 1, ep 1: every size divides).
std::string card_for(long long chips, long long per_node) {
    std::string text = read_text(harness_home() / "workloads/deepseek-v2-16b-maxtext-tpu-v6e/deepseek-v2-16b-maxtext-tpu-v6e.yaml");
    replace_once(text, "total_count: 8", fmt::format("total_count: {}", chips));
    replace_once(text, "count_per_node: 8", fmt::format("count_per_node: {}", per_node));
    replace_once(text, "batch_size: 8 #", fmt::format("batch_size: {} #", chips));
    replace_once(text, "    tp: 2", "    tp: 1");
    replace_once(text, "    ep: 4", "    ep: 1");
    replace_once(text, "    dp_shard: 4", fmt::format("    dp_shard: {}", chips));
    return text;
}

struct Planned {
    Plan plan;
    Diagnostics diagnostics;
};

Planned plan_for(const std::string& text, const ClusterProfile& cluster) {
    const WorkloadCard card = WorkloadCard::from_document(YamlDocument::parse(text, "card.yaml"));
    REQUIRE_FALSE(card.diagnostics().has_errors());
    Planned out;
    out.plan = make_plan(card, cluster, true, out.diagnostics);
    return out;
}

ClusterProfile gke_profile() {
    ClusterProfile cluster = ClusterProfile::load(harness_home() / "clusters", "tpu-v6e");
    cluster.scheduler = Scheduler::gke;
    return cluster;
}

} // namespace

TEST_CASE("every v6e slice xpk lists has its hosts, chips, machine type and topology") {
    // xpk src/xpk/core/system_characteristics.py:285-294 and 696-716 (see tpu_slices.cpp).
    struct Expected {
        long long chips;
        const char* topology;
        const char* machine;
        long long gke_hosts;
        long long vm_hosts;
        long long vm_chips;
    };
    const Expected k_expected[] = {
        {1, "1x1", "ct6e-standard-1t", 1, 1, 1},      {4, "2x2", "ct6e-standard-4t", 1, 1, 4},
        {8, "2x4", "ct6e-standard-4t", 2, 1, 8},      {16, "4x4", "ct6e-standard-4t", 4, 4, 4},
        {32, "4x8", "ct6e-standard-4t", 8, 8, 4},     {64, "8x8", "ct6e-standard-4t", 16, 16, 4},
        {128, "8x16", "ct6e-standard-4t", 32, 32, 4}, {256, "16x16", "ct6e-standard-4t", 64, 64, 4},
    };
    REQUIRE(v6e_slices().size() == std::size(k_expected));
    for (const Expected& want : k_expected) {
        INFO("v6e-" << want.chips);
        const auto slice = find_v6e_slice(want.chips);
        REQUIRE(slice);
        CHECK(slice->topology == want.topology);
        CHECK(slice->gke_machine_type == want.machine);
        CHECK(slice->gke_hosts == want.gke_hosts);
        CHECK(slice->gke_hosts * slice->gke_chips_per_host == want.chips);
        CHECK(slice->vm_hosts == want.vm_hosts);
        CHECK(slice->vm_chips_per_host == want.vm_chips);
        CHECK(slice->vm_hosts * slice->vm_chips_per_host == want.chips);
    }
    CHECK_FALSE(find_v6e_slice(2));
    CHECK_FALSE(find_v6e_slice(12));
    CHECK_FALSE(find_v6e_slice(512));
}

TEST_CASE("the plan and the rendered JobSet follow the slice table for every size") {
    for (const TpuSlice& slice : v6e_slices()) {
        INFO("v6e-" << slice.chips);
        SECTION("tpu-vm v6e-" + std::to_string(slice.chips)) {
            const Planned vm = plan_for(card_for(slice.chips, slice.vm_chips_per_host),
                                        ClusterProfile::load(harness_home() / "clusters", "tpu-v6e"));
            INFO(vm.diagnostics.format());
            CHECK_FALSE(vm.diagnostics.has_errors());
            CHECK(vm.plan.tpu_hosts == slice.vm_hosts);
            CHECK(vm.plan.nodes == slice.vm_hosts);
            CHECK(vm.plan.tpu_chips_per_host == slice.vm_chips_per_host);
            CHECK(vm.plan.tpu_topology == slice.topology);
            CHECK(vm.plan.tpu_machine_type == slice.gke_machine_type);
        }
        SECTION("gke v6e-" + std::to_string(slice.chips)) {
            const ClusterProfile cluster = gke_profile();
            const std::string text = card_for(slice.chips, slice.gke_chips_per_host);
            const Planned gke = plan_for(text, cluster);
            INFO(gke.diagnostics.format());
            CHECK_FALSE(gke.diagnostics.has_errors());
            CHECK(gke.plan.tpu_hosts == slice.gke_hosts);
            CHECK(gke.plan.tpu_chips_per_host == slice.gke_chips_per_host);
            const WorkloadCard card = WorkloadCard::from_document(YamlDocument::parse(text, "card.yaml"));
            const RenderedRun run = render_run(card, cluster, gke.plan, harness_home());
            const RenderedFile* jobset = run.find("jobset.yaml");
            REQUIRE(jobset != nullptr);
            const std::string& yaml = jobset->content;
            const auto has = [&](const std::string& line) { return yaml.find(line + "\n") != std::string::npos; };
            CHECK(has(fmt::format("          parallelism: {}", slice.gke_hosts)));
            CHECK(has(fmt::format("          completions: {}", slice.gke_hosts)));
            CHECK(has(fmt::format("                      google.com/tpu: {}", slice.gke_chips_per_host)));
            CHECK(has("                cloud.google.com/gke-tpu-accelerator: tpu-v6e-slice"));
            CHECK(has(fmt::format("                cloud.google.com/gke-tpu-topology: \"{}\"", slice.topology)));
        }
    }
}

TEST_CASE("the JobSet of v6e-8 asks for two 4-chip pods even where the TPU VM has 8 chips") {
    // The issue: one pod asking for 8 chips never schedules on xpk's 2 x ct6e-standard-4t pool.
    const Planned vm = plan_for(card_for(8, 8), ClusterProfile::load(harness_home() / "clusters", "tpu-v6e"));
    CHECK(vm.plan.tpu_hosts == 1);
    CHECK(vm.plan.tpu_gke_hosts == 2);
    CHECK(vm.plan.tpu_gke_chips_per_host == 4);
}

TEST_CASE("slice sizes and host shapes the table does not have are refused") {
    const ClusterProfile vm = ClusterProfile::load(harness_home() / "clusters", "tpu-v6e");
    SECTION("no v6e-12") {
        const Planned planned = plan_for(card_for(12, 4), vm);
        CHECK(planned.diagnostics.has_errors());
        CHECK(planned.diagnostics.format().find("there is no v6e-12 slice") != std::string::npos);
    }
    SECTION("no v6e-2") { CHECK(plan_for(card_for(2, 2), vm).diagnostics.has_errors()); }
    SECTION("8 chips per node on xpk's v6e-8") {
        const Planned planned = plan_for(card_for(8, 8), gke_profile());
        CHECK(planned.diagnostics.format().find("count_per_node 8, but xpk's node pool give(s) a v6e-8 slice as 2 VM(s) x 4 chips") !=
              std::string::npos);
    }
}
