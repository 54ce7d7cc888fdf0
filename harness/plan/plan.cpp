#include "plan/plan.hpp"

#include "card/schema.hpp"
#include "plan/plan_steps.hpp"
#include "util/error.hpp"
#include "util/quote.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <regex>

namespace harness {

namespace {

/// Collects runnability problems at the severity the caller asked for.
class Findings final : public PlanFindings {
public:
    Findings(const WorkloadCard& card, bool strict, Diagnostics& out) : m_card(card), m_strict(strict), m_out(out) {}

    void problem(const std::string& field, const std::string& message) override {
        const YAML::Node node = find_node(m_card.document().root(), field);
        const std::string location = m_card.document().location(node, field);
        // A launch value the card does not give is the harness's default (or missing): say where it goes.
        const std::string hint = starts_with(field, "launch.") && !node.IsDefined()
                                     ? fmt::format(" (the card does not set {}: set it in its launch: section, or --set {}=VALUE)",
                                                   field, field)
                                     : "";
        if (m_strict) {
            m_out.error(location, field, message + hint);
        } else {
            m_out.warning(location, field, message + hint + " (an error with --strict)");
        }
    }

    void tolerated(const std::string& field, const std::string& message) override {
        const YAML::Node node = find_node(m_card.document().root(), field);
        m_out.warning(m_card.document().location(node, field), field, message);
    }

private:
    const WorkloadCard& m_card;
    bool m_strict;
    Diagnostics& m_out;
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
    case Origin::Kind::user: return "user";
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
    ClusterProfile profile = ClusterProfile::find(chosen.value, home, base);
    if (choice != nullptr) {
        *choice = chosen;
    }
    return profile;
}

void plan_identity(const WorkloadCard& card, const ClusterProfile& cluster, Plan& plan, PlanOrigins& origin) {
    plan.card_name = card.name();
    origin.derived("card", "the card's file name", card.document().display_name());
    plan.framework = normalize_framework(card.framework);
    origin.card_or_default("framework", "Model-executor.framework.name", "no framework named");
    // Target: the template set; a user profile may render with a shipped target's templates.
    plan.target = cluster.templates;
    origin.profile("target", cluster.locations.count("templates") != 0 ? "templates"
                             : cluster.locations.count("extends") != 0 ? "extends"
                                                                       : "name");
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
    plan.hf_home = cluster.hf_home; // launch.env.HF_HOME, the card's or the user's, wins: plan_environment
    if (!plan.hf_home.empty()) {
        origin.profile("hf_home", "hf_home");
    }
    plan.modules = cluster.modules;
    plan.slurm_conf = cluster.slurm_conf;
}

void check_launchable(const WorkloadCard& card, const ClusterProfile& cluster, PlanFindings& findings) {
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
}

Plan make_plan(const WorkloadCard& card, const ClusterProfile& cluster, bool strict, Diagnostics& diagnostics) {
    // The steps run in this order because later ones read what earlier ones decided (the
    // geometry reads the framework, the TPU slice replaces the geometry, plan_framework reads
    // everything) and because their problems are reported in it.
    Findings findings(card, strict, diagnostics);
    Plan plan;
    PlanOrigins origin(card, cluster, plan.origins);
    plan_identity(card, cluster, plan, origin);
    check_launchable(card, cluster, findings);
    plan_geometry(card, cluster, plan, origin, findings);
    plan_batch(card, plan, origin, findings);
    plan_sequence_lengths(card, plan, origin, findings);
    plan_profiling(card, cluster, plan, origin, findings);
    plan_model(card, plan, origin);
    plan_scheduler_options(card, cluster, plan, origin, findings);
    plan_container_and_source(card, cluster, plan, origin, findings);
    plan_environment(card, cluster, plan, origin, findings);
    if (is_tpu(cluster.scheduler)) {
        plan_tpu_slice(card, cluster, plan, origin, findings);
        plan_tpu_placement(card, cluster, plan, origin, findings);
    }
    plan_framework(card, plan, findings);
    check_socket_interfaces(plan, findings);
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
    if (!plan.hf_home.empty()) {
        json["hf_home"] = plan.hf_home;
    }
    if (plan.cuda_major > 0) {
        json["container"]["cuda_major"] = plan.cuda_major;
    }
    if (!plan.nccl_plugin.empty()) {
        json["container"]["nccl_plugin"] = plan.nccl_plugin;
    }
    if (!plan.container_base.empty()) {
        json["container"]["base"] = plan.container_base;
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
