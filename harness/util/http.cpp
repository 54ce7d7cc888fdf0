#include "util/error.hpp"
#include "util/http.hpp"
#include "util/interrupt.hpp"
#include "util/strings.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <fmt/format.h>

#include <array>
#include <fstream>
#include <random>

namespace harness {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

Url parse_url(const std::string& text) {
    const std::size_t colon = text.find("://");
    if (colon == std::string::npos) {
        throw input_error(fmt::format("{}: not a URL (expected http://HOST[:PORT][/PATH])", enquote(text)));
    }
    Url url;
    url.scheme = to_lower(text.substr(0, colon));
    if (url.scheme == "https") {
        throw input_error(fmt::format("{}: https not supported yet; use an http:// URL", enquote(text)));
    }
    if (url.scheme != "http") {
        throw input_error(fmt::format("{}: unsupported scheme {} (expected http://)", enquote(text), enquote(url.scheme)));
    }
    const std::string rest = text.substr(colon + 3);
    const std::size_t slash = rest.find('/');
    std::string authority = rest.substr(0, slash);
    url.target = slash == std::string::npos ? "/" : rest.substr(slash);
    if (authority.find('@') != std::string::npos) {
        // Credentials in a URL end up in logs and shell history: refuse rather than send them.
        throw input_error(fmt::format("{}: user:password@ in the URL is not supported", enquote(text)));
    }
    url.port = "80";
    const std::size_t port_colon = authority.rfind(':');
    if (port_colon != std::string::npos && authority.find(']', port_colon) == std::string::npos) {
        url.port = authority.substr(port_colon + 1);
        authority.resize(port_colon);
        const bool digits = !url.port.empty() && url.port.size() <= 5 && url.port.find_first_not_of("0123456789") == std::string::npos;
        if (!digits || std::stoi(url.port) < 1 || std::stoi(url.port) > 65535) {
            throw input_error(fmt::format("{}: bad port {}", enquote(text), enquote(url.port)));
        }
    }
    if (authority.size() > 2 && authority.front() == '[' && authority.back() == ']') {
        authority = authority.substr(1, authority.size() - 2);
    }
    if (authority.empty()) {
        throw input_error(fmt::format("{}: no host in the URL", enquote(text)));
    }
    if (url.target.find_first_of(" \r\n\t") != std::string::npos) {
        throw input_error(fmt::format("{}: the path holds whitespace", enquote(text)));
    }
    url.host = authority;
    return url;
}

Url join_url(const Url& base, const std::string& path) {
    Url url = base;
    std::string prefix = base.target.substr(0, base.target.find('?'));
    while (!prefix.empty() && prefix.back() == '/') {
        prefix.pop_back();
    }
    url.target = prefix + (starts_with(path, "/") ? path : "/" + path);
    return url;
}

namespace {

constexpr std::size_t k_chunk = std::size_t{256} * 1024;

// Quotes in a form name would end the header value early; the names we send never hold them,
// but a bundle file name is the user's.
std::string header_safe(const std::string& value) {
    std::string out;
    for (const char c : value) {
        if (c == '"') {
            out += "%22";
        } else if (c != '\r' && c != '\n') {
            out += c;
        }
    }
    return out;
}

std::string field_head(const std::string& boundary, const FormField& field) {
    std::string head = fmt::format("--{}\r\nContent-Disposition: form-data; name=\"{}\"\r\n", boundary, header_safe(field.name));
    if (!field.content_type.empty()) {
        head += fmt::format("Content-Type: {}\r\n", field.content_type);
    }
    return head + "\r\n";
}

std::string file_name(const FormFile& file) { return file.filename.empty() ? file.path.filename().string() : file.filename; }

std::string file_head(const std::string& boundary, const FormFile& file) {
    return fmt::format("--{}\r\nContent-Disposition: form-data; name=\"{}\"; filename=\"{}\"\r\n"
                       "Content-Type: application/octet-stream\r\n\r\n",
                       boundary, header_safe(file.name), header_safe(file_name(file)));
}

std::string closing(const std::string& boundary) { return fmt::format("--{}--\r\n", boundary); }

std::string header_line(const std::string& name, const std::string& value) {
    std::string line;
    for (const char c : name + ": " + value) {
        if (c != '\r' && c != '\n') {
            line += c;
        }
    }
    return line + "\r\n";
}

std::uint64_t file_size_or_throw(const fs::path& path) {
    std::error_code ec;
    const std::uintmax_t size = fs::file_size(path, ec);
    if (ec) {
        throw HarnessError(fmt::format("{}: {}", path.string(), ec.message()));
    }
    return size;
}

std::string make_boundary() {
    std::random_device random;
    std::string boundary = "ccl-harness-";
    for (int i = 0; i < 4; ++i) {
        boundary += fmt::format("{:08x}", random());
    }
    return boundary;
}

// Synchronous calls on top of the asynchronous ones, because only these honour a deadline: each
// operation is started, then the context runs until its handler has been called.
class Connection {
public:
    Connection(std::chrono::seconds timeout, std::optional<std::chrono::steady_clock::time_point> deadline)
        : m_stream(m_ioc), m_timeout(timeout), m_deadline(deadline) {}

