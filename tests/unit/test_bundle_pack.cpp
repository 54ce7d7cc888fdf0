#include "bundle/bundle_card.hpp"
#include "bundle/bundle_manifest.hpp"
#include "bundle/bundle_pack.hpp"
#include "test_context.hpp"
#include "util/archive.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/interrupt.hpp"
#include "util/sha256.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <atomic>
#include <catch2/catch.hpp>
#include <csignal>
#include <fstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

using namespace harness;
using harness::test::TempDir;

namespace {

const std::string k_id = "tiny-20260101T000000Z-abcdef";

const char* const k_card = R"(# tiny: a contributor's card
version: 1
description: tiny run
hf_url:
trace_url:   # filled in by pack
workload:
  hardware:
    xpu_spec:
      total_count: 2   # two ranks
metric_source:
  # what the tools read
  traces:
    - nsys   # was wrong
  metrics_specific_trace:
    - kernel_trace
# the end
)";

/// Trace-like text of about `size` bytes that zstd cannot shrink to nothing: several
/// compression jobs' worth, so that worker threads really split it.
std::string varied_text(std::size_t size) {
    std::string text = "{\"traceEvents\": [\n";
    std::uint64_t state = 88172645463325252ULL;
    while (text.size() < size) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        text += "{\"ph\": \"X\", \"name\": \"kernel_" + std::to_string(state % 997) +
                "\", \"ts\": " + std::to_string(state % 100000000) + ", \"dur\": " + std::to_string(state % 4093) + "},\n";
    }
    return text + "{}]}\n";
}

/// A completed run directory as `run` leaves it, with what the job left beside the scripts.
fs::path make_run(const TempDir& dir, const std::string& state = "completed") {
    const fs::path run = dir.path() / "results" / k_id;
    dir.write("results/" + k_id + "/run.json",
              R"({"format": 1, "reason": "", "run_id": ")" + k_id + R"(", "state": ")" + state + "\"}\n");
    dir.write("results/" + k_id + "/provenance.json", "{\"format\": 1}\n");
    dir.write("results/" + k_id + "/card.yaml", k_card);
    dir.write("results/" + k_id + "/plan.json", "{}\n");
    for (const char* file : {"card.yaml", "plan.json", "env.sh", "train.py"}) {
        dir.write("results/" + k_id + "/rendered/" + file, std::string(file) + "\n");
    }
    write_file_atomic(run / "rendered" / "launch.sh", "#!/bin/bash\necho hi\n", true);
    dir.write("results/" + k_id + "/rendered/probe/host.env", "HF_TOKEN=raw\n");
    dir.write("results/" + k_id + "/rendered/src/model.py", "checkout\n");
    fs::create_directories(run / "rendered" / "logs");
    dir.write("results/" + k_id + "/logs/rank_0.log", "step 1\n");
    dir.write("results/" + k_id + "/logs/rank_1.log", "step 1\n");
    dir.write("results/" + k_id + "/traces/kineto_trace_0.json", varied_text(std::size_t{3} << 20));
    dir.write("results/" + k_id + "/traces/kineto_trace_1.json", "{\"traceEvents\": []}\n");
    return run;
}

struct Listed {
    std::string path;
    unsigned perm = 0;
    std::string content;
};

std::vector<Listed> list_archive(const fs::path& file) {
    archive* a = archive_read_new();
    archive_read_support_filter_zstd(a);
    archive_read_support_format_tar(a);
    REQUIRE(archive_read_open_filename(a, file.c_str(), 65536) == ARCHIVE_OK);
    std::vector<Listed> entries;
    archive_entry* entry = nullptr;
    while (archive_read_next_header(a, &entry) == ARCHIVE_OK) {
        Listed listed{archive_entry_pathname(entry), archive_entry_perm(entry), {}};
        char buffer[65536];
        for (la_ssize_t n; (n = archive_read_data(a, buffer, sizeof buffer)) > 0;) {
            listed.content.append(buffer, static_cast<std::size_t>(n));
        }
        entries.push_back(listed);
    }
    archive_read_free(a);
    return entries;
}

