#include "metrics/nsys_sqlite.hpp"

#include "metrics/sqlite_guarded.hpp"
#include "metrics/step_marker_names.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <charconv>
#include <fmt/format.h>
#include <unordered_map>

// The schema facts below are NVIDIA's SQLite schema reference ("Source:
// https://docs.nvidia.com/nsight-systems/UserGuide/index.html#sqlite-schema-reference", as kept in
// github.com/chenbobby/cuda_lab nsys_go/events/schema.sql @8349ae47: StringIds :2-7,
// TARGET_INFO_GPU :72-114, META_DATA_EXPORT :201-206, CUPTI_ACTIVITY_KIND_KERNEL :693-720,
// NVTX_EVENTS :933-953), the queries of the CCL-Bench tools (tools/communication_fraction/
// communication_fraction.py:65-70: StringIds(id, value), kernel demangledName / shortName as its
// ids; tools/load_imbalance_ratio/load_imbalance_ratio.py:47: deviceId, start, end in ns) and a
// real 2022.1 export (schema 2.9.1, tests/fixtures/nsys/README.md), whose metadata table is still
// called EXPORT_META_DATA.

namespace harness::metrics {

namespace {

constexpr std::string_view k_kernels = "CUPTI_ACTIVITY_KIND_KERNEL";
constexpr std::string_view k_nvtx = "NVTX_EVENTS";
constexpr std::string_view k_gpus = "TARGET_INFO_GPU";
constexpr std::string_view k_strings = "StringIds";
/// Nsight Systems 2024 and later name it META_DATA_EXPORT; 2022 and 2023 EXPORT_META_DATA.
constexpr std::string_view k_meta_tables[] = {"META_DATA_EXPORT", "EXPORT_META_DATA"};
/// A version string is a few characters ("3.15.1"); more is kept out of the trace.
constexpr std::size_t k_max_version_chars = 64;

bool has_column(const std::vector<std::string>& columns, std::string_view name) {
    return std::any_of(columns.begin(), columns.end(), [&](const std::string& c) { return c == name; });
}

/// `name` when the table has it, else NULL: a column missing from an older schema reads as NULL.
std::string column_or_null(const std::vector<std::string>& columns, std::string_view name) {
    return has_column(columns, name) ? fmt::format("\"{}\"", name) : std::string("NULL");
}

/// StringIds looked up one id at a time (its id is the rowid), each kernel name interned once.
class StringIds {
public:
    explicit StringIds(GuardedSqlite& db) : m_db(db) {
        if (db.has_table(k_strings)) {
            const auto columns = db.columns(k_strings);
            if (has_column(columns, "id") && has_column(columns, "value")) {
                m_lookup.emplace(db.prepare("SELECT value FROM StringIds WHERE id = ?1"));
            }
        }
    }

    /// The text of string `id`; `where` names the row for the error when it does not resolve.
    std::string text(long long id, const std::string& where) {
        if (!m_lookup) {
            m_db.fail(fmt::format("{}: string id {}, but the export has no StringIds table", where, id));
        }
        m_lookup->reset();
        m_lookup->bind(1, id);
        if (!m_lookup->step() || m_lookup->is_null(0)) {
            m_db.fail(fmt::format("{}: string id {} is not in StringIds", where, id));
        }
        return std::string(m_lookup->text(0));
    }