    void connect(const Url& url) {
        beast::error_code ec;
        tcp::resolver resolver(m_ioc);
        const auto endpoints = resolver.resolve(url.host, url.port, ec);
        if (ec) {
            throw HttpTransportError(HttpTransportError::Stage::connect, fmt::format("cannot resolve {}: {}", url.host, ec.message()));
        }
        expire();
        m_stream.async_connect(endpoints, [&ec](beast::error_code result, const tcp::endpoint&) { ec = result; });
        run();
        if (ec) {
            throw HttpTransportError(HttpTransportError::Stage::connect,
                                     fmt::format("cannot connect to {}:{}: {}", url.host, url.port, ec.message()));
        }
    }

    /// Starts one asynchronous operation under the deadline (`start` gets its completion
    /// handler) and runs the loop until it completes.
    template <typename Start> beast::error_code await(Start start) {
        beast::error_code ec;
        expire();
        start([&ec](beast::error_code result, std::size_t) { ec = result; });
        run();
        return ec;
    }

    beast::error_code write(const char* data, std::size_t size) {
        return await([&](auto done) { net::async_write(m_stream, net::buffer(data, size), done); });
    }

    beast::error_code read_header(http::response_parser<http::string_body>& parser) {
        return await([&](auto done) { http::async_read_header(m_stream, m_buffer, parser, done); });
    }

    beast::error_code read_some(http::response_parser<http::string_body>& parser) {
        return await([&](auto done) { http::async_read_some(m_stream, m_buffer, parser, done); });
    }

    ~Connection() {
        beast::error_code ignored;
        m_stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    }

private:
    // Each operation must progress within the idle limit, and all of them end by the deadline.
    void expire() {
        auto until = std::chrono::steady_clock::now() + m_timeout;
        if (m_deadline && *m_deadline < until) {
            until = *m_deadline;
        }
        m_stream.expires_at(until);
    }

    // Runs the started operation to its end, looking at Ctrl-C five times a second: the signal
    // handler restarts the event loop's wait, so nothing else would notice it.
    void run() {
        m_ioc.restart();
        while (!m_ioc.stopped()) {
            m_ioc.run_for(std::chrono::milliseconds(200));
            if (interrupt_signal() != 0) {
                // The pending handler refers to this frame's caller: let it finish, aborted.
                beast::error_code ignored;
                m_stream.socket().close(ignored);
                m_ioc.restart();
                m_ioc.run();
                throw HarnessError("interrupted", k_exit_interrupted);
            }
        }
    }

    net::io_context m_ioc;
    beast::tcp_stream m_stream;
    beast::flat_buffer m_buffer;
    std::chrono::seconds m_timeout;
    std::optional<std::chrono::steady_clock::time_point> m_deadline;
};

// A response head larger than this is not an upload server's answer; nor are endless 1xx.
constexpr std::uint32_t k_max_response_head_bytes = 64 * 1024;
constexpr int k_max_interim_responses = 16;

HarnessError too_large(const std::string& where, std::size_t limit) {
    return HarnessError(fmt::format("{}: response larger than {} bytes; not read further", where, limit));
}

// Sends the whole body; returns the first write error, after which nothing more is sent.
beast::error_code send_body(Connection& connection, const std::string& boundary, const std::vector<FormField>& fields,
                            const std::vector<FormFile>& files, std::uint64_t total, const UploadProgress& progress) {
    std::uint64_t sent = 0;
    auto send = [&](const char* data, std::size_t size) {
        beast::error_code ec = connection.write(data, size);
        if (!ec) {
            sent += size;
            if (progress) {
                progress(sent, total);
            }
        }
        return ec;
    };
    auto send_text = [&](const std::string& text) { return send(text.data(), text.size()); };
    for (const FormField& field : fields) {
        if (auto ec = send_text(field_head(boundary, field) + field.value + "\r\n")) {
            return ec;
        }
    }
    std::vector<char> chunk(k_chunk);
    for (const FormFile& file : files) {
        if (auto ec = send_text(file_head(boundary, file))) {
            return ec;
        }
        std::ifstream in(file.path, std::ios::binary);
        if (!in) {
            throw HarnessError(fmt::format("{}: cannot open for reading", file.path.string()));
        }
        std::uint64_t left = file_size_or_throw(file.path);
        while (left > 0) {
            const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(left, chunk.size()));
            in.read(chunk.data(), static_cast<std::streamsize>(want));
            if (static_cast<std::size_t>(in.gcount()) != want) {
                // Content-Length is already promised: a file that shrank cannot be sent honestly.
                throw HarnessError(fmt::format("{}: changed while being sent", file.path.string()));
            }
            if (auto ec = send(chunk.data(), want)) {
                return ec;
            }
            left -= want;
        }
        if (auto ec = send_text("\r\n")) {
            return ec;
        }
    }
    return send_text(closing(boundary));
}

} // namespace

