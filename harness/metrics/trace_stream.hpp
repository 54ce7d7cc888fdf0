#pragma once
// The bytes of one trace file in hand, parsed a unit at a time (one event, one top-level member,
// one run of white space): a bounded window over the (uncompressed) stream that grows only while
// one unit does not fit, and the errors that name a byte offset in that stream. TraceReader
// (trace_events.cpp) parses through it; parse_unit wraps every event, so it is inline here.
#include "metrics/json_scan.hpp"
#include "metrics/trace_events.hpp"
#include "util/byte_source.hpp"
#include "util/fs.hpp"
#include "util/limits.hpp"

#include <cstddef>
#include <cstdint>
#include <fmt/format.h>
#include <memory>
#include <string>
#include <vector>

namespace harness::metrics {

class TraceStream {
protected:
    /// Opens `path` (plain or gzip); the buffer starts at `buffer_bytes` (ReadOptions::buffer_bytes).
    TraceStream(const fs::path& path, std::size_t buffer_bytes);

    std::size_t capacity() const { return m_buffer.size() - 1; }

    /// Moves the unparsed bytes to the front, grows the buffer when one unit fills it, reads more.
    bool refill();

    /// Runs `unit` on the bytes in hand; when it runs out, fetches more and runs it again from
    /// the same start, so a unit never sees half an event.
    template <class Unit> void parse_unit(const char* what, Unit&& unit) {
        while (true) {
            json_scan::Cursor c{m_buffer.data() + m_begin, m_buffer.data() + m_end};
            try {
                unit(c);
                m_begin = static_cast<std::size_t>(c.p - m_buffer.data());
                return;
            } catch (const json_scan::NeedMore&) {
                if (!refill()) {
                    throw TraceReadError(fmt::format("{}: byte {}{}: truncated: the file ends inside {} that starts at byte {}",
                                                     m_file.string(), m_base + m_end, unit_note(), what, m_base + m_begin),
                                         TraceReadError::Kind::truncated, m_base + m_end,
                                         fmt::format("{} that starts at byte {}", what, m_base + m_begin));
                }
            } catch (const json_scan::SyntaxError& error) {
                fail(error.at, error.what);
            }
        }
    }

    std::string unit_note() const;

    /// Throws TraceReadError for `what` at `at`, a pointer into the buffer.
    [[noreturn]] void fail(const char* at, const std::string& what) const;

    /// Checks that only white space follows the trace.
    void expect_end();

    /// The kind of JSON value that starts with `c`, for messages.
    static std::string describe(char c);

    fs::path m_file;
    std::unique_ptr<ByteSource> m_source;
    std::vector<char> m_buffer;
    std::size_t m_begin = 0;  ///< first byte not yet parsed
    std::size_t m_end = 0;    ///< one past the last byte read
    std::uint64_t m_base = 0; ///< stream offset of m_buffer[0]
    bool m_eof = false;

private:
    std::size_t m_max_unit = static_cast<std::size_t>(input_limit(InputLimit::json_value_bytes));
    std::uint64_t m_max_inflated = input_limit(InputLimit::file_inflated_bytes);
};

} // namespace harness::metrics
