#include "card/pyyaml_reading.hpp"

#include "util/strings.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>
#include <iterator>
#include <optional>
#include <set>
#include <utility>

namespace harness {

namespace {

constexpr std::string_view k_digits = "0123456789";
constexpr std::string_view k_digits_ = "0123456789_";

/// A cursor over a plain scalar, for the resolvers' regular expressions written out by hand.
class Cursor {
public:
    explicit Cursor(std::string_view text) : m_text(text) {}
    bool done() const { return m_at == m_text.size(); }
    bool take(char c) {
        if (done() || m_text[m_at] != c) {
            return false;
        }
        ++m_at;
        return true;
    }
    bool take_any(std::string_view set) {
        if (done() || set.find(m_text[m_at]) == std::string_view::npos) {
            return false;
        }
        ++m_at;
        return true;
    }
    bool take_word(std::string_view word) {
        if (m_text.substr(m_at, word.size()) != word) {
            return false;
        }
        m_at += word.size();
        return true;
    }
    std::size_t take_while(std::string_view set, std::size_t most = std::string_view::npos) {
        const std::size_t from = m_at;
        while (m_at - from < most && take_any(set)) {
        }
        return m_at - from;
    }
    std::string_view since(std::size_t from) const { return m_text.substr(from, m_at - from); }
    std::size_t at() const { return m_at; }

private:
    std::string_view m_text;
    std::size_t m_at = 0;
};

/// `(?::[0-5]?[0-9])+`: one or more ":S" or ":SS" (the first of two digits 0-5).
bool take_sexagesimal_parts(Cursor& in) {
    std::size_t parts = 0;
    while (in.take(':')) {
        const std::size_t from = in.at();
        const std::size_t digits = in.take_while(k_digits, 2);
        if (digits == 0 || (digits == 2 && in.since(from)[0] > '5')) {
            return false;
        }
        ++parts;
    }
    return parts > 0;
}

/// `(?:[eE][-+][0-9]+)?`: YAML 1.1's exponent needs its sign, so `1.0e3` stays a string.
bool take_exponent(Cursor& in) { return !in.take_any("eE") || (in.take_any("-+") && in.take_while(k_digits) > 0); }

// resolver.py:170-175
bool is_yaml11_bool(std::string_view text) {
    static const std::set<std::string_view> words = {"yes",   "Yes",   "YES",   "no", "No", "NO", "true", "True", "TRUE",
                                                     "false", "False", "FALSE", "on", "On", "ON", "off",  "Off",  "OFF"};
    return words.count(text) != 0;
}

// resolver.py:177-184, alternative by alternative.
bool is_yaml11_float(std::string_view text) {
    const auto decimal = [&] {
        Cursor in(text);
        in.take_any("-+");
        return in.take_any(k_digits) && (in.take_while(k_digits_), in.take('.')) && (in.take_while(k_digits_), take_exponent(in)) &&
               in.done();
    };
    const auto fraction_only = [&] {
        Cursor in(text);
        return in.take('.') && in.take_any(k_digits) && (in.take_while(k_digits_), take_exponent(in)) && in.done();
    };
    const auto sexagesimal = [&] {
        Cursor in(text);
        in.take_any("-+");
        return in.take_any(k_digits) && (in.take_while(k_digits_), take_sexagesimal_parts(in)) && in.take('.') &&
               (in.take_while(k_digits_), in.done());
    };
    const auto infinity = [&] {
        Cursor in(text);
        in.take_any("-+");
        return in.take('.') && (in.take_word("inf") || in.take_word("Inf") || in.take_word("INF")) && in.done();
    };
    return decimal() || fraction_only() || sexagesimal() || infinity() || text == ".nan" || text == ".NaN" || text == ".NAN";
}

// resolver.py:186-193
bool is_yaml11_int(std::string_view text) {
    const auto prefixed = [&](std::string_view prefix, std::string_view body) {
        Cursor in(text);
        in.take_any("-+");
        return in.take_word(prefix) && in.take_while(body) > 0 && in.done();
    };
    const auto decimal = [&] {
        Cursor in(text);
        in.take_any("-+");
        return (in.take('0') || (in.take_any("123456789") && (in.take_while(k_digits_), true))) && in.done();
    };
    const auto sexagesimal = [&] {
        Cursor in(text);
        in.take_any("-+");
        return in.take_any("123456789") && (in.take_while(k_digits_), take_sexagesimal_parts(in)) && in.done();
    };
    return prefixed("0b", "01_") || prefixed("0", "01234567_") || decimal() || prefixed("0x", "0123456789abcdefABCDEF_") ||
           sexagesimal();
}

/// The fields of constructor.py:310-320's timestamp_regexp.
struct Timestamp {
    int year = 0, month = 0, day = 0;
    bool has_time = false;
    int hour = 0, minute = 0, second = 0;
    std::string fraction;
    bool has_tz = false;
    char tz_sign = 0; ///< '+', '-', or 0 for Z
    int tz_hour = 0, tz_minute = 0;
};

int number_of(std::string_view digits) {
    int value = 0;
    std::from_chars(digits.data(), digits.data() + digits.size(), value);
    return value;
}

/// `[0-9]` repeated `least` to `most` times, its value in `out`.
bool take_number(Cursor& in, std::size_t least, std::size_t most, int& out) {
    const std::size_t from = in.at();
    const std::size_t count = in.take_while(k_digits, most);
    out = number_of(in.since(from));
    return count >= least;
}

// resolver.py:207-214 (the first alternative: a date, two digits each; the second: a time
// follows, one or two digits for month, day and hour).
std::optional<Timestamp> yaml11_timestamp(std::string_view text) {
    Timestamp t;
    Cursor in(text);
    if (!take_number(in, 4, 4, t.year) || !in.take('-') || !take_number(in, 1, 2, t.month) || !in.take('-') ||
        !take_number(in, 1, 2, t.day)) {
        return std::nullopt;
    }
    if (in.done()) {
        return text.size() == 10 ? std::optional<Timestamp>(t) : std::nullopt;
    }
    t.has_time = true;
    if (!in.take_any("Tt") && in.take_while(" \t") == 0) {
        return std::nullopt;
    }
    if (!take_number(in, 1, 2, t.hour) || !in.take(':') || !take_number(in, 2, 2, t.minute) || !in.take(':') ||
        !take_number(in, 2, 2, t.second)) {
        return std::nullopt;
    }
    if (in.take('.')) {
        const std::size_t from = in.at();
        in.take_while(k_digits);
        t.fraction = std::string(in.since(from));
    }
    const std::size_t before_tz = in.at();
    in.take_while(" \t");
    if (in.take('Z')) {
        t.has_tz = true;
    } else if (in.take_any("-+")) {
        t.has_tz = true;
        t.tz_sign = text[in.at() - 1];
        if (!take_number(in, 1, 2, t.tz_hour) || (in.take(':') && !take_number(in, 2, 2, t.tz_minute))) {
            return std::nullopt;
        }
    } else if (in.at() != before_tz) {
        return std::nullopt;
    }
    return in.done() ? std::optional<Timestamp>(t) : std::nullopt;
}

int days_in_month(int year, int month) {
    static constexpr int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    return month == 2 && leap ? 29 : days[month - 1];
}

/// constructor.py:322-351: datetime.date or datetime.datetime, whose own checks refuse the rest.
PyYamlScalar construct_timestamp(const Timestamp& t) {
    PyYamlScalar out{PyYamlType::timestamp, "", ""};
    if (t.year < 1) {
        out.refusal = fmt::format("year {} is out of range", t.year);
    } else if (t.month < 1 || t.month > 12) {
        out.refusal = "month must be in 1..12";
    } else if (t.day < 1 || t.day > days_in_month(t.year, t.month)) {
        out.refusal = "day is out of range for month";
    } else if (t.has_time && t.hour > 23) {
        out.refusal = "hour must be in 0..23";
    } else if (t.has_time && t.minute > 59) {
        out.refusal = "minute must be in 0..59";
    } else if (t.has_time && t.second > 59) {
        out.refusal = "second must be in 0..59";
    } else if (t.tz_sign != 0 && t.tz_hour * 60 + t.tz_minute >= 24 * 60) {
        out.refusal = "offset must be a timedelta strictly between -timedelta(hours=24) and timedelta(hours=24)";
    }
    if (!out.refusal.empty()) {
        return out;
    }
    out.shown = fmt::format("{:04}-{:02}-{:02}", t.year, t.month, t.day);
    if (!t.has_time) {
        return out;
    }
    out.shown += fmt::format(" {:02}:{:02}:{:02}", t.hour, t.minute, t.second);
    const std::string fraction = t.fraction.substr(0, 6);
    if (!fraction.empty() && fraction.find_first_not_of('0') != std::string::npos) {
        out.shown += "." + fraction + std::string(6 - fraction.size(), '0');
    }
    if (t.has_tz) {
        const int minutes = t.tz_hour * 60 + t.tz_minute;
        out.shown += minutes == 0 ? "+00:00" : fmt::format("{}{:02}:{:02}", t.tz_sign == '-' ? '-' : '+', minutes / 60, minutes % 60);
    }
    return out;
}

/// `text` without '_' and its sign: constructor.py:239-245 and 272-278.
std::pair<bool, std::string> unsigned_digits(std::string_view text) {
    std::string value;
    std::remove_copy(text.begin(), text.end(), std::back_inserter(value), '_');
    const bool negative = !value.empty() && value.front() == '-';
    if (!value.empty() && (value.front() == '-' || value.front() == '+')) {
        value.erase(0, 1);
    }
    return {negative, value};
}

/// constructor.py:237-263. Python's integers have no bound; past 64 bits `shown` stays empty.
PyYamlScalar construct_int(std::string_view text) {
    PyYamlScalar out{PyYamlType::integer, "", ""};
    const auto [negative, value] = unsigned_digits(text);
    const auto in_base = [&](std::string_view digits, int base) -> std::optional<unsigned long long> {
        if (digits.empty()) {
            out.refusal = fmt::format("invalid literal for int() with base {}: ''", base);
            return std::nullopt;
        }
        unsigned long long result = 0;
        const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), result, base);
        return error == std::errc() && end == digits.data() + digits.size() ? std::optional(result) : std::nullopt;
    };
    std::optional<unsigned long long> magnitude;
    if (value == "0") {
        magnitude = 0;
    } else if (starts_with(value, "0b")) {
        magnitude = in_base(std::string_view(value).substr(2), 2);
    } else if (starts_with(value, "0x")) {
        magnitude = in_base(std::string_view(value).substr(2), 16);
    } else if (value.front() == '0') {
        magnitude = in_base(value, 8);
    } else if (value.find(':') != std::string::npos) {
        unsigned long long total = 0;
        bool fits = true;
        for (const std::string& part : split(value, ':')) {
            fits = fits && total <= (~0ULL - 59) / 60;
            total = total * 60 + static_cast<unsigned long long>(number_of(part));
        }
        magnitude = fits ? std::optional(total) : std::nullopt;
    } else {
        // Decimal: Python prints what was written, less its '+', '_' and a "-0"'s sign.
        out.shown = (negative && value != "0" ? "-" : "") + value;
        return out;
    }
    if (magnitude) {
        out.shown = (negative && *magnitude != 0 ? "-" : "") + std::to_string(*magnitude);
    }
    return out;
}

