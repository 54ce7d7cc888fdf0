#pragma once
// Replaces known secret values with [REDACTED] in what a run wrote: log files rewritten in place
// (streamed, atomically), and JSON records value by value, so that a secret exported while a
// run executed appears nowhere in its bundle.
#include "util/fs.hpp"
#include "util/json.hpp"

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace harness {

inline constexpr const char* k_redacted = "[REDACTED]";

class SecretScrubber {
public:
    /// Shorter values are not scrubbed: they would erase ordinary words.
    static constexpr std::size_t k_min_length = 6;

    /// Learns a secret value (and its JSON-escaped spelling, when different, for logs that print
    /// JSON). Values shorter than k_min_length are ignored.
    void add(std::string_view value);
    bool empty() const { return m_secrets.empty(); }

    /// `text` with every occurrence of a secret replaced; at one position the longest wins.
    /// `replaced`, when given, is increased by the number of replacements.
    std::string scrub(std::string_view text, std::size_t* replaced = nullptr) const;

    /// Scrubs every string (keys included) in a JSON value, leaving its structure intact.
    Json scrub_json(const Json& value, std::size_t* replaced = nullptr) const;

    /// Rewrites a regular file in place through a temporary file and rename, streaming it in
    /// chunks of `chunk_bytes` (a secret spanning two chunks is still caught). Memory stays
    /// bounded by chunk_bytes plus the longest secret; the file keeps its permission bits.
    /// Returns how many occurrences it replaced; with none the file is left untouched. Throws
    /// HarnessError naming the file on I/O errors or when it is not a regular file.
    std::size_t scrub_file(const fs::path& file, std::size_t chunk_bytes = std::size_t{1} << 20) const;

    /// A JSON record (run.json) scrubbed value by value, so that it stays valid JSON whatever
    /// the secret looks like, and rewritten atomically when something changed; a file that does
    /// not parse is scrubbed as text. Returns the number of replacements.
    std::size_t scrub_json_file(const fs::path& file) const;

    /// scrub_file on every regular file under `dir` (links are neither followed nor touched).
    /// A missing `dir` holds nothing to scrub. Returns the number of replacements.
    std::size_t scrub_tree(const fs::path& dir) const;

private:
    /// Replaces what it can in `pending`, appending the result to `out` and consuming it from
    /// `pending`; unless `at_end`, it keeps back the tail a secret may still be starting in.
    std::size_t consume(std::string& pending, bool at_end, std::string& out) const;

    std::vector<std::string> m_secrets;  ///< unique, longest first
};

} // namespace harness
