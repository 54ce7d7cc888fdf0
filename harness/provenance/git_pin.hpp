#pragma once
// Git pins through libgit2: the harness's own checkout (commit, dirty, patch) and the framework
// sources a card names, cloned into a cache and resolved from ref to full SHA before anything
// is rendered or submitted.
#include "util/fs.hpp"

#include <string>

namespace harness {

/// The state of the git checkout holding `dir` (searched upwards).
struct CheckoutState {
    std::string commit; ///< full 40-hex SHA of HEAD; empty when `dir` is not in a git checkout
    bool dirty = false; ///< tracked files differ from HEAD (staged or not); untracked files ignored
    std::string patch;  ///< `git diff HEAD` as a unified patch when dirty, else empty
};
/// Not a checkout (or one without commits yet) gives an empty state; a checkout that exists but
/// cannot be read (not owned by this user, damaged) throws HarnessError naming it.
CheckoutState describe_checkout(const fs::path& dir);

/// $XDG_CACHE_HOME/ccl-harness/git, else $HOME/.cache/ccl-harness/git.
fs::path default_git_cache();

struct PinnedSource {
    std::string repo;   ///< as the card wrote it
    std::string ref;    ///< as the card wrote it
    std::string commit; ///< full 40-hex SHA the ref resolved to (tags peeled to their commit)
    fs::path mirror;    ///< the bare clone in the cache
};

/// Where `repo`'s bare clone lives in `cache`: `<sanitized repo>-<8 hex of sha256(repo)>.git`.
fs::path git_cache_entry(const std::string& repo, const fs::path& cache);

/// Clones `repo` (URL or local path) bare into `cache` on first use, fetches every branch and
/// tag otherwise, and resolves `ref` in this order: full commit SHA, branch, tag (peeled), full
/// ref name (`refs/...`), abbreviated SHA (7+ hex digits, unique). An unreachable remote, a damaged cache entry or a
/// ref that does not resolve throws input_error naming the repo and ref.
PinnedSource pin_source(const std::string& repo, const std::string& ref, const fs::path& cache);

/// Makes sure `commit` (full SHA) exists in the cached clone of `repo`, fetching only when it
/// does not; never re-resolves a ref. Used by reproduce: the ref may have moved since.
PinnedSource pin_exact(const std::string& repo, const std::string& ref, const std::string& commit, const fs::path& cache);

} // namespace harness
