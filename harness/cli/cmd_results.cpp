#include "cli/commands.hpp"
#include "metrics/metrics.hpp"
#include "store/results_store.hpp"
#include "util/error.hpp"
#include "util/quote.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>
#include <iostream>
#include <memory>

namespace harness::cli {

namespace {

struct ResultsCommandOptions {
    std::string verb;
    std::vector<std::string> args;
    fs::path store;
    bool rebuild = false;
    std::vector<std::string> where;
    std::string since;
    std::string metric;
    bool json = false;
    bool csv = false;
};

// RFC 4180: a field with a comma, quote or line break is quoted, its quotes doubled.
std::string csv_field(const std::string& text) {
    if (text.find_first_of(",\"\r\n") == std::string::npos) {
        return text;
    }
    std::string out = "\"";
    for (const char c : text) {
        out += c == '"' ? std::string("\"\"") : std::string(1, c);
    }
    return out + "\"";
}

std::string metric_text(const store::RunRow& row) { return row.metric_value ? fmt::format("{:.6g}", *row.metric_value) : ""; }

int run_index(const ResultsCommandOptions& options, const fs::path& path) {
    if (options.rebuild) {
        store::ResultsStore::remove_files(path);
    }
    store::ResultsStore db(path);
    std::vector<fs::path> roots(options.args.begin(), options.args.end());
    if (roots.empty()) {
        roots.emplace_back("results");
    }
    const store::IndexCounts counts = db.index(roots);
    for (const std::string& problem : counts.problems) {
        std::cerr << "ccl-harness: warning: not indexed: " << terminal_text(problem) << "\n";
    }
    if (options.json) {
        Json json = Json::object();
        json["store"] = path.string();
        json["added"] = counts.added;
        json["updated"] = counts.updated;
        json["dropped"] = counts.dropped;
        json["unchanged"] = counts.unchanged;
        json["problems"] = json_string_array(counts.problems);
        std::cout << json.dump();
    } else {
        std::cout << fmt::format("{}: {} added, {} updated, {} dropped, {} unchanged\n", terminal_text(path.string()), counts.added,
                                 counts.updated, counts.dropped, counts.unchanged);
    }
    return k_exit_ok;
}

int print_rows(const ResultsCommandOptions& options, const std::vector<store::RunRow>& rows) {
    if (options.json) {
        Json runs = Json::array();
        for (const store::RunRow& row : rows) {
            runs.push_back(store::run_row_to_json(row, options.metric));
        }
        Json json = Json::object();
        json["runs"] = std::move(runs);
        std::cout << json.dump();
        return k_exit_ok;
    }
    std::vector<std::string> header = {"run_id", "card", "framework", "cluster", "state", "created"};
    if (!options.metric.empty()) {
        header.push_back(options.metric);
    }
    if (options.csv) {
        std::cout << join(header, ",") << "\n";
        for (const store::RunRow& row : rows) {
            std::vector<std::string> cells = {row.run_id, row.card, row.framework, row.cluster, row.state, row.created};
            if (!options.metric.empty()) {
                cells.push_back(metric_text(row));
            }
            for (std::string& cell : cells) {
                cell = csv_field(cell);
            }
            std::cout << join(cells, ",") << "\n";
        }
        return k_exit_ok;
    }
    for (const store::RunRow& row : rows) {
        std::string line = fmt::format("{:<56} {:<10} {:<10} {:<20}", row.run_id, row.state, row.cluster, row.created);
        if (!options.metric.empty()) {
            line += " " + (row.metric_value ? metric_text(row) + " " + row.metric_unit : std::string("-"));
        }
        std::cout << terminal_text(line) << "\n";
    }
    std::cout << rows.size() << (rows.size() == 1 ? " run\n" : " runs\n");
    return k_exit_ok;
}

int run_results(const ResultsCommandOptions& options) {
    if (options.json && options.csv) {
        throw input_error("results: --json and --csv are exclusive");
    }
    const fs::path path = store::default_store_path(options.store);
    if (options.verb == "index") {
        return run_index(options, path);
    }
    if (options.rebuild) {
        throw input_error("results: --rebuild goes with `results index`");
    }
    store::ListQuery query;
    query.since = options.since;
    query.metric = options.metric;
    for (const std::string& where : options.where) {
        query.where.push_back(store::parse_where(where));
    }
    if (options.verb == "list") {
        if (!options.args.empty()) {
            throw input_error("results list: unexpected argument " + options.args.front());
        }
        return print_rows(options, store::ResultsStore(path).list(query));
    }
    if (options.args.size() != 1) {
        throw input_error("results " + options.verb + ": needs exactly one " + (options.verb == "show" ? "RUN_ID" : "CARD_NAME"));
    }
    if (options.verb == "history") {
        query.card = options.args.front();
        return print_rows(options, store::ResultsStore(path).list(query));
    }
    const auto shown = store::ResultsStore(path).show(options.args.front());
    if (!shown) {
        throw input_error("results show: " + options.args.front() + ": no such run in " + path.string() +
                          " (run `ccl-harness results index` first)");
    }
    std::cout << (options.json ? shown->dump() : terminal_text(shown->dump()));
    return k_exit_ok;
}

} // namespace

void add_results(CLI::App& sub, Action& action) {
    auto options = std::make_shared<ResultsCommandOptions>();
    sub.add_option("action", options->verb, "index | list | show | history")
        ->required()
        ->check(CLI::IsMember({"index", "list", "show", "history"}));
    sub.add_option("args", options->args, "index: RESULTS_DIR... (default ./results); show: RUN_ID; history: CARD_NAME");
    sub.add_option("--store", options->store,
                   "the database (default: $CCL_HARNESS_STORE, else ${XDG_DATA_HOME:-~/.local/share}/ccl-harness/results.db)");
    sub.add_flag("--rebuild", options->rebuild, "index: delete the database and build it again from the directories");
    sub.add_option("--where", options->where,
                   "list/history: keep runs where FIELD=VALUE (repeatable, all must hold); FIELD is a card path "
                   "(workload.model.model_family) or state, cluster, framework, card, executor");
    sub.add_option("--since", options->since, "list/history: runs created on or after DATE (YYYY-MM-DD or YYYY-MM-DDThh:mm:ssZ)");
    sub.add_option("--metric", options->metric, "list/history: add this metric's column: " + join(metrics::metric_names(), ", "));
    sub.add_flag("--json", options->json, "print one JSON object on stdout");
    sub.add_flag("--csv", options->csv, "list/history: print CSV with a header row");
    sub.footer("The store is an INDEX of results directories; the directories stay the source of truth, and\n"
               "`results index --rebuild` recreates the database from them whenever it is lost or damaged.\n"
               "index adds new runs, updates changed ones (run.json, metrics.json, card.yaml or the bundle\n"
               "changed) and drops rows whose run directory is gone; many indexers may write at once.\n"
               "Examples:\n"
               "  ccl-harness results index results/\n"
               "  ccl-harness results list --where workload.model.model_family=llama --metric avg_step_time --csv\n"
               "  ccl-harness results list --where state=completed --since 2026-11-01 --json\n"
               "  ccl-harness results show tiny-ddp-20261128T061500Z-ab12cd\n"
               "  ccl-harness results history tiny-ddp --metric avg_step_time\n"
               "--json keys: index: {store, added, updated, dropped, unchanged, problems}; list and history:\n"
               "{runs: [{run_id, results_root, run_dir, card, framework | null, cluster, executor, state,\n"
               "failure_class | null, failure_reason | null, created | null, started | null, ended | null,\n"
               "bundle | null, bundle_sha256 | null, <METRIC> (with --metric)}]}, oldest first; show: a run's keys\n"
               "plus card_fields {path: value}, overrides {path: value}, pins {repo: commit; ccl-harness: its\n"
               "commit; image:NAME: digest; image_id: the id that ran}, metrics {name: {value, unit, implausible}}.\n"
               "Exit status: 0, 2 for a bad query (field syntax, date, metric name) or a database that is not a\n"
               "results store (damaged, another program's, a newer schema), 1 otherwise.\n");
    sub.callback([options, &action] { action = [options] { return run_results(*options); }; });
}

} // namespace harness::cli
