#include "test_context.hpp"
#include "util/error.hpp"
#include "util/http.hpp"
#include "workflows/submit.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <catch2/catch.hpp>
#include <map>
#include <tuple>
#include <thread>

using namespace harness;
using harness::test::TempDir;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

int exit_code_of(const std::function<void()>& action) {
    try {
        action();
    } catch (const HarnessError& e) {
        return e.code();
    }
    return 0;
}

// One connection on 127.0.0.1: reads the request (head, then Content-Length bytes) and sends
// `reply` verbatim, or closes without a word when `reply` is empty.
class OneShotServer {
public:
    explicit OneShotServer(std::string reply)
        : m_acceptor(m_ioc, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0)), m_reply(std::move(reply)) {
        m_thread = std::thread([this] { serve(); });
    }
    ~OneShotServer() { m_thread.join(); }

    std::string url() const { return "http://127.0.0.1:" + std::to_string(m_acceptor.local_endpoint().port()); }
    std::string head;
    std::string body;

private:
    void serve() {
        tcp::socket socket(m_ioc);
        m_acceptor.accept(socket);
        net::streambuf buffer;
        const std::size_t end = net::read_until(socket, buffer, "\r\n\r\n");
        std::string data(net::buffers_begin(buffer.data()), net::buffers_end(buffer.data()));
        head = data.substr(0, end);
        body = data.substr(end);
        const std::size_t at = head.find("Content-Length: ");
        const std::size_t length = std::stoul(head.substr(at + 16));
        if (body.size() < length) {
            std::string rest(length - body.size(), '\0');
            net::read(socket, net::buffer(rest));
            body += rest;
        }
        if (!m_reply.empty()) {
            net::write(socket, net::buffer(m_reply));
        }
        boost::system::error_code ignored;
        socket.shutdown(tcp::socket::shutdown_both, ignored);
    }

    net::io_context m_ioc;
    tcp::acceptor m_acceptor;
    std::string m_reply;
    std::thread m_thread;
};

std::string reply(int status, const std::string& body) {
    return "HTTP/1.1 " + std::to_string(status) +
           " X\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
           body;
}

} // namespace

TEST_CASE("parse_url reads host, port and path of http URLs", "[submit]") {
    const Url url = parse_url("http://127.0.0.1:8123/base/");
    CHECK(url.host == "127.0.0.1");
    CHECK(url.port == "8123");
    CHECK(url.target == "/base/");
    CHECK(join_url(url, "/api/upload").target == "/base/api/upload");
    const Url bare = parse_url("HTTP://ccl-bench.example");
    CHECK(bare.port == "80");
    CHECK(bare.target == "/");
    CHECK(join_url(bare, "/api/upload").target == "/api/upload");
    CHECK(parse_url("http://[::1]:9000/").host == "::1");
    const Url secure = parse_url("https://ccl-bench.example/x");
    CHECK(secure.tls());
    CHECK(secure.port == "443");
    CHECK(secure.text() == "https://ccl-bench.example:443/x");
    CHECK(parse_url("http://[::1]:9000/").text() == "http://[::1]:9000/");
}

TEST_CASE("parse_url refuses what it cannot use as bad input", "[submit]") {
    for (const char* text : {"ccl-bench.example", "ftp://host/", "http://", "http://host:0/", "http://host:99999", "http://host:8a/",
                             "http://user:pw@host/", "http://host/a b"}) {
        INFO(text);
        CHECK(exit_code_of([&] { parse_url(text); }) == k_exit_usage);
    }
}

TEST_CASE("a URL's user:password@ is refused and never printed", "[submit]") {
    for (const char* text : {"http://u:secretpw@127.0.0.1:1/x", "https://secretpw@host", "ftp://u:secretpw@host/", "u:secretpw@host:1",
                             "http://u:secret/pw@host:1/", "http://u:secretpw@host:bad/", "u:secretpw@h/x://y"}) {
        INFO(text);
        try {
            parse_url(text);
            FAIL("accepted");
        } catch (const HarnessError& e) {
            CHECK(e.code() == k_exit_usage);
            CHECK(std::string(e.what()).find("secret") == std::string::npos);
            CHECK(std::string(e.what()).find("***@") != std::string::npos);
        }
    }
    CHECK(url_without_userinfo("http://u:pw@h:1/x?q=a@b") == "http://***@h:1/x?q=a@b");
    CHECK(url_without_userinfo("https://h/x") == "https://h/x");
    CHECK(url_without_userinfo("u:pw@h") == "***@h");
    CHECK(url_without_userinfo("http://h/?a@b") == "http://h/?a@b");
    CHECK(parse_url("http://h/x?q=a@b").target == "/x?q=a@b");
}

