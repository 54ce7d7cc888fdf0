#include "metrics/trace_events.hpp"

#include "metrics/json_scan.hpp"
#include "metrics/kernel_classifier.hpp"
#include "util/byte_source.hpp"
#include "util/error.hpp"
#include "util/limits.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <fmt/format.h>

namespace harness::metrics {

namespace {

using json_scan::Cursor;
using json_scan::NeedMore;
using json_scan::peek_token;
using json_scan::StringToken;
using json_scan::SyntaxError;

constexpr std::string_view k_profiler_step = "ProfilerStep#";

/// "$<file>:<line> step": the JAX profiler's name for a host Python frame of a function `step`.
bool is_python_step_frame(std::string_view name) {
    constexpr std::string_view suffix = " step";
    if (!starts_with(name, "$") || !ends_with(name, suffix)) {
        return false;
    }
    const std::string_view where = name.substr(1, name.size() - 1 - suffix.size());
    const std::size_t colon = where.rfind(':');
    if (colon == std::string_view::npos || colon == 0 || colon + 1 == where.size()) {
        return false;
    }
    const std::string_view line = where.substr(colon + 1);
    return all_digits(line);
}

/// "<path>/sglang/bench_one_batch.py(<line>): decode" or "...: extend", as with_stack names
/// SGLang bench_one_batch's forward passes.
bool is_sglang_bench_forward(std::string_view name) {
    for (const std::string_view function : {std::string_view("): decode"), std::string_view("): extend")}) {
        if (!ends_with(name, function)) {
            continue;
        }
        const std::string_view head = name.substr(0, name.size() - function.size());
        constexpr std::string_view file = "bench_one_batch.py(";
        const std::size_t open = head.rfind(file);
        if (open == std::string_view::npos || open + file.size() >= head.size()) {
            return false;
        }
        const std::string_view line = head.substr(open + file.size());
        return all_digits(line);
    }
    return false;
}

/// A string field of the event being parsed: a view into the buffer, or into `decoded` when the
/// JSON text has escapes.
struct Field {
    std::string_view text;
    bool present = false;
    std::string decoded;
};

/// A numeric field, kept as its token and converted only for the events that are kept (most
/// are not); `bad_at` marks a value of the wrong type, or, once converted, out of range.
struct Number {
    std::string_view token;
    bool present = false;
    bool converted = false;
    double value = 0;
    const char* bad_at = nullptr;

    /// Whether the value is a finite number, converting only when the text does not already
    /// say so: digits with a sign and a point, short enough to be far from overflow and
    /// underflow (most ts and dur of events the metrics do not keep).
    bool finite() {
        if (bad_at != nullptr || converted) {
            return bad_at == nullptr;
        }
        constexpr std::size_t k_surely_finite = 300;
        bool plain = token.size() <= k_surely_finite;
        for (std::size_t k = 0; plain && k < token.size(); ++k) {
            const char ch = token[k];
            plain = (ch >= '0' && ch <= '9') || ch == '.' || ch == '-';
        }
        return plain || convert();
    }

    /// The value, converted on first use; only for numbers found finite().
    double get() {
        convert();
        return value;
    }

    /// Converts the token; false (and bad_at set) when it is not a finite number.
    bool convert() {
        if (!converted && bad_at == nullptr) {
            converted = true;
            if (!json_scan::to_double(token, value)) {
                bad_at = token.data();
            }
        }
        return bad_at == nullptr;
    }
};

enum class EventKey : std::uint8_t { ph, cat, name, ts, dur, pid, tid, args, other };

/// The event's keys by length first: this runs for every key of millions of events.
EventKey event_key(std::string_view key) {
    switch (key.size()) {
    case 2: return key == "ph" ? EventKey::ph : key == "ts" ? EventKey::ts : EventKey::other;
    case 3:
        return key == "cat"   ? EventKey::cat
               : key == "dur" ? EventKey::dur
               : key == "pid" ? EventKey::pid
               : key == "tid" ? EventKey::tid
                              : EventKey::other;
    case 4: return key == "name" ? EventKey::name : key == "args" ? EventKey::args : EventKey::other;
    default: return EventKey::other;
    }
}

struct RawEvent {
    const char* start = nullptr;
    Field ph, cat, name, pid, tid;
    Number ts, dur;
    Field collective, dtype, arg_name;
    Number nelems;

