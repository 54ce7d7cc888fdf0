#include "trace_collect.hpp"

#include "trace_normalize.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <regex>

namespace harness {

namespace {

struct Found {
    fs::path path;
    long long rank = -1;
    std::string kind;  ///< torch | torch_gz | nsys_rep | nsys_sqlite | xplane
};

std::optional<Found> classify(const fs::path& path) {
    static const std::regex kineto(R"(^kineto_trace_(\d+)\.json$)");
    static const std::regex titan(R"(^rank(\d+)_trace\.json$)");
    static const std::regex megatron(R"(^rank-(\d+)\.json(\.gz)?$)");
    static const std::regex nsys(R"(^nsys_(\d+)\.(nsys-rep|sqlite)$)");
    const std::string name = path.filename().string();
    std::smatch match;
    if (std::regex_match(name, match, kineto) || std::regex_match(name, match, titan)) {
        return Found{path, std::stoll(match[1]), "torch"};
    }
    if (std::regex_match(name, match, megatron)) {
        return Found{path, std::stoll(match[1]), match[2].matched ? "torch_gz" : "torch"};
    }
    if (std::regex_match(name, match, nsys)) {
        return Found{path, std::stoll(match[1]), match[2] == "nsys-rep" ? "nsys_rep" : "nsys_sqlite"};
    }
    if (ends_with(name, ".trace.json") || ends_with(name, ".trace.json.gz") || ends_with(name, ".xplane.pb")) {
        return Found{path, -1, "xplane"};
    }
    return std::nullopt;
}

std::string backend_of(const Plan& plan) {
    return plan.framework == "torch-ddp" || plan.xpu_model == "cpu" ? "gloo" : "nccl";
}

} // namespace

CollectedTraces collect_traces(const Plan& plan, const fs::path& produced, const fs::path& traces_dir) {
    std::vector<Found> found;
    std::error_code ec;
    if (fs::is_directory(produced, ec)) {
        for (const auto& entry : fs::recursive_directory_iterator(produced, ec)) {
            if (entry.is_regular_file()) {
                if (auto item = classify(entry.path())) {
                    found.push_back(*item);
                }
            }
        }
    }
    std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) { return a.path < b.path; });
    fs::create_directories(traces_dir);
    CollectedTraces out;
    std::vector<bool> has_torch(static_cast<std::size_t>(plan.world_size), false);
    std::vector<bool> has_nsys(static_cast<std::size_t>(plan.world_size), false);
    for (const auto& item : found) {
        std::string name;
        if (item.kind == "torch") {
            name = fmt::format("kineto_trace_{}.json", item.rank);
            normalize_trace(item.path, traces_dir / name, TraceIdentity{item.rank, plan.world_size, backend_of(plan)});
        } else if (item.kind == "torch_gz") {
            // Kept compressed: the CCL-Bench tools open .json.gz too.
            name = fmt::format("kineto_trace_{}.json.gz", item.rank);
            fs::copy_file(item.path, traces_dir / name, fs::copy_options::overwrite_existing);
        } else if (item.kind == "nsys_rep" || item.kind == "nsys_sqlite") {
            name = item.path.filename().string();
            fs::copy_file(item.path, traces_dir / name, fs::copy_options::overwrite_existing);
        } else {
            name = fs::relative(item.path, produced).string();
            fs::create_directories((traces_dir / name).parent_path());
            fs::copy_file(item.path, traces_dir / name, fs::copy_options::overwrite_existing);
        }
        if (item.rank >= 0 && item.rank < plan.world_size) {
            auto& flags = item.kind == "nsys_rep" ? has_nsys : has_torch;
            if (item.kind != "nsys_sqlite") {
                flags[static_cast<std::size_t>(item.rank)] = true;
            }
        }
        out.files.push_back(name);
    }
    std::sort(out.files.begin(), out.files.end());
    out.files.erase(std::unique(out.files.begin(), out.files.end()), out.files.end());

    std::vector<std::string> problems;
    const auto expect = [&](const std::vector<bool>& flags, const char* pattern) {
        for (std::size_t rank = 0; rank < flags.size(); ++rank) {
            if (!flags[rank]) {
                out.missing.push_back(static_cast<long long>(rank));
                problems.push_back(fmt::format(fmt::runtime(pattern), rank));
            }
        }
    };
    // Serving engines write traces per worker under their own names; only rank-named tracers are checked per rank.
    const bool per_rank = plan.framework == "torch-ddp" || plan.framework == "torchtitan" || plan.framework == "megatron-lm";
    if (per_rank && plan.traces("torch_profiler")) {
        expect(has_torch, "no kineto_trace_{0}.json (rank {0})");
    }
    if (per_rank && plan.traces("nsys")) {
        expect(has_nsys, "no nsys_{0}.nsys-rep (rank {0})");
    }
    if (plan.traces("xplane") && out.files.empty()) {
        problems.push_back("no TPU trace (*.trace.json.gz or *.xplane.pb)");
    }
    std::sort(out.missing.begin(), out.missing.end());
    out.missing.erase(std::unique(out.missing.begin(), out.missing.end()), out.missing.end());
    out.missing_message = join(problems, "; ");
    return out;
}

} // namespace harness
