#include "trace/trace_normalize.hpp"

#include "util/byte_source.hpp"
#include "util/error.hpp"
#include "util/limits.hpp"
#include "util/quote.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>
#include <simdjson.h>

#include <memory>
#include <vector>

namespace harness {

namespace {

constexpr std::string_view k_step_prefix = "ProfilerStep#";
constexpr std::size_t k_piece = std::size_t{1} << 20;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/// A trace's bytes a JSON value at a time, through a window that grows only while one value does
/// not fit (up to the json_value_bytes limit): memory follows the largest event, not the file,
/// which may be gzip'd (util/byte_source) and of any size. With `echo`, every byte read is also
/// written there, so a trace that is kept as it is gets copied in the same pass.
class JsonPieces {
public:
    JsonPieces(const fs::path& file, AtomicFile* echo) : m_file(file), m_source(ByteSource::open(file)), m_echo(echo) {}

    /// The next byte that is not white space, k_end at the end of the data.
    int peek() {
        while (true) {
            while (m_begin < m_end && is_space(m_buffer[m_begin])) {
                ++m_begin;
            }
            if (m_begin < m_end || !fill()) {
                return m_begin < m_end ? static_cast<unsigned char>(m_buffer[m_begin]) : k_end;
            }
        }
    }

    void expect(int c, const char* what) {
        if (peek() != c) {
            fail(fmt::format("expected '{}' {}, found {}", static_cast<char>(c), what, describe(peek())));
        }
        ++m_begin;
    }

    /// The raw text of the next complete value (valid until the next call).
    std::string_view value(const char* what) {
        const int first = peek();
        if (first == k_end) {
            fail(fmt::format("truncated: the file ends where {} should start", what));
        }
        Scan scan;
        while (!scan_value(scan)) {
            if (!fill()) {
                if (first != '{' && first != '[' && first != '"' && scan.length > 0) {
                    break; // a number or literal that ends with the file
                }
                fail(fmt::format("truncated: the file ends inside {} that starts at byte {}", what, offset()));
            }
        }
        const std::string_view text(m_buffer.data() + m_begin, scan.length);
        m_begin += scan.length;
        return text;
    }

    std::uint64_t offset() const { return m_base + m_begin; }

    [[noreturn]] void fail(const std::string& problem) const {
        throw HarnessError(fmt::format("{}: byte {}: {}", m_file.string(), offset(), problem), k_exit_usage);
    }

    static constexpr int k_end = -1;

    static std::string describe(int c) {
        return c == k_end ? std::string("the end of the file") : enquote(std::string(1, static_cast<char>(c)));
    }

private:
    /// Where a value scan stands, so that a value longer than the window is scanned once; relative
    /// to the value's start, which fill() moves.
    struct Scan {
        std::size_t length = 0; ///< bytes of the value scanned so far
        int depth = 0;
        bool in_string = false;
        bool escaped = false;
    };

    /// Advances `scan` over the value that starts at m_begin; true once it is complete.
    bool scan_value(Scan& scan) {
        const char first = m_buffer[m_begin];
        const bool container = first == '{' || first == '[';
        const bool string = first == '"';
        for (; m_begin + scan.length < m_end; ++scan.length) {
            const char c = m_buffer[m_begin + scan.length];
            if (scan.in_string) {
                if (scan.escaped) {
                    scan.escaped = false;
                } else if (c == '\\') {
                    scan.escaped = true;
                } else if (c == '"') {
                    scan.in_string = false;
                    if (string) {
                        ++scan.length;
                        return true;
                    }
                }
                continue;
            }
            if (c == '"') {
                scan.in_string = true;
            } else if (!container && !string && (c == ',' || c == ']' || c == '}' || is_space(c))) {
                return scan.length > 0;
            } else if (container && (c == '{' || c == '[')) {
                ++scan.depth;
            } else if (container && (c == '}' || c == ']')) {
                if (--scan.depth == 0) {
                    ++scan.length;
                    return true;
                }
            }
        }
        return false;
    }