std::uint64_t multipart_body_size(const std::string& boundary, const std::vector<FormField>& fields,
                                  const std::vector<FormFile>& files) {
    std::uint64_t size = 0;
    for (const FormField& field : fields) {
        size += field_head(boundary, field).size() + field.value.size() + 2;
    }
    for (const FormFile& file : files) {
        size += file_head(boundary, file).size() + file_size_or_throw(file.path) + 2;
    }
    return size + closing(boundary).size();
}

HttpResponse post_multipart(const Url& url, const std::vector<FormField>& fields, const std::vector<FormFile>& files,
                            const PostOptions& options) {
    const std::string boundary = make_boundary();
    const std::uint64_t total = multipart_body_size(boundary, fields, files);
    const std::string host = url.port == "80" ? url.host : url.host + ":" + url.port;
    std::string extra;
    for (const auto& [name, value] : options.headers) {
        extra += header_line(name, value);
    }
    const std::string head = fmt::format("POST {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: ccl-harness\r\n"
                                         "Accept: application/json\r\nConnection: close\r\n{}"
                                         "Content-Type: multipart/form-data; boundary={}\r\nContent-Length: {}\r\n\r\n",
                                         url.target, host, extra, boundary, total);
    const std::string where = fmt::format("{}:{}", url.host, url.port);
    Connection connection(options.timeout, options.deadline);
    connection.connect(url);
    beast::error_code write_error = connection.write(head.data(), head.size());
    if (!write_error) {
        write_error = send_body(connection, boundary, fields, files, total, options.progress);
    }
    const auto transport_error = [&](const beast::error_code& read_error) {
        if (write_error) {
            return HttpTransportError(HttpTransportError::Stage::send, fmt::format("sending to {}: {}", where, write_error.message()));
        }
        if (read_error == http::error::end_of_stream || read_error == net::error::eof) {
            return HttpTransportError(HttpTransportError::Stage::answer,
                                      fmt::format("{} closed the connection without answering", where));
        }
        return HttpTransportError(HttpTransportError::Stage::answer,
                                  fmt::format("reading the answer from {}: {}", where, read_error.message()));
    };
    // Read even after a failed write: a server refusing a large body answers and closes early.
    // Interim 1xx responses (100 Continue, 102 Processing) precede the final one and are skipped,
    // as curl does; 101 is not one we asked for and is taken as final.
    for (int interim = 0;; ++interim) {
        if (interim > k_max_interim_responses) {
            throw HarnessError(
                fmt::format("{}: more than {} interim (1xx) responses; no final answer", where, k_max_interim_responses));
        }
        http::response_parser<http::string_body> parser;
        parser.header_limit(k_max_response_head_bytes);
        parser.body_limit(options.max_response_bytes);
        if (const beast::error_code error = connection.read_header(parser)) {
            if (error == http::error::header_limit) {
                throw too_large(where, k_max_response_head_bytes);
            }
            if (error == http::error::body_limit) {
                throw too_large(where, options.max_response_bytes);
            }
            throw transport_error(error);
        }
        const int status = static_cast<int>(parser.get().result_int());
        if (status >= 100 && status < 200 && status != 101) {
            continue;
        }
        // Checked here, not only by the parser: headers and a body that arrive in one read are
        // parsed at once, and the limit must hold all the same.
        if (const auto length = parser.content_length(); length && *length > options.max_response_bytes) {
            throw too_large(where, options.max_response_bytes);
        }
        while (!parser.is_done()) {
            const beast::error_code error = connection.read_some(parser);
            if (error == http::error::body_limit || parser.get().body().size() > options.max_response_bytes) {
                throw too_large(where, options.max_response_bytes);
            }
            if (error) {
                throw transport_error(error);
            }
        }
        if (parser.get().body().size() > options.max_response_bytes) {
            throw too_large(where, options.max_response_bytes);
        }
        HttpResponse response;
        response.status = status;
        response.body = std::move(parser.get().body());
        response.retry_after = std::string(parser.get()[http::field::retry_after]);
        response.body_sent = !write_error;
        return response;
    }
}

} // namespace harness
