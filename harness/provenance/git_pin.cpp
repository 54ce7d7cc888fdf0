#include "provenance/git_pin.hpp"

#include "util/error.hpp"
#include "util/sha256.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <git2.h>
#include <memory>
#include <optional>
#include <pwd.h>
#include <sys/file.h>
#include <unistd.h>
#include <vector>

namespace harness {

namespace {

/// libgit2 keeps global state (TLS, SSL) that must be set up once before any call.
void ensure_libgit2() {
    struct Library {
        Library() { git_libgit2_init(); }
        ~Library() { git_libgit2_shutdown(); }
        Library(const Library&) = delete;
        Library& operator=(const Library&) = delete;
    };
    static const Library library;
}

template <typename T, void (*Free)(T*)> struct Freer {
    void operator()(T* object) const { Free(object); }
};
template <typename T, void (*Free)(T*)> using Owned = std::unique_ptr<T, Freer<T, Free>>;
using Repository = Owned<git_repository, git_repository_free>;
using Remote = Owned<git_remote, git_remote_free>;
using Object = Owned<git_object, git_object_free>;
using Reference = Owned<git_reference, git_reference_free>;
using Commit = Owned<git_commit, git_commit_free>;
using Tree = Owned<git_tree, git_tree_free>;
using Diff = Owned<git_diff, git_diff_free>;
using ReferenceIterator = Owned<git_reference_iterator, git_reference_iterator_free>;

std::string git_message() {
    const git_error* error = git_error_last();
    return error != nullptr && error->message != nullptr ? error->message : "unknown libgit2 error";
}

std::string hex(const git_oid& oid) {
    char text[GIT_OID_HEXSZ + 1] = {};
    git_oid_tostr(text, sizeof text, &oid);
    return text;
}

bool is_hex(const std::string& text) {
    return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    });
}

/// Holds an exclusive flock on `<entry>.lock` so two harness runs never clone or fetch into
/// the same cache entry at once.
class EntryLock {
public:
    explicit EntryLock(const fs::path& entry) {
        const std::string path = entry.string() + ".lock";
        m_fd = ::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
        if (m_fd < 0) {
            throw input_error(fmt::format("git cache: cannot create {}: {}", path, std::strerror(errno)));
        }
        while (::flock(m_fd, LOCK_EX) != 0) {
            if (errno != EINTR) {
                const int error = errno;
                ::close(m_fd);
                throw input_error(fmt::format("git cache: cannot lock {}: {}", path, std::strerror(error)));
            }
        }
    }
    ~EntryLock() { ::close(m_fd); }
    EntryLock(const EntryLock&) = delete;
    EntryLock& operator=(const EntryLock&) = delete;

private:
    int m_fd = -1;
};

/// ssh remotes authenticate through the user's agent, tried once: libgit2 calls this again after
/// every refusal, and an agent that refuses once refuses forever.
int agent_credentials(git_credential** out, const char* /*url*/, const char* user, unsigned int allowed, void* payload) {
    int& tries = *static_cast<int*>(payload);
    if ((allowed & GIT_CREDENTIAL_SSH_KEY) == 0 || tries++ > 0) {
        return GIT_PASSTHROUGH;
    }
    return git_credential_ssh_key_from_agent(out, user != nullptr ? user : "git");
}

/// Mirrors every branch and tag of `url` into `repo`; branches deleted upstream are pruned so
/// a ref that no longer exists there no longer resolves here.
void fetch_all(git_repository* repo, const std::string& url, const fs::path& entry) {
    git_remote* raw = nullptr;
    if (git_remote_create_anonymous(&raw, repo, url.c_str()) != 0) {
        throw input_error(fmt::format("launch.source: {} is not a usable git remote: {}", enquote(url), git_message()));
    }
    const Remote remote(raw);
    std::string heads = "+refs/heads/*:refs/heads/*";
    std::string tags = "+refs/tags/*:refs/tags/*";
    char* specs[] = {heads.data(), tags.data()};
    const git_strarray refspecs{specs, 2};
    int tries = 0;
    git_fetch_options options = GIT_FETCH_OPTIONS_INIT;
    options.prune = GIT_FETCH_PRUNE;
    options.download_tags = GIT_REMOTE_DOWNLOAD_TAGS_NONE; // the tags refspec already takes all
    options.callbacks.credentials = agent_credentials;
    options.callbacks.payload = &tries;
    if (git_remote_fetch(remote.get(), &refspecs, &options, "ccl-harness: fetch") != 0) {
        throw input_error(
            fmt::format("launch.source: cannot fetch {} into the git cache ({}): {}", enquote(url), entry.string(), git_message()));
    }
}

