// ttft and tpot against CCL-Bench's tools/inference_latency/inference_latency.py @1d257f07b35b (the
// commit in the local mirror). Every expected number is what the tool printed for the same
// fixture, written by
//   git --git-dir=<ccl-bench mirror> archive HEAD tools | tar x -C T
//   /usr/bin/python3 tests/unit/inference_latency_expected.py T/tools SCRATCH
// (its output: vllm 0.0045 / 0.000315, vllm_one_pass 0.0065 / 0.0002, mixed 0.005 / 0.00032,
// sglang 0.0015 / 9.5e-05, xla 0.009 / 0.0005, training, serving and cpu_op_markers -1.0 / -1.0,
// output_len_1 0.005 / -1.0; -1.0 is the tool's "does not apply"). The fixtures below are the
// script's, byte for byte. The default mode is checked beside it where it reads more.
#include "metrics/metrics.hpp"
#include "test_context.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

using namespace harness;
using namespace harness::metrics;
using harness::test::TempDir;

namespace {

using Files = std::vector<std::pair<std::string, std::string>>;

const std::map<std::string, Files>& cases() {
    static const std::map<std::string, Files> k_cases = {
        {"vllm",
         {{"card.yaml", R"x(workload:
  model: {phase: inference}
  data: {batch_size: 8, output_len: 128}
  hardware: {xpu_spec: {type: GPU, model: nvidia_a100, total_count: 2}}
metric_source: {traces: [json]}
)x"},
          {"rank0_trace.json", R"x({"traceEvents": [
{"ph": "X", "cat": "user_annotation", "name": "execute_context_0(1)_generation_1(1)", "pid": 1, "tid": 1, "ts": 0, "dur": 5000},
{"ph": "X", "cat": "user_annotation", "name": "execute_context_1(1)_generation_1(1)", "pid": 1, "tid": 1, "ts": 5010, "dur": 300},
{"ph": "X", "cat": "user_annotation", "name": "execute_context_2(1)_generation_1(1)", "pid": 1, "tid": 1, "ts": 5320, "dur": 320},
{"ph": "X", "cat": "user_annotation", "name": "execute_context_3(1)_generation_1(1)", "pid": 1, "tid": 1, "ts": 5650, "dur": 340},
{"ph": "X", "cat": "user_annotation", "name": "execute_context_4(1)_generation_1(1)", "pid": 1, "tid": 1, "ts": 6000, "dur": 900}]}
)x"},
          {"rank1_trace.json", R"x({"traceEvents": [
{"ph": "X", "cat": "user_annotation", "name": "execute_context_0(1)_generation_1(1)", "pid": 1, "tid": 1, "ts": 0, "dur": 4000},
{"ph": "X", "cat": "user_annotation", "name": "execute_context_1(1)_generation_1(1)", "pid": 1, "tid": 1, "ts": 4010, "dur": 310},
{"ph": "X", "cat": "user_annotation", "name": "execute_context_2(1)_generation_1(1)", "pid": 1, "tid": 1, "ts": 4330, "dur": 330}]}
)x"}}},
        {"vllm_one_pass",
         {{"card.yaml", R"x(workload:
  model: {phase: inference}
  data: {batch_size: 8, output_len: 128}
  hardware: {xpu_spec: {type: GPU, model: nvidia_a100, total_count: 2}}
metric_source: {traces: [json]}
)x"},
          {"rank0_trace.json", R"x({"traceEvents": [
{"ph": "X", "cat": "user_annotation", "name": "execute_context_0(1)_generation_1(1)", "pid": 1, "tid": 1, "ts": 0, "dur": 7000}]}
)x"},
          {"rank1_trace.json", R"x({"traceEvents": [
{"ph": "X", "cat": "user_annotation", "name": "execute_context_0(1)_generation_1(1)", "pid": 1, "tid": 1, "ts": 0, "dur": 6000},
{"ph": "X", "cat": "user_annotation", "name": "execute_context_1(1)_generation_1(1)", "pid": 1, "tid": 1, "ts": 6010, "dur": 200}]}
)x"}}},
        {"mixed",
         {{"card.yaml", R"x(workload:
  model: {phase: inference}
  data: {batch_size: 8, output_len: 128}
  hardware: {xpu_spec: {type: GPU, model: nvidia_a100, total_count: 2}}
metric_source: {traces: [json]}
)x"},
          {"rank0_trace.json", R"x({"traceEvents": [
{"ph": "X", "cat": "user_annotation", "name": "execute_context_0(1)_generation_1(1)", "pid": 1, "tid": 1, "ts": 0, "dur": 5000},
{"ph": "X", "cat": "user_annotation", "name": "execute_context_1(1)_generation_1(1)", "pid": 1, "tid": 1, "ts": 5010, "dur": 300},
{"ph": "X", "cat": "user_annotation", "name": "execute_context_2(1)_generation_1(1)", "pid": 1, "tid": 1, "ts": 5320, "dur": 320},
{"ph": "X", "cat": "user_annotation", "name": "execute_context_3(1)_generation_1(1)", "pid": 1, "tid": 1, "ts": 5650, "dur": 340},
{"ph": "X", "cat": "user_annotation", "name": "execute_context_4(1)_generation_1(1)", "pid": 1, "tid": 1, "ts": 6000, "dur": 900}]}
)x"},
          {"rank1_trace.json", R"x({"traceEvents": [
{"ph": "X", "cat": "python_function", "name": "sglang/srt/managers/scheduler.py(1): run_batch", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
{"ph": "X", "cat": "python_function", "name": "sglang/srt/managers/scheduler.py(1): run_batch", "pid": 1, "tid": 1, "ts": 110, "dur": 50},
{"ph": "X", "cat": "python_function", "name": "sglang/srt/managers/scheduler.py(1): run_batch", "pid": 1, "tid": 1, "ts": 170, "dur": 60},
{"ph": "X", "cat": "python_function", "name": "sglang/srt/managers/scheduler.py(1): run_batch", "pid": 1, "tid": 1, "ts": 240, "dur": 70}]}
)x"}}},
        {"sglang",
         {{"card.yaml", R"x(workload:
  model: {phase: inference}
  data: {batch_size: 8, output_len: 128}
  hardware: {xpu_spec: {type: GPU, model: nvidia_a100, total_count: 2}}
metric_source: {traces: [json]}
)x"},
          {"rank0_trace.json", R"x({"traceEvents": [
{"ph": "X", "cat": "python_function", "name": "sglang/srt/managers/scheduler.py(1): run_batch", "pid": 1, "tid": 1, "ts": 0, "dur": 2000},
{"ph": "X", "cat": "python_function", "name": "sglang/srt/managers/scheduler.py(1): run_batch", "pid": 1, "tid": 1, "ts": 2010, "dur": 100},
{"ph": "X", "cat": "python_function", "name": "sglang/srt/managers/scheduler.py(1): run_batch", "pid": 1, "tid": 1, "ts": 2120, "dur": 120},
{"ph": "X", "cat": "python_function", "name": "sglang/srt/managers/scheduler.py(1): run_batch", "pid": 1, "tid": 1, "ts": 2250, "dur": 140}]}
)x"},
          {"rank1_trace.json", R"x({"traceEvents": [
{"ph": "X", "cat": "python_function", "name": "sglang/srt/managers/scheduler.py(1): run_batch", "pid": 1, "tid": 1, "ts": 0, "dur": 1000},
{"ph": "X", "cat": "python_function", "name": "sglang/srt/managers/scheduler.py(1): run_batch", "pid": 1, "tid": 1, "ts": 1010, "dur": 80}]}
)x"}}},
        {"xla",
         {{"card.yaml", R"x(workload:
  model: {phase: inference}
  data: {batch_size: 8, output_len: 128}
  hardware: {xpu_spec: {type: GPU, model: nvidia_a100, total_count: 2}}
metric_source: {traces: [json_tpu]}
)x"},
          {"rank0_trace.json", R"x({"traceEvents": [
{"ph": "X", "name": "$core.py:331 step", "pid": 1, "tid": 1, "ts": 0, "dur": 9000},
{"ph": "X", "name": "$core.py:331 step", "pid": 1, "tid": 1, "ts": 9010, "dur": 400},
{"ph": "X", "name": "$core.py:331 step", "pid": 1, "tid": 1, "ts": 9420, "dur": 500},
{"ph": "X", "name": "$core.py:331 step", "pid": 1, "tid": 1, "ts": 9930, "dur": 600},
{"ph": "X", "name": "$core.py:331 step", "pid": 1, "tid": 1, "ts": 10540, "dur": 700}]}
)x"}}},
        {"training",
         {{"card.yaml", R"x(workload:
  model: {phase: training}
  data: {batch_size: 8, output_len: 128}
  hardware: {xpu_spec: {type: GPU, model: nvidia_a100, total_count: 2}}
metric_source: {traces: [json]}
)x"},
          {"rank0_trace.json", R"x({"traceEvents": [
{"ph": "X", "cat": "user_annotation", "name": "execute_context_0(1)_generation_1(1)", "pid": 1, "tid": 1, "ts": 0, "dur": 5000},
{"ph": "X", "cat": "user_annotation", "name": "execute_context_1(1)_generation_1(1)", "pid": 1, "tid": 1, "ts": 5010, "dur": 300},
{"ph": "X", "cat": "user_annotation", "name": "execute_context_2(1)_generation_1(1)", "pid": 1, "tid": 1, "ts": 5320, "dur": 320},
{"ph": "X", "cat": "user_annotation", "name": "execute_context_3(1)_generation_1(1)", "pid": 1, "tid": 1, "ts": 5650, "dur": 340},
{"ph": "X", "cat": "user_annotation", "name": "execute_context_4(1)_generation_1(1)", "pid": 1, "tid": 1, "ts": 6000, "dur": 900}]}
)x"}}},
        {"serving",
         {{"card.yaml", R"x(workload:
  model: {phase: serving}
  data: {batch_size: 8, output_len: 128}
  hardware: {xpu_spec: {type: GPU, model: nvidia_a100, total_count: 2}}
metric_source: {traces: [json]}
)x"},
          {"rank0_trace.json", R"x({"traceEvents": [
{"ph": "X", "cat": "user_annotation", "name": "execute_context_0(1)_generation_1(1)", "pid": 1, "tid": 1, "ts": 0, "dur": 5000},
{"ph": "X", "cat": "user_annotation", "name": "execute_context_1(1)_generation_1(1)", "pid": 1, "tid": 1, "ts": 5010, "dur": 300},
{"ph": "X", "cat": "user_annotation", "name": "execute_context_2(1)_generation_1(1)", "pid": 1, "tid": 1, "ts": 5320, "dur": 320},
{"ph": "X", "cat": "user_annotation", "name": "execute_context_3(1)_generation_1(1)", "pid": 1, "tid": 1, "ts": 5650, "dur": 340},
{"ph": "X", "cat": "user_annotation", "name": "execute_context_4(1)_generation_1(1)", "pid": 1, "tid": 1, "ts": 6000, "dur": 900}]}
)x"}}},
        {"output_len_1",
         {{"card.yaml", R"x(workload:
  model: {phase: inference}
  data: {batch_size: 8, output_len: 1}
  hardware: {xpu_spec: {type: GPU, model: nvidia_a100, total_count: 2}}
metric_source: {traces: [json]}
)x"},
          {"rank0_trace.json", R"x({"traceEvents": [
{"ph": "X", "cat": "user_annotation", "name": "execute_context_0(1)_generation_1(1)", "pid": 1, "tid": 1, "ts": 0, "dur": 5000},
{"ph": "X", "cat": "user_annotation", "name": "execute_context_1(1)_generation_1(1)", "pid": 1, "tid": 1, "ts": 5010, "dur": 300},
{"ph": "X", "cat": "user_annotation", "name": "execute_context_2(1)_generation_1(1)", "pid": 1, "tid": 1, "ts": 5320, "dur": 320},
{"ph": "X", "cat": "user_annotation", "name": "execute_context_3(1)_generation_1(1)", "pid": 1, "tid": 1, "ts": 5650, "dur": 340},
{"ph": "X", "cat": "user_annotation", "name": "execute_context_4(1)_generation_1(1)", "pid": 1, "tid": 1, "ts": 6000, "dur": 900}]}
)x"}}},
        {"cpu_op_markers",
         {{"card.yaml", R"x(workload:
  model: {phase: inference}
  data: {batch_size: 8, output_len: 128}
  hardware: {xpu_spec: {type: GPU, model: nvidia_a100, total_count: 2}}
metric_source: {traces: [json]}
)x"},
          {"rank0_trace.json", R"x({"traceEvents": [
{"ph": "X", "cat": "cpu_op", "name": "execute_context_0(1)_generation_1(1)", "pid": 1, "tid": 1, "ts": 0, "dur": 5000},
{"ph": "X", "cat": "cpu_op", "name": "execute_context_1(1)_generation_1(1)", "pid": 1, "tid": 1, "ts": 5010, "dur": 300},
{"ph": "X", "cat": "cpu_op", "name": "execute_context_2(1)_generation_1(1)", "pid": 1, "tid": 1, "ts": 5320, "dur": 320}]}
)x"}}},
    };
    return k_cases;
}

