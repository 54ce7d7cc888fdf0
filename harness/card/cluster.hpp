#pragma once
// A cluster profile (`clusters/<name>.yaml`): site facts only, never run facts.
#include "card/diagnostic.hpp"
#include "util/fs.hpp"

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace harness {

/// Where a profile file was found: shipped with the harness (<home>/clusters), the user's
/// configuration ($XDG_CONFIG_HOME/ccl-harness/clusters), or named by path.
enum class ProfileSource { shipped, user, path };

const char* to_string(ProfileSource source);

/// Who starts the ranks: a profile's `scheduler:`. The YAML spelling (to_string) is what
/// plan.json, explain and templates ({{plan.scheduler}}) show.
enum class Scheduler { local, slurm, tpu_vm, gke };

/// "local", "slurm", "tpu-vm", "gke".
const char* to_string(Scheduler scheduler);
/// The Scheduler spelled `text` (to_string's spelling); nullopt for any other text.
std::optional<Scheduler> parse_scheduler(const std::string& text);
/// Every spelling parse_scheduler accepts, in declaration order (the profile schema's choices).
std::vector<std::string> scheduler_names();
/// True for the schedulers that run on Cloud TPU (a TPU VM or a GKE node pool).
bool is_tpu(Scheduler scheduler);

struct ClusterProfile {
    std::string name;
    std::string description;
    Scheduler scheduler = Scheduler::local;
    std::string accelerator_type;                ///< GPU | TPU | CPU
    std::vector<std::string> accelerator_models; ///< card xpu_spec.model values it accepts
    /// accelerator.default_for: the xpu_spec.model values (a trailing `*` matches any rest) for
    /// which a card naming no cluster runs here (infer_target).
    std::vector<std::string> default_for;
    long long accelerators_per_node = 0;
    long long cpus_per_node = 0;
    std::vector<std::string> container_runtimes;
    std::string container_default;
    std::string slurm_conf;              ///< SLURM_CONF for client tools (slurm-local)
    std::string constraint;              ///< -C for the default memory size
    std::string constraint_large_memory; ///< -C when the card asks for the large-memory nodes
    double large_memory_gb = 0;
    std::string qos;
    std::string partition;
    std::string max_time;
    std::string default_time;
    bool gpus_per_node_flag = false; ///< emit --gpus-per-node
    bool requires_account = false;   ///< slurm.requires_account: a job without launch.account is refused (sbatch -A)
    /// slurm.charge_factors: QOS -> what the site charges the allocation per node-hour in it, as
    /// the site publishes it; a QOS not listed has an unknown charge (never guessed).
    std::map<std::string, double> charge_factors;
    std::string tpu_runtime_version;
    std::vector<long long> tpu_slices;
    std::string tpu_default_zone;
    std::vector<std::pair<std::string, std::string>> env;
    std::vector<std::string> modules;
    std::string hf_home;
    std::string python;
    std::string templates; ///< templates/<framework>/<templates>/ to render with; defaults to `name`
    fs::path source;       ///< the profile file
    ProfileSource found = ProfileSource::shipped;
    fs::path shadows;                             ///< the shipped profile of the same name a user profile hides, if any
    std::map<std::string, std::string> locations; ///< dotted key -> "file:line:col", for explain

    /// Loads `clusters/<name>.yaml` under `clusters_dir`; an unknown name lists the known ones.
    static ClusterProfile load(const fs::path& clusters_dir, const std::string& name);
    /// What `--cluster VALUE` means: a path when VALUE contains '/' or ends in .yaml/.yml
    /// (relative to `base`, the current directory when empty), else a name looked up in
    /// user_clusters_dir() and then <home>/clusters. Checked like any profile; an unknown name
    /// lists the names found and the directories searched.
    static ClusterProfile find(const std::string& value, const fs::path& home, const fs::path& base = {});
    /// Checks a profile file; fills `out` when there is no error.
    static Diagnostics check(const fs::path& file, ClusterProfile* out);

    bool accepts_model(const std::string& xpu_model) const;
    /// True when a card with this xpu_spec.model and no cluster runs here (accelerator.default_for).
    bool is_default_for(const std::string& xpu_model) const;
    /// "file:line:col" of a dotted key, or the file name when the profile does not set it.
    std::string location(const std::string& key) const;
};

/// True when a --cluster value names a file rather than a profile.
bool is_profile_path(const std::string& value);

/// $XDG_CONFIG_HOME/ccl-harness/clusters (an absolute XDG_CONFIG_HOME only, as the XDG spec
/// says), else $HOME/.config/ccl-harness/clusters; empty when neither is set.
fs::path user_clusters_dir();

/// The directories a profile name is looked up in, first wins: user_clusters_dir() (when
/// known), then <home>/clusters.
std::vector<fs::path> cluster_search_path(const fs::path& home);

/// One profile file a name resolves to.
struct ClusterEntry {
    std::string name;
    fs::path file;
    ProfileSource found = ProfileSource::shipped;
    fs::path shadows; ///< the shipped file hidden by a user profile of the same name
};

/// Every profile name in cluster_search_path(home), sorted, each with the file that wins.
std::vector<ClusterEntry> find_clusters(const fs::path& home);

/// Names of the profiles in `clusters_dir`, sorted.
std::vector<std::string> list_clusters(const fs::path& clusters_dir);

/// The field table profiles are checked against (`ccl-harness schema cluster` prints it).
const std::vector<struct FieldSpec>& cluster_schema();

} // namespace harness
