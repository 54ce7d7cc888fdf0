#include "metrics/kernel_classifier.hpp"

#include "util/strings.hpp"

#include <array>
#include <cctype>

namespace harness::metrics {

namespace {

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

/// Demangled template kernels read "void ns::kernel<...>(...)": the return type is not the name.
std::string_view symbol(std::string_view name) {
    while (starts_with(name, "void ")) {
        name.remove_prefix(5);
    }
    return name;
}

} // namespace

const char* family_label(CommFamily family) {
    switch (family) {
    case CommFamily::none: return "compute";
    case CommFamily::nccl: return "NCCL/RCCL";
    case CommFamily::msccl: return "MSCCL/MSCCL++";
    case CommFamily::deepep: return "DeepEP";
    case CommFamily::nvshmem: return "NVSHMEM";
    case CommFamily::custom_allreduce: return "custom all-reduce";
    case CommFamily::symmetric_memory: return "PyTorch symmetric memory";
    case CommFamily::host: return "host collective (gloo/c10d)";
    case CommFamily::xla: return "XLA collective";
    }
    return "compute";
}

CommFamily classify_kernel(std::string_view name) {
    const std::string_view sym = symbol(name);
    if (starts_with(sym, "ncclDevKernel") || starts_with(sym, "ncclKernel") || starts_with(sym, "rccl")) {
        return CommFamily::nccl;
    }
    if (starts_with(sym, "mscclKernel") || contains(sym, "mscclpp")) {
        return CommFamily::msccl;
    }
    // DeepEP keeps its transfer kernels in these namespaces; deep_ep::layout (get_dispatch_layout)
    // only counts tokens on the local GPU and is compute.
    static constexpr std::array<std::string_view, 6> k_deepep = {
        "deep_ep::intranode::", "deep_ep::internode::", "deep_ep::internode_ll::",
        "dpsk::ep::intranode::", "dpsk::ep::internode::", "dpsk::ep::internode_ll::"};
    for (const auto namespace_prefix : k_deepep) {
        if (contains(sym, namespace_prefix)) {
            return CommFamily::deepep;
        }
    }
    if (contains(sym, "nvshmem")) {
        return CommFamily::nvshmem;
    }
    static constexpr std::array<std::string_view, 5> k_custom = {
        "cross_device_reduce", "oneShotAllReduce", "twoShotAllReduce", "allreduce_fusion_kernel", "quickreduce::allreduce"};
    for (const auto part : k_custom) {
        if (contains(sym, part)) {
            return CommFamily::custom_allreduce;
        }
    }
    if (contains(sym, "c10d::symmetric_memory::")) {
        return CommFamily::symmetric_memory;
    }
    return CommFamily::none;
}

HostRole host_role(std::string_view name) {
    if (starts_with(name, "gloo:") || starts_with(name, "c10d::") || starts_with(name, "nccl:") ||
        starts_with(name, "record_param_comms")) {
        return HostRole::communication;
    }
    if (starts_with(name, "aten::")) {
        return HostRole::compute;
    }
    return HostRole::other;
}

XlaCollective classify_xla_op(std::string_view name) {
    std::string lower(name);
    for (char& c : lower) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    std::string_view text(lower);
    if (starts_with(text, "%")) {
        text.remove_prefix(1);
    }
    static constexpr std::array<std::string_view, 5> k_kinds = {"all-reduce", "all-gather", "reduce-scatter", "all-to-all",
                                                                "collective-permute"};
    XlaCollective out;
    std::size_t first = std::string_view::npos;
    for (const auto kind : k_kinds) {
        const std::size_t at = text.find(kind);
        if (at < first) {
            first = at;
            out.kind = std::string(kind);
        }
    }
    out.collective = first != std::string_view::npos;
    std::size_t end = out.collective ? first + out.kind.size() : 0;
    // Point-to-point ops only count by their own name (send.1, recv-done.2), never inside another.
    if (!out.collective) {
        for (const std::string_view kind : {std::string_view("send"), std::string_view("recv")}) {
            if (starts_with(text, kind) && (text.size() == kind.size() || text[kind.size()] == '-' || text[kind.size()] == '.')) {
                out.collective = true;
                out.kind = std::string(kind);
                end = kind.size();
            }
        }
    }
    if (!out.collective) {
        return out;
    }
    const std::string_view rest = text.substr(end);
    if (starts_with(rest, "-start")) {
        out.phase = XlaPhase::start;
    } else if (starts_with(rest, "-done")) {
        out.phase = XlaPhase::done;
    }
    return out;
}

} // namespace harness::metrics
