// verify: the container record adds up. provenance.json says which image the runtime reported
// each container ran, what was built (container/image.json) from which Containerfile
// (scripts/Containerfile) on which base, and the hash of its package list
// (container/packages.txt): each must be the one the others name. The image archive
// (container/image.oci.tar), which reproduce hands to `podman load`, must be safe to unpack
// and hold the image that ran.
#include "bundle/bundle_verify_checks.hpp"
#include "image/image_archive.hpp"
#include "image/image_build.hpp"
#include "provenance/provenance.hpp"
#include "run/container_ledger.hpp"
#include "run/container_provenance.hpp"
#include "util/error.hpp"
#include "util/json.hpp"
#include "util/oci_archive.hpp"
#include "util/sha256.hpp"

#include <fmt/format.h>

namespace harness::verify_checks {

namespace {

std::string text_of(const Json& object, const char* key) {
    const Json* value = object.find(key);
    return value != nullptr && value->is_string() ? value->as_string() : "";
}

/// The bundle's file's sha256, or "" when it is not a plain file.
std::string file_sha256(const fs::path& file) {
    std::error_code ec;
    return fs::is_regular_file(fs::symlink_status(file, ec)) ? sha256_file(file) : "";
}

void check_image_record(const fs::path& dir, const Json& container, const std::string& ran, Problems& problems) {
    ImageRecord image;
    try {
        image = image_record_from_json(Json::parse(read_file(dir / k_image_record_name)), k_image_record_name);
    } catch (const std::exception& error) { // unreadable, not JSON, or not an image record
        problems.push_back({k_image_record_name, error.what()});
        return;
    }
    if (!ran.empty() && image.image_id != ran) {
        problems.push_back({k_image_record_name, fmt::format("image_id {} was built, but provenance.json says {} ran",
                                                             image.image_id.substr(0, 12), ran.substr(0, 12))});
    }
    if (image.containerfile_sha256 != text_of(container, "containerfile_sha256")) {
        problems.push_back({k_provenance_name, "container.containerfile_sha256 is not the image record's"});
    }
    if (image.packages_sha256 != text_of(container, "packages_sha256")) {
        problems.push_back({k_provenance_name, "container.packages_sha256 is not the image record's"});
    }
    if (const std::string packages = file_sha256(dir / k_image_packages_name); packages != image.packages_sha256) {
        problems.push_back({k_image_packages_name,
                            packages.empty() ? "missing (the image's package list)" : "not the package list the image record hashes"});
    }
    if (const std::string containerfile = file_sha256(dir / "scripts" / "Containerfile");
        containerfile != image.containerfile_sha256) {
        problems.push_back({"scripts/Containerfile", containerfile.empty() ? "missing (the image was built from one)"
                                                                           : "not the Containerfile the image was built from"});
    }
}

void check_ran(const fs::path& dir, const Json& container, const std::string& ran, Problems& problems) {
    const ContainerLedger ledger = read_container_ledger(dir / k_container_dir);
    for (const std::string& problem : ledger.problems) {
        problems.push_back({k_container_dir, problem});
    }
    const Json* listed = container.find("ran");
    const std::size_t recorded = listed != nullptr && listed->is_array() ? listed->as_array().size() : 0;
    if (recorded != ledger.containers.size()) {
        problems.push_back({k_provenance_name, fmt::format("container.ran lists {} container(s), the runtime's reports under "
                                                           "container/ {}",
                                                           recorded, ledger.containers.size())});
    }
    for (const RanContainer& entry : ledger.containers) {
        if (!ran.empty() && entry.image_id != ran) {
            problems.push_back({fmt::format("{}/ran-{}.json", k_container_dir, entry.node),
                                fmt::format("container {} ran image {}, not {}", entry.id.substr(0, 12), entry.image_id.substr(0, 12),
                                            ran.substr(0, 12))});
        }
    }
}

} // namespace

void check_container(const fs::path& dir, Problems& problems) {
    // The archive's members are checked whatever provenance.json says: reproduce loads any image
    // archive a bundle with a package list carries, and a hostile one need not record a container.
    std::error_code ec;
    const bool archived = fs::is_regular_file(fs::symlink_status(dir / k_image_archive_name, ec));
    bool archive_safe = false;
    if (archived) {
        const std::string unsafe = oci_archive_problem(dir / k_image_archive_name);
        archive_safe = unsafe.empty();
        if (!archive_safe) {
            problems.push_back({k_image_archive_name, unsafe});
        }
    }
    Json provenance;
    try {
        provenance = Json::parse(read_file(dir / k_provenance_name));
    } catch (const std::exception&) {
        return; // check_provenance reports it
    }
    const Json* container = provenance.is_object() ? provenance.find("container") : nullptr;
    // Bundles from before the harness built images, and runs without a container, have none.
    if (container == nullptr || !container->is_object() || container->find("image_id") == nullptr) {
        return;
    }
    const std::string ran = text_of(*container, "image_id");
    if (ran.empty()) {
        problems.push_back({k_provenance_name, "container.image_id is null: the runtime did not report which image ran"});
    }
    check_image_record(dir, *container, ran, problems);
    check_ran(dir, *container, ran, problems);
    if (archive_safe) {
        try {
            if (const std::string held = oci_archive_image_id(dir / k_image_archive_name); held != ran) {
                problems.push_back({k_image_archive_name, fmt::format("holds image {}, not {} which ran", held.substr(0, 12),
                                                                      ran.empty() ? "(unknown)" : ran.substr(0, 12))});
            }
        } catch (const HarnessError& error) {
            problems.push_back({k_image_archive_name, error.what()});
        }
    }
}

} // namespace harness::verify_checks
