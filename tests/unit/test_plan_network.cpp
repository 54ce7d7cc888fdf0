// plan_network.cpp: a multi-node plan must not pin gloo's or NCCL's sockets to loopback.
#include "card_fixture.hpp"
#include "plan/plan.hpp"
#include "plan/plan_steps.hpp"
#include "util/home.hpp"

#include <catch2/catch.hpp>

using namespace harness;
using harness::test::card_with;

namespace {

Diagnostics plan_of(const std::string& text, bool strict) {
    const WorkloadCard card = WorkloadCard::from_document(YamlDocument::parse(text, "card.yaml"));
    REQUIRE_FALSE(card.diagnostics().has_errors());
    Diagnostics diagnostics;
    make_plan(card, ClusterProfile::load(harness_home() / "clusters", "perlmutter"), strict, diagnostics);
    return diagnostics;
}

bool mentions(const Diagnostics& diagnostics, const std::string& text) { return diagnostics.format().find(text) != std::string::npos; }

} // namespace

TEST_CASE("loopback names in a socket interface list", "[plan_network]") {
    using list = std::vector<std::string>;
    CHECK(loopback_interfaces("lo") == list{"lo"});
    CHECK(loopback_interfaces(" lo0 ") == list{"lo0"});
    CHECK(loopback_interfaces("eth0,lo") == list{"lo"});
    CHECK(loopback_interfaces("=lo") == list{"lo"});
    SECTION("an NCCL exclusion list pins nothing") { CHECK(loopback_interfaces("^lo,docker").empty()); }
    SECTION("names that only start like loopback") {
        CHECK(loopback_interfaces("lookout").empty());
        CHECK(loopback_interfaces("hsn0,eth0").empty());
        CHECK(loopback_interfaces("").empty());
    }
}

TEST_CASE("a multi-node plan that pins sockets to lo is an error at the card's line", "[plan_network]") {
    // The fixture is 16 A100s, 4 per node: 4 nodes.
    const std::string pinned = card_with("      NCCL_DEBUG: INFO\n", "      NCCL_DEBUG: INFO\n      NCCL_SOCKET_IFNAME: lo\n");
    SECTION("strict: an error naming the field and its position") {
        const Diagnostics diagnostics = plan_of(pinned, true);
        CHECK(diagnostics.has_errors());
        CHECK(mentions(diagnostics, "card.yaml:44:27: Model-executor.communication_library.env.NCCL_SOCKET_IFNAME:"));
        CHECK(mentions(diagnostics, "job spans 4 nodes"));
    }
    SECTION("not strict: a warning") {
        const Diagnostics diagnostics = plan_of(pinned, false);
        CHECK_FALSE(diagnostics.has_errors());
        CHECK(mentions(diagnostics, "pins the sockets to the loopback interface \"lo\""));
    }
    SECTION("launch.env's value wins, and is the one reported") {
        const Diagnostics diagnostics = plan_of(card_with("launch:\n", "launch:\n  env:\n    GLOO_SOCKET_IFNAME: lo\n"), true);
        CHECK(mentions(diagnostics, "launch.env.GLOO_SOCKET_IFNAME: GLOO_SOCKET_IFNAME=\"lo\""));
    }
    SECTION("one node keeps its loopback") {
        const Diagnostics diagnostics = plan_of(card_with("      total_count: 16\n", "      total_count: 4\n"), true);
        CHECK_FALSE(mentions(diagnostics, "loopback"));
    }
}
