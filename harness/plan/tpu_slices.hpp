#pragma once
// TPU v6e slice shapes: the one table of how many chips a slice has, how they are laid out, and
// how they are split into VMs, both as xpk/GKE models them (node pools, JobSet pods) and as the
// Cloud TPU API hands them out (tpu-vm ssh workers). plan.cpp asks it; nothing else spells a
// v6e topology, machine type or host count.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace harness {

/// One v6e slice size.
struct TpuSlice {
    long long chips = 0;               ///< v6e-<chips>
    std::string_view topology;         ///< the chip grid, GKE's cloud.google.com/gke-tpu-topology
    std::string_view gke_machine_type; ///< the node pool's machine type (ct6e-standard-Nt)
    long long gke_hosts = 0;           ///< nodes (VMs) per slice = JobSet pods
    long long gke_chips_per_host = 0;  ///< google.com/tpu each pod requests
    long long vm_hosts = 0;            ///< TPU VM workers of a queued resource of this type
    long long vm_chips_per_host = 0;   ///< chips each of those workers sees
};

/// GKE's node label for v6e slices (xpk: gke_accelerator='tpu-v6e-slice').
constexpr std::string_view k_v6e_gke_accelerator = "tpu-v6e-slice";

/// Every v6e slice size xpk knows, smallest first.
const std::vector<TpuSlice>& v6e_slices();

/// The slice with this many chips, or nullopt where xpk has none (v6e-2, v6e-12...).
std::optional<TpuSlice> find_v6e_slice(long long chips);

/// "v6e-1, v6e-4, ..." for messages.
std::string v6e_slice_names();

} // namespace harness
