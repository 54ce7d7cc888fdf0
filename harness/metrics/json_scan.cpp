#include "metrics/json_scan.hpp"

#include "util/limits.hpp"

#include <algorithm>
#include <charconv>
#include <string>
#include <vector>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace harness::metrics::json_scan {

namespace {

const char* too_deep() {
    static const std::string message = "values nested deeper than the limit of " +
                                       std::to_string(input_limit(InputLimit::nesting_depth)) + " levels";
    return message.c_str();
}

char at(const Cursor& c, const char* q) {
    if (q >= c.end) {
        throw NeedMore{};
    }
    return *q;
}

bool is_digit(char ch) { return ch >= '0' && ch <= '9'; }

void scan_literal(Cursor& c, std::string_view literal) {
    for (std::size_t k = 0; k < literal.size(); ++k) {
        if (at(c, c.p + k) != literal[k]) {
            throw SyntaxError{c.p, "expected a value"};
        }
    }
    c.p += literal.size();
}

int hex_value(char ch) {
    if (ch >= '0' && ch <= '9') {
        return ch - '0';
    }
    if (ch >= 'a' && ch <= 'f') {
        return ch - 'a' + 10;
    }
    if (ch >= 'A' && ch <= 'F') {
        return ch - 'A' + 10;
    }
    return -1;
}

bool read_hex4(std::string_view raw, std::size_t at_index, unsigned& out) {
    if (at_index + 4 > raw.size()) {
        return false;
    }
    out = 0;
    for (std::size_t k = 0; k < 4; ++k) {
        const int v = hex_value(raw[at_index + k]);
        if (v < 0) {
            return false;
        }
        out = out * 16 + static_cast<unsigned>(v);
    }
    return true;
}

void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

/// The brackets skip_value has open: a fixed array first, a vector past it.
class OpenStack {
public:
    bool empty() const { return m_size == 0; }
    std::size_t size() const { return m_size; }
    char back() const { return m_size <= k_inline ? m_inline[m_size - 1] : m_more.back(); }
    void push_back(char bracket) {
        if (m_size < k_inline) {
            m_inline[m_size] = bracket;
        } else {
            m_more.push_back(bracket);
        }
        ++m_size;
    }
    void pop_back() {
        if (m_size > k_inline) {
            m_more.pop_back();
        }
        --m_size;
    }

private:
    static constexpr std::size_t k_inline = 32;
    char m_inline[k_inline] = {};
    std::vector<char> m_more;
    std::size_t m_size = 0;
};

} // namespace

std::size_t decode_string(std::string_view raw, std::string& out) {
    out.clear();
    out.reserve(raw.size());
    for (std::size_t k = 0; k < raw.size(); ++k) {
        if (raw[k] != '\\') {
            out += raw[k];
            continue;
        }
        const std::size_t escape = k;
        if (++k >= raw.size()) {
            return escape;
        }
        switch (raw[k]) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
            unsigned cp = 0;
            if (!read_hex4(raw, k + 1, cp)) {
                return escape;
            }
            k += 4;
            unsigned low = 0;
            // A high surrogate followed by a low one is one code point; a lone one stays as
            // Python keeps it (encoded on its own) rather than failing the whole trace.
            if (cp >= 0xD800 && cp < 0xDC00 && k + 2 < raw.size() && raw[k + 1] == '\\' && raw[k + 2] == 'u' &&
                read_hex4(raw, k + 3, low) && low >= 0xDC00 && low < 0xE000) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                k += 6;
            }
            append_utf8(out, cp);
            break;
        }
        default: return escape;
        }
    }
    return std::string_view::npos;
}

namespace {

/// The common number ("1700000000005.000", "12", "-3.5") with no bound check per character, when
/// the buffer holds more than any such token; anything else (an exponent, a literal, an error,
/// a very long token) returns nullptr and takes the checked path.
const char* scan_plain_number(const char* p, const char* end) {
    constexpr std::ptrdiff_t k_longest = 40;
    if (end - p <= k_longest) {
        return nullptr;
    }
    const char* limit = p + k_longest;
    if (*p == '-') {
        ++p;
    }
    if (*p == '0') {
        ++p;
    } else if (is_digit(*p)) {
        while (p < limit && is_digit(*p)) {
            ++p;
        }
    } else {
        return nullptr;
    }
    if (*p == '.') {
        ++p;
        if (!is_digit(*p)) {
            return nullptr;
        }
        while (p < limit && is_digit(*p)) {
            ++p;
        }
    }
    return p < limit && *p != 'e' && *p != 'E' ? p : nullptr;
}

} // namespace

