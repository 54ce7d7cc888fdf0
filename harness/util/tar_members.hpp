#pragma once
// A few small files out of a plain tar, by name, without unpacking it: what an OCI image
// archive's index, manifest and config are to the checks that read them.
#include "util/fs.hpp"

#include <cstddef>
#include <map>
#include <set>
#include <string>

namespace harness {

/// The contents of the members of `tar` named in `names` ("index.json", "blobs/sha256/<hex>";
/// a leading "./" is ignored), read in one pass; a member larger than `max_bytes` or a tar that
/// cannot be read throws HarnessError naming the archive. Names not found are absent.
std::map<std::string, std::string> read_tar_members(const fs::path& tar, const std::set<std::string>& names,
                                                    std::size_t max_bytes = std::size_t{1} << 20);

} // namespace harness
