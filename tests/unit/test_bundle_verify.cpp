#include "bundle/bundle_manifest.hpp"
#include "bundle/bundle_verify.hpp"
#include "bundle/trace_check.hpp"
#include "test_context.hpp"
#include "util/archive.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <fmt/format.h>

using namespace harness;
using harness::test::gzip;
using harness::test::TempDir;

namespace {

const std::string k_kineto = R"({"schemaVersion":1,"traceEvents":[)"
                             R"({"name":"ProfilerStep#3","ph":"X","cat":"user_annotation","ts":1,"dur":5},)"
                             R"({"name":"ProfilerStep#3","ph":"X","cat":"gpu_user_annotation","ts":2,"dur":5},)"
                             R"({"name":"ProfilerStep#4","ph":"X","cat":"user_annotation","ts":7,"dur":5},)"
                             R"({"name":"aten::mm","ph":"X","cat":"cpu_op","ts":8,"dur":1}]})"
                             "\n";

/// An XLA trace with one StepMarker, gzip'd.
const std::string k_xla_gz = gzip(
    R"({"traceEvents":[{"name":"StepMarker","ph":"X","ts":0,"dur":5},{"name":"all-reduce.1","ph":"X","ts":1,"dur":1}]})");

TraceCheck check_text(const TempDir& dir, const std::string& name, const std::string& text) {
    return check_trace(dir.write(name, text));
}

// A two-rank CPU card, valid at the default level, with trace_url naming the bundle.
const char* k_card = R"(version: 1
description: two ranks on CPU
hf_url:
trace_url: run-x.tar.zst
contributor: Test Person
contact: test@example.org
workload:
  model:
    phase: training
    moe: false
    granularity: model_fwd_bwd_pass
    model_family: tiny-mlp
    precision: fp32
    iteration: 12
  data:
    batch_size: 8
    seq_len: 32
    dataset: synthetic
  hardware:
    network_topo:
      topology: loopback
      bandwidth_gbps: [N/A, N/A]
    xpu_spec:
      type: CPU
      model: cpu
      total_count: 2
      count_per_node: 2
    driver_version: none
Model-executor:
  framework:
    name: torch-ddp
  model_plan_parallelization:
    dp_replicate: 2
    dp_shard: 1
    tp: 1
    pp: 1
    cp: 1
  communication_library:
    name: gloo
metric_source:
  traces: [json]
)";

const char* k_provenance = R"({
  "format": 1,
  "harness": {"version": "0.1.0", "commit": "0123456789abcdef0123456789abcdef01234567", "dirty": false, "patch": null},
  "run": {"id": "run-x", "card": "run", "cluster": "local", "executor": "local", "state": "completed",
          "started": "2026-11-23T02:18:39Z", "finished": "2026-11-23T02:18:45Z"},
  "inputs": [{"path": "clusters/local.yaml", "sha256": "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"}],
  "sources": [],
  "container": null,
  "hosts": [{"hostname": "localhost", "ranks": [0, 1], "tools": {"python": "3.11.2", "torch": "1.13.0",
             "nccl": null, "cuda_driver": null, "jax": null, "libtpu": null}}],
  "environment": {"OMP_NUM_THREADS": "1"},
  "scheduler": {"job_ids": []}
}
)";

void seal(const fs::path& bundle) { write_file_atomic(bundle / k_manifest_name, make_manifest(bundle, "0.1.0").dump()); }

/// TempDir/run-x/: everything docs/bundle.md asks for, sealed with its manifest.
fs::path make_bundle(const TempDir& dir) {
    dir.write("run-x/run-x.yaml", k_card);
    dir.write("run-x/kineto_trace_0.json", k_kineto);
    dir.write("run-x/kineto_trace_1.json", k_kineto);
    dir.write("run-x/scripts/launch.sh", "#!/bin/sh\necho run\n");
    dir.write("run-x/logs/rank_0.log", "step 1\n");
    dir.write("run-x/run.json", R"({"run_id": "run-x", "state": "completed"})");
    dir.write("run-x/provenance.json", k_provenance);
    seal(dir.path() / "run-x");
    return dir.path() / "run-x";
}

std::vector<std::string> lines(const BundleReport& report) {
    std::vector<std::string> out;
    for (const BundleProblem& problem : report.problems) {
        out.push_back(problem.path + ": " + problem.message);
    }
    return out;
}

