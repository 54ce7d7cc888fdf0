#pragma once
// The comparison as one self-contained HTML page: inline CSS and SVG charts, no script and no
// network, so it opens anywhere (a mail attachment, an air-gapped cluster) and nothing on it can
// run. Every string that comes from a card or bundle is escaped.
#include "workflows/compare.hpp"

#include <string>
#include <string_view>

namespace harness {

/// `text` safe inside HTML text and quoted attribute values (& < > " ' escaped).
std::string html_escape(std::string_view text);

/// The page: ranking table, a stacked bar per run (compute only, overlapped communication,
/// exposed communication: their sum is the step time), MFU bars (n/a drawn as a labelled gap
/// with its reason), overlap (%) against step time, and the card differences. Ids for tools and
/// tests: #ranking, #chart-breakdown, #chart-mfu, #chart-scatter, #differences; each run is one
/// `g.bar` in each bar chart (`g.bar.na` when the value is missing) and one `g.point` in the scatter.
std::string comparison_html(const Comparison& comparison);

} // namespace harness
