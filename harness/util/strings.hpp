#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace harness {

std::vector<std::string> split(std::string_view text, char sep);
std::string join(const std::vector<std::string>& parts, std::string_view sep);
std::string to_lower(std::string_view text);
bool starts_with(std::string_view text, std::string_view prefix);
bool ends_with(std::string_view text, std::string_view suffix);
/// Every character an ASCII digit (true for ""; callers that need one check emptiness first).
bool all_digits(std::string_view text);
std::string trim(std::string_view text);

/// Levenshtein distance, for "did you mean" suggestions.
std::size_t edit_distance(std::string_view a, std::string_view b);

/// The candidate closest to `word` when it is close enough to be a plausible typo, else "".
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

/// `word` quoted for a message: "value", with quotes and control characters escaped as in JSON.
std::string enquote(std::string_view word);

/// A valid POSIX environment variable name.
bool is_identifier(std::string_view name);

} // namespace harness
