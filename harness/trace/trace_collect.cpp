#include "trace/trace_collect.hpp"

#include "trace/trace_names.hpp"
#include "trace/trace_normalize.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>

namespace harness {

namespace {

struct Found {
    fs::path path;
    TraceName name;
    long long rank = -1;          ///< from the name, else from the trace's distributedInfo; -1 unknown
    long long claimed_world = -1; ///< the world size the trace's distributedInfo gives, -1 none
};

std::optional<Found> classify(const fs::path& path) {
    TraceName name = classify_trace_name(path.filename().string());
    if (name.kind == TraceKind::not_a_trace) {
        return std::nullopt;
    }
    Found found{path, name, name.rank.value_or(-1), -1};
    if (!name.rank && name.kind == TraceKind::kineto) {
        // The tensorboard handler's names carry a host and pid, not a rank: Kineto wrote the rank
        // into the trace.
        if (const auto info = read_distributed_info(path)) {
            found.rank = info->rank;
            found.claimed_world = info->world_size;
        }
    }
    return found;
}

} // namespace

CollectedTraces collect_traces(const TraceExpectation& expect, const fs::path& produced, const fs::path& traces_dir) {
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
    const bool serving = expect.serving;
    const bool per_rank = expect.per_rank;
    const bool rank0_only = expect.rank0_only;
    const auto shown = [&](const fs::path& path) { return fs::relative(path, produced).generic_string(); };
    CollectedTraces out;
    std::vector<std::string> problems;
    std::vector<bool> has_torch(static_cast<std::size_t>(expect.world_size), false);
    std::vector<bool> has_nsys(static_cast<std::size_t>(expect.world_size), false);
    // (kind, rank) -> the file that claimed it first; kineto .json and .json.gz share a rank.
    std::map<std::pair<TraceKind, long long>, fs::path> claimed;
    for (const auto& item : found) {
        std::string name;
        const TraceKind kind = item.name.kind;
        if (!per_rank && !item.name.rank) {
            // A serving engine's worker writes one file per profiled window, all with one rank:
            // they are kept as written, not merged into one per-rank name.
            name = shown(item.path);
            fs::create_directories((traces_dir / name).parent_path());
            fs::copy_file(item.path, traces_dir / name, fs::copy_options::overwrite_existing);
            out.files.push_back(name);
            continue;
        }
        if (per_rank && item.rank >= 0 && kind != TraceKind::xla) {
            const long long world = item.claimed_world >= 0 ? item.claimed_world : expect.world_size;
            if (item.rank >= world) {
                problems.push_back(fmt::format("{} is rank {}, but the world size is {}", shown(item.path), item.rank, world));
                continue;
            }
            const auto [at, fresh] = claimed.emplace(std::make_pair(kind, item.rank), item.path);
            if (!fresh) {
                problems.push_back(fmt::format("{} and {} both claim rank {}", shown(at->second), shown(item.path), item.rank));
                continue;
            }
        }
        if (kind == TraceKind::kineto && item.rank >= 0) {
            name = canonical_trace_name(kind, item.rank, item.name.compressed);
            if (item.name.compressed) {
                // Kept compressed: the CCL-Bench tools open .json.gz too.
                fs::copy_file(item.path, traces_dir / name, fs::copy_options::overwrite_existing);
            } else {
                normalize_trace(item.path, traces_dir / name, TraceIdentity{item.rank, expect.world_size, expect.backend});
            }
        } else if ((kind == TraceKind::nsys_rep || kind == TraceKind::nsys_sqlite) && item.rank >= 0) {
            name = canonical_trace_name(kind, item.rank, false);
            fs::copy_file(item.path, traces_dir / name, fs::copy_options::overwrite_existing);
        } else {
            // XLA traces, and traces whose rank is unknown, keep the place the tracer gave them.
            name = shown(item.path);
            fs::create_directories((traces_dir / name).parent_path());
            fs::copy_file(item.path, traces_dir / name, fs::copy_options::overwrite_existing);
        }
        if (item.rank >= 0 && item.rank < expect.world_size) {
            if (kind == TraceKind::kineto) {
                has_torch[static_cast<std::size_t>(item.rank)] = true;
            } else if (kind == TraceKind::nsys_rep) {
                has_nsys[static_cast<std::size_t>(item.rank)] = true;
            }
        }
        out.files.push_back(name);
    }
    std::sort(out.files.begin(), out.files.end());
    out.files.erase(std::unique(out.files.begin(), out.files.end()), out.files.end());

    const auto require = [&](const std::vector<bool>& flags, TraceKind kind) {
        for (std::size_t rank = 0; rank < flags.size(); ++rank) {
            if (!flags[rank]) {
                out.missing.push_back(static_cast<long long>(rank));
                problems.push_back(
                    fmt::format("no {} (rank {})", canonical_trace_name(kind, static_cast<long long>(rank), false), rank));
            }
        }
    };
    if (per_rank && expect.torch_profiler) {
        require(rank0_only ? std::vector<bool>{has_torch.empty() || has_torch[0]} : has_torch, TraceKind::kineto);
    }
    if (per_rank && !serving && expect.nsys) {
        require(has_nsys, TraceKind::nsys_rep);
    }
    if (expect.xplane && out.files.empty()) {
        problems.emplace_back("no TPU trace (*.trace.json.gz or *.xplane.pb)");
    }
    std::sort(out.missing.begin(), out.missing.end());
    out.missing.erase(std::unique(out.missing.begin(), out.missing.end()), out.missing.end());
    out.missing_message = join(problems, "; ");
    return out;
}

} // namespace harness
