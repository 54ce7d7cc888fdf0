#include "util/quote.hpp"

#include <cctype>
#include <fmt/format.h>

namespace harness {

bool is_safe_token(std::string_view value) {
    if (value.empty()) {
        return false;
    }
    for (const char c : value) {
        const auto u = static_cast<unsigned char>(c);
        if (!(std::isalnum(u) || c == '_' || c == '@' || c == '%' || c == '+' || c == '=' || c == ':' || c == ',' || c == '.' ||
              c == '/' || c == '-')) {
            return false;
        }
    }
    // A leading '=' or '%' is harmless, but a leading '-' could turn a value into an option
    // for some tools; those callers check for it themselves.
    return true;
}

std::string shell_quote(std::string_view value) {
    // Commas are safe to a shell, but shellcheck reads a bare comma in an array as a typo (SC2054).
    if (is_safe_token(value) && value.find(',') == std::string_view::npos) {
        return std::string(value);
    }
    // Text that looks like an expansion is double-quoted with the expansion characters escaped:
    // just as literal, and it keeps shellcheck from flagging "expression in single quotes".
    if (value.find_first_of("$`") != std::string_view::npos) {
        std::string out = "\"";
        for (const char c : value) {
            if (c == '\\' || c == '"' || c == '$' || c == '`') {
                out += '\\';
            }
            out += c;
        }
        return out + "\"";
    }
    std::string out = "'";
    for (const char c : value) {
        if (c == '\'') {
            out += "'\\''";
        } else {
            out += c;
        }
    }
    return out + "'";
}

bool is_plain_number_or_bool(std::string_view value) {
    if (value == "true" || value == "false") {
        return true;
    }
    std::size_t i = 0;
    if (i < value.size() && value[i] == '-') {
        ++i;
    }
    bool digits = false;
    bool dot = false;
    for (; i < value.size(); ++i) {
        const auto u = static_cast<unsigned char>(value[i]);
        if (std::isdigit(u)) {
            digits = true;
        } else if (value[i] == '.' && !dot && digits) {
            dot = true;
            digits = false; // a digit must follow the dot
        } else {
            return false;
        }
    }
    // A leading zero ("007") is a string in TOML, not a number.
    const std::string_view body = value.substr(value.substr(0, 1) == "-" ? 1 : 0);
    if (body.size() > 1 && body[0] == '0' && body[1] != '.') {
        return false;
    }
    return digits;
}

std::size_t utf8_sequence_length(std::string_view text, std::size_t at) {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
    const unsigned char lead = byte(at);
    if (lead < 0x80) {
        return 1;
    }
    std::size_t length = 0;
    unsigned char low = 0x80; // the second byte's range excludes overlong and surrogate forms
    unsigned char high = 0xbf;
    if (lead >= 0xc2 && lead <= 0xdf) {
        length = 2;
    } else if (lead >= 0xe0 && lead <= 0xef) {
        length = 3;
        low = lead == 0xe0 ? 0xa0 : 0x80;
        high = lead == 0xed ? 0x9f : 0xbf;
    } else if (lead >= 0xf0 && lead <= 0xf4) {
        length = 4;
        low = lead == 0xf0 ? 0x90 : 0x80;
        high = lead == 0xf4 ? 0x8f : 0xbf;
    } else {
        return 0;
    }
    if (at + length > text.size() || byte(at + 1) < low || byte(at + 1) > high) {
        return 0;
    }
    for (std::size_t k = 2; k < length; ++k) {
        if (byte(at + k) < 0x80 || byte(at + k) > 0xbf) {
            return 0;
        }
    }
    return length;
}

char32_t utf8_code_point(std::string_view text, std::size_t at, std::size_t length) {
    const auto lead = static_cast<unsigned char>(text[at]);
    if (length == 1) {
        return lead;
    }
    char32_t value = lead & (0xffu >> (length + 1));
    for (std::size_t k = 1; k < length; ++k) {
        value = (value << 6) | (static_cast<unsigned char>(text[at + k]) & 0x3fu);
    }
    return value;
}

namespace {

/// C0, DEL, C1, and the bidirectional overrides and isolates that reorder what follows them on
/// screen (the "Trojan Source" characters).
bool is_control_point(char32_t point) {
    return point < 0x20 || (point >= 0x7f && point <= 0x9f) || (point >= 0x202a && point <= 0x202e) ||
           (point >= 0x2066 && point <= 0x2069) || point == 0x2028 || point == 0x2029;
}

} // namespace

std::string json_string(std::string_view value) {
    std::string out = "\"";
    for (std::size_t at = 0; at < value.size();) {
        const char c = value[at];
        const std::size_t length = utf8_sequence_length(value, at);
        if (length == 0) {
            // JSON is UTF-8 (RFC 8259): a byte that is not is replaced, as Python's
            // errors="replace" does, so every document we write parses everywhere.
            out += "\\ufffd";
            ++at;
            continue;
        }
        switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\t': out += "\\t"; break;
        case '\r': out += "\\r"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default:
            if (const char32_t point = utf8_code_point(value, at, length); is_control_point(point)) {
                out += fmt::format("\\u{:04x}", static_cast<unsigned>(point));
            } else {
                out.append(value.substr(at, length));
            }
        }
        at += length;
    }
    return out + "\"";
}

std::string terminal_text(std::string_view text, bool multiline) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t at = 0; at < text.size();) {
        const char c = text[at];
        const std::size_t length = utf8_sequence_length(text, at);
        if (length == 0) {
            out += fmt::format("\\x{:02x}", static_cast<unsigned>(static_cast<unsigned char>(c)));
            ++at;
            continue;
        }
        const char32_t point = utf8_code_point(text, at, length);
        if (multiline && (c == '\n' || c == '\t')) {
            out += c;
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c == '\r') {
            out += "\\r";
        } else if (point <= 0xff && is_control_point(point)) {
            out += fmt::format("\\x{:02x}", static_cast<unsigned>(point));
        } else if (is_control_point(point)) {
            out += fmt::format("\\u{:04x}", static_cast<unsigned>(point));
        } else {
            out.append(text.substr(at, length));
        }
        at += length;
    }
    return out;
}

std::string toml_scalar(std::string_view value) {
    // TOML basic strings use the same escapes as JSON for everything we emit.
    return is_plain_number_or_bool(value) ? std::string(value) : json_string(value);
}

std::string json_scalar(std::string_view value) { return is_plain_number_or_bool(value) ? std::string(value) : json_string(value); }

} // namespace harness