/// The cache entry for `repo`, opened or cloned; `fetched` tells whether it has just been
/// filled from the remote.
Repository open_entry(const std::string& url, const fs::path& entry, bool& fetched) {
    std::error_code ec;
    fetched = false;
    if (fs::exists(entry, ec)) {
        git_repository* raw = nullptr;
        if (!fs::is_directory(entry, ec)) {
            throw input_error(fmt::format("git cache entry {} for {} is damaged (not a directory); remove it and the next run "
                                          "clones again",
                                          entry.string(), enquote(url)));
        }
        if (git_repository_open_bare(&raw, entry.c_str()) != 0) {
            throw input_error(fmt::format("git cache entry {} for {} is damaged ({}); remove it and the next run clones again",
                                          entry.string(), enquote(url), git_message()));
        }
        return Repository(raw);
    }
    // Cloned under a temporary name and renamed: an interrupted clone leaves no entry, and
    // the next run starts over instead of trusting half a repository.
    std::string staging = (entry.parent_path() / ("." + entry.filename().string() + ".tmp-XXXXXX")).string();
    if (::mkdtemp(staging.data()) == nullptr) {
        throw input_error(fmt::format("git cache: cannot write in {}: {}", entry.parent_path().string(), std::strerror(errno)));
    }
    try {
        git_repository* raw = nullptr;
        if (git_repository_init(&raw, staging.c_str(), 1) != 0) {
            throw input_error(fmt::format("git cache: cannot create a repository in {}: {}", staging, git_message()));
        }
        Repository repo(raw);
        fetch_all(repo.get(), url, entry);
        repo.reset();
        fs::rename(staging, entry);
    } catch (...) {
        fs::remove_all(staging, ec);
        throw;
    }
    git_repository* raw = nullptr;
    if (git_repository_open_bare(&raw, entry.c_str()) != 0) {
        throw HarnessError(fmt::format("git cache: cannot open {} after cloning it: {}", entry.string(), git_message()));
    }
    fetched = true;
    return Repository(raw);
}

std::optional<std::string> peeled_commit(git_object* object) {
    git_object* raw = nullptr;
    if (git_object_peel(&raw, object, GIT_OBJECT_COMMIT) != 0) {
        return std::nullopt;
    }
    const Object commit(raw);
    return hex(*git_object_id(commit.get()));
}

std::optional<std::string> commit_of_reference(git_repository* repo, const std::string& name) {
    git_reference* raw = nullptr;
    if (git_reference_lookup(&raw, repo, name.c_str()) != 0) {
        return std::nullopt;
    }
    const Reference reference(raw);
    git_object* peeled = nullptr;
    if (git_reference_peel(&peeled, reference.get(), GIT_OBJECT_COMMIT) != 0) {
        return std::nullopt;
    }
    const Object commit(peeled);
    return hex(*git_object_id(commit.get()));
}

std::optional<std::string> commit_by_prefix(git_repository* repo, const std::string& prefix, const std::string& ref,
                                            const std::string& url) {
    git_oid oid;
    if (git_oid_fromstrn(&oid, prefix.c_str(), prefix.size()) != 0) {
        return std::nullopt;
    }
    git_object* raw = nullptr;
    const int rc = git_object_lookup_prefix(&raw, repo, &oid, prefix.size(), GIT_OBJECT_ANY);
    if (rc == GIT_EAMBIGUOUS) {
        throw input_error(fmt::format("launch.source: ref {} is ambiguous in {}: several objects start with it; give more digits",
                                      enquote(ref), enquote(url)));
    }
    if (rc != 0) {
        return std::nullopt;
    }
    const Object object(raw);
    return peeled_commit(object.get());
}

std::vector<std::string> reference_names(git_repository* repo, const std::string& prefix) {
    std::vector<std::string> names;
    git_reference_iterator* raw = nullptr;
    if (git_reference_iterator_glob_new(&raw, repo, (prefix + "*").c_str()) != 0) {
        return names;
    }
    const ReferenceIterator iterator(raw);
    const char* name = nullptr;
    while (git_reference_next_name(&name, iterator.get()) == 0) {
        names.emplace_back(name + prefix.size());
    }
    std::sort(names.begin(), names.end());
    return names;
}

std::string a_few(const std::vector<std::string>& names) {
    constexpr std::size_t k_shown = 5;
    if (names.size() <= k_shown) {
        return join(names, ", ");
    }
    return fmt::format("{} and {} more", join({names.begin(), names.begin() + k_shown}, ", "), names.size() - k_shown);
}

