#include "util/safe_name.hpp"

#include "util/error.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

namespace harness {

std::string relative_name_problem(std::string_view name) {
    if (name.empty()) {
        return "an empty name";
    }
    if (name.size() > k_max_safe_name_bytes) {
        return fmt::format("longer than {} bytes", k_max_safe_name_bytes);
    }
    if (name.front() == '/') {
        return "an absolute path";
    }
    for (const char c : name) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7f) {
            return "a control character in the name";
        }
        // A backslash is a separator on Windows, where a bundle may be unpacked again.
        if (c == '\\') {
            return "a backslash in the name";
        }
    }
    std::size_t start = 0;
    while (start <= name.size()) {
        const std::size_t slash = std::min(name.find('/', start), name.size());
        const std::string_view part = name.substr(start, slash - start);
        if (part.empty() || part == ".") {
            return "an empty or \".\" component";
        }
        if (part == "..") {
            return "a \"..\" component (a path that leaves its directory)";
        }
        if (part.size() > k_max_safe_component_bytes) {
            return fmt::format("a component longer than {} bytes", k_max_safe_component_bytes);
        }
        start = slash + 1;
    }
    return {};
}

std::string file_name_problem(std::string_view name) {
    std::string problem = relative_name_problem(name);
    if (problem.empty() && name.find('/') != std::string_view::npos) {
        problem = "a '/' in a file name";
    }
    return problem;
}

fs::path safe_path_under(const fs::path& base, std::string_view name, std::string_view what) {
    if (const std::string problem = relative_name_problem(name); !problem.empty()) {
        throw input_error(fmt::format("{} {}: {}", what, enquote(name), problem));
    }
    return base / fs::path(std::string(name));
}

} // namespace harness
