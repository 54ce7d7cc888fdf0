#include "metrics/trace_stream.hpp"

#include "util/error.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <cstring>
#include <string_view>

namespace harness::metrics {

TraceStream::TraceStream(const fs::path& path, std::size_t buffer_bytes) : m_file(path), m_source(ByteSource::open(path)) {
    // One byte more than is ever read into: the sentinel json_scan::Cursor asks for.
    m_buffer.resize(std::max<std::size_t>(buffer_bytes, 64) + 1);
}

bool TraceStream::refill() {
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
            fail(m_buffer.data(), fmt::format("one JSON value (or run of white space) larger than {} ({})", format_size(m_max_unit),
                                              input_limit_hint(InputLimit::json_value_bytes)));
        }
        m_buffer.resize(std::min<std::size_t>(capacity() * 2, m_max_unit) + 1);
    }
    const std::size_t got = m_source->read(m_buffer.data() + m_end, capacity() - m_end);
    m_eof = got == 0;
    m_end += got;
    m_buffer[m_end] = '\0';
    if (m_base + m_end > m_max_inflated) {
        fail(m_buffer.data() + m_end - got, fmt::format("the trace is larger than {} uncompressed ({})", format_size(m_max_inflated),
                                                        input_limit_hint(InputLimit::file_inflated_bytes)));
    }
    return got > 0;
}

std::string TraceStream::unit_note() const { return m_source->compressed() ? " (uncompressed)" : ""; }

void TraceStream::fail(const char* at, const std::string& what) const {
    const auto offset = m_base + static_cast<std::uint64_t>(at - m_buffer.data());
    throw TraceReadError(fmt::format("{}: byte {}{}: {}", m_file.string(), offset, unit_note(), what), TraceReadError::Kind::malformed,
                         offset, what);
}

std::string TraceStream::describe(char c) {
    if (c == '"') {
        return "a string";
    }
    if (c == 't' || c == 'f') {
        return "a boolean";
    }
    if (c == 'n') {
        return "null";
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        return "a number";
    }
    // JSON's own punctuation is named; any other byte is not shown: the file may be anything a
    // link in someone else's directory points at (a key, a password file), and messages get pasted.
    if (std::string_view("{}[],:").find(c) != std::string_view::npos) {
        return fmt::format("'{}'", c);
    }
    return "a byte that starts no JSON value (not shown)";
}

void TraceStream::expect_end() {
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

} // namespace harness::metrics