std::string_view scan_number(Cursor& c) {
    if (const char* after = scan_plain_number(c.p, c.end)) {
        const std::string_view token(c.p, static_cast<std::size_t>(after - c.p));
        c.p = after;
        return token;
    }
    const char* start = c.p;
    const char* q = c.p;
    if (at(c, q) == '-') {
        ++q;
    }
    if (at(c, q) == 'I' || (q == start && at(c, q) == 'N')) {
        Cursor literal{q, c.end};
        scan_literal(literal, *q == 'I' ? std::string_view("Infinity") : std::string_view("NaN"));
        c.p = literal.p;
        return std::string_view(start, static_cast<std::size_t>(c.p - start));
    }
    if (at(c, q) == '0') {
        ++q;
    } else if (is_digit(at(c, q))) {
        while (is_digit(at(c, q))) {
            ++q;
        }
    } else {
        throw SyntaxError{start, "expected a value"};
    }
    if (at(c, q) == '.') {
        ++q;
        if (!is_digit(at(c, q))) {
            throw SyntaxError{q, "expected a digit after the decimal point"};
        }
        while (is_digit(at(c, q))) {
            ++q;
        }
    }
    if (at(c, q) == 'e' || at(c, q) == 'E') {
        ++q;
        if (at(c, q) == '+' || at(c, q) == '-') {
            ++q;
        }
        if (!is_digit(at(c, q))) {
            throw SyntaxError{q, "expected a digit in the exponent"};
        }
        while (is_digit(at(c, q))) {
            ++q;
        }
    }
    c.p = q;
    return std::string_view(start, static_cast<std::size_t>(q - start));
}

bool to_double(std::string_view token, double& out) {
    // Clinger's fast path: a mantissa up to 2^53 and a power of ten up to 22 are exact in a
    // double, so one IEEE division is correctly rounded, the same double from_chars gives. Trace
    // timestamps ("1700000000005.000") nearly always qualify; the rest take from_chars.
    constexpr std::uint64_t k_exact_integer = std::uint64_t{1} << 53;
    static constexpr double k_pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                         1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    const char* p = token.data();
    const char* last = p + token.size();
    const bool negative = p < last && *p == '-';
    p += negative ? 1 : 0;
    std::uint64_t mantissa = 0;
    int digits = 0;
    int fraction = 0;
    bool dot = false;
    for (; p < last; ++p) {
        const char ch = *p;
        if (ch >= '0' && ch <= '9') {
            mantissa = mantissa * 10 + static_cast<std::uint64_t>(ch - '0');
            digits += mantissa != 0 ? 1 : 0;
            fraction += dot ? 1 : 0;
            if (digits > 19) {
                break; // before the mantissa could overflow; from_chars takes it
            }
        } else if (ch == '.' && !dot) {
            dot = true;
        } else {
            break;
        }
    }
    if (p == last && mantissa <= k_exact_integer && fraction <= 22 && p != token.data() + (negative ? 1 : 0)) {
        const double value = static_cast<double>(mantissa) / k_pow10[fraction];
        out = negative ? -value : value;
        return true;
    }
    const auto result = std::from_chars(token.data(), last, out);
    return result.ec == std::errc() && result.ptr == last && std::isfinite(out);
}

void skip_value(Cursor& c, int depth) {
    // An explicit stack of the open brackets rather than recursion: a hostile trace nested
    // 200,000 deep costs a refusal, never the call stack.
    // The depth limit cannot be raised (util/limits), so it is read once; an event's values are
    // shallow, so the first levels live on the stack and only deep ones allocate.
    static const auto max_depth = static_cast<std::size_t>(input_limit(InputLimit::nesting_depth));
    const auto base = static_cast<std::size_t>(std::max(depth, 0));
    OpenStack open;
    while (true) {
        // At the start of a value.
        const char first = peek_token(c);
        bool closed = false;
        switch (first) {
        case '"': scan_string(c); break;
        case 't': scan_literal(c, "true"); break;
        case 'f': scan_literal(c, "false"); break;
        case 'n': scan_literal(c, "null"); break;
        case '{':
        case '[':
            if (base + open.size() >= max_depth) {
                throw SyntaxError{c.p, too_deep()};
            }
            ++c.p;
            if (peek_token(c) == (first == '{' ? '}' : ']')) {
                ++c.p;
                break;
            }
            open.push_back(first);
            if (first == '{') {
                scan_string(c);
                expect(c, ':', "expected ':' after an object key");
            }
            continue;
        default: scan_number(c); break;
        }
        // After a value: close what ends here, or move on to the next member or item.
        while (!closed) {
            if (open.empty()) {
                return;
            }
            const char next = peek_token(c);
            ++c.p;
            const char kind = open.back();
            if (next == (kind == '{' ? '}' : ']')) {
                open.pop_back();
                continue;
            }
            if (next != ',') {
                throw SyntaxError{c.p - 1, kind == '{' ? "expected ',' or '}' in an object" : "expected ',' or ']' in an array"};
            }
            if (kind == '{') {
                peek_token(c);
                scan_string(c);
                expect(c, ':', "expected ':' after an object key");
            }
            closed = true;
        }
    }
}

} // namespace harness::metrics::json_scan