bool names(const BundleReport& report, const std::string& path, const std::string& fragment = "") {
    return std::any_of(report.problems.begin(), report.problems.end(),
                       [&](const BundleProblem& p) { return p.path == path && p.message.find(fragment) != std::string::npos; });
}

void flip_byte(const fs::path& file, std::size_t at) {
    std::string text = read_file(file);
    REQUIRE(at < text.size());
    text[at] = static_cast<char>(text[at] ^ 0x01);
    write_file_atomic(file, text);
}

int error_code_of(const fs::path& bundle, const VerifyOptions& options, std::string& message) {
    try {
        verify_bundle(bundle, options);
    } catch (const HarnessError& e) {
        message = e.what();
        return e.code();
    }
    return 0;
}

} // namespace

// ---- trace_check ----

TEST_CASE("a Kineto trace reports its events and distinct ProfilerStep numbers", "[verify]") {
    TempDir dir;
    const TraceCheck check = check_text(dir, "kineto_trace_0.json", k_kineto);
    CHECK(check.problem.empty());
    CHECK(check.form == "kineto");
    CHECK(check.events == 4);
    CHECK(check.steps == 2); // the GPU-side copy of step 3 is not a third step
    CHECK(check.step_marker == "ProfilerStep#N");
    CHECK_FALSE(check.compressed);
}