/// ttft and tpot of case `name` in one mode: the value, or nothing with the reason.
std::pair<std::optional<double>, std::optional<double>> latency(const TempDir& dir, const std::string& name, bool reference) {
    for (const auto& [file, text] : cases().at(name)) {
        dir.write(name + "/" + file, text);
    }
    MetricsOptions options;
    options.reference = reference;
    options.metrics = {"ttft", "tpot"};
    const MetricsReport report = compute_metrics(dir.path() / name, options);
    REQUIRE(report.metrics.size() == 2);
    INFO(report.metrics[0].why << " / " << report.metrics[1].why);
    CHECK(report.metrics[0].metric == "ttft");
    CHECK(report.metrics[1].unit == "s");
    return {report.metrics[0].value, report.metrics[1].value};
}

bool near(std::optional<double> got, double want) {
    return got && std::fabs(*got - want) <= 1e-12 * std::max(std::fabs(*got), std::fabs(want));
}

} // namespace

TEST_CASE("ttft and tpot --reference are the CCL-Bench tool's", "[inference_latency][metrics]") {
    TempDir dir;
    const std::map<std::string, std::pair<double, double>> tool = {
        {"vllm", {0.0045, 0.000315}},     {"vllm_one_pass", {0.0065, 0.0002}},
        {"mixed", {0.005, 0.00032}},      {"sglang", {0.0015, 9.5e-05}},
        {"xla", {0.009, 0.0005}},         {"output_len_1", {0.005, -1.0}},
        {"training", {-1.0, -1.0}},       {"serving", {-1.0, -1.0}},
        {"cpu_op_markers", {-1.0, -1.0}},
    };
    for (const auto& [name, want] : tool) {
        INFO(name);
        const auto [ttft, tpot] = latency(dir, name, true);
        if (want.first < 0) {
            CHECK_FALSE(ttft);
        } else {
            CHECK(near(ttft, want.first));
        }
        if (want.second < 0) {
            CHECK_FALSE(tpot);
        } else {
            CHECK(near(tpot, want.second));
        }
    }
}

