#pragma once
// What the trace reader takes for a step marker by its name alone: the host Python frames JAX and
// SGLang's bench name them by, and Kineto's ProfilerStep#. The reader calls these for every X
// event, so they are inline.
#include "util/strings.hpp"

#include <string_view>

namespace harness::metrics {

inline constexpr std::string_view k_profiler_step = "ProfilerStep#";

/// "$<file>:<line> step": the JAX profiler's name for a host Python frame of a function `step`.
inline bool is_python_step_frame(std::string_view name) {
    constexpr std::string_view suffix = " step";
    if (!starts_with(name, "$") || !ends_with(name, suffix)) {
        return false;
    }
    const std::string_view where = name.substr(1, name.size() - 1 - suffix.size());
    const std::size_t colon = where.rfind(':');
    if (colon == std::string_view::npos || colon == 0 || colon + 1 == where.size()) {
        return false;
    }
    const std::string_view line = where.substr(colon + 1);
    return all_digits(line);
}

/// "<path>/sglang/bench_one_batch.py(<line>): decode" or "...: extend", as with_stack names
/// SGLang bench_one_batch's forward passes; also "<path>/sglang/benchmark/one_batch.py(<line>): ...",
/// where later SGLang moved the code (`python -m sglang.bench_one_batch` runs it from there).
inline bool is_sglang_bench_forward(std::string_view name) {
    for (const std::string_view function : {std::string_view("): decode"), std::string_view("): extend")}) {
        if (!ends_with(name, function)) {
            continue;
        }
        const std::string_view head = name.substr(0, name.size() - function.size());
        for (const std::string_view file : {std::string_view("bench_one_batch.py("), std::string_view("/benchmark/one_batch.py(")}) {
            const std::size_t open = head.rfind(file);
            if (open != std::string_view::npos && open + file.size() < head.size()) {
                return all_digits(head.substr(open + file.size()));
            }
        }
        return false;
    }
    return false;
}

} // namespace harness::metrics
