#pragma once
// A small HTTP/1.1 client for uploads: one multipart/form-data POST whose file parts are
// streamed from disk, so a bundle of hundreds of megabytes is never held in memory. https is
// TLS through OpenSSL, the peer verified against the system's CAs (or a given CA file) and the
// URL's host name; an http:// proxy is traversed with CONNECT for https, absolute-form for http.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace harness {

namespace fs = std::filesystem;

struct Url {
    std::string scheme; ///< "http" or "https"
    std::string host;
    std::string port;   ///< "80" (http) or "443" (https) when the URL names none
    std::string target; ///< path and query, "/" when empty

    bool tls() const { return scheme == "https"; }
    /// `scheme://host:port/target`, the host bracketed when it is IPv6.
    std::string text() const;
};

/// Parses `http[s]://host[:port][/path]`. Throws input_error (exit 2) naming the URL (as
/// url_without_userinfo shows it) for anything else: no scheme, an unknown scheme,
/// user:password@ (any @ before the query), no host, a bad port.
Url parse_url(const std::string& text);

/// A URL as typed, fit to print: what may be user:password@ (up to the last @ before the query,
/// so a password holding '/' is hidden too) becomes `***@`; "http://u:pw@h/x" -> "http://***@h/x".
std::string url_without_userinfo(const std::string& text);

/// Whether `host` is 127.0.0.0/8, ::1 or localhost: traffic that never leaves the machine.
bool is_loopback_host(const std::string& host);

/// Reads an environment variable: its value, or nothing when unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

/// The process environment (std::getenv).
std::optional<std::string> process_env(const std::string& name);

/// Whether `no_proxy` (comma- or space-separated, as curl reads it: `*` for all, a host name
/// matching itself and its subdomains, a leading dot ignored, an IP address matching itself,
/// `:port` suffixes ignored) exempts `host`.
bool no_proxy_exempts(const std::string& no_proxy, const std::string& host);

/// The proxy for `url` from the environment as curl picks it: https_proxy then HTTPS_PROXY for
/// https, http_proxy for http (never HTTP_PROXY, which CGI lets a request set), unless no_proxy
/// or NO_PROXY exempts the host; nothing when unset or empty. `host:port` without a scheme is
/// http://; the port defaults to 1080. Throws input_error (exit 2) naming the variable, never
/// its value (which may hold a password), for credentials, an https:// proxy or a bad URL.
std::optional<Url> proxy_from_environment(const Url& url, const EnvLookup& env = process_env);

/// `base` with `path` appended, one slash between them: ("http://h:1/x/", "/api/upload") ->
/// target "/x/api/upload".
Url join_url(const Url& base, const std::string& path);

struct FormField {
    std::string name;
    std::string value;
    std::string content_type; ///< empty: sent without a Content-Type, as browsers send text
};

struct FormFile {
    std::string name;     ///< the form field ("files"), repeatable
    fs::path path;        ///< streamed from here
    std::string filename; ///< as the server sees it; empty means path's file name
};

struct HttpResponse {
    int status = 0; ///< the final status; 1xx interim responses (100 Continue, 102) are skipped
    std::string body;
    std::string retry_after; ///< the Retry-After header, empty when absent
    /// Whether the whole request body went out before the answer came: a server that answers
    /// early (413, 503 before reading) has not stored anything.
    bool body_sent = false;
    /// Empty when the answer ended where it said it would. Otherwise the head came whole but
    /// the body may be cut: the connection ended short of its Content-Length or chunked end, or,
    /// over TLS, without close_notify where only the connection's end delimits the body. Says
    /// what came (the status line, escaped, and how many body bytes).
    std::string truncated;
};

/// Something between us and a response went wrong: refused, reset, timed out, closed early,
/// an unparseable reply. An HTTP error status is a response, not this.
class HttpTransportError : public std::runtime_error {
public:
    /// How far the request got: nothing sent (connect), part of it (send), all of it (answer).
    enum class Stage { connect, send, answer };
    HttpTransportError(Stage stage, const std::string& what) : std::runtime_error(what), m_stage(stage) {}
    Stage stage() const { return m_stage; }
    /// The whole request reached the server, which may have acted on it: sending it again is
    /// not safe for a non-idempotent POST (curl does not retry then either).
    bool request_delivered() const { return m_stage == Stage::answer; }

private:
    Stage m_stage;
};

/// Called as the body goes out: bytes sent so far and the body's total size.
using UploadProgress = std::function<void(std::uint64_t sent, std::uint64_t total)>;

/// The largest response body read by default; a larger one is an error, never held or shown.
constexpr std::size_t k_max_response_bytes = std::size_t{8} * 1024 * 1024;

struct PostOptions {
    /// Each connect, write and read must make progress within this long (idle limit).
    std::chrono::seconds timeout{120};
    /// The whole exchange must end by then (total limit); none when unset.
    std::optional<std::chrono::steady_clock::time_point> deadline;
    UploadProgress progress;
    /// Body bytes read at most, however the response arrives (headers and body in one read
    /// included); past it post_multipart throws HarnessError "response larger than N bytes".
    std::size_t max_response_bytes = k_max_response_bytes;
    /// Extra request headers (name, value), e.g. Idempotency-Key; CR and LF are dropped.
    std::vector<std::pair<std::string, std::string>> headers;
    /// Sent as `Authorization: Bearer <token>` when not empty; never part of an error message.
    std::string bearer_token;
    /// https: the PEM certificates trusted instead of the system's (curl --cacert); empty: the
    /// system's CA store (OpenSSL's default paths, which honour SSL_CERT_FILE and SSL_CERT_DIR).
    fs::path ca_file;
    /// An http:// proxy to go through (proxy_from_environment finds the usual one).
    std::optional<Url> proxy;
};

/// Size in bytes of the multipart body post_multipart would send (files read by size only).
std::uint64_t multipart_body_size(const std::string& boundary, const std::vector<FormField>& fields,
                                  const std::vector<FormFile>& files);

/// POSTs `fields` then `files` as multipart/form-data to `url` with Content-Length set, and
/// returns the status and body whatever the status. A server that answers early (413) and
/// closes while the body is still going out still has its answer read and returned.
/// https verifies the server's certificate chain and its name (SNI sent for a host name).
/// Throws HttpTransportError as described above; HarnessError when the server's certificate is
/// not trusted (naming why: expired, self-signed, unknown issuer, another host's), a proxy
/// refuses the tunnel, a file cannot be read, the response is over max_response_bytes, or on
/// Ctrl-C (exit 130); input_error (exit 2) for an unreadable ca_file, or a bearer token that
/// holds whitespace or control characters or that some hop could read: over http:// the first
/// hop (the proxy, else the server) and the server must both be this machine (loopback); over
/// https://, directly or through a CONNECT tunnel, the token stays inside TLS. A head cut off
/// mid-way is an HttpTransportError naming the status line that came; a body cut off after a
/// whole head is a response with `truncated` set.
HttpResponse post_multipart(const Url& url, const std::vector<FormField>& fields, const std::vector<FormFile>& files,
                            const PostOptions& options = {});

} // namespace harness
