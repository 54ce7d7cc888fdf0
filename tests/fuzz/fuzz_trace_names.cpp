// Where ingest, collection and verify place a trace (issue 31: ingest's trace placement), from
// bytes: the first line is a file name as it lies in someone's TRACE_DIR, the rest the JSON text
// of a distributedInfo.rank. The name rules must hold together: a name called canonical is its
// own canonical name, a rank read from a name gives back a name read as that rank, a name placed
// is one a bundle may hold, and a rank is a rank (0..1e9) or a reason that prints on one line.
#include "fuzz_support.hpp"
#include "trace/trace_names.hpp"
#include "util/safe_name.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace {

constexpr const char* k_target = "fuzz_trace_names";

bool has_control(std::string_view text) {
    for (const char c : text) {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
            return true;
        }
    }
    return false;
}

void check_name(std::string_view name) {
    using namespace harness;
    const TraceName read = classify_trace_name(name);
    (void)misplaced_trace_problem(name);
    if (read.canonical && read.canonical_name != name) {
        fuzz::finding(k_target, "a canonical name whose canonical name is another: " + std::string(name));
    }
    // classify_trace_name takes a bare name as it lies in a directory (ingest refuses the others
    // first, files_of): from one, the name placed must be one too.
    if (file_name_problem(name).empty() && !read.canonical_name.empty() && !file_name_problem(read.canonical_name).empty()) {
        fuzz::finding(k_target, "a name placed as one a bundle cannot hold: " + read.canonical_name);
    }
    if (read.rank && (read.kind == TraceKind::kineto || read.kind == TraceKind::nsys_rep || read.kind == TraceKind::nsys_sqlite)) {
        const std::string placed = canonical_trace_name(read.kind, *read.rank, read.compressed);
        const TraceName again = classify_trace_name(placed);
        if (placed.empty() || again.kind != read.kind || again.rank != read.rank || !again.canonical) {
            fuzz::finding(k_target, "rank " + std::to_string(*read.rank) + " of " + std::string(name) + " placed as " + placed +
                                        ", which reads back otherwise");
        }
    }
    const long long rank = kineto_trace_rank(name);
    if (rank >= 0 && (read.kind != TraceKind::kineto || read.rank != rank)) {
        fuzz::finding(k_target, "kineto_trace_rank and classify_trace_name disagree on " + std::string(name));
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view bytes = harness::fuzz::as_text(data, size);
    const std::size_t newline = bytes.find('\n');
    const std::string_view name = bytes.substr(0, newline);
    const std::string_view value = newline == std::string_view::npos ? std::string_view() : bytes.substr(newline + 1);
    harness::fuzz::refuse_only_with_harness_errors(k_target, [&] {
        check_name(name);
        const harness::DistributedRank rank = harness::distributed_rank_of(value);
        if (rank.problem.empty() ? rank.rank < 0 || rank.rank > harness::k_max_distributed_rank : rank.rank != -1) {
            harness::fuzz::finding(k_target, "distributed_rank_of gave rank " + std::to_string(rank.rank) + " with problem [" +
                                                 rank.problem + "]");
        }
        if (has_control(rank.problem)) {
            harness::fuzz::finding(k_target, "distributed_rank_of's reason holds a control character: " + rank.problem);
        }
    });
    return 0;
}
