#pragma once
// The results store: an SQLite INDEX of results directories, which stay the source of truth.
// Every row can be rebuilt from the run directories (`results index --rebuild`); nothing here
// is written anywhere else.
#include "util/fs.hpp"
#include "util/json.hpp"

#include <memory>
#include <optional>
#include <string>
#include <vector>

struct sqlite3;

namespace harness::store {

/// The schema this build writes (PRAGMA user_version); a newer one is refused.
constexpr int k_schema_version = 1;

/// `explicit_path`, else $CCL_HARNESS_STORE, else ${XDG_DATA_HOME:-~/.local/share}/ccl-harness/results.db.
/// With no explicit path and the store turned off ($CCL_HARNESS_STORE=none) an input error says
/// so: "none" is not a file name to create.
fs::path default_store_path(const fs::path& explicit_path);

/// $CCL_HARNESS_STORE=none: commands neither record their runs nor reuse one from the store.
bool store_turned_off();

struct IndexCounts {
    int added = 0;
    int updated = 0;
    int dropped = 0;
    int unchanged = 0;
    std::vector<std::string> problems; ///< run directories that could not be read, with why
};

/// One `--where FIELD=VALUE`: a run column (state, cluster, framework, card, executor) or a
/// card path (workload.model.model_family).
struct WhereClause {
    std::string field;
    std::string value;
};

struct ListQuery {
    std::vector<WhereClause> where;
    std::string since; ///< YYYY-MM-DD or YYYY-MM-DDThh:mm:ssZ; "" for none
    std::string metric;
    std::string card;       ///< exact card name ("" for any): history's filter
    std::string run_id;     ///< exact run id ("" for any): show's filter
    std::string render_key; ///< runs rendered byte for byte alike (render/render_key.hpp): run --reuse
};

struct RunRow {
    std::string run_id, results_root, run_dir, card, framework, cluster, executor, state;
    std::string failure_class, failure_reason, created, started, ended, bundle_path, bundle_sha256;
    std::optional<double> metric_value; ///< ListQuery::metric's value, when asked and present
    std::string metric_unit;
};

/// Parses `FIELD=VALUE`; an input error naming the clause when it is not one.
WhereClause parse_where(const std::string& text);

class ResultsStore {
public:
    /// Opens (creating) the database: WAL, a busy timeout, the schema. A file that is not an
    /// SQLite database, not ours, or of a newer schema is one input error naming it.
    explicit ResultsStore(const fs::path& path);
    ~ResultsStore();
    ResultsStore(const ResultsStore&) = delete;
    ResultsStore& operator=(const ResultsStore&) = delete;

    /// Deletes the database file (and its -wal, -shm) and creates it again empty.
    static void remove_files(const fs::path& path);

    /// Brings the rows of the runs under `results_roots` up to date, one transaction per root.
    IndexCounts index(const std::vector<fs::path>& results_roots);
    /// Adds or updates the rows of these run directories (a run, attach, ingest, a sweep's points)
    /// in one transaction; a directory that is not a run's is a problem, not an error.
    IndexCounts record(const std::vector<fs::path>& run_dirs);

    std::vector<RunRow> list(const ListQuery& query) const;
    /// The run's row with its card fields, overrides, pins and metrics; nullopt when not indexed.
    std::optional<Json> show(const std::string& run_id) const;

    const fs::path& path() const { return m_path; }

private:
    fs::path m_path;
    sqlite3* m_db = nullptr;
};

Json run_row_to_json(const RunRow& row, const std::string& metric);

/// What run, attach, ingest, sweep and reproduce do once their runs are on disk: records them in
/// the per-user store (default_store_path; $CCL_HARNESS_STORE=none turns it off). The directories
/// stay the source of truth, so a store that cannot be written never fails the command: the
/// returned text says why (empty when recorded or turned off).
std::string record_in_default_store(const std::vector<fs::path>& run_dirs);

} // namespace harness::store
