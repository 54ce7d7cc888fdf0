#include "trace/rank_set.hpp"

#include "util/error.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace harness {

namespace {

// Past this a number is no rank (and std::stoll could overflow).
constexpr std::size_t k_max_rank_digits = 9;

long long parse_rank(const std::string& word, std::string_view text, std::string_view option, const std::string& item) {
    if (word.empty() || !all_digits(word) || word.size() > k_max_rank_digits) {
        throw input_error(
            fmt::format("{} {}: {} is not a rank (expected ranks such as 0, 0,2 or 0-3)", option, enquote(text), enquote(item)));
    }
    return std::stoll(word);
}

} // namespace

std::vector<long long> parse_rank_list(std::string_view text, long long world, std::string_view option) {
    if (trim(text).empty()) {
        throw input_error(fmt::format("{} {}: empty; name the ranks whose traces you have (0, 0,2 or 0-3)", option, enquote(text)));
    }
    std::vector<long long> ranks;
    for (const std::string& raw : split(text, ',')) {
        const std::string item = trim(raw);
        if (item.empty()) {
            throw input_error(fmt::format("{} {}: an empty item between commas", option, enquote(text)));
        }
        const std::size_t dash = item.find('-');
        const long long first = parse_rank(trim(item.substr(0, dash)), text, option, item);
        const long long last = dash == std::string::npos ? first : parse_rank(trim(item.substr(dash + 1)), text, option, item);
        if (last < first) {
            throw input_error(fmt::format("{} {}: {} ends before it starts", option, enquote(text), enquote(item)));
        }
        if (last >= world) {
            throw input_error(fmt::format("{} {}: rank {}, but the card's total_count is {} (ranks 0-{})", option, enquote(text), last,
                                          world, world - 1));
        }
        for (long long rank = first; rank <= last; ++rank) {
            ranks.push_back(rank);
        }
    }
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
    return ranks;
}

std::string format_rank_list(const std::vector<long long>& ranks) {
    std::vector<std::string> items;
    for (std::size_t i = 0; i < ranks.size();) {
        std::size_t end = i + 1;
        while (end < ranks.size() && ranks[end] == ranks[end - 1] + 1) {
            ++end;
        }
        if (end - i >= 3) {
            items.push_back(fmt::format("{}-{}", ranks[i], ranks[end - 1]));
        } else {
            for (std::size_t k = i; k < end; ++k) {
                items.push_back(std::to_string(ranks[k]));
            }
        }
        i = end;
    }
    return join(items, ",");
}

std::string describe_partial_ranks(const std::vector<long long>& ranks, long long total) {
    return fmt::format("ranks {} of {}", format_rank_list(ranks), total);
}

} // namespace harness
