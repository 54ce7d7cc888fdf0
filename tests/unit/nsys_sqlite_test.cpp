// The Nsight Systems SQLite reader: small exports made here with the nsys schema's subset
// (harness/metrics/nsys_sqlite.cpp cites where each table and column comes from), the real
// 2022.1 export in tests/fixtures/nsys/, and the hostile files an upload may be.
#include "metrics/nsys_sqlite.hpp"
#include "metrics/trace_events.hpp"
#include "test_context.hpp"
#include "util/error.hpp"

#include <catch2/catch.hpp>
#include <fstream>
#include <sqlite3.h>

using namespace harness;
using namespace harness::metrics;
using harness::test::TempDir;

namespace {

/// Runs `sql` on a new database at `file` (written, as nsys export writes it).
void make_db(const fs::path& file, const std::string& sql) {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(file.c_str(), &db) == SQLITE_OK);
    char* error = nullptr;
    const int code = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
    INFO((error != nullptr ? error : ""));
    sqlite3_free(error);
    sqlite3_close(db);
    REQUIRE(code == SQLITE_OK);
}

const std::string k_schema = R"(
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, text TEXT, textId INTEGER);
CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT, memoryBandwidth INTEGER, smCount INTEGER);
CREATE TABLE META_DATA_EXPORT (name TEXT NOT NULL, value TEXT);
INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_SCHEMA_VERSION', '3.15.1');
INSERT INTO StringIds VALUES (1, 'ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)'),
  (2, 'ncclDevKernel_AllReduce_Sum_f32_RING_LL'), (3, 'void gemm_kernel<float>(float*)'), (4, 'gemm_kernel'),
  (5, 'ProfilerStep#2');
INSERT INTO TARGET_INFO_GPU VALUES (0, 0, 'NVIDIA A100-SXM4-40GB', 1555000000000, 108),
  (0, 1, 'NVIDIA A100-SXM4-40GB', 1555000000000, 108);
)";

fs::path standard_export(const TempDir& dir, const std::string& extra = "") {
    const fs::path file = dir.path() / "nsys_0.sqlite";
    make_db(file, k_schema + R"(
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1000000, 1004000, 0, 1, 7, 3, 4), (1002000, 1003500, 0, 1, 13, 1, 2),
  (1010000, 1012000, 1, 1, 7, 3, 4);
INSERT INTO NVTX_EVENTS VALUES (999000, 1006000, 59, 'ProfilerStep#1', NULL), (1008000, 1013000, 59, NULL, 5),
  (1000500, 1000600, 59, 'forward', NULL), (1000700, NULL, 34, 'a mark', NULL);
)" + extra);
    return file;
}

std::string error_of(const fs::path& file) {
    try {
        (void)read_nsys_sqlite(file);
    } catch (const TraceReadError& e) {
        return e.what();
    } catch (const HarnessError& e) {
        return std::string("HarnessError (not TraceReadError): ") + e.what();
    }
    return "no error";
}

std::string bytes_of(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

} // namespace

TEST_CASE("nsys sqlite: kernels, NVTX steps, GPUs and the schema version into a RankTrace", "[nsys]") {
    TempDir dir;
    const RankTrace trace = read_nsys_sqlite(standard_export(dir));
    CHECK(trace.format == TraceFormat::nsys_sqlite);
    CHECK(trace.schema_version == "3.15.1");
    REQUIRE(trace.kernels.size() == 3);
    // ns to µs; the demangled name, which is what Kineto writes.
    CHECK(trace.kernels[0].ts == Approx(1000.0));
    CHECK(trace.kernels[0].dur == Approx(4.0));
    CHECK(trace.names.text(trace.kernels[0].name) == "void gemm_kernel<float>(float*)");
    CHECK(trace.names.text(trace.kernels[1].name) ==
          "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)");
    CHECK(trace.names.text(trace.kernels[0].thread) == "0");
    CHECK(trace.names.text(trace.kernels[2].thread) == "1");
    // Two step ranges (text, and textId through StringIds); "forward" and the mark are not steps.
    REQUIRE(trace.steps.size() == 2);
    CHECK(trace.steps[0].number == 1);
    CHECK(trace.steps[0].ts == Approx(999.0));
    CHECK(trace.steps[0].dur == Approx(7.0));
    CHECK(trace.steps[1].number == 2);
    CHECK(trace.steps[1].kind == StepKind::profiler_step);
    REQUIRE(trace.device_names.size() == 2);
    CHECK(trace.device_names[0] == "NVIDIA A100-SXM4-40GB");
    CHECK(trace.device_info[0].sm_count == 108);
    CHECK(trace.device_info[0].memory_bandwidth == Approx(1.555e12));
}

TEST_CASE("nsys sqlite: an export of several GPUs is read one device at a time", "[nsys]") {
    TempDir dir;
    const fs::path file = standard_export(dir);
    CHECK(nsys_kernel_devices(file) == std::vector<long long>{0, 1});
    const RankTrace second = read_nsys_sqlite(file, 1);
    REQUIRE(second.kernels.size() == 1);
    CHECK(second.kernels[0].ts == Approx(1010.0));
    REQUIRE(second.device_info.size() == 1);
    CHECK(second.device_info[0].id == 1);
}

