// `ingest`: where each trace of a hand-made job goes, what its provenance says, and that bad input
// leaves nothing behind; provenance's checks of the ingested form, and that a harness run's
// record is never taken for one.
#include "bundle/bundle_verify.hpp"
#include "provenance/provenance.hpp"
#include "test_context.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "workflows/ingest.hpp"

#include <catch2/catch.hpp>
#include <sstream>

using namespace harness;

namespace {

const fs::path k_source = CCL_HARNESS_SOURCE_DIR;

bool has(const std::vector<std::string>& problems, const std::string& needle) {
    for (const std::string& problem : problems) {
        if (problem.find(needle) != std::string::npos) {
            return true;
        }
    }
    return false;
}

/// Two-rank Kineto traces (tests/fixtures/traces/two_ranks) under the names `names` give them.
fs::path traces_named(const test::TempDir& dir, const std::string& rank0, const std::string& rank1) {
    const fs::path traces = dir.path() / "traces";
    fs::create_directories(traces);
    fs::copy_file(k_source / "tests/fixtures/traces/two_ranks/kineto_trace_0.json", traces / rank0);
    fs::copy_file(k_source / "tests/fixtures/traces/two_ranks/kineto_trace_1.json", traces / rank1);
    return traces;
}

IngestOptions options_for(const test::TempDir& dir, const fs::path& traces) {
    IngestOptions options;
    options.card = k_source / "workloads/tiny-ddp/tiny-ddp.yaml";
    options.traces = traces;
    options.results = dir.path() / "results";
    options.home = k_source;
    return options;
}

std::size_t entries(const fs::path& dir) {
    std::error_code ec;
    std::size_t count = 0;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        ++count;
    }
    return count;
}

/// A minimal well-formed ingested record, as ingest writes it.
Json ingested_record() {
    return Json::parse(R"({"format": 1, "origin": "ingested", "ingested": {"at": "2026-11-24T12:00:00Z"},
        "harness": {"version": "0.1.0", "commit": null, "dirty": false, "patch": null},
        "run": {"id": "x-1", "card": "x", "cluster": null, "executor": "ingested", "state": "completed",
                "started": null, "finished": null},
        "inputs": [{"path": "/data/x.yaml", "sha256": "0000000000000000000000000000000000000000000000000000000000000000"}],
        "sources": [{"repo": "https://example.invalid/r.git", "ref": "main", "commit": null}],
        "container": null, "hosts": null, "environment": null, "scheduler": null})");
}

} // namespace

TEST_CASE("ingest: an ingested record is well-formed and distinguishable", "[ingest][provenance]") {
    Json record = ingested_record();
    CHECK(provenance_problems(record).empty());
    CHECK(is_ingested_provenance(record));

    SECTION("it pins no harness commit") {
        record["harness"]["commit"] = std::string(40, 'a');
        CHECK(has(provenance_problems(record), "harness.commit: expected null in an ingested record"));
    }
    SECTION("its executor is ingested") {
        record["run"]["executor"] = "local";
        CHECK(has(provenance_problems(record), "run.executor: expected \"ingested\""));
    }
    SECTION("it reproduces nothing") {
        record["reproduces"] = Json::parse(R"({"bundle": "b.tar.zst", "manifest_sha256": "00"})");
        CHECK(has(provenance_problems(record), "reproduces: an ingested record reproduces no bundle"));
    }
    SECTION("it says when it was ingested") {
        record["ingested"]["at"] = "yesterday";
        CHECK(has(provenance_problems(record), "ingested.at: expected a UTC time"));
    }
    SECTION("an unknown origin is refused") {
        record["origin"] = "imported";
        CHECK(has(provenance_problems(record), "origin: expected \"ingested\""));
        CHECK_FALSE(is_ingested_provenance(record));
    }
    SECTION("without the origin, the unknowns are problems and the executor is claimed falsely") {
        Json harness_run = Json::object();
        for (const auto& [key, value] : record.as_object()) {
            if (key != "origin") {
                harness_run[key] = value;
            }
        }
        record = harness_run;
        const std::vector<std::string> problems = provenance_problems(record);
        CHECK(has(problems, "run.executor: \"ingested\" without origin \"ingested\""));
        CHECK(has(problems, "hosts: expected an array, got null"));
        CHECK(has(problems, "run.started: expected a UTC time"));
        CHECK(has(problems, "sources[0].commit: expected 40 lowercase hex digits, got null"));
        CHECK_FALSE(is_ingested_provenance(record));
    }
}

