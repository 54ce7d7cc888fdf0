#include "provenance/provenance.hpp"

#include "provenance/env_capture.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"
#include "util/version.hpp"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>
#include <map>
#include <ostream>
#include <stdexcept>

namespace harness {

namespace {

bool is_lower_hex(std::string_view text, std::size_t digits) {
    return text.size() == digits &&
           std::all_of(text.begin(), text.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

/// 2026-11-23T02:18:39Z, as utc_now() writes it.
bool is_utc_time(std::string_view text) {
    constexpr std::string_view shape = "dddd-dd-ddTdd:dd:ddZ";
    if (text.size() != shape.size()) {
        return false;
    }
    for (std::size_t i = 0; i < shape.size(); ++i) {
        const bool ok = shape[i] == 'd' ? std::isdigit(static_cast<unsigned char>(text[i])) != 0 : text[i] == shape[i];
        if (!ok) {
            return false;
        }
    }
    return true;
}

std::string got(const Json& value) {
    if (value.is_null()) {
        return "null";
    }
    if (value.is_bool()) {
        return value.as_bool() ? "true" : "false";
    }
    if (value.is_number()) {
        return "a number";
    }
    if (value.is_string()) {
        const std::string& text = value.as_string();
        return text.size() > 80 ? enquote(text.substr(0, 77) + "...") : enquote(text);
    }
    return value.is_array() ? "an array" : "an object";
}

class ProvenanceChecker {
public:
    std::vector<std::string> problems;
    /// origin "ingested": what the harness could not know may be null.
    bool ingested = false;

    void add(const std::string& field, const std::string& what) { problems.push_back(field + ": " + what); }

    /// `key` of `object`, or nullptr once its absence is reported (or silently when optional).
    const Json* member(const Json& object, const std::string& parent, const std::string& key, bool optional = false) {
        const Json* value = object.find(key);
        if (value == nullptr && !optional) {
            add(field(parent, key), "missing");
        }
        return value;
    }

    const Json* object(const Json& parent_object, const std::string& parent, const std::string& key) {
        const Json* value = member(parent_object, parent, key);
        if (value != nullptr && !value->is_object()) {
            add(field(parent, key), "expected an object, got " + got(*value));
            return nullptr;
        }
        return value;
    }

    const Json* array(const Json& parent_object, const std::string& parent, const std::string& key) {
        const Json* value = member(parent_object, parent, key);
        if (value != nullptr && !value->is_array()) {
            add(field(parent, key), "expected an array, got " + got(*value));
            return nullptr;
        }
        return value;
    }

    void text(const Json& object, const std::string& parent, const std::string& key, bool nullable = false) {
        const Json* value = member(object, parent, key);
        if (value == nullptr || (nullable && value->is_null())) {
            return;
        }
        if (!value->is_string() || value->as_string().empty()) {
            add(field(parent, key), fmt::format("expected a non-empty string{}, got {}", nullable ? " or null" : "", got(*value)));
        }
    }

    void time(const Json& object, const std::string& parent, const std::string& key, bool nullable) {
        const Json* value = member(object, parent, key);
        if (value == nullptr || (nullable && value->is_null())) {
            return;
        }
        if (!value->is_string() || !is_utc_time(value->as_string())) {
            add(field(parent, key),
                fmt::format("expected a UTC time like 2026-11-23T02:18:39Z{}, got {}", nullable ? " or null" : "", got(*value)));
        }
    }

    /// A hex pin: `digits` lowercase hex digits after `prefix` ("sha256:" for image digests).
    void pin(const Json& object, const std::string& parent, const std::string& key, std::size_t digits, bool nullable,
             const std::string& prefix = "") {
        const Json* value = member(object, parent, key);
        if (value == nullptr || (nullable && value->is_null())) {
            return;
        }
        const bool ok = value->is_string() && starts_with(value->as_string(), prefix) &&
                        is_lower_hex(std::string_view(value->as_string()).substr(prefix.size()), digits);
        if (!ok) {
            add(field(parent, key), fmt::format("expected {}{} lowercase hex digits{}, got {}", prefix.empty() ? "" : prefix + " and ",
                                                digits, nullable ? " or null" : "", got(*value)));
        }
    }

    static std::string field(const std::string& parent, const std::string& key) { return parent.empty() ? key : parent + "." + key; }
    static std::string item(const std::string& parent, std::size_t index) { return fmt::format("{}[{}]", parent, index); }
};

void check_harness(ProvenanceChecker& check, const Json& root) {
    const Json* harness = check.object(root, "", "harness");
    if (harness == nullptr) {
        return;
    }
    check.text(*harness, "harness", "version");
    check.pin(*harness, "harness", "commit", 40, true);
    const Json* dirty = check.member(*harness, "harness", "dirty");
    if (dirty != nullptr && !dirty->is_bool()) {
        check.add("harness.dirty", "expected true or false, got " + got(*dirty));
    }
    // The harness that ingests did not run the job: a pin of its own checkout would claim it did.
    if (const Json* commit = harness->find("commit"); check.ingested && commit != nullptr && !commit->is_null()) {
        check.add("harness.commit", "expected null in an ingested record (the harness did not run the job), got " + got(*commit));
    }
    if (check.ingested && dirty != nullptr && dirty->is_bool() && dirty->as_bool()) {
        check.add("harness.dirty", "expected false in an ingested record (no harness checkout ran the job)");
    }
    const Json* patch = check.member(*harness, "harness", "patch");
    if (patch == nullptr || dirty == nullptr || !dirty->is_bool()) {
        return;
    }
    if (dirty->as_bool() && !(patch->is_string() && patch->as_string() == k_harness_patch_name)) {
        check.add("harness.patch", fmt::format("expected \"{}\" for a dirty checkout, got {}", k_harness_patch_name, got(*patch)));
    } else if (!dirty->as_bool() && !patch->is_null()) {
        check.add("harness.patch", "expected null for a clean checkout, got " + got(*patch));
    }
}

void check_run(ProvenanceChecker& check, const Json& root) {
    const Json* run = check.object(root, "", "run");
    if (run == nullptr) {
        return;
    }
    for (const char* key : {"id", "card", "cluster", "executor", "state"}) {
        check.text(*run, "run", key, check.ingested && std::string_view(key) == "cluster");
    }
    check.time(*run, "run", "started", check.ingested);
    check.time(*run, "run", "finished", true);
    const Json* executor = run->find("executor");
    const bool says_ingested = executor != nullptr && executor->is_string() && executor->as_string() == k_executor_ingested;
    if (check.ingested && executor != nullptr && executor->is_string() && !says_ingested) {
        check.add("run.executor", fmt::format("expected \"{}\" in an ingested record, got {}", k_executor_ingested, got(*executor)));
    } else if (!check.ingested && says_ingested) {
        check.add("run.executor", fmt::format("\"{}\" without origin \"{}\": a harness run names the executor that ran it",
                                              k_executor_ingested, k_origin_ingested));
    }
}

void check_inputs_and_sources(ProvenanceChecker& check, const Json& root) {
    if (const Json* inputs = check.array(root, "", "inputs"); inputs != nullptr) {
        if (inputs->as_array().empty()) {
            check.add("inputs", "empty (a run uses at least a template and a cluster profile)");
        }
        for (std::size_t i = 0; i < inputs->as_array().size(); ++i) {
            const Json& input = inputs->as_array()[i];
            const std::string where = ProvenanceChecker::item("inputs", i);
            if (!input.is_object()) {
                check.add(where, "expected an object, got " + got(input));
                continue;
            }
            check.text(input, where, "path");
            check.pin(input, where, "sha256", 64, false);
        }
    }
    if (const Json* sources = check.array(root, "", "sources"); sources != nullptr) {
        for (std::size_t i = 0; i < sources->as_array().size(); ++i) {
            const Json& source = sources->as_array()[i];
            const std::string where = ProvenanceChecker::item("sources", i);
            if (!source.is_object()) {
                check.add(where, "expected an object, got " + got(source));
                continue;
            }
            check.text(source, where, "repo");
            check.text(source, where, "ref");
            check.pin(source, where, "commit", 40, check.ingested); // ingested: the commit is unknown
        }
    }
}

void check_container(ProvenanceChecker& check, const Json& root) {
    const Json* container = check.member(root, "", "container");
    if (container == nullptr || container->is_null()) {
        return;
    }
    if (!container->is_object()) {
        check.add("container", "expected an object or null, got " + got(*container));
        return;
    }
    check.text(*container, "container", "image");
    check.pin(*container, "container", "digest", 64, true, "sha256:");
    check.text(*container, "container", "runtime");
    if (container->find("build") != nullptr) { // absent in bundles from before images were built
        check.text(*container, "container", "build", true);
    }
    // What the runtime built and ran (docs/containers.md); absent in bundles from before the
    // harness built images, null where it built none.
    if (container->find("image_id") != nullptr) {
        check.pin(*container, "container", "image_id", 64, true);
        check.pin(*container, "container", "containerfile_sha256", 64, true);
        check.pin(*container, "container", "packages_sha256", 64, true);
        if (const Json* base = container->find("base"); base != nullptr && !base->is_null()) {
            if (!base->is_object()) {
                check.add("container.base", "expected an object or null, got " + got(*base));
            } else {
                check.text(*base, "container.base", "tag");
                check.pin(*base, "container.base", "id", 64, true); // null: the runtime could not say
            }
        }
        if (const Json* ran = check.array(*container, "container", "ran"); ran != nullptr) {
            for (std::size_t i = 0; i < ran->as_array().size(); ++i) {
                const Json& entry = ran->as_array()[i];
                const std::string where = ProvenanceChecker::item("container.ran", i);
                if (!entry.is_object()) {
                    check.add(where, "expected an object, got " + got(entry));
                    continue;
                }
                check.text(entry, where, "node");
                check.pin(entry, where, "container_id", 64, false);
                check.pin(entry, where, "image_id", 64, false);
            }
        }
    }
}

void check_hosts(ProvenanceChecker& check, const Json& root) {
    if (const Json* unknown = root.find("hosts"); check.ingested && unknown != nullptr && unknown->is_null()) {
        return;
    }
    const Json* hosts = check.array(root, "", "hosts");
    if (hosts == nullptr) {
        return;
    }
    for (std::size_t i = 0; i < hosts->as_array().size(); ++i) {
        const Json& host = hosts->as_array()[i];
        const std::string where = ProvenanceChecker::item("hosts", i);
        if (!host.is_object()) {
            check.add(where, "expected an object, got " + got(host));
            continue;
        }
        check.text(host, where, "hostname");
        if (const Json* ranks = check.array(host, where, "ranks"); ranks != nullptr) {
            const auto& list = ranks->as_array();
            const bool ok = !list.empty() && std::all_of(list.begin(), list.end(),
                                                         [](const Json& rank) { return rank.is_int() && rank.as_int() >= 0; });
            if (!ok) {
                check.add(where + ".ranks", "expected a non-empty array of non-negative integers");
            }
        }
        if (const Json* tools = check.object(host, where, "tools"); tools != nullptr) {
            for (const char* tool : k_probe_tools) {
                check.text(*tools, where + ".tools", tool, true);
            }
        }
    }
}

/// `key` of `root` is null, which only an ingested record may say (unknown).
bool unknown_in_ingested(const ProvenanceChecker& check, const Json& root, const char* key) {
    const Json* value = root.find(key);
    return check.ingested && value != nullptr && value->is_null();
}

void check_environment_and_scheduler(ProvenanceChecker& check, const Json& root) {
    if (unknown_in_ingested(check, root, "environment")) {
        // unknown: nothing captured it
    } else if (const Json* environment = check.object(root, "", "environment"); environment != nullptr) {
        for (const auto& [name, value] : environment->as_object()) {
            const std::string where = "environment." + name;
            if (is_secret_name(name)) {
                check.add(where, "a secret name: its value must never be recorded");
            } else if (!is_captured_name(name)) {
                check.add(where, "not a name the capture rules keep (docs/bundle.md)");
            }
            if (!value.is_string()) {
                check.add(where, "expected a string, got " + got(value));
            }
        }
    }
    if (unknown_in_ingested(check, root, "scheduler")) {
        // unknown: the job ids were not recorded
    } else if (const Json* scheduler = check.object(root, "", "scheduler"); scheduler != nullptr) {
        if (const Json* job_ids = check.array(*scheduler, "scheduler", "job_ids"); job_ids != nullptr) {
            const auto& list = job_ids->as_array();
            if (!std::all_of(list.begin(), list.end(), [](const Json& id) { return id.is_string(); })) {
                check.add("scheduler.job_ids", "expected an array of strings");
            }
        }
    }
    const Json* reproduces = check.member(root, "", "reproduces", true);
    if (reproduces == nullptr) {
        return;
    }
    if (check.ingested) {
        check.add("reproduces", "an ingested record reproduces no bundle (the harness did not run the job)");
        return;
    }
    if (!reproduces->is_object()) {
        check.add("reproduces", "expected an object, got " + got(*reproduces));
        return;
    }
    check.text(*reproduces, "reproduces", "bundle");
    check.pin(*reproduces, "reproduces", "manifest_sha256", 64, false);
}

/// ingested.ranks_present and total_count: both or neither, a partial set of ranks in ascending
/// order (every rank is said by leaving them out).
void check_ranks_present(ProvenanceChecker& check, const Json& ingested) {
    const Json* ranks = ingested.find(k_ingested_ranks_present);
    const Json* total = ingested.find(k_ingested_total_count);
    if (ranks == nullptr && total == nullptr) {
        return;
    }
    const std::string ranks_field = std::string("ingested.") + k_ingested_ranks_present;
    const std::string total_field = std::string("ingested.") + k_ingested_total_count;
    if (ranks == nullptr || total == nullptr) {
        check.add(ranks == nullptr ? ranks_field : total_field,
                  fmt::format("missing: {} and {} go together", k_ingested_ranks_present, k_ingested_total_count));
        return;
    }
    if (!total->is_int() || total->as_int() < 1) {
        check.add(total_field, "expected a positive integer (the card's total_count), got " + got(*total));
        return;
    }
    if (!ranks->is_array() || ranks->as_array().empty()) {
        check.add(ranks_field, "expected a non-empty array of ranks, got " + got(*ranks));
        return;
    }
    const auto& items = ranks->as_array();
    long long previous = -1;
    for (std::size_t i = 0; i < items.size(); ++i) {
        const Json& item = items[i];
        if (!item.is_int() || item.as_int() <= previous || item.as_int() >= total->as_int()) {
            check.add(ProvenanceChecker::item(ranks_field, i),
                      fmt::format("expected ranks in ascending order, each once, below total_count {}, got {}", total->as_int(),
                                  item.is_int() ? std::to_string(item.as_int()) : got(item)));
            return;
        }
        previous = item.as_int();
    }
    if (static_cast<long long>(items.size()) >= total->as_int()) {
        check.add(ranks_field, fmt::format("names every rank of {}: leave {} and {} out when every rank is there", total->as_int(),
                                           k_ingested_ranks_present, k_ingested_total_count));
    }
}

/// origin: absent (a harness run) or "ingested", whose `ingested` object says when.
void check_origin(ProvenanceChecker& check, const Json& root) {
    const Json* origin = check.member(root, "", "origin", true);
    if (origin == nullptr) {
        return;
    }
    if (!origin->is_string() || origin->as_string() != k_origin_ingested) {
        check.add("origin", fmt::format("expected \"{}\" (or no origin, for a harness run), got {}", k_origin_ingested, got(*origin)));
        return;
    }
    check.ingested = true;
    if (const Json* ingested = check.object(root, "", "ingested"); ingested != nullptr) {
        check.time(*ingested, "ingested", "at", false);
        check_ranks_present(check, *ingested);
    }
}

} // namespace

bool is_ingested_provenance(const Json& provenance) {
    const Json* origin = provenance.is_object() ? provenance.find("origin") : nullptr;
    return origin != nullptr && origin->is_string() && origin->as_string() == k_origin_ingested;
}

std::optional<PresentRanks> ingested_ranks_present(const Json& provenance) {
    if (!is_ingested_provenance(provenance)) {
        return std::nullopt;
    }
    const Json* ingested = provenance.find("ingested");
    const Json* ranks = ingested != nullptr && ingested->is_object() ? ingested->find(k_ingested_ranks_present) : nullptr;
    const Json* total = ingested != nullptr && ingested->is_object() ? ingested->find(k_ingested_total_count) : nullptr;
    if (ranks == nullptr || total == nullptr || !ranks->is_array() || !total->is_int()) {
        return std::nullopt;
    }
    PresentRanks present;
    present.total = total->as_int();
    for (const Json& item : ranks->as_array()) {
        if (item.is_int()) {
            present.ranks.push_back(item.as_int());
        }
    }
    return present;
}

std::optional<std::string> container_digest(const std::string& image) {
    constexpr std::string_view marker = "@sha256:";
    const std::size_t at = image.rfind(marker);
    if (at == std::string::npos) {
        return std::nullopt;
    }
    const std::string hex = image.substr(at + marker.size());
    if (!is_lower_hex(hex, 64)) {
        return std::nullopt;
    }
    return "sha256:" + hex;
}

std::vector<std::string> provenance_problems(const Json& provenance) {
    ProvenanceChecker check;
    if (!provenance.is_object()) {
        check.add("(top level)", "expected a JSON object, got " + got(provenance));
        return check.problems;
    }
    const Json* format = check.member(provenance, "", "format");
    if (format != nullptr && !(format->is_int() && format->as_int() == k_provenance_format)) {
        check.add("format", fmt::format("{} is not a format this harness reads (it reads {})",
                                        format->is_int() ? std::to_string(format->as_int()) : got(*format), k_provenance_format));
        return check.problems;
    }
    check_origin(check, provenance);
    check_harness(check, provenance);
    check_run(check, provenance);
    check_inputs_and_sources(check, provenance);
    check_container(check, provenance);
    check_hosts(check, provenance);
    check_environment_and_scheduler(check, provenance);
    return check.problems;
}

std::vector<std::string> check_provenance_file(const fs::path& dir) {
    const fs::path file = dir / k_provenance_name;
    std::error_code ec;
    const fs::file_status status = fs::symlink_status(file, ec);
    if (!fs::exists(status)) {
        return {fmt::format("{}: missing", k_provenance_name)};
    }
    if (!fs::is_regular_file(status)) {
        return {fmt::format("{}: not a regular file", k_provenance_name)};
    }
    Json provenance;
    try {
        provenance = Json::parse(read_file(file));
    } catch (const std::exception& error) {
        return {fmt::format("{}: {}", k_provenance_name, error.what())};
    }
    std::vector<std::string> problems;
    for (const std::string& problem : provenance_problems(provenance)) {
        problems.push_back(fmt::format("{}: {}", k_provenance_name, problem));
    }
    const Json* harness = provenance.find("harness");
    const Json* patch = harness != nullptr ? harness->find("patch") : nullptr;
    if (patch != nullptr && patch->is_string() && patch->as_string() == k_harness_patch_name &&
        !fs::is_regular_file(fs::symlink_status(dir / k_harness_patch_name, ec))) {
        problems.push_back(fmt::format("{}: named by {} (harness.patch) but missing", k_harness_patch_name, k_provenance_name));
    }
    return problems;
}

} // namespace harness
