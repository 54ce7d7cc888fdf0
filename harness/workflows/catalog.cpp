#include "workflows/catalog.hpp"
#include "util/quote.hpp"

#include "card/card.hpp"
#include "metrics/metrics.hpp"
#include "render/render.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"
#include "util/table.hpp"
#include "util/walk.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace harness {

namespace {

CatalogCluster describe_cluster(const ClusterEntry& entry) {
    CatalogCluster out;
    out.entry = entry;
    try {
        ClusterProfile profile;
        const Diagnostics diagnostics = ClusterProfile::check(entry.file, &profile);
        if (diagnostics.has_errors()) {
            out.error = diagnostics.items().front().text();
            return out;
        }
        out.scheduler = to_string(profile.scheduler);
        out.accelerator = fmt::format("{} {} x{}", profile.accelerator_type, join(profile.accelerator_models, ","),
                                      profile.accelerators_per_node);
        out.description = profile.description;
    } catch (const HarnessError& error) {
        out.error = error.what();
    }
    return out;
}

std::vector<std::string> files_under(const fs::path& dir) {
    std::vector<std::string> out;
    for (const TreeEntry& entry : walk_tree(dir, {FileLinks::followed, false}).entries) {
        if (entry.type == fs::file_type::regular) {
            out.push_back(entry.relative);
        }
    }
    return out;
}

} // namespace

const std::vector<std::string>& catalog_sections() {
    static const std::vector<std::string> k_sections = {"clusters", "frameworks", "templates", "metrics", "workloads"};
    return k_sections;
}

Catalog read_catalog(const fs::path& home) {
    Catalog catalog;
    catalog.cluster_dirs = cluster_search_path(home);
    for (const ClusterEntry& entry : find_clusters(home)) {
        catalog.clusters.push_back(describe_cluster(entry));
    }
    for (const std::string& pair : available_templates(home)) {
        const auto slash = pair.find('/');
        const std::string framework = pair.substr(0, slash);
        const std::string target = pair.substr(slash + 1);
        if (catalog.frameworks.empty() || catalog.frameworks.back().name != framework) {
            catalog.frameworks.push_back({framework, {}});
        }
        catalog.frameworks.back().targets.push_back(target);
        catalog.templates.push_back({framework, target, files_under(home / "templates" / framework / target)});
    }
    for (const auto& [name, summary] : metrics::metric_summaries()) {
        catalog.metrics.push_back({name, summary});
    }
    std::error_code ec;
    for (const auto& dir : fs::directory_iterator(home / "workloads", ec)) {
        const fs::path file = dir.path() / (dir.path().filename().string() + ".yaml");
        if (!dir.is_directory() || !fs::is_regular_file(file, ec)) {
            continue;
        }
        CatalogWorkload workload{dir.path().filename().string(), file, {}, {}, {}, {}};
        try {
            const WorkloadCard card = WorkloadCard::load(file);
            workload.framework = card.framework;
            workload.target = card.launch.cluster;
            workload.description = trim(card.description);
        } catch (const HarnessError& error) {
            workload.error = error.what();
        }
        catalog.workloads.push_back(std::move(workload));
    }
    std::sort(catalog.workloads.begin(), catalog.workloads.end(),
              [](const CatalogWorkload& a, const CatalogWorkload& b) { return a.name < b.name; });
    return catalog;
}

std::vector<std::string> catalog_names(const Catalog& catalog, const std::string& section) {
    std::vector<std::string> out;
    if (section == "clusters") {
        for (const auto& cluster : catalog.clusters) {
            out.push_back(cluster.entry.name);
        }
    } else if (section == "frameworks") {
        for (const auto& framework : catalog.frameworks) {
            out.push_back(framework.name);
        }
    } else if (section == "templates") {
        for (const auto& set : catalog.templates) {
            out.push_back(set.framework + "/" + set.target);
        }
    } else if (section == "metrics") {
        for (const auto& metric : catalog.metrics) {
            out.push_back(metric.name);
        }
    } else if (section == "workloads") {
        for (const auto& workload : catalog.workloads) {
            out.push_back(workload.file.string());
        }
    } else {
        const std::string suggestion = closest_match(section, catalog_sections());
        throw input_error(fmt::format("unknown list section {}{}; sections: {}", enquote(section),
                                      suggestion.empty() ? "" : fmt::format(" (did you mean {}?)", enquote(suggestion)),
                                      join(catalog_sections(), ", ")));
    }
    return out;
}

