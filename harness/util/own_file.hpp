#pragma once
// A small record read from a directory someone else may have written (a run directory from shared
// scratch): opened without following a link and checked on the open descriptor, so a link, a FIFO
// or a device is refused, never followed or waited on, and nothing can swap the file between the
// check and the read.
#include "util/fs.hpp"

#include <cstdint>
#include <string>

namespace harness {

/// The bytes of `file` when it is a regular file of at most `max_bytes`. Otherwise throws an input
/// error "NAME: why" (NAME: the file's name): a symbolic link, not a regular file, more bytes than
/// `max_bytes` ("more than a record holds (N MiB)"), or the system's reason it cannot be read.
std::string read_own_file(const fs::path& file, std::uintmax_t max_bytes);

} // namespace harness
