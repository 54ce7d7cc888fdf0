#pragma once
// Ctrl-C and SIGTERM become a flag that long waits check, so every exit path can record what
// happened and clean up instead of dying mid-write. SIGHUP (a dropped SSH session) becomes a
// separate flag, a request to detach, where a caller says it can leave its work running.
namespace harness {

void install_interrupt_handlers();
/// The signal received since installation (SIGINT or SIGTERM), or 0.
int interrupt_signal();
/// How many SIGINTs and SIGTERMs arrived since installation: a wait that the first one started
/// (a job's cancel) ends at the next one, so a person is never stuck behind it.
int interrupt_count();
/// Throws HarnessError "interrupted" (exit 130) once a signal has arrived: for loops that read
/// input long enough for a person to give up on them.
void throw_if_interrupted();

/// From now on SIGHUP asks to detach instead of ending the process: for a wait whose work
/// outlives the harness by design (a submitted Slurm job). Until a caller installs it, SIGHUP
/// keeps its default action, so a run whose work dies with the harness (local ranks) is not
/// left running behind a closed terminal.
void install_detach_handler();
/// Asks to detach as SIGHUP does: `run --detach`, once the job is submitted.
void request_detach();
/// Whether SIGHUP arrived (since install_detach_handler) or request_detach was called.
bool detach_requested();

} // namespace harness
