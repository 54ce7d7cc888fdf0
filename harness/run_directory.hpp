#pragma once
// results/<run-id>/: the effective card, plan.json, rendered/, logs/, traces/, run.json.
// A run directory is created once and never overwritten.
#include "render.hpp"
#include "util/fs.hpp"

#include <string>

namespace harness {

struct RunDirectory {
    std::string id;
    fs::path path;

    fs::path rendered() const { return path / "rendered"; }
    fs::path logs() const { return path / "logs"; }
    fs::path traces() const { return path / "traces"; }
};

/// `<card>-<UTC yyyymmddThhmmssZ>-<6 hex>`; the hash covers the rendered files and the instant.
std::string make_run_id(const RenderedRun& run);

/// Creates `results/<id>/` and writes the rendered run into it. Fails rather than reuse a directory.
RunDirectory create_run_directory(const fs::path& results, const RenderedRun& run);

} // namespace harness