    void reset(const char* at) {
        start = at;
        for (Field* f : {&ph, &cat, &name, &pid, &tid, &collective, &dtype, &arg_name}) {
            f->present = false;
            f->text = {};
        }
        for (Number* n : {&ts, &dur, &nelems}) {
            *n = Number{};
        }
    }
};

class TraceReader {
public:
    TraceReader(const fs::path& path, const ReadOptions& options)
        : m_source(ByteSource::open(path)), m_collective_args(options.collective_args) {
        m_trace.file = path;
        m_trace.compressed = m_source->compressed();
        // One byte more than is ever read into: the sentinel json_scan::Cursor asks for.
        m_buffer.resize(std::max<std::size_t>(options.buffer_bytes, 64) + 1);
    }

private:
    std::size_t m_max_unit = static_cast<std::size_t>(input_limit(InputLimit::json_value_bytes));
    std::uint64_t m_max_inflated = input_limit(InputLimit::file_inflated_bytes);

public:
    RankTrace read() {
        char first = 0;
        parse_unit("the start of the trace", [&](Cursor& c) { first = peek_token(c); });
        if (first == '{') {
            m_trace.format = TraceFormat::kineto;
            ++m_begin;
            read_object_form();
        } else if (first == '[') {
            m_trace.format = TraceFormat::legacy_autograd;
            ++m_begin;
            read_events();
        } else {
            fail(m_buffer.data() + m_begin,
                 fmt::format("not a trace: expected a JSON object with traceEvents (Kineto, XLA) or an array of "
                             "events (legacy autograd), found {}",
                             describe(first)));
        }
        expect_end();
        m_trace.bytes = m_base + m_end;
        return std::move(m_trace);
    }

private:
    // ---- buffer management -------------------------------------------------------------------

    std::size_t capacity() const { return m_buffer.size() - 1; }

    /// Moves the unparsed bytes to the front, grows the buffer when one unit fills it, reads more.
    bool refill() {
        if (m_eof) {
            return false;
        }
        if (m_begin > 0) {
            std::memmove(m_buffer.data(), m_buffer.data() + m_begin, m_end - m_begin);
            m_base += m_begin;
            m_end -= m_begin;
            m_begin = 0;
        }
        if (m_end == capacity()) {
            // One unit (an event, a top-level member, a run of white space) is held whole: a
            // bounded buffer is what keeps a hostile trace from taking memory by the gigabyte.
            if (capacity() >= m_max_unit) {
                fail(m_buffer.data(), fmt::format("one JSON value (or run of white space) larger than {} ({})",
                                                  format_size(m_max_unit), input_limit_hint(InputLimit::json_value_bytes)));
            }
            m_buffer.resize(std::min<std::size_t>(capacity() * 2, m_max_unit) + 1);
        }
        const std::size_t got = m_source->read(m_buffer.data() + m_end, capacity() - m_end);
        m_eof = got == 0;
        m_end += got;
        m_buffer[m_end] = '\0';
        if (m_base + m_end > m_max_inflated) {
            fail(m_buffer.data() + m_end - got,
                 fmt::format("the trace is larger than {} uncompressed ({})", format_size(m_max_inflated),
                             input_limit_hint(InputLimit::file_inflated_bytes)));
        }
        return got > 0;
    }

