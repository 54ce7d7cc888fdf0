// mfu --reference against CCL-Bench's tools/mfu/mfu.py @1d257f07b35b (the commit in the local
// mirror). Every expected number is what the tool printed for the same fixture, written by
//   git --git-dir=<ccl-bench mirror> archive HEAD tools | tar x -C T
//   /usr/bin/python3 tests/unit/mfu_reference_expected.py T/tools SCRATCH
// (its output: inference_active 68.023, serving 1060.943, active_spelling 1060.943,
// arch_under_model 353.6477, empty_model_arch 1060.943, latency 0.2051, round_half 2.0002,
// no_json_source -1.0, zero_batch 265.2357, other_names 1183.3595). The default mode is checked
// beside it where it keeps its own reading.
#include "metrics/metrics.hpp"
#include "test_context.hpp"

#include <catch2/catch.hpp>
#include <cmath>
#include <string>

using namespace harness;
using namespace harness::metrics;
using harness::test::TempDir;

namespace {

// Inner ProfilerStep#N means: rank 0 (120 + 140) / 2 = 130 µs, rank 1 (150 + 170) / 2 = 160 µs.
const char* const k_rank0 = R"({"traceEvents": [
{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": 100, "dur": 120},
{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 1, "tid": 1, "ts": 220, "dur": 140},
{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#4", "pid": 1, "tid": 1, "ts": 360, "dur": 160}]}
)";
const char* const k_rank1 = R"({"traceEvents": [
{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 90},
{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": 90, "dur": 150},
{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 1, "tid": 1, "ts": 240, "dur": 170},
{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#4", "pid": 1, "tid": 1, "ts": 410, "dur": 200}]}
)";

const std::string k_arch = "num_params: 1000000000, num_params_embedding: 10000000, num_layers: 4, head_dim: 64, num_heads: 8";

std::string card(const std::string& model, const std::string& data = "{batch_size: 4, seq_len: 128}",
                 const std::string& traces = "[json]") {
    return "workload:\n  model: " + model + "\n  data: " + data +
           "\n  hardware: {xpu_spec: {type: GPU, model: nvidia_h100, total_count: 2}}\nmetric_source: {traces: " + traces + "}\n";
}

/// A trace directory with the card and rank0_trace.json, rank1_trace.json.
fs::path case_dir(const TempDir& dir, const std::string& name, const std::string& card_text) {
    dir.write(name + "/card.yaml", card_text);
    dir.write(name + "/rank0_trace.json", k_rank0);
    dir.write(name + "/rank1_trace.json", k_rank1);
    return dir.path() / name;
}

MetricValue mfu(const fs::path& path, bool reference) {
    MetricsOptions options;
    options.reference = reference;
    options.metrics = {"mfu"};
    const MetricsReport report = compute_metrics(path, options);
    REQUIRE(report.metrics.size() == 1);
    return report.metrics.front();
}

double value_of(const fs::path& path, bool reference) {
    const MetricValue value = mfu(path, reference);
    INFO(value.why);
    REQUIRE(value.value.has_value());
    return *value.value;
}

bool near(double got, double want) { return std::fabs(got - want) <= 1e-12 * std::max(std::fabs(got), std::fabs(want)); }

// The card's constants: L·H·Q·S = 4 · 64 · 8 · 128, N_emb = 1e7, batch 4, 2 × H100 at 989 TFLOP/s.
constexpr double k_attention = 4.0 * 64 * 8 * 128;
constexpr double k_peak = 989e12 * 2;
constexpr double k_step_both = 145e-6; // (130 + 160) / 2 µs

double percent(double flop_per_token, double step_s) { return flop_per_token * (4.0 * 128 / step_s) / k_peak * 100.0; }

} // namespace

TEST_CASE("mfu --reference: an inference card's num_params_active counts in both phases", "[mfu_reference][metrics]") {
    TempDir dir;
    const fs::path path = case_dir(dir, "c", card("{phase: inference, model_arch: {" + k_arch + ", num_params_active: 200000000}}"));
    // tools/mfu/mfu.py:229 `effective_params = N_active or N`, then :239 for inference.
    CHECK(value_of(path, true) == 68.023); // metric_cal printed 68.023
    CHECK(near(value_of(path, false), percent(2 * (2e8 - 1e7) + 4 * k_attention, k_step_both)));
}

TEST_CASE("mfu --reference: phase serving takes the training formula", "[mfu_reference][metrics]") {
    TempDir dir;
    const fs::path path = case_dir(dir, "c", card("{phase: serving, model_arch: {" + k_arch + "}}"));
    // tools/mfu/mfu.py:236 `is_inference = phase == "inference"`: anything else is training.
    const MetricValue reference = mfu(path, true);
    REQUIRE(reference.value.has_value());
    CHECK(*reference.value == 1060.943); // metric_cal printed 1060.943
    // The default mode counts serving as inference and says how the tool differs.
    const MetricValue standard = mfu(path, false);
    REQUIRE(standard.value.has_value());
    CHECK(near(*standard.value, percent(2 * (1e9 - 1e7) + 4 * k_attention, k_step_both)));
    CHECK_THAT(standard.notes.front(), Catch::Contains("serving"));
}

TEST_CASE("mfu --reference: the num_active_params spelling is not read", "[mfu_reference][metrics]") {
    TempDir dir;
    const fs::path path = case_dir(dir, "c", card("{phase: training, model_arch: {" + k_arch + ", num_active_params: 200000000}}"));
    // tools/mfu/mfu.py:168 reads arch.get("num_params_active") only, so N = 1e9 counts.
    CHECK(value_of(path, true) == 1060.943); // metric_cal printed 1060.943
    // The default mode takes the spelling as the active count, with a note.
    const MetricValue standard = mfu(path, false);
    REQUIRE(standard.value.has_value());
    CHECK(near(*standard.value, percent(6 * (2e8 - 1e7) + 12 * k_attention, k_step_both)));
    CHECK_THAT(standard.notes.front(), Catch::Contains("num_active_params"));
}

TEST_CASE("mfu --reference: architecture fields directly under workload.model", "[mfu_reference][metrics]") {
    TempDir dir;
    // tools/mfu/mfu.py:157 `arch = model_cfg.get("model_arch") or model_cfg`.
    SECTION("no model_arch") {
        const fs::path path = case_dir(dir, "c", card("{phase: inference, " + k_arch + "}"));
        CHECK(value_of(path, true) == 353.6477); // metric_cal printed 353.6477
        CHECK(near(value_of(path, false), percent(2 * (1e9 - 1e7) + 4 * k_attention, k_step_both)));
    }
    SECTION("an empty model_arch is false to Python's `or`") {
        const fs::path path = case_dir(dir, "c", card("{phase: training, model_arch: {}, " + k_arch + "}"));
        CHECK(value_of(path, true) == 1060.943); // metric_cal printed 1060.943
    }
    SECTION("neither: the why names both places") {
        const fs::path path = case_dir(dir, "c", card("{phase: training}"));
        const MetricValue value = mfu(path, true);
        CHECK_FALSE(value.value.has_value());
        CHECK_THAT(value.why, Catch::Contains("model_arch is missing") && Catch::Contains("workload.model"));
    }
}

TEST_CASE("mfu --reference: a vLLM *.latency.json beside the traces is the step time", "[mfu_reference][metrics]") {
    TempDir dir;
    const fs::path path = case_dir(dir, "c", card("{phase: inference, model_arch: {" + k_arch + "}}"));
    // tools/mfu/mfu.py:113-125: sorted(glob("**/*.latency.json", recursive=True)), the first
    // whose avg_latency is not None; hidden directories are not globbed. mfu.py:192 then uses it.
    dir.write("c/a.latency.json", R"({"avg_latency": null})");
    dir.write("c/bench/b.latency.json", R"({"avg_latency": 0.25, "latencies": [0.2, 0.3]})");
    dir.write("c/bench/c.latency.json", R"({"avg_latency": 9.0})");
    dir.write("c/.hidden/0.latency.json", R"({"avg_latency": 7.0})");
    const MetricValue reference = mfu(path, true);
    REQUIRE(reference.value.has_value());
    CHECK(*reference.value == 0.2051); // metric_cal printed 0.2051
    CHECK_THAT(reference.notes.back(), Catch::Contains("b.latency.json"));
    // The default mode takes it too: batch × seq_len tokens are the batch, not one marker's step.
    CHECK(near(value_of(path, false), percent(2 * (1e9 - 1e7) + 4 * k_attention, 0.25)));
}

TEST_CASE("mfu --reference: only metric_source.traces json is computed", "[mfu_reference][metrics]") {
    TempDir dir;
    SECTION("nsys only: the tool returns -1 (tools/mfu/mfu.py:267-271)") {
        const fs::path path = case_dir(
            dir, "c", card("{phase: training, model_arch: {" + k_arch + "}}", "{batch_size: 4, seq_len: 128}", "[nsys]"));
        const MetricValue reference = mfu(path, true);
        CHECK_FALSE(reference.value.has_value());
        CHECK_THAT(reference.why, Catch::Contains("metric_source.traces"));
        CHECK(mfu(path, false).value.has_value()); // the default mode reads the traces it has
    }
    SECTION("json_tpu: the tool's XLA path (tools/mfu/mfu.py:264-265) is not reproduced") {
        const fs::path path = case_dir(
            dir, "c", card("{phase: training, model_arch: {" + k_arch + "}}", "{batch_size: 4, seq_len: 128}", "[json, json_tpu]"));
        const MetricValue reference = mfu(path, true);
        CHECK_FALSE(reference.value.has_value());
        CHECK_THAT(reference.why, Catch::Contains("json_tpu"));
    }
}

TEST_CASE("mfu --reference: a zero batch_size is 1", "[mfu_reference][metrics]") {
    TempDir dir;
    // tools/mfu/mfu.py:179 `batch_size = data_cfg.get("batch_size") or 1`.
    const fs::path path = case_dir(dir, "c", card("{phase: training, model_arch: {" + k_arch + "}}", "{batch_size: 0, seq_len: 128}"));
    CHECK(value_of(path, true) == 265.2357); // metric_cal printed 265.2357
}

TEST_CASE("mfu --reference: step time from rank* and kineto* files only", "[mfu_reference][metrics]") {
    TempDir dir;
    // tools/mfu/mfu.py:196-199 keeps the files whose names start with "rank" or "kineto"; the
    // torch trace worker1.123.pt.trace.json is not one, so the step time is rank 0's 130 µs.
    dir.write("c/card.yaml", card("{phase: training, model_arch: {" + k_arch + "}}"));
    dir.write("c/rank0_trace.json", k_rank0);
    dir.write("c/worker1.123.pt.trace.json", k_rank1);
    CHECK(value_of(dir.path() / "c", true) == 1183.3595); // metric_cal printed 1183.3595
    // The default mode reads both torch traces.
    CHECK(near(value_of(dir.path() / "c", false), percent(6 * (1e9 - 1e7) + 12 * k_attention, k_step_both)));
}

TEST_CASE("mfu --reference: rounds as Python's round(value, 4)", "[mfu_reference][metrics]") {
    TempDir dir;
    // tools/mfu/mfu.py:250 `round(..., 4)` rounds the exact binary value: here the value prints as
    // 2.00025 but lies below it, so Python gives 2.0002 where std::round(v * 1e4) / 1e4 gives 2.0003.
    const fs::path path = case_dir(dir, "c", card("{phase: inference, model_arch: {" + k_arch + "}}"));
    dir.write("c/run.latency.json", R"({"avg_latency": 0.02563625125504408})");
    CHECK(value_of(path, true) == 2.0002); // metric_cal printed 2.0002
}

TEST_CASE("--reference reads only kineto_trace_*.json when there are any", "[mfu_reference][metrics]") {
    TempDir dir;
    // tools/json_sampling.py:36-40 keeps the kineto_trace_* files when any exist, so rank1_trace.json
    // beside kineto_trace_0.json is never read: the step time is rank 0's 130 µs, and the tool's
    // metric_cal printed 1183.3595 on this directory (the helper's run of mfu_reference_expected.py).
    dir.write("k/card.yaml", card("{phase: training, model_arch: {" + k_arch + "}}"));
    dir.write("k/kineto_trace_0.json", k_rank0);
    dir.write("k/rank1_trace.json", k_rank1);
    CHECK(value_of(dir.path() / "k", true) == 1183.3595);
}
