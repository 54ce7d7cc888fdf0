#pragma once
// A small HTTP/1.1 client for uploads: one multipart/form-data POST whose file parts are
// streamed from disk, so a bundle of hundreds of megabytes is never held in memory.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace harness {

namespace fs = std::filesystem;

struct Url {
    std::string scheme; ///< "http" (https is recognised and refused for now)
    std::string host;
    std::string port;   ///< "80" when the URL names none
    std::string target; ///< path and query, "/" when empty
};

/// Parses `http://host[:port][/path]`. Throws input_error (exit 2) naming the URL for anything
/// else: no scheme, an unknown scheme, https (not supported yet), no host, a bad port.
Url parse_url(const std::string& text);

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
    int status = 0;
    std::string body;
};

/// Something between us and a response went wrong: refused, reset, timed out, closed early,
/// an unparseable reply. Retrying may help; an HTTP error status is a response, not this.
class HttpTransportError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// Called as the body goes out: bytes sent so far and the body's total size.
using UploadProgress = std::function<void(std::uint64_t sent, std::uint64_t total)>;

struct PostOptions {
    /// Each connect, write and read must make progress within this long.
    std::chrono::seconds timeout{120};
    UploadProgress progress;
    std::size_t max_response_bytes = 8 * 1024 * 1024;
};

/// Size in bytes of the multipart body post_multipart would send (files read by size only).
std::uint64_t multipart_body_size(const std::string& boundary, const std::vector<FormField>& fields,
                                  const std::vector<FormFile>& files);

/// POSTs `fields` then `files` as multipart/form-data to `url` with Content-Length set, and
/// returns the status and body whatever the status. A server that answers early (413) and
/// closes while the body is still going out still has its answer read and returned.
/// Throws HttpTransportError as described above, and HarnessError when a file cannot be read.
HttpResponse post_multipart(const Url& url, const std::vector<FormField>& fields,
                            const std::vector<FormFile>& files, const PostOptions& options = {});

} // namespace harness
