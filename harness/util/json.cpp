#include "util/json.hpp"

#include "util/quote.hpp"

#include <fmt/format.h>
#include <simdjson.h>
#include <stdexcept>

namespace harness {

namespace {

Json from_element(simdjson::dom::element element) {
    switch (element.type()) {
    case simdjson::dom::element_type::ARRAY: {
        Json::Array array;
        const simdjson::dom::array items = element.get_array().value_unsafe();
        for (simdjson::dom::element item : items) {
            array.push_back(from_element(item));
        }
        return Json(std::move(array));
    }
    case simdjson::dom::element_type::OBJECT: {
        Json::Object object;
        const simdjson::dom::object fields = element.get_object().value_unsafe();
        for (auto field : fields) {
            object[std::string(field.key)] = from_element(field.value);
        }
        return Json(std::move(object));
    }
    case simdjson::dom::element_type::INT64: return Json(static_cast<long long>(element.get_int64().value_unsafe()));
    case simdjson::dom::element_type::UINT64: return Json(static_cast<double>(element.get_uint64().value_unsafe()));
    case simdjson::dom::element_type::DOUBLE: return Json(element.get_double().value_unsafe());
    case simdjson::dom::element_type::STRING: return Json(std::string(element.get_string().value_unsafe()));
    case simdjson::dom::element_type::BOOL: return Json(element.get_bool().value_unsafe());
    case simdjson::dom::element_type::NULL_VALUE: return Json();
    }
    return Json();
}

} // namespace

Json Json::parse(const std::string& text) {
    simdjson::dom::parser parser;
    simdjson::dom::element root;
    if (const auto error = parser.parse(text).get(root); error != simdjson::SUCCESS) {
        throw std::runtime_error(fmt::format("invalid JSON: {}", simdjson::error_message(error)));
    }
    return from_element(root);
}

double Json::as_double() const {
    if (is_int()) {
        return static_cast<double>(as_int());
    }
    return std::get<double>(m_value);
}

const Json* Json::find(const std::string& key) const {
    if (!is_object()) {
        return nullptr;
    }
    const auto& object = as_object();
    const auto it = object.find(key);
    return it == object.end() ? nullptr : &it->second;
}

std::string Json::string_or(const std::string& key, const std::string& fallback) const {
    const Json* value = find(key);
    return value != nullptr && value->is_string() ? value->as_string() : fallback;
}

bool Json::bool_or(const std::string& key, bool fallback) const {
    const Json* value = find(key);
    return value != nullptr && value->is_bool() ? value->as_bool() : fallback;
}

Json& Json::operator[](const std::string& key) {
    if (std::holds_alternative<std::nullptr_t>(m_value)) {
        m_value = Object{};
    }
    return std::get<Object>(m_value)[key];
}

void Json::push_back(Json value) {
    if (std::holds_alternative<std::nullptr_t>(m_value)) {
        m_value = Array{};
    }
    std::get<Array>(m_value).push_back(std::move(value));
}

std::string Json::dump(bool pretty) const {
    std::string out;
    write(out, pretty, 0);
    if (pretty) {
        out += '\n';
    }
    return out;
}

void Json::write(std::string& out, bool pretty, int depth) const {
    const auto newline = [&](int level) {
        if (pretty) {
            out += '\n';
            out.append(static_cast<std::size_t>(level) * 2, ' ');
        }
    };
    if (std::holds_alternative<std::nullptr_t>(m_value)) {
        out += "null";
    } else if (const auto* b = std::get_if<bool>(&m_value)) {
        out += *b ? "true" : "false";
    } else if (const auto* i = std::get_if<std::int64_t>(&m_value)) {
        out += std::to_string(*i);
    } else if (const auto* d = std::get_if<double>(&m_value)) {
        // Shortest round-trip form keeps output stable across runs and platforms.
        out += fmt::format("{}", *d);
    } else if (const auto* s = std::get_if<std::string>(&m_value)) {
        out += json_string(*s);
    } else if (const auto* a = std::get_if<Array>(&m_value)) {
        out += '[';
        for (std::size_t k = 0; k < a->size(); ++k) {
            if (k > 0) {
                out += ',';
            }
            newline(depth + 1);
            (*a)[k].write(out, pretty, depth + 1);
        }
        if (!a->empty()) {
            newline(depth);
        }
        out += ']';
    } else {
        const auto& o = std::get<Object>(m_value);
        out += '{';
        bool first = true;
        for (const auto& [key, value] : o) {
            if (!first) {
                out += ',';
            }
            first = false;
            newline(depth + 1);
            out += json_string(key);
            out += pretty ? ": " : ":";
            value.write(out, pretty, depth + 1);
        }
        if (!o.empty()) {
            newline(depth);
        }
        out += '}';
    }
}

Json json_string_array(const std::vector<std::string>& values) {
    Json::Array array;
    for (const auto& value : values) {
        array.emplace_back(value);
    }
    return Json(std::move(array));
}

Json string_or_null(const std::string& text) { return text.empty() ? Json() : Json(text); }

} // namespace harness
