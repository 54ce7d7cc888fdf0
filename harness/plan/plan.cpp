#include "plan/plan.hpp"

#include "plan/container_plan.hpp"
#include "plan/frameworks/framework_plan.hpp"
#include "provenance/env_capture.hpp"
#include "util/home.hpp"

#include "card/schema.hpp"
#include "plan/tpu_slices.hpp"
#include "util/error.hpp"
#include "util/quote.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>
#include <regex>

namespace harness {

namespace {

/// Collects runnability problems at the severity the caller asked for.
class Findings final : public PlanFindings {
public:
    Findings(const WorkloadCard& card, bool strict, Diagnostics& out) : m_card(card), m_strict(strict), m_out(out) {}

    void problem(const std::string& field, const std::string& message) override {
        const std::string location = m_card.document().location(find_node(m_card.document().root(), field), field);
        if (m_strict) {
            m_out.error(location, field, message);
        } else {
            m_out.warning(location, field, message + " (an error with --strict)");
        }
    }

private:
    const WorkloadCard& m_card;
    bool m_strict;
    Diagnostics& m_out;
};

std::string model_from_hf_url(const std::string& url) {
    static const std::regex hf(R"(^https?://huggingface\.co/([^/\s]+/[^/\s?#]+))");
    std::smatch match;
    if (std::regex_search(url, match, hf)) {
        return match[1].str();
    }
    return {};
}

void add_env(std::vector<std::pair<std::string, std::string>>& env, const std::string& key, const std::string& value) {
    for (auto& entry : env) {
        if (entry.first == key) {
            entry.second = value;
            return;
        }
    }
    env.emplace_back(key, value);
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

long long tasks_per_node(const std::string& framework, long long ranks_per_node) {
    // torchrun and the serving engines start their own workers; plain DDP is one task a rank.
    if (framework == "torch-ddp") {
        return ranks_per_node;
    }
    return 1;
}

/// Fills Plan::origins next to each decision in make_plan, so the explanation cannot drift from
/// the rule that produced the value.
class Origins {
public:
    Origins(const WorkloadCard& card, const ClusterProfile& cluster, std::map<std::string, Origin>& out)
        : m_card(card), m_cluster(cluster), m_out(out) {}

    bool in_card(const std::string& card_field) const {
        const YAML::Node node = find_node(m_card.document().root(), card_field);
        return node.IsDefined() && !node.IsNull();
    }
    std::string card_location(const std::string& card_field) const {
        return m_card.document().location(find_node(m_card.document().root(), card_field), card_field);
    }
    void card(const std::string& field, const std::string& card_field) {
        const std::string where = card_location(card_field);
        const bool set = starts_with(where, "--set ");
        m_out[field] = Origin{set ? Origin::Kind::set : Origin::Kind::card, where, card_field};
    }
    void profile(const std::string& field, const std::string& key) {
        m_out[field] = Origin{Origin::Kind::profile, m_cluster.location(key), key};
    }
    void fallback(const std::string& field, const std::string& rule) { m_out[field] = Origin{Origin::Kind::default_rule, "", rule}; }
    void derived(const std::string& field, const std::string& from, const std::string& where = "") {
        m_out[field] = Origin{Origin::Kind::derived, where, from};
    }
    void card_or_default(const std::string& field, const std::string& card_field, const std::string& rule) {
        if (in_card(card_field)) {
            card(field, card_field);
        } else {
            fallback(field, rule);
        }
    }
    void card_or_profile(const std::string& field, const std::string& card_field, const std::string& key, const std::string& rule) {
        if (in_card(card_field)) {
            card(field, card_field);
        } else if (m_cluster.locations.count(key) != 0) {
            profile(field, key);
        } else {
            fallback(field, rule);
        }
    }

private:
    const WorkloadCard& m_card;
    const ClusterProfile& m_cluster;
    std::map<std::string, Origin>& m_out;
};

} // namespace

bool Plan::traces(const std::string& kind) const {
    return std::find(trace_kinds.begin(), trace_kinds.end(), kind) != trace_kinds.end();
}

std::string normalize_framework(const std::string& name) {
    std::string out = to_lower(trim(name));
    static const std::regex versioned(R"(^([a-z_-]*[a-z])-v?\d+(\.\d+)*$)");
    std::smatch match;
    if (std::regex_match(out, match, versioned)) {
        out = match[1].str();
    }
    std::replace(out.begin(), out.end(), '_', '-');
    if (out == "megatron" || out == "megatron-lm") {
        return "megatron-lm";
    }
    if (out == "ddp" || out == "pytorch-ddp" || out == "torch-ddp") {
        return "torch-ddp";
    }
    return out;
}

const char* to_string(Origin::Kind kind) {
    switch (kind) {
    case Origin::Kind::card: return "card";
    case Origin::Kind::set: return "set";
    case Origin::Kind::profile: return "profile";
    case Origin::Kind::default_rule: return "default";
    case Origin::Kind::derived: return "derived";
    }
    return "default";
}

std::string infer_target(const WorkloadCard& card, const fs::path& clusters_dir) {
    if (!card.launch.cluster.empty()) {
        return card.launch.cluster;
    }
    const std::string& model = card.xpu_model;
    std::vector<std::string> claimed;
    for (const std::string& name : list_clusters(clusters_dir)) {
        if (ClusterProfile::load(clusters_dir, name).is_default_for(model)) {
            claimed.push_back(name);
        }
    }
    if (claimed.size() == 1) {
        return claimed.front();
    }
    if (claimed.size() > 1) {
        throw input_error(fmt::format("{}: clusters {} all list workload.hardware.xpu_spec.model {} in accelerator.default_for; "
                                      "pass --cluster NAME or set launch.cluster",
                                      card.document().display_name(), join(claimed, ", "), enquote(model)));
    }
    throw input_error(fmt::format("{}: cannot tell the target from workload.hardware.xpu_spec.model {}; "
                                  "pass --cluster NAME or set launch.cluster",
                                  card.document().display_name(), enquote(model.empty() ? "(missing)" : model)));
}

ClusterProfile resolve_cluster(const WorkloadCard& card, const std::string& cluster_option, ClusterChoice* choice) {
    return resolve_cluster(card, cluster_option, harness_home(), choice);
}

ClusterProfile resolve_cluster(const WorkloadCard& card, const std::string& cluster_option, const fs::path& home,
                               ClusterChoice* choice) {
    ClusterChoice chosen;
    fs::path base;
    if (!cluster_option.empty()) {
        chosen = {cluster_option, "--cluster " + cluster_option};
    } else if (!card.launch.cluster.empty()) {
        const YamlDocument& doc = card.document();
        chosen = {card.launch.cluster, "launch.cluster at " + doc.location(find_node(doc.root(), "launch.cluster"), "launch.cluster")};
        // A path in the card is relative to the card, as launch.script is.
        base = doc.path().empty() ? fs::path() : doc.path().parent_path();
    } else {
        chosen = {infer_target(card, home / "clusters"),
                  fmt::format("the accelerator: workload.hardware.xpu_spec.model {}", enquote(card.xpu_model))};
    }
    ClusterProfile profile = ClusterProfile::find(chosen.value, base);
    if (choice != nullptr) {
        *choice = chosen;
    }
    return profile;
}

Plan make_plan(const WorkloadCard& card, const ClusterProfile& cluster, bool strict, Diagnostics& diagnostics) {
    Findings findings(card, strict, diagnostics);
    Plan plan;
    Origins origin(card, cluster, plan.origins);
    plan.card_name = card.name();
    origin.derived("card", "the card's file name", card.document().display_name());
    plan.framework = normalize_framework(card.framework);
    origin.card_or_default("framework", "Model-executor.framework.name", "no framework named");
    // Target: the template set; a user profile may render with a shipped target's templates.
    plan.target = cluster.templates;
    origin.profile("target", cluster.locations.count("templates") != 0 ? "templates" : "name");
    plan.scheduler = cluster.scheduler;
    origin.profile("scheduler", "scheduler");
    plan.phase = card.phase;
    origin.card_or_default("phase", "workload.model.phase", "no phase given");
    plan.model_family = card.model_family;
    origin.card_or_default("model_family", "workload.model.model_family", "no model family given");
    plan.precision = card.precision.empty() ? "bf16" : card.precision;
    origin.card_or_default("precision", "workload.model.precision", "bf16 when the card names no precision");
    plan.xpu_model = card.xpu_model;
    origin.card_or_default("xpu_model", "workload.hardware.xpu_spec.model", "no accelerator model given");
    plan.parallelism = card.parallelism;
    for (const char* degree : {"tp", "pp", "cp", "dp_replicate", "dp_shard", "ep", "pp_mb"}) {
        origin.card_or_default(std::string("parallelism.") + degree,
                               std::string("Model-executor.model_plan_parallelization.") + degree,
                               "1 when the card does not give this degree");
    }
    plan.python = cluster.python.empty() ? "python3" : cluster.python;
    plan.hf_home = cluster.hf_home;
    plan.modules = cluster.modules;
    plan.slurm_conf = cluster.slurm_conf;

    if (!card.has_executor) {
        findings.problem("Model-executor", "the card has no Model-executor section, so there is nothing to launch");
    }
    if (!card.has_hardware) {
        findings.problem("workload.hardware", "the card has no workload.hardware.xpu_spec, so there is nothing to size the job by");
    }
    if (!cluster.accepts_model(card.xpu_model)) {
        findings.problem("workload.hardware.xpu_spec.model",
                         fmt::format("{} does not run on cluster {} (it has {})", enquote(card.xpu_model), enquote(cluster.name),
                                     join(cluster.accelerator_models, ", ")));
    }

    // Geometry: a card may use part of one node (4 of a v6e host's 8 chips); beyond one node
    // the count must fill whole nodes.
    const long long total = std::max(1LL, card.total_count);
    const long long per_node = std::max(1LL, card.count_per_node);
    if (total <= per_node) {
        plan.nodes = 1;
        plan.ranks_per_node = total;
        origin.derived("geometry.nodes", fmt::format("total_count {} fits on one node (count_per_node {})", total, per_node));
        origin.card_or_default("geometry.ranks_per_node", "workload.hardware.xpu_spec.total_count",
                               "1 when the card gives no total_count");
    } else {
        plan.nodes = (total + per_node - 1) / per_node;
        plan.ranks_per_node = per_node;
        origin.derived("geometry.nodes", fmt::format("total_count {} / count_per_node {}, rounded up", total, per_node));
        origin.card("geometry.ranks_per_node", "workload.hardware.xpu_spec.count_per_node");
        if (total % per_node != 0) {
            findings.problem("workload.hardware.xpu_spec.total_count",
                             fmt::format("total_count {} is not a multiple of count_per_node {}", total, per_node));
        }
    }
    plan.world_size = total;
    origin.derived("geometry.world_size", fmt::format("workload.hardware.xpu_spec.total_count {} (nodes {} x ranks_per_node {})",
                                                      total, plan.nodes, plan.ranks_per_node));
    if (cluster.accelerators_per_node > 0 && per_node > cluster.accelerators_per_node) {
        findings.problem("workload.hardware.xpu_spec.count_per_node",
                         fmt::format("count_per_node {} exceeds the {} accelerators of a {} node", per_node,
                                     cluster.accelerators_per_node, cluster.name));
    }
    plan.tasks_per_node = tasks_per_node(plan.framework, plan.ranks_per_node);
    origin.derived("geometry.tasks_per_node", plan.framework == "torch-ddp"
                                                  ? "torch-ddp starts one task per rank (ranks_per_node)"
                                                  : "one task per node: torchrun and the engines start their workers");

    const Parallelism& par = card.parallelism;
    if (card.has_executor && par.product() != total) {
        findings.problem("Model-executor.model_plan_parallelization",
                         fmt::format("tp·pp·cp·dp_replicate·dp_shard = {}·{}·{}·{}·{} = {}, but total_count is {}", par.tp, par.pp,
                                     par.cp, par.dp_replicate, par.dp_shard, par.product(), total));
    }
    // How expert parallelism divides the ranks differs by framework: plan_framework checks it.
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

    plan.profile = card.launch.profile.value_or(ProfileWindow{});
    for (const char* part : {"wait", "warmup", "active"}) {
        origin.card_or_default(std::string("profile.") + part, std::string("launch.profile.") + part,
                               "the harness's profiling window: wait 1, warm-up 5, active 5");
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

    // Scheduler facts.
    plan.account = card.launch.account;
    origin.card_or_default("scheduler_options.account", "launch.account", "no account");
    plan.qos = card.launch.qos.empty() ? cluster.qos : card.launch.qos;
    origin.card_or_profile("scheduler_options.qos", "launch.qos", "slurm.qos", "no QOS");
    plan.partition = card.launch.partition.empty() ? cluster.partition : card.launch.partition;
    origin.card_or_profile("scheduler_options.partition", "launch.partition", "slurm.partition", "no partition");
    plan.time_limit = !card.launch.time_limit.empty() ? card.launch.time_limit
                      : !cluster.default_time.empty() ? cluster.default_time
                                                      : "01:00:00";
    origin.card_or_profile("scheduler_options.time_limit", "launch.time_limit", "slurm.default_time",
                           "01:00:00 when neither the card nor the profile gives one");
    const bool large_memory = (card.memory_gb && cluster.large_memory_gb > 0 && *card.memory_gb >= cluster.large_memory_gb) ||
                              card.xpu_model.find("80gb") != std::string::npos;
    plan.constraint = !card.launch.constraint.empty()                            ? card.launch.constraint
                      : large_memory && !cluster.constraint_large_memory.empty() ? cluster.constraint_large_memory
                                                                                 : cluster.constraint;
    origin.card_or_profile("scheduler_options.constraint", "launch.constraint",
                           large_memory && !cluster.constraint_large_memory.empty() ? "slurm.constraint_large_memory"
                                                                                    : "slurm.constraint",
                           "no constraint");
    if (cluster.scheduler == Scheduler::slurm && cluster.requires_account && plan.account.empty()) {
        std::string site = cluster.name;
        if (!site.empty()) {
            site[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(site[0])));
        }
        findings.problem("launch.account", fmt::format("{} jobs need an allocation account (sbatch -A); set launch.account", site));
    }

    plan.container_runtime = !card.launch.container_runtime.empty() ? card.launch.container_runtime
                             : !cluster.container_default.empty()   ? cluster.container_default
                                                                    : "none";
    origin.card_or_profile("container.runtime", "launch.container.runtime", "container.default",
                           "none when the profile names no default");
    plan.container_image = card.launch.container_image;
    origin.card_or_default("container.image", "launch.container.image", "no image");
    // The runtime's image rules, the NCCL plugin per CUDA major and CPUs per task: container_plan.cpp.
    plan_container(card, cluster, plan, findings);
    plan.source_repo = card.launch.source_repo;
    plan.source_ref = card.launch.source_ref;
    origin.card_or_default("source.repo", "launch.source.repo", "no source repository: the framework as installed");
    origin.card_or_default("source.ref", "launch.source.ref", "no source ref");
    if (plan.source_repo.empty() != plan.source_ref.empty()) {
        findings.problem("launch.source", "launch.source needs both repo and ref");
    }
    plan.script = trim(scalar_text(find_node(card.document().root(), "launch.script")));

    // Later sources override earlier ones: profile, then the communication library, then launch.env.
    for (const auto& [key, value] : cluster.env) {
        add_env(plan.env, key, value);
        origin.profile("env." + key, "env." + key);
    }
    for (const auto& [key, value] : card.comm_env) {
        add_env(plan.env, key, value);
        origin.card("env." + key, "Model-executor.communication_library.env." + key);
    }
    for (const auto& [key, value] : card.launch.env) {
        add_env(plan.env, key, value);
        origin.card("env." + key, "launch.env." + key);
    }
    if (is_tpu(cluster.scheduler)) {
        // The TPU VMs get their environment from env.sh, copied from the run directory; a secret
        // is never written there (env_file), so it cannot reach them.
        for (const auto& [key, value] : plan.env) {
            if (is_secret_name(key)) {
                findings.problem("launch.env." + key,
                                 fmt::format("{} is a secret and cannot reach the TPU VMs without being written into the "
                                             "run directory; provide it on the VMs or in the image instead",
                                             key));
            }
        }
    }
    plan.extra_args = card.launch.args;
    origin.card_or_default("extra_args", "launch.args", "no extra arguments");

    if (is_tpu(cluster.scheduler)) {
        plan.tpu_accelerator_type = fmt::format("v6e-{}", total);
        origin.derived("tpu.accelerator_type", fmt::format("v6e-<total_count {}>", total));
        // The profile may offer fewer sizes than exist (quota, a site's node pools).
        if (find_v6e_slice(total) && !cluster.tpu_slices.empty() &&
            std::find(cluster.tpu_slices.begin(), cluster.tpu_slices.end(), total) == cluster.tpu_slices.end()) {
            std::vector<std::string> sizes;
            for (long long s : cluster.tpu_slices) {
                sizes.push_back(fmt::format("v6e-{}", s));
            }
            findings.problem("workload.hardware.xpu_spec.total_count",
                             fmt::format("there is no v6e-{} slice (slices: {})", total, join(sizes, ", ")));
        }
        // One table (tpu_slices) gives the grid and the VMs: xpk's for a GKE cluster and the
        // JobSet, the Cloud TPU API's for tpu-vm workers (they differ at v6e-8: 2 x 4 vs 1 x 8).
        const bool gke = cluster.scheduler == Scheduler::gke;
        const std::optional<TpuSlice> slice = find_v6e_slice(total);
        if (!slice) {
            findings.problem("workload.hardware.xpu_spec.total_count",
                             fmt::format("there is no v6e-{} slice (xpk and Cloud TPU have {})", total, v6e_slice_names()));
        }
        const TpuSlice shape = slice.value_or(TpuSlice{total, "", "", 1, total, 1, total});
        plan.tpu_topology = std::string(shape.topology);
        origin.derived("tpu.topology", fmt::format("xpk's chip grid of a v6e-{} slice (harness/tpu_slices.cpp)", total));
        plan.tpu_machine_type = std::string(shape.gke_machine_type);
        plan.tpu_gke_hosts = shape.gke_hosts;
        plan.tpu_gke_chips_per_host = shape.gke_chips_per_host;
        origin.derived("tpu.machine_type", fmt::format("xpk's node machine type of a v6e-{} slice", total));
        origin.derived("tpu.gke_hosts", fmt::format("xpk's VMs per v6e-{} slice: one JobSet pod each", total));
        origin.derived("tpu.gke_chips_per_host", fmt::format("xpk's chips per VM of a v6e-{} slice: google.com/tpu per pod", total));
        plan.tpu_hosts = gke ? shape.gke_hosts : shape.vm_hosts;
        plan.tpu_chips_per_host = gke ? shape.gke_chips_per_host : shape.vm_chips_per_host;
        const char* const source = gke ? "xpk's node pool" : "the Cloud TPU API's TPU VMs";
        origin.derived("tpu.hosts", fmt::format("{} for v6e-{}: {} VM(s)", source, total, plan.tpu_hosts));
        origin.derived("tpu.chips_per_host", fmt::format("{} for v6e-{}: {} chip(s) per VM", source, total, plan.tpu_chips_per_host));
        // A count_per_node above the slice only says the VM could hold more; one within it must
        // match the VMs, or the card describes hosts the run does not have.
        if (slice && card.count_per_node > 0 && card.count_per_node <= total && card.count_per_node != plan.tpu_chips_per_host) {
            findings.problem("workload.hardware.xpu_spec.count_per_node",
                             fmt::format("count_per_node {}, but {} give(s) a v6e-{} slice as {} VM(s) x {} chips",
                                         card.count_per_node, source, total, plan.tpu_hosts, plan.tpu_chips_per_host));
        }
        plan.nodes = plan.tpu_hosts;
        plan.ranks_per_node = plan.tpu_chips_per_host;
        plan.tasks_per_node = 1;
        origin.derived("geometry.nodes", "tpu.hosts (one node per TPU VM)");
        origin.derived("geometry.ranks_per_node", "tpu.chips_per_host");
        origin.derived("geometry.tasks_per_node", "one task per TPU VM");
        plan.tpu_project = card.launch.tpu_project;
        origin.card_or_default("tpu.project", "launch.tpu.project", "no project");
        plan.tpu_zone = card.launch.tpu_zone.empty() ? cluster.tpu_default_zone : card.launch.tpu_zone;
        origin.card_or_profile("tpu.zone", "launch.tpu.zone", "tpu.default_zone", "no zone");
        plan.tpu_name = card.launch.tpu_name.empty() ? "ccl-" + to_lower(plan.card_name) : card.launch.tpu_name;
        if (card.launch.tpu_name.empty()) {
            origin.derived("tpu.name", "ccl-<card name>, lowercased, non-alphanumerics as '-', at most 60 characters");
        } else {
            origin.card("tpu.name", "launch.tpu.name");
        }
        plan.tpu_runtime_version = card.launch.tpu_runtime_version.empty() ? cluster.tpu_runtime_version
                                                                           : card.launch.tpu_runtime_version;
        origin.card_or_profile("tpu.runtime_version", "launch.tpu.runtime_version", "tpu.runtime_version", "no runtime version");
        plan.tpu_spot = card.launch.tpu_spot;
        origin.card_or_default("tpu.spot", "launch.tpu.spot", "false: on-demand capacity");
        if (plan.tpu_project.empty()) {
            findings.problem("launch.tpu.project", "a TPU run needs the Google Cloud project (launch.tpu.project)");
        }
        // Cloud TPU names: lowercase letters, digits and hyphens, starting with a letter.
        std::string name;
        for (const char c : plan.tpu_name) {
            name += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(static_cast<unsigned char>(c))) : '-';
        }
        plan.tpu_name = name.substr(0, 60);
    }
    plan_framework(card, plan, findings);
    return plan;
}

Json plan_to_json(const Plan& plan) {
    Json json = Json::object();
    json["card"] = plan.card_name;
    json["framework"] = plan.framework;
    json["target"] = plan.target;
    json["scheduler"] = to_string(plan.scheduler);
    json["phase"] = plan.phase;
    json["model"] = plan.model;
    json["model_family"] = plan.model_family;
    json["precision"] = plan.precision;
    json["xpu_model"] = plan.xpu_model;
    json["geometry"]["nodes"] = plan.nodes;
    json["geometry"]["ranks_per_node"] = plan.ranks_per_node;
    json["geometry"]["world_size"] = plan.world_size;
    json["geometry"]["tasks_per_node"] = plan.tasks_per_node;
    const Parallelism& p = plan.parallelism;
    json["parallelism"] = Json(Json::Object{{"tp", p.tp},
                                            {"pp", p.pp},
                                            {"cp", p.cp},
                                            {"dp_replicate", p.dp_replicate},
                                            {"dp_shard", p.dp_shard},
                                            {"ep", p.ep},
                                            {"pp_mb", p.pp_mb}});
    json["steps"] = plan.steps;
    json["profile"] = Json(Json::Object{{"wait", plan.profile.wait},
                                        {"warmup", plan.profile.warmup},
                                        {"active", plan.profile.active},
                                        {"traced_steps", plan.traced_steps}});
    json["traces"] = json_string_array(plan.trace_kinds);
    json["data"] = Json(Json::Object{{"batch_size", plan.batch_size},
                                     {"micro_batch_size", plan.micro_batch_size},
                                     {"seq_len", plan.seq_len},
                                     {"input_len", plan.input_len},
                                     {"output_len", plan.output_len}});
    json["scheduler_options"] = Json(Json::Object{{"account", plan.account},
                                                  {"qos", plan.qos},
                                                  {"partition", plan.partition},
                                                  {"time_limit", plan.time_limit},
                                                  {"constraint", plan.constraint}});
    json["container"] = Json(Json::Object{{"image", plan.container_image}, {"runtime", plan.container_runtime}});
    if (plan.cuda_major > 0) {
        json["container"]["cuda_major"] = plan.cuda_major;
    }
    if (!plan.nccl_plugin.empty()) {
        json["container"]["nccl_plugin"] = plan.nccl_plugin;
    }
    if (!plan.container_build.empty()) {
        json["container"]["build"] = plan.container_build;
    }
    if (plan.cpus_per_task > 0) {
        json["scheduler_options"]["cpus_per_task"] = plan.cpus_per_task;
    }
    json["source"] = Json(Json::Object{{"repo", plan.source_repo}, {"ref", plan.source_ref}});
    if (!plan.source_commit.empty()) {
        json["source"]["commit"] = plan.source_commit;
    }
    Json env = Json::object();
    for (const auto& [key, value] : plan.env) {
        env[key] = value;
    }
    json["env"] = env;
    json["extra_args"] = json_string_array(plan.extra_args);
    if (!plan.framework_config.empty()) {
        Json config = Json::object();
        for (const auto& [key, value] : plan.framework_config) {
            config[key] = value;
        }
        json["framework_config"] = config;
    }
    if (!plan.tpu_accelerator_type.empty()) {
        json["tpu"] = Json(Json::Object{{"accelerator_type", plan.tpu_accelerator_type},
                                        {"topology", plan.tpu_topology},
                                        {"hosts", plan.tpu_hosts},
                                        {"chips_per_host", plan.tpu_chips_per_host},
                                        {"machine_type", plan.tpu_machine_type},
                                        {"gke_hosts", plan.tpu_gke_hosts},
                                        {"gke_chips_per_host", plan.tpu_gke_chips_per_host},
                                        {"project", plan.tpu_project},
                                        {"zone", plan.tpu_zone},
                                        {"name", plan.tpu_name},
                                        {"runtime_version", plan.tpu_runtime_version},
                                        {"spot", plan.tpu_spot}});
    }
    return json;
}

} // namespace harness
