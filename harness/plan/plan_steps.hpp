#pragma once
// The steps make_plan takes, in order, each deciding one group of a Plan's values. Every step
// records a value's origin beside the rule that decides it (PlanOrigins), so explain cannot drift
// from the rule, and reports what would stop the run to PlanFindings in make_plan's order.
#include "plan/frameworks/framework_plan.hpp"
#include "plan/plan.hpp"

#include <map>
#include <string>
#include <vector>

namespace harness {

/// Fills Plan::origins next to each decision in make_plan's steps.
class PlanOrigins {
public:
    PlanOrigins(const WorkloadCard& card, const ClusterProfile& cluster, std::map<std::string, Origin>& out)
        : m_card(card), m_cluster(cluster), m_out(out) {}

    /// True when the card (or a --set) gives `card_field` a non-null value.
    bool in_card(const std::string& card_field) const;
    /// "file:line:col" of `card_field` in the card, or "--set PATH=VALUE" when a --set gave it.
    std::string card_location(const std::string& card_field) const;
    /// `field` came from `card_field` of the card (or from the --set that gave it).
    void card(const std::string& field, const std::string& card_field);
    /// `field` came from the profile's `key`.
    void profile(const std::string& field, const std::string& key);
    /// `field` is the harness's default, by `rule`.
    void fallback(const std::string& field, const std::string& rule);
    /// `field` was computed `from` other values (`where` names a card position when there is one).
    void derived(const std::string& field, const std::string& from, const std::string& where = "");
    /// card() when the card gives `card_field`, else fallback().
    void card_or_default(const std::string& field, const std::string& card_field, const std::string& rule);
    /// card() when the card gives `card_field`, else profile() when the profile has `key`, else fallback().
    void card_or_profile(const std::string& field, const std::string& card_field, const std::string& key, const std::string& rule);

private:
    const WorkloadCard& m_card;
    const ClusterProfile& m_cluster;
    std::map<std::string, Origin>& m_out;
};

/// Decides what is taken as given: names, framework, target, scheduler, phase, model family,
/// precision, accelerator, parallel degrees and the profile's site paths (python, modules...).
void plan_identity(const WorkloadCard& card, const ClusterProfile& cluster, Plan& plan, PlanOrigins& origin);

/// Decides whether there is anything to launch on this cluster: an executor, hardware, a model it has.
void check_launchable(const WorkloadCard& card, const ClusterProfile& cluster, PlanFindings& findings);

/// Decides nodes, ranks per node, world size and tasks per node from the accelerator counts, and
/// checks that the parallel degrees multiply to the ranks.
void plan_geometry(const WorkloadCard& card, const ClusterProfile& cluster, Plan& plan, PlanOrigins& origin, PlanFindings& findings);

/// Decides the global and per-replica batch from the card's batch and its scope.
void plan_batch(const WorkloadCard& card, Plan& plan, PlanOrigins& origin, PlanFindings& findings);

/// Decides seq_len, input_len and output_len, each falling back on the others.
void plan_sequence_lengths(const WorkloadCard& card, Plan& plan, PlanOrigins& origin, PlanFindings& findings);

/// Decides the profiling window, the steps that hold it, the tracers and the steps they count.
void plan_profiling(const WorkloadCard& card, const ClusterProfile& cluster, Plan& plan, PlanOrigins& origin, PlanFindings& findings);

/// Decides the model to load: launch.model, else the Hugging Face id in hf_url, else the family.
void plan_model(const WorkloadCard& card, Plan& plan, PlanOrigins& origin);

/// Decides the scheduler options (account, QOS, partition, time limit, constraint).
void plan_scheduler_options(const WorkloadCard& card, const ClusterProfile& cluster, Plan& plan, PlanOrigins& origin,
                            PlanFindings& findings);

/// Decides the container runtime and image (container_plan.cpp checks them), the source
/// checkout and the card's own entry-point script.
void plan_container_and_source(const WorkloadCard& card, const ClusterProfile& cluster, Plan& plan, PlanOrigins& origin,
                               PlanFindings& findings);

/// Decides the job's environment (profile, then communication library, then launch.env) and
/// the extra arguments.
void plan_environment(const WorkloadCard& card, const ClusterProfile& cluster, Plan& plan, PlanOrigins& origin,
                      PlanFindings& findings);

/// The loopback names in a GLOO_SOCKET_IFNAME or NCCL_SOCKET_IFNAME value ("lo", "lo0"), in
/// order; empty when none is pinned (an NCCL '^' list excludes them).
std::vector<std::string> loopback_interfaces(const std::string& value);

/// Checks that a multi-node plan does not pin gloo's or NCCL's sockets to the loopback interface
/// (plan_network.cpp), reported at the card field that sets it.
void check_socket_interfaces(const Plan& plan, PlanFindings& findings);

/// Decides a TPU run's slice (type, grid, VMs) and the geometry it imposes: one node per TPU VM.
void plan_tpu_slice(const WorkloadCard& card, const ClusterProfile& cluster, Plan& plan, PlanOrigins& origin, PlanFindings& findings);

/// Decides a TPU run's Cloud placement: project, zone, slice name, runtime version, spot.
void plan_tpu_placement(const WorkloadCard& card, const ClusterProfile& cluster, Plan& plan, PlanOrigins& origin,
                        PlanFindings& findings);

} // namespace harness
