#include "store/results_store.hpp"

#include "metrics/metrics.hpp"
#include "store/run_snapshot.hpp"
#include "util/error.hpp"
#include "util/sha256.hpp"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <regex>
#include <set>

namespace harness::store {

namespace {

// The application id marks a database as ours, so another program's SQLite file is refused
// rather than written into ("CCLR").
constexpr int k_application_id = 0x43434c52;
// Many writers (a job array's tasks) wait for each other rather than fail.
constexpr int k_busy_timeout_ms = 60000;

const char* const k_schema = R"sql(
CREATE TABLE IF NOT EXISTS runs (
  run_id TEXT PRIMARY KEY, results_root TEXT NOT NULL, run_dir TEXT NOT NULL, card TEXT, framework TEXT,
  cluster TEXT, executor TEXT, state TEXT, failure_class TEXT, failure_reason TEXT, created TEXT, started TEXT,
  ended TEXT, bundle_path TEXT, bundle_sha256 TEXT, fingerprint TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS runs_root ON runs(results_root);
CREATE TABLE IF NOT EXISTS card_fields (run_id TEXT NOT NULL REFERENCES runs ON DELETE CASCADE, path TEXT NOT NULL, value TEXT);
CREATE INDEX IF NOT EXISTS card_fields_path ON card_fields(path, value);
CREATE INDEX IF NOT EXISTS card_fields_run ON card_fields(run_id);
CREATE TABLE IF NOT EXISTS overrides (run_id TEXT NOT NULL REFERENCES runs ON DELETE CASCADE, path TEXT NOT NULL, value TEXT);
CREATE TABLE IF NOT EXISTS pins (run_id TEXT NOT NULL REFERENCES runs ON DELETE CASCADE, repo TEXT NOT NULL, sha TEXT);
CREATE TABLE IF NOT EXISTS render_keys (run_id TEXT PRIMARY KEY REFERENCES runs ON DELETE CASCADE, key TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS render_keys_key ON render_keys(key);
CREATE TABLE IF NOT EXISTS metrics (run_id TEXT NOT NULL REFERENCES runs ON DELETE CASCADE, name TEXT NOT NULL, value REAL,
  unit TEXT, implausible INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (run_id, name));
)sql";

const std::set<std::string> k_run_columns = {"state", "cluster", "framework", "card", "executor"};

class Statement {
public:
    Statement(sqlite3* db, const std::string& sql, const fs::path& file) : m_db(db), m_file(file) {
        if (sqlite3_prepare_v2(db, sql.c_str(), -1, &m_stmt, nullptr) != SQLITE_OK) {
            fail();
        }
    }
    ~Statement() { sqlite3_finalize(m_stmt); }
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;

    Statement& bind(int index, const std::string& text) {
        sqlite3_bind_text(m_stmt, index, text.c_str(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
        return *this;
    }
    Statement& bind(int index, std::optional<double> value) {
        if (value) {
            sqlite3_bind_double(m_stmt, index, *value);
        } else {
            sqlite3_bind_null(m_stmt, index);
        }
        return *this;
    }
    Statement& bind(int index, int value) {
        sqlite3_bind_int(m_stmt, index, value);
        return *this;
    }
    /// One step; true while a row is ready.
    bool step() {
        const int rc = sqlite3_step(m_stmt);
        if (rc == SQLITE_ROW) {
            return true;
        }
        if (rc != SQLITE_DONE) {
            fail();
        }
        return false;
    }
    void run() {
        step();
        sqlite3_reset(m_stmt);
        sqlite3_clear_bindings(m_stmt);
    }
    std::string text(int column) const {
        const auto* value = sqlite3_column_text(m_stmt, column);
        return value ? reinterpret_cast<const char*>(value) : "";
    }
    std::optional<double> real(int column) const {
        if (sqlite3_column_type(m_stmt, column) == SQLITE_NULL) {
            return std::nullopt;
        }
        return sqlite3_column_double(m_stmt, column);
    }
    int integer(int column) const { return sqlite3_column_int(m_stmt, column); }

private:
    [[noreturn]] void fail() const {
        throw HarnessError(m_file.string() + ": results store: " + sqlite3_errmsg(m_db) +
                           "; rebuild it from the results directories with `ccl-harness results index --rebuild`");
    }
    sqlite3* m_db;
    sqlite3_stmt* m_stmt = nullptr;
    fs::path m_file;
};

void exec(sqlite3* db, const std::string& sql, const fs::path& file) {
    char* message = nullptr;
    if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
        std::string why = message ? message : sqlite3_errmsg(db);
        sqlite3_free(message);
        throw HarnessError(file.string() + ": results store: " + why +
                           "; rebuild it from the results directories with `ccl-harness results index --rebuild`");
    }
}

int pragma_int(sqlite3* db, const char* pragma, const fs::path& file) {
    Statement stmt(db, std::string("PRAGMA ") + pragma, file);
    return stmt.step() ? stmt.integer(0) : 0;
}

/// One transaction: committed when done, rolled back when an exception leaves it.
class Transaction {
public:
    Transaction(sqlite3* db, const fs::path& file) : m_db(db), m_file(file) { exec(db, "BEGIN IMMEDIATE", file); }
    ~Transaction() {
        if (!m_done) {
            sqlite3_exec(m_db, "ROLLBACK", nullptr, nullptr, nullptr);
        }
    }
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;
    void commit() {
        exec(m_db, "COMMIT", m_file);
        m_done = true;
    }

private:
    sqlite3* m_db;
    fs::path m_file;
    bool m_done = false;
};

void insert_run(sqlite3* db, const fs::path& file, const std::string& root, const RunSnapshot& snap, const std::string& fingerprint) {
    exec(db, "SAVEPOINT run", file);
    for (const char* table : {"card_fields", "overrides", "pins", "render_keys", "metrics", "runs"}) {
        Statement(db, std::string("DELETE FROM ") + table + " WHERE run_id = ?1", file).bind(1, snap.run_id).run();
    }
    const std::string sha = snap.bundle_path.empty() ? "" : sha256_file(snap.bundle_path);
    Statement runs(db, "INSERT INTO runs VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)", file);
    const std::vector<std::string> values = {snap.run_id,  root,          snap.run_dir, snap.card,          snap.framework,
                                             snap.cluster, snap.executor, snap.state,   snap.failure_class, snap.failure_reason,
                                             snap.created, snap.started,  snap.ended,   snap.bundle_path,   sha,
                                             fingerprint};
    for (std::size_t i = 0; i < values.size(); ++i) {
        runs.bind(static_cast<int>(i + 1), values[i]);
    }
    runs.run();
    const std::pair<const char*, const std::vector<std::pair<std::string, std::string>>*> pairs[] = {
        {"card_fields", &snap.card_fields}, {"overrides", &snap.overrides}, {"pins", &snap.pins}};
    for (const auto& [table, rows] : pairs) {
        Statement insert(db, std::string("INSERT INTO ") + table + " VALUES (?1, ?2, ?3)", file);
        for (const auto& [key, value] : *rows) {
            insert.bind(1, snap.run_id).bind(2, key).bind(3, value).run();
        }
    }
    if (!snap.render_key.empty()) {
        Statement(db, "INSERT INTO render_keys VALUES (?1, ?2)", file).bind(1, snap.run_id).bind(2, snap.render_key).run();
    }
    Statement metric(db, "INSERT OR REPLACE INTO metrics VALUES (?1, ?2, ?3, ?4, ?5)", file);
    for (const MetricValue& m : snap.metrics) {
        metric.bind(1, snap.run_id).bind(2, m.name).bind(3, m.value).bind(4, m.unit).bind(5, m.implausible ? 1 : 0).run();
    }
    exec(db, "RELEASE run", file);
}

/// Reads one run directory and writes its rows inside the open transaction; false (with the
/// problem in `counts`) when it is left out.
bool record_one(sqlite3* db, const fs::path& file, const std::string& root, const std::string& dir,
                const std::pair<fs::path, std::string>& item, IndexCounts& counts) {
    try {
        const RunSnapshot snap = read_run_snapshot(item.first);
        // A run id names one run: a copy of a run directory under another results root keeps
        // the row of the one indexed first while that one still exists.
        Statement other(db, "SELECT run_dir FROM runs WHERE run_id = ?1 AND run_dir != ?2", file);
        other.bind(1, snap.run_id).bind(2, dir);
        if (other.step() && is_run_directory(other.text(0))) {
            counts.problems.push_back(dir + ": run id " + snap.run_id + " is already indexed from " + other.text(0) +
                                      ": left out (a copy of that run?)");
            return false;
        }
        insert_run(db, file, root, snap, item.second);
    } catch (const HarnessError& e) {
        sqlite3_exec(db, "ROLLBACK TO run; RELEASE run", nullptr, nullptr, nullptr);
        counts.problems.push_back(dir + ": " + e.what());
        return false;
    }
    return true;
}

std::string since_bound(const std::string& since) {
    static const std::regex day(R"(\d{4}-\d{2}-\d{2})");
    static const std::regex instant(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z)");
    if (std::regex_match(since, day)) {
        return since + "T00:00:00Z";
    }
    if (std::regex_match(since, instant)) {
        return since;
    }
    throw input_error("--since " + since + ": not a date (YYYY-MM-DD or YYYY-MM-DDThh:mm:ssZ, UTC)");
}

} // namespace

bool store_turned_off() {
    const char* env = std::getenv("CCL_HARNESS_STORE");
    return env != nullptr && std::string(env) == "none";
}

fs::path default_store_path(const fs::path& explicit_path) {
    if (!explicit_path.empty()) {
        return explicit_path;
    }
    if (store_turned_off()) {
        throw input_error("the results store is turned off ($CCL_HARNESS_STORE=none): give --store PATH, or unset it");
    }
    if (const char* env = std::getenv("CCL_HARNESS_STORE"); env && *env) {
        return env;
    }
    fs::path data;
    if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg && *xdg) {
        data = xdg;
    } else if (const char* home = std::getenv("HOME"); home && *home) {
        data = fs::path(home) / ".local" / "share";
    } else {
        throw input_error("no results store: give --store PATH or set $CCL_HARNESS_STORE ($HOME is not set)");
    }
    return data / "ccl-harness" / "results.db";
}

WhereClause parse_where(const std::string& text) {
    static const std::regex field(R"([A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z0-9_-]+)*)");
    const auto eq = text.find('=');
    if (eq == std::string::npos || !std::regex_match(text.substr(0, eq), field)) {
        throw input_error("--where " + text +
                          ": not FIELD=VALUE (FIELD a card path such as workload.model.model_family, or one of "
                          "state, cluster, framework, card, executor)");
    }
    return {text.substr(0, eq), text.substr(eq + 1)};
}

ResultsStore::ResultsStore(const fs::path& path) : m_path(path) {
    std::error_code ec;
    if (path.has_parent_path()) {
        fs::create_directories(path.parent_path(), ec);
    }
    if (sqlite3_open_v2(path.c_str(), &m_db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) != SQLITE_OK) {
        const std::string why = m_db ? sqlite3_errmsg(m_db) : "out of memory";
        sqlite3_close(m_db);
        throw input_error(path.string() + ": cannot open the results store: " + why);
    }
    try {
        sqlite3_busy_timeout(m_db, k_busy_timeout_ms);
        const int application_id = pragma_int(m_db, "application_id", path);
        const int version = pragma_int(m_db, "user_version", path);
        if (application_id == 0 && version == 0) {
            if (pragma_int(m_db, "schema_version", path) != 0 && Statement(m_db, "SELECT 1 FROM sqlite_master", path).step()) {
                throw input_error(path.string() + ": an SQLite database that is not a ccl-harness results store");
            }
        } else if (application_id != k_application_id) {
            throw input_error(path.string() + ": an SQLite database that is not a ccl-harness results store");
        } else if (version > k_schema_version) {
            throw input_error(path.string() + ": a results store of schema " + std::to_string(version) +
                              ", newer than this harness's " + std::to_string(k_schema_version) + "; upgrade ccl-harness");
        }
        exec(m_db, "PRAGMA journal_mode=WAL; PRAGMA foreign_keys=ON", path);
        if (version < k_schema_version) {
            Transaction tx(m_db, path);
            exec(m_db, k_schema, path);
            exec(m_db, "PRAGMA application_id=" + std::to_string(k_application_id), path);
            exec(m_db, "PRAGMA user_version=" + std::to_string(k_schema_version), path);
            tx.commit();
        }
    } catch (const HarnessError& e) {
        sqlite3_close(m_db);
        m_db = nullptr;
        // A damaged file: one error naming it, exit 2 (input), however SQLite put it.
        throw input_error(std::string(e.what()).find(path.string()) == 0 ? e.what() : path.string() + ": " + e.what());
    }
}

ResultsStore::~ResultsStore() { sqlite3_close(m_db); }

void ResultsStore::remove_files(const fs::path& path) {
    for (const char* suffix : {"", "-wal", "-shm"}) {
        std::error_code ec;
        fs::path file = path;
        file += suffix;
        fs::remove(file, ec);
    }
}

IndexCounts ResultsStore::index(const std::vector<fs::path>& results_roots) {
    IndexCounts counts;
    for (const fs::path& given : results_roots) {
        std::error_code ec;
        if (!fs::is_directory(given, ec)) {
            throw input_error(given.string() + ": not a results directory");
        }
        const std::string root = fs::absolute(given).lexically_normal().string();
        // Read the directories before the transaction, so writers hold the lock only to write.
        std::map<std::string, std::pair<fs::path, std::string>> found; // run dir -> (path, fingerprint)
        for (const auto& entry : fs::directory_iterator(given, ec)) {
            if (entry.is_directory(ec) && !entry.is_symlink(ec) && is_run_directory(entry.path())) {
                const std::string dir = fs::absolute(entry.path()).lexically_normal().string();
                found[dir] = {entry.path(), run_fingerprint(entry.path())};
            }
        }
        Transaction tx(m_db, m_path);
        std::map<std::string, std::pair<std::string, std::string>> known; // run dir -> (id, fingerprint)
        {
            Statement rows(m_db, "SELECT run_dir, run_id, fingerprint FROM runs WHERE results_root = ?1", m_path);
            rows.bind(1, root);
            while (rows.step()) {
                known[rows.text(0)] = {rows.text(1), rows.text(2)};
            }
        }
        for (const auto& [dir, item] : known) {
            if (found.count(dir) == 0) {
                Statement(m_db, "DELETE FROM runs WHERE run_id = ?1", m_path).bind(1, item.first).run();
                ++counts.dropped;
            }
        }
        for (const auto& [dir, item] : found) {
            const auto it = known.find(dir);
            if (it != known.end() && it->second.second == item.second) {
                ++counts.unchanged;
                continue;
            }
            if (!record_one(m_db, m_path, root, dir, item, counts)) {
                continue;
            }
            ++(it == known.end() ? counts.added : counts.updated);
        }
        tx.commit();
    }
    return counts;
}

IndexCounts ResultsStore::record(const std::vector<fs::path>& run_dirs) {
    IndexCounts counts;
    std::vector<std::pair<std::string, std::pair<fs::path, std::string>>> found;
    for (const fs::path& given : run_dirs) {
        const fs::path dir = fs::absolute(given).lexically_normal();
        if (!is_run_directory(dir)) {
            counts.problems.push_back(dir.string() + ": not a run directory (no run.json)");
            continue;
        }
        found.push_back({dir.string(), {dir, run_fingerprint(dir)}});
    }
    Transaction tx(m_db, m_path);
    for (const auto& [dir, item] : found) {
        Statement known(m_db, "SELECT 1 FROM runs WHERE run_dir = ?1", m_path);
        known.bind(1, dir);
        const bool update = known.step();
        if (record_one(m_db, m_path, item.first.parent_path().string(), dir, item, counts)) {
            ++(update ? counts.updated : counts.added);
        }
    }
    tx.commit();
    return counts;
}

std::vector<RunRow> ResultsStore::list(const ListQuery& query) const {
    if (!query.metric.empty()) {
        const auto& names = metrics::metric_names();
        if (std::find(names.begin(), names.end(), query.metric) == names.end()) {
            throw input_error("--metric " + query.metric + ": no such metric (`ccl-harness list metrics` names them)");
        }
    }
    std::string sql = "SELECT r.run_id, r.results_root, r.run_dir, r.card, r.framework, r.cluster, r.executor, r.state, "
                      "r.failure_class, r.failure_reason, r.created, r.started, r.ended, r.bundle_path, "
                      "r.bundle_sha256, m.value, m.unit FROM runs r LEFT JOIN metrics m ON m.run_id = r.run_id AND "
                      "m.name = ?1 WHERE 1";
    std::vector<std::string> binds = {query.metric};
    auto next = [&binds](const std::string& value) {
        binds.push_back(value);
        return "?" + std::to_string(binds.size());
    };
    for (const WhereClause& where : query.where) {
        if (k_run_columns.count(where.field) != 0) {
            sql += " AND r." + where.field + " = " + next(where.value);
        } else {
            sql += " AND EXISTS (SELECT 1 FROM card_fields f WHERE f.run_id = r.run_id AND f.path = " + next(where.field);
            sql += " AND f.value = " + next(where.value) + ")";
        }
    }
    if (!query.since.empty()) {
        sql += " AND r.created >= " + next(since_bound(query.since));
    }
    if (!query.card.empty()) {
        sql += " AND r.card = " + next(query.card);
    }
    if (!query.run_id.empty()) {
        sql += " AND r.run_id = " + next(query.run_id);
    }
    if (!query.render_key.empty()) {
        sql += " AND EXISTS (SELECT 1 FROM render_keys k WHERE k.run_id = r.run_id AND k.key = " + next(query.render_key) + ")";
    }
    sql += " ORDER BY r.created, r.run_id";
    Statement stmt(m_db, sql, m_path);
    for (std::size_t i = 0; i < binds.size(); ++i) {
        stmt.bind(static_cast<int>(i + 1), binds[i]);
    }
    std::vector<RunRow> rows;
    while (stmt.step()) {
        RunRow row;
        std::string* const text[] = {&row.run_id,  &row.results_root, &row.run_dir, &row.card,          &row.framework,
                                     &row.cluster, &row.executor,     &row.state,   &row.failure_class, &row.failure_reason,
                                     &row.created, &row.started,      &row.ended,   &row.bundle_path,   &row.bundle_sha256};
        for (int i = 0; i < 15; ++i) {
            *text[i] = stmt.text(i);
        }
        row.metric_value = stmt.real(15);
        row.metric_unit = stmt.text(16);
        rows.push_back(std::move(row));
    }
    return rows;
}

std::optional<Json> ResultsStore::show(const std::string& run_id) const {
    ListQuery query;
    query.run_id = run_id;
    const std::vector<RunRow> rows = list(query);
    if (rows.empty()) {
        return std::nullopt;
    }
    Json json = run_row_to_json(rows.front(), "");
    // The (run_id, key, value) tables, with their key and value columns.
    struct KeyValueTable {
        const char* name;
        const char* key;
        const char* value;
    };
    for (const KeyValueTable& table : {KeyValueTable{"card_fields", "path", "value"}, KeyValueTable{"overrides", "path", "value"},
                                       KeyValueTable{"pins", "repo", "sha"}}) {
        Json values = Json::object();
        Statement select(
            m_db, fmt::format("SELECT {}, {} FROM {} WHERE run_id = ?1 ORDER BY rowid", table.key, table.value, table.name), m_path);
        select.bind(1, run_id);
        while (select.step()) {
            values[select.text(0)] = select.text(1);
        }
        json[table.name] = std::move(values);
    }
    Json metrics = Json::object();
    Statement metric(m_db, "SELECT name, value, unit, implausible FROM metrics WHERE run_id = ?1", m_path);
    metric.bind(1, run_id);
    while (metric.step()) {
        Json entry = Json::object();
        const auto value = metric.real(1);
        entry["value"] = value ? Json(*value) : Json();
        entry["unit"] = metric.text(2);
        entry["implausible"] = metric.integer(3) != 0;
        metrics[metric.text(0)] = std::move(entry);
    }
    json["metrics"] = std::move(metrics);
    return json;
}

Json run_row_to_json(const RunRow& row, const std::string& metric) {
    Json json = Json::object();
    json["run_id"] = row.run_id;
    json["results_root"] = row.results_root;
    json["run_dir"] = row.run_dir;
    json["card"] = row.card;
    json["framework"] = string_or_null(row.framework);
    json["cluster"] = row.cluster;
    json["executor"] = row.executor;
    json["state"] = row.state;
    json["failure_class"] = string_or_null(row.failure_class);
    json["failure_reason"] = string_or_null(row.failure_reason);
    json["created"] = string_or_null(row.created);
    json["started"] = string_or_null(row.started);
    json["ended"] = string_or_null(row.ended);
    json["bundle"] = string_or_null(row.bundle_path);
    json["bundle_sha256"] = string_or_null(row.bundle_sha256);
    if (!metric.empty()) {
        json[metric] = row.metric_value ? Json(*row.metric_value) : Json();
    }
    return json;
}

std::string record_in_default_store(const std::vector<fs::path>& run_dirs) {
    if (run_dirs.empty()) {
        return {};
    }
    if (store_turned_off()) {
        return {};
    }
    try {
        const fs::path path = default_store_path({});
        std::error_code ec;
        fs::create_directories(path.parent_path(), ec);
        const IndexCounts counts = ResultsStore(path).record(run_dirs);
        if (!counts.problems.empty()) {
            return "results store " + path.string() + ": " + counts.problems.front();
        }
    } catch (const HarnessError& e) {
        return std::string("the results store was not updated: ") + e.what() + " (`ccl-harness results index` adds the run later)";
    }
    return {};
}

} // namespace harness::store