    /// Runs `unit` on the bytes in hand; when it runs out, fetches more and runs it again from
    /// the same start, so a unit never sees half an event.
    template <class Unit> void parse_unit(const char* what, Unit&& unit) {
        while (true) {
            Cursor c{m_buffer.data() + m_begin, m_buffer.data() + m_end};
            try {
                unit(c);
                m_begin = static_cast<std::size_t>(c.p - m_buffer.data());
                return;
            } catch (const NeedMore&) {
                if (!refill()) {
                    throw TraceReadError(fmt::format("{}: byte {}{}: truncated: the file ends inside {} that starts at byte {}",
                                                     m_trace.file.string(), m_base + m_end, unit_note(), what, m_base + m_begin),
                                         TraceReadError::Kind::truncated, m_base + m_end,
                                         fmt::format("{} that starts at byte {}", what, m_base + m_begin));
                }
            } catch (const SyntaxError& error) {
                fail(error.at, error.what);
            }
        }
    }

    std::string unit_note() const { return m_trace.compressed ? " (uncompressed)" : ""; }

    [[noreturn]] void fail(const char* at, const std::string& what) const {
        const auto offset = m_base + static_cast<std::uint64_t>(at - m_buffer.data());
        throw TraceReadError(fmt::format("{}: byte {}{}: {}", m_trace.file.string(), offset, unit_note(), what),
                             TraceReadError::Kind::malformed, offset, what);
    }

    static std::string describe(char c) {
        if (c == '"') {
            return "a string";
        }
        if (c == 't' || c == 'f') {
            return "a boolean";
        }
        if (c == 'n') {
            return "null";
        }
        return (c == '-' || (c >= '0' && c <= '9')) ? "a number" : fmt::format("'{}'", c);
    }

    // ---- document structure ------------------------------------------------------------------

    void read_object_form() {
        bool seen_events = false;
        bool first = true;
        while (true) {
            bool done = false;
            parse_unit("the top-level object", [&](Cursor& c) {
                const char next = peek_token(c);
                if (next == '}' && first) {
                    ++c.p;
                    done = true;
                    return;
                }
                if (!first) {
                    ++c.p;
                    if (next == '}') {
                        done = true;
                        return;
                    }
                    if (next != ',') {
                        throw SyntaxError{c.p - 1, "expected ',' or '}' between top-level members"};
                    }
                    peek_token(c);
                }
                const StringToken key = json_scan::scan_string(c);
                json_scan::expect(c, ':', "expected ':' after a key");
                const char value = peek_token(c);
                if (key.raw == "traceEvents") {
                    if (value != '[') {
                        throw SyntaxError{c.p, "traceEvents is not an array"};
                    }
                    if (seen_events) {
                        throw SyntaxError{c.p, "a second traceEvents array"};
                    }
                    ++c.p;
                    m_in_events = true;
                } else if (key.raw == "distributedInfo" && value == '{') {
                    read_distributed_info(c);
                } else {
                    json_scan::skip_value(c);
                }
            });
            if (done) {
                break;
            }
            first = false;
            if (m_in_events) {
                seen_events = true;
                read_events();
                m_in_events = false;
            }
        }
        if (!seen_events) {
            throw TraceReadError(fmt::format("{}: not a trace: a JSON object without a traceEvents array", m_trace.file.string()),
                                 TraceReadError::Kind::no_events, std::nullopt, "a JSON object without a traceEvents array");
        }
    }

    void read_distributed_info(Cursor& c) {
        ++c.p;
        if (peek_token(c) == '}') {
            ++c.p;
            return;
        }
        while (true) {
            peek_token(c);
            const StringToken key = json_scan::scan_string(c);
            json_scan::expect(c, ':', "expected ':' after a key");
            const char value_start = peek_token(c);
            if (key.raw == "rank" && (value_start == '-' || (value_start >= '0' && value_start <= '9'))) {
                double value = 0;
                if (json_scan::to_double(json_scan::scan_number(c), value)) {
                    m_trace.distributed_rank = static_cast<long long>(value);
                }
            } else {
                json_scan::skip_value(c);
            }
            const char next = peek_token(c);
            ++c.p;
            if (next == '}') {
                return;
            }
            if (next != ',') {
                throw SyntaxError{c.p - 1, "expected ',' or '}' in distributedInfo"};
            }
        }
    }

