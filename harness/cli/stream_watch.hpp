#pragma once
// Watches what a standard stream carries, forwarding every byte: main uses it so that a command
// given --json answers with a document even where it failed after printing only to stderr (a
// refused card's diagnostics, a usage error), without each command owning that rule.
#include <cstddef>
#include <ostream>
#include <streambuf>
#include <string>
#include <vector>

namespace harness::cli {

class StreamWatch : public std::streambuf {
public:
    /// Installs itself as `stream`'s buffer until destroyed.
    explicit StreamWatch(std::ostream& stream);
    ~StreamWatch() override;
    StreamWatch(const StreamWatch&) = delete;
    StreamWatch& operator=(const StreamWatch&) = delete;

    std::size_t bytes() const { return m_bytes; }
    /// The error lines seen ("ccl-harness: error: X" as X, "file:line:col: error: X" whole), the
    /// first k_max_lines of them.
    const std::vector<std::string>& errors() const { return m_errors; }

    static constexpr std::size_t k_max_lines = 50;
    static constexpr std::size_t k_max_line_bytes = 4096;

protected:
    int overflow(int c) override;
    std::streamsize xsputn(const char* data, std::streamsize count) override;
    int sync() override;

private:
    void watch(const char* data, std::size_t count);

    std::ostream& m_stream;
    std::streambuf* m_target;
    std::size_t m_bytes = 0;
    std::string m_line;
    std::vector<std::string> m_errors;
};

} // namespace harness::cli
