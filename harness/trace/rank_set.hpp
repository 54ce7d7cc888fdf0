#pragma once
// Which ranks of a job an archive holds traces for, when it does not hold every rank's: the list
// `ingest --ranks` reads ("0", "0,2", "0-3") and the one form it is written back in, in the
// bundle's card (metric_source.ranks_present), provenance.json and every message that names it.
#include <string>
#include <string_view>
#include <vector>

namespace harness {

/// The card field (under metric_source) naming the traced ranks of a partial bundle; the job's
/// rank count stays workload.hardware.xpu_spec.total_count (docs/bundle.md).
inline constexpr const char* k_ranks_present_key = "ranks_present";

/// Parses LIST, comma-separated ranks and inclusive ranges "a-b" (blanks around items allowed),
/// each in 0..world-1: sorted, each once. An input error (exit 2) naming `option`, LIST and the
/// item at fault: empty, not a rank number, a range ending before it starts, a rank at or past
/// `world`.
std::vector<long long> parse_rank_list(std::string_view text, long long world, std::string_view option);

/// "0", "0,2", "0-3,6": runs of three or more as ranges, the form parse_rank_list reads. Expects
/// sorted ranks, each once.
std::string format_rank_list(const std::vector<long long>& ranks);

/// "ranks 0 of 4", "ranks 0-2,5 of 8": how a partial set is named in reports.
std::string describe_partial_ranks(const std::vector<long long>& ranks, long long total);

} // namespace harness
