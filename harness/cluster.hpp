#pragma once
// A cluster profile (`clusters/<name>.yaml`): site facts only, never run facts.
#include "diagnostic.hpp"
#include "util/fs.hpp"

#include <string>
#include <utility>
#include <vector>

namespace harness {

struct ClusterProfile {
    std::string name;
    std::string description;
    std::string scheduler;  ///< slurm | tpu-vm | gke | local
    std::string accelerator_type;               ///< GPU | TPU | CPU
    std::vector<std::string> accelerator_models;  ///< card xpu_spec.model values it accepts
    long long accelerators_per_node = 0;
    long long cpus_per_node = 0;
    std::vector<std::string> container_runtimes;
    std::string container_default;
    std::string slurm_conf;        ///< SLURM_CONF for client tools (slurm-local)
    std::string constraint;        ///< -C for the default memory size
    std::string constraint_large_memory;  ///< -C when the card asks for the large-memory nodes
    double large_memory_gb = 0;
    std::string qos;
    std::string partition;
    std::string max_time;
    std::string default_time;
    bool gpus_per_node_flag = false;  ///< emit --gpus-per-node
    std::string tpu_runtime_version;
    std::vector<long long> tpu_slices;
    long long tpu_chips_per_host_small = 0;  ///< chips per VM up to the single-host size
    long long tpu_chips_per_host = 0;        ///< chips per VM in multi-host slices
    std::string tpu_default_zone;
    std::vector<std::pair<std::string, std::string>> env;
    std::vector<std::string> modules;
    std::string hf_home;
    std::string python;
    fs::path source;  ///< the profile file

    /// Loads `clusters/<name>.yaml` under `clusters_dir`; an unknown name lists the known ones.
    static ClusterProfile load(const fs::path& clusters_dir, const std::string& name);
    /// Checks a profile file; fills `out` when there is no error.
    static Diagnostics check(const fs::path& file, ClusterProfile* out);

    bool accepts_model(const std::string& xpu_model) const;
};

/// Names of the profiles in `clusters_dir`, sorted.
std::vector<std::string> list_clusters(const fs::path& clusters_dir);

} // namespace harness
