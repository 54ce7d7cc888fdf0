#include "card_fixture.hpp"
#include "plan/container_plan.hpp"
#include "plan/plan.hpp"
#include "util/home.hpp"

#include <catch2/catch.hpp>

using namespace harness;
using harness::test::card_with;
using harness::test::k_card;

namespace {

const std::string k_digest = "nvcr.io/nvidia/pytorch@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

Plan plan_of(const std::string& text, Diagnostics& diagnostics, bool strict = true) {
    const WorkloadCard card = WorkloadCard::from_document(YamlDocument::parse(text, "card.yaml"));
    REQUIRE_FALSE(card.diagnostics().has_errors());
    return make_plan(card, ClusterProfile::load(harness_home() / "clusters", "perlmutter"), strict, diagnostics);
}

std::string with_runtime(const std::string& runtime, const std::string& image = k_digest) {
    return card_with("    image: " + k_digest + "\n", "    image: " + image + "\n    runtime: " + runtime + "\n");
}

bool mentions(const Diagnostics& diagnostics, const std::string& text) { return diagnostics.format().find(text) != std::string::npos; }

} // namespace

TEST_CASE("the CUDA major comes from the driver version as cards write it") {
    CHECK(cuda_major_of("cuda_13.0") == 13);
    CHECK(cuda_major_of("CUDA 12.4") == 12);
    CHECK(cuda_major_of("12.9") == 12);
    CHECK(cuda_major_of("cuda-13") == 13);
    CHECK(cuda_major_of("none") == 0);
    CHECK(cuda_major_of("v2-alpha-tpuv6e") == 0);
    CHECK(cuda_major_of("") == 0);
    CHECK(cuda_major_of("cuda_13.0 or later") == 0);
    CHECK(cuda_major_of("cuda_12.x") == 12); // the major, the minor left open (12 corpus cards)
    CHECK(cuda_major_of("cuda_12.y") == 0);
}

TEST_CASE("the NCCL plugin follows the runtime and the CUDA major") {
    CHECK(nccl_plugin_for("podman-hpc", 12) == "--nccl");
    CHECK(nccl_plugin_for("podman-hpc", 13) == "--nccl-cu13");
    CHECK(nccl_plugin_for("shifter", 12) == "gpu,nccl-plugin");
    CHECK(nccl_plugin_for("shifter", 13) == "gpu,nccl-cu13-plugin");
    CHECK(nccl_plugin_for("shifter", 11).empty());
    CHECK(nccl_plugin_for("docker", 13).empty());
    CHECK(nccl_plugin_for("podman-hpc", 0).empty());
}

TEST_CASE("Shifter's --image is docker:IMAGE; only a tag can be looked up") {
    CHECK(shifter_image_for("nvcr.io/nvidia/pytorch:25.09-py3") == "docker:nvcr.io/nvidia/pytorch:25.09-py3");
    CHECK(shifter_image_for("registry:5000/a/b:tag") == "docker:registry:5000/a/b:tag");
    CHECK(shifter_image_for(k_digest) == "docker:" + k_digest);
    CHECK(shifter_image_for("").empty());
    CHECK(has_tag("nvcr.io/nvidia/pytorch:25.09-py3"));
    CHECK(has_tag("registry:5000/a/b:tag"));
    CHECK_FALSE(has_tag("registry:5000/a/b"));
    CHECK_FALSE(has_tag("ubuntu"));
    CHECK_FALSE(has_tag(k_digest));
    CHECK(is_digest_image(k_digest));
    CHECK_FALSE(is_digest_image("nvcr.io/nvidia/pytorch:25.09-py3"));
    CHECK_FALSE(is_digest_image(k_digest.substr(0, k_digest.size() - 1)));
}

TEST_CASE("Perlmutter runs podman-hpc with the plugin of the image's CUDA major") {
    Diagnostics diagnostics;
    const Plan plan = plan_of(k_card, diagnostics);
    INFO(diagnostics.format());
    CHECK_FALSE(mentions(diagnostics, "launch.container"));
    CHECK_FALSE(mentions(diagnostics, "driver_version"));
    CHECK(plan.container_runtime == "podman-hpc");
    CHECK(plan.cuda_major == 12);
    CHECK(plan.nccl_plugin == "--nccl");
    CHECK(plan.cpus_per_task == 128); // torchrun: one task per node has the whole node
    Diagnostics cu13;
    CHECK(plan_of(card_with("driver_version: cuda_12.4", "driver_version: cuda_13.0"), cu13).nccl_plugin == "--nccl-cu13");
    Diagnostics shifter12;
    CHECK(plan_of(with_runtime("shifter", "nvcr.io/nvidia/pytorch:25.09-py3"), shifter12, false).nccl_plugin == "gpu,nccl-plugin");
}

TEST_CASE("container problems name the field and the fix") {
    SECTION("a digest with Shifter explains the gateway's rule") {
        Diagnostics diagnostics;
        plan_of(with_runtime("shifter"), diagnostics);
        CHECK(diagnostics.has_errors());
        CHECK(mentions(diagnostics, "launch.container.image"));
        CHECK(mentions(diagnostics, "splits the name on ':'"));
        CHECK(mentions(diagnostics, "podman-hpc"));
    }
    SECTION("a tag with Shifter is not pinned") {
        Diagnostics diagnostics;
        plan_of(with_runtime("shifter", "nvcr.io/nvidia/pytorch:25.09-py3"), diagnostics);
        CHECK(mentions(diagnostics, "does not pin"));
    }
    SECTION("a tag with podman-hpc is not pinned by digest") {
        Diagnostics diagnostics;
        plan_of(with_runtime("podman-hpc", "nvcr.io/nvidia/pytorch:25.09-py3"), diagnostics);
        CHECK(mentions(diagnostics, "is not pinned by digest"));
    }
    SECTION("a GPU container without a CUDA major") {
        Diagnostics diagnostics;
        plan_of(card_with("driver_version: cuda_12.4", "driver_version: none"), diagnostics);
        CHECK(diagnostics.has_errors());
        CHECK(mentions(diagnostics, "workload.hardware.driver_version"));
    }
    SECTION("without --strict they are warnings") {
        Diagnostics diagnostics;
        plan_of(with_runtime("shifter"), diagnostics, false);
        CHECK_FALSE(diagnostics.has_errors());
        CHECK(mentions(diagnostics, "(an error with --strict)"));
    }
    SECTION("no container, no plugin and no CUDA rule") {
        Diagnostics diagnostics;
        std::string text = with_runtime("none");
        text.replace(text.find("cuda_12.4"), 9, "none");
        const Plan plan = plan_of(text, diagnostics);
        CHECK_FALSE(mentions(diagnostics, "driver_version"));
        CHECK(plan.nccl_plugin.empty());
    }
}
