#include "plan/tpu_slices.hpp"

#include "util/strings.hpp"

#include <fmt/format.h>

namespace harness {

// GKE columns: xpk (AI-Hypercomputer/xpk 367c8382) src/xpk/core/system_characteristics.py:
//  - 696-705: v6e '1x1' on ct6e-standard-1t; 706-716: '2x2' plus SUB_SLICING_TOPOLOGIES (:25,
//    '2x4' '4x4' '4x8' '8x8' '8x16' '16x16') on ct6e-standard-4t, gke_accelerator tpu-v6e-slice;
//  - 285-294: chips_per_vm = 1 for a 1-chip topology, else 4; vms_per_slice = chips / chips_per_vm;
//    device_type v6e-<chips> (tensorcores_per_chip 1, :234-282).
// So xpk's v6e-8 is two 4-chip VMs, which is why one pod asking for 8 chips never schedules there.
// Pods: parallelism = completions = vms_per_slice (src/xpk/commands/workload.py:132-133),
// google.com/tpu: chips_per_vm (src/xpk/core/docker_resources.py:65), node selectors
// cloud.google.com/gke-tpu-accelerator and cloud.google.com/gke-tpu-topology
// (system_characteristics.py:59-63, 1182-1197).
// TPU VM columns: the Cloud TPU API's v6e hosts hold up to 8 chips ("Chips per host: 8",
// docs.cloud.google.com/tpu/docs/v6e), and v6e-8 is one 8-chip VM (ct6e-standard-8t, which xpk
// does not offer); larger slices are 4-chip VMs as in xpk.
const std::vector<TpuSlice>& v6e_slices() {
    static const std::vector<TpuSlice> k_slices = {
        {1, "1x1", "ct6e-standard-1t", 1, 1, 1, 1},      {4, "2x2", "ct6e-standard-4t", 1, 4, 1, 4},
        {8, "2x4", "ct6e-standard-4t", 2, 4, 1, 8},      {16, "4x4", "ct6e-standard-4t", 4, 4, 4, 4},
        {32, "4x8", "ct6e-standard-4t", 8, 4, 8, 4},     {64, "8x8", "ct6e-standard-4t", 16, 4, 16, 4},
        {128, "8x16", "ct6e-standard-4t", 32, 4, 32, 4}, {256, "16x16", "ct6e-standard-4t", 64, 4, 64, 4},
    };
    return k_slices;
}

std::optional<TpuSlice> find_v6e_slice(long long chips) {
    for (const TpuSlice& slice : v6e_slices()) {
        if (slice.chips == chips) {
            return slice;
        }
    }
    return std::nullopt;
}

std::string v6e_slice_names() {
    std::vector<std::string> names;
    for (const TpuSlice& slice : v6e_slices()) {
        names.push_back(fmt::format("v6e-{}", slice.chips));
    }
    return join(names, ", ");
}

} // namespace harness