/// Everything in `dir` whose name says it is a temporary file of ours.
std::vector<std::string> leftovers(const fs::path& dir) {
    std::vector<std::string> found;
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
        if (entry.path().filename().string().find(".tmp-") != std::string::npos) {
            found.push_back(entry.path().string());
        }
    }
    return found;
}

int exit_code_of(const std::function<void()>& call) {
    try {
        call();
    } catch (const HarnessError& error) {
        return error.code();
    }
    return 0;
}

} // namespace

TEST_CASE("packing a run twice gives the same bytes on any number of threads", "[pack]") {
    TempDir dir;
    const fs::path run = make_run(dir);
    PackOptions options;
    options.out_file = dir.path() / "a.tar.zst";
    options.threads = 1;
    const PackResult first = pack_run(run, options);
    options.out_file = dir.path() / "b.tar.zst";
    options.threads = 3;
    const PackResult second = pack_run(run, options);
    CHECK(first.sha256 == sha256_file(dir.path() / "a.tar.zst"));
    CHECK(second.sha256 == first.sha256);
    CHECK(sha256_file(dir.path() / "b.tar.zst") == first.sha256);
    CHECK(first.size == fs::file_size(dir.path() / "a.tar.zst"));
    CHECK(first.name == k_id);
    CHECK(first.trace_kinds == std::vector<std::string>{"json"});
}

TEST_CASE("the default output is <run id>.tar.zst beside the run directory", "[pack]") {
    TempDir dir;
    const fs::path run = make_run(dir);
    const PackResult result = pack_run(run.string() + "/");
    CHECK(result.bundle == dir.path() / "results" / (k_id + ".tar.zst"));
    CHECK(fs::is_regular_file(result.bundle));
}

TEST_CASE("the bundle has the documented layout with manifest.json last and right", "[pack]") {
    TempDir dir;
    const fs::path run = make_run(dir);
    PackOptions options;
    options.out_file = dir.path() / "out.tar.zst";
    const PackResult result = pack_run(run, options);
    const std::vector<Listed> entries = list_archive(options.out_file);
    std::vector<std::string> paths;
    for (const Listed& entry : entries) {
        paths.push_back(entry.path);
    }
    const std::string top = k_id + "/";
    CHECK(paths == std::vector<std::string>{top, top + "kineto_trace_0.json", top + "kineto_trace_1.json", top + "logs/",
                                            top + "logs/rank_0.log", top + "logs/rank_1.log", top + "provenance.json",
                                            top + "run.json", top + "scripts/", top + "scripts/card.yaml", top + "scripts/env.sh",
                                            top + "scripts/launch.sh", top + "scripts/plan.json", top + "scripts/train.py",
                                            top + k_id + ".yaml", top + "manifest.json"});
    CHECK(result.files == 13);
    for (const Listed& entry : entries) {
        INFO(entry.path);
        CHECK(entry.perm == (entry.path.back() == '/' || entry.path == top + "scripts/launch.sh" ? 0755u : 0644u));
    }
    CHECK(sha256_hex(entries.back().content) == result.manifest_sha256);
    CHECK(entries.back().content.find("\"harness_version\"") != std::string::npos);

    extract_tar_zst_safely(options.out_file, dir.path() / "unpacked");
    const fs::path bundle = dir.path() / "unpacked" / k_id;
    CHECK(check_manifest(bundle).empty());
    CHECK(read_file(bundle / "run.json") == read_file(run / "run.json"));
    CHECK(read_file(bundle / "scripts" / "card.yaml") == "card.yaml\n");
    const YAML::Node card = YAML::LoadFile((bundle / (k_id + ".yaml")).string());
    CHECK(card["trace_url"].as<std::string>() == k_id + ".tar.zst");
    CHECK(card["metric_source"]["traces"].size() == 1);
    CHECK(card["metric_source"]["traces"][0].as<std::string>() == "json");
}