TEST_CASE("ingest: traces named by global rank, bundle verified as unpinned, ingested", "[ingest]") {
    const test::TempDir dir;
    SECTION("TorchTitan's rank<r>_trace.json") {
        const fs::path traces = traces_named(dir, "rank0_trace.json", "rank1_trace.json");
        std::ostringstream out;
        const IngestOutcome outcome = ingest_run(options_for(dir, traces), out);
        REQUIRE(outcome.traces.size() == 2);
        CHECK(outcome.traces[0].name == "kineto_trace_0.json");
        CHECK(outcome.traces[1].name == "kineto_trace_1.json");
        CHECK(outcome.traces[1].rank_from == "name");
        const BundleReport report = verify_bundle(outcome.bundle);
        CHECK(report.valid());
        CHECK(report.ingested);
        CHECK(bundle_report_to_json(report)["provenance"].as_string() == k_unpinned_ingested);
        const Json provenance = Json::parse(read_file(outcome.run_dir / "provenance.json"));
        CHECK(provenance_problems(provenance).empty());
        CHECK(is_ingested_provenance(provenance));
        CHECK(fs::is_regular_file(outcome.run_dir / "rendered" / "README.txt"));
    }
    SECTION("the tensorboard handler's names, ranks from distributedInfo") {
        const fs::path traces = traces_named(dir, "host_11.1.pt.trace.json", "host_12.2.pt.trace.json");
        std::ostringstream out;
        const IngestOutcome outcome = ingest_run(options_for(dir, traces), out);
        REQUIRE(outcome.traces.size() == 2);
        CHECK(outcome.traces[0].source == "host_11.1.pt.trace.json");
        CHECK(outcome.traces[1].rank_from == "distributedInfo");
    }
    SECTION("a note beside the traces is left out with a warning") {
        const fs::path traces = traces_named(dir, "kineto_trace_0.json", "kineto_trace_1.json");
        write_file_atomic(traces / "NOTES.md", "collected by hand\n");
        std::ostringstream out;
        const IngestOutcome outcome = ingest_run(options_for(dir, traces), out);
        REQUIRE(outcome.warnings.size() == 1);
        CHECK(outcome.warnings[0].find("NOTES.md: not a trace") != std::string::npos);
    }
}

TEST_CASE("ingest: bad input is one error and leaves nothing under results/", "[ingest]") {
    const test::TempDir dir;
    std::ostringstream out;
    const auto refused = [&](const IngestOptions& options, const std::string& needle) {
        try {
            ingest_run(options, out);
            FAIL("ingest accepted it");
        } catch (const HarnessError& error) {
            CHECK(error.code() == k_exit_usage);
            CHECK_THAT(error.what(), Catch::Contains(needle));
        }
        CHECK(entries(dir.path() / "results") == 0);
    };
    fs::create_directories(dir.path() / "results");
    SECTION("two traces claim one rank") {
        const fs::path traces = traces_named(dir, "rank0_trace.json", "kineto_trace_0.json");
        refused(options_for(dir, traces), "both claim rank 0");
    }
    SECTION("a rank is missing") {
        const fs::path traces = traces_named(dir, "rank0_trace.json", "rank5_trace.json");
        refused(options_for(dir, traces), "rank 5, but the card's total_count is 2");
    }
    SECTION("a trace-like file it cannot place") {
        const fs::path traces = traces_named(dir, "rank0_trace.json", "rank1_trace.json");
        write_file_atomic(traces / "profile.json", "{}");
        refused(options_for(dir, traces), "profile.json: not a trace name ingest can place");
    }
    SECTION("a trace name over something that is no trace, found only while writing") {
        const fs::path traces = traces_named(dir, "rank0_trace.json", "rank1_trace.json");
        write_file_atomic(traces / "rank1_trace.json", "not json");
        refused(options_for(dir, traces), "not a JSON trace");
    }
    SECTION("a link") {
        const fs::path traces = traces_named(dir, "rank0_trace.json", "rank1_trace.json");
        fs::create_symlink(traces / "rank1_trace.json", traces / "rank2_trace.json");
        refused(options_for(dir, traces), "symbolic link");
    }
    SECTION("an empty trace dir") {
        fs::create_directories(dir.path() / "empty");
        refused(options_for(dir, dir.path() / "empty"), "no traces");
    }
    SECTION("a card with errors, named by line") {
        const fs::path traces = traces_named(dir, "rank0_trace.json", "rank1_trace.json");
        IngestOptions options = options_for(dir, traces);
        std::string card = read_file(options.card);
        card.replace(card.find("total_count: 2"), 14, "total_count: two");
        options.card = dir.write("bad.yaml", card);
        refused(options, "bad.yaml:");
    }
}
