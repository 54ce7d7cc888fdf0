#pragma once
// A JSON tokenizer over the bytes in hand, for reading trace events one at a time. It checks the
// grammar of everything it passes over (a damaged trace is an error, not a guess) but builds no
// tree: the reader keeps the few fields metrics need and skips the rest in place.
#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace harness::metrics::json_scan {

/// Thrown when a token runs past the end of the bytes in hand: the reader fetches more and
/// parses the unit (one event, one top-level member) again from its start.
struct NeedMore {};

/// Malformed JSON at `at` (a pointer into the buffer being scanned).
struct SyntaxError {
    const char* at;
    const char* what;
};

/// The bytes in hand, [p, end). The byte at `end` must be readable and not white space (a NUL
/// sentinel, as std::string has): white space is skipped without a bound check per byte.
struct Cursor {
    const char* p;
    const char* end;
};

inline bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

/// Skips whitespace and returns the next character without consuming it.
inline char peek_token(Cursor& c) {
    const char* p = c.p;
    while (is_ws(*p)) { // stops at the sentinel at the latest
        ++p;
    }
    c.p = p;
    if (p >= c.end) {
        throw NeedMore{};
    }
    return *p;
}

inline void expect(Cursor& c, char wanted, const char* what) {
    if (peek_token(c) != wanted) {
        throw SyntaxError{c.p, what};
    }
    ++c.p;
}

struct StringToken {
    std::string_view raw; ///< between the quotes, escapes still in place
    bool escaped = false;
};

namespace detail {

/// The first '"' or '\\' in [p, end), or end: sixteen bytes at a time where SSE2 is there (every
/// x86-64), because trace strings are mostly short keys and one library call per string costs
/// more than the scan.
inline const char* find_quote_or_backslash(const char* p, const char* end) {
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    for (; end - p >= 16; p += 16) {
        const __m128i block = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
        const int mask = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(block, quote), _mm_cmpeq_epi8(block, backslash)));
        if (mask != 0) {
            return p + __builtin_ctz(static_cast<unsigned>(mask));
        }
    }
#endif
    for (; p < end; ++p) {
        if (*p == '"' || *p == '\\') {
            return p;
        }
    }
    return end;
}

} // namespace detail

/// At an opening quote: returns the string and leaves the cursor after the closing quote.
inline StringToken scan_string(Cursor& c) {
    if (c.p >= c.end) {
        throw NeedMore{};
    }
    if (*c.p != '"') {
        throw SyntaxError{c.p, "expected a string"};
    }
    const char* start = c.p + 1;
    const char* q = detail::find_quote_or_backslash(start, c.end);
    if (q == c.end) {
        throw NeedMore{};
    }
    if (*q == '"') {
        c.p = q + 1;
        return StringToken{std::string_view(start, static_cast<std::size_t>(q - start)), false};
    }
    // An escape: skip each backslash with the character it escapes, to the unescaped quote.
    while (true) {
        if (*q == '\\') {
            q += 2;
            if (q >= c.end) {
                throw NeedMore{};
            }
        } else {
            c.p = q + 1;
            return StringToken{std::string_view(start, static_cast<std::size_t>(q - start)), true};
        }
        q = detail::find_quote_or_backslash(q, c.end);
        if (q == c.end) {
            throw NeedMore{};
        }
    }
}

/// Decodes the escapes of a JSON string (\uXXXX to UTF-8, surrogate pairs joined). Returns the
/// offset within `raw` of a bad escape, or npos when the string is good.
std::size_t decode_string(std::string_view raw, std::string& out);

/// The characters of a number token, checked against the JSON grammar (plus NaN, Infinity and
/// -Infinity, which Python's json module also reads). The cursor is left after it.
std::string_view scan_number(Cursor& c);

/// Converts a token from scan_number; false for the non-finite ones.
bool to_double(std::string_view token, double& out);

/// Skips one value of any type, checking its grammar, without recursion. Nesting past
/// util/limits.hpp's nesting_depth (counting `depth` levels already open) is a SyntaxError.
void skip_value(Cursor& c, int depth = 0);

} // namespace harness::metrics::json_scan
