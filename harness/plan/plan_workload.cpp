#include "plan/plan_steps.hpp"

#include "util/strings.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <regex>

namespace harness {

namespace {

std::string model_from_hf_url(const std::string& url) {
    static const std::regex hf(R"(^https?://huggingface\.co/([^/\s]+/[^/\s?#]+))");
    std::smatch match;
    if (std::regex_search(url, match, hf)) {
        return match[1].str();
    }
    return {};
}

std::vector<std::string> trace_kinds(const WorkloadCard& card, const ClusterProfile& cluster) {
    std::vector<std::string> kinds;
    const bool tpu = cluster.accelerator_type == "TPU";
    const auto add = [&](const std::string& kind) {
        if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) {
            kinds.push_back(kind);
        }
    };
    for (const auto& raw : card.traces) {
        const std::string kind = to_lower(raw);
        if (kind == "nsys") {
            add(tpu ? "xplane" : "nsys");
        } else if (kind == "json_tpu" || kind == "xla_trace" || kind == "tpu_profiler" || tpu) {
            add("xplane");
        } else {
            add("torch_profiler");
        }
    }
    if (kinds.empty()) {
        add(tpu ? "xplane" : "torch_profiler");
    }
    return kinds;
}

} // namespace

void plan_batch(const WorkloadCard& card, Plan& plan, PlanOrigins& origin, PlanFindings& findings) {
    // How expert parallelism divides the ranks differs by framework: plan_framework checks it.
    const Parallelism& par = card.parallelism;
    const long long dp = par.dp_replicate * par.dp_shard;

    plan.batch_size = card.batch_size.value_or(0);
    origin.card("data.batch_size", "workload.data.batch_size");
    if (plan.batch_size > 0 && card.phase == "training") {
        const bool per_device = card.batch_size_scope == "per_device" || card.batch_size_scope == "per_rank" ||
                                card.batch_size_scope == "local";
        const long long global = per_device ? plan.batch_size * dp : plan.batch_size;
        if (global % dp != 0) {
            findings.problem("workload.data.batch_size",
                             fmt::format("global batch {} is not divisible by data parallelism {}", global, dp));
        }
        if (per_device) {
            origin.derived("data.batch_size",
                           fmt::format("workload.data.batch_size {} per device x data parallelism {}", plan.batch_size, dp));
        }
        plan.batch_size = global;
        plan.micro_batch_size = std::max(1LL, global / dp);
        origin.derived("data.micro_batch_size",
                       fmt::format("global batch {} / data parallelism {} (dp_replicate x dp_shard)", global, dp));
        if (par.pp > 1 && plan.micro_batch_size % par.pp_mb != 0) {
            findings.problem("Model-executor.model_plan_parallelization.pp_mb",
                             fmt::format("per-replica batch {} is not divisible by pp_mb {}", plan.micro_batch_size, par.pp_mb));
        }
    }
    if (plan.batch_size == 0) {
        plan.batch_size = 1;
        plan.micro_batch_size = 1;
        origin.fallback("data.batch_size", "1 when the card gives no batch size");
        origin.fallback("data.micro_batch_size", "1 when the card gives no batch size");
    }
    if (plan.micro_batch_size == 0) {
        plan.micro_batch_size = plan.batch_size;
        origin.derived("data.micro_batch_size", "batch_size (no data-parallel split outside training)");
    }
}

void plan_sequence_lengths(const WorkloadCard& card, Plan& plan, PlanOrigins& origin, PlanFindings& findings) {
    plan.seq_len = card.seq_len.value_or(0);
    origin.card("data.seq_len", "workload.data.seq_len");
    if (plan.seq_len == 0 && card.phase == "training") {
        findings.problem("workload.data.seq_len", "training needs a sequence length");
    }
    plan.input_len = card.input_len.value_or(plan.seq_len > 0 ? plan.seq_len : 1024);
    if (card.input_len) {
        origin.card("data.input_len", "workload.data.input_len");
    } else if (plan.seq_len > 0) {
        origin.derived("data.input_len", "workload.data.seq_len (no input_len given)");
    } else {
        origin.fallback("data.input_len", "1024 when the card gives neither input_len nor seq_len");
    }
    plan.output_len = card.output_len.value_or(128);
    origin.card_or_default("data.output_len", "workload.data.output_len", "128 when the card gives no output_len");
    if (plan.seq_len == 0) {
        plan.seq_len = plan.input_len;
        origin.derived("data.seq_len", "input_len (no seq_len given)");
    }
}

