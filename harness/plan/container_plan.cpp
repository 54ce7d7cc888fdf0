#include "plan/container_plan.hpp"

#include "card/schema.hpp"
#include "image/base_spec.hpp"
#include "util/quote.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>
#include <regex>

namespace harness {

namespace {

void derived(Plan& plan, const std::string& field, const std::string& from) {
    plan.origins[field] = Origin{Origin::Kind::derived, "", from};
}

/// Why a digest cannot go to Shifter, with the fix; the sources are cited in docs/containers.md.
std::string shifter_digest_message(const std::string& image) {
    return fmt::format("{} is a digest, which Shifter cannot run: its image gateway splits the name on ':' into "
                       "repository and tag (imagegw imageworker.py), so `repo@sha256:...` can never be pulled, and "
                       "`#SBATCH --image` is looked up in the gateway at submission (`shifterimg lookup`), which then "
                       "refuses the job. Use launch.container.runtime: podman-hpc (it builds the rendered Containerfile "
                       "FROM the digest), or give a tag pulled with `shifterimg pull docker:REPO:TAG`",
                       enquote(image));
}

/// The CUDA major the site's NCCL plugin must match is the image's, not the card's: a card may
/// say cuda_12.9 (the driver it was written against) for an image built on CUDA 13. The image's
/// version comes from launch.container.cuda when the card declares it, else from driver_version;
/// the job's preflight compares it with the CUDA the image reports (docs/containers.md).
void plan_cuda_major(const WorkloadCard& card, Plan& plan, PlanFindings& findings) {
    const std::string driver = trim(scalar_text(find_node(card.document().root(), "workload.hardware.driver_version")));
    const long long card_major = cuda_major_of(driver);
    const std::string& declared = card.launch.container_cuda;
    if (declared.empty()) {
        plan.cuda_major = card_major;
        derived(plan, "container.cuda_major",
                card_major > 0 ? fmt::format("workload.hardware.driver_version {} (launch.container.cuda names none; the job "
                                             "checks the image's own)",
                                             enquote(driver))
                               : "0: workload.hardware.driver_version names no CUDA version");
        return;
    }
    const long long image_major = cuda_major_of(declared);
    if (image_major == 0) {
        findings.problem("launch.container.cuda",
                         fmt::format("{} is not a CUDA version (expected MAJOR.MINOR, such as \"13.0\")", enquote(declared)));
        return;
    }
    plan.cuda_major = image_major;
    derived(plan, "container.cuda_major", fmt::format("launch.container.cuda {}: the image's CUDA", enquote(declared)));
    if (card_major > 0 && card_major != image_major) {
        findings.problem("workload.hardware.driver_version",
                         fmt::format("{} says CUDA {}, but the image is built on CUDA {} (launch.container.cuda {}): the card "
                                     "would describe a run that did not happen; set driver_version: cuda_{}",
                                     enquote(driver), card_major, image_major, enquote(declared), declared));
    }
}

} // namespace

long long cuda_major_of(const std::string& driver_version) {
    // "cuda_12.x" (12 corpus cards) names the major and leaves the minor open.
    static const std::regex cuda(R"(^\s*(?:cuda[ _-]?)?(\d{1,2})(?:\.(?:\d+|x))*\s*$)", std::regex::icase);
    std::smatch match;
    if (std::regex_match(driver_version, match, cuda)) {
        return std::stoll(match[1].str());
    }
    return 0;
}

std::string nccl_plugin_for(const std::string& runtime, long long cuda_major) {
    if (cuda_major != 12 && cuda_major != 13) {
        return {};
    }
    if (runtime == "shifter") {
        return cuda_major == 13 ? "gpu,nccl-cu13-plugin" : "gpu,nccl-plugin";
    }
    if (runtime == "podman-hpc") {
        return cuda_major == 13 ? "--nccl-cu13" : "--nccl";
    }
    return {};
}

bool is_digest_image(const std::string& image) {
    static const std::regex by_digest(R"(^[a-z0-9][a-z0-9._/:-]*@sha256:[0-9a-f]{64}$)");
    return std::regex_match(image, by_digest);
}

std::string shifter_image_for(const std::string& image) {
    if (image.empty()) {
        return {};
    }
    return "docker:" + image;
}

std::optional<std::string> base_spec_name(const std::string& image) {
    if (!starts_with(image, k_base_image_scheme)) {
        return std::nullopt;
    }
    return image.substr(std::string(k_base_image_scheme).size());
}

bool has_tag(const std::string& image) {
    // A tag is what follows the last ':' after the last '/' (a registry port is not a tag).
    const std::size_t slash = image.rfind('/');
    const std::size_t colon = image.rfind(':');
    return image.find('@') == std::string::npos && colon != std::string::npos && (slash == std::string::npos || colon > slash);
}

void plan_container(const WorkloadCard& card, const ClusterProfile& cluster, Plan& plan, PlanFindings& findings) {
    const std::string& runtime = plan.container_runtime;
    if (runtime != "none" && !cluster.container_runtimes.empty() &&
        std::find(cluster.container_runtimes.begin(), cluster.container_runtimes.end(), runtime) == cluster.container_runtimes.end()) {
        findings.problem("launch.container.runtime", fmt::format("{} is not available on {} (it has {})", enquote(runtime),
                                                                 cluster.name, join(cluster.container_runtimes, ", ")));
    }
    if (runtime != "none") {
        const std::string& image = plan.container_image;
        if (image.empty()) {
            findings.problem("launch.container.image", "a containerized run needs launch.container.image (pinned by @sha256 digest)");
        } else if (runtime == "shifter") {
            if (image.find('@') != std::string::npos) { // any digest form, well-formed or not
                findings.problem("launch.container.image", shifter_digest_message(image));
            } else if (!has_tag(image)) {
                findings.problem("launch.container.image",
                                 fmt::format("{} names no tag; Shifter runs `docker:REPO:TAG` images pulled with `shifterimg pull`",
                                             enquote(image)));
            } else {
                findings.problem("launch.container.runtime",
                                 fmt::format("Shifter cannot build the rendered Containerfile and the harness does not pin a "
                                             "tag's gateway id, so the run would use {} as pulled, not pinned; use podman-hpc",
                                             enquote(image)));
            }
        } else if (const std::optional<std::string> base = base_spec_name(image); base) {
            // Pinned by content: its tag carries the hash of containers/base/<name>.yaml (render).
            if (const std::string problem = base_name_problem(*base); !problem.empty()) {
                findings.problem("launch.container.image", fmt::format("{}: {}", enquote(image), problem));
            }
        } else if (!is_digest_image(image)) {
            findings.problem(
                "launch.container.image",
                fmt::format("{} is not pinned by digest (expected registry/name@sha256:<64 hex>, or ccl-base:<name> for a "
                            "base the harness makes from containers/base/<name>.yaml)",
                            enquote(image)));
        }
    }

    plan_cuda_major(card, plan, findings);
    if ((runtime == "shifter" || runtime == "podman-hpc") && cluster.accelerator_type == "GPU") {
        plan.nccl_plugin = nccl_plugin_for(runtime, plan.cuda_major);
        if (plan.nccl_plugin.empty() && !card.launch.container_cuda.empty()) {
            if (plan.cuda_major > 0) {
                findings.problem("launch.container.cuda",
                                 fmt::format("CUDA {}: the site has no NCCL plugin for it (CUDA 12 or 13); the plugin {} injects "
                                             "must match the image's CUDA major",
                                             plan.cuda_major, runtime));
            }
        } else if (plan.nccl_plugin.empty()) {
            const std::string driver = trim(scalar_text(find_node(card.document().root(), "workload.hardware.driver_version")));
            findings.problem("workload.hardware.driver_version",
                             fmt::format("{} names no CUDA major the site's NCCL plugin exists for (cuda_12.x or cuda_13.x); "
                                         "the plugin {} injects must match the image's CUDA major (or declare it: "
                                         "launch.container.cuda)",
                                         enquote(driver.empty() ? "(missing)" : driver), runtime));
        } else {
            derived(plan, "container.nccl_plugin",
                    fmt::format("{} for a CUDA {} image (docs/containers.md)", runtime, plan.cuda_major));
        }
    }

    if (plan.scheduler == Scheduler::slurm && cluster.cpus_per_node > 0 && plan.tasks_per_node > 0) {
        plan.cpus_per_task = std::max(1LL, cluster.cpus_per_node / plan.tasks_per_node);
        derived(plan, "scheduler_options.cpus_per_task",
                fmt::format("cpus_per_node {} / tasks per node {}", cluster.cpus_per_node, plan.tasks_per_node));
    }
}

} // namespace harness
