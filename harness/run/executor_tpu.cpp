#include "run/executor.hpp"
#include "util/error.hpp"
#include "util/quote.hpp"

#include <fmt/format.h>

namespace harness {

// The rendered launch.sh owns the gcloud lifecycle (queued resource, ssh --worker=all, scp of
// the traces, deletion); the executor runs it, follows it and stops it like a local rank.
void execute_tpu(ExecutionContext& context) {
    Command command;
    command.argv = {"/bin/bash", (context.dir.rendered() / context.run.launch_script).string()};
    command.cwd = context.dir.rendered();
    // Said either way, so that a CCL_KEEP_TPU left in the user's environment never decides.
    const Environment overrides = {{"CCL_RUN_DIR", context.dir.rendered().string()}, {"CCL_KEEP_TPU", context.teardown ? "0" : "1"}};
    command.env = current_environment(overrides);
    // The name reaches gcloud and run.json, whose reader accepts only a TPU name there.
    if (const std::string problem = tpu_name_problem(context.run.plan.tpu_name); !problem.empty()) {
        throw input_error(fmt::format("tpu name {}: {}", json_string(context.run.plan.tpu_name), problem));
    }
    context.record.job_ids.push_back(context.run.plan.tpu_name);
    supervise_processes(context, {command}, {"tpu"});
}

} // namespace harness