Json catalog_to_json(const Catalog& catalog, const std::vector<std::string>& sections) {
    Json out = Json::object();
    for (const auto& section : sections) {
        Json items = Json::array();
        if (section == "clusters") {
            for (const auto& cluster : catalog.clusters) {
                Json item = Json(Json::Object{{"name", cluster.entry.name},
                                              {"scheduler", cluster.scheduler},
                                              {"accelerator", cluster.accelerator},
                                              {"description", cluster.description},
                                              {"found", to_string(cluster.entry.found)},
                                              {"file", cluster.entry.file.string()}});
                if (!cluster.entry.shadows.empty()) {
                    item["shadows"] = cluster.entry.shadows.string();
                }
                if (!cluster.error.empty()) {
                    item["error"] = cluster.error;
                }
                items.push_back(item);
            }
        } else if (section == "frameworks") {
            for (const auto& framework : catalog.frameworks) {
                items.push_back(Json(Json::Object{{"name", framework.name}, {"targets", json_string_array(framework.targets)}}));
            }
        } else if (section == "templates") {
            for (const auto& set : catalog.templates) {
                items.push_back(
                    Json(Json::Object{{"framework", set.framework}, {"target", set.target}, {"files", json_string_array(set.files)}}));
            }
        } else if (section == "metrics") {
            for (const auto& metric : catalog.metrics) {
                items.push_back(Json(Json::Object{{"name", metric.name}, {"definition", metric.definition}}));
            }
        } else if (section == "workloads") {
            for (const auto& workload : catalog.workloads) {
                Json item = Json(Json::Object{{"name", workload.name},
                                              {"file", workload.file.string()},
                                              {"framework", workload.framework},
                                              {"target", workload.target},
                                              {"description", workload.description}});
                if (!workload.error.empty()) {
                    item["error"] = workload.error;
                }
                items.push_back(item);
            }
        } else {
            catalog_names(catalog, section); // throws the unknown-section error
        }
        out[section] = items;
    }
    return out;
}

std::string format_catalog(const Catalog& catalog, const std::vector<std::string>& sections) {
    std::string out;
    for (const auto& section : sections) {
        std::vector<std::vector<std::string>> rows;
        std::string heading;
        if (section == "clusters") {
            std::vector<std::string> searched;
            for (const fs::path& dir : catalog.cluster_dirs) {
                searched.push_back(dir.string());
            }
            heading = fmt::format("clusters (--cluster NAME; first found wins: {}):", join(searched, ", "));
            for (const auto& cluster : catalog.clusters) {
                std::string where = fmt::format("{} {}", to_string(cluster.entry.found), cluster.entry.file.string());
                if (!cluster.entry.shadows.empty()) {
                    where += " (hides the shipped one)";
                }
                if (!cluster.error.empty()) {
                    rows.push_back({cluster.entry.name, "invalid: " + cluster.error, "", where});
                } else {
                    rows.push_back({cluster.entry.name, cluster.scheduler, cluster.accelerator, where});
                }
            }
        } else if (section == "frameworks") {
            heading = "frameworks (Model-executor.framework.name) and the targets they have templates for:";
            for (const auto& framework : catalog.frameworks) {
                rows.push_back({framework.name, join(framework.targets, ", ")});
            }
        } else if (section == "templates") {
            heading = "templates (templates/<framework>/<target>/):";
            for (const auto& set : catalog.templates) {
                rows.push_back({set.framework + "/" + set.target, join(set.files, ", ")});
            }
        } else if (section == "metrics") {
            heading = "metrics (ccl-harness metrics --metric NAME):";
            for (const auto& metric : catalog.metrics) {
                rows.push_back({metric.name, metric.definition});
            }
        } else if (section == "workloads") {
            heading = "workloads (reference cards: ccl-harness run FILE):";
            for (const auto& workload : catalog.workloads) {
                rows.push_back({workload.file.string(), workload.error.empty() ? workload.framework : "invalid: " + workload.error,
                                workload.target.empty() ? "-" : workload.target});
            }
        } else {
            catalog_names(catalog, section); // throws the unknown-section error
        }
        // Profile and card file names are the user's (a ~/.config profile, a card under a home):
        // each cell one escaped line, so none can draw a row of its own or move the cursor.
        for (auto& row : rows) {
            for (auto& cell : row) {
                cell = terminal_text(cell);
            }
        }
        out += (out.empty() ? "" : "\n") + terminal_text(heading) + "\n" + format_table(rows, "  ");
    }
    return out;
}

} // namespace harness
