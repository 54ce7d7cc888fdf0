// What a TPU dry run says will bill (workflows/tpu_dry_run.hpp); the commands it lists are
// checked against the gcloud double's record in tests/e2e/run_tpu.sh.
#include "workflows/tpu_dry_run.hpp"

#include <catch2/catch.hpp>

using namespace harness;

TEST_CASE("a TPU dry run says what bills and until when", "[tpu_dry_run]") {
    Plan plan;
    plan.tpu_accelerator_type = "v6e-16";
    plan.tpu_hosts = 4;
    plan.tpu_chips_per_host = 4;
    plan.tpu_zone = "us-east5-b";
    plan.tpu_project = "my-project";
    plan.tpu_name = "ccl-x";
    SECTION("deleted at the end by default") {
        const std::string text = tpu_billing(plan, true);
        CHECK(text.find("a TPU v6e-16 slice (16 chip(s) on 4 host(s)), on-demand, in zone us-east5-b of project my-project") !=
              std::string::npos);
        CHECK(text.find("queued resource ccl-x-qr") != std::string::npos);
        CHECK(text.find("this run deletes it when it ends") != std::string::npos);
    }
    SECTION("--keep, spot, no project") {
        plan.tpu_spot = true;
        plan.tpu_project.clear();
        const std::string text = tpu_billing(plan, false);
        CHECK(text.find("spot") != std::string::npos);
        CHECK(text.find("project (unset)") != std::string::npos);
        CHECK(text.find("leaves it up, and billing") != std::string::npos);
    }
}
