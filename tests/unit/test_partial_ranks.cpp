// A partial archive's ranks (`ingest --ranks`) as its two records keep them: provenance.json's
// ingested.ranks_present and the bundle card's metric_source.ranks_present.
#include "bundle/bundle_card.hpp"
#include "provenance/provenance.hpp"

#include <catch2/catch.hpp>
#include <string>
#include <yaml-cpp/yaml.h>

using namespace harness;

namespace {

/// A well-formed ingested record, as ingest writes it for a partial archive.
Json partial_record(const std::string& ranks, const std::string& total) {
    return Json::parse(R"({"format": 1, "origin": "ingested",
        "ingested": {"at": "2026-11-24T12:00:00Z", "ranks_present": )" +
                       ranks + R"(, "total_count": )" + total + R"(},
        "harness": {"version": "0.1.0", "commit": null, "dirty": false, "patch": null},
        "run": {"id": "x-1", "card": "x", "cluster": null, "executor": "ingested", "state": "completed",
                "started": null, "finished": null},
        "inputs": [{"path": "/data/x.yaml", "sha256": "0000000000000000000000000000000000000000000000000000000000000000"}],
        "sources": [], "container": null, "hosts": null, "environment": null, "scheduler": null})");
}

std::string problems_of(const Json& record) {
    std::string out;
    for (const std::string& line : provenance_problems(record)) {
        out += line + "\n";
    }
    return out;
}

} // namespace

TEST_CASE("provenance records a partial archive's ranks, and reads them back", "[provenance][partial]") {
    const Json record = partial_record("[0, 2]", "4");
    CHECK(problems_of(record).empty());
    const std::optional<PresentRanks> present = ingested_ranks_present(record);
    REQUIRE(present);
    CHECK(present->ranks == std::vector<long long>{0, 2});
    CHECK(present->total == 4);
}

TEST_CASE("provenance refuses ranks that are no partial set of total_count", "[provenance][partial]") {
    CHECK(problems_of(partial_record("[1, 0]", "4")).find("ingested.ranks_present[1]: expected ranks in ascending order") !=
          std::string::npos);
    CHECK(problems_of(partial_record("[0, 0]", "4")).find("ingested.ranks_present[1]") != std::string::npos);
    CHECK(problems_of(partial_record("[4]", "4")).find("below total_count 4, got 4") != std::string::npos);
    CHECK(problems_of(partial_record("[\"0\"]", "4")).find("got \"0\"") != std::string::npos);
    CHECK(problems_of(partial_record("[]", "4")).find("expected a non-empty array of ranks") != std::string::npos);
    CHECK(problems_of(partial_record("[0, 1]", "2")).find("names every rank of 2") != std::string::npos);
    CHECK(problems_of(partial_record("[0]", "0")).find("ingested.total_count: expected a positive integer") != std::string::npos);
    Json lone = partial_record("[0]", "4");
    lone["ingested"] = Json::parse(R"({"at": "2026-11-24T12:00:00Z", "ranks_present": [0]})");
    CHECK(problems_of(lone).find("ingested.total_count: missing: ranks_present and total_count go together") != std::string::npos);
    CHECK_FALSE(ingested_ranks_present(lone));
}

TEST_CASE("the card's metric_source.ranks_present is set in the text, comments kept", "[pack][partial]") {
    std::string card;
    std::string want;
    SECTION("added under metric_source") {
        card = "metric_source:\n  traces: [json]  # kinds\ntrace_url: x\n";
        want = "metric_source:\n  traces: [json]  # kinds\n  ranks_present: [0]\ntrace_url: x\n";
    }
    SECTION("replaced where it is") {
        card = "metric_source:\n  ranks_present:\n    - 3\n  traces: [json]\n";
        want = "metric_source:\n  ranks_present: [0]\n  traces: [json]\n";
    }
    SECTION("no metric_source") {
        card = "version: 1  # v\n";
        want = "version: 1  # v\nmetric_source:\n  ranks_present: [0]\n";
    }
    CHECK(set_ranks_present(card, {0}, "card.yaml") == want);
    const YAML::Node node = YAML::Load(set_ranks_present(card, {0, 2}, "card.yaml"));
    CHECK(node["metric_source"]["ranks_present"][1].as<long long>() == 2);
}
