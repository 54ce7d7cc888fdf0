#pragma once
// Replaces known secret values with [REDACTED] at the point of output: rank output as it streams
// to the terminal and the logs (StreamScrubber), records as they are saved, and, once the run is
// over, every file it wrote again (rewritten in place, atomically), so that a secret exported
// while a run executed appears nowhere in its run directory or bundle, even after a crash.
#include "provenance/env_capture.hpp"
#include "util/fs.hpp"
#include "util/json.hpp"
#include "util/process.hpp"

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

    /// Replaces what it can in `pending`, appending the result to `out` and consuming it from
    /// `pending`; unless `at_end`, it keeps back the shortest tail a secret may still be
    /// starting in (only a tail that is the start of some secret, so ordinary output is never
    /// delayed). Returns the number of replacements.
    std::size_t consume(std::string& pending, bool at_end, std::string& out) const;

private:
    std::vector<std::string> m_secrets; ///< unique, longest first
};

/// One output stream (a rank's stdout and stderr) scrubbed as it is written: a secret split
/// across two writes is still caught, because the tail it may be starting in waits for the next.
class StreamScrubber {
public:
    explicit StreamScrubber(const SecretScrubber& secrets) : m_secrets(secrets) {}
    /// The scrubbed text that can be released now.
    std::string feed(std::string_view chunk);
    /// Everything still held back, scrubbed: the stream has ended (or must be flushed; feeding
    /// more afterwards is fine).
    std::string finish();
    /// Replacements made so far.
    std::size_t replaced() const { return m_replaced; }

private:
    const SecretScrubber& m_secrets;
    std::string m_pending;
    std::size_t m_replaced = 0;
};

/// The one list of a run's secrets: the values of `environment`'s secret-named variables
/// (is_secret_name), of the secret-named entries of `job_env` (the card's and profile's env as
/// the job gets them), and of the variables `secret_names` names (`run --secret NAME`: secret
/// although the name does not say so). A name in `secret_names` that is not an identifier, not
/// set in `environment`, or whose value is shorter than k_min_length is an input error: a typo
/// must not silently leave a secret in the logs.
SecretScrubber run_secrets(const EnvironmentMap& environment, const Environment& job_env,
                           const std::vector<std::string>& secret_names);

/// The secret-named entries of `job_env` (the card's and profile's env) with the values the job
/// must be handed: the card's own, or, where the card holds [REDACTED] (a bundle's card keeps no
/// secret), the value of the same variable in `environment`. Names with neither are one input
/// error listing every variable to export.
Environment secret_job_environment(const Environment& job_env, const EnvironmentMap& environment);

} // namespace harness
