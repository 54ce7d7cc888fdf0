#include "bundle/trace_check.hpp"

#include "metrics/step_windows.hpp"
#include "metrics/trace_events.hpp"
#include "util/error.hpp"
#include "util/limits.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <fstream>

namespace harness {

namespace {

/// verify's wording for what the metrics' reader refused (the e2e suites and the submitters read
/// these): where the JSON ends, how deep it nests, which top-level type it has.
std::string reader_problem(const metrics::TraceReadError& error) {
    const std::string& what = error.problem();
    if (error.kind() == metrics::TraceReadError::Kind::no_events || !error.offset()) {
        return "a JSON object without a \"traceEvents\" array";
    }
    const std::uint64_t at = *error.offset();
    if (error.kind() == metrics::TraceReadError::Kind::truncated) {
        if (starts_with(what, "the start of the trace")) {
            return at == 0 ? "empty file" : "no JSON in the file (only white space)";
        }
        return fmt::format("truncated at byte {}: the JSON ends inside {}", at, what);
    }
    if (what.find("nested deeper than") != std::string::npos) {
        return fmt::format("nested deeper than {} arrays and objects at byte {} ({})", input_limit(InputLimit::nesting_depth), at,
                           input_limit_hint(InputLimit::nesting_depth));
    }
    constexpr std::string_view found = ", found ";
    if (starts_with(what, "not a trace: ") && what.find(found) != std::string::npos) {
        return fmt::format("the top level is {}, not a trace: expected {{\"traceEvents\": [...]}} or an array of events",
                           what.substr(what.rfind(found) + found.size()));
    }
    if (starts_with(what, "expected ") || starts_with(what, "invalid ") || starts_with(what, "unexpected ")) {
        return fmt::format("not valid JSON at byte {}: {}", at, what);
    }
    return fmt::format("{} (at byte {})", what, at);
}

std::string no_steps_problem(const std::string& form) {
    return form == "xla" ? "no step markers (\"$core.py:331 step\" or \"StepMarker\" events)"
                         : "no step markers (\"ProfilerStep#N\", vLLM \"execute_context_*\", SGLang \"run_batch\" or "
                           "bench_one_batch decode/extend events)";
}

} // namespace

TraceCheck check_trace(const fs::path& file) {
    TraceCheck check;
    std::error_code ec;
    const std::uint64_t size = fs::file_size(file, ec);
    if (ec) {
        check.problem = fmt::format("cannot read: {}", ec.message());
        return check;
    }
    unsigned char magic[2] = {0, 0};
    if (std::ifstream in(file, std::ios::binary); !in || (size >= 2 && !in.read(reinterpret_cast<char*>(magic), 2))) {
        check.problem = "cannot read";
        return check;
    }
    check.compressed = magic[0] == 0x1f && magic[1] == 0x8b;
    const TraceName name = classify_trace_name(file.filename().string());
    if (check.compressed != ends_with(file.filename().string(), ".gz")) {
        check.problem = check.compressed ? "gzip-compressed, but the name does not end in .gz" : "named .gz, but not gzip-compressed";
        return check;
    }
    metrics::ReadOptions options;
    options.collective_args = false; // only collective_volume reads them
    metrics::RankTrace trace;
    try {
        trace = metrics::read_trace(file, options);
    } catch (const metrics::TraceReadError& error) {
        check.problem = reader_problem(error);
        if (check.compressed && check.problem.find("byte") != std::string::npos) {
            check.problem += " (of the uncompressed stream)";
        }
        return check;
    } catch (const HarnessError& error) {
        if (error.code() == k_exit_interrupted) {
            throw;
        }
        // Opening or inflating failed: the reader's sentence without the file name verify prints.
        std::string_view message = error.what();
        if (const std::string prefix = file.string() + ": "; starts_with(message, prefix)) {
            message.remove_prefix(prefix.size());
        }
        check.problem = std::string(message);
        return check;
    }
    // A rank's trace named for another rank would be measured, ranked and compared as the wrong
    // rank, and two files could claim one rank: the trace's own word must match its name.
    if (name.kind == TraceKind::kineto && name.rank && trace.distributed_rank && *trace.distributed_rank != *name.rank) {
        check.problem = fmt::format("named rank {}, but its distributedInfo.rank is {}: it is another rank's trace", *name.rank,
                                    *trace.distributed_rank);
        return check;
    }
    check.events = static_cast<std::size_t>(trace.events);
    check.form = trace.format == metrics::TraceFormat::legacy_autograd ? "legacy-array"
                 : name.kind == TraceKind::xla                         ? "xla"
                                                                       : "kineto";
    const metrics::StepSelection steps = metrics::standard_steps(trace);
    if (steps.empty()) {
        check.problem = no_steps_problem(check.form);
        return check;
    }
    check.steps = steps.steps.size();
    check.step_marker = steps.source;
    return check;
}

} // namespace harness
