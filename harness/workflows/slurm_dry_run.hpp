#pragma once
// What `run --dry-run` shows for a Slurm target before any allocation is spent: the bill
// (account, QOS, nodes, time limit, the node-hours the job can charge at most and, where the
// profile knows the site's charge factor for the QOS, the allocation hours), the image work
// `run` does before it submits (build_image's own calls, recorded instead of run, so the list
// cannot drift from the code), and the sbatch line with the rendered script's #SBATCH lines.
#include "card/cluster.hpp"
#include "plan/plan.hpp"
#include "render/render.hpp"
#include "util/fs.hpp"
#include "util/json.hpp"

#include <optional>
#include <string>
#include <vector>

namespace harness {

/// The most a Slurm job can charge: nodes x its time limit, whatever it does inside.
struct SlurmBill {
    std::string account;         ///< "" when the card sets none
    std::string qos;             ///< "" when the card and profile set none: the site's default QOS
    std::string partition;       ///< "" when none is asked for
    std::string constraint;      ///< "" when none is asked for
    long long nodes = 0;         ///< whole nodes: what a site charges for
    long long gpus_per_node = 0; ///< 0 where the profile's accelerators are not GPUs
    long long gpus = 0;          ///< nodes x gpus_per_node
    std::string time_limit;      ///< as sbatch --time gets it
    double time_limit_hours = 0;
    double node_hours = 0;                  ///< nodes x time_limit_hours
    std::optional<double> charge_factor;    ///< the profile's slurm.charge_factors[qos]; empty: unknown
    std::optional<double> allocation_hours; ///< node_hours x charge_factor; empty: unknown
    /// Where the factor is written ("clusters/perlmutter.yaml:30:14"), or why it is unknown.
    std::string charge_factor_source;
};

/// The bill of a Slurm plan on `cluster`. Throws input_error for a time limit sbatch would refuse.
SlurmBill slurm_bill(const Plan& plan, const ClusterProfile& cluster);

/// The container image `run` prepares before it submits (workflows/run_image.hpp).
struct SlurmImageWork {
    std::string runtime; ///< podman-hpc, podman
    std::string tag;     ///< the local tag the job runs
    std::string base;    ///< the rendered Containerfile's first FROM, as written (a digest when pinned)
    bool migrate = false;
    /// Whether `tag` is built on this machine already: "yes", "no" or "unknown".
    std::string present;
    std::string present_note; ///< how that was learnt, or why it could not be
    /// Every command `run` gives the runtime for the image, in order, quoted as a shell needs
    /// them, for the answer `present` gives (unknown: as for an image not built yet).
    std::vector<std::string> commands;
    std::string problem; ///< why the list may be incomplete; empty when it is whole
};

/// Everything a Slurm dry run shows beyond the geometry.
struct SlurmDryRun {
    SlurmBill bill;
    std::optional<SlurmImageWork> image; ///< empty when the run builds no image
    std::string sbatch_command;          ///< the exact sbatch argv, quoted, as the executor gives it
    fs::path sbatch_cwd;                 ///< where it is run: the rendered directory
    std::vector<std::string> directives; ///< the rendered launch script's #SBATCH options
};

/// The Slurm preview of a rendered run: its bill, the image work (asking the runtime only
/// whether the image exists; nothing is built, migrated or submitted) and the submission, with
/// `requeue` as `run --requeue` gives it. Paths of the scratch render are shown as `shown_as`.
SlurmDryRun preview_slurm_run(const RenderedRun& run, const ClusterProfile& cluster, const fs::path& home, bool requeue,
                              const fs::path& shown_as);

/// Hours as people read them: at most two decimals, no trailing zeros ("4", "0.17", "12.5").
std::string hours_text(double hours);

/// The bill in one line each for what it is and what it can charge ("bill: ..." lines).
std::string format_slurm_bill(const SlurmBill& bill);

/// The whole preview as text: bill, image and sbatch lines.
std::string format_slurm_dry_run(const SlurmDryRun& preview);

Json slurm_bill_to_json(const SlurmBill& bill);
/// {bill, image, sbatch} (keys documented in `run --help`).
Json slurm_dry_run_to_json(const SlurmDryRun& preview);

} // namespace harness
