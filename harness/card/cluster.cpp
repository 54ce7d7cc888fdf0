#include "card/cluster.hpp"

#include "card/schema.hpp"
#include "card/yaml_document.hpp"
#include "util/error.hpp"
#include "util/home.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>

namespace harness {

namespace {

FieldSpec spec(std::string key, ValueKind kind, Need need = Need::optional, std::vector<FieldSpec> children = {}) {
    FieldSpec out;
    out.key = std::move(key);
    out.kind = kind;
    out.need = need;
    out.children = std::move(children);
    return out;
}

const std::vector<FieldSpec>& profile_schema() {
    static const std::vector<FieldSpec> schema = [] {
        FieldSpec scheduler = spec("scheduler", ValueKind::string, Need::required);
        scheduler.choices = {"slurm", "tpu-vm", "gke", "local"};
        // The order above is the schema's (and docs/schema's) text; the set is Scheduler's.
        scheduler.choices_are_strict = true;
        FieldSpec env = spec("env", ValueKind::free_map);
        env.identifier_keys = true;
        FieldSpec charge_factors = spec("charge_factors", ValueKind::free_map);
        charge_factors.description = "QOS name -> the site's charge per node-hour in that QOS (a number >= 0), for the dry run's "
                                     "allocation hours; a QOS not listed has an unknown charge";
        return std::vector<FieldSpec>{
            spec("name", ValueKind::string, Need::required),
            spec("extends", ValueKind::string),
            spec("description", ValueKind::string, Need::expected),
            scheduler,
            spec("accelerator", ValueKind::map, Need::required,
                 {
                     spec("type", ValueKind::string, Need::required),
                     spec("models", ValueKind::string_list, Need::required),
                     spec("per_node", ValueKind::positive_int, Need::required),
                     spec("default_for", ValueKind::string_list),
                 }),
            spec("cpus_per_node", ValueKind::positive_int),
            spec("container", ValueKind::map, Need::optional,
                 {
                     spec("runtimes", ValueKind::string_list),
                     spec("default", ValueKind::string),
                 }),
            spec("slurm", ValueKind::map, Need::optional,
                 {
                     spec("conf", ValueKind::string),
                     spec("constraint", ValueKind::string),
                     spec("constraint_large_memory", ValueKind::string),
                     spec("large_memory_gb", ValueKind::number),
                     spec("qos", ValueKind::string),
                     spec("partition", ValueKind::string),
                     spec("max_time", ValueKind::string),
                     spec("default_time", ValueKind::string),
                     spec("gpus_per_node_flag", ValueKind::boolean),
                     spec("requires_account", ValueKind::boolean),
                     charge_factors,
                 }),
            spec("tpu", ValueKind::map, Need::optional,
                 {
                     spec("runtime_version", ValueKind::string),
                     spec("slices", ValueKind::string_list),
                     spec("default_zone", ValueKind::string),
                 }),
            env,
            spec("modules", ValueKind::string_list),
            spec("hf_home", ValueKind::string),
            spec("python", ValueKind::string),
            spec("templates", ValueKind::string),
        };
    }();
    return schema;
}

std::string text(const YAML::Node& root, const std::string& path) { return trim(scalar_text(find_node(root, path))); }

long long integer(const YAML::Node& root, const std::string& path) {
    long long value = 0;
    return read_int(find_node(root, path), value) ? value : 0;
}

std::vector<std::string> strings(const YAML::Node& root, const std::string& path) {
    std::vector<std::string> out;
    const YAML::Node node = find_node(root, path);
    if (node.IsSequence()) {
        for (const auto& item : node) {
            if (item.IsScalar()) {
                out.push_back(item.Scalar());
            }
        }
    }
    return out;
}

/// Every key's position, so explain can say where a value came from.
void record_locations(const YamlDocument& doc, const YAML::Node& node, const std::string& prefix,
                      std::map<std::string, std::string>& out) {
    if (!node.IsMap()) {
        return;
    }
    for (auto it = node.begin(); it != node.end(); ++it) {
        const std::string path = prefix.empty() ? it->first.Scalar() : prefix + "." + it->first.Scalar();
        out[path] = doc.location(it->second, path);
        record_locations(doc, it->second, path, out);
    }
}

ClusterProfile load_checked(const fs::path& file) {
    ClusterProfile profile;
    const Diagnostics diagnostics = ClusterProfile::check(file, &profile);
    if (diagnostics.has_errors()) {
        // main adds the one "ccl-harness: error:" prefix; every error follows on its own line.
        std::vector<std::string> errors;
        for (const Diagnostic& item : diagnostics.items()) {
            if (item.severity == Severity::error) {
                errors.push_back(item.text());
            }
        }
        throw input_error(fmt::format("invalid cluster profile {}:\n  {}", enquote(file.string()), join(errors, "\n  ")));
    }
    return profile;
}

} // namespace

const std::vector<FieldSpec>& cluster_schema() { return profile_schema(); }

const char* to_string(ProfileSource source) {
    switch (source) {
    case ProfileSource::shipped: return "shipped";
    case ProfileSource::user: return "user";
    case ProfileSource::path: return "path";
    }
    return "shipped";
}

const char* to_string(Scheduler scheduler) {
    switch (scheduler) {
    case Scheduler::local: return "local";
    case Scheduler::slurm: return "slurm";
    case Scheduler::tpu_vm: return "tpu-vm";
    case Scheduler::gke: return "gke";
    }
    return "local";
}

std::vector<std::string> scheduler_names() {
    std::vector<std::string> out;
    for (const Scheduler scheduler : {Scheduler::local, Scheduler::slurm, Scheduler::tpu_vm, Scheduler::gke}) {
        out.emplace_back(to_string(scheduler));
    }
    return out;
}

std::optional<Scheduler> parse_scheduler(const std::string& text) {
    for (const Scheduler scheduler : {Scheduler::local, Scheduler::slurm, Scheduler::tpu_vm, Scheduler::gke}) {
        if (text == to_string(scheduler)) {
            return scheduler;
        }
    }
    return std::nullopt;
}

bool is_tpu(Scheduler scheduler) { return scheduler == Scheduler::tpu_vm || scheduler == Scheduler::gke; }

bool is_profile_path(const std::string& value) {
    return value.find('/') != std::string::npos || ends_with(value, ".yaml") || ends_with(value, ".yml");
}

fs::path user_clusters_dir() {
    const fs::path base = xdg_base_dir("XDG_CONFIG_HOME", ".config");
    return base.empty() ? base : base / "ccl-harness" / "clusters";
}

std::vector<fs::path> cluster_search_path(const fs::path& home) {
    std::vector<fs::path> out;
    if (const fs::path user = user_clusters_dir(); !user.empty()) {
        out.push_back(user);
    }
    out.push_back(home / "clusters");
    return out;
}

std::vector<ClusterEntry> find_clusters(const fs::path& home) {
    std::map<std::string, ClusterEntry> by_name;
    const std::vector<fs::path> dirs = cluster_search_path(home);
    for (std::size_t i = 0; i < dirs.size(); ++i) {
        const bool user = i + 1 < dirs.size();
        for (const auto& name : list_clusters(dirs[i])) {
            const fs::path file = dirs[i] / (name + ".yaml");
            auto found = by_name.find(name);
            if (found == by_name.end()) {
                by_name.emplace(name, ClusterEntry{name, file, user ? ProfileSource::user : ProfileSource::shipped, {}});
            } else if (!user && found->second.found == ProfileSource::user) {
                found->second.shadows = file;
            }
        }
    }
    std::vector<ClusterEntry> out;
    for (auto& [name, entry] : by_name) {
        out.push_back(std::move(entry));
    }
    return out;
}

ClusterProfile ClusterProfile::find(const std::string& value, const fs::path& home, const fs::path& base) {
    if (value.empty()) {
        throw input_error("empty cluster name");
    }
    if (is_profile_path(value)) {
        const fs::path file = base.empty() || fs::path(value).is_absolute() ? fs::path(value) : base / value;
        std::error_code ec;
        if (!fs::exists(file, ec)) {
            throw input_error(fmt::format("cluster profile {}: no such file", enquote(file.string())));
        }
        if (!fs::is_regular_file(file, ec)) {
            throw input_error(fmt::format("cluster profile {}: not a regular file", enquote(file.string())));
        }
        ClusterProfile profile = load_checked(file);
        profile.found = ProfileSource::path;
        return profile;
    }
    const std::vector<ClusterEntry> entries = find_clusters(home);
    for (const ClusterEntry& entry : entries) {
        if (entry.name == value) {
            ClusterProfile profile = load_checked(entry.file);
            profile.found = entry.found;
            profile.shadows = entry.shadows;
            return profile;
        }
    }
    std::vector<std::string> known;
    for (const ClusterEntry& entry : entries) {
        known.push_back(entry.name);
    }
    std::vector<std::string> searched;
    for (const fs::path& dir : cluster_search_path(home)) {
        searched.push_back(dir.string());
    }
    const std::string suggestion = closest_match(value, known);
    throw input_error(fmt::format("unknown cluster {}{}; known clusters: {} (searched {}; a path to a profile file "
                                  "works too, e.g. --cluster ./mine.yaml)",
                                  enquote(value), suggestion.empty() ? "" : fmt::format(" (did you mean {}?)", enquote(suggestion)),
                                  known.empty() ? "(none)" : join(known, ", "), join(searched, ", ")));
}

std::string ClusterProfile::location(const std::string& key) const {
    const auto at = locations.find(key);
    return at != locations.end() ? at->second : source.string();
}

std::vector<std::string> list_clusters(const fs::path& clusters_dir) {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(clusters_dir, ec)) {
        if (entry.path().extension() == ".yaml") {
            names.push_back(entry.path().stem().string());
        }
    }
    std::sort(names.begin(), names.end());
    return names;
}

