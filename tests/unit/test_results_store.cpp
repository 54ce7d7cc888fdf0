// The results store (store/results_store.hpp) over run directories written the way the harness
// writes them (RunRecord::save, card.yaml, metrics.json, provenance.json): what index adds,
// updates and drops, what list, show and their filters return, and what it refuses.
#include "run/run_directory.hpp"
#include "run/run_record.hpp"
#include "store/results_store.hpp"
#include "test_context.hpp"
#include "util/error.hpp"

#include <catch2/catch.hpp>

#include <sqlite3.h>

#include <string>

using namespace harness;
using harness::test::TempDir;

namespace {

/// A run directory under `root`: run.json (completed, or the state given), the card, a metric
/// and provenance pins.
fs::path write_run(const fs::path& root, const std::string& id, const std::string& family, double step_time,
                   RunState state = RunState::completed) {
    const fs::path dir = root / id;
    fs::create_directories(dir);
    RunRecord record;
    record.run_id = id;
    record.card = "tiny-ddp";
    record.target = "local";
    record.executor = "local";
    record.state = state;
    record.transitions = {
        {"rendered", "2026-11-27T10:00:00Z"}, {"running", "2026-11-27T10:00:05Z"}, {to_string(state), "2026-11-27T10:01:00Z"}};
    record.overrides = {"workload.data.batch_size=8"};
    record.save(dir);
    write_file_atomic(dir / run_files::k_card, "workload:\n  model:\n    model_family: " + family + "\n  data:\n    batch_size: 8\n");
    write_file_atomic(dir / run_files::k_plan, R"({"framework": "torch-ddp"})");
    write_file_atomic(dir / run_files::k_metrics,
                      R"({"metrics": {"avg_step_time": {"value": )" + std::to_string(step_time) + R"(, "unit": "s"}}})");
    write_file_atomic(dir / run_files::k_provenance,
                      R"({"sources": [{"repo": "https://github.com/pytorch/torchtitan.git", "commit": "a1b2c3"}],
                         "harness": {"commit": "0123abcd"},
                         "container": {"image": "nvcr.io/nvidia/pytorch:25.01-py3", "digest": "sha256:feed", "image_id": "sha256:beef"}})");
    return dir;
}

store::ListQuery where(const std::string& clause) {
    store::ListQuery query;
    query.where.push_back(store::parse_where(clause));
    return query;
}

} // namespace

TEST_CASE("the store indexes run directories and answers list, show and their filters") {
    TempDir tmp;
    const fs::path results = tmp.path() / "results";
    write_run(results, "tiny-ddp-a", "llama", 0.5);
    write_run(results, "tiny-ddp-b", "qwen", 0.25, RunState::failed);
    store::ResultsStore db(tmp.path() / "results.db");

    const store::IndexCounts first = db.index({results});
    CHECK(first.added == 2);
    CHECK(first.problems.empty());
    const store::IndexCounts again = db.index({results});
    CHECK(again.added == 0);
    CHECK(again.unchanged == 2);

    CHECK(db.list({}).size() == 2);
    const auto completed = db.list(where("state=completed"));
    REQUIRE(completed.size() == 1);
    CHECK(completed.front().run_id == "tiny-ddp-a");
    const auto qwen = db.list(where("workload.model.model_family=qwen"));
    REQUIRE(qwen.size() == 1);
    CHECK(qwen.front().run_id == "tiny-ddp-b");
    CHECK(db.list(where("workload.model.model_family=mixtral")).empty());

    store::ListQuery with_metric;
    with_metric.metric = "avg_step_time";
    const auto rows = db.list(with_metric);
    REQUIRE(rows.size() == 2);
    CHECK(rows.front().metric_value.value_or(-1) == Approx(0.5));
    CHECK(rows.front().metric_unit == "s");

    SECTION("show: the run's fields, overrides, pins and metrics") {
        const auto shown = db.show("tiny-ddp-a");
        REQUIRE(shown);
        CHECK(shown->find("framework")->as_string() == "torch-ddp");
        CHECK(shown->find("card_fields")->find("workload.model.model_family")->as_string() == "llama");
        CHECK(shown->find("overrides")->find("workload.data.batch_size")->as_string() == "8");
        const Json* pins = shown->find("pins");
        REQUIRE(pins != nullptr);
        CHECK(pins->find("https://github.com/pytorch/torchtitan.git")->as_string() == "a1b2c3");
        CHECK(pins->find("ccl-harness")->as_string() == "0123abcd");
        CHECK(pins->find("image:nvcr.io/nvidia/pytorch:25.01-py3")->as_string() == "sha256:feed");
        CHECK(pins->find("image_id")->as_string() == "sha256:beef");
        CHECK(shown->find("metrics")->find("avg_step_time")->find("value")->as_double() == Approx(0.5));
        CHECK_FALSE(db.show("tiny-ddp-nonesuch"));
    }
    SECTION("a changed record is updated, a removed directory dropped") {
        write_file_atomic(results / "tiny-ddp-a" / run_files::k_provenance, R"({"harness": {"commit": "ffff0000"}, "extra": 1})");
        write_run(results, "tiny-ddp-c", "llama", 0.75);
        fs::remove_all(results / "tiny-ddp-b");
        const store::IndexCounts counts = db.index({results});
        CHECK(counts.added == 1);
        CHECK(counts.updated == 1);
        CHECK(counts.dropped == 1);
        CHECK(db.show("tiny-ddp-a")->find("pins")->find("ccl-harness")->as_string() == "ffff0000");
        CHECK_FALSE(db.show("tiny-ddp-b"));
    }
    SECTION("a copy of a run under another root keeps the first row, and says so") {
        const fs::path other = tmp.path() / "copied";
        fs::create_directories(other);
        fs::copy(results / "tiny-ddp-a", other / "tiny-ddp-a", fs::copy_options::recursive);
        const store::IndexCounts counts = db.index({other});
        CHECK(counts.added == 0);
        REQUIRE(counts.problems.size() == 1);
        CHECK(counts.problems.front().find("run id tiny-ddp-a is already indexed from " + (results / "tiny-ddp-a").string()) !=
              std::string::npos);
        CHECK(db.show("tiny-ddp-a")->find("run_dir")->as_string() == (results / "tiny-ddp-a").string());
    }
    SECTION("a run directory whose record is not one is a problem, the others still indexed") {
        write_run(results, "tiny-ddp-d", "llama", 1.0);
        write_file_atomic(results / "tiny-ddp-d" / run_files::k_record, "{\"state\": \"exploded\"}");
        const store::IndexCounts counts = db.index({results});
        REQUIRE(counts.problems.size() == 1);
        CHECK(counts.problems.front().find("tiny-ddp-d") != std::string::npos);
        CHECK(db.list({}).size() == 2);
    }
}

