#include "cli/card_options.hpp"
#include "cli/commands.hpp"
#include "cli/report_output.hpp"
#include "cli/store_hook.hpp"
#include "util/error.hpp"
#include "util/home.hpp"
#include "workflows/eval_trial.hpp"

#include <fmt/format.h>
#include <iostream>
#include <memory>

namespace harness::cli {

namespace {

struct EvalCommandOptions {
    EvalOptions eval;
    std::string config; ///< JSON text, or @FILE / a file path holding it
    std::string objective = "min:avg_step_time";
    fs::path keys_file;
    bool config_from_env = false;
    bool no_reuse = false;
    CLI::Option* results = nullptr;
    ReportFlags report;
};

Json read_config(const std::string& text) {
    std::string json = text;
    std::error_code ec;
    if (!text.empty() && text.front() != '{' && fs::is_regular_file(text, ec)) {
        json = read_file(text);
    }
    try {
        return Json::parse(json);
    } catch (const std::exception& e) {
        throw input_error(fmt::format("--config {}: not a JSON object: {}", text, e.what()));
    }
}

int run_eval(EvalCommandOptions options) {
    EvalOptions& eval = options.eval;
    eval.home = harness_home();
    apply_results_default(options.results, eval.results);
    if (!options.keys_file.empty()) {
        const KeyMapFile map = load_key_map(options.keys_file);
        eval.keys = map.keys;
        if (eval.card.empty()) {
            eval.card = map.card;
        }
    }
    if (eval.card.empty()) {
        throw input_error("eval: no card: give CARD, or --keys FILE whose `card:` names it");
    }
    if (!options.config.empty() && options.config_from_env) {
        throw input_error("eval: --config and --config-from-env together: give one");
    }
    if (options.config_from_env) {
        if (eval.keys.empty()) {
            throw input_error("eval: --config-from-env reads the variables of --keys FILE's keys: give --keys");
        }
        eval.config = config_from_environment(eval.keys);
    } else if (!options.config.empty()) {
        eval.config = read_config(options.config);
    }
    eval.objective = parse_objective(options.objective);
    eval.reuse = !options.no_reuse;
    const bool quiet = quiet_wanted();
    const EvalOutcome outcome = eval_trial(eval, progress_stream(options.report.json, quiet));
    if (!outcome.run_dir.empty()) {
        record_runs({outcome.run_dir});
    }
    if (options.report.json) {
        print_json(eval_outcome_to_json(outcome));
        return outcome.exit_code;
    }
    std::cout << fmt::format("{}{}{}\n", outcome.status, outcome.cached ? " (cached: an earlier run rendered alike)" : "",
                             outcome.score ? fmt::format(", score {}", *outcome.score) : "");
    if (!outcome.error_msg.empty()) {
        std::cout << "  " << terminal_text(outcome.error_msg, true) << "\n";
    }
    if (!outcome.run_dir.empty()) {
        std::cout << "  run directory: " << terminal_text(outcome.run_dir.string()) << "\n";
    }
    return outcome.exit_code;
}

} // namespace

void add_eval(CLI::App& sub, Action& action) {
    auto options = std::make_shared<EvalCommandOptions>();
    sub.add_option("card", options->eval.card, "workload card (or `card:` of --keys FILE)");
    sub.add_option("--config", options->config,
                   "the trial's values: a JSON object {KEY: value} (or a file holding one); KEY is a card path "
                   "(workload.data.batch_size) or a key of --keys FILE");
    sub.add_option("--keys", options->keys_file,
                   "YAML mapping config keys to card paths: keys: {tp: Model-executor.model_plan_parallelization.tp}");
    sub.add_flag("--config-from-env", options->config_from_env,
                 "take each --keys key's value from the environment variable KEY in upper case (as CCL-Search's execute() sets them)");
    sub.add_option("--objective", options->objective, "min:METRIC[*WEIGHT],... or max:...: the score (default min:avg_step_time)");
    add_cluster_option(sub, options->eval.cluster, "launch.cluster, else from xpu_spec.model");
    options->results = add_results_option(sub, options->eval.results, "where the run directory goes");
    sub.add_option("--trace-dir", options->eval.trace_dir, "copy the run's canonical traces here (CCL-Search's TRACE_DIR)");
    sub.add_flag("--no-reuse", options->no_reuse, "run even when an earlier run rendered alike completed (default: reuse it)");
    add_report_flags(sub, options->report);
    sub.footer("One trial of a tuning loop: the card with the config's values (--set), run to a verified bundle, or\n"
               "an earlier completed run rendered byte for byte alike reused (see `run --reuse`), then scored.\n"
               "Examples:\n"
               "  ccl-harness eval workloads/tiny-ddp/tiny-ddp.yaml --config '{\"workload.data.batch_size\": 4}' --json\n"
               "  TP=2 ccl-harness eval --keys keys.yaml --config-from-env --trace-dir \"$TRACE_DIR\" --json\n"
               "--json keys: status (success | error | timeout), failure_class | null, error_msg | null, metrics {name: value},\n"
               "score | null, cached, run_dir | null, bundle | null, overrides [PATH=VALUE].\n"
               "Exit status: 0 success, 1 the run failed or an objective metric has no value, 2 bad input.\n");
    sub.callback([options, &action] { action = [options] { return run_eval(*options); }; });
}

} // namespace harness::cli
