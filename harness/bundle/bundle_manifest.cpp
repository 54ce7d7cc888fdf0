#include "bundle/bundle_manifest.hpp"

#include "util/archive.hpp"
#include "util/error.hpp"
#include "util/quote.hpp"
#include "util/safe_name.hpp"
#include "util/sha256.hpp"
#include "util/walk.hpp"

#include <algorithm>
#include <cstdint>
#include <fmt/format.h>
#include <map>
#include <optional>
#include <set>
#include <simdjson.h>

namespace harness {

namespace {

/// What a walk of the bundle finds, links never followed.
struct BundleListing {
    std::map<std::string, std::uint64_t> files; // relative path → size
    std::vector<ManifestProblem> unusable;      // links, special files, names that are not UTF-8
};

BundleListing list_bundle(const fs::path& bundle_dir) {
    BundleListing listing;
    const Tree tree = walk_tree(bundle_dir);
    for (const TreeEntry& entry : tree.entries) {
        const std::string& relative = entry.relative;
        if (entry.type == fs::file_type::directory) {
            continue;
        }
        if (!simdjson::validate_utf8(relative.data(), relative.size())) {
            listing.unusable.push_back({relative, "a file name that is not UTF-8"});
        } else if (entry.type == fs::file_type::symlink) {
            listing.unusable.push_back({relative, "a symbolic link (a bundle holds only files and directories)"});
        } else if (entry.type != fs::file_type::regular) {
            listing.unusable.push_back({relative, "a special file (a bundle holds only files and directories)"});
        } else if (relative != k_manifest_name) {
            listing.files.emplace(relative, entry.size);
        }
    }
    if (tree.error) {
        throw input_error(fmt::format("{}: cannot list: {}", bundle_dir.string(), tree.error.message()));
    }
    return listing;
}

/// Why `path` cannot name a file inside the bundle, or empty when it can.
std::string path_problem(std::string_view path) {
    if (std::string why = relative_name_problem(path); !why.empty()) {
        return why;
    }
    if (path == k_manifest_name) {
        return "the manifest cannot list itself";
    }
    return {};
}

bool is_sha256_hex(std::string_view text) {
    return text.size() == 64 &&
           std::all_of(text.begin(), text.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

struct ManifestRecord {
    std::uint64_t size = 0;
    std::string sha256;
};

/// The records of a parsed manifest, or nothing when it cannot be read as one; problems with the
/// manifest itself go to `problems`.
std::optional<std::map<std::string, ManifestRecord>> read_records(simdjson::dom::element root,
                                                                  std::vector<ManifestProblem>& problems) {
    std::map<std::string, ManifestRecord> records;
    const auto problem = [&](const std::string& message) { problems.push_back({k_manifest_name, message}); };
    simdjson::dom::object object;
    if (root.get_object().get(object) != simdjson::SUCCESS) {
        problem("not a JSON object");
        return std::nullopt;
    }
    std::int64_t format = 0;
    if (object["format"].get_int64().get(format) != simdjson::SUCCESS) {
        problem("no \"format\" version number");
    } else if (format != k_manifest_format) {
        problem(fmt::format("format {} is not one this harness reads (it reads {})", format, k_manifest_format));
        return std::nullopt;
    }
    std::string_view version;
    if (object["harness_version"].get_string().get(version) != simdjson::SUCCESS || version.empty()) {
        problem("no \"harness_version\" string");
    }
    simdjson::dom::array files;
    if (object["files"].get_array().get(files) != simdjson::SUCCESS) {
        problem("no \"files\" array");
        return std::nullopt;
    }
    std::size_t index = 0;
    for (simdjson::dom::element file : files) {
        const std::string where = fmt::format("files[{}]", index++);
        std::string_view path;
        std::uint64_t size = 0;
        std::string_view sha256;
        if (file["path"].get_string().get(path) != simdjson::SUCCESS) {
            problem(where + ": no \"path\" string");
            continue;
        }
        const std::string quoted = json_string(path);
        if (const std::string why = path_problem(path); !why.empty()) {
            problem(fmt::format("{}: {}: {}", where, quoted, why));
            continue;
        }
        if (file["size"].get_uint64().get(size) != simdjson::SUCCESS) {
            problem(fmt::format("{}: {}: no \"size\" as a non-negative integer", where, quoted));
            continue;
        }
        if (file["sha256"].get_string().get(sha256) != simdjson::SUCCESS || !is_sha256_hex(sha256)) {
            problem(fmt::format("{}: {}: no \"sha256\" as 64 lowercase hex digits", where, quoted));
            continue;
        }
        if (!records.emplace(std::string(path), ManifestRecord{size, std::string(sha256)}).second) {
            problem(fmt::format("{}: {}: listed twice", where, quoted));
        }
    }
    return records;
}

} // namespace

Json manifest_json(std::vector<ManifestFile> files, const std::string& harness_version) {
    std::sort(files.begin(), files.end(), [](const ManifestFile& a, const ManifestFile& b) { return a.path < b.path; });
    Json records = Json::array();
    for (ManifestFile& file : files) {
        Json record = Json::object();
        record["path"] = std::move(file.path);
        record["size"] = static_cast<long long>(file.size);
        record["sha256"] = std::move(file.sha256);
        records.push_back(std::move(record));
    }
    Json manifest = Json::object();
    manifest["format"] = k_manifest_format;
    manifest["harness_version"] = harness_version;
    manifest["files"] = std::move(records);
    return manifest;
}

Json make_manifest(const fs::path& bundle_dir, const std::string& harness_version) {
    if (!fs::is_directory(bundle_dir)) {
        throw input_error(fmt::format("{}: not a directory", bundle_dir.string()));
    }
    const BundleListing listing = list_bundle(bundle_dir);
    if (!listing.unusable.empty()) {
        const ManifestProblem& first = listing.unusable.front();
        throw HarnessError(fmt::format("{}: {}: {}", bundle_dir.string(), json_string(first.path), first.message));
    }
    std::vector<ManifestFile> files;
    for (const auto& [path, size] : listing.files) {
        files.push_back({path, size, sha256_file(bundle_dir / path)});
    }
    return manifest_json(std::move(files), harness_version);
}

std::vector<ManifestProblem> check_manifest(const fs::path& bundle_dir) {
    if (!fs::is_directory(bundle_dir)) {
        throw input_error(fmt::format("{}: not a directory", bundle_dir.string()));
    }
    std::vector<ManifestProblem> problems;
    const fs::path manifest_path = bundle_dir / k_manifest_name;
    const fs::file_status status = fs::symlink_status(manifest_path);
    BundleListing listing = list_bundle(bundle_dir);
    problems = std::move(listing.unusable);
    const auto finish = [&] {
        std::stable_sort(problems.begin(), problems.end(),
                         [](const ManifestProblem& a, const ManifestProblem& b) { return a.path < b.path; });
        return problems;
    };
    if (!fs::exists(status)) {
        problems.push_back({k_manifest_name, "missing"});
        return finish();
    }
    if (!fs::is_regular_file(status)) {
        return finish(); // the walk already reported the link or special file
    }
    simdjson::padded_string text;
    if (const auto error = simdjson::padded_string::load(manifest_path.string()).get(text); error != simdjson::SUCCESS) {
        problems.push_back({k_manifest_name, fmt::format("cannot read: {}", simdjson::error_message(error))});
        return finish();
    }
    simdjson::dom::parser parser;
    simdjson::dom::element root;
    if (const auto error = parser.parse(text).get(root); error != simdjson::SUCCESS) {
        problems.push_back({k_manifest_name, fmt::format("not valid JSON: {}", simdjson::error_message(error))});
        return finish();
    }
    const std::optional<std::map<std::string, ManifestRecord>> parsed = read_records(root, problems);
    if (!parsed) {
        return finish();
    }
    const std::map<std::string, ManifestRecord>& records = *parsed;

    std::set<std::string> unusable_paths;
    for (const ManifestProblem& problem : problems) {
        unusable_paths.insert(problem.path);
    }
    for (const auto& [path, record] : records) {
        const auto found = listing.files.find(path);
        if (found == listing.files.end()) {
            if (unusable_paths.count(path) == 0) {
                problems.push_back({path, "missing (listed in the manifest)"});
            }
            continue;
        }
        if (found->second != record.size) {
            problems.push_back({path, fmt::format("size is {} bytes, the manifest says {}", found->second, record.size)});
            continue;
        }
        const std::string actual = sha256_file(bundle_dir / path);
        if (actual != record.sha256) {
            problems.push_back({path, fmt::format("sha256 is {}, the manifest says {}", actual, record.sha256)});
        }
    }
    for (const auto& [path, size] : listing.files) {
        if (records.count(path) == 0) {
            problems.push_back({path, "not listed in the manifest"});
        }
    }
    return finish();
}

} // namespace harness
