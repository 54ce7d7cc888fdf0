#include "util/interrupt.hpp"

#include "util/error.hpp"

#include <atomic>
#include <csignal>

namespace harness {

namespace {
std::atomic<int> g_signal{0};
std::atomic<int> g_count{0};
std::atomic<bool> g_detach{false};

extern "C" void on_signal(int number) {
    g_signal.store(number);
    g_count.fetch_add(1);
}
extern "C" void on_hangup(int /*number*/) { g_detach.store(true); }

void install(int number, void (*handler)(int)) {
    struct sigaction action {};
    action.sa_handler = handler;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0; // no SA_RESTART: blocking waits return with EINTR and re-check the flag
    sigaction(number, &action, nullptr);
}
} // namespace

void install_interrupt_handlers() {
    install(SIGINT, on_signal);
    install(SIGTERM, on_signal);
}

int interrupt_signal() { return g_signal.load(); }

int interrupt_count() { return g_count.load(); }

void throw_if_interrupted() {
    if (interrupt_signal() != 0) {
        throw HarnessError("interrupted", k_exit_interrupted);
    }
}

void install_detach_handler() { install(SIGHUP, on_hangup); }

void request_detach() { g_detach.store(true); }

bool detach_requested() { return g_detach.load(); }

} // namespace harness
