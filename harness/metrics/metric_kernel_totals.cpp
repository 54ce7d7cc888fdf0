// Three whole-trace totals of the CCL-Bench dashboard, over GPU kernels (cat "kernel"):
//  - total_kernel_time (s): every kernel's duration summed over the ranks. The reference is
//    tools/total_kernel_time/total_kernel_time.py's json path (_calc_json, :75-104): the files
//    json_sampling.select_json_files picks, ph "X" cat "kernel" durations summed, µs → s (its
//    docstring says ms; it returns seconds). Its nsys path runs `nsys stats` (:39-48): n/a here.
//  - total_trace_time (s): first kernel start to last kernel end over all ranks. The reference is
//    tools/total_trace_time/total_trace_time.py _calc_json (:62-97): the files named
//    kineto_trace_*.json (all *.json when none is), not sampled, the same span.
//  - coll_call_num: collective kernel launches. The reference is tools/coll_call_num/
//    coll_call_num.py (:18-28): kineto_trace_0.json only, kernels whose name starts with one of
//    six ncclDevKernel_ prefixes (AllReduce, ReduceScatter, AllGather, Broadcast, Reduce,
//    SendRecv; so never AllToAll's SendRecv-less forms, never gloo). The default mode counts
//    every communication kernel the classifier knows (kernel_classifier.hpp), on each rank, and
//    reports rank 0's count, as the dashboard does, with each rank's in per_rank.
// A trace without GPU kernels (a CPU gloo run, an XLA trace) gives n/a, saying so: these count
// GPU kernels only; total_trace_time of an XLA trace is the span of its device ops (default mode).
#include "metrics/metric_functions.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <array>
#include <fmt/format.h>
#include <limits>
#include <string_view>

namespace harness::metrics {

namespace {

constexpr double k_us_per_s = 1e6;

struct RankKernels {
    bool read = false;
    Basis basis = Basis::none;
    bool kernels = false;
    double total_us = 0;
    double first = std::numeric_limits<double>::infinity();
    double last = -std::numeric_limits<double>::infinity();
    double collectives = 0;
    std::string file; ///< the trace's file name, for the reference's own file rules
};

/// coll_call_num.py:20.
constexpr std::array<std::string_view, 6> k_tool_prefixes = {"ncclDevKernel_AllReduce", "ncclDevKernel_ReduceScatter",
                                                             "ncclDevKernel_AllGather", "ncclDevKernel_Broadcast",
                                                             "ncclDevKernel_Reduce",    "ncclDevKernel_SendRecv"};

bool tool_collective(const std::string& name) {
    return std::any_of(k_tool_prefixes.begin(), k_tool_prefixes.end(),
                       [&](std::string_view prefix) { return starts_with(name, prefix); });
}

enum class Total { kernel_time, trace_time, call_num };

class KernelTotalsFold final : public MetricFold {
public:
    KernelTotalsFold(FoldInputs in, std::size_t ranks, Total total)
        : MetricFold(std::move(in), ranks), m_total(total), m_slots(ranks) {}

    void add(std::size_t index, const RankView& view) override {
        RankKernels& slot = m_slots[index];
        slot.file = view.trace().file.filename().string();
        if (in().reference() ? !view.reference_reads_events() : view.basis() == Basis::none) {
            return;
        }
        slot.read = true;
        slot.basis = view.basis();
        if (m_total == Total::trace_time && view.basis() == Basis::xla_ops && !in().reference()) {
            // An XLA trace's span is its device ops' (total_trace_time.py's _calc_tpu reads the
            // TPU device events likewise, of the first file only: not reproduced).
            for (const Span& span : view.trace().xla_ops) {
                slot.kernels = true;
                slot.first = std::min(slot.first, span.ts);
                slot.last = std::max(slot.last, span.ts + span.dur);
            }
            return;
        }
        const NameTable& names = view.trace().names;
        std::vector<signed char> collective(names.size(), -1);
        for (const Span& span : view.trace().kernels) {
            slot.kernels = true;
            slot.total_us += span.dur;
            slot.first = std::min(slot.first, span.ts);
            slot.last = std::max(slot.last, span.ts + span.dur);
            if (collective[span.name] < 0) {
                collective[span.name] = static_cast<signed char>(in().reference() ? tool_collective(names.text(span.name))
                                                                                  : view.kernel_family(span.name) != CommFamily::none);
            }
            slot.collectives += collective[span.name];
        }
    }