TEST_CASE("ttft and tpot in the default mode", "[inference_latency][metrics]") {
    TempDir dir;
    // The same where the tool reads what there is.
    for (const char* name : {"vllm", "vllm_one_pass", "sglang", "xla"}) {
        INFO(name);
        const auto reference = latency(dir, name, true);
        const auto standard = latency(dir, name, false);
        CHECK(standard.first == reference.first);
        CHECK(standard.second == reference.second);
    }
    // A serving run (the harness's phase: serving) is an inference run too.
    const auto serving = latency(dir, "serving", false);
    CHECK(near(serving.first, 0.005));
    CHECK(near(serving.second, 0.00032));
    // Each rank by its own engine's markers: (5000 + 100) / 2 µs, (320 + 55) / 2 µs.
    const auto mixed = latency(dir, "mixed", false);
    CHECK(near(mixed.first, 0.00255));
    CHECK(near(mixed.second, 0.0001875));
    // SGLang bench_one_batch's forward passes (the tool reads none): traced from the prefill,
    // the first pass is the first token; traced from mid-decode, there is no first token, and
    // every pass is a decode.
    const auto pass = [](const char* stage, int ts, int dur) {
        return fmt::format(
            R"x({{"ph": "X", "cat": "python_function", "name": "/sgl-workspace/sglang/python/sglang/bench_one_batch.py(512): {}", "pid": 1, "tid": 1, "ts": {}, "dur": {}}})x",
            stage, ts, dur);
    };
    const std::string card = R"(workload:
  model: {phase: inference}
  data: {batch_size: 8, output_len: 128}
  hardware: {xpu_spec: {type: GPU, model: nvidia_a100, total_count: 1}}
metric_source: {traces: [json]}
)";
    dir.write("bench_prefill/card.yaml", card);
    dir.write("bench_prefill/rank0_trace.json", "{\"traceEvents\": [" + pass("extend", 0, 3000) + ",\n" + pass("decode", 3010, 200) +
                                                    ",\n" + pass("decode", 3220, 220) + ",\n" + pass("decode", 3450, 900) + "]}");
    MetricsOptions options;
    options.metrics = {"ttft", "tpot"};
    MetricsReport report = compute_metrics(dir.path() / "bench_prefill", options);
    CHECK(near(report.metrics[0].value, 0.003));
    CHECK(near(report.metrics[1].value, 0.00021));
    dir.write("bench_mid/card.yaml", card);
    dir.write("bench_mid/rank0_trace.json", "{\"traceEvents\": [" + pass("decode", 0, 200) + "]}");
    report = compute_metrics(dir.path() / "bench_mid", options);
    CHECK_FALSE(report.metrics[0].value);
    CHECK(report.metrics[0].why.find("the traces start at a decode pass") == 0);
    CHECK(near(report.metrics[1].value, 0.0002));

    // Still nothing from markers no engine writes, a training card, or one output token.
    CHECK_FALSE(latency(dir, "cpu_op_markers", false).first);
    CHECK_FALSE(latency(dir, "training", false).first);
    CHECK_FALSE(latency(dir, "output_len_1", false).second);
}
