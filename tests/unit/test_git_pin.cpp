#include "provenance/git_pin.hpp"
#include "render/render.hpp"
#include "test_context.hpp"
#include "util/error.hpp"
#include "util/home.hpp"
#include "util/process.hpp"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <optional>
#include <unistd.h>

using namespace harness;
using harness::test::TempDir;

namespace {

/// Runs the git CLI in `dir` with a fixed identity and no user or system configuration.
std::string git(const fs::path& dir, const std::vector<std::string>& args) {
    Command command;
    command.argv = {"git", "-C", dir.string()};
    command.argv.insert(command.argv.end(), args.begin(), args.end());
    command.env = current_environment({{"GIT_AUTHOR_NAME", "Test"},
                                       {"GIT_AUTHOR_EMAIL", "test@example.invalid"},
                                       {"GIT_COMMITTER_NAME", "Test"},
                                       {"GIT_COMMITTER_EMAIL", "test@example.invalid"},
                                       {"GIT_CONFIG_NOSYSTEM", "1"},
                                       {"GIT_CONFIG_GLOBAL", "/dev/null"}});
    const ExitStatus status = run_command(command);
    INFO("git " << args.front() << ": " << status.output);
    REQUIRE(status.ok());
    std::string out = status.output;
    while (!out.empty() && out.back() == '\n') {
        out.pop_back();
    }
    return out;
}

std::string commit_file(const fs::path& repo, const std::string& name, const std::string& content) {
    std::ofstream(repo / name) << content;
    git(repo, {"add", name});
    git(repo, {"commit", "--quiet", "-m", "change " + name});
    return git(repo, {"rev-parse", "HEAD"});
}

/// An upstream repository: c1 (lightweight tag v1) <- c2 (annotated tag v2, branch dev) <- c3 (main).
struct Upstream {
    fs::path path;
    std::string c1, c2, c3;

    explicit Upstream(const TempDir& dir) : path(dir.path() / "upstream") {
        fs::create_directories(path);
        git(path, {"init", "--quiet", "-b", "main"});
        c1 = commit_file(path, "train.py", "print('one')\n");
        git(path, {"tag", "v1"});
        c2 = commit_file(path, "train.py", "print('two')\n");
        git(path, {"tag", "-a", "v2", "-m", "release two"});
        git(path, {"branch", "dev"});
        c3 = commit_file(path, "train.py", "print('three')\n");
    }
};

int error_code_of(const std::function<void()>& call, std::string& message) {
    try {
        call();
    } catch (const HarnessError& error) {
        message = error.what();
        return error.code();
    }
    return 0;
}

/// Sets or unsets an environment variable for one test, restoring it afterwards.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value) : m_name(name) {
        if (const char* old = std::getenv(name)) {
            m_old = old;
        }
        value != nullptr ? ::setenv(name, value, 1) : ::unsetenv(name);
    }
    ~ScopedEnv() { m_old ? ::setenv(m_name.c_str(), m_old->c_str(), 1) : ::unsetenv(m_name.c_str()); }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
    std::string m_name;
    std::optional<std::string> m_old;
};

} // namespace

TEST_CASE("a ref resolves to the full commit SHA: branch, tags, full and abbreviated SHAs", "[git_pin]") {
    TempDir dir;
    const Upstream upstream(dir);
    const fs::path cache = dir.path() / "cache";
    const std::string repo = upstream.path.string();

    CHECK(pin_source(repo, "main", cache).commit == upstream.c3);
    CHECK(pin_source(repo, "dev", cache).commit == upstream.c2);
    CHECK(pin_source(repo, "v1", cache).commit == upstream.c1);
    // An annotated tag is peeled to its commit, not the tag object.
    CHECK(pin_source(repo, "v2", cache).commit == upstream.c2);
    CHECK(pin_source(repo, upstream.c1, cache).commit == upstream.c1);
    CHECK(pin_source(repo, upstream.c2.substr(0, 9), cache).commit == upstream.c2);
    CHECK(pin_source(repo, "refs/heads/dev", cache).commit == upstream.c2);

    const PinnedSource pinned = pin_source(repo, "main", cache);
    CHECK(pinned.repo == repo);
    CHECK(pinned.ref == "main");
    CHECK(pinned.mirror == git_cache_entry(repo, cache));
    CHECK(fs::is_regular_file(pinned.mirror / "HEAD")); // a bare clone
    CHECK_FALSE(fs::exists(pinned.mirror / ".git"));
}

