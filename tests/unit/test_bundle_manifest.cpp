#include "bundle/bundle_manifest.hpp"
#include "test_context.hpp"
#include "util/archive.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"

#include <catch2/catch.hpp>

using namespace harness;
using harness::test::TempDir;

namespace {

fs::path make_bundle(const TempDir& dir) {
    const fs::path bundle = dir.path() / "tiny";
    dir.write("tiny/tiny.yaml", "name: tiny\n");
    dir.write("tiny/kineto_trace_0.json", "{\"traceEvents\":[]}\n");
    dir.write("tiny/kineto_trace_1.json", "{\"traceEvents\":[]}\n");
    dir.write("tiny/scripts/launch.sh", "#!/bin/sh\n");
    dir.write("tiny/logs/rank0.log", "");
    write_file_atomic(bundle / k_manifest_name, make_manifest(bundle, "0.1.0").dump());
    return bundle;
}

std::vector<std::string> describe(const std::vector<ManifestProblem>& problems) {
    std::vector<std::string> lines;
    for (const ManifestProblem& problem : problems) {
        lines.push_back(problem.path + ": " + problem.message);
    }
    return lines;
}

} // namespace

TEST_CASE("the manifest lists every other file with its size and sha256", "[manifest]") {
    TempDir dir;
    const fs::path bundle = make_bundle(dir);
    const std::string text = read_file(bundle / k_manifest_name);
    CHECK(text.find("\"format\": 1") != std::string::npos);
    CHECK(text.find("\"harness_version\": \"0.1.0\"") != std::string::npos);
    CHECK(text.find("\"path\": \"scripts/launch.sh\"") != std::string::npos);
    CHECK(text.find("\"size\": 10") != std::string::npos);
    CHECK(text.find(sha256_hex("name: tiny\n")) != std::string::npos);
    CHECK(text.find("\"path\": \"manifest.json\"") == std::string::npos);
    // Sorted by path, and the same bytes every time.
    CHECK(text.find("kineto_trace_0.json") < text.find("kineto_trace_1.json"));
    CHECK(text.find("logs/rank0.log") < text.find("scripts/launch.sh"));
    CHECK(make_manifest(bundle, "0.1.0").dump() == text);
    CHECK(check_manifest(bundle).empty());
}

TEST_CASE("a manifest check lists every problem at once", "[manifest]") {
    TempDir dir;
    const fs::path bundle = make_bundle(dir);
    std::string trace = read_file(bundle / "kineto_trace_1.json");
    trace[3] = 'X';
    write_file_atomic(bundle / "kineto_trace_1.json", trace);          // same size, one byte flipped
    write_file_atomic(bundle / "tiny.yaml", "name: tiny\nextra: 1\n"); // another size
    fs::remove(bundle / "logs" / "rank0.log");
    dir.write("tiny/scripts/added.sh", "echo added\n");
    fs::create_symlink("/etc/passwd", bundle / "logs" / "link");

    const std::vector<std::string> problems = describe(check_manifest(bundle));
    INFO(Catch::Detail::stringify(problems));
    REQUIRE(problems.size() == 5);
    CHECK_THAT(problems[0], Catch::StartsWith("kineto_trace_1.json: sha256 is "));
    CHECK(problems[1] == "logs/link: a symbolic link (a bundle holds only files and directories)");
    CHECK(problems[2] == "logs/rank0.log: missing (listed in the manifest)");
    CHECK(problems[3] == "scripts/added.sh: not listed in the manifest");
    CHECK(problems[4] == "tiny.yaml: size is 20 bytes, the manifest says 11");
}

TEST_CASE("a broken manifest is a problem, not a crash", "[manifest]") {
    TempDir dir;
    const fs::path bundle = make_bundle(dir);
    std::string expected;
    SECTION("missing") {
        fs::remove(bundle / k_manifest_name);
        expected = "manifest.json: missing";
    }
    SECTION("truncated") {
        const std::string text = read_file(bundle / k_manifest_name);
        write_file_atomic(bundle / k_manifest_name, text.substr(0, text.size() / 2));
        expected = "manifest.json: not valid JSON";
    }
    SECTION("another format") {
        write_file_atomic(bundle / k_manifest_name, R"({"format": 7, "harness_version": "9", "files": []})");
        expected = "manifest.json: format 7 is not one this harness reads";
    }
    SECTION("not an object") {
        write_file_atomic(bundle / k_manifest_name, "[1, 2]");
        expected = "manifest.json: not a JSON object";
    }
    const std::vector<std::string> problems = describe(check_manifest(bundle));
    REQUIRE(problems.size() == 1);
    CHECK_THAT(problems[0], Catch::StartsWith(expected));
}

TEST_CASE("malformed records are reported one by one and the rest still checked", "[manifest]") {
    TempDir dir;
    const fs::path bundle = dir.path() / "b";
    dir.write("b/a.txt", "a");
    dir.write("b/b.txt", "b");
    const std::string a_sha = sha256_hex("a");
    write_file_atomic(bundle / k_manifest_name, R"({"format": 1, "files": [)"
                                                R"({"path": "a.txt", "size": 1, "sha256": ")" +
                                                    a_sha +
                                                    R"("},)"
                                                    R"({"path": "a.txt", "size": 1, "sha256": ")" +
                                                    a_sha +
                                                    R"("},)"
                                                    R"({"path": "../../etc/passwd", "size": 1, "sha256": ")" +
                                                    a_sha +
                                                    R"("},)"
                                                    R"({"path": "b.txt", "size": -1, "sha256": ")" +
                                                    a_sha +
                                                    R"("},)"
                                                    R"({"path": "c.txt", "size": 1, "sha256": "ABC"},)"
                                                    R"({"size": 1}]})");
    const std::vector<std::string> problems = describe(check_manifest(bundle));
    INFO(Catch::Detail::stringify(problems));
    REQUIRE(problems.size() == 7);
    CHECK(problems[0] == "b.txt: not listed in the manifest");
    CHECK(problems[1] == "manifest.json: no \"harness_version\" string");
    CHECK(problems[2] == "manifest.json: files[1]: \"a.txt\": listed twice");
    CHECK(problems[3] == "manifest.json: files[2]: \"../../etc/passwd\": a \"..\" component (a path that leaves its directory)");
    CHECK(problems[4] == "manifest.json: files[3]: \"b.txt\": no \"size\" as a non-negative integer");
    CHECK(problems[5] == "manifest.json: files[4]: \"c.txt\": no \"sha256\" as 64 lowercase hex digits");
    CHECK(problems[6] == "manifest.json: files[5]: no \"path\" string");
}

TEST_CASE("a manifest cannot be made over links", "[manifest]") {
    TempDir dir;
    dir.write("b/a.txt", "a");
    fs::create_symlink("a.txt", dir.path() / "b" / "alias");
    CHECK_THROWS_WITH(make_manifest(dir.path() / "b", "0.1.0"), Catch::Contains("alias") && Catch::Contains("symbolic link"));
    CHECK_THROWS_AS(check_manifest(dir.path() / "absent"), HarnessError);
}
