#include "trace/trace_normalize.hpp"

#include "util/error.hpp"
#include "util/quote.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>
#include <simdjson.h>

namespace harness {

namespace {

constexpr std::string_view k_step_prefix = "ProfilerStep#";

std::string minified(simdjson::dom::element element) { return simdjson::minify(element); }

/// One legacy autograd event as Kineto writes it: step labels shifted up by one, a "cat" added
/// where the event has none.
void append_legacy_event(simdjson::dom::object fields, std::string& out, NormalizeResult& result) {
    out += '{';
    bool has_cat = false;
    bool is_step = false;
    bool first_field = true;
    for (const auto field : fields) {
        out += first_field ? "" : ",";
        first_field = false;
        out += json_string(field.key);
        out += ':';
        std::string_view name;
        if (field.key == "name" && field.value.get_string().get(name) == simdjson::SUCCESS && starts_with(name, k_step_prefix)) {
            is_step = true;
            ++result.steps;
            long long number = 0;
            try {
                number = std::stoll(std::string(name.substr(k_step_prefix.size())));
            } catch (const std::exception&) {
                out += minified(field.value);
                continue;
            }
            // Legacy profiling labels each step one below what Kineto (and the window) say.
            out += json_string(fmt::format("{}{}", k_step_prefix, number + 1));
            continue;
        }
        has_cat = has_cat || field.key == "cat";
        out += minified(field.value);
    }
    if (!has_cat) {
        out += is_step ? ",\"cat\":\"user_annotation\"" : ",\"cat\":\"cpu_op\"";
    }
    out += '}';
}

} // namespace

NormalizeResult normalize_trace(const fs::path& source, const fs::path& target, const TraceIdentity& identity) {
    simdjson::dom::parser parser;
    simdjson::padded_string text;
    if (simdjson::padded_string::load(source.string()).get(text) != simdjson::SUCCESS) {
        throw HarnessError(fmt::format("{}: cannot read trace", source.string()));
    }
    simdjson::dom::element root;
    if (const auto error = parser.parse(text).get(root); error != simdjson::SUCCESS) {
        throw HarnessError(
            fmt::format("{}: not a JSON trace ({}), {} bytes", source.string(), simdjson::error_message(error), text.size()));
    }
    NormalizeResult result;
    simdjson::dom::object object;
    if (root.get_object().get(object) == simdjson::SUCCESS) {
        simdjson::dom::array events;
        if (object["traceEvents"].get_array().get(events) != simdjson::SUCCESS) {
            throw HarnessError(fmt::format("{}: a JSON object without a traceEvents array", source.string()));
        }
        result.format = "kineto";
        for (simdjson::dom::element event : events) {
            ++result.events;
            std::string_view name;
            if (event["name"].get_string().get(name) == simdjson::SUCCESS && starts_with(name, k_step_prefix)) {
                ++result.steps;
            }
        }
        write_file_atomic(target, std::string(text.data(), text.size()));
        return result;
    }
    simdjson::dom::array events;
    if (root.get_array().get(events) != simdjson::SUCCESS) {
        throw HarnessError(fmt::format("{}: neither a Kineto trace nor a legacy autograd trace", source.string()));
    }
    result.format = "legacy-autograd";
    std::string out;
    out.reserve(text.size() + text.size() / 4);
    out += "{\"schemaVersion\":1,\"distributedInfo\":";
    out += fmt::format("{{\"rank\":{},\"world_size\":{},\"backend\":{}}}", identity.rank, identity.world_size,
                       json_string(identity.backend));
    out += ",\"ccl_harness\":{\"normalized_from\":\"legacy-autograd\",\"step_label_shift\":1},\"traceEvents\":[";
    bool first_event = true;
    for (simdjson::dom::element event : events) {
        simdjson::dom::object fields;
        if (event.get_object().get(fields) != simdjson::SUCCESS) {
            throw HarnessError(fmt::format("{}: event {} is not an object", source.string(), result.events));
        }
        out += first_event ? "" : ",";
        first_event = false;
        ++result.events;
        append_legacy_event(fields, out, result);
    }
    out += "]}\n";
    write_file_atomic(target, out);
    return result;
}

} // namespace harness