/// Python's repr() of a float (float_repr_style 'short'): the shortest digits that read back,
/// fixed notation for exponents -4..15, else d.ddde+XX.
std::string python_float_repr(double value) {
    if (std::isnan(value)) {
        return "nan";
    }
    if (std::isinf(value)) {
        return value < 0 ? "-inf" : "inf";
    }
    char buffer[64];
    const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, std::fabs(value), std::chars_format::scientific);
    const std::string_view scientific(buffer, static_cast<std::size_t>(end - buffer));
    const std::size_t e = scientific.find('e');
    std::string digits;
    std::remove_copy(scientific.begin(), scientific.begin() + static_cast<std::ptrdiff_t>(e), std::back_inserter(digits), '.');
    const int exponent = number_of(scientific.substr(e + 2)) * (scientific[e + 1] == '-' ? -1 : 1);
    const std::string sign = std::signbit(value) ? "-" : "";
    const int point = exponent + 1; // digits before the decimal point
    const int count = static_cast<int>(digits.size());
    if (point <= -4 || point > 16) {
        const std::string mantissa = count == 1 ? digits : digits.substr(0, 1) + "." + digits.substr(1);
        return fmt::format("{}{}e{}{:02}", sign, mantissa, exponent < 0 ? '-' : '+', std::abs(exponent));
    }
    if (point <= 0) {
        return sign + "0." + std::string(static_cast<std::size_t>(-point), '0') + digits;
    }
    if (point >= count) {
        return sign + digits + std::string(static_cast<std::size_t>(point - count), '0') + ".0";
    }
    return sign + digits.substr(0, static_cast<std::size_t>(point)) + "." + digits.substr(static_cast<std::size_t>(point));
}

