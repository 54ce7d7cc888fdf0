#pragma once
// What validation found, each with the place in the input it is about.
#include <string>
#include <vector>

namespace harness {

enum class Severity { warning, error };

struct Diagnostic {
    Severity severity = Severity::error;
    std::string location; ///< "card.yaml:31:9", or "--set tp=four" for overrides
    std::string field;    ///< dotted path, e.g. "Model-executor.framework.name"; may be empty
    std::string message;

    /// `card.yaml:31:9: Model-executor.model_plan_parallelization.tp: expected ...`
    std::string text() const;
};

class Diagnostics {
public:
    void error(std::string location, std::string field, std::string message);
    void warning(std::string location, std::string field, std::string message);
    void append(const Diagnostics& other);

    bool has_errors() const;
    std::size_t error_count() const;
    std::size_t warning_count() const;
    const std::vector<Diagnostic>& items() const { return m_items; }

    /// One line per diagnostic, prefixed `ccl-harness: error: ` or `ccl-harness: warning: `;
    /// warnings left out when `with_warnings` is false. Escaped for a terminal (quote.hpp's
    /// terminal_text): every caller prints it as it is.
    std::string format(bool with_warnings = true) const;

private:
    std::vector<Diagnostic> m_items;
};

} // namespace harness
