#include "workflows/run_query.hpp"

#include "run/run_record.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <cstdio>
#include <fmt/format.h>
#include <fnmatch.h>
#include <set>

namespace harness {

namespace {

/// Every state `status` can show: run.json's, and the two it substitutes.
std::vector<std::string> state_names() {
    std::vector<std::string> names;
    for (const RunState state : {RunState::rendered, RunState::submitted, RunState::running, RunState::completed, RunState::failed,
                                 RunState::cancelled, RunState::timeout}) {
        names.push_back(to_string(state));
    }
    names.emplace_back(k_harness_died);
    names.emplace_back("unreadable");
    return names;
}

/// 2026-11-27 (its first second, or with `end_of_day` its last: `--until 2026-11-27` keeps that
/// day's runs), 2026-11-27T10:00:00Z, or N followed by m, h or d: that long before now.
std::optional<std::time_t> parse_time(const std::string& text, std::time_t now, bool end_of_day) {
    if (const auto exact = parse_utc(text)) {
        return exact;
    }
    int year = 0;
    int month = 0;
    int day = 0;
    int consumed = 0;
    if (std::sscanf(text.c_str(), "%4d-%2d-%2d%n", &year, &month, &day, &consumed) == 3 &&
        static_cast<std::size_t>(consumed) == text.size() && month >= 1 && month <= 12 && day >= 1 && day <= 31) {
        return parse_utc(fmt::format("{:04}-{:02}-{:02}T{}Z", year, month, day, end_of_day ? "23:59:59" : "00:00:00"));
    }
    if (text.size() >= 2 && text.size() <= 8 &&
        std::all_of(text.begin(), text.end() - 1, [](char c) { return c >= '0' && c <= '9'; })) {
        const long long amount = std::stoll(text.substr(0, text.size() - 1));
        const char unit = text.back();
        const long long seconds = unit == 'm' ? 60 : unit == 'h' ? 3600 : unit == 'd' ? 86400 : 0;
        if (seconds != 0) {
            return now - static_cast<std::time_t>(amount * seconds);
        }
    }
    return std::nullopt;
}

std::optional<std::time_t> checked_time(const char* option, const std::string& text, std::time_t now, bool end_of_day) {
    if (text.empty()) {
        return std::nullopt;
    }
    const auto time = parse_time(text, now, end_of_day);
    if (!time) {
        throw input_error(fmt::format("{} {}: not a time: give a UTC date (2026-11-27), a time as run.json writes it "
                                      "(2026-11-27T10:00:00Z), or an age (90m, 6h, 2d)",
                                      option, text));
    }
    return time;
}

bool glob_matches(const std::string& pattern, const std::string& text) { return fnmatch(pattern.c_str(), text.c_str(), 0) == 0; }

/// --where over one run directory, by the store's rules: the run recorded in a store in memory
/// (not the user's, which may not hold it: the directories are the truth) and listed with the
/// clauses. One owner of what `tp=4` means, whether `results list` or `status` asks.
bool where_holds(const std::vector<store::WhereClause>& where, const std::string& run_dir) {
    try {
        store::ResultsStore memory(":memory:");
        if (memory.record({fs::path(run_dir)}).added == 0) {
            return false;
        }
        store::ListQuery query;
        query.where = where;
        return !memory.list(query).empty();
    } catch (const HarnessError&) {
        return false; // records the store cannot read answer no field
    }
}

} // namespace

bool RunQuery::empty() const {
    return states.empty() && card.empty() && target.empty() && since.empty() && until.empty() && where.empty();
}

ParsedRunQuery parse_run_query(const RunQuery& query, std::time_t now) {
    ParsedRunQuery parsed{
        query, checked_time("--since", query.since, now, false), checked_time("--until", query.until, now, true), {}};
    const std::vector<std::string> known = state_names();
    for (const std::string& state : query.states) {
        if (std::find(known.begin(), known.end(), state) == known.end()) {
            throw input_error(fmt::format("--state {}: no run has this state; one of: {}", state, join(known, ", ")));
        }
    }
    for (const std::string& clause : query.where) {
        parsed.where.push_back(store::parse_where(clause));
    }
    if (parsed.since && parsed.until && *parsed.until < *parsed.since) {
        throw input_error(fmt::format("--until {} is before --since {}: no run can match", query.until, query.since));
    }
    return parsed;
}

bool run_matches(const ParsedRunQuery& query, const RunSummary& run) {
    const RunQuery& q = query.query;
    if (!q.states.empty() && std::find(q.states.begin(), q.states.end(), run.state) == q.states.end()) {
        return false;
    }
    if (!q.card.empty() && !glob_matches(q.card, run.card) && !glob_matches(q.card, run.id)) {
        return false;
    }
    if (!q.target.empty() && run.target != q.target) {
        return false;
    }
    if (query.since || query.until) {
        const auto start = parse_utc(run.start);
        if (!start || (query.since && *start < *query.since) || (query.until && *start > *query.until)) {
            return false;
        }
    }
    return query.where.empty() || where_holds(query.where, run.dir);
}

ResultsStatus filter_status(const ResultsStatus& status, const ParsedRunQuery& query) {
    if (query.query.empty()) {
        return status;
    }
    ResultsStatus out;
    std::set<std::string> sweeps;
    for (const RunSummary& run : status.runs) {
        if (run_matches(query, run)) {
            out.runs.push_back(run);
            sweeps.insert(run.sweep);
        }
    }
    const RunQuery& q = query.query;
    const bool card_only = q.states.empty() && q.target.empty() && q.since.empty() && q.until.empty() && q.where.empty();
    for (const SweepSummary& sweep : status.sweeps) {
        // A sweep's card is its file name; a run's is the name derived from it.
        const std::string card = fs::path(sweep.card).stem().string();
        if (sweeps.count(sweep.id) != 0 || (card_only && (glob_matches(q.card, card) || glob_matches(q.card, sweep.id)))) {
            out.sweeps.push_back(sweep);
        }
    }
    return out;
}

std::string describe_query(const RunQuery& query, std::size_t matched, std::size_t total) {
    if (query.empty()) {
        return {};
    }
    std::vector<std::string> parts;
    for (const std::string& state : query.states) {
        parts.push_back("--state " + state);
    }
    const auto add = [&parts](const char* option, const std::string& value) {
        if (!value.empty()) {
            parts.push_back(fmt::format("{} {}", option, value));
        }
    };
    add("--card", query.card);
    add("--target", query.target);
    add("--since", query.since);
    add("--until", query.until);
    for (const std::string& clause : query.where) {
        parts.push_back("--where " + clause);
    }
    return fmt::format("{} of {} run{} match {}", matched, total, total == 1 ? "" : "s", join(parts, " "));
}

} // namespace harness
