#include "plan/plan_steps.hpp"

#include "plan/tpu_slices.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <optional>

namespace harness {

namespace {

long long tasks_per_node(const std::string& framework, long long ranks_per_node) {
    // torchrun and the serving engines start their own workers; plain DDP is one task a rank.
    if (framework == "torch-ddp") {
        return ranks_per_node;
    }
    return 1;
}

// vLLM's expert-parallel group is tp·dp (--enable-expert-parallel; vllm/config/parallel.py in
// v0.19.0 sizes it data_parallel_size × tensor_parallel_size): a card that gives ep = N·tp and no
// dp ran N data-parallel engines, as the Mixtral EP rows' server.sh did (--tensor-parallel-size 1
// --data-parallel-size 4 --enable-expert-parallel, ep: 4 on the card). Read only when it accounts
// for every GPU; anything else stays the card's, for the checks below to judge.
void infer_vllm_data_parallel(const WorkloadCard& card, long long total, Plan& plan, PlanOrigins& origin, PlanFindings& findings) {
    Parallelism& par = plan.parallelism;
    if (plan.framework != "vllm" || !card.has_executor || par.dp_replicate * par.dp_shard != 1 || par.tp < 1 || par.ep <= par.tp ||
        par.ep % par.tp != 0) {
        return;
    }
    const long long dp = par.ep / par.tp;
    if (par.tp * par.pp * par.cp * dp != total) {
        return;
    }
    par.dp_replicate = dp;
    origin.derived("parallelism.dp_replicate", fmt::format("ep {} / tp {}: vllm's expert-parallel group is tp·dp", par.ep, par.tp));
    findings.tolerated(std::string(k_parallel_field) + "ep",
                       fmt::format("ep {} with tp {} and no dp: vllm's expert-parallel group is tp·dp, so the run is {} "
                                   "data-parallel engines (--data-parallel-size {} --enable-expert-parallel); set "
                                   "dp_replicate: {} to say so",
                                   par.ep, par.tp, dp, dp, dp));
}

} // namespace

void plan_geometry(const WorkloadCard& card, const ClusterProfile& cluster, Plan& plan, PlanOrigins& origin, PlanFindings& findings) {
    // A card may use part of one node (4 of a v6e host's 8 chips); beyond one node the count
    // must fill whole nodes.
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

    infer_vllm_data_parallel(card, total, plan, origin, findings);
    // MaxText's ep is a mesh axis of its own and it fills the unspecified axes from the chips:
    // maxtext.cpp checks its mesh against the slice instead.
    const Parallelism& par = plan.parallelism;
    if (!card.has_executor || plan.framework == "maxtext" || par.product() == total) {
        return;
    }
    const std::string degrees = fmt::format("tp·pp·cp·dp_replicate·dp_shard = {}·{}·{}·{}·{} = {}", par.tp, par.pp, par.cp,
                                            par.dp_replicate, par.dp_shard, par.product());
    // Contributors give total_count as the GPUs their node had (the qwen3-4b tp 2 rows: NUM_GPUS=4
    // in run.sh, --tensor-parallel-size 2): fewer ranks than one node's GPUs is a run on part of
    // the node, which Perlmutter allocates whole anyway. More ranks than GPUs, or part of several
    // nodes, is a card that contradicts itself.
    if (total <= per_node && par.product() >= 1 && par.product() < total) {
        plan.world_size = par.product();
        plan.ranks_per_node = par.product();
        plan.tasks_per_node = tasks_per_node(plan.framework, plan.ranks_per_node);
        origin.derived("geometry.world_size",
                       fmt::format("{}: the ranks of the run, on {} of the node's {} accelerators", degrees, par.product(), total));
        findings.tolerated("workload.hardware.xpu_spec.total_count",
                           fmt::format("total_count {}, but {}: the run uses {} of the node's {} accelerators (the job "
                                       "still holds the whole node); set total_count: {} to say so",
                                       total, degrees, par.product(), total, par.product()));
        return;
    }
    findings.problem("Model-executor.model_plan_parallelization", fmt::format("{}, but total_count is {}", degrees, total));
}

void plan_tpu_slice(const WorkloadCard& card, const ClusterProfile& cluster, Plan& plan, PlanOrigins& origin, PlanFindings& findings) {
    long long total = std::max(1LL, card.total_count);
    // Contributors give total_count as the chips their run used and count_per_node as the VM's
    // (the group-4 rows: "total_count: 2  # Chips used (TP=2)", "count_per_node: 8  # All chips in
    // single TPU VM"): no v6e-2 exists, so the slice is the VM's and the run uses part of it.
    if (!find_v6e_slice(total) && card.count_per_node > total && find_v6e_slice(card.count_per_node)) {
        findings.tolerated("workload.hardware.xpu_spec.total_count",
                           fmt::format("there is no v6e-{} slice: the run uses {} chips of a v6e-{} slice, one VM of "
                                       "count_per_node {} chips, as the card's host had",
                                       total, total, card.count_per_node, card.count_per_node));
        total = card.count_per_node;
    }
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
    origin.derived("tpu.topology", fmt::format("xpk's chip grid of a v6e-{} slice (harness/plan/tpu_slices.cpp)", total));
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
                         fmt::format("count_per_node {}, but {} give(s) a v6e-{} slice as {} VM(s) x {} chips", card.count_per_node,
                                     source, total, plan.tpu_hosts, plan.tpu_chips_per_host));
    }
    plan.nodes = plan.tpu_hosts;
    plan.ranks_per_node = plan.tpu_chips_per_host;
    plan.tasks_per_node = 1;
    origin.derived("geometry.nodes", "tpu.hosts (one node per TPU VM)");
    origin.derived("geometry.ranks_per_node", "tpu.chips_per_host");
    origin.derived("geometry.tasks_per_node", "one task per TPU VM");
}

} // namespace harness
