#include "trace_check.hpp"

#include "trace_names.hpp"
#include "util/json.hpp"
#include "util/limits.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <archive.h>
#include <archive_entry.h>
#include <cstdint>
#include <fmt/format.h>
#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <simdjson.h>
#include <vector>

namespace harness {

namespace {

constexpr std::string_view k_profiler_step = "ProfilerStep#";
/// simdjson indexes documents with 32-bit offsets.
constexpr std::uint64_t k_max_trace_bytes = simdjson::SIMDJSON_MAXSIZE_BYTES - simdjson::SIMDJSON_PADDING;
/// A gzip'd trace expanding more than this many times its size is refused as a bomb once it is
/// past the floor; real JSON traces compress 10 to 30 times.
constexpr std::uint64_t k_gzip_max_ratio = 1000;
constexpr std::uint64_t k_gzip_ratio_floor = std::uint64_t{64} << 20;
constexpr std::size_t k_chunk = std::size_t{1} << 20;
/// walk's own guard, past the nesting limit scan_balance applies first.
constexpr std::size_t k_max_walk_depth = 4096;

bool all_digits(std::string_view text) {
    return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool is_xla_name(std::string_view name) { return classify_trace_name(name).kind == TraceKind::xla; }

/// The bytes of a trace followed by SIMDJSON_PADDING zeros, which simdjson reads past the end.
struct TraceBytes {
    std::string buffer;
    std::size_t size = 0;
    std::string problem;
};

void pad(TraceBytes& bytes) {
    bytes.size = bytes.buffer.size();
    bytes.buffer.append(simdjson::SIMDJSON_PADDING, '\0');
}

TraceBytes read_plain(const fs::path& file, std::uint64_t size) {
    TraceBytes bytes;
    if (size > k_max_trace_bytes) {
        bytes.problem = fmt::format("{} bytes: larger than the 4 GiB a trace can be checked in", size);
        return bytes;
    }
    std::ifstream in(file, std::ios::binary);
    bytes.buffer.resize(static_cast<std::size_t>(size));
    if (!in || !in.read(bytes.buffer.data(), static_cast<std::streamsize>(size)) ||
        static_cast<std::uint64_t>(in.gcount()) != size) {
        bytes.problem = "cannot read";
        return bytes;
    }
    pad(bytes);
    return bytes;
}

struct ArchiveReadFree {
    void operator()(archive* a) const { archive_read_free(a); }
};

/// libarchive's raw format is a plain gzip reader here: no new library for one file format.
TraceBytes read_gzip(const fs::path& file, std::uint64_t compressed_size) {
    TraceBytes bytes;
    const std::unique_ptr<archive, ArchiveReadFree> a(archive_read_new());
    const auto la_error = [&] {
        const char* message = archive_error_string(a.get());
        return std::string(message != nullptr ? message : "unknown error");
    };
    archive_entry* entry = nullptr;
    if (!a || archive_read_support_filter_gzip(a.get()) != ARCHIVE_OK ||
        archive_read_support_format_raw(a.get()) != ARCHIVE_OK ||
        archive_read_open_filename(a.get(), file.c_str(), k_chunk) != ARCHIVE_OK) {
        bytes.problem = fmt::format("cannot read the gzip stream: {}", a ? la_error() : "out of memory");
        return bytes;
    }
    const int header = archive_read_next_header(a.get(), &entry);
    if (header != ARCHIVE_OK && header != ARCHIVE_EOF) {
        bytes.problem = fmt::format("cannot read the gzip stream: {}", la_error());
        return bytes;
    }
    const std::uint64_t max_inflated = input_limit(InputLimit::file_inflated_bytes);
    std::vector<char> chunk(header == ARCHIVE_EOF ? 0 : k_chunk);
    while (header == ARCHIVE_OK) {
        const la_ssize_t n = archive_read_data(a.get(), chunk.data(), chunk.size());
        if (n < 0) {
            bytes.problem =
                fmt::format("gzip stream broken after {} uncompressed bytes: {}", bytes.buffer.size(), la_error());
            return bytes;
        }
        if (n == 0) {
            break;
        }
        bytes.buffer.append(chunk.data(), static_cast<std::size_t>(n));
        const std::uint64_t expanded = bytes.buffer.size();
        if (expanded > k_max_trace_bytes) {
            bytes.problem = "expands past the 4 GiB a trace can be checked in";
            return bytes;
        }
        if (expanded > max_inflated) {
            bytes.problem = fmt::format("expands past {} uncompressed bytes ({})", max_inflated,
                                        input_limit_hint(InputLimit::file_inflated_bytes));
            return bytes;
        }
        if (expanded > k_gzip_ratio_floor &&
            expanded > k_gzip_max_ratio * std::max<std::uint64_t>(compressed_size, 1)) {
            bytes.problem = fmt::format("expands more than {} times its {} bytes: a decompression bomb?",
                                        k_gzip_max_ratio, compressed_size);
            return bytes;
        }
    }
    pad(bytes);
    return bytes;
}

/// Where a document stops being a valid JSON prefix, as far as brackets and strings tell: a
/// truncated file ends inside a string or an open bracket, with nothing malformed before its
/// last token.
struct Balance {
    std::string open;                // "a string", "an object", "an array", or empty when closed
    std::size_t last_structural = 0; // offset of the last bracket, comma, colon or opening quote
    bool mismatched = false;
    std::optional<std::size_t> too_deep;  // offset of the bracket past the nesting limit
};

Balance scan_balance(const char* data, std::size_t size) {
    Balance balance;
    const std::uint64_t max_depth = input_limit(InputLimit::nesting_depth);
    std::vector<char> stack;
    JsonStringState strings;
    for (std::size_t i = 0; i < size; ++i) {
        const char c = data[i];
        if (strings.consumed(c)) {
            continue;
        }
        switch (c) {
        case '"':
            balance.last_structural = i;
            break;
        case '{':
        case '[':
            if (stack.size() >= max_depth) {
                balance.too_deep = i;
                return balance;
            }
            stack.push_back(c);
            balance.last_structural = i;
            break;
        case '}':
        case ']':
            if (stack.empty() || stack.back() != (c == '}' ? '{' : '[')) {
                balance.mismatched = true;
                return balance;
            }
            stack.pop_back();
            balance.last_structural = i;
            break;
        case ',':
        case ':':
            balance.last_structural = i;
            break;
        default:
            break;
        }
    }
    if (strings.in_string) {
        balance.open = "a string";
    } else if (!stack.empty()) {
        balance.open = stack.back() == '{' ? "an object" : "an array";
    }
    return balance;
}

/// Visits every value so that on-demand parsing meets the first error and can say where it is.
/// Recursive, so it is only called on text whose nesting scan_balance bounded (its own depth
/// count is the second guard).
simdjson::error_code walk(simdjson::ondemand::value value, std::size_t depth) {
    if (depth > k_max_walk_depth) {
        return simdjson::DEPTH_ERROR;
    }
    using simdjson::ondemand::json_type;
    json_type type{};
    if (auto error = value.type().get(type)) {
        return error;
    }
    switch (type) {
    case json_type::array: {
        simdjson::ondemand::array array;
        if (auto error = value.get_array().get(array)) {
            return error;
        }
        for (auto item : array) {
            simdjson::ondemand::value child;
            if (auto error = item.get(child)) {
                return error;
            }
            if (auto error = walk(child, depth + 1)) {
                return error;
            }
        }
        return simdjson::SUCCESS;
    }
    case json_type::object: {
        simdjson::ondemand::object object;
        if (auto error = value.get_object().get(object)) {
            return error;
        }
        for (auto field : object) {
            std::string_view key;
            if (auto error = field.unescaped_key().get(key)) {
                return error;
            }
            simdjson::ondemand::value child;
            if (auto error = field.value().get(child)) {
                return error;
            }
            if (auto error = walk(child, depth + 1)) {
                return error;
            }
        }
        return simdjson::SUCCESS;
    }
    case json_type::number: {
        simdjson::ondemand::number number;
        return value.get_number().get(number);
    }
    case json_type::string: {
        std::string_view text;
        return value.get_string().get(text);
    }
    case json_type::boolean: {
        bool flag = false;
        return value.get_bool().get(flag);
    }
    case json_type::null: {
        bool is_null = false;
        if (auto error = value.is_null().get(is_null)) {
            return error;
        }
        return is_null ? simdjson::SUCCESS : simdjson::INCORRECT_TYPE;
    }
    }
    return simdjson::SUCCESS;
}

/// What is wrong with a document the DOM parser refused, with the byte offset where there is one.
std::string parse_problem(const TraceBytes& bytes, simdjson::error_code dom_error) {
    const Balance balance = scan_balance(bytes.buffer.data(), bytes.size);
    if (balance.too_deep) {
        return fmt::format("nested deeper than {} arrays and objects at byte {} ({})",
                           input_limit(InputLimit::nesting_depth), *balance.too_deep,
                           input_limit_hint(InputLimit::nesting_depth));
    }
    simdjson::ondemand::parser parser;
    simdjson::ondemand::document document;
    simdjson::error_code error = parser.iterate(bytes.buffer.data(), bytes.size, bytes.buffer.size()).get(document);
    std::optional<std::size_t> offset;
    if (!error) {
        simdjson::ondemand::value root;
        error = document.get_value().get(root);
        if (!error) {
            error = walk(root, 0);
        }
        const char* location = nullptr;
        if (document.current_location().get(location) == simdjson::SUCCESS && location != nullptr) {
            offset = static_cast<std::size_t>(location - bytes.buffer.data());
        }
    }
    if (error == simdjson::EMPTY || dom_error == simdjson::EMPTY) {
        return bytes.size == 0 ? "empty file" : "no JSON in the file (only white space)";
    }
    // A truncated file is a valid prefix: the first error can only be in its last token.
    if (!balance.open.empty() && !balance.mismatched && (!offset || *offset >= balance.last_structural)) {
        return fmt::format("truncated at byte {}: the JSON ends inside {}", bytes.size, balance.open);
    }
    const simdjson::error_code shown = error ? error : dom_error;
    if (offset) {
        return fmt::format("not valid JSON at byte {}: {}", *offset, simdjson::error_message(shown));
    }
    return fmt::format("not valid JSON: {}", simdjson::error_message(shown));
}

std::string type_name(simdjson::dom::element_type type) {
    switch (type) {
    case simdjson::dom::element_type::STRING:
        return "a string";
    case simdjson::dom::element_type::BOOL:
        return "a boolean";
    case simdjson::dom::element_type::NULL_VALUE:
        return "null";
    default:
        return "a number";
    }
}

bool is_python_step_frame(std::string_view name) {
    constexpr std::string_view suffix = " step";
    if (!starts_with(name, "$") || !ends_with(name, suffix)) {
        return false;
    }
    const std::string_view where = name.substr(1, name.size() - 1 - suffix.size());
    const std::size_t colon = where.rfind(':');
    return colon != std::string_view::npos && colon > 0 && all_digits(where.substr(colon + 1));
}

/// SGLang bench_one_batch's forward passes as with_stack names them:
/// "<path>/sglang/bench_one_batch.py(<line>): decode" (or ": extend" for the prefill).
bool is_sglang_bench_forward(std::string_view name) {
    for (const std::string_view function : {std::string_view("): decode"), std::string_view("): extend")}) {
        if (ends_with(name, function)) {
            const std::string_view head = name.substr(0, name.size() - function.size());
            constexpr std::string_view file = "bench_one_batch.py(";
            const std::size_t open = head.rfind(file);
            return open != std::string_view::npos && open + file.size() < head.size() &&
                   all_digits(head.substr(open + file.size()));
        }
    }
    return false;
}

/// Counts events and step markers; sets `problem` for an event that is not an object.
void count_steps(simdjson::dom::array events, TraceCheck& check) {
    std::set<std::string_view> profiler_steps;
    std::size_t vllm = 0;
    std::size_t sglang = 0;
    std::size_t step_frames = 0;
    std::size_t step_markers = 0;
    for (simdjson::dom::element event : events) {
        simdjson::dom::object fields;
        if (event.get_object().get(fields) != simdjson::SUCCESS) {
            if (check.problem.empty()) {
                check.problem = fmt::format("traceEvents[{}] is not an object", check.events);
            }
            ++check.events;
            continue;
        }
        ++check.events;
        std::string_view name;
        if (fields["name"].get_string().get(name) != simdjson::SUCCESS) {
            continue;
        }
        std::string_view cat;
        if (fields["cat"].get_string().get(cat) != simdjson::SUCCESS) {
            cat = {};
        }
        if (starts_with(name, k_profiler_step) && all_digits(name.substr(k_profiler_step.size()))) {
            profiler_steps.insert(name.substr(k_profiler_step.size()));
        } else if (starts_with(name, "execute_context_") && cat == "user_annotation") {
            ++vllm;
        } else if (cat == "python_function" && (name == "run_batch" || is_sglang_bench_forward(name))) {
            ++sglang;
        } else if (name == "StepMarker") {
            ++step_markers;
        } else if (is_python_step_frame(name)) {
            ++step_frames;
        }
    }
    using Rule = std::pair<const char*, std::size_t>;
    const std::vector<Rule> rules =
        check.form == "xla" ? std::vector<Rule>{{"$<file>:<line> step", step_frames}, {"StepMarker", step_markers}}
                            : std::vector<Rule>{{"ProfilerStep#N", profiler_steps.size()},
                                                {"execute_context_*", vllm},
                                                {"run_batch", sglang}};
    for (const auto& [marker, count] : rules) {
        if (count > 0) {
            check.step_marker = marker;
            check.steps = count;
            return;
        }
    }
    if (check.problem.empty()) {
        check.problem =
            check.form == "xla"
                ? "no step markers (\"$<file>:<line> step\" or \"StepMarker\" events)"
                : "no step markers (\"ProfilerStep#N\", vLLM \"execute_context_*\", SGLang \"run_batch\" or bench_one_batch "
                  "decode/extend events)";
    }
}

} // namespace

std::string misplaced_trace_problem(std::string_view relative) {
    const fs::path path{std::string(relative)};
    const std::string file_name = path.filename().string();
    const TraceName name = classify_trace_name(file_name);
    const bool top = !path.has_parent_path();
    if (!top && name.canonical) {
        return fmt::format("a trace inside a folder; the CCL-Bench tools read {} at the bundle's top level", file_name);
    }
    if (name.form == TraceNameForm::tensorboard_handler || name.form == TraceNameForm::sglang_bench) {
        return fmt::format("a trace under {} name; expected kineto_trace_<rank>.json{} (collection names it by the rank "
                           "in its distributedInfo)",
                           describe_trace_name_form(name.form), name.compressed ? ".gz" : "");
    }
    if (name.kind == TraceKind::kineto && !name.canonical && !name.canonical_name.empty()) {
        return fmt::format("a trace under a name the CCL-Bench tools do not read; expected {}", name.canonical_name);
    }
    if (top && name.kind == TraceKind::not_a_trace && to_lower(file_name).find("trace") != std::string::npos &&
        (ends_with(file_name, ".json") || ends_with(file_name, ".json.gz"))) {
        return fmt::format("a trace under a name the CCL-Bench tools do not read; expected {}", expected_trace_names());
    }
    return {};
}

bool is_trace_file_name(std::string_view file_name) {
    const TraceName name = classify_trace_name(file_name);
    return name.canonical && (name.kind == TraceKind::kineto || (name.kind == TraceKind::xla && !ends_with(file_name, ".xplane.pb")));
}

long long kineto_trace_rank(std::string_view file_name) {
    const TraceName name = classify_trace_name(file_name);
    return name.canonical && name.kind == TraceKind::kineto ? name.rank.value_or(-1) : -1;
}

TraceCheck check_trace(const fs::path& file) {
    TraceCheck check;
    std::error_code ec;
    const std::uint64_t size = fs::file_size(file, ec);
    if (ec) {
        check.problem = fmt::format("cannot read: {}", ec.message());
        return check;
    }
    unsigned char magic[2] = {0, 0};
    if (std::ifstream in(file, std::ios::binary); !in || (size >= 2 && !in.read(reinterpret_cast<char*>(magic), 2))) {
        check.problem = "cannot read";
        return check;
    }
    check.compressed = magic[0] == 0x1f && magic[1] == 0x8b;
    const std::string name = file.filename().string();
    if (check.compressed != ends_with(name, ".gz")) {
        check.problem = check.compressed ? "gzip-compressed, but the name does not end in .gz"
                                         : "named .gz, but not gzip-compressed";
        return check;
    }
    TraceBytes bytes = check.compressed ? read_gzip(file, size) : read_plain(file, size);
    if (!bytes.problem.empty()) {
        check.problem = std::move(bytes.problem);
        return check;
    }
    simdjson::dom::parser parser;
    simdjson::dom::element root;
    if (const auto error = parser.parse(bytes.buffer.data(), bytes.size, false).get(root); error != simdjson::SUCCESS) {
        check.problem = parse_problem(bytes, error);
        if (check.compressed) {
            check.problem += " (of the uncompressed stream)";
        }
        return check;
    }
    simdjson::dom::array events;
    simdjson::dom::object object;
    if (root.get_object().get(object) == simdjson::SUCCESS) {
        if (object["traceEvents"].get_array().get(events) != simdjson::SUCCESS) {
            check.problem = "a JSON object without a \"traceEvents\" array";
            return check;
        }
        check.form = is_xla_name(name) ? "xla" : "kineto";
    } else if (root.get_array().get(events) == simdjson::SUCCESS) {
        check.form = "legacy-array";
    } else {
        check.problem =
            fmt::format("the top level is {}, not a trace: expected {{\"traceEvents\": [...]}} or an array of events",
                        type_name(root.type()));
        return check;
    }
    count_steps(events, check);
    return check;
}

} // namespace harness
