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

/// The page: runs labelled by their differing card values (ids on hover), ranked by throughput
/// per device (#throughput, one `tr.run` each) and by step time (#ranking, with #ranking-note when
/// the batch sizes differ), the n/a metrics collapsed into one `li.missing-note` per metric and
/// reason (#missing), the step spread (#chart-spread, one `g.spread` per run with per-step times),
/// the per-step timeline (#chart-timeline, one `g.line` per run), a stacked bar per run
/// (#chart-breakdown: compute only, overlapped and exposed communication, summing to the step),
/// communication by collective (#comm-collective), each rank's step (#per-rank, the slowest
/// `td.slowest`), MFU bars (#chart-mfu, left out when no run has one), overlap against step time
/// (#chart-scatter, one `g.point` per run) and the card differences (#differences). Charts draw
/// only runs with a value (`g.bar`); the notes say which are missing and why.
std::string comparison_html(const Comparison& comparison);

} // namespace harness
