#include "util/limits.hpp"

#include "util/error.hpp"

#include <cstdlib>
#include <fmt/format.h>
#include <limits>

namespace harness {

namespace {

struct LimitSpec {
    InputLimit id;
    std::string_view variable; ///< "" for a fixed limit
    std::uint64_t default_value;
    bool is_size; ///< shown in bytes units
};

constexpr std::uint64_t k_mib = std::uint64_t{1} << 20;
constexpr std::uint64_t k_gib = std::uint64_t{1} << 30;

// docs/limits.md explains each choice; keep the two in step.
constexpr LimitSpec k_limits[] = {
    {InputLimit::card_bytes, "CCL_HARNESS_MAX_CARD_BYTES", 1 * k_mib, true},
    {InputLimit::yaml_nodes, "CCL_HARNESS_MAX_YAML_NODES", 100000, false},
    {InputLimit::yaml_expanded_nodes, "CCL_HARNESS_MAX_YAML_EXPANDED", 1000000, false},
    {InputLimit::nesting_depth, "", 1024, false},
    {InputLimit::json_value_bytes, "CCL_HARNESS_MAX_JSON_VALUE", 256 * k_mib, true},
    {InputLimit::file_inflated_bytes, "CCL_HARNESS_MAX_FILE_INFLATED", 16 * k_gib, true},
    {InputLimit::bundle_inflated_bytes, "CCL_HARNESS_MAX_INFLATED", 64 * k_gib, true},
    {InputLimit::inflate_ratio, "CCL_HARNESS_MAX_INFLATE_RATIO", 200, false},
    {InputLimit::bundle_entries, "CCL_HARNESS_MAX_ENTRIES", 1000000, false},
    {InputLimit::sqlite_seconds, "CCL_HARNESS_MAX_SQLITE_SECONDS", 900, false},
    {InputLimit::sqlite_heap_bytes, "CCL_HARNESS_MAX_SQLITE_HEAP", 1 * k_gib, true},
};

const LimitSpec& spec(InputLimit which) {
    for (const LimitSpec& limit : k_limits) {
        if (limit.id == which) {
            return limit;
        }
    }
    throw HarnessError("internal: an input limit without an entry in the table");
}

/// "64G", "512M", "1048576", "2GiB": a count with an optional binary suffix; 0 when malformed.
std::uint64_t parse_size(std::string_view text) {
    std::size_t i = 0;
    std::uint64_t value = 0;
    constexpr std::uint64_t k_max = std::numeric_limits<std::uint64_t>::max();
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
        const auto digit = static_cast<std::uint64_t>(text[i] - '0');
        if (value > (k_max - digit) / 10) {
            return 0;
        }
        value = value * 10 + digit;
    }
    if (i == 0) {
        return 0;
    }
    std::string_view suffix = text.substr(i);
    if (suffix == "B" || suffix.empty()) {
        return value;
    }
    const std::string_view units = "KMGT";
    const std::size_t power = units.find(suffix.front());
    suffix.remove_prefix(1);
    if (power == std::string_view::npos || !(suffix.empty() || suffix == "B" || suffix == "iB")) {
        return 0;
    }
    const unsigned shift = 10U * static_cast<unsigned>(power + 1);
    if (value > (k_max >> shift)) {
        return 0;
    }
    return value << shift;
}

} // namespace

std::uint64_t input_limit(InputLimit which) {
    const LimitSpec& limit = spec(which);
    if (limit.variable.empty()) {
        return limit.default_value;
    }
    const char* set = std::getenv(std::string(limit.variable).c_str());
    if (set == nullptr || *set == '\0') {
        return limit.default_value;
    }
    const std::uint64_t value = parse_size(set);
    if (value == 0) {
        throw input_error(fmt::format("{}={}: expected a positive {} (e.g. {})", limit.variable, set, limit.is_size ? "size" : "count",
                                      limit.is_size ? "64G, 512M" : "2000000"));
    }
    return value;
}

std::string_view input_limit_variable(InputLimit which) { return spec(which).variable; }

std::string format_size(std::uint64_t bytes) {
    constexpr std::string_view k_units[] = {"KiB", "MiB", "GiB", "TiB"};
    for (int i = 3; i >= 0; --i) {
        const unsigned shift = 10U * static_cast<unsigned>(i + 1);
        if (bytes >= (std::uint64_t{1} << shift) && bytes % (std::uint64_t{1} << shift) == 0) {
            return fmt::format("{} {}", bytes >> shift, k_units[i]);
        }
    }
    return fmt::format("{} bytes", bytes);
}

std::string input_limit_hint(InputLimit which) {
    const LimitSpec& limit = spec(which);
    const std::uint64_t value = input_limit(which);
    const std::string shown = limit.is_size ? format_size(value) : std::to_string(value);
    if (limit.variable.empty()) {
        return fmt::format("the limit is {}", shown);
    }
    return fmt::format("the limit is {}; raise it with {}={}", shown, limit.variable, limit.is_size ? "SIZE" : "N");
}

} // namespace harness