    void read_events() {
        bool done = false;
        parse_unit("the traceEvents array", [&](Cursor& c) {
            if (peek_token(c) == ']') {
                ++c.p;
                done = true;
            }
        });
        while (!done) {
            parse_unit("an event", [&](Cursor& c) {
                parse_event(c);
                const char next = peek_token(c);
                ++c.p;
                if (next == ']') {
                    done = true;
                } else if (next != ',') {
                    throw SyntaxError{c.p - 1, "expected ',' or ']' after an event"};
                }
                commit();
            });
        }
    }

    void expect_end() {
        while (true) {
            for (std::size_t k = m_begin; k < m_end; ++k) {
                if (!json_scan::is_ws(m_buffer[k])) {
                    fail(m_buffer.data() + k, "unexpected data after the end of the trace");
                }
            }
            m_begin = m_end;
            if (!refill()) {
                return;
            }
        }
    }

    // ---- one event ---------------------------------------------------------------------------

    static void read_string(Cursor& c, Field& field) {
        const char* at = c.p;
        const StringToken token = json_scan::scan_string(c);
        field.present = true;
        if (!token.escaped) {
            field.text = token.raw;
            return;
        }
        if (const std::size_t bad = json_scan::decode_string(token.raw, field.decoded); bad != std::string_view::npos) {
            throw SyntaxError{at + 1 + bad, "invalid escape in a string"};
        }
        field.text = field.decoded;
    }

    /// A string field; values of another type are skipped and leave the field absent.
    static void read_string_or_skip(Cursor& c, Field& field) {
        if (peek_token(c) == '"') {
            read_string(c, field);
        } else {
            json_scan::skip_value(c);
        }
    }

    static void read_number(Cursor& c, Number& number) {
        number.present = true;
        const char first = peek_token(c);
        if (first == '"' || first == '{' || first == '[' || first == 't' || first == 'f' || first == 'n') {
            number.bad_at = c.p;
            json_scan::skip_value(c);
            return;
        }
        number.token = json_scan::scan_number(c);
    }

    /// pid and tid are numbers in Kineto and XLA traces, strings in legacy ones: keep the text.
    static void read_id(Cursor& c, Field& field) {
        const char first = peek_token(c);
        if (first == '"') {
            read_string(c, field);
        } else if (first == '-' || (first >= '0' && first <= '9')) {
            field.text = json_scan::scan_number(c);
            field.present = true;
        } else {
            json_scan::skip_value(c);
        }
    }

    static std::string_view key_text(const StringToken& key, std::string& scratch, const char* at) {
        if (!key.escaped) {
            return key.raw;
        }
        if (const std::size_t bad = json_scan::decode_string(key.raw, scratch); bad != std::string_view::npos) {
            throw SyntaxError{at + 1 + bad, "invalid escape in a key"};
        }
        return scratch;
    }

    void parse_args(Cursor& c) {
        if (peek_token(c) != '{') {
            json_scan::skip_value(c);
            return;
        }
        ++c.p;
        if (peek_token(c) == '}') {
            ++c.p;
            return;
        }
        while (true) {
            const char* at = c.p;
            const std::string_view key = key_text(json_scan::scan_string(c), m_key_scratch, at);
            json_scan::expect(c, ':', "expected ':' after a key");
            if (key == "In msg nelems") {
                read_number(c, m_event.nelems);
            } else if (key == "Collective name") {
                read_string_or_skip(c, m_event.collective);
            } else if (key == "dtype") {
                read_string_or_skip(c, m_event.dtype);
            } else if (key == "name") {
                read_string_or_skip(c, m_event.arg_name);
            } else {
                json_scan::skip_value(c, 1);
            }
            const char next = peek_token(c);
            ++c.p;
            if (next == '}') {
                return;
            }
            if (next != ',') {
                throw SyntaxError{c.p - 1, "expected ',' or '}' in args"};
            }
            peek_token(c);
        }
    }