namespace {

/// The window a framework's benchmark can trace when the card names none (issue 27: 90 corpus
/// cards without a launch: section were refused for the training default's active 5).
struct DefaultWindow {
    ProfileWindow window;
    const char* why;
};

DefaultWindow default_profile_window(const std::string& framework) {
    if (framework == "vllm") {
        // bench latency --profile traces exactly one batch, after --num-iters-warmup batches.
        return {ProfileWindow{0, 5, 1}, "vllm bench latency's window: 5 warm-up batches, then the one it traces"};
    }
    if (framework == "sglang") {
        // bench_one_batch: the batch's first decode step, after its prefill.
        return {ProfileWindow{0, 1, 1}, "sglang bench_one_batch's window: the prefill, then the decode step it traces"};
    }
    return {ProfileWindow{}, "the harness's training window: wait 1, warm-up 5, active 5"};
}

} // namespace

void plan_profiling(const WorkloadCard& card, const ClusterProfile& cluster, Plan& plan, PlanOrigins& origin, PlanFindings& findings) {
    const DefaultWindow fallback = default_profile_window(plan.framework);
    const ProfileWindow given = card.launch.profile.value_or(fallback.window);
    plan.profile.wait = origin.in_card("launch.profile.wait") ? given.wait : fallback.window.wait;
    plan.profile.warmup = origin.in_card("launch.profile.warmup") ? given.warmup : fallback.window.warmup;
    plan.profile.active = origin.in_card("launch.profile.active") ? given.active : fallback.window.active;
    for (const char* part : {"wait", "warmup", "active"}) {
        origin.card_or_default(std::string("profile.") + part, std::string("launch.profile.") + part, fallback.why);
    }
    const long long window = plan.profile.wait + plan.profile.warmup + plan.profile.active;
    plan.steps = card.launch.steps.value_or(std::max(window, card.iteration.value_or(0)));
    if (card.launch.steps) {
        origin.card("steps", "launch.steps");
    } else {
        origin.derived("steps", fmt::format("max(profiling window {} = wait + warmup + active, workload.model.iteration {})", window,
                                            card.iteration.value_or(0)));
    }
    if (plan.steps < window) {
        findings.problem("launch.steps",
                         fmt::format("{} steps cannot hold the profiling window of {} (wait {} + warm-up {} + active {})", plan.steps,
                                     window, plan.profile.wait, plan.profile.warmup, plan.profile.active));
    }
    plan.trace_kinds = trace_kinds(card, cluster);
    if (plan.traces("torch_profiler") && plan.phase == "training") {
        plan.traced_steps = plan.profile.active;
        origin.derived("profile.traced_steps", "launch.profile.active: one ProfilerStep per training step traced");
    } else {
        origin.derived("profile.traced_steps", "0: no torch.profiler training steps to count (inference, or another tracer)");
    }
    if (card.traces.empty()) {
        origin.fallback("traces", "torch_profiler on GPU and CPU clusters, xplane on TPU (the card lists no metric_source.traces)");
    } else {
        origin.derived("traces", fmt::format("metric_source.traces mapped to what a {} cluster records", cluster.accelerator_type),
                       origin.card_location("metric_source.traces"));
    }
}

void plan_model(const WorkloadCard& card, Plan& plan, PlanOrigins& origin) {
    plan.model = !card.launch.model.empty() ? card.launch.model : model_from_hf_url(card.hf_url);
    if (!card.launch.model.empty()) {
        origin.card("model", "launch.model");
    } else if (!plan.model.empty()) {
        origin.derived("model", "the Hugging Face id in hf_url", origin.card_location("hf_url"));
    }
    if (plan.model.empty()) {
        plan.model = card.model_family;
        origin.derived("model", "workload.model.model_family (no launch.model, no Hugging Face hf_url)");
    }
}

} // namespace harness