Diagnostics ClusterProfile::check(const fs::path& file, ClusterProfile* out) {
    YamlDocument doc = YamlDocument::load(file);
    // `extends: NAME`: a shipped profile's keys fill what this file leaves unset, each located in
    // the shipped file, so a site profile states only what differs. Shipped profiles only: one
    // level, no cycles, and the base is what the harness ships, tested.
    const YAML::Node extends = find_node(doc.root(), "extends");
    std::string base_templates;
    if (extends.IsDefined() && extends.IsScalar()) {
        const std::string base = trim(extends.Scalar());
        const fs::path shipped = harness_home() / "clusters";
        const fs::path base_file = shipped / (base + ".yaml");
        std::error_code ec;
        if (base.empty() || base.find('/') != std::string::npos || !fs::is_regular_file(base_file, ec)) {
            const std::vector<std::string> known = list_clusters(shipped);
            const std::string near = closest_match(base, known);
            Diagnostics bad;
            bad.error(doc.location(extends, "extends"), "extends",
                      fmt::format("no shipped profile {}{}; shipped: {}", enquote(base),
                                  near.empty() ? "" : fmt::format(" (did you mean {}?)", enquote(near)), join(known, ", ")));
            return bad;
        }
        const YamlDocument base_doc = YamlDocument::load(base_file);
        doc.fill_from(base_doc, "", {"name", "description", "templates"});
        const std::string named = text(base_doc.root(), "templates");
        base_templates = named.empty() ? base : named;
    }
    Diagnostics diagnostics = check_document(doc, profile_schema());
    if (diagnostics.has_errors() || out == nullptr) {
        return diagnostics;
    }
    const YAML::Node& root = doc.root();
    ClusterProfile& p = *out;
    p.source = file;
    p.name = text(root, "name");
    if (p.name != file.stem().string()) {
        diagnostics.error(doc.location(find_node(root, "name"), "name"), "name",
                          fmt::format("must match the file name {}", enquote(file.stem().string())));
    }
    p.description = text(root, "description");
    // The schema's choices match case-insensitively, so "Slurm" reaches here and means slurm.
    if (const std::optional<Scheduler> scheduler = parse_scheduler(to_lower(text(root, "scheduler")))) {
        p.scheduler = *scheduler;
    } else {
        diagnostics.error(doc.location(find_node(root, "scheduler"), "scheduler"), "scheduler",
                          fmt::format("must be one of {}", join(scheduler_names(), ", ")));
    }
    p.accelerator_type = text(root, "accelerator.type");
    for (const auto& model : strings(root, "accelerator.models")) {
        p.accelerator_models.push_back(to_lower(model));
    }
    p.default_for = strings(root, "accelerator.default_for");
    p.accelerators_per_node = integer(root, "accelerator.per_node");
    p.cpus_per_node = integer(root, "cpus_per_node");
    p.container_runtimes = strings(root, "container.runtimes");
    p.container_default = text(root, "container.default");
    p.slurm_conf = text(root, "slurm.conf");
    p.constraint = text(root, "slurm.constraint");
    p.constraint_large_memory = text(root, "slurm.constraint_large_memory");
    read_number(find_node(root, "slurm.large_memory_gb"), p.large_memory_gb);
    p.qos = text(root, "slurm.qos");
    p.partition = text(root, "slurm.partition");
    p.max_time = text(root, "slurm.max_time");
    p.default_time = text(root, "slurm.default_time");
    read_bool(find_node(root, "slurm.gpus_per_node_flag"), p.gpus_per_node_flag);
    read_bool(find_node(root, "slurm.requires_account"), p.requires_account);
    if (const YAML::Node factors = find_node(root, "slurm.charge_factors"); factors.IsMap()) {
        for (auto it = factors.begin(); it != factors.end(); ++it) {
            const std::string qos = it->first.Scalar();
            double factor = 0;
            // 0 is a real charge (a site's free QOS); a negative or non-number one is a typo.
            if (!read_number(it->second, factor) || !std::isfinite(factor) || factor < 0) {
                diagnostics.error(doc.location(it->second, "slurm.charge_factors." + qos), "slurm.charge_factors." + qos,
                                  "expected a number >= 0: what the site charges per node-hour in this QOS");
                continue;
            }
            p.charge_factors[qos] = factor;
        }
    }
    p.tpu_runtime_version = text(root, "tpu.runtime_version");
    const YAML::Node slices = find_node(root, "tpu.slices");
    for (std::size_t i = 0; slices.IsSequence() && i < slices.size(); ++i) {
        long long chips = 0;
        if (!read_int(slices[i], chips) || chips <= 0) {
            diagnostics.error(doc.location(slices[i], "tpu.slices"), fmt::format("tpu.slices[{}]", i),
                              "expected a positive chip count");
            continue;
        }
        p.tpu_slices.push_back(chips);
    }
    p.tpu_default_zone = text(root, "tpu.default_zone");
    const YAML::Node env = find_node(root, "env");
    if (env.IsMap()) {
        for (auto it = env.begin(); it != env.end(); ++it) {
            p.env.emplace_back(it->first.Scalar(), it->second.IsScalar() ? it->second.Scalar() : "");
        }
    }
    p.modules = strings(root, "modules");
    p.hf_home = text(root, "hf_home");
    p.python = text(root, "python");
    p.templates = text(root, "templates");
    if (p.templates.empty()) {
        // A profile extending a shipped one renders with its templates unless it names others.
        p.templates = base_templates.empty() ? p.name : base_templates;
    }
    record_locations(doc, root, "", p.locations);
    if (!p.container_default.empty() &&
        std::find(p.container_runtimes.begin(), p.container_runtimes.end(), p.container_default) == p.container_runtimes.end()) {
        diagnostics.error(doc.location(find_node(root, "container.default"), "container.default"), "container.default",
                          "must be one of container.runtimes");
    }
    return diagnostics;
}

