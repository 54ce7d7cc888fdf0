#include "image/image_archive.hpp"

#include "util/error.hpp"
#include "util/interrupt.hpp"
#include "util/json.hpp"
#include "util/process.hpp"
#include "util/strings.hpp"
#include "util/tar_members.hpp"

#include <fmt/format.h>

namespace harness {

namespace {

constexpr const char* k_sha256 = "sha256:";

/// "sha256:<64 hex>" -> "<64 hex>", or "" for anything else.
std::string digest_hex(const Json* digest) {
    if (digest == nullptr || !digest->is_string() || !starts_with(digest->as_string(), k_sha256)) {
        return "";
    }
    std::string hex = digest->as_string().substr(7);
    const bool ok = hex.size() == 64 && hex.find_first_not_of("0123456789abcdef") == std::string::npos;
    return ok ? hex : "";
}

Json parse_member(const fs::path& archive, const std::map<std::string, std::string>& members, const std::string& name) {
    const auto found = members.find(name);
    if (found == members.end()) {
        throw input_error(fmt::format("{}: not an OCI image archive: no {}", archive.string(), name));
    }
    try {
        return Json::parse(found->second);
    } catch (const std::exception& error) {
        throw input_error(fmt::format("{}: {}: {}", archive.string(), name, error.what()));
    }
}

ExitStatus run_runtime(const ImageContext& context, std::vector<std::string> argv) {
    argv.insert(argv.begin(), context.runtime);
    ExitStatus status = context.runner.run({std::move(argv), current_environment(), {}});
    throw_if_interrupted();
    return status;
}

} // namespace

void save_image_archive(const std::string& tag, const fs::path& out, const ImageContext& context) {
    const fs::path partial = out.string() + ".partial";
    std::error_code ec;
    fs::remove(partial, ec);
    context.report(fmt::format("image {}: saving it as an OCI archive ({})...", tag, out.filename().string()));
    const ExitStatus saved = run_runtime(context, {"save", "--quiet", "--format", "oci-archive", "--output", partial.string(), tag});
    if (!saved.ok()) {
        fs::remove(partial, ec);
        throw HarnessError(
            fmt::format("image {}: {} save failed ({}): {}", tag, context.runtime, saved.describe(), trim(saved.output)));
    }
    fs::rename(partial, out, ec);
    if (ec) {
        fs::remove(partial, ec);
        throw HarnessError(fmt::format("{}: cannot write: {}", out.string(), ec.message()));
    }
}

std::string oci_archive_image_id(const fs::path& archive) {
    const Json index = parse_member(archive, read_tar_members(archive, {"index.json"}), "index.json");
    const Json* manifests = index.is_object() ? index.find("manifests") : nullptr;
    if (manifests == nullptr || !manifests->is_array() || manifests->as_array().size() != 1) {
        throw input_error(fmt::format("{}: index.json should name exactly one image manifest", archive.string()));
    }
    const std::string manifest = digest_hex(manifests->as_array().front().find("digest"));
    if (manifest.empty()) {
        throw input_error(fmt::format("{}: index.json: the manifest's digest is not sha256:<64 hex>", archive.string()));
    }
    const std::string blob = "blobs/sha256/" + manifest;
    const Json parsed = parse_member(archive, read_tar_members(archive, {blob}), blob);
    const Json* config = parsed.is_object() ? parsed.find("config") : nullptr;
    std::string id = digest_hex(config != nullptr && config->is_object() ? config->find("digest") : nullptr);
    if (id.empty()) {
        throw input_error(fmt::format("{}: {}: no config digest", archive.string(), blob));
    }
    return id;
}

std::string load_image_archive(const fs::path& archive, const std::string& tag, const ImageContext& context) {
    std::string id = oci_archive_image_id(archive);
    context.report(fmt::format("image {}: loading it from {}...", tag, archive.string()));
    const ExitStatus loaded = run_runtime(context, {"load", "--quiet", "--input", archive.string()});
    if (!loaded.ok()) {
        throw HarnessError(
            fmt::format("{}: {} load failed ({}): {}", archive.string(), context.runtime, loaded.describe(), trim(loaded.output)));
    }
    const ExitStatus tagged = run_runtime(context, {"tag", id, tag});
    if (!tagged.ok()) {
        throw HarnessError(fmt::format("{}: the loaded image is not {} ({} tag: {})", archive.string(), id.substr(0, 12),
                                       context.runtime, trim(tagged.output)));
    }
    return id;
}

} // namespace harness
