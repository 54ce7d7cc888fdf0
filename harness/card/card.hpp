#pragma once
// The CCL-Bench workload card, version 1, as contributors write it, plus the optional
// `launch:` section that holds what a run needs and an archived card does not say.
#include "card/diagnostic.hpp"
#include "card/yaml_document.hpp"

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace harness {

struct Parallelism {
    long long tp = 1;
    long long pp = 1;
    long long cp = 1;
    long long dp_replicate = 1;
    long long dp_shard = 1;
    long long ep = 1;
    long long pp_mb = 1;
    long long product() const { return tp * pp * cp * dp_replicate * dp_shard; }
};

struct ProfileWindow {
    long long wait = 1;
    long long warmup = 5;
    long long active = 5;
};

/// The card's `launch:` section; every field optional. See docs/card.md.
struct LaunchSpec {
    std::string cluster;
    std::string account;
    std::string qos;
    std::string partition;
    std::string time_limit;
    std::string constraint;
    std::string container_image;
    std::string container_runtime;
    std::string container_cuda; ///< the image's CUDA version as the card declares it ("13.0"), "" when not
    std::string source_repo;
    std::string source_ref;
    std::string model;        ///< Hugging Face model id or path; defaults from hf_url
    std::string dataset_path; ///< the file (or HF dataset id) a serving bench reads; "" when not set
    std::optional<long long> steps;
    std::optional<ProfileWindow> profile;
    std::vector<std::string> args;
    std::vector<std::pair<std::string, std::string>> env;
    std::string tpu_project;
    std::string tpu_zone;
    std::string tpu_name;
    std::string tpu_runtime_version;
    bool tpu_spot = false;
};

class WorkloadCard {
public:
    /// Reads and checks the card; `--set` assignments are applied before checking.
    /// Invalid YAML throws (exit 2); schema problems are returned in `diagnostics()`.
    static WorkloadCard load(const fs::path& path, const std::vector<std::string>& overrides = {});
    static WorkloadCard from_document(YamlDocument doc);

    const Diagnostics& diagnostics() const { return m_diagnostics; }
    const YamlDocument& document() const { return m_doc; }
    /// The name runs and bundles get: set_name's, else the card file's stem.
    std::string name() const;
    /// Names the workload (`run --name`); the caller checks it with workload_name_problem first.
    void set_name(std::string name) { m_name = std::move(name); }

    // The fields the planner reads; defaults where the card is silent.
    std::string description;
    std::string hf_url;
    std::string phase; ///< training | inference | serving (lowercase)
    std::string model_family;
    std::string precision;
    bool moe = false;
    std::optional<long long> batch_size;
    std::string batch_size_scope;
    std::string dataset; ///< workload.data.dataset as written (each framework maps or refuses it)
    std::optional<long long> seq_len;
    std::optional<long long> input_len;
    std::optional<long long> output_len;
    std::optional<long long> iteration;
    std::string xpu_type;
    std::string xpu_model;
    long long total_count = 0;
    long long count_per_node = 0;
    std::optional<double> memory_gb;
    std::string framework; ///< as written
    std::string framework_version;
    std::string compiler;
    Parallelism parallelism;
    std::string comm_library;
    std::vector<std::pair<std::string, std::string>> comm_env;
    std::vector<std::string> traces;
    bool has_executor = false;
    bool has_hardware = false;
    LaunchSpec launch;

private:
    std::string m_name; ///< set_name; empty: the file stem
    void read_fields();

    YamlDocument m_doc;
    Diagnostics m_diagnostics;
};

/// Why `name` cannot name a workload's runs and bundles, or "": 1 to 64 of [A-Za-z0-9._-], not
/// starting with '.' or '-' (it becomes a directory name, a job name and part of a TPU name).
std::string workload_name_problem(const std::string& name);

/// The name a run of the card at `path` gets when no --name is given: the card's directory when
/// the file is the generic `card.yaml` (upstream names a row by its directory,
/// trace_collection/<row>/, and docs/contributing.md has contributors name their card card.yaml);
/// "" (the file stem) otherwise.
std::string row_name(const fs::path& path);

/// The field table the default validation level checks.
const std::vector<struct FieldSpec>& card_schema();

/// The card's top-level sections: found deeper, they are indentation mistakes (errors).
const std::vector<std::string>& card_sections();
/// The sections read where they belong when a card nests them one level too deep (with a warning),
/// as CCL-Bench's loader reads them: Model-executor, which 16 corpus cards indent under workload.
const std::vector<std::string>& card_lifted_sections();

/// Throws an input error (exit 2) for the first `PATH=...` assignment whose PATH names no field
/// of card_schema() (see unknown_field_reason); `flag` ("--set", "--vary") starts the message.
/// Assignments without '=' are left to the flag's own parser.
void check_card_paths(const std::vector<std::string>& assignments, const std::string& flag);

} // namespace harness
