#include "cli/run_query_options.hpp"

namespace harness::cli {

void add_run_query_options(CLI::App& sub, RunQuery& query, bool with_state) {
    if (with_state) {
        sub.add_option("--state", query.states,
                       "only runs in these states (repeatable or comma-separated): rendered, submitted, running, completed, "
                       "failed, cancelled, timeout, \"harness died\", unreadable")
            ->delimiter(',');
    }
    sub.add_option("--card", query.card, "only runs whose card name or run id matches this shell glob, e.g. 'qwen3-*'");
    sub.add_option("--target", query.target, "only runs on this cluster profile, e.g. perlmutter or slurm-local");
    sub.add_option("--since", query.since,
                   "only runs started at or after this UTC date or time (2026-11-27, 2026-11-27T10:00:00Z) or this long "
                   "ago (90m, 6h, 2d)");
    sub.add_option("--until", query.until, "only runs started at or before this time (the forms of --since)");
    sub.add_option("--where", query.where,
                   "FIELD=VALUE: only runs whose card field (a dotted path, e.g. "
                   "Model-executor.model_plan_parallelization.tp=4) or run column (state, cluster, framework, card, "
                   "executor) has this value, as `results list --where` reads it (repeatable; all must hold)");
}

} // namespace harness::cli
