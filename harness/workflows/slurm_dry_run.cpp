#include "workflows/slurm_dry_run.hpp"

#include "image/base_image.hpp"
#include "image/image_build.hpp"
#include "run/executor.hpp"
#include "run/slurm_array.hpp"
#include "run/slurm_client.hpp"
#include "workflows/run_image.hpp"
#include "util/error.hpp"
#include "util/quote.hpp"
#include "util/scratch_dir.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

namespace harness {

namespace {

constexpr double k_seconds_per_hour = 3600;

/// `argv` as one line a shell would read back as the same words.
std::string quoted_line(const std::vector<std::string>& argv) {
    std::vector<std::string> words;
    words.reserve(argv.size());
    for (const std::string& word : argv) {
        words.push_back(shell_quote(word));
    }
    return join(words, " ");
}

/// `text` with every `from` replaced by `to`.
std::string replaced(std::string text, const std::string& from, const std::string& to) {
    for (std::size_t at = text.find(from); !from.empty() && at != std::string::npos; at = text.find(from, at + to.size())) {
        text.replace(at, from.size(), to);
    }
    return text;
}

/// Stands in for the runtime and for sbatch while build_image and SlurmClient::submit run as
/// `run` runs them: each command is recorded, not run, and answered as a success would be. Only
/// `image exists`, cheap and harmless, reaches the real runtime, when `ask` is set, so the list
/// says what this machine would really do; unanswered, an image is taken as not built yet (the
/// most work `run` can do).
class RecordingRunner final : public ProcessRunner {
public:
    explicit RecordingRunner(bool ask) : m_ask(ask) {}

    ExitStatus run(const Command& command) override {
        const std::vector<std::string>& argv = command.argv;
        m_commands.push_back(quoted_line(argv));
        const auto is = [&argv](std::size_t at, const char* word) { return argv.size() > at && argv[at] == word; };
        ExitStatus status;
        if (is(1, "image") && is(2, "exists")) {
            if (m_ask) {
                status = m_system.run(command);
            } else {
                status.code = 1;
            }
        } else if (is(1, "image") && is(2, "inspect")) {
            status.output = std::string(64, '0'); // an id of the right shape: the dry run has none
        } else if (is(1, "run")) {
            status.output = "dry-run=0\n"; // dpkg-query's answer shape
        } else if (is(0, "sbatch")) {
            status.output = "0\n";
        }
        return status;
    }

