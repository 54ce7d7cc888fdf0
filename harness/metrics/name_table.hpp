#pragma once
// Interned strings: a trace repeats a few thousand kernel and operator names millions of times,
// so events carry a 32-bit id and the text is stored once.
#include <array>
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
        // Kernel names run to hundreds of characters and repeat millions of times: a guess from
        // a few of their bytes, confirmed by one comparison, costs less than hashing them all.
        NameId& guess = m_recent[quick_hash(text) % k_recent];
        if (m_names[guess] == text) {
            return guess;
        }
        if (const auto found = m_ids.find(text); found != m_ids.end()) {
            guess = found->second;
            return found->second;
        }
        // A deque never moves its elements, so the views used as keys stay valid.
        const std::string& stored = m_names.emplace_back(text);
        const auto id = static_cast<NameId>(m_names.size() - 1);
        m_ids.emplace(std::string_view(stored), id);
        guess = id;
        return id;
    }
    const std::string& text(NameId id) const { return m_names[id]; }
    std::size_t size() const { return m_names.size(); }

private:
    static std::size_t quick_hash(std::string_view text) {
        std::size_t h = text.size();
        if (!text.empty()) {
            h = h * 131 + static_cast<unsigned char>(text.front());
            h = h * 131 + static_cast<unsigned char>(text[text.size() / 2]);
            h = h * 131 + static_cast<unsigned char>(text.back());
        }
        return h;
    }

    static constexpr std::size_t k_recent = 256;
    std::array<NameId, k_recent> m_recent{}; ///< id 0 (the empty string) until a name lands
    std::deque<std::string> m_names;
    std::unordered_map<std::string_view, NameId> m_ids;
};

} // namespace harness::metrics
