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
        if (!(std::isalnum(u) || c == '_' || c == '@' || c == '%' || c == '+' || c == '=' ||
              c == ':' || c == ',' || c == '.' || c == '/' || c == '-')) {
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
            digits = false;  // a digit must follow the dot
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

std::string json_string(std::string_view value) {
    std::string out = "\"";
    for (const char c : value) {
        switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\t': out += "\\t"; break;
        case '\r': out += "\\r"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default:
            if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
                out += fmt::format("\\u{:04x}", static_cast<unsigned>(static_cast<unsigned char>(c)));
            } else {
                out += c;
            }
        }
    }
    return out + "\"";
}

std::string toml_scalar(std::string_view value) {
    // TOML basic strings use the same escapes as JSON for everything we emit.
    return is_plain_number_or_bool(value) ? std::string(value) : json_string(value);
}

std::string json_scalar(std::string_view value) {
    return is_plain_number_or_bool(value) ? std::string(value) : json_string(value);
}

} // namespace harness
