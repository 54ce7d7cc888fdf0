// collective_volume (bytes): Σ args["In msg nelems"] × size of args["dtype"], by
// args["Collective name"], per rank; the mean over ranks.
#include "metrics/metric_functions.hpp"

#include <fmt/format.h>
#include <map>
#include <set>

namespace harness::metrics {

namespace {

/// The dtype table of collective_data_volume.py; anything else counts 0 bytes there.
const std::map<std::string, double>& reference_sizes() {
    static const std::map<std::string, double> k_sizes = {
        {"Float", 4}, {"Float32", 4}, {"Double", 8}, {"Float64", 8}, {"Half", 2}, {"Float16", 2}, {"BFloat16", 2}, {"BF16", 2},
        {"Int", 4},   {"Int32", 4},   {"Int64", 8},  {"Long", 8},    {"Int16", 2}, {"Short", 2},  {"Int8", 1},     {"Byte", 1},
    };
    return k_sizes;
}

/// c10::ScalarType names as PyTorch writes them, for the default mode.
std::optional<double> standard_size(const std::string& dtype) {
    if (const auto found = reference_sizes().find(dtype); found != reference_sizes().end()) {
        return found->second;
    }
    static const std::map<std::string, double> k_more = {
        {"Char", 1}, {"Bool", 1}, {"UInt8", 1}, {"UInt16", 2}, {"UInt32", 4}, {"UInt64", 8}, {"ComplexHalf", 4},
        {"ComplexFloat", 8}, {"ComplexDouble", 16}, {"Float8_e4m3fn", 1}, {"Float8_e5m2", 1}, {"Float8_e4m3fnuz", 1},
        {"Float8_e5m2fnuz", 1}, {"Float8_e8m0fnu", 1}, {"QInt8", 1}, {"QUInt8", 1}, {"QInt32", 4},
    };
    if (const auto found = k_more.find(dtype); found != k_more.end()) {
        return found->second;
    }
    return std::nullopt;
}

} // namespace

MetricValue metric_collective_volume(const MetricInputs& in) {
    MetricValue out = start_value(in, "collective_volume", "bytes");
    std::map<std::string, double> sums;  // over ranks, divided by the rank count at the end
    std::set<std::string> unknown_dtypes;
    std::size_t ranks = 0;
    bool any_args = false;
    bool used_host_args = false;
    for (std::size_t r = 0; r < in.ranks.size(); ++r) {
        const RankView& view = in.ranks[r];
        if (!in.counted[r] || (in.reference() && !view.reference_reads_events())) {
            continue;
        }
        ++ranks;
        const RankTrace& trace = view.trace();
        bool kernel_args = false;
        for (const CollectiveArgs& args : trace.collectives) {
            kernel_args = kernel_args || args.on_kernel;
        }
        // GPU traces carry the arguments twice (on the kernel and on record_param_comms): count
        // the kernels. CPU traces (gloo) have them on the host operator only.
        const bool use_host = !kernel_args && !in.reference();
        double rank_total = 0;
        for (const CollectiveArgs& args : trace.collectives) {
            if (args.on_kernel == use_host) {
                continue;
            }
            any_args = true;
            used_host_args = used_host_args || use_host;
            const std::string& dtype = trace.names.text(args.dtype);
            double size = 0;
            if (in.reference()) {
                const auto found = reference_sizes().find(dtype);
                size = found != reference_sizes().end() ? found->second : 0;
            } else if (const auto known = standard_size(dtype)) {
                size = *known;
            } else if (args.has_nelems) {
                unknown_dtypes.insert(dtype.empty() ? "(none)" : dtype);
            }
            const double bytes = args.has_nelems ? args.nelems * size : 0;
            const std::string& name = trace.names.text(args.collective);
            sums[name.empty() ? "(unnamed)" : name] += bytes;
            rank_total += bytes;
        }
        out.per_rank[r] = rank_total;
    }
    if (!any_args) {
        out.why = in.reference() ? "no GPU kernel carries collective arguments (In msg nelems, dtype, Collective name)"
                                 : "no event carries collective arguments (In msg nelems, dtype, Collective name)";
        return out;
    }
    double total = 0;
    for (const auto& [name, sum] : sums) {
        out.parts.emplace_back(name, sum / static_cast<double>(ranks));
        total += sum;
    }
    out.value = total / static_cast<double>(ranks);
    out.basis = used_host_args ? "record_param_comms (host)" : "GPU kernels";
    if (!unknown_dtypes.empty()) {
        std::string list;
        for (const auto& dtype : unknown_dtypes) {
            list += list.empty() ? dtype : ", " + dtype;
        }
        out.notes.push_back(fmt::format("unknown dtype(s) counted as 0 bytes: {}", list));
    }
    if (in.reference()) {
        out.notes.push_back("as DESIGN.md defines it (by Collective name, mean over ranks); the CCL-Bench "
                            "collective_data_volume tool reads only the first rank file and four NCCL kinds");
    }
    return out;
}

} // namespace harness::metrics
