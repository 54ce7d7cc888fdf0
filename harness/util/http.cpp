#include "util/error.hpp"
#include "util/http.hpp"
#include "util/interrupt.hpp"
#include "util/quote.hpp"
#include "util/strings.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <fmt/format.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <fstream>
#include <random>

namespace harness {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

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
// operation is started, then the context runs until its handler has been called. Plain TCP until
// open() wraps the stream in TLS for https.
class Connection {
public:
    Connection(std::chrono::seconds timeout, std::optional<std::chrono::steady_clock::time_point> deadline)
        : m_tcp(m_ioc), m_timeout(timeout), m_deadline(deadline) {}

    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;
    Connection(Connection&&) = delete;
    Connection& operator=(Connection&&) = delete;

    /// Connects to `url` (through `options.proxy` when set) and, for https, verifies the server.
    void open(const Url& url, const PostOptions& options) {
        const Url& first_hop = options.proxy ? *options.proxy : url;
        connect(first_hop, options.proxy ? "proxy " : "");
        if (options.proxy && url.tls()) {
            tunnel(url, *options.proxy);
        }
        if (url.tls()) {
            handshake(url, options.ca_file);
        }
    }

    /// Starts one asynchronous operation under the deadline (`start` gets its completion
    /// handler) and runs the loop until it completes.
    template <typename Start> beast::error_code await(Start start) {
        beast::error_code ec;
        expire();
        start([&ec](beast::error_code result, auto&&...) { ec = result; });
        run();
        return ec;
    }

    beast::error_code write(const char* data, std::size_t size) {
        return await([&](auto done) {
            if (m_tls) {
                net::async_write(*m_tls, net::buffer(data, size), done);
            } else {
                net::async_write(m_tcp, net::buffer(data, size), done);
            }
        });
    }

    beast::error_code read_header(http::response_parser<http::string_body>& parser) {
        return await([&](auto done) {
            if (m_tls) {
                http::async_read_header(*m_tls, m_buffer, parser, done);
            } else {
                http::async_read_header(m_tcp, m_buffer, parser, done);
            }
        });
    }

    beast::error_code read_some(http::response_parser<http::string_body>& parser) {
        return await([&](auto done) {
            if (m_tls) {
                http::async_read_some(*m_tls, m_buffer, parser, done);
            } else {
                http::async_read_some(m_tcp, m_buffer, parser, done);
            }
        });
    }

    /// The first line of the bytes that came but are not parsed yet, at most 200 bytes of it.
    std::string unparsed_first_line() const {
        const auto data = m_buffer.cdata();
        const std::string text(static_cast<const char*>(data.data()), std::min<std::size_t>(data.size(), 200));
        return text.substr(0, text.find_first_of("\r\n"));
    }

    ~Connection() {
        // Connection: close was asked for: no TLS close_notify is owed, the socket just ends.
        beast::error_code ignored;
        tcp().socket().shutdown(tcp::socket::shutdown_both, ignored);
    }

private:
    beast::tcp_stream& tcp() { return m_tls ? m_tls->next_layer() : m_tcp; }

    void connect(const Url& url, const std::string& what) {
        beast::error_code ec;
        tcp::resolver resolver(m_ioc);
        const auto endpoints = resolver.resolve(url.host, url.port, ec);
        if (ec) {
            throw HttpTransportError(HttpTransportError::Stage::connect,
                                     fmt::format("cannot resolve {}{}: {}", what, url.host, ec.message()));
        }
        ec = await([&](auto done) { m_tcp.async_connect(endpoints, done); });
        if (ec) {
            throw HttpTransportError(HttpTransportError::Stage::connect,
                                     fmt::format("cannot connect to {}{}:{}: {}", what, url.host, url.port, ec.message()));
        }
    }

    // CONNECT host:port through the proxy (RFC 9110 9.3.6); its 2xx turns the socket into a tunnel.
    void tunnel(const Url& url, const Url& proxy) {
        const std::string authority = fmt::format("{}:{}", url.host.find(':') != std::string::npos ? "[" + url.host + "]" : url.host,
                                                  url.port);
        const std::string request = fmt::format("CONNECT {0} HTTP/1.1\r\nHost: {0}\r\nUser-Agent: ccl-harness\r\n\r\n", authority);
        const std::string where = fmt::format("proxy {}:{}", proxy.host, proxy.port);
        if (const auto ec = await([&](auto done) { net::async_write(m_tcp, net::buffer(request), done); })) {
            throw HttpTransportError(HttpTransportError::Stage::connect,
                                     fmt::format("sending CONNECT to {}: {}", where, ec.message()));
        }
        http::response_parser<http::empty_body> parser;
        parser.skip(true); // a CONNECT answer has no body, whatever its headers say
        parser.header_limit(k_max_tunnel_head_bytes);
        if (const auto ec = await([&](auto done) { http::async_read_header(m_tcp, m_buffer, parser, done); })) {
            throw HttpTransportError(HttpTransportError::Stage::connect,
                                     fmt::format("reading the CONNECT answer from {}: {}", where, ec.message()));
        }
        const unsigned status = parser.get().result_int();
        if (status < 200 || status >= 300) {
            throw HarnessError(fmt::format("{} refused to open a tunnel to {}: HTTP {} {}", where, authority, status,
                                           terminal_text(std::string(parser.get().reason()))));
        }
        if (m_buffer.size() != 0) {
            throw HttpTransportError(HttpTransportError::Stage::connect, fmt::format("{} sent data before the TLS handshake", where));
        }
    }

