#pragma once
// Plan -> RenderedRun: the launch script, the framework's config, the container spec, the env
// file and plan.json, all from logic-less templates, byte-for-byte deterministic.
#include "card/card.hpp"
#include "card/cluster.hpp"
#include "plan/plan.hpp"

#include <string>
#include <vector>

namespace harness {

struct RenderedFile {
    std::string name; ///< relative to the rendered directory
    std::string content;
    bool executable = false;
};

struct RenderedRun {
    Plan plan;
    std::vector<RenderedFile> files; ///< sorted by name
    std::vector<fs::path> inputs;    ///< templates and profiles used, for provenance
    std::string launch_script;       ///< the file the executor starts

    const RenderedFile* find(const std::string& name) const;
};

/// Framework/target pairs that have templates, as "framework/target", sorted.
std::vector<std::string> available_templates(const fs::path& home);

/// Renders the plan. A framework/target without templates is an input error that names what exists.
RenderedRun render_run(const WorkloadCard& card, const ClusterProfile& cluster, const Plan& plan, const fs::path& home);

/// Writes the files into `out_dir`, replacing a previous render there as a whole. Refuses a
/// directory that holds anything but an earlier render. Nothing is changed when it fails.
void write_rendered(const RenderedRun& run, const fs::path& out_dir);

/// The escaper a rendered file gets, chosen by its name: shell, toml, json or token.
std::string escaper_for(const std::string& file_name);

} // namespace harness