TEST_CASE("a legacy autograd array is read as such", "[verify]") {
    TempDir dir;
    const TraceCheck check = check_text(
        dir, "kineto_trace_0.json",
        R"([{"name":"ProfilerStep#0","ph":"X","ts":0,"dur":5},{"name":"aten::add","ph":"X","ts":1,"dur":1}])");
    CHECK(check.problem.empty());
    CHECK(check.form == "legacy-array");
    CHECK(check.events == 2);
    CHECK(check.steps == 1);
}

TEST_CASE("XLA traces count MaxText's step frames, else StepMarker", "[verify]") {
    TempDir dir;
    SECTION("step frames win over StepMarker") {
        const TraceCheck check = check_text(
            dir, "host0.trace.json",
            R"({"displayTimeUnit":"ns","traceEvents":[{"name":"$core.py:331 step","ph":"X","ts":0,"dur":9},)"
            R"({"name":"$core.py:331 step","ph":"X","ts":10,"dur":9},{"name":"StepMarker","ph":"X","ts":0,"dur":9},)"
            R"({"name":"$core.py step","ph":"X","ts":0,"dur":9}]})");
        CHECK(check.problem.empty());
        CHECK(check.form == "xla");
        CHECK(check.steps == 2);
        CHECK(check.step_marker == "$core.py:331 step");
    }
    SECTION("gzip'd, inflated as it is read") {
        const TraceCheck check = check_text(dir, "host0.trace.json.gz", k_xla_gz);
        CHECK(check.problem.empty());
        CHECK(check.compressed);
        CHECK(check.form == "xla");
        CHECK(check.events == 2);
        CHECK(check.steps == 1);
        CHECK(check.step_marker == "StepMarker");
    }
    SECTION("a truncated gzip stream") {
        const TraceCheck check = check_text(dir, "host0.trace.json.gz", k_xla_gz.substr(0, 40));
        CHECK(check.problem.find("gzip") != std::string::npos);
    }
    SECTION("gzip under a plain name, and the reverse") {
        CHECK(check_text(dir, "host0.trace.json", k_xla_gz).problem.find("does not end in .gz") != std::string::npos);
        CHECK(check_text(dir, "host1.trace.json.gz", "{}").problem == "named .gz, but not gzip-compressed");
    }
}

TEST_CASE("inference traces fall back to the vLLM and SGLang step markers", "[verify]") {
    TempDir dir;
    const TraceCheck vllm = check_text(
        dir, "kineto_trace_0.json",
        R"x({"traceEvents":[{"name":"execute_context_0(1)","cat":"user_annotation","ph":"X","ts":0,"dur":1},)x"
        R"x({"name":"execute_context_1(1)","cat":"cpu_op","ph":"X","ts":1,"dur":1}]})x");
    CHECK(vllm.step_marker == "execute_context_*");
    CHECK(vllm.steps == 1);
    const TraceCheck sglang = check_text(dir, "kineto_trace_1.json",
                                         R"({"traceEvents":[{"name":"run_batch","cat":"python_function","ph":"X","ts":0,"dur":1}]})");
    CHECK(sglang.step_marker == "run_batch");
    CHECK(sglang.steps == 1);
}

TEST_CASE("a truncated trace says where it ends", "[verify]") {
    TempDir dir;
    for (const std::size_t cut : {std::size_t{40}, std::size_t{61}, k_kineto.size() / 2, k_kineto.size() - 3}) {
        const std::string text = k_kineto.substr(0, cut);
        const TraceCheck check = check_text(dir, "kineto_trace_0.json", text);
        INFO("cut at " << cut << ": " << text);
        CHECK(check.problem.rfind("truncated at byte " + std::to_string(cut) + ": the JSON ends inside ", 0) == 0);
        CHECK(check.form.empty());
    }
}

TEST_CASE("malformed JSON gives the byte offset of the error", "[verify]") {
    TempDir dir;
    // The missing comma is at byte 28, well before the end: not a truncation.
    const TraceCheck check = check_text(dir, "kineto_trace_0.json", R"({"traceEvents":[{"name":"a" "ts":1},{"name":"b"}]})");
    CHECK(check.problem.rfind("not valid JSON at byte 28: ", 0) == 0);
    // A truncated file with an earlier error is reported at the error, not as truncated.
    CHECK(
        check_text(dir, "kineto_trace_1.json", R"({"traceEvents":[{"a":tru}],"x":[)").problem.rfind("not valid JSON at byte 21", 0) ==
        0);
}

TEST_CASE("the wrong top-level type, no traceEvents, no steps and emptiness are problems", "[verify]") {
    TempDir dir;
    CHECK(check_text(dir, "kineto_trace_0.json", "42").problem.find("the top level is a number") == 0);
    CHECK(check_text(dir, "kineto_trace_0.json", "\"trace\"").problem.find("the top level is a string") == 0);
    CHECK(check_text(dir, "kineto_trace_0.json", R"({"events":[]})").problem == "a JSON object without a \"traceEvents\" array");
    CHECK(check_text(dir, "kineto_trace_0.json", "").problem == "empty file");
    const TraceCheck no_steps = check_text(dir, "kineto_trace_0.json", R"({"traceEvents":[{"name":"aten::mm"}]})");
    CHECK(no_steps.form == "kineto");
    CHECK(no_steps.events == 1);
    CHECK(no_steps.problem.rfind("no step markers", 0) == 0);
    CHECK(check_text(dir, "kineto_trace_0.json", R"({"traceEvents":[{"name":"ProfilerStep#1"},3]})").problem ==
          "an event that is not a JSON object (at byte 42)");
    CHECK(check_trace(dir.path() / "absent.json").problem.rfind("cannot read", 0) == 0);
}

TEST_CASE("trace file names: the ones bundles use and the common wrong ones", "[verify]") {
    CHECK(kineto_trace_rank("kineto_trace_12.json") == 12);
    CHECK(kineto_trace_rank("kineto_trace_01.json") == -1);
    CHECK(kineto_trace_rank("kineto_trace_.json") == -1);
    // Kept compressed by collection and pack: the CCL-Bench tools open .json.gz too (trace_names).
    CHECK(kineto_trace_rank("kineto_trace_1.json.gz") == 1);
    CHECK(is_trace_file_name("kineto_trace_1.json.gz"));
    CHECK_FALSE(is_trace_file_name("host.xplane.pb")); // not JSON: verify does not parse it
    CHECK(is_trace_file_name("t1v-n-0.trace.json.gz"));
    CHECK_FALSE(is_trace_file_name("worker0.1700000000.pt.trace.json"));
    CHECK(misplaced_trace_problem("rank3_trace.json").find("expected kineto_trace_3.json") != std::string::npos);
    CHECK(misplaced_trace_problem("rank-2.json.gz").find("expected kineto_trace_2.json.gz") != std::string::npos);
    CHECK(misplaced_trace_problem("kineto_trace_01.json").find("expected kineto_trace_1.json") != std::string::npos);
    CHECK(misplaced_trace_problem("kineto_trace_1.json.gz").empty());
    CHECK(misplaced_trace_problem("traces/kineto_trace_0.json").find("at the bundle's top level") != std::string::npos);
    CHECK(misplaced_trace_problem("worker0.1700000000.pt.trace.json").find("tensorboard") != std::string::npos);
    CHECK(misplaced_trace_problem("my_trace.json").find("expected kineto_trace_<rank>.json") != std::string::npos);
    CHECK(misplaced_trace_problem("run.json").empty());
    CHECK(misplaced_trace_problem("scripts/plan.json").empty());
}

// ---- verify_bundle ----

TEST_CASE("a complete bundle directory is valid", "[verify]") {
    TempDir dir;
    const fs::path bundle = make_bundle(dir);
    const BundleReport report = verify_bundle(bundle);
    INFO(Catch::Detail::stringify(lines(report)));
    CHECK(report.valid());
    CHECK(report.name == "run-x");
    CHECK(report.directory == bundle);
    CHECK(report.files == 8);
    REQUIRE(report.traces.size() == 2);
    CHECK(report.traces[0].path == "kineto_trace_0.json");
    CHECK(report.steps() == 4);
    // So is the directory it was unpacked into.
    CHECK(verify_bundle(dir.path()).valid());
    const Json json = bundle_report_to_json(report);
    CHECK(json.dump().find("\"valid\": true") != std::string::npos);
    CHECK(json.dump().find("\"form\": \"kineto\"") != std::string::npos);
}

TEST_CASE("one flipped byte in any file names that file", "[verify]") {
    TempDir dir;
    const fs::path bundle = make_bundle(dir);
    for (const char* file : {"run-x.yaml", "kineto_trace_1.json", "scripts/launch.sh", "logs/rank_0.log", "run.json",
                             "provenance.json", "manifest.json"}) {
        DYNAMIC_SECTION(file) {
            flip_byte(bundle / file, 5);
            const BundleReport report = verify_bundle(bundle);
            INFO(Catch::Detail::stringify(lines(report)));
            CHECK_FALSE(report.valid());
            CHECK(std::any_of(report.problems.begin(), report.problems.end(),
                              [&](const BundleProblem& p) { return p.path.rfind(file, 0) == 0; }));
        }
    }
}

TEST_CASE("a deleted file, an added file and several problems at once are all listed", "[verify]") {
    TempDir dir;
    const fs::path bundle = make_bundle(dir);
    fs::remove(bundle / "logs" / "rank_0.log");
    dir.write("run-x/notes.txt", "added\n");
    flip_byte(bundle / "kineto_trace_0.json", 30);
    std::string provenance = read_file(bundle / "provenance.json");
    provenance.replace(provenance.find("0123456789abcdef0123"), 20, "0123456789ABCDEF");
    write_file_atomic(bundle / "provenance.json", provenance);
    const BundleReport report = verify_bundle(bundle);
    INFO(Catch::Detail::stringify(lines(report)));
    CHECK(names(report, "logs/rank_0.log", "missing"));
    CHECK(names(report, "notes.txt", "not listed in the manifest"));
    CHECK(names(report, "kineto_trace_0.json", "sha256"));
    CHECK(names(report, "provenance.json", "harness.commit"));
    CHECK(report.problems.size() >= 5);
    CHECK(std::is_sorted(report.problems.begin(), report.problems.end(),
                         [](const BundleProblem& a, const BundleProblem& b) { return a.path < b.path; }));
}

TEST_CASE("content problems under a matching manifest are found", "[verify]") {
    TempDir dir;
    const fs::path bundle = make_bundle(dir);
    SECTION("a missing rank trace") {
        fs::remove(bundle / "kineto_trace_1.json");
        seal(bundle);
        const BundleReport report = verify_bundle(bundle);
        CHECK(names(report, "run-x.yaml:26:20", "card says total_count: 2 but the bundle has 1 rank trace (kineto_trace_0)"));
    }
    SECTION("a compressed trace is a trace, as pack keeps it") {
        fs::remove(bundle / "kineto_trace_1.json");
        dir.write("run-x/kineto_trace_1.json.gz", gzip(k_kineto));
        seal(bundle);
        const BundleReport report = verify_bundle(bundle);
        INFO(Catch::Detail::stringify(lines(report)));
        CHECK(report.valid());
        CHECK(report.traces.size() == 2);
    }
    SECTION("one rank twice, plain and compressed") {
        dir.write("run-x/kineto_trace_1.json.gz", gzip(k_kineto));
        seal(bundle);
        const BundleReport report = verify_bundle(bundle);
        CHECK(names(report, "kineto_trace_1.json.gz", "a second trace of rank 1 (also kineto_trace_1.json)"));
        CHECK_FALSE(names(report, "run-x.yaml:26:20", "total_count"));
    }
    SECTION("a renamed trace") {
        fs::rename(bundle / "kineto_trace_1.json", bundle / "rank1_trace.json");
        seal(bundle);
        const BundleReport report = verify_bundle(bundle);
        CHECK(names(report, "rank1_trace.json", "expected kineto_trace_1.json"));
        CHECK(names(report, "run-x.yaml:26:20", "total_count"));
    }
    SECTION("a truncated trace, a trace without steps, a legacy array") {
        dir.write("run-x/kineto_trace_0.json", k_kineto.substr(0, 50));
        dir.write("run-x/kineto_trace_1.json", R"({"traceEvents":[{"name":"aten::mm"}]})");
        dir.write("run-x/kineto_trace_2.json", R"([{"name":"ProfilerStep#1","ph":"X","ts":0,"dur":1}])");
        seal(bundle);
        const BundleReport report = verify_bundle(bundle);
        INFO(Catch::Detail::stringify(lines(report)));
        CHECK(names(report, "kineto_trace_0.json", "truncated at byte 50"));
        CHECK(names(report, "kineto_trace_1.json", "no step markers"));
        CHECK(names(report, "kineto_trace_2.json", "legacy autograd array"));
        CHECK(names(report, "run-x.yaml:26:20", "has 3 rank traces (kineto_trace_0..2)"));
    }
    SECTION("an invalid card, a wrong trace_url, a failed run, bad pins") {
        std::string card = k_card;
        card.replace(card.find("trace_url: run-x.tar.zst"), 24, "trace_url: other.tar.zst");
        card.replace(card.find("phase: training"), 15, "phase: trainin");
        dir.write("run-x/run-x.yaml", card);
        dir.write("run-x/run.json", R"({"run_id": "run-x", "state": "failed"})");
        std::string provenance = k_provenance;
        provenance.replace(provenance.find("bbbb"), 4, "bbb");
        provenance.replace(provenance.find("\"id\": \"run-x\""), 13, "\"id\": \"run-y\"");
        dir.write("run-x/provenance.json", provenance);
        seal(bundle);
        const BundleReport report = verify_bundle(bundle);
        INFO(Catch::Detail::stringify(lines(report)));
        CHECK(names(report, "run-x.yaml:9:12", "workload.model.phase: expected one of"));
        CHECK(names(report, "run-x.yaml:4:12", "trace_url: \"other.tar.zst\", expected \"run-x.tar.zst\""));
        CHECK(report.problems.size() == 5);
        CHECK(names(report, "run.json", "state is \"failed\""));
        CHECK(names(report, "provenance.json", "inputs[0].sha256"));
        CHECK(names(report, "provenance.json", "run.id: \"run-y\", but the bundle is \"run-x\""));
    }
    SECTION("traces that hold more or fewer steps than the planned window") {
        const std::size_t steps = check_trace(bundle / "kineto_trace_0.json").steps;
        REQUIRE(steps > 1);
        dir.write("run-x/scripts/plan.json", fmt::format(R"({{"profile": {{"active": {0}, "traced_steps": {0}}}}})", steps));
        seal(bundle);
        CHECK(verify_bundle(bundle).valid());
        dir.write("run-x/scripts/plan.json", fmt::format(R"({{"profile": {{"active": {0}, "traced_steps": {0}}}}})", steps - 1));
        seal(bundle);
        const BundleReport report = verify_bundle(bundle);
        INFO(Catch::Detail::stringify(lines(report)));
        CHECK(names(report, "kineto_trace_0.json",
                    fmt::format("{} ProfilerStep markers, but the run was planned to trace {}", steps, steps - 1)));
        CHECK(names(report, "kineto_trace_1.json", "planned to trace"));
        // A plan that counts no steps (serving engines) or predates traced_steps is not checked.
        dir.write("run-x/scripts/plan.json", R"({"profile": {"active": 1, "traced_steps": 0}})");
        seal(bundle);
        CHECK(verify_bundle(bundle).valid());
        dir.write("run-x/scripts/plan.json", R"({"profile": {"active": 1}})");
        seal(bundle);
        CHECK(verify_bundle(bundle).valid());
    }
    SECTION("a card named after something else, no provenance, no scripts") {
        fs::rename(bundle / "run-x.yaml", bundle / "card.yaml");
        fs::remove(bundle / "provenance.json");
        fs::remove_all(bundle / "scripts");
        seal(bundle);
        const BundleReport report = verify_bundle(bundle);
        CHECK(names(report, "run-x.yaml", "must be named after the bundle (found card.yaml)"));
        CHECK(names(report, "provenance.json", "missing"));
        CHECK(names(report, "scripts/", "missing"));
    }
}

TEST_CASE("a run directory is told to be packed", "[verify]") {
    TempDir dir;
    dir.write("results/run-x/rendered/launch.sh", "#!/bin/sh\n");
    dir.write("results/run-x/run.json", "{}");
    const BundleReport report = verify_bundle(dir.path() / "results" / "run-x");
    REQUIRE(report.problems.size() == 1);
    CHECK(report.problems[0].message.rfind("this is a run directory; pack it first: ccl-harness pack ", 0) == 0);
}

TEST_CASE("a directory that holds no bundle says so once", "[verify]") {
    TempDir dir;
    dir.write("photos/cat.jpg", "meow");
    const BundleReport report = verify_bundle(dir.path() / "photos");
    REQUIRE(report.problems.size() == 1);
    CHECK(report.problems[0].message.rfind("not a bundle: no manifest.json, run.json or card", 0) == 0);
}

TEST_CASE("a packed bundle is unpacked in a scratch directory that is always removed", "[verify]") {
    TempDir dir;
    const fs::path bundle = make_bundle(dir);
    const fs::path archive = dir.path() / "run-x.tar.zst";
    write_tar_zst(bundle, "run-x", archive, 1);
    fs::create_directories(dir.path() / "scratch");
    VerifyOptions options;
    options.scratch_root = dir.path() / "scratch";
    const auto scratch_is_empty = [&] { return fs::is_empty(dir.path() / "scratch"); };

    SECTION("valid") {
        const BundleReport report = verify_bundle(archive, options);
        INFO(Catch::Detail::stringify(lines(report)));
        CHECK(report.valid());
        CHECK(report.name == "run-x");
        CHECK(report.files == 8);
    }
    SECTION("unpacked for the caller, and kept") {
        VerifyOptions keep;
        keep.unpack_into = dir.path() / "kept";
        const BundleReport report = verify_bundle(archive, keep);
        CHECK(report.valid());
        CHECK(report.directory == dir.path() / "kept" / "run-x");
        CHECK(fs::is_regular_file(report.directory / "manifest.json"));
    }
    SECTION("truncated: a problem naming the archive, not unusable input") {
        const std::string bytes = read_file(archive);
        write_file_atomic(archive, bytes.substr(0, bytes.size() / 2));
        const BundleReport report = verify_bundle(archive, options);
        REQUIRE(report.problems.size() == 1);
        CHECK(report.problems[0].path.empty());
        CHECK(report.problems[0].message.rfind("truncated or damaged archive", 0) == 0);
    }
    SECTION("unusable input: exit 2, nothing left behind") {
        std::string message;
        CHECK(error_code_of(dir.path() / "absent.tar.zst", options, message) == k_exit_usage);
        CHECK(message.find("no such file or directory") != std::string::npos);
        const fs::path gz = dir.write("run-x.tar.gz", std::string("\x1f\x8b\x08\x00", 4) + "rest");
        CHECK(error_code_of(gz, options, message) == k_exit_usage);
        CHECK(message.find("gzip-compressed") != std::string::npos);
        const fs::path text = dir.write("notes.txt", "not an archive\n");
        CHECK(error_code_of(text, options, message) == k_exit_usage);
        CHECK(message.find("neither a .tar.zst nor a directory") != std::string::npos);
    }
    CHECK(scratch_is_empty());
}