TEST_CASE("proxies come from the environment as curl reads them", "[submit]") {
    std::map<std::string, std::string> vars;
    const EnvLookup env = [&vars](const std::string& name) -> std::optional<std::string> {
        const auto found = vars.find(name);
        return found == vars.end() ? std::nullopt : std::optional<std::string>(found->second);
    };
    const Url secure = parse_url("https://up.ccl-bench.example/");
    const Url plain = parse_url("http://up.ccl-bench.example/");
    CHECK_FALSE(proxy_from_environment(secure, env));
    vars["HTTP_PROXY"] = "http://cgi-set:1"; // never read: a CGI request can set it
    CHECK_FALSE(proxy_from_environment(plain, env));
    vars["HTTPS_PROXY"] = "proxy.site:3128";
    REQUIRE(proxy_from_environment(secure, env));
    CHECK(proxy_from_environment(secure, env)->host == "proxy.site");
    CHECK(proxy_from_environment(secure, env)->port == "3128");
    vars["https_proxy"] = "http://lower.site";
    CHECK(proxy_from_environment(secure, env)->host == "lower.site");
    CHECK(proxy_from_environment(secure, env)->port == "1080");
    vars["http_proxy"] = "http://plain.site:8080/";
    CHECK(proxy_from_environment(plain, env)->host == "plain.site");
    vars["no_proxy"] = "localhost, .ccl-bench.example:443";
    CHECK_FALSE(proxy_from_environment(secure, env));
    CHECK_FALSE(proxy_from_environment(plain, env));
    CHECK(proxy_from_environment(parse_url("https://other.example/"), env));
    CHECK(no_proxy_exempts("*", "anything"));
    CHECK(no_proxy_exempts("10.0.0.1,example.com", "10.0.0.1"));
    CHECK_FALSE(no_proxy_exempts("example.com", "notexample.com"));
    CHECK(no_proxy_exempts("EXAMPLE.com", "a.b.example.COM"));
    CHECK(no_proxy_exempts("[::1]", "::1"));
    CHECK_FALSE(proxy_from_environment(parse_url("http://localhost:8000/"), env));
    vars.erase("no_proxy");
    // curl's rule: no_proxy, nothing else, keeps a loopback target from the proxy.
    CHECK(proxy_from_environment(parse_url("http://localhost:8000/"), env));
    CHECK(proxy_from_environment(parse_url("http://127.0.0.1:8000/"), env));
    vars["https_proxy"] = "http://user:s3cret@proxy.site:3128";
    try {
        proxy_from_environment(secure, env);
        FAIL("credentials accepted");
    } catch (const HarnessError& e) {
        CHECK(e.code() == k_exit_usage);
        CHECK(std::string(e.what()).find("s3cret") == std::string::npos);
        CHECK(std::string(e.what()).find("$https_proxy") != std::string::npos);
    }
    vars["https_proxy"] = "https://proxy.site:3128";
    CHECK(exit_code_of([&] { proxy_from_environment(secure, env); }) == k_exit_usage);
}

TEST_CASE("redact blanks every occurrence of a secret", "[submit]") {
    CHECK(redact("token tok-1 and tok-1 again", "tok-1") == "token [redacted] and [redacted] again");
    CHECK(redact("nothing", "") == "nothing");
    CHECK(redact("aaaa", "aa") == "[redacted][redacted]");
}

