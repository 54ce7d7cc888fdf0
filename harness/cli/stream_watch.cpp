#include "cli/stream_watch.hpp"

#include <string_view>

namespace harness::cli {

StreamWatch::StreamWatch(std::ostream& stream) : m_stream(stream), m_target(stream.rdbuf()) { m_stream.rdbuf(this); }

StreamWatch::~StreamWatch() {
    m_stream.flush();
    m_stream.rdbuf(m_target);
}

int StreamWatch::overflow(int c) {
    if (c == traits_type::eof()) {
        return traits_type::not_eof(c);
    }
    const char byte = traits_type::to_char_type(c);
    watch(&byte, 1);
    return m_target->sputc(byte);
}

std::streamsize StreamWatch::xsputn(const char* data, std::streamsize count) {
    watch(data, static_cast<std::size_t>(count));
    return m_target->sputn(data, count);
}

int StreamWatch::sync() { return m_target->pubsync(); }

void StreamWatch::watch(const char* data, std::size_t count) {
    m_bytes += count;
    for (std::size_t i = 0; i < count; ++i) {
        if (data[i] != '\n') {
            if (m_line.size() < k_max_line_bytes) {
                m_line += data[i];
            }
            continue;
        }
        constexpr std::string_view k_prefix = "ccl-harness: error: ";
        if (m_errors.size() < k_max_lines) {
            if (std::string_view(m_line).substr(0, k_prefix.size()) == k_prefix) {
                m_errors.push_back(m_line.substr(k_prefix.size()));
            } else if (m_line.find(": error: ") != std::string::npos) {
                m_errors.push_back(m_line);
            }
        }
        m_line.clear();
    }
}

} // namespace harness::cli
