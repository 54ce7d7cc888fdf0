#include "render/render_context.hpp"

#include "plan/container_plan.hpp"
#include "provenance/env_capture.hpp"
#include "provenance/secret_scrub.hpp"
#include "util/error.hpp"
#include "util/quote.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <cctype>
#include <utility>
#include <fmt/format.h>

namespace harness {

namespace mustache = kainjow::mustache;

namespace {

mustache::data text(const std::string& value) { return mustache::data(value); }
mustache::data number(long long value) { return mustache::data(std::to_string(value)); }
mustache::data flag(bool value) { return mustache::data(value); }

mustache::data list_of(const std::string& key, const std::vector<std::string>& values) {
    mustache::data list(mustache::data::type::list);
    for (const auto& value : values) {
        list.push_back(mustache::data(key, mustache::data(value)));
    }
    return list;
}

/// A weight cache named under a variable of the node's environment (`$SCRATCH/hf_home`,
/// `${PSCRATCH}/hf`): the variable's name and the rest, so the script expands it on the node,
/// where it has its value (templates/common/hf_cache.mustache). Any other path: no variable.
std::pair<std::string, std::string> split_env_prefix(const std::string& path) {
    if (path.size() < 2 || path[0] != '$') {
        return {"", path};
    }
    const bool braced = path[1] == '{';
    std::size_t end = braced ? 2 : 1;
    while (end < path.size() && (std::isalnum(static_cast<unsigned char>(path[end])) != 0 || path[end] == '_')) {
        ++end;
    }
    const std::string name = path.substr(braced ? 2 : 1, end - (braced ? 2 : 1));
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])) != 0 ||
        (braced && (end >= path.size() || path[end] != '}'))) {
        return {"", path};
    }
    const std::string rest = path.substr(braced ? end + 1 : end);
    if (!rest.empty() && rest[0] != '/') {
        return {"", path};
    }
    return {name, rest};
}

/// An `#SBATCH` line is read by sbatch, not by a shell, so it cannot be quoted: every value in
/// one must be a plain token (plus '&' for constraints like gpu&hbm80g).
std::string directive(const std::string& option, const std::string& value, const std::string& field) {
    const bool ok = !value.empty() && value[0] != '-' &&
                    std::all_of(value.begin(), value.end(), [](char c) { return c == '&' || is_safe_token(std::string(1, c)); });
    if (!ok) {
        throw input_error(
            fmt::format("{}: {} cannot go on an #SBATCH line (letters, digits and _@%+=:,./-& only)", field, enquote(value)));
    }
    return option + value;
}

std::vector<std::string> sbatch_directives(const Plan& plan, const ClusterProfile& cluster) {
    std::string job_name;
    for (const char c : plan.card_name) {
        job_name += is_safe_token(std::string(1, c)) ? c : '_';
    }
    std::vector<std::string> out;
    out.push_back(directive("--job-name=", job_name.substr(0, 64), "card name"));
    if (!plan.account.empty()) {
        out.push_back(directive("--account=", plan.account, "launch.account"));
    }
    if (!plan.qos.empty()) {
        out.push_back(directive("--qos=", plan.qos, "launch.qos"));
    }
    if (!plan.partition.empty()) {
        out.push_back(directive("--partition=", plan.partition, "launch.partition"));
    }
    if (!plan.constraint.empty()) {
        out.push_back(directive("--constraint=", plan.constraint, "launch.constraint"));
    }
    out.push_back(directive("--time=", plan.time_limit, "launch.time_limit"));
    out.push_back(directive("--nodes=", std::to_string(plan.nodes), "nodes"));
    out.push_back(directive("--ntasks-per-node=", std::to_string(plan.tasks_per_node), "tasks per node"));
    if (cluster.gpus_per_node_flag) {
        out.push_back(directive("--gpus-per-node=", std::to_string(cluster.accelerators_per_node), "gpus per node"));
    }
    if (plan.cpus_per_task > 0) {
        out.push_back(directive("--cpus-per-task=", std::to_string(plan.cpus_per_task), "cpus per task"));
    }
    // Shifter looks the image up as TYPE:TAG at submission; a digest is refused there (and by
    // validate --strict first, docs/containers.md), not dropped here.
    const std::string shifter_image = shifter_image_for(plan.container_image);
    if (plan.container_runtime == "shifter" && !shifter_image.empty()) {
        out.push_back(directive("--image=", shifter_image, "launch.container.image"));
        out.push_back(directive("--module=", plan.nccl_plugin.empty() ? "gpu" : plan.nccl_plugin, "NCCL plugin"));
    }
    out.emplace_back("--output=logs/%x-%j.out");
    return out;
}

