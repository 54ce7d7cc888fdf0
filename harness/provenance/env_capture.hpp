#pragma once
// What of an environment a bundle may keep: allow-listed names only, never a secret name. The
// environments come from the harness itself and from ccl_probe.py, which the rendered launch
// script runs on every host and which writes versions, the allow-listed variables and the
// names of secret-named ones (never a raw environment: these rules are written into it) to
// rendered/probe/<host>-<rank>.json (read and deleted here).
#include "util/fs.hpp"
#include "util/json.hpp"

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace harness {

using EnvironmentMap = std::map<std::string, std::string>;

/// A name holding TOKEN, KEY, SECRET, PASSWORD, CREDENTIAL or AUTH in any case: its value is
/// never recorded and is scrubbed from what the run wrote.
bool is_secret_name(std::string_view name);

/// A name docs/bundle.md lets provenance.json keep: an allow-listed prefix and not a secret name.
bool is_captured_name(std::string_view name);

/// The capture rules as ccl_probe.py spells them: the two lines that replace its empty
/// `CAPTURED_PREFIXES = ()` and `SECRET_WORDS = ()` in the rendered copy.
std::string probe_capture_rules();

/// The captured part of `env` as a JSON object (sorted by name).
Json capture_environment(const EnvironmentMap& env);

/// The harness's own environment (environ).
EnvironmentMap process_environment();

/// The tool versions a probe reports, in this order in provenance.json's `hosts[].tools`.
inline constexpr const char* k_probe_tools[] = {"python", "torch", "nccl", "cuda_driver", "jax", "libtpu"};

struct ProbeReport {
    std::string hostname;
    long long rank = 0;
    Json tools = Json::object(); ///< every name in k_probe_tools: a version string or null
    EnvironmentMap environment;  ///< as reported (an older probe's is raw): filter with capture_environment
};

/// Reads every rendered/probe/*.json in `probe_dir`, then removes the directory whatever
/// happened. A file that is not a probe report is skipped with a line in `problems`. Throws only
/// when the directory cannot be removed (an older probe's raw environment would stay on disk). Sorted by
/// rank, then hostname.
std::vector<ProbeReport> take_probe_reports(const fs::path& probe_dir, std::vector<std::string>& problems);

} // namespace harness
