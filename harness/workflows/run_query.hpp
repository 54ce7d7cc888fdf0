#pragma once
// Which runs of a results directory `status` lists and `compare` reads: by state, card name,
// target, start time and card fields. One query, so that `compare results/ --card X --since 1d`
// compares exactly the runs `status results/ --card X --since 1d` lists.
#include "store/results_store.hpp"
#include "workflows/run_status.hpp"

#include <ctime>
#include <optional>
#include <string>
#include <vector>

namespace harness {

struct RunQuery {
    std::vector<std::string> states; ///< run.json states, or "harness died"/"unreadable"; any when empty
    std::string card;                ///< a shell glob (fnmatch) over the card name (run.json "card") or the run id
    std::string target;              ///< the cluster profile's name, exactly
    std::string since;               ///< as given: 2026-11-27, 2026-11-27T10:00:00Z, or 90m / 6h / 2d before now
    std::string until;               ///< as `since`
    /// FIELD=VALUE, all must hold: as `results list --where` (a run column or a dotted path into
    /// the effective card), decided by the results store's own rows (store/results_store.hpp).
    std::vector<std::string> where;

    bool empty() const;
};

/// A query's times as seconds since the epoch; `now` anchors the relative forms.
struct ParsedRunQuery {
    RunQuery query;
    std::optional<std::time_t> since;
    std::optional<std::time_t> until;
    std::vector<store::WhereClause> where;
};

/// Checks every value (a state name that no run can have, a time in none of the three forms)
/// and throws an input error naming the option and the value.
ParsedRunQuery parse_run_query(const RunQuery& query, std::time_t now);

/// Whether a run `status` summarized matches: every given filter holds. A run whose start time
/// cannot be read matches no time filter; one whose records the store cannot read matches no
/// --where.
bool run_matches(const ParsedRunQuery& query, const RunSummary& run);

/// `status` narrowed to the matching runs; a sweep stays when one of its runs matches (or, with
/// only a card filter, when its card does).
ResultsStatus filter_status(const ResultsStatus& status, const ParsedRunQuery& query);

/// One line saying what a query kept, "3 of 7 runs match --state completed --since 1d"; empty
/// for an empty query.
std::string describe_query(const RunQuery& query, std::size_t matched, std::size_t total);

} // namespace harness