    NameId name(long long id, NameTable& names, const std::string& where) {
        if (const auto found = m_cache.find(id); found != m_cache.end()) {
            return found->second;
        }
        const NameId name = names.intern(text(id, where));
        m_cache.emplace(id, name);
        return name;
    }

private:
    GuardedSqlite& m_db;
    std::optional<SqliteStatement> m_lookup;
    std::unordered_map<long long, NameId> m_cache;
};

/// An integer time stamp (ns) of a row, or the error naming the row and the column.
long long time_ns(GuardedSqlite& db, const SqliteStatement& row, int column, const std::string& where, const char* field) {
    if (row.is_null(column)) {
        db.fail(fmt::format("{}: {} is NULL", where, field));
    }
    if (!row.is_integer(column)) {
        db.fail(fmt::format("{}: {} is not an integer (ns)", where, field));
    }
    return row.integer(column);
}

/// (end - start) in ns, refused when it is negative or does not fit.
long long duration_ns(GuardedSqlite& db, long long start, long long end, const std::string& where) {
    long long duration = 0;
    if (end < start || __builtin_sub_overflow(end, start, &duration)) {
        db.fail(fmt::format("{}: end ({}) before start ({})", where, end, start));
    }
    return duration;
}

constexpr double k_ns_per_us = 1000.0;

/// ProfilerStep#N's N (digits to the end of the name, as the JSON reader takes it), else -1.
long long profiler_step_number(std::string_view name) {
    const std::string_view digits = name.substr(k_profiler_step.size());
    long long value = -1;
    if (digits.empty() || !all_digits(digits)) {
        return -1;
    }
    const auto result = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    return result.ec == std::errc() ? value : -1;
}

void read_kernels(GuardedSqlite& db, StringIds& strings, std::optional<long long> device, RankTrace& trace) {
    if (!db.has_table(k_kernels)) {
        return; // a window without kernels, or an export without CUDA tracing: zero kernels
    }
    const auto columns = db.columns(k_kernels);
    if (!has_column(columns, "start") || !has_column(columns, "end")) {
        db.fail(fmt::format("{} has no start and end columns", k_kernels));
    }
    if (!has_column(columns, "demangledName") && !has_column(columns, "shortName")) {
        db.fail(fmt::format("{} has neither demangledName nor shortName", k_kernels));
    }
    const bool by_device = device && has_column(columns, "deviceId");
    SqliteStatement rows = db.prepare(fmt::format(R"(SELECT "start", "end", {}, {}, {} FROM {}{})",
                                                  column_or_null(columns, "deviceId"), column_or_null(columns, "demangledName"),
                                                  column_or_null(columns, "shortName"), k_kernels,
                                                  by_device ? R"( WHERE "deviceId" = ?1)" : ""));
    if (by_device) {
        rows.bind(1, *device);
    }
    std::unordered_map<long long, NameId> device_names;
    for (std::uint64_t row = 1; rows.step(); ++row) {
        ++trace.events;
        const std::string where = fmt::format("{} row {}", k_kernels, row);
        const long long start = time_ns(db, rows, 0, where, "start");
        const long long end = time_ns(db, rows, 1, where, "end");
        const long long duration = duration_ns(db, start, end, where);
        // The demangled name is what Kineto writes for a kernel, so the one classifier sees the
        // same text; the short name stands in where an export left it NULL.
        const int name_column = !rows.is_null(3) ? 3 : 4;
        if (rows.is_null(name_column)) {
            db.fail(fmt::format("{}: no name (demangledName and shortName are NULL)", where));
        }
        if (!rows.is_integer(name_column)) {
            db.fail(fmt::format("{}: {} is not a StringIds id", where, name_column == 3 ? "demangledName" : "shortName"));
        }
        const NameId name = strings.name(rows.integer(name_column), trace.names, where);
        // Kineto gives a kernel its device as pid, which the straggler tool groups by.
        const long long device_id = rows.is_integer(2) ? rows.integer(2) : 0;
        auto thread = device_names.find(device_id);
        if (thread == device_names.end()) {
            thread = device_names.emplace(device_id, trace.names.intern(std::to_string(device_id))).first;
        }
        trace.kernels.push_back(
            Span{static_cast<double>(start) / k_ns_per_us, static_cast<double>(duration) / k_ns_per_us, name, thread->second});
    }
}

/// NVTX ranges whose names are the step markers of the JSON traces (ProfilerStep#N from
/// torch.profiler's record_function, vLLM's execute_context_*); other ranges and marks are not read.
void read_steps(GuardedSqlite& db, StringIds& strings, RankTrace& trace) {
    if (!db.has_table(k_nvtx)) {
        return;
    }
    const auto columns = db.columns(k_nvtx);
    if (!has_column(columns, "start") || !has_column(columns, "end")) {
        db.fail(fmt::format("{} has no start and end columns", k_nvtx));
    }
    // A range has an end; marks and domain or category registrations do not.
    SqliteStatement rows = db.prepare(fmt::format(R"(SELECT "start", "end", {}, {} FROM {} WHERE "end" IS NOT NULL)",
                                                  column_or_null(columns, "text"), column_or_null(columns, "textId"), k_nvtx));
    for (std::uint64_t row = 1; rows.step(); ++row) {
        ++trace.events;
        const std::string where = fmt::format("{} row {}", k_nvtx, row);
        std::string text;
        if (!rows.is_null(2)) {
            text = rows.text(2);
        } else if (rows.is_integer(3)) {
            text = strings.text(rows.integer(3), where);
        }
        StepKind kind = StepKind::profiler_step;
        const long long number = starts_with(text, k_profiler_step) ? profiler_step_number(text) : -1;
        if (number >= 0) {
            kind = StepKind::profiler_step;
        } else if (starts_with(text, "execute_context_")) {
            kind = StepKind::vllm_execute_context;
        } else {
            continue;
        }
        const long long start = time_ns(db, rows, 0, where, "start");
        const long long end = time_ns(db, rows, 1, where, "end");
        const long long duration = duration_ns(db, start, end, where);
        trace.steps.push_back(StepMarker{static_cast<double>(start) / k_ns_per_us, static_cast<double>(duration) / k_ns_per_us, number,
                                         trace.names.intern(text), kind});
    }
}

void read_gpus(GuardedSqlite& db, std::optional<long long> device, RankTrace& trace) {
    if (!db.has_table(k_gpus)) {
        return; // time-window exports often lack it
    }
    const auto columns = db.columns(k_gpus);
    SqliteStatement rows = db.prepare(fmt::format("SELECT {}, {}, {}, {} FROM {}", column_or_null(columns, "id"),
                                                  column_or_null(columns, "name"), column_or_null(columns, "smCount"),
                                                  column_or_null(columns, "memoryBandwidth"), k_gpus));
    while (rows.step() && trace.device_info.size() < k_max_device_names) {
        DeviceInfo info;
        info.id = rows.is_integer(0) ? rows.integer(0) : -1;
        if (device && info.id != *device) {
            continue;
        }
        info.name = std::string(rows.text(1).substr(0, 256));
        info.sm_count = rows.is_integer(2) ? std::max(0LL, rows.integer(2)) : 0;
        // Bytes per second, though the schema's comment calls it "memory transferred (B)": the
        // real export's GTX 1060 records 192192000000, its 192 GB/s.
        info.memory_bandwidth = rows.is_number(3) ? std::max(0.0, rows.real(3)) : 0;
        if (!info.name.empty()) {
            trace.device_names.push_back(info.name);
        }
        trace.device_info.push_back(std::move(info));
    }
}

void read_schema_version(GuardedSqlite& db, RankTrace& trace) {
    for (const std::string_view table : k_meta_tables) {
        if (!db.has_table(table)) {
            continue;
        }
        const auto columns = db.columns(table);
        if (!has_column(columns, "name") || !has_column(columns, "value")) {
            continue;
        }
        SqliteStatement rows = db.prepare(fmt::format("SELECT value FROM {} WHERE name = 'EXPORT_SCHEMA_VERSION' LIMIT 1", table));
        if (rows.step()) {
            trace.schema_version = std::string(rows.text(0).substr(0, k_max_version_chars));
            return;
        }
    }
}

} // namespace

std::vector<long long> nsys_kernel_devices(const fs::path& file) {
    GuardedSqlite db(file);
    if (!db.has_table(k_kernels) || !has_column(db.columns(k_kernels), "deviceId")) {
        return {};
    }
    SqliteStatement rows = db.prepare(fmt::format(R"(SELECT DISTINCT "deviceId" FROM {} ORDER BY 1)", k_kernels));
    std::vector<long long> devices;
    while (rows.step()) {
        if (!rows.is_integer(0)) {
            db.fail(fmt::format("{}: a deviceId that is not an integer", k_kernels));
        }
        if (devices.size() == k_max_device_names) {
            db.fail(fmt::format("{}: kernels on more than {} devices", k_kernels, k_max_device_names));
        }
        devices.push_back(rows.integer(0));
    }
    return devices;
}

RankTrace read_nsys_sqlite(const fs::path& file, std::optional<long long> device) {
    GuardedSqlite db(file);
    RankTrace trace;
    trace.file = file;
    trace.format = TraceFormat::nsys_sqlite;
    trace.bytes = db.file_bytes();
    StringIds strings(db);
    read_schema_version(db, trace);
    read_gpus(db, device, trace);
    read_kernels(db, strings, device, trace);
    read_steps(db, strings, trace);
    return trace;
}

NsysCheck check_nsys_sqlite(const fs::path& file) {
    NsysCheck check;
    try {
        GuardedSqlite db(file);
        check.kernel_table = db.has_table(k_kernels);
        if (!check.kernel_table) {
            check.problem = fmt::format("no {} table (exported without CUDA tracing, or a time window without kernels)", k_kernels);
        }
    } catch (const TraceReadError& error) {
        check.problem = error.problem();
    } catch (const HarnessError& error) {
        check.problem = error.what();
    }
    return check;
}

} // namespace harness::metrics