/// Names, phase, model and geometry.
void set_workload(mustache::data& ctx, const Plan& plan, const ClusterProfile& cluster) {
    ctx.set("card_name", text(plan.card_name));
    ctx.set("framework", text(plan.framework));
    ctx.set("target", text(plan.target));
    ctx.set("phase", text(plan.phase));
    ctx.set("training", flag(plan.phase == "training"));
    ctx.set("inference", flag(plan.phase != "training"));
    ctx.set("model", text(plan.model));
    ctx.set("model_family", text(plan.model_family));
    ctx.set("precision", text(plan.precision));
    ctx.set("nodes", number(plan.nodes));
    ctx.set("multi_node", flag(plan.nodes > 1));
    ctx.set("ranks_per_node", number(plan.ranks_per_node));
    ctx.set("world_size", number(plan.world_size));
    ctx.set("tasks_per_node", number(plan.tasks_per_node));
    ctx.set("accelerators_per_node", number(cluster.accelerators_per_node));
}

/// Parallel degrees, steps, the profiling window, tracers and data sizes.
void set_parallelism_and_steps(mustache::data& ctx, const Plan& plan) {
    const Parallelism& p = plan.parallelism;
    ctx.set("tp", number(p.tp));
    ctx.set("pp", number(p.pp));
    ctx.set("cp", number(p.cp));
    ctx.set("dp_replicate", number(p.dp_replicate));
    ctx.set("dp_shard", number(p.dp_shard));
    ctx.set("dp", number(p.dp_replicate * p.dp_shard));
    ctx.set("ep", number(p.ep));
    ctx.set("pp_mb", number(p.pp_mb));
    ctx.set("expert_parallel", flag(p.ep > 1));
    ctx.set("steps", number(plan.steps));
    ctx.set("profile_wait", number(plan.profile.wait));
    ctx.set("profile_warmup", number(plan.profile.warmup));
    ctx.set("profile_active", number(plan.profile.active));
    ctx.set("profile_start", number(plan.profile.wait + plan.profile.warmup));
    ctx.set("profile_end", number(plan.profile.wait + plan.profile.warmup + plan.profile.active));
    ctx.set("trace_torch", flag(plan.traces("torch_profiler")));
    ctx.set("trace_nsys", flag(plan.traces("nsys")));
    ctx.set("trace_xplane", flag(plan.traces("xplane")));
    ctx.set("batch_size", number(plan.batch_size));
    ctx.set("micro_batch_size", number(plan.micro_batch_size));
    ctx.set("seq_len", number(plan.seq_len));
    ctx.set("input_len", number(plan.input_len));
    ctx.set("output_len", number(plan.output_len));
}

/// Scheduler options and the container.
void set_job(mustache::data& ctx, const Plan& plan, const ClusterProfile& cluster) {
    ctx.set("account", text(plan.account));
    ctx.set("qos", text(plan.qos));
    ctx.set("time_limit", text(plan.time_limit));
    ctx.set("constraint", text(plan.constraint));
    ctx.set("container_image", text(plan.container_image));
    ctx.set("container_runtime", text(plan.container_runtime));
    ctx.set("runtime_shifter", flag(plan.container_runtime == "shifter"));
    ctx.set("runtime_podman", flag(plan.container_runtime == "podman-hpc"));
    ctx.set("runtime_podman_plain", flag(plan.container_runtime == "podman"));
    ctx.set("runtime_docker", flag(plan.container_runtime == "docker"));
    ctx.set("runtime_none", flag(plan.container_runtime == "none"));
    ctx.set("container_build", text(plan.container_build));
    ctx.set("has_container_build", flag(!plan.container_build.empty()));
    ctx.set("has_container_image", flag(!plan.container_image.empty()));
    ctx.set("shifter_image", text(shifter_image_for(plan.container_image)));
    ctx.set("nccl_plugin", text(plan.nccl_plugin));
    ctx.set("podman_nccl", flag(plan.container_runtime == "podman-hpc" && !plan.nccl_plugin.empty()));
    ctx.set("has_nccl_plugin", flag(!plan.nccl_plugin.empty()));
    ctx.set("cuda_major", number(plan.cuda_major));
    ctx.set("cpus_per_task", number(plan.cpus_per_task));
    ctx.set("has_cpus_per_task", flag(plan.cpus_per_task > 0));
    if (plan.scheduler == Scheduler::slurm) {
        ctx.set("sbatch_directives", list_of("directive", sbatch_directives(plan, cluster)));
    }
}