std::string resolve(git_repository* repo, const std::string& ref, const std::string& url) {
    if (ref.size() == GIT_OID_HEXSZ && is_hex(ref)) {
        if (auto commit = commit_by_prefix(repo, ref, ref, url)) {
            return *commit;
        }
    }
    if (auto commit = commit_of_reference(repo, "refs/heads/" + ref)) {
        return *commit;
    }
    if (auto commit = commit_of_reference(repo, "refs/tags/" + ref)) {
        return *commit;
    }
    if (starts_with(ref, "refs/")) {
        if (auto commit = commit_of_reference(repo, ref)) {
            return *commit;
        }
    }
    if (ref.size() >= 7 && ref.size() < GIT_OID_HEXSZ && is_hex(ref)) {
        if (auto commit = commit_by_prefix(repo, ref, ref, url)) {
            return *commit;
        }
    }
    const std::vector<std::string> branches = reference_names(repo, "refs/heads/");
    const std::vector<std::string> tags = reference_names(repo, "refs/tags/");
    std::string known;
    if (branches.empty() && tags.empty()) {
        known = "it has no branches or tags";
    } else {
        known = fmt::format("branches: {}; tags: {}", branches.empty() ? "none" : a_few(branches),
                            tags.empty() ? "none" : a_few(tags));
    }
    const bool short_hex = is_hex(ref) && ref.size() < 7;
    throw input_error(fmt::format("launch.source: ref {} not found in {} ({}){}", enquote(ref), enquote(url), known,
                                  short_hex ? "; an abbreviated commit needs at least 7 hex digits" : ""));
}

bool has_commit(git_repository* repo, const std::string& commit) {
    git_oid oid;
    git_commit* raw = nullptr;
    if (git_oid_fromstr(&oid, commit.c_str()) != 0 || git_commit_lookup(&raw, repo, &oid) != 0) {
        return false;
    }
    git_commit_free(raw);
    return true;
}

/// URLs (`scheme://...`) and scp-style `user@host:path` are not local paths.
bool is_relative_path(const std::string& repo) {
    if (repo.find("://") != std::string::npos) {
        return false;
    }
    const std::size_t colon = repo.find(':');
    if (colon != std::string::npos && colon < repo.find('/')) {
        return false;
    }
    return fs::path(repo).is_relative();
}

void check_source(const std::string& repo, const std::string& ref) {
    if (trim(repo).empty() || trim(ref).empty()) {
        throw input_error("launch.source: needs both repo and ref");
    }
    // The launch script fetches the repo again from the run directory, where a relative path
    // would name something else (or nothing).
    if (is_relative_path(repo)) {
        throw input_error(fmt::format("launch.source.repo: {} is a relative path; give a URL or an absolute path", enquote(repo)));
    }
    // libgit2 takes a path that does not exist for a URL and says "unsupported URL protocol".
    std::error_code ec;
    if (fs::path(repo).is_absolute() && !fs::exists(repo, ec)) {
        throw input_error(fmt::format("launch.source.repo: {}: no such repository (the path does not exist)", enquote(repo)));
    }
}

fs::path prepare_cache(const fs::path& cache_as_given) {
    fs::path cache = absolute_path(cache_as_given);
    std::error_code ec;
    fs::create_directories(cache, ec);
    if (ec) {
        throw input_error(fmt::format("--git-cache {}: cannot create it: {}", cache.string(), ec.message()));
    }
    return cache;
}

} // namespace

fs::path git_cache_entry(const std::string& repo, const fs::path& cache) {
    std::string name = repo;
    const std::size_t scheme = name.find("://");
    if (scheme != std::string::npos) {
        name = name.substr(scheme + 3);
    }
    while (!name.empty() && (name.back() == '/' || name.back() == '\\')) {
        name.pop_back();
    }
    if (ends_with(name, ".git")) {
        name.resize(name.size() - 4);
    }
    std::string sanitized;
    for (const char c : name) {
        const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_';
        const char out = plain ? c : '-';
        if (out != '-' || (!sanitized.empty() && sanitized.back() != '-')) {
            sanitized += out;
        }
    }
    while (!sanitized.empty() && (sanitized.front() == '.' || sanitized.front() == '-')) {
        sanitized.erase(0, 1);
    }
    // Long paths keep their end: the repository's own name is the informative part.
    constexpr std::size_t k_max = 80;
    if (sanitized.size() > k_max) {
        sanitized = sanitized.substr(sanitized.size() - k_max);
    }
    if (sanitized.empty()) {
        sanitized = "repo";
    }
    return cache / fmt::format("{}-{}.git", sanitized, sha256_hex(repo).substr(0, 8));
}

