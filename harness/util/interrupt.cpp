#include "util/interrupt.hpp"

#include "util/error.hpp"

#include <atomic>
#include <csignal>

namespace harness {

namespace {
std::atomic<int> g_signal{0};

extern "C" void on_signal(int number) { g_signal.store(number); }
} // namespace

void install_interrupt_handlers() {
    struct sigaction action {};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0; // no SA_RESTART: blocking waits return with EINTR and re-check the flag
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
}

int interrupt_signal() { return g_signal.load(); }

void throw_if_interrupted() {
    if (interrupt_signal() != 0) {
        throw HarnessError("interrupted", k_exit_interrupted);
    }
}

} // namespace harness
