#pragma once
// Interned strings: a trace repeats a few thousand kernel and operator names millions of times,
// so events carry a 32-bit id and the text is stored once.
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>

namespace harness::metrics {

using NameId = std::uint32_t;

class NameTable {
public:
    NameTable() { intern(""); }
    NameTable(const NameTable&) = delete;
    NameTable& operator=(const NameTable&) = delete;
    NameTable(NameTable&&) = default;
    NameTable& operator=(NameTable&&) = default;

    /// The id of `text`, adding it when new. Id 0 is the empty string.
    NameId intern(std::string_view text) {
        if (const auto found = m_ids.find(text); found != m_ids.end()) {
            return found->second;
        }
        // A deque never moves its elements, so the views used as keys stay valid.
        const std::string& stored = m_names.emplace_back(text);
        const auto id = static_cast<NameId>(m_names.size() - 1);
        m_ids.emplace(std::string_view(stored), id);
        return id;
    }
    const std::string& text(NameId id) const { return m_names[id]; }
    std::size_t size() const { return m_names.size(); }

private:
    std::deque<std::string> m_names;
    std::unordered_map<std::string_view, NameId> m_ids;
};

} // namespace harness::metrics
