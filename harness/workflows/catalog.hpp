#pragma once
// What this installation has to offer, for `ccl-harness list`: cluster profiles (shipped, the
// user's, with the one that wins), frameworks and the targets they have templates for, the
// template files, and the metrics. Every list is read from its owner, never typed again here.
#include "card/cluster.hpp"
#include "util/fs.hpp"
#include "util/json.hpp"

#include <string>
#include <vector>

namespace harness {

struct CatalogCluster {
    ClusterEntry entry;
    std::string scheduler;
    std::string accelerator; ///< "GPU nvidia_a100 x4"
    std::string description;
    std::string error; ///< a profile that does not check: the first error, the rest left to validate --profile
};

struct CatalogFramework {
    std::string name;
    std::vector<std::string> targets;
};

struct CatalogTemplateSet {
    std::string framework;
    std::string target;
    std::vector<std::string> files; ///< names relative to templates/<framework>/<target>/, sorted
};

struct CatalogMetric {
    std::string name;
    std::string definition;
};

/// A reference card shipped in workloads/<name>/<name>.yaml.
struct CatalogWorkload {
    std::string name;
    fs::path file;
    std::string framework;
    std::string target; ///< launch.cluster; empty when the card names none
    std::string description;
    std::string error; ///< a card that does not load: why
};

struct Catalog {
    std::vector<fs::path> cluster_dirs; ///< where profile names were looked up, first wins
    std::vector<CatalogCluster> clusters;
    std::vector<CatalogFramework> frameworks;
    std::vector<CatalogTemplateSet> templates;
    std::vector<CatalogMetric> metrics;
    std::vector<CatalogWorkload> workloads;
};

/// The catalog sections, in `list`'s order.
const std::vector<std::string>& catalog_sections();

/// Reads the catalog of `home` (templates/) and cluster_search_path(home) (profiles).
Catalog read_catalog(const fs::path& home);

/// `section`'s bare names, one per item (for shell completion); an unknown section is an input error.
std::vector<std::string> catalog_names(const Catalog& catalog, const std::string& section);

/// {"clusters": [...], "frameworks": [...], "templates": [...], "metrics": [...], "workloads": [...]},
/// only `sections`.
Json catalog_to_json(const Catalog& catalog, const std::vector<std::string>& sections);

/// The human form of `sections`: a heading each, then aligned rows.
std::string format_catalog(const Catalog& catalog, const std::vector<std::string>& sections);

} // namespace harness