TEST_CASE("nsys sqlite: every table is optional and older columns are tolerated", "[nsys]") {
    TempDir dir;
    SECTION("no kernel table, no TARGET_INFO_GPU: zero kernels, not an error") {
        const fs::path file = dir.path() / "window.sqlite";
        make_db(file, "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);");
        const RankTrace trace = read_nsys_sqlite(file);
        CHECK(trace.kernels.empty());
        CHECK(trace.device_names.empty());
        CHECK(nsys_kernel_devices(file).empty());
        CHECK_FALSE(check_nsys_sqlite(file).kernel_table);
        CHECK_THAT(check_nsys_sqlite(file).problem, Catch::Contains("no CUPTI_ACTIVITY_KIND_KERNEL table"));
    }
    SECTION("a kernel table with shortName only and no deviceId or streamId; EXPORT_META_DATA") {
        const fs::path file = dir.path() / "old.sqlite";
        make_db(file, R"(CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
            CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, shortName INTEGER);
            CREATE TABLE EXPORT_META_DATA (name TEXT, value TEXT);
            INSERT INTO EXPORT_META_DATA VALUES ('EXPORT_SCHEMA_VERSION', '2.9.1');
            INSERT INTO StringIds VALUES (1, 'k');
            INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (10, 20, 1);)");
        const RankTrace trace = read_nsys_sqlite(file);
        REQUIRE(trace.kernels.size() == 1);
        CHECK(trace.names.text(trace.kernels[0].name) == "k");
        CHECK(trace.schema_version == "2.9.1");
        CHECK(check_nsys_sqlite(file).problem.empty());
    }
}

TEST_CASE("nsys sqlite: a real 2022.1 export (Extra-P's test data)", "[nsys]") {
    const fs::path file = fs::path(CCL_HARNESS_SOURCE_DIR) / "tests/fixtures/nsys/profile1.sqlite";
    const std::string before = bytes_of(file);
    const RankTrace trace = read_nsys_sqlite(file);
    CHECK(trace.schema_version == "2.9.1");
    REQUIRE(trace.kernels.size() == 12);
    CHECK(trace.names.text(trace.kernels[0].name) == "test(double *, unsigned long long, unsigned long long)");
    CHECK(trace.kernels[0].ts == Approx(553471.799));
    CHECK(trace.kernels[0].dur == Approx(663.034));
    REQUIRE_FALSE(trace.device_names.empty());
    CHECK(trace.device_names[0] == "GeForce GTX 1060 with Max-Q Design");
    CHECK(trace.device_info[0].sm_count == 10);
    CHECK(trace.steps.empty()); // its NVTX ranges are the program's own phases
    CHECK(nsys_kernel_devices(file) == std::vector<long long>{0});
    // Read-only and immutable: not a byte written, no journal beside it.
    CHECK(bytes_of(file) == before);
    CHECK_FALSE(fs::exists(file.string() + "-journal"));
}

TEST_CASE("nsys sqlite: hostile files are one TraceReadError naming the file", "[nsys]") {
    TempDir dir;
    SECTION("not SQLite") {
        const fs::path file = dir.write("nsys_1.sqlite", "{\"traceEvents\": []}\n" + std::string(200, ' '));
        CHECK_THAT(error_of(file), Catch::StartsWith(file.string() + ": not an SQLite database"));
    }
    SECTION("empty") {
        const fs::path file = dir.write("nsys_1.sqlite", "");
        CHECK_THAT(error_of(file), Catch::StartsWith(file.string() + ": not an SQLite database"));
    }
    SECTION("truncated") {
        const std::string whole = bytes_of(standard_export(dir));
        const fs::path file = dir.write("cut.sqlite", whole.substr(0, whole.size() / 2 + 100));
        CHECK_THAT(error_of(file), Catch::StartsWith(file.string() + ": truncated"));
        const fs::path paged = dir.write("paged.sqlite", whole.substr(0, 4096 * 2));
        CHECK_THAT(error_of(paged), Catch::StartsWith(paged.string() + ": truncated: its header counts"));
    }
    SECTION("a header claiming a huge page count") {
        std::string bytes = bytes_of(standard_export(dir));
        bytes[28] = '\x7f';
        bytes[29] = '\xff';
        const fs::path file = dir.write("huge.sqlite", bytes);
        CHECK_THAT(error_of(file), Catch::Contains("truncated: its header counts 2147"));
    }
    SECTION("a view standing in for the kernel table") {
        const fs::path file = dir.path() / "view.sqlite";
        make_db(file, "CREATE TABLE k (start INTEGER, end INTEGER, shortName INTEGER);"
                      "CREATE VIEW CUPTI_ACTIVITY_KIND_KERNEL AS SELECT * FROM k;");
        CHECK_THAT(error_of(file), Catch::Contains("CUPTI_ACTIVITY_KIND_KERNEL is a view, not a table: refused"));
        CHECK_THAT(check_nsys_sqlite(file).problem, Catch::Contains("is a view"));
    }
    SECTION("a kernel ending before it starts") {
        const fs::path file = standard_export(dir, "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (5000, 4000, 0, 1, 7, 3, 4);");
        CHECK_THAT(error_of(file), Catch::Contains("CUPTI_ACTIVITY_KIND_KERNEL row 4: end (4000) before start (5000)"));
    }
    SECTION("a kernel without a name") {
        const fs::path file = dir.path() / "nameless.sqlite";
        make_db(file, "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, demangledName INTEGER, shortName INTEGER);"
                      "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1, 2, NULL, NULL);");
        CHECK_THAT(error_of(file), Catch::Contains("row 1: no name (demangledName and shortName are NULL)"));
    }
    SECTION("a string id StringIds does not hold") {
        const fs::path file = standard_export(dir, "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (5000, 6000, 0, 1, 7, 99, 4);");
        CHECK_THAT(error_of(file), Catch::Contains("row 4: string id 99 is not in StringIds"));
    }
    SECTION("a NULL start") {
        const fs::path file = dir.path() / "null.sqlite";
        make_db(file, "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT); INSERT INTO StringIds VALUES (1, 'k');"
                      "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, shortName INTEGER);"
                      "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (NULL, 2, 1);");
        CHECK_THAT(error_of(file), Catch::Contains("row 1: start is NULL"));
    }
}