    void parse_event(Cursor& c) {
        const char first = peek_token(c);
        m_event.reset(c.p);
        if (first != '{') {
            throw SyntaxError{c.p, "an event that is not a JSON object"};
        }
        ++c.p;
        if (peek_token(c) == '}') {
            ++c.p;
            return;
        }
        while (true) {
            const char* at = c.p;
            const std::string_view key = key_text(json_scan::scan_string(c), m_key_scratch, at);
            json_scan::expect(c, ':', "expected ':' after a key");
            switch (event_key(key)) {
            case EventKey::ph: read_string_or_skip(c, m_event.ph); break;
            case EventKey::cat: read_string_or_skip(c, m_event.cat); break;
            case EventKey::name: read_string_or_skip(c, m_event.name); break;
            case EventKey::ts: read_number(c, m_event.ts); break;
            case EventKey::dur: read_number(c, m_event.dur); break;
            case EventKey::pid: read_id(c, m_event.pid); break;
            case EventKey::tid: read_id(c, m_event.tid); break;
            case EventKey::args:
                // Metadata events name processes and threads in their args; Kineto writes ph first.
                if (m_collective_args || !m_event.ph.present || m_event.ph.text == "M") {
                    parse_args(c);
                } else {
                    json_scan::skip_value(c, 1);
                }
                break;
            case EventKey::other: json_scan::skip_value(c, 1); break;
            }
            const char next = peek_token(c);
            ++c.p;
            if (next == '}') {
                return;
            }
            if (next != ',') {
                throw SyntaxError{c.p - 1, "expected ',' or '}' in an event"};
            }
            peek_token(c);
        }
    }

    void check_time(Number& number, const char* field) const {
        if (!number.present) {
            fail(m_event.start, fmt::format("traceEvents[{}] (\"{}\", ph X) has no {}", m_trace.events - 1, m_event.name.text, field));
        }
        if (!number.finite()) {
            fail(number.bad_at,
                 fmt::format("traceEvents[{}] (\"{}\"): {} is not a finite number", m_trace.events - 1, m_event.name.text, field));
        }
    }

    static long long step_number(std::string_view name) {
        // ProfilerStep#(\d+)$ as the CCL-Bench tools match it.
        const std::string_view digits = name.substr(k_profiler_step.size());
        long long value = -1;
        if (digits.empty()) {
            return -1;
        }
        const auto result = std::from_chars(digits.data(), digits.data() + digits.size(), value);
        return result.ec == std::errc() && result.ptr == digits.data() + digits.size() && digits[0] != '-' && digits[0] != '+' ? value
                                                                                                                               : -1;
    }

    void add_step(StepKind kind, long long number) {
        m_trace.steps.push_back(
            StepMarker{m_event.ts.get(), m_event.dur.get(), number, m_trace.names.intern(m_event.name.text), kind});
    }

    void add_collective_args(bool on_kernel, std::size_t span) {
        if (!m_event.collective.present && !m_event.nelems.present && !m_event.dtype.present) {
            return;
        }
        CollectiveArgs args;
        args.on_kernel = on_kernel;
        args.span = static_cast<std::uint32_t>(span);
        args.collective = m_event.collective.present ? m_trace.names.intern(m_event.collective.text) : 0;
        args.dtype = m_event.dtype.present ? m_trace.names.intern(m_event.dtype.text) : 0;
        args.has_nelems = m_event.nelems.present && m_event.nelems.convert();
        args.nelems = m_event.nelems.value;
        m_trace.collectives.push_back(args);
    }

