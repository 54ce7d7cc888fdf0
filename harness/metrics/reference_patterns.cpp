#include "metrics/reference_patterns.hpp"

#include <array>
#include <cctype>
#include <regex>
#include <string>

namespace harness::metrics {

namespace {

constexpr auto k_flags = std::regex::ECMAScript | std::regex::icase | std::regex::optimize;

const std::regex& compiled(ReferencePattern pattern) {
    static const std::array<std::regex, 4> k_compiled = {
        std::regex(pattern_text(ReferencePattern::overlap), k_flags),
        std::regex(pattern_text(ReferencePattern::fraction), k_flags),
        std::regex(pattern_text(ReferencePattern::total_time), k_flags),
        std::regex(pattern_text(ReferencePattern::xla_overlap), k_flags),
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
    static constexpr std::array<std::string_view, 7> k_keywords = {"dot", "convolution", "gemm", "matmul", "fusion", "compute", "custom-call"};
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