TEST_CASE("cache entries are named after the repo and a hash of it", "[git_pin]") {
    const fs::path cache = "/cache";
    const fs::path entry = git_cache_entry("https://github.com/pytorch/torchtitan.git", cache);
    CHECK(entry.parent_path() == cache);
    CHECK(entry.filename().string().rfind("github.com-pytorch-torchtitan-", 0) == 0);
    CHECK(entry.filename().string().size() == std::string("github.com-pytorch-torchtitan-").size() + 8 + 4);
    CHECK(git_cache_entry("https://github.com/pytorch/torchtitan", cache) != entry);
    CHECK(git_cache_entry("https://github.com/pytorch/torchtitan.git", cache) == entry);
    CHECK(git_cache_entry("/", cache).filename().string().rfind("repo-", 0) == 0);
}

TEST_CASE("a ref that does not resolve names the repo, the ref and what exists", "[git_pin]") {
    TempDir dir;
    const Upstream upstream(dir);
    const std::string repo = upstream.path.string();
    std::string message;

    SECTION("unknown name") {
        CHECK(error_code_of([&] { pin_source(repo, "no-such-branch", dir.path() / "cache"); }, message) == k_exit_usage);
        CHECK_THAT(message, Catch::Contains("launch.source: ref \"no-such-branch\" not found in \"" + repo + "\""));
        CHECK_THAT(message, Catch::Contains("branches: dev, main"));
        CHECK_THAT(message, Catch::Contains("tags: v1, v2"));
    }
    SECTION("a full SHA that is not there") {
        const std::string missing(40, 'a');
        CHECK(error_code_of([&] { pin_source(repo, missing, dir.path() / "cache"); }, message) == k_exit_usage);
        CHECK_THAT(message, Catch::Contains(missing));
    }
    SECTION("too short to be a SHA") {
        CHECK(error_code_of([&] { pin_source(repo, upstream.c1.substr(0, 6), dir.path() / "cache"); }, message) == k_exit_usage);
        CHECK_THAT(message, Catch::Contains("at least 7 hex digits"));
    }
    SECTION("a relative path") {
        CHECK(error_code_of([&] { pin_source("upstream", "main", dir.path() / "cache"); }, message) == k_exit_usage);
        CHECK_THAT(message, Catch::Contains("relative path"));
    }
    SECTION("an empty ref") {
        CHECK(error_code_of([&] { pin_source(repo, "", dir.path() / "cache"); }, message) == k_exit_usage);
    }
}

TEST_CASE("an unreachable remote is an input error and leaves no cache entry", "[git_pin]") {
    TempDir dir;
    const fs::path cache = dir.path() / "cache";
    std::string message;

    SECTION("a path that does not exist") {
        const std::string repo = (dir.path() / "does-not-exist").string();
        CHECK(error_code_of([&] { pin_source(repo, "main", cache); }, message) == k_exit_usage);
        CHECK_THAT(message, Catch::Contains("launch.source.repo: \"" + repo + "\": no such repository"));
        CHECK_FALSE(fs::exists(git_cache_entry(repo, cache)));
    }
    SECTION("a directory that is not a repository: the fetch itself fails") {
        const fs::path not_repo = dir.path() / "not-a-repo";
        fs::create_directories(not_repo);
        const std::string repo = not_repo.string();
        CHECK(error_code_of([&] { pin_source(repo, "main", cache); }, message) == k_exit_usage);
        CHECK_THAT(message, Catch::Contains("launch.source: cannot fetch \"" + repo + "\" into the git cache"));
        CHECK_FALSE(fs::exists(git_cache_entry(repo, cache)));
        for (const auto& entry : fs::directory_iterator(cache)) {
            CHECK(entry.path().extension() == ".lock"); // no half clone under a temporary name
        }
        CHECK(error_code_of([&] { pin_exact(repo, "main", std::string(40, 'c'), cache); }, message) == k_exit_usage);
        CHECK_THAT(message, Catch::Contains("cannot fetch"));
    }
}