    std::string thread_key() const {
        std::string key(m_event.pid.text);
        key += '\t';
        key += m_event.tid.text;
        return key;
    }

    void commit() {
        ++m_trace.events;
        const std::string_view ph = m_event.ph.text;
        const std::string_view name = m_event.name.text;
        if (ph == "M") {
            if (name == "process_name" && m_event.pid.present && m_event.arg_name.present) {
                m_trace.process_names[std::string(m_event.pid.text)] = std::string(m_event.arg_name.text);
            } else if (name == "thread_name" && m_event.pid.present && m_event.tid.present && m_event.arg_name.present) {
                m_trace.thread_names[thread_key()] = std::string(m_event.arg_name.text);
            }
            return;
        }
        if (ph != "X") {
            return;
        }
        check_time(m_event.ts, "ts");
        check_time(m_event.dur, "dur");
        const bool legacy = m_trace.format == TraceFormat::legacy_autograd;
        const std::string_view cat = m_event.cat.text;
        if (name == "$core.py:331 step") {
            add_step(StepKind::xla_core_step, -1);
            return;
        }
        if (is_python_step_frame(name)) {
            add_step(StepKind::xla_python_step, -1);
            return;
        }
        if (name == "StepMarker") {
            add_step(StepKind::xla_step_marker, -1);
            return;
        }
        if (m_event.cat.present && cat == "kernel") {
            // The pid: the CCL-Bench straggler tool groups kernels by (file, pid).
            m_trace.kernels.push_back(
                Span{m_event.ts.get(), m_event.dur.get(), m_trace.names.intern(name), m_trace.names.intern(m_event.pid.text)});
            add_collective_args(true, m_trace.kernels.size() - 1);
            return;
        }
        // Legacy autograd traces have no cat: step markers and operators are told apart by name.
        const bool annotation = (m_event.cat.present && cat == "user_annotation") || (legacy && !m_event.cat.present);
        if (annotation && starts_with(name, k_profiler_step)) {
            if (const long long number = step_number(name); number >= 0) {
                add_step(StepKind::profiler_step, number);
                return;
            }
        }
        if (annotation && starts_with(name, "execute_context_")) {
            add_step(StepKind::vllm_execute_context, -1);
            return;
        }
        if (m_event.cat.present && cat == "python_function" && name.find("run_batch") != std::string_view::npos) {
            add_step(StepKind::sglang_run_batch, -1);
            return;
        }
        if (m_event.cat.present && cat == "python_function" && is_sglang_bench_forward(name)) {
            add_step(StepKind::sglang_bench_forward, -1);
            return;
        }
        if (annotation || (m_event.cat.present && cat == "cpu_op")) {
            if (host_role(name) != HostRole::other) {
                m_trace.host_ops.push_back(Span{m_event.ts.get(), m_event.dur.get(), m_trace.names.intern(name), 0});
                add_collective_args(false, m_trace.host_ops.size() - 1);
            }
            return;
        }
        if (!m_event.cat.present && !legacy) {
            m_trace.xla_ops.push_back(
                Span{m_event.ts.get(), m_event.dur.get(), m_trace.names.intern(name), m_trace.names.intern(thread_key())});
        }
    }

    std::unique_ptr<ByteSource> m_source;
    bool m_collective_args = true;
    std::vector<char> m_buffer;
    std::size_t m_begin = 0;  ///< first byte not yet parsed
    std::size_t m_end = 0;    ///< one past the last byte read
    std::uint64_t m_base = 0; ///< stream offset of m_buffer[0]
    bool m_eof = false;
    bool m_in_events = false;
    RankTrace m_trace;
    RawEvent m_event;
    std::string m_key_scratch;
};

} // namespace

RankTrace read_trace(const fs::path& path, const ReadOptions& options) {
    TraceReader reader(path, options);
    return reader.read();
}

} // namespace harness::metrics