    void handshake(const Url& url, const fs::path& ca_file) {
        m_ctx.emplace(net::ssl::context::tls_client);
        SSL_CTX_set_min_proto_version(m_ctx->native_handle(), TLS1_2_VERSION);
        m_ctx->set_verify_mode(net::ssl::verify_peer);
        beast::error_code ec;
        if (ca_file.empty()) {
            m_ctx->set_default_verify_paths(ec);
        } else {
            // OpenSSL would block on a FIFO past every timeout: only a regular file is read.
            std::error_code status;
            if (!fs::is_regular_file(fs::status(ca_file, status))) {
                throw input_error(fmt::format("{}: not a regular file; --ca-file takes a PEM file", ca_file.string()));
            }
            m_ctx->load_verify_file(ca_file.string(), ec);
            if (ec) {
                throw input_error(fmt::format("{}: cannot load CA certificates (PEM expected): {}", ca_file.string(), ec.message()));
            }
        }
        m_tls.emplace(std::move(m_tcp), *m_ctx);
        SSL* ssl = m_tls->native_handle();
        boost::system::error_code not_ip;
        net::ip::make_address(url.host, not_ip);
        if (not_ip) {
            // SNI names the host (RFC 6066 forbids an address there); the certificate must match it.
            // SSL_set_tlsext_host_name, without its macro's C cast; OpenSSL copies the name.
            std::string sni = url.host;
            SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name, sni.data());
            SSL_set1_host(ssl, url.host.c_str());
        } else {
            X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), url.host.c_str());
        }
        ec = await([&](auto done) { m_tls->async_handshake(net::ssl::stream_base::client, done); });
        if (!ec) {
            return;
        }
        const long verify = SSL_get_verify_result(ssl);
        if (verify != X509_V_OK) {
            // Not a transport hiccup: the same certificate would be refused on every retry.
            const bool unknown_issuer = verify == X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT ||
                                        verify == X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN ||
                                        verify == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY ||
                                        verify == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT;
            throw HarnessError(fmt::format(
                "{}:{}: the server's certificate was refused: {}{}", url.host, url.port, X509_verify_cert_error_string(verify),
                unknown_issuer ? (ca_file.empty() ? " (not signed by a CA the system trusts; --ca-file FILE "
                                                    "trusts a private CA)"
                                                  : fmt::format(" (not signed by a CA in {})", ca_file.string()))
                               : ""));
        }
        throw HttpTransportError(HttpTransportError::Stage::connect,
                                 fmt::format("TLS handshake with {}:{} failed: {}", url.host, url.port, ec.message()));
    }

    // Each operation must progress within the idle limit, and all of them end by the deadline.
    void expire() {
        auto until = std::chrono::steady_clock::now() + m_timeout;
        if (m_deadline && *m_deadline < until) {
            until = *m_deadline;
        }
        tcp().expires_at(until);
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
                tcp().socket().close(ignored);
                m_ioc.restart();
                m_ioc.run();
                throw HarnessError("interrupted", k_exit_interrupted);
            }
        }
    }

    static constexpr std::uint32_t k_max_tunnel_head_bytes = 16 * 1024;

    net::io_context m_ioc;
    beast::tcp_stream m_tcp;
    std::optional<net::ssl::context> m_ctx;
    std::optional<beast::ssl_stream<beast::tcp_stream>> m_tls;
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

// A token is a secret: it is checked without ever being quoted back. The one rule for where it
// may go, judged on the connection open() makes: inside TLS (https, directly or through a CONNECT
// tunnel, which the proxy only relays) no hop can read it; in clear text every hop can, so the
// first hop (the proxy, else the server) and the server must both be loopback (this machine).
void check_token(const Url& url, const PostOptions& options) {
    if (options.bearer_token.empty()) {
        return;
    }
    for (const char c : options.bearer_token) {
        if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) {
            throw input_error("the upload token holds whitespace or control characters");
        }
    }
    if (url.tls()) {
        return;
    }
    const std::string refusing = fmt::format("{}: refusing to send the upload token in clear text over http://", url.text());
    if (options.proxy && !is_loopback_host(options.proxy->host)) {
        throw input_error(
            fmt::format("{} through the proxy {}:{}: a proxy reads a plain-http request whole, and {} is not a loopback address; "
                        "use https:// (the proxy then only relays TLS){}",
                        refusing, options.proxy->host, options.proxy->port, options.proxy->host,
                        is_loopback_host(url.host) ? fmt::format(", or bypass the proxy with no_proxy={}", url.host) : ""));
    }
    if (!is_loopback_host(url.host)) {
        throw input_error(fmt::format("{} to {}, which is not a loopback address{}; use https://", refusing, url.host,
                                      options.proxy ? " (the proxy would forward it in clear text)" : ""));
    }
}