TEST_CASE("a damaged cache entry is reported, not trusted", "[git_pin]") {
    TempDir dir;
    const Upstream upstream(dir);
    const fs::path cache = dir.path() / "cache";
    const fs::path entry = git_cache_entry(upstream.path.string(), cache);
    fs::create_directories(entry);
    std::ofstream(entry / "HEAD") << "garbage\n";
    std::string message;
    CHECK(error_code_of([&] { pin_source(upstream.path.string(), "main", cache); }, message) == k_exit_usage);
    CHECK_THAT(message, Catch::Contains(entry.string()) && Catch::Contains("damaged"));
}

TEST_CASE("the cache is fetched again when the remote moves; pinned commits stay found", "[git_pin]") {
    TempDir dir;
    Upstream upstream(dir);
    const fs::path cache = dir.path() / "cache";
    const std::string repo = upstream.path.string();
    REQUIRE(pin_source(repo, "main", cache).commit == upstream.c3);

    const std::string c4 = commit_file(upstream.path, "train.py", "print('four')\n");
    CHECK(pin_source(repo, "main", cache).commit == c4);
    git(upstream.path, {"tag", "v3"});
    CHECK(pin_source(repo, "v3", cache).commit == c4);

    // History rewritten upstream: main goes back to c1 and c3, c4 become unreachable there.
    git(upstream.path, {"reset", "--quiet", "--hard", upstream.c1});
    git(upstream.path, {"tag", "-d", "v3"});
    CHECK(pin_source(repo, "main", cache).commit == upstream.c1);
    const PinnedSource exact = pin_exact(repo, "main", c4, cache);
    CHECK(exact.commit == c4);
    CHECK(exact.ref == "main");

    // A commit the cache has never seen is fetched.
    git(upstream.path, {"checkout", "--quiet", "-b", "later"});
    const std::string c5 = commit_file(upstream.path, "other.py", "pass\n");
    CHECK(pin_exact(repo, "later", c5, cache).commit == c5);

    std::string message;
    CHECK(error_code_of([&] { pin_exact(repo, "main", std::string(40, 'b'), cache); }, message) == k_exit_usage);
    CHECK_THAT(message, Catch::Contains(std::string(40, 'b')));
    CHECK(error_code_of([&] { pin_exact(repo, "main", "abc123", cache); }, message) == k_exit_usage);
}

TEST_CASE("a branch deleted upstream no longer resolves", "[git_pin]") {
    TempDir dir;
    const Upstream upstream(dir);
    const fs::path cache = dir.path() / "cache";
    REQUIRE(pin_source(upstream.path.string(), "dev", cache).commit == upstream.c2);
    git(upstream.path, {"branch", "--quiet", "-D", "dev"});
    std::string message;
    CHECK(error_code_of([&] { pin_source(upstream.path.string(), "dev", cache); }, message) == k_exit_usage);
    CHECK_THAT(message, Catch::Contains("branches: main;"));
}

TEST_CASE("describe_checkout reports HEAD, dirtiness and the patch", "[git_pin]") {
    TempDir dir;
    const Upstream upstream(dir);
    const fs::path sub = upstream.path / "sub";
    fs::create_directories(sub);

    SECTION("clean, found from a subdirectory; untracked files do not count") {
        std::ofstream(upstream.path / "untracked.txt") << "new\n";
        const CheckoutState state = describe_checkout(sub);
        CHECK(state.commit == upstream.c3);
        CHECK_FALSE(state.dirty);
        CHECK(state.patch.empty());
    }
    SECTION("an unstaged change") {
        std::ofstream(upstream.path / "train.py") << "print('edited')\n";
        const CheckoutState state = describe_checkout(upstream.path);
        CHECK(state.commit == upstream.c3);
        CHECK(state.dirty);
        CHECK_THAT(state.patch,
                   Catch::Contains("--- a/train.py") && Catch::Contains("+print('edited')") && Catch::Contains("-print('three')"));
    }
    SECTION("a staged change") {
        std::ofstream(upstream.path / "added.py") << "x = 1\n";
        git(upstream.path, {"add", "added.py"});
        const CheckoutState state = describe_checkout(upstream.path);
        CHECK(state.dirty);
        CHECK_THAT(state.patch, Catch::Contains("+++ b/added.py"));
    }
    SECTION("a repository without commits") {
        const fs::path empty = dir.path() / "empty";
        fs::create_directories(empty);
        git(empty, {"init", "--quiet"});
        const CheckoutState state = describe_checkout(empty);
        CHECK(state.commit.empty());
        CHECK_FALSE(state.dirty);
    }
}