/// constructor.py:270-290.
PyYamlScalar construct_float(std::string_view text) {
    auto [negative, value] = unsigned_digits(text);
    value = to_lower(value);
    double result = 0.0;
    if (value == ".inf") {
        result = HUGE_VAL;
    } else if (value == ".nan") {
        result = NAN;
    } else {
        std::vector<std::string> parts = split(value, ':');
        std::reverse(parts.begin(), parts.end());
        double base = 1;
        for (const std::string& part : parts) {
            result += std::strtod(part.c_str(), nullptr) * base;
            base *= 60;
        }
    }
    return {PyYamlType::floating, python_float_repr(negative && !std::isnan(result) ? -result : result), ""};
}

} // namespace

PyYamlScalar pyyaml_plain_scalar(std::string_view text) {
    // resolver.py:143-166 picks the resolvers listed for the first character, in the order they
    // were added; the patterns below never overlap, so the order does not matter here.
    if (text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL") { // resolver.py:200-205
        return {PyYamlType::null, "None", ""};
    }
    if (is_yaml11_bool(text)) {
        const bool value = text[0] == 'y' || text[0] == 'Y' || text[0] == 't' || text[0] == 'T' || text == "on" || text == "On" ||
                           text == "ON";
        return {PyYamlType::boolean, value ? "True" : "False", ""};
    }
    if (is_yaml11_float(text)) {
        return construct_float(text);
    }
    if (is_yaml11_int(text)) {
        return construct_int(text);
    }
    if (text == "<<") { // resolver.py:195-198
        return {PyYamlType::merge, "", ""};
    }
    if (const std::optional<Timestamp> timestamp = yaml11_timestamp(text)) {
        return construct_timestamp(*timestamp);
    }
    if (text == "=") { // resolver.py:216-219
        return {PyYamlType::value, "", ""};
    }
    return {PyYamlType::str, std::string(text), ""};
}

const char* pyyaml_type_name(PyYamlType type) {
    switch (type) {
    case PyYamlType::str: return "a string";
    case PyYamlType::boolean: return "a boolean";
    case PyYamlType::integer: return "an integer";
    case PyYamlType::floating: return "a float";
    case PyYamlType::null: return "None";
    case PyYamlType::timestamp: return "a date";
    case PyYamlType::merge: return "a merge key";
    case PyYamlType::value: return "the value tag";
    }
    return "a value";
}

} // namespace harness
