#include "submit.hpp"
#include "schema.hpp"
#include "util/error.hpp"
#include "util/interrupt.hpp"
#include "util/scratch_dir.hpp"
#include "util/strings.hpp"

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
    default:
        return Json(nullptr);
    }
}

// A short reason from a refusal: the server's "error", "detail" or "message", else its body.
std::string reason_of(const std::string& body) {
    try {
        const Json answer = Json::parse(body);
        for (const char* key : {"error", "detail", "message"}) {
            if (const Json* value = answer.find(key); value && value->is_string()) {
                return value->as_string();
            }
        }
    } catch (const std::exception&) {
        // Not JSON: the body itself, trimmed, is the best reason there is.
    }
    std::string text = trim(body);
    if (text.size() > 300) {
        text = text.substr(0, 300) + "...";
    }
    return text.empty() ? "(no body)" : text;
}

std::string refusal_message(const std::string& url, const HttpResponse& response) {
    if (response.status == 413) {
        return fmt::format("{}: HTTP 413: the server refuses requests over its limit (500 MB per request, 20 files); "
                           "this bundle was not accepted: {}",
                           url, reason_of(response.body));
    }
    return fmt::format("{}: HTTP {}: the server refused the upload: {}", url, response.status,
                       reason_of(response.body));
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
        std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
            until - std::chrono::steady_clock::now(), std::chrono::milliseconds(100)));
    }
}

void check_bundle_path(const fs::path& bundle) {
    std::error_code ec;
    const fs::file_status status = fs::status(bundle, ec);
    if (!fs::exists(status)) {
        throw input_error(fmt::format("{}: no such file", bundle.string()));
    }
    if (fs::is_directory(status)) {
        throw input_error(fmt::format("{}: a directory; only packed bundles are submitted: "
                                      "`ccl-harness pack RUN_DIR` makes <name>.tar.zst",
                                      bundle.string()));
    }
    if (!fs::is_regular_file(status) || !ends_with(bundle.filename().string(), ".tar.zst")) {
        throw input_error(fmt::format("{}: not a packed bundle (expected <name>.tar.zst)", bundle.string()));
    }
}

} // namespace

Json yaml_file_to_json(const fs::path& path) {
    try {
        return yaml_to_json(YAML::LoadFile(path.string()));
    } catch (const YAML::Exception& e) {
        throw HarnessError(fmt::format("{}: {}", path.string(), e.what()));
    }
}

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

SubmitResult submit_bundle(const fs::path& bundle, const SubmitOptions& options) {
    check_bundle_path(bundle);
    const Url url = join_url(parse_url(options.url), "/api/upload");
    const std::string shown_url = fmt::format("http://{}:{}{}", url.host, url.port, url.target);
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
    PostOptions post;
    post.timeout = options.timeout;
    post.progress = options.progress;
    const int attempts = std::max(1, options.attempts);
    std::chrono::milliseconds wait = options.base_delay;
    for (int attempt = 1;; ++attempt) {
        std::string why;
        try {
            const HttpResponse response = post_multipart(url, fields, files, post);
            if (!is_retryable_status(response.status)) {
                if (response.status < 200 || response.status >= 300) {
                    throw HarnessError(refusal_message(shown_url, response));
                }
                result.status = response.status;
                result.body = response.body;
                result.upload_id = upload_id_of(response.body);
                result.attempts = attempt;
                return result;
            }
            why = fmt::format("HTTP {}: {}", response.status, reason_of(response.body));
        } catch (const HttpTransportError& e) {
            why = e.what();
        }
        if (attempt >= attempts) {
            throw HarnessError(fmt::format("{}: upload failed after {} attempt{}: {}", shown_url, attempt,
                                           attempt == 1 ? "" : "s", why));
        }
        if (options.on_retry) {
            options.on_retry(attempt, why, wait);
        }
        sleep_unless_interrupted(wait);
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
    out["url"] = url;
    out["upload_id"] = result.upload_id.empty() ? Json(nullptr) : Json(result.upload_id);
    out["status"] = result.status;
    out["attempts"] = result.attempts;
    out["bytes"] = static_cast<long long>(result.bytes);
    try {
        out["response"] = Json::parse(result.body);
    } catch (const std::exception&) {
        out["response"] = result.body;
    }
    return out;
}

} // namespace harness
