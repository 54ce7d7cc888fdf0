#pragma once
// One exception type reaches main: it carries the exit code the user sees.
#include <stdexcept>
#include <string>

namespace harness {

enum ExitCode : int {
    k_exit_ok = 0,
    k_exit_failure = 1,
    k_exit_usage = 2,
    k_exit_interrupted = 130,
};

/// A failure the command line reports as `ccl-harness: error: <what>` and exits with `code`.
class HarnessError : public std::runtime_error {
public:
    explicit HarnessError(const std::string& what, int code = k_exit_failure) : std::runtime_error(what), m_code(code) {}
    int code() const { return m_code; }

private:
    int m_code;
};

/// Bad input from the user (card, flag, file): exit 2.
inline HarnessError input_error(const std::string& what) { return HarnessError(what, k_exit_usage); }

} // namespace harness