    const std::vector<std::string>& commands() const { return m_commands; }

private:
    bool m_ask;
    SystemProcessRunner m_system;
    std::vector<std::string> m_commands;
};

/// Whether `tag` is built here, asked the way dry_run_preflight asks: "yes", "no" or "unknown"
/// with why.
std::pair<std::string, std::string> image_presence(const std::string& runtime, const std::string& tag) {
    SystemProcessRunner runner;
    ImageContext context(runner);
    context.use_runtime(runtime);
    try {
        return image_exists(tag, context)
                   ? std::pair<std::string, std::string>{"yes", fmt::format("{} image exists {}: yes", runtime, tag)}
                   : std::pair<std::string, std::string>{"no", fmt::format("{} image exists {}: no", runtime, tag)};
    } catch (const HarnessError& error) {
        return {"unknown",
                fmt::format("{} cannot say here whether {} is built: {}", runtime, tag, trim(split(error.what(), '\n')[0]))};
    }
}

SlurmImageWork image_work(const RenderedRun& run, const fs::path& home, const fs::path& rendered, const fs::path& shown_as,
                          const fs::path& scratch) {
    const Plan& plan = run.plan;
    SlurmImageWork work;
    work.runtime = plan.container_runtime;
    work.tag = plan.container_build;
    std::tie(work.present, work.present_note) = image_presence(plan.container_runtime, plan.container_build);
    RecordingRunner recorder(work.present != "unknown");
    ImageContext context(recorder);
    context.home = home;
    context.use_runtime(plan.container_runtime);
    // A ccl-base base's lock and tar would go here, never beside real ones.
    context.lock_dir = scratch;
    context.scratch_root = scratch;
    work.migrate = context.migrate;
    try {
        work.base = build_image(rendered, plan.container_build, context).base_tag;
    } catch (const HarnessError& error) {
        work.problem = fmt::format("the image steps stop here, as `run` would: {}", error.what());
        if (const RenderedFile* file = run.find("Containerfile"); file != nullptr) {
            try {
                work.base = containerfile_base(file->content, "Containerfile").first;
            } catch (const HarnessError&) {
                work.base.clear();
            }
        }
    }
    for (const std::string& command : recorder.commands()) {
        work.commands.push_back(replaced(replaced(command, rendered.string(), shown_as.string()), scratch.string(), "$TMPDIR"));
    }
    return work;
}

} // namespace

SlurmBill slurm_bill(const Plan& plan, const ClusterProfile& cluster) {
    SlurmBill bill;
    bill.account = plan.account;
    bill.qos = plan.qos;
    bill.partition = plan.partition;
    bill.constraint = plan.constraint;
    bill.nodes = plan.nodes;
    bill.gpus_per_node = to_lower(cluster.accelerator_type) == "gpu" ? cluster.accelerators_per_node : 0;
    bill.gpus = bill.nodes * bill.gpus_per_node;
    bill.time_limit = plan.time_limit;
    bill.time_limit_hours = static_cast<double>(parse_time_limit(plan.time_limit)) / k_seconds_per_hour;
    bill.node_hours = static_cast<double>(bill.nodes) * bill.time_limit_hours;
    const std::string key = "slurm.charge_factors." + plan.qos;
    if (plan.qos.empty()) {
        bill.charge_factor_source = "no QOS asked for: the site's default QOS applies, and its charge factor is unknown here";
    } else if (const auto it = cluster.charge_factors.find(plan.qos); it != cluster.charge_factors.end()) {
        bill.charge_factor = it->second;
        bill.allocation_hours = bill.node_hours * it->second;
        bill.charge_factor_source = cluster.location(key);
    } else if (cluster.charge_factors.empty()) {
        bill.charge_factor_source = fmt::format("unknown: profile {} lists no charge factors (slurm.charge_factors)",
                                                cluster.source.filename().string());
    } else {
        std::vector<std::string> known;
        for (const auto& entry : cluster.charge_factors) {
            known.push_back(entry.first);
        }
        bill.charge_factor_source = fmt::format("unknown: profile {} has no charge factor for QOS {} (slurm.charge_factors has {})",
                                                cluster.source.filename().string(), enquote(plan.qos), join(known, ", "));
    }
    return bill;
}

SlurmDryRun preview_slurm_run(const RenderedRun& run, const ClusterProfile& cluster, const fs::path& home, bool requeue,
                              const fs::path& shown_as) {
    SlurmDryRun preview;
    preview.bill = slurm_bill(run.plan, cluster);
    if (const RenderedFile* script = run.find(run.launch_script); script != nullptr) {
        preview.directives = sbatch_directives_of(script->content);
    }
    const ScratchDir scratch({}, "slurm-dry-run");
    const fs::path rendered = scratch.path() / "rendered";
    write_rendered(run, rendered);
    if (builds_run_image(run.plan)) {
        preview.image = image_work(run, home, rendered, shown_as, scratch.path());
    }
    // The executor's own call (executor_slurm.cpp), recorded: its options and its argv order.
    RecordingRunner recorder(false);
    const SlurmClient slurm(recorder, cluster);
    slurm.submit(run.launch_script, rendered, {}, {SlurmClient::requeue_option(requeue)});
    preview.sbatch_command = recorder.commands().empty() ? "" : recorder.commands().back();
    preview.sbatch_cwd = shown_as;
    return preview;
}

std::string hours_text(double hours) {
    std::string text = fmt::format("{:.2f}", hours);
    while (!text.empty() && text.back() == '0') {
        text.pop_back();
    }
    if (!text.empty() && text.back() == '.') {
        text.pop_back();
    }
    return text;
}

std::string format_slurm_bill(const SlurmBill& bill) {
    std::vector<std::string> what;
    what.push_back("account " + (bill.account.empty() ? std::string("(none: the site's default)") : bill.account));
    what.push_back("QOS " + (bill.qos.empty() ? std::string("(none: the site's default)") : bill.qos));
    if (!bill.partition.empty()) {
        what.push_back("partition " + bill.partition);
    }
    if (!bill.constraint.empty()) {
        what.push_back("constraint " + bill.constraint);
    }
    what.push_back(bill.gpus_per_node > 0
                       ? fmt::format("{} node(s) x {} GPU(s) = {} GPU(s)", bill.nodes, bill.gpus_per_node, bill.gpus)
                       : fmt::format("{} node(s)", bill.nodes));
    what.push_back(fmt::format("time limit {} ({} h)", bill.time_limit, hours_text(bill.time_limit_hours)));
    std::string text = "bill: " + join(what, ", ") + "\n";
    text += fmt::format("bill: can charge at most {} node-hour(s) ({} node(s) x {} h, if the job runs to its time limit)\n",
                        hours_text(bill.node_hours), bill.nodes, hours_text(bill.time_limit_hours));
    if (bill.allocation_hours) {
        text += fmt::format("bill: at most {} allocation hour(s) ({} node-hour(s) x charge factor {} of QOS {}, {})\n",
                            hours_text(*bill.allocation_hours), hours_text(bill.node_hours), hours_text(*bill.charge_factor), bill.qos,
                            bill.charge_factor_source);
    } else {
        text += fmt::format("bill: allocation hours unknown: charge factor {}\n", bill.charge_factor_source);
    }
    return text;
}

std::string format_slurm_dry_run(const SlurmDryRun& preview) {
    std::string text = format_slurm_bill(preview.bill);
    if (preview.image) {
        const SlurmImageWork& image = *preview.image;
        text += fmt::format("image: {} builds {} from the rendered Containerfile (FROM {}){}, before it submits\n", image.runtime,
                            image.tag, image.base.empty() ? "?" : image.base,
                            image.migrate ? " and migrates it for the compute nodes" : "");
        text += fmt::format("image: built here already: {} ({})\n", image.present, image.present_note);
        text += "image: would run, in this order:\n";
        for (const std::string& command : image.commands) {
            text += "  " + command + "\n";
        }
        if (!image.problem.empty()) {
            text += "warning: " + image.problem + "\n";
        }
    }
    text += fmt::format("sbatch: {} (in {}), with the rendered script's #SBATCH directives:\n", preview.sbatch_command,
                        preview.sbatch_cwd.string());
    for (const std::string& directive : preview.directives) {
        text += "  #SBATCH " + directive + "\n";
    }
    return text;
}

Json slurm_bill_to_json(const SlurmBill& bill) {
    const auto text_or_null = [](const std::string& text) { return text.empty() ? Json() : Json(text); };
    return Json(Json::Object{{"account", text_or_null(bill.account)},
                             {"qos", text_or_null(bill.qos)},
                             {"partition", text_or_null(bill.partition)},
                             {"constraint", text_or_null(bill.constraint)},
                             {"nodes", bill.nodes},
                             {"gpus_per_node", bill.gpus_per_node},
                             {"gpus", bill.gpus},
                             {"time_limit", bill.time_limit},
                             {"time_limit_hours", bill.time_limit_hours},
                             {"node_hours", bill.node_hours},
                             {"charge_factor", bill.charge_factor ? Json(*bill.charge_factor) : Json()},
                             {"allocation_hours", bill.allocation_hours ? Json(*bill.allocation_hours) : Json()},
                             {"charge_factor_source", bill.charge_factor_source}});
}

Json slurm_dry_run_to_json(const SlurmDryRun& preview) {
    Json image;
    if (preview.image) {
        const SlurmImageWork& work = *preview.image;
        image = Json(Json::Object{{"runtime", work.runtime},
                                  {"tag", work.tag},
                                  {"base", work.base},
                                  {"migrate", work.migrate},
                                  {"present", work.present},
                                  {"present_note", work.present_note},
                                  {"commands", json_string_array(work.commands)},
                                  {"problem", work.problem.empty() ? Json() : Json(work.problem)}});
    }
    return Json(Json::Object{{"bill", slurm_bill_to_json(preview.bill)},
                             {"image", image},
                             {"sbatch", Json(Json::Object{{"command", preview.sbatch_command},
                                                          {"cwd", preview.sbatch_cwd.string()},
                                                          {"directives", json_string_array(preview.directives)}})}});
}

} // namespace harness
