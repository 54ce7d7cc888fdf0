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

    /// Two-space indented, sorted keys, trailing newline at top level when `pretty`.
    std::string dump(bool pretty = true) const;

private:
    void write(std::string& out, bool pretty, int depth) const;

    std::variant<std::nullptr_t, bool, std::int64_t, double, std::string, Array, Object> m_value;
};

Json json_string_array(const std::vector<std::string>& values);

} // namespace harness