TEST_CASE("optional parts go in when the run has them", "[pack]") {
    TempDir dir;
    const fs::path run = make_run(dir);
    dir.write("results/" + k_id + "/accounting/sacct.txt", "42|COMPLETED\n");
    dir.write("results/" + k_id + "/harness.patch", "diff --git a/x b/x\n");
    dir.write("results/" + k_id + "/provenance.json", R"({"format": 1, "harness": {"patch": "harness.patch"}})");
    dir.write("results/" + k_id + "/traces/nsys_0.nsys-rep", "nsys");
    dir.write("results/" + k_id + "/traces/plugins/profile/host.trace.json.gz", "tpu");
    PackOptions options;
    options.out_file = dir.path() / "out.tar.zst";
    const PackResult result = pack_run(run, options);
    CHECK(result.trace_kinds == std::vector<std::string>{"json", "nsys", "json_tpu"});
    extract_tar_zst_safely(options.out_file, dir.path() / "unpacked");
    const fs::path bundle = dir.path() / "unpacked" / k_id;
    CHECK(read_file(bundle / "accounting" / "sacct.txt") == "42|COMPLETED\n");
    CHECK(read_file(bundle / "harness.patch") == "diff --git a/x b/x\n");
    CHECK(fs::is_regular_file(bundle / "plugins" / "profile" / "host.trace.json.gz"));
    CHECK(check_manifest(bundle).empty());
}

TEST_CASE("pack refuses what is not a completed, recorded run and writes nothing", "[pack]") {
    TempDir dir;
    const fs::path run = make_run(dir);
    PackOptions options;
    options.out_file = dir.path() / "out.tar.zst";
    std::string why;
    SECTION("a run that failed") {
        dir.write("results/" + k_id + "/run.json",
                  R"({"run_id": ")" + k_id + R"(", "state": "failed", "reason": "traces missing: no kineto_trace_1.json"})");
        why = "is failed (traces missing: no kineto_trace_1.json); only a completed run is packed";
    }
    SECTION("a run still running") {
        dir.write("results/" + k_id + "/run.json", R"({"run_id": ")" + k_id + R"(", "state": "running"})");
        why = "is running";
    }
    SECTION("no run.json") {
        fs::remove(run / "run.json");
        why = "not a run directory (no run.json)";
    }
    SECTION("run.json that is not JSON") {
        dir.write("results/" + k_id + "/run.json", "{\"run_id\": ");
        why = "run.json: not valid JSON";
    }
    SECTION("a run id that is not one") {
        dir.write("results/" + k_id + "/run.json", R"({"run_id": "../escape", "state": "completed"})");
        why = "run_id: expected the run's id";
    }
    SECTION("no provenance") {
        fs::remove(run / "provenance.json");
        why = "made by an older harness or interrupted; rerun";
    }
    SECTION("a harness.patch named but missing") {
        dir.write("results/" + k_id + "/provenance.json", R"({"format": 1, "harness": {"patch": "harness.patch"}})");
        why = "names harness.patch";
    }
    SECTION("no traces") {
        fs::remove_all(run / "traces");
        fs::create_directories(run / "traces");
        why = "no traces";
    }
    SECTION("a symbolic link in logs") {
        fs::create_symlink("/etc/passwd", run / "logs" / "sneaky.log");
        why = "sneaky.log\": a symbolic link cannot go into a bundle";
    }
    SECTION("a symbolic link among the scripts") {
        fs::create_symlink("/etc/passwd", run / "rendered" / "extra.sh");
        why = "extra.sh\": a symbolic link";
    }
    SECTION("logs/ as a link to elsewhere") {
        fs::remove_all(run / "logs");
        fs::create_directories(dir.path() / "elsewhere");
        fs::create_directory_symlink(dir.path() / "elsewhere", run / "logs");
        why = "logs: not a directory (a bundle never follows links)";
    }
    SECTION("traces/ as a link to elsewhere") {
        fs::rename(run / "traces", dir.path() / "traces");
        fs::create_directory_symlink(dir.path() / "traces", run / "traces");
        why = "no traces/ directory (a link is not followed)";
    }
    SECTION("a trace that would replace a bundle file") {
        dir.write("results/" + k_id + "/traces/run.json", "{}");
        why = "would both be \"run.json\"";
    }
    SECTION("a trace that would replace the manifest") {
        dir.write("results/" + k_id + "/traces/manifest.json", "{}");
        why = "manifest.json";
    }
    SECTION("an output inside the run directory") {
        options.out_file = run / "logs" / "bundle.tar.zst";
        why = "inside the run directory";
    }
    SECTION("an output directory that does not exist") {
        options.out_file = dir.path() / "absent" / "out.tar.zst";
        why = "no such directory";
    }
    SECTION("an output that exists") {
        dir.write("out.tar.zst", "mine");
        why = "exists; pass --force to replace it";
    }
    try {
        pack_run(run, options);
        FAIL("packed although: " << why);
    } catch (const HarnessError& error) {
        CHECK_THAT(error.what(), Catch::Contains(why));
        CHECK(error.code() == k_exit_usage);
    }
    if (why.rfind("exists", 0) == 0) {
        CHECK(read_file(options.out_file) == "mine");
    } else {
        CHECK_FALSE(fs::exists(options.out_file));
    }
    CHECK(leftovers(dir.path()).empty());
}

