#pragma once
// A private temporary directory that disappears on every way out of the scope that made it.
#include "util/error.hpp"
#include "util/fs.hpp"

#include <string>
#include <string_view>

namespace harness {

/// The scratch file system cannot take more: ENOSPC, EDQUOT or EROFS while writing under
/// $TMPDIR. An environment failure (exit 1) saying "no space left on TMPDIR (...)", never a
/// verdict on the input: whoever unpacks or writes scratch files rethrows it as it is.
class ScratchSpaceError : public HarnessError {
public:
    ScratchSpaceError(const fs::path& where, int error_number);
};

/// True for the errno values that mean the file system is full or read-only.
bool is_out_of_space(int error_number);

/// Throws ScratchSpaceError when `error_number` is out of space (see above); returns otherwise,
/// so the caller throws its own error for anything else.
void throw_if_out_of_space(int error_number, const fs::path& where);

/// `text` with every path under `dir` (a scratch directory a bundle was unpacked into) named as
/// `shown` followed by the path inside: a message about an unpacked file names the bundle the user
/// gave ("run.tar.zst:run/kineto_trace_0.json"), never a temporary directory that is gone when the
/// message is read. An empty `shown` leaves the path relative to `dir`.
std::string with_scratch_paths_shown(std::string text, const fs::path& dir, std::string_view shown);

class ScratchDir {
public:
    /// Creates `<root>/ccl-harness-<purpose>-XXXXXX` (mode 0700); an empty root means $TMPDIR,
    /// else /tmp. Throws HarnessError when it cannot.
    ScratchDir(const fs::path& root, const std::string& purpose);
    ~ScratchDir();
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;

    const fs::path& path() const { return m_path; }

private:
    fs::path m_path;
};

} // namespace harness