fs::path default_git_cache() {
    fs::path base = xdg_base_dir("XDG_CACHE_HOME", ".cache");
    if (base.empty()) {
        // A cache may live in the account's home even where HOME is unset (cron, some batch systems).
        const passwd* user = ::getpwuid(::getuid());
        if (user != nullptr && user->pw_dir != nullptr && *user->pw_dir != '\0') {
            base = fs::path(user->pw_dir) / ".cache";
        }
    }
    if (base.empty()) {
        throw input_error("no git cache directory: set XDG_CACHE_HOME or HOME, or pass --git-cache DIR");
    }
    return base / "ccl-harness" / "git";
}

PinnedSource pin_source(const std::string& repo, const std::string& ref, const fs::path& cache) {
    check_source(repo, ref);
    ensure_libgit2();
    const fs::path entry = git_cache_entry(repo, prepare_cache(cache));
    const EntryLock lock(entry);
    bool fetched = false;
    const Repository repository = open_entry(repo, entry, fetched);
    if (!fetched) {
        fetch_all(repository.get(), repo, entry);
    }
    return {repo, ref, resolve(repository.get(), ref, repo), entry};
}

PinnedSource pin_exact(const std::string& repo, const std::string& ref, const std::string& commit, const fs::path& cache) {
    check_source(repo, ref);
    if (commit.size() != GIT_OID_HEXSZ || !is_hex(commit)) {
        throw input_error(fmt::format("source commit {} for {} is not a full 40-hex SHA", enquote(commit), enquote(repo)));
    }
    ensure_libgit2();
    const std::string lowered = to_lower(commit);
    const fs::path entry = git_cache_entry(repo, prepare_cache(cache));
    const EntryLock lock(entry);
    bool fetched = false;
    const Repository repository = open_entry(repo, entry, fetched);
    if (!has_commit(repository.get(), lowered) && !fetched) {
        fetch_all(repository.get(), repo, entry);
    }
    if (!has_commit(repository.get(), lowered)) {
        throw input_error(
            fmt::format("launch.source: pinned commit {} ({} at the time) is no longer in {}: was its history rewritten?", lowered,
                        enquote(ref), enquote(repo)));
    }
    return {repo, ref, lowered, entry};
}

CheckoutState describe_checkout(const fs::path& dir) {
    ensure_libgit2();
    CheckoutState state;
    git_repository* raw_repo = nullptr;
    const int opened = git_repository_open_ext(&raw_repo, dir.c_str(), 0, nullptr);
    if (opened == GIT_ENOTFOUND) {
        return state;
    }
    if (opened != 0) {
        throw HarnessError(fmt::format("git: cannot read the checkout holding {}: {}", dir.string(), git_message()));
    }
    const Repository repo(raw_repo);
    git_oid head;
    const int resolved = git_reference_name_to_id(&head, repo.get(), "HEAD");
    if (resolved == GIT_EUNBORNBRANCH || resolved == GIT_ENOTFOUND) {
        return state; // no commit yet: nothing to pin to
    }
    if (resolved != 0) {
        throw HarnessError(fmt::format("git: cannot resolve HEAD of the checkout holding {}: {}", dir.string(), git_message()));
    }
    state.commit = hex(head);
    if (git_repository_is_bare(repo.get()) != 0) {
        return state;
    }
    git_commit* raw_commit = nullptr;
    git_tree* raw_tree = nullptr;
    if (git_commit_lookup(&raw_commit, repo.get(), &head) != 0) {
        throw HarnessError(fmt::format("git: cannot read HEAD commit {} in {}: {}", state.commit, dir.string(), git_message()));
    }
    const Commit commit(raw_commit);
    if (git_commit_tree(&raw_tree, commit.get()) != 0) {
        throw HarnessError(fmt::format("git: cannot read the tree of {} in {}: {}", state.commit, dir.string(), git_message()));
    }
    const Tree tree(raw_tree);
    // Staged and unstaged changes to tracked files, as `git diff HEAD` shows them.
    git_diff_options options = GIT_DIFF_OPTIONS_INIT;
    git_diff* raw_diff = nullptr;
    if (git_diff_tree_to_workdir_with_index(&raw_diff, repo.get(), tree.get(), &options) != 0) {
        throw HarnessError(fmt::format("git: cannot diff the checkout holding {}: {}", dir.string(), git_message()));
    }
    const Diff diff(raw_diff);
    if (git_diff_num_deltas(diff.get()) == 0) {
        return state;
    }
    state.dirty = true;
    git_buf patch = GIT_BUF_INIT;
    if (git_diff_to_buf(&patch, diff.get(), GIT_DIFF_FORMAT_PATCH) != 0) {
        throw HarnessError(fmt::format("git: cannot write the diff of {}: {}", dir.string(), git_message()));
    }
    state.patch.assign(patch.ptr, patch.size);
    git_buf_dispose(&patch);
    return state;
}

} // namespace harness