TEST_CASE("upload ids are read from upload_id, else id", "[submit]") {
    CHECK(upload_id_of(R"({"upload_id":"u-1","id":"x"})") == "u-1");
    CHECK(upload_id_of(R"({"id":42})") == "42");
    CHECK(upload_id_of(R"({"status":"ok"})").empty());
    CHECK(upload_id_of("<html>ok</html>").empty());
    CHECK(is_retryable_status(500));
    CHECK(is_retryable_status(503));
    CHECK(is_retryable_status(429));
    CHECK_FALSE(is_retryable_status(413));
    CHECK_FALSE(is_retryable_status(404));
    CHECK_FALSE(is_retryable_status(200));
}

TEST_CASE("the card goes to the server as JSON with YAML's types", "[submit]") {
    TempDir dir;
    const Json card = yaml_file_to_json(dir.write("card.yaml", "version: 1\nname: \"8\"\nratio: 0.5\nflag: true\n"
                                                               "empty: ~\nlist: [a, 2]\nnested: {k: v}\n"));
    CHECK(card.dump(false) == R"({"empty":null,"flag":true,"list":["a",2],"name":"8","nested":{"k":"v"},"ratio":0.5,"version":1})");
    CHECK(exit_code_of([&] { yaml_file_to_json(dir.write("bad.yaml", "a: [\n")); }) == k_exit_usage);
}

TEST_CASE("post_multipart sends exactly Content-Length bytes with every part", "[submit]") {
    TempDir dir;
    const fs::path file = dir.write("run-x.tar.zst", std::string("\0\x01payload\r\n--not-a-boundary", 27));
    OneShotServer server(reply(200, R"({"upload_id":"u-7"})"));
    std::uint64_t last = 0;
    std::uint64_t total = 0;
    PostOptions options;
    options.progress = [&](std::uint64_t sent, std::uint64_t all) {
        CHECK(sent > last);
        last = sent;
        total = all;
    };
    const HttpResponse response = post_multipart(join_url(parse_url(server.url()), "/api/upload"), {{"group_name", "lab", ""}},
                                                 {{"files", file, ""}}, options);
    CHECK(response.status == 200);
    CHECK(upload_id_of(response.body) == "u-7");
    CHECK(server.head.rfind("POST /api/upload HTTP/1.1\r\n", 0) == 0);
    CHECK(server.body.size() == total);
    CHECK(last == total);
    CHECK(server.body.find("name=\"group_name\"\r\n\r\nlab\r\n") != std::string::npos);
    CHECK(server.body.find("name=\"files\"; filename=\"run-x.tar.zst\"") != std::string::npos);
    CHECK(server.body.find(std::string("\0\x01payload\r\n--not-a-boundary\r\n", 29)) != std::string::npos);
}

TEST_CASE("a bearer token is sent as Authorization and never shown", "[submit]") {
    TempDir dir;
    const fs::path file = dir.write("b.tar.zst", "x");
    PostOptions options;
    options.bearer_token = "tok-SECRET-42";
    {
        OneShotServer server(reply(200, "{}"));
        CHECK(post_multipart(parse_url(server.url()), {}, {{"files", file, ""}}, options).status == 200);
        CHECK(server.head.find("\r\nAuthorization: Bearer tok-SECRET-42\r\n") != std::string::npos);
    }
    // In clear text off this machine: refused before connecting, and the token is not quoted.
    try {
        post_multipart(parse_url("http://192.0.2.1:9/"), {}, {{"files", file, ""}}, options);
        FAIL("token sent over http");
    } catch (const HarnessError& e) {
        CHECK(e.code() == k_exit_usage);
        CHECK(std::string(e.what()).find("tok-SECRET-42") == std::string::npos);
    }
    // Through a proxy over http the proxy reads it all: it and the server must both be loopback.
    for (const auto& [target, proxy, hop] : std::vector<std::tuple<std::string, std::string, std::string>>{
             {"http://localhost:8000/", "http://proxy.site:3128", "proxy proxy.site:3128"},
             {"http://127.0.0.1:8000/", "http://192.0.2.7:3128", "proxy 192.0.2.7:3128"},
             {"http://up.example/", "http://127.0.0.1:3128", "to up.example"}}) {
        INFO(target << " via " << proxy);
        options.proxy = parse_url(proxy);
        try {
            post_multipart(parse_url(target), {}, {{"files", file, ""}}, options);
            FAIL("token sent through a proxy in clear text");
        } catch (const HarnessError& e) {
            CHECK(e.code() == k_exit_usage);
            CHECK(std::string(e.what()).find(hop) != std::string::npos);
            CHECK(std::string(e.what()).find("tok-SECRET-42") == std::string::npos);
        }
    }
    {
        // A proxy on this machine to a server on it: allowed (the stand-in proxy answers itself).
        OneShotServer proxy(reply(200, "{}"));
        options.proxy = parse_url(proxy.url());
        CHECK(post_multipart(parse_url("http://localhost:8000/api/upload"), {}, {{"files", file, ""}}, options).status == 200);
        CHECK(proxy.head.rfind("POST http://localhost:8000/api/upload HTTP/1.1\r\n", 0) == 0);
        CHECK(proxy.head.find("\r\nAuthorization: Bearer tok-SECRET-42\r\n") != std::string::npos);
    }
    options.proxy.reset();
    options.bearer_token = "two words";
    CHECK(exit_code_of([&] {
              post_multipart(parse_url("https://127.0.0.1:9/"), {}, {{"files", file, ""}}, options);
          }) == k_exit_usage);
}

