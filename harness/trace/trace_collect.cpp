#include "trace/trace_collect.hpp"

#include "trace/trace_names.hpp"
#include "trace/trace_normalize.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"
#include "util/walk.hpp"

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

/// `dir / name`, refused where `dir` or anything below it on the way to the file is a symbolic
/// link: a run directory can be input (attach), and its traces/ or a file in it linked elsewhere
/// would have collection write wherever that points.
fs::path own_target(const fs::path& dir, const std::string& name) {
    fs::path at = dir;
    const auto refuse_link = [&dir](const fs::path& path) {
        std::error_code ec;
        if (fs::is_symlink(fs::symlink_status(path, ec))) {
            const std::string shown = path == dir ? dir.filename().string() + "/"
                                                  : (dir.filename() / fs::relative(path, dir)).generic_string();
            throw input_error(
                fmt::format("{} is a symbolic link; a run directory's folders must be its own ({})", shown, path.string()));
        }
    };
    refuse_link(at);
    for (const fs::path& part : fs::path(name)) {
        at /= part;
        refuse_link(at);
    }
    return at;
}

/// Every file under `produced` that classify_trace_name knows, sorted by path (so that of two
/// files claiming one rank, the first by path is kept).
std::vector<Found> find_traces(const fs::path& produced) {
    std::vector<Found> found;
    for (const TreeEntry& entry : walk_tree(produced, {FileLinks::followed, false}).entries) {
        if (entry.type == fs::file_type::regular) {
            if (auto item = classify(entry.path)) {
                found.push_back(*item);
            }
        }
    }
    std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) { return a.path < b.path; });
    return found;
}

/// One collection: the traces placed so far, which ranks have which kind, and what is wrong.
class Collection {
public:
    Collection(const TraceExpectation& expect, const fs::path& produced, const fs::path& traces_dir)
        : m_expect(expect), m_produced(produced), m_traces_dir(traces_dir),
          m_has_torch(static_cast<std::size_t>(expect.world_size), false),
          m_has_nsys(static_cast<std::size_t>(expect.world_size), false) {}

    void place(const Found& item) {
        const TraceKind kind = item.name.kind;
        if (!m_expect.per_rank && !item.name.rank) {
            // A serving engine's worker writes one file per profiled window, all with one rank:
            // they are kept as written, not merged into one per-rank name.
            keep_as_written(item);
            return;
        }
        if (m_expect.per_rank && item.rank >= 0 && kind != TraceKind::xla && !claim(item)) {
            return;
        }
        std::string name;
        if (kind == TraceKind::kineto && item.rank >= 0) {
            name = canonical_trace_name(kind, item.rank, item.name.compressed);
            if (item.name.compressed) {
                // Kept compressed: the CCL-Bench tools open .json.gz too.
                fs::copy_file(item.path, own_target(m_traces_dir, name), fs::copy_options::overwrite_existing);
            } else {
                normalize_trace(item.path, own_target(m_traces_dir, name),
                                TraceIdentity{item.rank, m_expect.world_size, m_expect.backend});
            }
        } else if ((kind == TraceKind::nsys_rep || kind == TraceKind::nsys_sqlite) && item.rank >= 0) {
            name = canonical_trace_name(kind, item.rank, false);
            fs::copy_file(item.path, own_target(m_traces_dir, name), fs::copy_options::overwrite_existing);
        } else {
            // XLA traces, and traces whose rank is unknown, keep the place the tracer gave them.
            keep_as_written(item);
            return;
        }
        mark(item);
        m_out.files.push_back(name);
    }

    CollectedTraces finish() {
        std::sort(m_out.files.begin(), m_out.files.end());
        m_out.files.erase(std::unique(m_out.files.begin(), m_out.files.end()), m_out.files.end());
        if (m_expect.per_rank && m_expect.torch_profiler) {
            require(m_expect.rank0_only ? std::vector<bool>{m_has_torch.empty() || m_has_torch[0]} : m_has_torch, TraceKind::kineto);
        }
        if (m_expect.per_rank && !m_expect.serving && m_expect.nsys) {
            require(m_has_nsys, TraceKind::nsys_rep);
        }
        if (m_expect.xplane && m_out.files.empty()) {
            m_problems.emplace_back("no TPU trace (*.trace.json.gz or *.xplane.pb)");
        }
        std::sort(m_out.missing.begin(), m_out.missing.end());
        m_out.missing.erase(std::unique(m_out.missing.begin(), m_out.missing.end()), m_out.missing.end());
        m_out.missing_message = join(m_problems, "; ");
        return m_out;
    }

private:
    std::string shown(const fs::path& path) const { return fs::relative(path, m_produced).generic_string(); }

    void keep_as_written(const Found& item) {
        const std::string name = shown(item.path);
        const fs::path target = own_target(m_traces_dir, name);
        fs::create_directories(target.parent_path());
        fs::copy_file(item.path, target, fs::copy_options::overwrite_existing);
        mark(item);
        m_out.files.push_back(name);
    }

    /// False, with the problem recorded, when the rank is past the world or already claimed.
    bool claim(const Found& item) {
        const long long world = item.claimed_world >= 0 ? item.claimed_world : m_expect.world_size;
        if (item.rank >= world) {
            m_problems.push_back(fmt::format("{} is rank {}, but the world size is {}", shown(item.path), item.rank, world));
            return false;
        }
        // (kind, rank) -> the file that claimed it first; kineto .json and .json.gz share a rank.
        const auto [at, fresh] = m_claimed.emplace(std::make_pair(item.name.kind, item.rank), item.path);
        if (!fresh) {
            m_problems.push_back(fmt::format("{} and {} both claim rank {}", shown(at->second), shown(item.path), item.rank));
        }
        return fresh;
    }

    void mark(const Found& item) {
        if (item.rank < 0 || item.rank >= m_expect.world_size) {
            return;
        }
        if (item.name.kind == TraceKind::kineto) {
            m_has_torch[static_cast<std::size_t>(item.rank)] = true;
        } else if (item.name.kind == TraceKind::nsys_rep) {
            m_has_nsys[static_cast<std::size_t>(item.rank)] = true;
        }
    }

    void require(const std::vector<bool>& flags, TraceKind kind) {
        for (std::size_t rank = 0; rank < flags.size(); ++rank) {
            if (!flags[rank]) {
                m_out.missing.push_back(static_cast<long long>(rank));
                m_problems.push_back(
                    fmt::format("no {} (rank {})", canonical_trace_name(kind, static_cast<long long>(rank), false), rank));
            }
        }
    }

    const TraceExpectation& m_expect;
    fs::path m_produced;
    fs::path m_traces_dir;
    std::vector<bool> m_has_torch;
    std::vector<bool> m_has_nsys;
    std::map<std::pair<TraceKind, long long>, fs::path> m_claimed;
    std::vector<std::string> m_problems;
    CollectedTraces m_out;
};

} // namespace

CollectedTraces collect_traces(const TraceExpectation& expect, const fs::path& produced, const fs::path& traces_dir) {
    const std::vector<Found> found = find_traces(produced);
    own_target(traces_dir, "");
    fs::create_directories(traces_dir);
    Collection collection(expect, produced, traces_dir);
    for (const Found& item : found) {
        collection.place(item);
    }
    return collection.finish();
}

} // namespace harness
