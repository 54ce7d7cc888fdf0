#include "workflows/run_image.hpp"

#include "image/base_image.hpp"
#include "image/image_archive.hpp"
#include "image/image_build.hpp"
#include "run/container_ledger.hpp"
#include "run/container_provenance.hpp"
#include "util/error.hpp"
#include "util/json.hpp"

#include <fmt/format.h>
#include <ostream>
#include <unistd.h>

namespace harness {

namespace {

std::string this_host() {
    char name[256] = {};
    if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') {
        return "localhost";
    }
    return name;
}

} // namespace

bool builds_run_image(const Plan& plan) {
    return !plan.container_build.empty() && (plan.container_runtime == "podman" || plan.container_runtime == "podman-hpc");
}

std::string prepare_run_image(const Plan& plan, const RunDirectory& dir, const fs::path& home, ProcessRunner& runner,
                              const std::optional<ExpectedImage>& expected, std::ostream& out) {
    ImageContext context(runner);
    context.home = home;
    context.use_runtime(plan.container_runtime);
    context.progress = [&out](const std::string& line) { out << "  image: " << line << "\n" << std::flush; };
    if (expected && !expected->archive.empty() && !image_exists(plan.container_build, context)) {
        // The bundle carries the image: the exact software, offline, rather than a rebuild.
        load_image_archive(expected->archive, plan.container_build, context);
        out << fmt::format("  image: loaded from {}'s {}\n", expected->bundle, k_image_archive_name);
    }
    const ImageRecord image = build_image(dir.rendered(), plan.container_build, context);
    fs::create_directories(dir.path / k_container_dir);
    write_file_atomic(dir.path / k_image_packages_name, image.packages);
    write_file_atomic(dir.path / k_image_record_name, image_record_to_json(image).dump());
    out << fmt::format("  image: {} {} (id {}{})\n", image.built ? "built" : "reused", image.tag, image.image_id.substr(0, 12),
                       image.base_tag.empty() ? "" : ", base " + image.base_tag);
    if (!expected) {
        return "";
    }
    if (!expected->image_id.empty() && expected->image_id == image.image_id) {
        out << fmt::format("  image: the one {} ran (id {})\n", expected->bundle, image.image_id.substr(0, 12));
        return "";
    }
    const std::string diff = diff_packages(expected->packages, image.packages);
    if (diff.empty()) {
        out << fmt::format("  image: not the one {} ran, but the same Debian packages and versions\n", expected->bundle);
        return "";
    }
    out << fmt::format("  image: its Debian packages differ from those {} ran:\n", expected->bundle) << diff;
    if (expected->allow_drift) {
        out << "  image: running anyway (--allow-image-drift)\n";
        return "";
    }
    return fmt::format("its Debian packages differ from those {} ran (shown above); run anyway with --allow-image-drift",
                       expected->bundle);
}

void add_image_archive(const fs::path& run_dir, ProcessRunner& runner, std::ostream& out) {
    std::error_code ec;
    if (!fs::is_regular_file(run_dir / "provenance.json", ec)) {
        throw input_error(fmt::format("{}: no provenance.json: not a finished run directory", run_dir.string()));
    }
    const Json provenance = Json::parse(read_file(run_dir / "provenance.json"));
    const Json* container = provenance.find("container");
    const Json* id = container != nullptr && container->is_object() ? container->find("image_id") : nullptr;
    const Json* runtime = container != nullptr && container->is_object() ? container->find("runtime") : nullptr;
    if (id == nullptr || !id->is_string() || runtime == nullptr || !runtime->is_string()) {
        throw input_error(fmt::format("{}: provenance.json names no image that ran (container.image_id): --with-image needs a run "
                                      "in an image the harness built (launch.container.runtime podman or podman-hpc)",
                                      run_dir.string()));
    }
    ImageContext context(runner);
    context.use_runtime(runtime->as_string());
    context.progress = [&out](const std::string& line) { out << line << "\n" << std::flush; };
    const fs::path archive = run_dir / k_image_archive_name;
    save_image_archive(id->as_string(), archive, context);
    if (const std::string saved = oci_archive_image_id(archive); saved != id->as_string()) {
        fs::remove(archive, ec);
        throw HarnessError(fmt::format("{}: the runtime saved image {}, not {} which ran", archive.string(), saved.substr(0, 12),
                                       id->as_string().substr(0, 12)));
    }
}

std::vector<std::string> gather_ran_containers(const Plan& plan, const RunDirectory& dir, ProcessRunner& runner) {
    std::vector<std::string> problems;
    if (!builds_run_image(plan)) {
        return problems;
    }
    const fs::path target = dir.path / k_container_dir;
    std::error_code ec;
    fs::create_directories(target, ec);
    const fs::path reported = dir.rendered() / k_container_dir;
    if (fs::is_directory(reported, ec)) {
        for (const auto& entry : fs::directory_iterator(reported, ec)) {
            fs::rename(entry.path(), target / entry.path().filename(), ec);
            if (ec) {
                problems.push_back(fmt::format("{}: cannot move into {}: {}", entry.path().string(), target.string(), ec.message()));
            }
        }
        fs::remove(reported, ec);
    }
    if (plan.scheduler == Scheduler::local) {
        if (std::string problem = record_local_containers(runner, plan.container_runtime, dir.rendered(), target, this_host());
            !problem.empty()) {
            problems.push_back(std::move(problem));
        }
    }
    return problems;
}

} // namespace harness