TEST_CASE("post_multipart returns error statuses and reports transport failures", "[submit]") {
    TempDir dir;
    const fs::path file = dir.write("b.tar.zst", "x");
    SECTION("a 413 is an answer, not an exception") {
        OneShotServer server(reply(413, R"({"error":"too large"})"));
        CHECK(post_multipart(parse_url(server.url()), {}, {{"files", file, ""}}).status == 413);
    }
    SECTION("a server closing without answering is a transport error") {
        OneShotServer server("");
        CHECK_THROWS_AS(post_multipart(parse_url(server.url()), {}, {{"files", file, ""}}), HttpTransportError);
    }
    SECTION("a body cut short of its Content-Length is an answer marked truncated") {
        OneShotServer server("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"upload_id\"");
        const HttpResponse response = post_multipart(parse_url(server.url()), {}, {{"files", file, ""}});
        CHECK(response.status == 200);
        CHECK(response.body == "{\"upload_id\"");
        CHECK(response.truncated == "the answer \"HTTP/1.1 200 OK\" was cut off: 12 of the 100 body bytes its Content-Length "
                                    "announced came");
    }
    SECTION("a head cut off names the status line that came") {
        OneShotServer server("HTTP/1.1 200 OK\r\nContent-Ty");
        try {
            post_multipart(parse_url(server.url()), {}, {{"files", file, ""}});
            FAIL("a cut head was taken as an answer");
        } catch (const HttpTransportError& e) {
            CHECK(e.request_delivered());
            CHECK_THAT(std::string(e.what()),
                       Catch::Matches(".* sent only \"HTTP/1.1 200 OK\" of its answer's head, then closed the connection"));
        }
    }
    SECTION("a port nobody listens on is a transport error") {
        std::string url;
        {
            net::io_context ioc;
            tcp::acceptor closed(ioc, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
            url = "http://127.0.0.1:" + std::to_string(closed.local_endpoint().port());
        }
        CHECK_THROWS_AS(post_multipart(parse_url(url), {}, {{"files", file, ""}}), HttpTransportError);
    }
}

TEST_CASE("submit refuses unusable input before verifying or sending", "[submit]") {
    TempDir dir;
    SubmitOptions options;
    options.url = "http://127.0.0.1:1";
    CHECK(exit_code_of([&] { submit_bundle(dir.path() / "missing.tar.zst", options); }) == k_exit_usage);
    CHECK(exit_code_of([&] { submit_bundle(dir.path(), options); }) == k_exit_usage);
    CHECK(exit_code_of([&] { submit_bundle(dir.write("run.tar.gz", "x"), options); }) == k_exit_usage);
    options.url = "ftp://ccl-bench.example";
    CHECK(exit_code_of([&] { submit_bundle(dir.write("run.tar.zst", "x"), options); }) == k_exit_usage);
    // Not a zstd archive at all: verify's input error, and nobody listens on port 1 anyway.
    options.url = "http://127.0.0.1:1";
    CHECK(exit_code_of([&] { submit_bundle(dir.path() / "run.tar.zst", options); }) == k_exit_usage);
}