TEST_CASE("describe_checkout outside any checkout is empty, not an error", "[git_pin]") {
    // The build tree sits inside the project's own checkout: this needs a directory outside it.
    std::string outside = (fs::temp_directory_path() / "ccl-git-pin-XXXXXX").string();
    REQUIRE(::mkdtemp(outside.data()) != nullptr);
    const CheckoutState state = describe_checkout(outside);
    fs::remove(outside);
    CHECK(state.commit.empty());
    CHECK_FALSE(state.dirty);
    CHECK(state.patch.empty());
}

TEST_CASE("the default git cache follows XDG_CACHE_HOME, else HOME", "[git_pin]") {
    SECTION("XDG_CACHE_HOME set") {
        const ScopedEnv xdg("XDG_CACHE_HOME", "/somewhere/cache");
        CHECK(default_git_cache() == fs::path("/somewhere/cache/ccl-harness/git"));
    }
    SECTION("XDG_CACHE_HOME unset") {
        const ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
        const ScopedEnv home("HOME", "/home/someone");
        CHECK(default_git_cache() == fs::path("/home/someone/.cache/ccl-harness/git"));
    }
    SECTION("a relative XDG_CACHE_HOME is ignored, as the XDG spec says") {
        const ScopedEnv xdg("XDG_CACHE_HOME", "relative");
        const ScopedEnv home("HOME", "/home/someone");
        CHECK(default_git_cache() == fs::path("/home/someone/.cache/ccl-harness/git"));
    }
}

TEST_CASE("a pinned plan renders the SHA where the unpinned one shows the ref", "[git_pin]") {
    const fs::path card_path = harness_home() / "workloads" / "tiny-ddp" / "tiny-ddp.yaml";
    const WorkloadCard card = WorkloadCard::load(card_path, {"launch.source.repo=/srv/git/tiny.git", "launch.source.ref=main"});
    REQUIRE_FALSE(card.diagnostics().has_errors());
    const ClusterProfile cluster = ClusterProfile::load(harness_home() / "clusters", "local");
    Diagnostics diagnostics;
    Plan plan = make_plan(card, cluster, false, diagnostics);
    const std::string sha = "0123456789abcdef0123456789abcdef01234567";

    const RenderedRun preview = render_run(card, cluster, plan, harness_home());
    REQUIRE(preview.find("launch.sh") != nullptr);
    CHECK_THAT(preview.find("launch.sh")->content, Catch::Contains("/srv/git/tiny.git main"));
    CHECK_THAT(preview.find("plan.json")->content, !Catch::Contains("\"commit\""));
    // The script lives in the checkout: nothing is copied beside the card's files.
    CHECK(preview.find("train.py") == nullptr);

    plan.source_commit = sha;
    const RenderedRun pinned = render_run(card, cluster, plan, harness_home());
    const std::string& launch = pinned.find("launch.sh")->content;
    CHECK_THAT(launch, Catch::Contains("/srv/git/tiny.git " + sha));
    CHECK_THAT(launch, Catch::Contains("\"$RUN_DIR/src/train.py\""));
    CHECK_THAT(pinned.find("plan.json")->content, Catch::Contains(sha));

    SECTION("a script path that leaves the checkout is refused") {
        const WorkloadCard escaping = WorkloadCard::load(
            card_path, {"launch.source.repo=/srv/git/tiny.git", "launch.source.ref=main", "launch.script=../evil.py"});
        const Plan escaping_plan = make_plan(escaping, cluster, false, diagnostics);
        std::string message;
        CHECK(error_code_of([&] { render_run(escaping, cluster, escaping_plan, harness_home()); }, message) == k_exit_usage);
        CHECK_THAT(message, Catch::Contains("launch.script"));
    }
}