    /// Moves what is unread to the front, grows the window when one value fills it, reads more.
    bool fill() {
        if (m_eof) {
            return false;
        }
        if (m_begin > 0) {
            std::copy(m_buffer.begin() + static_cast<std::ptrdiff_t>(m_begin), m_buffer.begin() + static_cast<std::ptrdiff_t>(m_end),
                      m_buffer.begin());
            m_base += m_begin;
            m_end -= m_begin;
            m_begin = 0;
        }
        if (m_buffer.size() - m_end < k_piece) {
            // Only one value is ever held whole: a bounded window is what keeps a hostile trace
            // from taking memory by the gigabyte.
            if (m_end > input_limit(InputLimit::json_value_bytes)) {
                fail(fmt::format("one JSON value larger than {} ({})", format_size(input_limit(InputLimit::json_value_bytes)),
                                 input_limit_hint(InputLimit::json_value_bytes)));
            }
            m_buffer.resize(m_end + k_piece);
        }
        const std::size_t got = m_source->read(m_buffer.data() + m_end, m_buffer.size() - m_end);
        if (got == 0) {
            m_eof = true;
            return false;
        }
        if (m_echo != nullptr) {
            m_echo->write(m_buffer.data() + m_end, got);
        }
        m_end += got;
        if (m_base + m_end > input_limit(InputLimit::file_inflated_bytes)) {
            fail(fmt::format("the trace is larger than {} uncompressed ({})",
                             format_size(input_limit(InputLimit::file_inflated_bytes)),
                             input_limit_hint(InputLimit::file_inflated_bytes)));
        }
        return true;
    }

