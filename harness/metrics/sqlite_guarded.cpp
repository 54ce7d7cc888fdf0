#include "metrics/sqlite_guarded.hpp"

#include "util/error.hpp"
#include "util/interrupt.hpp"
#include "util/limits.hpp"

#include <algorithm>
#include <array>
#include <climits>
#include <fmt/format.h>
#include <fstream>
#include <mutex>
#include <sqlite3.h>

namespace harness::metrics {

namespace {

/// SQLite's file header (https://www.sqlite.org/fileformat2.html#the_database_header).
constexpr std::size_t k_header_bytes = 100;
constexpr std::string_view k_magic{"SQLite format 3\0", 16};
/// How many virtual-machine steps run between two looks at the clock and at Ctrl-C.
constexpr int k_progress_steps = 10000;
/// A connection's page cache, in KiB (negative for cache_size): the reader scans, so a larger
/// cache buys nothing, and sixteen threads of it stay small.
constexpr int k_cache_kib = 16384;

std::uint32_t big_endian(const unsigned char* bytes, std::size_t count) {
    std::uint32_t value = 0;
    for (std::size_t i = 0; i < count; ++i) {
        value = (value << 8U) | bytes[i];
    }
    return value;
}

/// "file:" URI of a path: every byte but the unreserved ones and '/' percent-encoded, so that a
/// '?' or '#' in a file name cannot add parameters.
std::string file_uri(const fs::path& file) {
    std::string uri = "file:";
    for (const char c : file.string()) {
        const auto byte = static_cast<unsigned char>(c);
        if ((byte >= 'a' && byte <= 'z') || (byte >= 'A' && byte <= 'Z') || (byte >= '0' && byte <= '9') || c == '-' || c == '.' ||
            c == '_' || c == '~' || c == '/') {
            uri += c;
        } else {
            uri += fmt::format("%{:02X}", byte);
        }
    }
    return uri + "?immutable=1";
}

/// The heap limit is the process's: set once, before the first connection.
void limit_heap() {
    static std::once_flag once;
    std::call_once(once, [] {
        const std::uint64_t bytes = input_limit(InputLimit::sqlite_heap_bytes);
        sqlite3_hard_heap_limit64(static_cast<sqlite3_int64>(std::min<std::uint64_t>(bytes, LLONG_MAX)));
    });
}

} // namespace

GuardedSqlite::GuardedSqlite(const fs::path& file) : m_file(file), m_budget(std::make_unique<Budget>()) {
    std::error_code ec;
    if (!fs::is_regular_file(file, ec)) {
        throw input_error(fmt::format("{}: not a regular file", file.string()));
    }
    m_bytes = fs::file_size(file, ec);
    if (ec) {
        throw input_error(fmt::format("{}: cannot read: {}", file.string(), ec.message()));
    }
    std::array<unsigned char, k_header_bytes> header{};
    {
        std::ifstream in(file, std::ios::binary);
        if (!in) {
            throw input_error(fmt::format("{}: cannot open", file.string()));
        }
        in.read(reinterpret_cast<char*>(header.data()), static_cast<std::streamsize>(header.size()));
    }
    if (m_bytes < k_header_bytes || std::string_view(reinterpret_cast<const char*>(header.data()), k_magic.size()) != k_magic) {
        fail(fmt::format("not an SQLite database ({} bytes{})", m_bytes,
                         m_bytes < k_header_bytes ? ", shorter than SQLite's 100-byte header" : " without SQLite's header"));
    }
    // Page size: a power of two from 512 to 65536, stored as 1 for 65536.
    std::uint32_t page = big_endian(&header[16], 2);
    page = page == 1 ? 65536 : page;
    if (page < 512 || page > 65536 || (page & (page - 1)) != 0) {
        fail(fmt::format("not a valid SQLite database: page size {} in its header", page));
    }
    if (m_bytes % page != 0) {
        fail(fmt::format("truncated: {} bytes is not a whole number of {}-byte pages", m_bytes, page), true);
    }
    // The page count in the header is in force when "version-valid-for" matches the change
    // counter; SQLite then believes it over the file's size, so a count past the end is refused
    // here rather than read as pages that are not there.
    const std::uint64_t pages = big_endian(&header[28], 4);
    if (pages != 0 && big_endian(&header[24], 4) == big_endian(&header[92], 4) && pages * page > m_bytes) {
        fail(fmt::format("truncated: its header counts {} pages of {} bytes ({} bytes), the file has {}", pages, page, pages * page,
                         m_bytes),
             true);
    }

    limit_heap();
    const int opened = sqlite3_open_v2(file_uri(file).c_str(), &m_db,
                                       SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_PRIVATECACHE, nullptr);
    if (opened != SQLITE_OK) {
        const std::string message = m_db != nullptr ? sqlite3_errmsg(m_db) : sqlite3_errstr(opened);
        sqlite3_close_v2(m_db);
        m_db = nullptr;
        fail(fmt::format("cannot open as SQLite: {}", message));
    }
    // A constructor that throws runs no destructor: the connection is closed here then.
    try {
        configure();
    } catch (...) {
        sqlite3_close_v2(m_db);
        m_db = nullptr;
        throw;
    }
}

void GuardedSqlite::configure() {
    sqlite3_extended_result_codes(m_db, 1);
    // What the file's schema could make a read do: load code, run triggers or views, call
    // functions that have side effects, write. None of it belongs in reading a trace.
    sqlite3_db_config(m_db, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
    sqlite3_db_config(m_db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
    sqlite3_db_config(m_db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, nullptr);
    sqlite3_db_config(m_db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, nullptr);
    sqlite3_db_config(m_db, SQLITE_DBCONFIG_ENABLE_VIEW, 0, nullptr);
    const std::uint64_t longest = input_limit(InputLimit::json_value_bytes);
    sqlite3_limit(m_db, SQLITE_LIMIT_LENGTH, static_cast<int>(std::min<std::uint64_t>(longest, INT_MAX)));
    sqlite3_limit(m_db, SQLITE_LIMIT_ATTACHED, 0);
    sqlite3_limit(m_db, SQLITE_LIMIT_SQL_LENGTH, 1 << 16);
    m_budget->deadline = std::chrono::steady_clock::now() + std::chrono::seconds(input_limit(InputLimit::sqlite_seconds));
    sqlite3_progress_handler(m_db, k_progress_steps, &GuardedSqlite::on_progress, m_budget.get());
    for (const std::string& pragma : {std::string("PRAGMA query_only = ON"), std::string("PRAGMA trusted_schema = OFF"),
                                      fmt::format("PRAGMA cache_size = -{}", k_cache_kib), std::string("PRAGMA mmap_size = 0"),
                                      std::string("PRAGMA cell_size_check = ON")}) {
        SqliteStatement statement = prepare(pragma);
        while (statement.step()) {
        }
    }
}

GuardedSqlite::~GuardedSqlite() { sqlite3_close_v2(m_db); }

int GuardedSqlite::on_progress(void* budget) {
    auto* state = static_cast<Budget*>(budget);
    if (interrupt_signal() != 0) {
        state->interrupted = true;
        return 1;
    }
    if (std::chrono::steady_clock::now() > state->deadline) {
        state->timed_out = true;
        return 1;
    }
    return 0;
}

void GuardedSqlite::fail(const std::string& problem, bool truncated) const {
    throw TraceReadError(fmt::format("{}: {}", m_file.string(), problem),
                         truncated ? TraceReadError::Kind::truncated : TraceReadError::Kind::malformed, std::nullopt, problem);
}

void GuardedSqlite::fail_sqlite(int code, const std::string& doing) const {
    const std::string message = m_db != nullptr ? sqlite3_errmsg(m_db) : sqlite3_errstr(code);
    switch (code & 0xff) {
    case SQLITE_NOTADB: fail("not an SQLite database");
    case SQLITE_CORRUPT: fail(fmt::format("corrupt SQLite database ({}) while {}", message, doing));
    case SQLITE_IOERR: fail(fmt::format("truncated or unreadable ({}) while {}", message, doing), true);
    case SQLITE_NOMEM:
        fail(
            fmt::format("SQLite needs more memory than allowed while {}: {}", doing, input_limit_hint(InputLimit::sqlite_heap_bytes)));
    case SQLITE_TOOBIG: fail(fmt::format("a value too long while {}: {}", doing, input_limit_hint(InputLimit::json_value_bytes)));
    case SQLITE_INTERRUPT:
        if (m_budget->interrupted) {
            throw HarnessError(fmt::format("{}: interrupted while {}", m_file.string(), doing), k_exit_interrupted);
        }
        fail(fmt::format("reading took too long (stopped while {}): {}", doing, input_limit_hint(InputLimit::sqlite_seconds)));
    default: fail(fmt::format("SQLite error while {}: {}", doing, message));
    }
}

std::string GuardedSqlite::object_type(std::string_view name) {
    // Table names are case-insensitive to SQLite: "cupti_activity_kind_kernel" is the same name.
    SqliteStatement statement = prepare("SELECT type FROM sqlite_master WHERE name = ?1 COLLATE NOCASE ORDER BY type = 'table' DESC");
    statement.bind(1, name);
    return statement.step() ? std::string(statement.text(0)) : std::string();
}

bool GuardedSqlite::has_table(std::string_view name) {
    const std::string type = object_type(name);
    if (!type.empty() && type != "table") {
        fail(fmt::format("{} is a {}, not a table: refused (an nsys export holds it as a table)", name, type));
    }
    return type == "table";
}

std::vector<std::string> GuardedSqlite::columns(std::string_view table) {
    // table_info takes the name as an argument, never spliced into SQL.
    SqliteStatement statement = prepare("SELECT name FROM pragma_table_info(?1)");
    statement.bind(1, table);
    std::vector<std::string> names;
    while (statement.step()) {
        names.emplace_back(statement.text(0));
    }
    return names;
}

SqliteStatement GuardedSqlite::prepare(const std::string& sql) {
    sqlite3_stmt* statement = nullptr;
    const int code = sqlite3_prepare_v2(m_db, sql.c_str(), static_cast<int>(sql.size()), &statement, nullptr);
    if (code != SQLITE_OK) {
        sqlite3_finalize(statement);
        fail_sqlite(code, fmt::format("preparing \"{}\"", sql));
    }
    return SqliteStatement(*this, statement, sql);
}

SqliteStatement::SqliteStatement(GuardedSqlite& db, sqlite3_stmt* statement, std::string sql)
    : m_db(&db), m_statement(statement), m_sql(std::move(sql)) {}

SqliteStatement::~SqliteStatement() { sqlite3_finalize(m_statement); }

SqliteStatement::SqliteStatement(SqliteStatement&& other) noexcept
    : m_db(other.m_db), m_statement(other.m_statement), m_sql(std::move(other.m_sql)) {
    other.m_statement = nullptr;
}

bool SqliteStatement::step() {
    const int code = sqlite3_step(m_statement);
    if (code == SQLITE_ROW) {
        return true;
    }
    if (code == SQLITE_DONE) {
        return false;
    }
    m_db->fail_sqlite(code, fmt::format("running \"{}\"", m_sql));
}

void SqliteStatement::reset() {
    sqlite3_reset(m_statement);
    sqlite3_clear_bindings(m_statement);
}

void SqliteStatement::bind(int index, long long value) { sqlite3_bind_int64(m_statement, index, value); }

void SqliteStatement::bind(int index, std::string_view value) {
    sqlite3_bind_text(m_statement, index, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
}

bool SqliteStatement::is_null(int column) const { return sqlite3_column_type(m_statement, column) == SQLITE_NULL; }

bool SqliteStatement::is_integer(int column) const { return sqlite3_column_type(m_statement, column) == SQLITE_INTEGER; }

bool SqliteStatement::is_number(int column) const {
    const int type = sqlite3_column_type(m_statement, column);
    return type == SQLITE_INTEGER || type == SQLITE_FLOAT;
}

long long SqliteStatement::integer(int column) const { return sqlite3_column_int64(m_statement, column); }

double SqliteStatement::real(int column) const { return sqlite3_column_double(m_statement, column); }

std::string_view SqliteStatement::text(int column) const {
    const auto* bytes = reinterpret_cast<const char*>(sqlite3_column_text(m_statement, column));
    if (bytes == nullptr) {
        return {};
    }
    return {bytes, static_cast<std::size_t>(sqlite3_column_bytes(m_statement, column))};
}

} // namespace harness::metrics
