#pragma once
// results/<run-id>/: the effective card, plan.json, rendered/, logs/, traces/, run.json.
// A run directory is created once and never overwritten.
#include "render/render.hpp"
#include "util/fs.hpp"

#include <string>
#include <vector>

namespace harness {

/// The names inside a run directory (and a bundle made from one), each spelled once.
namespace run_files {
inline constexpr const char* k_record = "run.json"; ///< RunRecord
inline constexpr const char* k_plan = "plan.json";  ///< plan_to_json
inline constexpr const char* k_card = "card.yaml";  ///< the effective card
inline constexpr const char* k_provenance = "provenance.json";
inline constexpr const char* k_metrics = "metrics.json";
inline constexpr const char* k_rendered = "rendered";     ///< directory: what was rendered
inline constexpr const char* k_logs = "logs";             ///< directory
inline constexpr const char* k_traces = "traces";         ///< directory
inline constexpr const char* k_accounting = "accounting"; ///< directory: a Slurm job's accounting
} // namespace run_files

struct RunDirectory {
    std::string id;
    fs::path path;

    fs::path rendered() const { return path / run_files::k_rendered; }
    fs::path logs() const { return path / run_files::k_logs; }
    fs::path traces() const { return path / run_files::k_traces; }
    fs::path record() const { return path / run_files::k_record; }
};

/// Refuses (input error, exit 2) a run directory that holds a symbolic link where the harness
/// reads or writes: any entry at its top (logs/, traces/, accounting/, run.json...) and the
/// folders of rendered/ that a finished job leaves (logs/, traces/, probe/). A run directory
/// handed to `attach` is input: its folders must be its own, or the harness would move logs,
/// copy traces and write accounting wherever they point. Says "traces/ is a symbolic link; a
/// run directory's folders must be its own".
void refuse_linked_entries(const fs::path& run_dir);

/// The longest label run_id_label makes, and the longest piece one override contributes.
constexpr std::size_t k_max_run_label_bytes = 48;
constexpr std::size_t k_max_run_label_piece_bytes = 20;

/// A label naming the values `overrides` (`PATH=VALUE`, a sweep point's) set, in their order:
/// the path's last component, shortened where CCL-Bench has a usual short form (batch_size bs,
/// seq_len seq, micro_batch_size mbs...), then the value, joined directly when the value starts
/// with a digit (`bs16`), else with '_' (`script_train.py`); pieces joined by '-'. Only
/// [A-Za-z0-9._] survive (anything else becomes one '_'), each piece is cut to
/// k_max_run_label_piece_bytes, and pieces past k_max_run_label_bytes are left out. Deterministic;
/// "" for no overrides. Uniqueness is make_run_id's hash's job, not the label's.
std::string run_id_label(const std::vector<std::string>& overrides);

/// `<card>[-<label>]-<UTC yyyymmddThhmmssZ>-<6 hex>`; the hash covers the rendered files and the
/// instant. A label that would make the id no safe file name (util/safe_name) is left out.
std::string make_run_id(const RenderedRun& run, const std::string& label = "");

/// Creates `results/<id>/` (make_run_id with `label`) and writes the rendered run into it. Fails
/// rather than reuse a directory.
RunDirectory create_run_directory(const fs::path& results, const RenderedRun& run, const std::string& label = "");

} // namespace harness