    MetricValue finish(const std::vector<std::size_t>& order) override;

private:
    /// Whether the reference tool reads rank `index`'s file.
    bool tool_reads(std::size_t index, const std::vector<std::size_t>& order) const;

    Total m_total;
    std::vector<RankKernels> m_slots;
};

bool KernelTotalsFold::tool_reads(std::size_t index, const std::vector<std::size_t>& order) const {
    const std::string& file = m_slots[index].file;
    switch (m_total) {
    case Total::kernel_time: return in().counted[index]; // json_sampling.select_json_files: the sample every mode shares
    case Total::trace_time: {
        const bool any_kineto = std::any_of(order.begin(), order.end(), [&](std::size_t k) {
            return starts_with(m_slots[k].file, "kineto_trace_") && ends_with(m_slots[k].file, ".json");
        });
        return any_kineto ? starts_with(file, "kineto_trace_") && ends_with(file, ".json") : ends_with(file, ".json");
    }
    case Total::call_num: return file == "kineto_trace_0.json";
    }
    return false;
}

MetricValue KernelTotalsFold::finish(const std::vector<std::size_t>& order) {
    static constexpr const char* k_names[] = {"total_kernel_time", "total_trace_time", "coll_call_num"};
    MetricValue out = start_value(k_names[static_cast<int>(m_total)], m_total == Total::call_num ? "calls" : "s");
    double total_us = 0;
    double first = std::numeric_limits<double>::infinity();
    double last = -std::numeric_limits<double>::infinity();
    bool any = false;
    std::optional<double> rank0_calls;
    for (std::size_t r = 0; r < order.size(); ++r) {
        const std::size_t index = order[r];
        const RankKernels& slot = m_slots[index];
        const bool counted = in().reference() ? tool_reads(index, order) : in().counted[index];
        if (!counted || !slot.read || !slot.kernels) {
            continue;
        }
        any = true;
        total_us += slot.total_us;
        first = std::min(first, slot.first);
        last = std::max(last, slot.last);
        switch (m_total) {
        case Total::kernel_time: out.per_rank[r] = slot.total_us / k_us_per_s; break;
        case Total::trace_time: out.per_rank[r] = (slot.last - slot.first) / k_us_per_s; break;
        case Total::call_num:
            out.per_rank[r] = slot.collectives;
            if (!rank0_calls) {
                rank0_calls = slot.collectives; // report order: rank 0 first
            }
            break;
        }
    }
    if (!any) {
        if (m_total == Total::call_num && in().reference()) {
            // coll_call_num.py:29-32 prints "File not found" and returns 0 without the file.
            out.value = 0.0;
            out.notes.emplace_back("no kineto_trace_0.json with GPU kernels, so the tool counts 0 (coll_call_num.py:29-32)");
            return out;
        }
        const bool other_basis = std::any_of(m_slots.begin(), m_slots.end(), [](const RankKernels& slot) {
            return slot.read && (slot.basis == Basis::xla_ops || slot.basis == Basis::host_ops);
        });
        if (other_basis) {
            out.why = fmt::format("not GPU kernels: the trace is {}, and {} counts GPU kernels only", basis_of(in()), out.metric);
        } else {
            out.why = in().reference() ? "no GPU kernel events in the files the CCL-Bench tool reads (it returns -1)"
                                       : "no GPU kernel events in the trace";
        }
        return out;
    }
    switch (m_total) {
    case Total::kernel_time: out.value = total_us / k_us_per_s; break;
    case Total::trace_time: out.value = (last - first) / k_us_per_s; break;
    case Total::call_num: out.value = rank0_calls; break;
    }
    if (const std::string partial = partial_ranks(in()); !partial.empty() && m_total != Total::call_num) {
        out.notes.push_back(fmt::format("partial: over the traced {} only", partial));
    }
    return out;
}

} // namespace

std::unique_ptr<MetricFold> fold_total_kernel_time(FoldInputs in, std::size_t ranks) {
    return std::make_unique<KernelTotalsFold>(std::move(in), ranks, Total::kernel_time);
}

std::unique_ptr<MetricFold> fold_total_trace_time(FoldInputs in, std::size_t ranks) {
    return std::make_unique<KernelTotalsFold>(std::move(in), ranks, Total::trace_time);
}

std::unique_ptr<MetricFold> fold_coll_call_num(FoldInputs in, std::size_t ranks) {
    return std::make_unique<KernelTotalsFold>(std::move(in), ranks, Total::call_num);
}

} // namespace harness::metrics
