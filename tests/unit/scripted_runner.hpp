#pragma once
// A ProcessRunner and a SlurmWaiter for the tests of code that runs commands (Slurm, podman,
// mmdebstrap): every command line must be the next one scripted, or the test fails; time passes
// only when the loop sleeps. No slurmctld, no podman, no sleeping.
#include "run/slurm_client.hpp"
#include "util/process.hpp"

#include <catch2/catch.hpp>

#include <cstddef>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace harness::test {

/// `text` matches `pattern`, where '*' stands for any run of characters (a scratch path).
inline bool glob_match(std::string_view pattern, std::string_view text) {
    if (pattern.empty()) {
        return text.empty();
    }
    if (pattern.front() == '*') {
        for (std::size_t skip = 0; skip <= text.size(); ++skip) {
            if (glob_match(pattern.substr(1), text.substr(skip))) {
                return true;
            }
        }
        return false;
    }
    return !text.empty() && pattern.front() == text.front() && glob_match(pattern.substr(1), text.substr(1));
}

struct ScriptedAnswer {
    std::string command; ///< argv joined with single spaces; '*' matches any run of characters
    std::string output;
    int code = 0;
    std::function<void(const Command&)> effect; ///< what the real tool would leave behind
};

/// Answers each expected command line in order; anything else fails the test.
class ScriptedRunner : public ProcessRunner {
public:
    ScriptedRunner& expect(std::string command, std::string output = "", int code = 0,
                           std::function<void(const Command&)> effect = {}) {
        m_script.push_back({std::move(command), std::move(output), code, std::move(effect)});
        return *this;
    }

    /// The last expected answer, given for as many calls as come.
    ScriptedRunner& then_forever(std::string command, std::string output, int code = 0) {
        m_forever = true;
        return expect(std::move(command), std::move(output), code);
    }

    ExitStatus run(const Command& command) override {
        std::string line;
        for (const auto& arg : command.argv) {
            line += (line.empty() ? "" : " ") + arg;
        }
        m_seen.push_back(command);
        if (m_script.empty()) {
            FAIL("unexpected command (script exhausted): " << line);
        }
        const ScriptedAnswer answer = m_script.front();
        if (!m_forever || m_script.size() > 1) {
            m_script.pop_front();
        }
        if (!glob_match(answer.command, line)) {
            FAIL("unexpected command: " << line << "\n  expected: " << answer.command);
        }
        if (answer.effect) {
            answer.effect(command);
        }
        ExitStatus status;
        status.code = answer.code;
        status.output = answer.output;
        return status;
    }

    /// Every scripted command ran (a then_forever answer may still be given).
    bool done() const { return m_script.empty() || (m_forever && m_script.size() == 1); }
    /// The commands run so far, in order.
    const std::vector<Command>& seen() const { return m_seen; }
    std::size_t calls() const { return m_seen.size(); }

private:
    std::deque<ScriptedAnswer> m_script;
    std::vector<Command> m_seen;
    bool m_forever = false;
};

/// The one-node test cluster as the Slurm tests' scripted commands expect it (their SLURM_CONF).
inline ClusterProfile slurm_local_profile() {
    ClusterProfile profile;
    profile.name = "slurm-local";
    profile.slurm_conf = "/tmp/ccl-harness-slurm-local/slurm.conf";
    return profile;
}

/// Time passes only when the loop sleeps; Ctrl-C arrives before a chosen poll.
class ScriptedWaiter : public SlurmWaiter {
public:
    double now() override { return m_now; }
    void sleep(double seconds, bool /*wake_on_interrupt*/) override {
        m_now += seconds;
        m_sleeps.push_back(seconds);
    }
    bool interrupted() override { return m_interrupt_at_poll >= 0 && m_polls++ >= m_interrupt_at_poll; }

    int m_interrupt_at_poll = -1;
    int m_polls = 0;
    double m_now = 1000;
    std::vector<double> m_sleeps;
};

} // namespace harness::test
