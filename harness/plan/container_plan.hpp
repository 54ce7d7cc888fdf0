#pragma once
// Container decisions for a plan: whether the image can be named the way the runtime looks images
// up, which CUDA major the image is built for and so which NCCL network plugin the site must inject,
// and how many CPUs each scheduler task gets. The rules and their sources: docs/containers.md.
#include "plan/frameworks/framework_plan.hpp"
#include "plan/plan.hpp"

#include <optional>
#include <string>

namespace harness {

/// The CUDA major a card's workload.hardware.driver_version names ("cuda_13.0", "CUDA 12.4",
/// "13.0" -> 13), or 0 when it names none ("none", "v2-alpha-tpuv6e", empty).
long long cuda_major_of(const std::string& driver_version);

/// What loads NERSC's NCCL plugin for Slingshot for a CUDA major: the Shifter module list
/// ("gpu,nccl-plugin" or "gpu,nccl-cu13-plugin") or the podman-hpc option ("--nccl" or
/// "--nccl-cu13"). Empty for another runtime or an unknown major.
std::string nccl_plugin_for(const std::string& runtime, long long cuda_major);

/// How a card names a base image the harness makes itself from Debian packages:
/// `ccl-base:<name>`, built from containers/base/<name>.yaml (image/base_spec.hpp).
inline constexpr const char* k_base_image_scheme = "ccl-base:";

/// The base spec's name when `image` is `ccl-base:<name>`, else nullopt.
std::optional<std::string> base_spec_name(const std::string& image);

/// True when `image` is `name@sha256:<64 hex>`.
bool is_digest_image(const std::string& image);

/// Shifter's `--image` value: "docker:<image>" (the image as the card names it; Shifter's gateway
/// finds only a pulled tag, so a digest here is refused at submission). Empty without an image.
std::string shifter_image_for(const std::string& image);

/// True when `image` is `name:tag` (not a digest, not a bare name; a registry port is no tag).
bool has_tag(const std::string& image);

/// Checks plan.container_runtime and plan.container_image (already chosen by make_plan) against
/// the cluster and the runtime's rules, and sets plan.cuda_major, plan.nccl_plugin and
/// plan.cpus_per_task with their origins. Problems go to `findings`.
void plan_container(const WorkloadCard& card, const ClusterProfile& cluster, Plan& plan, PlanFindings& findings);

} // namespace harness
