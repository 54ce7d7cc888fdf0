#include "provenance/env_capture.hpp"

#include "util/error.hpp"
#include "util/process.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <stdexcept>

namespace harness {

namespace {

constexpr std::string_view k_secret_words[] = {"token", "key", "secret", "password", "credential", "auth"};
constexpr std::string_view k_captured_prefixes[] = {"SLURM_", "NCCL_", "CUDA_",   "TORCH_",     "XLA_", "LIBTPU_",    "JAX_", "FI_",
                                                    "MPICH_", "OMP_",  "MASTER_", "WORLD_SIZE", "RANK", "LOCAL_RANK", "CCL_"};

// A probe report is a few kilobytes; anything far larger is not one, and is not read whole.
constexpr std::uintmax_t k_max_probe_bytes = std::uintmax_t{16} << 20;

/// The report in one probe file, or a message saying why it is not one.
std::string parse_probe(const fs::path& file, ProbeReport& report) {
    std::error_code ec;
    const std::uintmax_t size = fs::file_size(file, ec);
    if (ec || size > k_max_probe_bytes) {
        return ec ? ec.message() : fmt::format("{} bytes, more than a probe report holds", size);
    }
    Json root;
    try {
        root = Json::parse(read_file(file));
    } catch (const std::exception& error) {
        return error.what();
    }
    const Json* hostname = root.find("hostname");
    const Json* rank = root.find("rank");
    const Json* tools = root.find("tools");
    const Json* environment = root.find("environment");
    if (hostname == nullptr || !hostname->is_string() || hostname->as_string().empty()) {
        return "no \"hostname\" string";
    }
    if (rank == nullptr || !rank->is_int() || rank->as_int() < 0) {
        return "no \"rank\" as a non-negative integer";
    }
    if (tools == nullptr || !tools->is_object()) {
        return "no \"tools\" object";
    }
    if (environment == nullptr || !environment->is_object()) {
        return "no \"environment\" object";
    }
    report.hostname = hostname->as_string();
    report.rank = rank->as_int();
    for (const char* name : k_probe_tools) {
        const Json* version = tools->find(name);
        report.tools[name] = version != nullptr && version->is_string() ? *version : Json();
    }
    for (const auto& [name, value] : environment->as_object()) {
        if (value.is_string()) {
            report.environment[name] = value.as_string();
        }
    }
    return {};
}

} // namespace

bool is_secret_name(std::string_view name) {
    const std::string lower = to_lower(name);
    return std::any_of(std::begin(k_secret_words), std::end(k_secret_words),
                       [&](std::string_view word) { return lower.find(word) != std::string::npos; });
}

bool is_captured_name(std::string_view name) {
    const bool allowed = std::any_of(std::begin(k_captured_prefixes), std::end(k_captured_prefixes),
                                     [&](std::string_view prefix) { return starts_with(name, prefix); });
    return allowed && !is_secret_name(name);
}

std::string probe_capture_rules() {
    const auto tuple = [](const auto& words, bool upper) {
        std::string out = "(";
        for (std::string_view word : words) {
            out += fmt::format("\"{}\", ", upper ? std::string(word) : to_lower(word));
        }
        return out + ")";
    };
    return fmt::format("CAPTURED_PREFIXES = {}\nSECRET_WORDS = {}\n", tuple(k_captured_prefixes, true), tuple(k_secret_words, false));
}

Json capture_environment(const EnvironmentMap& env) {
    Json out = Json::object();
    for (const auto& [name, value] : env) {
        if (is_captured_name(name)) {
            out[name] = value;
        }
    }
    return out;
}

EnvironmentMap process_environment() {
    EnvironmentMap env;
    for (auto& [name, value] : current_environment()) {
        env.insert_or_assign(std::move(name), std::move(value));
    }
    return env;
}

std::vector<ProbeReport> take_probe_reports(const fs::path& probe_dir, std::vector<std::string>& problems) {
    std::vector<ProbeReport> reports;
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(probe_dir, ec))) {
        return reports;
    }
    std::vector<fs::path> files;
    if (fs::is_directory(fs::symlink_status(probe_dir, ec))) {
        for (const auto& entry : fs::directory_iterator(probe_dir, ec)) {
            if (entry.path().extension() == ".json" && fs::is_regular_file(entry.symlink_status(ec))) {
                files.push_back(entry.path());
            }
        }
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& file : files) {
        ProbeReport report;
        if (const std::string why = parse_probe(file, report); !why.empty()) {
            problems.push_back(fmt::format("{}: not a probe report: {}", file.string(), why));
            continue;
        }
        reports.push_back(std::move(report));
    }
    fs::remove_all(probe_dir, ec);
    if (ec) {
        throw HarnessError(fmt::format("{}: cannot remove the probe reports: {}", probe_dir.string(), ec.message()));
    }
    std::sort(reports.begin(), reports.end(),
              [](const ProbeReport& a, const ProbeReport& b) { return a.rank != b.rank ? a.rank < b.rank : a.hostname < b.hostname; });
    return reports;
}

} // namespace harness
