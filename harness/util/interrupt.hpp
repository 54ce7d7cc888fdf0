#pragma once
// Ctrl-C and SIGTERM become a flag that long waits check, so every exit path can record what
// happened and clean up instead of dying mid-write.
namespace harness {

void install_interrupt_handlers();
/// The signal received since installation (SIGINT or SIGTERM), or 0.
int interrupt_signal();

} // namespace harness