TEST_CASE("--force replaces an existing bundle", "[pack]") {
    TempDir dir;
    const fs::path run = make_run(dir);
    PackOptions options;
    options.out_file = dir.write("out.tar.zst", "old");
    options.force = true;
    const PackResult result = pack_run(run, options);
    CHECK(sha256_file(options.out_file) == result.sha256);
}

TEST_CASE("a file that changes while it is packed leaves no bundle", "[pack]") {
    TempDir dir;
    const fs::path run = make_run(dir);
    const fs::path log = run / "logs" / "rank_0.log";
    write_file_atomic(log, std::string(std::size_t{32} << 20, 'x'));
    std::atomic<bool> stop{false};
    // The job is still writing its log: appends land while the file is read.
    std::thread writer([&] {
        std::ofstream out(log, std::ios::app | std::ios::binary);
        const std::string line(4096, 'y');
        while (!stop) {
            out << line << std::flush;
        }
    });
    PackOptions options;
    options.out_file = dir.path() / "out.tar.zst";
    std::string message;
    try {
        pack_run(run, options);
    } catch (const HarnessError& error) {
        message = error.what();
    }
    stop = true;
    writer.join();
    CHECK_THAT(message, Catch::Contains("rank_0.log: grew while it was packed"));
    CHECK_FALSE(fs::exists(options.out_file));
    CHECK(leftovers(dir.path()).empty());
}

TEST_CASE("an interrupted pack leaves no bundle and no temporary file", "[pack]") {
    TempDir dir;
    const fs::path run = make_run(dir);
    const fs::path out = dir.path() / "out.tar.zst";
    // The interrupt flag cannot be cleared, so the Ctrl-C arrives in a child process.
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        install_interrupt_handlers();
        PackOptions options;
        options.out_file = out;
        options.on_entry = [](const std::string& entry) {
            if (entry == "logs/") {
                ::raise(SIGINT); // mid-pack: traces are already in the temporary archive
            }
        };
        const int code = exit_code_of([&] { pack_run(run, options); });
        ::_exit(code);
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == k_exit_interrupted);
    CHECK_FALSE(fs::exists(out));
    CHECK(leftovers(dir.path()).empty());
}

