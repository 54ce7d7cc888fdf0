#pragma once
// The bundle's <name>.yaml: the run's effective card with metric_source.traces and trace_url
// telling the truth about the bundle, edited in the text so that a contributor's comments and
// layout survive.
#include <string>
#include <vector>

namespace harness {

/// The metric_source.traces kind for a trace file name, as classify_trace_name (trace_names.hpp)
/// sees it: "json" (kineto_trace_<r>.json[.gz]), "nsys" (*.nsys-rep, nsys_<r>.sqlite),
/// "json_tpu" (<host>.trace.json[.gz], *.xplane.pb; not torch's *.pt.trace.json), or "" for a
/// file the CCL-Bench tools do not read as a trace.
std::string trace_kind(const std::string& file_name);

/// `card_text` with top-level `trace_url` set to `trace_url` and `metric_source.traces` to
/// `trace_kinds` (a block or flow sequence as it was), adding either where missing. Only those
/// values change; the result is checked by parsing it again and, where the text has a shape
/// the line edit does not handle (flow mappings, anchors...), re-emitted from the parsed tree
/// (comments are then lost), as it is when a secret-named entry of launch.env or the
/// communication library's env has its value replaced by k_redacted (secret_scrub.hpp).
/// Deterministic. Invalid YAML or a card that is not a mapping is an
/// input error naming `display_name`.
std::string set_bundle_fields(const std::string& card_text, const std::vector<std::string>& trace_kinds, const std::string& trace_url,
                              const std::string& display_name);

/// `card_text` with `metric_source.ranks_present` set to `ranks` (a flow sequence, "[0, 2]"):
/// the ranks a partial archive holds traces for (`ingest --ranks`, rank_set.hpp), added where
/// missing; edited in the text as set_bundle_fields is, with its fallback. Errors as there.
std::string set_ranks_present(const std::string& card_text, const std::vector<long long>& ranks, const std::string& display_name);

} // namespace harness
