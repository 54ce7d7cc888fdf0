#pragma once
// A card resolved against a cluster profile: every number a launch script needs, checked.
#include "card/card.hpp"
#include "card/cluster.hpp"
#include "util/json.hpp"

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace harness {

/// Where one plan value came from, recorded by make_plan as it decides the value.
struct Origin {
    enum class Kind { card, set, user, profile, default_rule, derived };
    Kind kind = Kind::default_rule;
    /// card/profile: "file:line:col" (or the file); set: "--set PATH=VALUE"; user: the defaults
    /// file's "file:line:col" or "$SBATCH_ACCOUNT"; else empty
    std::string where;
    std::string detail; ///< card/set/user: the field path; profile: the key; default: the rule; derived: from what
};

const char* to_string(Origin::Kind kind);

struct Plan {
    std::string card_name;
    std::string framework; ///< normalized: torchtitan, megatron-lm, vllm, sglang, maxtext, torch-ddp...
    std::string target;    ///< cluster profile name
    Scheduler scheduler = Scheduler::local;
    std::string phase;
    std::string model; ///< Hugging Face id or path
    std::string model_family;
    std::string precision;
    std::string xpu_model;

    long long nodes = 1;
    long long ranks_per_node = 1;
    long long world_size = 1;
    long long tasks_per_node = 1; ///< scheduler tasks per node (1 for torchrun and engines)
    Parallelism parallelism;

    long long steps = 0;
    ProfileWindow profile;
    std::vector<std::string> trace_kinds; ///< torch_profiler | nsys | xplane
    /// ProfilerStep#N markers each traced rank's Kineto trace must hold: profile.active for a
    /// framework that steps torch.profiler once per training step, 0 where its steps are not
    /// counted that way (a framework's plan step decides). verify holds the traces to it.
    long long traced_steps = 0;

    long long batch_size = 0;
    long long micro_batch_size = 0; ///< per data-parallel rank
    long long seq_len = 0;
    long long input_len = 0;
    long long output_len = 0;

    std::string account;
    std::string qos;
    std::string partition;
    std::string time_limit;
    std::string constraint;
    std::string container_image;
    std::string container_runtime; ///< shifter | podman-hpc | docker | none
    long long cuda_major = 0;      ///< the image's CUDA major (workload.hardware.driver_version); 0 when unknown
    std::string nccl_plugin;       ///< shifter modules or podman-hpc option for NERSC's NCCL plugin (container_plan)
    std::string container_build;   ///< podman, podman-hpc: the image built from the rendered Containerfile (render sets it)
    std::string container_base;    ///< a `ccl-base:<name>` image's tag, keyed by its spec (render sets it)
    long long cpus_per_task = 0;   ///< Slurm --cpus-per-task: cpus_per_node / tasks per node; 0 when unknown
    std::string source_repo;
    std::string source_ref;
    std::string source_commit; ///< full SHA source_ref resolved to (run, render --pin); empty when not pinned
    std::string script;        ///< entry-point file shipped beside the card (launch.script)
    std::vector<std::pair<std::string, std::string>> env;
    std::vector<std::string> extra_args;
    std::vector<std::string> modules;
    std::string hf_home;
    std::string python;
    std::string slurm_conf;

    std::string tpu_accelerator_type; ///< v6e-8...
    std::string tpu_topology;         ///< chip grid, 2x4 for v6e-8
    long long tpu_hosts = 0;
    long long tpu_chips_per_host = 0;
    std::string tpu_machine_type;         ///< GKE node machine type of the slice (ct6e-standard-4t)
    long long tpu_gke_hosts = 0;          ///< JobSet pods (xpk's VMs per slice)
    long long tpu_gke_chips_per_host = 0; ///< google.com/tpu per pod
    std::string tpu_project;
    std::string tpu_zone;
    std::string tpu_name;
    std::string tpu_runtime_version;
    bool tpu_spot = false;

    /// The framework's own configuration decided from the card (harness/frameworks/<name>.cpp):
    /// key -> value, read by templates as {{fw.KEY}}.
    std::map<std::string, std::string> framework_config;

    /// plan.json field path ("geometry.nodes", "env.NCCL_DEBUG") -> where its value came from.
    std::map<std::string, Origin> origins;

    bool traces(const std::string& kind) const;
};

/// Framework names as contributors spell them ("torchtitan-0.1.0", "Megatron_LM") to ours.
std::string normalize_framework(const std::string& name);

/// The target a card runs on when --cluster is not given: launch.cluster, else the profile in
/// `clusters_dir` (the shipped profiles, <home>/clusters) whose accelerator.default_for names
/// xpu_spec.model. Throws an input error when neither says, or when two profiles claim the model.
std::string infer_target(const WorkloadCard& card, const fs::path& clusters_dir);

/// How the cluster a card runs on was chosen, for explain.
struct ClusterChoice {
    std::string value; ///< the name or path looked up
    std::string how;   ///< "--cluster", "card launch.cluster at file:line:col", or the accelerator rule
};

/// The profile a card runs on: `cluster_option` (--cluster NAME|PATH, a path relative to the
/// current directory) when given, else launch.cluster (a path relative to the card's
/// directory), else what infer_target implies; looked up by ClusterProfile::find.
/// `home` is the harness home: its clusters/ holds the profiles the accelerator rule reads.
ClusterProfile resolve_cluster(const WorkloadCard& card, const std::string& cluster_option, const fs::path& home,
                               ClusterChoice* choice = nullptr);

/// Resolves the plan. Runnability problems are errors when `strict`, warnings otherwise;
/// either way they land in `diagnostics` and the caller decides.
Plan make_plan(const WorkloadCard& card, const ClusterProfile& cluster, bool strict, Diagnostics& diagnostics);

Json plan_to_json(const Plan& plan);

} // namespace harness
