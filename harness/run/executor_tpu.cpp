#include "run/executor.hpp"

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
    context.record.job_ids.push_back(context.run.plan.tpu_name);
    supervise_processes(context, {command}, {"tpu"});
}

} // namespace harness