ClusterProfile ClusterProfile::load(const fs::path& clusters_dir, const std::string& name) {
    const fs::path file = clusters_dir / (name + ".yaml");
    std::error_code ec;
    if (name.empty() || name.find('/') != std::string::npos || !fs::is_regular_file(file, ec)) {
        const auto known = list_clusters(clusters_dir);
        const std::string suggestion = closest_match(name, known);
        throw input_error(fmt::format("unknown cluster {}{}; known clusters: {}", enquote(name),
                                      suggestion.empty() ? "" : fmt::format(" (did you mean {}?)", enquote(suggestion)),
                                      join(known, ", ")));
    }
    return load_checked(file);
}

bool ClusterProfile::accepts_model(const std::string& xpu_model) const {
    const std::string wanted = to_lower(xpu_model);
    return std::any_of(accelerator_models.begin(), accelerator_models.end(),
                       [&](const std::string& model) { return model == "*" || model == wanted; });
}

bool ClusterProfile::is_default_for(const std::string& xpu_model) const {
    return std::any_of(default_for.begin(), default_for.end(), [&](const std::string& pattern) {
        return ends_with(pattern, "*") ? starts_with(xpu_model, pattern.substr(0, pattern.size() - 1)) : pattern == xpu_model;
    });
}

} // namespace harness
