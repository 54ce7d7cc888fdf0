#include "bundle/input_path.hpp"
#include "card/schema.hpp"
#include "util/archive.hpp"
#include "util/error.hpp"
#include "util/interrupt.hpp"
#include "util/quote.hpp"
#include "util/scratch_dir.hpp"
#include "util/sha256.hpp"
#include "util/strings.hpp"
#include "util/yaml_bounded.hpp"
#include "workflows/submit.hpp"

#include <cmath>
#include <fmt/format.h>
#include <thread>
#include <yaml-cpp/yaml.h>

namespace harness {

namespace {

Json yaml_to_json(const YAML::Node& node) {
    switch (node.Type()) {
    case YAML::NodeType::Map: {
        Json out = Json::object();
        for (const auto& item : node) {
            out[item.first.as<std::string>()] = yaml_to_json(item.second);
        }
        return out;
    }
    case YAML::NodeType::Sequence: {
        Json out = Json::array();
        for (const auto& item : node) {
            out.push_back(yaml_to_json(item));
        }
        return out;
    }
    case YAML::NodeType::Scalar: {
        // yaml-cpp tags a quoted scalar "!": "8" in quotes is text, as the author wrote it.
        if (node.Tag() == "!") {
            return Json(node.Scalar());
        }
        long long integer = 0;
        double number = 0;
        bool flag = false;
        if (read_int(node, integer)) {
            return Json(integer);
        }
        if (read_number(node, number) && std::isfinite(number)) {
            return Json(number);
        }
        if (read_bool(node, flag)) {
            return Json(flag);
        }
        const std::string& text = node.Scalar();
        if (text == "~" || text == "null" || text == "Null" || text == "NULL") {
            return Json(nullptr);
        }
        return Json(text);
    }
    default: return Json(nullptr);
    }
}

// A short reason from a refusal: the server's "error", "detail" or "message", else its body.
std::string reason_of(const std::string& body) {
    try {
        const Json answer = Json::parse(body);
        for (const char* key : {"error", "detail", "message"}) {
            if (const Json* value = answer.find(key); value && value->is_string()) {
                return terminal_text(value->as_string());
            }
        }
    } catch (const std::exception&) {
        // Not JSON: the body itself, trimmed, is the best reason there is.
    }
    std::string text = trim(body);
    if (text.size() > 300) {
        text = text.substr(0, 300) + "...";
    }
    return text.empty() ? "(no body)" : terminal_text(text);
}

// reason_of the answer, saying so when its body was cut off.
std::string answer_reason(const HttpResponse& response) {
    return response.truncated.empty() ? reason_of(response.body)
                                      : fmt::format("{} ({})", reason_of(response.body), response.truncated);
}

std::string refusal_message(const std::string& url, const HttpResponse& response) {
    if (response.status == 413) {
        return fmt::format("{}: HTTP 413: the server refuses requests over its limit (500 MB per request, 20 files); "
                           "this bundle was not accepted: {}",
                           url, answer_reason(response));
    }
    return fmt::format("{}: HTTP {}: the server refused the upload: {}", url, response.status, answer_reason(response));
}

struct Prepared {
    BundleReport report;
    Json card;
};

// Verifies in a scratch directory that is gone before the upload starts.
Prepared verify_and_read_card(const fs::path& bundle, const fs::path& scratch_root) {
    ScratchDir scratch(scratch_root, "submit");
    VerifyOptions verify;
    verify.scratch_root = scratch_root;
    verify.unpack_into = scratch.path() / "bundle";
    Prepared prepared{verify_bundle(bundle, verify), Json()};
    if (prepared.report.valid()) {
        prepared.card = yaml_file_to_json(prepared.report.directory / (prepared.report.name + ".yaml"));
    }
    return prepared;
}

void sleep_unless_interrupted(std::chrono::milliseconds wait) {
    const auto until = std::chrono::steady_clock::now() + wait;
    while (std::chrono::steady_clock::now() < until) {
        if (interrupt_signal() != 0) {
            throw HarnessError("interrupted", k_exit_interrupted);
        }
        std::this_thread::sleep_for(
            std::min<std::chrono::steady_clock::duration>(until - std::chrono::steady_clock::now(), std::chrono::milliseconds(100)));
    }
}

void check_bundle_path(const fs::path& bundle) {
    switch (classify_input(bundle).kind) {
    case InputKind::packed_bundle: return;
    case InputKind::missing: throw input_error(fmt::format("{}: no such file", bundle.string()));
    case InputKind::bundle_dir:
    case InputKind::run_dir:
    case InputKind::other_dir:
        throw input_error(fmt::format("{}: a directory; only packed bundles are submitted: "
                                      "`ccl-harness pack RUN_DIR` makes <name>.tar.zst",
                                      bundle.string()));
    case InputKind::other_file:
    case InputKind::special: break;
    }
    throw input_error(fmt::format("{}: not a packed bundle (expected <name>.tar.zst)", bundle.string()));
}

} // namespace

Json yaml_file_to_json(const fs::path& path) { return yaml_to_json(load_yaml_bounded(path)); }

std::string upload_id_of(const std::string& body) {
    try {
        const Json answer = Json::parse(body);
        for (const char* key : {"upload_id", "id"}) {
            if (const Json* value = answer.find(key)) {
                if (value->is_string() && !value->as_string().empty()) {
                    return value->as_string();
                }
                if (value->is_int()) {
                    return std::to_string(value->as_int());
                }
            }
        }
    } catch (const std::exception&) {
        // Not JSON: no id; the caller shows the body instead.
    }
    return "";
}

bool is_retryable_status(int status) { return status >= 500 || status == 429; }

std::optional<std::chrono::seconds> retry_after_seconds(const std::string& value) {
    const std::string text = trim(value);
    if (text.empty()) {
        return std::nullopt;
    }
    if (text.size() <= 9 && text.find_first_not_of("0123456789") == std::string::npos) {
        return std::chrono::seconds(std::stol(text));
    }
    // An HTTP-date: a promise all the same; the backoff decides how long to wait.
    return std::chrono::seconds(0);
}

std::string retry_refusal(const HttpResponse& response) {
    if (!is_retryable_status(response.status)) {
        return "not a temporary failure";
    }
    if (!response.body_sent) {
        return ""; // answered before the whole body arrived: nothing can have been stored
    }
    if ((response.status == 503 || response.status == 429) && retry_after_seconds(response.retry_after)) {
        return ""; // "come back later" (RFC 9110 10.2.3): the request was not acted on
    }
    return "the server received the whole bundle and may have stored it";
}

std::string redact(std::string text, const std::string& secret) {
    if (secret.empty()) {
        return text;
    }
    for (std::size_t at = text.find(secret); at != std::string::npos; at = text.find(secret, at)) {
        text.replace(at, secret.size(), "[redacted]");
        at += 10;
    }
    return text;
}

std::string bundle_idempotency_key(const std::string& sha256) { return fmt::format("\"sha256:{}\"", sha256); }

namespace {

/// The bundle's size, refused before anything is verified or sent when the server cannot take it.
std::uint64_t checked_size(const fs::path& bundle) {
    std::error_code size_error;
    const std::uint64_t bytes = fs::file_size(bundle, size_error);
    if (size_error) {
        throw input_error(fmt::format("{}: {}", bundle.string(), size_error.message()));
    }
    if (bytes > k_submit_max_bytes) {
        throw HarnessError(fmt::format("{}: {:.1f} MB is over the upload server's limit of 500 MB per request; "
                                       "nothing was sent (splitting bundles into parts is not supported yet)",
                                       bundle.string(), static_cast<double>(bytes) / 1e6));
    }
    return bytes;
}

PostOptions post_options(const SubmitOptions& options, std::chrono::steady_clock::time_point started, const std::string& sha256) {
    PostOptions post;
    post.timeout = options.timeout;
    if (options.total_timeout.count() > 0) {
        post.deadline = started + options.total_timeout;
        // The idle limit never outlasts the total one.
        post.timeout = std::min(post.timeout, options.total_timeout);
    }
    post.progress = options.progress;
    // The same bundle always carries the same key, so a server that honours Idempotency-Key
    // (draft-ietf-httpapi-idempotency-key-header) stores a repeated upload once.
    post.headers.emplace_back("Idempotency-Key", bundle_idempotency_key(sha256));
    post.bearer_token = options.token;
    post.ca_file = options.ca_file;
    return post;
}

/// One POST: the response when it is a success, else why it failed and how long the server
/// asked us to wait. Throws when a retry could store the bundle twice or would be refused again.
struct Attempt {
    std::optional<HttpResponse> stored;
    std::string why;
    std::chrono::milliseconds asked{0};
};

Attempt post_once(const Url& url, const std::string& shown_url, const std::vector<FormField>& fields,
                  const std::vector<FormFile>& files, const PostOptions& post) {
    Attempt attempt;
    try {
        HttpResponse response = post_multipart(url, fields, files, post);
        // A server may echo what it was sent: its words are shown, the token never.
        response.body = redact(std::move(response.body), post.bearer_token);
        response.truncated = redact(std::move(response.truncated), post.bearer_token);
        if (response.status >= 200 && response.status < 300) {
            attempt.stored = std::move(response);
            return attempt;
        }
        if (const std::string refusal = retry_refusal(response); !refusal.empty()) {
            if (!is_retryable_status(response.status)) {
                throw HarnessError(refusal_message(shown_url, response));
            }
            throw HarnessError(fmt::format("{}: HTTP {}: {}; not retried ({}): check with the server before "
                                           "submitting again",
                                           shown_url, response.status, answer_reason(response), refusal));
        }
        attempt.why = fmt::format("HTTP {}: {}", response.status, answer_reason(response));
        if (const auto seconds = retry_after_seconds(response.retry_after)) {
            attempt.asked = std::chrono::duration_cast<std::chrono::milliseconds>(std::min(*seconds, k_max_retry_after));
        }
    } catch (const HttpTransportError& e) {
        if (e.request_delivered()) {
            // curl's rule for a POST: once the whole request is out, silence is not a refusal.
            throw HarnessError(fmt::format("{}: {} after the whole bundle was sent; not retried, since the server "
                                           "may have stored it: check with the server before submitting again",
                                           shown_url, redact(e.what(), post.bearer_token)));
        }
        attempt.why = redact(e.what(), post.bearer_token);
    }
    return attempt;
}

} // namespace

SubmitResult submit_bundle(const fs::path& bundle, const SubmitOptions& options) {
    const auto started = std::chrono::steady_clock::now();
    check_bundle_path(bundle);
    const Url url = join_url(parse_url(options.url), "/api/upload");
    const std::string shown_url = url.text();
    const std::optional<Url> proxy = options.proxy_env ? proxy_from_environment(url, options.proxy_env) : std::nullopt;
    const std::uint64_t bytes = checked_size(bundle);
    Prepared prepared = verify_and_read_card(bundle, options.scratch_root);
    SubmitResult result;
    result.report = std::move(prepared.report);
    result.bytes = bytes;
    if (!result.report.valid()) {
        return result;
    }
    const std::vector<FormField> fields{
        {"group_name", options.group, ""},
        {"description", options.description, ""},
        {"workload_card", prepared.card.dump(false), "application/json"},
    };
    const std::vector<FormFile> files{{"files", bundle, bundle.filename().string()}};
    result.sha256 = sha256_file(bundle);
    PostOptions post = post_options(options, started, result.sha256);
    post.proxy = proxy;
    const int attempts = std::max(1, options.attempts);
    std::chrono::milliseconds wait = options.base_delay;
    for (int attempt = 1;; ++attempt) {
        const Attempt tried = post_once(url, shown_url, fields, files, post);
        if (tried.stored) {
            result.status = tried.stored->status;
            result.body = tried.stored->body;
            result.upload_id = upload_id_of(tried.stored->body);
            result.attempts = attempt;
            // A 2xx cut off mid-body is an upload accepted, with a warning: the status line is the
            // server's verdict and came whole (inside TLS a cut cannot forge it), while the body is
            // only the receipt. Calling it a failure would invite a second, duplicate upload.
            if (!tried.stored->truncated.empty()) {
                result.warning = fmt::format("{}: {}; the server accepted the upload (HTTP {}), so it was not sent again{}", shown_url,
                                             tried.stored->truncated, result.status,
                                             result.upload_id.empty() ? "; no upload id came: ask the server for it" : "");
            }
            return result;
        }
        const std::chrono::milliseconds pause = std::max(wait, tried.asked);
        const bool past_deadline = post.deadline && std::chrono::steady_clock::now() + pause >= *post.deadline;
        if (attempt >= attempts || past_deadline) {
            throw HarnessError(fmt::format("{}: upload failed after {} attempt{}{}: {}", shown_url, attempt, attempt == 1 ? "" : "s",
                                           past_deadline && attempt < attempts ? " (--timeout reached)" : "", tried.why));
        }
        if (options.on_retry) {
            options.on_retry(attempt, tried.why, pause);
        }
        sleep_unless_interrupted(pause);
        wait *= 2;
    }
}

Json submit_result_to_json(const SubmitResult& result, const std::string& url) {
    Json out = Json::object();
    out["bundle"] = result.report.bundle;
    out["uploaded"] = result.sent();
    if (!result.report.valid()) {
        out["verify"] = bundle_report_to_json(result.report);
        return out;
    }
    out["url"] = url_without_userinfo(url);
    out["upload_id"] = result.upload_id.empty() ? Json(nullptr) : Json(result.upload_id);
    out["status"] = result.status;
    out["attempts"] = result.attempts;
    out["bytes"] = static_cast<long long>(result.bytes);
    try {
        out["response"] = Json::parse(result.body);
    } catch (const std::exception&) {
        out["response"] = result.body;
    }
    out["warning"] = result.warning.empty() ? Json(nullptr) : Json(result.warning);
    return out;
}

} // namespace harness
