#pragma once
// `submit`: verify a packed bundle, then upload it to a CCL-Bench upload server
// (POST /api/upload, multipart fields files, group_name, description, workload_card).
#include "bundle/bundle_verify.hpp"
#include "util/http.hpp"
#include "util/json.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace harness {

/// The upload server's limit on one request; a larger bundle is refused before sending.
constexpr std::uint64_t k_submit_max_bytes = 500ULL * 1000 * 1000;

struct SubmitOptions {
    std::string url; ///< the server's base URL; /api/upload is appended
    std::string group;
    std::string description;
    int attempts = 4;
    /// The wait before the second attempt; it doubles before each further one.
    std::chrono::milliseconds base_delay{500};
    /// Idle limit: each connect, write and read must progress within this long.
    std::chrono::seconds timeout{120};
    /// Total limit for the whole submit, retries and their waits included; 0: none (curl's
    /// --max-time has no default either).
    std::chrono::seconds total_timeout{0};
    UploadProgress progress;
    /// Told about each failed attempt that will be retried: its number, why, the wait.
    std::function<void(int attempt, const std::string& why, std::chrono::milliseconds wait)> on_retry;
    fs::path scratch_root; ///< where verify unpacks the bundle; empty means $TMPDIR
    /// Sent as `Authorization: Bearer`; never printed, and blanked out of the server's answers.
    std::string token;
    fs::path ca_file; ///< https: trusted instead of the system's CAs (--ca-file)
    /// Where proxy settings come from (proxy_from_environment); null: no proxy.
    EnvLookup proxy_env = process_env;
};

struct SubmitResult {
    BundleReport report;   ///< invalid: nothing was sent and the fields below are empty
    std::string upload_id; ///< "upload_id" or "id" from the answer, empty when it has neither
    int status = 0;
    std::string body;
    int attempts = 0;
    std::uint64_t bytes = 0; ///< the bundle's size
    std::string sha256;      ///< the bundle's, also sent as its Idempotency-Key
    /// Empty, or why the 2xx answer may be incomplete (the connection ended mid-body): the upload
    /// was accepted all the same, and not sent again.
    std::string warning;
    bool sent() const { return status != 0; }
};

/// A server's Retry-After is honoured up to this long.
constexpr std::chrono::seconds k_max_retry_after{60};

/// Verifies `bundle` (a .tar.zst) and, when it is valid, uploads it with its card as JSON and an
/// Idempotency-Key header ("sha256:<the bundle's sha256>"). Retried with exponential backoff, as
/// curl retries a POST, only when the server cannot have stored the upload: no connection, a
/// connection lost before the whole body went out, a 5xx or 429 answered before the body was
/// read, or 503/429 with Retry-After. A 5xx or silence after the whole body is an error, never
/// a hidden second upload.
/// Throws input_error (exit 2) for a missing file, a directory (pack it first), something
/// other than .tar.zst, a bad URL or proxy setting, a token post_multipart refuses; HarnessError (exit 1) for a bundle over the
/// server's limit, a 4xx answer (413 explained), a certificate refused, a 5xx or transport failure after the last attempt. Returns
/// normally with an invalid report (nothing sent) or a 2xx answer, `warning` set when its body was cut off.
SubmitResult submit_bundle(const fs::path& bundle, const SubmitOptions& options);

/// The card as JSON: maps, sequences, and scalars typed as YAML reads them (quoted stays text).
Json yaml_file_to_json(const fs::path& path);

/// The upload id in a server answer: "upload_id", else "id" (string or number); empty otherwise.
std::string upload_id_of(const std::string& body);

/// Whether an answer with this status is worth another attempt (5xx, 429) when the server has
/// not stored the upload (see submit_bundle).
bool is_retryable_status(int status);

/// `text` with every occurrence of `secret` replaced by "[redacted]" (none when `secret` is empty).
std::string redact(std::string text, const std::string& secret);

/// Why `response` must not be retried, or "" when it may be (the rules of submit_bundle).
std::string retry_refusal(const HttpResponse& response);

/// A Retry-After value in seconds (an HTTP-date counts as 0), or nothing when absent or empty.
std::optional<std::chrono::seconds> retry_after_seconds(const std::string& value);

/// {"bundle", "url", "uploaded", "upload_id", "status", "attempts", "bytes", "response",
/// "warning" (null unless the answer was cut off)}; an invalid bundle gives {"bundle",
/// "uploaded": false, "verify": bundle_report_to_json}. `url` is printed as url_without_userinfo.
Json submit_result_to_json(const SubmitResult& result, const std::string& url);

} // namespace harness
