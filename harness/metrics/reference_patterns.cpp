#include "metrics/reference_patterns.hpp"

#include <array>
#include <cctype>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

namespace harness::metrics {

namespace {

/// The tools' communication patterns are alternations of literals (letters, digits, `_`) in
/// which a letter may be followed by an optional `[_\-]`, the first possibly anchored with `^`.
/// std::regex (a backtracking matcher consulting the locale per character) took more time per
/// rank than reading a small trace, so the patterns are compiled here into that shape and
/// matched on the ASCII-lowercased name, which is what Python's re.IGNORECASE does to these
/// ASCII patterns. Anything outside that shape is a programming error, caught at start-up.
struct Element {
    char c = 0;
    bool separator = false; ///< an optional '_' or '-'
};

struct Alternative {
    bool anchored = false;
    std::vector<Element> elements;
};

std::vector<Alternative> compile(std::string_view text) {
    std::vector<Alternative> out(1);
    constexpr std::string_view k_separator = "[_\\-]?";
    for (std::size_t k = 0; k < text.size();) {
        if (text[k] == '|') {
            out.emplace_back();
            ++k;
        } else if (text[k] == '^' && out.back().elements.empty()) {
            out.back().anchored = true;
            ++k;
        } else if (text.substr(k, k_separator.size()) == k_separator) {
            out.back().elements.push_back(Element{0, true});
            k += k_separator.size();
        } else if (std::isalnum(static_cast<unsigned char>(text[k])) != 0 || text[k] == '_') {
            out.back().elements.push_back(Element{static_cast<char>(std::tolower(static_cast<unsigned char>(text[k]))), false});
            ++k;
        } else {
            throw std::logic_error("reference pattern outside the supported shape: " + std::string(text));
        }
    }
    return out;
}

bool match_at(const std::vector<Element>& elements, std::size_t e, std::string_view text, std::size_t at) {
    for (; e < elements.size(); ++e) {
        if (elements[e].separator) {
            // Greedy, then without: the optional separator is one character at most.
            if (at < text.size() && (text[at] == '_' || text[at] == '-') && match_at(elements, e + 1, text, at + 1)) {
                return true;
            }
            continue;
        }
        if (at >= text.size() || text[at] != elements[e].c) {
            return false;
        }
        ++at;
    }
    return true;
}

bool search(const std::vector<Alternative>& pattern, std::string_view name) {
    std::string lower(name);
    for (char& c : lower) {
        c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    }
    for (const Alternative& alternative : pattern) {
        const std::size_t last = alternative.anchored ? 0 : lower.size();
        for (std::size_t at = 0; at <= last; ++at) {
            if (match_at(alternative.elements, 0, lower, at)) {
                return true;
            }
        }
    }
    return false;
}

const std::vector<Alternative>& compiled(ReferencePattern pattern) {
    static const std::array<std::vector<Alternative>, 4> k_compiled = {
        compile(pattern_text(ReferencePattern::overlap)),
        compile(pattern_text(ReferencePattern::fraction)),
        compile(pattern_text(ReferencePattern::total_time)),
        compile(pattern_text(ReferencePattern::xla_overlap)),
    };
    return k_compiled[static_cast<std::size_t>(pattern)];
}

bool search(const std::regex& re, std::string_view text) { return std::regex_search(text.begin(), text.end(), re); }

} // namespace

const char* pattern_text(ReferencePattern pattern) {
    switch (pattern) {
    case ReferencePattern::overlap:
        return R"(nccl|all[_\-]?reduce|all[_\-]?gather|reduce[_\-]?scatter|all[_\-]?to[_\-]?all|broadcast|cross[_\-]?device|sendrecv|collective)";
    case ReferencePattern::fraction:
        return R"(nccl|allreduce|allgather|reducescatter|broadcast|cross[_\-]?device|all_reduce|all_gather|reduce_scatter|sendrecv|send|recv|p2p|communicate)";
    case ReferencePattern::total_time:
        return R"(^nccl|ncclDevKernel|ncclKernel|allreduce|allgather|reducescatter|broadcast|cross[_\-]?device|all_reduce|all_gather|reduce_scatter|sendrecv)";
    case ReferencePattern::xla_overlap:
        return R"(nccl|all[_\-]?reduce|all[_\-]?gather|reduce[_\-]?scatter|all[_\-]?to[_\-]?all|cross[_\-]?device|sendrecv|collective)";
    }
    return "";
}

bool reference_is_comm(ReferencePattern pattern, std::string_view name) { return search(compiled(pattern), name); }

bool reference_is_xla_compute(std::string_view name) {
    std::string lower(name);
    for (char& c : lower) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    static constexpr std::array<std::string_view, 7> k_keywords = {"dot",    "convolution", "gemm",       "matmul",
                                                                   "fusion", "compute",     "custom-call"};
    for (const auto keyword : k_keywords) {
        if (lower.find(keyword) != std::string::npos) {
            return true;
        }
    }
    return false;
}

bool reference_sglang_step_for_step_time(std::string_view name) {
    static const std::regex re("(^|:) run_batch$", std::regex::ECMAScript);
    return search(re, name);
}

bool reference_sglang_step_for_overlap(std::string_view name) {
    static const std::regex re(R"(\brun_batch\b)", std::regex::ECMAScript);
    return search(re, name);
}

} // namespace harness::metrics
