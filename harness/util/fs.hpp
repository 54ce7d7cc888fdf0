#pragma once
#include <cstddef>
#include <filesystem>
#include <string>

namespace harness {

namespace fs = std::filesystem;

/// The whole file, or a HarnessError naming the path.
std::string read_file(const fs::path& path);

/// write(2) until all `size` bytes are out, retrying on EINTR. Returns 0, or the errno of the
/// failed write (with errno left set), for the caller to name its file and clean up its way.
int write_fully(int fd, const char* data, std::size_t size);

/// A file written in pieces through a temporary file in the same directory and renamed into
/// place by commit(), so a crash or an error leaves either the old content or the new, never
/// half of one; destroyed uncommitted, the temporary file is removed.
class AtomicFile {
public:
    explicit AtomicFile(const fs::path& path);
    ~AtomicFile();
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;

    void write(const char* data, std::size_t size);
    void write(const std::string& text) { write(text.data(), text.size()); }
    /// Syncs, sets the mode (0755 when `executable`, else 0644) and renames into place.
    void commit(bool executable = false);

private:
    [[noreturn]] void fail(int error);

    fs::path m_path;
    std::string m_temp;
    int m_fd = -1;
};

/// write_file_atomic: AtomicFile with the whole content at once.
void write_file_atomic(const fs::path& path, const std::string& content, bool executable = false);

/// Whether `path` is `dir` or lies under it, after resolving both (links, `..`); neither needs
/// to exist.
bool is_inside(const fs::path& path, const fs::path& dir);

/// `path` made absolute against the current directory and lexically normalized; empty stays
/// empty. Every path that outlives the process's working directory (a run directory a job
/// starts in, a cache, a record on disk) goes through here: ranks and sbatch start elsewhere.
fs::path absolute_path(const fs::path& path);

/// An XDG base directory: $`variable` when it holds an absolute path (a relative one is ignored,
/// as the XDG base-directory spec says), else $HOME/`under_home`; empty when HOME is unset too.
/// E.g. xdg_base_dir("XDG_CONFIG_HOME", ".config").
fs::path xdg_base_dir(const char* variable, const char* under_home);

} // namespace harness
