// URLs and the proxy the environment names for one, as curl reads them (http.hpp declares them):
// what the upload client needs to know before it opens a connection.
#include "util/error.hpp"
#include "util/http.hpp"
#include "util/quote.hpp"
#include "util/strings.hpp"

#include <boost/asio/ip/address.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <utility>

namespace harness {

namespace net = boost::asio;

namespace {

// RFC 3986's scheme: a letter, then letters, digits, '+', '-' or '.'. Anything else before "://"
// is no scheme, and is never quoted back as one (it may be part of a password).
bool is_scheme(const std::string& text) {
    return !text.empty() && std::isalpha(static_cast<unsigned char>(text.front())) != 0 &&
           std::all_of(text.begin(), text.end(),
                       [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '+' || c == '-' || c == '.'; });
}

// Where the authority starts (after "scheme://", else at 0) and where user:password@ ends (the
// '@'), npos when there is none. The last '@' before the query counts, not only one before
// the first '/': a password holding '/' must not be printed in part.
std::pair<std::size_t, std::size_t> userinfo_span(const std::string& text) {
    const std::size_t separator = text.find("://");
    const std::size_t start = separator != std::string::npos && is_scheme(text.substr(0, separator)) ? separator + 3 : 0;
    const std::size_t end = std::min(text.find_first_of("?#", start), text.size());
    const std::size_t at = end == start ? std::string::npos : text.rfind('@', end - 1);
    return {start, at == std::string::npos || at < start ? std::string::npos : at};
}

} // namespace

std::string url_without_userinfo(const std::string& text) {
    const auto [start, at] = userinfo_span(text);
    return at == std::string::npos ? text : text.substr(0, start) + "***" + text.substr(at);
}

Url parse_url(const std::string& text) {
    // Every message quotes `shown`: a URL's user:password@ is never printed.
    const std::string shown = enquote(url_without_userinfo(text));
    const std::size_t colon = text.find("://");
    if (colon == std::string::npos || !is_scheme(text.substr(0, colon))) {
        throw input_error(fmt::format("{}: not a URL (expected http[s]://HOST[:PORT][/PATH])", shown));
    }
    Url url;
    url.scheme = to_lower(text.substr(0, colon));
    if (url.scheme != "http" && url.scheme != "https") {
        throw input_error(fmt::format("{}: unsupported scheme {} (expected http:// or https://)", shown, enquote(url.scheme)));
    }
    if (userinfo_span(text).second != std::string::npos) {
        // Credentials in a URL end up in logs and shell history: refuse rather than send them.
        throw input_error(fmt::format("{}: user:password@ in the URL is not supported (an @ in the path is written %40)", shown));
    }
    const std::string rest = text.substr(colon + 3);
    const std::size_t slash = rest.find('/');
    std::string authority = rest.substr(0, slash);
    url.target = slash == std::string::npos ? "/" : rest.substr(slash);
    url.port = url.tls() ? "443" : "80";
    const std::size_t port_colon = authority.rfind(':');
    if (port_colon != std::string::npos && authority.find(']', port_colon) == std::string::npos) {
        url.port = authority.substr(port_colon + 1);
        authority.resize(port_colon);
        const bool digits = !url.port.empty() && url.port.size() <= 5 && url.port.find_first_not_of("0123456789") == std::string::npos;
        if (!digits || std::stoi(url.port) < 1 || std::stoi(url.port) > 65535) {
            throw input_error(fmt::format("{}: bad port {}", shown, enquote(url.port)));
        }
    }
    if (authority.size() > 2 && authority.front() == '[' && authority.back() == ']') {
        authority = authority.substr(1, authority.size() - 2);
    }
    if (authority.empty()) {
        throw input_error(fmt::format("{}: no host in the URL", shown));
    }
    if (url.target.find_first_of(" \r\n\t") != std::string::npos) {
        throw input_error(fmt::format("{}: the path holds whitespace", shown));
    }
    url.host = authority;
    return url;
}

std::string Url::text() const {
    const std::string shown_host = host.find(':') != std::string::npos ? "[" + host + "]" : host;
    return fmt::format("{}://{}:{}{}", scheme, shown_host, port, target);
}

bool is_loopback_host(const std::string& host) {
    if (to_lower(host) == "localhost") {
        return true;
    }
    boost::system::error_code ec;
    const net::ip::address address = net::ip::make_address(host, ec);
    return !ec && address.is_loopback();
}

std::optional<std::string> process_env(const std::string& name) {
    const char* value = std::getenv(name.c_str());
    return value == nullptr ? std::nullopt : std::optional<std::string>(value);
}

bool no_proxy_exempts(const std::string& no_proxy, const std::string& host) {
    const std::string wanted = to_lower(host);
    std::string entry;
    auto matches = [&wanted](std::string item) {
        if (item == "*") {
            return true;
        }
        if (!item.empty() && item.front() == '[') {
            item = item.substr(1, item.find(']') == std::string::npos ? std::string::npos : item.find(']') - 1);
        } else if (std::count(item.begin(), item.end(), ':') == 1) {
            item.resize(item.find(':'));
        }
        while (!item.empty() && item.front() == '.') {
            item.erase(0, 1);
        }
        if (item.empty()) {
            return false;
        }
        return wanted == item || (wanted.size() > item.size() && ends_with(wanted, "." + item));
    };
    for (const char c : no_proxy + ",") {
        if (c == ',' || c == ' ' || c == '\t') {
            if (matches(to_lower(entry))) {
                return true;
            }
            entry.clear();
        } else {
            entry += c;
        }
    }
    return false;
}

// As curl: a loopback target still goes through http_proxy unless no_proxy names it (Go's and
// .NET's clients skip the proxy for localhost, curl does not). post_multipart keeps a token
// from crossing such a proxy in clear text.
std::optional<Url> proxy_from_environment(const Url& url, const EnvLookup& env) {
    for (const char* name : {"no_proxy", "NO_PROXY"}) {
        if (const auto value = env(name); value && no_proxy_exempts(*value, url.host)) {
            return std::nullopt;
        }
    }
    const std::vector<std::string> names = url.tls() ? std::vector<std::string>{"https_proxy", "HTTPS_PROXY"}
                                                     : std::vector<std::string>{"http_proxy"};
    for (const std::string& name : names) {
        const auto value = env(name);
        if (!value || trim(*value).empty()) {
            continue;
        }
        // The value is never quoted back: proxy URLs often carry a password.
        std::string text = trim(*value);
        if (text.find("://") == std::string::npos) {
            text = "http://" + text;
        }
        const std::string authority = text.substr(text.find("://") + 3);
        if (authority.substr(0, authority.find('/')).find('@') != std::string::npos) {
            throw input_error(fmt::format("${}: a proxy with user:password@ is not supported", name));
        }
        Url proxy;
        try {
            proxy = parse_url(text);
        } catch (const HarnessError&) {
            throw input_error(fmt::format("${}: not a proxy URL (expected http://HOST[:PORT])", name));
        }
        if (proxy.tls()) {
            throw input_error(fmt::format("${}: an https:// proxy is not supported; use http://", name));
        }
        const std::string host_part = authority.substr(0, authority.find('/'));
        const std::size_t bracket = host_part.rfind(']');
        if (host_part.find(':', bracket == std::string::npos ? 0 : bracket) == std::string::npos) {
            proxy.port = "1080"; // curl's default proxy port
        }
        return proxy;
    }
    return std::nullopt;
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

} // namespace harness
