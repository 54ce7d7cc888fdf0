#pragma once
// `pack`: a completed run directory -> <name>.tar.zst, the bundle docs/bundle.md lays out.
// Every file is read once, hashed and compressed in the same pass; manifest.json is written last
// from those hashes.
#include "util/fs.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace harness {

struct PackOptions {
    fs::path out_file;  ///< empty: <name>.tar.zst beside the run directory
    bool force = false; ///< replace an existing out_file
    int threads = 0;    ///< zstd workers; 0: the hardware threads (capped, see zstd_workers())
    /// Called before each entry is written, with its path inside the bundle (progress display).
    std::function<void(const std::string& entry)> on_entry;
};

struct PackResult {
    std::string name;                     ///< the run id: the bundle's top directory
    fs::path bundle;                      ///< the archive written
    std::uint64_t size = 0;               ///< of the archive, in bytes
    std::string sha256;                   ///< of the archive
    std::size_t files = 0;                ///< regular files in the bundle, manifest.json included
    std::string manifest_sha256;          ///< of manifest.json (what provenance.reproduces names)
    std::vector<std::string> trace_kinds; ///< metric_source.traces as written into <name>.yaml
};

/// Packs `run_dir`. Refused with an input error (exit 2), before anything is written: a
/// directory without a readable run.json or with no run_id, a run that is not completed, no
/// provenance.json, no trace under traces/, no card.yaml or rendered/, an existing output
/// (unless `force`), an output inside the run directory, a link or special file anywhere
/// packed, a name that is not UTF-8, and two sources for one bundle path. A file changing while
/// it is read, an I/O error or an interrupt throws HarnessError; in every case nothing is left
/// at the output path (an existing one is kept) and no temporary file remains.
PackResult pack_run(const fs::path& run_dir, const PackOptions& options = {});

} // namespace harness
