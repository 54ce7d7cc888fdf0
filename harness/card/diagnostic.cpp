#include "card/diagnostic.hpp"

#include "util/quote.hpp"

#include <algorithm>

namespace harness {

std::string Diagnostic::text() const {
    std::string out;
    if (!location.empty()) {
        out += location + ": ";
    }
    if (!field.empty()) {
        out += field + ": ";
    }
    return out + message;
}

void Diagnostics::error(std::string location, std::string field, std::string message) {
    m_items.push_back({Severity::error, std::move(location), std::move(field), std::move(message)});
}

void Diagnostics::warning(std::string location, std::string field, std::string message) {
    m_items.push_back({Severity::warning, std::move(location), std::move(field), std::move(message)});
}

void Diagnostics::append(const Diagnostics& other) { m_items.insert(m_items.end(), other.m_items.begin(), other.m_items.end()); }

bool Diagnostics::has_errors() const { return error_count() > 0; }

std::size_t Diagnostics::error_count() const {
    return static_cast<std::size_t>(
        std::count_if(m_items.begin(), m_items.end(), [](const auto& d) { return d.severity == Severity::error; }));
}

std::size_t Diagnostics::warning_count() const { return m_items.size() - error_count(); }

std::string Diagnostics::format(bool with_warnings) const {
    std::string out;
    for (const auto& d : m_items) {
        if (d.severity == Severity::warning && !with_warnings) {
            continue;
        }
        out += d.severity == Severity::error ? "ccl-harness: error: " : "ccl-harness: warning: ";
        // For a terminal, whoever prints it: a location (a file name) and a field (a card's key)
        // are the input's, one escaped line each; a message keeps its own line breaks.
        out += d.location.empty() ? "" : terminal_text(d.location) + ": ";
        out += d.field.empty() ? "" : terminal_text(d.field) + ": ";
        out += terminal_text(d.message, true) + "\n";
    }
    return out;
}

} // namespace harness
