#include "cli/card_options.hpp"
#include "cli/commands.hpp"
#include "cli/report_output.hpp"
#include "image/image_build.hpp"
#include "util/error.hpp"
#include "util/fs.hpp"
#include "util/home.hpp"
#include "util/interrupt.hpp"
#include "util/quote.hpp"
#include "util/strings.hpp"
#include "workflows/build_image_workflow.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <iostream>
#include <memory>

namespace harness::cli {

namespace {

struct BuildOptions {
    std::string card;
    std::string cluster;
    std::string out;
    std::vector<std::string> overrides;
    OverridePaths set_paths;
    ReportFlags report;
};

std::size_t package_count(const std::string& packages) {
    return static_cast<std::size_t>(std::count(packages.begin(), packages.end(), '\n'));
}

int run_build(const BuildOptions& options) {
    // Ctrl-C ends mmdebstrap or podman and removes the base's temporary tar: exit 130.
    install_interrupt_handlers();
    options.set_paths.check(options.overrides);
    const bool quiet = quiet_wanted();
    std::ostream& progress = progress_stream(options.report.json, quiet);
    SystemProcessRunner runner;
    ImageContext context(runner);
    context.home = harness_home();
    context.progress = [&progress](const std::string& line) { progress << terminal_text(line) << "\n" << std::flush; };
    BuildImageRequest request{{options.card, options.overrides, options.cluster, false, context.home}, options.out};
    const BuildImageOutcome outcome = build_card_image(request, context);
    std::cerr << outcome.resolved.diagnostics.format(!quiet);
    if (!outcome.image) {
        return k_exit_usage;
    }
    const ImageRecord& image = *outcome.image;
    if (options.report.json) {
        Json json = image_record_to_json(image);
        json["card"] = outcome.resolved.card.name();
        json["target"] = outcome.resolved.target;
        json["rendered"] = outcome.rendered_dir.empty() ? Json() : Json(absolute_path(outcome.rendered_dir).string());
        json["seconds"] = outcome.seconds;
        std::cout << json.dump() << std::flush;
        return k_exit_ok;
    }
    std::ostream& out = result_stream(false);
    out << fmt::format("image {}: {} in {:.1f} s\n", terminal_text(image.tag), image.built ? "built" : "reused (already built)",
                       outcome.seconds);
    out << fmt::format("  id             {}\n", image.image_id);
    out << fmt::format("  base           {} ({}{})\n", terminal_text(image.base_tag),
                       image.base_id.empty() ? "id unknown" : "id " + image.base_id.substr(0, 12),
                       image.base_built ? ", built now" : "");
    out << fmt::format("  Containerfile  sha256 {}\n", image.containerfile_sha256);
    out << fmt::format("  packages       {} Debian packages, sha256 {}\n", package_count(image.packages), image.packages_sha256);
    if (!outcome.rendered_dir.empty()) {
        out << fmt::format("  rendered       {}\n", terminal_text(outcome.rendered_dir.string()));
    }
    return k_exit_ok;
}

} // namespace

void add_build(CLI::App& sub, Action& action) {
    auto options = std::make_shared<BuildOptions>();
    sub.add_option("card", options->card, "workload card with launch.container (image and runtime podman or podman-hpc)")->required();
    add_cluster_option(sub, options->cluster, "launch.cluster, else nvidia_a100* -> perlmutter, tpu_v6e -> tpu-v6e, cpu -> local");
    add_override_options(sub, options->set_paths, "--set", options->overrides,
                         "override a card field: PATH=VALUE, e.g. launch.container.runtime=podman (repeatable)");
    sub.add_option("--out", options->out,
                   "keep the rendered files (the Containerfile built) in DIR (default: a scratch directory, removed)")
        ->type_name("DIR");
    add_report_flags(sub, options->report);
    sub.footer("Renders the card's Containerfile and builds it with podman as the image the plan names\n"
               "(localhost/ccl-<framework>:<first 16 hex of the Containerfile's sha256>), or reuses that image\n"
               "when it exists: a run with the same Containerfile then starts at once. An image\n"
               "`ccl-base:<name>` (launch.container.image) is the base made from containers/base/<name>.yaml:\n"
               "Debian packages installed by mmdebstrap and imported into podman (about a minute, network to the\n"
               "mirror; reused afterwards, and never built twice at once). Prints the image id, the base, the\n"
               "Containerfile's sha256 and the number of Debian packages inside (what reproduce compares).\n"
               "Needs podman (and mmdebstrap for a base): .ci/setup installs them.\n"
               "--json keys: tag, image_id, containerfile_sha256, base_tag, base_id, packages (name=version lines),\n"
               "packages_sha256, built, base_built, card, target, rendered (null without --out), seconds.\n"
               "Examples:\n"
               "  ccl-harness build workloads/tiny-ddp/tiny-ddp.yaml --set launch.container.image=ccl-base:bookworm-torch \\\n"
               "      --set launch.container.runtime=podman\n"
               "  ccl-harness build card.yaml --out /tmp/rendered --json");
    sub.callback([options, &action] { action = [options] { return run_build(*options); }; });
}

} // namespace harness::cli
