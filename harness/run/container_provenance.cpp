#include "run/container_provenance.hpp"

#include "image/image_build.hpp"
#include "provenance/provenance.hpp"
#include "run/container_ledger.hpp"
#include "util/error.hpp"

#include <fmt/format.h>
#include <set>

namespace harness {

namespace {

/// The containers the runtime reported and the one image they all ran ("" when none or several).
std::string add_ran(Json& container, const fs::path& run_dir, std::vector<std::string>& warnings) {
    const ContainerLedger ledger = read_container_ledger(run_dir / k_container_dir);
    warnings.insert(warnings.end(), ledger.problems.begin(), ledger.problems.end());
    Json ran = Json::array();
    std::set<std::string> images;
    for (const RanContainer& entry : ledger.containers) {
        ran.push_back(Json(Json::Object{{"node", entry.node}, {"container_id", entry.id}, {"image_id", entry.image_id}}));
        images.insert(entry.image_id);
    }
    container["ran"] = std::move(ran);
    if (images.empty()) {
        warnings.emplace_back("the container runtime reported no container for this run (container/ran-*.json): the image "
                              "that ran is not known");
        return "";
    }
    if (images.size() > 1) {
        warnings.push_back(fmt::format("the run's containers ran {} different images", images.size()));
        return "";
    }
    return *images.begin();
}

} // namespace

Json container_provenance(const Plan& plan, const fs::path& run_dir, std::vector<std::string>& warnings) {
    if (plan.container_image.empty() || plan.container_runtime == "none") {
        return Json();
    }
    const std::optional<std::string> digest = container_digest(plan.container_image);
    Json container(Json::Object{{"image", plan.container_image},
                                {"digest", digest ? Json(*digest) : Json()},
                                {"runtime", plan.container_runtime},
                                // the image built from the rendered Containerfile, named by its content
                                {"build", string_or_null(plan.container_build)}});
    std::error_code ec;
    if (run_dir.empty() || !fs::is_regular_file(run_dir / k_image_record_name, ec)) {
        return container;
    }
    ImageRecord image;
    try {
        image = image_record_from_json(Json::parse(read_file(run_dir / k_image_record_name)), k_image_record_name);
    } catch (const std::exception& error) { // unreadable, not JSON, or not an image record
        warnings.emplace_back(error.what());
        return container;
    }
    container["base"] = image.base_tag.empty() ? Json()
                                               : Json(Json::Object{{"tag", image.base_tag}, {"id", string_or_null(image.base_id)}});
    container["containerfile_sha256"] = image.containerfile_sha256;
    container["packages_sha256"] = image.packages_sha256;
    const std::string ran = add_ran(container, run_dir, warnings);
    if (!ran.empty() && ran != image.image_id) {
        warnings.push_back(fmt::format("the containers ran image {} but the harness built {} as {}", ran.substr(0, 12),
                                       image.image_id.substr(0, 12), image.tag));
    }
    container["image_id"] = string_or_null(ran);
    return container;
}

} // namespace harness
