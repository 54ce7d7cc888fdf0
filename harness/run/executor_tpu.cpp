#include "run/executor.hpp"

#include <fmt/format.h>

namespace harness {

// The rendered launch.sh owns the gcloud lifecycle (queued resource, ssh --worker=all, scp of
// the traces, deletion); the executor runs it, follows it and stops it like a local rank.
void execute_tpu(ExecutionContext& context) {
    Command command;
    command.argv = {"/bin/bash", (context.dir.rendered() / context.run.launch_script).string()};
    command.cwd = context.dir.rendered();
    Environment overrides = {{"CCL_RUN_DIR", context.dir.rendered().string()}};
    if (!context.teardown) {
        overrides.emplace_back("CCL_KEEP_TPU", "1");
    }
    command.env = current_environment(overrides);
    context.record.job_ids.push_back(context.run.plan.tpu_name);
    supervise_processes(context, {command}, {"tpu"});
}

} // namespace harness
