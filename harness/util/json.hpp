#pragma once
// A small JSON value for the records the harness writes (plan.json, run.json...). Objects keep
// their keys sorted so that the same value always serializes to the same bytes.
#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace harness {

class Json {
public:
    using Object = std::map<std::string, Json>;
    using Array = std::vector<Json>;

    Json() : m_value(nullptr) {}
    Json(std::nullptr_t) : m_value(nullptr) {}
    Json(bool value) : m_value(value) {}
    Json(int value) : m_value(static_cast<std::int64_t>(value)) {}
    Json(long value) : m_value(static_cast<std::int64_t>(value)) {}
    Json(long long value) : m_value(static_cast<std::int64_t>(value)) {}
    Json(double value) : m_value(value) {}
    Json(const char* value) : m_value(std::string(value)) {}
    Json(std::string value) : m_value(std::move(value)) {}
    Json(Array value) : m_value(std::move(value)) {}
    Json(Object value) : m_value(std::move(value)) {}

    static Json object() { return Json(Object{}); }
    static Json array() { return Json(Array{}); }

    /// Object member access; turns a null into an object.
    Json& operator[](const std::string& key);
    void push_back(Json value);

    /// Parses a JSON document (simdjson). Throws std::runtime_error saying what is wrong and
    /// where (byte offset when simdjson knows it); callers add the file name.
    static Json parse(const std::string& text);

    bool is_null() const { return std::holds_alternative<std::nullptr_t>(m_value); }
    bool is_bool() const { return std::holds_alternative<bool>(m_value); }
    bool is_int() const { return std::holds_alternative<std::int64_t>(m_value); }
    bool is_number() const { return is_int() || std::holds_alternative<double>(m_value); }
    bool is_string() const { return std::holds_alternative<std::string>(m_value); }
    bool is_array() const { return std::holds_alternative<Array>(m_value); }
    bool is_object() const { return std::holds_alternative<Object>(m_value); }
    /// Typed reads; each throws std::bad_variant_access on the wrong type, so check first.
    bool as_bool() const { return std::get<bool>(m_value); }
    std::int64_t as_int() const { return std::get<std::int64_t>(m_value); }
    double as_double() const;
    const std::string& as_string() const { return std::get<std::string>(m_value); }
    const Array& as_array() const { return std::get<Array>(m_value); }
    const Object& as_object() const { return std::get<Object>(m_value); }
    /// The member `key` of an object, or nullptr when absent or when this is not an object.
    const Json* find(const std::string& key) const;
    /// The string member `key`, or `fallback` when absent or not a string.
    std::string string_or(const std::string& key, const std::string& fallback = "") const;
    /// The boolean member `key`, or `fallback` when absent or not a boolean.
    bool bool_or(const std::string& key, bool fallback = false) const;

    /// Two-space indented, sorted keys, trailing newline at top level when `pretty`.
    std::string dump(bool pretty = true) const;

private:
    void write(std::string& out, bool pretty, int depth) const;

    std::variant<std::nullptr_t, bool, std::int64_t, double, std::string, Array, Object> m_value;
};

Json json_string_array(const std::vector<std::string>& values);

/// The text, or null when it is empty: how the records write a value they do not have.
Json string_or_null(const std::string& text);

/// Follows raw JSON text one character at a time, so that a scan for brackets can skip what is
/// inside strings (escaped quotes included) without parsing.
struct JsonStringState {
    bool in_string = false;
    bool escaped = false;

    /// True when `c` belongs to a string's body or is its closing quote: not structural. An
    /// opening quote returns false (the caller may note it) and starts the string.
    bool consumed(char c) {
        if (!in_string) {
            in_string = c == '"';
            return false;
        }
        if (escaped) {
            escaped = false;
        } else if (c == '\\') {
            escaped = true;
        } else if (c == '"') {
            in_string = false;
        }
        return true;
    }
};

} // namespace harness