TEST_CASE("the store refuses bad queries and databases that are not a results store") {
    TempDir tmp;
    store::ResultsStore db(tmp.path() / "results.db");
    for (const char* bad : {"state", "=completed", "not a field=1"}) {
        INFO(bad);
        CHECK_THROWS_AS(store::parse_where(bad), HarnessError);
    }
    store::ListQuery since;
    since.since = "yesterday";
    CHECK_THROWS_AS(db.list(since), HarnessError);
    store::ListQuery metric;
    metric.metric = "nonesuch";
    CHECK_THROWS_AS(db.list(metric), HarnessError);
    CHECK_THROWS_AS(db.index({tmp.path() / "missing"}), HarnessError);

    // Another program's SQLite database (no application id of ours) is refused, and left as it was.
    const fs::path foreign = tmp.path() / "foreign.db";
    sqlite3* handle = nullptr;
    REQUIRE(sqlite3_open(foreign.c_str(), &handle) == SQLITE_OK);
    REQUIRE(sqlite3_exec(handle, "CREATE TABLE t (x); INSERT INTO t VALUES (1);", nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(handle);
    const auto size = fs::file_size(foreign);
    try {
        store::ResultsStore opened(foreign);
        FAIL("a foreign database was opened");
    } catch (const HarnessError& e) {
        CHECK(e.code() == k_exit_usage);
        CHECK(std::string(e.what()).find(foreign.string()) != std::string::npos);
    }
    CHECK(fs::file_size(foreign) == size);
    // Not SQLite at all.
    const fs::path text = tmp.write("notes.db", "these are not the rows you are looking for\n");
    CHECK_THROWS_AS(store::ResultsStore(text), HarnessError);
}

TEST_CASE("the default store: --store, then $CCL_HARNESS_STORE, and none is off, not a file name") {
    TempDir tmp;
    {
        test::ScopedEnv store("CCL_HARNESS_STORE", (tmp.path() / "mine.db").c_str());
        CHECK(store::default_store_path({}) == tmp.path() / "mine.db");
        CHECK(store::default_store_path(tmp.path() / "given.db") == tmp.path() / "given.db");
    }
    test::ScopedEnv off("CCL_HARNESS_STORE", "none");
    CHECK(store::store_turned_off());
    CHECK_THROWS_WITH(store::default_store_path({}), Catch::Contains("turned off ($CCL_HARNESS_STORE=none)"));
    CHECK(store::default_store_path(tmp.path() / "given.db") == tmp.path() / "given.db"); // an explicit --store still works
}
