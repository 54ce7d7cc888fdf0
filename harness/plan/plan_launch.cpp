#include "plan/plan_steps.hpp"

#include "card/schema.hpp"
#include "plan/container_plan.hpp"
#include "provenance/env_capture.hpp"
#include "util/strings.hpp"

#include <cctype>
#include <fmt/format.h>

namespace harness {

namespace {

void add_env(std::vector<std::pair<std::string, std::string>>& env, const std::string& key, const std::string& value) {
    for (auto& entry : env) {
        if (entry.first == key) {
            entry.second = value;
            return;
        }
    }
    env.emplace_back(key, value);
}

} // namespace

void plan_scheduler_options(const WorkloadCard& card, const ClusterProfile& cluster, Plan& plan, PlanOrigins& origin,
                            PlanFindings& findings) {
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
}

void plan_container_and_source(const WorkloadCard& card, const ClusterProfile& cluster, Plan& plan, PlanOrigins& origin,
                               PlanFindings& findings) {
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
}

void plan_environment(const WorkloadCard& card, const ClusterProfile& cluster, Plan& plan, PlanOrigins& origin,
                      PlanFindings& findings) {
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
    // The templates export HF_HOME after sourcing env.sh: the weight cache a card or the user names
    // is the one the job must use, not the profile's.
    for (const auto& [key, value] : plan.env) {
        if (key == "HF_HOME") {
            plan.hf_home = value;
            plan.origins["hf_home"] = plan.origins["env.HF_HOME"];
        }
    }
    plan.extra_args = card.launch.args;
    origin.card_or_default("extra_args", "launch.args", "no extra arguments");
}

void plan_tpu_placement(const WorkloadCard& card, const ClusterProfile& cluster, Plan& plan, PlanOrigins& origin,
                        PlanFindings& findings) {
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
    plan.tpu_runtime_version = card.launch.tpu_runtime_version.empty() ? cluster.tpu_runtime_version : card.launch.tpu_runtime_version;
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

} // namespace harness
