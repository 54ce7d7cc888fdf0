#pragma once
// Aligned plain-text columns for the listings (list, explain): every column as wide as its
// widest cell, the last one left ragged.
#include <algorithm>
#include <string>
#include <vector>

namespace harness {

/// One line per row, each starting with `indent`, cells separated by two spaces.
inline std::string format_table(const std::vector<std::vector<std::string>>& rows, const std::string& indent = "") {
    std::vector<std::size_t> widths;
    for (const auto& row : rows) {
        widths.resize(std::max(widths.size(), row.size()), 0);
        for (std::size_t i = 0; i < row.size(); ++i) {
            widths[i] = std::max(widths[i], row[i].size());
        }
    }
    std::string out;
    for (const auto& row : rows) {
        std::string line = indent;
        for (std::size_t i = 0; i < row.size(); ++i) {
            line += row[i];
            if (i + 1 < row.size()) {
                line += std::string(widths[i] - row[i].size() + 2, ' ');
            }
        }
        while (!line.empty() && line.back() == ' ') {
            line.pop_back();
        }
        out += line + "\n";
    }
    return out;
}

} // namespace harness
