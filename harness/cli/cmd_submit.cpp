#include "cli/commands.hpp"
#include "util/error.hpp"
#include "util/interrupt.hpp"
#include "util/quote.hpp"
#include "util/terminal.hpp"
#include "workflows/submit.hpp"

#include <cmath>
#include <cstdlib>
#include <fmt/format.h>
#include <iostream>
#include <memory>

namespace harness::cli {

namespace {

/// --timeout's ceiling: an upload that has not ended in a week will not.
constexpr double k_max_timeout_seconds = 7 * 24 * 3600;

struct SubmitCommandOptions {
    std::string bundle;
    std::string url;
    std::string group;
    std::string description;
    std::string token;
    std::string ca_file;
    double timeout = 0;
    bool json = false;
};

// --token first; else CCL_UPLOAD_TOKEN, which keeps the token out of ps and shell history.
std::string upload_token(const std::string& given) {
    if (!given.empty()) {
        return given;
    }
    const char* value = std::getenv("CCL_UPLOAD_TOKEN");
    return value == nullptr ? std::string() : std::string(value);
}

// Tests set the first retry's wait in milliseconds so that a retried upload takes no time.
std::chrono::milliseconds retry_base_delay() {
    const char* value = std::getenv("CCL_HARNESS_SUBMIT_RETRY_BASE_MS");
    if (value == nullptr || *value == '\0') {
        return std::chrono::milliseconds(500);
    }
    char* end = nullptr;
    const long ms = std::strtol(value, &end, 10);
    if (*end != '\0' || ms < 0 || ms > 600000) {
        throw input_error(fmt::format("CCL_HARNESS_SUBMIT_RETRY_BASE_MS={}: expected milliseconds", value));
    }
    return std::chrono::milliseconds(ms);
}

// The bytes-sent line on a terminal; `open` while it lacks its newline, so that a retry message
// starts on a line of its own.
struct ProgressLine {
    int shown = -1;
    bool open = false;

    static bool wanted() { return progress_wanted(); }

    void update(std::uint64_t sent, std::uint64_t total) {
        const int percent = total == 0 ? 100 : static_cast<int>(sent * 100 / total);
        if (percent == shown) {
            return;
        }
        shown = percent;
        open = sent != total;
        std::cerr << fmt::format("\r  sending {:.1f} / {:.1f} MB ({}%)", static_cast<double>(sent) / 1e6,
                                 static_cast<double>(total) / 1e6, percent)
                  << (open ? "" : "\n") << std::flush;
    }

