#include "workflows/run_reuse.hpp"

#include "bundle/bundle_verify.hpp"
#include "render/render_key.hpp"
#include "store/results_store.hpp"
#include "util/error.hpp"

#include <fmt/format.h>
#include <memory>

namespace harness {

std::optional<RunOutcome> reuse_earlier_run(const RenderedRun& run, const std::string& card, const std::string& target,
                                            std::ostream& out) {
    if (store::store_turned_off()) {
        out << "reuse: the results store is turned off ($CCL_HARNESS_STORE=none): running\n";
        return std::nullopt;
    }
    const std::string key = render_key(run);
    std::vector<store::RunRow> rows;
    std::unique_ptr<store::ResultsStore> db; // opened once: the rows, then the reused run's metrics
    try {
        const fs::path store_path = store::default_store_path({});
        std::error_code ec;
        if (!fs::exists(store_path, ec)) {
            out << fmt::format("reuse: no results store at {} yet: running\n", store_path.string());
            return std::nullopt;
        }
        store::ListQuery query;
        query.render_key = key;
        query.where.push_back({"state", "completed"});
        db = std::make_unique<store::ResultsStore>(store_path);
        rows = db->list(query);
    } catch (const HarnessError& e) {
        out << fmt::format("reuse: the results store cannot be read ({}): running\n", e.what());
        return std::nullopt;
    }
    // Newest first: the latest verified result of the same rendered run.
    for (auto row = rows.rbegin(); row != rows.rend(); ++row) {
        std::error_code ec;
        if (row->bundle_path.empty() || !fs::is_regular_file(row->bundle_path, ec)) {
            out << fmt::format("reuse: {} rendered alike but has no bundle on disk: skipped\n", row->run_id);
            continue;
        }
        try {
            const BundleReport report = verify_bundle(row->bundle_path);
            if (!report.valid()) {
                out << fmt::format("reuse: {}'s bundle does not verify ({}): skipped\n", row->run_id, report.problems.front().message);
                continue;
            }
        } catch (const HarnessError& e) {
            out << fmt::format("reuse: {}'s bundle cannot be read ({}): skipped\n", row->run_id, e.what());
            continue;
        }
        RunOutcome outcome;
        outcome.card = card;
        outcome.target = target;
        outcome.run_id = row->run_id;
        outcome.run_dir = row->run_dir;
        outcome.state = RunState::completed;
        outcome.reused = true;
        outcome.bundle = PackedBundle{row->bundle_path, row->bundle_sha256, 0};
        if (const auto shown = db->show(row->run_id)) {
            const Json* metrics = shown->find("metrics");
            for (const char* name : k_headline_metrics) {
                const Json* metric = metrics != nullptr ? metrics->find(name) : nullptr;
                const Json* value = metric != nullptr ? metric->find("value") : nullptr;
                if (value != nullptr && value->is_number()) {
                    outcome.headline.emplace_back(name, value->as_double());
                }
            }
        }
        out << fmt::format("reuse: {} was rendered byte for byte alike (render key {}) and its bundle verifies: nothing runs\n",
                           row->run_id, key.substr(0, 12));
        return outcome;
    }
    out << fmt::format("reuse: no earlier completed run rendered alike (render key {}): running\n", key.substr(0, 12));
    return std::nullopt;
}

} // namespace harness