/// The source checkout, the entry point, extra arguments and the site's paths.
void set_source_and_site(mustache::data& ctx, const Plan& plan) {
    ctx.set("has_source", flag(!plan.source_repo.empty()));
    ctx.set("source_repo", text(plan.source_repo));
    ctx.set("source_ref", text(plan.source_ref));
    ctx.set("source_commit", text(plan.source_commit));
    // What scripts check out: the pinned SHA when there is one; an unpinned preview shows the ref.
    ctx.set("source_checkout", text(plan.source_commit.empty() ? plan.source_ref : plan.source_commit));
    ctx.set("script", text(plan.script));
    ctx.set("extra_args", list_of("arg", plan.extra_args));
    ctx.set("has_extra_args", flag(!plan.extra_args.empty()));
    ctx.set("modules", list_of("module", plan.modules));
    ctx.set("hf_home", text(plan.hf_home));
    const auto [hf_var, hf_rest] = split_env_prefix(plan.hf_home);
    ctx.set("has_hf_home_var", flag(!hf_var.empty()));
    ctx.set("hf_home_var", text(hf_var));
    ctx.set("hf_home_rest", text(hf_rest));
    ctx.set("python", text(plan.python));
    ctx.set("slurm_conf", text(plan.slurm_conf));
    ctx.set("env_file", text("env.sh"));
}

/// The TPU slice and its libtpu arguments.
void set_tpu(mustache::data& ctx, const Plan& plan) {
    ctx.set("tpu_accelerator_type", text(plan.tpu_accelerator_type));
    ctx.set("tpu_topology", text(plan.tpu_topology));
    ctx.set("tpu_hosts", number(plan.tpu_hosts));
    ctx.set("tpu_chips_per_host", number(plan.tpu_chips_per_host));
    ctx.set("tpu_machine_type", text(plan.tpu_machine_type));
    ctx.set("tpu_gke_hosts", number(plan.tpu_gke_hosts));
    ctx.set("tpu_gke_chips_per_host", number(plan.tpu_gke_chips_per_host));
    ctx.set("tpu_project", text(plan.tpu_project));
    ctx.set("tpu_zone", text(plan.tpu_zone));
    ctx.set("tpu_name", text(plan.tpu_name));
    ctx.set("tpu_runtime_version", text(plan.tpu_runtime_version));
    ctx.set("tpu_spot", flag(plan.tpu_spot));
    std::string libtpu;
    for (const auto& [key, value] : plan.env) {
        if (key == "LIBTPU_INIT_ARGS") {
            libtpu = value;
        }
    }
    ctx.set("libtpu_init_args", text(libtpu));
}

/// The framework's own configuration and the environment, secrets by name only.
void set_framework_and_env(mustache::data& ctx, const Plan& plan) {
    mustache::data framework_config;
    for (const auto& [key, value] : plan.framework_config) {
        framework_config.set(key, value == "true" ? flag(true) : value == "false" ? flag(false) : text(value));
    }
    ctx.set("fw", framework_config);
    mustache::data env(mustache::data::type::list);
    for (const auto& [key, value] : plan.env) {
        mustache::data entry;
        entry.set("key", text(key));
        // A secret's name is needed (a container runtime passes it through by name), never its value.
        entry.set("value", text(is_secret_name(key) ? std::string(k_redacted) : value));
        env.push_back(entry);
    }
    ctx.set("env", env);
}

} // namespace

mustache::data template_context(const Plan& plan, const ClusterProfile& cluster) {
    mustache::data ctx;
    set_workload(ctx, plan, cluster);
    set_parallelism_and_steps(ctx, plan);
    set_job(ctx, plan, cluster);
    set_source_and_site(ctx, plan);
    set_tpu(ctx, plan);
    set_framework_and_env(ctx, plan);
    return ctx;
}

} // namespace harness
