#include "provenance/env_capture.hpp"
#include "provenance/provenance.hpp"
#include "provenance/secret_scrub.hpp"
#include "run/record_provenance.hpp"
#include "test_context.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/home.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <sstream>
#include <sys/stat.h>

using namespace harness;
using harness::test::TempDir;

namespace {

const std::string k_hf = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123";
const std::string k_wandb = "0123456789abcdef0123456789abcdef01234567";

bool has(const std::vector<std::string>& lines, const std::string& needle) {
    return std::any_of(lines.begin(), lines.end(), [&](const std::string& line) { return line.find(needle) != std::string::npos; });
}

std::string joined(const std::vector<std::string>& lines) {
    std::string out;
    for (const auto& line : lines) {
        out += line + "\n";
    }
    return out;
}

SecretScrubber scrubber_of(std::initializer_list<std::string> secrets) {
    SecretScrubber scrubber;
    for (const auto& secret : secrets) {
        scrubber.add(secret);
    }
    return scrubber;
}

struct stat stat_of(const fs::path& file) {
    struct stat info {};
    REQUIRE(::stat(file.c_str(), &info) == 0);
    return info;
}

std::size_t entries_in(const fs::path& dir) {
    return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

ProbeReport probe(const std::string& host, long long rank, EnvironmentMap env) {
    ProbeReport report;
    report.hostname = host;
    report.rank = rank;
    for (const char* tool : k_probe_tools) {
        report.tools[tool] = Json();
    }
    report.tools["python"] = "3.11.2";
    report.tools["torch"] = "1.13.0";
    report.environment = std::move(env);
    return report;
}

/// A run as run_workload leaves it: rendered (with a pinned source and an image pinned by
/// digest), final, with a job id.
struct FakeRun {
    RenderedRun run;
    RunRecord record;
    ProvenanceFacts facts;

    FakeRun() {
        run.plan.card_name = "tiny";
        run.plan.source_repo = "https://github.com/pytorch/torchtitan";
        run.plan.source_ref = "v0.2.0";
        run.plan.source_commit = std::string(40, 'a');
        run.plan.container_image = "docker.io/pytorch/pytorch@sha256:" + std::string(64, 'b');
        run.plan.container_runtime = "podman-hpc";
        record.run_id = "tiny-20261123T021839Z-abc123";
        record.card = "tiny";
        record.target = "slurm-local";
        record.executor = "slurm";
        record.state = RunState::completed;
        record.job_ids = {"42"};
        record.transitions = {{"rendered", "2026-11-23T02:18:39Z"},
                              {"submitted", "2026-11-23T02:18:40Z"},
                              {"running", "2026-11-23T02:18:41Z"},
                              {"completed", "2026-11-23T02:19:00Z"}};
        record.scheduler["nodes"] = "c1";
        facts.harness.commit = std::string(40, 'c');
        facts.inputs = {{"clusters/slurm-local.yaml", std::string(64, 'd')},
                        {"templates/torch-ddp/slurm-local/launch.sbatch.mustache", std::string(64, 'e')}};
        facts.harness_environment = {{"PATH", "/usr/bin"}, {"HF_TOKEN", k_hf}, {"OMP_NUM_THREADS", "4"}};
    }

    Json provenance(const std::vector<ProbeReport>& probes = {}) const { return make_provenance(run, record, facts, probes); }
};

/// A valid provenance with one field replaced, as written text: the checker sees what verify sees.
Json with(const std::string& from, const std::string& to) {
    std::string text = FakeRun().provenance().dump();
    const std::size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    text.replace(at, from.size(), to);
    return Json::parse(text);
}

} // namespace

TEST_CASE("secret names hold a secret word in any case", "[provenance]") {
    for (const char* name : {"HF_TOKEN", "WANDB_API_KEY", "AWS_SECRET_ACCESS_KEY", "hf_token", "DB_PASSWORD",
                             "GOOGLE_APPLICATION_CREDENTIALS", "GITHUB_AUTH", "OAuthThing", "CUDA_API_KEY"}) {
        INFO(name);
        CHECK(is_secret_name(name));
    }
    for (const char* name : {"NCCL_DEBUG", "SLURM_JOB_ID", "PATH", "HOME", "MASTER_ADDR", "CUDA_VISIBLE_DEVICES"}) {
        INFO(name);
        CHECK_FALSE(is_secret_name(name));
    }
}

TEST_CASE("only allow-listed names are captured, and never a secret one", "[provenance]") {
    for (const char* name : {"NCCL_DEBUG", "SLURM_JOB_ID", "MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK",
                             "OMP_NUM_THREADS", "CUDA_VISIBLE_DEVICES", "TORCH_NCCL_ASYNC_ERROR_HANDLING", "XLA_FLAGS",
                             "LIBTPU_INIT_ARGS", "JAX_PLATFORMS", "FI_PROVIDER", "MPICH_GPU_SUPPORT_ENABLED", "CCL_RUN_DIR"}) {
        INFO(name);
        CHECK(is_captured_name(name));
    }
    // PATH is not allow-listed; CUDA_API_KEY is, by prefix, but is a secret name; prefixes are
    // case-sensitive, as environment names are.
    for (const char* name : {"PATH", "HOME", "HF_TOKEN", "WANDB_API_KEY", "AWS_SECRET_ACCESS_KEY", "CUDA_API_KEY", "SLURM_AUTH_TOKEN",
                             "NCCL_PASSWORD", "nccl_debug", "USER", ""}) {
        INFO(name);
        CHECK_FALSE(is_captured_name(name));
    }
    const Json captured = capture_environment({{"PATH", "/bin"}, {"SLURM_JOB_ID", "42"}, {"NCCL_DEBUG", "INFO"}, {"HF_TOKEN", k_hf}});
    CHECK(captured.dump(false) == R"({"NCCL_DEBUG":"INFO","SLURM_JOB_ID":"42"})");
}

TEST_CASE("the harness reads its own environment", "[provenance]") {
    ::setenv("CCL_PROVENANCE_UNIT_TEST", "present", 1);
    const EnvironmentMap env = process_environment();
    ::unsetenv("CCL_PROVENANCE_UNIT_TEST");
    REQUIRE(env.count("CCL_PROVENANCE_UNIT_TEST") == 1);
    CHECK(env.at("CCL_PROVENANCE_UNIT_TEST") == "present");
}

TEST_CASE("the scrubber replaces known values of six characters or more", "[provenance]") {
    const SecretScrubber scrubber = scrubber_of({"abc12", "abc123", "abc1234567"});
    std::size_t replaced = 0;
    // "abc12" is too short to scrub; at one position the longest secret wins.
    CHECK(scrubber.scrub("x abc12 abc123 abc1234567 abc123abc123", &replaced) == "x abc12 [REDACTED] [REDACTED] [REDACTED][REDACTED]");
    CHECK(replaced == 4);
    CHECK(scrubber.scrub("") == "");
    CHECK(SecretScrubber().scrub("abc123") == "abc123");
    CHECK(SecretScrubber().empty());
    // A log that prints JSON shows a secret with a quote or backslash escaped.
    const SecretScrubber quoted = scrubber_of({R"(pa"ss\word)"});
    CHECK(quoted.scrub(R"({"p": "pa\"ss\\word"} pa"ss\word)") == R"({"p": "[REDACTED]"} [REDACTED])");
    Json record = Json::object();
    record["reason"] = "rank 0 printed abc123";
    record["abc123"] = Json(Json::Array{Json("abc123"), Json(123456)});
    CHECK(scrubber.scrub_json(record).dump(false) == R"({"[REDACTED]":["[REDACTED]",123456],"reason":"rank 0 printed [REDACTED]"})");
}

TEST_CASE("a file is scrubbed the same whatever the chunk size", "[provenance]") {
    TempDir dir;
    const std::string secret = "s3cr3t-value";
    const SecretScrubber scrubber = scrubber_of({secret, "other-secret-longer"});
    // Secrets at the very start and end, back to back, and split across every chunk boundary.
    const std::string content = secret + "ab" + secret + secret + "\nother-secret-longer x other-secret-longe\n" + secret;
    const std::string expected = scrubber.scrub(content);
    CHECK(expected == "[REDACTED]ab[REDACTED][REDACTED]\n[REDACTED] x other-secret-longe\n[REDACTED]");
    for (std::size_t chunk = 1; chunk <= content.size() + 1; ++chunk) {
        const fs::path file = dir.write("log-" + std::to_string(chunk) + ".txt", content);
        INFO("chunk " << chunk);
        CHECK(scrubber.scrub_file(file, chunk) == 5);
        CHECK(read_file(file) == expected);
    }
    SECTION("a file that is only a secret, an empty file") {
        const fs::path only = dir.write("only.txt", secret);
        CHECK(scrubber.scrub_file(only, 3) == 1);
        CHECK(read_file(only) == "[REDACTED]");
        const fs::path empty = dir.write("empty.txt", "");
        CHECK(scrubber.scrub_file(empty, 3) == 0);
        CHECK(read_file(empty).empty());
    }
}

TEST_CASE("a file is rewritten atomically in place, or not at all", "[provenance]") {
    TempDir dir;
    const SecretScrubber scrubber = scrubber_of({k_hf});
    const fs::path logs = dir.path() / "logs";
    const fs::path clean = dir.write("logs/clean.log", "nothing to hide\n");
    const fs::path dirty = dir.write("logs/sub/rank_0.log", "token=" + k_hf + "\n");
    fs::permissions(dirty, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
    const struct stat clean_before = stat_of(clean);
    const struct stat dirty_before = stat_of(dirty);

    CHECK(scrubber.scrub_tree(logs) == 1);
    CHECK(read_file(dirty) == "token=[REDACTED]\n");
    CHECK(read_file(clean) == "nothing to hide\n");
    // Untouched when clean; replaced by rename (a new inode) keeping its mode when not.
    CHECK(stat_of(clean).st_ino == clean_before.st_ino);
    CHECK(stat_of(clean).st_mtime == clean_before.st_mtime);
    CHECK(stat_of(dirty).st_ino != dirty_before.st_ino);
    CHECK((stat_of(dirty).st_mode & 07777) == 0640);
    // No temporary file left beside them.
    CHECK(entries_in(logs) == 2);
    CHECK(entries_in(logs / "sub") == 1);

    SECTION("links are neither followed nor touched; a missing tree holds nothing") {
        const fs::path outside = dir.write("outside.txt", k_hf);
        fs::create_symlink(outside, logs / "link.log");
        CHECK(scrubber.scrub_tree(logs) == 0);
        CHECK(read_file(outside) == k_hf);
        CHECK_THROWS_AS(scrubber.scrub_file(logs / "link.log"), HarnessError);
        CHECK(read_file(outside) == k_hf);
        CHECK(scrubber.scrub_tree(dir.path() / "accounting") == 0);
    }
    SECTION("a missing file or a directory is an error naming it") {
        CHECK_THROWS_WITH(scrubber.scrub_file(logs / "missing.log"), Catch::Contains("missing.log"));
        CHECK_THROWS_WITH(scrubber.scrub_file(logs / "sub"), Catch::Contains("not a regular file"));
    }
}

TEST_CASE("a JSON record stays valid JSON when a secret looks like part of it", "[provenance]") {
    TempDir dir;
    const SecretScrubber scrubber = scrubber_of({"123456"});
    const fs::path record = dir.write("run.json", Json(Json::Object{{"seconds", Json(1234567)}, {"reason", Json("x123456y")}}).dump());
    CHECK(scrubber.scrub_json_file(record) == 1);
    const Json back = Json::parse(read_file(record));
    CHECK(back.string_or("reason") == "x[REDACTED]y");
    CHECK(back.find("seconds")->as_int() == 1234567);
    // Not JSON: scrubbed as text.
    const fs::path broken = dir.write("broken.json", "{\"a\": 123456");
    CHECK(scrubber.scrub_json_file(broken) == 1);
    CHECK(read_file(broken) == "{\"a\": [REDACTED]");
}

TEST_CASE("probe reports are read, then removed with whatever else is there", "[provenance]") {
    TempDir dir;
    const fs::path probe_dir = dir.path() / "probe";
    dir.write("probe/node2-1.json", R"({"format": 1, "hostname": "node2", "rank": 1, "tools": {"python": "3.11.2", "torch": 7},
        "environment": {"HF_TOKEN": ")" +
                                        k_hf + R"(", "RANK": "1", "ODD": 3}})");
    dir.write("probe/node1-0.json", R"({"hostname": "node1", "rank": 0, "tools": {}, "environment": {}})");
    dir.write("probe/broken-2.json", "{\"hostname\": ");
    dir.write("probe/norank-3.json", R"({"hostname": "node3", "rank": -1, "tools": {}, "environment": {}})");
    dir.write("probe/.probe-partial.tmp", "{");
    std::vector<std::string> problems;
    const std::vector<ProbeReport> reports = take_probe_reports(probe_dir, problems);
    CHECK_FALSE(fs::exists(probe_dir));
    REQUIRE(reports.size() == 2);
    CHECK(reports[0].hostname == "node1");
    CHECK(reports[1].hostname == "node2");
    CHECK(reports[1].rank == 1);
    CHECK(reports[1].environment.at("HF_TOKEN") == k_hf);
    CHECK(reports[1].environment.count("ODD") == 0);
    // Every known tool is present; what is not a string becomes null.
    CHECK(reports[1].tools.dump(false) ==
          R"({"cuda_driver":null,"jax":null,"libtpu":null,"nccl":null,"python":"3.11.2","torch":null})");
    CHECK(problems.size() == 2);
    CHECK(has(problems, "broken-2.json: not a probe report"));
    CHECK(has(problems, "norank-3.json: not a probe report: no \"rank\""));
    problems.clear();
    CHECK(take_probe_reports(probe_dir, problems).empty());
    CHECK(problems.empty());
}

TEST_CASE("provenance has the documented shape", "[provenance]") {
    const FakeRun fake;
    const std::vector<ProbeReport> probes = {probe("node1", 0, {{"RANK", "0"}, {"HF_TOKEN", k_hf}, {"PATH", "/bin"}}),
                                             probe("node1", 1, {{"RANK", "1"}}), probe("node0", 2, {{"RANK", "2"}})};
    const Json p = fake.provenance(probes);
    INFO(p.dump());
    CHECK(provenance_problems(p).empty());
    CHECK(p.find("format")->as_int() == 1);
    const Json& harness = *p.find("harness");
    CHECK(harness.string_or("version") == "0.1.0");
    CHECK(harness.string_or("commit") == std::string(40, 'c'));
    CHECK(harness.find("patch")->is_null());
    const Json& run = *p.find("run");
    CHECK(run.string_or("id") == "tiny-20261123T021839Z-abc123");
    CHECK(run.string_or("cluster") == "slurm-local");
    CHECK(run.string_or("executor") == "slurm");
    CHECK(run.string_or("state") == "completed");
    CHECK(run.string_or("started") == "2026-11-23T02:18:41Z");
    CHECK(run.string_or("finished") == "2026-11-23T02:19:00Z");
    CHECK(p.find("inputs")->as_array().size() == 2);
    CHECK(p.find("sources")->dump(false) ==
          R"([{"commit":")" + std::string(40, 'a') + R"(","ref":"v0.2.0","repo":"https://github.com/pytorch/torchtitan"}])");
    CHECK(p.find("container")->string_or("digest") == "sha256:" + std::string(64, 'b'));
    CHECK(p.find("container")->string_or("runtime") == "podman-hpc");
    // Hosts sorted by name, ranks grouped.
    const auto& hosts = p.find("hosts")->as_array();
    REQUIRE(hosts.size() == 2);
    CHECK(hosts[0].string_or("hostname") == "node0");
    CHECK(hosts[1].find("ranks")->dump(false) == "[0,1]");
    CHECK(hosts[1].find("tools")->string_or("torch") == "1.13.0");
    // The lowest rank's environment, filtered.
    CHECK(p.find("environment")->dump(false) == R"({"RANK":"0"})");
    CHECK(p.find("scheduler")->dump(false) == R"({"job_ids":["42"],"nodes":"c1"})");
    CHECK(p.find("reproduces") == nullptr);

    SECTION("without probes, the harness's own environment; without an image, no container") {
        FakeRun plain;
        plain.run.plan.container_image.clear();
        plain.run.plan.source_repo.clear();
        plain.facts.harness.dirty = true;
        plain.facts.reproduces = ReproducedBundle{"tiny.tar.zst", std::string(64, 'f')};
        const Json q = plain.provenance();
        CHECK(provenance_problems(q).empty());
        CHECK(q.find("environment")->dump(false) == R"({"OMP_NUM_THREADS":"4"})");
        CHECK(q.find("container")->is_null());
        CHECK(q.find("sources")->as_array().empty());
        CHECK(q.find("hosts")->as_array().empty());
        CHECK(q.find("harness")->string_or("patch") == "harness.patch");
        CHECK(q.find("reproduces")->string_or("manifest_sha256") == std::string(64, 'f'));
    }
}

TEST_CASE("an image digest is read only from a reference pinned by it", "[provenance]") {
    const std::string hex(64, '0');
    CHECK(container_digest("nvcr.io/nvidia/pytorch@sha256:" + hex) == "sha256:" + hex);
    CHECK(container_digest("registry:5000/a/b:tag@sha256:" + hex) == "sha256:" + hex);
    CHECK_FALSE(container_digest("nvcr.io/nvidia/pytorch:24.05-py3").has_value());
    CHECK_FALSE(container_digest("img@sha256:" + hex.substr(1)).has_value());
    CHECK_FALSE(container_digest("img@sha256:" + std::string(64, 'G')).has_value());
    CHECK_FALSE(container_digest("").has_value());
}

TEST_CASE("provenance problems name every bad pin and field", "[provenance]") {
    const std::string commit(40, 'c');
    CHECK(provenance_problems(FakeRun().provenance()).empty());
    CHECK(has(provenance_problems(with(commit, "abc123")), "harness.commit: expected 40 lowercase hex digits or null"));
    CHECK(has(provenance_problems(with(commit, std::string(40, 'C'))), "harness.commit"));
    CHECK(has(provenance_problems(with(std::string(40, 'a'), "v0.2.0")), "sources[0].commit: expected 40 lowercase hex"));
    CHECK(has(provenance_problems(with(std::string(64, 'd'), std::string(63, 'd'))), "inputs[0].sha256: expected 64"));
    CHECK(has(provenance_problems(with("sha256:" + std::string(64, 'b'), "sha256:xyz")), "container.digest: expected sha256: and 64"));
    CHECK(has(provenance_problems(with("\"2026-11-23T02:18:41Z\"", "\"yesterday\"")), "run.started: expected a UTC time"));
    CHECK(has(provenance_problems(with("\"OMP_NUM_THREADS\"", "\"HF_TOKEN\"")), "environment.HF_TOKEN: a secret name"));
    CHECK(has(provenance_problems(with("\"OMP_NUM_THREADS\"", "\"PATH\"")), "environment.PATH: not a name the capture rules keep"));
    CHECK(has(provenance_problems(with("\"dirty\": false", "\"dirty\": true")), "harness.patch: expected \"harness.patch\""));
    CHECK(has(provenance_problems(with("\"dirty\": false", "\"dirty\": \"no\"")), "harness.dirty: expected true or false"));
    CHECK(has(provenance_problems(with("\"job_ids\"", "\"jobs\"")), "scheduler.job_ids: missing"));
    CHECK(has(provenance_problems(with("\"inputs\": [", "\"inputs\": 3, \"x\": [")), "inputs: expected an array, got a number"));
    CHECK(has(provenance_problems(with("\"hosts\": []", "\"hosts\": [{\"ranks\": [-1], \"tools\": {}}]")),
              "hosts[0].hostname: missing"));
    CHECK(has(provenance_problems(with("\"hosts\": []", "\"hosts\": [{\"ranks\": [-1], \"tools\": {}}]")),
              "hosts[0].ranks: expected a non-empty array"));
    CHECK(has(provenance_problems(with("\"hosts\": []", "\"hosts\": [{\"ranks\": [0], \"tools\": {}}]")),
              "hosts[0].tools.python: missing"));
    // Every problem at once, not just the first.
    const std::vector<std::string> many = provenance_problems(with("\"harness\": {", "\"harnes\": {"));
    CHECK(has(many, "harness: missing"));
    CHECK(provenance_problems(Json::parse(R"({"format": 1})")).size() == 8);
    CHECK(has(provenance_problems(Json::parse(R"({"format": 2})")), "format: 2 is not a format this harness reads"));
    CHECK(has(provenance_problems(Json::parse("[1]")), "expected a JSON object"));
}

TEST_CASE("the provenance file check covers the file and the patch it names", "[provenance]") {
    TempDir dir;
    CHECK(check_provenance_file(dir.path()) == std::vector<std::string>{"provenance.json: missing"});
    dir.write("provenance.json", "{\"format\": ");
    CHECK(has(check_provenance_file(dir.path()), "provenance.json: invalid JSON"));
    FakeRun dirty;
    dirty.facts.harness.dirty = true;
    dir.write("provenance.json", dirty.provenance().dump());
    CHECK(check_provenance_file(dir.path()) ==
          std::vector<std::string>{"harness.patch: named by provenance.json (harness.patch) but missing"});
    dir.write("harness.patch", "diff\n");
    CHECK(check_provenance_file(dir.path()).empty());
    dir.write("provenance.json", with(std::string(40, 'c'), "HEAD").dump());
    CHECK(has(check_provenance_file(dir.path()), "provenance.json: harness.commit"));
}

TEST_CASE("recording provenance scrubs the run directory and removes the raw probes", "[provenance]") {
    TempDir dir;
    const fs::path run_dir = dir.path();
    FakeRun fake;
    fake.facts.harness.dirty = true;
    fake.facts.harness.patch = "+ token " + k_hf + "\n";
    // The harness knows HF_TOKEN; only the job's environment knows WANDB_API_KEY.
    dir.write("rendered/probe/node1-0.json", Json(Json::Object{{"hostname", Json("node1")},
                                                               {"rank", Json(0)},
                                                               {"tools", Json::object()},
                                                               {"environment", Json(Json::Object{{"WANDB_API_KEY", Json(k_wandb)},
                                                                                                 {"MASTER_ADDR", Json("node1")},
                                                                                                 {"SHORT_TOKEN", Json("abc")},
                                                                                                 {"PATH", Json("/bin")}})}})
                                                 .dump());
    dir.write("rendered/launch.sh", "#!/bin/bash\n");
    dir.write("logs/rank_0.log", "hf " + k_hf + "\nwandb " + k_wandb + "\nabc stays\n");
    dir.write("accounting/sacct.txt", "42|" + k_wandb + "\n");
    fake.record.reason = "log tail: " + k_hf;
    fake.record.save(run_dir);

    std::ostringstream out;
    record_provenance(run_dir, fake.run, fake.record, fake.facts, out);
    CHECK(out.str().find("4 occurrence(s)") != std::string::npos);
    CHECK_FALSE(fs::exists(run_dir / "rendered" / "probe"));
    CHECK(fs::exists(run_dir / "rendered" / "launch.sh"));
    for (const auto& entry : fs::recursive_directory_iterator(run_dir)) {
        if (entry.is_regular_file()) {
            const std::string text = read_file(entry.path());
            INFO(entry.path().string());
            CHECK(text.find(k_hf) == std::string::npos);
            CHECK(text.find(k_wandb) == std::string::npos);
        }
    }
    CHECK(read_file(run_dir / "logs" / "rank_0.log") == "hf [REDACTED]\nwandb [REDACTED]\nabc stays\n");
    CHECK(Json::parse(read_file(run_dir / "run.json")).string_or("reason") == "log tail: [REDACTED]");
    CHECK(read_file(run_dir / "harness.patch") == "+ token [REDACTED]\n");
    const Json p = Json::parse(read_file(run_dir / "provenance.json"));
    INFO(p.dump());
    CHECK(check_provenance_file(run_dir).empty());
    CHECK(p.find("environment")->dump(false) == R"({"MASTER_ADDR":"node1"})");
    CHECK(p.find("hosts")->as_array().size() == 1);
}

TEST_CASE("provenance facts pin every input relative to the harness home", "[provenance]") {
    const fs::path home = harness_home();
    const WorkloadCard card = WorkloadCard::load(home / "workloads" / "tiny-ddp" / "tiny-ddp.yaml");
    const ClusterProfile cluster = ClusterProfile::load(home / "clusters", "local");
    Diagnostics diagnostics;
    const RenderedRun run = render_run(card, cluster, make_plan(card, cluster, false, diagnostics), home);
    REQUIRE(run.find("ccl_probe.py") != nullptr);
    const ProvenanceFacts facts = collect_provenance_facts(run, home);
    std::vector<std::string> paths;
    for (const InputPin& input : facts.inputs) {
        paths.push_back(input.path);
        CHECK(input.sha256.size() == 64);
    }
    INFO(joined(paths));
    CHECK(std::is_sorted(paths.begin(), paths.end()));
    CHECK(has(paths, "templates/torch-ddp/local/launch.sh.mustache"));
    CHECK(has(paths, "templates/common/ccl_probe.py"));
    CHECK(has(paths, "clusters/local.yaml"));
    CHECK(has(paths, "workloads/tiny-ddp/train.py"));
    CHECK(std::none_of(paths.begin(), paths.end(), [](const std::string& path) { return path.front() == '/'; }));
    // Whatever the checkout looks like, the record of it is well-formed.
    FakeRun fake;
    fake.facts = facts;
    CHECK(provenance_problems(fake.provenance()).empty());
}
