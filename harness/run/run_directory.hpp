#pragma once
// results/<run-id>/: the effective card, plan.json, rendered/, logs/, traces/, run.json.
// A run directory is created once and never overwritten.
#include "render/render.hpp"
#include "util/fs.hpp"

#include <string>

namespace harness {

/// The names inside a run directory (and a bundle made from one), each spelled once.
namespace run_files {
inline constexpr const char* k_record = "run.json"; ///< RunRecord
inline constexpr const char* k_plan = "plan.json";  ///< plan_to_json
inline constexpr const char* k_card = "card.yaml";  ///< the effective card
inline constexpr const char* k_provenance = "provenance.json";
inline constexpr const char* k_metrics = "metrics.json";
inline constexpr const char* k_rendered = "rendered"; ///< directory: what was rendered
inline constexpr const char* k_logs = "logs";         ///< directory
inline constexpr const char* k_traces = "traces";     ///< directory
} // namespace run_files

struct RunDirectory {
    std::string id;
    fs::path path;

    fs::path rendered() const { return path / run_files::k_rendered; }
    fs::path logs() const { return path / run_files::k_logs; }
    fs::path traces() const { return path / run_files::k_traces; }
    fs::path record() const { return path / run_files::k_record; }
};

/// `<card>-<UTC yyyymmddThhmmssZ>-<6 hex>`; the hash covers the rendered files and the instant.
std::string make_run_id(const RenderedRun& run);

/// Creates `results/<id>/` and writes the rendered run into it. Fails rather than reuse a directory.
RunDirectory create_run_directory(const fs::path& results, const RenderedRun& run);

} // namespace harness