    fs::path m_file;
    std::unique_ptr<ByteSource> m_source;
    AtomicFile* m_echo;
    std::vector<char> m_buffer;
    std::size_t m_begin = 0;
    std::size_t m_end = 0;
    std::uint64_t m_base = 0;
    bool m_eof = false;
};

simdjson::dom::element parsed(simdjson::dom::parser& parser, std::string_view text, const JsonPieces& in, const char* what) {
    simdjson::dom::element element;
    if (const auto error = parser.parse(text.data(), text.size()).get(element); error != simdjson::SUCCESS) {
        in.fail(fmt::format("{} is not valid JSON ({})", what, simdjson::error_message(error)));
    }
    return element;
}

bool is_step(simdjson::dom::element event) {
    std::string_view name;
    return event["name"].get_string().get(name) == simdjson::SUCCESS && starts_with(name, k_step_prefix);
}

/// One legacy autograd event as Kineto writes it: step labels shifted up by one, a "cat" added
/// where the event has none.
void append_legacy_event(simdjson::dom::object fields, std::string& out, NormalizeResult& result) {
    out += '{';
    bool has_cat = false;
    bool step = false;
    bool first_field = true;
    for (const auto field : fields) {
        out += first_field ? "" : ",";
        first_field = false;
        out += json_string(field.key);
        out += ':';
        std::string_view name;
        if (field.key == "name" && field.value.get_string().get(name) == simdjson::SUCCESS && starts_with(name, k_step_prefix)) {
            step = true;
            ++result.steps;
            long long number = 0;
            try {
                number = std::stoll(std::string(name.substr(k_step_prefix.size())));
            } catch (const std::exception&) {
                out += simdjson::minify(field.value);
                continue;
            }
            // Legacy profiling labels each step one below what Kineto (and the window) say.
            out += json_string(fmt::format("{}{}", k_step_prefix, number + 1));
            continue;
        }
        has_cat = has_cat || field.key == "cat";
        out += simdjson::minify(field.value);
    }
    if (!has_cat) {
        out += step ? ",\"cat\":\"user_annotation\"" : ",\"cat\":\"cpu_op\"";
    }
    out += '}';
}

/// Kineto's object form, checked and counted as it is copied (by JsonPieces' echo).
void read_kineto(JsonPieces& in, NormalizeResult& result) {
    simdjson::dom::parser parser;
    in.expect('{', "at the start of the trace");
    bool events_seen = false;
    for (int next = in.peek(); next != '}'; next = in.peek()) {
        const std::string_view key = in.value("a key");
        if (key.empty() || key.front() != '"') {
            in.fail(fmt::format("expected a key, found {}", JsonPieces::describe(static_cast<unsigned char>(key.front()))));
        }
        in.expect(':', "after a key");
        if (key == "\"traceEvents\"" && in.peek() == '[') {
            events_seen = true;
            in.expect('[', "");
            for (int item = in.peek(); item != ']'; item = in.peek()) {
                const simdjson::dom::element event = parsed(parser, in.value("an event"), in, "an event");
                ++result.events;
                if (is_step(event)) {
                    ++result.steps;
                }
                if (in.peek() == ',') {
                    in.expect(',', "");
                } else if (in.peek() != ']') {
                    in.fail(fmt::format("expected ',' or ']' after an event, found {}", JsonPieces::describe(in.peek())));
                }
            }
            in.expect(']', "");
        } else {
            (void)parsed(parser, in.value("a value"), in, "a value");
        }
        if (in.peek() == ',') {
            in.expect(',', "");
        } else if (in.peek() != '}') {
            in.fail(fmt::format("expected ',' or '}}' after a member, found {}", JsonPieces::describe(in.peek())));
        }
    }
    in.expect('}', "");
    if (!events_seen) {
        in.fail("a JSON object without a traceEvents array");
    }
}

/// The legacy autograd array, converted an event at a time into `out`.
void convert_legacy(JsonPieces& in, const TraceIdentity& identity, AtomicFile& out, NormalizeResult& result) {
    simdjson::dom::parser parser;
    std::string text = "{\"schemaVersion\":1,\"distributedInfo\":";
    text += fmt::format("{{\"rank\":{},\"world_size\":{},\"backend\":{}}}", identity.rank, identity.world_size,
                        json_string(identity.backend));
    text += ",\"ccl_harness\":{\"normalized_from\":\"legacy-autograd\",\"step_label_shift\":1},\"traceEvents\":[";
    in.expect('[', "at the start of the trace");
    for (int item = in.peek(); item != ']'; item = in.peek()) {
        const simdjson::dom::element event = parsed(parser, in.value("an event"), in, "an event");
        simdjson::dom::object fields;
        if (event.get_object().get(fields) != simdjson::SUCCESS) {
            in.fail(fmt::format("event {} is not an object", result.events));
        }
        text += result.events == 0 ? "" : ",";
        ++result.events;
        append_legacy_event(fields, text, result);
        if (text.size() >= k_piece) {
            out.write(text);
            text.clear();
        }
        if (in.peek() == ',') {
            in.expect(',', "");
        } else if (in.peek() != ']') {
            in.fail(fmt::format("expected ',' or ']' after an event, found {}", JsonPieces::describe(in.peek())));
        }
    }
    in.expect(']', "");
    text += "]}\n";
    out.write(text);
}

} // namespace

NormalizeResult normalize_trace(const fs::path& source, const fs::path& target, const TraceIdentity& identity) {
    NormalizeResult result;
    AtomicFile out(target);
    {
        // Which form, from the first byte; the file is then read once, front to back.
        JsonPieces probe(source, nullptr);
        const int first = probe.peek();
        if (first != '{' && first != '[') {
            throw HarnessError(fmt::format("{}: not a JSON trace: it starts with {} where a Kineto object or a legacy autograd "
                                           "array starts",
                                           source.string(), JsonPieces::describe(first)),
                               k_exit_usage);
        }
        result.format = first == '{' ? "kineto" : "legacy-autograd";
    }
    if (result.format == "kineto") {
        JsonPieces in(source, &out);
        read_kineto(in, result);
        if (in.peek() != JsonPieces::k_end) {
            in.fail(fmt::format("data after the trace: {}", JsonPieces::describe(in.peek())));
        }
    } else {
        JsonPieces in(source, nullptr);
        convert_legacy(in, identity, out, result);
        if (in.peek() != JsonPieces::k_end) {
            in.fail(fmt::format("data after the trace: {}", JsonPieces::describe(in.peek())));
        }
    }
    out.commit();
    return result;
}

} // namespace harness
