#pragma once
// Ctrl-C and SIGTERM become a flag that long waits check, so every exit path can record what
// happened and clean up instead of dying mid-write.
namespace harness {

void install_interrupt_handlers();
/// The signal received since installation (SIGINT or SIGTERM), or 0.
int interrupt_signal();
/// Throws HarnessError "interrupted" (exit 130) once a signal has arrived: for loops that read
/// input long enough for a person to give up on them.
void throw_if_interrupted();

} // namespace harness
