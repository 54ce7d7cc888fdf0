#pragma once
// What `run --dry-run` shows for a TPU target before any money is spent: every gcloud command
// the rendered launch.sh would run, in its order, taken by running that very script against a
// recording gcloud (templates/common/gcloud_dry_run.sh) in a scratch directory, so the list can
// never drift from the script; and what will bill, and until when.
#include "render/render.hpp"
#include "util/fs.hpp"

#include <string>
#include <vector>

namespace harness {

struct TpuDryRun {
    std::vector<std::string> commands; ///< "gcloud compute tpus ...", quoted as a shell needs them
    std::string billing;               ///< what bills, from when until when
    std::string problem;               ///< why the commands could not be listed; empty when they were
};

/// For a TPU plan: runs `run`'s launch script against the recording gcloud (nothing else leaves
/// this machine; the script's own files go to a scratch directory that is removed), with the
/// slice deleted at the end when `teardown`, kept otherwise. The scratch directory's path is
/// shown as `shown_as`, where the rendered files of a real run would be.
TpuDryRun preview_tpu_run(const RenderedRun& run, const fs::path& home, bool teardown, const fs::path& shown_as);

/// The billing sentence for a TPU plan: the slice, its chips, zone and project, spot or
/// on-demand, and whether this run deletes it at the end.
std::string tpu_billing(const Plan& plan, bool teardown);

} // namespace harness
