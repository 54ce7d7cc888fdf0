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
        {"Float", 4}, {"Float32", 4}, {"Double", 8}, {"Float64", 8}, {"Half", 2},  {"Float16", 2}, {"BFloat16", 2}, {"BF16", 2},
        {"Int", 4},   {"Int32", 4},   {"Int64", 8},  {"Long", 8},    {"Int16", 2}, {"Short", 2},   {"Int8", 1},     {"Byte", 1},
    };
    return k_sizes;
}

/// c10::ScalarType names as PyTorch writes them, for the default mode.
std::optional<double> standard_size(const std::string& dtype) {
    if (const auto found = reference_sizes().find(dtype); found != reference_sizes().end()) {
        return found->second;
    }
    static const std::map<std::string, double> k_more = {
        {"Char", 1},
        {"Bool", 1},
        {"UInt8", 1},
        {"UInt16", 2},
        {"UInt32", 4},
        {"UInt64", 8},
        {"ComplexHalf", 4},
        {"ComplexFloat", 8},
        {"ComplexDouble", 16},
        {"Float8_e4m3fn", 1},
        {"Float8_e5m2", 1},
        {"Float8_e4m3fnuz", 1},
        {"Float8_e5m2fnuz", 1},
        {"Float8_e8m0fnu", 1},
        {"QInt8", 1},
        {"QUInt8", 1},
        {"QInt32", 4},
    };
    if (const auto found = k_more.find(dtype); found != k_more.end()) {
        return found->second;
    }
    return std::nullopt;
}

struct RankVolume {
    bool read = false;
    bool any_args = false;
    bool host_args = false;
    double total = 0;
    std::map<std::string, double> by_name;
    std::set<std::string> unknown_dtypes;
};

class VolumeFold final : public MetricFold {
public:
    VolumeFold(FoldInputs in, std::size_t ranks) : MetricFold(std::move(in), ranks), m_slots(ranks) {}

    void add(std::size_t index, const RankView& view) override;
    MetricValue finish(const std::vector<std::size_t>& order) override;

private:
    std::vector<RankVolume> m_slots;
};

void VolumeFold::add(std::size_t index, const RankView& view) {
    const bool reference = in().reference();
    if (!in().counted[index] || (reference && !view.reference_reads_events())) {
        return;
    }
    RankVolume& slot = m_slots[index];
    slot.read = true;
    const RankTrace& trace = view.trace();
    bool kernel_args = false;
    for (const CollectiveArgs& args : trace.collectives) {
        kernel_args = kernel_args || args.on_kernel;
    }
    // GPU traces carry the arguments twice (on the kernel and on record_param_comms): count
    // the kernels. CPU traces (gloo) have them on the host operator only.
    const bool use_host = !kernel_args && !reference;
    for (const CollectiveArgs& args : trace.collectives) {
        if (args.on_kernel == use_host) {
            continue;
        }
        slot.any_args = true;
        slot.host_args = slot.host_args || use_host;
        const std::string& dtype = trace.names.text(args.dtype);
        double size = 0;
        if (reference) {
            const auto found = reference_sizes().find(dtype);
            size = found != reference_sizes().end() ? found->second : 0;
        } else if (const auto known = standard_size(dtype)) {
            size = *known;
        } else if (args.has_nelems) {
            slot.unknown_dtypes.insert(dtype.empty() ? "(none)" : dtype);
        }
        const double bytes = args.has_nelems ? args.nelems * size : 0;
        const std::string& name = trace.names.text(args.collective);
        slot.by_name[name.empty() ? "(unnamed)" : name] += bytes;
        slot.total += bytes;
    }
}

MetricValue VolumeFold::finish(const std::vector<std::size_t>& order) {
    MetricValue out = start_value("collective_volume", "bytes");
    // Byte counts are whole numbers, exact in a double up to 2^53, so summing each rank's
    // per-name sums gives the same bits as summing every event in report order.
    std::map<std::string, double> sums; // over ranks, divided by the rank count at the end
    std::set<std::string> unknown_dtypes;
    std::size_t ranks = 0;
    bool any_args = false;
    bool used_host_args = false;
    for (std::size_t r = 0; r < order.size(); ++r) {
        const RankVolume& slot = m_slots[order[r]];
        if (!slot.read) {
            continue;
        }
        ++ranks;
        any_args = any_args || slot.any_args;
        used_host_args = used_host_args || slot.host_args;
        for (const auto& [name, bytes] : slot.by_name) {
            sums[name] += bytes;
        }
        unknown_dtypes.insert(slot.unknown_dtypes.begin(), slot.unknown_dtypes.end());
        out.per_rank[r] = slot.total;
    }
    if (!any_args) {
        out.why = in().reference() ? "no GPU kernel carries collective arguments (In msg nelems, dtype, Collective name)"
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
    if (const std::string partial = partial_ranks(in()); !partial.empty()) {
        // Bytes come from each rank's own collectives' arguments: the traced ranks' mean.
        out.notes.push_back(fmt::format("partial: the mean over the traced {} only; ranks in other groups (pipeline stages, "
                                        "experts) may move other volumes",
                                        partial));
    }
    if (in().reference()) {
        out.notes.emplace_back("as DESIGN.md defines it (by Collective name, mean over ranks); the CCL-Bench "
                               "collective_data_volume tool reads only the first rank file and four NCCL kinds");
    }
    return out;
}

} // namespace

std::unique_ptr<MetricFold> fold_collective_volume(FoldInputs in, std::size_t ranks) {
    return std::make_unique<VolumeFold>(std::move(in), ranks);
}

} // namespace harness::metrics