bool connection_ended(const beast::error_code& error) {
    // Over TLS a peer that just closes (no close_notify) reads as a truncated stream; beast calls
    // an end inside a message a partial one.
    return error == http::error::end_of_stream || error == net::error::eof || error == net::ssl::error::stream_truncated ||
           error == http::error::partial_message;
}

using ResponseParser = http::response_parser<http::string_body>;

// The parsed status line as the server sent it; enquote escapes it wherever it is shown.
std::string status_line(const ResponseParser& parser) {
    const auto& message = parser.get();
    return fmt::format("HTTP/{}.{} {} {}", message.version() / 10, message.version() % 10, message.result_int(),
                       std::string(message.reason()));
}

// What came of a head cut off before its blank line, empty when nothing did. beast parses the
// status line as soon as it is whole (headers after it need not have come): until then it waits
// unparsed in the buffer, and it alone starts with "HTTP/".
std::string head_received(const ResponseParser& parser, const Connection& connection) {
    std::string unparsed = connection.unparsed_first_line();
    if (starts_with(unparsed, "HTTP/") || !parser.got_some()) {
        return unparsed;
    }
    return status_line(parser);
}

// What came of an answer whose whole head arrived but whose body the connection's end cut short.
std::string truncation_note(const ResponseParser& parser) {
    const std::size_t got = parser.get().body().size();
    std::string why;
    if (const auto length = parser.content_length()) {
        why = fmt::format("{} of the {} body bytes its Content-Length announced came", got, *length);
    } else if (parser.chunked()) {
        why = fmt::format("{} body bytes came, and the chunked body never ended", got);
    } else {
        why = fmt::format("{} body bytes came, then the connection ended without TLS close_notify, so the body may be truncated", got);
    }
    return fmt::format("the answer {} was cut off: {}", enquote(status_line(parser)), why);
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
    check_token(url, options);
    const std::string boundary = make_boundary();
    const std::uint64_t total = multipart_body_size(boundary, fields, files);
    const bool default_port = url.port == (url.tls() ? "443" : "80");
    const std::string host = default_port ? url.host : url.host + ":" + url.port;
    std::string extra;
    for (const auto& [name, value] : options.headers) {
        extra += header_line(name, value);
    }
    if (!options.bearer_token.empty()) {
        extra += header_line("Authorization", "Bearer " + options.bearer_token);
    }
    // Through a proxy, plain http names the whole URL (absolute-form); https is tunnelled.
    const std::string target = options.proxy && !url.tls() ? url.text() : url.target;
    const std::string head = fmt::format("POST {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: ccl-harness\r\n"
                                         "Accept: application/json\r\nConnection: close\r\n{}"
                                         "Content-Type: multipart/form-data; boundary={}\r\nContent-Length: {}\r\n\r\n",
                                         target, host, extra, boundary, total);
    const std::string where = fmt::format("{}:{}", url.host, url.port);
    Connection connection(options.timeout, options.deadline);
    connection.open(url, options);
    beast::error_code write_error = connection.write(head.data(), head.size());
    if (!write_error) {
        write_error = send_body(connection, boundary, fields, files, total, options.progress);
    }
    // `came`: what came of a head cut off (head_received).
    const auto transport_error = [&](const beast::error_code& read_error, const std::string& came) {
        if (write_error) {
            return HttpTransportError(HttpTransportError::Stage::send, fmt::format("sending to {}: {}", where, write_error.message()));
        }
        if (connection_ended(read_error)) {
            return HttpTransportError(
                HttpTransportError::Stage::answer,
                came.empty() ? fmt::format("{} closed the connection without answering", where)
                             : fmt::format("{} sent only {} of its answer's head, then closed the connection", where, enquote(came)));
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
        ResponseParser parser;
        parser.header_limit(k_max_response_head_bytes);
        parser.body_limit(options.max_response_bytes);
        if (const beast::error_code error = connection.read_header(parser)) {
            if (error == http::error::header_limit) {
                throw too_large(where, k_max_response_head_bytes);
            }
            if (error == http::error::body_limit) {
                throw too_large(where, options.max_response_bytes);
            }
            throw transport_error(error, head_received(parser, connection));
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
        std::string truncated;
        while (!parser.is_done() && truncated.empty()) {
            const beast::error_code error = connection.read_some(parser);
            if (error == http::error::body_limit || parser.get().body().size() > options.max_response_bytes) {
                throw too_large(where, options.max_response_bytes);
            }
            if (connection_ended(error)) {
                // The head is the server's verdict and came whole: it is returned, marked, for the
                // caller to judge (an upload answered 2xx was accepted, whatever became of the body).
                truncated = truncation_note(parser);
            } else if (error) {
                throw transport_error(error, "");
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
        response.truncated = std::move(truncated);
        return response;
    }
}

} // namespace harness
