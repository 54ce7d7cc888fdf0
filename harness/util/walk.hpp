#pragma once
// The one walk over a directory tree. Links are never entered (a link could lead out of a run
// directory or a bundle); what a link to a file counts as is the caller's policy, said once here.
#include "util/fs.hpp"

#include <cstdint>
#include <string>
#include <system_error>
#include <vector>

namespace harness {

enum class FileLinks {
    as_links, ///< a link is an entry of type symlink, whatever it points at (bundles, packing, scrubbing)
    followed, ///< a link to a regular file counts as that file (templates, traces a tracer linked)
};

struct WalkOptions {
    FileLinks file_links = FileLinks::as_links;
    bool skip_hidden = false; ///< names starting with "." are left out, and such directories not entered (Python's glob)
};

struct TreeEntry {
    fs::path path;        ///< root / relative
    std::string relative; ///< '/'-separated, from the root
    fs::file_type type = fs::file_type::unknown;
    std::uint64_t size = 0;  ///< regular files
    bool executable = false; ///< regular files: the owner may execute it
};

struct Tree {
    std::vector<TreeEntry> entries; ///< every entry below the root (not the root), sorted by `relative` byte order
    std::error_code error;          ///< the first directory that could not be listed; entries then hold what was read
};

/// Walks `root`. A root that is not a directory gives an empty tree with no error.
Tree walk_tree(const fs::path& root, const WalkOptions& options = {});

} // namespace harness