    void close() {
        if (open) {
            std::cerr << "\n";
        }
        open = false;
        shown = -1;
    }
};

void print_problems(const BundleReport& report) {
    const std::string bundle = terminal_text(report.bundle);
    for (const BundleProblem& problem : report.problems) {
        std::cout << (problem.path.empty()
                          ? fmt::format("{}: {}\n", bundle, terminal_text(problem.message))
                          : fmt::format("{}: {}: {}\n", bundle, terminal_text(problem.path), terminal_text(problem.message)));
    }
    const std::size_t count = report.problems.size();
    std::cout << fmt::format("{}: invalid ({} problem{}); nothing was sent\n", bundle, count, count == 1 ? "" : "s");
}

int run_submit(const SubmitCommandOptions& options) {
    install_interrupt_handlers();
    SubmitOptions submit;
    submit.url = options.url;
    submit.group = options.group;
    submit.description = options.description;
    submit.token = upload_token(options.token);
    submit.ca_file = options.ca_file;
    submit.base_delay = retry_base_delay();
    // NaN passes CLI11's PositiveNumber, and a value past a long's seconds would wrap round.
    if (!std::isfinite(options.timeout) || options.timeout < 0 || options.timeout > k_max_timeout_seconds) {
        throw input_error(fmt::format("--timeout {}: expected a positive number of seconds, at most {:.0f} (7 days)", options.timeout,
                                      k_max_timeout_seconds));
    }
    if (options.timeout > 0) {
        // Whole seconds, rounded up: a limit of 0.5 s is not "no limit".
        const auto seconds = std::chrono::seconds(static_cast<long>(std::ceil(options.timeout)));
        submit.total_timeout = seconds;
        submit.timeout = std::min(submit.timeout, seconds);
    }
    auto line = std::make_shared<ProgressLine>();
    if (!options.json && ProgressLine::wanted() && g_verbosity != Verbosity::quiet) {
        submit.progress = [line](std::uint64_t sent, std::uint64_t total) { line->update(sent, total); };
    }
    submit.on_retry = [line](int attempt, const std::string& why, std::chrono::milliseconds wait) {
        line->close();
        if (g_verbosity == Verbosity::quiet) {
            return;
        }
        const std::string after = wait.count() < 1000 ? fmt::format("{} ms", wait.count())
                                                      : fmt::format("{:.1f} s", static_cast<double>(wait.count()) / 1000.0);
        std::cerr << fmt::format("ccl-harness: attempt {} failed: {}; retrying in {}\n", attempt, why, after);
    };
    SubmitResult result;
    try {
        result = submit_bundle(options.bundle, submit);
    } catch (const HarnessError&) {
        line->close();
        throw;
    }
    if (options.json) {
        std::cout << submit_result_to_json(result, options.url).dump();
        return result.sent() ? k_exit_ok : k_exit_failure;
    }
    if (!result.sent()) {
        print_problems(result.report);
        return k_exit_failure;
    }
    if (!result.warning.empty()) {
        std::cerr << fmt::format("ccl-harness: warning: {}\n", terminal_text(result.warning));
    }
    std::cout << fmt::format("{}: uploaded to {} ({:.1f} MB, HTTP {}, attempt {})\n", terminal_text(options.bundle),
                             terminal_text(url_without_userinfo(options.url)), static_cast<double>(result.bytes) / 1e6, result.status,
                             result.attempts);
    // The server's words, escaped: an answer cannot drive the terminal.
    std::cout << (result.upload_id.empty() ? fmt::format("  no upload id in the answer: {}\n", terminal_text(result.body))
                                           : fmt::format("  upload id: {}\n", terminal_text(result.upload_id)));
    return k_exit_ok;
}

} // namespace

void add_submit(CLI::App& sub, Action& action) {
    auto options = std::make_shared<SubmitCommandOptions>();
    sub.add_option("bundle", options->bundle, "a packed bundle, <name>.tar.zst (`ccl-harness pack` makes one)")->required();
    sub.add_option("--to", options->url, "the upload server's base URL (https://HOST[:PORT] or http://); /api/upload is appended")
        ->required();
    sub.add_option("--group", options->group, "group_name sent with the upload");
    sub.add_option("--description", options->description, "description sent with the upload");
    sub.add_option("--token", options->token,
                   "sent as `Authorization: Bearer TOKEN`, never printed (default: $CCL_UPLOAD_TOKEN, which stays out "
                   "of ps and shell history)");
    sub.add_option("--ca-file", options->ca_file, "https: trust the CA certificates in this PEM file instead of the system's")
        ->check(CLI::ExistingFile);
    sub.add_option("--timeout", options->timeout,
                   "give up after SECONDS in all, retries included; also the idle limit when under 120 s "
                   "(default: no total limit, 120 s idle)");
    sub.add_flag("--json", options->json, "print the result (or the verify report) as JSON on stdout");
    sub.footer("The bundle is verified first (as `ccl-harness verify` does); an invalid bundle is never sent.\n"
               "It is then POSTed as multipart/form-data (files, group_name, description, workload_card: the\n"
               "card as JSON) with an Idempotency-Key header, \"sha256:<the bundle's sha256>\", the same for every\n"
               "attempt, so a server that honours it stores a repeated upload once. Up to 4 attempts in all, waiting\n"
               "0.5 s, 1 s, 2 s (or the server's Retry-After, up to 60 s), only while the server cannot have stored\n"
               "the bundle: no connection, a connection lost before the whole body was sent, HTTP 5xx or 429\n"
               "answered before the body was read, or 503/429 with Retry-After. Once the whole body is sent, silence\n"
               "or another 5xx is an error, not retried (as curl does for a POST). 4xx answers are never retried.\n"
               "Interim 1xx answers (100 Continue) are skipped. Answers over 8 MiB are refused unread; the\n"
               "server's text is printed with control characters escaped. Bundles over 500 MB are refused.\n"
               "Progress is shown on a terminal unless NO_COLOR is set.\n"
               "https verifies the server's certificate against the system's CAs (or --ca-file) and the URL's host\n"
               "name; an untrusted, expired or other host's certificate is refused. Over http:// the token goes only\n"
               "where nothing else can read it: to this machine, and through a proxy only one on this machine too\n"
               "(over https:// a proxy only relays TLS). Proxies come from the environment as curl reads them:\n"
               "https_proxy or HTTPS_PROXY (tunnelled with CONNECT), http_proxy (for localhost too), no_proxy;\n"
               "http:// proxies only, without a password. A URL's user:password@ is refused and never printed.\n"
               "An answer whose head came whole but whose body was cut off (no Content-Length end, no TLS\n"
               "close_notify) is reported as it came: a 2xx is an upload accepted, with a warning, not sent again.\n"
               "--json prints {bundle, uploaded, url, upload_id, status, attempts, bytes, response, warning: null or\n"
               "why the answer may be cut off}; an invalid bundle gives {bundle, uploaded: false, verify}.\n"
               "Exit status: 0 uploaded, 1 invalid bundle or upload failed, 2 bad input (no such file, a\n"
               "directory, a bad URL or proxy, an unreadable --ca-file), 130 interrupted.\n"
               "Example:\n"
               "  ccl-harness submit results/tiny-ddp-20261123T112800Z-4d4738.tar.zst --to https://ccl-bench.example \\\n"
               "      --group my-lab --description 'tiny-ddp on 2 CPUs'");
    sub.callback([options, &action] { action = [options] { return run_submit(*options); }; });
}

} // namespace harness::cli
