// What a Slurm dry run says a job can charge (workflows/slurm_dry_run.hpp) and the profile's
// charge factors it reads (card/cluster.hpp); the whole preview of every reference Perlmutter
// card, with its image work and sbatch line, is checked in tests/e2e/dry_run_bill.sh.
#include "card/cluster.hpp"
#include "test_context.hpp"
#include "util/error.hpp"
#include "util/home.hpp"
#include "workflows/slurm_dry_run.hpp"

#include <catch2/catch.hpp>

using namespace harness;
using harness::test::TempDir;

namespace {

ClusterProfile gpu_cluster() {
    ClusterProfile cluster;
    cluster.name = "site";
    cluster.scheduler = Scheduler::slurm;
    cluster.accelerator_type = "GPU";
    cluster.accelerators_per_node = 4;
    cluster.source = "/profiles/site.yaml";
    cluster.charge_factors = {{"regular", 1.5}, {"overrun", 0}};
    cluster.locations["slurm.charge_factors.regular"] = "/profiles/site.yaml:9:14";
    return cluster;
}

Plan slurm_plan(long long nodes, const std::string& time_limit, const std::string& qos) {
    Plan plan;
    plan.scheduler = Scheduler::slurm;
    plan.nodes = nodes;
    plan.time_limit = time_limit;
    plan.qos = qos;
    plan.account = "m1234";
    plan.constraint = "gpu";
    return plan;
}

} // namespace

TEST_CASE("a Slurm job can charge at most its nodes times its time limit", "[slurm_dry_run]") {
    const ClusterProfile cluster = gpu_cluster();
    SECTION("a QOS with a known factor: node-hours and allocation hours") {
        const SlurmBill bill = slurm_bill(slurm_plan(4, "01:30:00", "regular"), cluster);
        CHECK(bill.nodes == 4);
        CHECK(bill.gpus_per_node == 4);
        CHECK(bill.gpus == 16);
        CHECK(bill.time_limit_hours == Approx(1.5));
        CHECK(bill.node_hours == Approx(6));
        REQUIRE(bill.charge_factor);
        CHECK(*bill.charge_factor == Approx(1.5));
        REQUIRE(bill.allocation_hours);
        CHECK(*bill.allocation_hours == Approx(9));
        CHECK(bill.charge_factor_source == "/profiles/site.yaml:9:14");
        CHECK(bill.account == "m1234");
        CHECK(bill.constraint == "gpu");
    }
    SECTION("days and minutes as sbatch reads them") {
        CHECK(slurm_bill(slurm_plan(2, "1-00:00:00", "regular"), cluster).node_hours == Approx(48));
        CHECK(slurm_bill(slurm_plan(1, "90", "regular"), cluster).node_hours == Approx(1.5));
        CHECK(slurm_bill(slurm_plan(3, "00:10:00", "regular"), cluster).node_hours == Approx(0.5));
    }
    SECTION("a free QOS charges 0, which is known") {
        const SlurmBill bill = slurm_bill(slurm_plan(4, "02:00:00", "overrun"), cluster);
        REQUIRE(bill.allocation_hours);
        CHECK(*bill.allocation_hours == 0);
    }
    SECTION("a QOS the profile does not list: unknown, never guessed") {
        const SlurmBill bill = slurm_bill(slurm_plan(4, "01:00:00", "premium"), cluster);
        CHECK(bill.node_hours == Approx(4));
        CHECK_FALSE(bill.charge_factor);
        CHECK_FALSE(bill.allocation_hours);
        CHECK(bill.charge_factor_source ==
              "unknown: profile site.yaml has no charge factor for QOS \"premium\" (slurm.charge_factors has overrun, regular)");
    }
    SECTION("no QOS: the site's default, whose factor is unknown") {
        const SlurmBill bill = slurm_bill(slurm_plan(1, "01:00:00", ""), cluster);
        CHECK_FALSE(bill.allocation_hours);
        CHECK(bill.charge_factor_source.find("no QOS asked for") == 0);
    }
    SECTION("a profile without a table") {
        ClusterProfile bare = cluster;
        bare.charge_factors.clear();
        const SlurmBill bill = slurm_bill(slurm_plan(1, "01:00:00", "regular"), bare);
        CHECK_FALSE(bill.allocation_hours);
        CHECK(bill.charge_factor_source == "unknown: profile site.yaml lists no charge factors (slurm.charge_factors)");
    }
    SECTION("nodes without GPUs count no GPUs") {
        ClusterProfile cpus = cluster;
        cpus.accelerator_type = "CPU";
        const SlurmBill bill = slurm_bill(slurm_plan(2, "01:00:00", "regular"), cpus);
        CHECK(bill.gpus == 0);
        CHECK(bill.node_hours == Approx(2));
    }
    SECTION("a time limit sbatch would refuse is refused") {
        CHECK_THROWS_AS(slurm_bill(slurm_plan(1, "an hour", "regular"), cluster), HarnessError);
    }
}

TEST_CASE("the bill's text and JSON say the same", "[slurm_dry_run]") {
    const SlurmBill bill = slurm_bill(slurm_plan(4, "00:30:00", "regular"), gpu_cluster());
    const std::string text = format_slurm_bill(bill);
    CHECK(text.find("bill: account m1234, QOS regular, constraint gpu, 4 node(s) x 4 GPU(s) = 16 GPU(s), time limit 00:30:00 "
                    "(0.5 h)\n") == 0);
    CHECK(text.find("bill: can charge at most 2 node-hour(s) (4 node(s) x 0.5 h") != std::string::npos);
    CHECK(text.find("bill: at most 3 allocation hour(s) (2 node-hour(s) x charge factor 1.5 of QOS regular") != std::string::npos);
    const Json json = slurm_bill_to_json(bill);
    CHECK(json.find("node_hours")->as_double() == Approx(2));
    CHECK(json.find("allocation_hours")->as_double() == Approx(3));
    CHECK(json.find("partition")->is_null());
}

TEST_CASE("hours are written as people read them", "[slurm_dry_run]") {
    CHECK(hours_text(4) == "4");
    CHECK(hours_text(0) == "0");
    CHECK(hours_text(12.5) == "12.5");
    CHECK(hours_text(1.0 / 6) == "0.17");
    CHECK(hours_text(6144) == "6144");
}

TEST_CASE("a profile's charge factors are read and checked", "[slurm_dry_run][cluster]") {
    TempDir dir;
    SECTION("a table, inherited settings kept") {
        const fs::path file = dir.write("mine.yaml", "name: mine\nextends: perlmutter\nslurm:\n  charge_factors:\n"
                                                     "    regular: 1\n    premium: 2.5\n    overrun: 0\n");
        const ClusterProfile mine = ClusterProfile::find(file.string(), harness_home());
        CHECK(mine.charge_factors == std::map<std::string, double>{{"overrun", 0}, {"premium", 2.5}, {"regular", 1}});
        CHECK(mine.location("slurm.charge_factors.premium") == file.string() + ":6:14");
        CHECK(mine.constraint == "gpu");
    }
    SECTION("a factor that is not a number >= 0 is an error where it is written") {
        for (const char* bad : {"-1", "lots", "inf", "nan"}) {
            CAPTURE(bad);
            const fs::path file = dir.write(
                "bad.yaml", std::string("name: bad\nextends: perlmutter\nslurm:\n  charge_factors:\n    regular: ") + bad + "\n");
            CHECK_THROWS_WITH(ClusterProfile::find(file.string(), harness_home()),
                              Catch::Contains(file.string() + ":5:14: slurm.charge_factors.regular: expected a number >= 0"));
        }
    }
}
