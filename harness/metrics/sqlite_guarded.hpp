#pragma once
// An SQLite file from outside, opened so that reading it can do nothing but read: immutable and
// read-only (no journal, no lock, nothing written beside it), SQLite's defensive settings on
// (no extensions, no triggers or views run, functions in the schema untrusted, query_only),
// bounded by util/limits (time through a progress handler that also answers Ctrl-C, memory
// through the process's hard heap limit, one value's length). Its header is checked before
// SQLite sees it, so a truncated file or one whose page count points past its end is refused by
// name. Every failure is a TraceReadError (exit 2) naming the file.
#include "metrics/trace_events.hpp"
#include "util/fs.hpp"

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

struct sqlite3;
struct sqlite3_stmt;

namespace harness::metrics {

class SqliteStatement;

class GuardedSqlite {
public:
    explicit GuardedSqlite(const fs::path& file);
    ~GuardedSqlite();
    GuardedSqlite(const GuardedSqlite&) = delete;
    GuardedSqlite& operator=(const GuardedSqlite&) = delete;

    const fs::path& file() const { return m_file; }
    std::uint64_t file_bytes() const { return m_bytes; }

    /// sqlite_master's type for `name` ("table", "view", "index", "trigger"), "" when absent.
    std::string object_type(std::string_view name);
    /// True when `name` is a real table. A view, trigger or index of that name is refused
    /// (TraceReadError): it can only be there to pass for the table.
    bool has_table(std::string_view name);
    /// The table's column names (PRAGMA table_info), in order.
    std::vector<std::string> columns(std::string_view table);

    SqliteStatement prepare(const std::string& sql);

    /// Throws TraceReadError "<file>: <problem>" (malformed unless `truncated`).
    [[noreturn]] void fail(const std::string& problem, bool truncated = false) const;
    /// The error of the last call on the connection, as fail() words it.
    [[noreturn]] void fail_sqlite(int code, const std::string& doing) const;

private:
    friend class SqliteStatement;
    struct Budget {
        std::chrono::steady_clock::time_point deadline;
        bool timed_out = false;
        bool interrupted = false;
    };
    static int on_progress(void* budget);
    /// The defensive settings, the limits and the pragmas of a connection just opened.
    void configure();

    fs::path m_file;
    std::uint64_t m_bytes = 0;
    sqlite3* m_db = nullptr;
    std::unique_ptr<Budget> m_budget;
};

/// One prepared statement; step() returns false at the end of the rows.
class SqliteStatement {
public:
    SqliteStatement(GuardedSqlite& db, sqlite3_stmt* statement, std::string sql);
    ~SqliteStatement();
    SqliteStatement(SqliteStatement&& other) noexcept;
    SqliteStatement(const SqliteStatement&) = delete;
    SqliteStatement& operator=(const SqliteStatement&) = delete;
    SqliteStatement& operator=(SqliteStatement&&) = delete;

    bool step();
    void reset();
    void bind(int index, long long value);
    void bind(int index, std::string_view value);

    bool is_null(int column) const;
    bool is_integer(int column) const;
    bool is_number(int column) const; ///< integer or real
    long long integer(int column) const;
    double real(int column) const;
    /// The text of a column (empty for NULL); valid until the next step().
    std::string_view text(int column) const;

private:
    GuardedSqlite* m_db;
    sqlite3_stmt* m_statement;
    std::string m_sql;
};

} // namespace harness::metrics
