#include "run/container_ledger.hpp"

#include "util/error.hpp"
#include "util/json.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace harness {

namespace {

constexpr const char* k_report_prefix = "ran-";
constexpr const char* k_report_suffix = ".json";

/// "sha256:<hex>" and "<hex>" name the same image.
std::string bare_id(std::string id) {
    if (starts_with(id, "sha256:")) {
        id.erase(0, 7);
    }
    return id;
}

/// One report's containers, or a problem naming the file.
std::string read_report(const fs::path& file, const std::string& node, std::vector<RanContainer>& out) {
    Json report;
    try {
        report = Json::parse(read_file(file));
    } catch (const std::exception& error) { // unreadable, or not JSON
        return fmt::format("{}: {}", file.string(), error.what());
    }
    if (!report.is_array()) {
        return fmt::format("{}: expected the JSON array `podman ps --format json` prints", file.string());
    }
    for (const Json& entry : report.as_array()) {
        const Json* id = entry.is_object() ? entry.find("Id") : nullptr;
        const Json* image_id = entry.is_object() ? entry.find("ImageID") : nullptr;
        if (id == nullptr || !id->is_string() || image_id == nullptr || !image_id->is_string()) {
            return fmt::format("{}: a container without Id and ImageID", file.string());
        }
        const Json* image = entry.find("Image");
        out.push_back(
            {node, id->as_string(), image != nullptr && image->is_string() ? image->as_string() : "", bare_id(image_id->as_string())});
    }
    return "";
}

} // namespace

ContainerLedger read_container_ledger(const fs::path& dir) {
    ContainerLedger ledger;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
        return ledger;
    }
    std::vector<fs::path> reports;
    for (fs::directory_iterator it(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (starts_with(name, k_report_prefix) && ends_with(name, k_report_suffix) && fs::is_regular_file(it->symlink_status(ec))) {
            reports.push_back(it->path());
        }
    }
    std::sort(reports.begin(), reports.end());
    for (const fs::path& file : reports) {
        const std::string name = file.filename().string();
        const std::string node = name.substr(4, name.size() - 4 - 5);
        if (std::string problem = read_report(file, node, ledger.containers); !problem.empty()) {
            ledger.problems.push_back(std::move(problem));
        }
    }
    std::sort(ledger.containers.begin(), ledger.containers.end(),
              [](const RanContainer& a, const RanContainer& b) { return std::tie(a.node, a.id) < std::tie(b.node, b.id); });
    return ledger;
}

std::string record_local_containers(ProcessRunner& runner, const std::string& runtime, const fs::path& rendered_dir,
                                    const fs::path& dir, const std::string& node) {
    const std::string filter = fmt::format("label={}={}", k_container_run_label, rendered_dir.string());
    Command list;
    list.argv = {runtime, "ps", "--all", "--no-trunc", "--filter", filter, "--format", "json"};
    list.env = current_environment();
    ExitStatus listed;
    try {
        listed = runner.run(list);
    } catch (const HarnessError& error) {
        return fmt::format("cannot ask {} which images ran: {}", runtime, error.what());
    }
    if (!listed.ok()) {
        return fmt::format("`{} ps` {}: {}", runtime, listed.describe(), trim(listed.output));
    }
    try {
        fs::create_directories(dir);
        write_file_atomic(dir / fmt::format("{}{}{}", k_report_prefix, node, k_report_suffix), listed.output);
    } catch (const std::exception& error) {
        return fmt::format("cannot record which images ran: {}", error.what());
    }
    Command prune;
    prune.argv = {runtime, "container", "prune", "--force", "--filter", filter};
    prune.env = list.env;
    try {
        const ExitStatus pruned = runner.run(prune);
        if (!pruned.ok()) {
            return fmt::format("`{} container prune` {}: {}", runtime, pruned.describe(), trim(pruned.output));
        }
    } catch (const HarnessError& error) {
        return fmt::format("cannot remove the run's containers: {}", error.what());
    }
    return "";
}

} // namespace harness