TEST_CASE("trace kinds follow the file names", "[pack]") {
    CHECK(trace_kind("kineto_trace_0.json") == "json");
    CHECK(trace_kind("kineto_trace_12.json.gz") == "json");
    CHECK(trace_kind("nsys_3.nsys-rep") == "nsys");
    CHECK(trace_kind("nsys_3.sqlite") == "nsys");
    CHECK(trace_kind("t1v-n-0.trace.json.gz") == "json_tpu");
    CHECK(trace_kind("host.xplane.pb") == "json_tpu");
    CHECK(trace_kind("notes.txt").empty());
}

TEST_CASE("the effective card changes only trace_url and metric_source.traces", "[pack]") {
    const std::vector<std::string> kinds{"json", "nsys"};
    std::string card;
    std::string want;
    SECTION("block sequence, comments everywhere") {
        card = k_card;
        want = R"(# tiny: a contributor's card
version: 1
description: tiny run
hf_url:
trace_url: b.tar.zst   # filled in by pack
workload:
  hardware:
    xpu_spec:
      total_count: 2   # two ranks
metric_source:
  # what the tools read
  traces:
    - json
    - nsys
  metrics_specific_trace:
    - kernel_trace
# the end
)";
    }
    SECTION("flow sequence and a quoted url") {
        card = "trace_url: \"https://example.com/x\"\nmetric_source:\n  traces: [json_tpu]  # flow\n";
        want = "trace_url: b.tar.zst\nmetric_source:\n  traces: [json, nsys]  # flow\n";
    }
    SECTION("a sequence at its key's indentation") {
        card = "metric_source:\n  traces:\n  - json_tpu\n  - json\n  other: 1\ntrace_url: ~\n";
        want = "metric_source:\n  traces:\n  - json\n  - nsys\n  other: 1\ntrace_url: b.tar.zst\n";
    }
    SECTION("no traces under metric_source") {
        card = "metric_source:\n    metrics_specific_trace: [kernel_trace]\n\n# kept\ntrace_url: x\n";
        want = "metric_source:\n    metrics_specific_trace: [kernel_trace]\n    traces:\n      - json\n      - nsys\n\n# kept\n"
               "trace_url: b.tar.zst\n";
    }
    SECTION("no metric_source and no trace_url") {
        card = "version: 1  # v\n";
        want = "version: 1  # v\ntrace_url: b.tar.zst\nmetric_source:\n  traces:\n    - json\n    - nsys\n";
    }
    SECTION("a multi-line url") {
        card = "trace_url: >\n  folded\n  text\nversion: 1\nmetric_source:\n";
        want = "trace_url: b.tar.zst\nversion: 1\nmetric_source:\n  traces:\n    - json\n    - nsys\n";
    }
    CHECK(set_bundle_fields(card, kinds, "b.tar.zst", "card.yaml") == want);
}

TEST_CASE("a card the line edit cannot follow is re-emitted, still right", "[pack]") {
    const std::string card = "metric_source: {traces: [json_tpu], metrics_specific_trace: [kernel_trace]}\ntrace_url: x\n";
    const std::string text = set_bundle_fields(card, {"json"}, "b.tar.zst", "card.yaml");
    const YAML::Node node = YAML::Load(text);
    CHECK(node["trace_url"].as<std::string>() == "b.tar.zst");
    CHECK(node["metric_source"]["traces"][0].as<std::string>() == "json");
    CHECK(node["metric_source"]["metrics_specific_trace"][0].as<std::string>() == "kernel_trace");
    CHECK(set_bundle_fields(card, {"json"}, "b.tar.zst", "card.yaml") == text);
}

TEST_CASE("a card that is not YAML or not a mapping is an input error", "[pack]") {
    CHECK(exit_code_of([] { set_bundle_fields("a: [1,\n", {"json"}, "b", "card.yaml"); }) == k_exit_usage);
    CHECK(exit_code_of([] { set_bundle_fields("- 1\n", {"json"}, "b", "card.yaml"); }) == k_exit_usage);
    CHECK_THROWS_WITH(set_bundle_fields("a: [1,\n", {"json"}, "b", "card.yaml"), Catch::StartsWith("card.yaml:"));
}
