#include "metrics/trace_events.hpp"

#include "metrics/json_scan.hpp"
#include "metrics/kernel_classifier.hpp"
#include "metrics/step_marker_names.hpp"
#include "metrics/trace_event_fields.hpp"
#include "metrics/trace_stream.hpp"
#include "trace/trace_names.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"

#include <charconv>
#include <cmath>
#include <fmt/format.h>

namespace harness::metrics {

namespace {

using json_scan::Cursor;
using json_scan::peek_token;
using json_scan::StringToken;
using json_scan::SyntaxError;

using trace_fields::event_key;
using trace_fields::EventKey;
using trace_fields::Field;
using trace_fields::Number;
using trace_fields::RawEvent;

/// One trace, streamed: the document's structure (Kineto object, legacy array, distributedInfo)
/// and every event reduced to what RankTrace keeps.
class TraceReader : private TraceStream {
public:
    TraceReader(const fs::path& path, const ReadOptions& options)
        : TraceStream(path, options.buffer_bytes), m_collective_args(options.collective_args) {
        m_trace.file = path;
        m_trace.compressed = m_source->compressed();
    }

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
                } else if (key.raw == "deviceProperties" && value == '[') {
                    read_device_properties(c);
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

    // Kineto's deviceProperties: one object per GPU the process saw; only each one's "name"
    // ("NVIDIA A100-SXM4-40GB") is kept, a bounded few, so that a card can be checked against it.
    void read_device_properties(Cursor& c) {
        ++c.p;
        if (peek_token(c) == ']') {
            ++c.p;
            return;
        }
        while (true) {
            if (peek_token(c) == '{') {
                ++c.p;
                while (peek_token(c) != '}') {
                    const StringToken key = json_scan::scan_string(c);
                    json_scan::expect(c, ':', "expected ':' after a key");
                    if (key.raw == "name" && peek_token(c) == '"') {
                        const StringToken name = json_scan::scan_string(c);
                        if (m_trace.device_names.size() < k_max_device_names) {
                            m_trace.device_names.emplace_back(name.raw);
                        }
                    } else {
                        json_scan::skip_value(c);
                    }
                    if (peek_token(c) == ',') {
                        ++c.p;
                        peek_token(c);
                    }
                }
                ++c.p;
            } else {
                json_scan::skip_value(c);
            }
            const char next = peek_token(c);
            ++c.p;
            if (next == ']') {
                return;
            }
            if (next != ',') {
                throw SyntaxError{c.p - 1, "expected ',' or ']' in deviceProperties"};
            }
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
                if (const DistributedRank rank = distributed_rank_of(json_scan::scan_number(c)); rank.problem.empty()) {
                    m_trace.distributed_rank = rank.rank;
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

    bool m_collective_args = true;
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